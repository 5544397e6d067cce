/* cli_info.c — `stability info`: what a result file holds, run by run (the probe's tables,
 * the config, the diagnosis of a training run), the schemes' table, and with --train the
 * tables of seeds of training runs (report/plot_band.h; docs/design.md §3, §6e), with --runs
 * the table of runs (report/runs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config.h"
#include "io/h5io.h"
#include "report/plot.h"
#include "report/plot_band.h"
#include "report/report.h"
#include "report/runs.h"
#include "cli/cli.h"

static const char *HELP_INFO =
    "usage: stability info FILE.h5... [--all]\n"
    "       stability info FILE.h5... --train\n"
    "       stability info [FILE.h5...] --schemes\n"
    "       stability info FILE.h5... --runs\n"
    "\n"
    "For a run file, or every run of a merged sweep file (/runs/NAME): its status, model and\n"
    "data. A probe: per layer (counted from 1), mean ± 95% CI over seeds of ||E_batch dL/dW||_F\n"
    "for W^1 and W^2, hidden-state norms / d beside Lemma 2's value or bounds, and the norm\n"
    "Jacobian ||J||_2 beside sqrt(d)/||x-mu|| (Lemma 3). A training run: what distinguishes it\n"
    "(optimizer, lr, schedule, warm-up, updates, batch, precision, mitigations), how it ended\n"
    "(status, final and validation loss, time, ms/update, tokens/s) and the diagnosis: each\n"
    "problem with the update it began, the layer and head where it applies and the keys to set\n"
    "against it (divergence, a finite explosion, not learning, a warm-up longer than the run,\n"
    "the unigram plateau, attention-logit growth, entropy collapse, the lower layers' gradient\n"
    "collapse), or one line saying it is healthy; with curvature rows (probe.curvature_every)\n"
    "a line on the active preconditioned sharpness against the optimizer's threshold: the\n"
    "first update above, the peak, how long, the block at the peak, a warm-up of about how\n"
    "many updates, GI-Adam, Pre-LN (docs/manual.md, \"Watching a run\").\n"
    "  --all      every tensor's gradient, and the gradient at each sub-layer's output\n"
    "  --schemes  the table of normalisation schemes (tab-separated), or with files each run's\n"
    "             scheme, atlas rank, family and label (as `stability table atlas` reads it)\n"
    "  --train    a Markdown table of the training runs, one row per configuration with its\n"
    "             seeds (runs that differ only in init.seed): last and best validation loss\n"
    "             (training loss without validation), mean ± 95% CI over the seeds, the update at\n"
    "             which each reaches the loss every run reaches, mean ± 95% CI, and how many\n"
    "             seeds reach it; for runs that log BLEU (train.bleu_every) the same for BLEU,\n"
    "             with the epoch reaching the best BLEU every run reaches (Fig. 4)\n"
    "  --runs     the table of runs as TSV (docs/design.md §6d): a header line, then one row per\n"
    "             run: its identity from the resolved config (run, origin, scheme, L, dec_L,\n"
    "             d_model, d_ff, heads, lr, warmup, seed, optimizer, schedule, precision, block,\n"
    "             parametrization, task, steps) and its outcome (loss_init, final_loss, plateau,\n"
    "             diverged, stuck, trains; NaN as 'nan'), what every figure and table reads\n"
    "--all, --schemes, --train and --runs are different outputs: give at most one.\n";

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
        char *core = h5io_read_attr_string(f, "/", "blas_core");   // absent in older files
        printf("%s: status %s", label, status ? status : "?");
        if (core) printf(", OpenBLAS kernels %s", core);
        printf("\n");
        free(core);
        report_config(stdout, &cfg);
        snprintf(path, sizeof path, "%s/train", prefix);
        const int training = h5io_exists(f, path);
        if (training) report_train_header(stdout, f, prefix, &cfg);   // what was run, how it ended
        snprintf(path, sizeof path, "%s/probe", prefix);
        if (h5io_read_probe(f, prefix, &p, err, sizeof err) == 0) {
            report_probe(stdout, &cfg, p, all);
        } else if (h5io_error(f) || h5io_exists(f, path)) {
            fprintf(stderr, "stability: %s\n", err);
            rc = 1;
        } else if (!training) {   // a training run has no /probe: nothing to say about it
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

/* The files among argv[2..argc) into set (plot_load). 0, or the exit status. */
static int load_files(int argc, char **argv, plot_set_t *set)
{
    const char *files[256];
    int nfiles = 0;
    for (int i = 2; i < argc; i++)
        if (argv[i][0] != '-') {
            if (nfiles == 256) return cli_usage_error("info: more than 256 files", argv[i]);
            files[nfiles++] = argv[i];
        }
    char err[1024];
    if (plot_load(set, files, nfiles, err, sizeof err)) {
        fprintf(stderr, "stability: %s\n", err);
        return 1;
    }
    return 0;
}

/* info --runs: the table of runs as TSV (report/runs.h). */
static int info_runs(int argc, char **argv)
{
    plot_set_t set;
    const int rc = load_files(argc, argv, &set);
    if (rc) return rc;
    runs_table_t t;
    if (runs_build(&t, &set)) {
        fprintf(stderr, "stability: info --runs: out of memory\n");
        plot_set_free(&set);
        return 1;
    }
    runs_print(stdout, &t);
    runs_free(&t);
    plot_set_free(&set);
    return 0;
}

/* info --train: the seed groups' tables (report/plot_band.h): the (validation) loss, BLEU. */
static int info_train(int argc, char **argv)
{
    plot_set_t set;
    const int rc = load_files(argc, argv, &set);
    if (rc) return rc;
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

int cli_info(int argc, char **argv)
{
    int all = 0, rc = 0, nfiles = 0, schemes = 0, train = 0, runs = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(HELP_INFO, stdout); return 0; }
        if (!strcmp(argv[i], "--all")) all = 1;
        else if (!strcmp(argv[i], "--schemes")) schemes = 1;
        else if (!strcmp(argv[i], "--train")) train = 1;
        else if (!strcmp(argv[i], "--runs")) runs = 1;
        else if (argv[i][0] == '-') return cli_usage_error("unknown option", argv[i]);
        else nfiles++;
    }
    if (runs && all + schemes + train)   // each is its own output: one would be ignored
        return cli_usage_error("info: --runs is an output of its own; give it alone", "--runs");
    if (all + schemes + train > 1)
        return cli_usage_error("info: --all, --schemes and --train are different outputs; give one",
                               train && all ? "--train --all" : train ? "--train --schemes"
                                                                      : "--all --schemes");
    if (!nfiles && schemes) { report_scheme_table(stdout); return 0; }
    if (!nfiles) return cli_usage_error("info: missing FILE.h5", NULL);
    if (train) return info_train(argc, argv);
    if (runs) return info_runs(argc, argv);
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

