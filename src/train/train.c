/* train.c — the training loop: batch, forward, backward, clip, optimizer update, probes. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/change.h"
#include "measure/diagnose.h"
#include "measure/rounding.h"
#include "measure/spectral.h"
#include "train/train.h"
#include "train/catapult.h"
#include "train/cdat.h"
#include "train/qk_clip.h"
#include "train/update_bound.h"
#include "util/progress.h"

/* The fixed batch of the model-update measure (its own stream, so the training batches are the
 * same with and without it) and the last hidden state on it at θ_0. */
static int update_setup(train_t *t)
{
    model_t *m = t->s.model;
    const size_t tokens = m->caps.tokens, src = m->caps.src_tokens;
    t->fixed.tokens = malloc(tokens * sizeof(int32_t));
    t->fixed.targets = malloc(tokens * sizeof(int32_t));
    t->fixed.src = src ? malloc(src * sizeof(int32_t)) : NULL;
    t->ref = malloc(tokens * (size_t)m->C * sizeof(real));
    t->prev = malloc(m->num_params * sizeof(real));
    t->update_rel = malloc((size_t)t->ax.L * t->ax.nparam * sizeof(double));
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!t->fixed.tokens || !t->fixed.targets || (src && !t->fixed.src) || !t->ref || !t->prev ||
        !t->update_rel || !r) {
        if (r) gsl_rng_free(r);
        return 1;
    }
    gsl_rng_set(r, t->s.cfg.init.seed + TRAIN_UPDATE_OFFSET);
    const long drawn = t->s.data.drawn;
    data_batch(&t->s.data, r, &t->fixed);
    data_seek(&t->s.data, drawn);
    gsl_rng_free(r);
    change_reference(m, &t->fixed, t->ref);
    return 0;
}

/* The curvature measure (measure/curvature.h): its batch from the stream init.seed +
 * CURV_BATCH_OFFSET (drawn once, the data's position kept, so the training batches are the
 * same with and without it), its float64 copy of the model and the arrays it is given. 0, 1 or 2. */
static int curv_setup(train_t *t, char *err, size_t errlen)
{
    const model_t *m = t->s.model;
    batch_t *b = &t->curv_batch;
    b->tokens = malloc(m->caps.tokens * sizeof(int32_t));
    b->targets = malloc(m->caps.tokens * sizeof(int32_t));
    b->src = m->caps.src_tokens ? malloc(m->caps.src_tokens * sizeof(int32_t)) : NULL;
    t->curv_theta = malloc(m->num_params * sizeof(double));
    t->curv_P = malloc(m->num_params * sizeof(double));
    t->curv_floored = malloc(m->num_params ? m->num_params : 1);
    const size_t bytes = (m->num_params ? m->num_params : 1) * sizeof(real);
    t->undo_params = malloc(bytes);
    t->undo_m = malloc(bytes);
    t->undo_v = t->opt.v ? malloc(bytes) : NULL;
    t->undo_rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!b->tokens || !b->targets || (m->caps.src_tokens && !b->src) || !t->curv_theta ||
        !t->curv_P || !t->curv_floored || !r || !t->undo_params || !t->undo_m ||
        (t->opt.v && !t->undo_v) || !t->undo_rng) {
        if (r) gsl_rng_free(r);
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    gsl_rng_set(r, t->s.cfg.init.seed + CURV_BATCH_OFFSET);
    const long drawn = t->s.data.drawn;
    data_batch(&t->s.data, r, b);
    data_seek(&t->s.data, drawn);
    gsl_rng_free(r);
    if (model_check_batch(m, b, err, errlen)) return 2;
    const int rc = curv_create(&t->curv, &t->s.cfg, &m->caps, b, err, errlen);
    if (rc) return rc;
    if (curv_row_alloc(&t->curv_row[0], t->curv) || curv_row_alloc(&t->curv_row[1], t->curv)) {
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    return 0;
}

/* The critical sharpness along the update about to be taken (Kalra et al. 2026; docs/design.md
 * §10): the measurement batch's gradient at θ (float64), in the run's precision and clipped as
 * the update clips, the optimizer's step on it taken on a copy (optim_direction), λ_c = 2/η_c
 * by forward passes from the guess lr; the exact curvature uᵀHu/uᵀu along it and uᵀHu/gᵀu, the
 * λ_c of the local quadratic; Bai et al. 2025's gᵀĤg/gᵀg on the same gradient (optim_bai_diag). */
static void critical_at(train_t *t, double lr, curv_row_t *row)
{
    const model_t *m = t->s.model;
    const size_t n = m->num_params;
    double *g = malloc(n * sizeof(double)), *u = malloc(n * sizeof(double));
    real *gr = malloc(n * sizeof(real));
    if (g && u && gr) {
        curv_gradient(t->curv, t->curv_theta, g);
        for (size_t i = 0; i < n; i++) gr[i] = (real)g[i];
        optim_clip(gr, n, t->s.cfg.train.clip);
        if (!optim_direction(&t->opt, m->params, gr, u)) {
            critical_result_t cr;
            curv_critical(t->curv, t->curv_theta, u, lr > 0.0 ? lr : CRITICAL_GUESS, &cr);
            row->critical_sharpness = cr.sharpness;
            row->critical_passes = cr.passes + 1;   // and the loss at θ
            row->update_curvature = curv_update_curvature(t->curv, t->curv_theta, u, g,
                                                          &row->critical_quadratic);
            // Bai et al.'s Ĥ = diag(D)·H with their momentum factor: threshold 2/lr
            optim_bai_diag(&t->opt, t->curv_P, n, u);
            row->grad_precond_curvature = curv_precond_grad(t->curv, t->curv_theta, g, u);
        }
    }
    free(g);
    free(u);
    free(gr);
}

/* The curvature after s updates (before update s + 1, whose learning rate is lr): θ widened to
 * float64, the preconditioner of update s (s = 0: of update 1, from its gradient in m->grads)
 * divided by that update's clip factor (docs/design.md §10), the start vectors from init.seed +
 * CURV_START_OFFSET + s. */
static void curv_at(train_t *t, long s, double lr, curv_row_t *row)
{
    const model_t *m = t->s.model;
    for (size_t i = 0; i < m->num_params; i++) t->curv_theta[i] = m->params[i];
    optim_precond(&t->opt, m->params, m->grads, t->curv_P, t->curv_floored);
    optim_precond_clip(t->curv_P, m->num_params, t->curv_clip);   // the step taken: c·P⁻¹
    // probe.curvature_active_only: every row but update 0's measures the active value alone
    // (a row only the curvature cap asks for needs no more: train.lr_control, design §6k)
    const int active = t->s.cfg.probe.curvature_active_only || t->s.cfg.probe.curvature_every == 0;
    void (*fn)(curv_t *, const double *, const double *, const unsigned char *, unsigned long,
               curv_row_t *) = s > 0 && active ? curv_measure_active : curv_measure;
    fn(t->curv, t->curv_theta, t->opt.kind == OPT_SGD ? NULL : t->curv_P, t->curv_floored,
       t->s.cfg.init.seed + CURV_START_OFFSET + (unsigned long)s, row);
    curv_estimate(t->curv, t->curv_theta, t->opt.kind == OPT_SGD ? NULL : t->curv_P,
                  t->curv_floored, t->s.cfg.init.seed + CURV_ESTIMATE_OFFSET + (unsigned long)s, row);
    row->step = s;
    row->threshold = optim_threshold(&t->opt, lr);
    row->critical_sharpness = row->update_curvature = NAN;
    row->critical_quadratic = row->grad_precond_curvature = row->critical_passes = NAN;
    if (t->s.cfg.probe.critical_sharpness) critical_at(t, lr, row);
}

static void curv_free_all(train_t *t)
{
    curv_free(t->curv);
    curv_row_free(&t->curv_row[0]);
    curv_row_free(&t->curv_row[1]);
    free(t->curv_batch.src);
    free(t->curv_batch.tokens);
    free(t->curv_batch.targets);
    free(t->curv_theta);
    free(t->curv_P);
    free(t->curv_floored);
    free(t->undo_params);
    free(t->undo_m);
    free(t->undo_v);
    if (t->undo_rng) gsl_rng_free(t->undo_rng);
}

/* Whether a curvature row follows update s (probe.curvature_every, curvature_until). */
static int curv_due(const train_t *t, long s)
{
    const config_t *c = &t->s.cfg;
    const int every = c->probe.curvature_every;
    if (!t->curv) return 0;
    if (every > 0 && s % every == 0 && (c->probe.curvature_until == 0 || s <= c->probe.curvature_until))
        return 1;
    // the curvature cap's own rows (docs/design.md §6k; cdat's t->curv takes none)
    return c->train.lr_control == LR_CONTROL_CURVATURE && s % c->train.lr_control_every == 0;
}

/* Keep the state before an update whose curvature row the stop flag may end. */
static void undo_save(train_t *t)
{
    const size_t bytes = t->s.model->num_params * sizeof(real);
    memcpy(t->undo_params, t->s.model->params, bytes);
    memcpy(t->undo_m, t->opt.m, bytes);
    if (t->opt.v) memcpy(t->undo_v, t->opt.v, bytes);
    gsl_rng_memcpy(t->undo_rng, t->s.rng_data);
    t->undo_drawn = t->s.data.drawn;
    t->undo_batches = t->batches;
    t->undo_t = t->opt.t;
}

/* Undo update s, whose curvature row was stopped: θ, the moments, the optimizer's count, the
 * data stream and its position as before it (what a checkpoint holds), so a resume makes the
 * update and its row again, bit for bit (docs/design.md §10). */
static void undo_restore(train_t *t, long s)
{
    const size_t bytes = t->s.model->num_params * sizeof(real);
    memcpy(t->s.model->params, t->undo_params, bytes);
    memcpy(t->opt.m, t->undo_m, bytes);
    if (t->opt.v) memcpy(t->opt.v, t->undo_v, bytes);
    gsl_rng_memcpy(t->s.rng_data, t->undo_rng);
    data_seek(&t->s.data, t->undo_drawn);
    t->batches = t->undo_batches;
    t->opt.t = t->undo_t;
    t->step = s - 1;
}

static void probe_rows_free(train_probe_t *p)
{
    free(p->grad_fro);
    free(p->extra_grad_fro);
    free(p->hidden_sqnorm);
    free(p->jacobian_spec);
    free(p->subout_grad);
    free(p->attn_entropy);
    free(p->attn_max_logit);
    free(p->resid_rms);
    free(p->weight_spec);
    free(p->extra_weight_spec);
    free(p->pv_round_bias);
    free(p->channel_amax);
    free(p->swiglu_cos);
}

/* Every batch drawn once and reused (the update probe's, the validation set) holds ids the
 * model can index (model_check_batch); the training batches are checked as drawn. 0 or 2. */
static int check_fixed_batches(train_t *t, char *err, size_t errlen)
{
    const model_t *m = t->s.model;
    if (model_check_batch(m, &t->fixed, err, errlen)) return 2;
    for (int i = 0; i < t->s.data.val_batches; i++) {
        data_val_batch(&t->s.data, i, &t->s.batch);
        if (model_check_batch(m, &t->s.batch, err, errlen)) return 2;
    }
    return 0;
}

/* The remedies' state (docs/design.md §6k): AutoWU's, CDAT's direction, the spectral bound's
 * work space, the catapult lr (a search at θ₀). 0 or 1 (out of memory). */
static int remedies_setup(train_t *t)
{
    const config_t *cfg = &t->s.cfg;
    const model_t *m = t->s.model;
    char err[256];
    if (cfg->train.schedule == SCHED_AUTOWU &&
        (!(t->ctl.wu = malloc(sizeof *t->ctl.wu)) || autowu_init(t->ctl.wu, cfg->init.seed)))
        return 1;
    if (cfg->train.lr_control == LR_CONTROL_CDAT &&
        !(t->cdat_u = malloc(m->num_params * sizeof(double))))
        return 1;
    if (cfg->train.spectral_bound > 0.0 &&
        !(t->bound_work = malloc(update_bound_work_size(m) * sizeof(double))))
        return 1;
    return cfg->train.warmup_start == WARMUP_START_CATAPULT && catapult_find(t, err, sizeof err);
}

/* The norm-constrained optimizers' (L,P) rows (docs/design.md §6h). 0 or 1 (OOM). */
static int opt_stats_alloc(train_t *t)
{
    const size_t n = (size_t)t->ax.L * t->ax.nparam + 1;
    t->opt_rms = malloc(n * sizeof(double));
    t->opt_spec = malloc(n * sizeof(double));
    t->opt_sv_min = malloc(n * sizeof(double));
    t->opt_sv_max = malloc(n * sizeof(double));
    return !t->opt_rms || !t->opt_spec || !t->opt_sv_min || !t->opt_sv_max;
}

int train_create(train_t **out, const config_t *cfg, char *err, size_t errlen)
{
    *out = NULL;
    train_t *t = calloc(1, sizeof *t);
    if (!t) { snprintf(err, errlen, "out of memory"); return 1; }
    int rc = session_open(&t->s, cfg, err, errlen);
    if (rc) { free(t); return rc; }
    t->curv_clip = 1.0;
    const model_t *m = t->s.model;
    if (probe_axes_from_model(&t->ax, m)) {
        snprintf(err, errlen, "out of memory");
        session_close(&t->s);
        free(t);
        return 1;
    }
    const size_t L = (size_t)t->ax.L, LR = (size_t)t->ax.L * t->ax.nnorm + 1;
    t->probe.grad_fro = malloc(L * t->ax.nparam * sizeof(double));
    t->probe.extra_grad_fro = malloc((size_t)t->ax.nextra * sizeof(double));
    t->probe.hidden_sqnorm = malloc(L * t->ax.nsite * sizeof(double));
    t->probe.jacobian_spec = malloc(LR * sizeof(double));
    t->probe.subout_grad = malloc(L * t->ax.nsub * sizeof(double));
    t->probe.attn_entropy = malloc((L * t->ax.nhead + 1) * sizeof(double));
    t->probe.attn_max_logit = malloc((L * t->ax.nhead + 1) * sizeof(double));
    t->probe.resid_rms = malloc(L * sizeof(double));
    t->probe.weight_spec = malloc((L * t->ax.nparam + 1) * sizeof(double));
    t->probe.extra_weight_spec = malloc(((size_t)t->ax.nextra + 1) * sizeof(double));
    t->probe.pv_round_bias = malloc((L * t->ax.nhead + 1) * sizeof(double));
    t->probe.channel_amax = malloc((L * t->ax.nchannel + 1) * sizeof(double));
    t->probe.swiglu_cos = malloc((L * t->ax.nunit + 1) * sizeof(double));
    t->update_rms = malloc(L * sizeof(double));
    t->update_rms_extra = malloc(((size_t)t->ax.nextra + 1) * sizeof(double));
    t->layer_size = calloc(L ? L : 1, sizeof(size_t));
    t->jac = malloc(LR * sizeof(probe_jacobian_t));
    if (!t->probe.grad_fro || !t->probe.extra_grad_fro || !t->probe.hidden_sqnorm ||
        !t->probe.jacobian_spec || !t->probe.subout_grad || !t->jac || !t->probe.attn_entropy ||
        !t->probe.attn_max_logit || !t->probe.resid_rms || !t->update_rms ||
        !t->probe.weight_spec || !t->probe.extra_weight_spec || !t->probe.pv_round_bias ||
        !t->probe.channel_amax || !t->probe.swiglu_cos ||
        (cfg->train.precision == PRECISION_BFLOAT16_PURE &&
         store_init(&t->store, cfg, m->num_params)) ||
        !t->update_rms_extra || !t->layer_size || optim_init(&t->opt, &t->s.cfg, m->num_params) ||
        optim_set_tensors(&t->opt, m)) {
        snprintf(err, errlen, "out of memory");
        train_free(t);
        return 1;
    }
    for (int i = 0; i < m->num_tensors; i++)   // the elements of each layer row (update_rms)
        if (m->tensors[i].layer >= 0) t->layer_size[m->tensors[i].layer] += t->opt.seg[i].size;
    session_init(&t->s, cfg->init.seed);
    // the plateau (docs/design.md §6d): the text's bytes, or the translation targets' ids
    t->unigram = NAN;
    if (t->s.data.text) t->unigram = diagnose_unigram_entropy(t->s.data.text, t->s.data.n_train);
    else if (cfg->data.task == TASK_TRANSLATION)
        t->unigram = diagnose_target_entropy(&t->s.data.corpus, cfg->data.label_smoothing);
    if (t->ax.admin && (t->admin_omega = malloc((size_t)t->ax.L * t->ax.nsub * sizeof(double))))
        probe_admin_omega(&t->ax, t->s.model, t->admin_omega);
    if ((t->ax.admin && !t->admin_omega) || update_setup(t)) {
        snprintf(err, errlen, "out of memory");
        train_free(t);
        return 1;
    }
    if ((rc = check_fixed_batches(t, err, errlen))) {
        train_free(t);
        return rc;
    }
    lrctl_init(&t->ctl);
    const optimizer_t k = cfg->train.optimizer;
    if ((k == OPT_MUON || k == OPT_LION || k == OPT_NSGD) && opt_stats_alloc(t)) {
        snprintf(err, errlen, "out of memory");
        train_free(t);
        return 1;
    }
    t->subopt.kappa = subopt_kappa(m, k);
    if ((cfg->probe.curvature_every > 0 || cfg->train.lr_control != LR_CONTROL_NONE) &&
        (rc = curv_setup(t, err, errlen))) {
        train_free(t);
        return rc;
    }
    if (remedies_setup(t)) {
        snprintf(err, errlen, "out of memory");
        train_free(t);
        return 1;
    }
    *out = t;
    return 0;
}

void train_free(train_t *t)
{
    if (!t) return;
    session_close(&t->s);
    optim_free(&t->opt);
    probe_rows_free(&t->probe);
    probe_axes_free(&t->ax);
    free(t->jac);
    free(t->fixed.src);
    free(t->fixed.tokens);
    free(t->fixed.targets);
    free(t->ref);
    free(t->prev);
    free(t->update_rel);
    free(t->admin_omega);
    free(t->update_rms);
    free(t->update_rms_extra);
    free(t->layer_size);
    free(t->opt_rms);
    free(t->opt_spec);
    free(t->opt_sv_min);
    free(t->opt_sv_max);
    curv_free_all(t);
    free(t->cdat_u);
    free(t->bound_work);
    if (t->ctl.wu) autowu_free(t->ctl.wu);
    free(t->ctl.wu);
    store_free(&t->store);
    free(t);
}

/* train_t.update_rms and update_rms_extra from the optimizer's per-tensor sums of the update
 * just made (updated = 0: none was, NaN). NaN also for sgd and where a row has no parameters. */
static void update_rms(train_t *t, int updated)
{
    const model_t *m = t->s.model;
    const int L = t->ax.L, E = t->ax.nextra;
    double *row = t->update_rms, *extra = t->update_rms_extra;
    for (int r = 0; r < L; r++) row[r] = 0.0;
    for (int e = 0; e < E; e++) extra[e] = NAN;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *ti = &m->tensors[i];
        const optim_seg_t *sg = &t->opt.seg[i];
        if (ti->layer >= 0) {
            row[ti->layer] += sg->sumsq;
        } else {
            const int e = probe_axis_find(t->ax.extra, E, ti->name);
            if (e >= 0 && sg->size) extra[e] = updated ? sqrt(sg->sumsq / (double)sg->size) : NAN;
        }
    }
    for (int r = 0; r < L; r++)
        row[r] = updated && t->layer_size[r] ? sqrt(row[r] / (double)t->layer_size[r]) : NAN;
}

/* The per-layer measurements of the step just run (forward activations, raw gradient). */
static void measure(train_t *t)
{
    const model_t *m = t->s.model;
    train_probe_t *p = &t->probe;
    probe_grad_norms(&t->ax, m, m->grads, p->grad_fro, p->extra_grad_fro);
    probe_hidden_norms(&t->ax, m, p->hidden_sqnorm, &p->final_sqnorm, NULL);
    probe_subout_grads(&t->ax, m, p->subout_grad);
    dynamics_layers(&t->ax, m, p->attn_entropy, p->attn_max_logit, p->resid_rms, p->out);
    if (config_precision_measures(&t->s.cfg)) {
        spectral_layers(&t->ax, m, p->weight_spec, p->extra_weight_spec);
        rounding_pv_bias(&t->ax, m, p->pv_round_bias);
        rounding_channel_amax(&t->ax, m, p->channel_amax);
        rounding_swiglu_cos(&t->ax, m, p->swiglu_cos);
    }
    const size_t LR = (size_t)t->ax.L * t->ax.nnorm;
    for (size_t i = 0; i < LR; i++) p->jacobian_spec[i] = NAN;
    p->final_jacobian_spec = NAN;
    if (!t->s.cfg.probe.jacobian) return;
    probe_jacobian_t fin;
    probe_jacobians(&t->ax, m, t->jac, &fin, NULL);
    for (size_t i = 0; i < LR; i++) p->jacobian_spec[i] = t->jac[i].spec;
    p->final_jacobian_spec = fin.spec;
}

/* Update s's record before anything is measured: the values it may not get are NaN. */
static void record_init(train_record_t *r, long s)
{
    memset(r, 0, sizeof *r);
    r->step = s;
    r->val_loss = r->bleu = NAN;
    r->radam_rho = r->radam_rect = r->qk_clipped = r->stagnation = NAN;
}

/* Update s: the optimizer's step (or CDAT's) with its bounds, the pure-bfloat16 store, the
 * optimizers' statistics and QK-Clip (docs/design.md §6h, §6k, "Low precision, emulated"). */
static void update_apply(train_t *t, train_record_t *r, long s)
{
    const config_t *c = &t->s.cfg;
    model_t *m = t->s.model;
    r->updated = c->probe.model_update && (s <= TRAIN_UPDATE_EVERY_UNTIL || s % c->probe.every == 0);
    const double ratio = c->train.update_ratio_cap, tau = c->train.spectral_bound;
    if (r->updated || ratio > 0.0 || tau > 0.0)
        memcpy(t->prev, m->params, m->num_params * sizeof(real));
    const int pure = c->train.precision == PRECISION_BFLOAT16_PURE;
    if (pure) store_begin(&t->store, m->params);
    t->opt.want_sv = r->probed && t->opt_rms;   // muon's singular values at probe updates
    if (c->train.lr_control == LR_CONTROL_CDAT) r->lr = cdat_update(t, r->lr);
    else optim_update(&t->opt, m->params, m->grads, r->lr);
    if (ratio > 0.0) update_bound_ratio(&t->opt, m->params, t->prev, ratio);
    if (tau > 0.0) update_bound_spectral(m, m->params, t->prev, tau, t->bound_work);
    if (pure) r->stagnation = store_end(&t->store, m->params, t->s.rng_init);
    update_rms(t, 1);
    if (t->ctl.wu) autowu_observe(t->ctl.wu, c, s, r->loss);   // the warm-up's end (design §6k)
    if (r->probed && t->opt_rms)
        qk_optim_stats(&t->ax, m, &t->opt, r->lr, t->opt_rms, t->opt_spec, t->opt_sv_min,
                       t->opt_sv_max);
    if (c->train.qk_clip > 0) r->qk_clipped = qk_clip_apply(m, c->train.qk_clip);
    if (t->opt.kind == OPT_RADAM)
        r->radam_rect = optim_radam_rect(t->opt.beta2, t->opt.t, &r->radam_rho);
}

void train_step(train_t *t, train_record_t *r)
{
    const config_t *c = &t->s.cfg;
    model_t *m = t->s.model;
    const long s = t->step + 1;
    record_init(r, s);
    update_rms(t, 0);
    r->lr = lrctl_scheduled(c, &t->ctl, s);
    // a curvature row in this update that train_run's stop flag may end: keep what to undo
    const int undoable = t->stop && t->curv && (s == 1 || curv_due(t, s));
    if (undoable) undo_save(t);

    if (session_next_batch(&t->s)) {   // batch, then its dropout masks, from rng_data
        r->failed = 1;
        return;
    }
    t->batches++;
    r->loss = model_forward(m, &t->s.batch);
    if (c->train.schedule == SCHED_SUBOPTIMALITY) r->lr = subopt_lr(&t->subopt, c, s, r->loss);
    dynamics_scalars(m, &r->dyn);
    model_zero_grad(m);
    model_backward(m);
    r->grad_norm = optim_clip(m->grads, m->num_params, c->train.clip);   // norm before clipping
    t->curv_clip = optim_clip_factor(r->grad_norm, c->train.clip);

    double t0 = progress_now();
    if (s == 1 || s % c->probe.every == 0) {
        measure(t);
        r->probed = 1;
    }
    const int cap = c->train.lr_control == LR_CONTROL_CURVATURE;
    const int rows = c->probe.curvature_every > 0 || cap;   // (cdat's t->curv takes no rows)
    if (s == 1 && rows && isfinite(r->grad_norm)) {   // update 0: θ_0, update 1's P
        curv_at(t, 0, r->lr, &t->curv_row[0]);
        if (t->curv_row[0].stopped && undoable) {   // a stop signal: as if never begun
            undo_restore(t, s);
            r->stopped = 1;
            return;
        }
        r->curv |= 1;
    }
    r->measure_s = progress_now() - t0;
    if (cap) {   // the last row's λ caps this update (design §6k)
        if (r->curv & 1) lrctl_observe(&t->ctl, t->curv_row[0].precond_max_active);
        r->lr = lrctl_apply(&t->ctl, r->lr, lrctl_curvature_bound(c, &t->opt, &t->ctl));
        if (r->curv & 1) t->curv_row[0].threshold = optim_threshold(&t->opt, r->lr);
    }
    // keep θ as it was when diverged; the caller records the step and stops
    if (!isfinite(r->loss)) r->diverged = TRAIN_LOSS_NONFINITE;
    else if (!isfinite(r->grad_norm)) r->diverged = TRAIN_GRAD_NONFINITE;
    else if (r->loss > TRAIN_DIVERGE_FACTOR * log((double)m->V)) r->diverged = TRAIN_LOSS_EXPLODED;
    if (r->diverged) return;
    update_apply(t, r, s);
    t->step = s;
    if (r->updated) {   // DeepNet's model update on the fixed batch (no dropout)
        change_relative_update(&t->ax, m, t->prev, t->update_rel);
        t->model_update = change_from_reference(m, &t->fixed, t->ref);
    }
    t0 = progress_now();
    if (curv_due(t, s)) {
        const double next = lrctl_scheduled(c, &t->ctl, s + 1);
        curv_at(t, s, next, &t->curv_row[1]);
        if (t->curv_row[1].stopped && undoable) {   // a stop signal: the update undone too
            undo_restore(t, s);
            r->stopped = 1;
            return;
        }
        r->curv |= 2;
        if (cap) {   // the row's threshold at the lr update s + 1 will apply
            lrctl_observe(&t->ctl, t->curv_row[1].precond_max_active);
            const double bound = lrctl_curvature_bound(c, &t->opt, &t->ctl);
            t->curv_row[1].threshold = optim_threshold(&t->opt, fmin(next, bound));
        }
    }
    // every eval_every updates, or at the end of every epoch (eval_every = 0), and at the end
    const long ev = c->train.eval_every > 0 ? c->train.eval_every : data_epoch_batches(&t->s.data);
    if (t->s.data.val_batches > 0 && ((ev > 0 && s % ev == 0) || s == c->train.steps))
        r->val_loss = train_eval(t);
    r->measure_s += progress_now() - t0;
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

double train_eval(train_t *t)
{
    if (t->s.data.val_batches <= 0) return NAN;
    model_dropout_off(t->s.model);   // the next step draws fresh masks
    double sum = 0.0;
    long tokens = 0;
    const int by_token = t->s.data.task == TASK_TRANSLATION;
    for (int i = 0; i < t->s.data.val_batches; i++) {
        data_val_batch(&t->s.data, i, &t->s.batch);
        const double loss = model_forward(t->s.model, &t->s.batch);
        // text: every batch scores B·T tokens; translation: weigh by the scored targets
        if (by_token) { sum += loss * t->s.model->num_targets; tokens += t->s.model->num_targets; }
        else sum += loss;
    }
    return by_token ? sum / (double)tokens : sum / t->s.data.val_batches;
}

int train_bleu_due(const train_t *t, long s)
{
    const int every = t->s.cfg.train.bleu_every;
    const long n = every > 0 ? every : every < 0 ? data_epoch_batches(&t->s.data) : 0;
    return every != 0 && ((n > 0 && s % n == 0) || s == t->s.cfg.train.steps);
}

train_status_t train_run(train_t *t, const train_callbacks_t *cb, const volatile sig_atomic_t *stop)
{
    const int every = t->s.cfg.train.checkpoint_every;
    t->stop = stop;   // also between the Lanczos steps of a curvature row
    if (t->curv) curv_set_stop(t->curv, stop);
    while (t->step < t->s.cfg.train.steps) {
        if (stop && *stop) return TRAIN_INTERRUPTED;
        train_record_t r;
        train_step(t, &r);
        if (r.failed) return TRAIN_BAD_BATCH;
        if (r.stopped) return TRAIN_INTERRUPTED;   // the update undone, nothing recorded
        if (!r.diverged && cb && cb->bleu && train_bleu_due(t, r.step) && cb->bleu(cb->ctx, t, &r.bleu))
            return TRAIN_FAILED;
        if (cb && cb->step && cb->step(cb->ctx, t, &r)) return TRAIN_FAILED;
        if (r.diverged) return TRAIN_DIVERGED;
        if (every > 0 && t->step % every == 0 && t->step < t->s.cfg.train.steps && cb &&
            cb->checkpoint && cb->checkpoint(cb->ctx, t))
            return TRAIN_FAILED;
    }
    return TRAIN_DONE;
}

void train_layout(size_t *out)
{
    const size_t v[TRAIN_LAYOUT_N] = {
        sizeof(train_t), sizeof(session_t), sizeof(model_t), sizeof(optim_t),
        offsetof(train_t, opt), offsetof(train_t, step), offsetof(train_t, probe),
        offsetof(train_t, ax), offsetof(train_t, update_rel), offsetof(train_t, unigram),
        offsetof(session_t, model), offsetof(session_t, batch), offsetof(model_t, params),
        offsetof(model_t, tensors), offsetof(model_t, num_targets), offsetof(optim_t, v),
        offsetof(train_t, curv_row)};
    memcpy(out, v, sizeof v);
}
