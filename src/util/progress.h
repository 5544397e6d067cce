/* progress.h — a one-line progress bar with ETA on stderr when it is a terminal, and the channel
 * through which a run started by `stability sweep` tells the sweep how far it is and what went
 * wrong, and hears how many threads it may use (docs/design.md §3, "Watching runs").
 *
 * The channel is a Unix packet socket (SOCK_SEQPACKET: one record a line, never cut) the sweep
 * passes as STABILITY_SWEEP_FD. Lines, each at most PROGRESS_LINE_MAX bytes: the run sends "P DONE TOTAL" (its progress, at most ~4 times a second
 * and at the end) and "W TEXT" (a warning, one line); the sweep sends "T N" (use N threads from
 * the next update on). Sends never block and never raise SIGPIPE: a sweep that is gone or slow
 * loses lines, never the run.
 */
#ifndef STABILITY_PROGRESS_H
#define STABILITY_PROGRESS_H

#define PROGRESS_LINE_MAX 1024

typedef struct {
    int enabled;         /* 0 under --quiet or when stderr is not a tty */
    double start;        /* monotonic seconds at progress_start */
    double last;         /* last redraw */
    double sent;         /* last progress line on the channel */
    long first;          /* done at the start (a resumed run): the ETA's rate counts from here */
    char label[64];
} progress_t;

/* Start a bar labelled label; quiet disables it (as does a non-tty stderr). */
void progress_start(progress_t *p, const char *label, int quiet);

/* Count the rate for the ETA from done = first on (default 0), e.g. a resumed run's step. */
void progress_set_first(progress_t *p, long first);

/* Redraw for done of total (at most ~10 times a second, always at the end); extra may be
 * NULL or a short text shown after the ETA (e.g. "loss 3.21"). Also tells a sweep (the
 * channel), bar or not. */
void progress_update(progress_t *p, long done, long total, const char *extra);

/* The same, but the sweep is told units_done of units_total: the work counted in units of one
 * update, so that a curvature row counts as the updates it costs (docs/design.md §10, "Cost"). */
void progress_update_units(progress_t *p, long done, long total, long units_done,
                           long units_total, const char *extra);

/* Finish the line (newline) if the bar was drawn. */
void progress_end(progress_t *p);

/* Erase the bar's line (a terminal), so that a message takes it; the next update redraws. */
void progress_clear(progress_t *p);

/* "1:02:03" or "2:03" of s seconds into buf. */
void progress_duration(char *buf, unsigned long len, double s);

/* Monotonic clock in seconds. */
double progress_now(void);

/* probe_progress_fn adapter: ctx is a progress_t*. */
void progress_callback(void *ctx, long done, long total);

/* Take the channel from STABILITY_SWEEP_FD (then unset it, and close-on-exec so the run's own
 * children do not hold it) when it names a socket; nothing otherwise. Once, at start-up. */
void progress_channel_open(void);

/* 1 when a sweep listens (progress_channel_open found its socket). */
int progress_channel_active(void);

/* Send the line "KIND TEXT" (TEXT without newlines: they become spaces); dropped when the
 * socket is full or gone. */
void progress_channel_send(char kind, const char *text);

/* The thread count the sweep asked for last since the previous call, or 0. Reads the socket
 * at most every 50 ms (a clock read otherwise). */
int progress_channel_threads(void);

#endif
