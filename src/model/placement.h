/* placement.h — where the norms sit and how each residual adds up: the ONE switch of the
 * model (docs/design.md §1, §6b, §6c). A placement maps (stack, layer index, depth) to one
 * rule per sub-layer; the sub-layer code reads only the rule, never the placement's name.
 *
 * A sub-layer with branch F (self-attention, cross-attention or FFN) computes
 *     u = Norm_in(x) or x;   f = F(u) (Norm_inner inside F, before W_O / W²);
 *     f' = Norm_out(c ⊙ f) or c ⊙ f (c: 1, or NormFormer's scale per head);
 *     r = skip·x + gate·drop(f') (+ the block's input with b2t);
 *     out = Norm_after(r) or r
 * Post-LN: norm_after.  Pre-LN: norm_in (and a final norm on the stack).
 */
#ifndef STABILITY_PLACEMENT_H
#define STABILITY_PLACEMENT_H

#include "config/config.h"

typedef enum { STACK_LM = 0, STACK_ENC = 1, STACK_DEC = 2 } stack_kind_t;
typedef enum { SUB_SELF_ATTN = 0, SUB_CROSS_ATTN = 1, SUB_FFN = 2 } sublayer_kind_t;

#define PLACEMENT_MAX_SUB 3   /* sub-layers per layer: decoder = self, cross, FFN */

/* Init gains of a sub-layer's weight matrices (Xavier's standard deviation times the gain);
 * GAIN_W3 is SwiGLU's up projection, scaled wherever a scheme scales W¹ (docs/design.md §6i). */
enum { GAIN_Q, GAIN_K, GAIN_V, GAIN_O, GAIN_W1, GAIN_W2, GAIN_W3, GAIN_COUNT };

/* How one sub-layer is wired and initialised. */
typedef struct {
    sublayer_kind_t kind;
    int norm_in;        /* u = Norm(x) feeds the branch (site normK, K = 1-based index) */
    int norm_after;     /* out = Norm(r) (site normK) */
    int norm_out;       /* f' = Norm(f) on the branch output (site normK_out; Peri-LN) */
    int norm_inner;     /* a norm inside the branch before W_O / W² (site normK_inner; Sub-LN) */
    double skip;        /* constant scale of the skip path (1 = plain residual; DeepNorm α) */
    int skip_param;     /* the skip scale is a learnable d-vector ω (omegaK; Admin) */
    int gate_param;     /* the branch is scaled by the layer's learnable α (rezero_alpha) */
    int b2t;            /* the block's input is added to this residual too (B2T) */
    int head_scale;     /* the attention's output scaled per head by a learnable H-vector
                           before Norm_out (head_scaleK; NormFormer) */
    double gain[GAIN_COUNT];
} sublayer_rule_t;

/* Sub-layers of one layer of a stack: 2 (self-attention, FFN) or 3 (decoder). */
int placement_sublayers(stack_kind_t stack);

/* The rules of layer l (0-based) of a stack of cfg into rules[placement_sublayers(stack)]. */
void placement_layer(const config_t *cfg, stack_kind_t stack, int l, sublayer_rule_t *rules);

/* True when the stack ends with a final norm (config_has_final_norm: final_norm = on, or auto
 * and a placement that leaves the stream unnormalised; never with norm = none). */
int placement_final_norm(const config_t *cfg, stack_kind_t stack);

/* The scale of the token embedding's initialisation (T-Fixup's (9N)^−¼; else 1). */
double placement_embed_scale(const config_t *cfg);

/* Layers of a stack of cfg (lm: layers; encoder: layers; decoder: dec_layers). */
int placement_depth(const config_t *cfg, stack_kind_t stack);

/* Mix-LN: how many of a stack's first layers are Post-LN, ⌊mix_ratio·L⌋. */
int placement_mix_post_layers(const config_t *cfg, stack_kind_t stack);

/* DeepNet's skip scale α and init gain β of a stack (Wang et al. 2022, Table 1). */
void placement_deepnorm(const config_t *cfg, stack_kind_t stack, double *alpha, double *beta);

/* Sub-LN's init gain γ of a stack (torchscale's Magneto). */
double placement_subln_gain(const config_t *cfg, stack_kind_t stack);

/* T-Fixup's scale of W_V, W_O, W¹, W² in a stack (Huang et al. 2020). */
double placement_tfixup_scale(const config_t *cfg, stack_kind_t stack);

#endif
