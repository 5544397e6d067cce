/* placement.h — where the norms sit and how each residual adds up: the ONE switch of the
 * model (docs/design.md §1, §6b, §6c). A placement maps (stack, layer index, depth) to one
 * rule per sub-layer; the sub-layer code reads only the rule, never the placement's name.
 *
 * A sub-layer with branch F (self-attention, cross-attention or FFN) computes
 *     u = Norm_in(x) or x;   f = F(u) (Norm_inner inside F);   f' = Norm_out(f) or f
 *     r = skip·x + gate·drop(f') (+ the block's input with b2t);   out = Norm_after(r) or r
 * Post-LN: norm_after.  Pre-LN: norm_in (and a final norm on the stack).
 */
#ifndef STABILITY_PLACEMENT_H
#define STABILITY_PLACEMENT_H

#include "config/config.h"

typedef enum { STACK_LM = 0, STACK_ENC = 1, STACK_DEC = 2 } stack_kind_t;
typedef enum { SUB_SELF_ATTN = 0, SUB_CROSS_ATTN = 1, SUB_FFN = 2 } sublayer_kind_t;

#define PLACEMENT_MAX_SUB 3   /* sub-layers per layer: decoder = self, cross, FFN */

/* How one sub-layer is wired and initialised. */
typedef struct {
    sublayer_kind_t kind;
    int norm_in;        /* u = Norm(x) feeds the branch (normK, K = 1-based sub-layer index) */
    int norm_after;     /* out = Norm(r) (normK) */
    int norm_out;       /* f' = Norm(f) on the branch output (normK_out) */
    int norm_inner;     /* a norm inside the branch, before W_O / W² (normK_inner) */
    double skip;        /* constant scale of the skip path (1 = plain residual) */
    int skip_param;     /* the skip scale is a learnable scalar (omegaK), not skip */
    int gate_param;     /* the branch is scaled by the layer's learnable scalar (rezero_alpha) */
    int b2t;            /* the block's input is added to this residual too */
    double gain_v, gain_o;     /* Xavier gains of W_V and W_O (attention) */
    double gain_w1, gain_w2;   /* Xavier gains of W¹ and W² (FFN) */
} sublayer_rule_t;

/* Sub-layers of one layer of a stack: 2 (self-attention, FFN) or 3 (decoder). */
int placement_sublayers(stack_kind_t stack);

/* The rules of layer l (0-based) of a stack of cfg into rules[placement_sublayers(stack)]. */
void placement_layer(const config_t *cfg, stack_kind_t stack, int l, sublayer_rule_t *rules);

/* True when the stack ends with a final norm (final_norm = on, or auto and the placement
 * leaves the residual stream unnormalised, e.g. Pre-LN; never with norm = none). */
int placement_final_norm(const config_t *cfg, stack_kind_t stack);

#endif
