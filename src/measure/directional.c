/* directional.c — the curvature along the update and Bai et al.'s gradient-direction
 * preconditioned curvature (measure/directional.h, docs/design.md §10). */
#include <math.h>
#include "measure/directional.h"

double directional_curvature(const double *u, const double *Hu, size_t n)
{
    double uHu = 0.0, uu = 0.0;
    for (size_t i = 0; i < n; i++) {
        uHu += u[i] * Hu[i];
        uu += u[i] * u[i];
    }
    return uu > 0.0 ? uHu / uu : NAN;
}

double directional_precond_grad(const double *g, const double *Hg, const double *D, size_t n)
{
    double num = 0.0, gg = 0.0;
    for (size_t i = 0; i < n; i++) {
        num += g[i] * D[i] * Hg[i];
        gg += g[i] * g[i];
    }
    return gg > 0.0 ? num / gg : NAN;
}
