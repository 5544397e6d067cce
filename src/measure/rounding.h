/* rounding.h — what bfloat16 rounding does to the forward, read from the statistics the last
 * forward kept (docs/design.md, "Low precision, emulated"). */
#ifndef STABILITY_ROUNDING_H
#define STABILITY_ROUNDING_H

#include "measure/probe.h"

/* The bias of softmax·V's rounding per layer row and head (the probes' head axis, as
 * attn_entropy's): the mean over the batch of each (batch, head)'s mean of (bf16(P) − P)·V
 * (nn/attention.h; Qiu & Yao 2025), into out (L, nhead); NaN where the forward kept none
 * (round_attn_probs off, a float run) or a head does not exist. */
void rounding_pv_bias(const probe_axes_t *ax, const model_t *m, double *out);

#endif
