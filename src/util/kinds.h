/* kinds.h — the kinds of normalisation and activation the kernels implement (nn/norm.h,
 * nn/ffn.h) and a configuration selects (config/config.h: model.norm, model.activation).
 * Their one definition sits in the lowest folder, so that config/ need not include nn/
 * (docs/design.md §2). */
#ifndef STABILITY_KINDS_H
#define STABILITY_KINDS_H

/* Which normalisation (model.norm; DyT is Zhu et al. 2025's elementwise γ ⊙ tanh(α·x) + β). */
typedef enum { NORM_LAYERNORM = 0, NORM_RMSNORM = 1, NORM_NONE = 2, NORM_DYT = 3 } norm_kind_t;

/* The FFN's activation (model.activation). ACT_SWIGLU is a gated unit, not an elementwise
 * function: FFN(x) = (SiLU(x·W¹ + b¹) ⊙ (x·W³ + b³))·W² + b² (Shazeer 2020; nn/ffn.h). */
typedef enum { ACT_RELU = 0, ACT_GELU = 1, ACT_SWIGLU = 2 } activation_t;

#endif
