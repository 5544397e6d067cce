/* lr_control.c — the curvature cap, CDAT and the catapult start (train/lr_control.h,
 * docs/design.md §6k). */
#include <math.h>
#include <stddef.h>
#include "train/lr_control.h"

void lrctl_init(lrctl_t *c)
{
    *c = (lrctl_t){.lambda = NAN, .cdat_lr = NAN, .catapult_lr = NAN};
}

double lrctl_scheduled(const config_t *cfg, const lrctl_t *c, long t)
{
    const long W = cfg->train.warmup;
    if (c->wu) return autowu_lr(c->wu, cfg, t);
    if (cfg->train.warmup_start != WARMUP_START_CATAPULT || t > W) return optim_lr(cfg, t);
    // Kalra & Barkeshli 2024: start at the catapult lr, reach the target at update W
    const double lr = cfg->train.lr, start = fmin(c->catapult_lr, lr);
    return start + (lr - start) * fmin(1.0, (double)(t - 1) / (double)(W - 1));
}

void lrctl_observe(lrctl_t *c, double lambda)
{
    if (!isnan(lambda)) c->lambda = lambda;
}

double lrctl_curvature_bound(const config_t *cfg, const optim_t *o, const lrctl_t *c)
{
    if (!(c->lambda > 0.0)) return INFINITY;
    // the stable sharpness is T₁/η (Cohen et al. 2022): η ≤ c·T₁/λ keeps λ under it
    return cfg->train.curvature_cap * optim_threshold(o, 1.0) / c->lambda;
}

double lrctl_cdat(const config_t *cfg, lrctl_t *c, double neg_gu, double uHu)
{
    if (isnan(uHu) || isnan(neg_gu)) return c->cdat_lr;
    const double rho = cfg->train.cdat_ema;
    c->cdat_num = rho * c->cdat_num + (1.0 - rho) * fmax(neg_gu, 0.0);
    c->cdat_den = rho * c->cdat_den + (1.0 - rho) * fabs(uHu);
    c->cdat_n++;
    // bias-corrected EMAs (as Adam's moments); the correction cancels in the ratio but for ε_c
    const double bc = 1.0 - pow(rho, (double)c->cdat_n);
    const double num = bc > 0.0 ? c->cdat_num / bc : fmax(neg_gu, 0.0);
    const double den = bc > 0.0 ? c->cdat_den / bc : fabs(uHu);
    c->cdat_lr = cfg->train.cdat_sigma * num / (den + LRCTL_CDAT_EPS);
    return c->cdat_lr;
}

double lrctl_apply(lrctl_t *c, double scheduled, double bound)
{
    if (bound < scheduled) {
        c->held++;
        return bound;
    }
    return scheduled;
}

double lrctl_catapult_search(double lr0, double L0, double (*loss_at)(void *, double), void *ctx,
                             int *trials)
{
    int n = 0;
    double lo = NAN, hi = NAN, lr = lr0;
    const int up = !(loss_at(ctx, lr) > L0);   // doubling from a stable lr, else halving
    n++;
    if (up) lo = lr;
    else hi = lr;
    for (int k = 0; k < LRCTL_CATAPULT_DOUBLINGS && (isnan(lo) || isnan(hi)); k++, n++) {
        lr = up ? 2.0 * lr : 0.5 * lr;
        if (loss_at(ctx, lr) > L0) hi = lr;
        else lo = lr;
    }
    if (trials) *trials = n;
    if (isnan(hi)) return INFINITY;
    if (isnan(lo)) return hi;
    while (hi > (1.0 + LRCTL_CATAPULT_TOL) * lo) {   // geometric bisection of [lo, hi]
        const double mid = sqrt(lo * hi);
        if (loss_at(ctx, mid) > L0) hi = mid;
        else lo = mid;
        n++;
    }
    if (trials) *trials = n;
    return hi;
}
