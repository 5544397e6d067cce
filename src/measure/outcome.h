/* outcome.h — a training run's outcome, defined once (docs/design.md §6d, "A run's outcome"):
 * every table, figure, `info` line and sweep summary that says "final loss" calls this. */
#ifndef STABILITY_OUTCOME_H
#define STABILITY_OUTCOME_H

#include <stddef.h>

/* The final loss of a run with nsteps training losses loss[] and nevals validation losses
 * val[] (may be NULL): NaN when it diverged; else its last validation loss when that is
 * finite; else the mean of the last tenth of its training losses (at least the last one).
 * NaN when it has no loss at all. */
double outcome_final_loss(const double *loss, size_t nsteps, const double *val, size_t nevals,
                          int diverged);

#endif
