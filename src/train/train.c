/* train.c — the training loop: batch, forward, backward, clip, optimizer update, probes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/train.h"

int train_create(train_t **out, const config_t *cfg, char *err, size_t errlen)
{
    *out = NULL;
    train_t *t = calloc(1, sizeof *t);
    if (!t) { snprintf(err, errlen, "out of memory"); return 1; }
    t->cfg = *cfg;
    int rc = data_open(&t->data, &t->cfg, err, errlen);
    if (rc) { free(t); return rc; }
    t->model = model_create(&t->cfg);
    t->rng_init = gsl_rng_alloc(gsl_rng_mt19937);
    t->rng_data = gsl_rng_alloc(gsl_rng_mt19937);
    const int L = cfg->model.layers;
    const size_t BT = (size_t)cfg->data.batch * cfg->model.seq_len;
    t->tokens = malloc(BT * sizeof(int32_t));
    t->targets = malloc(BT * sizeof(int32_t));
    t->probe.grad_fro = malloc((size_t)L * P_NUM_LAYER_PARAMS * sizeof(double));
    t->probe.extra_grad_fro = malloc(EXTRA_COUNT * sizeof(double));
    t->probe.hidden_sqnorm = malloc((size_t)L * SITE_COUNT * sizeof(double));
    t->probe.jacobian_spec = malloc((size_t)L * PROBE_NORMS * sizeof(double));
    t->jac = malloc((size_t)L * PROBE_NORMS * sizeof(probe_jacobian_t));
    if (!t->model || !t->rng_init || !t->rng_data || !t->tokens || !t->targets ||
        !t->probe.grad_fro || !t->probe.extra_grad_fro || !t->probe.hidden_sqnorm ||
        !t->probe.jacobian_spec || !t->jac ||
        optim_init(&t->opt, &t->cfg, t->model ? t->model->num_params : 0)) {
        snprintf(err, errlen, "out of memory");
        train_free(t);
        return 1;
    }
    gsl_rng_set(t->rng_init, cfg->init.seed);
    gsl_rng_set(t->rng_data, cfg->init.seed + DATA_SEED_OFFSET);
    model_init(t->model, &t->cfg, t->rng_init);
    *out = t;
    return 0;
}

void train_free(train_t *t)
{
    if (!t) return;
    model_free(t->model);
    data_close(&t->data);
    optim_free(&t->opt);
    if (t->rng_init) gsl_rng_free(t->rng_init);
    if (t->rng_data) gsl_rng_free(t->rng_data);
    free(t->tokens);
    free(t->targets);
    free(t->probe.grad_fro);
    free(t->probe.extra_grad_fro);
    free(t->probe.hidden_sqnorm);
    free(t->probe.jacobian_spec);
    free(t->jac);
    free(t);
}

/* The per-layer measurements of the step just run (forward activations, raw gradient). */
static void measure(train_t *t)
{
    const model_t *m = t->model;
    train_probe_t *p = &t->probe;
    probe_grad_norms(m, m->grads, p->grad_fro, p->extra_grad_fro);
    probe_hidden_norms(m, p->hidden_sqnorm, &p->final_sqnorm);
    const size_t LN = (size_t)m->L * PROBE_NORMS;
    for (size_t i = 0; i < LN; i++) p->jacobian_spec[i] = NAN;
    p->final_jacobian_spec = NAN;
    if (!t->cfg.probe.jacobian) return;
    probe_jacobian_t fin;
    probe_jacobians(m, t->jac, &fin);
    for (size_t i = 0; i < LN; i++) p->jacobian_spec[i] = t->jac[i].spec;
    p->final_jacobian_spec = fin.spec;
}

void train_step(train_t *t, train_record_t *r)
{
    const config_t *c = &t->cfg;
    model_t *m = t->model;
    const long s = t->step + 1;
    memset(r, 0, sizeof *r);
    r->step = s;
    r->val_loss = NAN;
    r->lr = optim_lr(c->train.schedule, c->train.lr, c->train.warmup, c->train.steps, s);

    data_batch(&t->data, t->rng_data, t->tokens, t->targets);   // (B,T) each
    t->batches++;
    model_draw_dropout(m, t->rng_data);
    r->loss = model_forward(m, t->tokens, t->targets);
    model_zero_grad(m);
    model_backward(m);
    r->grad_norm = optim_clip(m->grads, m->num_params, c->train.clip);   // norm before clipping

    if (s == 1 || s % c->probe.every == 0) {
        measure(t);
        r->probed = 1;
    }
    // keep θ as it was when diverged; the caller records the step and stops
    if (!isfinite(r->loss)) r->diverged = TRAIN_LOSS_NONFINITE;
    else if (!isfinite(r->grad_norm)) r->diverged = TRAIN_GRAD_NONFINITE;
    else if (r->loss > TRAIN_DIVERGE_FACTOR * log((double)m->V)) r->diverged = TRAIN_LOSS_EXPLODED;
    if (r->diverged) return;
    optim_update(&t->opt, m->params, m->grads, r->lr);
    t->step = s;
    if (t->data.val_batches > 0 && (s % c->train.eval_every == 0 || s == c->train.steps))
        r->val_loss = train_eval(t);
}

const char *train_diverged_reason(int diverged)
{
    switch (diverged) {
    case TRAIN_LOSS_NONFINITE: return "loss not finite";
    case TRAIN_GRAD_NONFINITE: return "gradient not finite";
    case TRAIN_LOSS_EXPLODED: return "loss > 100 ln V";
    }
    return "finite";
}

/* Dropout off for an evaluation: every mask 1 (the next step draws fresh masks). */
static void masks_off(model_t *m)
{
    if (m->dropout <= 0.0) return;
    const size_t NC = (size_t)m->B * m->T * m->C;
    for (size_t i = 0; i < NC; i++) m->a.mask_embed[i] = 1.0;
    for (int l = 0; l < m->L; l++)
        for (size_t i = 0; i < NC; i++) m->a.layers[l].mask_attn[i] = m->a.layers[l].mask_ffn[i] = 1.0;
}

double train_eval(train_t *t)
{
    if (t->data.val_batches <= 0) return NAN;
    masks_off(t->model);
    double sum = 0.0;
    for (int i = 0; i < t->data.val_batches; i++) {
        data_val_batch(&t->data, i, t->tokens, t->targets);
        sum += model_forward(t->model, t->tokens, t->targets);   // every batch scores B·T tokens
    }
    return sum / t->data.val_batches;
}

train_status_t train_run(train_t *t, const train_callbacks_t *cb, const volatile sig_atomic_t *stop)
{
    const int every = t->cfg.train.checkpoint_every;
    while (t->step < t->cfg.train.steps) {
        if (stop && *stop) return TRAIN_INTERRUPTED;
        train_record_t r;
        train_step(t, &r);
        if (cb && cb->step && cb->step(cb->ctx, t, &r)) return TRAIN_FAILED;
        if (r.diverged) return TRAIN_DIVERGED;
        if (every > 0 && t->step % every == 0 && t->step < t->cfg.train.steps && cb &&
            cb->checkpoint && cb->checkpoint(cb->ctx, t))
            return TRAIN_FAILED;
    }
    return TRAIN_DONE;
}
