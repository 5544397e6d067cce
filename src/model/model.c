/* model.c — the model as one or two stacks of sub-layers over one parameter buffer; the
 * output layer and the loss (Xiong et al. 2020 §3; docs/design.md §1, §5, §6b). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include "model/model.h"
#include "nn/linear.h"
#include "nn/loss.h"

static const char *const STACK_PREFIX[3] = {"layers", "enc", "dec"};
static const char *const FINAL_NAME[3] = {"final_norm", "enc_final_norm", "dec_final_norm"};
static const char *const ATTN_KINDS[2][8] = {
    {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"},
    {"cwq", "cbq", "cwk", "cbk", "cwv", "cbv", "cwo", "cbo"},
};
static const char *const FFN_KINDS[4] = {"w1", "b1", "w2", "b2"};

/* ---------------------------------------------------------------------------------------
 * Parameter layout: one buffer, tensors in a fixed order (docs/design.md §5, §6b):
 * tok_embed, [lm_head], then per stack its layers (canonical order inside a layer,
 * model/tensors.h) and [its final norm].
 * ------------------------------------------------------------------------------------- */

/* A tensor of a layer named prefix + kind, kind one of the canonical columns (model/tensors.c). */
static int add_layer_tensor(model_t *m, const char *prefix, int row, const char *kind,
                            size_t rows, size_t cols, tensor_init_t init, double value)
{
    char name[96];
    snprintf(name, sizeof name, "%s%s", prefix, kind);
    const char *column = tensors_column_name(tensors_column_index(kind));
    return tensors_add(&m->list, name, column, rows, cols, rows > 1 ? 2 : 1, row, init, value) < 0;
}

/* γ (and β: LayerNorm, DyT) of the norm site "site" (e.g. "norm2", "norm1_out") of width w. */
static int add_site_params(model_t *m, const char *prefix, int row, const char *site, size_t w)
{
    char kind[48];
    int rc = 0;
    if (m->norm == NORM_NONE) return 0;
    snprintf(kind, sizeof kind, "%s.gamma", site);
    rc |= add_layer_tensor(m, prefix, row, kind, 1, w, TENSOR_CONST, 1.0);
    if (m->norm == NORM_LAYERNORM || m->norm == NORM_DYT) {
        snprintf(kind, sizeof kind, "%s.beta", site);
        rc |= add_layer_tensor(m, prefix, row, kind, 1, w, TENSOR_CONST, 0.0);
    }
    return rc;
}

/* DyT's α of a norm site: one learnable scalar, initialised to model.dyt_alpha. */
static int add_site_alpha(model_t *m, const char *prefix, int row, const char *site)
{
    char kind[48];
    if (m->norm != NORM_DYT) return 0;
    snprintf(kind, sizeof kind, "%s.alpha", site);
    return add_layer_tensor(m, prefix, row, kind, 1, 1, TENSOR_CONST, m->dyt_alpha);
}

/* A weight (rows, cols) or a bias (cols) of a sub-layer. */
static int add_branch_tensor(model_t *m, const char *prefix, int row, const char *kind,
                             size_t rows, size_t cols, double gain)
{
    char name[48];
    snprintf(name, sizeof name, "%s%s", prefix, kind);
    if (rows > 1) return tensors_add(&m->list, name, kind, rows, cols, 2, row, TENSOR_MATRIX, gain) < 0;
    return tensors_add(&m->list, name, kind, 1, cols, 1, row, TENSOR_CONST, 0.0) < 0;
}

/* The branch tensors of a sub-layer: attention's q, k, v, o or the FFN's W¹, W². */
static int add_branch(model_t *m, const char *prefix, int row, const sublayer_rule_t *r)
{
    const size_t C = (size_t)m->C, F = (size_t)m->F;
    int rc = 0;
    if (r->kind == SUB_FFN) {
        rc |= add_branch_tensor(m, prefix, row, FFN_KINDS[0], C, F, r->gain[GAIN_W1]);
        rc |= add_branch_tensor(m, prefix, row, FFN_KINDS[1], 1, F, 0.0);
        rc |= add_branch_tensor(m, prefix, row, FFN_KINDS[2], F, C, r->gain[GAIN_W2]);
        rc |= add_branch_tensor(m, prefix, row, FFN_KINDS[3], 1, C, 0.0);
        return rc;
    }
    const char *const *k = ATTN_KINDS[r->kind == SUB_CROSS_ATTN];
    const double gains[4] = {r->gain[GAIN_Q], r->gain[GAIN_K], r->gain[GAIN_V], r->gain[GAIN_O]};
    for (int j = 0; j < 4; j++) {
        rc |= add_branch_tensor(m, prefix, row, k[2 * j], C, C, gains[j]);
        rc |= add_branch_tensor(m, prefix, row, k[2 * j + 1], 1, C, 0.0);
    }
    return rc;
}

/* The tensors of layer l of stack st, in the canonical order of model/tensors.c: every
 * sub-layer's branch, the main norm sites' γ, β, their DyT α, the output and inner sites,
 * Admin's ω, ReZero's α. */
static int add_layer(model_t *m, const layer_stack_t *st, int l)
{
    const int row = st->first_row + l, n = st->nsub;
    char prefix[32], site[32];
    snprintf(prefix, sizeof prefix, "%s/%02d/", STACK_PREFIX[st->kind], l);
    int rc = 0;
    for (int i = 0; i < n; i++) rc |= add_branch(m, prefix, row, &stack_sublayer(st, l, i)->rule);
    for (int i = 0; i < n; i++) {
        const sublayer_t *sl = stack_sublayer(st, l, i);
        snprintf(site, sizeof site, "norm%d", i + 1);
        if (sl->norm.on) rc |= add_site_params(m, prefix, row, site, (size_t)m->C);
    }
    for (int i = 0; i < n; i++) {
        snprintf(site, sizeof site, "norm%d", i + 1);
        if (stack_sublayer(st, l, i)->norm.on) rc |= add_site_alpha(m, prefix, row, site);
    }
    for (int i = 0; i < n; i++) {
        snprintf(site, sizeof site, "norm%d_out", i + 1);
        if (!stack_sublayer(st, l, i)->norm_out.on) continue;
        rc |= add_site_params(m, prefix, row, site, (size_t)m->C);
        rc |= add_site_alpha(m, prefix, row, site);
    }
    for (int i = 0; i < n; i++) {
        const sublayer_t *sl = stack_sublayer(st, l, i);
        snprintf(site, sizeof site, "norm%d_inner", i + 1);
        if (!sl->inner.on) continue;
        rc |= add_site_params(m, prefix, row, site, sl->inner.width);
        rc |= add_site_alpha(m, prefix, row, site);
    }
    for (int i = 0; i < n; i++) {   // Admin's ω: 1 until the profiling pass sets it
        snprintf(site, sizeof site, "omega%d", i + 1);
        if (stack_sublayer(st, l, i)->rule.skip_param)
            rc |= add_layer_tensor(m, prefix, row, site, 1, (size_t)m->C, TENSOR_CONST, 1.0);
    }
    if (stack_sublayer(st, l, 0)->rule.gate_param)   // ReZero: α_l = 0 at init
        rc |= add_layer_tensor(m, prefix, row, "rezero_alpha", 1, 1, TENSOR_CONST, 0.0);
    return rc;
}

static int add_final_norm(model_t *m, const layer_stack_t *st)
{
    if (!st->final.on || m->norm == NORM_NONE) return 0;
    char name[48];
    snprintf(name, sizeof name, "%s.gamma", FINAL_NAME[st->kind]);
    int rc = tensors_add(&m->list, name, "", 1, (size_t)m->C, 1, -1, TENSOR_CONST, 1.0) < 0;
    if (m->norm == NORM_LAYERNORM || m->norm == NORM_DYT) {
        snprintf(name, sizeof name, "%s.beta", FINAL_NAME[st->kind]);
        rc |= tensors_add(&m->list, name, "", 1, (size_t)m->C, 1, -1, TENSOR_CONST, 0.0) < 0;
    }
    if (m->norm == NORM_DYT) {
        snprintf(name, sizeof name, "%s.alpha", FINAL_NAME[st->kind]);
        rc |= tensors_add(&m->list, name, "", 1, 1, 1, -1, TENSOR_CONST, m->dyt_alpha) < 0;
    }
    return rc;
}

static int build_tensor_list(model_t *m)
{
    const size_t C = (size_t)m->C, V = (size_t)m->V;
    int rc = tensors_add(&m->list, "tok_embed", "", V, C, 2, -1, TENSOR_EMBED, m->embed_scale) < 0;
    if (!m->tied) rc |= tensors_add(&m->list, "lm_head", "", C, V, 2, -1, TENSOR_EMBED, 1.0) < 0;
    for (int s = 0; s < m->nstacks && !rc; s++) {
        for (int l = 0; l < m->stack[s].L; l++) rc |= add_layer(m, &m->stack[s], l);
        rc |= add_final_norm(m, &m->stack[s]);
    }
    m->tensors = m->list.t;
    m->num_tensors = m->list.n;
    m->num_params = m->list.size;
    return rc;
}

/* Pointer into params (or grads) of the tensor named prefix+kind; NULL if absent. */
static double *view(const model_t *m, double *base, const char *prefix, const char *kind)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s", prefix, kind);
    const tensor_info_t *t = model_find_tensor(m, name);
    return t ? base + t->offset : NULL;
}

/* Point a norm site's γ, β, α (and gradients) at prefix + site + "gamma" etc. */
static void bind_site(const model_t *m, norm_site_t *n, const char *prefix, const char *site)
{
    static const char *const P[3] = {"gamma", "beta", "alpha"};
    double **params[3] = {&n->gamma, &n->beta, &n->alpha};
    double **grads[3] = {&n->dgamma, &n->dbeta, &n->dalpha};
    for (int k = 0; k < 3; k++) {
        char name[48];
        snprintf(name, sizeof name, "%s%s%s", prefix, site, P[k]);
        *params[k] = view(m, m->params, "", name);
        *grads[k] = view(m, m->grads, "", name);
    }
}

/* Point every sub-layer's and final norm's views at the params and grads buffers. */
static void bind_views(model_t *m)
{
    m->tok_embed = view(m, m->params, "", "tok_embed");
    m->gtok_embed = view(m, m->grads, "", "tok_embed");
    m->lm_head = view(m, m->params, "", "lm_head");
    m->glm_head = view(m, m->grads, "", "lm_head");
    for (int s = 0; s < m->nstacks; s++) {
        layer_stack_t *st = &m->stack[s];
        for (int l = 0; l < st->L; l++) {
            char prefix[32], name[32];
            snprintf(prefix, sizeof prefix, "%s/%02d/", STACK_PREFIX[st->kind], l);
            for (int i = 0; i < st->nsub; i++) {
                sublayer_t *sl = stack_sublayer(st, l, i);
                const char *const *k = sl->rule.kind == SUB_FFN ? FFN_KINDS
                                       : ATTN_KINDS[sl->rule.kind == SUB_CROSS_ATTN];
                const int nw = sl->rule.kind == SUB_FFN ? 2 : 4;
                for (int j = 0; j < nw; j++) {
                    sl->w[j] = view(m, m->params, prefix, k[2 * j]);
                    sl->gw[j] = view(m, m->grads, prefix, k[2 * j]);
                    sl->b[j] = view(m, m->params, prefix, k[2 * j + 1]);
                    sl->gb[j] = view(m, m->grads, prefix, k[2 * j + 1]);
                }
                static const char *const SITES[3] = {"norm%d.", "norm%d_out.", "norm%d_inner."};
                norm_site_t *sites[3] = {&sl->norm, &sl->norm_out, &sl->inner};
                for (int t = 0; t < 3; t++) {
                    char site[32];
                    snprintf(site, sizeof site, SITES[t], i + 1);
                    bind_site(m, sites[t], prefix, site);
                }
                snprintf(name, sizeof name, "omega%d", i + 1);
                sl->omega = view(m, m->params, prefix, name);
                sl->domega = view(m, m->grads, prefix, name);
                sl->gate = view(m, m->params, prefix, "rezero_alpha");
                sl->dgate = view(m, m->grads, prefix, "rezero_alpha");
            }
        }
        char site[32];
        snprintf(site, sizeof site, "%s.", FINAL_NAME[st->kind]);
        bind_site(m, &st->final, "", site);
    }
}

/* ---------------------------------------------------------------------------------------
 * Activations: the stacks' arenas, the output layer, the shared backward scratch.
 * ------------------------------------------------------------------------------------- */

static double *take(double *base, size_t *off, size_t n)
{
    double *p = base ? base + *off : NULL;
    *off += n;
    return p;
}

/* The largest batch of cfg when the caller gives none: B × seq_len (× src_len). */
static model_caps_t default_caps(const config_t *cfg)
{
    model_caps_t c = {cfg->data.batch, cfg->model.seq_len, config_src_len(cfg), 0, 0};
    c.tokens = (size_t)c.B * c.T;
    c.src_tokens = (size_t)c.B * c.S;
    return c;
}

/* Capacities of one stack's sub-layers: its rows, the rows of the memory it attends to, and
 * the largest attention matrix of either kind. */
static sublayer_caps_t stack_caps(const model_t *m, const model_caps_t *c, stack_kind_t kind)
{
    const size_t H = (size_t)m->H;
    sublayer_caps_t s;
    if (kind == STACK_ENC) {
        s.rows = c->src_tokens;
        s.key_rows = 0;
        s.att = H * c->src_tokens * (size_t)c->S;                 // B·H·S·S
    } else {
        s.rows = c->tokens;
        s.key_rows = c->src_tokens;
        s.att = H * c->tokens * (size_t)c->T;                     // B·H·T·T
        const size_t cross = H * c->tokens * (size_t)c->S;        // B·H·T·S
        if (kind == STACK_DEC && cross > s.att) s.att = cross;
    }
    return s;
}

/* Lay out everything (or count when the bases are NULL). */
static void layout(model_t *m, const model_caps_t *c, double *base, double *gbase)
{
    size_t n = 0, gn = 0;
    const int drop = m->dropout > 0.0;
    sublayer_caps_t widest = {0, 0, 0};
    for (int s = 0; s < m->nstacks; s++) {
        const sublayer_caps_t sc = stack_caps(m, c, m->stack[s].kind);
        stack_layout(&m->stack[s], &m->shape, &sc, drop, base, &n, gbase, &gn);
        if (sc.rows > widest.rows) widest.rows = sc.rows;
        if (sc.key_rows > widest.key_rows) widest.key_rows = sc.key_rows;
        if (sc.att > widest.att) widest.att = sc.att;
    }
    const size_t N = c->tokens, V = (size_t)m->V;
    m->logits = take(base, &n, N * V);
    m->probs = take(base, &n, N * V);
    m->losses = take(base, &n, N);
    m->dlogits = take(gbase, &gn, N * V);
    gn += sublayer_scratch_layout(&m->scratch, &m->shape, &widest, gbase ? gbase + gn : NULL);
    m->num_acts = n;
    m->num_dacts = gn;
}

/* The stacks of cfg and their sub-layers' rules (model/placement.c). */
static int make_stacks(model_t *m, const config_t *cfg)
{
    m->nstacks = m->arch == ARCH_ENCDEC ? 2 : 1;
    const stack_kind_t kinds[2] = {m->arch == ARCH_ENCDEC ? STACK_ENC : STACK_LM, STACK_DEC};
    int row = 0;
    for (int s = 0; s < m->nstacks; s++) {
        layer_stack_t *st = &m->stack[s];
        st->kind = kinds[s];
        st->L = s == 0 ? m->L : m->M;
        st->nsub = placement_sublayers(st->kind);
        st->first_row = row;
        row += st->L;
        st->final.on = placement_final_norm(cfg, st->kind);
        st->subs = calloc((size_t)st->L * st->nsub, sizeof *st->subs);
        st->dout_norm = calloc((size_t)st->L * st->nsub, sizeof(double));
        if (!st->subs || !st->dout_norm) return 1;
        for (int l = 0; l < st->L; l++) {
            sublayer_rule_t rules[PLACEMENT_MAX_SUB];
            placement_layer(cfg, st->kind, l, rules);
            for (int i = 0; i < st->nsub; i++) {
                sublayer_t *sl = stack_sublayer(st, l, i);
                sl->rule = rules[i];
                sl->layer = st->first_row + l;
                sl->index = i + 1;
                sl->norm.on = rules[i].norm_in || rules[i].norm_after;
                sl->norm.width = sl->norm_out.width = (size_t)m->C;
                sl->norm_out.on = rules[i].norm_out;
                sl->inner.on = rules[i].norm_inner;
                sl->inner.width = rules[i].kind == SUB_FFN ? (size_t)m->F : (size_t)m->C;
            }
        }
    }
    m->rows = row;
    return 0;
}

static void copy_dims(model_t *m, const config_t *cfg, const model_caps_t *c)
{
    m->arch = cfg->model.arch;
    m->L = cfg->model.layers;
    m->M = config_dec_layers(cfg);
    m->C = cfg->model.d_model;
    m->H = cfg->model.heads;
    m->Dh = m->C / m->H;
    m->F = cfg->model.d_ff;
    m->V = cfg->model.vocab;
    m->T = c->T;
    m->S = c->S;
    m->B = c->B;
    m->caps = *c;
    m->norm = cfg->model.norm;
    m->norm_eps = cfg->model.norm_eps;
    m->dyt_alpha = cfg->model.dyt_alpha;
    m->embed_scale = placement_embed_scale(cfg);
    m->dropout = cfg->model.dropout;
    m->label_smoothing = cfg->data.label_smoothing;
    m->causal = cfg->model.arch == ARCH_ENCDEC ? 1 : cfg->model.causal;   // the decoder is causal
    m->tied = cfg->model.tie_embeddings;
    m->final_norm = config_has_final_norm(cfg);
    m->shape = (sublayer_shape_t){m->C, m->F, m->H, m->norm, m->norm_eps, cfg->model.activation};
}

/* Sinusoidal positions (Vaswani et al. 2017 §3.5): PE[t][2i] = sin(t/10000^(2i/d)),
 * PE[t][2i+1] = cos(t/10000^(2i/d)); ‖PE[t]‖² = d/2. */
static void fill_positions(double *pe, int T, int C)
{
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < C; c++) {
            const int i2 = c & ~1;
            const double angle = t / pow(10000.0, (double)i2 / C);
            pe[(size_t)t * C + c] = (c & 1) ? cos(angle) : sin(angle);
        }
    }
}

model_t *model_create(const config_t *cfg, const model_caps_t *caps)
{
    const model_caps_t c = caps ? *caps : default_caps(cfg);
    model_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    copy_dims(m, cfg, &c);
    if (make_stacks(m, cfg) || build_tensor_list(m)) goto fail;
    m->params = calloc(m->num_params, sizeof(double));
    m->grads = calloc(m->num_params, sizeof(double));
    if (!m->params || !m->grads) goto fail;
    bind_views(m);
    layout(m, &c, NULL, NULL);
    const int P = m->T > m->S ? m->T : m->S;
    m->act_mem = calloc(m->num_acts, sizeof(double));
    m->dact_mem = calloc(m->num_dacts, sizeof(double));
    m->pe = calloc((size_t)P * m->C, sizeof(double));
    m->src_len = calloc((size_t)m->B + 1, sizeof(int));
    if (!m->act_mem || !m->dact_mem || !m->pe || !m->src_len) goto fail;
    layout(m, &c, m->act_mem, m->dact_mem);
    fill_positions(m->pe, P, m->C);
    return m;
fail:
    model_free(m);
    return NULL;
}

void model_free(model_t *m)
{
    if (!m) return;
    tensors_free(&m->list);
    for (int s = 0; s < 2; s++) {
        free(m->stack[s].subs);
        free(m->stack[s].dout_norm);
    }
    free(m->params);
    free(m->grads);
    free(m->act_mem);
    free(m->dact_mem);
    free(m->pe);
    free(m->src_len);
    free(m);
}

double model_memory_doubles(const config_t *cfg, const model_caps_t *caps)
{
    const model_caps_t c = caps ? *caps : default_caps(cfg);
    model_t m;
    memset(&m, 0, sizeof m);
    copy_dims(&m, cfg, &c);
    double total = 0.0;
    if (make_stacks(&m, cfg) == 0 && build_tensor_list(&m) == 0) {
        layout(&m, &c, NULL, NULL);
        const int P = m.T > m.S ? m.T : m.S;
        total = 2.0 * (double)m.num_params + (double)m.num_acts + (double)m.num_dacts +
                (double)P * m.C;
    }
    tensors_free(&m.list);
    for (int s = 0; s < 2; s++) {
        free(m.stack[s].subs);
        free(m.stack[s].dout_norm);
    }
    return total;
}

/* ---------------------------------------------------------------------------------------
 * Initialisation
 * ------------------------------------------------------------------------------------- */

/* A weight matrix: init.scheme scaled by gain (Xavier/Glorot: Var = 2/(fan_in + fan_out)). */
static void init_matrix(double *p, const tensor_info_t *t, const config_t *cfg, gsl_rng *rng)
{
    const size_t n = model_tensor_size(t);
    const double fan = (double)(t->rows + t->cols), gain = t->value;
    switch (cfg->init.scheme) {
    case INIT_XAVIER_NORMAL: {
        double sd = sqrt(2.0 / fan);
        if (gain != 1.0) sd *= gain;
        for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, sd);
        break;
    }
    case INIT_XAVIER_UNIFORM:
    case INIT_TFIXUP: {       // T-Fixup rescales fairseq's Xavier-uniform init (gains: placement.c)
        double a = sqrt(6.0 / fan);
        if (gain != 1.0) a *= gain;
        for (size_t j = 0; j < n; j++) p[j] = gsl_ran_flat(rng, -a, a);
        break;
    }
    case INIT_NORMAL: {
        const double sd = gain != 1.0 ? cfg->init.std * gain : cfg->init.std;
        for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, sd);
        break;
    }
    }
}

void model_init(model_t *m, const config_t *cfg, gsl_rng *rng)
{
    const double sd_embed = 1.0 / sqrt((double)m->C);
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        double *p = m->params + t->offset;
        const size_t n = model_tensor_size(t);
        switch (t->init) {
        case TENSOR_EMBED: {  // tok_embed, lm_head ~ N(0, 1/d) (fairseq; docs/design.md §5)
            const double sd = t->value != 1.0 ? sd_embed * t->value : sd_embed;   // T-Fixup
            for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, sd);
            break;
        }
        case TENSOR_MATRIX:
            init_matrix(p, t, cfg, rng);
            // the theory's W_Q = W_K = 0 (drawn first, so the other tensors do not change)
            if (cfg->init.zero_qk && (!strcmp(t->kind, "wq") || !strcmp(t->kind, "wk")))
                memset(p, 0, n * sizeof(double));
            break;
        case TENSOR_CONST:    // biases and β = 0, γ = 1
            for (size_t j = 0; j < n; j++) p[j] = t->value;
            break;
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

/* ---------------------------------------------------------------------------------------
 * Batches, dropout
 * ------------------------------------------------------------------------------------- */

/* ids (n) within [−1, V); else the first offender's index, else −1. */
static long first_bad_id(const int32_t *ids, size_t n, int V)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < -1 || ids[i] >= V) return (long)i;
    return -1;
}

int model_check_batch(const model_t *m, const batch_t *b, char *err, size_t errlen)
{
    const int encdec = m->arch == ARCH_ENCDEC;
    const model_caps_t *c = &m->caps;
    if (b->B < 1 || b->T < 1 || b->B > c->B || b->T > c->T ||
        (size_t)b->B * b->T > c->tokens || !b->tokens ||
        (encdec && (b->S < 1 || b->S > c->S || (size_t)b->B * b->S > c->src_tokens || !b->src))) {
        snprintf(err, errlen, "a batch of %d rows x %d tokens (source %d) does not fit the "
                 "model's capacity (%d rows, %d, %d; %zu and %zu tokens)", b->B, b->T, b->S,
                 c->B, c->T, c->S, c->tokens, c->src_tokens);
        return 2;
    }
    struct { const char *what; const int32_t *ids; size_t n; } sides[3] = {
        {"token", b->tokens, (size_t)b->B * b->T},
        {"target", b->targets, b->targets ? (size_t)b->B * b->T : 0},
        {"source token", encdec ? b->src : NULL, encdec ? (size_t)b->B * b->S : 0},
    };
    for (int k = 0; k < 3; k++) {
        const long i = sides[k].ids ? first_bad_id(sides[k].ids, sides[k].n, m->V) : -1;
        if (i >= 0) {
            snprintf(err, errlen, "%s %ld of the batch is %d, outside [-1, model.vocab = %d)",
                     sides[k].what, i, (int)sides[k].ids[i], m->V);
            return 2;
        }
    }
    for (int r = 0; encdec && r < b->B; r++)
        if (b->src[(size_t)r * b->S] < 0) {
            snprintf(err, errlen, "source row %d of the batch is empty", r);
            return 2;
        }
    return 0;
}

void model_draw_dropout(model_t *m, const batch_t *b, gsl_rng *rng)
{
    if (m->dropout <= 0.0) return;
    // order: the (encoder) stack's embedding, its sub-layers, then the decoder's
    for (int s = 0; s < m->nstacks; s++) {
        const int T = m->stack[s].kind == STACK_ENC ? b->S : b->T;
        stack_draw_dropout(&m->stack[s], (size_t)b->B * T, m->C, m->dropout, rng);
    }
}

void model_dropout_off(model_t *m)
{
    for (int s = 0; s < m->nstacks; s++) {
        const size_t rows = m->stack[s].kind == STACK_ENC ? m->caps.src_tokens
                                                          : m->caps.tokens;
        stack_masks_off(&m->stack[s], rows, m->C);
    }
}

/* ---------------------------------------------------------------------------------------
 * Forward and backward
 * ------------------------------------------------------------------------------------- */

/* The pass of each stack for batch b: the encoder's over the source, the lm's or the
 * decoder's over the tokens (the decoder attends to the encoder's output). */
static void make_passes(const model_t *m, const batch_t *b, sublayer_pass_t *pass)
{
    if (m->nstacks == 1) {
        pass[0] = (sublayer_pass_t){b->B, b->T, m->causal, NULL, NULL, 0, NULL};
        return;
    }
    pass[0] = (sublayer_pass_t){b->B, b->S, 0, m->src_len, NULL, 0, NULL};
    pass[1] = (sublayer_pass_t){b->B, b->T, 1, NULL, m->stack[0].output, b->S, m->src_len};
}

/* Non-padding source positions per row (right padding). */
static void source_lengths(model_t *m, const batch_t *b)
{
    for (int r = 0; r < b->B; r++) {
        int n = 0;
        while (n < b->S && b->src[(size_t)r * b->S + n] >= 0) n++;
        m->src_len[r] = n;
    }
}

double model_forward(model_t *m, const batch_t *b)
{
    const size_t N = (size_t)b->B * b->T, C = (size_t)m->C, V = (size_t)m->V;
    m->batch = *b;
    sublayer_pass_t pass[2];
    if (m->nstacks > 1) source_lengths(m, b);
    make_passes(m, b, pass);
    if (m->nstacks > 1)
        stack_forward(&m->stack[0], &m->shape, &pass[0], b->src, m->tok_embed, m->pe);
    layer_stack_t *out = &m->stack[m->nstacks - 1];
    stack_forward(out, &m->shape, &pass[m->nstacks - 1], b->tokens, m->tok_embed, m->pe);

    // logits (N,V) = x_final · W_embᵀ (tied) or x_final · lm_head
    if (m->tied)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)V, (int)C, 1.0,
                    out->output, (int)C, m->tok_embed, (int)C, 0.0, m->logits, (int)V);
    else
        linear_forward(m->logits, out->output, m->lm_head, NULL, N, C, V);
    m->loss = loss_forward(m->probs, m->losses, &m->num_targets, m->logits, b->targets, N, V,
                           m->label_smoothing);
    return m->loss;
}

int model_has_admin(const model_t *m)
{
    return m->stack[0].subs[0].omega != NULL;
}

void model_admin_profile(model_t *m, const batch_t *b)
{
    if (!model_has_admin(m)) return;
    sublayer_pass_t pass[2];
    if (m->nstacks > 1) source_lengths(m, b);
    make_passes(m, b, pass);
    if (m->nstacks > 1)
        stack_admin_profile(&m->stack[0], &m->shape, &pass[0], b->src, m->tok_embed, m->pe);
    stack_admin_profile(&m->stack[m->nstacks - 1], &m->shape, &pass[m->nstacks - 1], b->tokens,
                        m->tok_embed, m->pe);
}

void model_zero_grad(model_t *m)
{
    memset(m->grads, 0, m->num_params * sizeof(double));
}

void model_backward(model_t *m)
{
    const batch_t *b = &m->batch;
    const size_t N = (size_t)b->B * b->T, C = (size_t)m->C, V = (size_t)m->V;
    layer_stack_t *out = &m->stack[m->nstacks - 1];
    sublayer_pass_t pass[2];
    make_passes(m, b, pass);

    // dlogits (N,V) = (p − q)/count
    loss_backward(m->dlogits, m->probs, b->targets, N, V, m->label_smoothing, m->num_targets);
    memset(out->dfinal, 0, N * C * sizeof(double));
    if (m->tied) {
        // dfinal (N,C) += dlogits (N,V) · W_emb (V,C);  dW_emb (V,C) += dlogitsᵀ · final
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)C, (int)V, 1.0,
                    m->dlogits, (int)V, m->tok_embed, (int)C, 1.0, out->dfinal, (int)C);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)V, (int)C, (int)N, 1.0,
                    m->dlogits, (int)V, out->output, (int)C, 1.0, m->gtok_embed, (int)C);
    } else {
        linear_backward(out->dfinal, m->glm_head, NULL, m->dlogits, out->output, m->lm_head,
                        N, C, V);
    }
    if (m->nstacks > 1) {
        // the cross-attentions of every decoder layer add ∂L/∂mem into the encoder's dfinal
        layer_stack_t *enc = &m->stack[0];
        memset(enc->dfinal, 0, (size_t)b->B * b->S * C * sizeof(double));
        stack_backward(out, &m->shape, &pass[1], b->tokens, enc->dfinal, m->gtok_embed,
                       &m->scratch);
        stack_backward(enc, &m->shape, &pass[0], b->src, NULL, m->gtok_embed, &m->scratch);
    } else {
        stack_backward(out, &m->shape, &pass[0], b->tokens, NULL, m->gtok_embed, &m->scratch);
    }
}

/* ---------------------------------------------------------------------------------------
 * Lookups
 * ------------------------------------------------------------------------------------- */

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

const layer_stack_t *model_output_stack(const model_t *m)
{
    return &m->stack[m->nstacks - 1];
}

const layer_stack_t *model_row_stack(const model_t *m, int r, int *layer)
{
    for (int s = m->nstacks - 1; s >= 0; s--)
        if (r >= m->stack[s].first_row) {
            *layer = r - m->stack[s].first_row;
            return &m->stack[s];
        }
    *layer = r;
    return &m->stack[0];
}
