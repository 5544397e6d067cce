/* plot_band.h — seeds in the figures and tables of training runs: runs that differ only in
 * init.seed (a sweep's `init.seed = 1, 2, 3`, named {seed}) are one curve, drawn as the mean
 * over seeds with a 95 % confidence band (Student t over the seeds, measure/fit.c's
 * fit_mean_ci); a group of one seed is the run's own curve. Every figure of training runs
 * draws its curves through these functions (docs/design.md §6e). */
#ifndef STABILITY_PLOT_BAND_H
#define STABILITY_PLOT_BAND_H

#include <stddef.h>
#include <stdio.h>
#include "report/plot.h"
#include "report/plot_label.h"
#include "report/plot_layout.h"
#include "util/sbuf.h"

#define PLOT_MAX_SEEDS 32
#define PLOT_BAND_MAX_RUNS 512   /* runs a training figure looks at before grouping them */
#define PLOT_BAND_MAX_ROWS 2000  /* about this many rows per curve reach gnuplot */

/* Up to this many seeds a configuration is drawn as a thin line per seed and their mean, not a
 * band: Student's t of 2 seeds is 12.7, and such a band says less than the seeds themselves. */
#define PLOT_SEED_LINES 3

/* The runs (indices into set->runs) of one configuration, one per seed, in set order. */
typedef struct {
    int n;
    int run[PLOT_MAX_SEEDS];
    int lines;   /* 1: a thin line per seed and the mean (2 … PLOT_SEED_LINES seeds, or any
                    number under plot --seed-lines); 0: the mean and a band (or one seed) */
} plot_group_t;

/* A run's curve: *x and *y point at its arrays of the returned length (0: no such curve). */
typedef size_t (*plot_series_fn)(const plot_run_t *r, const double **x, const double **y);

/* The curves the helper knows: /train/loss against step, /train/val_loss against eval_step,
 * /train/bleu against bleu_step. */
size_t plot_series_loss(const plot_run_t *r, const double **x, const double **y);
size_t plot_series_val_loss(const plot_run_t *r, const double **x, const double **y);
size_t plot_series_bleu(const plot_run_t *r, const double **x, const double **y);

/* Whether a run belongs to a curve's figure or table. */
typedef int (*plot_member_fn)(const plot_run_t *r);

/* A run that logged BLEU or was to (train.bleu_every: a seed that diverged before its first
 * BLEU is a seed that never reaches one). */
int plot_member_bleu(const plot_run_t *r);

/* A curve of a table of seeds (plot_band_table). */
typedef struct {
    plot_series_fn f;       /* the curve */
    int up;                 /* 1: reached from below (BLEU); 0: from above (a loss) */
    const char *what;       /* its name in the table: "validation loss", "BLEU" */
    int digits;             /* decimals of its values in the table */
    int epochs;             /* 1: reach in epochs when every run knows its updates per epoch */
    plot_member_fn member;  /* the runs of the table; NULL: those with rows of f */
} plot_curve_t;

extern const plot_curve_t PLOT_CURVE_LOSS, PLOT_CURVE_VAL_LOSS, PLOT_CURVE_BLEU;

/* Group the runs m[0..n) whose resolved configs are equal but for init.seed (and the output
 * file, overwrite and resume keys); groups in order of first appearance. Returns the number of
 * groups, or −1 when more than max groups or PLOT_MAX_SEEDS seeds in one would be needed. */
int plot_band_groups(const plot_set_t *set, const int *m, int n, plot_group_t *g, int max);

/* The group's members of the most seeds (for a title: "3 seeds"); 1 when none has more. */
int plot_band_max_seeds(const plot_group_t *g, int ngroups);

/* "; mean of 5 seeds, band: 95 % CI" (or "…, thin: each seed" where g->lines) for a figure's
 * subtitle when a group has several seeds ("mean of 2–5 seeds" when they differ), else "". */
void plot_band_caption(const plot_group_t *g, int ngroups, char *buf, size_t len);

/* Every how many rows a curve of n rows is drawn: 1, or n / PLOT_BAND_MAX_ROWS for a long
 * per-update log (a live run of millions of updates plots in seconds). */
size_t plot_band_stride(size_t n);

/* Data block $name: rows "x·xscale mean lo hi count" at the x values of the group's longest
 * curve (every plot_band_stride-th and the last); mean and the 95 % band over the seeds with a
 * finite value at that x (lo = hi = mean with one seed), the band never below floor (NaN: no
 * floor; a loss's and BLEU's 0: an interval respects the metric's range); with g->lines, each
 * seed's value follows (NaN where it has none). The x and y drawn widen rx, ry (NULL: not
 * kept). Returns the rows written. */
size_t plot_band_block(sbuf_t *s, const char *name, const plot_set_t *set, const plot_group_t *g,
                       plot_series_fn f, double xscale, double floor, plot_range_t *rx,
                       plot_range_t *ry);

/* The plot clause of block $name: a thin line per seed (g->lines) or a shaded band (more
 * seeds) and the mean line in color, with style (gnuplot's "lines dt 2 …"), no title (the key
 * is the figure's strip); prefixed ", " unless first. */
void plot_band_clause(sbuf_t *s, const char *name, const plot_group_t *g, const char *color,
                      const char *style, int first);

/* " (3 seeds, 1 diverged)", " (diverged)", " (3 seeds)" or "" for a key: the group's seeds and
 * how many diverged. Appended to label. */
void plot_band_key_note(const plot_set_t *set, const plot_group_t *g, char *label, size_t len);

/* The first x at which the curve reaches target from above (up = 0, a loss: y ≤ target) or
 * from below (up = 1, BLEU: y ≥ target), interpolated linearly between the two points that
 * bracket the crossing (x[0] when y[0] is there already); NaN when it never does. */
double plot_band_reach(const double *x, const double *y, size_t n, double target, int up);

/* plot_band_reach over the group's seeds: mean and 95 % half-width of the x at which each
 * reaches target (NaN half-width with fewer than two), *reached = seeds that reach it. */
void plot_band_reach_ci(const plot_set_t *set, const plot_group_t *g, plot_series_fn f,
                        double target, int up, double *mean, double *half, int *reached);

/* A group's reach (plot_band_reach_ci) as text, x scaled by xscale and printed with digits
 * decimals: "2.10 ± 0.40", "2.10" (one seed reached it), "never" (none did). */
void plot_band_reach_text(double mean, double half, int reached, double xscale, int digits,
                          char *buf, size_t len);

/* The value every seed of every group reaches: the largest of the curves' minima (up = 0;
 * the smallest of their maxima from 0.01 up for up = 1, so a BLEU curve that never left 0
 * does not make the target 0); NaN without curves. Every run but those reaches it. */
double plot_band_common_target(const plot_set_t *set, const plot_group_t *g, int ngroups,
                               plot_series_fn f, int up);

/* The subtitle of a training figure (gnuplot enhanced text): what its n groups' runs share
 * (plot_shared, PLOT_SHARED_TRAIN, d the items that differ), the seeds, "×: diverged" when
 * diverged, and extra on a line of its own ("": none). */
void plot_train_subtitle(const plot_set_t *set, const plot_group_t *g, int n, const plot_diff_t *d,
                         int diverged, const char *extra, char *buf, size_t len);

/* A Markdown table of the training runs in set, one row per group of seeds: its key (plain
 * text: what tells it apart, report/plot_label.h), seeds, diverged seeds, the last and the best
 * value of curve c (mean ± 95 % half-width over the seeds), the update (or epoch, c->epochs) at
 * which each reaches the value every run reaches (plot_band_common_target), mean ± half-width,
 * and how many seeds reach it. When no such value exists (no BLEU ever left 0) the column says
 * so; when it is not below the runs' unigram plateau by more than DIAG_PLATEAU_BAND (reaching
 * it is not learning, and a stuck run reaches it first) a line after the table says so. Returns the number of rows (0: no run has the curve). */
int plot_band_table(FILE *out, const plot_set_t *set, const plot_curve_t *c);

#endif
