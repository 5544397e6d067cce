/* diagnosis.c — `stability info` on a training run: the line that says what was run and how it
 * ended, and what went wrong and since when (measure/diagnose.h; docs/design.md §6g), from the
 * file's /train rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data/data.h"
#include "io/h5io.h"
#include "measure/diagnose.h"
#include "measure/outcome.h"
#include "report/diagnosis_curv.h"
#include "report/report.h"

/* The plateau of a text run whose file predates the attribute: from its corpus, if readable. */
static double unigram_of(const config_t *cfg)
{
    data_t data;
    char err[512];
    if (cfg->data.task != TASK_TEXT || data_open(&data, cfg, err, sizeof err)) return NAN;
    const double h = diagnose_unigram_entropy(data.text, data.n_train);
    data_close(&data);
    return h;
}

/* The /train columns the diagnosis reads (NULL where a file has none). */
typedef struct {
    size_t T, P, L, K, H;                 /* updates, probe rows, layers, tensors, heads */
    double *step, *loss, *lr, *gnorm, *mx, *ent, *time, *val, *val_step;
    size_t n_lr, n_gnorm, n_mx, n_ent, n_time, n_val;
    double *pstep, *grad, *hlogit, *hent;
    size_t n_grad, n_hlogit, n_hent, Kh, He;
    char **stack, **head;                 /* axis names (attributes), or NULL */
    size_t nstack, nhead;
} rows_t;

static void rows_free(rows_t *r)
{
    free(r->step); free(r->loss); free(r->lr); free(r->gnorm); free(r->mx); free(r->ent);
    free(r->time); free(r->val); free(r->val_step); free(r->pstep); free(r->grad);
    free(r->hlogit); free(r->hent);
    for (size_t i = 0; r->stack && i < r->nstack; i++) free(r->stack[i]);
    for (size_t i = 0; r->head && i < r->nhead; i++) free(r->head[i]);
    free(r->stack);
    free(r->head);
}

/* Read the rows of the run at prefix; 0, or 1 when it is not a training run. */
static int rows_read(rows_t *r, h5io_file_t *f, const char *prefix)
{
    size_t n, nl, w, v, np;
    memset(r, 0, sizeof *r);
    r->step = h5io_read_train(f, prefix, "step", &n, &w, &v);
    r->loss = h5io_read_train(f, prefix, "loss", &nl, &w, &v);
    if (!r->step || !r->loss) { rows_free(r); return 1; }
    r->T = n < nl ? n : nl;
    r->lr = h5io_read_train(f, prefix, "lr", &r->n_lr, &w, &v);
    r->gnorm = h5io_read_train(f, prefix, "grad_norm", &r->n_gnorm, &w, &v);
    r->mx = h5io_read_train(f, prefix, "max_attn_logit", &r->n_mx, &w, &v);
    r->ent = h5io_read_train(f, prefix, "min_attn_entropy", &r->n_ent, &w, &v);
    r->time = h5io_read_train(f, prefix, "time", &r->n_time, &w, &v);
    r->val = h5io_read_train(f, prefix, "val_loss", &r->n_val, &w, &v);
    r->val_step = h5io_read_train(f, prefix, "eval_step", &n, &w, &v);
    if (n < r->n_val) r->n_val = n;
    r->pstep = h5io_read_train(f, prefix, "probe_step", &np, &w, &v);
    r->P = np;
    r->grad = h5io_read_train(f, prefix, "grad_fro", &r->n_grad, &r->L, &r->K);   // (P, layer, param)
    r->hlogit = h5io_read_train(f, prefix, "attn_max_logit", &r->n_hlogit, &w, &r->H);
    if (r->hlogit && r->L && w != r->L) { free(r->hlogit); r->hlogit = NULL; r->n_hlogit = 0; }
    if (!r->L) r->L = w;
    r->hent = h5io_read_train(f, prefix, "attn_entropy", &r->n_hent, &r->Kh, &r->He);
    if (r->hent && (r->Kh != r->L || r->He != r->H)) { free(r->hent); r->hent = NULL; r->n_hent = 0; }
    char path[600];
    snprintf(path, sizeof path, "%s/train/grad_fro", prefix);
    r->stack = h5io_read_attr_strings(f, path, "stack", &r->nstack);
    if (r->stack && r->nstack != r->L) { for (size_t i = 0; i < r->nstack; i++) free(r->stack[i]); free(r->stack); r->stack = NULL; }
    snprintf(path, sizeof path, "%s/train/attn_max_logit", prefix);
    r->head = h5io_read_attr_strings(f, path, "head", &r->nhead);
    if (r->head && r->nhead != r->H) { for (size_t i = 0; i < r->nhead; i++) free(r->head[i]); free(r->head); r->head = NULL; }
    return 0;
}

/* Every /train row through the rules of measure/diagnose.h, as the run itself fed them. */
static void rows_diagnose(const rows_t *r, diagnose_t *d)
{
    diagnose_axes(d, (int)r->L, (const char *const *)r->stack, (int)r->H, (const char *const *)r->head);
    diagnose_start(d);
    size_t p = 0;
    for (size_t t = 0; t < r->T; t++) {
        diagnose_update_t u = {
            .step = (long)r->step[t], .loss = r->loss[t],
            .lr = r->lr && t < r->n_lr ? r->lr[t] : NAN,
            .grad_norm = r->gnorm && t < r->n_gnorm ? r->gnorm[t] : NAN,
            .max_logit = r->mx && t < r->n_mx ? r->mx[t] : NAN,
            .min_entropy = r->ent && t < r->n_ent ? r->ent[t] : NAN};
        while (r->pstep && p < r->P && r->pstep[p] < r->step[t]) p++;
        if (r->pstep && p < r->P && r->pstep[p] == r->step[t]) {
            if (r->grad && p < r->n_grad) { u.grad = r->grad + p * r->L * r->K; u.K = (int)r->K; }
            if (r->hlogit && p < r->n_hlogit) u.head_logit = r->hlogit + p * r->L * r->H;
            if (r->hent && p < r->n_hent) u.head_entropy = r->hent + p * r->L * r->H;
        }
        diagnose_step(d, &u);
    }
}

/* Diagnose the training run at prefix into d with its rows in r (kept: d points at their axis
 * names). 0, or 1 when it is not a training run. */
static int diagnose_file(h5io_file_t *f, const char *prefix, const config_t *cfg, diagnose_t *d,
                         rows_t *r)
{
    if (rows_read(r, f, prefix)) return 1;
    char tr[512];
    snprintf(tr, sizeof tr, "%s/train", prefix);
    double unigram = NAN, div = NAN;
    if (h5io_read_attr_double(f, tr, "unigram_entropy", &unigram) != 0) unigram = unigram_of(cfg);
    diagnose_init(d, cfg, unigram);
    rows_diagnose(r, d);
    char *status = h5io_read_attr_string(f, prefix[0] ? prefix : "/", "status");
    if (h5io_read_attr_double(f, tr, "diverged_at", &div) == 0 && div > 0) {
        char *why = h5io_read_attr_string(f, tr, "diverged_reason");
        diagnose_diverged(d, (long)div, why);
        free(why);
    }
    const int ended = (status && !strcmp(status, "done")) || div > 0;
    diagnose_finish(d, ended);
    free(status);
    return 0;
}

int report_diagnose_run(struct h5io_file *f, const char *prefix, const config_t *cfg, diagnose_t *d)
{
    rows_t r;
    if (diagnose_file(f, prefix, cfg, d, &r)) return 1;
    diagnose_axes(d, d->L, NULL, d->H, NULL);
    rows_free(&r);
    return 0;
}

double report_final_loss(h5io_file_t *f, const char *prefix)
{
    rows_t r;
    if (rows_read(&r, f, prefix)) return NAN;
    char tr[512];
    double div = NAN;
    snprintf(tr, sizeof tr, "%s/train", prefix);
    const int diverged = h5io_read_attr_double(f, tr, "diverged_at", &div) == 0 && div > 0;
    const double v = outcome_final_loss(r.loss, r.T, r.val, r.n_val, diverged);
    rows_free(&r);
    return v;
}

void report_diagnosis(FILE *out, h5io_file_t *f, const char *prefix, const config_t *cfg)
{
    diagnose_t d;
    rows_t r;
    if (diagnose_file(f, prefix, cfg, &d, &r)) return;   // not a training run
    diagnose_curv_t cv;   // the curvature rows' need raises the one warm-up answer, as advise's
    if (!report_curvature_read(f, prefix, cfg, &cv))
        d.warmup_need = (double)diagnose_curv_warmup(&cv);
    fprintf(out, "diagnosis over %ld updates:\n", d.seen);
    static const int ORDER[DIAG_NEVENTS] = {DIAG_LEAK, DIAG_WARMUP_LONG, DIAG_DIVERGED, DIAG_EXPLODED,
        DIAG_NOT_LEARNING, DIAG_PLATEAU, DIAG_LOGIT_GROWTH, DIAG_ENTROPY_COLLAPSE, DIAG_GRAD_COLLAPSE};
    for (int k = 0; k < DIAG_NEVENTS; k++) {
        char msg[1200];
        if (!(d.events & ORDER[k])) continue;
        diagnose_message(&d, ORDER[k], msg, sizeof msg);
        fprintf(out, "  %s\n", msg);
    }
    if (d.events & DIAG_PLATEAU)
        fprintf(out, "  on the plateau %ld updates in all (the longest stretch %ld, the last at "
                "update %ld)\n", d.plateau_total, d.plateau_longest, d.plateau_last);
    if (!r.mx && d.seen > 0) fprintf(out, "  (no attention logits or entropies: a file from before them)\n");
    if (!d.events) {
        char msg[400];
        diagnose_healthy(&d, msg, sizeof msg);
        fprintf(out, "  %s\n", msg);
    }
    report_curvature(out, f, prefix, cfg);   // with curvature rows: the threshold crossed or not
    rows_free(&r);
}

/* "12.3 ms/update, 41.6k tokens/s" of seconds s over u updates of tok tokens each (tok 0: no
 * tokens/s). */
static void put_speed(FILE *out, double s, long u, double tok)
{
    if (!(s > 0) || u <= 0) return;
    const double per = s / (double)u;
    fprintf(out, ", %.3g %s/update", per >= 1 ? per : 1e3 * per, per >= 1 ? "s" : "ms");
    if (tok > 0) {
        const double r = tok * (double)u / s;
        if (r >= 1e6) fprintf(out, ", %.3gM tokens/s", r / 1e6);
        else if (r >= 1e3) fprintf(out, ", %.3gk tokens/s", r / 1e3);
        else fprintf(out, ", %.3g tokens/s", r);
    }
}

double report_tokens_per_update(const config_t *cfg)
{
    if (cfg->model.arch == ARCH_ENCDEC) return 0;   // rows of varying length: not from the config
    return (double)cfg->data.batch * cfg->model.seq_len;
}

void report_muon_routing(FILE *out, const config_t *c)
{
    // docs/design.md §6h: Muon on the registry's hidden matrices (tensors_is_hidden: every
    // layer's weight matrices), AdamW on every other tensor
    const double lr_adamw = c->train.muon_adamw_lr > 0 ? c->train.muon_adamw_lr : c->train.lr;
    fprintf(out, " (momentum %g Nesterov, Newton-Schulz %d x (%g, %g, %g), scale %s, on each "
            "layer's wq wk wv wo", c->train.momentum, c->train.muon_ns_steps, c->train.muon_ns_a,
            c->train.muon_ns_b, c->train.muon_ns_c,
            c->train.muon_scale == MUON_SCALE_ORIGINAL ? "original" : "match_rms_adamw");
    if (c->model.arch == ARCH_ENCDEC) fprintf(out, ", cwq cwk cwv cwo");
    fprintf(out, " w1 w2%s; AdamW (beta %g, %g, eps %g) at lr %g on tok_embed%s, biases, norms "
            "and gains)", c->model.activation == ACT_SWIGLU ? " w3" : "", c->train.beta1,
            c->train.beta2, c->train.eps, lr_adamw, c->model.tie_embeddings ? "" : ", lm_head");
}

/* " (PATH gemm_path, why": what computed the bfloat16 products, as the file's /train attribute
 * gemm_path says (docs/design.md, "The fast bfloat16 path"), and why: the key, or auto's rule. */
static void report_gemm_path(FILE *out, h5io_file_t *f, const char *prefix, const config_t *c)
{
    char obj[1400];
    snprintf(obj, sizeof obj, "%s/train", prefix);
    char *path = h5io_read_attr_string(f, obj, "gemm_path");
    const int emulated = !path || !strcmp(path, "emulated");
    fprintf(out, " (%s gemm_path", path ? path : "emulated");
    if (c->train.precision == PRECISION_FP8 || !c->train.round_gemm)
        fprintf(out, ", %s", c->train.round_gemm ? "fp8 operands" : "no rounded operands");
    else if (c->train.gemm_path != GEMM_PATH_AUTO)   // the default, emulated, or onednn: the key
        fprintf(out, ", train.gemm_path = %s", config_gemm_path_name(c->train.gemm_path));
    else
        fprintf(out, ", auto: %s", emulated ? "no AMX, so the exact emulation" : "the CPU has AMX");
    free(path);
}

void report_train_header(FILE *out, h5io_file_t *f, const char *prefix, const config_t *cfg)
{
    const config_t *c = cfg;
    fprintf(out, "train: %s", config_optimizer_name(c->train.optimizer));
    if (c->train.optimizer == OPT_SGD || c->train.optimizer == OPT_NSGD)
        fprintf(out, " (momentum %g)", c->train.momentum);
    else if (c->train.optimizer == OPT_LION) fprintf(out, " (beta %g, %g)", c->train.beta1, c->train.beta2);
    else if (c->train.optimizer != OPT_MUON)
        fprintf(out, " (beta %g, %g, eps %g)", c->train.beta1, c->train.beta2, c->train.eps);
    else report_muon_routing(out, c);
    fprintf(out, ", lr %g, %s schedule", c->train.lr, config_schedule_name(c->train.schedule));
    // the floor is the decay's, not the warm-up's (it read "warm-up 2 (to 0.1 x lr)")
    if (c->train.schedule == SCHED_COSINE) fprintf(out, " to %g x lr", c->train.min_lr_ratio);
    if (c->train.schedule == SCHED_SUBOPTIMALITY)
        fprintf(out, " (f_star %g, lr_div %g, then cosine to %g x lr)", c->train.f_star,
                c->train.lr_div, c->train.min_lr_ratio);
    if (c->train.warmup > 1) fprintf(out, ", warm-up %d", c->train.warmup);
    else fprintf(out, ", no warm-up");
    fprintf(out, ", %d updates, batch %d, %s", c->train.steps, c->data.batch,
            config_precision_name(c->train.precision));
    if (config_lowp(c)) {   // where it rounds (docs/design.md, "Low precision, emulated")
        report_gemm_path(out, f, prefix, c);
        fprintf(out, "; round_gemm %s, round_attn_probs %s, round_residual %s, "
                "round_norm_stats %s, attn_round_fix %s", c->train.round_gemm ? "on" : "off",
                c->train.round_attn_probs ? "on" : "off", c->train.round_residual ? "on" : "off",
                c->train.round_norm_stats ? "on" : "off", c->train.attn_round_fix ? "on" : "off");
        if (c->train.precision == PRECISION_BFLOAT16_PURE)
            fprintf(out, "; weights rounding %s, kahan %s", config_rounding_name(c->train.rounding),
                    c->train.kahan ? "on" : "off");
        fprintf(out, ")");
    }
    if (c->train.weight_decay > 0) fprintf(out, ", weight decay %g", c->train.weight_decay);
    fprintf(out, "; mitigations:");
    int any = 0;
    if (c->model.qk_norm != QK_NORM_OFF) any = fprintf(out, " qk_norm %s", c->model.qk_norm == QK_NORM_LAYERNORM ? "layernorm" : "rmsnorm");
    if (c->model.attn_softcap > 0) any = fprintf(out, "%s attn_softcap %g", any ? "," : "", c->model.attn_softcap);
    if (c->train.z_loss > 0) any = fprintf(out, "%s z_loss %g", any ? "," : "", c->train.z_loss);
    if (c->train.clip > 0) any = fprintf(out, "%s clip %g", any ? "," : "", c->train.clip);
    if (c->train.qk_clip > 0) any = fprintf(out, "%s qk_clip %g", any ? "," : "", c->train.qk_clip);
    if (c->model.dropout > 0) any = fprintf(out, "%s dropout %g", any ? "," : "", c->model.dropout);
    if (c->data.label_smoothing > 0) any = fprintf(out, "%s label smoothing %g", any ? "," : "", c->data.label_smoothing);
    fprintf(out, "%s\n", any ? "" : " none");
    report_remedies(out, f, prefix, c);
    // the estimators at the curvature rows (docs/design.md §10), only when one is on
    if (c->probe.curvature_every > 0 && (c->probe.trace_probes > 0 || c->probe.density_probes > 0 ||
                                         c->probe.critical_sharpness)) {
        fprintf(out, "estimators at update 0 and every %d updates:", c->probe.curvature_every);
        if (c->probe.trace_probes > 0) fprintf(out, " trace_probes = %d", c->probe.trace_probes);
        if (c->probe.density_probes > 0)
            fprintf(out, "%s density_probes = %d, density_iters = %d", c->probe.trace_probes > 0
                    ? "," : "", c->probe.density_probes, c->probe.density_iters);
        if (c->probe.density_blocks) fprintf(out, ", density_blocks = on");
        if (c->probe.critical_sharpness)
            fprintf(out, "%s critical_sharpness = on", c->probe.trace_probes > 0 ||
                    c->probe.density_probes > 0 ? "," : "");
        fprintf(out, "\n");
    }

    rows_t r;
    if (rows_read(&r, f, prefix)) return;
    char *status = h5io_read_attr_string(f, prefix[0] ? prefix : "/", "status");
    fprintf(out, "result: %s after %ld of %d updates", status ? status : "?",
            r.T ? (long)r.step[r.T - 1] : 0L, c->train.steps);
    if (r.T) {
        double div = NAN;
        char tr[512];
        snprintf(tr, sizeof tr, "%s/train", prefix);
        const int diverged = h5io_read_attr_double(f, tr, "diverged_at", &div) == 0 && div > 0;
        const double fin = outcome_final_loss(r.loss, r.T, r.val, r.n_val, diverged);
        const size_t k = r.T / 10 ? r.T / 10 : 1;
        fprintf(out, ", last training loss %.4f; final loss ", r.loss[r.T - 1]);
        if (diverged) fprintf(out, "none (diverged)");
        else if (r.val && r.n_val && isfinite(r.val[r.n_val - 1]))
            fprintf(out, "%.4f (the validation loss at update %.0f)", fin,
                    r.val_step ? r.val_step[r.n_val - 1] : NAN);
        else fprintf(out, "%.4f (the mean training loss of the last %zu updates)", fin, k);
    }
    if (r.time && r.n_time && r.T) {
        const double s = r.time[(r.n_time < r.T ? r.n_time : r.T) - 1];
        fprintf(out, "; %.3g s", s);
        put_speed(out, s, (long)r.step[r.T - 1], report_tokens_per_update(c));
    }
    fprintf(out, "\n");
    free(status);
    rows_free(&r);
}
