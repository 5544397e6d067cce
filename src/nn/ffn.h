/* ffn.h — position-wise feed-forward sub-layer FFN(x) = act(x·W¹ + b¹)·W² + b² (paper §3). */
#ifndef STABILITY_FFN_H
#define STABILITY_FFN_H

#include <stddef.h>
#include "util/kinds.h"   /* activation_t */

/* Forward: pre (N,F) = x·W1 + b1, act (N,F) = act(pre), out (N,C) = act·W2 + b2. */
void ffn_forward(double *out, double *pre, double *act, const double *x,
                 const double *W1, const double *b1, const double *W2, const double *b2,
                 size_t N, size_t C, size_t F, activation_t kind);

/* Backward: ACCUMULATES dx (N,C), dW1, db1, dW2, db2. dpre and dact (N,F) are scratch. */
void ffn_backward(double *dx, double *dW1, double *db1, double *dW2, double *db2,
                  double *dpre, double *dact, const double *dout, const double *x,
                  const double *pre, const double *act, const double *W1, const double *W2,
                  size_t N, size_t C, size_t F, activation_t kind);

/* Elementwise activation of n values: relu, or exact gelu 0.5·x·(1 + erf(x/√2)). */
void ffn_activation_forward(double *out, const double *x, size_t n, activation_t kind);

/* dx (n) = dout ⊙ act'(x)  (overwrites dx). */
void ffn_activation_backward(double *dx, const double *dout, const double *x, size_t n,
                             activation_t kind);

#endif
