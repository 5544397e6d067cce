/* warmup.c — `stability table warmup` (warmup.h): docs/warmup.md's table of Fig. 2's runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/runs.h"
#include "study/table_apart.h"
#include "study/warmup.h"

/* Lowest moving average of loss[0..n) over windows of w and the update its first value below
 * WARMUP_BELOW ends at (−1 never), windows whose mean is NaN left out. */
static void moving_average(const double *loss, size_t n, size_t w, double *best, int *to_below)
{
    *best = NAN;
    *to_below = -1;
    for (size_t i = 0; i + w <= n; i++) {
        double s = 0.0;
        for (size_t k = 0; k < w; k++) s += loss[i + k];
        const double m = s / (double)w;
        if (isnan(m)) continue;
        if (!(m >= *best)) *best = m;
        if (*to_below < 0 && m < WARMUP_BELOW) *to_below = (int)(i + w);
    }
}

/* ‖∂L/∂W²‖_F of the first layer over the last at update WARMUP_RATIO_AT: Xiong et al. 2020,
 * Appendix F (Post-LN's gradient shrinks layer by layer down; docs/warmup.md). The decoder's
 * layers of an encoder–decoder (the layer axis runs over the encoder's, then the decoder's:
 * docs/design.md §6b). NaN when that update was not probed. */
static double grad_ratio(const plot_run_t *r)
{
    const plot_dyn_t *d = r->dyn;
    if (!d || !d->grad_w2 || d->L < 1) return NAN;
    const int first = r->cfg.model.arch == ARCH_ENCDEC ? r->cfg.model.layers : 0;
    if (first >= d->L) return NAN;
    for (size_t p = 0; p < d->nprobe; p++)
        if (d->probe_step[p] == WARMUP_RATIO_AT) {
            const double *g = d->grad_w2 + p * (size_t)d->L;   // (L)
            return g[first] / g[d->L - 1];
        }
    return NAN;
}

void warmup_run_measure(const plot_set_t *set, int i, warmup_run_t *w)
{
    const plot_run_t *r = &set->runs[i];
    runs_row_t row;
    runs_row(set, i, &row);
    w->final_loss = row.final_loss;   // the one definition (measure/outcome.h)
    moving_average(r->loss, r->nsteps, r->nsteps < WARMUP_MA ? r->nsteps : WARMUP_MA, &w->best,
                   &w->to_below);
    w->val_final = r->nevals ? r->val_loss[r->nevals - 1] : NAN;
    w->val_best = NAN;
    for (size_t k = 0; k < r->nevals; k++)
        if (!isnan(r->val_loss[k]) && !(r->val_loss[k] >= w->val_best)) w->val_best = r->val_loss[k];
    w->ratio = grad_ratio(r);
    w->wall = r->dyn && !isnan(r->dyn->wall) ? r->dyn->wall : 0.0;
}

/* x as printf's fmt does, "nan" for NaN (never "-nan"). */
static void number(FILE *out, const char *fmt, double x)
{
    if (isnan(x)) fputs("nan", out);
    else fprintf(out, fmt, x);
}

/* Sort m[0..n) by run name, runs of one name in set order (a stable insertion sort). */
static void sort_by_name(const plot_set_t *set, int *m, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && strcmp(set->runs[m[b]].name, set->runs[m[b - 1]].name) < 0; b--) {
            const int t = m[b];
            m[b] = m[b - 1];
            m[b - 1] = t;
        }
}

/* One row of the table for run i. */
static void print_row(const plot_set_t *set, int i, const plot_diff_t *d, int md, FILE *out)
{
    const plot_run_t *r = &set->runs[i];
    warmup_run_t w;
    warmup_run_measure(set, i, &w);
    char placement[32], lr[32], warm[32], extra[600] = "";
    plot_item_raw(r, "model.placement", placement, sizeof placement);   // as the config writes it
    plot_item_raw(r, "train.lr", lr, sizeof lr);
    plot_item_raw(r, "train.warmup", warm, sizeof warm);
    if (d->n) plot_key(d, r, 0, extra, sizeof extra);
    const char *sep = md ? " | " : "\t";
    fprintf(out, "%s%s%s%s%s%s%s%s%s%s%s%zu%s", md ? "| " : "", r->name, sep, placement, sep, lr,
            sep, warm, sep, r->status, sep, r->nsteps, sep);
    number(out, md ? "%.3f" : "%.17g", w.final_loss);
    fputs(sep, out);
    number(out, md ? "%.3f" : "%.17g", w.best);
    if (w.to_below >= 0) fprintf(out, "%s%d%s", sep, w.to_below, sep);
    else fprintf(out, "%s%s%s", sep, md ? "never" : "nan", sep);
    number(out, md ? "%.3f" : "%.17g", w.val_final);
    fputs(sep, out);
    number(out, md ? "%.3f" : "%.17g", w.val_best);
    fputs(sep, out);
    number(out, md ? "%.3g" : "%.17g", w.ratio);
    fputs(sep, out);
    number(out, md ? "%.0f" : "%.17g", w.wall);
    if (d->n) fprintf(out, "%s%s", sep, extra);
    fputs(md ? " |\n" : "\n", out);
}

int study_warmup_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                       size_t errlen)
{
    for (int i = 0; i < set->n; i++)
        if (!set->runs[i].nsteps) {
            snprintf(err, errlen, "%s: no training curve (/train/loss, /train/step): the warm-up "
                     "table reads training runs", set->runs[i].origin);
            return 1;
        }
    int *m = malloc((size_t)set->n * sizeof *m);
    plot_diff_t *d = malloc(sizeof *d);
    if (!m || !d) { free(m); free(d); snprintf(err, errlen, "out of memory"); return 1; }
    for (int i = 0; i < set->n; i++) m[i] = i;
    static const char *const SHOWN[] = {"model.placement", "train.lr", "train.warmup", NULL};
    table_apart(set, m, set->n, SHOWN, d);
    sort_by_name(set, m, set->n);
    const int md = fmt == STUDY_MARKDOWN;
    if (md) {
        fprintf(out, "| run | LN | lr | warm-up | status | updates | final loss | best loss | "
                "updates to < %g | final val | best val | ‖∇W²‖ layer 1 / layer L at %d | "
                "wall (s) |%s\n", WARMUP_BELOW, WARMUP_RATIO_AT, d->n ? " also differ |" : "");
        fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|%s\n",
                d->n ? "---|" : "");
    } else {
        fprintf(out, "run\tplacement\tlr\twarmup\tstatus\tupdates\tfinal_loss\tbest_loss\t"
                "to_below\tval_final\tval_best\tgrad_ratio\twall%s\n", d->n ? "\talso_differ" : "");
    }
    for (int k = 0; k < set->n; k++) print_row(set, m[k], d, md, out);
    free(m);
    free(d);
    return 0;
}
