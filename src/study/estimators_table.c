/* estimators_table.c — the estimators' relative errors against the exact curvature and their cost,
 * as a Markdown table (study/estimators_table.h; docs/estimators.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "report/plot_internal.h"
#include "study/estimators_table.h"

void est_relerr(const double *est, const double *ref, size_t n, double *scratch, est_err_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(est[i]) && isfinite(ref[i]) && ref[i] != 0.0)
            scratch[k++] = fabs(est[i] - ref[i]) / fabs(ref[i]);
    out->count = k;
    out->median = out->max = NAN;
    if (!k) return;
    gsl_sort(scratch, 1, k);
    out->median = gsl_stats_median_from_sorted_data(scratch, 1, k);
    out->max = scratch[k - 1];
}

double est_spearman(const double *x, const double *y, size_t n, double *scratch, size_t *count)
{
    double *a = scratch, *b = scratch + n, *work = scratch + 2 * n;   // work: 2n
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            a[k] = x[i];
            b[k++] = y[i];
        }
    *count = k;
    return k >= 3 ? gsl_stats_spearman(a, 1, b, 1, k, work) : NAN;
}

double est_hhat_scale(const config_t *cfg)
{
    if (cfg->train.optimizer == OPT_SGD) return 1.0 / (1.0 + cfg->train.momentum);
    return (1.0 - cfg->train.beta1) / (1.0 + cfg->train.beta1);
}

double est_slq_top(const double *nodes, const double *weights, int probes, int iters)
{
    double top = NAN;
    for (size_t k = 0; k < (size_t)probes * iters; k++)
        if (isfinite(nodes[k]) && weights[k] > 0.0 && !(nodes[k] <= top)) top = nodes[k];
    return top;
}

/* The table's comparisons: an estimator's value and its exact reference at a row. */
enum { C_SLQ_H, C_SLQ_P, C_TRACE, C_CRIT_QUAD, C_CRIT_HHAT, C_CRIT_H, C_BAI_HHAT, C_COUNT };

static const char *const WHAT[C_COUNT][2] = {
    {"SLQ: largest node, H", "λ_max(H), Lanczos"},
    {"SLQ: largest node, active P⁻¹H", "λ_max(P⁻¹H) active, Lanczos"},
    {"Hutchinson tr(H)", "Σ of the blocks' Hutchinson traces"},
    {"critical sharpness λ_c", "uᵀHu/gᵀu (λ_c of the local quadratic)"},
    {"critical sharpness λ_c", "λ_max(Ĥ) = (1−β₁)/(1+β₁)·λ_max(P⁻¹H) active"},
    {"critical sharpness λ_c", "λ_max(H)"},
    {"Bai et al.'s λ_grad(Ĥ)", "λ_max(Ĥ), as above"},
};

/* Comparison c at row i of run r: *est and *ref (NaN where the run lacks the column). */
static void pair_at(const plot_run_t *r, int c, size_t i, double *est, double *ref)
{
    const plot_est_t *e = r->est;
    const double s = est_hhat_scale(&r->cfg);
    const size_t w = (size_t)e->probes * e->iters;
    *est = *ref = NAN;
    if ((c == C_SLQ_H || c == C_SLQ_P) && e->probes > 0) {
        const int h = c == C_SLQ_H;
        *est = est_slq_top((h ? e->nodes : e->pnodes) + i * w, (h ? e->weights : e->pweights) + i * w,
                           e->probes, e->iters);
        *ref = h ? e->hmax[i] : e->active[i];
    } else if (c == C_TRACE && e->trace && e->btrace) {
        double sum = 0.0;
        for (size_t b = 0; b < e->blocks; b++)
            if (isfinite(e->btrace[i * e->blocks + b])) sum += e->btrace[i * e->blocks + b];
        *est = e->trace[i];
        *ref = sum;
    } else if (c >= C_CRIT_QUAD && c <= C_CRIT_H && e->crit) {
        *est = e->crit[i];
        *ref = c == C_CRIT_QUAD ? (e->quad ? e->quad[i] : NAN)   // a file may lack the column
             : c == C_CRIT_HHAT ? s * e->active[i] : e->hmax[i];
    } else if (c == C_BAI_HHAT && e->bai) {
        *est = e->bai[i];
        *ref = s * e->active[i];
    }
}

/* The cost of comparison c's estimator in run r (Markdown cell). */
static void cost_text(const plot_run_t *r, int c, double *scratch, char *buf, size_t len)
{
    const plot_est_t *e = r->est;
    const int nv = r->cfg.probe.density_probes, m = e->iters, N = r->cfg.probe.trace_probes;
    if (c == C_SLQ_H || c == C_SLQ_P)
        snprintf(buf, len, "%d probes × %d steps: %d HVPs (%d passes)", nv, m, nv * m, 2 * nv * m);
    else if (c == C_TRACE)
        snprintf(buf, len, "%d probes: %d HVPs (%d passes); the reference %d a block", N, N,
                 2 * N, N);
    else if (c == C_BAI_HHAT)
        snprintf(buf, len, "1 HVP + 1 gradient (3 passes)");
    else {
        size_t k = 0;
        for (size_t i = 0; i < e->n; i++)
            if (isfinite(e->cpasses ? e->cpasses[i] : NAN)) scratch[k++] = e->cpasses[i];
        gsl_sort(scratch, 1, k);
        if (k) snprintf(buf, len, "%.0f–%.0f forward passes (median %.0f) + 1 gradient",
                        scratch[0], scratch[k - 1], gsl_stats_median_from_sorted_data(scratch, 1, k));
        else snprintf(buf, len, "forward passes (not recorded) + 1 gradient");
    }
}

/* The runs of set with estimator columns into m; their count and their rows in total. */
static int table_runs(const plot_set_t *set, int *m, size_t *rows)
{
    int n = 0;
    *rows = 0;
    for (int i = 0; i < set->n; i++)
        if (set->runs[i].est) {
            m[n++] = i;
            *rows += set->runs[i].est->n;
        }
    return n;
}

/* Rows above each verdict's threshold, and those agreeing with the exact one's
 * (λ_max(P⁻¹H)_active over stability_threshold, i.e. λ_max(Ĥ) over 2/η). */
static void print_verdicts(const plot_set_t *set, const int *m, int n, int tsv, FILE *out)
{
    static const char *const NAME[3] = {"λ_max(Ĥ) active > 2/η (exact)", "λ_c > 2/η",
                                        "λ_grad(Ĥ) > 2/η"};
    size_t above[3] = {0}, agree[3] = {0}, rows[3] = {0};
    for (int j = 0; j < n; j++) {
        const plot_run_t *r = &set->runs[m[j]];
        const plot_est_t *e = r->est;
        const double s = est_hhat_scale(&r->cfg);
        for (size_t i = 0; i < e->n; i++) {
            const double two = s * e->threshold[i], ex = s * e->active[i];
            const double v[3] = {ex, e->crit ? e->crit[i] : NAN, e->bai ? e->bai[i] : NAN};
            for (int k = 0; k < 3; k++) {
                if (!isfinite(v[k]) || !isfinite(ex) || !isfinite(two)) continue;
                rows[k]++;
                above[k] += v[k] > two;
                agree[k] += (v[k] > two) == (ex > two);
            }
        }
    }
    fputs(tsv ? "\ncriterion\trows_above\trows\tsame_verdict\n"
              : "\n| criterion | rows above | of rows | same verdict as the exact |\n|---|---|---|---|\n",
          out);
    for (int k = 0; k < 3; k++)
        if (rows[k]) fprintf(out, tsv ? "%s\t%zu\t%zu\t%zu\n" : "| %s | %zu | %zu | %zu |\n", NAME[k],
                             above[k], rows[k], agree[k]);
}

/* Per run: whether λ_c follows the exact curvature over training (Spearman's ρ over its rows,
 * against λ_max(H) and λ_max(Ĥ)) and the range of λ_c/λ_max(H). */
static void print_tracking(const plot_set_t *set, const int *m, int n, int tsv, FILE *out)
{
    fputs(tsv ? "\nrun\trows\tspearman_crit_hmax\tspearman_crit_hhat\tratio_min\tratio_max\n"
              : "\n| run | rows | Spearman ρ(λ_c, λ_max(H)) | ρ(λ_c, λ_max(Ĥ)) | "
                "λ_c/λ_max(H), min–max |\n|---|---|---|---|---|\n", out);
    for (int j = 0; j < n; j++) {
        const plot_run_t *r = &set->runs[m[j]];
        const plot_est_t *e = r->est;
        if (!e->crit) continue;
        double *hh = malloc(e->n * sizeof *hh), *sc = malloc(4 * e->n * sizeof *sc);
        if (!hh || !sc) { free(hh); free(sc); return; }
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < e->n; i++) {
            hh[i] = est_hhat_scale(&r->cfg) * e->active[i];
            const double q = e->crit[i] / e->hmax[i];
            if (isfinite(q)) { lo = fmin(lo, q); hi = fmax(hi, q); }
        }
        size_t k1, k2;
        const double r1 = est_spearman(e->crit, e->hmax, e->n, sc, &k1);
        const double r2 = est_spearman(e->crit, hh, e->n, sc, &k2);
        fprintf(out, tsv ? "%s\t%zu\t%.17g\t%.17g\t%.17g\t%.17g\n" : "| %s | %zu | %.2f | %.2f | %.3g–%.3g |\n",
                r->name, k1, r1, r2, lo, hi);
        free(hh);
        free(sc);
    }
}

int est_table_print(const plot_set_t *set, int tsv, FILE *out)
{
    int *m = malloc((size_t)(set->n ? set->n : 1) * sizeof *m);
    size_t total = 0;
    const int n = m ? table_runs(set, m, &total) : 0;
    double *est = malloc((total + 1) * sizeof *est), *ref = malloc((total + 1) * sizeof *ref),
           *scratch = malloc((total + 1) * sizeof *scratch);
    if (!n || !est || !ref || !scratch) {
        free(m); free(est); free(ref); free(scratch);
        return 0;
    }
    const plot_run_t *r0 = &set->runs[m[0]];
    fputs(tsv ? "estimator\treference\tcost\tmedian_rel_error\tmax_rel_error\trows\n"
              : "| estimator | exact reference | cost per estimate | median rel. error | "
                "max rel. error | rows |\n|---|---|---|---|---|---|\n", out);
    for (int c = 0; c < C_COUNT; c++) {
        size_t k = 0;
        for (int j = 0; j < n; j++)
            for (size_t i = 0; i < set->runs[m[j]].est->n; i++, k++)
                pair_at(&set->runs[m[j]], c, i, &est[k], &ref[k]);
        est_err_t e;
        est_relerr(est, ref, k, scratch, &e);
        if (!e.count) continue;
        char cost[160];
        cost_text(r0, c, scratch, cost, sizeof cost);
        fprintf(out, tsv ? "%s\t%s\t%s\t%.17g\t%.17g\t%zu\n" : "| %s | %s | %s | %.3g | %.3g | %zu |\n",
                WHAT[c][0], WHAT[c][1], cost, e.median, e.max, e.count);
    }
    size_t k = 0;
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < set->runs[m[j]].est->n; i++)
            if (set->runs[m[j]].est->passes) scratch[k++] = set->runs[m[j]].est->passes[i];
    gsl_sort(scratch, 1, k);
    if (!tsv) fprintf(out, "\nThe exact values: %d Lanczos steps each (%d HVPs, %d passes) for λ_max(H), "
            "λ_max(P⁻¹H) and its active value; a whole row, estimators included, took a median "
            "of %.0f passes (curv_passes). %d run%s, %zu rows.\n", r0->cfg.probe.curvature_iters,
            r0->cfg.probe.curvature_iters, 2 * r0->cfg.probe.curvature_iters,
            k ? gsl_stats_median_from_sorted_data(scratch, 1, k) : NAN, n, n > 1 ? "s" : "", total);
    print_verdicts(set, m, n, tsv, out);
    print_tracking(set, m, n, tsv, out);
    free(m); free(est); free(ref); free(scratch);
    return n;
}
