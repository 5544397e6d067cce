/* probe.c — measurements at initialisation (Xiong et al. 2020 §3.2–3.4, Fig. 3; Liu et al.
 * 2020 Fig. 3), by names taken from the model (measure/probe.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/change.h"
#include "measure/dynamics.h"
#include "measure/probe_internal.h"

const char *const PROBE_JACOBIAN_FIELD_NAMES[PROBE_JACOBIAN_FIELDS] = {
    "spec", "spec_max", "fro", "lemma3", "bound",
};

#define FIELD(x) offsetof(probe_t, x)
const probe_array_t PROBE_ARRAYS[] = {
    {"grad_fro", FIELD(grad_fro), 1, PA_PARAM, PO_ALWAYS,
     "||E_batch grad W||_F: Frobenius norm of the gradient averaged over probe.batches batches"},
    {"grad_fro_batchmean", FIELD(grad_fro_batchmean), 1, PA_PARAM, PO_ALWAYS,
     "E_batch ||grad W||_F: per-batch Frobenius norm, averaged"},
    {"extra_grad_fro", FIELD(extra_grad_fro), 0, PA_EXTRA, PO_ALWAYS,
     "||E_batch grad||_F of the tensors outside the layers (NaN where absent)"},
    {"extra_grad_fro_batchmean", FIELD(extra_grad_fro_batchmean), 0, PA_EXTRA, PO_ALWAYS,
     "E_batch ||grad||_F of the tensors outside the layers"},
    {"hidden_sqnorm", FIELD(hidden_sqnorm), 1, PA_SITE, PO_ALWAYS,
     "E_token ||x||^2 at each site, averaged over batches (see site_symbols)"},
    {"final_sqnorm", FIELD(final_sqnorm), 0, PA_NONE, PO_ALWAYS,
     "E_token ||x_final||^2 (the input of the output projection)"},
    {"jacobian_spec", FIELD(jacobian_spec), 1, PA_NORM, PO_ALWAYS,
     "E_token ||J||_2, J = d norm(x)/dx with gamma, exact"},
    {"jacobian_spec_max", FIELD(jacobian_spec_max), 1, PA_NORM, PO_ALWAYS,
     "max over tokens and batches of ||J||_2"},
    {"jacobian_fro", FIELD(jacobian_fro), 1, PA_NORM, PO_ALWAYS, "E_token ||J||_F"},
    {"jacobian_lemma3", FIELD(jacobian_lemma3), 1, PA_NORM, 0,
     "E_token ||J||_2 * ||x - mu|| / sqrt(d) (Lemma 3: O(1))"},
    {"jacobian_bound", FIELD(jacobian_bound), 1, PA_NORM, PO_ALWAYS,
     "E_token sqrt(d) / ||x - mu|| (Lemma 3's scale)"},
    {"final_jacobian", FIELD(final_jacobian), 0, PA_FIELDS, PO_ALWAYS,
     "final norm: spec, spec_max, fro, lemma3, bound as above (NaN without a final norm)"},
    {"loss", FIELD(loss), 0, PA_NONE, PO_ALWAYS, "mean loss over the probe's batches"},
    {"subout_grad", FIELD(subout_grad), 1, PA_SUB, PO_ALWAYS,
     "E_token ||dL/d(sub-layer output)||, averaged over batches (Liu et al. 2020, Fig. 3)"},
    {"enc_final_sqnorm", FIELD(enc_final_sqnorm), 0, PA_NONE, PO_ENCDEC,
     "E_token ||mem||^2 of the encoder's output (after its final norm, if any)"},
    {"enc_final_jacobian", FIELD(enc_final_jacobian), 0, PA_FIELDS, PO_ENCDEC,
     "the encoder's final norm: spec, spec_max, fro, lemma3, bound (NaN without one)"},
    {"output_change", FIELD(output_change), 0, PA_NONE, PO_ALWAYS,
     "E_token ||F(x,W) - F(x,W*)||, W* = W - 1e-4 sign(N(0,1)) on every weight matrix and "
     "embedding, F = the last hidden state, on each seed's first batch (Liu et al. 2020)"},
    {"enc_output_change", FIELD(enc_output_change), 0, PA_NONE, PO_ENCDEC,
     "the same for the encoder's output"},
    {"admin_omega", FIELD(admin_omega), 1, PA_SUB, PO_ADMIN,
     "Admin's omega of every sub-layer as profiled at initialisation (all entries equal)"},
    {"attn_entropy", FIELD(attn_entropy), 1, PA_HEAD, PO_ALWAYS,
     "attention entropy -sum p log p (nats) of each head, mean over queries and batches"},
    {"attn_max_logit", FIELD(attn_max_logit), 1, PA_HEAD, PO_ALWAYS,
     "max |attention logit| of each head over the batches (after QK-norm and soft-capping)"},
    {"resid_rms", FIELD(resid_rms), 1, PA_NONE, PO_ALWAYS,
     "RMS of the residual stream after each layer, mean over batches"},
    {"logz_mean_abs", FIELD(logz_mean_abs), 0, PA_NONE, PO_ALWAYS,
     "mean over scored positions of |log Z| (log Z = logsumexp of the output logits)"},
    {"logz_max_abs", FIELD(logz_max_abs), 0, PA_NONE, PO_ALWAYS, "max over batches of max |log Z|"},
    {"logit_max", FIELD(logit_max), 0, PA_NONE, PO_ALWAYS,
     "max over batches and scored positions of max |output logit|"},
    {"hessian_max", FIELD(hessian_max), 0, PA_NONE, PO_CURV,
     "lambda_max of the Hessian of the objective on the seed's measurement batch (Lanczos, "
     "probe.curvature_iters steps; docs/design.md section 10)"},
    {"hessian_min", FIELD(hessian_min), 0, PA_NONE, PO_CURV, "lambda_min of the Hessian"},
    {"precond_max_active", FIELD(precond_max_active), 0, PA_NONE, PO_CURV,
     "lambda_max(P^-1 H), P the preconditioner of the first update (from the first batch's "
     "gradient), its eps-floored coordinates (sqrt(v_hat) < eps) left out"},
    {"hessian_trace", FIELD(hessian_trace), 0, PA_NONE, PO_CURV,
     "Hutchinson's estimate of tr(H) on the seed's measurement batch, probe.trace_probes "
     "Rademacher probes (docs/design.md section 10)"},
    {"hessian_trace_stderr", FIELD(hessian_trace_stderr), 0, PA_NONE, PO_CURV,
     "its standard error s/sqrt(N) over the probes"},
};
const int PROBE_NUM_ARRAYS = (int)(sizeof PROBE_ARRAYS / sizeof PROBE_ARRAYS[0]);

int probe_array_present(const probe_axes_t *axes, const probe_array_t *a)
{
    return a->only == PO_ALWAYS || (a->only == PO_ENCDEC && axes->encdec) ||
           (a->only == PO_ADMIN && axes->admin);
}

/* ------------------------------------------------------------------------- allocation */

static double **array_ptr(probe_t *p, const probe_array_t *a)
{
    return (double **)((char *)p + a->field);
}

double probe_memory_bytes(int S, const probe_axes_t *axes)
{
    double n = 0.0;
    for (int k = 0; k < PROBE_NUM_ARRAYS; k++)
        n += (double)S * (double)probe_array_size(axes, &PROBE_ARRAYS[k]);
    return n * sizeof(double);
}

probe_t *probe_alloc(int S, const probe_axes_t *axes)
{
    probe_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->S = S;
    if (probe_axes_copy(&p->ax, axes)) { free(p); return NULL; }
    for (int k = 0; k < PROBE_NUM_ARRAYS; k++) {
        const probe_array_t *a = &PROBE_ARRAYS[k];
        if (!probe_array_present(axes, a)) continue;
        const size_t n = (size_t)S * probe_array_size(axes, a);
        double *x = malloc((n ? n : 1) * sizeof(double));
        if (!x) { probe_free(p); return NULL; }
        for (size_t i = 0; i < n; i++) x[i] = NAN;
        *array_ptr(p, a) = x;
    }
    return p;
}

int probe_overflow(const probe_t *p, char *what, size_t len)
{
    const probe_axes_t *ax = &p->ax;
    const int w1 = probe_axis_find(ax->param, ax->nparam, "w1"), w2 = probe_axis_find(ax->param, ax->nparam, "w2");
    for (int k = 0; k < PROBE_NUM_ARRAYS; k++) {
        const probe_array_t *a = &PROBE_ARRAYS[k];
        const double *x = *(double *const *)((const char *)p + a->field);
        if (!x) continue;
        const size_t per = probe_array_size(ax, a), n = (size_t)p->S * per;
        const int nan_is_overflow = !strcmp(a->name, "loss") || !strcmp(a->name, "final_sqnorm");
        for (size_t i = 0; i < n; i++) {
            const int ffn = (!strcmp(a->name, "grad_fro") || !strcmp(a->name, "grad_fro_batchmean")) &&
                            ((int)(i % ax->nparam) == w1 || (int)(i % ax->nparam) == w2);
            if (isinf(x[i]) || (isnan(x[i]) && (nan_is_overflow || ffn))) {
                snprintf(what, len, "probe/%s[seed %zu] = %g", a->name, i / per, x[i]);
                return 1;
            }
        }
    }
    return 0;
}

void probe_free(probe_t *p)
{
    if (!p) return;
    for (int k = 0; k < PROBE_NUM_ARRAYS; k++) free(*array_ptr(p, &PROBE_ARRAYS[k]));
    probe_axes_free(&p->ax);
    free(p);
}

/* ------------------------------------------------------------------------------ the run */

/* Running sums over the batches of one seed. */
typedef struct {
    real *gsum;          // (num_params) Σ_b ∇θ
    double *layer_tmp;   // (L,nparam)
    double *extra_tmp;   // (E)
    double *hidden_tmp;  // (L,nsite)
    double *sub_tmp;     // (L,nsub)
    real *save;          // (num_params) the output change's copy of the parameters
    probe_jacobian_t *jac_tmp, *jac_sum;   // (L,nnorm)
    probe_jacobian_t fin_tmp[2], fin_sum[2];   // the output stack's final norm, the encoder's
    double *dyn_ent, *dyn_max, *dyn_rms;       // (L,nhead), (L,nhead), (L) one batch's dynamics
} probe_work_t;

static void jacobian_add(probe_jacobian_t *sum, const probe_jacobian_t *x)
{
    sum->spec += x->spec;
    sum->spec_max = fmax(sum->spec_max, x->spec_max);
    sum->fro += x->fro;
    sum->lemma3 += x->lemma3;
    sum->bound += x->bound;
}

/* A probe_jacobian_t sum over nb batches as the five fields of a row. */
static void jacobian_mean(const probe_jacobian_t *sum, int nb, double *f)
{
    f[0] = sum->spec / nb;
    f[1] = sum->spec_max;
    f[2] = sum->fro / nb;
    f[3] = sum->lemma3 / nb;
    f[4] = sum->bound / nb;
}

static void work_free(probe_work_t *w)
{
    free(w->gsum); free(w->layer_tmp); free(w->extra_tmp); free(w->hidden_tmp);
    free(w->sub_tmp); free(w->jac_tmp); free(w->jac_sum); free(w->save);
    free(w->dyn_ent); free(w->dyn_max); free(w->dyn_rms);
}

/* max(a, b), NaN when either is NaN (a running maximum that remembers an overflow). */
static double max_nan(double a, double b)
{
    return isnan(a) || isnan(b) ? NAN : fmax(a, b);
}

/* One batch's dynamics (measure/dynamics.h) into seed s's means (/nb) and maxima. */
static void dynamics_batch(const probe_axes_t *ax, const model_t *m, probe_t *p, int s, int nb,
                           probe_work_t *w)
{
    const size_t LH = (size_t)ax->L * ax->nhead, L = (size_t)ax->L;
    double out[3];
    dynamics_layers(ax, m, w->dyn_ent, w->dyn_max, w->dyn_rms, out);
    for (size_t i = 0; i < LH; i++) {
        p->attn_entropy[(size_t)s * LH + i] += w->dyn_ent[i] / nb;
        p->attn_max_logit[(size_t)s * LH + i] = max_nan(p->attn_max_logit[(size_t)s * LH + i],
                                                        w->dyn_max[i]);
    }
    for (size_t i = 0; i < L; i++) p->resid_rms[(size_t)s * L + i] += w->dyn_rms[i] / nb;
    p->logz_mean_abs[s] += out[0] / nb;
    p->logz_max_abs[s] = max_nan(p->logz_max_abs[s], out[1]);
    p->logit_max[s] = max_nan(p->logit_max[s], out[2]);
}

/* Measure one batch of seed s (the forward and backward already run) into the sums. */
static void measure_batch(const probe_axes_t *ax, const model_t *m, probe_t *p, int s, int nb,
                          int jacobian, probe_work_t *w, double *fin, double *enc_fin)
{
    const size_t LP = (size_t)ax->L * ax->nparam, LQ = (size_t)ax->L * ax->nsite;
    const size_t LR = (size_t)ax->L * ax->nnorm, LX = (size_t)ax->L * ax->nsub;
    double *bm = p->grad_fro_batchmean + (size_t)s * LP;
    double *bme = p->extra_grad_fro_batchmean + (size_t)s * ax->nextra;
    double *hid = p->hidden_sqnorm + (size_t)s * LQ, *sub = p->subout_grad + (size_t)s * LX;
    double f, ef;
    for (size_t i = 0; i < m->num_params; i++) w->gsum[i] += m->grads[i];
    // E_batch ‖∇W‖_F
    probe_grad_norms(ax, m, m->grads, w->layer_tmp, w->extra_tmp);
    for (size_t i = 0; i < LP; i++) bm[i] += w->layer_tmp[i] / nb;
    for (int e = 0; e < ax->nextra; e++) bme[e] += w->extra_tmp[e] / nb;
    probe_hidden_norms(ax, m, w->hidden_tmp, &f, &ef);
    for (size_t i = 0; i < LQ; i++) hid[i] += w->hidden_tmp[i] / nb;
    *fin += f / nb;
    *enc_fin += ef / nb;
    probe_subout_grads(ax, m, w->sub_tmp);
    for (size_t i = 0; i < LX; i++) sub[i] += w->sub_tmp[i] / nb;
    dynamics_batch(ax, m, p, s, nb, w);
    if (!jacobian) return;
    probe_jacobians(ax, m, w->jac_tmp, &w->fin_tmp[0], &w->fin_tmp[1]);
    for (size_t i = 0; i < LR; i++) jacobian_add(&w->jac_sum[i], &w->jac_tmp[i]);
    jacobian_add(&w->fin_sum[0], &w->fin_tmp[0]);
    jacobian_add(&w->fin_sum[1], &w->fin_tmp[1]);
}

/* Zero seed s's running slices and sums. */
static void seed_start(const probe_axes_t *ax, const model_t *m, probe_t *p, int s,
                       probe_work_t *w)
{
    const size_t LP = (size_t)ax->L * ax->nparam, LQ = (size_t)ax->L * ax->nsite;
    const size_t LR = (size_t)ax->L * ax->nnorm, LX = (size_t)ax->L * ax->nsub;
    memset(w->gsum, 0, m->num_params * sizeof(real));
    for (size_t i = 0; i < LP; i++) p->grad_fro_batchmean[(size_t)s * LP + i] = 0.0;
    for (int e = 0; e < ax->nextra; e++) p->extra_grad_fro_batchmean[(size_t)s * ax->nextra + e] = 0.0;
    for (size_t i = 0; i < LQ; i++) p->hidden_sqnorm[(size_t)s * LQ + i] = 0.0;
    for (size_t i = 0; i < LX; i++) p->subout_grad[(size_t)s * LX + i] = 0.0;
    const size_t LH = (size_t)ax->L * ax->nhead;   // the dynamics' sums and maxima
    for (size_t i = 0; i < LH; i++) p->attn_entropy[(size_t)s * LH + i] = 0.0;
    for (size_t i = 0; i < LH; i++) p->attn_max_logit[(size_t)s * LH + i] = 0.0;
    for (int i = 0; i < ax->L; i++) p->resid_rms[(size_t)s * ax->L + i] = 0.0;
    p->logz_mean_abs[s] = p->logz_max_abs[s] = p->logit_max[s] = 0.0;
    memset(w->jac_sum, 0, LR * sizeof(probe_jacobian_t));
    memset(w->fin_sum, 0, sizeof w->fin_sum);
}

/* Seed s's results from its sums over nb batches. */
static void seed_finish(const probe_axes_t *ax, const model_t *m, probe_t *p, int s, int nb,
                        int jacobian, probe_work_t *w)
{
    const size_t LP = (size_t)ax->L * ax->nparam, LR = (size_t)ax->L * ax->nnorm;
    // ‖E_batch ∇W‖_F (§3.4 "expected gradient")
    for (size_t i = 0; i < m->num_params; i++) w->gsum[i] /= nb;
    probe_grad_norms(ax, m, w->gsum, p->grad_fro + (size_t)s * LP,
                     p->extra_grad_fro + (size_t)s * ax->nextra);
    if (!jacobian) return;
    for (size_t i = 0; i < LR; i++) {
        double f[PROBE_JACOBIAN_FIELDS];
        jacobian_mean(&w->jac_sum[i], nb, f);
        const size_t o = (size_t)s * LR + i;
        p->jacobian_spec[o] = f[0];
        p->jacobian_spec_max[o] = f[1];
        p->jacobian_fro[o] = f[2];
        p->jacobian_lemma3[o] = f[3];
        p->jacobian_bound[o] = f[4];
    }
    if (model_output_stack(m)->final.on)
        jacobian_mean(&w->fin_sum[0], nb, p->final_jacobian + (size_t)s * PROBE_JACOBIAN_FIELDS);
    if (p->enc_final_jacobian && m->stack[0].final.on)
        jacobian_mean(&w->fin_sum[1], nb, p->enc_final_jacobian + (size_t)s * PROBE_JACOBIAN_FIELDS);
}

int probe_run(session_t *ses, probe_t *p, probe_progress_fn progress, void *ctx)
{
    const config_t *cfg = &ses->cfg;
    model_t *m = ses->model;
    const probe_axes_t *ax = &p->ax;
    const size_t LR = (size_t)ax->L * ax->nnorm;
    probe_work_t w = {
        .gsum = malloc(m->num_params * sizeof(real)),
        .layer_tmp = malloc((size_t)ax->L * ax->nparam * sizeof(double)),
        .extra_tmp = malloc((size_t)ax->nextra * sizeof(double)),
        .hidden_tmp = malloc((size_t)ax->L * ax->nsite * sizeof(double)),
        .sub_tmp = malloc((size_t)ax->L * ax->nsub * sizeof(double)),
        .jac_tmp = malloc((LR ? LR : 1) * sizeof(probe_jacobian_t)),
        .jac_sum = malloc((LR ? LR : 1) * sizeof(probe_jacobian_t)),
        .save = malloc(m->num_params * sizeof(real)),
        .dyn_ent = malloc(((size_t)ax->L * ax->nhead + 1) * sizeof(double)),
        .dyn_max = malloc(((size_t)ax->L * ax->nhead + 1) * sizeof(double)),
        .dyn_rms = malloc((size_t)ax->L * sizeof(double)),
    };
    gsl_rng *signs = gsl_rng_alloc(gsl_rng_mt19937);
    if (!w.gsum || !w.layer_tmp || !w.extra_tmp || !w.hidden_tmp || !w.sub_tmp || !w.jac_tmp ||
        !w.jac_sum || !w.save || !w.dyn_ent || !w.dyn_max || !w.dyn_rms || !signs) {
        work_free(&w);
        if (signs) gsl_rng_free(signs);
        return 1;
    }
    const int S = cfg->probe.seeds, nb = cfg->probe.batches, jac = cfg->probe.jacobian;
    const long total = (long)S * nb;
    for (int s = 0; s < S; s++) {
        session_init(ses, cfg->init.seed + (unsigned long)s);
        seed_start(ax, m, p, s, &w);
        double loss = 0.0, fin = 0.0, enc_fin = 0.0;
        if (p->admin_omega) probe_admin_omega(ax, m, p->admin_omega + (size_t)s * ax->L * ax->nsub);
        for (int b = 0; b < nb; b++) {
            if (session_next_batch(ses)) {
                work_free(&w);
                gsl_rng_free(signs);
                return 2;
            }
            loss += model_forward(m, &ses->batch);
            model_zero_grad(m);
            model_backward(m);
            measure_batch(ax, m, p, s, nb, jac, &w, &fin, &enc_fin);
            if (b == 0) {   // Admin's output change, on the seed's first batch (after its measures)
                double enc_change;
                gsl_rng_set(signs, cfg->init.seed + (unsigned long)s + PROBE_CHANGE_OFFSET);
                change_output(m, &ses->batch, signs, w.save, &p->output_change[s], &enc_change);
                if (p->enc_output_change) p->enc_output_change[s] = enc_change;
            }
            if (progress) progress(ctx, (long)s * nb + b + 1, total);
        }
        seed_finish(ax, m, p, s, nb, jac, &w);
        p->loss[s] = loss / nb;
        p->final_sqnorm[s] = fin;
        if (p->enc_final_sqnorm) p->enc_final_sqnorm[s] = enc_fin;
    }
    work_free(&w);
    gsl_rng_free(signs);
    return 0;
}
