/* model.h — the transformer: one stack (arch = lm) or an encoder and a decoder (encdec), the
 * output layer and the loss, over one parameter buffer (docs/design.md §1, §5, §6b).
 *
 * Notation: B batch rows, T target (lm: sequence) length, S source length, C = d, F = d_ff,
 * H heads, V vocab, N = B·T rows. Row vectors, y = x·W + b, W stored [in][out].
 *   lm:      x_final = stack(tokens);                 logits = x_final·W_embᵀ (tied) or ·lm_head
 *   encdec:  mem = encoder(src);  y = decoder(tokens, mem);  logits from y as above
 * The layers are sub-layers wired by the placement (model/placement.h).
 *
 * All parameters live in one buffer (params) with named tensors (model/tensors.h); their
 * gradients in a buffer of the same layout (grads). Activations live in one arena (act_mem)
 * sized for the largest batch at model_create; the backward's in another (dact_mem): the
 * stream gradients of each stack and the sub-layers' shared scratch. No allocation in a step.
 *
 * Threads: the GEMMs run on OpenBLAS's threads; everything else in a step is serial and in a
 * fixed order, so a step is bit-reproducible for a given thread count (docs/performance.md).
 */
#ifndef STABILITY_MODEL_H
#define STABILITY_MODEL_H

#include "util/real.h"

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "config/config.h"
#include "data/batch.h"
#include "model/stack.h"
#include "model/tensors.h"

typedef struct {
    /* Dimensions and switches, copied from the config. */
    arch_t arch;
    int L, M;                /* layers of the (encoder) stack; decoder layers (0 for lm) */
    int C, H, Dh, F, V;
    int T, S, B;             /* capacity: target length, source length, rows */
    batch_caps_t caps;
    norm_kind_t norm;
    double norm_eps, dropout, label_smoothing;
    double dyt_alpha;        /* DyT's α at initialisation */
    double embed_scale;      /* of tok_embed's initialisation (T-Fixup), else 1 */
    double mup_ratio;        /* μP (mup_simple or mup, docs/design.md §6h): r =
                                init.base_width / d; 0 for the standard parametrization */
    int mup_table3;          /* 1 under init.parametrization = mup (Table 3), else 0 */
    double logit_scale;      /* the output logits' multiplier (§6h): r under mup_simple and
                                under mup untied, √r under mup tied, else 1 */
    int causal, tied, final_norm;
    int bias;                /* model.bias: the linear maps have biases */
    positions_t positions;   /* model.positions (docs/design.md §6i) */
    sublayer_shape_t shape;

    /* Parameters, gradients, and the registry of named tensors. */
    size_t num_params;
    real *params;          /* (num_params) */
    real *grads;           /* (num_params) */
    tensor_info_t *tensors;  /* [num_tensors], in buffer order */
    int num_tensors;
    tensor_list_t list;
    real *tok_embed, *gtok_embed;   /* (V,C) */
    real *lm_head, *glm_head;       /* (C,V) or NULL when tied */

    /* The stacks: stack[0] is the lm stack or the encoder, stack[1] the decoder. */
    int nstacks;
    layer_stack_t stack[2];
    int rows;                /* probe layer rows: L + M */

    /* Activations and their gradients. */
    size_t num_acts, num_dacts;
    real *act_mem, *dact_mem;
    real *pe;              /* (max(T,S), C) sinusoidal positions, or NULL (rope, none) */
    real *rope_cos, *rope_sin;   /* (max(T,S), Dh/2) rotary positions' tables, or NULL */
    real *logits;          /* (N,V) */
    real *probs;           /* (N,V) softmax(logits) */
    real *losses;          /* (N) per-token loss (0 where not scored) */
    real *lse;             /* (N) log Z = logsumexp of each position's logits */
    real *logit_absmax;    /* (N) max |logit| of each position */
    int *tgt_len;            /* (B) encdec: non-padding decoder positions of the last batch */
    real *dlogits;         /* (N,V) */
    int *src_len;            /* (B) non-padding source positions of the last batch */
    sublayer_scratch_t scratch;

    /* The last batch and its loss. */
    batch_t batch;           /* borrowed from the caller for the backward */
    double loss;             /* the cross-entropy */
    double z_loss;           /* train.z_loss: the coefficient c of the z-loss (0 = off) */
    double z_term;           /* c·mean over scored positions of (log Z)² (NaN: none scored) */
    int num_targets;         /* scored targets in the batch */
} model_t;

/* Allocate a model for cfg (params, grads, activations for the largest batch caps; NULL:
 * the config's B = data.batch, T = seq_len, S = src_len). Returns NULL when out of memory. */
model_t *model_create(const config_t *cfg, const batch_caps_t *caps);

/* Free everything model_create allocated. */
void model_free(model_t *m);

/* Elements (reals, util/real.h) model_create would allocate for cfg and caps (parameters,
 * gradients, activations, scratch): the memory estimate checked before a run starts; beyond 64
 * layers counted by arithmetic, so that it allocates nothing that grows with depth. */
double model_memory_doubles(const config_t *cfg, const batch_caps_t *caps);

/* Initialise parameters (docs/design.md §5, init.scheme) from rng, in buffer order: γ = 1,
 * β = 0, biases 0, tok_embed and lm_head ~ N(0, 1/C) (init.embed = xavier_uniform:
 * U(±√(6/(rows + cols)))), matrices Xavier/normal times their gain; zero_qk zeroes the
 * self-attention's W_Q, W_K. μP (docs/design.md §6h): matrices with variance gain²/fan_in
 * (init.scheme = normal: (gain·std)²·base_width/d), in the scheme's distribution; under mup
 * (Table 3) an untied lm_head's variance divided by base_width/d. */
void model_init(model_t *m, const config_t *cfg, gsl_rng *rng);

/* The multiplier of tensor t's learning rate (docs/design.md §6h): r = base_width/d for the
 * hidden matrices under either μP, √r for tok_embed under mup (Yang et al. 2022, Table 3, Adam),
 * 1 for every other tensor and parametrization. */
double model_lr_scale(const model_t *m, const tensor_info_t *t);

/* Admin (placement = admin): set every ω by the profiling forward of stack_admin_profile on
 * batch b (dropout masks as drawn), the encoder's counter first, then the decoder's. No-op for
 * other placements. */
void model_admin_profile(model_t *m, const batch_t *b);

/* True when the model has Admin's ω (placement = admin). */
int model_has_admin(const model_t *m);

/* Add N(0, scale²) to every 1-D tensor (biases, γ, β), in buffer order, so that checks see
 * values other than the initialisation's zeros and ones (a swapped b_Q/b_K or norm1/norm2
 * would be invisible at γ = 1, β = 0, b = 0). */
void model_perturb(model_t *m, gsl_rng *rng, double scale);

/* 0 when every id of b is valid for m (src, tokens ∈ [−1, V), targets ∈ [−1, V), shapes
 * within the capacity, no row without a source token); else 2 with err set. */
int model_check_batch(const model_t *m, const batch_t *b, char *err, size_t errlen);

/* Draw fresh dropout masks for b's shape from rng (no-op when dropout = 0): the encoder's,
 * then the decoder's. The forward uses the stored masks, so repeated forwards (finite
 * differences) see the same network. */
void model_draw_dropout(model_t *m, const batch_t *b, gsl_rng *rng);

/* Every dropout mask 1 (evaluation without dropout; the next draw replaces them). */
void model_dropout_off(model_t *m);

/* Forward on batch b (checked with model_check_batch by the caller; b->targets NULL: no
 * loss). Returns the mean loss over scored targets (NaN if there are none). */
double model_forward(model_t *m, const batch_t *b);

/* Decoding (model/decode.h), encdec only. Run the encoder on b->src (b->B rows, b->S) and keep
 * its output as the memory model_decode_last attends to; b->tokens is not read. */
void model_encode(model_t *m, const batch_t *b);

/* The decoder on b->tokens (B,T) (no padding inside a row) against the memory of the last
 * model_encode of as many rows; last (B,C) gets the decoder's output at position T−1 of each
 * row, logits (B,V) its logits (model_forward's, of that position only). */
void model_decode_last(model_t *m, const batch_t *b, real *last, real *logits);
/* The objective the backward differentiates: the loss, plus the z-term when train.z_loss > 0. */
double model_objective(const model_t *m);

/* Zero the gradient buffer. */
void model_zero_grad(model_t *m);

/* Backward of the last forward: accumulates ∂objective/∂θ into m->grads (model_objective). */
void model_backward(model_t *m);

/* Find a tensor by name (docs/design.md §5); NULL if absent. */
const tensor_info_t *model_find_tensor(const model_t *m, const char *name);

/* Number of elements of a tensor. */
size_t model_tensor_size(const tensor_info_t *t);

/* The stack whose output the logits read (the lm stack, or the decoder). */
const layer_stack_t *model_output_stack(const model_t *m);

/* The stack of probe layer row r, and the layer index inside it. */
const layer_stack_t *model_row_stack(const model_t *m, int r, int *layer);

#endif
