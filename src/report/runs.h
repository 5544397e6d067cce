/* runs.h — one table of runs (docs/design.md §6d, "One table of runs"): a row per run of a
 * loaded set, its identity read from the resolved config (never from the run name) and its
 * outcome derived once — the final loss (measure/outcome.h), the loss at initialisation, the
 * plateau, diverged, stuck, trains — and a grid over named axes with the seeds as replicates.
 * Every figure and table that says "final loss" or "trains" reads these rows; `stability info
 * --runs` prints them as TSV. */
#ifndef STABILITY_RUNS_H
#define STABILITY_RUNS_H

#include <math.h>
#include <stdio.h>
#include "report/plot.h"

/* The default "trains" rule: below the plateau by DIAG_PLATEAU_BAND nats (the plateau: the
 * unigram entropy of a text run, else the loss at initialisation). A number instead is an
 * absolute threshold in nats (the warm-up study's published 3.2). */
#define RUNS_BELOW_PLATEAU NAN

/* One run. Identity from run->cfg; outcome columns by runs_outcome. */
typedef struct {
    const plot_run_t *run;   /* the run it was read from (name, origin, curves) */
    int index;               /* its index in the set */
    char scheme[32];         /* scheme_name: "post", "pre+dyt", "post+rmsnorm" … */
    int L, dec_L;            /* layers (encdec: encoder layers), decoder layers (0: lm) */
    int d_model, d_ff, heads;
    double lr;
    int warmup;
    unsigned long seed;
    const char *optimizer, *schedule, *precision, *task;
    char parametrization[16];  /* as the resolved config writes it ("standard", "mup" …) */
    char remedy[96];         /* runs_remedy: "none", or the warm-up remedies the run used */
    const char *block;       /* "2017" (sinusoidal, ReLU/GELU, biases, LayerNorm), "today"
                                (rotary, SwiGLU, no biases, RMSNorm), else "other" */
    int steps;               /* train.steps (0: a probe) */
    double loss_init;        /* the first training loss, NaN without /train */
    double final_loss;       /* outcome_final_loss; NaN when diverged */
    double plateau;          /* /train@unigram_entropy of a text run, else NaN */
    int diverged;            /* /train@diverged_at, or status "diverged" */
    int stuck;               /* neither diverged nor trains, with a finite final loss */
    int trains;              /* the final loss below the threshold of runs_outcome */
    double sec_per_update;   /* wall seconds an update (plot_run_t's; NaN), not a column */
} runs_row_t;

typedef struct {
    runs_row_t *rows;
    int n;
} runs_table_t;

/* A run's block by its config: 0 the 2017 block, 1 today's (LLaMA's, docs/design.md §6i),
 * 2 another. */
int runs_block_kind(const config_t *cfg);

/* The warm-up remedies of cfg's lr (docs/design.md §6k) into buf, joined by "+" in this order:
 * "curvature_cap C", "cdat S" (σ), "catapult", "ratio_cap R", "spectral_bound T", "autowu"; or
 * "none". The optimizer (LAMB, GI-Adam …) and the warm-up length are columns of their own. */
void runs_remedy(const config_t *cfg, char *buf, size_t len);

/* The identity and outcome (runs_outcome at RUNS_BELOW_PLATEAU) of set->runs[i] into row. */
void runs_row(const plot_set_t *set, int i, runs_row_t *row);

/* Every run of set, in the set's order; 0, or 1 when out of memory. */
int runs_build(runs_table_t *t, const plot_set_t *set);

/* Free what runs_build allocated. */
void runs_free(runs_table_t *t);

/* The outcome of a run, the one rule (docs/design.md §6d): diverged as read; trains when not
 * diverged and the final loss is below threshold (RUNS_BELOW_PLATEAU: below the plateau, else
 * loss_init, by DIAG_PLATEAU_BAND); stuck when neither and the final loss is finite. */
void runs_outcome(runs_row_t *row, double threshold);

/* The column names of runs_print, in order, NULL-terminated. */
extern const char *const RUNS_COLUMNS[];

/* Column col (a name of RUNS_COLUMNS) of row as text into buf ("nan" for NaN, integers
 * without a point, reals %.17g): 0, or −1 when col is no column. */
int runs_text(const runs_row_t *row, const char *col, char *buf, size_t len);

/* Numeric column col of row (NaN for a text column or no column). */
double runs_value(const runs_row_t *row, const char *col);

/* The rows as TSV: a header line of RUNS_COLUMNS, then one line per row (a tab or newline
 * inside a value becomes a space). */
void runs_print(FILE *out, const runs_table_t *t);

/* One cell of a grid: the rows equal in every axis, their seeds the replicates. */
typedef struct {
    int *rows;               /* (n) indices into the table, in table order */
    int n;
    int finite;              /* rows whose value is finite */
    double mean, half;       /* mean of the finite values, 95 % Student-t half-width (NaN
                                below 2) — fit_mean_ci */
} runs_cell_t;

typedef struct {
    runs_cell_t *cells;      /* in the order their first row comes in the table */
    int n;
} runs_grid_t;

/* Group the rows of t by the naxes columns axes[] (text equality) and summarise column value
 * over each cell. 0; or 1 with why when two rows of one cell have the same seed (a replicate
 * that is no seed: another key tells them apart) or an axis is no column. */
int runs_grid(const runs_table_t *t, const char *const *axes, int naxes, const char *value,
              runs_grid_t *g, char *why, size_t len);

/* Free what runs_grid allocated. */
void runs_grid_free(runs_grid_t *g);

#endif
