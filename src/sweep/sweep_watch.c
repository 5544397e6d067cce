/* sweep_watch.c — a local sweep's view of its runs (sweep_watch.h). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "config/config.h"
#include "measure/curvature.h"
#include "sweep/sweep_watch.h"

/* A curvature row's passes from cfg alone, before the run reports its own (docs/design.md
 * §10, "Cost"): K and K_b as asked, four blocks a layer and one outside; a probe's rows have no
 * blocks; later: a row after update 0. */
static double row_estimate(const config_t *cfg, int later)
{
    const int layers = cfg->model.layers + (cfg->model.arch == ARCH_ENCDEC
                       ? (cfg->model.dec_layers ? cfg->model.dec_layers : cfg->model.layers) : 0);
    const int train = cfg->train.steps > 0;
    const double T = (double)cfg->data.batch * (cfg->model.seq_len + config_src_len(cfg));
    return curv_cost_passes(cfg->probe.curvature_iters,
                            train ? cfg->probe.curvature_block_iters : 0, train ? 4 * layers + 1 : 0,
                            T, cfg->train.optimizer != OPT_SGD,
                            later && cfg->probe.curvature_active_only);
}

long sweep_watch_units(const sweep_t *s, int i)
{
    sweep_sets_t sets;
    sweep_run_sets(s, i, &sets);
    config_t cfg;
    char err[CONFIG_ERR_MAX];
    if (config_load(&cfg, s->base, sets.ptr, sets.n, err, sizeof err)) return 0;
    const long every = cfg.probe.curvature_every;
    if (cfg.train.steps == 0)   // a probe: a row per seed after its batches
        return (long)fmin((double)cfg.probe.seeds * cfg.probe.batches +
                          (every > 0 ? cfg.probe.seeds * row_estimate(&cfg, 0) : 0.0), 1e15);
    if (every <= 0) return cfg.train.steps;
    const long until = cfg.probe.curvature_until, steps = cfg.train.steps;
    const long last = until > 0 && until < steps ? until : steps;
    return (long)fmin((double)steps + row_estimate(&cfg, 0) +
                      (double)(last / every) * row_estimate(&cfg, 1), 1e15);
}

int sweep_watch_init(sweep_watch_t *w, const sweep_t *s, const int *todo, int ntodo, int jobs,
                     int cores, int quiet)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->jobs = jobs;
    w->cores = cores;
    w->quiet = quiet;
    w->todo = ntodo;
    w->fd = malloc((size_t)jobs * sizeof(int));
    w->run = malloc((size_t)jobs * sizeof(int));
    w->threads = calloc((size_t)jobs, sizeof(int));
    w->expect = calloc((size_t)s->nruns, sizeof(long));
    w->done = calloc((size_t)s->nruns, sizeof(long));
    w->first = calloc((size_t)s->nruns, sizeof(long));
    if (!w->fd || !w->run || !w->threads || !w->expect || !w->done || !w->first) {
        sweep_watch_free(w);
        return 1;
    }
    for (int k = 0; k < jobs; k++) w->fd[k] = w->run[k] = -1;
    for (int k = 0; k < ntodo; k++) {
        w->expect[todo[k]] = sweep_watch_units(s, todo[k]);
        w->first[todo[k]] = -1;   // not started
    }
    char label[160];
    snprintf(label, sizeof label, "sweep %.100s", s->name);
    progress_start(&w->bar, label, quiet);
    return 0;
}

void sweep_watch_free(sweep_watch_t *w)
{
    for (int k = 0; w->fd && k < w->jobs; k++)
        if (w->fd[k] >= 0) close(w->fd[k]);
    free(w->fd); free(w->run); free(w->threads);
    free(w->expect); free(w->done); free(w->first);
    w->fd = w->run = w->threads = NULL;
    w->expect = w->done = w->first = NULL;
}

/* Running runs. */
static int running(const sweep_watch_t *w)
{
    int n = 0;
    for (int k = 0; k < w->jobs; k++) n += w->run[k] >= 0;
    return n;
}

int sweep_watch_share(const sweep_watch_t *w, int unstarted)
{
    const int going = running(w) + unstarted;   // the runs going at once once the slots fill
    const int n = going < w->jobs ? going : w->jobs;
    return n > 0 && w->cores / n > 0 ? w->cores / n : 1;
}

void sweep_watch_started(sweep_watch_t *w, int slot, int run, int fd, int threads)
{
    w->run[slot] = run;
    w->fd[slot] = fd;
    w->threads[slot] = threads;
}

/* One message of slot's run: "P DONE TOTAL", "S DONE TOTAL" (where a run starts, in units of
 * one update: a curvature row counts as the passes it costs, docs/design.md §10) or "W TEXT". */
static void message(sweep_watch_t *w, int slot, char *msg)
{
    const int i = w->run[slot];
    if ((msg[0] == 'P' || msg[0] == 'S') && msg[1] == ' ') {
        long done, total;
        if (sscanf(msg + 2, "%ld %ld", &done, &total) != 2 || done < 0 || total <= 0) return;
        if (msg[0] == 'S') w->first[i] = done;
        // else the first report is after the first unit of this process: a resumed run began
        // at done − 1
        if (w->first[i] < 0) w->first[i] = done > 0 ? done - 1 : 0;
        w->done[i] = done;
        w->expect[i] = total;
    } else if (msg[0] == 'W' && msg[1] == ' ' && !w->quiet) {
        progress_clear(&w->bar);   // the warning takes the bar's line
        fprintf(stderr, "%s: warning: %s\n", w->s->runs[i].name, msg + 2);
    }
}

/* Read every message waiting on slot's channel; close it at its end (the run has exited). */
static void drain(sweep_watch_t *w, int slot)
{
    char msg[PROGRESS_LINE_MAX + 1];
    for (;;) {
        const ssize_t n = recv(w->fd[slot], msg, sizeof msg - 1, MSG_DONTWAIT);
        if (n > 0) {
            msg[n] = '\0';
            message(w, slot, msg);
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            close(w->fd[slot]);
            w->fd[slot] = -1;
        }
        return;
    }
}

void sweep_watch_poll(sweep_watch_t *w, int ms)
{
    struct pollfd pfd[SWEEP_MAX_RUNS];
    int slot_of[SWEEP_MAX_RUNS], n = 0;
    for (int k = 0; k < w->jobs && n < SWEEP_MAX_RUNS; k++)
        if (w->fd[k] >= 0) {
            pfd[n] = (struct pollfd){w->fd[k], POLLIN, 0};
            slot_of[n++] = k;
        }
    if (n == 0) {
        const struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return;
    }
    if (poll(pfd, (nfds_t)n, ms) <= 0) return;   // timeout, or a signal: the caller looks
    for (int j = 0; j < n; j++)
        if (pfd[j].revents) drain(w, slot_of[j]);
}

/* Units done and to do in all (a resumed run's earlier updates left out of both). */
static void totals(const sweep_watch_t *w, long *done, long *all)
{
    *done = *all = 0;
    for (int r = 0; r < w->s->nruns; r++) {
        const long f = w->first[r] > 0 ? w->first[r] : 0;
        *done += w->done[r] - f;
        *all += w->expect[r] - f;
    }
}

/* One line of the sweep's progress on a log: "sweep NAME: WHAT; k of n runs ended, ...". */
static void log_progress(sweep_watch_t *w, const char *what)
{
    long done, all;
    totals(w, &done, &all);
    char el[32], eta[32] = "--:--";
    const double t = progress_now() - w->bar.start;
    progress_duration(el, sizeof el, t);
    if (done > 0) progress_duration(eta, sizeof eta, t / (double)done * (double)(all - done));
    fprintf(stderr, "sweep %s: %s; %d of %d runs ended, %ld/%ld units (%.0f %%), %s, ETA %s\n",
            w->s->name, what, w->finished, w->todo, done, all,
            all > 0 ? 100.0 * (double)done / (double)all : 100.0, el, eta);
    w->logged = progress_now();
}

void sweep_watch_ended(sweep_watch_t *w, int slot, int ok)
{
    const int i = w->run[slot];
    if (w->fd[slot] >= 0) drain(w, slot);
    if (w->fd[slot] >= 0) close(w->fd[slot]);
    w->fd[slot] = -1;
    w->run[slot] = -1;
    w->threads[slot] = 0;
    w->finished++;
    if (w->first[i] < 0) w->first[i] = 0;
    if (ok || w->done[i] > w->expect[i]) w->done[i] = w->expect[i];
    else w->expect[i] = w->done[i];   // what it did is all it will do in this sweep
    if (w->quiet || w->bar.enabled) return;
    char what[200];
    snprintf(what, sizeof what, "%s %s", w->s->runs[i].name, ok ? "finished" : "ended without its result");
    log_progress(w, what);
}

void sweep_watch_rebalance(sweep_watch_t *w)
{
    const int n = running(w);
    if (n == 0) return;
    const int base = w->cores / n > 0 ? w->cores / n : 1, extra = w->cores / n > 0 ? w->cores % n : 0;
    for (int k = 0, j = 0; k < w->jobs; k++) {
        if (w->run[k] < 0) continue;
        const int want = base + (j++ < extra);
        if (want == w->threads[k] || w->fd[k] < 0) continue;
        char msg[32];
        const int len = snprintf(msg, sizeof msg, "T %d", want);
        if (send(w->fd[k], msg, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL) == len) w->threads[k] = want;
    }
}

void sweep_watch_bar(sweep_watch_t *w, int running_runs, int failed)
{
    long done, all;
    totals(w, &done, &all);
    if (!w->bar.enabled) {   // a log: a line now and then
        if (!w->quiet && progress_now() - (w->logged > 0 ? w->logged : w->bar.start) >= SWEEP_LOG_SECONDS) {
            char what[64];
            snprintf(what, sizeof what, "%d running", running_runs);
            log_progress(w, what);
        }
        return;
    }
    char extra[96];
    snprintf(extra, sizeof extra, "%d running, %d/%d runs ended, %d failed", running_runs,
             w->finished, w->todo, failed);
    progress_update(&w->bar, done, all > 0 ? all : 1, extra);
}
