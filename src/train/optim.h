/* optim.h — optimizers over the one parameter buffer, global-norm clipping, learning-rate
 * schedules (docs/design.md §4 [train]). Numerics only.
 *
 * Update number t = 1, 2, … with gradient g (already clipped), learning rate α = optim_lr(t),
 * weight decay λ, all element-wise over the n parameters θ:
 *   sgd:    b ← μ·b + (g + λθ);  θ ← θ − α·b                        (PyTorch SGD, dampening 0)
 *   adam:   g ← g + λθ;  m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;
 *           θ ← θ − α·m̂/(√v̂ + ε),  m̂ = m/(1−β₁ᵗ),  v̂ = v/(1−β₂ᵗ)    (Kingma & Ba 2015)
 *   adamw:  θ ← θ − αλθ, then adam without the λθ term             (Loshchilov & Hutter 2019)
 *   radam:  g ← g + λθ; m, v, m̂, v̂ as adam;  ρ∞ = 2/(1−β₂) − 1,  ρₜ = ρ∞ − 2tβ₂ᵗ/(1−β₂ᵗ);
 *           ρₜ > 4: θ ← θ − α·rₜ·m̂/(√v̂ + ε),
 *                   rₜ = √((ρₜ−4)(ρₜ−2)ρ∞ / ((ρ∞−4)(ρ∞−2)ρₜ));
 *           else:   θ ← θ − α·m̂                                     (Liu et al. 2020, Alg. 2;
 *           the paper's threshold 4 — PyTorch uses 5 — and PyTorch's ε beside √v̂)
 */
#ifndef STABILITY_OPTIM_H
#define STABILITY_OPTIM_H

#include "util/real.h"

#include <stddef.h>
#include "config/config.h"

typedef struct {
    optimizer_t kind;
    double beta1, beta2, eps, weight_decay, momentum;
    size_t n;            /* parameters */
    long t;              /* updates taken */
    real *m;           /* (n) first moment; sgd: the momentum buffer b */
    real *v;           /* (n) second moment; NULL for sgd */
} optim_t;

/* Set up the optimizer of cfg->train for n parameters, moments zero, t = 0. Returns 0 or 1 (OOM). */
int optim_init(optim_t *o, const config_t *cfg, size_t n);

/* Free the moment buffers. */
void optim_free(optim_t *o);

/* One update of params (n) with grads (n) at learning rate lr; increments o->t first. */
void optim_update(optim_t *o, real *params, const real *grads, double lr);

/* ‖g‖₂ over all n entries (summed in a fixed order: reproducible). */
double optim_global_norm(const real *g, size_t n);

/* Scale g by max_norm/norm when norm = ‖g‖₂ exceeds max_norm > 0 (0 = off). Returns norm. */
double optim_clip(real *g, size_t n, double max_norm);

/* Learning rate of update t ≥ 1 of cfg->train: linear warm-up lr·t/w for t ≤ w (warmup 0 or 1:
 * none, w = 1), then inverse_sqrt lr·√(w/t), linear lr·(steps−t)/(steps−w) (0 at t = steps),
 * constant lr, or cosine (Loshchilov & Hutter 2017, without restarts) from lr at t = w to the
 * floor f = lr·min_lr_ratio at t = steps: f + (lr − f)·(1 + cos(π(t−w)/(steps−w)))/2. */
double optim_lr(const config_t *cfg, long t);

#endif
