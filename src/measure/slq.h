/* slq.h — the spectral density of a symmetric operator A (n × n, given only as x ↦ A·x) by
 * stochastic Lanczos quadrature (docs/design.md §10; Ubaru, Chen & Saad 2017, "Fast estimation
 * of tr(f(A)) via stochastic Lanczos quadrature", eqs. 3.4–3.6; Ghorbani et al. 2019 for the
 * Hessian, with the quadrature weights as PyHessian's 2024 fix has them):
 *
 *   for each of n_v probes v (Rademacher ±1 or Gaussian, on the support): m steps of Lanczos
 *   from q₁ = v/‖v‖ (measure/lanczos.h); nodes θ_j = the tridiagonal's eigenvalues, weights
 *   τ_j² = the squared first components of its unit eigenvectors (Σ_j τ_j² = 1), so that
 *   Σ_j τ_j²·θ_j^p = vᵀA^p v / vᵀv exactly for p ≤ 2m − 1 (Gauss quadrature);
 *   φ(t) = (1/n_v)·Σ_v Σ_j τ_j²·N(t; θ_j, σ²), the density broadened by a Gaussian of width σ,
 *   which estimates (1/n)·Σ_i N(t; λ_i, σ²) (E[vᵀA^p v/vᵀv] = tr(A^p)/n, exactly for Rademacher
 *   probes, where vᵀv = n).
 *
 * A probe whose Krylov space is invariant before m steps has fewer nodes: the rest are NaN with
 * weight 0. Float64 only (docs/design.md §2). Numerics only.
 */
#ifndef STABILITY_SLQ_H
#define STABILITY_SLQ_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "measure/lanczos.h"

/* v (n): ±1 (gaussian = 0, Rademacher) or N(0, 1) on the support (NULL: all), 0 off it. */
void slq_draw(gsl_rng *rng, int gaussian, const unsigned char *support, size_t n, double *v);

/* n_v = probes probes of m = iters ≤ l->K steps of A restricted to support: nodes, weights
 * (probes, iters). v (n) is scratch for the probe. Returns the probes that failed (a step not
 * finite: their nodes NaN, weights NaN). */
int slq_run(lanczos_t *l, lanczos_op_fn op, void *ctx, const unsigned char *support, int probes,
            int iters, int gaussian, gsl_rng *rng, double *v, double *nodes, double *weights);

/* φ(t_k) (npts) of nodes, weights (probes, iters) broadened by σ > 0 (NaN nodes skipped). */
void slq_density(const double *nodes, const double *weights, int probes, int iters, double sigma,
                 const double *t, int npts, double *phi);

/* Σ_j τ_j²·θ_j^p of each probe into moments (probes): vᵀA^p v / vᵀv when p ≤ 2m − 1. */
void slq_moments(const double *nodes, const double *weights, int probes, int iters, int p,
                 double *moments);

#endif
