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

/* Per channel of each layer row's output (the residual stream after the layer, before any final
 * norm): max |x_c| over the batch's counted positions, into out (L, nchannel) — the outliers a
 * per-tensor fp8 scale must cover (Fishman et al. 2025; Dettmers et al. 2022). */
void rounding_channel_amax(const probe_axes_t *ax, const model_t *m, double *out);

/* SwiGLU (model.activation = swiglu): per layer row and hidden unit j, the cosine between the
 * unit's gate and linear weight vectors, W¹[:, j] and W³[:, j] (Fishman et al. 2025: they align
 * during long training and SwiGLU then squares the outliers), into out (L, nunit); NaN where a
 * layer has no SwiGLU, or a vector is 0. */
void rounding_swiglu_cos(const probe_axes_t *ax, const model_t *m, double *out);

#endif
