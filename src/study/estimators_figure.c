/* estimators_figure.c — the curvature estimators beside the exact values over training
 * (docs/estimators.md; docs/design.md §10, "Estimators at scale"): the SLQ spectral density of
 * H at a few curvature rows, a panel per run (Ubaru, Chen & Saad 2017; Ghorbani et al. 2019),
 * and the critical sharpness λ_c = 2/η_c (Kalra et al. 2026) against the exact λ_max(H), the
 * exact λ_max(Ĥ) of Adam's preconditioned Hessian and Bai et al. 2025's gradient-direction
 * curvature λ_grad(Ĥ), with 2/η, a panel per run on a log axis. The data: /train's curvature
 * rows (curv_step, hessian_max, precond_max, precond_max_active, stability_threshold,
 * curv_passes, the estimators' columns). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/slq.h"
#include "report/plot_internal.h"
#include "study/estimators_table.h"
#include "study/figures.h"

#define EST_MAX_PANELS 8    /* runs of one figure */
#define EST_MAX_ROWS 5      /* densities drawn per panel */
#define EST_GRID 1500       /* points of a density curve */

/* ------------------------------------------------------------------------- shared */

/* The runs of set with a density (density = 1) or a critical sharpness (0) into m, at most
 * EST_MAX_PANELS; their count. */
static int members(const plot_set_t *set, int density, int *m)
{
    int n = 0;
    for (int i = 0; i < set->n && n < EST_MAX_PANELS; i++) {
        const plot_est_t *e = set->runs[i].est;
        if (e && e->n && (density ? e->probes > 0 : e->crit != NULL)) m[n++] = i;
    }
    return n;
}

/* The title, subtitle lines and grid of a figure of n panels (2 columns past one). */
static void layout(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                   const char *measure, const char *lines, int key_rows, sbuf_t *s,
                   plot_grid_t *g)
{
    char title[500], sub[1200], shared[400];
    plot_title(set, m, n, d, measure, NULL, title, sizeof title);
    plot_shared(d, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    snprintf(sub, sizeof sub, "%s\n%s", shared, lines);
    const int cols = n > 1 ? 2 : 1;
    plot_grid(g, (n + cols - 1) / cols, cols, plot_title_lines(sub), key_rows);
    plot_begin(s, title, sub);
}

/* Panel p: its title (the run's key over d), its labels where the grid's edges are. */
static void panel(sbuf_t *s, const plot_grid_t *g, int p, int n, const plot_diff_t *d,
                  const plot_run_t *r, const char *xlabel, const char *ylabel)
{
    char key[300];
    plot_panel(s, g, p);
    plot_key(d, r, 1, key, sizeof key);
    plot_set(s, "title", key);
    sbuf_printf(s, "set title @F80\n");
    plot_set(s, "xlabel", p + g->cols < n ? "" : xlabel);
    plot_set(s, "ylabel", p % g->cols ? "" : ylabel);
}

/* ------------------------------------------------------------- the density by update */

/* Up to EST_MAX_ROWS rows of e spread over its updates (the first and the last among them)
 * into rows; their count. */
static int pick_rows(const plot_est_t *e, int *rows)
{
    int k = 0;
    const int want = e->n < EST_MAX_ROWS ? (int)e->n : EST_MAX_ROWS;
    for (int j = 0; j < want; j++) {
        const int i = want > 1 ? (int)lround((double)j * (double)(e->n - 1) / (want - 1)) : 0;
        if (!k || rows[k - 1] != i) rows[k++] = i;
    }
    return k;
}

/* The smallest and largest finite node of e's density rows into *lo, *hi. */
static void node_range(const plot_est_t *e, double *lo, double *hi)
{
    const size_t w = (size_t)e->probes * e->iters;
    for (size_t k = 0; k < e->n * w; k++)
        if (isfinite(e->nodes[k]) && e->weights[k] > 0.0) {
            *lo = fmin(*lo, e->nodes[k]);
            *hi = fmax(*hi, e->nodes[k]);
        }
}

/* Block $d<p>_<j>: "t φ(t)" of row i of e broadened by sigma on t (EST_GRID points), φ floored
 * at floor (a log axis); the peak into *top. */
static void density_block(sbuf_t *s, int p, int j, const plot_est_t *e, int i, double sigma,
                          const double *t, double *phi, double floor, double *top)
{
    const size_t w = (size_t)e->probes * e->iters;
    slq_density(e->nodes + i * w, e->weights + i * w, e->probes, e->iters, sigma, t, EST_GRID,
                phi);
    sbuf_printf(s, "$d%d_%d << EOD\n", p, j);
    for (int k = 0; k < EST_GRID; k++) {
        *top = fmax(*top, phi[k]);
        sbuf_printf(s, "%.8g %.8g\n", t[k], fmax(phi[k], floor));
    }
    sbuf_printf(s, "EOD\n");
}

int plot_fig_est_density(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[EST_MAX_PANELS], rows[EST_MAX_PANELS][EST_MAX_ROWS], nr[EST_MAX_PANELS];
    const int n = members(set, 1, m);
    if (!n) return 0;
    snprintf(name, len, "est_density");
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &d);
    double lo = INFINITY, hi = -INFINITY;
    for (int p = 0; p < n; p++) node_range(set->runs[m[p]].est, &lo, &hi);
    if (!(hi >= lo)) { snprintf(name, len, "est_density: no finite node"); return -1; }
    // the run's σ, or 1/300 of the nodes' span where that is wider (a readable curve)
    const double sigma = fmax(set->runs[m[0]].cfg.probe.density_sigma, (hi - lo) / 300.0);
    double *t = malloc(EST_GRID * sizeof *t), *phi = malloc(EST_GRID * sizeof *phi);
    if (!t || !phi) { free(t); free(phi); s->failed = 1; return 1; }
    for (int k = 0; k < EST_GRID; k++)
        t[k] = lo - 4 * sigma + (hi - lo + 8 * sigma) * k / (EST_GRID - 1.0);
    double top = 0.0;
    const double floor = 1e-6;   // of a density normalised to 1: below the key's reach
    for (int p = 0; p < n; p++) {
        nr[p] = pick_rows(set->runs[m[p]].est, rows[p]);
        for (int j = 0; j < nr[p]; j++)
            density_block(s, p, j, set->runs[m[p]].est, rows[p][j], sigma, t, phi, floor, &top);
    }
    free(t);
    free(phi);
    const plot_est_t *e0 = set->runs[m[0]].est;
    sbuf_t keys = {0};
    for (int j = 0; j < nr[0]; j++) {
        char c[8], with[64], text[64];
        palette_ordinal(j, nr[0], c);
        snprintf(with, sizeof with, "lines lc rgb '%s' lw 1.5", c);
        snprintf(text, sizeof text, "update %.0f", e0->step[rows[0][j]]);
        plot_keyentry_text(&keys, with, text);
    }
    char lines[600];
    snprintf(lines, sizeof lines, "stochastic Lanczos quadrature of H on the measurement batch: "
             "%d Rademacher probes × %d Lanczos steps, broadened by σ = %.3g\n"
             "each curve integrates to 1; the largest node estimates λ_{max} (docs/estimators.md)",
             e0->probes, e0->iters, sigma);
    plot_grid_t g;
    const int krows = plot_key_rows(nr[0], 12);
    layout(set, m, n, &d, "Spectral density of the Hessian over the first updates", lines, krows,
           s, &g);
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    plot_range_add(&x, lo - 4 * sigma);
    plot_range_add(&x, hi + 4 * sigma);
    plot_range_add(&y, top * 1e-5);
    plot_range_add(&y, top);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    plot_axis(s, "x", &x, 0, 0.01, NAN, NAN);
    plot_axis(s, "y", &y, 1, 0.04, NAN, NAN);
    for (int p = 0; p < n; p++) {
        panel(s, &g, p, n, &d, &set->runs[m[p]], "eigenvalue of H", "density φ(λ)");
        sbuf_printf(s, "plot ");
        for (int j = 0; j < nr[p]; j++) {
            char c[8];
            palette_ordinal(j, nr[p], c);
            sbuf_printf(s, "%s$d%d_%d using 1:2 with lines lc rgb '%s' lw 1.5 notitle",
                        j ? ", " : "", p, j, c);
        }
        sbuf_printf(s, "\n");
    }
    plot_end(s, &g, krows, &keys);
    sbuf_free(&keys);
    return 1;
}

/* ------------------------------------------------ the critical sharpness over training */

/* The series of the figure: the exact λ_max(H), the exact λ_max(Ĥ) = s·λ_max(P⁻¹H)_active,
 * λ_c, Bai et al.'s λ_grad(Ĥ); then 2/η = s·threshold (optim_bai_diag's s). */
enum { S_HMAX, S_HHAT, S_CRIT, S_BAI, S_TWO, S_COUNT };
static const char *const SERIES[S_COUNT] = {
    "λ_{max}(H), exact (Lanczos)", "λ_{max}(Ĥ) = λ_{max}(P^{−1}H)_{active}·(1−β_1)/(1+β_1), exact",
    "λ_c = 2/η_c, critical sharpness (forward passes)", "λ_{grad}(Ĥ) = g^TĤg/g^Tg (Bai et al.)",
    "2/η"};

/* Series k of e at row i, NaN where not positive (a log axis). */
static double series_at(const plot_est_t *e, double s, int k, size_t i)
{
    const double v = k == S_HMAX ? e->hmax[i] : k == S_HHAT ? s * e->active[i]
                   : k == S_CRIT ? e->crit[i] : k == S_BAI ? (e->bai ? e->bai[i] : NAN)
                   : s * e->threshold[i];
    return isfinite(v) && v > 0 ? v : NAN;
}

/* Block $c<p>: "update v_0 … v_4" of e's rows; x, y widened. */
static void critical_block(sbuf_t *s, int p, const plot_est_t *e, double scale,
                           plot_range_t *x, plot_range_t *y)
{
    sbuf_printf(s, "$c%d << EOD\n", p);
    for (size_t i = 0; i < e->n; i++) {
        sbuf_printf(s, "%.10g", e->step[i]);
        plot_range_add(x, e->step[i]);
        for (int k = 0; k < S_COUNT; k++) {
            const double v = series_at(e, scale, k, i);
            plot_range_add(y, v);
            sbuf_printf(s, isfinite(v) ? " %.10g" : " NaN", v);
        }
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "EOD\n");
}

/* The series' style clause (Okabe–Ito; 2/η black, dashed). */
static void series_style(int k, char *buf, size_t len)
{
    if (k == S_TWO) snprintf(buf, len, "lines lc rgb 'black' dt 2 lw 1.5");
    else snprintf(buf, len, "linespoints lc rgb '%s' lw 1.5 pt %d ps 0.8",
                  palette_qualitative(k), 7 + 2 * k);
}

int plot_fig_est_critical(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[EST_MAX_PANELS];
    const int n = members(set, 0, m);
    if (!n) return 0;
    snprintf(name, len, "est_critical");
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &d);
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    for (int p = 0; p < n; p++)
        critical_block(s, p, set->runs[m[p]].est, est_hhat_scale(&set->runs[m[p]].cfg), &x, &y);
    if (plot_range_empty(&y)) { snprintf(name, len, "est_critical: no positive value"); return -1; }
    sbuf_t keys = {0};
    int longest = 0;
    for (int k = 0; k < S_COUNT; k++) {
        char with[96];
        series_style(k, with, sizeof with);
        sbuf_printf(&keys, ", keyentry with %s title \"%s\"", with, SERIES[k]);
        longest = (int)strlen(SERIES[k]) > longest ? (int)strlen(SERIES[k]) : longest;
    }
    const int krows = plot_key_rows(S_COUNT, longest * 3 / 4);   // UTF-8 and markup count extra
    plot_grid_t g;
    layout(set, m, n, &d, "Critical sharpness against the exact curvature",
           "Ĥ: Adam's preconditioned Hessian with its momentum factor (Bai et al. 2025), whose "
           "stability threshold is 2/η, as λ_c's; P^{−1}H without its floored coordinates\n"
           "λ_c and λ_{grad} from the measurement batch's gradient at each row; values ≤ 0 are "
           "not drawn (log axis; docs/estimators.md)", krows, s, &g);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    plot_axis(s, "x", &x, 0, 0.02, NAN, NAN);
    plot_update_tics(s, &x, 1);
    plot_axis(s, "y", &y, 1, 0.04, NAN, NAN);
    for (int p = 0; p < n; p++) {
        panel(s, &g, p, n, &d, &set->runs[m[p]], "update", "curvature");
        sbuf_printf(s, "plot ");
        for (int k = 0; k < S_COUNT; k++) {
            char with[96];
            series_style(k, with, sizeof with);
            sbuf_printf(s, "%s$c%d using 1:%d with %s notitle", k ? ", " : "", p, k + 2, with);
        }
        sbuf_printf(s, "\n");
    }
    plot_end(s, &g, krows, &keys);
    sbuf_free(&keys);
    return 1;
}
