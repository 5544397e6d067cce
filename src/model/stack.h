/* stack.h — a stack: embedding → L layers of sub-layers → optional final norm
 * (docs/design.md §1, §6b). arch = lm is one stack; encdec is an encoder and a decoder.
 *
 *   x_1 = drop(tok_embed[id]·√d + PE)   (a padding position, id −1, is the zero vector; PE only
 *                                        with model.positions = sinusoidal, docs/design.md §6i)
 *   x_{s+1} = sublayer_s(x_s),  s = 0 … L·nsub − 1;   output = Norm_final(x_top) or x_top
 *
 * The backward keeps one gradient of the residual stream at a time: two buffers that the
 * sub-layers alternate between (sub-layer s reads dstream[(s+1)%2], writes dstream[s%2]).
 */
#ifndef STABILITY_STACK_H
#define STABILITY_STACK_H

#include "util/real.h"

#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "model/sublayer.h"

typedef struct {
    stack_kind_t kind;
    int L, nsub;                 /* layers; sub-layers per layer */
    int first_row;               /* probe layer row of its layer 0 (the decoder's follow the encoder's) */
    sublayer_t *subs;            /* [L·nsub] in forward order */
    norm_site_t final;           /* the final norm (final.on) */
    /* forward */
    real *embed;               /* (N,C) x_1 */
    real *mask_embed;          /* (N,C) or NULL */
    const real *top;           /* (N,C) the last sub-layer's out */
    const real *output;        /* (N,C) final.out or top */
    /* backward */
    real *dstream[2];          /* (N,C) ∂L/∂x_s, alternating */
    real *dfinal;              /* (N,C) ∂L/∂output (dstream[(L·nsub)%2] without a final norm) */
    real *dblock;              /* (N,C) B2T: ∂L/∂(a layer's input) through its last residual */
    real *dout_norm;           /* [L·nsub] of the last backward: E_token ‖∂L/∂(sub-layer out)‖
                                    over non-padding tokens (Liu et al. 2020, Fig. 3) */
} layer_stack_t;

/* Lay out the stack's activations (forward arena: base) and its stream gradients (gradient
 * arena: gbase) for cap rows; either base may be NULL to count. Adds the doubles used to
 * *n and *gn. */
void stack_layout(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_caps_t *cap,
                  int dropout, real *base, size_t *n, real *gbase, size_t *gn);

/* Draw inverted-dropout masks (0 with probability p, else 1/(1−p)) for N rows from rng:
 * the embedding's, then every sub-layer's in forward order. No-op without masks. */
void stack_draw_dropout(layer_stack_t *st, size_t N, int C, double p, gsl_rng *rng);

/* Set every dropout mask of N rows to 1 (evaluation). */
void stack_masks_off(layer_stack_t *st, size_t N, int C);

/* Forward: embed ids (B,T) with tok_embed (V,C) and pe (T,C) (NULL: no positions added), then
 * every sub-layer. */
void stack_forward(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                   const int32_t *ids, const real *tok_embed, const real *pe);

/* Admin's profiling forward (Liu et al. 2020): like stack_forward, but before each sub-layer
 * i with a learnable skip scale ω_i ← ratio (ratio starts at 1), and after it
 * ratio ← √(Var(x ⊙ ω_i) + Var(drop(F_i))), population variances over every element of the
 * non-padding rows. Leaves the ω values in the parameters. */
void stack_admin_profile(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                         const int32_t *ids, const real *tok_embed, const real *pe);

/* Backward from st->dfinal (filled by the caller: the output layer, or the decoder's
 * cross-attention); accumulates into the parameter gradients, dmem (cross-attention) and
 * gtok_embed (V,C). */
void stack_backward(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                    const int32_t *ids, real *dmem, real *gtok_embed,
                    sublayer_scratch_t *sc);

/* The sub-layer at layer l, position i. */
sublayer_t *stack_sublayer(const layer_stack_t *st, int l, int i);

#endif
