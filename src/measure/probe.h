/* probe.h — the paper's §3 as a measurement: per-layer gradient, hidden-state and
 * norm-Jacobian norms, and the gradient reaching every sub-layer's output (Liu et al. 2020,
 * Fig. 3), over seeds and mini-batches (docs/design.md §1, §6, §6b).
 * Numerics only: the caller writes the result (io/h5io) and shows progress.
 *
 * Every array is indexed by named axes taken from the model (probe_axes_from_model), never by
 * fixed enums: "layer" rows run over the encoder's layers, then the decoder's (axis names in
 * "stack"); "param" names the layer tensors (model/tensors.h's canonical order: a norm site
 * counts its γ and β columns even where the norm kind has no β); "site" the hidden states
 * (input, resid1, resid2, [resid3], output: residK = the K-th sub-layer's residual sum);
 * "norm" the norm sites (norm1, norm2, [norm3]); "extra" the tensors outside the layers;
 * "sub" the sub-layers (self, [cross], ffn). NaN where a layer lacks an entry.
 */
#ifndef STABILITY_PROBE_H
#define STABILITY_PROBE_H

#include <stddef.h>
#include "config/config.h"
#include "model/session.h"
#include "model/model.h"

/* Names along a probe's axes (owned strings), as built from a model or read from a file. */
typedef struct {
    int L;                   /* layer rows */
    int nparam, nsite, nnorm, nextra, nsub, nhead;   /* names on each axis */
    char **param;            /* [nparam] the layer tensors ("w1", "norm2.gamma") */
    char **site;             /* [nsite] the hidden states ("input", "resid1", …, "output") */
    char **norm;             /* [nnorm] the norm sites ("norm1", "norm2_out", …) */
    char **extra;            /* [nextra] the tensors outside the layers ("tok_embed", …) */
    char **sub;              /* [nsub] the sub-layers ("self", "cross", "ffn") */
    char **stack;            /* [L] "lm", "enc" or "dec" */
    char **head;             /* [nhead] every attention's heads: "self.h0" …, "cross.h0" … */
    int nchannel, nunit;     /* d_model and d_ff (the precision measures' axes) */
    char **channel;          /* [nchannel] "c0" … of the residual stream */
    char **unit;             /* [nunit] "u0" … of the FFN's hidden layer */
    int encdec;              /* the model has an encoder (enc_* arrays) */
    int admin;               /* the model has Admin's ω (admin_omega) */
} probe_axes_t;

/* Fill axes from m (names of its layer tensors, sites, norms, ...). 0, or 1 when out of memory. */
int probe_axes_from_model(probe_axes_t *axes, const model_t *m);

/* Deep copy. 0 or 1. */
int probe_axes_copy(probe_axes_t *dst, const probe_axes_t *src);

/* Free the names. */
void probe_axes_free(probe_axes_t *axes);

/* Index of name on an axis of n names, or −1. */
int probe_axis_find(char *const *names, int n, const char *name);

/* Jacobian statistics of one norm instance over the tokens of a batch. */
typedef struct {
    double spec;      /* mean over tokens of ‖J‖₂ */
    double spec_max;  /* max over tokens of ‖J‖₂ */
    double fro;       /* mean of ‖J‖_F */
    double lemma3;    /* mean of ‖J‖₂·‖x−μ‖/√d (Lemma 3: O(1)); RMSNorm: μ = 0 */
    double bound;     /* mean of √d/‖x−μ‖ (Lemma 3's scale) */
} probe_jacobian_t;

#define PROBE_JACOBIAN_FIELDS 5

/* Everything a probe measures; arrays are row-major over the shapes given. */
typedef struct {
    int S;                        /* seeds */
    probe_axes_t ax;
    double *grad_fro;             /* (S,L,nparam) ‖E_batch ∇W‖_F (the paper's "expected gradient") */
    double *grad_fro_batchmean;   /* (S,L,nparam) E_batch ‖∇W‖_F */
    double *extra_grad_fro;       /* (S,nextra) */
    double *extra_grad_fro_batchmean; /* (S,nextra) */
    double *hidden_sqnorm;        /* (S,L,nsite) E_token ‖x‖² */
    double *final_sqnorm;         /* (S) E_token ‖x_final‖² (the logits' input) */
    double *jacobian_spec;        /* (S,L,nnorm) */
    double *jacobian_spec_max;    /* (S,L,nnorm) */
    double *jacobian_fro;         /* (S,L,nnorm) */
    double *jacobian_lemma3;      /* (S,L,nnorm) */
    double *jacobian_bound;       /* (S,L,nnorm) */
    double *final_jacobian;       /* (S,5): spec, spec_max, fro, lemma3, bound; NaN w/o final norm */
    double *subout_grad;          /* (S,L,nsub) E_token ‖∂L/∂(sub-layer output)‖ (Liu et al.) */
    double *loss;                 /* (S) mean loss over the batches */
    double *enc_final_sqnorm;     /* (S) encdec: of the encoder's output (mem); else NULL */
    double *enc_final_jacobian;   /* (S,5) encdec: of the encoder's final norm; else NULL */
    double *output_change;        /* (S) Admin's output change of the last hidden state */
    double *enc_output_change;    /* (S) encdec: of the encoder's output; else NULL */
    double *admin_omega;          /* (S,L,nsub) admin: the profiled ω of every sub-layer; else NULL */
    /* training dynamics at initialisation (measure/dynamics.h), mean over batches (maxima: max) */
    double *attn_entropy;         /* (S,L,nhead) attention entropy per head (nats) */
    double *attn_max_logit;       /* (S,L,nhead) max |attention logit| per head */
    double *resid_rms;            /* (S,L) RMS of the residual stream after each layer */
    double *logz_mean_abs;        /* (S) mean over scored positions of |log Z| */
    double *logz_max_abs;         /* (S) max |log Z| */
    double *logit_max;            /* (S) max |output logit| over scored positions */
    /* the curvature (probe_curvature, probe.curvature_every > 0; else NULL) */
    double *hessian_max;          /* (S) λ_max of the Hessian on the seed's measurement batch */
    double *hessian_min;          /* (S) λ_min */
    double *precond_max_active;   /* (S) λ_max(P⁻¹H), P the first update's, ε-floor left out */
    double *hessian_trace;        /* (S) Hutchinson's tr(H) (probe.trace_probes > 0; else NULL) */
    double *hessian_trace_stderr; /* (S) its standard error */
} probe_t;

/* One array of probe_t: its name, where it is, its shape after the seed axis. */
typedef enum { PA_NONE, PA_PARAM, PA_SITE, PA_NORM, PA_EXTRA, PA_SUB, PA_FIELDS, PA_HEAD,
               PA_KIND, PA_CHANNEL, PA_UNIT } probe_axis_id_t;

/* The HDF5 name of an axis: "param", "site", "norm", "tensor", "sub", "field", "head", "kind"
 * (the curvature's block kinds, model/tensors.h: the same for every model), "channel", "unit". */
const char *probe_axis_label(probe_axis_id_t id);
typedef enum { PO_ALWAYS, PO_ENCDEC, PO_ADMIN, PO_CURV } probe_only_t;   /* PO_CURV: not
    allocated by probe_alloc; probe_curvature_alloc does (probe.curvature_every > 0) */
typedef struct {
    const char *name;
    size_t field;                 /* offsetof(probe_t, array) */
    int layered;                  /* a layer axis after the seed axis */
    probe_axis_id_t axis;         /* the last axis */
    probe_only_t only;            /* which models have it */
    const char *description;
} probe_array_t;

/* True when models of axes have array a. */
int probe_array_present(const probe_axes_t *axes, const probe_array_t *a);

extern const probe_array_t PROBE_ARRAYS[];
extern const int PROBE_NUM_ARRAYS;
extern const char *const PROBE_JACOBIAN_FIELD_NAMES[PROBE_JACOBIAN_FIELDS];

/* Length of an axis of axes (PA_NONE: 1). */
int probe_axis_len(const probe_axes_t *axes, probe_axis_id_t id);

/* Names of an axis (NULL for PA_NONE). */
char *const *probe_axis_names(const probe_axes_t *axes, probe_axis_id_t id);

/* Values in one seed's slice of an array. */
size_t probe_array_size(const probe_axes_t *axes, const probe_array_t *a);

/* Allocate a probe_t for S seeds and a copy of axes (all NaN). NULL on OOM. */
probe_t *probe_alloc(int S, const probe_axes_t *axes);

/* 1 when a probe's values overflowed (an infinity anywhere; NaN in a loss, a final norm, or the
 * FFN weights' gradient, which every layer has), with the first one named in what. */
int probe_overflow(const probe_t *p, char *what, size_t len);

/* Free a probe_t. */
void probe_free(probe_t *p);

/* Bytes probe_alloc would take for S seeds of model m's axes (for the memory estimate). */
double probe_memory_bytes(int S, const probe_axes_t *axes);

/* The paper's symbols of the sites (x_l, x^2_l, …) for a single Post-LN or Pre-LN stack, as
 * files have always carried them; NULL for other models. */
const char *const *probe_site_symbols(const config_t *cfg);

/* Called after every batch: done of total batches. */
typedef void (*probe_progress_fn)(void *ctx, long done, long total);

/* Stream of the output change's signs in seed k of a probe: init.seed + k + this. */
#define PROBE_CHANGE_OFFSET 0x6C8E9CF5UL

/* The optimizer's side of the curvature (train/optim.h), given to the probe as a function:
 * the preconditioner P (n) the first update would use from m's gradient (m->grads, after
 * the first batch's backward) and its ε-floored coordinates (n). Returns 1 (P written), 0 (the
 * optimizer has none: sgd) or −1 (out of memory). */
typedef int (*probe_precond_fn)(void *ctx, const model_t *m, double *P, unsigned char *floored);

/* Allocate p's curvature arrays (NaN), with trace the trace's (probe.trace_probes > 0). 0 or 1. */
int probe_curvature_alloc(probe_t *p, int trace);

/* The curvature at initialisation of every seed k (measure/curvature.h, docs/design.md §10):
 * initialise from init.seed + k, the gradient of the seed's first batch (the probe's batch 0,
 * the batch of training's update 1) gives P through precond, the measurement batch comes from
 * the stream init.seed + k + CURV_BATCH_OFFSET, the Lanczos starts from init.seed + k +
 * CURV_START_OFFSET: seed 0 measures what training's update 0 does. Allocates p's curvature
 * arrays. 0, 1 (out of memory), 2 (err: a batch with bad ids, or more memory than there is). */
int probe_curvature(session_t *s, probe_t *p, probe_precond_fn precond, void *ctx,
                    probe_progress_fn progress, void *pctx, char *err, size_t errlen);

/* Run the probe of s->cfg on the open session s: for seed k = 0..probe.seeds−1 initialise
 * from init.seed + k, average over probe.batches batches (and measure the output change on the
 * first). p from probe_alloc with s's axes. progress may be NULL. 0, 1 when out of memory, or
 * 2 when a batch had ids outside the vocabulary (s->error). */
int probe_run(session_t *s, probe_t *p, probe_progress_fn progress, void *ctx);

/* The per-forward measurements, shared with training (train/train.c), on m's last forward
 * and backward:  ‖∇W‖_F of grads (layout of m) into layer (L,nparam) and extra (nextra). */
void probe_grad_norms(const probe_axes_t *ax, const model_t *m, const real *grads,
                      double *layer, double *extra);

/* Hidden-state squared norms (L,nsite) averaged over non-padding tokens; *final that of the
 * logits' input, *enc_final that of the encoder's output (encdec; may be NULL). */
void probe_hidden_norms(const probe_axes_t *ax, const model_t *m, double *hidden,
                        double *final, double *enc_final);

/* Jacobian statistics of every norm site (L,nnorm) and of the final norms (NaN where absent), from
 * m's last forward (exact per-token norms, norm_jacobian_norms). No-op for norm = none. */
void probe_jacobians(const probe_axes_t *ax, const model_t *m, probe_jacobian_t *layers,
                     probe_jacobian_t *final, probe_jacobian_t *enc_final);

/* Admin's ω of every sub-layer (L,nsub) (its first entry: profiling fills the vector with one
 * value); NaN where a sub-layer has none. */
void probe_admin_omega(const probe_axes_t *ax, const model_t *m, double *out);

/* E_token ‖∂L/∂(sub-layer output)‖ (L,nsub) from m's last backward (Liu et al. 2020, Fig. 3). */
void probe_subout_grads(const probe_axes_t *ax, const model_t *m, double *sub);

#endif
