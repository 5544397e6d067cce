/* optimizers.h — the optimizers study (docs/design.md §6h, "The optimizers study"): do Muon,
 * Lion and NSGD need warm-up where Adam does? Its statistics, computed once from the table of
 * runs (report/runs.h, its one outcome rule at the atlas's threshold): the cells (optimizer ×
 * scheme × depth), the warm-up arms (none, linear W, Riabinin et al. 2026's suboptimality
 * schedule), the lrs of the cell's grid and the seeds as replicates; per cell and arm the runs
 * that train with Clopper–Pearson intervals and η_max by the atlas's rule (study/atlas.h), the
 * (lr, seed)s that need warm-up or that it hurts, the best final loss seed by seed, adaptive
 * against fixed warm-up, and the peak attention logit. `stability table optimizers` prints them
 * (study/optimizers_print.c); the figure optimizers_boundary (study/optimizers_figure.c) draws
 * the share of seeds that train from the same statistics. */
#ifndef STABILITY_STUDY_OPTIMIZERS_H
#define STABILITY_STUDY_OPTIMIZERS_H

#include <stddef.h>
#include <stdio.h>
#include "report/runs.h"
#include "study/study.h"

/* A warm-up arm: none (warmup ≤ 1), a linear warm-up of `warmup` updates, or the suboptimality
 * schedule (its own warm-up; one arm per f_star/lr_div, runs_remedy's "suboptimality F/D");
 * `extra` when the run also used another remedy (QK-Clip's "qk_clip T"): such an arm is neither
 * the cold nor the linear baseline. */
typedef struct {
    char label[128];      /* "none", "linear 100", "suboptimality 3.2/5", "none + qk_clip 100" */
    char tick[64];        /* the figure's short form: "lin. 100", "sub 3.2/5", "clip 100" */
    int warmup, subopt, extra;
} optimizers_arm_t;

/* One optimizer × scheme × depth × arm. */
typedef struct {
    int runs, trains;     /* its runs (every lr and seed), those that train */
    double top;           /* η_max: the largest lr whose mean final loss trains (atlas's rule); 0 */
    double best, best_lr; /* the best of the lrs' mean final losses and its lr; NaN */
    double best_half;     /* the 95 % Student-t half-width over the seeds at best_lr (NaN: 1) */
} optimizers_line_t;

/* One optimizer × scheme × depth: the warm-up question, none against the first linear arm. */
typedef struct {
    int pairs;            /* (lr, seed)s run in both arms */
    int needs, hurts;     /* of those: none fails and linear trains; none trains and linear fails */
} optimizers_cell_t;

typedef struct {
    runs_table_t t;                /* the training runs (runs_outcome at ATLAS_TRAINS) */
    char (*opt)[24];               /* (no) optimizer names: adam first, then muon, lion, nsgd */
    char (*scheme)[32];            /* (ns) in the scheme table's order */
    int *depth;                    /* (nd) up */
    optimizers_arm_t *arm;         /* (na) none, linear by length, suboptimality */
    double *lr;                    /* (nl) up, every optimizer's lrs together */
    unsigned long *seed;           /* (nk) up */
    int no, ns, nd, na, nl, nk;
    int *idx;                      /* (no, ns, nd, na, nl, nk) a row of t, or −1 */
    int none, linear;              /* the baselines' arm indices, −1 when the set has none */
    optimizers_line_t *line;       /* (no, ns, nd, na) */
    double *top_seed;              /* (no, ns, nd, na, nk) each seed's own η_max; NaN: not run */
    optimizers_cell_t *cell;       /* (no, ns, nd) */
    double *logit;                 /* (t.n) the largest max |attention logit| of a run; NaN */
    int steps, d_model;            /* the most updates and the widest model, for titles */
} optimizers_t;

/* The row of optimizer o, scheme s, depth d, arm a, lr l, seed k, or −1. */
int optimizers_at(const optimizers_t *st, int o, int s, int d, int a, int l, int k);

/* The line of optimizer o, scheme s, depth d, arm a. */
const optimizers_line_t *optimizers_line(const optimizers_t *st, int o, int s, int d, int a);

/* Whether optimizer o ran lr l in scheme s, depth d (any arm, any seed). */
int optimizers_has_lr(const optimizers_t *st, int o, int s, int d, int l);

/* Whether set holds a training run of a norm-constrained optimizer (muon, lion, nsgd): its lr is
 * in its own units, so only this study's figure reads it beside Adam's. */
int optimizers_in_set(const plot_set_t *set);

/* A reader's name of an optimizer ("Muon" for muon …; else the name itself). */
const char *optimizers_label(const char *opt);

/* The study's statistics of set into st. 0; 1 with why when the set is not the study's (no
 * training runs, no run without warm-up or none with a linear warm-up, a cell twice at one
 * seed). */
int optimizers_build(const plot_set_t *set, optimizers_t *st, char *why, size_t len);

/* Free what optimizers_build allocated. */
void optimizers_free(optimizers_t *st);

/* `stability table optimizers`: the warm-up question, the best loss seed by seed, adaptive
 * against fixed warm-up, the peak attention logit (study.h). */
int study_optimizers_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                           size_t errlen);

#endif
