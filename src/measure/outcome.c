/* outcome.c — the definitions of measure/outcome.h. */
#include <math.h>
#include "measure/outcome.h"

double outcome_final_loss(const double *loss, size_t nsteps, const double *val, size_t nevals,
                          int diverged)
{
    if (diverged) return NAN;
    if (val && nevals > 0 && isfinite(val[nevals - 1])) return val[nevals - 1];
    if (!loss || nsteps == 0) return NAN;
    const size_t n = nsteps / 10 ? nsteps / 10 : 1;   // the last tenth
    double s = 0.0;
    for (size_t t = nsteps - n; t < nsteps; t++) s += loss[t];
    return s / (double)n;
}
