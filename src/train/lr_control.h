/* lr_control.h — the learning-rate remedies of warm-up (docs/design.md §6k). Numerics only.
 *
 *   curvature cap (the edge-of-stability view's own remedy; Cohen et al. 2021, 2022): the
 *       active λ_s = λ_max(P⁻¹H) measured after s updates caps updates s+1 … s+k:
 *       η_t = min(η_sched(t), c·T₁/λ_s), T₁ = optim_threshold(o, 1) (2(1+β₁)/(1−β₁) for Adam);
 *   CDAT (Roulet et al. 2024, arXiv 2407.06183): with u the base optimizer's update direction
 *       (θ ← θ + η·u) and g the gradient, η_t = min(η_sched(t), σ·N_t/(D_t + ε_c)),
 *       N_t, D_t the EMAs (factor ρ, bias-corrected) of max(−gᵀu, 0) and |uᵀHu|;
 *   catapult start (Kalra & Barkeshli 2024, arXiv 2406.09405): η_c, the smallest lr whose one
 *       update from θ₀ raises the measurement batch's loss, by doubling then bisection to 10 %;
 *       the warm-up runs from η_s = min(η_c, lr): η_t = η_s + (lr − η_s)·min(1, (t−1)/(W−1)).
 */
#ifndef STABILITY_LR_CONTROL_H
#define STABILITY_LR_CONTROL_H

#include "config/config.h"
#include "train/optim.h"
#include "train/autowu.h"

/* CDAT's ε_c of the denominator (keeps a flat direction from dividing by zero). */
#define LRCTL_CDAT_EPS 1e-12

/* Catapult search: the first trial lr is lr·2^−LRCTL_CATAPULT_START; at most this many
 * doublings (or halvings); bisection until hi/lo ≤ 1 + LRCTL_CATAPULT_TOL. */
#define LRCTL_CATAPULT_START 10
#define LRCTL_CATAPULT_DOUBLINGS 40
#define LRCTL_CATAPULT_TOL 0.1

/* The controller's state. */
typedef struct {
    double lambda;        /* curvature: the active λ_max(P⁻¹H) of the last row; NaN before one */
    long held;            /* updates whose applied lr was below the schedule's */
    double cdat_num, cdat_den;   /* cdat: the EMAs before bias correction */
    long cdat_n;          /* cdat: terms in them */
    double cdat_lr;       /* cdat: the lr of the last update's rule, before the schedule's cap */
    double catapult_lr;   /* η_c (+∞ when no lr up to the search's end raised the loss); NaN
                             without warmup_start = catapult */
    autowu_t *wu;         /* schedule = autowu: its state; else NULL */
} lrctl_t;

/* The state at update 0. */
void lrctl_init(lrctl_t *c);

/* The scheduled lr of update t ≥ 1: optim_lr, or with warmup_start = catapult the warm-up
 * from min(c->catapult_lr, lr) for t ≤ warmup, or AutoWU's (c->wu, autowu_lr). */
double lrctl_scheduled(const config_t *cfg, const lrctl_t *c, long t);

/* Curvature cap: hold the active λ of a new row (a NaN, kinked row keeps the last one). */
void lrctl_observe(lrctl_t *c, double lambda);

/* Curvature cap: the lr bound c·T₁/λ of the held λ (+∞ before any row or when λ ≤ 0). */
double lrctl_curvature_bound(const config_t *cfg, const optim_t *o, const lrctl_t *c);

/* CDAT: fold the update's −gᵀu and uᵀHu into the EMAs; returns σ·N̂/(D̂ + ε_c) (NaN when uᵀHu
 * is NaN: the EMAs are then unchanged and the last rule's lr is kept). */
double lrctl_cdat(const config_t *cfg, lrctl_t *c, double neg_gu, double uHu);

/* The lr applied: min(scheduled, bound), counting in c->held when the bound is the lower. */
double lrctl_apply(lrctl_t *c, double scheduled, double bound);

/* The catapult search from the first trial lr0 > 0: loss_at(ctx, η) is the loss after one
 * update at η, raised when above L0. Returns η_c (the smallest raising lr found, within 10 %),
 * +∞ when none up to lr0·2^LRCTL_CATAPULT_DOUBLINGS did, or lr0·2^−LRCTL_CATAPULT_DOUBLINGS
 * when every trial raised it. *trials (may be NULL) gets the losses evaluated. */
double lrctl_catapult_search(double lr0, double L0, double (*loss_at)(void *, double), void *ctx,
                             int *trials);

#endif
