/* run.h — a training run from the command line: chooses a fresh start or a resume, connects
 * the loop (train, numerics) to its file (h5io_train, I/O), the progress bar and the signals.
 *
 * SIGINT, SIGTERM and SIGUSR1 (Slurm's warning before pre-emption) finish the current update,
 * write /checkpoint, set status = interrupted and return: exit 0 for SIGTERM/SIGUSR1 (the run
 * is resumable, the file says so), 130 for SIGINT. A second signal kills at once (the file
 * stays readable up to its last flush; the last complete checkpoint stays valid).
 * Test hook: STABILITY_SIGNAL_AT_STEP=K raises SIGTERM after update K (deterministic tests).
 */
#ifndef STABILITY_RUN_H
#define STABILITY_RUN_H

#include <stddef.h>
#include "config/config.h"
#include "measure/probe.h"

typedef struct {
    int force;     /* replace an existing file (--force or [output] overwrite = true) */
    int resume;    /* --resume: as [train] resume = auto */
    int quiet;     /* no progress bar, no summary */
} run_options_t;

/* Train cfg (train.steps > 0) into the HDF5 file path, written in place. With resume, a file
 * of the same configuration continues from its checkpoint (or starts over when it has none;
 * nothing to do when it is done or diverged); with force as well, a file of another
 * configuration or an unreadable one is replaced (what a sweep runner wants for pre-empted
 * runs). Returns the exit code (0, 1, 2 or 130). */
int run_train(const config_t *cfg, const char *path, const run_options_t *o);

/* The first value of a probe that overflowed (docs/design.md §6): ±inf anywhere, or NaN where
 * the model has a value (the loss, hidden-state norms, the W¹ and W² gradients; absent tensors
 * are NaN by design). 1 with what ("probe/loss[seed 0] = nan"), else 0. Such a probe is a
 * result: recorded with status diverged and its reason, and said. */
int run_probe_overflow(const probe_t *p, char *what, size_t len);

#endif
