/* spectral.h — the largest singular value of every weight matrix (docs/design.md, "Low
 * precision, emulated"): Qiu & Yao 2025 (arXiv 2510.04212) watch it grow under bfloat16's biased
 * rounding of softmax·V before the loss explodes. Power iteration on WᵀW with GSL's BLAS.
 */
#ifndef STABILITY_SPECTRAL_H
#define STABILITY_SPECTRAL_H

#include <stddef.h>
#include "measure/probe.h"

/* Power iterations per matrix: σ from v_k, v_{k+1} = WᵀW v_k/‖·‖, v_0 = (1, …, 1)/√n + a fixed
 * ripple (not orthogonal to a top singular vector of any matrix met in practice). */
#define SPECTRAL_ITERS 30

/* ‖W‖₂ of W (rows, cols), row-major, by SPECTRAL_ITERS power iterations: a lower bound that
 * converges as (σ₂/σ₁)^(2k). NaN when out of memory. */
double spectral_norm(const real *W, size_t rows, size_t cols);

/* ‖W‖₂ of every 2-D tensor of m: layer (L,P) at its layer row and parameter column, extra (E)
 * for those outside the layers (the probes' axes ax); NaN for 1-D tensors and absent ones. */
void spectral_layers(const probe_axes_t *ax, const model_t *m, double *layer, double *extra);

#endif
