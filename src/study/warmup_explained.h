/* warmup_explained.h — the warm-up study (docs/curvature.md "The experiment"): which published
 * explanation of warm-up predicts which failure. Its statistics, computed once: the cells
 * (scheme × depth × lr without warm-up, keyed by config), their outcomes from the table of runs
 * (report/runs.h), each indicator per cell, and the Mann–Whitney AUCs with stratified bootstrap
 * intervals. `stability table warmup-explained` and `warmup-cells` print them; the figure
 * warmup_indicators (study/warmup_figure.c) draws the same cells and AUCs. */
#ifndef STABILITY_WARMUP_EXPLAINED_H
#define STABILITY_WARMUP_EXPLAINED_H

#include <stddef.h>
#include <stdio.h>
#include "report/plot.h"
#include "study/study.h"

#define WARMUP_TRAINS 3.2       /* a run trains below this final loss (nats): the published
                                   table's threshold (docs/design.md §6d) */
#define WARMUP_BOOTSTRAP 2000   /* bootstrap replicates B */
#define WARMUP_SEED 1           /* the bootstrap's MT19937 seed */

/* A cell's outcome without warm-up; WARMUP_NEEDS is a failure whose warm-up run trains (the
 * figure's x; a cell keeps its stuck or diverged outcome and the flag needs). */
enum { WARMUP_TRAINS_OUT, WARMUP_NEEDS, WARMUP_STUCK, WARMUP_DIVERGED, WARMUP_OUT_N };

/* The indicators, in the table's order (docs/curvature.md "Indicators"). */
enum { WARMUP_LR, WARMUP_XIONG, WARMUP_RATIO, WARMUP_ADMIN, WARMUP_EOS, WARMUP_EOS0,
       WARMUP_RADAM, WARMUP_KOSSON, WARMUP_RMS, WARMUP_DEEPNET, WARMUP_N };

/* Each indicator's name (the table's) and what it is (short, for a panel's title). */
extern const struct warmup_indicator { const char *name, *what; } WARMUP_IND[WARMUP_N];

typedef struct {
    char scheme[160];        /* "{placement}-{norm}-{init.scheme}", the atlas's zip */
    int L;
    double lr;
} warmup_key_t;

typedef struct {
    warmup_key_t key;
    int out;                 /* WARMUP_TRAINS_OUT, WARMUP_STUCK or WARMUP_DIVERGED */
    int needs;               /* a failure whose warm-up run of the same lr trains */
    int ind;                 /* the indicators' run (index into the set) */
    double v[WARMUP_N];      /* the indicators, NaN where not measured */
} warmup_cell_t;

/* The cells of set in both the indicators' runs and the atlas's (sorted by scheme, L, lr) into
 * cells (room for set->n), *admin whether the set holds atlas_init's probes. The count, or −1
 * with why (a cell twice, a seeded atlas: one outcome run per cell). */
int warmup_cells(const plot_set_t *set, warmup_cell_t *cells, int *admin, char *why, size_t len);

/* The indicators of run r (lr, its own; xiong_ratio and admin NaN: they need other runs; NaN
 * where r has no indicators' rows) into v. */
void warmup_run_values(const plot_run_t *r, double v[WARMUP_N]);

/* Mann–Whitney's AUC: P(f > o) + ½ P(f = o) over every pair (f of fail[nf], o of ok[no]);
 * NaN when a group is empty. */
double warmup_auc(const double *fail, int nf, const double *ok, int no);

/* The AUC of the finite values of fail and ok and the 2.5 % and 97.5 % points (linear
 * interpolation, as numpy's percentile) of B stratified bootstrap replicates (each group
 * resampled with replacement at its own size; GSL's MT19937 from seed) into ci[3]; NaN when a
 * group has no finite value. */
void warmup_auc_ci(const double *fail, int nf, const double *ok, int no, int B,
                   unsigned long seed, double ci[3]);

/* AUC(a) − AUC(b) over the same cells (fa, fb the failing cells' values of a and b in one
 * order, oa, ob the training cells'), cells where either is not finite left out, with the
 * 2.5 % and 97.5 % points of B stratified bootstrap replicates that resample the cells once
 * for both, into ci[3]. */
void warmup_paired_diff_ci(const double *fa, const double *fb, int nf, const double *oa,
                           const double *ob, int no, int B, unsigned long seed, double ci[3]);

/* The columns of a row of the AUC table, each an (AUC, lo, hi) triple. */
enum { WARMUP_FAILS, WARMUP_MINUS_LR, WARMUP_NEEDS_VS, WARMUP_STUCK_VS, WARMUP_DIV_VS,
       WARMUP_DIV_STUCK, WARMUP_COLS };

/* The AUC table's row of indicator k over the n cells: *finite the cells where it is finite,
 * auc[c] the (AUC, lo, hi) of column c. */
void warmup_row(const warmup_cell_t *c, int n, int k, int B, unsigned long seed, int *finite,
                double auc[WARMUP_COLS][3]);

/* `stability table warmup-explained`: the outcome counts and the AUC table (study.h). */
int study_warmup_explained_table(const plot_set_t *set, study_format_t fmt, FILE *out,
                                 char *err, size_t errlen);

/* `stability table warmup-cells`: every cell's outcome and indicators (study.h); its TSV is
 * results/warmup_explained_cells.tsv, every value to the last bit. */
int study_warmup_cells_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                             size_t errlen);

/* `stability table warmup-runs`: each indicators' run by name (Fig. 2's runs,
 * experiments/warmup_explained_fig2.ini) and its indicators, no AUC (study.h). */
int study_warmup_runs_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                            size_t errlen);

#endif
