/* directional.h — curvature along one direction, from a Hessian-vector product the caller
 * took (docs/design.md §10):
 *   directional_curvature:  uᵀHu / uᵀu, the exact curvature along the update u that the
 *       critical sharpness (measure/critical.h) estimates from forward passes;
 *   directional_precond_grad:  Bai et al. 2025 (arXiv 2506.04805, "Adaptive preconditioners
 *       trigger loss spikes in Adam"), the gradient-direction curvature of the preconditioned
 *       Hessian Ĥ = diag(D)·H: λ_grad = gᵀĤg / gᵀg = Σ_i g_i·D_i·(Hg)_i / Σ_i g_i², for Adam
 *       D = (1 − β₁)/((1 + β₁)(1 − β₁ᵗ)·(√v̂ + ε)) (their momentum factor included); their loss
 *       spike begins when it exceeds 2/η.
 * Numerics only. */
#ifndef STABILITY_DIRECTIONAL_H
#define STABILITY_DIRECTIONAL_H

#include <stddef.h>

/* uᵀHu / uᵀu of u (n) and Hu = H·u (n); NaN when u = 0. */
double directional_curvature(const double *u, const double *Hu, size_t n);

/* gᵀ·diag(D)·(Hg) / gᵀg of g (n), Hg = H·g (n) and the diagonal D (n); NaN when g = 0. */
double directional_precond_grad(const double *g, const double *Hg, const double *D, size_t n);

#endif
