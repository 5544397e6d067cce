/* diagnose.h — what went wrong in a training run, since when, where, and which keys the harness
 * offers against it (docs/design.md §6g, docs/dynamics.md "Reading a run"). Fed one update at a
 * time, by the run (one warning line the first time each happens) and by `stability info` (the
 * same rules over the file's rows), so both say the same. Numerics and text only: no I/O.
 *
 * The classes (bits of diagnose_t.events):
 *   warm-up longer than the run   train.warmup > train.steps: the lr never reaches train.lr
 *                                 (known before update 1: diagnose_start)
 *   not learning                  the mean loss of the last DIAG_PLATEAU_WINDOW updates less than
 *                                 DIAG_LEARN_FRACTION below that of the first (judged at the end,
 *                                 diagnose_finish, for a run seen from update 1), with the reason
 *                                 when one is known: the run ended in its warm-up, the lr summed
 *                                 over the run is tiny, the task has nothing to learn
 *   exploded (finite)             the mean loss of DIAG_PLATEAU_WINDOW updates above
 *                                 DIAG_EXPLODE_FACTOR × max(ln V, the loss at update 1): worse
 *                                 than the uniform predictor, yet below the loop's divergence
 *                                 limit (train/train.h: 100 ln V)
 *   diverged                      the loop's own verdict (a non-finite or absurd loss or gradient)
 *   the unigram plateau           the mean loss of 20 updates within 0.1 nats of the unigram
 *                                 entropy, 100 updates in a row
 *   attention-logit growth        max |attention logit| above 100 × its update-1 value and above
 *                                 DIAG_LOGIT_FLOOR
 *   entropy collapse              the lowest layer-mean attention entropy below 0.1 nats
 *   lower layers' gradient collapse   lowest / highest per-layer gradient below DIAG_GRAD_DROP
 *                                 times its value at the first probe row (update 1): the layers'
 *                                 gradients spread fifty-fold since initialisation
 *   the targets leak              a next-token task (text, random, copy, reverse) trained with
 *                                 model.causal = false: position t attends to token t+1, its own
 *                                 target (known before update 1); or, on the random task, the
 *                                 mean loss of a window below DIAG_LEAK_FRACTION × the entropy of
 *                                 its i.i.d. tokens, which no model can beat without seeing them
 * Each with the update it began; the layer (and head) where it applies is read from the first
 * probe row at or after it (per-layer and per-head values exist only there), so its warning waits
 * for that row or the end of the run; divergence takes the last probe row before it.
 */
#ifndef STABILITY_DIAGNOSE_H
#define STABILITY_DIAGNOSE_H

#include <stddef.h>
#include "config/config.h"
#include "data/corpus.h"

#define DIAG_LOGIT_FACTOR 100.0   /* logit growth: max |attention logit| > this × its update-1 value */
#define DIAG_LOGIT_FLOOR 10.0     /* ... and > this: at a logit of 10 the softmax odds are e^10 ≈ 2·10⁴
                                     to 1, one key takes the row; below it a 100-fold growth from a
                                     tiny initialisation (3.7e-7 → 3.7e-5) is no growth that matters */
#define DIAG_ENTROPY_MIN 0.1      /* entropy collapse: lowest layer-mean entropy below (nats) */
#define DIAG_JUDGE_MIN 10         /* fewer updates than this: "too short to judge", never "healthy" */
#define DIAG_LEAK_FRACTION 0.9   /* a leak: a window's mean loss below this × the data's floor */
#define DIAG_GRAD_DROP 0.02       /* gradient collapse: lowest / highest layer gradient below this
                                     × its value at the first probe row. Relative, not absolute:
                                     a deep Post-LN starts near (2/3)^(L/2) (Xiong et al. App. F),
                                     0.01 at L = 24; a stuck 4-layer Post-LN sat at 1/100 of its
                                     start for 150 updates under an absolute 0.01 that never fired,
                                     while runs that train dip to 1/20–1/27 before the escape
                                     (docs/dynamics.md) */
#define DIAG_PLATEAU_BAND 0.1     /* on the plateau: mean loss of the last 20 updates within
                                     this many nats of the unigram entropy */
#define DIAG_PLATEAU_WINDOW 20    /* the window of every mean-loss rule */
#define DIAG_PLATEAU_STUCK 100    /* stuck: this many updates on the plateau in a row */
#define DIAG_LEARN_FRACTION 0.05  /* not learning: the last window's mean less than 5 % below the first's */
#define DIAG_EXPLODE_FACTOR 2.0   /* exploded: a window's mean loss above 2 × max(ln V, loss at update 1) */
#define DIAG_LR_SUM_TINY 0.01     /* Adam moves a weight by at most about lr per update: with the lr
                                     summed over the run below this, no weight (≈ 1/√d at
                                     initialisation) can move by much */

/* The events, as bits. */
enum {
    DIAG_PLATEAU = 1, DIAG_LOGIT_GROWTH = 2, DIAG_ENTROPY_COLLAPSE = 4, DIAG_GRAD_COLLAPSE = 8,
    DIAG_WARMUP_LONG = 16, DIAG_EXPLODED = 32, DIAG_NOT_LEARNING = 64, DIAG_DIVERGED = 128,
    DIAG_LEAK = 256
};
#define DIAG_NEVENTS 9

/* Why a run did not learn (diagnose_t.why, bits). */
enum { DIAG_WHY_WARMUP = 1, DIAG_WHY_LR_TINY = 2, DIAG_WHY_NOTHING = 4, DIAG_WHY_FREQS = 8 };

/* Where an event applies: a layer (0-based; −1 none) and a head (−1 none), as measured at the
 * probe row of update `probe` (0: not known yet), with the value there. */
typedef struct {
    int layer, head;
    long probe;
    double value;
} diagnose_where_t;

/* One update as the rules read it. The probe arrays are NULL except at a probe row. */
typedef struct {
    long step;
    double loss, lr, grad_norm;
    double max_logit, min_entropy;   /* model-wide; NaN when unknown (files before them) */
    const double *grad;              /* (L, K) ‖∇W‖_F of each layer's tensors, NaN where absent */
    int K;
    const double *head_logit;        /* (L, H) max |attention logit| per layer and head */
    const double *head_entropy;      /* (L, H) attention entropy per layer and head */
} diagnose_update_t;

typedef struct {
    const config_t *cfg;     /* the run's (must outlive this) */
    double unigram;          /* the plateau: unigram entropy of the training split (nats), or NaN */
    double lnV;              /* ln V: the uniform predictor's loss */
    double floor;            /* the loss no model beats without seeing its targets (the random
                                task's token entropy, data_token_entropy), or NaN */
    int L, H;                /* layer rows and heads of the probe rows (diagnose_axes) */
    const char *const *stack;   /* [L] "lm", "enc", "dec", or NULL */
    const char *const *head;    /* [H] "self.h0" …, or NULL */
    double logit1;           /* max |attention logit| at the first update seen */
    double loss1;            /* the loss at update 1 (NaN when the run was not seen from there) */
    double window[DIAG_PLATEAU_WINDOW];   /* the last losses (ring) */
    long wstep[DIAG_PLATEAU_WINDOW];      /* ... and their updates */
    double first[DIAG_PLATEAU_WINDOW];    /* the first losses */
    long first_step;         /* the first update fed */
    long seen, last_step;    /* updates fed; the last one */
    double lr_sum, lr_last, lr_max, move_sum;   /* Σ lr; the last lr; the largest; Σ lr·‖g‖ */
    double end_mean, start_mean;   /* diagnose_finish: the first and last windows' mean loss */
    int events;              /* DIAG_* that happened */
    int told;                /* DIAG_* already returned to the caller */
    int why;                 /* DIAG_WHY_* of DIAG_NOT_LEARNING */
    long at[DIAG_NEVENTS];   /* update of each event's first occurrence (by bit index), or 0 */
    double value[DIAG_NEVENTS];   /* the measure at that update */
    diagnose_where_t where[DIAG_NEVENTS];
    diagnose_where_t last_logit, last_entropy;   /* the last probe row's largest logit, lowest entropy */
    diagnose_where_t last_grad_hi, last_grad_lo; /* ... and its highest and lowest layer gradient */
    double grad_ratio1;      /* lowest / highest layer gradient at the first probe row (NaN: none) */
    long grad_ratio1_step;   /* ... its update */
    int exploded_now;        /* the current window's mean is above the explosion line */
    char reason[64];         /* DIAG_DIVERGED: the loop's reason */
    long plateau_run, plateau_from, plateau_longest, plateau_total, plateau_last;
    double warmup_need;      /* the curvature rows' need (diagnose_curv_warmup; 0 without rows),
                                set by the caller: raises the one warm-up answer, as advise's */
} diagnose_t;

/* The one warm-up the diagnosis suggests (docs/design.md §6g, "One warm-up answer"), in
 * updates of linear warm-up: for Adam and its variants ⌈2/(1 − β₂)⌉ (Ma & Yarats 2021, "On the
 * adequacy of untuned warmup for adaptive optimization": Adam's second-moment time scale; 100
 * at β₂ = 0.98), raised to need when a measurement asks for more (the curvature rows: 0 when
 * none); for SGD, which has no such rule, max(need, a tenth of train.steps). At least 2;
 * LONG_MAX when it does not fit a long. */
long diagnose_warmup_updates(const config_t *cfg, double need);

/* The one warm-up answer of a run being diagnosed: diagnose_warmup_updates(d->cfg,
 * d->warmup_need), what every warm-up suggestion of the diagnosis, `info`'s curvature line and
 * `stability advise` say for the same rows (docs/design.md §6g, "One warm-up answer"). */
long diagnose_warmup_answer(const diagnose_t *d);

/* 1 when cfg's task is next-token prediction on one stack (text, random, copy, reverse): the
 * target of position t is the input at t + 1, so only a causal model predicts it honestly. */
int diagnose_next_token(const config_t *cfg);

/* Start the diagnosis of cfg's run (train.*, model.vocab, the scheme and mitigations it uses);
 * unigram: the plateau (NaN: no plateau test). No axes: diagnose_axes. */
void diagnose_init(diagnose_t *d, const config_t *cfg, double unigram);

/* The probe rows' axes: L layer rows (stack[L] names each row's stack, may be NULL) and H heads
 * (head[H] "self.h0"…, may be NULL). The arrays must outlive d. */
void diagnose_axes(diagnose_t *d, int L, const char *const *stack, int H, const char *const *head);

/* What is known before update 1: DIAG_WARMUP_LONG when train.warmup > train.steps; DIAG_LEAK
 * when a next-token task trains without a causal mask. */
int diagnose_start(diagnose_t *d);

/* Feed one update. Returns the events to report now: new ones whose place is known (or that have
 * none), and earlier ones whose place this probe row gives. */
int diagnose_step(diagnose_t *d, const diagnose_update_t *u);

/* The loop stopped the run as diverged at update step (reason: train_diverged_reason's text).
 * Returns the events to report now (DIAG_DIVERGED and any still waiting for their place). */
int diagnose_diverged(diagnose_t *d, long step, const char *reason);

/* The run ended (done, diverged or interrupted; ended: train.steps reached or diverged):
 * judges DIAG_NOT_LEARNING for a run seen from update 1 that reached its end. Returns the
 * events not yet reported. */
int diagnose_finish(diagnose_t *d, int ended);

/* Entropy −Σ p ln p (nats) of the byte histogram of text (n bytes): the loss of a model that
 * learned the bytes' frequencies and nothing else. NaN for n = 0. */
double diagnose_unigram_entropy(const unsigned char *text, size_t n);

/* The same entropy of what a translation run's loss scores: the training split's target ids
 * and one EOS per pair (data/corpus.h's targets; padding is never scored), the loss of a
 * decoder that learned the target tokens' frequencies and nothing else. With label smoothing
 * eps the loss's target is (1 − eps)·onehot + eps/V (nn/loss.c), so that loss is the entropy
 * of t = (1 − eps)·p + eps/V over the V ids (p at eps = 0). NaN for an empty split or out of
 * memory. */
double diagnose_target_entropy(const corpus_t *c, double eps);

/* The lowest / highest per-layer gradient norm of a probe row (NaN when fewer than 2 layers). */
double diagnose_grad_ratio(const double *grad, int L, int K);

/* Bit index of event e (0..DIAG_NEVENTS−1). */
int diagnose_index(int e);

/* One line on event e: what, since which update, where, and the keys to set against it. */
void diagnose_message(const diagnose_t *d, int e, char *buf, size_t len);

/* The events as short flags, comma-separated ("diverged@57,logit-growth@12"; "healthy" when
 * none), for tables. */
void diagnose_flags(const diagnose_t *d, char *buf, size_t len);

/* One line for a run without events (diagnose_finish first): "healthy: the loss fell from A to
 * B (means of the first and last 20 updates)". */
void diagnose_healthy(const diagnose_t *d, char *buf, size_t len);

#endif
