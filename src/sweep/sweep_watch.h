/* sweep_watch.h — what a local sweep sees of its running runs (docs/design.md §3, "Watching
 * runs"): each run's channel (util/progress.h) gives its progress and warnings; the sweep's bar
 * counts updates (a probe: seed-batches) across runs with an ETA, prints each warning as one
 * line naming the run, and hands the cores of finished runs to the runs still going (a run
 * takes a new thread count between two updates; the bits never depend on it, docs/design.md §7).
 */
#ifndef STABILITY_SWEEP_WATCH_H
#define STABILITY_SWEEP_WATCH_H

#include "sweep/sweep.h"
#include "util/progress.h"

typedef struct {
    const sweep_t *s;
    int jobs, cores, quiet;
    int *fd;              /* [jobs] each slot's channel, −1 when none */
    int *run;             /* [jobs] the run in each slot, −1 when free */
    int *threads;         /* [jobs] the thread count each slot's run was last given */
    long *expect;         /* [nruns] units a run has (train.steps or seeds × batches); 0 not to do */
    long *done, *first;   /* [nruns] units done; done when this process started it (resumes) */
    int finished, todo;   /* runs ended, runs to run */
    double logged;        /* a log (no terminal): when the last progress line was written */
    progress_t bar;
} sweep_watch_t;

/* Set up for running todo[0..ntodo) of s, jobs at a time on cores threads; one bar unless
 * quiet. 0, or 1 when out of memory. */
int sweep_watch_init(sweep_watch_t *w, const sweep_t *s, const int *todo, int ntodo, int jobs,
                     int cores, int quiet);

/* Free what sweep_watch_init allocated; close every channel. */
void sweep_watch_free(sweep_watch_t *w);

/* The threads a run started now gets (unstarted: the runs not started yet, it included): an
 * even share of the cores among the runs that will be going at once. */
int sweep_watch_share(const sweep_watch_t *w, int unstarted);

/* Run `run` started in slot with its channel fd (−1: none) and `threads` threads. */
void sweep_watch_started(sweep_watch_t *w, int slot, int run, int fd, int threads);

/* The run in slot ended (ok: it finished its work): its last messages read, its channel closed;
 * one line on a log (not a terminal) saying how far the sweep is. */
void sweep_watch_ended(sweep_watch_t *w, int slot, int ok);

/* Give the cores to the running runs, evenly (the first ones one more when they do not divide):
 * each run whose share changed is told on its channel. */
void sweep_watch_rebalance(sweep_watch_t *w);

/* Wait up to ms milliseconds for messages and read them all: progress, warnings (printed as
 * "RUN: warning: ..." unless quiet). */
void sweep_watch_poll(sweep_watch_t *w, int ms);

/* Redraw the bar: units done of all, the runs going, finished and failed; where the output is a
 * log, a progress line every SWEEP_LOG_SECONDS instead. */
#define SWEEP_LOG_SECONDS 60.0
void sweep_watch_bar(sweep_watch_t *w, int running, int failed);

/* The units a run of s has to do: train.steps for a training run, probe.seeds × probe.batches
 * for a probe (0 when its config does not load). */
long sweep_watch_units(const sweep_t *s, int i);

/* The table a local sweep ends with, of every run of s (not only those it ran): run, status,
 * updates, final loss (the mean of the last 20 updates), last validation loss, the diagnosis'
 * flags (measure/diagnose.h), or why a run has no result (failed[i]: the exit code of a run
 * that failed in this sweep, 0 otherwise). Printed on stdout unless quiet, and written to
 * results/<sweep>/summary.txt (a regular file, replaced whole). 0, or 1 when it could not be
 * written. */
int sweep_summary(const sweep_t *s, const int *failed, int quiet);

#endif
