/* probe.c — measurements at initialisation (Xiong et al. 2020 §3.2–3.4, Fig. 3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include "measure/probe.h"
#include "data/data.h"
#include "nn/norm.h"

const char *const PROBE_PARAM_NAMES[P_NUM_LAYER_PARAMS] = {
    "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2",
    "norm1.gamma", "norm1.beta", "norm2.gamma", "norm2.beta",
};
const char *const PROBE_SITE_NAMES[SITE_COUNT] = {"input", "resid1", "resid2", "output"};
const char *const PROBE_NORM_NAMES[PROBE_NORMS] = {"norm1", "norm2"};
const char *const PROBE_EXTRA_NAMES[EXTRA_COUNT] = {
    "tok_embed", "lm_head", "final_norm.gamma", "final_norm.beta",
};

probe_t *probe_alloc(int S, int L)
{
    probe_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->S = S;
    p->L = L;
    const size_t SL = (size_t)S * L;
    double **arrays[] = {
        &p->grad_fro, &p->grad_fro_batchmean, &p->extra_grad_fro, &p->extra_grad_fro_batchmean,
        &p->hidden_sqnorm, &p->final_sqnorm, &p->jacobian_spec, &p->jacobian_spec_max,
        &p->jacobian_fro, &p->jacobian_lemma3, &p->jacobian_bound, &p->final_jacobian, &p->loss,
    };
    const size_t sizes[] = {
        SL * P_NUM_LAYER_PARAMS, SL * P_NUM_LAYER_PARAMS, (size_t)S * EXTRA_COUNT,
        (size_t)S * EXTRA_COUNT, SL * SITE_COUNT, (size_t)S, SL * PROBE_NORMS,
        SL * PROBE_NORMS, SL * PROBE_NORMS, SL * PROBE_NORMS, SL * PROBE_NORMS, (size_t)S * 5,
        (size_t)S,
    };
    for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++) {
        *arrays[a] = malloc(sizes[a] * sizeof(double));
        if (!*arrays[a]) { probe_free(p); return NULL; }
        for (size_t i = 0; i < sizes[a]; i++) (*arrays[a])[i] = NAN;
    }
    return p;
}

void probe_free(probe_t *p)
{
    if (!p) return;
    free(p->grad_fro); free(p->grad_fro_batchmean);
    free(p->extra_grad_fro); free(p->extra_grad_fro_batchmean);
    free(p->hidden_sqnorm); free(p->final_sqnorm);
    free(p->jacobian_spec); free(p->jacobian_spec_max); free(p->jacobian_fro);
    free(p->jacobian_lemma3); free(p->jacobian_bound); free(p->final_jacobian);
    free(p->loss);
    free(p);
}

static double frobenius(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

void probe_grad_norms(const model_t *m, const double *grads, double *layer, double *extra)
{
    for (size_t i = 0; i < (size_t)m->L * P_NUM_LAYER_PARAMS; i++) layer[i] = NAN;
    for (int e = 0; e < EXTRA_COUNT; e++) extra[e] = NAN;
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        const double v = frobenius(grads + t->offset, model_tensor_size(t));
        if (t->layer >= 0) {
            layer[(size_t)t->layer * P_NUM_LAYER_PARAMS + t->kind] = v;
            continue;
        }
        for (int e = 0; e < EXTRA_COUNT; e++)
            if (!strcmp(t->name, PROBE_EXTRA_NAMES[e])) extra[e] = v;
    }
}

/* Mean over the N rows of (N,C) x of ‖x_row‖². */
static double mean_row_sqnorm(const double *x, size_t N, size_t C)
{
    double s = 0.0;
    for (size_t i = 0; i < N * C; i++) s += x[i] * x[i];
    return s / (double)N;
}

void probe_hidden_norms(const model_t *m, double *hidden, double *final)
{
    const size_t N = (size_t)m->B * m->T, C = (size_t)m->C;
    for (int l = 0; l < m->L; l++) {
        const layer_acts_t *la = &m->a.layers[l];
        double *h = hidden + (size_t)l * SITE_COUNT;
        h[SITE_INPUT] = mean_row_sqnorm(la->in, N, C);
        h[SITE_RESID1] = mean_row_sqnorm(la->resid1, N, C);
        h[SITE_RESID2] = mean_row_sqnorm(la->resid2, N, C);
        h[SITE_OUTPUT] = mean_row_sqnorm(la->out, N, C);
    }
    *final = mean_row_sqnorm(m->a.final, N, C);
}

/* One norm instance of the probe: its input x (N,C), its γ (C) and where its statistics go. */
typedef struct {
    const double *x, *gamma;
    probe_jacobian_t *out;
} jac_instance_t;

/* Run the per-token Jacobian work in parallel only above this many (nominal) operations: an
 * OpenMP region leaves its workers spinning for milliseconds, which the next GEMM's OpenBLAS
 * threads pay for (docs/performance.md). Uniform γ (every probe at initialisation) costs ~4·C per
 * token, so a d = 512, L = 12 probe stays serial; trained γ (bisection, ~150·C) goes parallel. */
#define PROBE_OMP_MIN_WORK 5e7

/* Per-token statistics of every instance, one parallel region over (instance, token), then summed
 * per instance in token order (reproducible for any thread count). tmp holds (n,N,4). */
static void jacobian_stats(const model_t *m, const jac_instance_t *inst, int n, double *tmp)
{
    const size_t N = (size_t)m->B * m->T, C = (size_t)m->C;
    const double sqrtC = sqrt((double)C);
    double work = 0.0;
    for (int k = 0; k < n; k++) {
        int uniform = 1;
        for (size_t c = 1; c < C && uniform && inst[k].gamma; c++)
            uniform = inst[k].gamma[c] == inst[k].gamma[0];
        work += (double)N * C * (uniform ? 4.0 : 150.0);
    }
    const long total = (long)n * (long)N;
    #pragma omp parallel for schedule(static) if (work >= PROBE_OMP_MIN_WORK)
    for (long it = 0; it < total; it++) {
        const jac_instance_t *in = &inst[it / (long)N];
        const size_t i = (size_t)(it % (long)N);
        const double *row = in->x + i * C;   // (C)
        double spec, fro, mu = 0.0, centred = 0.0;
        norm_jacobian_norms(m->norm, row, in->gamma, C, m->norm_eps, &spec, &fro);
        if (m->norm == NORM_LAYERNORM) {
            for (size_t c = 0; c < C; c++) mu += row[c];
            mu /= (double)C;
        }
        for (size_t c = 0; c < C; c++) centred += (row[c] - mu) * (row[c] - mu);
        centred = sqrt(centred);   // ‖x − μ‖ (RMSNorm: ‖x‖)
        double *t = tmp + (size_t)it * 4;
        t[0] = spec;
        t[1] = fro;
        t[2] = spec * centred / sqrtC;   // Lemma 3: ‖J‖₂ = O(√d/‖x−μ‖)
        t[3] = sqrtC / centred;
    }
    for (int k = 0; k < n; k++) {
        const double *t = tmp + (size_t)k * N * 4;
        probe_jacobian_t r = {0.0, 0.0, 0.0, 0.0, 0.0};
        for (size_t i = 0; i < N; i++) {
            r.spec += t[i * 4 + 0];
            r.spec_max = fmax(r.spec_max, t[i * 4 + 0]);
            r.fro += t[i * 4 + 1];
            r.lemma3 += t[i * 4 + 2];
            r.bound += t[i * 4 + 3];
        }
        r.spec /= (double)N;
        r.fro /= (double)N;
        r.lemma3 /= (double)N;
        r.bound /= (double)N;
        *inst[k].out = r;
    }
}

void probe_jacobians(const model_t *m, probe_jacobian_t *layers, probe_jacobian_t *final)
{
    const probe_jacobian_t nan5 = {NAN, NAN, NAN, NAN, NAN};
    for (int i = 0; i < m->L * PROBE_NORMS; i++) layers[i] = nan5;
    *final = nan5;
    if (m->norm == NORM_NONE) return;
    const size_t N = (size_t)m->B * m->T;
    const int n_max = m->L * PROBE_NORMS + 1;
    jac_instance_t *inst = malloc((size_t)n_max * sizeof *inst);
    double *tmp = malloc((size_t)n_max * N * 4 * sizeof(double));
    if (!inst || !tmp) { free(inst); free(tmp); return; }
    int n = 0;
    for (int l = 0; l < m->L; l++) {
        const layer_acts_t *la = &m->a.layers[l];
        double *const *w = m->p.layers[l].w;
        inst[n++] = (jac_instance_t){la->norm1_in, w[P_NORM1_GAMMA], &layers[l * PROBE_NORMS + 0]};
        inst[n++] = (jac_instance_t){la->norm2_in, w[P_NORM2_GAMMA], &layers[l * PROBE_NORMS + 1]};
    }
    if (m->final_norm) inst[n++] = (jac_instance_t){m->a.final_in, m->p.final_gamma, final};
    jacobian_stats(m, inst, n, tmp);
    free(inst);
    free(tmp);
}

/* Running sums over the batches of one seed. */
typedef struct {
    double *gsum;        // (num_params) Σ_b ∇θ
    double *layer_tmp;   // (L,P)
    double *extra_tmp;   // (EXTRA_COUNT)
    double *hidden_tmp;  // (L,SITE_COUNT)
    probe_jacobian_t *jac_tmp, *jac_sum;   // (L,PROBE_NORMS)
    probe_jacobian_t jac_final_tmp, jac_final_sum;
} probe_work_t;

static void jacobian_add(probe_jacobian_t *sum, const probe_jacobian_t *x)
{
    sum->spec += x->spec;
    sum->spec_max = fmax(sum->spec_max, x->spec_max);
    sum->fro += x->fro;
    sum->lemma3 += x->lemma3;
    sum->bound += x->bound;
}

int probe_run(const config_t *cfg, probe_t *p, probe_progress_fn progress, void *ctx,
              char *err, size_t errlen)
{
    data_t data;
    int rc = data_open(&data, cfg, err, errlen);
    if (rc) return rc;
    model_t *m = model_create(cfg);
    gsl_rng *rinit = gsl_rng_alloc(gsl_rng_mt19937), *rdata = gsl_rng_alloc(gsl_rng_mt19937);
    const size_t BT = (size_t)m->B * m->T, LP = (size_t)m->L * P_NUM_LAYER_PARAMS;
    const size_t LN = (size_t)m->L * PROBE_NORMS, LS = (size_t)m->L * SITE_COUNT;
    int32_t *tokens = malloc(BT * sizeof(int32_t)), *targets = malloc(BT * sizeof(int32_t));
    probe_work_t w = {
        .gsum = malloc(m->num_params * sizeof(double)),
        .layer_tmp = malloc(LP * sizeof(double)),
        .extra_tmp = malloc(EXTRA_COUNT * sizeof(double)),
        .hidden_tmp = malloc(LS * sizeof(double)),
        .jac_tmp = malloc(LN * sizeof(probe_jacobian_t)),
        .jac_sum = malloc(LN * sizeof(probe_jacobian_t)),
    };
    rc = 0;
    if (!m || !rinit || !rdata || !tokens || !targets || !w.gsum || !w.layer_tmp ||
        !w.extra_tmp || !w.hidden_tmp || !w.jac_tmp || !w.jac_sum) {
        snprintf(err, errlen, "out of memory");
        rc = 1;
        goto done;
    }
    const int S = cfg->probe.seeds, nb = cfg->probe.batches;
    const long total = (long)S * nb;
    for (int s = 0; s < S; s++) {
        gsl_rng_set(rinit, cfg->init.seed + (unsigned long)s);
        gsl_rng_set(rdata, cfg->init.seed + (unsigned long)s + DATA_SEED_OFFSET);
        model_init(m, cfg, rinit);
        memset(w.gsum, 0, m->num_params * sizeof(double));
        double *bm = p->grad_fro_batchmean + (size_t)s * LP;
        double *bme = p->extra_grad_fro_batchmean + (size_t)s * EXTRA_COUNT;
        double *hid = p->hidden_sqnorm + (size_t)s * LS;
        double loss = 0.0, fin = 0.0, fin_tmp;
        for (size_t i = 0; i < LP; i++) bm[i] = 0.0;
        for (int e = 0; e < EXTRA_COUNT; e++) bme[e] = 0.0;
        for (size_t i = 0; i < LS; i++) hid[i] = 0.0;
        memset(w.jac_sum, 0, LN * sizeof(probe_jacobian_t));
        memset(&w.jac_final_sum, 0, sizeof w.jac_final_sum);
        for (int b = 0; b < nb; b++) {
            data_batch(&data, rdata, tokens, targets);
            model_draw_dropout(m, rdata);
            loss += model_forward(m, tokens, targets);
            model_zero_grad(m);
            model_backward(m);
            for (size_t i = 0; i < m->num_params; i++) w.gsum[i] += m->grads[i];
            // E_batch ‖∇W‖_F
            probe_grad_norms(m, m->grads, w.layer_tmp, w.extra_tmp);
            for (size_t i = 0; i < LP; i++) bm[i] += w.layer_tmp[i] / nb;
            for (int e = 0; e < EXTRA_COUNT; e++) bme[e] += w.extra_tmp[e] / nb;
            probe_hidden_norms(m, w.hidden_tmp, &fin_tmp);
            for (size_t i = 0; i < LS; i++) hid[i] += w.hidden_tmp[i] / nb;
            fin += fin_tmp / nb;
            if (cfg->probe.jacobian) {
                probe_jacobians(m, w.jac_tmp, &w.jac_final_tmp);
                for (size_t i = 0; i < LN; i++) jacobian_add(&w.jac_sum[i], &w.jac_tmp[i]);
                jacobian_add(&w.jac_final_sum, &w.jac_final_tmp);
            }
            if (progress) progress(ctx, (long)s * nb + b + 1, total);
        }
        // ‖E_batch ∇W‖_F (§3.4 "expected gradient")
        for (size_t i = 0; i < m->num_params; i++) w.gsum[i] /= nb;
        probe_grad_norms(m, w.gsum, p->grad_fro + (size_t)s * LP,
                         p->extra_grad_fro + (size_t)s * EXTRA_COUNT);
        p->loss[s] = loss / nb;
        p->final_sqnorm[s] = fin;
        if (cfg->probe.jacobian) {
            for (size_t i = 0; i < LN; i++) {
                const size_t o = (size_t)s * LN + i;
                p->jacobian_spec[o] = w.jac_sum[i].spec / nb;
                p->jacobian_spec_max[o] = w.jac_sum[i].spec_max;
                p->jacobian_fro[o] = w.jac_sum[i].fro / nb;
                p->jacobian_lemma3[o] = w.jac_sum[i].lemma3 / nb;
                p->jacobian_bound[o] = w.jac_sum[i].bound / nb;
            }
            if (m->final_norm) {
                double *f = p->final_jacobian + (size_t)s * 5;
                f[0] = w.jac_final_sum.spec / nb;
                f[1] = w.jac_final_sum.spec_max;
                f[2] = w.jac_final_sum.fro / nb;
                f[3] = w.jac_final_sum.lemma3 / nb;
                f[4] = w.jac_final_sum.bound / nb;
            }
        }
    }
done:
    free(w.gsum); free(w.layer_tmp); free(w.extra_tmp); free(w.hidden_tmp);
    free(w.jac_tmp); free(w.jac_sum);
    free(tokens); free(targets);
    if (rinit) gsl_rng_free(rinit);
    if (rdata) gsl_rng_free(rdata);
    model_free(m);
    data_close(&data);
    return rc;
}
