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

/* Cap params (n) against prev (n, the parameters before the update) per tensor of o at ratio
 * r > 0. Returns the number of tensors scaled. */
int update_bound_ratio(const optim_t *o, real *params, const real *prev, double r);

#endif
