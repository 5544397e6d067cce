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

#endif
