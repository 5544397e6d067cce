/* data.h — batches for the tasks (docs/design.md §4, §6b).
 * arch = lm: random (uniform or Zipf tokens, next-token targets), copy and reverse
 * (sequence-to-sequence inside one stack), text (byte-level LM).
 * arch = encdec: copy, reverse (the target is the source, or the source reversed) and random
 * (source and target independent): source rows of length uniform in [min_len, src_len]
 * (data.min_len; 0 = always src_len), decoder input = BOS (0) + the target shifted right.
 *
 * A batch is a batch_t (data/batch.h): int32 ids, −1 = padding / not scored.
 * All randomness comes from the caller's gsl_rng, so a run is reproducible.
 *
 * text: the file data.path is read whole; bytes are tokens (vocab ≥ 256). The last
 * DATA_VAL_FRACTION of it (at least T+1 bytes) is the validation split, the rest the training
 * split. A training row is a window of T+1 bytes at a uniformly random offset (from the rng);
 * the validation batches are fixed windows, evenly spaced over the validation split.
 *
 * mlm: the text task's windows of T bytes, bidirectional, corrupted as BERT's masked LM
 * (mlm_mask_row): ids 0-255 are the bytes and DATA_MASK_ID = 256 is [MASK] (vocab ≥ 257).
 * The validation batches' masks are fixed too: drawn from a stream of their own
 * (DATA_MLM_VAL_SEED + batch), the same for every run and seed.
 */
#ifndef STABILITY_DATA_H
#define STABILITY_DATA_H

#include <stdint.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "config/config.h"
#include "data/corpus.h"
#include "data/batch.h"
#include "data/identity.h"

/* The decoder's first input token in the synthetic encdec tasks. */
#define DATA_BOS 0

/* The data stream of a run is mt19937 seeded with init.seed + DATA_SEED_OFFSET, so batches
 * and dropout masks never reuse the initialisation's random numbers. */
#define DATA_SEED_OFFSET 0x9E3779B9UL

/* mlm: [MASK]'s id, the first after the bytes; random replacements are bytes. */
#define DATA_MASK_ID 256
#define DATA_MLM_BYTES 256
/* mlm: validation batch i's masks come from mt19937 seeded with DATA_MLM_VAL_SEED + i. */
#define DATA_MLM_VAL_SEED 0x4D4C4DUL

/* Validation split of the text task: this fraction of the file, its end. */
#define DATA_VAL_FRACTION 0.1
/* At most this many validation batches (of B windows each). */
#define DATA_VAL_MAX_BATCHES 16

typedef struct {
    task_t task;
    arch_t arch;
    int B, T, S, V;              /* rows; target (lm: sequence) length; source length; vocab */
    int min_len;                 /* encdec tasks: shortest row (0 = every row full length) */
    double zipf;                 /* exponent of the random task (0 = uniform) */
    double mask_rate;            /* mlm: share of positions chosen (data.mask_rate) */
    gsl_rng *val_rng;            /* mlm: reseeded for each validation batch's masks, else NULL */
    gsl_ran_discrete_t *zipf_table; /* Walker alias table for p(k) ∝ (k+1)^(−zipf), or NULL */
    unsigned char *text;         /* text task: the file's bytes, else NULL */
    size_t n_text;               /* bytes in text */
    size_t n_train;              /* [0, n_train) training split, [n_train, n_text) validation */
    int val_batches;             /* validation batches (text, translation), 0 for the others */
    data_identity_t id;          /* what was read: text, mlm, translation (identity.h); else "" */
    /* translation (data/translation.c) */
    corpus_t corpus;
    int max_tokens;              /* 0: batches of B pairs drawn at random; else a plan */
    corpus_plan_t plan, vplan;   /* the training split by length; validation, fixed order */
    gsl_rng *epoch_rng;          /* shuffles epoch e's batch order, seeded from (seed, e) */
    unsigned long seed;          /* init.seed */
    long drawn, epoch;           /* training batches drawn; the epoch the order is for */
} data_t;

/* Prepare the task of cfg (text, mlm, translation: read data.path, and record the identity of
 * the bytes read in d->id). Returns 0, or 2 with err "key: message" (e.g. "data.path: FILE:
 * cannot open: ..." or vocab too small), 1 when out of memory or a file cannot be read. */
int data_open(data_t *d, const config_t *cfg, char *err, size_t errlen);

/* Release what data_open allocated. */
void data_close(data_t *d);

/* The entropy (nats) of the random task's tokens, which are drawn i.i.d.: ln V when uniform,
 * that of p(k) ∝ (k+1)^(−zipf) otherwise. No model predicts them better, so a loss below it
 * means the targets leak into the input (measure/diagnose.h). NaN for every other task. */
double data_token_entropy(const config_t *cfg);

/* Draw one batch into b (its buffers hold B·T, and B·S source ids).
 * lm random:  x_0..x_T i.i.d.; tokens = x_0..x_{T−1}, targets = x_1..x_T (next token).
 * lm copy:    m = ⌈T/2⌉ content tokens a ∈ [1,V), separator 0:
 *             tokens  = a_0..a_{m−1}, 0, a_0, .., a_{T−m−2}
 *             targets = −1 ×m, a_0, .., a_{T−m−1}             (reverse: a in reverse order).
 * encdec copy: src = a_0..a_{m−1} (a ∈ [1,V)), tokens = BOS, a_0..a_{m−2}, targets = a
 *             (reverse: a reversed; random: an independent row of its own length). */
void data_batch(data_t *d, gsl_rng *rng, batch_t *b);

/* BERT's corruption of a row (mlm): on entry tok (T) holds the clean bytes; each position is
 * chosen with probability rate (one uniform draw per position; a row with none chosen gets one
 * uniformly placed), a chosen input becomes DATA_MASK_ID / a uniform random byte / itself with
 * probabilities 0.8 / 0.1 / 0.1, and tgt (T) = the clean byte at chosen positions, −1 elsewhere. */
void mlm_mask_row(gsl_rng *rng, double rate, int32_t *tok, int32_t *tgt, int T);

/* Validation batch i ∈ [0, d->val_batches): text: tokens = a window, targets = the window
 * shifted by one; translation: the validation split in order. The same batches every call. */
void data_val_batch(const data_t *d, int i, batch_t *b);

/* The largest batch the task makes (for model_create). */
void data_caps(const data_t *d, batch_caps_t *caps);

/* Training batches per epoch (translation with max_tokens; 0 where the task has no epochs). */
long data_epoch_batches(const data_t *d);

/* Continue the batch sequence after `batches` drawn (a resumed run; the random tasks carry
 * their position in the rng state instead, and ignore it). */
void data_seek(data_t *d, long batches);

/* ---- the translation task (data/translation.c) ---- */

/* Open data.path's corpus, its plans and the epoch rng. 0, 1 or 2 (err set). */
int translation_open(data_t *d, const config_t *cfg, char *err, size_t errlen);

/* The next training batch: B random pairs (max_tokens = 0) or the plan's next batch. */
void translation_batch(data_t *d, gsl_rng *rng, batch_t *b);

/* Free the corpus, plans and rng. */
void translation_close(data_t *d);

#endif
