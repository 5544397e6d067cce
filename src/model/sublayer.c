/* sublayer.c — one residual sub-layer, forward and backward (docs/design.md §1, §6b). */
#include <string.h>
#include "model/sublayer.h"
#include "nn/attention.h"
#include "nn/linear.h"

enum { Q, K, V, O };   // attention's w[] / b[]; the FFN uses w[0] = W¹, w[1] = W²

static double *take(double *base, size_t *off, size_t n)
{
    double *p = base ? base + *off : NULL;
    *off += n;
    return p;
}

static int is_attention(const sublayer_t *s) { return s->rule.kind != SUB_FFN; }

/* A norm site's output and statistics over rows × width. */
static void layout_norm(norm_site_t *n, size_t rows, size_t width, double *base, size_t *off)
{
    n->out = take(base, off, rows * width);
    n->mean = take(base, off, rows);
    n->rstd = take(base, off, rows);
}

size_t sublayer_layout(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_caps_t *cap,
                       int dropout, double *base)
{
    const size_t N = cap->rows, C = (size_t)sh->C, F = (size_t)sh->F;
    const size_t Nk = s->rule.kind == SUB_CROSS_ATTN ? cap->key_rows : N;
    size_t off = 0;
    if (s->rule.norm_in) layout_norm(&s->norm, N, C, base, &off);
    if (is_attention(s)) {
        s->q = take(base, &off, N * C);
        s->k = take(base, &off, Nk * C);
        s->v = take(base, &off, Nk * C);
        s->att = take(base, &off, cap->att);
        s->ctx = take(base, &off, N * C);
    } else {
        s->pre = take(base, &off, N * F);
        s->act = take(base, &off, N * F);
    }
    s->f = take(base, &off, N * C);
    s->mask = dropout ? take(base, &off, N * C) : NULL;
    s->r = take(base, &off, N * C);
    if (s->rule.norm_after) layout_norm(&s->norm, N, C, base, &off);
    s->out = s->rule.norm_after ? s->norm.out : s->r;
    return off;
}

size_t sublayer_scratch_layout(sublayer_scratch_t *sc, const sublayer_shape_t *sh,
                               const sublayer_caps_t *cap, double *base)
{
    const size_t N = cap->rows, C = (size_t)sh->C, F = (size_t)sh->F;
    const size_t Nk = cap->key_rows > N ? cap->key_rows : N;
    size_t off = 0;
    sc->dq = take(base, &off, N * C);
    sc->dk = take(base, &off, Nk * C);
    sc->dv = take(base, &off, Nk * C);
    sc->datt = take(base, &off, cap->att);
    sc->dctx = take(base, &off, N * C);
    sc->df = take(base, &off, N * C);
    sc->du = take(base, &off, N * C);
    sc->dr = take(base, &off, N * C);
    sc->dbranch = take(base, &off, N * C);
    sc->dpre = take(base, &off, N * F);
    sc->dact = take(base, &off, N * F);
    return off;
}

/* ----------------------------------------------------------------------------- forward */

/* f (N,C) = MHA(u) = Attention(u·W_Q, kv·W_K, kv·W_V)·W_O, kv = u or the encoder's output. */
static void attention_branch_forward(sublayer_t *s, const sublayer_shape_t *sh,
                                     const sublayer_pass_t *p)
{
    const int cross = s->rule.kind == SUB_CROSS_ATTN;
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C;
    const int Tk = cross ? p->S : p->T;
    const size_t Nk = (size_t)p->B * Tk;
    const double *kv = cross ? p->mem : s->u;
    linear_forward(s->q, s->u, s->w[Q], s->b[Q], N, C, C);     // (N,C)
    linear_forward(s->k, kv, s->w[K], s->b[K], Nk, C, C);      // (Nk,C)
    linear_forward(s->v, kv, s->w[V], s->b[V], Nk, C, C);      // (Nk,C)
    attention_forward(s->ctx, s->att, s->q, s->k, s->v, p->B, p->T, Tk, sh->C, sh->H,
                      cross ? 0 : p->causal, cross ? p->mem_len : p->len);
    linear_forward(s->f, s->ctx, s->w[O], s->b[O], N, C, C);    // (N,C)
}

void sublayer_forward(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                      const double *x)
{
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C, NC = N * C;
    s->x = x;
    s->u = x;
    if (s->rule.norm_in) {   // Pre-LN: the branch reads Norm(x)
        norm_forward(sh->norm, s->norm.out, s->norm.mean, s->norm.rstd, x, s->norm.gamma,
                     s->norm.beta, N, C, sh->eps);
        s->u = s->norm.out;
    }
    if (is_attention(s)) attention_branch_forward(s, sh, p);
    else ffn_forward(s->f, s->pre, s->act, s->u, s->w[0], s->b[0], s->w[1], s->b[1], N, C,
                     (size_t)sh->F, sh->act);
    // r = x + drop(f)
    if (s->mask) for (size_t i = 0; i < NC; i++) s->r[i] = x[i] + s->mask[i] * s->f[i];
    else         for (size_t i = 0; i < NC; i++) s->r[i] = x[i] + s->f[i];
    if (s->rule.norm_after)  // Post-LN: out = Norm(r)
        norm_forward(sh->norm, s->norm.out, s->norm.mean, s->norm.rstd, s->r, s->norm.gamma,
                     s->norm.beta, N, C, sh->eps);
}

/* ----------------------------------------------------------------------------- backward */

/* du (N,C) += ∂L/∂u and dmem += ∂L/∂mem (cross) from df = ∂L/∂f. */
static void attention_branch_backward(sublayer_t *s, const sublayer_shape_t *sh,
                                      const sublayer_pass_t *p, const double *df, double *du,
                                      double *dmem, sublayer_scratch_t *sc)
{
    const int cross = s->rule.kind == SUB_CROSS_ATTN;
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C;
    const int Tk = cross ? p->S : p->T;
    const size_t Nk = (size_t)p->B * Tk;
    const double *kv = cross ? p->mem : s->u;
    double *dkv = cross ? dmem : du;
    memset(sc->dctx, 0, N * C * sizeof(double));
    memset(sc->dq, 0, N * C * sizeof(double));
    memset(sc->dk, 0, Nk * C * sizeof(double));
    memset(sc->dv, 0, Nk * C * sizeof(double));
    linear_backward(sc->dctx, s->gw[O], s->gb[O], df, s->ctx, s->w[O], N, C, C);
    attention_backward(sc->dq, sc->dk, sc->dv, sc->datt, sc->dctx, s->q, s->k, s->v, s->att,
                       p->B, p->T, Tk, sh->C, sh->H);
    linear_backward(du, s->gw[Q], s->gb[Q], sc->dq, s->u, s->w[Q], N, C, C);
    linear_backward(dkv, s->gw[K], s->gb[K], sc->dk, kv, s->w[K], Nk, C, C);
    linear_backward(dkv, s->gw[V], s->gb[V], sc->dv, kv, s->w[V], Nk, C, C);
}

void sublayer_backward(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                       const double *dout, double *dx, double *dmem, sublayer_scratch_t *sc)
{
    const size_t N = (size_t)p->B * p->T, C = (size_t)sh->C, NC = N * C;
    // out = Norm(r)
    const double *dr = dout;
    if (s->rule.norm_after) {
        memset(sc->dr, 0, NC * sizeof(double));
        norm_backward(sh->norm, sc->dr, s->norm.dgamma, s->norm.dbeta, dout, s->r,
                      s->norm.mean, s->norm.rstd, s->norm.gamma, N, C);
        dr = sc->dr;
    }
    // r = x + drop(f):  dx = dr,  df = mask ⊙ dr
    memset(dx, 0, NC * sizeof(double));
    for (size_t i = 0; i < NC; i++) dx[i] += dr[i];
    const double *df = dr;
    if (s->mask) {
        for (size_t i = 0; i < NC; i++) sc->dbranch[i] = s->mask[i] * dr[i];
        df = sc->dbranch;
    }
    // the branch writes ∂L/∂u into dx directly unless a norm sits in front of it
    double *du = dx;
    if (s->rule.norm_in) {
        memset(sc->du, 0, NC * sizeof(double));
        du = sc->du;
    }
    if (is_attention(s)) attention_branch_backward(s, sh, p, df, du, dmem, sc);
    else ffn_backward(du, s->gw[0], s->gb[0], s->gw[1], s->gb[1], sc->dpre, sc->dact, df, s->u,
                      s->pre, s->act, s->w[0], s->w[1], N, C, (size_t)sh->F, sh->act);
    // u = Norm(x)
    if (s->rule.norm_in)
        norm_backward(sh->norm, dx, s->norm.dgamma, s->norm.dbeta, du, s->x, s->norm.mean,
                      s->norm.rstd, s->norm.gamma, N, C);
}
