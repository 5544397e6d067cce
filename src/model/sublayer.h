/* sublayer.h — the unit of the model: one residual sub-layer (self-attention,
 * cross-attention or FFN) with its norms, wired by a placement rule (model/placement.h):
 *
 *     u = Norm_in(x) or x;   f = F(u);   f_h = c ⊙ f (NormFormer) or f;
 *     f' = Norm_out(f_h) or f_h;   r = skip·x + gate·drop(f') (+ x_block);   out = Norm_after(r) or r
 *
 * It owns its parameter views, its forward activations (in the model's arena) and its
 * forward/backward pair; the backward declares what it accumulates into (see
 * sublayer_backward), so the caller zeroes nothing by hand.
 * Shapes: N = B·Tq rows of queries, Nk = B·Tk rows of keys (cross-attention: the source),
 * C model width, F FFN width, H heads.
 */
#ifndef STABILITY_SUBLAYER_H
#define STABILITY_SUBLAYER_H

#include "util/real.h"

#include <stddef.h>
#include "nn/ffn.h"
#include "nn/norm.h"
#include "model/placement.h"

/* Dimensions and kernels shared by every sub-layer of a model. */
typedef struct {
    int C, F, H;
    norm_kind_t norm;
    double eps;
    activation_t act;
    norm_kind_t qk_norm;         /* QK-norm's kind (LayerNorm, RMSNorm), or NORM_NONE: off */
    double softcap;              /* attention logits c·tanh(s/c) when > 0 (docs/design.md §6g) */
    double attn_scale;           /* attention logits q·kᵀ·attn_scale; 0: 1/√d_head (μP: 1/d_head) */
    int rope;                    /* rotary positions on self-attention's q and k (§6i) */
    const real *rope_cos, *rope_sin;   /* (positions, Dh/2) their tables (nn/rope.h) */
    int round_bias;              /* bfloat16* with round_attn_probs: keep each head's rounding
                                    bias of softmax·V (nn/attention.h) */
} sublayer_shape_t;

/* QK-norm of q or k of an attention (docs/design.md §6g): every head's d_head columns of a row
 * normalised, one γ (and β) of width d_head shared by the heads. */
typedef struct {
    real *gamma, *beta, *dgamma, *dbeta;   /* (Dh) */
    real *out;                 /* (rows,C) = (rows·H, Dh) the normalised q or k */
    real *mean, *rstd;         /* (rows·H) */
} qk_site_t;

/* One norm site: its parameters (NULL where the norm kind has none) and saved statistics. */
typedef struct {
    int on;                      /* the site exists */
    size_t width;                /* C, or F for the FFN's inner norm */
    real *gamma, *beta;        /* (width) */
    real *alpha;               /* DyT's α (1), else NULL */
    real *dgamma, *dbeta, *dalpha;
    real *out;                 /* (rows, width) */
    real *mean, *rstd;         /* (rows) */
    const real *in;            /* (rows, width) the input of the last forward */
} norm_site_t;

/* out (rows, width) = Norm(x) by the model's norm kind (LayerNorm, RMSNorm, DyT, identity);
 * remembers x as the site's input. */
void norm_site_forward(norm_site_t *n, const sublayer_shape_t *sh, const real *x, size_t rows);

/* ACCUMULATES dx (rows, width) and the site's parameter gradients from dout, for the x of the
 * last norm_site_forward. */
void norm_site_backward(const norm_site_t *n, const sublayer_shape_t *sh, real *dx,
                        const real *dout, const real *x, size_t rows);

/* This forward's shapes, the same for every sub-layer of a stack. */
typedef struct {
    int B, T;                    /* rows; sequence length of the stack */
    int causal;                  /* self-attention masks keys j > i */
    const int *len;              /* (B) non-padding positions per row (right padding); NULL = T */
    const real *mem;           /* cross-attention: (B,S,C) the encoder's output, or NULL */
    int S;                       /* its length */
    const int *mem_len;          /* (B) its non-padding positions; NULL = S */
    const int *qlen;             /* (B) the queries the attention statistics count (non-padding
                                    rows); NULL = T */
} sublayer_pass_t;

typedef struct {
    sublayer_rule_t rule;
    int layer;                   /* row of the probes' layer axis */
    int index;                   /* 1-based position in its layer: normK, residK */
    /* parameters and gradients: attention q, k, v, o; FFN w[0] = W¹, w[1] = W², w[2] = W³
     * (SwiGLU's up projection, else NULL); every b NULL with model.bias = off */
    real *w[4], *b[4], *gw[4], *gb[4];
    norm_site_t norm;            /* normK: Norm_in or Norm_after */
    norm_site_t norm_out;        /* normK_out: on the branch output (Peri-LN) */
    norm_site_t inner;           /* normK_inner: before W_O or W² (Sub-LN) */
    real *omega, *domega;      /* (C) Admin's skip scale, or NULL */
    real *gate, *dgate;        /* (1) ReZero's α (shared by the layer's sub-layers), or NULL */
    real *hscale, *dhscale;    /* (H) NormFormer's scale c of each head's output, or NULL */
    /* forward activations (views into the model's arena) */
    const real *x;             /* (N,C) the input: the stream before this sub-layer */
    const real *xb;            /* (N,C) the block's input (B2T), or NULL */
    const real *u;             /* (N,C) the branch input: norm.out or x */
    real *q, *k, *v;           /* (N,C), (Nk,C), (Nk,C) */
    real *att;                 /* (B,H,Tq,Tk) */
    qk_site_t qn, kn;            /* QK-norm of q and k (out NULL: off) */
    real *qr, *kr;             /* (N,C) q and k after the rotary positions (self-attention
                                    with rope), or NULL */
    const real *qa, *ka;       /* (N,C), (Nk,C) what the attention reads: qr, or qn.out, or q */
    real *capped;              /* (B,H,Tq,Tk) the soft-capped logits, or NULL */
    real *ent, *amax;          /* (B·H) of the last forward: Σ over counted queries of the
                                    attention entropy; max |logit| (nn/attention.h) */
    real *rbias;               /* (B·H) softmax·V's bfloat16 rounding bias, or NULL */
    real *ctx;                 /* (N,C) */
    real *pre, *act;           /* (N,F) x·W¹ + b¹ and act(pre) (SwiGLU: SiLU(pre) ⊙ up) */
    real *up;                  /* (N,F) SwiGLU's x·W³ + b³, or NULL */
    const real *h;             /* the input of W_O or W²: inner.out, or ctx / act */
    real *f;                   /* (N,C) the branch output F(u) */
    real *fh;                  /* (N,C) f scaled per head (head_scale), or NULL */
    const real *fo;            /* (N,C) norm_out.out, or fh or f */
    real *mask;                /* (N,C) inverted-dropout mask (0 or 1/(1−p)), or NULL */
    real *r;                   /* (N,C) the residual sum */
    real *out;                 /* (N,C) norm.out (Norm_after) or r */
} sublayer_t;

/* The learnable scalars and vectors a scheme adds to a sub-layer beyond its branch and norms
 * (docs/design.md §6c), one row each in SUBLAYER_PARAMS (sublayer.c): params.c registers them
 * (after the norms, in the rows' order), binds the views and the probes declare their columns
 * from this table alone. */
typedef enum { SP_WIDTH_C, SP_WIDTH_ONE, SP_WIDTH_HEADS } sublayer_param_width_t;
typedef struct {
    size_t flag;                 /* offsetof(sublayer_rule_t, the int that turns it on) */
    int per_layer;               /* one per layer (its first sub-layer's flag), else one each */
    sublayer_param_width_t width;
    double init;                 /* every entry at initialisation */
    size_t param, grad;          /* offsetof(sublayer_t, the views) */
    const char *(*name)(int K);  /* the registry's name (model/tensors.h) of the K-th's */
} sublayer_param_t;

extern const sublayer_param_t SUBLAYER_PARAMS[];
extern const int SUBLAYER_NPARAMS;

/* Whether rule r has the parameter sp. */
int sublayer_param_on(const sublayer_param_t *sp, const sublayer_rule_t *r);

/* The view of parameter sp in s (params, or grads when grad): a pointer to s's pointer. */
real **sublayer_param_view(const sublayer_param_t *sp, sublayer_t *s, int grad);

/* s's values of parameter sp, or NULL when s has none. */
const real *sublayer_param_values(const sublayer_param_t *sp, const sublayer_t *s);

/* Scratch of the backward, shared by all sub-layers (each overwrites what it uses). */
typedef struct {
    real *dq, *dk, *dv;        /* (N,C), (Nk,C), (Nk,C) */
    real *datt;                /* (B,H,Tq,Tk) */
    real *dctx, *df, *du, *dr, *dbranch, *dfo;   /* (N,C) */
    real *dpre, *dact;         /* (N,F) */
    real *dup;                 /* (N,F) SwiGLU's ∂L/∂up, or NULL */
    real *dh;                  /* (N,max(C,F)) ∂L/∂(the inner norm's output) */
    real *dqn, *dkn;           /* (N,C), (Nk,C) ∂L/∂(QK-norm's outputs), or NULL (off) */
} sublayer_scratch_t;

/* Capacity of the activations: rows of queries and keys, entries of one attention matrix. */
typedef struct {
    size_t rows, key_rows, att;
    size_t att_pairs;            /* (batch, head) pairs: B·H */
} sublayer_caps_t;

/* Lay out s's forward activations over base (or only count when base is NULL); dropout adds
 * a mask. Returns the doubles used. */
size_t sublayer_layout(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_caps_t *cap,
                       int dropout, real *base);

/* Doubles of the shared backward scratch for capacity cap; lays it out when base != NULL. */
size_t sublayer_scratch_layout(sublayer_scratch_t *sc, const sublayer_shape_t *sh,
                               const sublayer_caps_t *cap, real *base);

/* Forward of s on x (N,C) for this pass; xb (N,C) is its block's input (read with b2t only).
 * Fills s's activations; s->out is the result. */
void sublayer_forward(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                      const real *x, const real *xb);

/* Backward of the last forward. dout (N,C) = ∂L/∂out. OVERWRITES dx (N,C) = ∂L/∂x (it
 * zeroes it first), ACCUMULATES into s's parameter gradients, for cross-attention into dmem
 * (Nk,C) (the caller zeroes dmem once before the decoder's backward), and with b2t into
 * dxb (N,C) = ∂L/∂(the block's input). */
void sublayer_backward(sublayer_t *s, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                       const real *dout, real *dx, real *dmem, real *dxb,
                       sublayer_scratch_t *sc);

#endif
