/* sublayer.c — one residual sub-layer, forward and backward (docs/design.md §1, §6b, §6c). */
#include <stddef.h>
#include <string.h>
#include "model/sublayer.h"
#include "model/tensors.h"
#include "nn/attention.h"
#include "nn/dyt.h"
#include "nn/linear.h"
#include "nn/rope.h"
#include "nn/round.h"
#include "util/threads.h"
#include "util/arena.h"

enum { Q, K, V, O };   // attention's w[] / b[]; the FFN uses w[0] = W¹, w[1] = W², w[2] = W³

/* ReZero's α has one name per layer: the registry's, whatever the sub-layer. */
static const char *gate_name(int K) { (void)K; return tensors_gate_name(); }

#define RULE(f) offsetof(sublayer_rule_t, f)
#define VIEW(f) offsetof(sublayer_t, f)
const sublayer_param_t SUBLAYER_PARAMS[] = {
    // Admin's ω (C): 1 until the profiling pass sets it (model_admin_profile)
    {RULE(skip_param), 0, SP_WIDTH_C, 1.0, VIEW(omega), VIEW(domega), tensors_omega_name},
    // ReZero's α_l, shared by a layer's sub-layers: 0 at initialisation
    {RULE(gate_param), 1, SP_WIDTH_ONE, 0.0, VIEW(gate), VIEW(dgate), gate_name},
    // NormFormer's scale per head (fairseq's c_attn): 1 at initialisation
    {RULE(head_scale), 0, SP_WIDTH_HEADS, 1.0, VIEW(hscale), VIEW(dhscale), tensors_head_scale_name},
};
const int SUBLAYER_NPARAMS = (int)(sizeof SUBLAYER_PARAMS / sizeof SUBLAYER_PARAMS[0]);

int sublayer_param_on(const sublayer_param_t *sp, const sublayer_rule_t *r)
{
    return *(const int *)((const char *)r + sp->flag);
}

real **sublayer_param_view(const sublayer_param_t *sp, sublayer_t *s, int grad)
{
    return (real **)((char *)s + (grad ? sp->grad : sp->param));
}

const real *sublayer_param_values(const sublayer_param_t *sp, const sublayer_t *s)
{
    return *(real *const *)((const char *)s + sp->param);
}


static int is_attention(const sublayer_t *s) { return s->rule.kind != SUB_FFN; }

/* ----------------------------------------------------------------------------- norm sites */

void norm_site_forward(norm_site_t *n, const sublayer_shape_t *sh, const real *x, size_t rows)
{
    n->in = x;
    if (sh->norm == NORM_DYT) dyt_forward(n->out, x, *n->alpha, n->gamma, n->beta, rows, n->width);
    else norm_forward(sh->norm, n->out, n->mean, n->rstd, x, n->gamma, n->beta, rows, n->width,
                      sh->eps);
}

void norm_site_backward(const norm_site_t *n, const sublayer_shape_t *sh, real *dx,
                        const real *dout, const real *x, size_t rows)
{
    if (sh->norm == NORM_DYT)
        dyt_backward(dx, n->dalpha, n->dgamma, n->dbeta, dout, x, *n->alpha, n->gamma, rows,
                     n->width);
    else norm_backward(sh->norm, dx, n->dgamma, n->dbeta, dout, x, n->mean, n->rstd, n->gamma,
                       rows, n->width);
}

/* As norm_site_backward, but OVERWRITES dx (the bits of zeroing it first, nn/norm.h). */
static void norm_site_backward_set(const norm_site_t *n, const sublayer_shape_t *sh, real *dx,
                                   const real *dout, const real *x, size_t rows)
{
    if (sh->norm == NORM_DYT)
        dyt_backward_set(dx, n->dalpha, n->dgamma, n->dbeta, dout, x, *n->alpha, n->gamma, rows,
                         n->width);
    else norm_backward_set(sh->norm, dx, n->dgamma, n->dbeta, dout, x, n->mean, n->rstd,
                           n->gamma, rows, n->width);
}

/* A norm site's output and statistics over rows × its width. */
static void layout_norm(norm_site_t *n, size_t rows, real *base, size_t *off)
{
    n->out = arena_take(base, off, rows * n->width);
    n->mean = arena_take(base, off, rows);
    n->rstd = arena_take(base, off, rows);
}

/* ----------------------------------------------------------------------------- arena */

size_t sublayer_layout(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_caps_t *cap,
                       int dropout, real *base)
{
    const size_t N = cap->rows, C = (size_t)sh->C, F = (size_t)sh->F;
    const size_t Nk = s->rule.kind == SUB_CROSS_ATTN ? cap->key_rows : N;
    size_t off = 0;
    if (s->rule.norm_in) layout_norm(&s->norm, N, base, &off);
    if (is_attention(s)) {
        s->q = arena_take(base, &off, N * C);
        s->k = arena_take(base, &off, Nk * C);
        s->v = arena_take(base, &off, Nk * C);
        s->att = arena_take(base, &off, cap->att);
        s->ctx = arena_take(base, &off, N * C);
        s->ent = arena_take(base, &off, (size_t)cap->att_pairs);
        s->amax = arena_take(base, &off, (size_t)cap->att_pairs);
        s->capped = sh->softcap > 0.0 ? arena_take(base, &off, cap->att) : NULL;
        s->rbias = sh->round_bias ? arena_take(base, &off, (size_t)cap->att_pairs) : NULL;
        s->qn.out = s->kn.out = NULL;
        if (sh->qk_norm != NORM_NONE) {
            const size_t H = (size_t)sh->H;
            s->qn.out = arena_take(base, &off, N * C);
            s->qn.mean = arena_take(base, &off, N * H);
            s->qn.rstd = arena_take(base, &off, N * H);
            s->kn.out = arena_take(base, &off, Nk * C);
            s->kn.mean = arena_take(base, &off, Nk * H);
            s->kn.rstd = arena_take(base, &off, Nk * H);
        }
        s->qr = s->kr = NULL;
        if (sh->rope && s->rule.kind == SUB_SELF_ATTN) {   // rotary positions (§6i)
            s->qr = arena_take(base, &off, N * C);
            s->kr = arena_take(base, &off, Nk * C);
        }
        s->qa = s->qr ? s->qr : s->qn.out ? s->qn.out : s->q;
        s->ka = s->kr ? s->kr : s->kn.out ? s->kn.out : s->k;
    } else {
        s->pre = arena_take(base, &off, N * F);
        s->act = arena_take(base, &off, N * F);
        s->up = sh->act == ACT_SWIGLU ? arena_take(base, &off, N * F) : NULL;
    }
    if (s->inner.on) layout_norm(&s->inner, N, base, &off);
    s->h = s->inner.on ? s->inner.out : is_attention(s) ? s->ctx : s->act;
    s->f = arena_take(base, &off, N * C);
    s->fh = s->rule.head_scale ? arena_take(base, &off, N * C) : NULL;
    if (s->norm_out.on) layout_norm(&s->norm_out, N, base, &off);
    s->fo = s->norm_out.on ? s->norm_out.out : s->fh ? s->fh : s->f;
    s->mask = dropout ? arena_take(base, &off, N * C) : NULL;
    s->r = arena_take(base, &off, N * C);
    if (s->rule.norm_after) layout_norm(&s->norm, N, base, &off);
    s->out = s->rule.norm_after ? s->norm.out : s->r;
    return off;
}

size_t sublayer_scratch_layout(sublayer_scratch_t *sc, const sublayer_shape_t *sh,
                               const sublayer_caps_t *cap, real *base)
{
    const size_t N = cap->rows, C = (size_t)sh->C, F = (size_t)sh->F;
    const size_t Nk = cap->key_rows > N ? cap->key_rows : N;
    size_t off = 0;
    sc->dq = arena_take(base, &off, N * C);
    sc->dk = arena_take(base, &off, Nk * C);
    sc->dv = arena_take(base, &off, Nk * C);
    sc->datt = arena_take(base, &off, cap->att);
    sc->dctx = arena_take(base, &off, N * C);
    sc->df = arena_take(base, &off, N * C);
    sc->du = arena_take(base, &off, N * C);
    sc->dr = arena_take(base, &off, N * C);
    sc->dbranch = arena_take(base, &off, N * C);
    sc->dfo = arena_take(base, &off, N * C);
    sc->dpre = arena_take(base, &off, N * F);
    sc->dact = arena_take(base, &off, N * F);
    sc->dh = arena_take(base, &off, N * (F > C ? F : C));
    sc->dqn = sh->qk_norm != NORM_NONE ? arena_take(base, &off, N * C) : NULL;
    sc->dkn = sh->qk_norm != NORM_NONE ? arena_take(base, &off, Nk * C) : NULL;
    sc->dup = sh->act == ACT_SWIGLU ? arena_take(base, &off, N * F) : NULL;
    return off;
}

/* ----------------------------------------------------------------------------- forward */

/* f (N,C) = MHA(u) = Attention(u·W_Q, kv·W_K, kv·W_V)·W_O, kv = u or the encoder's output;
 * with an inner norm (Sub-LN) W_O reads Norm(ctx). */
static void attention_branch_forward(sublayer_t *s, const sublayer_shape_t *sh,
                                     const sublayer_pass_t *p)
{
    const int cross = s->rule.kind == SUB_CROSS_ATTN;
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C;
    const int Tk = cross ? p->S : p->T;
    const size_t Nk = (size_t)p->B * Tk;
    const real *kv = cross ? p->mem : s->u;
    linear_forward(s->q, s->u, s->w[Q], s->b[Q], N, C, C);     // (N,C)
    linear_forward(s->k, kv, s->w[K], s->b[K], Nk, C, C);      // (Nk,C)
    linear_forward(s->v, kv, s->w[V], s->b[V], Nk, C, C);      // (Nk,C)
    if (s->qn.out) {   // QK-norm: rows of (N·H, Dh) (Dehghani et al. 2023; docs/design.md §6g)
        const size_t H = (size_t)sh->H, Dh = C / H;
        norm_forward(sh->qk_norm, s->qn.out, s->qn.mean, s->qn.rstd, s->q, s->qn.gamma,
                     s->qn.beta, N * H, Dh, sh->eps);
        norm_forward(sh->qk_norm, s->kn.out, s->kn.mean, s->kn.rstd, s->k, s->kn.gamma,
                     s->kn.beta, Nk * H, Dh, sh->eps);
    }
    if (s->qr) {   // rotary positions after any QK-norm (Su et al. 2021; docs/design.md §6i)
        rope_forward(s->qr, s->qn.out ? s->qn.out : s->q, sh->rope_cos, sh->rope_sin,
                     (size_t)p->B, p->T, sh->C, sh->H);
        rope_forward(s->kr, s->kn.out ? s->kn.out : s->k, sh->rope_cos, sh->rope_sin,
                     (size_t)p->B, p->T, sh->C, sh->H);
    }
    const attention_opts_t o = {sh->softcap, s->capped, p->qlen, s->ent, s->amax, sh->attn_scale,
                                s->rbias};
    attention_forward_opt(s->ctx, s->att, s->qa, s->ka, s->v, p->B, p->T, Tk, sh->C, sh->H,
                          cross ? 0 : p->causal, cross ? p->mem_len : p->len, &o);
    if (s->inner.on) norm_site_forward(&s->inner, sh, s->ctx, N);
    linear_forward(s->f, s->h, s->w[O], s->b[O], N, C, C);      // (N,C)
}

/* f (N,C) = act(u·W¹ + b¹)·W² + b² (SwiGLU: act = SiLU(u·W¹ + b¹) ⊙ (u·W³ + b³)), with Norm
 * before W² when the rule has an inner norm (after the gated product, docs/design.md §6i). */
static void ffn_branch_forward(sublayer_t *s, const sublayer_shape_t *sh, size_t N)
{
    const size_t C = (size_t)sh->C, F = (size_t)sh->F;
    if (!s->inner.on && !s->up) {
        ffn_forward(s->f, s->pre, s->act, s->u, s->w[0], s->b[0], s->w[1], s->b[1], N, C, F,
                    sh->act);
        return;
    }
    linear_forward(s->pre, s->u, s->w[0], s->b[0], N, C, F);   // (N,F)
    if (s->up) {   // SwiGLU (Shazeer 2020): the gate W¹, the up projection W³
        linear_forward(s->up, s->u, s->w[2], s->b[2], N, C, F);   // (N,F)
        ffn_swiglu_forward(s->act, s->pre, s->up, N * F);         // (N,F)
    } else {
        ffn_activation_forward(s->act, s->pre, N * F, sh->act);   // (N,F)
    }
    if (s->inner.on) norm_site_forward(&s->inner, sh, s->act, N);   // (N,F) Sub-LN, NormFormer
    linear_forward(s->f, s->h, s->w[1], s->b[1], N, F, C);     // (N,C)
}

/* NormFormer's head scale (fairseq's c_attn, applied to the attention's output after W_O):
 * fh[n][h·Dh + j] = c[h]·f[n][h·Dh + j], f and fh (N,C), c (H). */
static void head_scale_forward(real *fh, const real *f, const real *c, size_t N, int C, int H)
{
    const int Dh = C / H;
    for (size_t n = 0; n < N; n++)
        for (int j = 0; j < C; j++) fh[n * C + j] = c[j / Dh] * f[n * C + j];
}

/* Its backward: dc (H) += Σ_n,j∈h dfh ⊙ f; df (N,C) = c ⊙ dfh (df may be dfh). */
static void head_scale_backward(real *df, real *dc, const real *dfh, const real *f,
                                const real *c, size_t N, int C, int H)
{
    const int Dh = C / H;
    for (size_t n = 0; n < N; n++)
        for (int j = 0; j < C; j++) {
            const double g = dfh[n * C + j];
            dc[j / Dh] += g * f[n * C + j];
            df[n * C + j] = c[j / Dh] * g;
        }
}

/* The plain residual x + drop(f) and its backward, element-wise, for the parts of a region
 * (util/threads.h): any split gives the same bits. */
typedef struct {
    const sublayer_t *s;
    const real *dr;
    real *dx, *dbranch;
    size_t n;
} residual_job_t;

static void residual_forward_part(void *ctx, int t, int nt)
{
    const residual_job_t *j = ctx;
    const sublayer_t *s = j->s;
    size_t lo, hi;
    threads_part(j->n, t, nt, 8, &lo, &hi);
    if (s->mask) for (size_t i = lo; i < hi; i++) s->r[i] = s->x[i] + s->mask[i] * s->fo[i];
    else         for (size_t i = lo; i < hi; i++) s->r[i] = s->x[i] + s->fo[i];
}

/* dx = 0 + dr (the bits of zeroing dx and adding: 0 + v is v but for v = −0); dbranch = mask·dr */
static void residual_backward_part(void *ctx, int t, int nt)
{
    const residual_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->n, t, nt, 8, &lo, &hi);
    for (size_t i = lo; i < hi; i++) j->dx[i] = 0.0 + j->dr[i];
    if (j->s->mask)
        for (size_t i = lo; i < hi; i++) j->dbranch[i] = j->s->mask[i] * j->dr[i];
}

/* r = skip·x + gate·drop(f') (+ x_block); the plain residual x + drop(f) as written first. */
static void residual_forward(sublayer_t *s, size_t N, size_t C)
{
    const size_t NC = N * C;
    const sublayer_rule_t *r = &s->rule;
    if (r->skip == 1.0 && !s->omega && !s->gate && !r->b2t) {
        const residual_job_t j = {.s = s, .n = NC};
        threads_run(threads_for((double)NC), residual_forward_part, (void *)&j);
        return;
    }
    const double g = s->gate ? *s->gate : 1.0;
    for (size_t i = 0; i < NC; i++) {
        const double skip = s->omega ? s->omega[i % C] * s->x[i] : r->skip * s->x[i];
        const double branch = s->mask ? s->mask[i] * s->fo[i] : s->fo[i];
        s->r[i] = skip + g * branch + (r->b2t ? s->xb[i] : 0.0);
    }
}

void sublayer_forward(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                      const real *x, const real *xb)
{
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C;
    s->x = x;
    s->xb = xb;
    s->u = x;
    if (s->rule.norm_in) {   // Pre-LN: the branch reads Norm(x)
        norm_site_forward(&s->norm, sh, x, N);
        s->u = s->norm.out;
    }
    if (is_attention(s)) attention_branch_forward(s, sh, p);
    else ffn_branch_forward(s, sh, N);
    if (s->fh) head_scale_forward(s->fh, s->f, s->hscale, N, sh->C, sh->H);   // NormFormer
    if (s->norm_out.on) norm_site_forward(&s->norm_out, sh, s->fh ? s->fh : s->f, N);   // Peri-LN
    residual_forward(s, N, C);
    if (round_policy()->residual) round_bf16(s->r, N * C);   // bfloat16*, round_residual
    if (s->rule.norm_after) norm_site_forward(&s->norm, sh, s->r, N);   // Post-LN: Norm(r)
}

/* ----------------------------------------------------------------------------- backward */

/* du (N,C) += ∂L/∂u (du_set: du = ∂L/∂u) and dmem += ∂L/∂mem (cross) from df = ∂L/∂f.
 * No scratch is zeroed: the first write into each buffer overwrites it (β = 0 GEMMs, the norms'
 * _set backward), which gives the bits of zeroing and accumulating. */
static void attention_branch_backward(sublayer_t *s, const sublayer_shape_t *sh,
                                      const sublayer_pass_t *p, const real *df, real *du,
                                      int du_set, real *dmem, sublayer_scratch_t *sc)
{
    const int cross = s->rule.kind == SUB_CROSS_ATTN;
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C;
    const int Tk = cross ? p->S : p->T;
    const size_t Nk = (size_t)p->B * Tk;
    const real *kv = cross ? p->mem : s->u;
    real *dkv = cross ? dmem : du;
    if (s->inner.on) {   // W_O read Norm(ctx)
        linear_backward_set(sc->dh, s->gw[O], s->gb[O], df, s->h, s->w[O], N, C, C);
        norm_site_backward_set(&s->inner, sh, sc->dctx, sc->dh, s->ctx, N);
    } else {
        linear_backward_set(sc->dctx, s->gw[O], s->gb[O], df, s->ctx, s->w[O], N, C, C);
    }
    const attention_opts_t o = {.softcap = sh->softcap, .capped = s->capped,
                                .scale = sh->attn_scale};
    real *dqa = s->qn.out ? sc->dqn : sc->dq, *dka = s->kn.out ? sc->dkn : sc->dk;
    attention_backward_opt(dqa, dka, sc->dv, sc->datt, sc->dctx, s->qa, s->ka, s->v, s->att,
                           p->B, p->T, Tk, sh->C, sh->H, &o);
    if (s->qr) {   // back through the rotations, in place: ∂L/∂(q before them) = Rᵀ·∂L/∂qr
        rope_backward(dqa, dqa, sh->rope_cos, sh->rope_sin, (size_t)p->B, p->T, sh->C, sh->H);
        rope_backward(dka, dka, sh->rope_cos, sh->rope_sin, (size_t)p->B, p->T, sh->C, sh->H);
    }
    if (s->qn.out) {   // back through QK-norm: rows of (N·H, Dh)
        const size_t H = (size_t)sh->H, Dh = C / H;
        norm_backward_set(sh->qk_norm, sc->dq, s->qn.dgamma, s->qn.dbeta, sc->dqn, s->q,
                          s->qn.mean, s->qn.rstd, s->qn.gamma, N * H, Dh);
        norm_backward_set(sh->qk_norm, sc->dk, s->kn.dgamma, s->kn.dbeta, sc->dkn, s->k,
                          s->kn.mean, s->kn.rstd, s->kn.gamma, Nk * H, Dh);
    }
    if (du_set) linear_backward_set(du, s->gw[Q], s->gb[Q], sc->dq, s->u, s->w[Q], N, C, C);
    else linear_backward(du, s->gw[Q], s->gb[Q], sc->dq, s->u, s->w[Q], N, C, C);
    linear_backward(dkv, s->gw[K], s->gb[K], sc->dk, kv, s->w[K], Nk, C, C);
    linear_backward(dkv, s->gw[V], s->gb[V], sc->dv, kv, s->w[V], Nk, C, C);
}

/* du (N,C) += ∂L/∂u (du_set: du = ∂L/∂u) from df = ∂L/∂f through the FFN (and its inner
 * norm); no scratch is zeroed (attention_branch_backward). */
static void ffn_branch_backward(sublayer_t *s, const sublayer_shape_t *sh, size_t N,
                                const real *df, real *du, int du_set, sublayer_scratch_t *sc)
{
    const size_t C = (size_t)sh->C, F = (size_t)sh->F;
    if (!s->inner.on && !s->up && !du_set) {
        ffn_backward(du, s->gw[0], s->gb[0], s->gw[1], s->gb[1], sc->dpre, sc->dact, df, s->u,
                     s->pre, s->act, s->w[0], s->w[1], N, C, F, sh->act);
        return;
    }
    if (s->inner.on) {
        linear_backward_set(sc->dh, s->gw[1], s->gb[1], df, s->h, s->w[1], N, F, C);   // (N,F)
        norm_site_backward_set(&s->inner, sh, sc->dact, sc->dh, s->act, N);           // Sub-LN
    } else {
        linear_backward_set(sc->dact, s->gw[1], s->gb[1], df, s->act, s->w[1], N, F, C);
    }
    if (s->up) ffn_swiglu_backward(sc->dpre, sc->dup, sc->dact, s->pre, s->up, N * F);
    else ffn_activation_backward(sc->dpre, sc->dact, s->pre, N * F, sh->act);
    if (du_set) linear_backward_set(du, s->gw[0], s->gb[0], sc->dpre, s->u, s->w[0], N, C, F);
    else linear_backward(du, s->gw[0], s->gb[0], sc->dpre, s->u, s->w[0], N, C, F);
    if (s->up)   // SwiGLU's up projection: u reaches the product through W³ too
        linear_backward(du, s->gw[2], s->gb[2], sc->dup, s->u, s->w[2], N, C, F);
}

/* r = skip·x + gate·drop(f') (+ x_block): dx = skip·dr (or ω ⊙ dr), dω, dgate, dxb; returns
 * ∂L/∂f' = gate·mask ⊙ dr. */
static const real *residual_backward(sublayer_t *s, size_t N, size_t C, const real *dr,
                                       real *dx, real *dxb, sublayer_scratch_t *sc)
{
    const size_t NC = N * C;
    const sublayer_rule_t *r = &s->rule;
    // dx = 0 + …: the bits of zeroing dx and adding (0 + v is v but for v = −0)
    if (r->skip == 1.0 && !s->omega && !s->gate && !r->b2t) {
        const residual_job_t j = {.s = s, .dr = dr, .dx = dx, .dbranch = sc->dbranch, .n = NC};
        threads_run(threads_for((double)NC), residual_backward_part, (void *)&j);
        return s->mask ? sc->dbranch : dr;
    }
    const double g = s->gate ? *s->gate : 1.0;
    double dg = 0.0;
    for (size_t i = 0; i < NC; i++) {
        const size_t c = i % C;
        if (s->omega) {
            dx[i] = 0.0 + s->omega[c] * dr[i];
            s->domega[c] += dr[i] * s->x[i];
        } else {
            dx[i] = 0.0 + r->skip * dr[i];
        }
        if (r->b2t) dxb[i] += dr[i];
        const double m = s->mask ? s->mask[i] : 1.0;
        dg += dr[i] * m * s->fo[i];
        sc->dbranch[i] = g * m * dr[i];
    }
    if (s->gate) *s->dgate += dg;
    return sc->dbranch;
}

void sublayer_backward(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                       const real *dout, real *dx, real *dmem, real *dxb,
                       sublayer_scratch_t *sc)
{
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C;
    // out = Norm(r)
    const real *dr = dout;
    if (s->rule.norm_after) {
        norm_site_backward_set(&s->norm, sh, sc->dr, dout, s->r, N);
        dr = sc->dr;
    }
    const real *df = residual_backward(s, N, C, dr, dx, dxb, sc);
    if (s->norm_out.on) {   // f' = Norm_out(f_h)
        norm_site_backward_set(&s->norm_out, sh, sc->dfo, df, s->norm_out.in, N);
        df = sc->dfo;
    }
    if (s->fh) {            // f_h = c ⊙ f
        head_scale_backward(sc->dfo, s->dhscale, df, s->f, s->hscale, N, sh->C, sh->H);
        df = sc->dfo;
    }
    // the branch adds ∂L/∂u into dx directly unless a norm sits in front of it; then it writes
    // it into sc->du (its first write overwrites)
    real *du = s->rule.norm_in ? sc->du : dx;
    if (is_attention(s)) attention_branch_backward(s, sh, p, df, du, s->rule.norm_in, dmem, sc);
    else ffn_branch_backward(s, sh, N, df, du, s->rule.norm_in, sc);
    // u = Norm(x)
    if (s->rule.norm_in) norm_site_backward(&s->norm, sh, dx, du, s->x, N);
}
