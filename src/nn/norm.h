/* norm.h — LayerNorm / RMSNorm over the last axis: forward, backward (norm.c), the Jacobian of
 * one row and its norms (norm_jacobian.c).
 *
 * Rows are tokens: x is (N, C) row-major, one normalisation per row.
 * LayerNorm (Ba et al. 2016):  y = γ ⊙ (x − μ)·r + β,  r = 1/√(σ² + ε), σ² biased (÷C).
 * RMSNorm   (Zhang & Sennrich 2019):  y = γ ⊙ x·r,            r = 1/√(mean(x²) + ε), no β.
 * NORM_NONE:             y = x (no parameters).
 */
#ifndef STABILITY_NORM_H
#define STABILITY_NORM_H

#include "util/real.h"

#include <stddef.h>
#include "util/kinds.h"   /* norm_kind_t */

/* Forward. out (N,C); mean (N) (may be NULL for RMSNorm and NORM_NONE), rstd (N) = r.
 * beta is ignored (may be NULL) for RMSNorm and NORM_NONE; gamma ignored for NORM_NONE. */
void norm_forward(norm_kind_t kind, real *out, real *mean, real *rstd,
                  const real *x, const real *gamma, const real *beta,
                  size_t N, size_t C, double eps);

/* Backward: ACCUMULATES into dx (N,C), dgamma (C), dbeta (C) (dbeta NULL for RMSNorm).
 * dout (N,C); x, mean, rstd as saved by norm_forward.
 * LayerNorm: dx = r·(dx̂ − mean(dx̂) − x̂·mean(dx̂ ⊙ x̂)), dx̂ = dout ⊙ γ   (Ba et al. 2016).
 * RMSNorm:   dx = r·(dx̂ − x̂·mean(dx̂ ⊙ x̂)),  x̂ = x·r                   (docs/design.md §9). */
void norm_backward(norm_kind_t kind, real *dx, real *dgamma, real *dbeta,
                   const real *dout, const real *x, const real *mean,
                   const real *rstd, const real *gamma, size_t N, size_t C);

/* As norm_backward, but OVERWRITES dx (N,C) (dgamma, dbeta still accumulate): the same bits
 * as zeroing dx and calling norm_backward, without the zeroing pass. */
void norm_backward_set(norm_kind_t kind, real *dx, real *dgamma, real *dbeta,
                       const real *dout, const real *x, const real *mean,
                       const real *rstd, const real *gamma, size_t N, size_t C);

/* Exact spectral and Frobenius norm of the C×C Jacobian J = ∂y/∂x of ONE row x (C),
 * with γ, without forming J: J = r·diag(γ)·P with P = I − Σ_k c_k u_k u_kᵀ (rank ≤ 2),
 * ‖J‖₂² = r²·λ_max(diag(γ)·P²·diag(γ)) by inertia-counting bisection, O(C) per step.
 * Uniform γ (e.g. γ = 1 at initialisation) takes the closed form ‖J‖₂ = r·|γ|; C ≤ 2 closed
 * forms too. NORM_NONE gives the identity's norms (1, √C). gamma NULL means γ = 1. */
void norm_jacobian_norms(norm_kind_t kind, const real *x, const real *gamma,
                         size_t C, double eps, double *spec, double *fro);

/* Build the explicit C×C Jacobian J[i][j] = ∂y_i/∂x_j of one row (for tests and small C). */
void norm_jacobian_build(norm_kind_t kind, real *J, const real *x, const real *gamma,
                         size_t C, double eps);

#endif
