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
    "       stability dump --config FILE --out FILE.h5 [--set ...] [--force]\n"
    "       stability gradcheck --config FILE [--set ...] [--entries N] [--tol X]\n"
    "       stability --help | VERB --help | --version\n"
    "\n"
    "Measures why Post-LN transformers need learning-rate warm-up and Pre-LN ones do not\n"
    "(Xiong et al., ICML 2020). A config name without '/' is looked up in configs/.\n"
    "Exit codes: 0 success, 1 runtime failure (I/O, HDF5), 2 bad usage or config.\n";

static const char *HELP_RUN =
    "usage: stability --config FILE [--set section.key=value]... [--quiet]\n"
    "\n"
    "Builds the model of FILE, initialises it from init.seed, draws one batch, runs one\n"
    "forward and backward pass and prints the loss and a per-layer table of gradient\n"
    "Frobenius norms ||dL/dW||_F.\n"
    "  --config FILE   INI file (DESIGN.md section 4); a bare name is looked up in configs/\n"
    "  --set S.K=V     override one key, e.g. --set model.layers=12 (repeatable)\n"
    "  --quiet         print only the loss\n";

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

static double frobenius(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
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

static int cmd_run(const options_t *o)
{
    config_t cfg;
    run_t r;
    int rc = load_config(o, &cfg);
    if (rc) return rc;
    if ((rc = run_setup(&r, &cfg))) return rc;
    model_t *m = r.model;
    const double loss = model_forward(m, r.tokens, r.targets);
    model_zero_grad(m);
    model_backward(m);
    if (o->quiet) {
        printf("%.10g\n", loss);
        run_free(&r);
        return 0;
    }
    print_summary(&cfg);
    printf("loss %.6f  (ln V = %.6f)\n\n", loss, log((double)cfg.model.vocab));
    static const char *const heads[] = {"W_Q", "W_K", "W_V", "W_O", "W^1", "W^2", "g1", "g2"};
    const int ncols = m->norm == NORM_NONE ? 6 : 8;
    printf("||dL/dW||_F per layer\nlayer");
    for (int c = 0; c < ncols; c++) printf(" %10s", heads[c]);
    printf("\n");
    for (int l = 0; l < m->L; l++) {
        printf("%5d", l);
        for (int c = 0; c < ncols; c++) {
            char name[48];
            static const char *const pn[] = {"wq", "wk", "wv", "wo", "w1", "w2",
                                             "norm1.gamma", "norm2.gamma"};
            snprintf(name, sizeof name, "layers/%02d/%s", l, pn[c]);
            const tensor_info_t *t = model_find_tensor(m, name);
            printf(" %10.4e", frobenius(m->grads + t->offset, model_tensor_size(t)));
        }
        printf("\n");
    }
    const tensor_info_t *emb = model_find_tensor(m, "tok_embed");
    printf("tok_embed %10.4e\n", frobenius(m->grads + emb->offset, model_tensor_size(emb)));
    run_free(&r);
    return 0;
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
    const size_t len = config_to_ini(&cfg, NULL, 0) + 1;
    char *ini = malloc(len), err[1024];
    if (!ini) { run_free(&r); fprintf(stderr, "stability: out of memory\n"); return 1; }
    config_to_ini(&cfg, ini, len);
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
    if (!strcmp(verb, "gradcheck")) {
        if ((rc = parse_options(argc, argv, 2, &o, HELP_GRADCHECK))) return rc < 0 ? 0 : rc;
        return cmd_gradcheck(&o);
    }
    return usage_error("unknown verb", verb);
}
