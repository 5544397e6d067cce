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

/* Forward: fills att (B,H,Tq,Tk) and ctx (B,Tq,C). key_len (B) may be NULL. */
void attention_forward(double *ctx, double *att, const double *q, const double *k,
                       const double *v, int B, int Tq, int Tk, int C, int H, int causal,
                       const int *key_len);

/* Backward: OVERWRITES dq (B,Tq,C), dk, dv (B,Tk,C) from dctx (B,Tq,C) (each head's columns
 * are written once, by a β = 0 GEMM: the bits of zeroing them and accumulating).
 * datt (B,H,Tq,Tk) is scratch (overwritten). Masked entries (att = 0) get no gradient. */
void attention_backward(double *dq, double *dk, double *dv, double *datt,
                        const double *dctx, const double *q, const double *k,
                        const double *v, const double *att, int B, int Tq, int Tk, int C,
                        int H);

#endif
