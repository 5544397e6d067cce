/* norm_internal.h — what the norm's forward/backward (norm.c) shares with its Jacobian
 * (norm_jacobian.c): γ's default and one row's statistics. Not for other modules. */
#ifndef STABILITY_NORM_INTERNAL_H
#define STABILITY_NORM_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include "util/real.h"

/* γ_i; gamma == NULL means γ = 1 (convenient for probes and tests; not required by norm.h). */
static inline double norm_gamma_at(const real *gamma, size_t i)
{
    return gamma ? gamma[i] : 1.0;
}

/* Statistics of one row (C). LayerNorm (Ba et al. 2016):  μ = Σx/C,  σ² = Σ(x−μ)²/C (biased),
 * r = 1/√(σ² + ε).  RMSNorm (Zhang & Sennrich 2019):  μ := 0,  ms = Σx²/C,  r = 1/√(ms + ε).
 * *var gets σ² (LayerNorm) or ms (RMSNorm); for both x̂ = (x − μ)·r. */
static inline void norm_row_stats(int layernorm, const real *x, size_t C, double eps,
                                  double *mean, double *var, double *rstd)
{
    double m = 0.0;
    if (layernorm) {
        for (size_t i = 0; i < C; i++) m += x[i];
        m /= (double)C;
    }
    double v = 0.0;
    for (size_t i = 0; i < C; i++) {
        double d = x[i] - m;
        v += d * d;
    }
    v /= (double)C;
    *mean = m;
    *var = v;
    *rstd = 1.0 / sqrt(v + eps);
}

#endif
