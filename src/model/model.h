/* model.h — the transformer: parameter layout, whole-stack forward and backward.
 *
 * Notation (DESIGN.md §1): B batch, T = n sequence length, C = d model width, F = d_ff,
 * H heads, V vocab, L layers, N = B·T rows. Row vectors, y = x·W + b, W stored [in][out].
 *
 * Post-LN layer:  x² = x + MHA(x);  x³ = LN1(x²);  x⁵ = x³ + FFN(x³);  x_{l+1} = LN2(x⁵)
 * Pre-LN  layer:  x³ = x + MHA(LN1(x));  x_{l+1} = x³ + FFN(LN2(x³));  x_final = LNf(x_{L+1})
 * Input:  x_1 = tok_embed[token]·√d + PE (sinusoidal);  logits = x_final·W_embᵀ (tied) or ·lm_head.
 *
 * All parameters live in one buffer (model.params) with named views; their gradients in a
 * buffer of the same layout (model.grads). All activations live in one arena (model.act_mem),
 * sized for (B, T) at model_create: no allocation inside a step. The backward's activation
 * gradients (model.da) need one layer at a time: two alternating buffer sets (dact_mem).
 *
 * Threads: the GEMMs run on OpenBLAS's threads; everything else in a step is serial and in a
 * fixed order, so a step is bit-reproducible for a given thread count (docs/performance.md).
 */
#ifndef STABILITY_MODEL_H
#define STABILITY_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "config/config.h"

/* Per-layer parameter tensors, in buffer order. Kept in sync with PARAM_NAMES in model.c. */
enum {
    P_WQ, P_BQ, P_WK, P_BK, P_WV, P_BV, P_WO, P_BO,
    P_W1, P_B1, P_W2, P_B2,
    P_NORM1_GAMMA, P_NORM1_BETA, P_NORM2_GAMMA, P_NORM2_BETA,
    P_NUM_LAYER_PARAMS
};

/* Views into one parameter (or gradient) buffer. NULL where a tensor does not exist
 * (no norm params for norm = none, no beta for rmsnorm, no lm_head when tied, no final norm). */
typedef struct {
    double *w[P_NUM_LAYER_PARAMS];   /* w[P_WQ] (C,C) ... w[P_W1] (C,F), w[P_B1] (F), w[P_W2] (F,C) */
} layer_view_t;

typedef struct {
    double *tok_embed;      /* (V, C) */
    double *lm_head;        /* (C, V) or NULL when tied */
    double *final_gamma;    /* (C) or NULL */
    double *final_beta;     /* (C) or NULL */
    layer_view_t *layers;   /* [L] */
} param_view_t;

/* One named parameter tensor: how dumps, gradcheck, probes and checkpoints see the buffer. */
typedef struct {
    char name[48];          /* DESIGN §5: "tok_embed", "layers/03/w1", "final_norm.gamma" */
    size_t offset;          /* into params/grads */
    size_t rows, cols;      /* 2-D tensors (rows = in); 1-D tensors have rows = 1 */
    int rank;               /* 1 or 2 */
    int layer;              /* 0..L-1, or -1 for tok_embed / lm_head / final_norm */
    int kind;               /* P_* for layer tensors, -1 otherwise */
} tensor_info_t;

/* Per-layer saved activations (views into the arena). For both placements:
 *   norm1_in → norm1 → (post: x³ | pre: attention input)
 *   norm2_in → norm2 → (post: layer output | pre: FFN input)
 * Post: norm1_in = x², norm2_in = x⁵.  Pre: norm1_in = layer input x, norm2_in = x³. */
typedef struct {
    double *in;             /* (N,C) layer input x_l (alias of previous layer's out) */
    double *norm1_in;       /* (N,C) alias: post → resid1 (x²), pre → in */
    double *norm1;          /* (N,C) */
    double *norm1_mean, *norm1_rstd;   /* (N) */
    double *q, *k, *v;      /* (N,C) each; head h uses columns [h·Dh, (h+1)·Dh) */
    double *att;            /* (B,H,T,T) softmax(q·kᵀ/√Dh) over keys (0 where causally masked) */
    double *ctx;            /* (N,C) att·V, heads concatenated */
    double *attn_out;       /* (N,C) ctx·Wo + bo (before dropout) */
    double *resid1;         /* (N,C) post: x² = in + drop(attn_out); pre: x³ = in + drop(attn_out) */
    double *norm2_in;       /* (N,C) alias: post → resid2 (x⁵), pre → resid1 (x³) */
    double *norm2;          /* (N,C) */
    double *norm2_mean, *norm2_rstd;   /* (N) */
    double *ffn_pre;        /* (N,F) norm-side input ·W1 + b1 */
    double *ffn_act;        /* (N,F) act(ffn_pre) */
    double *ffn_out;        /* (N,C) ffn_act·W2 + b2 (before dropout) */
    double *resid2;         /* (N,C) post: x⁵ = x³ + drop(ffn_out); pre: x_{l+1} = x³ + drop(ffn_out) */
    double *out;            /* (N,C) alias: post → norm2, pre → resid2 */
    double *mask_attn;      /* (N,C) dropout masks (0 or 1/(1−p)); NULL when dropout = 0 */
    double *mask_ffn;       /* (N,C) */
} layer_acts_t;

typedef struct {
    double *embed;          /* (N,C) x_1 = tok_embed[tok]·√C + PE, then dropout */
    double *mask_embed;     /* (N,C) or NULL */
    layer_acts_t *layers;   /* [L] */
    double *final_in;       /* (N,C) alias of layers[L-1].out */
    double *final;          /* (N,C) final norm output, or alias of final_in without final norm */
    double *final_mean, *final_rstd; /* (N) */
    double *logits;         /* (N,V) */
    double *probs;          /* (N,V) softmax(logits) */
    double *losses;         /* (N) per-token loss (0 where ignored) */
} acts_t;

typedef struct {
    /* Dimensions and switches, copied from the config. */
    int L, C, H, Dh, F, V, T, B;
    placement_t placement;
    norm_kind_t norm;
    activation_t activation;
    double norm_eps, dropout, label_smoothing;
    int causal, tied, final_norm;

    /* Parameters, gradients and their views. */
    size_t num_params;
    double *params;         /* (num_params) */
    double *grads;          /* (num_params) */
    param_view_t p, g;
    tensor_info_t *tensors; /* [num_tensors], in buffer order */
    int num_tensors;

    /* Activations (a, in act_mem) and their gradients (da, in dact_mem). a keeps every layer's
     * forward values until the next forward. da.layers[l] shares its buffers with da.layers[l ± 2]
     * (da.layers[l].in is da.layers[l−1].out): a layer's gradients are valid only during the
     * backward; da has no masks, probs or losses (NULL). */
    size_t num_acts;        /* doubles in act_mem (the saved activations) */
    size_t num_dacts;       /* doubles in dact_mem */
    double *act_mem, *dact_mem;
    acts_t a, da;
    double *pe;             /* (T, C) sinusoidal positions */

    /* Last batch and loss. */
    const int32_t *tokens;  /* (B,T) borrowed from the caller for the backward */
    const int32_t *targets; /* (B,T), −1 = ignored */
    double loss;
    int num_targets;        /* non-ignored targets in the batch */
} model_t;

/* Allocate a model (params, grads, activations for batch B) from cfg. Returns NULL on OOM. */
model_t *model_create(const config_t *cfg);

/* Free everything model_create allocated. */
void model_free(model_t *m);

/* Initialise parameters (DESIGN §5, init.scheme) from rng, in buffer order: γ=1, β=0, biases 0,
 * tok_embed ~ N(0, 1/C), lm_head ~ N(0, 1/C), matrices Xavier/normal; zero_qk zeroes W_Q, W_K. */
void model_init(model_t *m, const config_t *cfg, gsl_rng *rng);

/* Add N(0, scale²) to every 1-D tensor (biases, γ, β), in buffer order, so that checks see
 * values other than the initialisation's zeros and ones (a swapped b_Q/b_K or norm1/norm2
 * would be invisible at γ = 1, β = 0, b = 0). */
void model_perturb(model_t *m, gsl_rng *rng, double scale);

/* Draw fresh dropout masks from rng (no-op when dropout = 0). The forward uses the stored masks,
 * so repeated forwards (finite differences) see the same network. */
void model_draw_dropout(model_t *m, gsl_rng *rng);

/* Forward on tokens/targets (B,T) (targets may be NULL: no loss). Returns the mean loss over
 * non-ignored targets (NaN if there are none). */
double model_forward(model_t *m, const int32_t *tokens, const int32_t *targets);

/* Zero the gradient buffer. */
void model_zero_grad(model_t *m);

/* Backward of the last forward: accumulates ∂loss/∂θ into m->grads. */
void model_backward(model_t *m);

/* Find a tensor by name (DESIGN §5); NULL if absent. */
const tensor_info_t *model_find_tensor(const model_t *m, const char *name);

/* Number of elements of a tensor. */
size_t model_tensor_size(const tensor_info_t *t);

#endif
