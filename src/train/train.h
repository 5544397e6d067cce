/* train.h — the training loop (docs/design.md §4 [train]). Numerics only: no I/O; the
 * caller gets every step's record through a callback and does the logging, checkpoints and
 * progress.
 *
 * Update t = 1, 2, …, train.steps:
 *   batch, dropout masks ← rng_data;  loss = forward;  g = ∇θ loss;  ‖g‖₂ (before clipping);
 *   diverged (no update) when loss or ‖g‖₂ is not finite, or loss > TRAIN_DIVERGE_FACTOR·ln V
 *   (Adam's step is bounded by ~lr, so even lr = 1e3 gives a finite but absurd loss);
 *   clip;  θ ← optimizer(θ, g, lr(t)).
 * At t = 1 and every probe.every updates the step's own forward/backward is measured per layer
 * (measure/probe.h: gradient, hidden-state, Jacobian and sub-layer output-gradient norms;
 * before clipping and the update). At updates 1…100 and every probe.every, DeepNet's model
 * update on a fixed batch and each tensor's relative update (measure/change.h), after it.
 * With probe.curvature_every = N > 0, the curvature (measure/curvature.h) at update 0 (in
 * update 1, once its gradient gives the preconditioner the update will use) and after every
 * N-th update, on a float64 copy of the model, so the training is the same bit for bit.
 * Text task: validation loss after the update at every train.eval_every-th and the last step.
 * After every update, the RMS of its direction m̂/(√v̂ + ε) per layer (train_t.update_rms);
 * with radam, its ρₜ and rₜ (train_record_t). With train.qk_clip = τ, QK-Clip after every update
 * (train/qk_clip.h); muon, lion, nsgd: their per-tensor statistics at probe updates. With
 * train.schedule = suboptimality the lr of update t comes from its batch's loss (train/subopt.h).
 * Streams (model/session.h): update 1 sees the batch of `stability dump`.
 * The remedies (docs/design.md §6k): the lr of update t is lrctl_scheduled (the schedule, the
 * catapult start or AutoWU's), capped by the curvature row before it (lr_control = curvature)
 * or set by CDAT's rule (cdat.h); after the optimizer, the per-tensor bounds of update_bound.h.
 */
#ifndef STABILITY_TRAIN_H
#define STABILITY_TRAIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "config/config.h"
#include "model/session.h"
#include "measure/probe.h"
#include "measure/dynamics.h"
#include "measure/curvature.h"
#include "train/optim.h"
#include "train/lr_control.h"
#include "train/subopt.h"
#include "train/store.h"

/* The fixed batch of the model-update measure comes from the stream init.seed + this. */
#define TRAIN_UPDATE_OFFSET 0x1B873593UL

/* The model update is measured at every update up to this one, then every probe.every. */
#define TRAIN_UPDATE_EVERY_UNTIL 100

/* A loss above this many times that of the uniform predictor (ln V) counts as divergence. */
#define TRAIN_DIVERGE_FACTOR 100.0

/* Why a step diverged (train_record_t.diverged). */
enum { TRAIN_FINITE = 0, TRAIN_LOSS_NONFINITE, TRAIN_GRAD_NONFINITE, TRAIN_LOSS_EXPLODED };

/* One update's scalars. */
typedef struct {
    long step;            /* 1-based update index */
    double lr;            /* learning rate used */
    double loss;          /* training-batch loss before the update */
    double grad_norm;     /* ‖∇θ‖₂ over all parameters, before clipping */
    double val_loss;      /* validation loss after the update; NaN when not evaluated */
    double bleu;          /* BLEU after the update (train.bleu_every, callbacks.bleu); else NaN */
    int probed;           /* train_t.probe holds this step's measurements */
    int updated;          /* train_t.model_update, update_rel hold this step's (DeepNet) */
    int failed;           /* the batch had ids outside the vocabulary (t->s.error); no update */
    int diverged;         /* TRAIN_FINITE, or why the step diverged (no update was made) */
    int curv;             /* curvature rows of this update: bit 0 train_t.curv_row[0] (update 0,
                             measured in update 1), bit 1 curv_row[1] (after this update) */
    int stopped;          /* the stop flag ended a curvature row of this update: the row is
                             dropped and the update undone (the state is that before it) */
    dynamics_scalars_t dyn;   /* attention logits and entropy, log Z of the update's forward */
    double radam_rho;     /* radam: ρₜ of the update (optim_radam_rect); else NaN */
    double radam_rect;    /* radam: rₜ when ρₜ > 4 (the adaptive step), else NaN */
    double measure_s;     /* seconds of this update spent measuring (probe and curvature rows,
                             validation), not training: the log's speed leaves them out */
    double qk_clipped;    /* train.qk_clip > 0: heads QK-Clip scaled after the update; else NaN */
    double stagnation;    /* bfloat16_pure: share of the non-zero updates the store lost
                             (train/store.h); else NaN */
} train_record_t;

/* Per-layer measurements of one step (axes of train_t.ax). */
typedef struct {
    double *grad_fro;          /* (L,P) ‖∇W‖_F, NaN where a tensor does not exist */
    double *extra_grad_fro;    /* (E) tok_embed, lm_head, final norms */
    double *hidden_sqnorm;     /* (L,Q) E_token ‖x‖² */
    double final_sqnorm;       /* E_token ‖x_final‖² */
    double *jacobian_spec;     /* (L,R) E_token ‖J‖₂; NaN with probe.jacobian = off */
    double final_jacobian_spec;/* of the final norm; NaN without one */
    double *subout_grad;       /* (L,X) E_token ‖∂L/∂(sub-layer output)‖ */
    double *attn_entropy;      /* (L,nhead) attention entropy per head (measure/dynamics.h) */
    double *attn_max_logit;    /* (L,nhead) max |attention logit| per head */
    double *resid_rms;         /* (L) RMS of the residual stream after each layer */
    double out[3];             /* mean |log Z|, max |log Z|, max |output logit| */
    double *weight_spec;       /* (L,P) ‖W‖₂ of each 2-D tensor (measure/spectral.h), bfloat16*
                                  runs only; NaN elsewhere */
    double *extra_weight_spec; /* (E) of tok_embed and lm_head */
    double *pv_round_bias;     /* (L,nhead) softmax·V's rounding bias (measure/rounding.h) */
    double *channel_amax;      /* (L,nchannel) max |x_c| of each layer's output */
    double *swiglu_cos;        /* (L,nunit) cos(W¹[:,j], W³[:,j]) of SwiGLU layers */
} train_probe_t;

/* The whole state of a run; everything a bit-identical resume needs is in the model's
 * params, opt (m, v, t), the session's rng_init and rng_data, step and batches. */
typedef struct {
    session_t s;               /* cfg (a copy), data, model, random streams, the batch */
    optim_t opt;
    long step;                 /* updates done */
    long batches;              /* training batches drawn (the data position) */
    probe_axes_t ax;           /* names of the probe rows' axes */
    train_probe_t probe;
    probe_jacobian_t *jac;     /* (L,R) scratch */
    /* DeepNet's model update (measure/change.h): at updates 1…100 and every probe.every */
    batch_t fixed;             /* a batch of its own stream, drawn once */
    real *ref;                 /* (B·T, C) the last hidden state on it at θ_0 */
    real *prev;                /* (num_params) θ before the update being measured */
    double model_update;       /* ‖F(x, θ_t) − F(x, θ_0)‖, mean over tokens */
    double *update_rel;        /* (L,P) ‖W_t − W_{t−1}‖_F / ‖W_{t−1}‖_F */
    double *admin_omega;       /* (L,X) Admin's ω as profiled at initialisation, or NULL */
    /* The RMS of the Adam family's update direction m̂/(√v̂ + ε) over each layer row's tensors
     * and each tensor outside the layers (the probes' extra axis), after every update (Wortsman
     * et al. 2023b; docs/design.md §6h); NaN for sgd, a diverged step, an absent tensor. */
    double *update_rms;        /* (L) */
    double *update_rms_extra;  /* (E) */
    size_t *layer_size;        /* (L) parameters of each layer row */
    double unigram;            /* unigram entropy of the text's training split (the plateau,
                                  measure/diagnose.h), NaN for other tasks */
    /* the curvature (measure/curvature.h; probe.curvature_every > 0, else curv = NULL) */
    curv_t *curv;              /* the float64 measure, its model and its batch */
    batch_t curv_batch;        /* the measurement batch, drawn once from a stream of its own */
    double *curv_theta;        /* (num_params) θ in float64 (widened in a float32 run) */
    double *curv_P;            /* (num_params) the optimizer's preconditioner (optim_precond) */
    unsigned char *curv_floored;   /* (num_params) its ε-floored coordinates */
    curv_row_t curv_row[2];    /* update 0's measurement; the last update's (train_record_t.curv) */
    /* the remedies' lr controllers (train/lr_control.h; train.lr_control, warmup_start) */
    lrctl_t ctl;
    double *cdat_u;            /* (num_params) cdat: the update direction u in float64 */
    double *bound_work;        /* train.spectral_bound: update_bound_spectral's work space */
    /* muon, lion, nsgd (docs/design.md §6h): at update 1 and every probe.every, after the
     * update, per layer tensor (L,P) (train/qk_clip.h, qk_optim_stats); NULL for the others */
    double *opt_rms, *opt_spec, *opt_sv_min, *opt_sv_max;
    subopt_t subopt;           /* train.schedule = suboptimality: its fit and state */
    double curv_clip;          /* the clip factor c of the update whose P a row uses
                                  (optim_clip_factor): the row measures c·P⁻¹H */
    /* the state before an update with a curvature row, while train_run's stop flag may end
     * that row (docs/design.md §10): the update is then undone, as if never begun */
    const volatile sig_atomic_t *stop;   /* train_run's flag, or NULL (train_step alone) */
    real *undo_params, *undo_m, *undo_v;   /* (num_params) θ, m and v before the update */
    gsl_rng *undo_rng;         /* rng_data before the update's batch */
    long undo_drawn, undo_batches, undo_t;   /* the data's position, batches, optimizer's t */
    /* train.precision = bfloat16_pure: the weights' store (train/store.h); unused otherwise */
    store_t store;
} train_t;

typedef enum { TRAIN_DONE, TRAIN_DIVERGED, TRAIN_INTERRUPTED, TRAIN_FAILED,
               TRAIN_BAD_BATCH } train_status_t;

typedef struct {
    void *ctx;
    /* After every update (and after a diverged step). Non-zero stops the run: TRAIN_FAILED. */
    int (*step)(void *ctx, const train_t *t, const train_record_t *r);
    /* Every train.checkpoint_every updates, after step. Non-zero: TRAIN_FAILED. May be NULL. */
    int (*checkpoint)(void *ctx, const train_t *t);
    /* The BLEU of the parameters after an update that train_bleu_due names, before step (it
     * logs r->bleu). Non-zero: TRAIN_FAILED. May be NULL (no BLEU). */
    int (*bleu)(void *ctx, const train_t *t, double *bleu);
} train_callbacks_t;

/* Build the run of cfg: session (model initialised from rng_init), optimizer, step 0.
 * Returns 0, 2 (cfg rejected, e.g. a missing text file; err "key: message") or 1. */
int train_create(train_t **t, const config_t *cfg, char *err, size_t errlen);

/* Free everything train_create allocated. */
void train_free(train_t *t);

/* One update (see the top of this file); fills r. */
void train_step(train_t *t, train_record_t *r);

/* A short text for a train_record_t.diverged value ("loss not finite", ...). */
const char *train_diverged_reason(int diverged);

/* Mean loss over the fixed validation batches of the text task (no dropout); NaN otherwise. */
double train_eval(train_t *t);

/* Whether BLEU is measured after update s: every train.bleu_every updates (−1: at the end of
 * every epoch) and after the last one; never with bleu_every = 0. */
int train_bleu_due(const train_t *t, long s);

/* Update until train.steps, divergence, a callback failure (TRAIN_FAILED), a batch with ids
 * outside the vocabulary (TRAIN_BAD_BATCH, t->s.error), or *stop becoming non-zero (checked
 * before each update, so the current one finishes; and between the Lanczos steps of a
 * curvature row, which then ends the row and undoes its update: TRAIN_INTERRUPTED with the
 * state after the last recorded update). */
train_status_t train_run(train_t *t, const train_callbacks_t *cb, const volatile sig_atomic_t *stop);

/* Sizes and offsets of train_t, session_t, model_t and optim_t and of the members the layers
 * above read (TRAIN_LAYOUT_N values into out): the float32 core's must equal the float64 core's,
 * since io reads a float32 run's train_t through the float64 declaration (tests/test_real.c). */
#define TRAIN_LAYOUT_N 17
void train_layout(size_t *out);

#if !REAL_IS_FLOAT
/* The float32 core (train.precision = float32; docs/design.md §2): the functions above compiled
 * with real = float. Its train_t has the layout of this one (train_layout); its model's params
 * and grads and its optimizer's m and v hold floats. */
int train_create_f32(train_t **t, const config_t *cfg, char *err, size_t errlen);
void train_free_f32(train_t *t);
void train_step_f32(train_t *t, train_record_t *r);
double train_eval_f32(train_t *t);
train_status_t train_run_f32(train_t *t, const train_callbacks_t *cb,
                             const volatile sig_atomic_t *stop);
void train_layout_f32(size_t *out);
#endif

#endif
