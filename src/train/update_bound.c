/* update_bound.c — LAMB's trust ratio and the relative-update cap (train/update_bound.h). */
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

/* LAMB's moments and r_i over tensor s; returns Σ r² and leaves ‖θ‖², ‖r + λθ‖² in *w2, *u2. */
static double lamb_moments(optim_t *o, int s, const real *params, const real *grads,
                           double *w2, double *u2)
{
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    const double bc1 = 1.0 - pow(b1, (double)o->t), bc2 = 1.0 - pow(b2, (double)o->t);
    const size_t lo = o->seg[s].offset, hi = lo + o->seg[s].size;
    double r2 = 0.0;
    *w2 = *u2 = 0.0;
    for (size_t i = lo; i < hi; i++) {
        const double g = grads[i];
        o->m[i] = b1 * o->m[i] + (1.0 - b1) * g;
        o->v[i] = b2 * o->v[i] + (1.0 - b2) * g * g;
        const double r = (o->m[i] / bc1) / (sqrt(o->v[i] / bc2) + eps), u = r + wd * params[i];
        r2 += r * r;
        *w2 += (double)params[i] * params[i];
        *u2 += u * u;
    }
    return r2;
}

void update_bound_lamb(optim_t *o, real *params, const real *grads, double lr)
{
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    const double bc1 = 1.0 - pow(b1, (double)o->t), bc2 = 1.0 - pow(b2, (double)o->t);
    for (int s = 0; s < o->nseg; s++) {
        double w2, u2;
        o->seg[s].sumsq = lamb_moments(o, s, params, grads, &w2, &u2);
        // You et al. 2020, Alg. 2: the trust ratio φ(‖θ‖)/‖r + λθ‖, φ(z) = z
        const double ratio = w2 > 0.0 && u2 > 0.0 ? sqrt(w2) / sqrt(u2) : 1.0;
        const double step = lr * o->seg[s].lr_mult * ratio;
        const size_t lo = o->seg[s].offset, hi = lo + o->seg[s].size;
        for (size_t i = lo; i < hi; i++) {
            const double r = (o->m[i] / bc1) / (sqrt(o->v[i] / bc2) + eps);
            params[i] = (real)(params[i] - step * (r + wd * params[i]));
        }
    }
}
