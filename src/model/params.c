/* params.c — the parameter layout of a model (one buffer, tensors in a fixed order,
 * docs/design.md §5, §6b, §6c), the views sub-layers take into it, and the initialisation. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "model/params.h"

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

int params_build(model_t *m)
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
void params_bind(model_t *m)
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

