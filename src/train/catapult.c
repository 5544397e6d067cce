/* catapult.c — the catapult lr at θ₀ (train/catapult.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/catapult.h"

/* What a trial needs: the model at θ₀, its gradient, a fresh optimizer. */
typedef struct {
    model_t *m;
    const batch_t *b;
    const real *theta0;   // (n)
    const real *g0;       // (n) the clipped gradient at θ₀
    optim_t opt;
    int sgd;
} trial_t;

/* The loss of the batch after one update at lr from θ₀ with fresh moments. */
static double loss_after(void *ctx, double lr)
{
    trial_t *c = ctx;
    const size_t n = c->m->num_params;
    memcpy(c->m->params, c->theta0, n * sizeof(real));
    memset(c->opt.m, 0, n * sizeof(real));
    if (!c->sgd) memset(c->opt.v, 0, n * sizeof(real));
    c->opt.t = 0;
    optim_update(&c->opt, c->m->params, c->g0, lr);
    return model_forward(c->m, c->b);
}

int catapult_find(train_t *t, char *err, size_t errlen)
{
    model_t *m = t->s.model;
    const config_t *cfg = &t->s.cfg;
    const size_t n = m->num_params;
    batch_t b = {0};
    b.tokens = malloc(m->caps.tokens * sizeof(int32_t));
    b.targets = malloc(m->caps.tokens * sizeof(int32_t));
    b.src = m->caps.src_tokens ? malloc(m->caps.src_tokens * sizeof(int32_t)) : NULL;
    real *theta0 = malloc(n * sizeof(real)), *g0 = malloc(n * sizeof(real));
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    trial_t c = {.m = m, .b = &b, .theta0 = theta0, .g0 = g0, .sgd = cfg->train.optimizer == OPT_SGD};
    int rc = !b.tokens || !b.targets || (m->caps.src_tokens && !b.src) || !theta0 || !g0 || !r ||
             optim_init(&c.opt, cfg, n) || optim_set_tensors(&c.opt, m);
    if (!rc) {
        gsl_rng_set(r, cfg->init.seed + CURV_BATCH_OFFSET);   // the curvature's batch
        const long drawn = t->s.data.drawn;
        data_batch(&t->s.data, r, &b);
        data_seek(&t->s.data, drawn);
        memcpy(theta0, m->params, n * sizeof(real));
        model_dropout_off(m);   // the first training step draws fresh masks
        const double L0 = model_forward(m, &b);
        model_zero_grad(m);
        model_backward(m);
        optim_clip(m->grads, n, cfg->train.clip);
        memcpy(g0, m->grads, n * sizeof(real));
        const double lr0 = ldexp(cfg->train.lr, -LRCTL_CATAPULT_START);
        t->ctl.catapult_lr = lrctl_catapult_search(lr0, L0, loss_after, &c, NULL);
        memcpy(m->params, theta0, n * sizeof(real));
        model_zero_grad(m);
    }
    if (rc) snprintf(err, errlen, "out of memory");
    if (r) gsl_rng_free(r);
    optim_free(&c.opt);
    free(theta0);
    free(g0);
    free(b.tokens);
    free(b.targets);
    free(b.src);
    return rc;
}
