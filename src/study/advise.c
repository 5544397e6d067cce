/* advise.c — `stability table advise` (advise.h; docs/design.md "The advisor", its validation):
 * the advisor's answers against outcome runs it was not built on.
 *
 * An advice's cell is read from its `config` attribute as a run's is (report/runs.h): scheme,
 * block, depth (encoder and decoder), width, lr, optimizer, task. Its outcome runs are the rows
 * of that cell without a warm-up remedy (runs_remedy "none"): warm-up 1 the outcome without
 * warm-up, more than 1 with it, any seeds. A run trains by runs_outcome at the atlas's 3.2 nats
 * for the byte-level text LM (WARMUP_TRAINS, docs/curvature.md), else by the default plateau
 * rule; of several seeds, the majority (a tie does not train). The advice is right when
 * needs_warmup == !(the runs without warm-up train).
 *
 * The measured largest lr without warm-up of a cell is the largest lr of the outcome runs of
 * the same cell but lr (its grid) whose warm-up-1 runs train; the advised one is rounded down
 * to that grid; within one grid step when the two grid positions differ by at most 1. An advice
 * whose measured runs diverged says only "below lr" (max_lr_without_warmup NaN): it is right
 * when the measured largest lr is below the advice's lr; its warm-up's length is unknown
 * (root attribute `warmup`, docs/design.md "The advisor", the diverged case). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_sort.h>
#include "io/h5io.h"
#include "measure/diagnose.h"
#include "report/runs.h"
#include "study/advise.h"
#include "study/warmup_explained.h"

/* One advice and what it is checked against. */
typedef struct {
    const char *file;
    plot_run_t run;          /* the advice's config; no /train (runs_row reads its identity) */
    runs_row_t id;           /* its cell */
    int needs;               /* needs_warmup */
    long warmup;             /* warmup_updates */
    char kind[32];           /* the `warmup` attribute ("linear", "longer than the run",
                                "unknown: diverged", "none"), "" in files before it */
    double max_lr;           /* max_lr_without_warmup (NaN: below the advice's lr) */
    int cold, cold_ok;       /* its outcome runs without warm-up, how many train */
    int warm, warm_ok;       /* ... with warm-up */
    int truth;               /* 1: trains without warm-up (the majority), 0: not, −1: no run */
    double measured;         /* the measured largest lr without warm-up (0: none trains) */
    int grid_n;              /* lrs in its cell's grid */
    int steps;               /* grid positions between advised and measured (−1: "below lr") */
    int within;              /* η_max within one grid step (or below lr, when it says so) */
} advice_t;

/* Whether outcome row o is of a's cell, lr aside (lr too when with_lr). */
static int same_cell(const runs_row_t *a, const runs_row_t *o, int with_lr)
{
    return !strcmp(a->scheme, o->scheme) && !strcmp(a->block, o->block) && a->L == o->L &&
           a->dec_L == o->dec_L && a->d_model == o->d_model && a->d_ff == o->d_ff &&
           !strcmp(a->optimizer, o->optimizer) && !strcmp(a->task, o->task) &&
           !strcmp(o->remedy, "none") && (!with_lr || a->lr == o->lr);
}

/* The outcome of a row by the study's rule: 3.2 nats for the byte-level text LM. */
static void outcome_of(runs_row_t *row)
{
    runs_outcome(row, !strcmp(row->task, "text") ? WARMUP_TRAINS : RUNS_BELOW_PLATEAU);
}

/* Read file into *a when it is an advice (root attribute needs_warmup): 1; 0 when it is not;
 * −1 with err when it cannot be read. */
static int advice_read(const char *file, advice_t *a, char *err, size_t errlen)
{
    h5io_file_t *f;
    if (h5io_open_read(&f, file, err, errlen)) return -1;
    double needs, warmup, max_lr;
    if (h5io_read_attr_double(f, "/", "needs_warmup", &needs)) {
        const int bad = h5io_error(f) != NULL;
        if (bad) snprintf(err, errlen, "%s", h5io_error(f));
        h5io_close(f);
        return bad ? -1 : 0;
    }
    char *ini = h5io_read_attr_string(f, "/", "config");
    char *kind = h5io_read_attr_string(f, "/", "warmup");   // NULL in files before it
    const int missing = h5io_read_attr_double(f, "/", "warmup_updates", &warmup) ||
                        h5io_read_attr_double(f, "/", "max_lr_without_warmup", &max_lr);
    memset(a, 0, sizeof *a);
    a->file = file;
    snprintf(a->run.name, sizeof a->run.name, "%s", file);
    snprintf(a->run.origin, sizeof a->run.origin, "%s", file);
    snprintf(a->run.status, sizeof a->run.status, "advice");
    a->run.diverged_at = a->run.epoch_batches = a->run.unigram = NAN;
    char cerr[CONFIG_ERR_MAX];
    int rc = 1;
    if (h5io_error(f)) snprintf(err, errlen, "%s", h5io_error(f));
    else if (missing || !ini)
        snprintf(err, errlen, "%s: an advice without warmup_updates, max_lr_without_warmup or "
                 "config", file);
    else if (config_parse_string(&a->run.cfg, ini, file, cerr, sizeof cerr))
        snprintf(err, errlen, "%s: its config: %s", file, cerr);
    else rc = 0;
    free(ini);
    if (kind) snprintf(a->kind, sizeof a->kind, "%s", kind);
    free(kind);
    h5io_close(f);
    if (rc) return -1;
    a->needs = needs != 0;
    a->warmup = (long)warmup;
    a->max_lr = max_lr;
    const plot_set_t one = {.runs = &a->run, .n = 1};
    runs_row(&one, 0, &a->id);
    return 1;
}

/* The lrs of a's grid (outcome runs of its cell but lr, without warm-up) sorted into lr (room
 * for t->n); their count. */
static int grid_of(const advice_t *a, const runs_table_t *t, double *lr)
{
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        const runs_row_t *o = &t->rows[i];
        if (o->warmup > 1 || !same_cell(&a->id, o, 0)) continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = lr[k] == o->lr;
        if (!seen) lr[n++] = o->lr;
    }
    gsl_sort(lr, 1, (size_t)n);
    return n;
}

/* The position of x on the sorted grid g[n]: the index of the largest grid lr ≤ x (to 1e-9
 * relative), −1 below the grid. */
static int grid_pos(const double *g, int n, double x)
{
    int k = -1;
    while (k + 1 < n && g[k + 1] <= x * (1 + 1e-9)) k++;
    return k;
}

/* Whether most warm-up-1 outcome runs of a's cell at lr train (none: 0). */
static int trains_at(const advice_t *a, const runs_table_t *t, double lr)
{
    int n = 0, ok = 0;
    for (int i = 0; i < t->n; i++) {
        const runs_row_t *o = &t->rows[i];
        if (o->warmup > 1 || !same_cell(&a->id, o, 0) || o->lr != lr) continue;
        n++;
        ok += o->trains;
    }
    return 2 * ok > n;
}

/* a's outcomes, truth, measured largest lr and grid steps from the outcome rows t (their
 * outcome by the study's rule); g room for t->n lrs. */
static void advice_check(advice_t *a, const runs_table_t *t, double *g)
{
    for (int i = 0; i < t->n; i++) {
        const runs_row_t *o = &t->rows[i];
        if (!same_cell(&a->id, o, 1)) continue;
        if (o->warmup > 1) { a->warm++; a->warm_ok += o->trains; }
        else { a->cold++; a->cold_ok += o->trains; }
    }
    a->truth = a->cold ? 2 * a->cold_ok > a->cold : -1;
    a->grid_n = grid_of(a, t, g);
    int m = -1;   // the measured position: the largest grid lr that trains, −1 none
    for (int k = 0; k < a->grid_n; k++)
        if (trains_at(a, t, g[k])) m = k;
    a->measured = m >= 0 ? g[m] : 0.0;
    if (isnan(a->max_lr)) {   // "below lr": right when the measured one is
        a->steps = -1;
        a->within = a->measured < a->id.lr;
        return;
    }
    a->steps = abs(grid_pos(g, a->grid_n, a->max_lr) - m);
    a->within = a->steps <= 1;
}

static int advice_cmp(const void *x, const void *y)
{
    const runs_row_t *a = &((const advice_t *)x)->id, *b = &((const advice_t *)y)->id;
    int c = strcmp(a->task, b->task);
    if (!c) c = strcmp(a->scheme, b->scheme);
    if (!c) c = (a->L > b->L) - (a->L < b->L);
    if (!c) c = (a->lr > b->lr) - (a->lr < b->lr);
    return c;
}

/* The counts the summary prints: right of n over all advices with an outcome, over those that
 * say "needs", over those that say "does not need"; within one grid step of those with a
 * grid. */
typedef struct { int right[3], n[3], within, gridded; } advise_count_t;

static advise_count_t advise_count(const advice_t *a, int n)
{
    advise_count_t c = {{0}, {0}, 0, 0};
    for (int i = 0; i < n; i++) {
        if (a[i].grid_n) { c.gridded++; c.within += a[i].within; }
        if (a[i].truth < 0) continue;
        const int right = a[i].needs == !a[i].truth, g = a[i].needs ? 1 : 2;
        c.right[0] += right; c.n[0]++;
        c.right[g] += right; c.n[g]++;
    }
    return c;
}

/* "k/n" runs that train, or "–" without runs. */
static void print_outcome(FILE *out, int ok, int n, const char *sep)
{
    if (n) fprintf(out, "%s%d/%d", sep, ok, n);
    else fprintf(out, "%s–", sep);
}

static void print_cells_md(FILE *out, const advice_t *a, int n)
{
    fputs("| task | scheme | L | lr | advice | warm-up | η_max advised | η_max measured | "
          "trains without warm-up | trains with warm-up | |\n"
          "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|\n", out);
    for (int i = 0; i < n; i++) {
        const runs_row_t *c = &a[i].id;
        fprintf(out, "| %s | %s | %d", c->task, c->scheme, c->L);
        if (c->dec_L) fprintf(out, "-%d", c->dec_L);
        fprintf(out, " | %g | %s | ", c->lr, a[i].needs ? "needs" : "does not need");
        if (!strcmp(a[i].kind, "unknown: diverged")) fputs("unknown (diverged)", out);
        else if (!strcmp(a[i].kind, "longer than the run"))
            fprintf(out, "longer than the run (%ld)", a[i].warmup);
        else fprintf(out, "%ld", a[i].warmup);
        if (isnan(a[i].max_lr)) fprintf(out, " | below %g | ", c->lr);
        else fprintf(out, " | %.2g | ", a[i].max_lr);
        if (!a[i].grid_n) fputs("–", out);
        else if (a[i].measured > 0) fprintf(out, "%g", a[i].measured);
        else fputs("none trains", out);
        print_outcome(out, a[i].cold_ok, a[i].cold, " | ");
        print_outcome(out, a[i].warm_ok, a[i].warm, " | ");
        fprintf(out, " | %s |\n", a[i].truth < 0 ? "no outcome" :
                a[i].needs == !a[i].truth ? "right" : "**wrong**");
    }
}

static void print_cells_tsv(FILE *out, const advice_t *a, int n)
{
    fputs("file\ttask\tscheme\tL\tdec_L\tlr\tneeds_warmup\twarmup_updates\t"
          "max_lr_without_warmup\tmeasured_max_lr\tgrid_steps\truns_without\ttrain_without\t"
          "runs_with\ttrain_with\tright\twarmup\tmax_lr_within\n", out);
    for (int i = 0; i < n; i++) {
        const runs_row_t *c = &a[i].id;
        fprintf(out, "%s\t%s\t%s\t%d\t%d\t%.17g\t%d\t%ld\t%.17g\t", a[i].file, c->task, c->scheme,
                c->L, c->dec_L, c->lr, a[i].needs, a[i].warmup, a[i].max_lr);
        if (a[i].grid_n && a[i].steps >= 0) fprintf(out, "%.17g\t%d\t", a[i].measured, a[i].steps);
        else if (a[i].grid_n) fprintf(out, "%.17g\tnan\t", a[i].measured);
        else fputs("nan\tnan\t", out);
        fprintf(out, "%d\t%d\t%d\t%d\t%s\t%s\t%s\n", a[i].cold, a[i].cold_ok, a[i].warm,
                a[i].warm_ok, a[i].truth < 0 ? "nan" : a[i].needs == !a[i].truth ? "1" : "0",
                a[i].kind[0] ? a[i].kind : "nan", a[i].grid_n ? a[i].within ? "1" : "0" : "nan");
    }
}

/* The accuracy rows and the η_max line. */
static void print_summary(FILE *out, const advice_t *a, int n, study_format_t fmt)
{
    static const char *const GROUP[3] = {"all", "needs", "does not need"};
    const advise_count_t c = advise_count(a, n);
    if (fmt == STUDY_TSV) fputs("\ngroup\tright\tn\taccuracy\tlo\thi\n", out);
    else fputs("\n| advice | right | of | accuracy | 95 % interval (Clopper–Pearson) |\n"
               "|---|---:|---:|---:|---|\n", out);
    for (int g = 0; g < 4; g++) {   // g = 3: η_max within one grid step
        const int k = g < 3 ? c.right[g] : c.within, m = g < 3 ? c.n[g] : c.gridded;
        double lo, hi;
        study_clopper_pearson(k, m, 0.05, &lo, &hi);
        const char *name = g < 3 ? GROUP[g] : "η_max within one grid step";
        if (fmt == STUDY_TSV)
            fprintf(out, "%s\t%d\t%d\t%.17g\t%.17g\t%.17g\n",
                    g < 3 ? GROUP[g] : "max_lr_within_one_step", k, m, m ? (double)k / m : NAN,
                    lo, hi);
        else if (m)
            fprintf(out, "| %s | %d | %d | %.2f | [%.2f, %.2f] |\n", name, k, m, (double)k / m,
                    lo, hi);
        else fprintf(out, "| %s | 0 | 0 | – | – |\n", name);
    }
}

/* The caption of the Markdown table. */
static void print_caption(FILE *out, int n, int runs)
{
    fprintf(out, "Table: `stability advise` against %d outcome runs, %d advice%s. A run trains "
            "when not diverged and its final loss is below %.1f nats for the byte-level text LM "
            "(the atlas's rule, docs/curvature.md), else below its plateau by %.1f nats (the "
            "default rule, docs/design.md §6d); of several seeds, the majority (a tie does not "
            "train). Right: the advice says \"needs\" exactly when the runs without warm-up do "
            "not train. η_max advised: max_lr_without_warmup; measured: the largest lr of the "
            "cell's grid whose runs without warm-up train; within one grid step: the advised "
            "value, rounded down to the grid, at most one grid lr from the measured one (an "
            "advice whose measured runs diverged says \"below lr\": right when the measured one "
            "is below the cell's lr; its warm-up's length is unknown).\n\n",
            runs, n, n == 1 ? "" : "s", WARMUP_TRAINS, DIAG_PLATEAU_BAND);
}

/* Split files into advices (into a, their count *na) and outcome files (into rest, *nr). */
static int split_files(const char *const *files, int nfiles, advice_t *a, int *na,
                       const char **rest, int *nr, char *err, size_t errlen)
{
    *na = *nr = 0;
    for (int i = 0; i < nfiles; i++) {
        const int k = advice_read(files[i], &a[*na], err, errlen);
        if (k < 0) return 1;
        if (k) (*na)++;
        else rest[(*nr)++] = files[i];
    }
    if (!*na) snprintf(err, errlen, "no advice file (root attribute needs_warmup) among them");
    else if (!*nr) snprintf(err, errlen, "no outcome runs: give the sweep files beside the advice");
    return !*na || !*nr;
}

int study_advise_files(const char *const *files, int nfiles, study_format_t fmt, FILE *out,
                       char *err, size_t errlen)
{
    advice_t *a = calloc((size_t)nfiles, sizeof *a);
    const char **rest = calloc((size_t)nfiles, sizeof *rest);
    plot_set_t set = {0};
    runs_table_t t = {0};
    double *g = NULL;
    int na, nr, rc = 1;
    if (!a || !rest) { snprintf(err, errlen, "out of memory"); goto done; }
    if (split_files(files, nfiles, a, &na, rest, &nr, err, errlen)) goto done;
    if (plot_load(&set, rest, nr, err, errlen)) goto done;
    if (runs_build(&t, &set) || !(g = malloc((size_t)(t.n + 1) * sizeof *g))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (int i = 0; i < t.n; i++) outcome_of(&t.rows[i]);
    for (int i = 0; i < na; i++) advice_check(&a[i], &t, g);
    qsort(a, (size_t)na, sizeof *a, advice_cmp);
    for (int i = 0; i < na; i++) a[i].id.run = &a[i].run;   // moved by the sort
    if (fmt == STUDY_TSV) print_cells_tsv(out, a, na);
    else { print_caption(out, na, t.n); print_cells_md(out, a, na); }
    print_summary(out, a, na, fmt);
    rc = 0;
done:
    free(g);
    runs_free(&t);
    if (set.runs) plot_set_free(&set);
    free(rest);
    free(a);
    return rc;
}
