/* progress.h — a one-line progress bar with ETA on stderr when it is a terminal. */
#ifndef STABILITY_PROGRESS_H
#define STABILITY_PROGRESS_H

typedef struct {
    int enabled;         /* 0 under --quiet or when stderr is not a tty */
    double start;        /* monotonic seconds at progress_start */
    double last;         /* last redraw */
    long first;          /* done at the start (a resumed run): the ETA's rate counts from here */
    char label[64];
} progress_t;

/* Start a bar labelled label; quiet disables it (as does a non-tty stderr). */
void progress_start(progress_t *p, const char *label, int quiet);

/* Count the rate for the ETA from done = first on (default 0), e.g. a resumed run's step. */
void progress_set_first(progress_t *p, long first);

/* Redraw for done of total (at most ~10 times a second, always at the end); extra may be
 * NULL or a short text shown after the ETA (e.g. "loss 3.21"). */
void progress_update(progress_t *p, long done, long total, const char *extra);

/* Finish the line (newline) if the bar was drawn. */
void progress_end(progress_t *p);

/* Monotonic clock in seconds. */
double progress_now(void);

/* probe_progress_fn adapter: ctx is a progress_t*. */
void progress_callback(void *ctx, long done, long total);

#endif
