/* plot_atlas.c — the stability atlas's training grid (docs/design.md §6d): final loss vs
 * learning rate per scheme and depth, and Wortsman et al.'s LR sensitivity, over one seed or
 * several (means and 95 % intervals). The atlas's figures at initialisation are plot_schemes.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "measure/fit.h"

#define ATLAS_MAX PLOT_ATLAS_MAX   /* schemes, depths, learning rates */
#define ATLAS_SEEDS 16   /* seeds of one cell (a sweep's init.seed list); more: no atlas figures */

/* The atlas's grid: schemes × depths × learning rates × warm-up (0 none, 1 on) × seeds, and
 * for each cell the run's final loss (the last validation loss; NaN when diverged or absent)
 * and its loss at initialisation (update 1's; NaN when absent). */
typedef struct {
    int ns, nd, nl, nk;
    char scheme[ATLAS_MAX][32];
    double depth[ATLAS_MAX], lr[ATLAS_MAX], seed[ATLAS_SEEDS];
    double final[ATLAS_MAX][ATLAS_MAX][ATLAS_MAX][2][ATLAS_SEEDS];   /* [s][d][l][w][k] */
    double loss0[ATLAS_MAX][ATLAS_MAX][ATLAS_MAX][2][ATLAS_SEEDS];
    int diverged[ATLAS_MAX][ATLAS_MAX][ATLAS_MAX][2][ATLAS_SEEDS];
    int runs;
} atlas_t;

/* A training run's final loss: its last validation loss, else the mean of its last tenth of
 * training losses; NaN when it diverged. */
static double final_loss(const plot_run_t *r)
{
    if (!isnan(r->diverged_at)) return NAN;
    if (r->nevals > 0 && isfinite(r->val_loss[r->nevals - 1])) return r->val_loss[r->nevals - 1];
    size_t n = r->nsteps / 10 ? r->nsteps / 10 : 1;
    double s = 0.0;
    for (size_t t = r->nsteps - n; t < r->nsteps; t++) s += r->loss[t];
    return s / (double)n;
}

/* Collect the training runs of set into the grid; 1 when it is an atlas (≥ 2 schemes and
 * ≥ 2 learning rates). */
static int atlas_collect(const plot_set_t *set, atlas_t *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (r->nsteps == 0) continue;
        char name[32];
        scheme_name(&r->cfg, name, sizeof name);
        plot_intern_name(a->scheme, &a->ns, name);
        plot_intern_value(a->depth, &a->nd, r->cfg.model.layers);
        plot_intern_value(a->lr, &a->nl, r->cfg.train.lr);
        if (plot_intern_value(a->seed, &a->nk, r->cfg.init.seed) < 0 || a->nk > ATLAS_SEEDS) return 0;
    }
    if (a->ns < 2 || a->nl < 2) return 0;
    plot_sort_schemes(a->scheme, NULL, a->ns);   // the loop below finds each scheme by name
    qsort(a->depth, (size_t)a->nd, sizeof(double), plot_cmp_double);
    qsort(a->lr, (size_t)a->nl, sizeof(double), plot_cmp_double);
    for (int s = 0; s < a->ns; s++)
        for (int d = 0; d < a->nd; d++)
            for (int l = 0; l < a->nl; l++)
                for (int w = 0; w < 2; w++)
                    for (int k = 0; k < ATLAS_SEEDS; k++)
                        a->final[s][d][l][w][k] = a->loss0[s][d][l][w][k] = NAN;
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (r->nsteps == 0) continue;
        char name[32];
        scheme_name(&r->cfg, name, sizeof name);
        const int s = plot_intern_name(a->scheme, &a->ns, name);
        const int d = plot_intern_value(a->depth, &a->nd, r->cfg.model.layers);
        const int l = plot_intern_value(a->lr, &a->nl, r->cfg.train.lr);
        const int w = r->cfg.train.warmup > 1;
        const int k = plot_intern_value(a->seed, &a->nk, r->cfg.init.seed);
        if (s < 0 || d < 0 || l < 0 || k < 0) continue;
        a->final[s][d][l][w][k] = final_loss(r);
        a->loss0[s][d][l][w][k] = r->loss[0];
        a->diverged[s][d][l][w][k] = !isnan(r->diverged_at);
        a->runs++;
    }
    // an lr axis needs a scheme run at two rates or more: Post-LN and Pre-LN at one rate each
    // (the paper's §4 settings, Fig. 4 and 5) are a comparison, not a sensitivity
    for (int s = 0; s < a->ns; s++)
        for (int d = 0; d < a->nd; d++)
            for (int w = 0; w < 2; w++) {
                int rates = 0;
                for (int l = 0; l < a->nl; l++) {
                    int any = 0;
                    for (int k = 0; k < a->nk; k++) any |= !isnan(a->loss0[s][d][l][w][k]);
                    rates += any;
                }
                if (rates >= 2) return 1;
            }
    return 0;
}

/* Wortsman et al. 2023's LR sensitivity of one scheme, depth and warm-up: the mean over the
 * learning rates of min(loss(lr), loss_0) − min_lr loss(lr), a diverged run counting as
 * loss_0. NaN when no run of the row finished. */
double plot_lr_sensitivity(const double *final, const double *loss0, int n)
{
    double best = INFINITY, sum = 0.0;
    int count = 0;
    for (int l = 0; l < n; l++) if (isfinite(final[l]) && final[l] < best) best = final[l];
    if (!isfinite(best)) return NAN;
    for (int l = 0; l < n; l++) {
        if (isnan(loss0[l])) continue;
        const double x = isfinite(final[l]) ? fmin(final[l], loss0[l]) : loss0[l];
        sum += x - best;
        count++;
    }
    return count ? sum / count : NAN;
}

/* One point of the atlas over its seeds: the mean final loss and its 95 % half-width (NaN with
 * one seed), NaN when a seed diverged there or no seed ran (*diverged: some seed diverged; the
 * tables' rule, scripts/atlas_table.py). One seed: that run's final loss, exactly. */
static double atlas_point(const atlas_t *a, int sc, int d, int l, int w, double *half, int *diverged)
{
    const double *f = a->final[sc][d][l][w];
    int div = 0, ran = 0;
    for (int k = 0; k < a->nk; k++) {
        div |= a->diverged[sc][d][l][w][k];
        ran += !isnan(a->loss0[sc][d][l][w][k]);
    }
    *diverged = div;
    *half = NAN;
    if (a->nk == 1) return f[0];
    if (div || !ran) return NAN;
    double mean;
    size_t n;
    fit_mean_ci(f, 1, (size_t)a->nk, &mean, half, &n);
    return mean;
}

/* The LR sensitivity of one scheme, depth and warm-up (plot_lr_sensitivity) over the seeds:
 * the mean of each seed's own, its 95 % half-width in *half (NaN with one seed), and in *best
 * the best of the lrs' mean final losses (atlas_point). */
static double atlas_sensitivity(const atlas_t *a, int sc, int d, int w, double *half, double *best)
{
    double v[ATLAS_SEEDS];
    for (int k = 0; k < a->nk; k++) {
        double f[ATLAS_MAX], z[ATLAS_MAX];
        for (int l = 0; l < a->nl; l++) {
            f[l] = a->final[sc][d][l][w][k];
            z[l] = a->loss0[sc][d][l][w][k];
        }
        v[k] = plot_lr_sensitivity(f, z, a->nl);
    }
    *best = INFINITY;   // the best loss beside it: a scheme that trains at no lr is insensitive too
    for (int l = 0; l < a->nl; l++) {
        double h;
        int div;
        const double m = atlas_point(a, sc, d, l, w, &h, &div);
        if (isfinite(m)) *best = fmin(*best, m);
    }
    *half = NAN;
    if (a->nk == 1) return v[0];
    double mean;
    size_t n;
    fit_mean_ci(v, 1, (size_t)a->nk, &mean, half, &n);
    return mean;
}

/* pre + "mean of 3 seeds, bars: 95 % CI" for a title when the atlas has several seeds, else "". */
static void atlas_seeds_note(const atlas_t *a, const char *pre, const char *what, char *buf,
                             size_t len)
{
    if (a->nk > 1) snprintf(buf, len, "%smean of %d seeds, %s: 95 %% CI", pre, a->nk, what);
    else buf[0] = '\0';
}

int plot_fig_atlas_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    atlas_t *a = malloc(sizeof *a);
    if (!a || !atlas_collect(set, a)) { free(a); return 0; }
    snprintf(name, len, "atlas_lr");
    double top = -INFINITY;   // diverged runs are marked at the top edge, above every finite loss
    for (int sc = 0; sc < a->ns; sc++)
        for (int d = 0; d < a->nd; d++)
            for (int l = 0; l < a->nl; l++)
                for (int w = 0; w < 2; w++) {
                    double h;
                    int div;
                    const double m = atlas_point(a, sc, d, l, w, &h, &div);
                    if (isfinite(m)) top = fmax(top, isfinite(h) ? m + h : m);
                }
    top = isfinite(top) ? top + 0.1 : 1.0;
    int marks[ATLAS_MAX][ATLAS_MAX][2] = {{{0}}};   // a × block has rows (gnuplot warns of empty ones)
    for (int sc = 0; sc < a->ns; sc++)
        for (int d = 0; d < a->nd; d++)
            for (int w = 0; w < 2; w++) {
                double m[ATLAS_MAX], h[ATLAS_MAX];
                int div[ATLAS_MAX];
                for (int l = 0; l < a->nl; l++) {
                    m[l] = atlas_point(a, sc, d, l, w, &h[l], &div[l]);
                    marks[sc][d][w] |= div[l];
                }
                sbuf_printf(s, "$f%d_%d_%d << EOD\n", sc, d, w);
                for (int l = 0; l < a->nl; l++)   // rows: lr, loss (, loss − CI, loss + CI)
                    if (isfinite(m[l]) && a->nk > 1)
                        sbuf_printf(s, "%g %.10g %.10g %.10g\n", a->lr[l], m[l],
                                    m[l] - (isfinite(h[l]) ? h[l] : 0.0),
                                    m[l] + (isfinite(h[l]) ? h[l] : 0.0));
                    else if (isfinite(m[l]))
                        sbuf_printf(s, "%g %.10g\n", a->lr[l], m[l]);
                sbuf_printf(s, "EOD\n$x%d_%d_%d << EOD\n", sc, d, w);
                for (int l = 0; l < a->nl; l++)   // diverged: × at the top edge
                    if (div[l]) sbuf_printf(s, "%g %.10g\n", a->lr[l], top);
                sbuf_printf(s, "EOD\n");
            }
    const config_t *c = NULL;
    int warm = 0;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].nsteps) continue;
        if (!c) c = &set->runs[i].cfg;
        if (set->runs[i].cfg.train.warmup > warm) warm = set->runs[i].cfg.train.warmup;
    }
    char data[64], seeds[64];
    plot_data_text(c, data, sizeof data);
    atlas_seeds_note(a, "; ", "bars", seeds, sizeof seeds);
    sbuf_printf(s, "set multiplot layout 1,%d title \"Final loss vs learning rate per scheme "
                   "(the stability atlas)\\n{/*0.8 d = %d, %s, %d updates, %s; solid: %d warm-up "
                   "updates, dashed: none; ×: diverged%s (drawn at the top edge)%s}\"\n",
                a->nd, c->model.d_model, data, c->train.steps,
                config_optimizer_name(c->train.optimizer), warm, a->nk > 1 ? " in a seed" : "",
                seeds);
    sbuf_printf(s, "set grid\nset logscale x\nset xlabel 'peak learning rate'\n"
                   "set ylabel 'final validation loss'\nset format x '10^{%%L}'\n"
                   "set xrange [%g:%g]\nset yrange [*:%g]\n"
                   "set bmargin at screen 0.27\nset key at screen 0.5, 0.01 center bottom "
                   "horizontal box opaque width 1 samplen 2 font ',10'\n",
                a->lr[0] / 1.5, a->lr[a->nl - 1] * 1.5, top + 0.03);
    const char *with = a->nk > 1 ? "using 1:2:3:4 with yerrorlines" : "using 1:2 with linespoints";
    for (int d = 0; d < a->nd; d++) {   // one legend below the panels: the first panel's
        if (d == 1) sbuf_printf(s, "unset key\n");
        sbuf_printf(s, "set title 'L = %g'\nplot ", a->depth[d]);
        for (int sc = 0; sc < a->ns; sc++) {
            const char *col = plot_scheme_color(a->scheme[sc], sc);
            char label[64];
            plot_escape_name(a->scheme[sc], label, sizeof label);
            sbuf_printf(s, "%s$f%d_%d_1 %s lw 1.5 pt 7 ps 0.8 lc rgb '%s' "
                           "title '%s', $f%d_%d_0 %s dt 2 pt 6 ps 0.8 "
                           "lc rgb '%s' notitle", sc ? ", " : "", sc, d, with, col, label, sc, d,
                        with, col);
            for (int w = 1; w >= 0; w--)
                if (marks[sc][d][w])
                    sbuf_printf(s, ", $x%d_%d_%d using 1:2 with points pt 2 ps 1.6 lc rgb '%s' "
                                   "notitle", sc, d, w, col);
        }
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "unset multiplot\n");
    free(a);
    return 1;
}

int plot_fig_atlas_sensitivity(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    atlas_t *a = malloc(sizeof *a);
    if (!a || !atlas_collect(set, a)) { free(a); return 0; }
    snprintf(name, len, "atlas_sensitivity");
    // cells: x = depth × warm-up (warm-up first), y = scheme (top to bottom as listed);
    // columns x, y, sensitivity, best loss, its label ("0.12" or "0.12 ± 0.03")
    sbuf_printf(s, "$h << EOD\n");
    double vmax = 0.0;
    for (int sc = 0; sc < a->ns; sc++)
        for (int d = 0; d < a->nd; d++)
            for (int w = 1; w >= 0; w--) {
                double half, best;
                const double v = atlas_sensitivity(a, sc, d, w, &half, &best);
                const int x = 2 * d + (1 - w), y = a->ns - 1 - sc;
                if (isfinite(v) && a->nk > 1) {
                    sbuf_printf(s, "%d %d %.6g %.6g \"%.2f ± %.2f\"\n", x, y, v, best, v,
                                isfinite(half) ? half : 0.0);
                    vmax = fmax(vmax, v);
                } else if (isfinite(v)) {
                    sbuf_printf(s, "%d %d %.6g %.6g\n", x, y, v, best);
                    vmax = fmax(vmax, v);
                } else {
                    sbuf_printf(s, "%d %d NaN NaN\n", x, y);
                }
            }
    sbuf_printf(s, "EOD\n");
    char seeds[64];
    atlas_seeds_note(a, "}\\n{/*0.8 ", "±", seeds, sizeof seeds);
    sbuf_printf(s, "set title \"LR sensitivity per scheme and depth (Wortsman et al. 2023)\\n{/*0.8 "
                   "mean over %d learning rates of min(loss, loss_0) − the best loss; 0 = the "
                   "learning rate does not matter; a diverged run counts as its initial loss; "
                   "below it, the best final loss%s}\"\n",
                a->nl, seeds);
    sbuf_printf(s, "set xtics (");
    for (int d = 0; d < a->nd; d++)
        sbuf_printf(s, "%s\"L = %g\\nwarm-up\" %d, \"L = %g\\nnone\" %d", d ? ", " : "",
                    a->depth[d], 2 * d, a->depth[d], 2 * d + 1);
    sbuf_printf(s, ") font ',11'\nset ytics (");
    for (int sc = 0; sc < a->ns; sc++) {
        char label[64];
        plot_escape_name(a->scheme[sc], label, sizeof label);
        sbuf_printf(s, "%s'%s' %d", sc ? ", " : "", label, a->ns - 1 - sc);
    }
    sbuf_printf(s, ")\nset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nunset key\n"
                   "set palette defined (0 '#f7fbff', 1 '#9ecae1', 2 '#4292c6')\n"
                   "set cbrange [0:%g]\nset cblabel 'LR sensitivity (nats)'\n"
                   "set bmargin 5\n"
                   "plot $h using 1:2:3 with image, $h using 1:2:%s "
                   "with labels font ',%d' offset 0,0.5 tc rgb 'black', $h using 1:2:"
                   "(sprintf('best %%.2f', $4)) with labels font ',9' offset 0,-0.6 "
                   "tc rgb '#555555'\n",
                2 * a->nd - 0.5, a->ns - 0.5, vmax > 0 ? vmax : 1.0,
                a->nk > 1 ? "5" : "(sprintf('%.2f', $3))", a->nk > 1 ? 10 : 12);
    free(a);
    return 1;
}
