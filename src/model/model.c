/* model.c — the model as one or two stacks of sub-layers over one parameter buffer; the
 * output layer and the loss (Xiong et al. 2020 §3; docs/design.md §1, §5, §6b). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "model/model.h"
#include "model/params.h"
#include "model/placement.h"
#include "nn/gemm.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/rope.h"
#include "util/arena.h"

/* Models up to this many layers are counted by laying them out; deeper ones by arithmetic. */
enum { MEMORY_EXACT_LAYERS = 64 };

/* ---------------------------------------------------------------------------------------
 * Activations: the stacks' arenas, the output layer, the shared backward scratch.
 * ------------------------------------------------------------------------------------- */


/* The largest batch of cfg when the caller gives none: B × seq_len (× src_len). */
static batch_caps_t default_caps(const config_t *cfg)
{
    batch_caps_t c = {cfg->data.batch, cfg->model.seq_len, config_src_len(cfg), 0, 0};
    c.tokens = (size_t)c.B * c.T;
    c.src_tokens = (size_t)c.B * c.S;
    return c;
}

/* Capacities of one stack's sub-layers: its rows, the rows of the memory it attends to, and
 * the largest attention matrix of either kind. */
static sublayer_caps_t stack_caps(const model_t *m, const batch_caps_t *c, stack_kind_t kind)
{
    const size_t H = (size_t)m->H;
    sublayer_caps_t s;
    s.att_pairs = H * (size_t)c->B;
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
static void layout(model_t *m, const batch_caps_t *c, real *base, real *gbase)
{
    size_t n = 0, gn = 0;
    const int drop = m->dropout > 0.0;
    sublayer_caps_t widest = {0, 0, 0, 0};
    for (int s = 0; s < m->nstacks; s++) {
        const sublayer_caps_t sc = stack_caps(m, c, m->stack[s].kind);
        stack_layout(&m->stack[s], &m->shape, &sc, drop, base, &n, gbase, &gn);
        if (sc.rows > widest.rows) widest.rows = sc.rows;
        if (sc.key_rows > widest.key_rows) widest.key_rows = sc.key_rows;
        if (sc.att > widest.att) widest.att = sc.att;
    }
    const size_t N = c->tokens, V = (size_t)m->V;
    m->logits = arena_take(base, &n, N * V);
    m->probs = arena_take(base, &n, N * V);
    m->losses = arena_take(base, &n, N);
    m->lse = arena_take(base, &n, N);
    m->logit_absmax = arena_take(base, &n, N);
    m->dlogits = arena_take(gbase, &gn, N * V);
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
        st->dout_norm = calloc((size_t)st->L * st->nsub, sizeof(real));
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

static void copy_dims(model_t *m, const config_t *cfg, const batch_caps_t *c)
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
    // μP (Yang et al. 2022; docs/design.md §6h): logits × base_width/d, attention q·k/d_head
    // Table 3 tied: the readout is tok_embed (Var 1/d), so √r gives it Var r/d ∝ 1/d² (§6h)
    const int mup = config_is_mup(cfg) && cfg->init.base_width > 0;
    m->mup_ratio = mup ? (double)cfg->init.base_width / (double)m->C : 0.0;
    m->mup_table3 = mup && cfg->init.parametrization == PARAM_MUP_TABLE3;
    m->logit_scale = !mup ? 1.0 : m->mup_table3 && m->tied ? sqrt(m->mup_ratio) : m->mup_ratio;
    m->bias = cfg->model.bias;
    m->positions = cfg->model.positions;
    m->shape = (sublayer_shape_t){.C = m->C, .F = m->F, .H = m->H, .norm = m->norm,
                                  .eps = m->norm_eps, .act = cfg->model.activation,
                                  .qk_norm = NORM_NONE, .softcap = cfg->model.attn_softcap,
                                  .rope = m->positions == POS_ROPE,
                                  .attn_scale = mup ? 1.0 / m->Dh : 0.0,
                                  .round_bias = config_lowp(cfg) && cfg->train.round_attn_probs};
    if (cfg->model.qk_norm != QK_NORM_OFF)
        m->shape.qk_norm = cfg->model.qk_norm == QK_NORM_RMSNORM ? NORM_RMSNORM : NORM_LAYERNORM;
    m->z_loss = cfg->train.z_loss;
}

/* Reals of the position tables for P positions: sinusoidal PE (P,C), or rope's cosines and
 * sines (P,Dh/2) each, or none. */
static size_t position_reals(const model_t *m, int P)
{
    if (m->positions == POS_SINUSOIDAL) return (size_t)P * m->C;
    return m->positions == POS_ROPE ? (size_t)P * m->Dh : 0;
}

/* Sinusoidal positions (Vaswani et al. 2017 §3.5): PE[t][2i] = sin(t/10000^(2i/d)),
 * PE[t][2i+1] = cos(t/10000^(2i/d)); ‖PE[t]‖² = d/2. */
static void fill_positions(real *pe, int T, int C)
{
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < C; c++) {
            const int i2 = c & ~1;
            const double angle = t / pow(10000.0, (double)i2 / C);
            pe[(size_t)t * C + c] = (c & 1) ? cos(angle) : sin(angle);
        }
    }
}

model_t *model_create(const config_t *cfg, const batch_caps_t *caps)
{
    const batch_caps_t c = caps ? *caps : default_caps(cfg);
    model_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    copy_dims(m, cfg, &c);
    if (make_stacks(m, cfg) || params_build(m)) goto fail;
    m->params = calloc(m->num_params, sizeof(real));
    m->grads = calloc(m->num_params, sizeof(real));
    if (!m->params || !m->grads) goto fail;
    params_bind(m);
    layout(m, &c, NULL, NULL);
    const int P = m->T > m->S ? m->T : m->S;
    m->act_mem = calloc(m->num_acts, sizeof(real));
    m->dact_mem = calloc(m->num_dacts, sizeof(real));
    const size_t npos = position_reals(m, P);
    real *pos = npos ? calloc(npos, sizeof(real)) : NULL;
    m->src_len = calloc((size_t)m->B + 1, sizeof(int));
    m->tgt_len = calloc((size_t)m->B + 1, sizeof(int));
    if (!m->act_mem || !m->dact_mem || (npos && !pos) || !m->src_len || !m->tgt_len) {
        free(pos);
        goto fail;
    }
    layout(m, &c, m->act_mem, m->dact_mem);
    if (m->positions == POS_SINUSOIDAL) {   // added to the input (stack.h)
        m->pe = pos;
        fill_positions(m->pe, P, m->C);
    } else if (m->positions == POS_ROPE) {   // turned into q and k (nn/rope.h), base 10 000
        m->rope_cos = pos;
        m->rope_sin = pos + (size_t)P * (m->Dh / 2);
        rope_tables(m->rope_cos, m->rope_sin, P, m->Dh, 10000.0);
        m->shape.rope_cos = m->rope_cos;
        m->shape.rope_sin = m->rope_sin;
    }
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
    free(m->rope_cos);   // one block with rope_sin
    free(m->src_len);
    free(m->tgt_len);
    free(m);
}

/* Elements of cfg's model at batch c, counted by laying out its registry and arenas (no
 * tensor allocated; the registry and the sub-layer tables are, ~3.4 KB per layer). */
static double count_doubles(const config_t *cfg, const batch_caps_t *c)
{
    model_t m;
    memset(&m, 0, sizeof m);
    copy_dims(&m, cfg, c);
    double total = 0.0;
    if (make_stacks(&m, cfg) == 0 && params_build(&m) == 0) {
        layout(&m, c, NULL, NULL);
        const int P = m.T > m.S ? m.T : m.S;
        total = 2.0 * (double)m.num_params + (double)m.num_acts + (double)m.num_dacts +
                (double)position_reals(&m, P);
    }
    tensors_free(&m.list);
    for (int s = 0; s < 2; s++) {
        free(m.stack[s].subs);
        free(m.stack[s].dout_norm);
    }
    return total;
}

/* count_doubles of cfg with L encoder (or lm) layers and M decoder layers, MixLN's layers all
 * Pre-LN (post = 0) or all Post-LN (post = 1). */
static double count_small(const config_t *cfg, const batch_caps_t *c, int L, int M, int post)
{
    config_t k = *cfg;
    k.model.layers = L;
    if (k.model.arch == ARCH_ENCDEC) k.model.dec_layers = M;
    k.model.mix_ratio = post;   // ⌊1·L⌋ = L layers Post-LN, ⌊0·L⌋ = none (placement.c)
    return count_doubles(&k, c);
}

double model_memory_doubles(const config_t *cfg, const batch_caps_t *caps)
{
    const batch_caps_t c = caps ? *caps : default_caps(cfg);
    const int encdec = cfg->model.arch == ARCH_ENCDEC;
    const double L = cfg->model.layers, M = config_dec_layers(cfg);
    if (L + M <= MEMORY_EXACT_LAYERS) return count_doubles(cfg, &c);
    // Arithmetic, so that a model too large for the machine is refused before its registry is
    // built: a layer's elements depend on its sub-layers' rules only, which are one per stack
    // but for MixLN (Post-LN below ⌊mix_ratio·L⌋, Pre-LN above; docs/design.md §6c), so the
    // count is affine in each stack's layers of each kind, from models of one and two layers.
    const int mix = cfg->model.placement == PLACEMENT_MIXLN;
    const double P[2] = {mix ? placement_mix_post_layers(cfg, encdec ? STACK_ENC : STACK_LM) : 0,
                         mix && encdec ? placement_mix_post_layers(cfg, STACK_DEC) : 0};
    const int m1 = encdec ? 1 : 0;
    const double base = count_small(cfg, &c, 1, m1, 0);
    double total = base;
    for (int post = 0; post < 1 + mix; post++) {
        const double one = post ? count_small(cfg, &c, 1, m1, 1) : base;
        const double per_enc = count_small(cfg, &c, 2, m1, post) - one;
        const double per_dec = encdec ? count_small(cfg, &c, 1, 2, post) - one : 0.0;
        // layers of this kind beyond those in base (one Pre-LN layer of each stack)
        const double n_enc = post ? P[0] : L - P[0] - 1, n_dec = post ? P[1] : M - P[1] - m1;
        total += n_enc * per_enc + n_dec * per_dec;
    }
    return total;
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
    const batch_caps_t *c = &m->caps;
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
        pass[0] = (sublayer_pass_t){b->B, b->T, m->causal, NULL, NULL, 0, NULL, NULL};
        return;
    }
    pass[0] = (sublayer_pass_t){b->B, b->S, 0, m->src_len, NULL, 0, NULL, m->src_len};
    pass[1] = (sublayer_pass_t){b->B, b->T, 1, NULL, m->stack[0].output, b->S, m->src_len,
                                m->tgt_len};
}

/* Non-padding source (and decoder input) positions per row (right padding). */
static void source_lengths(model_t *m, const batch_t *b)
{
    for (int r = 0; r < b->B; r++) {
        int n = 0;
        while (n < b->S && b->src[(size_t)r * b->S + n] >= 0) n++;
        m->src_len[r] = n;
        n = 0;
        while (n < b->T && b->tokens[(size_t)r * b->T + n] >= 0) n++;
        m->tgt_len[r] = n;
    }
}

/* x (n) ×= s, μP's output multiplier (docs/design.md §6h); nothing when s = 1. */
static void scale_logits(real *x, size_t n, double s)
{
    if (s == 1.0) return;
    for (size_t i = 0; i < n; i++) x[i] *= s;
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
        gemm(0, 1, (int)N, (int)V, (int)C, 1.0, out->output, (int)C, m->tok_embed, (int)C, 0.0,
             m->logits, (int)V);
    else
        linear_forward(m->logits, out->output, m->lm_head, NULL, N, C, V);
    scale_logits(m->logits, N * V, m->logit_scale);
    m->loss = loss_forward_opt(m->probs, m->losses, &m->num_targets, m->logits, b->targets, N,
                               V, m->label_smoothing, m->lse, m->logit_absmax);
    m->z_term = m->z_loss > 0.0 && b->targets ? loss_z_term(m->lse, b->targets, N, m->z_loss)
                                              : 0.0;
    return m->loss;
}

void model_encode(model_t *m, const batch_t *b)
{
    sublayer_pass_t pass[2];
    m->batch = *b;
    source_lengths(m, b);
    make_passes(m, b, pass);
    stack_forward(&m->stack[0], &m->shape, &pass[0], b->src, m->tok_embed, m->pe);
}

void model_decode_last(model_t *m, const batch_t *b, real *last, real *logits)
{
    const size_t C = (size_t)m->C, V = (size_t)m->V;
    sublayer_pass_t pass[2];
    m->batch = *b;
    make_passes(m, b, pass);
    layer_stack_t *dec = &m->stack[1];
    stack_forward(dec, &m->shape, &pass[1], b->tokens, m->tok_embed, m->pe);
    // last (B,C) = the decoder's output at position T−1 of every row
    for (int r = 0; r < b->B; r++)
        memcpy(last + (size_t)r * C, dec->output + ((size_t)r * b->T + (size_t)b->T - 1) * C,
               C * sizeof(real));
    // logits (B,V) = last · W_embᵀ (tied) or last · lm_head, as model_forward's
    if (m->tied)
        gemm(0, 1, b->B, (int)V, (int)C, 1.0, last, (int)C, m->tok_embed, (int)C, 0.0, logits,
             (int)V);
    else
        linear_forward(logits, last, m->lm_head, NULL, (size_t)b->B, C, V);
    scale_logits(logits, (size_t)b->B * V, m->logit_scale);
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

double model_objective(const model_t *m)
{
    return m->z_loss > 0.0 ? m->loss + m->z_term : m->loss;
}

void model_zero_grad(model_t *m)
{
    memset(m->grads, 0, m->num_params * sizeof(real));
}

void model_backward(model_t *m)
{
    const batch_t *b = &m->batch;
    const size_t N = (size_t)b->B * b->T, C = (size_t)m->C, V = (size_t)m->V;
    layer_stack_t *out = &m->stack[m->nstacks - 1];
    sublayer_pass_t pass[2];
    make_passes(m, b, pass);

    // dlogits (N,V) = (p − q)/count
    loss_backward_z(m->dlogits, m->probs, b->targets, N, V, m->label_smoothing, m->num_targets,
                    m->z_loss, m->lse);
    scale_logits(m->dlogits, N * V, m->logit_scale);   // μP: ∂L/∂(x·W) = s·∂L/∂logits
    if (m->tied) {
        // dfinal (N,C) = dlogits (N,V) · W_emb (V,C);  dW_emb (V,C) += dlogitsᵀ · final
        // (β = 0: OpenBLAS zero-fills, then adds — the bits of a zeroed dfinal and β = 1)
        gemm_grad(GEMM_GRAD_A, 0, 0, (int)N, (int)C, (int)V, 1.0, m->dlogits, (int)V,
                  m->tok_embed, (int)C, 0.0, out->dfinal, (int)C);
        gemm_grad(GEMM_GRAD_A, 1, 0, (int)V, (int)C, (int)N, 1.0, m->dlogits, (int)V,
                  out->output, (int)C, 1.0, m->gtok_embed, (int)C);
    } else {
        linear_backward_set(out->dfinal, m->glm_head, NULL, m->dlogits, out->output,
                            m->lm_head, N, C, V);
    }
    if (m->nstacks > 1) {
        // the cross-attentions of every decoder layer add ∂L/∂mem into the encoder's dfinal
        layer_stack_t *enc = &m->stack[0];
        memset(enc->dfinal, 0, (size_t)b->B * b->S * C * sizeof(real));
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
