/* attention.h — scaled dot-product attention over H heads (Vaswani et al. 2017, eq. 1).
 *
 * q, ctx are (B,Tq,C) and k, v are (B,Tk,C), row-major, head h in columns [h·Dh, (h+1)·Dh),
 * Dh = C/H; att is (B,H,Tq,Tk). att = softmax(q_h·k_hᵀ/√Dh) over the keys a query may see,
 * ctx_h = att·v_h. A query i of row b sees keys j < key_len[b] (right padding; key_len NULL:
 * all Tk keys), and with causal also only j ≤ i. Entries it may not see are exactly 0.
 * The projections around it are linear_forward calls in model/sublayer.c.
 */
#ifndef STABILITY_ATTENTION_H
#define STABILITY_ATTENTION_H

#include "util/real.h"

/* Options of the forward and backward beyond the plain kernel (docs/design.md §6g). Every field
 * 0/NULL is the plain kernel, bit for bit. */
typedef struct {
    double softcap;          /* c > 0: s ← c·tanh(s/c) on the scaled logits before the mask and
                                softmax (Gemma 2); 0 off */
    real *capped;          /* (B,H,Tq,Tk) the capped logits c·tanh(s/c), kept for the backward
                                (softcap only; masked entries 0) */
    const int *query_len;    /* (B) queries of row b counted by the statistics: i < query_len[b]
                                (right padding); NULL: all Tq */
    real *entropy;         /* (B·H) Σ over counted queries of −Σ_j p_ij log p_ij, or NULL */
    real *max_logit;       /* (B·H) max |s| over counted queries' visible keys (after
                                soft-capping: what the softmax sees), or NULL */
    double scale;            /* s = q_h·k_hᵀ·scale; 0: 1/√Dh (μP: 1/Dh, docs/design.md §6h) */
    real *round_bias;        /* (B·H) with the bfloat16 policy's attn_probs (nn/round.h): the
                                mean over the head's Tq×Dh outputs of (bf16(P) − P)·V, the bias
                                the rounding adds to softmax·V (Qiu & Yao 2025); or NULL */
} attention_opts_t;

/* Forward: fills att (B,H,Tq,Tk) and ctx (B,Tq,C). key_len (B) may be NULL. */
void attention_forward(real *ctx, real *att, const real *q, const real *k,
                       const real *v, int B, int Tq, int Tk, int C, int H, int causal,
                       const int *key_len);

/* attention_forward with options o (NULL: the plain kernel). The entropy of a row is
 * mx + log Σ_j e_j − Σ_j e_j·s_j / Σ_j e_j (e_j = exp(s_j − mx)): one multiply-add per entry,
 * one log per row; att keeps the bits of the plain kernel. */
void attention_forward_opt(real *ctx, real *att, const real *q, const real *k,
                           const real *v, int B, int Tq, int Tk, int C, int H, int causal,
                           const int *key_len, const attention_opts_t *o);

/* Backward: OVERWRITES dq (B,Tq,C), dk, dv (B,Tk,C) from dctx (B,Tq,C) (each head's columns
 * are written once, by a β = 0 GEMM: the bits of zeroing them and accumulating).
 * datt (B,H,Tq,Tk) is scratch (overwritten). Masked entries (att = 0) get no gradient. */
void attention_backward(real *dq, real *dk, real *dv, real *datt,
                        const real *dctx, const real *q, const real *k,
                        const real *v, const real *att, int B, int Tq, int Tk, int C,
                        int H);

/* attention_backward for a forward with options o (soft-capping multiplies each logit's
 * gradient by 1 − tanh² = 1 − (capped/c)²); NULL: the plain backward. */
void attention_backward_opt(real *dq, real *dk, real *dv, real *datt,
                            const real *dctx, const real *q, const real *k,
                            const real *v, const real *att, int B, int Tq, int Tk, int C,
                            int H, const attention_opts_t *o);

#endif
