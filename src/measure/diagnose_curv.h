/* diagnose_curv.h — when a run's active preconditioned sharpness crossed the optimizer's
 * stability threshold, by how much, for how long and in which block (docs/design.md §10,
 * docs/curvature.md). Fed the curvature rows of /train one at a time, by the run (a warning
 * the first time it happens) and by `stability info` (the file's rows), so both say the same.
 * Numerics only: the text is report/report.h's report_curvature_message.
 *
 * The ratio of a row is precond_max_active / stability_threshold, i.e.
 * η·λ_max(P⁻¹H)_active / (2(1 + β₁)/(1 − β₁)) for Adam, η the lr of the next update: the
 * definition of design §10 and of the warm-up study's `eos` (study/). A row is above when its
 * ratio is > 1; rows whose ratio is not finite (kinked products) are not measured ones.
 *
 * The warm-up estimate. A linear warm-up of N updates multiplies the lr of update t + 1 by
 * (t + 1)/N (by 1 once t + 1 ≥ N); a run that had a warm-up of W already had its lr multiplied
 * by min(1, (t + 1)/W). With the curvature following the path it followed in this run, a row at
 * update t with ratio r would be below 1 under a warm-up of N when N > max(t + 1, W)·r. The
 * estimate is the smallest N for which every measured row above 1 would be below:
 * ⌊max over those rows of max(t + 1, W)·r⌋ + 1. It sees only the measured rows, and warm-up
 * changes the path (Kalra & Barkeshli 2024: the network reaches flatter regions first), so it
 * is a first guess, not a bound. With a schedule other than constant the lr after the warm-up
 * decays from its end, which the estimate leaves out.
 */
#ifndef STABILITY_DIAGNOSE_CURV_H
#define STABILITY_DIAGNOSE_CURV_H

#include "config/config.h"

#define DIAG_CURV_EPS_SHARE 0.5   /* the update-0 row's full λ_max(P⁻¹H) is the ε-floor's when
                                     its top eigenvector lies at least this much (Σ u_i²) on
                                     floored coordinates (docs/curvature.md "The floor") */

/* One curvature row of /train as the rules read it. */
typedef struct {
    long step;               /* curv_step: updates before the row (0: at initialisation) */
    double active;           /* precond_max_active */
    double threshold;        /* stability_threshold (the next update's lr) */
    double full;             /* precond_max (NaN when the row did not measure it) */
    double eps_share;        /* precond_eps_share (NaN when not measured) */
    const double *block;     /* (rows, kinds) precond_block_max of the row, or NULL */
} diagnose_curv_row_t;

/* The finding. Updates are curv_step values; −1 where there is none. */
typedef struct {
    int rows, kinds;         /* the block axes: layer rows and "outside", block kinds */
    long warmup;             /* the run's train.warmup (at least 1) */
    long steps;              /* the run's train.steps */
    long seen;               /* rows fed */
    long measured;           /* ... with a finite ratio */
    long first_fed;          /* the update of the first row fed (> 0 after a resume) */
    long last_fed;           /* ... of the last */
    long above;              /* measured rows above 1 */
    long first, last;        /* the first and the last update above 1 */
    double first_ratio;      /* the ratio at the first crossing */
    long peak_step;          /* the largest ratio of the measured rows, and its update */
    double peak;
    long peak1_step;         /* ... of the rows after update 0 */
    double peak1;
    int block_row, block_kind;   /* the largest block of the row above 1 with blocks and the
                                    largest ratio (the peak's when it has blocks); −1: none */
    long block_step;         /* that row's update */
    double block_ratio;      /* the block's λ_max over the row's threshold */
    double block_row_ratio;  /* the ratio of that row (to prefer the peak's) */
    int first_block_row, first_block_kind;   /* the largest block at the first crossing, or −1 */
    double first_block_ratio;
    int has0;                /* an update-0 row was fed */
    double ratio0, full0, share0;   /* its ratio, precond_max over the threshold, ε share */
    double warmup_need;      /* max over rows above 1 of max(t + 1, W)·ratio (0: none) */
    long warmup_step;        /* the row that sets it */
} diagnose_curv_t;

/* Start the finding of cfg's run (train.warmup, train.steps) whose block rows have the axes
 * rows × kinds (0, 0: none). */
void diagnose_curv_init(diagnose_curv_t *c, const config_t *cfg, int rows, int kinds);

/* Feed one row. Returns 1 when it is the first measured row above 1 (the live warning's
 * moment), else 0. */
int diagnose_curv_row(diagnose_curv_t *c, const diagnose_curv_row_t *r);

/* The ratio of a row (NaN when it is not finite). */
double diagnose_curv_ratio(const diagnose_curv_row_t *r);

/* The largest finite entry of a (rows, kinds) block row: its value, and its row and kind in
 * *row, *kind (−1, −1 and NaN when none is finite). */
double diagnose_curv_block_max(const double *block, int rows, int kinds, int *row, int *kind);

/* The warm-up estimate of the header: N, or 0 when no measured row was above 1; LONG_MAX when
 * N would not fit a long (then warmup_need holds it). */
long diagnose_curv_warmup(const diagnose_curv_t *c);

/* Whether the update-0 row's ratio needs the ε-floor note: its top eigenvector lies at least
 * DIAG_CURV_EPS_SHARE on floored coordinates. */
int diagnose_curv_floor_note(const diagnose_curv_t *c);

#endif
