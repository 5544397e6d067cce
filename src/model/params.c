/* params.c — the parameter layout of a model (one buffer, tensors in a fixed order,
 * docs/design.md §5, §6b, §6c), the views sub-layers take into it, and the initialisation. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "model/params.h"

/* ---------------------------------------------------------------------------------------
 * Parameter layout: one buffer, tensors in a fixed order (docs/design.md §5, §6b):
 * tok_embed, [lm_head], then per stack its layers (canonical order inside a layer,
 * model/tensors.h) and [its final norm].
 * ------------------------------------------------------------------------------------- */

/* A tensor of a layer named prefix + kind, kind a column name of the registry (model/tensors.h). */
static int add_layer_tensor(model_t *m, const char *prefix, int row, const char *kind,
                            size_t rows, size_t cols, tensor_init_t init, double value)
{
    char name[96];
    snprintf(name, sizeof name, "%s%s", prefix, kind);
    return tensors_add(&m->list, name, kind, rows, cols, rows > 1 ? 2 : 1, row, init, value) < 0;
}

/* γ (and β: LayerNorm, DyT) of norm site `site` (model/tensors.h) of sub-layer K, width w. */
static int add_site_params(model_t *m, const char *prefix, int row, int site, int K, size_t w)
{
    int rc = 0;
    if (m->norm == NORM_NONE) return 0;
    rc |= add_layer_tensor(m, prefix, row, tensors_site_param(site, K, 0), 1, w, TENSOR_CONST, 1.0);
    if (m->norm == NORM_LAYERNORM || m->norm == NORM_DYT)
        rc |= add_layer_tensor(m, prefix, row, tensors_site_param(site, K, 1), 1, w, TENSOR_CONST,
                               0.0);
    return rc;
}

/* DyT's α of a norm site: one learnable scalar, initialised to model.dyt_alpha. */
static int add_site_alpha(model_t *m, const char *prefix, int row, int site, int K)
{
    if (m->norm != NORM_DYT) return 0;
    return add_layer_tensor(m, prefix, row, tensors_site_param(site, K, 2), 1, 1, TENSOR_CONST,
                            m->dyt_alpha);
}

/* The branch tensors of a sub-layer, weight (gain) then bias (0; none with model.bias = off):
 * attention's q, k, v, o or the FFN's W¹ (C,F), W² (F,C), and SwiGLU's W³ (C,F) after them
 * (docs/design.md §6i). */
static int add_branch(model_t *m, const char *prefix, int row, const sublayer_rule_t *r)
{
    const size_t C = (size_t)m->C, F = (size_t)m->F;
    int n, rc = 0;
    const char *const *k = tensors_branch_names(r->kind, &n);
    const int ffn = r->kind == SUB_FFN;
    const double attn_gains[4] = {r->gain[GAIN_Q], r->gain[GAIN_K], r->gain[GAIN_V], r->gain[GAIN_O]};
    const double ffn_gains[2] = {r->gain[GAIN_W1], r->gain[GAIN_W2]};
    for (int j = 0; j < n / 2; j++) {
        const size_t in = ffn && j == 1 ? F : C, out = ffn && j == 0 ? F : C;
        rc |= add_layer_tensor(m, prefix, row, k[2 * j], in, out, TENSOR_MATRIX,
                               ffn ? ffn_gains[j] : attn_gains[j]);
        if (m->bias) rc |= add_layer_tensor(m, prefix, row, k[2 * j + 1], 1, out, TENSOR_CONST, 0.0);
    }
    if (ffn && m->shape.act == ACT_SWIGLU) {
        rc |= add_layer_tensor(m, prefix, row, tensors_glu_name(0), C, F, TENSOR_MATRIX,
                               r->gain[GAIN_W3]);
        if (m->bias) rc |= add_layer_tensor(m, prefix, row, tensors_glu_name(1), 1, F, TENSOR_CONST, 0.0);
    }
    return rc;
}

static int add_qk_norm(model_t *m, const char *prefix, int row, const sublayer_rule_t *r);

/* The tensors of layer l of stack st, in the canonical order of model/tensors.c: every
 * sub-layer's branch, the main norm sites' γ, β, their DyT α, the output and inner sites, the
 * schemes' own parameters (SUBLAYER_PARAMS: Admin's ω, ReZero's α, …). */
static int add_layer(model_t *m, const layer_stack_t *st, int l)
{
    const int row = st->first_row + l, n = st->nsub;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s/%02d/", tensors_stack_prefix(st->kind), l);
    int rc = 0;
    for (int i = 0; i < n; i++) rc |= add_branch(m, prefix, row, &stack_sublayer(st, l, i)->rule);
    for (int i = 0; i < n; i++)
        if (stack_sublayer(st, l, i)->norm.on)
            rc |= add_site_params(m, prefix, row, 0, i + 1, (size_t)m->C);
    for (int i = 0; i < n; i++)
        if (stack_sublayer(st, l, i)->norm.on) rc |= add_site_alpha(m, prefix, row, 0, i + 1);
    for (int i = 0; i < n; i++) {
        if (!stack_sublayer(st, l, i)->norm_out.on) continue;
        rc |= add_site_params(m, prefix, row, 1, i + 1, (size_t)m->C);
        rc |= add_site_alpha(m, prefix, row, 1, i + 1);
    }
    for (int i = 0; i < n; i++) {
        const sublayer_t *sl = stack_sublayer(st, l, i);
        if (!sl->inner.on) continue;
        rc |= add_site_params(m, prefix, row, 2, i + 1, sl->inner.width);
        rc |= add_site_alpha(m, prefix, row, 2, i + 1);
    }
    for (int p = 0; p < SUBLAYER_NPARAMS; p++) {   // the schemes' own: ω, ReZero's α, …
        const sublayer_param_t *sp = &SUBLAYER_PARAMS[p];
        const size_t w = sp->width == SP_WIDTH_C ? (size_t)m->C
                         : sp->width == SP_WIDTH_HEADS ? (size_t)m->H : 1;
        for (int i = 0; i < (sp->per_layer ? 1 : n); i++)
            if (sublayer_param_on(sp, &stack_sublayer(st, l, i)->rule))
                rc |= add_layer_tensor(m, prefix, row, sp->name(i + 1), 1, w, TENSOR_CONST,
                                       sp->init);
    }
    for (int i = 0; i < n; i++) rc |= add_qk_norm(m, prefix, row, &stack_sublayer(st, l, i)->rule);
    return rc;
}

/* QK-norm's γ (1) and β (0, LayerNorm) of width d_head for q and for k of an attention
 * sub-layer (docs/design.md §6g): qnorm.*, knorm.*, or cqnorm.*, cknorm.* for cross-attention. */
static int add_qk_norm(model_t *m, const char *prefix, int row, const sublayer_rule_t *r)
{
    if (m->shape.qk_norm == NORM_NONE || r->kind == SUB_FFN) return 0;
    const int cross = r->kind == SUB_CROSS_ATTN, nq = m->shape.qk_norm == NORM_LAYERNORM ? 2 : 1;
    int rc = 0;
    for (int key = 0; key < 2; key++)
        for (int q = 0; q < nq; q++)
            rc |= add_layer_tensor(m, prefix, row, tensors_qk_name(cross, key, q), 1,
                                   (size_t)m->Dh, TENSOR_CONST, q == 0 ? 1.0 : 0.0);
    return rc;
}

/* A stack's final norm: FINAL.gamma (and .beta: LayerNorm, DyT; DyT's .alpha), no layer row. */
static int add_final_norm(model_t *m, const layer_stack_t *st)
{
    if (!st->final.on || m->norm == NORM_NONE) return 0;
    const int nq = m->norm == NORM_DYT ? 3 : m->norm == NORM_LAYERNORM ? 2 : 1;
    const size_t width[3] = {(size_t)m->C, (size_t)m->C, 1};
    const double value[3] = {1.0, 0.0, m->dyt_alpha};
    int rc = 0;
    for (int q = 0; q < nq; q++) {
        char name[48];
        snprintf(name, sizeof name, "%s.%s", tensors_final_norm_name(st->kind),
                 tensors_param_suffix(q));
        rc |= tensors_add(&m->list, name, "", 1, width[q], 1, -1, TENSOR_CONST, value[q]) < 0;
    }
    return rc;
}

int params_build(model_t *m)
{
    const size_t C = (size_t)m->C, V = (size_t)m->V;
    int rc = tensors_add(&m->list, tensors_embed_name(), "", V, C, 2, -1, TENSOR_EMBED,
                         m->embed_scale) < 0;
    if (!m->tied)
        rc |= tensors_add(&m->list, tensors_head_name(), "", C, V, 2, -1, TENSOR_EMBED, 1.0) < 0;
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
static real *view(const model_t *m, real *base, const char *prefix, const char *kind)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s", prefix, kind);
    const tensor_info_t *t = model_find_tensor(m, name);
    return t ? base + t->offset : NULL;
}

/* Point a norm site's γ, β, α (and gradients) at the tensors prefix + name[q]; NULL where absent. */
static void bind_site(const model_t *m, norm_site_t *n, const char *prefix, const char *const name[3])
{
    real **params[3] = {&n->gamma, &n->beta, &n->alpha};
    real **grads[3] = {&n->dgamma, &n->dbeta, &n->dalpha};
    for (int q = 0; q < 3; q++) {
        *params[q] = view(m, m->params, prefix, name[q]);
        *grads[q] = view(m, m->grads, prefix, name[q]);
    }
}

/* Sub-layer sl (the K-th of its layer, names prefix + column): its weights, biases, norm sites
 * and the schemes' own parameters. */
static void bind_sublayer(model_t *m, sublayer_t *sl, const char *prefix, int K)
{
    int n;
    const char *const *k = tensors_branch_names(sl->rule.kind, &n);
    for (int j = 0; j < n / 2; j++) {
        sl->w[j] = view(m, m->params, prefix, k[2 * j]);
        sl->gw[j] = view(m, m->grads, prefix, k[2 * j]);
        sl->b[j] = view(m, m->params, prefix, k[2 * j + 1]);
        sl->gb[j] = view(m, m->grads, prefix, k[2 * j + 1]);
    }
    if (sl->rule.kind == SUB_FFN) {   // SwiGLU's W³, b³ (NULL where absent)
        sl->w[2] = view(m, m->params, prefix, tensors_glu_name(0));
        sl->gw[2] = view(m, m->grads, prefix, tensors_glu_name(0));
        sl->b[2] = view(m, m->params, prefix, tensors_glu_name(1));
        sl->gb[2] = view(m, m->grads, prefix, tensors_glu_name(1));
    }
    norm_site_t *sites[3] = {&sl->norm, &sl->norm_out, &sl->inner};
    for (int t = 0; t < 3; t++) {
        const char *names[3] = {tensors_site_param(t, K, 0), tensors_site_param(t, K, 1),
                                tensors_site_param(t, K, 2)};
        bind_site(m, sites[t], prefix, names);
    }
    for (int p = 0; p < SUBLAYER_NPARAMS; p++) {   // NULL where the rule has none
        const sublayer_param_t *sp = &SUBLAYER_PARAMS[p];
        *sublayer_param_view(sp, sl, 0) = view(m, m->params, prefix, sp->name(K));
        *sublayer_param_view(sp, sl, 1) = view(m, m->grads, prefix, sp->name(K));
    }
    qk_site_t *qk[2] = {&sl->qn, &sl->kn};   // QK-norm's γ, β (NULL where absent)
    for (int key = 0; key < 2 && sl->rule.kind != SUB_FFN; key++) {
        const int cross = sl->rule.kind == SUB_CROSS_ATTN;
        qk[key]->gamma = view(m, m->params, prefix, tensors_qk_name(cross, key, 0));
        qk[key]->dgamma = view(m, m->grads, prefix, tensors_qk_name(cross, key, 0));
        qk[key]->beta = view(m, m->params, prefix, tensors_qk_name(cross, key, 1));
        qk[key]->dbeta = view(m, m->grads, prefix, tensors_qk_name(cross, key, 1));
    }
}

/* Point every sub-layer's and final norm's views at the params and grads buffers. */
void params_bind(model_t *m)
{
    m->tok_embed = view(m, m->params, "", tensors_embed_name());
    m->gtok_embed = view(m, m->grads, "", tensors_embed_name());
    m->lm_head = view(m, m->params, "", tensors_head_name());
    m->glm_head = view(m, m->grads, "", tensors_head_name());
    for (int s = 0; s < m->nstacks; s++) {
        layer_stack_t *st = &m->stack[s];
        for (int l = 0; l < st->L; l++) {
            char prefix[32];
            snprintf(prefix, sizeof prefix, "%s/%02d/", tensors_stack_prefix(st->kind), l);
            for (int i = 0; i < st->nsub; i++) bind_sublayer(m, stack_sublayer(st, l, i), prefix, i + 1);
        }
        char finals[3][48];
        const char *names[3];
        for (int q = 0; q < 3; q++) {
            snprintf(finals[q], sizeof finals[q], "%s.%s", tensors_final_norm_name(st->kind),
                     tensors_param_suffix(q));
            names[q] = finals[q];
        }
        bind_site(m, &st->final, "", names);
    }
}

/* ---------------------------------------------------------------------------------------
 * Initialisation
 * ------------------------------------------------------------------------------------- */

/* A weight matrix: init.scheme scaled by gain (Xavier/Glorot: Var = 2/(fan_in + fan_out)).
 * μP (docs/design.md §6h; Yang et al. 2022, Table 3): Var = gain²/fan_in in the scheme's
 * distribution (normal: (gain·std)²·base_width/d, std being the base width's). At d = base_width
 * a square matrix gets the standard draw bit for bit (2/(2d) and 1/d round alike); W¹, W² differ
 * from Xavier's when d_ff ≠ d. */
static void init_matrix(real *p, const tensor_info_t *t, const config_t *cfg, double mup_ratio,
                        gsl_rng *rng)
{
    const size_t n = model_tensor_size(t);
    const double fan = (double)(t->rows + t->cols), gain = t->value;
    const int mup = mup_ratio > 0.0;
    switch (cfg->init.scheme) {
    case INIT_XAVIER_NORMAL: {
        double sd = mup ? sqrt(1.0 / (double)t->rows) : sqrt(2.0 / fan);
        if (gain != 1.0) sd *= gain;
        for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, sd);
        break;
    }
    case INIT_XAVIER_UNIFORM:
    case INIT_TFIXUP: {       // T-Fixup rescales fairseq's Xavier-uniform init (gains: placement.c)
        double a = mup ? sqrt(3.0 / (double)t->rows) : sqrt(6.0 / fan);
        if (gain != 1.0) a *= gain;
        for (size_t j = 0; j < n; j++) p[j] = gsl_ran_flat(rng, -a, a);
        break;
    }
    case INIT_NORMAL: {
        double sd = gain != 1.0 ? cfg->init.std * gain : cfg->init.std;
        if (mup) sd *= sqrt(mup_ratio);
        for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, sd);
        break;
    }
    }
}

/* Whether t is the untied readout under μP's Table 3 away from the base width: its draw's
 * variance is divided by r = base_width/d, so that with the logits' multiplier r the effective
 * readout r·W has Var r/d = base_width/d² ∝ 1/fan_in² (Yang et al. 2022, Table 3, output
 * weights; docs/design.md §6h). At r = 1 the draw is the standard one, bit for bit. */
static int readout_table3(const model_t *m, const tensor_info_t *t)
{
    return m->mup_table3 && m->mup_ratio != 1.0 && !strcmp(t->name, "lm_head");
}

/* An embedding matrix (tok_embed, lm_head): N(0, 1/d) (fairseq; docs/design.md §5) or, with
 * init.embed = xavier_uniform, U(±√(6/(rows + cols))) (PyTorch's xavier_uniform_, as the
 * curvature anchor draws it, docs/design.md §5); times T-Fixup's scale when not 1. */
static void init_embed(real *p, const tensor_info_t *t, const model_t *m, const config_t *cfg,
                       gsl_rng *rng)
{
    const size_t n = model_tensor_size(t);
    if (cfg->init.embed == EMBED_XAVIER_UNIFORM) {
        double a = sqrt(6.0 / (double)(t->rows + t->cols));
        if (t->value != 1.0) a *= t->value;
        if (readout_table3(m, t)) a /= sqrt(m->mup_ratio);
        for (size_t j = 0; j < n; j++) p[j] = gsl_ran_flat(rng, -a, a);
        return;
    }
    const double sd_embed = 1.0 / sqrt((double)m->C);
    double sd = t->value != 1.0 ? sd_embed * t->value : sd_embed;   // T-Fixup
    if (readout_table3(m, t)) sd /= sqrt(m->mup_ratio);
    for (size_t j = 0; j < n; j++) p[j] = gsl_ran_gaussian(rng, sd);
}

void model_init(model_t *m, const config_t *cfg, gsl_rng *rng)
{
    int nb;
    const char *const *q_k = tensors_branch_names(SUB_SELF_ATTN, &nb);
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        real *p = m->params + t->offset;
        const size_t n = model_tensor_size(t);
        switch (t->init) {
        case TENSOR_EMBED:
            init_embed(p, t, m, cfg, rng);
            break;
        case TENSOR_MATRIX:
            init_matrix(p, t, cfg, m->mup_ratio, rng);
            // the theory's W_Q = W_K = 0 (drawn first, so the other tensors do not change)
            // the self-attention's W_Q, W_K: the first and third of its branch tensors
            if (cfg->init.zero_qk && (!strcmp(t->kind, q_k[0]) || !strcmp(t->kind, q_k[2])))
                memset(p, 0, n * sizeof(real));
            break;
        case TENSOR_CONST:    // biases and β = 0, γ = 1
            for (size_t j = 0; j < n; j++) p[j] = t->value;
            break;
        }
    }
}

double model_lr_scale(const model_t *m, const tensor_info_t *t)
{
    // μP (Yang et al. 2022, Table 3, Adam): hidden weights' lr ∝ 1/fan_in, i.e. × base_width/d
    // (every fan_in of a matrix is d or d_ff ∝ d); norms, biases, gains and lm_head keep theirs
    if (m->mup_ratio <= 0.0) return 1.0;
    if (t->init == TENSOR_MATRIX) return m->mup_ratio;
    // Table 3, input weights: Θ(1) change of the input's coordinates. tok_embed enters as
    // √d·E (§5), so Adam's step on E is taken at lr·√r: √d·lr·√(base/d) = √base·lr (§6h)
    if (m->mup_table3 && !strcmp(t->name, "tok_embed")) return sqrt(m->mup_ratio);
    return 1.0;
}

void model_perturb(model_t *m, gsl_rng *rng, double scale)
{
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->rank != 1) continue;
        real *p = m->params + t->offset;
        for (size_t j = 0; j < model_tensor_size(t); j++) p[j] += gsl_ran_gaussian(rng, scale);
    }
}

