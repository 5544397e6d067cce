/* subopt.c — Riabinin et al. (2026)'s learning rate from the suboptimality gap and the fit of
 * its constants (docs/design.md §6h). */
#include <math.h>
#include <gsl/gsl_integration.h>
#include "train/subopt.h"

#define SUBOPT_SIGMA_F 1e-3    /* the code's lipschitz_sigma_F */
#define SUBOPT_SCAN 500        /* Δ* candidates (np.linspace(0.01, Δ₀ − 0.01, 500)) */
#define SUBOPT_EPS 1e-8        /* Δ's floor and the denominator's (LipschitzScheduler.epsilon) */

double subopt_kappa(const model_t *m, optimizer_t kind)
{
    double k = 0.0;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->rank != 2) continue;
        const double r = (double)t->rows, c = (double)t->cols;
        k += kind == OPT_MUON ? fmin(r, c) : kind == OPT_LION ? r * c : 1.0;
    }
    return k;
}

/* One Δ* of the scan: its constants and the integrand's data. */
typedef struct {
    double K0, K1, K2, ds, d0, lr, div, inv2s;
} fit_point_t;

static double eta(const fit_point_t *p, double x) { return x / (p->K0 + p->K1 * x + p->K2 * x * x); }

/* w(x)·(η(x) − target(x))², mode linear_and_cos. */
static double integrand(double x, void *ctx)
{
    const fit_point_t *p = ctx;
    const double pi = 3.14159265358979323846;
    const double target = x < p->ds ? 0.5 * p->lr * (1.0 - cos(pi * x / p->ds))
                                    : p->lr + (p->lr / p->div - p->lr) * (x - p->ds) / (p->d0 - p->ds);
    const double d = eta(p, x) - target, w = exp(-(x - p->ds) * (x - p->ds) * p->inv2s);
    return w * d * d;
}

int subopt_fit(subopt_t *s, double lr, double div, double delta0, double kappa)
{
    s->delta0 = delta0;
    s->kappa = kappa;
    if (!(delta0 > 0.02)) return 1;
    gsl_integration_workspace *ws = gsl_integration_workspace_alloc(50);
    if (!ws) return 1;
    double best = INFINITY;
    for (int i = 0; i < SUBOPT_SCAN; i++) {
        fit_point_t p = {.ds = 0.01 + i * ((delta0 - 0.01 - 0.01) / (SUBOPT_SCAN - 1)),
                         .d0 = delta0, .lr = lr, .div = div,
                         .inv2s = SUBOPT_SIGMA_F * kappa / 2.0};   // σ_F/(2σ_norm), σ_norm = 1/κ
        p.K2 = delta0 * (div - 1.0) / (lr * (delta0 - p.ds) * (delta0 - p.ds));
        p.K0 = p.K2 * p.ds * p.ds;
        p.K1 = 1.0 / lr - 2.0 * p.K2 * p.ds;
        gsl_function f = {integrand, &p};
        double val, abserr;
        // SciPy's quad defaults: epsabs = epsrel = 1.49e-8, limit 50
        gsl_integration_qags(&f, 0.0, delta0, 1.49e-8, 1.49e-8, 50, ws, &val, &abserr);
        val /= delta0;
        if (val < best) {
            best = val;
            s->K0 = p.K0;
            s->K1 = p.K1;
            s->K2 = p.K2;
            s->delta_star = p.ds;
        }
    }
    gsl_integration_workspace_free(ws);
    s->fitted = isfinite(best);
    return !s->fitted;
}

/* The cosine decay from lr at update s0 to f = lr·min_lr_ratio at train.steps. */
static double decay(const config_t *cfg, long s0, long t)
{
    const double lr = cfg->train.lr, f = lr * cfg->train.min_lr_ratio, pi = 3.14159265358979323846;
    const long span = cfg->train.steps - s0;
    if (span <= 0) return lr;
    return f + 0.5 * (lr - f) * (1.0 + cos(pi * (double)(t - s0) / (double)span));
}

double subopt_lr(subopt_t *s, const config_t *cfg, long t, double loss)
{
    const double lr = cfg->train.lr, div = cfg->train.lr_div;
    if (t == 1 && subopt_fit(s, lr, div, loss - cfg->train.f_star, s->kappa))
        s->switched = 1;   // Δ₀ ≤ 0.02: at the floor already, decay from the start
    if (s->switched) return decay(cfg, s->switched, t);
    const double d = fmax(loss - cfg->train.f_star, SUBOPT_EPS);
    if (d <= s->delta_star) {   // the peak: from here on the decay (the code's decay_scheduler)
        s->switched = t;
        return lr;
    }
    const double e = d / fmax(s->K0 + s->K1 * d + s->K2 * d * d, SUBOPT_EPS);
    return fmin(lr, fmax(lr / div, e));   // clamped to [lr/div, lr] (issue; the code: [0, lr])
}

void subopt_replay(subopt_t *s, const config_t *cfg, const double *loss, long n)
{
    s->switched = 0;
    s->fitted = 0;
    for (long t = 1; t <= n; t++) subopt_lr(s, cfg, t, loss[t - 1]);
}
