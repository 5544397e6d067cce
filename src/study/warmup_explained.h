/* warmup_explained.h — the warm-up study (docs/curvature.md "The experiment"): which published
 * explanation of warm-up predicts which failure. Its statistics, computed once: the units
 * (scheme × depth × lr × seed without warm-up, keyed by config; a cell is scheme × depth × lr,
 * its seeds the replicates), their outcomes from the table of runs (report/runs.h), each
 * indicator per unit, and the Mann–Whitney AUCs — pooled, within each lr, per depth — with
 * bootstrap intervals that resample cells with their seeds as a block (study/warmup_auc.c).
 * `stability table warmup-explained`, `warmup-depth` and `warmup-cells` print them; the figure
 * warmup_indicators (study/warmup_figure.c) draws the same units and AUCs. */
#ifndef STABILITY_WARMUP_EXPLAINED_H
#define STABILITY_WARMUP_EXPLAINED_H

#include <stddef.h>
#include <stdio.h>
#include "report/plot.h"
#include "study/atlas.h"
#include "study/study.h"

#define WARMUP_TRAINS ATLAS_TRAINS   /* a run trains below this final loss (nats): the atlas's
                                       published threshold, defined once (study/atlas.h) */
#define WARMUP_BOOTSTRAP 2000   /* bootstrap replicates B */
#define WARMUP_SEED 1           /* the bootstrap's MT19937 seed */

/* A cell's outcome without warm-up; WARMUP_NEEDS is a failure whose warm-up run trains (the
 * figure's x; a cell keeps its stuck or diverged outcome and the flag needs). */
enum { WARMUP_TRAINS_OUT, WARMUP_NEEDS, WARMUP_STUCK, WARMUP_DIVERGED, WARMUP_OUT_N };

/* The indicators, in the table's order (docs/curvature.md "Indicators"). */
enum { WARMUP_LR, WARMUP_XIONG, WARMUP_RATIO, WARMUP_ADMIN, WARMUP_EOS, WARMUP_EOS0,
       WARMUP_RADAM, WARMUP_KOSSON, WARMUP_RMS, WARMUP_DEEPNET, WARMUP_EOSC, WARMUP_N };

/* Each indicator's name (the table's) and what it is (short, for a panel's title). */
extern const struct warmup_indicator { const char *name, *what; } WARMUP_IND[WARMUP_N];

typedef struct {
    char scheme[160];        /* "{placement}-{norm}-{init.scheme}", the atlas's zip */
    int L;
    double lr;
    unsigned long seed;      /* init.seed: the replicate within the cell */
} warmup_key_t;

/* A unit: one seed of one cell (one unit per cell when the runs have one seed). */
typedef struct {
    warmup_key_t key;
    int out;                 /* WARMUP_TRAINS_OUT, WARMUP_STUCK or WARMUP_DIVERGED */
    int needs;               /* a failure whose warm-up run of the same lr and seed trains */
    int ind;                 /* the indicators' run (index into the set) */
    int critical;            /* its run has critical-sharpness rows (eos_c measured) */
    double v[WARMUP_N];      /* the indicators, NaN where not measured */
} warmup_cell_t;

/* The units of set in both the indicators' runs and the outcome runs (sorted by scheme, L, lr,
 * seed) into cells (room for set->n), *admin whether the set holds atlas_init's probes. An
 * indicators' or outcome run is one of remedy none (runs_remedy) and optimizer adam; others are
 * ignored. The indicators' run of seed s pairs with the outcome runs of seed s. The count, or
 * −1 with why (a unit twice: two atlases in one set). */
int warmup_cells(const plot_set_t *set, warmup_cell_t *cells, int *admin, char *why, size_t len);

/* Whether indicator k is shown: admin with atlas_init's probes (admin), eos_c when a unit's
 * run has critical-sharpness rows, every other always. */
int warmup_shown(const warmup_cell_t *c, int n, int k, int admin);

/* Whether the units hold more than one seed (the tables then name the seed). */
int warmup_seeded(const warmup_cell_t *c, int n);

/* The indicators of run r (lr, its own; xiong_ratio and admin NaN: they need other runs; NaN
 * where r has no indicators' rows) into v. */
void warmup_run_values(const plot_run_t *r, double v[WARMUP_N]);

/* Whether run r has critical-sharpness rows (its eos_c is measured, maybe NaN). */
int warmup_run_critical(const plot_run_t *r);

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

/* The columns of a row of the AUC table, each an (AUC, lo, hi) triple; WARMUP_WITHIN_LR is
 * fails vs trains within each lr (warmup_within_auc). */
enum { WARMUP_FAILS, WARMUP_MINUS_LR, WARMUP_NEEDS_VS, WARMUP_STUCK_VS, WARMUP_DIV_VS,
       WARMUP_DIV_STUCK, WARMUP_WITHIN_LR, WARMUP_COLS };

/* The stratified AUC: Σ_s wins_s / Σ_s nf_s·no_s over the strata s (grp equal), i.e. each
 * stratum's Mann–Whitney AUC weighted by its pair count; NaN when no stratum has a pair. */
double warmup_within_auc(const double *fail, const int *gf, int nf, const double *ok,
                         const int *go, int no);

/* Column col of the AUC table for indicator k over the n units (sorted as warmup_cells sorts
 * them) into auc (AUC, lo, hi): B replicates that resample the cells (scheme × L × lr) with
 * their seeds as a block, stratified by outcome (all failing, all training, mixed) and, for
 * WARMUP_WITHIN_LR, by lr. One unit a cell: the stratified bootstrap of warmup_auc_ci. */
void warmup_column(const warmup_cell_t *c, int n, int k, int col, int B, unsigned long seed,
                   double auc[3]);

/* The AUC table's row of indicator k over the n units: *finite the units where it is finite,
 * auc[c] the (AUC, lo, hi) of column c (warmup_column). */
void warmup_row(const warmup_cell_t *c, int n, int k, int B, unsigned long seed, int *finite,
                double auc[WARMUP_COLS][3]);

/* `stability table warmup-explained`: the outcome counts and the AUC table; in Markdown the
 * per-depth table (study_warmup_depth_table) after it (study.h). */
int study_warmup_explained_table(const plot_set_t *set, study_format_t fmt, FILE *out,
                                 char *err, size_t errlen);

/* `stability table warmup-depth`: the AUC of fails vs trains per depth L, an indicator a row
 * (study.h). */
int study_warmup_depth_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                             size_t errlen);

/* `stability table warmup-cells`: every cell's outcome and indicators (study.h); its TSV is
 * results/warmup_explained_cells.tsv, every value to the last bit. */
int study_warmup_cells_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                             size_t errlen);

/* `stability table warmup-runs`: each indicators' run by name (Fig. 2's runs,
 * experiments/warmup_explained_fig2.ini) and its indicators, no AUC (study.h). */
int study_warmup_runs_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                            size_t errlen);

#endif
