/* optim.c — sgd (momentum), adam, adamw, radam over one flat buffer; clipping; schedules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/optim.h"

int optim_init(optim_t *o, const config_t *cfg, size_t n)
{
    memset(o, 0, sizeof *o);
    o->kind = cfg->train.optimizer;
    o->beta1 = cfg->train.beta1;
    o->beta2 = cfg->train.beta2;
    o->eps = cfg->train.eps;
    o->weight_decay = cfg->train.weight_decay;
    o->momentum = cfg->train.momentum;
    o->n = n;
    o->m = calloc(n ? n : 1, sizeof(double));
    if (o->kind != OPT_SGD) o->v = calloc(n ? n : 1, sizeof(double));
    if (!o->m || (o->kind != OPT_SGD && !o->v)) { optim_free(o); return 1; }
    return 0;
}

void optim_free(optim_t *o)
{
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

/* b ← μ·b + (g + λθ);  θ ← θ − α·b */
static void sgd_update(optim_t *o, double *params, const double *grads, double lr)
{
    const double mu = o->momentum, wd = o->weight_decay;
    double *b = o->m;
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < o->n; i++) {
        const double g = grads[i] + wd * params[i];
        b[i] = mu * b[i] + g;
        params[i] -= lr * b[i];
    }
}

/* adam / adamw / radam share the moments; they differ in the decay and the step size.
 * rect: the RAdam rectifier rₜ, or 0 for RAdam's un-adapted (momentum-SGD) step; 1 for adam. */
static void adam_update(optim_t *o, double *params, const double *grads, double lr,
                        int decoupled, double rect, int adaptive)
{
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    const double bc1 = 1.0 - pow(b1, (double)o->t), bc2 = 1.0 - pow(b2, (double)o->t);
    double *m = o->m, *v = o->v;
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < o->n; i++) {
        double g = grads[i];
        if (decoupled) params[i] -= lr * wd * params[i];
        else g += wd * params[i];
        m[i] = b1 * m[i] + (1.0 - b1) * g;
        v[i] = b2 * v[i] + (1.0 - b2) * g * g;
        const double mhat = m[i] / bc1;
        if (adaptive) params[i] -= lr * rect * mhat / (sqrt(v[i] / bc2) + eps);
        else params[i] -= lr * mhat;
    }
}

void optim_update(optim_t *o, double *params, const double *grads, double lr)
{
    o->t++;
    switch (o->kind) {
    case OPT_SGD: sgd_update(o, params, grads, lr); break;
    case OPT_ADAM: adam_update(o, params, grads, lr, 0, 1.0, 1); break;
    case OPT_ADAMW: adam_update(o, params, grads, lr, 1, 1.0, 1); break;
    case OPT_RADAM: {
        // variance of the adaptive lr is tractable only once ρₜ > 4 (Liu et al. 2020, Alg. 2)
        const double b2t = pow(o->beta2, (double)o->t);
        const double rho_inf = 2.0 / (1.0 - o->beta2) - 1.0;
        const double rho = rho_inf - 2.0 * (double)o->t * b2t / (1.0 - b2t);
        if (rho > 4.0) {
            const double r = sqrt((rho - 4.0) * (rho - 2.0) * rho_inf /
                                  ((rho_inf - 4.0) * (rho_inf - 2.0) * rho));
            adam_update(o, params, grads, lr, 0, r, 1);
        } else {
            adam_update(o, params, grads, lr, 0, 0.0, 0);
        }
        break;
    }
    }
}

double optim_global_norm(const double *g, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += g[i] * g[i];
    return sqrt(s);
}

double optim_clip(double *g, size_t n, double max_norm)
{
    const double norm = optim_global_norm(g, n);
    if (max_norm > 0.0 && norm > max_norm) {
        const double scale = max_norm / norm;
        for (size_t i = 0; i < n; i++) g[i] *= scale;
    }
    return norm;
}

double optim_lr(schedule_t schedule, double lr, long warmup, long steps, long t)
{
    const long w = warmup > 1 ? warmup : 1;
    if (t <= w) return lr * (double)t / (double)w;   // w = 1: lr at t = 1, no warm-up
    switch (schedule) {
    case SCHED_INVERSE_SQRT: return lr * sqrt((double)w / (double)t);
    case SCHED_LINEAR:
        if (t >= steps) return 0.0;
        return lr * (double)(steps - t) / (double)(steps - w);
    case SCHED_CONSTANT: break;
    }
    return lr;
}
