/* warmup.h — the warm-up experiment's table (docs/warmup.md "Numbers"): a row per training run
 * of Fig. 2's byte-level model — its identity from the config, its outcome from the table of
 * runs (report/runs.h: the one final loss) and the curve's own measures — as `stability table
 * warmup`. */
#ifndef STABILITY_STUDY_WARMUP_H
#define STABILITY_STUDY_WARMUP_H

#include "study/study.h"

#define WARMUP_MA 50          /* the moving average's window (updates) of best loss and to_2.5 */
#define WARMUP_BELOW 2.5      /* the loss (nats) "updates to < 2.5" waits for */
#define WARMUP_RATIO_AT 100   /* the update of the gradient ratio layer 1 / layer L */

/* One run's measures of its training curve. */
typedef struct {
    double final_loss;   /* outcome_final_loss (runs.h), NaN when diverged */
    double best;         /* lowest WARMUP_MA-update moving average of the training loss over
                            the windows whose mean is finite (NaN: none) */
    int to_below;        /* the update at which that average first is < WARMUP_BELOW, −1 never */
    double val_final, val_best;   /* last and lowest finite validation loss (NaN without) */
    double ratio;        /* ‖∂L/∂W²‖_F of layer 1 over layer L at update WARMUP_RATIO_AT (the
                            decoder's layers of an encoder–decoder), NaN when not probed */
    double wall;         /* /train/time's last row (s), 0 without */
} warmup_run_t;

/* The measures of run i of set (it must have a training curve) into w. A window of
 * WARMUP_MA updates (fewer when the run logged fewer: all of them) ends at update k when it
 * covers the logged losses k − WARMUP_MA + 1 … k. */
void warmup_run_measure(const plot_set_t *set, int i, warmup_run_t *w);

/* `stability table warmup`: a row per run with a training curve, by run name; a column naming
 * what else tells runs apart when they differ beyond placement, lr, warm-up and seed
 * (docs/design.md §6j). 1 with err when a run has no training curve. */
int study_warmup_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                       size_t errlen);

#endif
