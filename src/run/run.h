/* run.h — a run from the command line, connected to its file: the probe at initialisation,
 * a dump, a gradient check (run/run_init.c) and training (run/run.c: a fresh start or a
 * resume, the loop (train, numerics) connected to its file (h5io_train, I/O), the progress
 * bar and the signals).
 *
 * SIGINT, SIGTERM and SIGUSR1 (Slurm's warning before pre-emption) finish the current update,
 * write /checkpoint, set status = interrupted and return: exit 0 for SIGTERM/SIGUSR1 (the run
 * is resumable, the file says so), 130 for SIGINT. A second signal kills at once (the file
 * stays readable up to its last flush; the last complete checkpoint stays valid).
 * Test hook: STABILITY_SIGNAL_AT_STEP=K raises SIGTERM after update K (deterministic tests);
 * STABILITY_LOG_SECONDS=S sets the time cadence of the log lines off a terminal (default 10 s).
 */
#ifndef STABILITY_RUN_H
#define STABILITY_RUN_H

#include <stddef.h>
#include "config/config.h"
#include "measure/probe.h"
#include "model/decode.h"

/* Curvature rows of this many Lanczos steps or more (or asking for more than the parameters)
 * are warned about with their estimated cost (docs/design.md §10, "Cost": a row grows as K²). */
#define RUN_CURV_LONG_ITERS 200

typedef struct {
    int force;     /* replace an existing file (--force or [output] overwrite = true) */
    int resume;    /* --resume: as [train] resume = auto */
    int quiet;     /* no progress bar, no summary */
    double perturb;/* dump, gradcheck: N(0, perturb²) added to biases, γ, β after the init */
    long entries;  /* gradcheck: entries per tensor */
    double tol;    /* gradcheck: tolerance */
    int hvp;       /* dump: --hvp, a direction, its Hessian-vector product, λ_max and λ_min */
} run_options_t;

/* Draw the figures of the result file path into plots/ ([output] plots = true). Exit code. */
int run_plot(const char *path, int quiet);

/* The probe at initialisation (train.steps = 0) into the HDF5 file path (written to a
 * temporary name, renamed when complete); prints the summary table. Returns the exit code. */
int run_probe(const config_t *cfg, const char *path, const run_options_t *o);

/* One batch: parameters, batch, loss and every gradient into the dump file path. Exit code. */
int run_dump(const config_t *cfg, const char *path, const run_options_t *o);

/* Finite differences against the backward for every tensor; prints the table. Exit code
 * (1 when a tensor exceeds o->tol). */
int run_gradcheck(const config_t *cfg, const run_options_t *o);

/* 0, or 2 with "WHERE: probe.KEY: message" on stderr when cfg sets an estimator this command
 * does not measure (docs/design.md §10): the density and the trace need the curvature rows
 * (probe.curvature_every; `dump --hvp` needs none), a probe measures the trace but neither the
 * density nor the critical sharpness (probe = 1: a probe at initialisation). */
int run_check_estimators(const config_t *cfg, int probe);

/* Train cfg (train.steps > 0) into the HDF5 file path, written in place. With resume, a file
 * of the same configuration continues from its checkpoint (or starts over when it has none;
 * nothing to do when it is done or diverged); with force as well, a file of another
 * configuration or an unreadable one is replaced (what a sweep runner wants for pre-empted
 * runs). Returns the exit code (0, 1, 2 or 130). */
int run_train(const config_t *cfg, const char *path, const run_options_t *o);

/* `stability advise`: whether cfg needs warm-up at its lr, from 6 updates without warm-up at
 * 3 seeds (run/run_advise.c, docs/design.md §6g); the answer in words on stdout and, with path
 * (NULL: none), an HDF5 file (root attributes needs_warmup, warmup_updates,
 * max_lr_without_warmup (NaN: a seed diverged, below lr), warmup, diverged_seeds, indicator;
 * the per-seed values under /advise). Returns the exit code. */
int run_advise(const config_t *cfg, const char *path, const run_options_t *o);

/* `stability translate RUN.h5 [--beam K] [--lenpen A] [--input FILE] [--ids] ...` (argv[0] =
 * "translate"; run/run_translate.c): decode with the run's checkpoint. Returns the exit code. */
int run_translate(int argc, char **argv);

/* BLEU (0–100, report/bleu.h) of the model of cfg with parameters params on the validation
 * split of cfg's corpus, decoded with o. 0, or 1/2 with err set. */
int run_bleu(const config_t *cfg, const double *params, const decode_opts_t *o, double *bleu,
             char *err, size_t errlen);


#endif
