/* precision.h — the precision study (issue 49; docs/design.md, "Low precision, emulated"):
 * which instabilities bfloat16, fp8 and pure bfloat16 weights add to float32 on one setting.
 * Its statistics, computed once from the table of runs (report/runs.h) and the precision
 * measures (report/plot_internal.h's plot_prec_t): per arm (the precision and its rounding
 * keys, never the run name) and lr, over the seeds: runs that train and diverge (Clopper–
 * Pearson), the final loss and its paired difference to float32, loss spikes, the peak max
 * attention logit and the update it first grows PRECISION_LOGIT_GROWTH-fold, stagnation, the growth of
 * the largest weight spectral norm and the mean |softmax·V rounding bias|. `stability table
 * precision` prints them (study/precision_print.c); the figure precision_lines
 * (study/precision_figure.c) draws the curves behind them. */
#ifndef STABILITY_STUDY_PRECISION_H
#define STABILITY_STUDY_PRECISION_H

#include <stddef.h>
#include <stdio.h>
#include "report/runs.h"
#include "study/study.h"

/* A loss spike (the study's one definition): after the warm-up (update > PRECISION_SPIKE_AFTER)
 * the training loss rises more than PRECISION_SPIKE_NATS above its running minimum so far; one
 * spike per entry into that state (the loss must fall back within the margin to start another). */
#define PRECISION_SPIKE_AFTER 50
#define PRECISION_SPIKE_NATS 0.5

/* Logit growth's threshold: the max |attention logit| past PRECISION_LOGIT_GROWTH times its
 * value at the first update (scale-free: 4.7 → 47 on the dynamics' reference, docs/dynamics.md,
 * whose growing runs go to the hundreds); the update at which it first does is a column. */
#define PRECISION_LOGIT_GROWTH 10.0

/* An arm: its label and what identifies it in a row. rank orders the table. */
typedef struct {
    char label[80];
    char key[96];
    int rank;
} precision_arm_t;

/* A value over the seeds: mean and 95 % Student-t half-width of its finite values (n of them;
 * half NaN below 2). */
typedef struct {
    double mean, half;
    int n;
} precision_ci_t;

/* One arm × lr over its seeds. */
typedef struct {
    int runs, trains, diverged;     /* runs; that train, that diverged (report/runs.h's rule) */
    double tr_lo, tr_hi, dv_lo, dv_hi;   /* their Clopper–Pearson 95 % intervals */
    precision_ci_t loss;            /* final loss (NaN when diverged: over the others) */
    precision_ci_t dloss;           /* final loss − float32's, same seed and lr */
    precision_ci_t spikes;          /* loss spikes per run */
    precision_ci_t peak;            /* peak max |attention logit| */
    precision_ci_t pass;            /* first update with max logit > PRECISION_LOGIT_GROWTH × its
                                       first (n: seeds
                                       that pass it) */
    precision_ci_t stag;            /* mean /train/stagnation over the updates (pure bfloat16) */
    precision_ci_t growth;          /* largest ‖W‖₂ at the last probe / at the first */
    precision_ci_t pv;              /* mean |pv_round_bias| over probes, layers, heads */
} precision_cell_t;

typedef struct {
    runs_table_t t;                 /* the training runs */
    precision_arm_t *arm;           /* (na) by rank */
    double *lr;                     /* (nl) up */
    unsigned long *seed;            /* (nk) up */
    int na, nl, nk;
    int *idx;                       /* (na, nl, nk) a row of t, or −1 */
    int ref;                        /* float32's arm, or −1 */
    precision_cell_t *cell;         /* (na, nl) */
    int steps, d_model, L;          /* the setting, for titles */
    char scheme[32];
} prec_study_t;

/* The row of arm a, lr l, seed k, or −1. */
int precision_at(const prec_study_t *st, int a, int l, int k);

/* Loss spikes of a run's training curve (n rows: steps, losses), by the definition above. */
int precision_spikes(const double *step, const double *loss, size_t n);

/* The study's statistics of set into st. 0; 1 with why when the set is not the study's (no
 * training runs, no bfloat16/fp8 run, runs of other settings mixed, an arm × lr × seed twice). */
int precision_build(const plot_set_t *set, prec_study_t *st, char *why, size_t len);

/* Free what precision_build allocated. */
void precision_free(prec_study_t *st);

/* `stability table precision` (study.h). */
int study_precision_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                          size_t errlen);

#endif
