/* round.h — where the emulated bfloat16 precisions round (docs/design.md, "Low precision,
 * emulated"): one process-wide policy of the core it is compiled into, set by the session of a
 * run with train.precision = bfloat16 or bfloat16_pure (model/session.h) and read by the
 * kernels that round: gemm (every operand), attention (the probabilities before ·V), the
 * sub-layer's residual add and the norms' statistics. All places off (the float32 and float64 runs) change no bit.
 */
#ifndef STABILITY_ROUND_H
#define STABILITY_ROUND_H

#include <stddef.h>
#include "util/real.h"

/* The places that round to bfloat16 (nearest-even, util/lowp.h); 0 = that place keeps float32. */
typedef struct {
    int gemm;         /* both operands of every product, before the float32 GEMM */
    int attn_probs;   /* attention probabilities, stored rounded (so also ·V's and backward's) */
    int residual;     /* the residual stream x + f after every sub-layer */
    int norm_stats;   /* each row's mean and 1/√(σ² + ε) of LayerNorm / RMSNorm sites, before
                         they normalise (and as the backward reads them) */
    int fp8;          /* train.precision = fp8: GEMM operands through E4M3 (forward values) and
                         E5M2 (gradients) with per-tensor scales instead of bfloat16 */
    int onednn;       /* with gemm (and not fp8): the products through oneDNN's bf16 matmul
                         (nn/gemm_dnnl.h) instead of sgemm on the rounded operands */
    int attn_fix;     /* with attn_probs, flash attention's form: exp(s − m) rounded before ·V
                         and normalised after (nn/attention.c); 1 with Qiu & Yao 2025's m
                         (train.attn_round_fix), 2 with the row max (the tests' comparison) */
} round_policy_t;

/* Make p the policy of this core (NULL: every place off). */
void round_policy_set(const round_policy_t *p);

/* The current policy (never NULL). */
const round_policy_t *round_policy(void);

/* x (n) rounded to bfloat16 in place, nearest-even (the float32 of the bf16 value). */
void round_bf16(real *x, size_t n);

#if !REAL_IS_FLOAT
/* The float32 core's policy (build/f32/names.h renames it there), for the float64 build's tests. */
void round_policy_set_f32(const round_policy_t *p);
#endif

#endif
