/* main.c — the command line (docs/design.md §3): the verb table, and the options of the verbs
 * that read a config (a run, dump, gradcheck); info, plot and sweep parse their own (cli.h),
 * translate its own (run/run.h). Exit codes: 0 success, 1 runtime failure, 2 bad usage. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include "config/config.h"
#include "io/h5io.h"
#include "util/args.h"
#include "util/blascore.h"
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
    long entries;          /* gradcheck: entries per tensor */
    double perturb;        /* dump, gradcheck: N(0, perturb²) added to biases, γ, β */
    double tol;            /* gradcheck: tolerance */
} options_t;

static const char *USAGE =
    "usage: stability --config FILE [--set section.key=value]... [--out FILE.h5] [--force]\n"
    "                 [--resume] [--quiet]\n"
    "       stability sweep FILE [--jobs N] [--dry-run] [--task I] [--merge [--force]]\n"
    "       stability sweep FILE --slurm [--submit [--only-missing]]\n"
    "       stability plot FILE.h5... [--out DIR] [--format png,pdf,svg]\n"
    "       stability info FILE.h5... [--all]\n"
    "       stability dump --config FILE --out FILE.h5 [--set ...] [--force]\n"
    "       stability gradcheck --config FILE [--set ...] [--entries N] [--tol X]\n"
    "       stability translate RUN.h5 [--beam K] [--lenpen A] [--input FILE] [--ids]\n"
    "       stability --help | VERB --help | --version\n"
    "\n"
    "Measures why Post-LN transformers need learning-rate warm-up and Pre-LN ones do not\n"
    "(Xiong et al., ICML 2020). A config name without '/' is looked up in configs/.\n"
    "Exit codes: 0 success, 1 runtime failure (I/O, HDF5), 2 bad usage or config.\n"
    "Threads: STABILITY_THREADS, else SLURM_CPUS_PER_TASK, else OMP_NUM_THREADS /\n"
    "OPENBLAS_NUM_THREADS (the smaller), else all CPUs (docs/performance.md). A local sweep\n"
    "divides that count among its --jobs and gives each run its share in\n"
    "STABILITY_SWEEP_THREADS, which wins over all of these.\n";

static const char *HELP_RUN =
    "usage: stability --config FILE [--set section.key=value]... [--out FILE.h5] [--force]\n"
    "                 [--resume] [--quiet]\n"
    "\n"
    "With train.steps = 0 (measure at initialisation): for probe.seeds initialisations\n"
    "(init.seed, init.seed+1, ...) and probe.batches batches each, measures every layer's\n"
    "gradient norms ||E_batch dL/dW||_F and E_batch ||dL/dW||_F, hidden-state norms and the\n"
    "exact norm-layer Jacobian norms, writes them to one HDF5 file and prints a summary.\n"
    "With train.steps > 0: trains, logging /train (step lr loss grad_norm per update; per-layer\n"
    "norms every probe.every updates; val_loss for the text task) into the file, written in\n"
    "place (HDF5 SWMR; a killed run's file opens with h5py.File(path, 'r', swmr=True)). Status\n"
    "running -> done | diverged (non-finite loss or gradient: exit 0) | interrupted (SIGINT,\n"
    "SIGTERM, SIGUSR1: /checkpoint written; exit 0, SIGINT 130).\n"
    "  --config FILE   INI file (docs/design.md §4); a bare name is looked up in configs/\n"
    "  --set S.K=V     override one key, e.g. --set model.layers=12 (repeatable)\n"
    "  --out FILE.h5   output file (default: [output] file, else results/<config name>.h5)\n"
    "  --force         replace an existing output file ([output] overwrite = true)\n"
    "  --resume        continue the output file's run from its /checkpoint, bit-identically\n"
    "                  ([train] resume = auto); a new run if there is no file yet\n"
    "  --quiet         no progress bar, no summary\n";

static const char *HELP_DUMP =
    "usage: stability dump --config FILE --out FILE.h5 [--set section.key=value]... [--force]\n"
    "                      [--perturb S]\n"
    "\n"
    "Initialises the model, draws one batch, runs forward and backward and writes\n"
    "/batch/tokens, /batch/targets (int32 [B][n]), /loss, /params/NAME and /grads/NAME\n"
    "(W stored [in][out]) with the resolved config as the root attribute 'config'.\n"
    "  --force         replace an existing output file\n"
    "  --perturb S     add N(0, S^2) to every bias, gamma and beta after initialisation, so a\n"
    "                  cross-check sees values other than 0 and 1\n";

static const char *HELP_GRADCHECK =
    "usage: stability gradcheck --config FILE [--set ...] [--entries N] [--tol X] [--perturb S]\n"
    "\n"
    "Compares the analytic backward with 5-point central finite differences of the loss for\n"
    "every parameter tensor (all entries when a tensor has <= N, else N random ones;\n"
    "default N = 64) and prints the worst relative error per tensor. Exit 1 if any exceeds\n"
    "the tolerance (default 1e-6). Use a tiny model (configs/tiny.ini): each entry costs\n"
    "four forward passes.\n";

int cli_usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "stability: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "Try 'stability --help'.\n");
    return 2;
}

/* Options a verb takes besides --config, --set, --out, --force, --quiet (parse_options). */
enum { OPT_RESUME = 1, OPT_ENTRIES = 2, OPT_TOL = 4, OPT_PERTURB = 8 };

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

/* Parse the options after the verb; allow: the OPT_ flags the verb takes (the others are
 * refused, not ignored). Returns 0, 2 on a usage error, or -1 after --help. */
static int parse_options(int argc, char **argv, int first, options_t *o, const char *help,
                         unsigned allow)
{
    static const char *const FLAG_OPT[4] = {"--resume", "--entries", "--tol", "--perturb"};
    memset(o, 0, sizeof *o);
    o->entries = 64;
    o->tol = 1e-6;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const int has_value = i + 1 < argc;
        for (int k = 0; k < 4; k++)
            if (!strcmp(a, FLAG_OPT[k]) && !(allow & (1u << k)))
                return cli_usage_error("not an option of this verb (see its --help)", a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--config") && has_value) {
            o->config = argv[++i];
            if (!o->config[0]) return cli_usage_error("--config", "empty file name");
        } else if (!strcmp(a, "--set") && has_value) {
            if (o->nsets == MAX_SETS) return cli_usage_error("too many --set options", NULL);
            o->sets[o->nsets++] = argv[++i];
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
        } else if (!strcmp(a, "--config") || !strcmp(a, "--set") || !strcmp(a, "--out") ||
                   !strcmp(a, "--entries") || !strcmp(a, "--tol") || !strcmp(a, "--perturb")) {
            return cli_usage_error("option needs a value", a);
        } else {
            return cli_usage_error("unknown option", a);
        }
    }
    if (!o->config) return cli_usage_error("missing --config FILE", NULL);
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
    return (run_options_t){o->force, o->resume, o->quiet, o->perturb, o->entries, o->tol};
}

/* The output path of a run: --out, else [output] file, else results/<config name>.h5. */
static void output_path(const options_t *o, const config_t *cfg, char *buf, size_t len)
{
    if (o->out) snprintf(buf, len, "%s", o->out);
    else if (cfg->output.file[0]) snprintf(buf, len, "%s", cfg->output.file);
    else snprintf(buf, len, "results/%s.h5", cfg->name[0] ? cfg->name : "default");
}

static int cmd_run(const options_t *o)
{
    config_t cfg;
    int rc = load_config(o, &cfg);
    if (rc) return rc;
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

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    // the same GEMM kernels, so the same bits, on every machine of a class (util/blascore.h)
    int rc = blascore_pin(argv);
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
        if (args_env_count(COUNTS[k], 4096, &n, err, sizeof err) < 0) {
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
        if ((rc = parse_options(argc, argv, 1, &o, HELP_RUN, OPT_RESUME))) return rc < 0 ? 0 : rc;
        return cmd_run(&o);
    }
    if (!strcmp(verb, "dump")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_DUMP, OPT_PERTURB))) return rc < 0 ? 0 : rc;
        return cmd_dump(&o);
    }
    if (!strcmp(verb, "info")) return cli_info(argc, argv);
    if (!strcmp(verb, "sweep")) return cli_sweep(argc, argv);
    if (!strcmp(verb, "plot")) return cli_plot(argc, argv);
    if (!strcmp(verb, "translate")) return run_translate(argc - 1, argv + 1);
    if (!strcmp(verb, "gradcheck")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_GRADCHECK, OPT_ENTRIES | OPT_TOL | OPT_PERTURB)))
            return rc < 0 ? 0 : rc;
        return cmd_gradcheck(&o);
    }
    return cli_usage_error("unknown verb", verb);
}
