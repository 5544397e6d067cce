/* ffn.c — the feed-forward sub-layer: two linear maps around relu or exact-erf gelu; SwiGLU's
 * gated product (the three linear maps around it are model/sublayer.c's). */
#include <math.h>
#include <string.h>
#include <gsl/gsl_math.h>   /* M_SQRT1_2, M_2_SQRTPI */
#include "nn/ffn.h"
#include "nn/linear.h"
#include "nn/vec.h"
#include "util/threads.h"

/* One activation pass over n values, for the parts of a region (util/threads.h). */
typedef struct {
    real *out;
    const real *x, *dout;
    size_t n;
    activation_t kind;
    int backward;
} act_job_t;

static void relu_part(void *ctx, int t, int nt)
{
    const act_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->n, t, nt, 8, &lo, &hi);
    // x > 0 ? x : 0 (backward: x > 0 ? dout : 0) without a branch (a branch on the sign
    // mispredicts half the time), VR_LANES at a time (nn/vec.h)
    size_t i = lo;
    if (!j->backward) {
        for (; i + VR_LANES <= hi; i += VR_LANES) vr_store(j->out + i, vr_relu(vr_load(j->x + i)));
        for (; i < hi; i++) j->out[i] = j->x[i] > 0.0 ? j->x[i] : 0.0;
    } else {
        for (; i + VR_LANES <= hi; i += VR_LANES)
            vr_store(j->out + i, vr_select_pos(vr_load(j->x + i), vr_load(j->dout + i)));
        for (; i < hi; i++) j->out[i] = j->x[i] > 0.0 ? j->dout[i] : 0.0;
    }
}

static void gelu_part(void *ctx, int t, int nt)
{
    const act_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->n, t, nt, 8, &lo, &hi);
    const real *x = j->x;
    if (!j->backward) {
        // gelu(x) = x·Φ(x) = 0.5·x·(1 + erf(x/√2))  (Hendrycks & Gimpel 2016, exact form)
        for (size_t i = lo; i < hi; i++) j->out[i] = 0.5 * x[i] * (1.0 + erf(x[i] * M_SQRT1_2));
    } else {
        // gelu'(x) = Φ(x) + x·φ(x),  φ(x) = exp(−x²/2)/√(2π)
        const double inv_sqrt_2pi = 0.5 * M_2_SQRTPI * M_SQRT1_2;
        for (size_t i = lo; i < hi; i++) {
            const double cdf = 0.5 * (1.0 + erf(x[i] * M_SQRT1_2));
            const double pdf = inv_sqrt_2pi * exp(-0.5 * x[i] * x[i]);
            j->out[i] = j->dout[i] * (cdf + x[i] * pdf);
        }
    }
}

static void activation(const act_job_t *j)
{
    if (j->kind == ACT_RELU) threads_run(threads_for((double)j->n), relu_part, (void *)j);
    else threads_run(threads_for(40.0 * (double)j->n), gelu_part, (void *)j);
}

void ffn_activation_forward(real *out, const real *x, size_t n, activation_t kind)
{
    const act_job_t j = {.out = out, .x = x, .n = n, .kind = kind};
    activation(&j);
}

void ffn_activation_backward(real *dx, const real *dout, const real *x, size_t n,
                             activation_t kind)
{
    const act_job_t j = {.out = dx, .x = x, .dout = dout, .n = n, .kind = kind, .backward = 1};
    activation(&j);
}

/* SwiGLU's gated product over n values, forward or backward, for the parts of a region. */
typedef struct {
    real *out, *dgate, *dup;
    const real *gate, *up, *dout;
    size_t n;
} glu_job_t;

static void swiglu_part(void *ctx, int t, int nt)
{
    const glu_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->n, t, nt, 8, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const double a = j->gate[i], sig = 1.0 / (1.0 + exp(-a)), silu = a * sig;
        if (!j->dout) {   // SiLU(a)·b  (Shazeer 2020: Swish_1 = SiLU, Hendrycks & Gimpel 2016)
            j->out[i] = silu * j->up[i];
            continue;
        }
        const double g = j->dout[i];
        j->dgate[i] = g * j->up[i] * sig * (1.0 + a * (1.0 - sig));   // SiLU'(a)
        j->dup[i] = g * silu;
    }
}

void ffn_swiglu_forward(real *out, const real *gate, const real *up, size_t n)
{
    const glu_job_t j = {.out = out, .gate = gate, .up = up, .n = n};
    threads_run(threads_for(30.0 * (double)n), swiglu_part, (void *)&j);
}

void ffn_swiglu_backward(real *dgate, real *dup, const real *dout, const real *gate,
                         const real *up, size_t n)
{
    const glu_job_t j = {.dgate = dgate, .dup = dup, .gate = gate, .up = up, .dout = dout, .n = n};
    threads_run(threads_for(30.0 * (double)n), swiglu_part, (void *)&j);
}

void ffn_forward(real *out, real *pre, real *act, const real *x,
                 const real *W1, const real *b1, const real *W2, const real *b2,
                 size_t N, size_t C, size_t F, activation_t kind)
{
    linear_forward(pre, x, W1, b1, N, C, F);       // (N,F)
    ffn_activation_forward(act, pre, N * F, kind);  // (N,F)
    linear_forward(out, act, W2, b2, N, F, C);      // (N,C)
}

void ffn_backward(real *dx, real *dW1, real *db1, real *dW2, real *db2,
                  real *dpre, real *dact, const real *dout, const real *x,
                  const real *pre, const real *act, const real *W1, const real *W2,
                  size_t N, size_t C, size_t F, activation_t kind)
{
    linear_backward_set(dact, dW2, db2, dout, act, W2, N, F, C);   // dact (N,F) =
    ffn_activation_backward(dpre, dact, pre, N * F, kind);      // dpre (N,F)
    linear_backward(dx, dW1, db1, dpre, x, W1, N, C, F);        // dx (N,C) +=
}
