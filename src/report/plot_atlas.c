/* plot_atlas.c — the stability atlas (docs/design.md §6d): final loss vs learning rate per
 * scheme and depth, Wortsman et al.'s LR sensitivity, every scheme's gradient per layer at
 * initialisation side by side, and Liu et al.'s output change vs depth. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "measure/fit.h"

#define ATLAS_MAX 32     /* schemes, depths, learning rates */
#define ATLAS_SEEDS 16   /* seeds of one cell (a sweep's init.seed list); more: no atlas figures */

/* Index of name in names[*n], appended when absent (up to ATLAS_MAX). */
static int intern(char names[][32], int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(names[i], name)) return i;
    if (*n == ATLAS_MAX) return -1;
    snprintf(names[*n], 32, "%s", name);
    return (*n)++;
}

/* Index of v in vals[*n] (sorted insert not needed: we sort after), appended when absent. */
static int intern_value(double *vals, int *n, double v)
{
    for (int i = 0; i < *n; i++)
        if (vals[i] == v) return i;
    if (*n == ATLAS_MAX) return -1;
    vals[*n] = v;
    return (*n)++;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

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

/* Sort names[0..n) (and m with them, unless NULL) into the atlas's order (scheme_rank: the
 * scheme table's rows, names of no row after them): a stable insertion sort, n is at most a
 * dozen. */
static void sort_schemes(char names[][32], int *m, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && scheme_rank(names[b]) < scheme_rank(names[b - 1]); b--) {
            char t[32];
            memcpy(t, names[b], sizeof t);
            memcpy(names[b], names[b - 1], sizeof t);
            memcpy(names[b - 1], t, sizeof t);
            if (m) {
                const int k = m[b];
                m[b] = m[b - 1];
                m[b - 1] = k;
            }
        }
}

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
        intern(a->scheme, &a->ns, name);
        intern_value(a->depth, &a->nd, r->cfg.model.layers);
        intern_value(a->lr, &a->nl, r->cfg.train.lr);
        if (intern_value(a->seed, &a->nk, r->cfg.init.seed) < 0 || a->nk > ATLAS_SEEDS) return 0;
    }
    if (a->ns < 2 || a->nl < 2) return 0;
    sort_schemes(a->scheme, NULL, a->ns);   // the loop below finds each scheme by name
    qsort(a->depth, (size_t)a->nd, sizeof(double), cmp_double);
    qsort(a->lr, (size_t)a->nl, sizeof(double), cmp_double);
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
        const int s = intern(a->scheme, &a->ns, name);
        const int d = intern_value(a->depth, &a->nd, r->cfg.model.layers);
        const int l = intern_value(a->lr, &a->nl, r->cfg.train.lr);
        const int w = r->cfg.train.warmup > 1;
        const int k = intern_value(a->seed, &a->nk, r->cfg.init.seed);
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

/* A scheme's colour, the same in every atlas figure: its row's (config/scheme.c); a name of no
 * row takes the rows' colours in turn by its index i in the figure. */
static const char *scheme_color(const char *name, int i)
{
    const scheme_t *s = scheme_by_name(name);
    return s ? s->color : SCHEMES[i % SCHEME_COUNT].color;
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
    for (int sc = 0; sc < a->ns; sc++)
        for (int d = 0; d < a->nd; d++)
            for (int w = 0; w < 2; w++) {
                double m[ATLAS_MAX], h[ATLAS_MAX];
                int div[ATLAS_MAX];
                for (int l = 0; l < a->nl; l++) m[l] = atlas_point(a, sc, d, l, w, &h[l], &div[l]);
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
            const char *col = scheme_color(a->scheme[sc], sc);
            char label[64];
            plot_escape_name(a->scheme[sc], label, sizeof label);
            sbuf_printf(s, "%s$f%d_%d_1 %s lw 1.5 pt 7 ps 0.8 lc rgb '%s' "
                           "title '%s', $f%d_%d_0 %s dt 2 pt 6 ps 0.8 "
                           "lc rgb '%s' notitle", sc ? ", " : "", sc, d, with, col, label, sc, d,
                        with, col);
            for (int w = 1; w >= 0; w--) {   // the × only where there are some (gnuplot warns
                int any = 0;                  // about an empty block)
                for (int l = 0; l < a->nl; l++) {
                    double h;
                    int div;
                    atlas_point(a, sc, d, l, w, &h, &div);
                    any |= div;
                }
                if (any)
                    sbuf_printf(s, ", $x%d_%d_%d using 1:2 with points pt 2 ps 1.6 lc rgb '%s' "
                                   "notitle", sc, d, w, col);
            }
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

/* The single-stack probe runs of ≥ 3 schemes at one depth (the most common; ties: the
 * deeper), one run per scheme, into m (in the atlas's order of schemes). Returns the count. */
static int pick_scheme_probes(const plot_set_t *set, int *m, char names[][32])
{
    double depth[ATLAS_MAX];
    int count[ATLAS_MAX] = {0}, nd = 0, best = -1;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].probe || set->runs[i].cfg.model.arch != ARCH_LM) continue;
        const int d = intern_value(depth, &nd, set->runs[i].cfg.model.layers);
        if (d >= 0) count[d]++;
    }
    for (int d = 0; d < nd; d++)
        if (best < 0 || count[d] > count[best] || (count[d] == count[best] && depth[d] > depth[best]))
            best = d;
    int n = 0, ns = 0;
    for (int i = 0; best >= 0 && i < set->n && n < ATLAS_MAX; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || r->cfg.model.arch != ARCH_LM || r->cfg.model.layers != depth[best])
            continue;
        char name[32];
        scheme_name(&r->cfg, name, sizeof name);
        const int before = ns;
        if (intern(names, &ns, name) == before) m[n++] = i;   // the first run of each scheme
    }
    sort_schemes(names, m, n);
    return n >= 3 ? n : 0;   // two schemes are Fig. 3(a,b)'s own figure
}

/* Whether every seed's gradient of parameter column k is exactly zero in every layer (ReZero's
 * branches at initialisation: α = 0 stops the gradient of everything inside them). */
static int grad_all_zero(const plot_run_t *r, int k)
{
    const size_t n = (size_t)r->probe->S * (size_t)r->probe->ax.L * (size_t)r->probe->ax.nparam;
    for (size_t i = 0; k >= 0 && i < n; i++)
        if ((int)(i % (size_t)r->probe->ax.nparam) == k && r->probe->grad_fro[i] != 0.0) return 0;
    return k >= 0;
}

int plot_fig_atlas_grad(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[ATLAS_MAX];
    char names[ATLAS_MAX][32];
    const int n = pick_scheme_probes(set, m, names);
    if (!n) return 0;
    snprintf(name, len, "atlas_grad");
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        for (int p = 0; p < 2; p++) {
            char block[32];
            snprintf(block, sizeof block, "g%d_%d", i, p);
            plot_block_per_layer(s, block, r->probe->grad_fro, r->probe->S, r->probe->ax.L,
                                 r->probe->ax.nparam, plot_param_col(r, p ? "w2" : "w1"), 1.0);
        }
    }
    const plot_run_t *r0 = &set->runs[m[0]];
    char sub[256];
    plot_subtitle(r0, sub, sizeof sub);
    const int cols = n > 8 ? 4 : 3, rows = (n + cols - 1) / cols;
    sbuf_printf(s, "set multiplot layout %d,%d title \"Expected gradient of the FFN weights per "
                   "layer at initialisation, every scheme\\n{/*0.8 %s}\"\n", rows, cols, sub);
    sbuf_printf(s, "set grid\nset key top left font ',9' box opaque\nset xlabel 'layer' font ',10'\n"
                   "set ylabel '‖E ∂L/∂W‖_F' font ',10'\nset tics font ',9'\nset yrange [0:*]\n");
    for (int i = 0; i < n; i++) {
        char label[64];
        plot_escape_name(names[i], label, sizeof label);
        const plot_run_t *r = &set->runs[m[i]];
        const int zero = grad_all_zero(r, plot_param_col(r, "w1")) &&
                         grad_all_zero(r, plot_param_col(r, "w2"));
        if (zero)   // an explicit range (gnuplot cannot autoscale zeros) and what they mean
            sbuf_printf(s, "set yrange [0:1]\nset label 1 'exactly 0 at initialisation' at graph "
                           "0.5,0.5 center font ',9'\n");
        sbuf_printf(s, "set title '%s' font ',12'\nplot $g%d_0 using 1:2:3 with yerrorlines pt 7 "
                       "ps 0.6 lc rgb '%s' title 'W^1', $g%d_1 using 1:2:3 with yerrorlines pt 5 "
                       "ps 0.6 lc rgb '%s' title 'W^2'\n", label, i, PLOT_COLORS[0], i,
                    PLOT_COLORS[1]);
        if (zero) sbuf_printf(s, "unset label 1\nset yrange [0:*]\n");
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

int plot_fig_output_change(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    char names[ATLAS_MAX][32];
    int ns = 0, any = 0;
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || !r->probe->output_change || isnan(r->probe->output_change[0])) continue;
        char nm[32];
        scheme_name(&r->cfg, nm, sizeof nm);
        intern(names, &ns, nm);
        any++;
    }
    if (ns < 2 || any < 3 * ns) return 0;   // at least 3 depths a scheme on average
    sort_schemes(names, NULL, ns);
    snprintf(name, len, "output_change");
    double slope[ATLAS_MAX], ci[ATLAS_MAX], lo = INFINITY, hi = 0.0;
    for (int sc = 0; sc < ns; sc++) {
        double xs[512], ys[512], rows[ATLAS_MAX][3];   // rows: depth, mean, CI half-width
        size_t np = 0;
        int nr = 0;
        for (int i = 0; i < set->n && nr < ATLAS_MAX; i++) {
            const plot_run_t *r = &set->runs[i];
            char nm[32];
            if (!r->probe || !r->probe->output_change) continue;
            scheme_name(&r->cfg, nm, sizeof nm);
            if (strcmp(nm, names[sc])) continue;
            double mean, half;
            size_t cnt;
            fit_mean_ci(r->probe->output_change, 1, (size_t)r->probe->S, &mean, &half, &cnt);
            if (!cnt) continue;
            rows[nr][0] = r->cfg.model.layers;
            rows[nr][1] = mean;
            rows[nr++][2] = isnan(half) ? 0.0 : half;
            lo = fmin(lo, r->cfg.model.layers);
            hi = fmax(hi, r->cfg.model.layers);
            for (int k = 0; k < r->probe->S && np < 512; k++) {
                xs[np] = r->cfg.model.layers;
                ys[np++] = r->probe->output_change[k];
            }
        }
        qsort(rows, (size_t)nr, sizeof rows[0], cmp_double);   // by depth (a merged file
        sbuf_printf(s, "$c%d << EOD\n", sc);                   // lists runs by name)
        for (int k = 0; k < nr; k++)
            sbuf_printf(s, "%g %.10g %.10g\n", rows[k][0], rows[k][1], rows[k][2]);
        sbuf_printf(s, "EOD\n");
        double A;
        fit_power_law(xs, ys, np, &slope[sc], &ci[sc], &A);
    }
    const config_t *c = NULL;
    for (int i = 0; i < set->n && !c; i++) if (set->runs[i].probe) c = &set->runs[i].cfg;
    const int encdec = c->model.arch == ARCH_ENCDEC;
    sbuf_printf(s, "set title \"Output change at initialisation vs depth (Liu et al. 2020)\\n{/*0.8 "
                   "E_{token} ‖F(x,W) − F(x,W*)‖, W* = W − 10^{-4}·sign(N(0,1)), F the %s, d = %d; "
                   "legend: fitted exponent ± 95%% CI (½: an O(N) squared change)}\"\n",
                encdec ? "decoder's output" : "last hidden state", c->model.d_model);
    sbuf_printf(s, "set grid\nset logscale xy\nset xlabel '%s'\nset ylabel "
                   "'E_{token} ‖ΔF‖'\nset key outside right top font ',10' box opaque\n"
                   "set xrange [%g:%g]\nset xtics (", encdec ? "encoder layers = decoder layers N"
                   : "layers L", lo / 1.15, hi * 1.15);
    for (int i = 0, first = 1; i < set->n; i++) {   // a tic at every depth measured
        const plot_run_t *r = &set->runs[i];
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= set->runs[j].cfg.model.layers == r->cfg.model.layers;
        if (!r->probe || seen) continue;
        sbuf_printf(s, "%s%d", first ? "" : ", ", r->cfg.model.layers);
        first = 0;
    }
    sbuf_printf(s, ")\nplot ");
    for (int sc = 0; sc < ns; sc++) {
        char label[64];
        plot_escape_name(names[sc], label, sizeof label);
        sbuf_printf(s, "%s$c%d using 1:2:3 with yerrorlines pt 7 ps 0.8 lc rgb '%s' "
                       "title '%s: %s^{%.2f ± %.2f}'", sc ? ", " : "", sc, scheme_color(names[sc], sc),
                    label, encdec ? "N" : "L", slope[sc], isnan(ci[sc]) ? 0.0 : ci[sc]);
    }
    sbuf_printf(s, "\n");
    return 1;
}

/* DeepNet's Fig. 1 (Wang et al. 2022): the model update ‖F(x, θ_t) − F(x, θ_0)‖ on a fixed
 * batch during the first updates, one line per training run that measured it; × marks a run
 * that diverged (at its last finite value). */
int plot_fig_model_update(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES], n = 0, more = 0;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].nupdates) continue;
        if (n < PLOT_MAX_SERIES) m[n++] = i;
        else more = 1;
    }
    if (!n || more) return 0;   // an atlas-sized set has its own figures
    snprintf(name, len, "model_update");
    for (int a = 1; a < n; a++)   // by scheme (the atlas's order), the deepest first
        for (int b = a; b > 0; b--) {
            const config_t *x = &set->runs[m[b]].cfg, *y = &set->runs[m[b - 1]].cfg;
            char nx[32], ny[32];
            scheme_name(x, nx, sizeof nx);
            scheme_name(y, ny, sizeof ny);
            const int rx = scheme_rank(nx), ry = scheme_rank(ny);
            if (rx > ry || (rx == ry && x->model.layers <= y->model.layers)) break;
            const int k = m[b];
            m[b] = m[b - 1];
            m[b - 1] = k;
        }
    int same_lr = 1;   // lr and warm-up in the legend only when they vary
    for (int i = 1; i < n; i++)
        same_lr &= set->runs[m[i]].cfg.train.lr == set->runs[m[0]].cfg.train.lr &&
                   set->runs[m[i]].cfg.train.warmup == set->runs[m[0]].cfg.train.warmup;
    int diverged[PLOT_MAX_SERIES] = {0};
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        double lx = NAN, ly = NAN;
        sbuf_printf(s, "$u%d << EOD\n", i);
        for (size_t k = 0; k < r->nupdates; k++)
            if (isfinite(r->model_update[k]) && r->model_update[k] > 0) {
                sbuf_printf(s, "%.10g %.10g\n", r->update_step[k], r->model_update[k]);
                lx = r->update_step[k];
                ly = r->model_update[k];
            }
        sbuf_printf(s, "EOD\n");
        if (!isnan(r->diverged_at) && !isnan(lx)) {
            sbuf_printf(s, "$ux%d << EOD\n%.10g %.10g\nEOD\n", i, lx, ly);
            diverged[i] = 1;
        }
    }
    const config_t *c = &set->runs[m[0]].cfg;
    char data[64], lrw[64] = "";
    plot_data_text(c, data, sizeof data);
    if (same_lr)
        snprintf(lrw, sizeof lrw, ", lr %g, %s", c->train.lr,
                 c->train.warmup > 1 ? "with warm-up" : "no warm-up");
    sbuf_printf(s, "set title \"Model update during training (DeepNet, Wang et al. 2022)\\n{/*0.8 "
                   "E_{token} ‖F(x,θ_t) − F(x,θ_0)‖ on a fixed batch, F the last hidden state; "
                   "d = %d, %s, %s%s; × = diverged}\"\n", c->model.d_model, data,
                config_optimizer_name(c->train.optimizer), lrw);
    sbuf_printf(s, "set grid\nset logscale xy\nset xlabel 'update t'\nset ylabel "
                   "'E_{token} ‖F(x,θ_t) − F(x,θ_0)‖'\nset key outside right top font ',10' box "
                   "opaque\nplot ");
    // a colour per scheme, a dash pattern per depth (deepest solid)
    int maxL = 0;
    for (int i = 0; i < n; i++)
        if (set->runs[m[i]].cfg.model.layers > maxL) maxL = set->runs[m[i]].cfg.model.layers;
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        char scheme[32], label[160], esc[256];
        scheme_name(&r->cfg, scheme, sizeof scheme);
        if (same_lr) snprintf(label, sizeof label, "%s, L = %d", scheme, r->cfg.model.layers);
        else snprintf(label, sizeof label, "%s, L = %d, lr %g, warm-up %d", scheme,
                      r->cfg.model.layers, r->cfg.train.lr, r->cfg.train.warmup);
        plot_escape_name(label, esc, sizeof esc);
        const char *col = scheme_color(scheme, i);
        sbuf_printf(s, "%s$u%d using 1:2 with lines lw 2 dt %d lc rgb '%s' title '%s%s'",
                    i ? ", " : "", i, r->cfg.model.layers == maxL ? 1 : 2, col, esc,
                    diverged[i] ? " (diverged)" : "");
        if (diverged[i])
            sbuf_printf(s, ", $ux%d using 1:2 with points pt 2 ps 3 lw 3 lc rgb '%s' notitle", i,
                        col);
    }
    sbuf_printf(s, "\n");
    return 1;
}
