/* decode.h — greedy and beam-search decoding of the encoder–decoder (docs/paper_training.md),
 * fairseq's SequenceGenerator rules (Ott et al. 2019, `fairseq-generate --beam K --lenpen A`):
 *
 *   lprobs  = log_softmax(logits of the last position) of every live beam; pad never, EOS not
 *             as the first token, only EOS once step = max_len (EOS forced)
 *   step 0  candidates from the first beam only (every beam is [BOS])
 *   each step: the top 2K of score(beam) + lprobs(beam, v) over (beam, v) of a sentence; an EOS
 *           among the top K ends a hypothesis with score / (step + 1)^lenpen (its length with
 *           EOS); the first K candidates that are not EOS are the next beams; a sentence is done
 *           with K ended hypotheses, and its translation is the best of them by that score
 *   max_len = min(⌊max_len_a · S⌋ + max_len_b, seq_len − 1), S the batch's source width
 *           (EOS included, fairseq's src_tokens.size(1))
 * K = 1 is greedy: the most probable token at every step. Numerics only: the caller brings the
 * batch of sources and the model (dropout off), and gets ids without BOS and EOS.
 */
#ifndef STABILITY_DECODE_H
#define STABILITY_DECODE_H

#include "util/real.h"

#include <stdint.h>
#include "model/model.h"

typedef struct {
    int beam;              /* K ≥ 1; 1 = greedy */
    double lenpen;         /* fairseq --lenpen (1 = the mean log-probability per token) */
    double max_len_a;      /* fairseq --max-len-a */
    int max_len_b;         /* fairseq --max-len-b */
} decode_opts_t;

/* The options of `stability translate` and of BLEU while training unless set otherwise:
 * greedy, lenpen 1, max_len_a 1.2, max_len_b 10 (fairseq's IWSLT14 recipe's generation). */
decode_opts_t decode_defaults(void);

/* Work buffers for up to B sentences of beam K (B·K rows, hypotheses up to T = seq_len). */
typedef struct {
    int B, K, T, S, C, V;
    batch_t in;            /* the model's input: src (B·K,S), tokens (B·K, step + 1) packed */
    int32_t *pre, *next;   /* (B·K,T) the beams' prefixes [BOS ...]; the next step's */
    char *done;            /* (B) the sentence has its K ended hypotheses */
    real *last, *lp;     /* (B·K,C) decoder output at the last position; (B·K,V) lprobs */
    real *score;         /* (B·K) cumulative log-probability of each beam */
    real *cand;          /* (2K) candidate scores of one sentence */
    int *cand_beam, *cand_tok;   /* (2K) */
    int32_t *fin;          /* (B,K,T) ended hypotheses without EOS */
    int *fin_len, *fin_n;  /* (B,K) their lengths; (B) how many a sentence has */
    real *fin_score;     /* (B,K) their normalised scores */
} decode_t;

/* Allocate d for model m, B sentences, beam K. 0, or 1 when out of memory (d freed). */
int decode_create(decode_t *d, const model_t *m, int B, int K);

/* Free what decode_create allocated. */
void decode_free(decode_t *d);

/* Rows of source width S that fit m's capacity at beam K with hypotheses up to the model's
 * seq_len, at most B_max (0 when not even one fits). */
int decode_rows(const model_t *m, int K, int S, int B_max);

/* Translate the B ≤ d->B sources src (B,S) (right-padded with −1, each with its EOS) with m
 * (arch encdec, dropout off): out (B, d->T) the best hypothesis of each row (ids without BOS
 * and EOS, −1 after), len (B) its length, score (B) its normalised score (may be NULL). */
void decode_batch(decode_t *d, model_t *m, const int32_t *src, int B, int S,
                  const decode_opts_t *o, int32_t *out, int *len, real *score);

#endif
