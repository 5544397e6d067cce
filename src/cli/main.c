/* main.c — the command line (docs/design.md §3): the verb table, and the options of the verbs
 * that read a config (train, probe, the --config form, dump, gradcheck); info, plot and sweep
 * parse their own (cli.h), translate its own (run/run.h). Exit codes: 0 success, 1 runtime
 * failure, 2 bad usage, 3 a sweep merge with runs missing, 130 (128 + the signal) stopped. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include "config/config.h"
#include "io/h5io.h"
#include "util/text.h"
#include "util/args.h"
#include "util/blascore.h"
#include "util/progress.h"
#include "report/report.h"
#include "run/run.h"
#include "util/threads.h"
#include "cli/cli.h"

#ifndef STABILITY_VERSION
#define STABILITY_VERSION "unknown"
#endif

#define MAX_SETS 256

/* Options shared by the verbs that read a config. */
typedef struct {
    const char *config;
    const char *sets[MAX_SETS];
    int nsets;
    const char *out;
    int quiet, force, resume;
    int hvp;               /* dump: --hvp */
    long entries;          /* gradcheck: entries per tensor */
    double perturb;        /* dump, gradcheck: N(0, perturb²) added to biases, γ, β */
    double tol;            /* gradcheck: tolerance */
} options_t;

static const char *USAGE =
    "usage: stability train CONFIG [--set section.key=value]... [--out FILE.h5] [--force]\n"
    "                       [--resume] [--quiet]\n"
    "       stability probe CONFIG [--set section.key=value]... [--out FILE.h5] [--force] [--quiet]\n"
    "       stability --config CONFIG [same options]   (trains when train.steps > 0, else probes)\n"
    "       stability sweep FILE [--jobs N] [--dry-run] [--quiet]\n"
    "       stability sweep FILE --task I | --merge [--force] | --configs DIR\n"
    "       stability sweep FILE --slurm [--submit [--only-missing]] [--set slurm.KEY=VALUE]...\n"
    "       stability plot FILE.h5... [--out DIR] [--format png,pdf,svg] [--quiet]\n"
    "       stability info FILE.h5... [--all]     per-run tables and the diagnosis\n"
    "       stability info FILE.h5... --train     seeds of training runs, losses +- 95% CI\n"
    "       stability info [FILE.h5...] --schemes the scheme table, or each run's scheme\n"
    "       stability info FILE.h5... --runs      the table of runs (TSV): identity, outcome\n"
    "       stability dump --config CONFIG --out FILE.h5 [--set ...] [--force] [--perturb S] [--hvp]\n"
    "       stability gradcheck --config CONFIG [--set ...] [--entries N] [--tol X] [--perturb S]\n"
    "       stability advise --config CONFIG [--set ...] [--out ADVICE.h5] [--force] [--quiet]\n"
    "       stability table STUDY FILE.h5... [--tsv] [--common]   a study's tables (docs' numbers)\n"
    "       stability translate RUN.h5 [--beam K] [--lenpen A] [--max-len-a A] [--max-len-b B]\n"
    "                           [--input FILE] [--ids]\n"
    "       stability --help | VERB --help | --version\n"
    "\n"
    "Measures why Post-LN transformers need learning-rate warm-up and Pre-LN ones do not\n"
    "(Xiong et al., ICML 2020). CONFIG is an INI file; a name without '/' is looked up in\n"
    "configs/ (docs/manual.md). Each verb's options: stability VERB --help.\n"
    "Exit codes: 0 success (a diverged training run is a result: exit 0); 1 runtime failure\n"
    "(I/O, HDF5, gnuplot) or a failed run in a sweep; 2 bad usage or config; 3 sweep --merge\n"
    "found runs missing (it names their task ids); 130 a run stopped by SIGINT (a training run\n"
    "checkpoints first; SIGTERM and SIGUSR1 checkpoint and exit 0); 128 + the signal for a\n"
    "sweep stopped by one.\n"
    "Watching: a bar on a terminal; otherwise a log line every output.log_every updates.\n"
    "Threads: STABILITY_THREADS, else SLURM_CPUS_PER_TASK, else OMP_NUM_THREADS /\n"
    "OPENBLAS_NUM_THREADS (the smaller), else all CPUs (docs/performance.md). A local sweep\n"
    "divides that count among its --jobs and gives each run its share in\n"
    "STABILITY_SWEEP_THREADS, which wins over all of these.\n";

/* What probe and train do, and the options they share (stability VERB --help). */
#define PROBE_TEXT \
    "probe (train.steps = 0): measures at initialisation. For probe.seeds initialisations\n" \
    "(init.seed, init.seed+1, ...) and probe.batches batches each, it measures every layer's\n" \
    "gradient norms ||E_batch dL/dW||_F and E_batch ||dL/dW||_F, hidden-state norms and the\n" \
    "exact norm-layer Jacobian norms (with probe.curvature_every: the Hessian's and Adam's\n" \
    "preconditioned sharpness), writes them to one HDF5 file and prints a summary.\n"
#define TRAIN_TEXT \
    "train (train.steps > 0): trains the model for train.steps updates, logging /train (step lr\n" \
    "loss grad_norm per update; per-layer norms every probe.every updates; val_loss for the text\n" \
    "task) into the file, written in place (HDF5 SWMR; a killed run's file opens with\n" \
    "h5py.File(path, 'r', swmr=True)). Status running -> done | diverged (non-finite loss or\n" \
    "gradient: exit 0) | interrupted (SIGINT, SIGTERM, SIGUSR1: /checkpoint written; exit 0,\n" \
    "SIGINT 130). On a terminal a progress bar; otherwise (a log file, a cluster job) a line\n" \
    "after the first update, then every output.log_every updates or 10 s: update, mean loss and\n" \
    "gradient norm since the last line, validation loss when measured, lr, ms/update and\n" \
    "tokens/s of training alone (time spent measuring curvature is said apart). Warnings\n" \
    "(divergence, explosion, not learning, a leak of the targets, a warm-up longer than the run,\n" \
    "the unigram plateau, logit growth, entropy collapse, gradient collapse; with\n" \
    "probe.curvature_every, the active preconditioned sharpness above the optimizer's\n" \
    "threshold) as they happen, each with its update, layer/head and the keys to set; a final\n" \
    "summary line with the diagnosis (stability info FILE.h5 says it again).\n"
#define RUN_OPTIONS \
    "  CONFIG, --config CONFIG   INI file (docs/manual.md); a bare name is looked up in configs/\n" \
    "  --set S.K=V     override one key, e.g. --set model.layers=12 (repeatable; a later one\n" \
    "                  of a key wins, said on stderr)\n" \
    "  --out FILE.h5   output file (default: [output] file, else results/<config name>.h5)\n" \
    "  --force         replace an existing output file ([output] overwrite = true)\n"
#define QUIET_OPTION "  --quiet         no progress bar or log lines, no warnings, no summary\n"
#define RESUME_OPTION \
    "  --resume        continue the output file's run from its /checkpoint, bit-identically\n" \
    "                  ([train] resume = auto); a new run if there is no file yet\n"

static const char *HELP_TRAIN =
    "usage: stability train CONFIG [--set section.key=value]... [--out FILE.h5] [--force]\n"
    "                       [--resume] [--quiet]\n"
    "\n" TRAIN_TEXT
    "A config whose train.steps is 0 is refused: that is a probe (stability probe CONFIG).\n"
    RUN_OPTIONS RESUME_OPTION QUIET_OPTION;

static const char *HELP_PROBE =
    "usage: stability probe CONFIG [--set section.key=value]... [--out FILE.h5] [--force] [--quiet]\n"
    "\n" PROBE_TEXT
    "A config whose train.steps is above 0 is refused: that is a training run (stability train).\n"
    RUN_OPTIONS QUIET_OPTION;

static const char *HELP_RUN =
    "usage: stability --config CONFIG [--set section.key=value]... [--out FILE.h5] [--force]\n"
    "                                 [--resume] [--quiet]\n"
    "\n"
    "Does whichever train.steps says: a probe at initialisation (0) or a training run (> 0).\n"
    PROBE_TEXT TRAIN_TEXT RUN_OPTIONS RESUME_OPTION QUIET_OPTION;

static const char *HELP_DUMP =
    "usage: stability dump --config CONFIG --out FILE.h5 [--set section.key=value]... [--force]\n"
    "                      [--perturb S] [--hvp] [--quiet]\n"
    "\n"
    "Initialises the model, draws one batch, runs forward and backward and writes\n"
    "/batch/tokens, /batch/targets (int32 [B][n]), /loss, /params/NAME and /grads/NAME\n"
    "(W stored [in][out]) with the resolved config as the root attribute 'config'.\n"
    "  --config CONFIG INI file; a bare name is looked up in configs/\n"
    "  --out FILE.h5   the dump (required)\n"
    "  --set S.K=V     override one key (repeatable; a later one of a key wins, said on stderr)\n"
    "  --force         replace an existing output file\n"
    "  --perturb S     add N(0, S^2) to every bias, gamma and beta after initialisation, so a\n"
    "                  cross-check sees values other than 0 and 1\n"
    "  --hvp           also the Hessian of the objective on that batch (dropout off): a unit\n"
    "                  Gaussian direction /hvp/v/NAME, its product /hvp/Hv/NAME, and\n"
    "                  /hvp/hessian_max, /hvp/hessian_min by probe.curvature_iters Lanczos steps;\n"
    "                  with probe.trace_probes /hvp/trace, /hvp/trace_stderr (Hutchinson), with\n"
    "                  probe.density_probes /hvp/density_nodes, /hvp/density_weights (SLQ) and\n"
    "                  /hvp/density on /hvp/density_grid (broadened by probe.density_sigma),\n"
    "                  with probe.density_blocks = on /hvp/block_density_nodes, _weights\n"
    "                  [layer][kind][probe][m] (every diagonal block's)\n"
    "  --quiet         no summary line\n";

static const char *HELP_GRADCHECK =
    "usage: stability gradcheck --config CONFIG [--set section.key=value]... [--entries N]\n"
    "                           [--tol X] [--perturb S] [--quiet]\n"
    "\n"
    "Compares the analytic backward with 5-point central finite differences of the loss for\n"
    "every parameter tensor (all entries when a tensor has <= N, else N random ones;\n"
    "default N = 64) and prints the worst relative error per tensor. Exit 1 if any exceeds\n"
    "the tolerance (default 1e-6). Use a tiny model (configs/tiny.ini): each entry costs\n"
    "four forward passes.\n"
    "  --config CONFIG INI file; a bare name is looked up in configs/\n"
    "  --set S.K=V     override one key (repeatable; a later one of a key wins, said on stderr)\n"
    "  --entries N     entries checked per tensor (default 64)\n"
    "  --tol X         the largest relative error that passes (default 1e-6)\n"
    "  --perturb S     add N(0, S^2) to every bias, gamma and beta first\n"
    "  --quiet         only the verdict line, not the table\n";

int cli_usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "stability: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "Try 'stability --help'.\n");
    return 2;
}

/* Options a verb takes besides --config, --set, --out, --force, --quiet (parse_options), by
 * bit: bit k is FLAG_OPT[k]; OPT_POSITIONAL: the config may be given as the first word (train,
 * probe). */
enum { OPT_RESUME = 1, OPT_ENTRIES = 2, OPT_TOL = 4, OPT_PERTURB = 8, OPT_HVP = 16,
       OPT_OUT = 32 /* --out, --force: the verbs that write a file */, OPT_POSITIONAL = 64 };

int cli_check_out(const char *opt, const char *path)
{
    if (!path[0]) return cli_usage_error(opt, "empty file name");
    if (strlen(path) >= 1024) return cli_usage_error(opt, "path longer than 1023 characters");
    return 0;
}

/* The value of a numeric option: 0, or a usage error (2) naming it. */
static int option_value(const char *opt, const char *text, long *l, double *d)
{
    int bad;
    const char *want;
    if (!strcmp(opt, "--entries")) {
        bad = args_parse_long(text, 1, 1L << 40, l);
        want = "not a positive integer";
    } else if (!strcmp(opt, "--tol")) {
        bad = args_parse_double(text, 0, 1, HUGE_VAL, d);
        want = "not a finite number > 0";
    } else {
        bad = args_parse_double(text, 0, 0, HUGE_VAL, d);
        want = "not a finite number >= 0";
    }
    if (!bad) return 0;
    fprintf(stderr, "stability: %s: %s: '%s'\nTry 'stability --help'.\n", opt, want, text);
    return 2;
}

int cli_check_set(const char *const *sets, int nsets, const char *next)
{
    const char *a = sets[nsets];
    const char *eq = strchr(a, '=');
    char msg[2400];   // the values echoed with their control characters masked (util/text.h)
    if (!eq) {   // as config_set says it, with the likely intent: --set KEY VALUE
        int n = snprintf(msg, sizeof msg, "--set %.1000s: expected section.key=value", a);
        if (next && next[0] != '-' && !strchr(next, '='))
            snprintf(msg + n, sizeof msg - (size_t)n, " (did you mean --set %.500s=%.500s?)", a,
                     next);
        fprintf(stderr, "%s\n", text_mask_controls(msg));
        return 2;
    }
    for (int k = 0; k < nsets; k++) {
        const char *e = strchr(sets[k], '=');
        if (e && e - sets[k] == eq - a && !strncmp(sets[k], a, (size_t)(eq - a))) {   // override
            snprintf(msg, sizeof msg, "stability: --set %.*s given twice: the later, %.800s, "
                     "replaces %.800s", (int)(eq - a > 500 ? 500 : eq - a), a, a, sets[k]);
            fprintf(stderr, "%s\n", text_mask_controls(msg));
        }
    }
    return 0;
}

/* An option no verb has: "--steps 100" or "--lr=1e-3" named as the config key it likely means. */
static int unknown_option(const char *a)
{
    char name[64];
    const char *p = a;
    while (*p == '-') p++;
    snprintf(name, sizeof name, "%.*s", (int)strcspn(p, "="), p);
    const char *section = name[0] ? config_key_section(name) : NULL;
    if (!section) return cli_usage_error("unknown option", a);
    fprintf(stderr, "stability: unknown option: %s (%s.%s is a config key: --set %s.%s=VALUE)\n", a,
            section, name, section, name);
    fprintf(stderr, "Try 'stability --help'.\n");
    return 2;
}

/* Parse the options after the verb; allow: the OPT_ flags the verb takes (the others are
 * refused, not ignored). Returns 0, 2 on a usage error, or -1 after --help. */
static int parse_options(int argc, char **argv, int first, options_t *o, const char *help,
                         unsigned allow)
{
    static const char *const FLAG_OPT[6] = {"--resume", "--entries", "--tol", "--perturb", "--hvp",
                                            "--out"};
    memset(o, 0, sizeof *o);
    o->entries = 64;
    o->tol = 1e-6;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const int has_value = i + 1 < argc;
        for (int k = 0; k < 6; k++)
            if (FLAG_OPT[k] && !strcmp(a, FLAG_OPT[k]) && !(allow & (1u << k)))
                return cli_usage_error("not an option of this verb (see its --help)", a);
        if (!strcmp(a, "--force") && !(allow & OPT_OUT))
            return cli_usage_error("not an option of this verb (it writes no file)", a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--config") && has_value) {
            o->config = argv[++i];
            if (!o->config[0]) return cli_usage_error("--config", "empty file name");
        } else if (!strcmp(a, "--set") && has_value) {
            if (o->nsets == MAX_SETS) return cli_usage_error("too many --set options", NULL);
            o->sets[o->nsets] = argv[++i];
            if (cli_check_set(o->sets, o->nsets, i + 1 < argc ? argv[i + 1] : NULL)) return 2;
            o->nsets++;
        } else if (!strcmp(a, "--out") && has_value) {
            o->out = argv[++i];
            if (cli_check_out("--out", o->out)) return 2;
        } else if (!strcmp(a, "--entries") && has_value) {
            if (option_value(a, argv[++i], &o->entries, NULL)) return 2;
        } else if (!strcmp(a, "--tol") && has_value) {
            if (option_value(a, argv[++i], NULL, &o->tol)) return 2;
        } else if (!strcmp(a, "--perturb") && has_value) {
            if (option_value(a, argv[++i], NULL, &o->perturb)) return 2;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--force")) {
            o->force = 1;
        } else if (!strcmp(a, "--resume")) {
            o->resume = 1;
        } else if (!strcmp(a, "--hvp")) {
            o->hvp = 1;
        } else if (!strcmp(a, "--config") || !strcmp(a, "--set") || !strcmp(a, "--out") ||
                   !strcmp(a, "--entries") || !strcmp(a, "--tol") || !strcmp(a, "--perturb")) {
            return cli_usage_error("option needs a value", a);
        } else if ((allow & OPT_POSITIONAL) && a[0] != '-' && !o->config) {
            o->config = a;   // train CONFIG, probe CONFIG
        } else if (a[0] != '-') {
            return cli_usage_error(o->config ? "a second config, or a value without its option"
                                             : "unexpected word (options start with --)", a);
        } else {
            return unknown_option(a);
        }
    }
    if (!o->config && (allow & OPT_POSITIONAL)) {   // train CONFIG, probe CONFIG
        fprintf(stderr, "stability: %s: missing CONFIG (usage: stability %s CONFIG [--set "
                "section.key=value]...; e.g. stability %s tiny)\n", argv[first - 1],
                argv[first - 1], argv[first - 1]);
        fprintf(stderr, "Try 'stability %s --help'.\n", argv[first - 1]);
        return 2;
    }
    if (!o->config) return cli_usage_error("missing --config CONFIG", NULL);
    return 0;
}

/* Load and validate the config of o; prints the error and returns 2 on failure. */
static int load_config(const options_t *o, config_t *cfg)
{
    char err[CONFIG_ERR_MAX];
    if (config_load(cfg, o->config, o->sets, o->nsets, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    return 0;
}

/* The options a run module takes. */
static run_options_t run_options(const options_t *o)
{
    return (run_options_t){o->force, o->resume, o->quiet, o->perturb, o->entries, o->tol, o->hvp};
}

/* The output path of a run: --out, else [output] file, else results/<config name>.h5. */
static void output_path(const options_t *o, const config_t *cfg, char *buf, size_t len)
{
    if (o->out) snprintf(buf, len, "%s", o->out);
    else if (cfg->output.file[0]) snprintf(buf, len, "%s", cfg->output.file);
    else snprintf(buf, len, "results/%s.h5", cfg->name[0] ? cfg->name : "default");
}

/* What a config verb insists on: train.steps > 0 (train), = 0 (probe), either (--config). */
typedef enum { RUN_ANY, RUN_TRAIN, RUN_PROBE } run_mode_t;

static int cmd_run(const options_t *o, run_mode_t mode)
{
    config_t cfg;
    int rc = load_config(o, &cfg);
    if (rc) return rc;
    if (mode == RUN_TRAIN && cfg.train.steps == 0) {
        fprintf(stderr, "stability: train: %s has train.steps = 0 (it measures at initialisation): "
                "give --set train.steps=N, or use 'stability probe'\n", o->config);
        return 2;
    }
    if (mode == RUN_PROBE && cfg.train.steps > 0) {
        fprintf(stderr, "stability: probe: %s trains (train.steps = %d): use 'stability train', or "
                "--set train.steps=0 to probe its model at initialisation\n", o->config,
                cfg.train.steps);
        return 2;
    }
    char path[CONFIG_PATH_MAX + 32];
    output_path(o, &cfg, path, sizeof path);
    const run_options_t ro = run_options(o);
    if (cfg.train.steps == 0) return run_probe(&cfg, path, &ro);
    if (!o->quiet) report_config(stdout, &cfg);
    return run_train(&cfg, path, &ro);
}

static int cmd_dump(const options_t *o)
{
    config_t cfg;
    if (!o->out) return cli_usage_error("dump: missing --out FILE.h5", NULL);
    const int rc = load_config(o, &cfg);
    if (rc) return rc;
    const run_options_t ro = run_options(o);
    return run_dump(&cfg, o->out, &ro);
}

static int cmd_gradcheck(const options_t *o)
{
    config_t cfg;
    const int rc = load_config(o, &cfg);
    if (rc) return rc;
    const run_options_t ro = run_options(o);
    return run_gradcheck(&cfg, &ro);
}

static const char *HELP_ADVISE =
    "usage: stability advise --config CONFIG [--set section.key=value]... [--out ADVICE.h5]\n"
    "                        [--force] [--quiet]\n"
    "\n"
    "Says whether the config needs learning-rate warm-up at its train.lr, how long a linear\n"
    "warm-up would do, and the largest lr expected to train without one. It trains 6 updates\n"
    "without warm-up at 3 seeds (init.seed, +1, +2), measures the active preconditioned\n"
    "sharpness against Adam's threshold 2(1+beta1)/((1-beta1) lr) at updates 0, 2, 4, 6, and\n"
    "calls for warm-up when most seeds are above the threshold after update 1\n"
    "(docs/design.md 6g). A line per seed on stderr, the answer on stdout.\n"
    "  --config CONFIG INI file; a bare name is looked up in configs/\n"
    "  --set S.K=V     override one key (repeatable; a later one of a key wins, said on stderr)\n"
    "  --out FILE.h5   also the answer as HDF5: root attributes needs_warmup, warmup_updates,\n"
    "                  max_lr_without_warmup (NaN when a seed diverged: below lr), warmup\n"
    "                  (none, linear, longer than the run, unknown: diverged), diverged_seeds,\n"
    "                  indicator, config; /advise/peak_ratio etc. per seed\n"
    "  --force         replace an existing output file\n"
    "  --quiet         no per-seed lines\n"
    "Example: stability advise --config atlas --set train.lr=3e-3\n";

static int cmd_advise(const options_t *o)
{
    config_t cfg;
    const int rc = load_config(o, &cfg);
    if (rc) return rc;
    const run_options_t ro = run_options(o);
    return run_advise(&cfg, o->out, &ro);
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    // the same GEMM kernels, so the same bits, on every machine of a class (util/blascore.h)
    int rc = blascore_pin(argv);
    // a run's and a sweep's stdout interleaves with their log on stderr: whole lines as they are
    // written, in order, in a log file too (the table verbs keep stdio's buffer)
    if (argc >= 2 && (argv[1][0] == '-' || !strcmp(argv[1], "train") || !strcmp(argv[1], "probe") ||
                      !strcmp(argv[1], "sweep")))
        setvbuf(stdout, NULL, _IOLBF, 0);
    if (!rc) progress_channel_open();   // a run of a sweep: its progress and warnings to the sweep
    if (!rc) rc = dispatch(argc, argv);
    // what was printed must have been written: a full disk or /dev/full is an error (exit 1),
    // never a silent loss of the table the user asked for
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "stability: standard output: %s\n", errno ? strerror(errno) : "write error");
        if (!rc) rc = 1;
    }
    return rc;
}

/* A word that is no verb: the nearest verb when it is a slip ("trian"), else the list. */
static int unknown_verb(const char *verb)
{
    static const char *const VERBS[] = {"train", "probe", "sweep", "plot", "info", "dump",
                                        "gradcheck", "translate", "advise", "table", NULL};
    const char *best = NULL;
    int bestd = 3;
    for (int k = 0; VERBS[k]; k++) {
        const int dist = args_edit_distance(verb, VERBS[k]);
        if (dist < bestd) { bestd = dist; best = VERBS[k]; }
    }
    if (best) fprintf(stderr, "stability: unknown verb: %s (did you mean %s?)\n", verb, best);
    else fprintf(stderr, "stability: unknown verb: %s (the verbs: train, probe, sweep, plot, info, "
                 "dump, gradcheck, translate)\n", verb);
    fprintf(stderr, "Try 'stability --help'.\n");
    return 2;
}

/* The verbs (docs/design.md §3). Returns the exit code. */
static int dispatch(int argc, char **argv)
{
    h5io_init();                   // before any HDF5 call: no exit-time clean-up that can crash
    signal(SIGXFSZ, SIG_IGN);      // `ulimit -f`: a write fails (EFBIG) and is reported, never a silent death
    gsl_set_error_handler_off();   // GSL errors are return codes, handled where they occur
    threads_set(0);                // one count for OpenBLAS and OpenMP, from the environment
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(USAGE, stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "--version")) {
        printf("stability %s\n", STABILITY_VERSION);
        return 0;
    }
    // a thread count is a whole count or an error, never a fallback: "3junk" is not 3, and
    // 99999999999 is not 1215752191 processes (docs/performance.md)
    static const char *const COUNTS[3] = {"STABILITY_THREADS", "STABILITY_SWEEP_THREADS",
                                          "SLURM_CPUS_PER_TASK"};
    for (int k = 0; k < 3; k++) {
        long n;
        char err[160];
        if (args_env_count(COUNTS[k], THREADS_ENV_MAX, &n, err, sizeof err) < 0) {
            fprintf(stderr, "stability: %s\n", err);
            return 2;
        }
    }
    if (argc < 2) {
        fputs(USAGE, stderr);
        return 2;
    }
    options_t o;
    int rc;
    const char *verb = argv[1];
    if (verb[0] == '-') {
        if ((rc = parse_options(argc, argv, 1, &o, HELP_RUN, OPT_RESUME | OPT_OUT))) return rc < 0 ? 0 : rc;
        return cmd_run(&o, RUN_ANY);
    }
    if (!strcmp(verb, "train") || !strcmp(verb, "probe")) {
        const int train = verb[0] == 't';
        if ((rc = parse_options(argc, argv, 2, &o, train ? HELP_TRAIN : HELP_PROBE,
                                OPT_POSITIONAL | OPT_OUT | (train ? OPT_RESUME : 0))))
            return rc < 0 ? 0 : rc;
        return cmd_run(&o, train ? RUN_TRAIN : RUN_PROBE);
    }
    if (!strcmp(verb, "dump")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_DUMP, OPT_PERTURB | OPT_HVP | OPT_OUT)))
            return rc < 0 ? 0 : rc;
        return cmd_dump(&o);
    }
    if (!strcmp(verb, "advise")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_ADVISE, OPT_OUT))) return rc < 0 ? 0 : rc;
        return cmd_advise(&o);
    }
    if (!strcmp(verb, "info")) return cli_info(argc, argv);
    if (!strcmp(verb, "sweep")) return cli_sweep(argc, argv);
    if (!strcmp(verb, "plot")) return cli_plot(argc, argv);
    if (!strcmp(verb, "table")) return cli_table(argc, argv);
    if (!strcmp(verb, "translate")) return run_translate(argc - 1, argv + 1);
    if (!strcmp(verb, "gradcheck")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_GRADCHECK, OPT_ENTRIES | OPT_TOL | OPT_PERTURB)))
            return rc < 0 ? 0 : rc;
        return cmd_gradcheck(&o);
    }
    return unknown_verb(verb);
}
