/* ffn.h — position-wise feed-forward sub-layer FFN(x) = act(x·W¹ + b¹)·W² + b² (paper §3), and
 * the gated SwiGLU FFN(x) = (SiLU(x·W¹ + b¹) ⊙ (x·W³ + b³))·W² + b² (Shazeer 2020, eq. 6 with
 * GLU's biases, Dauphin et al. 2017; LLaMA's feed_forward with no biases): W¹ the gate, W³ the up
 * projection, both (C,F). Every bias may be NULL (model.bias = off). */
#ifndef STABILITY_FFN_H
#define STABILITY_FFN_H

#include "util/real.h"

#include <stddef.h>
#include "util/kinds.h"   /* activation_t */

/* Forward: pre (N,F) = x·W1 + b1, act (N,F) = act(pre), out (N,C) = act·W2 + b2. */
void ffn_forward(real *out, real *pre, real *act, const real *x,
                 const real *W1, const real *b1, const real *W2, const real *b2,
                 size_t N, size_t C, size_t F, activation_t kind);

/* Backward: ACCUMULATES dx (N,C), dW1, db1, dW2, db2. dpre and dact (N,F) are scratch. */
void ffn_backward(real *dx, real *dW1, real *db1, real *dW2, real *db2,
                  real *dpre, real *dact, const real *dout, const real *x,
                  const real *pre, const real *act, const real *W1, const real *W2,
                  size_t N, size_t C, size_t F, activation_t kind);

/* Elementwise activation of n values: relu, or exact gelu 0.5·x·(1 + erf(x/√2)). ffn_forward,
 * ffn_backward and these take relu or gelu; SwiGLU's two inputs go through ffn_swiglu_*. */
void ffn_activation_forward(real *out, const real *x, size_t n, activation_t kind);

/* dx (n) = dout ⊙ act'(x)  (overwrites dx). */
void ffn_activation_backward(real *dx, const real *dout, const real *x, size_t n,
                             activation_t kind);

/* SwiGLU's gated product of n values: out = SiLU(gate) ⊙ up, SiLU(a) = a·σ(a). */
void ffn_swiglu_forward(real *out, const real *gate, const real *up, size_t n);

/* Its backward, OVERWRITING dgate = dout ⊙ up ⊙ SiLU'(gate), SiLU'(a) = σ(a)·(1 + a·(1 − σ(a))),
 * and dup = dout ⊙ SiLU(gate). */
void ffn_swiglu_backward(real *dgate, real *dup, const real *dout, const real *gate,
                         const real *up, size_t n);

#endif
