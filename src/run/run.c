/* run.c — a training run: fresh or resumed file, signals, progress, the final status. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/h5io.h"
#include "measure/diagnose.h"
#include "util/progress.h"
#include "report/bleu.h"
#include "report/plot.h"
#include "run/run.h"
#include "train/train.h"
#include "util/blascore.h"
#include "util/fsutil.h"

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

/* What the callbacks share. */
typedef struct {
    h5io_train_t *w;
    progress_t bar;
    double t0, elapsed0;   /* monotonic start; seconds already spent before a resume */
    long steps, signal_at;
    train_record_t last;   /* the last update's record */
    double last_val;       /* the last validation loss (NaN before the first) */
    double last_bleu;      /* the last BLEU (NaN before the first) */
    diagnose_t diag;       /* what went wrong so far (measure/diagnose.h) */
    int quiet;             /* no warnings */
    const char *name;      /* the run's name in warnings */
} run_ctx_t;

/* One warning line on stderr the first time each diagnosis happens (not with --quiet). */
static void warn_events(run_ctx_t *c, int events)
{
    for (int e = 1; e <= DIAG_GRAD_COLLAPSE && !c->quiet; e <<= 1) {
        if (!(events & e)) continue;
        char msg[400];
        diagnose_message(&c->diag, e, msg, sizeof msg);
        progress_end(&c->bar);   // the warning on a line of its own
        fprintf(stderr, "%s: warning: %s\n", c->name, msg);
    }
}

static int on_step(void *ctx, const train_t *t, const train_record_t *r)
{
    run_ctx_t *c = ctx;
    const double elapsed = c->elapsed0 + progress_now() - c->t0;
    c->last = *r;
    if (!isnan(r->val_loss)) c->last_val = r->val_loss;
    if (!isnan(r->bleu)) c->last_bleu = r->bleu;
    if (h5io_train_append(c->w, t, r, elapsed)) return 1;
    int ev = diagnose_step(&c->diag, r->step, r->loss, r->dyn.max_logit, r->dyn.min_entropy);
    if (r->probed)
        ev |= diagnose_probe(&c->diag, r->step, t->probe.grad_fro, t->ax.L, t->ax.nparam);
    warn_events(c, ev);
    char extra[96];
    snprintf(extra, sizeof extra, "loss %.4f  lr %.3g", r->loss, r->lr);
    progress_update(&c->bar, r->step, c->steps, extra);
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
    if (t->s.cfg.train.precision == PRECISION_FLOAT32) {
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
    char err[1800], diff[256];
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
    } else if (info.status && (!strcmp(info.status, "done") || !strcmp(info.status, "diverged"))) {
        if (!o->quiet) printf("%s: status %s, nothing to resume\n", path, info.status);
        rc = -1;
    } else if (info.checkpoint_step >= 0) {
        *resume = 1;
    } else if (*overwrite) {
        fprintf(stderr, "stability: %s: no usable checkpoint (%s); --force: starting over\n", path,
                info.why);
    } else {
        fprintf(stderr, "stability: --resume: %s: no usable checkpoint (%s); starting over would "
                "erase its %ld logged updates: use --force to do that\n", path, info.why,
                info.rows > 0 ? info.rows : 0);
        rc = 2;
    }
    h5io_train_info_free(&info);
    return rc;
}

static void print_summary(const config_t *cfg, const run_ctx_t *c, const char *path)
{
    printf("%s: %ld steps in %.1f s, last loss %.4f", cfg->name, c->last.step,
           c->elapsed0 + progress_now() - c->t0, c->last.loss);
    if (!isnan(c->last_val)) printf(", validation loss %.4f", c->last_val);
    if (!isnan(c->last_bleu)) printf(", BLEU %.2f", c->last_bleu);
    printf("\nwrote %s\n", path);
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
        rc = plot_draw_all(&set, "plots", prefix, "png,pdf", quiet, err, sizeof err) < 0;
        plot_set_free(&set);
    }
    if (rc) fprintf(stderr, "stability: %s (the results file is complete)\n", err);
    return rc ? 1 : 0;
}

/* Whether a run stopped by sig exits 0 (resumable; what Slurm's signals and the requeue
 * expect: TERM, USR1) or 128 + sig (the others, as a shell reports a signal). */
static int stop_exit_code(int sig)
{
    return sig == SIGTERM || sig == SIGUSR1 ? 0 : 128 + sig;
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

    char *ini = ini_text(cfg);
    run_ctx_t c = {.steps = cfg->train.steps, .last_val = NAN, .last_bleu = NAN};
    const char *hook = getenv("STABILITY_SIGNAL_AT_STEP");
    c.signal_at = hook ? atol(hook) : 0;
    if (!ini) rc = 1;
    else if (resume) rc = h5io_train_resume(&c.w, path, t, ini, &c.elapsed0, err, sizeof err);
    else rc = h5io_train_create(&c.w, path, overwrite, t, ini, err, sizeof err);
    free(ini);
    if (rc) {
        fprintf(stderr, "stability: %s\n", err);
        core->free(t);
        return rc;
    }
    char label[80];
    snprintf(label, sizeof label, "train %.40s", cfg->name);
    diagnose_init(&c.diag, t->unigram);
    c.quiet = o->quiet;
    c.name = cfg->name;
    progress_start(&c.bar, label, o->quiet);
    progress_set_first(&c.bar, t->step);
    if (resume && !o->quiet) printf("%s: resuming at step %ld\n", path, t->step);
    c.t0 = progress_now();
    c.last.step = t->step;
    struct sigaction old[NSTOP];
    signals_install(old);
    const train_callbacks_t cb = {&c, on_step, on_checkpoint, cfg->train.bleu_every ? on_bleu : NULL};
    const train_status_t st = core->run(t, &cb, &stop_signal);
    const int sig = stop_signal;
    progress_end(&c.bar);

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
    if (!rc && st == TRAIN_DIVERGED)
        fprintf(stderr, "%s: diverged at step %ld (%s: loss %g, grad_norm %g); status = diverged "
                "in %s\n", cfg->name, c.last.step, train_diverged_reason(c.last.diverged),
                c.last.loss, c.last.grad_norm, path);
    if (!rc && st == TRAIN_INTERRUPTED) {
        fprintf(stderr, "%s: %s after step %ld: checkpoint written to %s (continue with --resume)\n",
                cfg->name, strsignal(sig), t->step, path);
        rc = stop_exit_code(sig);
    }
    if (!rc && st == TRAIN_DONE && !o->quiet) print_summary(cfg, &c, path);
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
