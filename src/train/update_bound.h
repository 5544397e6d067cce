/* update_bound.h — per-tensor bounds on an update already made (docs/design.md §6k). Numerics
 * only.
 *   relative-update cap (Kosson et al. 2024, "Analyzing & reducing the need for learning rate
 *   warmup in GPT training"): for each tensor W of the optimizer (optim_set_tensors) with
 *   ΔW = W_t − W_{t−1}, when ‖ΔW‖_F > r·‖W_{t−1}‖_F the update is scaled to
 *   W_t = W_{t−1} + ΔW·r·‖W_{t−1}‖_F/‖ΔW‖_F (so ‖ΔW‖_F/‖W_{t−1}‖_F = r). A tensor with
 *   ‖W_{t−1}‖_F = 0 (biases, β at initialisation) is left as it is: LAMB's convention for a zero
 *   norm (trust ratio 1), else it could never leave 0. The optimizer's moments are unchanged.
 */
#ifndef STABILITY_UPDATE_BOUND_H
#define STABILITY_UPDATE_BOUND_H

#include "train/optim.h"

/* LAMB's update (You et al. 2020, "Large batch optimization for deep learning: training BERT
 * in 76 minutes", Alg. 2, φ the identity as in their experiments): per tensor of o,
 *   m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;  r = m̂/(√v̂ + ε) (bias-corrected);
 *   u = r + λθ;  θ ← θ − α·lr_mult·(‖θ‖/‖u‖)·u,
 * the ratio 1 when ‖θ‖ or ‖u‖ is 0 (the reference implementations' convention). o->t is
 * already incremented (optim_update). Leaves seg[].sumsq = Σ r² per tensor (the update RMS). */
void update_bound_lamb(optim_t *o, real *params, const real *grads, double lr);

/* Cap params (n) against prev (n, the parameters before the update) per tensor of o at ratio
 * r > 0. Returns the number of tensors scaled. */
int update_bound_ratio(const optim_t *o, real *params, const real *prev, double r);

/* Power iterations of σ₁ at most, and their relative convergence. */
#define UPDATE_BOUND_POWER_ITERS 50
#define UPDATE_BOUND_POWER_TOL 1e-10

/* σ₁(A) of the row-major rows × cols matrix A by power iteration on AᵀA (GSL's BLAS), from
 * the unit vector of equal entries; work holds rows + cols doubles. 0 for A = 0. */
double update_bound_sigma1(const double *A, size_t rows, size_t cols, double *work);

/* AdamW²'s spectral bound (Qi et al., ICLR 2025, "Taming Transformer without using learning
 * rate warmup"): for every 2-D tensor W of m (every weight matrix, the embeddings too) the lr
 * of this update is at most τ·σ₁(W_{t−1})/σ₁(U_t), U_t the update at lr 1. Every optimizer here
 * is linear in the lr (ΔW = η·U), so that is: when σ₁(ΔW) > τ·σ₁(W_{t−1}), ΔW is scaled by
 * τ·σ₁(W_{t−1})/σ₁(ΔW). params and prev as update_bound_ratio; work holds
 * update_bound_work_size(m) doubles. Returns the matrices scaled. */
int update_bound_spectral(const model_t *m, real *params, const real *prev, double tau,
                          double *work);

/* Doubles of update_bound_spectral's work space for m: two copies of its largest matrix and
 * the power iteration's vectors. */
size_t update_bound_work_size(const model_t *m);

#endif
