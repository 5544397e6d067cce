/* run.c — a training run: fresh or resumed file, signals, progress (a bar on a terminal, log
 * lines otherwise, a sweep's channel), the diagnosis as it happens, the final status. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/h5io.h"
#include "measure/curvature.h"
#include "measure/diagnose.h"
#include "measure/diagnose_curv.h"
#include "util/args.h"
#include "util/progress.h"
#include "report/bleu.h"
#include "report/diagnosis_curv.h"
#include "report/plot.h"
#include "run/run.h"
#include "study/figures.h"
#include "model/tensors.h"
#include "train/train.h"
#include "util/blascore.h"
#include "util/fsutil.h"
#include "util/threads.h"

static volatile sig_atomic_t stop_signal = 0;

/* The training core of a precision (train.precision; docs/design.md §2): the float64 one, or
 * the same code compiled with real = float. */
typedef struct {
    int (*create)(train_t **t, const config_t *cfg, char *err, size_t errlen);
    train_status_t (*run)(train_t *t, const train_callbacks_t *cb, const volatile sig_atomic_t *stop);
    void (*free)(train_t *t);
} train_core_t;

static const train_core_t CORES[] = {
    [PRECISION_FLOAT64] = {train_create, train_run, train_free},
    [PRECISION_FLOAT32] = {train_create_f32, train_run_f32, train_free_f32},
    // the emulated bfloat16s: the float32 core, rounding where nn/round.h says
    [PRECISION_BFLOAT16] = {train_create_f32, train_run_f32, train_free_f32},
    [PRECISION_BFLOAT16_PURE] = {train_create_f32, train_run_f32, train_free_f32},
    [PRECISION_FP8] = {train_create_f32, train_run_f32, train_free_f32},
};

static void on_signal(int sig) { stop_signal = sig; }

/* The signals that stop a training run with a checkpoint (run.h): every one whose default
 * ends the process and that says "stop" rather than "bug": the terminal closed (HUP), Slurm's
 * and the user's (INT, TERM, USR1, USR2), timers and CPU limits (ALRM, VTALRM, PROF, XCPU).
 * SIGXFSZ is ignored process-wide (main.c): a write past `ulimit -f` fails with EFBIG and is
 * reported as a write error, with the file as at its last flush. */
static const int STOP_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
                                   SIGPROF, SIGXCPU};
#define NSTOP ((int)(sizeof STOP_SIGNALS / sizeof STOP_SIGNALS[0]))

/* Catch the stop signals once (SA_RESETHAND: a second one has its default effect). */
static void signals_install(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    for (int i = 0; i < NSTOP; i++) sigaction(STOP_SIGNALS[i], &sa, &old[i]);
}

static void signals_restore(const struct sigaction *old)
{
    for (int i = 0; i < NSTOP; i++) sigaction(STOP_SIGNALS[i], &old[i], NULL);
}

/* Off a terminal, a log line at least this often (seconds), besides every output.log_every
 * updates: a slow run is never silent for minutes (test hook STABILITY_LOG_SECONDS, run.h). */
#define LOG_SECONDS 10.0

/* What the callbacks share. */
typedef struct {
    h5io_train_t *w;
    progress_t bar;
    double t0, elapsed0;   /* monotonic start; seconds already spent before a resume */
    long steps, signal_at;
    long first;            /* the first update of this process (> 1 after a resume) */
    train_record_t last;   /* the last update's record */
    double last_val;       /* the last validation loss (NaN before the first) */
    double last_bleu;      /* the last BLEU (NaN before the first) */
    double tokens;         /* tokens of the last training batch */
    double tokens_sum;     /* ... summed over this process's updates */
    diagnose_t diag;       /* what went wrong so far (measure/diagnose.h) */
    diagnose_curv_t curv;  /* the curvature rows against the threshold (measure/diagnose_curv.h) */
    report_curv_axes_t curv_ax;   /* their block axes' names (curv_stack: malloc'd) */
    const char **curv_stack;
    int quiet;             /* no warnings, no log, no summary */
    const char *name;      /* the run's name in warnings */
    /* the log: a line every log_every updates when stderr is not a terminal */
    int log_every;         /* 0: no lines */
    double log_seconds;    /* ... and a line at least this often */
    double log_t, log_tokens;   /* time and tokens at the last line */
    double log_measure, measure_sum;   /* seconds spent measuring since the last line; in all */
    long log_step;         /* the update of the last line */
    double log_loss, log_gnorm; /* sums of loss and finite gradient norms since the last line */
    long log_n, log_ng;
    /* the curvature rows' work (docs/design.md §10, "Cost"), in passes of a batch = updates */
    double curv_row0, curv_row;   /* update 0's row, a later one's (estimates) */
    long curv_every, curv_until;  /* probe.curvature_every (0: no rows), curvature_until */
} run_ctx_t;

/* The work done by the end of update s in units of one update (a forward+backward pass of a
 * batch): the updates and the curvature rows measured by then, each row as the passes it is
 * estimated to cost. What a sweep's progress and ETA count. */
static long work_units(const run_ctx_t *c, long s)
{
    if (c->curv_every <= 0) return s;
    const long last = c->curv_until > 0 && c->curv_until < s ? c->curv_until : s;
    const double w = (double)s + (s >= 1 ? c->curv_row0 : 0.0) +
                     c->curv_row * (double)(last / c->curv_every);
    return (long)fmin(w, 1e15);   // far below LONG_MAX: no undefined conversion
}

static void warn_line(run_ctx_t *c, const char *msg);

/* The curvature rows' estimated cost (c->curv_*), told to a sweep with where this process
 * starts, and a warning when a row is long: K steps of RUN_CURV_LONG_ITERS or more, or more
 * asked for than the parameters allow. */
static void curv_cost(run_ctx_t *c, const config_t *cfg, const train_t *t)
{
    if (!t->curv) return;
    c->curv_row0 = curv_row_passes(t->curv, cfg, 0);
    c->curv_row = curv_row_passes(t->curv, cfg, 1);
    c->curv_every = cfg->probe.curvature_every;
    c->curv_until = cfg->probe.curvature_until;
    char start[64];   // where this process starts, in the units a sweep counts (sweep_watch.c)
    snprintf(start, sizeof start, "%ld %ld", work_units(c, t->step), work_units(c, c->steps));
    progress_channel_send('S', start);
    const int K = curv_iters(t->curv);
    if (K < RUN_CURV_LONG_ITERS && cfg->probe.curvature_iters <= K) return;
    const long rows = work_units(c, cfg->train.steps) - cfg->train.steps;
    char msg[600];
    snprintf(msg, sizeof msg, "probe.curvature_iters = %d: %d Lanczos steps a row (at most the "
             "%zu parameters); a row costs about %.3g forward+backward passes of a batch, as "
             "many updates' worth (the re-orthogonalisation grows as K^2), all rows about %.3g "
             "against the run's %ld updates. A stop signal ends a row between two steps (the "
             "update is made again on --resume)", cfg->probe.curvature_iters, K,
             curv_num_params(t->curv), c->curv_row0, (double)rows, (long)cfg->train.steps);
    warn_line(c, msg);
}

/* One warning line on stderr (not with --quiet), and the same line to a sweep that listens
 * (util/progress.h). */
static void warn_line(run_ctx_t *c, const char *msg)
{
    progress_channel_send('W', msg);
    if (c->quiet) return;
    progress_clear(&c->bar);   // the warning takes the bar's line; the next update redraws it
    fprintf(stderr, "%s: warning: %s\n", c->name, msg);
}

/* A warning the first time each diagnosis happens. */
static void warn_events(run_ctx_t *c, int events)
{
    for (int e = 1; e < (1 << DIAG_NEVENTS); e <<= 1) {
        if (!(events & e)) continue;
        char msg[1200];
        diagnose_message(&c->diag, e, msg, sizeof msg);
        warn_line(c, msg);
    }
}

/* The curvature rows of update r (measure/diagnose_curv.h): a warning at the first one above
 * the optimizer's threshold. Reads the rows only: every dataset stays as it was. */
static void watch_curv(run_ctx_t *c, const train_t *t, const train_record_t *r)
{
    for (int k = 0; t->curv && k < 2; k++) {
        if (!(r->curv & (1 << k))) continue;
        const curv_row_t *m = &t->curv_row[k];
        const diagnose_curv_row_t row = {
            .step = m->step, .active = m->precond_max_active, .threshold = m->threshold,
            .full = m->precond_max, .eps_share = m->precond_eps_share,
            .block = m->precond_block_max};
        const int first = diagnose_curv_row(&c->curv, &row);
        c->diag.warmup_need = (double)diagnose_curv_warmup(&c->curv);   // the one warm-up answer's
        if (!first) continue;
        char msg[2000];
        report_curvature_message(&c->curv, &t->s.cfg, &c->curv_ax, 1, msg, sizeof msg);
        warn_line(c, msg);
    }
}

/* Tokens of the batch of update r (non-padding ids of the input and the source). */
static double batch_tokens(const train_t *t)
{
    const batch_t *b = &t->s.batch;
    long n = 0;
    for (long i = 0; i < (long)b->B * b->T; i++) n += b->tokens[i] >= 0;
    for (long i = 0; b->src && i < (long)b->B * b->S; i++) n += b->src[i] >= 0;
    return (double)n;
}

/* "12.3 ms/update, 41.6k tokens/s" (from a second on: "2.43 s/update") of u updates and tok
 * tokens in s seconds of training; with measuring time ms > 0 (probe and curvature rows,
 * validation, which the speed leaves out) ", + 3.1 s measuring". */
static void format_speed(char *buf, size_t len, double s, long u, double tok, double ms)
{
    const double r = s > 0 ? tok / s : 0, per = u > 0 ? s / (double)u : 0.0;
    const int n = snprintf(buf, len, "%.3g %s/update, %.3g%s tokens/s", per >= 1 ? per : 1e3 * per,
                           per >= 1 ? "s" : "ms", r >= 1e6 ? r / 1e6 : r >= 1e3 ? r / 1e3 : r,
                           r >= 1e6 ? "M" : r >= 1e3 ? "k" : "");
    if (ms >= 0.05 && n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ", + %.3g s measuring", ms);
}

/* The log line of update r (docs/manual.md, "Watching a run"): the mean loss and gradient
 * norm since the previous line, the validation loss and BLEU when measured now, the lr, the
 * speed since the previous line. */
static void log_line(run_ctx_t *c, const train_record_t *r)
{
    const double now = progress_now();
    char speed[128];
    format_speed(speed, sizeof speed, now - c->log_t - c->log_measure, r->step - c->log_step,
                 c->tokens_sum - c->log_tokens, c->log_measure);
    fprintf(stderr, "%s: update %ld/%ld | loss %.4f", c->name, r->step, c->steps,
            c->log_n ? c->log_loss / (double)c->log_n : r->loss);
    if (!isnan(r->val_loss)) fprintf(stderr, " | val_loss %.4f", r->val_loss);
    if (!isnan(r->bleu)) fprintf(stderr, " | bleu %.2f", r->bleu);
    fprintf(stderr, " | lr %.4g | grad_norm %.4g | %s\n", r->lr,
            c->log_ng ? c->log_gnorm / (double)c->log_ng : r->grad_norm, speed);
    c->log_t = now;
    c->log_measure = 0;
    c->log_step = r->step;
    c->log_tokens = c->tokens_sum;
    c->log_loss = c->log_gnorm = 0;
    c->log_n = c->log_ng = 0;
}

/* The update's log line, when one is due (and a thread count a sweep asks for). */
static void log_step(run_ctx_t *c, const train_record_t *r)
{
    const int threads = progress_channel_threads();   // a sweep gives this run its free cores
    if (threads && threads != threads_get()) {
        if (c->log_every && !c->quiet)
            fprintf(stderr, "%s: threads %d -> %d from update %ld\n", c->name, threads_get(),
                    threads, r->step + 1);
        threads_set(threads);   // between updates: the bits do not depend on it (design §7)
    }
    c->log_loss += r->loss;
    c->log_n++;
    c->log_measure += r->measure_s;
    c->measure_sum += r->measure_s;
    if (isfinite(r->grad_norm)) { c->log_gnorm += r->grad_norm; c->log_ng++; }
    if (!c->log_every || c->quiet) return;
    // by update, and by time: a line at least every LOG_SECONDS whatever log_every is
    if (r->step == c->first || r->step % c->log_every == 0 || r->step == c->steps ||
        !isnan(r->val_loss) || !isnan(r->bleu) || r->diverged ||
        progress_now() - c->log_t >= c->log_seconds)
        log_line(c, r);
}

/* The probe row of update r (or none) and its scalars, as the diagnosis reads them. */
static diagnose_update_t diagnose_row(const train_t *t, const train_record_t *r)
{
    diagnose_update_t u = {.step = r->step, .loss = r->loss, .lr = r->lr,
                           .grad_norm = r->grad_norm, .max_logit = r->dyn.max_logit,
                           .min_entropy = r->dyn.min_entropy};
    if (r->probed) {
        u.grad = t->probe.grad_fro;
        u.K = t->ax.nparam;
        u.head_logit = t->probe.attn_max_logit;
        u.head_entropy = t->probe.attn_entropy;
    }
    return u;
}

static int on_step(void *ctx, const train_t *t, const train_record_t *r)
{
    run_ctx_t *c = ctx;
    const double elapsed = c->elapsed0 + progress_now() - c->t0;
    c->last = *r;
    if (!isnan(r->val_loss)) c->last_val = r->val_loss;
    if (!isnan(r->bleu)) c->last_bleu = r->bleu;
    if (h5io_train_append(c->w, t, r, elapsed)) return 1;
    if (isnan(r->val_loss)) c->tokens = batch_tokens(t);   // else the batch is a validation one
    c->tokens_sum += c->tokens;
    const diagnose_update_t u = diagnose_row(t, r);
    int ev = diagnose_step(&c->diag, &u);
    if (r->diverged) ev = (ev | diagnose_diverged(&c->diag, r->step, train_diverged_reason(r->diverged))) & c->diag.events;
    log_step(c, r);
    warn_events(c, ev);
    watch_curv(c, t, r);
    char extra[96];
    snprintf(extra, sizeof extra, "loss %.4f  lr %.3g", r->loss, r->lr);
    progress_update_units(&c->bar, r->step, c->steps, work_units(c, r->step),
                          work_units(c, c->steps), extra);
    if (c->signal_at > 0 && r->step == c->signal_at) raise(SIGTERM);   // test hook (run.h)
    return 0;
}

/* BLEU of greedy translations of the validation split (train.bleu_every; run_translate.c). */
static int on_bleu(void *ctx, const train_t *t, double *bleu)
{
    (void)ctx;
    char err[1400];
    const decode_opts_t o = decode_defaults();
    const model_t *m = t->s.model;
    double *wide = NULL;   // float32: decoded in float64 from the parameters widened (exact)
    if (config_core_float(&t->s.cfg)) {
        if (!(wide = malloc(m->num_params * sizeof(double)))) return 1;
        const float *p = (const float *)(const void *)m->params;
        for (size_t i = 0; i < m->num_params; i++) wide[i] = p[i];
    }
    const int rc = run_bleu(&t->s.cfg, wide ? wide : m->params, &o, bleu, err, sizeof err);
    free(wide);
    if (rc == 0) return 0;
    fprintf(stderr, "\nstability: BLEU after update %ld: %s\n", t->step, err);
    return 1;
}

static int on_checkpoint(void *ctx, const train_t *t)
{
    return h5io_train_checkpoint(((run_ctx_t *)ctx)->w, t);
}

/* Resolved INI text of cfg (malloc'd). */
static char *ini_text(const config_t *cfg)
{
    const size_t len = config_to_ini(cfg, NULL, 0) + 1;
    char *ini = malloc(len);
    if (ini) config_to_ini(cfg, ini, len);
    return ini;
}

/* Fresh file or resume? Returns 0 and sets *resume / *overwrite, 1 or 2 on error, or −1 when
 * there is nothing to do (the file's run is done or diverged). --resume never erases a log
 * silently: a file without a usable checkpoint is started over only with --force. */
static int decide(const config_t *cfg, const char *path, const run_options_t *o, int *resume,
                  int *overwrite)
{
    *resume = 0;
    *overwrite = o->force || cfg->output.overwrite;
    h5io_train_info_t info;
    char err[1800], diff[256], data[4600];
    int rc = 0;
    if (!(o->resume || cfg->train.resume) || access(path, F_OK) != 0) return 0;
    if (h5io_train_inspect(path, &info, err, sizeof err)) {
        if (*overwrite) return 0;   // unreadable: --force replaces it
        fprintf(stderr, "stability: --resume: %s (--force replaces it)\n", err);
        return 1;
    }
    if (strcmp(info.kind, "train")) {
        fprintf(stderr, "stability: %s%s is not a training run's file (%s%s); %s\n",
                *overwrite ? "" : "--resume: ", path, info.kind[0] ? "a " : "",
                info.kind[0] ? info.kind : "no /train", *overwrite ? "--force: replacing it"
                : "use --force to replace it");
        rc = *overwrite ? 0 : 2;
    } else if (!h5io_config_same(cfg, info.config, diff, sizeof diff)) {
        fprintf(stderr, "stability: %s%s was written with another configuration (%s); %s\n",
                *overwrite ? "" : "--resume: ", path, diff, *overwrite ? "--force: replacing it"
                : "use --force to replace it");
        rc = *overwrite ? 0 : 2;
    } else if (!data_identity_same(cfg, info.data_sha256, info.data_bytes, data, sizeof data)) {
        // the data changed since the run began: continuing would train on other text
        fprintf(stderr, "stability: %s%s was written from other data (%s); %s\n",
                *overwrite ? "" : "--resume: ", path, data, *overwrite ? "--force: replacing it"
                : "use --force to start it over");
        rc = *overwrite ? 0 : 2;
    } else if (info.status && (!strcmp(info.status, "done") || !strcmp(info.status, "diverged"))) {
        if (!o->quiet) printf("%s: status %s, nothing to resume\n", path, info.status);
        rc = -1;
    } else if (info.checkpoint_step >= 0) {
        *resume = 1;
        if (!info.data_sha256 && data_reads_files(cfg))   // a file of a build before the identity
            fprintf(stderr, "stability: %s records no data identity (written before data_sha256 "
                    "existed): data.path is not checked; the resumed file records the data read "
                    "now\n", path);
    } else if (*overwrite) {
        fprintf(stderr, "stability: %s: no usable checkpoint (%s); --force: starting over\n", path,
                info.why);
    } else if (info.rows <= 0) {   // stopped before its first flush: nothing logged to erase
        fprintf(stderr, "stability: --resume: %s: no usable checkpoint (%s) and no update logged "
                "(stopped before its first flush): use --force to start it over\n", path,
                info.why);
        rc = 2;
    } else {
        fprintf(stderr, "stability: --resume: %s: no usable checkpoint (%s); starting over would "
                "erase its %ld logged updates: use --force to do that\n", path, info.why,
                info.rows);
        rc = 2;
    }
    h5io_train_info_free(&info);
    return rc;
}

/* The final line: status, updates, time and speed, loss from first to last, validation loss,
 * BLEU, the diagnosis' flags (measure/diagnose.h). */
static void print_summary(const config_t *cfg, const run_ctx_t *c, const char *status)
{
    const double s = progress_now() - c->t0;
    const long u = c->last.step - c->first + 1;
    char speed[128], flags[300];
    format_speed(speed, sizeof speed, s - c->measure_sum, u, c->tokens_sum, c->measure_sum);
    diagnose_flags(&c->diag, flags, sizeof flags);
    printf("%s: %s after %ld updates in %.3g s (%s)", cfg->name, status, c->last.step,
           c->elapsed0 + s, speed);
    if (!isnan(c->diag.start_mean))
        printf(", loss %.4f -> %.4f", c->diag.start_mean, c->diag.end_mean);
    else
        printf(", last loss %.4f", c->last.loss);
    if (!isnan(c->last_val)) printf(", validation loss %.4f", c->last_val);
    if (!isnan(c->last_bleu)) printf(", BLEU %.2f", c->last_bleu);
    printf("; diagnosis%s: %s\n", strcmp(status, "interrupted") ? "" : " so far", flags);
}

/* Start watching the run t of cfg: its diagnosis, bar or log, and the warnings known before
 * update 1 (a warm-up longer than the run). */
static void watch_start(run_ctx_t *c, const config_t *cfg, const train_t *t, const run_options_t *o)
{
    char label[80];
    snprintf(label, sizeof label, "train %.40s", cfg->name);
    diagnose_init(&c->diag, cfg, t->unigram);
    diagnose_axes(&c->diag, t->ax.L, (const char *const *)t->ax.stack, t->ax.nhead,
                  (const char *const *)t->ax.head);
    c->quiet = o->quiet;
    c->name = cfg->name;
    progress_start(&c->bar, label, o->quiet);
    progress_set_first(&c->bar, t->step);
    // log lines where no bar is drawn: a log file, a pipe, a cluster job's output
    c->log_every = o->quiet || isatty(STDERR_FILENO) ? 0 : cfg->output.log_every;
    warn_events(c, diagnose_start(&c->diag));
    // the curvature's block rows: the layer rows' stacks, then the tensors outside the layers
    const int rows = t->curv ? curv_rows(t->curv) : 0;
    diagnose_curv_init(&c->curv, cfg, rows, TENSOR_BLOCKS);
    c->curv_stack = rows == t->ax.L + 1 ? malloc((size_t)rows * sizeof *c->curv_stack) : NULL;
    for (int l = 0; c->curv_stack && l < t->ax.L; l++) c->curv_stack[l] = t->ax.stack[l];
    if (c->curv_stack) c->curv_stack[t->ax.L] = "outside";
    c->curv_ax = (report_curv_axes_t){.stack = c->curv_stack, .kind = NULL};
    c->t0 = c->log_t = progress_now();
    c->last.step = c->log_step = t->step;
    c->first = t->step + 1;
}

/* Whether a run stopped by sig exits 0 (resumable; what Slurm's signals and the requeue
 * expect: TERM, USR1) or 128 + sig (the others, as a shell reports a signal). */
static int stop_exit_code(int sig)
{
    return sig == SIGTERM || sig == SIGUSR1 ? 0 : 128 + sig;
}

/* The lines that end a run whose file is closed (st: how it ended, sig: the stop signal, step:
 * the updates done): the divergence, the summary, the interruption. Returns the exit code. */
static int say_end(const config_t *cfg, const run_ctx_t *c, const char *path,
                   const run_options_t *o, train_status_t st, int sig, long step)
{
    if (st == TRAIN_DIVERGED)
        fprintf(stderr, "%s: diverged at step %ld (%s: loss %g, grad_norm %g); status = diverged "
                "in %s\n", cfg->name, c->last.step, train_diverged_reason(c->last.diverged),
                c->last.loss, c->last.grad_norm, path);
    if (!o->quiet && st != TRAIN_FAILED && st != TRAIN_BAD_BATCH) {
        print_summary(cfg, c, st == TRAIN_DONE ? "done" : st == TRAIN_DIVERGED ? "diverged"
                                                                               : "interrupted");
        if (st == TRAIN_DONE) printf("wrote %s\n", path);
    }
    if (st != TRAIN_INTERRUPTED) return 0;
    fprintf(stderr, "%s: %s after step %ld: checkpoint written to %s (continue with --resume)\n",
            cfg->name, strsignal(sig), step, path);
    return stop_exit_code(sig);
}

/* [output] plots = true: draw the figures of the file just written into plots/. */
int run_plot(const char *path, int quiet)
{
    plot_set_t set;
    char err[1024], prefix[256];
    const char *files[1] = {path};
    const char *b = strrchr(path, '/');
    snprintf(prefix, sizeof prefix, "%.200s", b ? b + 1 : path);
    char *dot = strrchr(prefix, '.');
    if (dot) *dot = '\0';
    int rc = plot_load(&set, files, 1, err, sizeof err);
    if (!rc) {
        rc = plot_draw_all(&set, study_figures(), "plots", prefix, "png,pdf", quiet, err, sizeof err) < 0;
        plot_set_free(&set);
    }
    if (rc) fprintf(stderr, "stability: %s (the results file is complete)\n", err);
    return rc ? 1 : 0;
}

/* run_train once path is claimed. */
static int train_claimed(const config_t *cfg, const char *path, const run_options_t *o)
{
    char err[1400];
    int resume, overwrite;
    int rc = decide(cfg, path, o, &resume, &overwrite);
    if (rc) return rc < 0 ? 0 : rc;
    const train_core_t *core = &CORES[cfg->train.precision];
    train_t *t;
    if ((rc = core->create(&t, cfg, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", cfg->path[0] ? cfg->path : "config", err);
        return rc;
    }
    if (cfg->train.bleu_every) {   // BLEU needs the corpus' vocabulary and the scorer first
        long V = 0;
        int bad = bleu_vocab(cfg->data.path, &V, err, sizeof err);
        if (!bad && V != cfg->model.vocab)
            bad = snprintf(err, sizeof err, "%s/spm.model has %ld pieces, model.vocab = %d",
                           cfg->data.path, V, cfg->model.vocab) > 0;
        if (bad) {
            fprintf(stderr, "%s: train.bleu_every: %s\n", cfg->path[0] ? cfg->path : "config", err);
            core->free(t);
            return 2;
        }
    }

    double log_seconds = LOG_SECONDS;
    const char *every = getenv("STABILITY_LOG_SECONDS");
    if (every && args_parse_double(every, 0, 1, 1e9, &log_seconds)) {
        fprintf(stderr, "stability: STABILITY_LOG_SECONDS='%s': not a number of seconds > 0\n", every);
        core->free(t);
        return 2;
    }
    char *ini = ini_text(cfg);
    run_ctx_t c = {.steps = cfg->train.steps, .last_val = NAN, .last_bleu = NAN};
    const char *hook = getenv("STABILITY_SIGNAL_AT_STEP");
    c.signal_at = hook ? atol(hook) : 0;
    c.log_seconds = log_seconds;
    if (!ini) rc = 1;
    else if (resume) rc = h5io_train_resume(&c.w, path, t, ini, &c.elapsed0, err, sizeof err);
    else rc = h5io_train_create(&c.w, path, overwrite, t, ini, err, sizeof err);
    free(ini);
    if (rc) {
        fprintf(stderr, "stability: %s\n", err);
        core->free(t);
        return rc;
    }
    if (resume && !o->quiet) printf("%s: resuming at step %ld\n", path, t->step);
    watch_start(&c, cfg, t, o);
    curv_cost(&c, cfg, t);
    struct sigaction old[NSTOP];
    signals_install(old);
    const train_callbacks_t cb = {&c, on_step, on_checkpoint, cfg->train.bleu_every ? on_bleu : NULL};
    const train_status_t st = core->run(t, &cb, &stop_signal);
    const int sig = stop_signal;
    progress_end(&c.bar);
    // the events judged at the end (not learning) and those still waiting for their place
    warn_events(&c, diagnose_finish(&c.diag, st == TRAIN_DONE || st == TRAIN_DIVERGED));
    if (c.curv.above) {   // the crossing as a whole: peak, how long, block, remedies (as info)
        char msg[2000];
        report_curvature_message(&c.curv, cfg, &c.curv_ax, 0, msg, sizeof msg);
        warn_line(&c, msg);
    }
    free(c.curv_stack);

    const char *status = st == TRAIN_DONE ? "done" : st == TRAIN_DIVERGED ? "diverged" : "interrupted";
    // with BLEU logged, the final parameters are checkpointed too: `stability translate` then
    // decodes the model whose BLEU the log ends with
    if (st == TRAIN_INTERRUPTED || (st == TRAIN_DONE && cfg->train.bleu_every))
        rc = h5io_train_checkpoint(c.w, t);
    // a write that failed (a full disk) leaves the file as at its last flush; close says what
    // it holds and how to continue (docs/design.md §6)
    const int failed = st == TRAIN_FAILED || st == TRAIN_BAD_BATCH;
    if (h5io_train_close(c.w, failed ? "running" : status,
                         st == TRAIN_DIVERGED ? c.last.step : 0,
                         train_diverged_reason(c.last.diverged), err, sizeof err)) {
        fprintf(stderr, "stability: %s\n", err);
        rc = 1;
    } else if (st == TRAIN_FAILED) {
        fprintf(stderr, "stability: %s: cannot write the training log\n", path);
        rc = 1;
    } else if (st == TRAIN_BAD_BATCH) {
        fprintf(stderr, "stability: %s: step %ld: %s\n", path, t->step + 1, t->s.error);
        rc = 2;
    }
    signals_restore(old);
    if (!rc) rc = say_end(cfg, &c, path, o, st, sig, t->step);
    core->free(t);
    // [output] plots = true: the figures of a finished run (done or diverged)
    if (!rc && cfg->output.plots && (st == TRAIN_DONE || st == TRAIN_DIVERGED))
        rc = run_plot(path, o->quiet);
    return rc;
}

/* --resume continues a run with the OpenBLAS kernels it was computed with (docs/design.md §7):
 * re-executes the program with them when they are not these (does not return), or returns 2
 * after saying why it cannot; 0 when they are these. Before anything is written. */
static int run_kernels(const char *path)
{
    char *core = h5io_train_resume_core(path), why[400];
    const int rc = blascore_require(core, why, sizeof why);
    if (rc)
        fprintf(stderr, "stability: --resume: %s was computed with OpenBLAS's %s kernels, and only "
                "they continue it bit for bit: %s; or start it over with this machine's (%s): "
                "--force without --resume\n", path, core, why, blascore_name());
    free(core);
    return rc;
}

int run_train(const config_t *cfg, const char *path, const run_options_t *o)
{
    if (run_check_estimators(cfg, 0)) return 2;
    char err[1400];
    // the file will be written or replaced: only a regular file may be (docs/design.md §6)
    int rc = h5io_check_target(path, 1, err, sizeof err);
    if (rc) {
        fprintf(stderr, "stability: %s\n", err);
        return rc;
    }
    if ((o->resume || cfg->train.resume) && (rc = run_kernels(path))) return rc;
    // the claim before anything is read or created: a second writer refuses, naming this one
    const int claim = h5io_claim(path, "a training run", err, sizeof err);
    if (claim < 0) {
        fprintf(stderr, "stability: %s\n", err);
        return 1;
    }
    const int code = train_claimed(cfg, path, o);
    h5io_unclaim(path, claim);
    return code;
}
