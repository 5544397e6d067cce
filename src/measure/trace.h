/* trace.h — the trace of a symmetric operator A (n × n, given only as x ↦ A·x) by Hutchinson's
 * estimator (Hutchinson 1989; Avron & Toledo 2011; Ghorbani et al. 2019 for the Hessian;
 * docs/design.md §10): tr(A) ≈ (1/N)·Σ_k z_kᵀA z_k over N Rademacher probes z_k (±1 on the
 * support, 0 off it: the trace of the principal submatrix), unbiased, with its standard error
 * s/√N (s the samples' standard deviation, GSL statistics). Float64 only. Numerics only.
 */
#ifndef STABILITY_TRACE_H
#define STABILITY_TRACE_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "measure/lanczos.h"

typedef struct {
    double mean;     /* the estimate of tr(A) */
    double se;       /* its standard error s/√N (NaN for N < 2) */
    int probes;      /* N */
} trace_result_t;

/* N = probes ≥ 1 probes of op restricted to support (NULL: all); z, Az (n) and samples (probes)
 * are scratch (samples keeps each zᵀAz). */
void trace_hutchinson(lanczos_op_fn op, void *ctx, const unsigned char *support, size_t n,
                      int probes, gsl_rng *rng, double *z, double *Az, double *samples,
                      trace_result_t *out);

#endif
