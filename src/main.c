/* main.c — the command line (DESIGN §3). Parses arguments, loads the config, calls the
 * modules and prints their results. Exit codes: 0 success, 1 runtime failure, 2 bad usage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_rng.h>
#include "config.h"
#include "data.h"
#include "gradcheck.h"
#include "h5io.h"
#include "model.h"
#include "probe.h"
#include "progress.h"
#include "report.h"
#include "threads.h"

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
    int quiet, force;
    long entries;          /* gradcheck: entries per tensor */
    double tol;            /* gradcheck: tolerance */
} options_t;

static const char *USAGE =
    "usage: stability --config FILE [--set section.key=value]... [--out FILE.h5] [--quiet]\n"
    "       stability info FILE.h5... [--all]\n"
    "       stability dump --config FILE --out FILE.h5 [--set ...] [--force]\n"
    "       stability gradcheck --config FILE [--set ...] [--entries N] [--tol X]\n"
    "       stability --help | VERB --help | --version\n"
    "\n"
    "Measures why Post-LN transformers need learning-rate warm-up and Pre-LN ones do not\n"
    "(Xiong et al., ICML 2020). A config name without '/' is looked up in configs/.\n"
    "Exit codes: 0 success, 1 runtime failure (I/O, HDF5), 2 bad usage or config.\n"
    "Threads: STABILITY_THREADS, else SLURM_CPUS_PER_TASK, else OMP_NUM_THREADS /\n"
    "OPENBLAS_NUM_THREADS (the smaller), else all CPUs (docs/performance.md).\n";

static const char *HELP_RUN =
    "usage: stability --config FILE [--set section.key=value]... [--out FILE.h5] [--force]\n"
    "                 [--quiet]\n"
    "\n"
    "With train.steps = 0 (measure at initialisation): for probe.seeds initialisations\n"
    "(init.seed, init.seed+1, ...) and probe.batches batches each, measures every layer's\n"
    "gradient norms ||E_batch dL/dW||_F and E_batch ||dL/dW||_F, hidden-state norms and the\n"
    "exact norm-layer Jacobian norms, writes them to one HDF5 file and prints a summary.\n"
    "  --config FILE   INI file (DESIGN.md section 4); a bare name is looked up in configs/\n"
    "  --set S.K=V     override one key, e.g. --set model.layers=12 (repeatable)\n"
    "  --out FILE.h5   output file (default: [output] file, else results/<config name>.h5)\n"
    "  --force         replace an existing output file ([output] overwrite = true)\n"
    "  --quiet         no progress bar, no summary\n";

static const char *HELP_INFO =
    "usage: stability info FILE.h5... [--all]\n"
    "\n"
    "Prints, per layer, mean ± 95% CI over seeds of ||E_batch dL/dW||_F for W^1 and W^2\n"
    "(--all: every tensor), hidden-state norms / d beside Lemma 2's value or bounds, and the\n"
    "norm Jacobian ||J||_2 beside sqrt(d)/||x-mu|| (Lemma 3).\n";

static const char *HELP_DUMP =
    "usage: stability dump --config FILE --out FILE.h5 [--set section.key=value]... [--force]\n"
    "\n"
    "Initialises the model, draws one batch, runs forward and backward and writes\n"
    "/batch/tokens, /batch/targets (int32 [B][n]), /loss, /params/NAME and /grads/NAME\n"
    "(W stored [in][out]) with the resolved config as the root attribute 'config'.\n"
    "  --force         replace an existing output file\n";

static const char *HELP_GRADCHECK =
    "usage: stability gradcheck --config FILE [--set ...] [--entries N] [--tol X]\n"
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

/* Parse the options after the verb. Returns 0, 2 on a usage error, or -1 after --help. */
static int parse_options(int argc, char **argv, int first, options_t *o, const char *help)
{
    memset(o, 0, sizeof *o);
    o->entries = 64;
    o->tol = 1e-6;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const int has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--config") && has_value) {
            o->config = argv[++i];
        } else if (!strcmp(a, "--set") && has_value) {
            if (o->nsets == MAX_SETS) return usage_error("too many --set options", NULL);
            o->sets[o->nsets++] = argv[++i];
        } else if (!strcmp(a, "--out") && has_value) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--entries") && has_value) {
            char *end;
            o->entries = strtol(argv[++i], &end, 10);
            if (*end || o->entries < 1) return usage_error("--entries: not a positive integer", argv[i]);
        } else if (!strcmp(a, "--tol") && has_value) {
            char *end;
            o->tol = strtod(argv[++i], &end);
            if (*end || !(o->tol > 0)) return usage_error("--tol: not a positive number", argv[i]);
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--force")) {
            o->force = 1;
        } else if (!strcmp(a, "--config") || !strcmp(a, "--set") || !strcmp(a, "--out") ||
                   !strcmp(a, "--entries") || !strcmp(a, "--tol")) {
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

/* Everything a single forward/backward needs: model, data, rngs, one batch. */
typedef struct {
    model_t *model;
    data_t data;
    gsl_rng *rng_init, *rng_data;
    int32_t *tokens, *targets;   // (B,T)
} run_t;

static void run_free(run_t *r)
{
    model_free(r->model);
    data_close(&r->data);
    if (r->rng_init) gsl_rng_free(r->rng_init);
    if (r->rng_data) gsl_rng_free(r->rng_data);
    free(r->tokens);
    free(r->targets);
}

/* Build and initialise the model of cfg and draw one batch (and dropout masks).
 * Returns 0, 1 (out of memory) or 2 (config the data task rejects). */
static int run_setup(run_t *r, const config_t *cfg)
{
    char err[512];
    memset(r, 0, sizeof *r);
    const int rc = data_open(&r->data, cfg, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", cfg->path[0] ? cfg->path : "config", err);
        return rc;
    }
    r->model = model_create(cfg);
    r->rng_init = gsl_rng_alloc(gsl_rng_mt19937);
    r->rng_data = gsl_rng_alloc(gsl_rng_mt19937);
    const size_t BT = (size_t)cfg->data.batch * cfg->model.seq_len;
    r->tokens = malloc(BT * sizeof(int32_t));
    r->targets = malloc(BT * sizeof(int32_t));
    if (!r->model || !r->rng_init || !r->rng_data || !r->tokens || !r->targets) {
        fprintf(stderr, "stability: out of memory\n");
        run_free(r);
        return 1;
    }
    gsl_rng_set(r->rng_init, cfg->init.seed);
    gsl_rng_set(r->rng_data, cfg->init.seed + DATA_SEED_OFFSET);
    model_init(r->model, cfg, r->rng_init);
    data_batch(&r->data, r->rng_data, r->tokens, r->targets);
    model_draw_dropout(r->model, r->rng_data);
    return 0;
}

static void print_summary(const config_t *cfg)
{
    printf("%s: %s-LN, %s, %s, L=%d d=%d heads=%d d_ff=%d n=%d B=%d V=%d, task %s, seed %lu\n",
           cfg->name, cfg->model.placement == PLACEMENT_PRE ? "Pre" : "Post",
           config_norm_name(cfg->model.norm), config_activation_name(cfg->model.activation),
           cfg->model.layers, cfg->model.d_model, cfg->model.heads, cfg->model.d_ff,
           cfg->model.seq_len, cfg->data.batch, cfg->model.vocab, config_task_name(cfg->data.task),
           cfg->init.seed);
}

/* The output path of a run: --out, else [output] file, else results/<config name>.h5. */
static void output_path(const options_t *o, const config_t *cfg, char *buf, size_t len)
{
    if (o->out) snprintf(buf, len, "%s", o->out);
    else if (cfg->output.file[0]) snprintf(buf, len, "%s", cfg->output.file);
    else snprintf(buf, len, "results/%s.h5", cfg->name[0] ? cfg->name : "default");
}

/* Resolved INI text of cfg (malloc'd). */
static char *config_text(const config_t *cfg)
{
    const size_t len = config_to_ini(cfg, NULL, 0) + 1;
    char *ini = malloc(len);
    if (ini) config_to_ini(cfg, ini, len);
    return ini;
}

/* train.steps = 0: the probe at initialisation (issue 3), written to one HDF5 file. */
static int cmd_probe(const options_t *o, const config_t *cfg)
{
    char path[CONFIG_PATH_MAX + 32], err[1024];
    output_path(o, cfg, path, sizeof path);
    const int overwrite = o->force || cfg->output.overwrite;
    // refuse early (before minutes of work) when the file exists or the place is not writable
    h5io_file_t *f;
    int rc = h5io_create(&f, path, overwrite, err, sizeof err);
    if (rc) { fprintf(stderr, "stability: %s\n", err); return rc; }
    probe_t *p = probe_alloc(cfg->probe.seeds, cfg->model.layers);
    char *ini = config_text(cfg);
    if (!p || !ini) { h5io_abort(f); probe_free(p); free(ini); return 1; }
    if (!o->quiet) print_summary(cfg);
    progress_t bar;
    char label[80];
    snprintf(label, sizeof label, "probe %.40s", cfg->name);
    progress_start(&bar, label, o->quiet);
    const double t0 = progress_now();
    rc = probe_run(cfg, p, progress_callback, &bar, err, sizeof err);
    progress_end(&bar);
    if (rc) {
        fprintf(stderr, "%s: %s\n", cfg->path[0] ? cfg->path : "config", err);
        h5io_abort(f);
    } else {
        if (h5io_write_probe(f, p, cfg->model.placement) ||
            h5io_write_root_attrs(f, ini, cfg->init.seed, "done")) {
            fprintf(stderr, "stability: %s: cannot write the probe\n", path);
            h5io_abort(f);
            rc = 1;
        } else if ((rc = h5io_commit(f, err, sizeof err))) {
            fprintf(stderr, "stability: %s\n", err);
        } else if (!o->quiet) {
            printf("%d seeds x %d batches in %.1f s\n", cfg->probe.seeds, cfg->probe.batches,
                   progress_now() - t0);
            report_probe(stdout, cfg, p, 0);
            printf("\nwrote %s\n", path);
        }
    }
    probe_free(p);
    free(ini);
    return rc;
}

static int cmd_run(const options_t *o)
{
    config_t cfg;
    int rc = load_config(o, &cfg);
    if (rc) return rc;
    if (cfg.train.steps == 0) return cmd_probe(o, &cfg);
    fprintf(stderr, "%s: train.steps: training is not implemented yet (use 0)\n",
            cfg.path[0] ? cfg.path : "config");
    return 2;
}

static int cmd_info(int argc, char **argv)
{
    int all = 0, rc = 0, nfiles = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(HELP_INFO, stdout); return 0; }
        if (!strcmp(argv[i], "--all")) all = 1;
        else if (argv[i][0] == '-') return usage_error("unknown option", argv[i]);
        else nfiles++;
    }
    if (!nfiles) return usage_error("info: missing FILE.h5", NULL);
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        char err[1024];
        h5io_file_t *f;
        if (h5io_open_read(&f, argv[i], err, sizeof err)) {
            fprintf(stderr, "stability: %s\n", err);
            rc = 1;
            continue;
        }
        char *ini = h5io_read_attr_string(f, "/", "config");
        char *status = h5io_read_attr_string(f, "/", "status");
        config_t cfg;
        probe_t *p = NULL;
        if (!ini || config_parse_string(&cfg, ini, argv[i], err, sizeof err)) {
            fprintf(stderr, "stability: %s: no valid 'config' attribute%s%s\n", argv[i],
                    ini ? ": " : "", ini ? err : "");
            rc = 1;
        } else {
            printf("%s: status %s\n", argv[i], status ? status : "?");
            print_summary(&cfg);
            if (h5io_read_probe(f, &p, err, sizeof err) == 0) report_probe(stdout, &cfg, p, all);
            else printf("(%s)\n", err);
        }
        probe_free(p);
        free(ini);
        free(status);
        h5io_close(f);
    }
    return rc;
}

static int cmd_dump(const options_t *o)
{
    config_t cfg;
    run_t r;
    if (!o->out) return usage_error("dump: missing --out FILE.h5", NULL);
    int rc = load_config(o, &cfg);
    if (rc) return rc;
    if ((rc = run_setup(&r, &cfg))) return rc;
    model_forward(r.model, r.tokens, r.targets);
    model_zero_grad(r.model);
    model_backward(r.model);
    char *ini = config_text(&cfg), err[1024];
    if (!ini) { run_free(&r); fprintf(stderr, "stability: out of memory\n"); return 1; }
    rc = h5io_write_dump(o->out, r.model, ini, cfg.init.seed, o->force || cfg.output.overwrite,
                         err, sizeof err);
    if (rc) fprintf(stderr, "stability: %s\n", err);
    else if (!o->quiet) printf("wrote %s (loss %.10g, %zu parameters)\n", o->out, r.model->loss,
                               r.model->num_params);
    free(ini);
    run_free(&r);
    return rc;
}

static int cmd_gradcheck(const options_t *o)
{
    config_t cfg;
    run_t r;
    int rc = load_config(o, &cfg);
    if (rc) return rc;
    if ((rc = run_setup(&r, &cfg))) return rc;
    model_t *m = r.model;
    gradcheck_result_t *res = calloc((size_t)m->num_tensors, sizeof *res);
    if (!res) { run_free(&r); return 1; }
    const double worst = gradcheck_run(m, r.tokens, r.targets, (size_t)o->entries, 1e-5,
                                       r.rng_data, res);
    if (!o->quiet) {
        print_summary(&cfg);
        printf("%-22s %8s %12s %12s %12s\n", "tensor", "checked", "max|fd-an|", "scale",
               "rel.error");
        for (int k = 0; k < m->num_tensors; k++)
            printf("%-22s %8zu %12.3e %12.3e %12.3e%s\n", res[k].tensor->name, res[k].checked,
                   res[k].max_abs_err, res[k].scale, res[k].rel_err,
                   res[k].rel_err <= o->tol ? "" : "  FAIL");
    }
    const int ok = worst <= o->tol;
    printf("worst relative error %.3e (tolerance %.1e): %s\n", worst, o->tol, ok ? "ok" : "FAIL");
    free(res);
    run_free(&r);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
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
    if (argc < 2) {
        fputs(USAGE, stderr);
        return 2;
    }
    options_t o;
    int rc;
    const char *verb = argv[1];
    if (verb[0] == '-') {
        if ((rc = parse_options(argc, argv, 1, &o, HELP_RUN))) return rc < 0 ? 0 : rc;
        return cmd_run(&o);
    }
    if (!strcmp(verb, "dump")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_DUMP))) return rc < 0 ? 0 : rc;
        return cmd_dump(&o);
    }
    if (!strcmp(verb, "info")) return cmd_info(argc, argv);
    if (!strcmp(verb, "gradcheck")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_GRADCHECK))) return rc < 0 ? 0 : rc;
        return cmd_gradcheck(&o);
    }
    return usage_error("unknown verb", verb);
}
