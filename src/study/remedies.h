/* remedies.h — the remedies study (docs/design.md §6k "The remedies study"): does the remedy of
 * an explanation of warm-up, or an automatic warm-up, train without warm-up the cells that need
 * it? Its statistics, computed once from the table of runs (report/runs.h): the methods (by the
 * row's optimizer, remedy and warm-up, never the run name), the cells (scheme × depth × lr, the
 * seeds replicates), the causal test with Clopper–Pearson intervals, the failure boundary η_max
 * by the atlas's rule (study/atlas.h) and the cost. `stability table remedies` prints them; the
 * figure remedies_boundary (study/remedies_figure.c) draws the same boundary. */
#ifndef STABILITY_STUDY_REMEDIES_H
#define STABILITY_STUDY_REMEDIES_H

#include <stddef.h>
#include <stdio.h>
#include "report/runs.h"
#include "study/study.h"

/* A method: a reader's label and what identifies it in a row. rank orders the table (0: Adam
 * without warm-up, 1: Adam with linear warm-up, then the task's order, 12 any other). */
typedef struct {
    char label[128];
    char key[160];        /* "optimizer|remedy|warm-up" (warm-up 1 when ≤ 1) */
    int rank, warmup;
} remedies_method_t;

/* One scheme × depth × method of the boundary and cost tables. */
typedef struct {
    int runs, seeds, lrs; /* its runs (every lr and seed), its seeds, its lrs (of the set's nl) */
    double top;           /* η_max: the largest lr whose mean final loss trains (atlas's rule); 0 */
    int agree;            /* seeds whose own η_max is top */
    double best, best_lr; /* the best of the lrs' mean final losses and its lr; NaN */
    double best_half;     /* the 95 % Student-t half-width over the seeds at best_lr (NaN: 1) */
    double sec;           /* mean wall seconds an update over its runs; NaN */
} remedies_line_t;

typedef struct {
    runs_table_t t;                    /* the training runs (runs_outcome at WARMUP_TRAINS) */
    remedies_method_t *m;              /* (nm) by rank */
    char (*scheme)[32];                /* (ns) in the scheme table's order */
    int *depth;                        /* (nd) up */
    double *lr;                        /* (nl) up */
    unsigned long *seed;               /* (nk) up */
    int nm, ns, nd, nl, nk;
    int *idx;                          /* (nm, ns, nd, nl, nk) a row of t, or −1 */
    int nowu, linwu;                   /* the baselines' method indices */
    int needs, cold_ok;                /* (cell, seed)s that need warm-up; that train without */
    int *fixed, *asked, *broke, *kept; /* (nm) of the needs: trained, run; of cold_ok: failed, run */
    remedies_line_t *line;             /* (nm, ns, nd) */
    int steps, d_model;                /* the most updates and the widest model, for titles */
} remedies_t;

/* The row of method m, scheme s, depth d, lr l, seed k, or −1. */
int remedies_at(const remedies_t *st, int m, int s, int d, int l, int k);


/* The study's statistics of set into st. 0; 1 with why when the set is not the study's (no
 * Adam runs without warm-up or with a linear warm-up, a cell twice at one seed, no training
 * runs). */
int remedies_build(const plot_set_t *set, remedies_t *st, char *why, size_t len);

/* Free what remedies_build allocated. */
void remedies_free(remedies_t *st);

/* `stability table remedies`: the causal test, the boundary and the cost (study.h). */
int study_remedies_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                         size_t errlen);

#endif
