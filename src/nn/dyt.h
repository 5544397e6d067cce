/* dyt.h — Dynamic Tanh, a norm-free replacement of LayerNorm (Zhu et al. 2025):
 *     y = γ ⊙ tanh(α·x) + β,   α a learnable scalar, γ, β (C)
 * over the last axis of x (N,C), every row independently. Its Jacobian is diagonal:
 * ∂y_i/∂x_i = γ_i·α·(1 − tanh²(α·x_i)) (docs/design.md §9). */
#ifndef STABILITY_DYT_H
#define STABILITY_DYT_H

#include "util/real.h"

#include <stddef.h>

/* out (N,C) = γ ⊙ tanh(α·x) + β. beta may be NULL (β = 0). */
void dyt_forward(real *out, const real *x, double alpha, const real *gamma,
                 const real *beta, size_t N, size_t C);

/* ACCUMULATES dx (N,C) += α·s, *dalpha += Σ s ⊙ x, dgamma += Σ_rows dout ⊙ tanh(α·x),
 * dbeta += Σ_rows dout, with s = dout ⊙ γ ⊙ (1 − tanh²(α·x)). dbeta may be NULL. */
void dyt_backward(real *dx, real *dalpha, real *dgamma, real *dbeta,
                  const real *dout, const real *x, double alpha, const real *gamma,
                  size_t N, size_t C);

/* As dyt_backward, but OVERWRITES dx (N,C): the bits of zeroing dx first, without the pass. */
void dyt_backward_set(real *dx, real *dalpha, real *dgamma, real *dbeta,
                      const real *dout, const real *x, double alpha, const real *gamma,
                      size_t N, size_t C);

/* Spectral and Frobenius norm of the (diagonal) Jacobian of one row x (C). */
void dyt_jacobian_norms(const real *x, double alpha, const real *gamma, size_t C,
                        double *spec, double *fro);

#endif
