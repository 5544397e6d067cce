/* diagnose.h — what went wrong in a training run, and since when (docs/design.md §6g): the
 * unigram plateau, attention-logit growth, entropy collapse, the lower layers' gradient
 * collapse. Fed one update at a time, by the run (a warning the first time each happens) and by
 * `stability info` (the same rules over the file's rows). Divergence is the loop's own
 * (train/train.h). Numerics only.
 */
#ifndef STABILITY_DIAGNOSE_H
#define STABILITY_DIAGNOSE_H

#include <stddef.h>

#define DIAG_LOGIT_FACTOR 100.0   /* logit growth: max |attention logit| > this × its update-1 value */
#define DIAG_ENTROPY_MIN 0.1      /* entropy collapse: lowest layer-mean entropy below (nats) */
#define DIAG_GRAD_RATIO 0.01      /* gradient collapse: lowest / highest layer gradient below */
#define DIAG_PLATEAU_BAND 0.1     /* on the plateau: mean loss of the last 20 updates within
                                     this many nats of the unigram entropy */
#define DIAG_PLATEAU_WINDOW 20
#define DIAG_PLATEAU_STUCK 100    /* stuck: this many updates on the plateau in a row */

/* The events, as bits. */
enum { DIAG_PLATEAU = 1, DIAG_LOGIT_GROWTH = 2, DIAG_ENTROPY_COLLAPSE = 4, DIAG_GRAD_COLLAPSE = 8 };

typedef struct {
    double unigram;          /* the plateau: unigram entropy of the training split (nats), or NaN */
    double logit1;           /* max |attention logit| at the first update seen */
    double window[DIAG_PLATEAU_WINDOW];   /* the last losses */
    long seen;               /* updates fed */
    int events;              /* DIAG_* that happened */
    long at[4];              /* update of each event's first occurrence (by bit index), or 0 */
    double value[4];         /* the measure at that update */
    long plateau_run, plateau_from, plateau_longest, plateau_total, plateau_last;
} diagnose_t;

/* Start with the plateau unigram (NaN: no plateau test). */
void diagnose_init(diagnose_t *d, double unigram);

/* Entropy −Σ p ln p (nats) of the byte histogram of text (n bytes): the loss of a model that
 * learned the bytes' frequencies and nothing else. NaN for n = 0. */
double diagnose_unigram_entropy(const unsigned char *text, size_t n);

/* Feed update `step`: its training loss, max |attention logit| and lowest entropy (NaN when
 * unknown). Returns the DIAG_* bits that happened for the first time now. */
int diagnose_step(diagnose_t *d, long step, double loss, double max_logit, double min_entropy);

/* Feed a probe row of update `step`: grad (L, K) ‖∇‖_F of each layer's tensors (NaN where
 * absent). Returns DIAG_GRAD_COLLAPSE when the lowest/highest layer ratio first fell below. */
int diagnose_probe(diagnose_t *d, long step, const double *grad, int L, int K);

/* The lowest / highest per-layer gradient norm of a probe row (NaN when fewer than 2 layers). */
double diagnose_grad_ratio(const double *grad, int L, int K);

/* Bit index of event e (0..3), and one line describing it at its first occurrence. */
int diagnose_index(int e);
void diagnose_message(const diagnose_t *d, int e, char *buf, size_t len);

#endif
