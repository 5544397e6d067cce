/* slq.c — stochastic Lanczos quadrature: nodes and weights per probe, the broadened density
 * (measure/slq.h, docs/design.md §10). Float64 only. */
#include <math.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_randist.h>
#include "measure/slq.h"

void slq_draw(gsl_rng *rng, int gaussian, const unsigned char *support, size_t n, double *v)
{
    for (size_t i = 0; i < n; i++) {
        if (support && !support[i]) { v[i] = 0.0; continue; }
        v[i] = gaussian ? gsl_ran_gaussian(rng, 1.0) : (gsl_rng_uniform_int(rng, 2) ? 1.0 : -1.0);
    }
}

int slq_run(lanczos_t *l, lanczos_op_fn op, void *ctx, const unsigned char *support, int probes,
            int iters, int gaussian, gsl_rng *rng, double *v, double *nodes, double *weights)
{
    if (iters > l->K) iters = l->K;
    int failed = 0;
    for (int p = 0; p < probes; p++) {
        double *th = nodes + (size_t)p * iters, *w = weights + (size_t)p * iters;   // (iters)
        slq_draw(rng, gaussian, support, l->n, v);
        lanczos_result_t res;
        lanczos_run_from(l, op, ctx, support, iters, v, &res, NULL);
        for (int j = 0; j < iters; j++) th[j] = w[j] = NAN;
        if (res.iters < 1) { failed++; continue; }
        lanczos_quadrature(l, res.iters, th, w);
        for (int j = res.iters; j < iters; j++) w[j] = 0.0;   // an invariant space: fewer nodes
    }
    return failed;
}

void slq_density(const double *nodes, const double *weights, int probes, int iters, double sigma,
                 const double *t, int npts, double *phi)
{
    const double norm = 1.0 / (probes * sigma * sqrt(2.0 * M_PI));
    for (int k = 0; k < npts; k++) {
        double s = 0.0;
        for (size_t j = 0; j < (size_t)probes * iters; j++) {
            if (!isfinite(nodes[j]) || weights[j] == 0.0) continue;
            const double z = (t[k] - nodes[j]) / sigma;
            s += weights[j] * exp(-0.5 * z * z);
        }
        phi[k] = s * norm;
    }
}

void slq_moments(const double *nodes, const double *weights, int probes, int iters, int p,
                 double *moments)
{
    for (int v = 0; v < probes; v++) {
        double s = 0.0;
        for (int j = 0; j < iters; j++) {
            const size_t o = (size_t)v * iters + j;
            if (weights[o] != 0.0) s += weights[o] * pow(nodes[o], p);
        }
        moments[v] = s;
    }
}
