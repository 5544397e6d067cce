/* probe.h — the paper's §3 as a measurement: per-layer gradient, hidden-state and
 * LayerNorm-Jacobian norms at initialisation, over seeds and mini-batches (DESIGN §1, §6).
 * Numerics only: the caller writes the result (h5io) and shows progress.
 */
#ifndef STABILITY_PROBE_H
#define STABILITY_PROBE_H

#include <stddef.h>
#include "config/config.h"
#include "model/model.h"

/* Hidden-state sites of a layer (axis "site"). Paper symbols per placement:
 *   Post-LN: x_l, x²_l (= x_l + MHA), x⁵_l (= x³_l + FFN), x_{l+1} = LN(x⁵_l)
 *   Pre-LN:  x_l, x³_l (= x_l + MHA), x_{l+1} (= x³_l + FFN), x_{l+1}            */
enum { SITE_INPUT, SITE_RESID1, SITE_RESID2, SITE_OUTPUT, SITE_COUNT };
/* Norm instances of a layer (axis "norm"): norm1, norm2. The final norm is separate. */
enum { PROBE_NORM1, PROBE_NORM2, PROBE_NORMS };
/* Non-layer tensors (axis "extra"); NaN where the model has no such tensor. */
enum { EXTRA_TOK_EMBED, EXTRA_LM_HEAD, EXTRA_FINAL_GAMMA, EXTRA_FINAL_BETA, EXTRA_COUNT };

extern const char *const PROBE_PARAM_NAMES[P_NUM_LAYER_PARAMS];
extern const char *const PROBE_SITE_NAMES[SITE_COUNT];
extern const char *const PROBE_NORM_NAMES[PROBE_NORMS];
extern const char *const PROBE_EXTRA_NAMES[EXTRA_COUNT];

/* Jacobian statistics of one norm instance over the tokens of a batch. */
typedef struct {
    double spec;      /* mean over tokens of ‖J‖₂ */
    double spec_max;  /* max over tokens of ‖J‖₂ */
    double fro;       /* mean of ‖J‖_F */
    double lemma3;    /* mean of ‖J‖₂·‖x−μ‖/√d (Lemma 3: O(1)); RMSNorm: μ = 0 */
    double bound;     /* mean of √d/‖x−μ‖ (Lemma 3's scale) */
} probe_jacobian_t;

/* Everything a probe measures; arrays are row-major over the shapes given. */
typedef struct {
    int S, L;                     /* seeds, layers; P = P_NUM_LAYER_PARAMS */
    double *grad_fro;             /* (S,L,P) ‖E_batch ∇W‖_F (the paper's "expected gradient") */
    double *grad_fro_batchmean;   /* (S,L,P) E_batch ‖∇W‖_F */
    double *extra_grad_fro;       /* (S,EXTRA_COUNT) */
    double *extra_grad_fro_batchmean; /* (S,EXTRA_COUNT) */
    double *hidden_sqnorm;        /* (S,L,SITE_COUNT) E_token ‖x‖² */
    double *final_sqnorm;         /* (S) E_token ‖x_final‖² (the logits' input) */
    double *jacobian_spec;        /* (S,L,PROBE_NORMS) */
    double *jacobian_spec_max;    /* (S,L,PROBE_NORMS) */
    double *jacobian_fro;         /* (S,L,PROBE_NORMS) */
    double *jacobian_lemma3;      /* (S,L,PROBE_NORMS) */
    double *jacobian_bound;       /* (S,L,PROBE_NORMS) */
    double *final_jacobian;       /* (S,5): spec, spec_max, fro, lemma3, bound; NaN w/o final norm */
    double *loss;                 /* (S) mean loss over the batches */
} probe_t;

/* Called after every batch: done of total batches. */
typedef void (*probe_progress_fn)(void *ctx, long done, long total);

/* Allocate a probe_t for S seeds and L layers (all NaN). NULL on OOM. */
probe_t *probe_alloc(int S, int L);

/* Free a probe_t. */
void probe_free(probe_t *p);

/* Run the probe of cfg: for seed s = 0..probe.seeds−1 initialise from init.seed + s, average
 * over probe.batches batches (data stream init.seed + s + DATA_SEED_OFFSET). Returns 0, 1 (OOM)
 * or 2 (a config the data task rejects; err set). progress may be NULL. */
int probe_run(const config_t *cfg, probe_t *p, probe_progress_fn progress, void *ctx,
              char *err, size_t errlen);

/* ‖∇W‖_F of every tensor of grads (layout of m) into layer (L,P) and extra (EXTRA_COUNT);
 * NaN where a tensor does not exist. */
void probe_grad_norms(const model_t *m, const double *grads, double *layer, double *extra);

/* Hidden-state squared norms (L,SITE_COUNT) averaged over tokens, from m's last forward;
 * *final gets that of x_final. */
void probe_hidden_norms(const model_t *m, double *hidden, double *final);

/* Jacobian statistics of every norm instance (L,PROBE_NORMS) and of the final norm, from m's
 * last forward (exact per-token norms, norm_jacobian_norms). No-op for norm = none. */
void probe_jacobians(const model_t *m, probe_jacobian_t *layers, probe_jacobian_t *final);

#endif
