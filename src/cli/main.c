/* main.c — the command line (docs/design.md §3). Parses arguments, loads the config, calls the
 * modules and prints their results. Exit codes: 0 success, 1 runtime failure, 2 bad usage. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>
#include "config/config.h"
#include "io/h5io.h"
#include "util/args.h"
#include "report/plot.h"
#include "report/plot_band.h"
#include "report/report.h"
#include "run/run.h"
#include "sweep/sweep.h"
#include "util/threads.h"

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

static const char *HELP_SWEEP =
    "usage: stability sweep FILE [--jobs N] [--dry-run] [--quiet]\n"
    "       stability sweep FILE --slurm [--submit [--only-missing]] [--set slurm.KEY=VALUE]...\n"
    "       stability sweep FILE --task I\n"
    "       stability sweep FILE --merge [--force]\n"
    "\n"
    "Runs every point of a sweep file (experiments/*.ini: a base config, lists of values to\n"
    "cross or zip, a run-name pattern) as its own process, N at a time (default: one per\n"
    "core; the threads, STABILITY_THREADS else SLURM_CPUS_PER_TASK else the CPUs, divided\n"
    "between them and set as STABILITY_SWEEP_THREADS, which wins in the runs), skipping runs\n"
    "whose file is complete (status done or diverged, written with the configuration the\n"
    "sweep now asks for; a stale one is redone), so an interrupted sweep resumes. Runs write\n"
    "results/<sweep>/<run>.h5 and <run>.log; then all complete runs are merged into\n"
    "results/<sweep>.h5 (/runs/NAME/... and the /sweep table of swept values).\n"
    "  --jobs N     runs at a time\n"
    "  --dry-run    list the runs and their overrides, run nothing\n"
    "  --task I     run only run I (0-based; what a Slurm array task does)\n"
    "  --merge      only merge what is complete; list what is missing (exit 3 if any). A\n"
    "               merged file holding more complete runs than the run files now give is\n"
    "               kept (run files lost or stale)\n"
    "  --force      replace it anyway\n"
    "  --slurm      write results/<sweep>/job.sbatch: one job array, task i = --task i,\n"
    "               resources from the [slurm] section (partition, time, cpus_per_task, mem,\n"
    "               array_parallelism, account, extra) or --set slurm.KEY=VALUE\n"
    "  --submit     also submit it (sbatch --parsable) and print the job id\n"
    "  --only-missing  submit only the runs that are not complete\n"
    "SIGINT, SIGTERM, SIGHUP: passed on to the runs (training runs checkpoint), then exit\n"
    "128 + the signal; run the sweep again to resume. A second sweep of the same file at the\n"
    "same time refuses (results/<sweep>/.lock).\n"
    "Exit: 0 all runs done, 1 some run failed (its log is shown), 2 bad sweep file.\n";

static const char *HELP_PLOT =
    "usage: stability plot FILE.h5... [--out DIR] [--format png,pdf,svg] [--quiet]\n"
    "\n"
    "Draws, with gnuplot, every figure the files support (run files or merged sweep files):\n"
    "gradient vs layer (Fig. 3a,b), gradient vs depth with fitted exponents and theory\n"
    "(Fig. 3c,d), gradient vs width with Theorem 1's curves, Jacobian norms (Lemma 3),\n"
    "hidden-state norms (Lemma 2), training and validation loss (Fig. 2); the gradient at\n"
    "every sub-layer's output (Liu et al.), per stack for an encoder-decoder; the output\n"
    "change vs depth and DeepNet's model update; the atlas's final loss vs lr, LR\n"
    "sensitivity and every scheme's gradient per layer.\n"
    "Files: DIR/<first file's name>-<figure>.<format>.\n"
    "  --out DIR       output directory (default plots/)\n"
    "  --format LIST   comma-separated: png, pdf, svg (default png,pdf)\n";

static const char *HELP_INFO =
    "usage: stability info FILE.h5... [--all] | info [FILE.h5...] --schemes | info FILE.h5... --train\n"
    "\n"
    "For a run file, or every run of a merged sweep file (/runs/NAME):\n"
    "Prints, per layer, mean ± 95% CI over seeds of ||E_batch dL/dW||_F for W^1 and W^2\n"
    "(--all: every tensor), hidden-state norms / d beside Lemma 2's value or bounds, and the\n"
    "norm Jacobian ||J||_2 beside sqrt(d)/||x-mu|| (Lemma 3).\n"
    "--schemes: the table of normalisation schemes (tab-separated), or with files each run's\n"
    "scheme, atlas rank, family and label (scripts/atlas_table.py reads it).\n"
    "--train: a Markdown table of the training runs, one row per configuration with its seeds\n"
    "(runs that differ only in init.seed): last and best validation loss (training loss without\n"
    "validation), mean ± 95% CI over the seeds, and the update at which each reaches the loss\n"
    "every run reaches, mean ± 95% CI.\n";

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

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "stability: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "Try 'stability --help'.\n");
    return 2;
}

/* Options a verb takes besides --config, --set, --out, --force, --quiet (parse_options). */
enum { OPT_RESUME = 1, OPT_ENTRIES = 2, OPT_TOL = 4, OPT_PERTURB = 8 };

/* 0 when path can be an output file name (not empty, shorter than 1024: nothing truncated
 * it, docs/design.md §3); else a usage error (2). */
static int check_out(const char *opt, const char *path)
{
    if (!path[0]) return usage_error(opt, "empty file name");
    if (strlen(path) >= 1024) return usage_error(opt, "path longer than 1023 characters");
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
                return usage_error("not an option of this verb (see its --help)", a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--config") && has_value) {
            o->config = argv[++i];
            if (!o->config[0]) return usage_error("--config", "empty file name");
        } else if (!strcmp(a, "--set") && has_value) {
            if (o->nsets == MAX_SETS) return usage_error("too many --set options", NULL);
            o->sets[o->nsets++] = argv[++i];
        } else if (!strcmp(a, "--out") && has_value) {
            o->out = argv[++i];
            if (check_out("--out", o->out)) return 2;
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
            return usage_error("option needs a value", a);
        } else {
            return usage_error("unknown option", a);
        }
    }
    if (!o->config) return usage_error("missing --config FILE", NULL);
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

/* Print one run (prefix "" for a run file, "/runs/NAME" in a merged sweep file). A malformed
 * object is an error "FILE: /object: what is wrong" (exit 1, h5io_error). */
static int info_run(h5io_file_t *f, const char *file, const char *prefix, int all, int schemes)
{
    char err[1024], label[1400], path[1400];
    const char *obj = prefix[0] ? prefix : "/";
    snprintf(label, sizeof label, "%s%s", file, prefix);
    char *ini = h5io_read_attr_string(f, obj, "config");
    char *status = h5io_read_attr_string(f, obj, "status");
    config_t cfg;
    probe_t *p = NULL;
    int rc = 0;
    if (h5io_error(f)) {
        fprintf(stderr, "stability: %s\n", h5io_error(f));
        rc = 1;
    } else if (!ini || config_parse_string(&cfg, ini, label, err, sizeof err)) {
        fprintf(stderr, "stability: %s: no valid 'config' attribute%s%s\n", label,
                ini ? ": " : "", ini ? err : "");
        rc = 1;
    } else if (schemes) {
        report_scheme_of(stdout, prefix[0] ? prefix + strlen("/runs/") : file, &cfg);
    } else {
        printf("%s: status %s\n", label, status ? status : "?");
        report_config(stdout, &cfg);
        snprintf(path, sizeof path, "%s/probe", prefix);
        if (h5io_read_probe(f, prefix, &p, err, sizeof err) == 0) {
            report_probe(stdout, &cfg, p, all);
        } else if (h5io_error(f) || h5io_exists(f, path)) {
            fprintf(stderr, "stability: %s\n", err);
            rc = 1;
        } else {
            printf("(%s)\n", err);
        }
        report_diagnosis(stdout, f, prefix, &cfg);   // training runs: what went wrong, since when
        printf("\n");
    }
    probe_free(p);
    free(ini);
    free(status);
    return rc;
}

/* info --train: the seed groups' tables (report/plot_band.h): the (validation) loss, BLEU. */
static int info_train(int argc, char **argv)
{
    const char *files[256];
    int nfiles = 0;
    for (int i = 2; i < argc; i++)
        if (argv[i][0] != '-') {
            if (nfiles == 256) return usage_error("info: more than 256 files", argv[i]);
            files[nfiles++] = argv[i];
        }
    plot_set_t set;
    char err[1024];
    if (plot_load(&set, files, nfiles, err, sizeof err)) {
        fprintf(stderr, "stability: %s\n", err);
        return 1;
    }
    int rows = plot_band_table(stdout, &set, &PLOT_CURVE_VAL_LOSS);
    if (!rows) rows = plot_band_table(stdout, &set, &PLOT_CURVE_LOSS);
    int bleu = 0;   // translation: the epoch each configuration reaches the BLEU all runs reach
    for (int i = 0; i < set.n; i++) bleu |= plot_member_bleu(&set.runs[i]);
    if (bleu) {
        if (rows) printf("\n");
        rows += plot_band_table(stdout, &set, &PLOT_CURVE_BLEU);
    }
    plot_set_free(&set);
    if (!rows) fprintf(stderr, "stability: no training runs in these files\n");
    return rows ? 0 : 1;
}

static int cmd_info(int argc, char **argv)
{
    int all = 0, rc = 0, nfiles = 0, schemes = 0, train = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(HELP_INFO, stdout); return 0; }
        if (!strcmp(argv[i], "--all")) all = 1;
        else if (!strcmp(argv[i], "--schemes")) schemes = 1;
        else if (!strcmp(argv[i], "--train")) train = 1;
        else if (argv[i][0] == '-') return usage_error("unknown option", argv[i]);
        else nfiles++;
    }
    if (!nfiles && schemes) { report_scheme_table(stdout); return 0; }
    if (!nfiles) return usage_error("info: missing FILE.h5", NULL);
    if (train) return info_train(argc, argv);
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        char err[1024];
        h5io_file_t *f;
        if (h5io_open_read(&f, argv[i], err, sizeof err)) {
            fprintf(stderr, "stability: %s\n", err);
            rc = 1;
            continue;
        }
        int n = 0;
        char **runs = h5io_list_group(f, "/runs", &n);
        if (h5io_error(f)) {
            fprintf(stderr, "stability: %s\n", h5io_error(f));
            rc = 1;
        } else if (!runs) {
            rc |= info_run(f, argv[i], "", all, schemes);
        } else if (n == 0) {
            printf("%s: a merged sweep file without runs\n", argv[i]);
        }
        for (int k = 0; k < n && !h5io_error(f); k++) {
            char prefix[300];
            snprintf(prefix, sizeof prefix, "/runs/%s", runs[k]);
            rc |= info_run(f, argv[i], prefix, all, schemes);
        }
        h5io_free_names(runs, n);
        h5io_close(f);
    }
    return rc;
}

static int cmd_dump(const options_t *o)
{
    config_t cfg;
    if (!o->out) return usage_error("dump: missing --out FILE.h5", NULL);
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

static int cmd_plot(int argc, char **argv)
{
    const char *dir = "plots", *formats = "png,pdf";
    const char *files[256];
    int nfiles = 0, quiet = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(HELP_PLOT, stdout); return 0; }
        else if (!strcmp(a, "--out") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(a, "--format") && i + 1 < argc) formats = argv[++i];
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = 1;
        else if (a[0] == '-') return usage_error("unknown option", a);
        else if (nfiles == 256) return usage_error("plot: more than 256 files", a);
        else files[nfiles++] = a;
    }
    if (!nfiles) return usage_error("plot: missing FILE.h5", NULL);
    char ferr[160];
    if (check_out("--out", dir)) return 2;
    if (plot_check_formats(formats, ferr, sizeof ferr)) return usage_error(ferr, NULL);
    plot_set_t set;
    char err[1024], prefix[256];
    if (plot_load(&set, files, nfiles, err, sizeof err)) {
        fprintf(stderr, "stability: %s\n", err);
        return 1;
    }
    const char *b = strrchr(files[0], '/');
    snprintf(prefix, sizeof prefix, "%s", b ? b + 1 : files[0]);
    char *dot = strrchr(prefix, '.');
    if (dot) *dot = '\0';
    const int n = plot_draw_all(&set, dir, prefix, formats, quiet, err, sizeof err);
    plot_set_free(&set);
    if (n < 0) {
        fprintf(stderr, "stability: %s\n", err);
        return n == -2 ? 2 : 1;
    }
    if (n == 0) {
        fprintf(stderr, "stability: nothing to plot in these files\n");
        return 1;
    }
    return 0;
}

/* Path of this executable (children of a sweep run the same binary): 0, or −1 when it does
 * not fit buf (never a truncated path). */
static int self_path(const char *argv0, char *buf, size_t len)
{
    const ssize_t n = readlink("/proc/self/exe", buf, len);
    if (n > 0 && (size_t)n < len) {
        buf[n] = '\0';
        return 0;
    }
    return n > 0 || (size_t)snprintf(buf, len, "%s", argv0) >= len ? -1 : 0;
}

static int cmd_sweep(int argc, char **argv)
{
    const char *file = NULL;
    int jobs = 0, dry = 0, merge_only = 0, quiet = 0, slurm = 0, submit = 0, only_missing = 0;
    int force = 0;
    long task = -1;
    const char *sets[64];
    int nsets = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(HELP_SWEEP, stdout); return 0; }
        else if (!strcmp(a, "--jobs") && i + 1 < argc) {
            long v;
            if (args_parse_long(argv[++i], 1, SWEEP_MAX_RUNS, &v))
                return usage_error("--jobs: not an integer in 1..4096", argv[i]);
            jobs = (int)v;
        } else if (!strcmp(a, "--task") && i + 1 < argc) {
            if (args_parse_long(argv[++i], 0, SWEEP_MAX_RUNS - 1, &task))
                return usage_error("--task: not a run index (0, 1, ...)", argv[i]);
        } else if (!strcmp(a, "--set") && i + 1 < argc) {
            if (nsets == 64) return usage_error("too many --set options", NULL);
            sets[nsets++] = argv[++i];
        } else if (!strcmp(a, "--dry-run")) dry = 1;
        else if (!strcmp(a, "--slurm")) slurm = 1;
        else if (!strcmp(a, "--submit")) submit = 1;
        else if (!strcmp(a, "--only-missing")) only_missing = 1;
        else if (!strcmp(a, "--merge")) merge_only = 1;
        else if (!strcmp(a, "--force")) force = 1;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = 1;
        else if (a[0] == '-') return usage_error("unknown option", a);
        else if (!file) file = a;
        else return usage_error("sweep: more than one FILE", a);
    }
    if (!file) return usage_error("sweep: missing FILE", NULL);
    sweep_t s;
    char err[2048], exe[4096];
    if (sweep_load(&s, file, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        sweep_free(&s);
        return 2;
    }
    if (self_path(argv[0], exe, sizeof exe)) {
        sweep_free(&s);
        return usage_error("sweep: the path of this program is too long", NULL);
    }
    for (int k = 0; k < nsets; k++) {
        if (sweep_set_slurm(&s, sets[k], err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            sweep_free(&s);
            return 2;
        }
    }
    if ((submit || only_missing) && !slurm) {
        sweep_free(&s);
        return usage_error("--submit and --only-missing go with --slurm", NULL);
    }
    int rc = 0;
    if (slurm) {
        char script[1200];
        rc = sweep_slurm_write(&s, exe, script, sizeof script, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        else if (!submit && !quiet) printf("wrote %s (submit with: sbatch %s, or add --submit)\n", script, script);
        if (!rc && submit) rc = sweep_slurm_submit(&s, script, only_missing, quiet);
    } else if (dry) {
        printf("sweep %s: base %s, %d runs -> %s/\n", s.name, s.base, s.nruns, s.results_dir);
        for (int i = 0; i < s.nruns; i++) {
            sweep_sets_t sets;
            sweep_run_sets(&s, i, &sets);
            const sweep_state_t st = sweep_run_state(&s, i, NULL, 0);
            printf("%4d %-32s %s", i, s.runs[i].name, st == SWEEP_COMPLETE ? "[complete]"
                                                      : st == SWEEP_STALE ? "[stale]" : "");
            for (int k = 0; k < sets.n; k++) printf(" %s", sets.ptr[k]);
            printf("\n");
        }
    } else if (task >= s.nruns) {
        fprintf(stderr, "stability: --task %ld: the sweep has %d runs (0..%d)\n", task, s.nruns,
                s.nruns - 1);
        rc = 2;
    } else {
        rc = sweep_execute(&s, exe, task, jobs, merge_only, force, quiet);
    }
    sweep_free(&s);
    return rc;
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    int rc = dispatch(argc, argv);
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
    if (!strcmp(verb, "info")) return cmd_info(argc, argv);
    if (!strcmp(verb, "sweep")) return cmd_sweep(argc, argv);
    if (!strcmp(verb, "plot")) return cmd_plot(argc, argv);
    if (!strcmp(verb, "translate")) return run_translate(argc - 1, argv + 1);
    if (!strcmp(verb, "gradcheck")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_GRADCHECK, OPT_ENTRIES | OPT_TOL | OPT_PERTURB)))
            return rc < 0 ? 0 : rc;
        return cmd_gradcheck(&o);
    }
    return usage_error("unknown verb", verb);
}
