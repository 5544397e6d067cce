/* optim.c — sgd (momentum), adam, adamw, radam over one flat buffer; clipping; schedules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/optim.h"
#include "nn/vec.h"
#include "util/threads.h"

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
    o->m = calloc(n ? n : 1, sizeof(real));
    if (o->kind != OPT_SGD) o->v = calloc(n ? n : 1, sizeof(real));
    if (!o->m || (o->kind != OPT_SGD && !o->v)) { optim_free(o); return 1; }
    return 0;
}

void optim_free(optim_t *o)
{
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

/* b ← μ·b + (g + λθ);  θ ← θ − α·b  over [lo, hi). VR_LANES elements at a time: each lane does
 * the scalar operations (nn/vec.h), so in float64 the result is the scalar loop's, bit for bit
 * (in float32 the tail evaluates in double; parts start at whole vectors, so the tail is always
 * the buffer's last elements, whatever the split). */
static void sgd_range(optim_t *o, real *params, const real *grads, double lr, size_t lo,
                      size_t hi)
{
    const double mu = o->momentum, wd = o->weight_decay;
    real *b = o->m;
    size_t i = lo;
    const vreal MU = vr_set1(mu), WD = vr_set1(wd), LR = vr_set1(lr);
    for (; i + VR_LANES <= hi; i += VR_LANES) {
        const vreal p = vr_load(params + i);
        const vreal g = vr_load(grads + i) + WD * p;
        const vreal bb = MU * vr_load(b + i) + g;
        vr_store(b + i, bb);
        vr_store(params + i, p - LR * bb);
    }
    for (; i < hi; i++) {
        const double g = grads[i] + wd * params[i];
        b[i] = mu * b[i] + g;
        params[i] -= lr * b[i];
    }
}

/* adam / adamw / radam share the moments; they differ in the decay and the step size.
 * rect: the RAdam rectifier rₜ, or 0 for RAdam's un-adapted (momentum-SGD) step; 1 for adam.
 * Over [lo, hi), VR_LANES elements at a time as sgd_range; the scalar tail is the reference form. */
typedef struct {
    double lr, rect, bc1, bc2;
    int decoupled, adaptive;
} adam_step_t;

static void adam_range(optim_t *o, real *params, const real *grads, const adam_step_t *a,
                       size_t lo, size_t hi)
{
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    const double lr = a->lr, rect = a->rect, bc1 = a->bc1, bc2 = a->bc2;
    real *m = o->m, *v = o->v;
    size_t i = lo;
    const vreal B1 = vr_set1(b1), B2 = vr_set1(b2), C1 = vr_set1(1.0 - b1), C2 = vr_set1(1.0 - b2);
    const vreal BC1 = vr_set1(bc1), BC2 = vr_set1(bc2), EPS = vr_set1(eps), WD = vr_set1(wd);
    const vreal LRWD = vr_set1(lr * wd), LRR = vr_set1(lr * rect), LR = vr_set1(lr);
    for (; i + VR_LANES <= hi; i += VR_LANES) {
        vreal p = vr_load(params + i), g = vr_load(grads + i);
        if (a->decoupled) p = p - LRWD * p;
        else g = g + WD * p;
        const vreal mm = B1 * vr_load(m + i) + C1 * g;
        const vreal vv = B2 * vr_load(v + i) + C2 * g * g;
        vr_store(m + i, mm);
        vr_store(v + i, vv);
        const vreal mhat = mm / BC1;
        if (a->adaptive) p = p - LRR * mhat / (vr_sqrt(vv / BC2) + EPS);
        else p = p - LR * mhat;
        vr_store(params + i, p);
    }
    for (; i < hi; i++) {
        double g = grads[i];
        if (a->decoupled) params[i] -= lr * wd * params[i];
        else g += wd * params[i];
        m[i] = b1 * m[i] + (1.0 - b1) * g;
        v[i] = b2 * v[i] + (1.0 - b2) * g * g;
        const double mhat = m[i] / bc1;
        if (a->adaptive) params[i] -= lr * rect * mhat / (sqrt(v[i] / bc2) + eps);
        else params[i] -= lr * mhat;
    }
}

/* One update over part t of nt of the parameters (boundaries at whole vectors), on the
 * step's pool (util/threads.h): element-wise, so any split gives the same bits. */
typedef struct {
    optim_t *o;
    real *params;
    const real *grads;
    double lr;
    adam_step_t adam;
    int sgd;
} update_job_t;

static void update_part(void *ctx, int t, int nt)
{
    const update_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->o->n, t, nt, VR_LANES, &lo, &hi);
    if (j->sgd) sgd_range(j->o, j->params, j->grads, j->lr, lo, hi);
    else adam_range(j->o, j->params, j->grads, &j->adam, lo, hi);
}

static void sgd_update(optim_t *o, real *params, const real *grads, double lr)
{
    update_job_t j = {.o = o, .params = params, .grads = grads, .lr = lr, .sgd = 1};
    threads_run(threads_for(4.0 * (double)o->n), update_part, &j);
}

static void adam_update(optim_t *o, real *params, const real *grads, double lr,
                        int decoupled, double rect, int adaptive)
{
    update_job_t j = {.o = o, .params = params, .grads = grads, .lr = lr,
                      .adam = {lr, rect, 1.0 - pow(o->beta1, (double)o->t),
                               1.0 - pow(o->beta2, (double)o->t), decoupled, adaptive}};
    threads_run(threads_for(8.0 * (double)o->n), update_part, &j);
}

void optim_update(optim_t *o, real *params, const real *grads, double lr)
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

double optim_global_norm(const real *g, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += g[i] * g[i];
    return sqrt(s);
}

double optim_clip(real *g, size_t n, double max_norm)
{
    const double norm = optim_global_norm(g, n);
    if (max_norm > 0.0 && norm > max_norm) {
        const double scale = max_norm / norm;
        for (size_t i = 0; i < n; i++) g[i] *= scale;
    }
    return norm;
}

double optim_lr(const config_t *cfg, long t)
{
    const double lr = cfg->train.lr;
    const long steps = cfg->train.steps;
    const long w = cfg->train.warmup > 1 ? cfg->train.warmup : 1;
    if (t <= w) return lr * (double)t / (double)w;   // w = 1: lr at t = 1, no warm-up
    switch (cfg->train.schedule) {
    case SCHED_INVERSE_SQRT: return lr * sqrt((double)w / (double)t);
    case SCHED_LINEAR:
        if (t >= steps) return 0.0;
        return lr * (double)(steps - t) / (double)(steps - w);
    case SCHED_COSINE: {   // Loshchilov & Hutter 2017, Eq. 5, one period from the warm-up's end
        const double floor = lr * cfg->train.min_lr_ratio, pi = 3.14159265358979323846;
        if (t >= steps) return floor;
        return floor + 0.5 * (lr - floor) * (1.0 + cos(pi * (double)(t - w) / (double)(steps - w)));
    }
    case SCHED_CONSTANT: break;
    }
    return lr;
}
