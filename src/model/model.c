/* model.c — parameter layout, initialisation, and the whole-stack forward/backward
 * for Post-LN and Pre-LN placement (Xiong et al. 2020, Fig. 1 and §3.1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include "model/model.h"
#include "nn/attention.h"
#include "nn/ffn.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/norm.h"

static const char *const PARAM_NAMES[P_NUM_LAYER_PARAMS] = {
    "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2",
    "norm1.gamma", "norm1.beta", "norm2.gamma", "norm2.beta",
};

/* ---------------------------------------------------------------------------------------
 * Parameter layout: one buffer, tensors in a fixed order (DESIGN §5).
 * tok_embed, [lm_head], layers/00/{wq..norm2.beta}, ..., [final_norm.gamma, final_norm.beta]
 * ------------------------------------------------------------------------------------- */

static int layer_param_exists(const model_t *m, int kind)
{
    if (kind == P_NORM1_GAMMA || kind == P_NORM2_GAMMA) return m->norm != NORM_NONE;
    if (kind == P_NORM1_BETA || kind == P_NORM2_BETA) return m->norm == NORM_LAYERNORM;
    return 1;
}

static void layer_param_shape(const model_t *m, int kind, size_t *rows, size_t *cols, int *rank)
{
    const size_t C = (size_t)m->C, F = (size_t)m->F;
    *rank = 1;
    *rows = 1;
    switch (kind) {
    case P_WQ: case P_WK: case P_WV: case P_WO: *rank = 2; *rows = C; *cols = C; break;
    case P_W1: *rank = 2; *rows = C; *cols = F; break;
    case P_W2: *rank = 2; *rows = F; *cols = C; break;
    case P_B1: *cols = F; break;
    default:   *cols = C; break;   // bq bk bv bo b2 and the norm vectors
    }
}

static void add_tensor(model_t *m, const char *name, size_t rows, size_t cols, int rank,
                       int layer, int kind, size_t *offset)
{
    tensor_info_t *t = &m->tensors[m->num_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = *offset;
    t->rows = rows;
    t->cols = cols;
    t->rank = rank;
    t->layer = layer;
    t->kind = kind;
    *offset += rows * cols;
}

static void build_tensor_list(model_t *m)
{
    const size_t C = (size_t)m->C, V = (size_t)m->V;
    size_t off = 0;
    m->num_tensors = 0;
    add_tensor(m, "tok_embed", V, C, 2, -1, -1, &off);
    if (!m->tied) add_tensor(m, "lm_head", C, V, 2, -1, -1, &off);
    for (int l = 0; l < m->L; l++) {
        for (int k = 0; k < P_NUM_LAYER_PARAMS; k++) {
            if (!layer_param_exists(m, k)) continue;
            size_t rows, cols;
            int rank;
            char name[48];
            layer_param_shape(m, k, &rows, &cols, &rank);
            snprintf(name, sizeof name, "layers/%02d/%s", l, PARAM_NAMES[k]);
            add_tensor(m, name, rows, cols, rank, l, k, &off);
        }
    }
    if (m->final_norm) {
        add_tensor(m, "final_norm.gamma", 1, C, 1, -1, -1, &off);
        if (m->norm == NORM_LAYERNORM) add_tensor(m, "final_norm.beta", 1, C, 1, -1, -1, &off);
    }
    m->num_params = off;
}

/* Point the named views of buffer base at the tensors of the list. */
static void bind_views(const model_t *m, param_view_t *v, double *base)
{
    for (int l = 0; l < m->L; l++) memset(&v->layers[l], 0, sizeof v->layers[l]);
    v->tok_embed = v->lm_head = v->final_gamma = v->final_beta = NULL;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        double *p = base + t->offset;
        if (t->layer >= 0) v->layers[t->layer].w[t->kind] = p;
        else if (!strcmp(t->name, "tok_embed")) v->tok_embed = p;
        else if (!strcmp(t->name, "lm_head")) v->lm_head = p;
        else if (!strcmp(t->name, "final_norm.gamma")) v->final_gamma = p;
        else if (!strcmp(t->name, "final_norm.beta")) v->final_beta = p;
    }
}

/* ---------------------------------------------------------------------------------------
 * Activation arena: one buffer for the forward, one of the same layout for the backward.
 * ------------------------------------------------------------------------------------- */

static double *take(double *base, size_t *off, size_t n)
{
    double *p = base ? base + *off : NULL;
    *off += n;
    return p;
}

/* Lay out the buffers of one layer's activations la (or just count when base is NULL). */
static void layout_layer(const model_t *m, layer_acts_t *la, double *base, size_t *off, int grad)
{
    const size_t N = (size_t)m->B * m->T, C = (size_t)m->C, F = (size_t)m->F;
    const size_t HTT = (size_t)m->B * m->H * m->T * m->T;
    const int drop = m->dropout > 0.0 && !grad;   // masks live in the forward arena only
    la->norm1 = take(base, off, N * C);
    la->norm1_mean = take(base, off, N);
    la->norm1_rstd = take(base, off, N);
    la->q = take(base, off, N * C);
    la->k = take(base, off, N * C);
    la->v = take(base, off, N * C);
    la->att = take(base, off, HTT);
    la->ctx = take(base, off, N * C);
    la->attn_out = take(base, off, N * C);
    la->resid1 = take(base, off, N * C);
    la->norm2 = take(base, off, N * C);
    la->norm2_mean = take(base, off, N);
    la->norm2_rstd = take(base, off, N);
    la->ffn_pre = take(base, off, N * F);
    la->ffn_act = take(base, off, N * F);
    la->ffn_out = take(base, off, N * C);
    la->resid2 = take(base, off, N * C);
    la->mask_attn = drop ? take(base, off, N * C) : NULL;
    la->mask_ffn = drop ? take(base, off, N * C) : NULL;
}

/* Lay out acts a over base (or just count when base is NULL); returns the doubles used.
 * grad = 0: the forward arena, every layer its own buffers.
 * grad = 1: the backward's gradient arena. The backward needs one layer's gradients at a time
 * plus the one flowing in from above, so layer l uses buffer set l % 2 (the set of layer l + 1
 * holds d x_{l+1} = da.layers[l].out while layer l runs): memory 2 layers instead of L. No
 * masks, probs or losses (the backward has no gradient of them). */
static size_t layout_acts(const model_t *m, acts_t *a, double *base, int grad)
{
    const size_t N = (size_t)m->B * m->T, C = (size_t)m->C, V = (size_t)m->V;
    size_t off = 0;
    a->embed = take(base, &off, N * C);
    a->mask_embed = m->dropout > 0.0 && !grad ? take(base, &off, N * C) : NULL;
    for (int l = 0; l < m->L; l++) {
        layer_acts_t *la = &a->layers[l];
        if (grad && l >= 2) *la = a->layers[l - 2];   // same buffer set
        else layout_layer(m, la, base, &off, grad);
        la->in = l == 0 ? a->embed : a->layers[l - 1].out;
        if (m->placement == PLACEMENT_POST) {
            la->norm1_in = la->resid1;   // x²
            la->norm2_in = la->resid2;   // x⁵
            la->out = la->norm2;         // x_{l+1} = LN(x⁵)
        } else {
            la->norm1_in = la->in;       // x_l
            la->norm2_in = la->resid1;   // x³
            la->out = la->resid2;        // x_{l+1} = x³ + FFN(LN(x³))
        }
    }
    a->final_in = a->layers[m->L - 1].out;
    if (m->final_norm) {
        a->final = take(base, &off, N * C);
        a->final_mean = take(base, &off, N);
        a->final_rstd = take(base, &off, N);
    } else {
        a->final = a->final_in;
        a->final_mean = a->final_rstd = NULL;
    }
    a->logits = take(base, &off, N * V);
    a->probs = grad ? NULL : take(base, &off, N * V);
    a->losses = grad ? NULL : take(base, &off, N);
    return off;
}

model_t *model_create(const config_t *cfg)
{
    model_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->L = cfg->model.layers;
    m->C = cfg->model.d_model;
    m->H = cfg->model.heads;
    m->Dh = m->C / m->H;
    m->F = cfg->model.d_ff;
    m->V = cfg->model.vocab;
    m->T = cfg->model.seq_len;
    m->B = cfg->data.batch;
    m->placement = cfg->model.placement;
    m->norm = cfg->model.norm;
    m->activation = cfg->model.activation;
    m->norm_eps = cfg->model.norm_eps;
    m->dropout = cfg->model.dropout;
    m->label_smoothing = cfg->data.label_smoothing;
    m->causal = cfg->model.causal;
    m->tied = cfg->model.tie_embeddings;
    m->final_norm = config_has_final_norm(cfg);

    m->tensors = calloc((size_t)m->L * P_NUM_LAYER_PARAMS + 4, sizeof *m->tensors);
    m->p.layers = calloc((size_t)m->L, sizeof(layer_view_t));
    m->g.layers = calloc((size_t)m->L, sizeof(layer_view_t));
    m->a.layers = calloc((size_t)m->L, sizeof(layer_acts_t));
    m->da.layers = calloc((size_t)m->L, sizeof(layer_acts_t));
    if (!m->tensors || !m->p.layers || !m->g.layers || !m->a.layers || !m->da.layers) goto fail;

    build_tensor_list(m);
    m->params = calloc(m->num_params, sizeof(double));
    m->grads = calloc(m->num_params, sizeof(double));
    if (!m->params || !m->grads) goto fail;
    bind_views(m, &m->p, m->params);
    bind_views(m, &m->g, m->grads);

    m->num_acts = layout_acts(m, &m->a, NULL, 0);
    m->num_dacts = layout_acts(m, &m->da, NULL, 1);
    m->act_mem = calloc(m->num_acts, sizeof(double));
    m->dact_mem = calloc(m->num_dacts, sizeof(double));
    m->pe = calloc((size_t)m->T * m->C, sizeof(double));
    if (!m->act_mem || !m->dact_mem || !m->pe) goto fail;
    layout_acts(m, &m->a, m->act_mem, 0);
    layout_acts(m, &m->da, m->dact_mem, 1);

    // Sinusoidal positions (Vaswani et al. 2017 §3.5): PE[t][2i] = sin(t/10000^(2i/d)),
    // PE[t][2i+1] = cos(t/10000^(2i/d)); ‖PE[t]‖² = d/2.
    for (int t = 0; t < m->T; t++) {
        for (int c = 0; c < m->C; c++) {
            const int i2 = c & ~1;
            const double angle = t / pow(10000.0, (double)i2 / m->C);
            m->pe[(size_t)t * m->C + c] = (c & 1) ? cos(angle) : sin(angle);
        }
    }
    return m;
fail:
    model_free(m);
    return NULL;
}

void model_free(model_t *m)
{
    if (!m) return;
    free(m->tensors);
    free(m->p.layers);
    free(m->g.layers);
    free(m->a.layers);
    free(m->da.layers);
    free(m->params);
    free(m->grads);
    free(m->act_mem);
    free(m->dact_mem);
    free(m->pe);
    free(m);
}

void model_init(model_t *m, const config_t *cfg, gsl_rng *rng)
{
    const double C = (double)m->C;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        double *p = m->params + t->offset;
        const size_t n = model_tensor_size(t);
        if (t->layer < 0 && t->rank == 2) {
            // tok_embed, lm_head ~ N(0, 1/d) (fairseq; DESIGN §5)
            for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, 1.0 / sqrt(C));
        } else if (t->rank == 2) {
            // Xavier/Glorot: Var = 2/(fan_in + fan_out)
            const double fan = (double)(t->rows + t->cols);
            switch (cfg->init.scheme) {
            case INIT_XAVIER_NORMAL: {
                const double sd = sqrt(2.0 / fan);
                for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, sd);
                break;
            }
            case INIT_XAVIER_UNIFORM: {
                const double a = sqrt(6.0 / fan);
                for (size_t j = 0; j < n; j++) p[j] = gsl_ran_flat(rng, -a, a);
                break;
            }
            case INIT_NORMAL:
                for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, cfg->init.std);
                break;
            }
            // The theory's W_Q = W_K = 0 (drawn first, so the other tensors do not change).
            if (cfg->init.zero_qk && (t->kind == P_WQ || t->kind == P_WK))
                memset(p, 0, n * sizeof(double));
        } else {
            // biases and β = 0, γ = 1
            const int is_gamma = t->kind == P_NORM1_GAMMA || t->kind == P_NORM2_GAMMA ||
                                 (t->layer < 0 && strstr(t->name, "gamma"));
            for (size_t j = 0; j < n; j++) p[j] = is_gamma ? 1.0 : 0.0;
        }
    }
}

void model_perturb(model_t *m, gsl_rng *rng, double scale)
{
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->rank != 1) continue;
        double *p = m->params + t->offset;
        for (size_t j = 0; j < model_tensor_size(t); j++) p[j] += gsl_ran_gaussian(rng, scale);
    }
}

void model_draw_dropout(model_t *m, gsl_rng *rng)
{
    if (m->dropout <= 0.0) return;
    const size_t NC = (size_t)m->B * m->T * m->C;
    const double keep = 1.0 / (1.0 - m->dropout);
    // Inverted dropout: mask = 0 with probability p, else 1/(1−p). Order: embed, then per
    // layer attention then FFN.
    for (size_t i = 0; i < NC; i++)
        m->a.mask_embed[i] = gsl_rng_uniform(rng) < m->dropout ? 0.0 : keep;
    for (int l = 0; l < m->L; l++) {
        for (size_t i = 0; i < NC; i++)
            m->a.layers[l].mask_attn[i] = gsl_rng_uniform(rng) < m->dropout ? 0.0 : keep;
        for (size_t i = 0; i < NC; i++)
            m->a.layers[l].mask_ffn[i] = gsl_rng_uniform(rng) < m->dropout ? 0.0 : keep;
    }
}

/* out = x + mask ⊙ y  (mask NULL = identity), n values. */
static void residual_forward(double *out, const double *x, const double *y, const double *mask,
                             size_t n)
{
    if (mask) for (size_t i = 0; i < n; i++) out[i] = x[i] + mask[i] * y[i];
    else      for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
}

double model_forward(model_t *m, const int32_t *tokens, const int32_t *targets)
{
    const size_t B = (size_t)m->B, T = (size_t)m->T, C = (size_t)m->C, F = (size_t)m->F;
    const size_t V = (size_t)m->V, N = B * T;
    const double sqrtC = sqrt((double)C);
    acts_t *a = &m->a;
    m->tokens = tokens;
    m->targets = targets;

    // x_1 = tok_embed[token]·√d + PE  (fairseq convention, DESIGN §5)        // (N,C)
    for (size_t i = 0; i < N; i++) {
        const double *e = m->p.tok_embed + (size_t)tokens[i] * C;
        const double *pe = m->pe + (i % T) * C;
        double *x = a->embed + i * C;
        for (size_t c = 0; c < C; c++) x[c] = e[c] * sqrtC + pe[c];
        if (a->mask_embed) for (size_t c = 0; c < C; c++) x[c] *= a->mask_embed[i * C + c];
    }

    for (int l = 0; l < m->L; l++) {
        layer_acts_t *la = &a->layers[l];
        double *const *w = m->p.layers[l].w;
        const double *attn_in = la->in;
        if (m->placement == PLACEMENT_PRE) {
            // Pre-LN: the attention reads LN(x_l)
            norm_forward(m->norm, la->norm1, la->norm1_mean, la->norm1_rstd, la->in,
                         w[P_NORM1_GAMMA], w[P_NORM1_BETA], N, C, m->norm_eps);
            attn_in = la->norm1;
        }
        // MHA(a) = Attention(a·W_Q, a·W_K, a·W_V)·W_O                          // (N,C)
        linear_forward(la->q, attn_in, w[P_WQ], w[P_BQ], N, C, C);
        linear_forward(la->k, attn_in, w[P_WK], w[P_BK], N, C, C);
        linear_forward(la->v, attn_in, w[P_WV], w[P_BV], N, C, C);
        attention_forward(la->ctx, la->att, la->q, la->k, la->v, m->B, m->T, m->C, m->H,
                          m->causal);
        linear_forward(la->attn_out, la->ctx, w[P_WO], w[P_BO], N, C, C);
        // post: x² = x + MHA(x);  pre: x³ = x + MHA(LN(x))
        residual_forward(la->resid1, la->in, la->attn_out, la->mask_attn, N * C);

        const double *ffn_in;
        if (m->placement == PLACEMENT_POST) {
            // x³ = LN(x²); FFN reads x³
            norm_forward(m->norm, la->norm1, la->norm1_mean, la->norm1_rstd, la->resid1,
                         w[P_NORM1_GAMMA], w[P_NORM1_BETA], N, C, m->norm_eps);
            ffn_in = la->norm1;
        } else {
            // FFN reads LN(x³)
            norm_forward(m->norm, la->norm2, la->norm2_mean, la->norm2_rstd, la->resid1,
                         w[P_NORM2_GAMMA], w[P_NORM2_BETA], N, C, m->norm_eps);
            ffn_in = la->norm2;
        }
        ffn_forward(la->ffn_out, la->ffn_pre, la->ffn_act, ffn_in, w[P_W1], w[P_B1],
                    w[P_W2], w[P_B2], N, C, F, m->activation);
        if (m->placement == PLACEMENT_POST) {
            // x⁵ = x³ + FFN(x³);  x_{l+1} = LN(x⁵)
            residual_forward(la->resid2, la->norm1, la->ffn_out, la->mask_ffn, N * C);
            norm_forward(m->norm, la->norm2, la->norm2_mean, la->norm2_rstd, la->resid2,
                         w[P_NORM2_GAMMA], w[P_NORM2_BETA], N, C, m->norm_eps);
        } else {
            // x_{l+1} = x³ + FFN(LN(x³))
            residual_forward(la->resid2, la->resid1, la->ffn_out, la->mask_ffn, N * C);
        }
    }

    // x_final = LN(x_{L+1}) when the stack has a final norm (Pre-LN by default)
    if (m->final_norm)
        norm_forward(m->norm, a->final, a->final_mean, a->final_rstd, a->final_in,
                     m->p.final_gamma, m->p.final_beta, N, C, m->norm_eps);

    // logits (N,V) = x_final · W_embᵀ (tied) or x_final · lm_head
    if (m->tied)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)V, (int)C, 1.0,
                    a->final, (int)C, m->p.tok_embed, (int)C, 0.0, a->logits, (int)V);
    else
        linear_forward(a->logits, a->final, m->p.lm_head, NULL, N, C, V);

    m->loss = loss_forward(a->probs, a->losses, &m->num_targets, a->logits, targets, N, V,
                           m->label_smoothing);
    return m->loss;
}

void model_zero_grad(model_t *m)
{
    memset(m->grads, 0, m->num_params * sizeof(double));
}

/* dy = mask ⊙ dout, or dout itself without dropout (no copy). */
static const double *dropout_backward(double *dy, const double *dout, const double *mask,
                                      size_t n)
{
    if (!mask) return dout;
    for (size_t i = 0; i < n; i++) dy[i] = mask[i] * dout[i];
    return dy;
}

/* Zero the gradient accumulators of layer dl before its backward: the buffers it adds into, and
 * dl->in (the gradient of its input: the layer below's out, whose set still holds stale values
 * from two layers up). Not dl->out: it holds the gradient flowing in from above. */
static void zero_layer_grads(const model_t *m, const layer_acts_t *dl)
{
    const size_t NC = (size_t)m->B * m->T * m->C;
    double *const acc[] = {
        dl->in, dl->q, dl->k, dl->v, dl->ctx, dl->resid1, dl->norm1,
        m->placement == PLACEMENT_POST ? dl->resid2 : dl->norm2,   // the other one is dl->out
    };
    for (size_t i = 0; i < sizeof acc / sizeof acc[0]; i++) memset(acc[i], 0, NC * sizeof(double));
}

void model_backward(model_t *m)
{
    const size_t B = (size_t)m->B, T = (size_t)m->T, C = (size_t)m->C, F = (size_t)m->F;
    const size_t V = (size_t)m->V, N = B * T;
    const double sqrtC = sqrt((double)C);
    const acts_t *a = &m->a;
    acts_t *da = &m->da;
    // gradient accumulators are zeroed where they start (zero_layer_grads), not the whole arena
    memset(da->final, 0, N * C * sizeof(double));
    if (da->final_in != da->final) memset(da->final_in, 0, N * C * sizeof(double));

    // dlogits (N,V) = (p − q)/count
    loss_backward(da->logits, a->probs, m->targets, N, V, m->label_smoothing, m->num_targets);
    if (m->tied) {
        // dfinal (N,C) += dlogits (N,V) · W_emb (V,C);  dW_emb (V,C) += dlogitsᵀ · final
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)C, (int)V, 1.0,
                    da->logits, (int)V, m->p.tok_embed, (int)C, 1.0, da->final, (int)C);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)V, (int)C, (int)N, 1.0,
                    da->logits, (int)V, a->final, (int)C, 1.0, m->g.tok_embed, (int)C);
    } else {
        linear_backward(da->final, m->g.lm_head, NULL, da->logits, a->final, m->p.lm_head,
                        N, C, V);
    }
    if (m->final_norm)
        norm_backward(m->norm, da->final_in, m->g.final_gamma, m->g.final_beta, da->final,
                      a->final_in, a->final_mean, a->final_rstd, m->p.final_gamma, N, C);

    for (int l = m->L - 1; l >= 0; l--) {
        const layer_acts_t *la = &a->layers[l];
        layer_acts_t *dl = &da->layers[l];
        double *const *w = m->p.layers[l].w;
        double *const *g = m->g.layers[l].w;
        const double *dffn_out;
        zero_layer_grads(m, dl);
        if (m->placement == PLACEMENT_POST) {
            // x_{l+1} = LN2(x⁵)
            norm_backward(m->norm, dl->resid2, g[P_NORM2_GAMMA], g[P_NORM2_BETA], dl->norm2,
                          la->resid2, la->norm2_mean, la->norm2_rstd, w[P_NORM2_GAMMA], N, C);
            // x⁵ = x³ + drop(FFN(x³))
            for (size_t i = 0; i < N * C; i++) dl->norm1[i] += dl->resid2[i];
            dffn_out = dropout_backward(dl->ffn_out, dl->resid2, la->mask_ffn, N * C);
            ffn_backward(dl->norm1, g[P_W1], g[P_B1], g[P_W2], g[P_B2], dl->ffn_pre,
                         dl->ffn_act, dffn_out, la->norm1, la->ffn_pre, la->ffn_act, w[P_W1],
                         w[P_W2], N, C, F, m->activation);
            // x³ = LN1(x²)
            norm_backward(m->norm, dl->resid1, g[P_NORM1_GAMMA], g[P_NORM1_BETA], dl->norm1,
                          la->resid1, la->norm1_mean, la->norm1_rstd, w[P_NORM1_GAMMA], N, C);
        } else {
            // x_{l+1} = x³ + drop(FFN(LN2(x³)))
            for (size_t i = 0; i < N * C; i++) dl->resid1[i] += dl->resid2[i];
            dffn_out = dropout_backward(dl->ffn_out, dl->resid2, la->mask_ffn, N * C);
            ffn_backward(dl->norm2, g[P_W1], g[P_B1], g[P_W2], g[P_B2], dl->ffn_pre,
                         dl->ffn_act, dffn_out, la->norm2, la->ffn_pre, la->ffn_act, w[P_W1],
                         w[P_W2], N, C, F, m->activation);
            norm_backward(m->norm, dl->resid1, g[P_NORM2_GAMMA], g[P_NORM2_BETA], dl->norm2,
                          la->resid1, la->norm2_mean, la->norm2_rstd, w[P_NORM2_GAMMA], N, C);
        }
        // resid1 = x + drop(MHA(attn_in))
        for (size_t i = 0; i < N * C; i++) dl->in[i] += dl->resid1[i];
        const double *dattn_out = dropout_backward(dl->attn_out, dl->resid1, la->mask_attn,
                                                   N * C);
        const double *attn_in = m->placement == PLACEMENT_PRE ? la->norm1 : la->in;
        double *dattn_in = m->placement == PLACEMENT_PRE ? dl->norm1 : dl->in;
        linear_backward(dl->ctx, g[P_WO], g[P_BO], dattn_out, la->ctx, w[P_WO], N, C, C);
        attention_backward(dl->q, dl->k, dl->v, dl->att, dl->ctx, la->q, la->k, la->v, la->att,
                           m->B, m->T, m->C, m->H);
        linear_backward(dattn_in, g[P_WQ], g[P_BQ], dl->q, attn_in, w[P_WQ], N, C, C);
        linear_backward(dattn_in, g[P_WK], g[P_BK], dl->k, attn_in, w[P_WK], N, C, C);
        linear_backward(dattn_in, g[P_WV], g[P_BV], dl->v, attn_in, w[P_WV], N, C, C);
        if (m->placement == PLACEMENT_PRE)
            norm_backward(m->norm, dl->in, g[P_NORM1_GAMMA], g[P_NORM1_BETA], dl->norm1,
                          la->in, la->norm1_mean, la->norm1_rstd, w[P_NORM1_GAMMA], N, C);
    }

    // x_1 = drop(tok_embed[token]·√d + PE):  dtok_embed[token] += √d·(mask ⊙ dx_1)
    for (size_t i = 0; i < N; i++) {
        double *ge = m->g.tok_embed + (size_t)m->tokens[i] * C;
        const double *dx = da->embed + i * C;
        const double *mask = a->mask_embed ? a->mask_embed + i * C : NULL;
        for (size_t c = 0; c < C; c++) ge[c] += sqrtC * (mask ? mask[c] * dx[c] : dx[c]);
    }
}

const tensor_info_t *model_find_tensor(const model_t *m, const char *name)
{
    for (int i = 0; i < m->num_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}

size_t model_tensor_size(const tensor_info_t *t)
{
    return t->rows * t->cols;
}
