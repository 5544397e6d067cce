/* attention.h — scaled dot-product attention over H heads (Vaswani et al. 2017, eq. 1).
 *
 * q, k, v, ctx are (B,T,C) row-major with head h in columns [h·Dh, (h+1)·Dh), Dh = C/H;
 * att is (B,H,T,T). att = softmax(q_h·k_hᵀ/√Dh) (entries j > i masked when causal),
 * ctx_h = att·v_h. The projections around it are linear_forward calls in model.c.
 */
#ifndef STABILITY_ATTENTION_H
#define STABILITY_ATTENTION_H

/* Forward: fills att (B,H,T,T) and ctx (B,T,C). */
void attention_forward(double *ctx, double *att, const double *q, const double *k,
                       const double *v, int B, int T, int C, int H, int causal);

/* Backward: ACCUMULATES into dq, dk, dv (B,T,C) from dctx (B,T,C).
 * datt (B,H,T,T) is scratch (overwritten). */
void attention_backward(double *dq, double *dk, double *dv, double *datt,
                        const double *dctx, const double *q, const double *k,
                        const double *v, const double *att, int B, int T, int C, int H);

#endif
