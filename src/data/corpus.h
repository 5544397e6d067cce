/* corpus.h — the English→German sentence pairs of setup/translation-corpus.sh, as batches.
 *
 * DIR holds train.en.ids train.de.ids valid.en.ids valid.de.ids: one sentence a line,
 * space-separated sentencepiece ids, line i of .en and .de a pair, no BOS/EOS.
 * Ids: 0 pad (never emitted), 1 unk, 2 BOS, 3 EOS, pieces from 4.
 *
 * A batch row for the pair (s, t):
 *     src     = s + [EOS]           then −1
 *     tokens  = [BOS] + t           then −1    (decoder input, teacher forcing)
 *     targets = t + [EOS]           then −1    (−1 = not scored)
 * Every batch is padded to its own longest row (S = max |s|+1, T = max |t|+1).
 *
 * Two ways to batch, both deterministic given the caller's gsl_rng:
 *  - corpus_sample: B pairs drawn uniformly with replacement (probes at initialisation);
 *  - a plan (fairseq's batch_by_size): the pairs sorted by (source length, target length),
 *    ties in a random order, cut greedily into batches while rows × max(S, T) ≤ max_tokens;
 *    the batch order is shuffled once per epoch. Validation: no rng, no shuffle, fixed order.
 */
#ifndef STABILITY_DATA_CORPUS_H
#define STABILITY_DATA_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "data/batch.h"
#include "data/identity.h"

enum { CORPUS_PAD = 0, CORPUS_UNK = 1, CORPUS_BOS = 2, CORPUS_EOS = 3, CORPUS_FIRST_PIECE = 4 };
enum { CORPUS_TRAIN = 0, CORPUS_VALID = 1, CORPUS_SPLITS = 2 };

/* The pairs of one split that passed the length filter. */
typedef struct {
    long n;              /* pairs */
    int32_t *pool;       /* every pair's source ids, then its target ids */
    size_t *at;          /* (n) offset of pair i's source in pool; its target follows */
    int *src_len;        /* (n) |s|, without EOS */
    int *tgt_len;        /* (n) |t|, without BOS/EOS */
    long *line;          /* (n) 1-based line of pair i in the split's files (references) */
} corpus_split_t;

typedef struct {
    int vocab, max_src, max_tgt;          /* as given to corpus_open */
    corpus_split_t split[CORPUS_SPLITS];  /* CORPUS_TRAIN, CORPUS_VALID */
    long skipped[CORPUS_SPLITS];          /* pairs dropped: |s|+1 > max_src or |t|+1 > max_tgt */
    data_identity_t id;                   /* of the four files' bytes as read (identity.h) */
} corpus_t;

/* A split cut into batches (fairseq's batch_by_size), and this epoch's batch order. */
typedef struct {
    int split;
    long n_batches;
    long *order;         /* (n) pair indices, sorted by (|s|, |t|, random tie-break) */
    long *start;         /* (n_batches+1) batch k = order[start[k] .. start[k+1]) */
    long *perm;          /* (n_batches) this epoch's batch order (identity until shuffled) */
    int max_rows, max_S, max_T;  /* over all batches: the buffer sizes a caller needs */
} corpus_plan_t;

/* Read DIR's four .ids files, keeping pairs with |s|+1 ≤ max_src and |t|+1 ≤ max_tgt, and the
 * identity of the bytes read (c->id). 0; 1 (I/O, OOM) or 2 (a file that cannot be opened, bad
 * content) with err "DIR/train.de.ids:3: id 9000 >= model.vocab 8000", no leak. */
int corpus_open(corpus_t *c, const char *dir, int vocab, int max_src, int max_tgt,
                char *err, size_t errlen);

/* Release what corpus_open allocated (c zeroed; safe on a zeroed corpus). */
void corpus_close(corpus_t *c);

/* Fill out with B pairs of split drawn uniformly with replacement. The buffers must hold
 * B·max_src and B·max_tgt entries (rows are written at full width, then packed to S, T). */
void corpus_sample(const corpus_t *c, int split, gsl_rng *rng, int B, batch_t *out);

/* Cut split into batches of rows × max(S, T) ≤ max_tokens, length ties broken by rng (NULL: by
 * line), in sorted order until shuffled. 0; 1 OOM; 2 if one pair exceeds max_tokens (err). */
int corpus_plan(corpus_plan_t *p, const corpus_t *c, int split, int max_tokens, gsl_rng *rng,
                char *err, size_t errlen);

/* A new batch order for the next epoch: a uniform permutation drawn from rng, independent
 * of earlier shuffles (so it depends only on the rng state). */
void corpus_plan_shuffle(corpus_plan_t *p, gsl_rng *rng);

/* Fill out with the i-th batch of this epoch, i ∈ [0, n_batches) (buffers of
 * max_rows·max_S and max_rows·max_T suffice). */
void corpus_plan_fill(const corpus_plan_t *p, const corpus_t *c, long i, batch_t *out);

/* Release what corpus_plan allocated (p zeroed). */
void corpus_plan_free(corpus_plan_t *p);

#endif
