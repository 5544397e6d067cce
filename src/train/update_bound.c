/* update_bound.c — the relative-update cap (train/update_bound.h). */
#include <math.h>
#include "train/update_bound.h"

int update_bound_ratio(const optim_t *o, real *params, const real *prev, double r)
{
    int scaled = 0;
    for (int s = 0; s < o->nseg; s++) {
        const size_t lo = o->seg[s].offset, hi = lo + o->seg[s].size;
        double w2 = 0.0, d2 = 0.0;   // ‖W_{t−1}‖², ‖ΔW‖²
        for (size_t i = lo; i < hi; i++) {
            const double d = (double)params[i] - (double)prev[i];
            w2 += (double)prev[i] * prev[i];
            d2 += d * d;
        }
        const double w = sqrt(w2), d = sqrt(d2);
        if (!(w > 0.0) || !(d > r * w)) continue;   // Kosson et al. 2024: ‖ΔW‖/‖W‖ ≤ r
        const double k = r * w / d;
        for (size_t i = lo; i < hi; i++)
            params[i] = (real)((double)prev[i] + k * ((double)params[i] - (double)prev[i]));
        scaled++;
    }
    return scaled;
}
