/* curvature_anchor.c — `stability table curvature-anchor` (curvature_anchor.h). The ratio of a
 * curvature row is precond_max_active / stability_threshold = η·λ_max(P⁻¹H)_active over
 * 2(1 + β₁)/(1 − β₁) (docs/design.md §10; Cohen et al. 2022). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/runs.h"
#include "study/curvature_anchor.h"
#include "study/table_apart.h"

#define ANCHOR_MAX_STEPS 64   /* measured updates (columns) of a table */

/* One run of the table. */
typedef struct {
    int i;                    /* its index in the set */
    char embed[32];           /* init.embed's first word */
    char setting[400];        /* "post lr 0.003 warm-up none adam" + what else differs */
    unsigned long seed;
    double final_loss;        /* outcome_final_loss (NaN: diverged) */
    int diverged;
} anchor_run_t;

/* Whether a comes before b: by embedding, setting, seed. */
static int before(const anchor_run_t *a, const anchor_run_t *b)
{
    int c = strcmp(a->embed, b->embed);
    if (!c) c = strcmp(a->setting, b->setting);
    return c ? c < 0 : a->seed < b->seed;
}

/* The ratio of run r's row at update step, NaN when the run did not measure it. */
static double ratio_at(const plot_run_t *r, double step)
{
    const plot_curv_t *c = r->curv;
    for (size_t k = 0; k < c->n; k++)
        if (c->step[k] == step) return c->active[k] / c->threshold[k];
    return NAN;
}

/* The runs of set with curvature rows into a (room for set->n), sorted; their count. */
static int anchor_runs(const plot_set_t *set, anchor_run_t *a)
{
    int *m = calloc((size_t)(set->n ? set->n : 1), sizeof *m), n = 0;
    plot_diff_t *d = malloc(sizeof *d);
    if (!m || !d) { free(m); free(d); return 0; }
    for (int i = 0; i < set->n; i++)
        if (set->runs[i].curv && set->runs[i].curv->n) m[n++] = i;
    static const char *const SHOWN[] = {"model.placement", "train.lr", "train.warmup",
                                        "train.optimizer", "init.embed", NULL};
    table_apart(set, m, n, SHOWN, d);
    for (int k = 0; k < n; k++) {
        const plot_run_t *r = &set->runs[m[k]];
        anchor_run_t *x = &a[k];
        runs_row_t row;
        runs_row(set, m[k], &row);
        x->i = m[k];
        x->seed = row.seed;
        x->final_loss = row.final_loss;
        x->diverged = row.diverged;
        char placement[32], opt[32], warm[16] = "none", more[200] = "";
        plot_item_raw(r, "init.embed", x->embed, sizeof x->embed);
        x->embed[strcspn(x->embed, " ")] = '\0';
        plot_item_raw(r, "model.placement", placement, sizeof placement);
        plot_item_raw(r, "train.optimizer", opt, sizeof opt);
        if (row.warmup > 1) snprintf(warm, sizeof warm, "%d", row.warmup);
        if (d->n) plot_key(d, r, 0, more, sizeof more);
        snprintf(x->setting, sizeof x->setting, "%s lr %g warm-up %s %s%s%s", placement, row.lr,
                 warm, opt, d->n ? ", " : "", more);
    }
    for (int p = 1; p < n; p++)   // a stable insertion sort
        for (int q = p; q > 0 && before(&a[q], &a[q - 1]); q--) {
            const anchor_run_t t = a[q];
            a[q] = a[q - 1];
            a[q - 1] = t;
        }
    free(m);
    free(d);
    return n;
}

/* The updates any of the n runs measured, ascending, into steps; their count. */
static int union_steps(const plot_set_t *set, const anchor_run_t *a, int n, double *steps)
{
    int ns = 0;
    for (int k = 0; k < n; k++) {
        const plot_curv_t *c = set->runs[a[k].i].curv;
        for (size_t j = 0; j < c->n; j++) {
            int seen = 0;
            for (int s = 0; s < ns && !seen; s++) seen = steps[s] == c->step[j];
            if (!seen && ns < ANCHOR_MAX_STEPS) steps[ns++] = c->step[j];
        }
    }
    qsort(steps, (size_t)ns, sizeof *steps, plot_cmp_double);
    return ns;
}

static void header(FILE *out, int md, const char *third, const double *steps, int ns)
{
    if (md) {
        fprintf(out, "| setting | embedding | %s | λ_max(H) at init |", third);
        for (int s = 0; s < ns; s++) fprintf(out, " update %g |", steps[s]);
        fputs(" final loss |\n|---|---|---|---|", out);
        for (int s = 0; s < ns; s++) fputs("---|", out);
        fputs("---|\n", out);
        return;
    }
    const int range = !strcmp(third, "seeds");   // TSV: a lo and a hi column each
    fprintf(out, range ? "setting\tembedding\t%s\thessian_max_init_lo\thessian_max_init_hi"
                       : "setting\tembedding\t%s\thessian_max_init", third);
    for (int s = 0; s < ns; s++)
        if (range) fprintf(out, "\tupdate_%g_lo\tupdate_%g_hi", steps[s], steps[s]);
        else fprintf(out, "\tupdate_%g", steps[s]);
    fputs(range ? "\tfinal_loss_lo\tfinal_loss_hi\n" : "\tfinal_loss\n", out);
}

/* x as fmt, "–" (Markdown) or "nan" (TSV) when not finite. */
static void cell(FILE *out, int md, const char *fmt, double x)
{
    fputs(md ? " | " : "\t", out);
    if (!isfinite(x)) fputs(md ? "–" : "nan", out);
    else fprintf(out, md ? fmt : "%.17g", x);
}

/* The range of the finite v[0..n) over seeds: "lo – hi", one value as itself, "–" for none;
 * TSV: "lo\thi". */
static void range(FILE *out, int md, const double *v, int n)
{
    double lo = INFINITY, hi = -INFINITY;
    int k = 0;
    for (int j = 0; j < n; j++)
        if (isfinite(v[j])) { lo = fmin(lo, v[j]); hi = fmax(hi, v[j]); k++; }
    if (!md) { cell(out, 0, "", k ? lo : NAN); cell(out, 0, "", k ? hi : NAN); return; }
    if (!k) fputs(" | –", out);
    else if (k == 1 || lo == hi) fprintf(out, " | %.3g", lo);
    else fprintf(out, " | %.3g – %.3g", lo, hi);
}

/* The second table: per (embedding, setting) the seeds' range of each column. */
static void print_ranges(const plot_set_t *set, const anchor_run_t *a, int n, const double *steps,
                         int ns, int md, FILE *out)
{
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return;
    for (int g = 0; g < n;) {
        int e = g;
        while (e < n && !strcmp(a[e].embed, a[g].embed) && !strcmp(a[e].setting, a[g].setting)) e++;
        int div = 0;
        for (int k = g; k < e; k++) div += a[k].diverged;
        fprintf(out, md ? "| %s | %s | %d" : "%s\t%s\t%d", a[g].setting, a[g].embed, e - g);
        for (int k = g; k < e; k++) v[k - g] = set->runs[a[k].i].curv->hessian_max[0];
        range(out, md, v, e - g);
        for (int s = 0; s < ns; s++) {
            for (int k = g; k < e; k++) v[k - g] = ratio_at(&set->runs[a[k].i], steps[s]);
            range(out, md, v, e - g);
        }
        for (int k = g; k < e; k++) v[k - g] = a[k].final_loss;
        range(out, md, v, e - g);
        if (md && div) fprintf(out, " (%d diverged)", div);
        fputs(md ? " |\n" : "\n", out);
        g = e;
    }
    free(v);
}

int study_curvature_anchor_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                                 size_t errlen)
{
    anchor_run_t *a = malloc((size_t)(set->n ? set->n : 1) * sizeof *a);
    double steps[ANCHOR_MAX_STEPS];
    if (!a) { snprintf(err, errlen, "out of memory"); return 1; }
    const int n = anchor_runs(set, a);
    if (!n) {
        free(a);
        snprintf(err, errlen, "no run with curvature rows (/train/curv_step: "
                 "experiments/curvature_anchor.ini's runs)");
        return 1;
    }
    const int ns = union_steps(set, a, n, steps), md = fmt == STUDY_MARKDOWN;
    header(out, md, "seed", steps, ns);
    for (int k = 0; k < n; k++) {
        const plot_run_t *r = &set->runs[a[k].i];
        fprintf(out, md ? "| %s | %s | %lu" : "%s\t%s\t%lu", a[k].setting, a[k].embed, a[k].seed);
        cell(out, md, "%.1f", r->curv->hessian_max[0]);
        for (int s = 0; s < ns; s++) cell(out, md, "%.3g", ratio_at(r, steps[s]));
        cell(out, md, "%.2f", a[k].final_loss);
        if (md && a[k].diverged) fputs(" (diverged)", out);
        fputs(md ? " |\n" : "\n", out);
    }
    fputs(md ? "\nAcross seeds (min – max):\n\n" : "\n", out);
    header(out, md, "seeds", steps, ns);
    print_ranges(set, a, n, steps, ns, md, out);
    free(a);
    return 0;
}
