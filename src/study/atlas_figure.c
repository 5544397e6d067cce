/* atlas_figure.c — the stability atlas's training grid (docs/design.md §6d): final loss vs
 * learning rate per scheme and depth, and Wortsman et al.'s LR sensitivity, over one seed or
 * several (means and 95 % intervals). A cell is a scheme, a depth, a learning rate and a
 * variant: every other config key that differs between the runs (warm-up 20 and 50 are two
 * variants, float32 and float64 two more; report/plot_label.h), so no run hides another
 * (docs/design.md §6j). The atlas's figures at initialisation are atlas_schemes_figure.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/fit.h"
#include "report/plot_internal.h"
#include "report/runs.h"
#include "study/atlas.h"
#include "study/figures.h"

#define ATLAS_MAX PLOT_ATLAS_MAX   /* schemes, depths, learning rates */
#define ATLAS_VARIANTS 8           /* variants (warm-up, precision, …); more: no atlas figures */
#define ATLAS_SEEDS 16   /* seeds of one cell (a sweep's init.seed list); more: no atlas figures */

/* The grid: schemes × depths × learning rates × variants × seeds; per slot the run's row of the
 * table of runs (report/runs.h): its final loss (NaN when diverged or absent), its loss at
 * update 1, whether it diverged and whether it trains (the one rule, docs/design.md §6d). */
typedef struct {
    int ns, nd, nl, nv, nk;
    char scheme[ATLAS_MAX][32];
    double depth[ATLAS_MAX], lr[ATLAS_MAX], seed[ATLAS_SEEDS];
    char variant[ATLAS_VARIANTS][200];
    double vorder[ATLAS_VARIANTS];     /* the variant's warm-up: the order (longest first) */
    plot_diff_t vitems;                /* the items a variant is made of */
    double *final, *loss0;   /* [s][d][l][v][k] */
    int *diverged, *trains, *ran;
    int runs;
} atlas_t;

#define IX(a, s, d, l, v, k) \
    (((((size_t)(s) * (a)->nd + (d)) * (a)->nl + (l)) * (a)->nv + (v)) * (a)->nk + (k))

static void atlas_free(atlas_t *a)
{
    if (!a) return;
    free(a->final); free(a->loss0); free(a->trains); free(a->diverged); free(a->ran);
    free(a);
}

/* Index of run r's variant, added when new; −1 when ATLAS_VARIANTS are taken. */
static int variant_of(atlas_t *a, const plot_run_t *r)
{
    char v[200];
    plot_key(&a->vitems, r, 0, v, sizeof v);
    if (!a->vitems.n) v[0] = '\0';
    for (int i = 0; i < a->nv; i++)
        if (!strcmp(a->variant[i], v)) return i;
    if (a->nv == ATLAS_VARIANTS) return -1;
    snprintf(a->variant[a->nv], sizeof a->variant[0], "%s", v);
    a->vorder[a->nv] = r->cfg.train.warmup > 1 ? r->cfg.train.warmup : 0;
    return a->nv++;
}

/* The axes of the grid from the training runs m[0..n); 0 when they do not fit. */
static int atlas_axes(const plot_set_t *set, const int *m, int n, atlas_t *a)
{
    plot_diff(set, m, n, 0, &a->vitems);
    static const char *const AXES[] = {"scheme", "model.layers", "model.dec_layers", "train.lr"};
    for (int k = 0; k < 4; k++) plot_diff_drop(&a->vitems, AXES[k]);
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        char name[32];
        scheme_name(&r->cfg, name, sizeof name);
        if (plot_intern_name(a->scheme, &a->ns, name) < 0 ||
            plot_intern_value(a->depth, &a->nd, r->cfg.model.layers) < 0 ||
            plot_intern_value(a->lr, &a->nl, r->cfg.train.lr) < 0 ||
            plot_intern_value(a->seed, &a->nk, (double)r->cfg.init.seed) < 0 ||
            a->nk > ATLAS_SEEDS || variant_of(a, r) < 0)
            return 0;
    }
    if (a->ns < 2 || a->nl < 2) return 0;
    plot_sort_schemes(a->scheme, NULL, a->ns);   // the loop below finds each scheme by name
    qsort(a->depth, (size_t)a->nd, sizeof(double), plot_cmp_double);
    qsort(a->lr, (size_t)a->nl, sizeof(double), plot_cmp_double);
    for (int x = 1; x < a->nv; x++)   // longest warm-up first, then as met
        for (int y = x; y > 0 && a->vorder[y] > a->vorder[y - 1]; y--) {
            char t[200];
            memcpy(t, a->variant[y], sizeof t);
            memcpy(a->variant[y], a->variant[y - 1], sizeof t);
            memcpy(a->variant[y - 1], t, sizeof t);
            const double o = a->vorder[y];
            a->vorder[y] = a->vorder[y - 1];
            a->vorder[y - 1] = o;
        }
    return 1;
}

/* Collect the training runs of set into the grid; 1 when it is an atlas (≥ 2 schemes and a
 * scheme run at ≥ 2 learning rates), 0 when not, −1 when two runs fall in one slot. */
static int atlas_collect(const plot_set_t *set, atlas_t *a)
{
    memset(a, 0, sizeof *a);
    int *m = malloc((size_t)(set->n ? set->n : 1) * sizeof *m), n = 0;
    for (int i = 0; m && i < set->n; i++)
        if (set->runs[i].nsteps > 0) m[n++] = i;
    if (!m || !n || !atlas_axes(set, m, n, a)) { free(m); return 0; }
    const size_t N = (size_t)a->ns * a->nd * a->nl * a->nv * a->nk;
    a->final = malloc(N * sizeof *a->final);
    a->loss0 = malloc(N * sizeof *a->loss0);
    a->trains = calloc(N, sizeof *a->trains);
    a->diverged = calloc(N, sizeof *a->diverged);
    a->ran = calloc(N, sizeof *a->ran);
    if (!a->final || !a->loss0 || !a->trains || !a->diverged || !a->ran) { free(m); return 0; }
    for (size_t i = 0; i < N; i++) a->final[i] = a->loss0[i] = NAN;
    int rc = 1;
    for (int i = 0; i < n && rc == 1; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        char name[32];
        scheme_name(&r->cfg, name, sizeof name);
        const int s = plot_intern_name(a->scheme, &a->ns, name);
        const int d = plot_intern_value(a->depth, &a->nd, r->cfg.model.layers);
        const int l = plot_intern_value(a->lr, &a->nl, r->cfg.train.lr);
        const int v = variant_of(a, r);
        const int k = plot_intern_value(a->seed, &a->nk, (double)r->cfg.init.seed);
        const size_t x = IX(a, s, d, l, v, k);
        if (a->ran[x]) { rc = -1; break; }   // one run would hide the other
        runs_row_t row;
        runs_row(set, m[i], &row);
        a->final[x] = row.final_loss;
        a->loss0[x] = row.loss_init;
        a->trains[x] = row.trains;
        a->diverged[x] = row.diverged;
        a->ran[x] = 1;
        a->runs++;
    }
    free(m);
    if (rc < 0) return -1;
    // an lr axis needs a scheme run at two rates or more: Post-LN and Pre-LN at one rate each
    // (the paper's §4 settings, Fig. 4 and 5) are a comparison, not a sensitivity
    for (int s = 0; s < a->ns; s++)
        for (int d = 0; d < a->nd; d++)
            for (int v = 0; v < a->nv; v++) {
                int rates = 0;
                for (int l = 0; l < a->nl; l++) {
                    int any = 0;
                    for (int k = 0; k < a->nk; k++) any |= a->ran[IX(a, s, d, l, v, k)];
                    rates += any;
                }
                if (rates >= 2) return 1;
            }
    return 0;
}

/* One point of the atlas over its seeds: the mean final loss and its 95 % half-width (NaN with
 * one seed), NaN when a seed diverged there or no seed ran (*diverged: some seed diverged; the
 * tables' rule, study/atlas.c). One seed: that run's final loss, exactly. */
static double atlas_point(const atlas_t *a, int sc, int d, int l, int v, double *half, int *diverged)
{
    double f[ATLAS_SEEDS];
    int div = 0, ran = 0;
    for (int k = 0; k < a->nk; k++) {
        const size_t x = IX(a, sc, d, l, v, k);
        f[k] = a->final[x];
        div |= a->diverged[x];
        ran += a->ran[x];
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

/* What a cell of the sensitivity map is: trained (a colour: some run trains, runs_outcome),
 * stuck (no learning rate took a run below its plateau), diverged (every run did), or empty
 * (no run). */
enum { CELL_TRAINED, CELL_STUCK, CELL_DIVERGED, CELL_EMPTY };

static int cell_kind(const atlas_t *a, int sc, int d, int v)
{
    int ran = 0, div = 0, trained = 0;
    for (int l = 0; l < a->nl; l++)
        for (int k = 0; k < a->nk; k++) {
            const size_t x = IX(a, sc, d, l, v, k);
            ran += a->ran[x];
            div += a->diverged[x];
            trained += a->trains[x];
        }
    return !ran ? CELL_EMPTY : div == ran ? CELL_DIVERGED : trained ? CELL_TRAINED : CELL_STUCK;
}

/* The LR sensitivity of one scheme, depth and variant (plot_lr_sensitivity) over the seeds:
 * the mean of each seed's own, its 95 % half-width in *half (NaN with one seed), and in *best
 * the best of the lrs' mean final losses (atlas_point). */
static double atlas_sensitivity(const atlas_t *a, int sc, int d, int v, double *half, double *best)
{
    double val[ATLAS_SEEDS];
    for (int k = 0; k < a->nk; k++) {
        double f[ATLAS_MAX], z[ATLAS_MAX];
        for (int l = 0; l < a->nl; l++) {
            f[l] = a->final[IX(a, sc, d, l, v, k)];
            z[l] = a->loss0[IX(a, sc, d, l, v, k)];
        }
        val[k] = plot_lr_sensitivity(f, z, a->nl);
    }
    *best = INFINITY;
    for (int l = 0; l < a->nl; l++) {
        double h;
        int div;
        const double m = atlas_point(a, sc, d, l, v, &h, &div);
        if (isfinite(m)) *best = fmin(*best, m);
    }
    *half = NAN;
    if (a->nk == 1) return val[0];
    double mean;
    size_t n;
    fit_mean_ci(val, 1, (size_t)a->nk, &mean, half, &n);
    return mean;
}

/* The atlas's title: measure, or with the sweep file's title when its runs share one. */
static void atlas_title(const plot_set_t *set, const char *measure, char *buf, size_t len)
{
    int *m = malloc((size_t)(set->n ? set->n : 1) * sizeof *m), n = 0;
    for (int i = 0; m && i < set->n; i++)
        if (set->runs[i].nsteps > 0) m[n++] = i;
    const plot_diff_t none = {0};
    plot_title(set, m, m ? n : 0, &none, measure, NULL, buf, len);
    free(m);
}

/* What the atlas's runs share and its seeds, for a subtitle. */
static void atlas_subtitle(const plot_set_t *set, const atlas_t *a, const char *what, char *buf,
                           size_t len)
{
    int m[1] = {0};
    for (int i = 0; i < set->n; i++)
        if (set->runs[i].nsteps > 0) { m[0] = i; break; }
    plot_diff_t d = a->vitems;
    static const char *const AXES[] = {"scheme", "model.layers", "train.lr"};
    for (int k = 0; k < 3; k++)
        if (d.n < PLOT_DIFF_MAX) snprintf(d.item[d.n++], sizeof d.item[0], "%s", AXES[k]);
    char shared[400];
    plot_shared(&d, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    if (a->nk > 1)
        snprintf(buf, len, "%s; mean of %d seeds, %s: 95 %% CI", shared, a->nk, what);
    else snprintf(buf, len, "%s", shared);
}

/* Blocks $f<scheme>_<depth>_<variant> ("lr mean lo hi" over the seeds) and $x… (the rates where
 * a seed diverged) of every curve of the atlas; marks[(sc·nd + d)·nv + v] set where an $x block
 * has rows; x, y the values drawn. Returns whether a run diverged. */
static int lr_blocks(sbuf_t *s, const atlas_t *a, char *marks, plot_range_t *x, plot_range_t *y)
{
    int any_div = 0;
    plot_range_init(y);
    plot_range_init(x);
    for (int sc = 0; sc < a->ns; sc++)
        for (int d = 0; d < a->nd; d++)
            for (int v = 0; v < a->nv; v++) {
                double mean[ATLAS_MAX], h[ATLAS_MAX];
                int div[ATLAS_MAX];
                sbuf_printf(s, "$f%d_%d_%d << EOD\n", sc, d, v);
                for (int l = 0; l < a->nl; l++) {
                    mean[l] = atlas_point(a, sc, d, l, v, &h[l], &div[l]);
                    any_div |= div[l];
                    marks[((size_t)sc * a->nd + d) * a->nv + v] |= (char)div[l];
                    if (!isfinite(mean[l])) continue;
                    const double hw = isfinite(h[l]) ? h[l] : 0.0;   // rows: lr, loss, ± CI
                    sbuf_printf(s, "%g %.10g %.10g %.10g\n", a->lr[l], mean[l], mean[l] - hw,
                                mean[l] + hw);
                    plot_range_add(y, mean[l] - hw);
                    plot_range_add(y, mean[l] + hw);
                    plot_range_add(x, a->lr[l]);
                }
                sbuf_printf(s, "EOD\n$x%d_%d_%d << EOD\n", sc, d, v);
                for (int l = 0; l < a->nl; l++)   // diverged: × at the top edge
                    if (div[l]) sbuf_printf(s, "%g\n", a->lr[l]);
                sbuf_printf(s, "EOD\n");
            }
    return any_div;
}

/* The text runs' unigram plateau (NaN: none), drawn dotted. */
static double lr_plateau(const plot_set_t *set)
{
    double plateau = NAN;
    for (int i = 0; i < set->n; i++)
        if (set->runs[i].nsteps > 0 && isfinite(set->runs[i].unigram))
            plateau = set->runs[i].unigram;
    return plateau;
}

/* The key: a line per scheme in its colour and marker, and the diverged ×. Returns its rows. */
static int lr_keys(sbuf_t *keys, const atlas_t *a, int any_div)
{
    for (int sc = 0; sc < a->ns; sc++) {
        plot_style_t st = {.dt = 1, .lw = 1.5, .pt = palette_scheme_point(a->scheme[sc], sc)};
        snprintf(st.color, sizeof st.color, "%s", palette_scheme(a->scheme[sc], sc));
        snprintf(st.key, sizeof st.key, "%s", a->scheme[sc]);
        plot_keyentry(keys, &st, "linespoints");
    }
    if (any_div) plot_keyentry_text(keys, "points pt 2 ps 1.6 lc rgb 'black'", "diverged");
    return plot_key_rows(a->ns + any_div, 12);
}

/* Panel k of grid g: depth d and variant v, each scheme's final loss against the rate with its
 * interval, its diverged rates as ×s at the top (y = top) where marks says it has any. */
static void lr_panel(sbuf_t *s, const atlas_t *a, const plot_grid_t *g, int k, int d, int v,
                     const char *marks, double plateau, double top)
{
    plot_panel(s, g, k);
    char t[300], esc[300];
    snprintf(t, sizeof t, "L = %g%s%s", a->depth[d], a->variant[v][0] ? ", " : "", a->variant[v]);
    plot_enh(t, esc, sizeof esc);
    plot_set(s, "title", esc);
    sbuf_printf(s, "set title @F90\n%s\n%s\n",
                k % g->cols == 0 ? "set ylabel 'final validation loss' @F80" : "unset ylabel",
                k / g->cols == g->rows - 1 ? "set xlabel 'peak learning rate' @F80"
                                           : "unset xlabel");
    if (isfinite(plateau))
        sbuf_printf(s, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g "
                       "nohead dt 3 lc rgb 'gray40'\n", plateau, plateau);
    sbuf_printf(s, "plot 1/0 notitle");
    for (int sc = 0; sc < a->ns; sc++) {
        const char *col = palette_scheme(a->scheme[sc], sc);
        const int pt = palette_scheme_point(a->scheme[sc], sc);
        sbuf_printf(s, ", $f%d_%d_%d using 1:2:3:4 with yerrorlines lw 1.5 pt %d ps 0.9 "
                       "lc rgb '%s' notitle", sc, d, v, pt, col);
        if (marks[((size_t)sc * a->nd + d) * a->nv + v])
            sbuf_printf(s, ", $x%d_%d_%d using 1:(%.10g) with points pt 2 ps 1.6 lc rgb "
                           "'%s' notitle", sc, d, v, top, col);
    }
    sbuf_printf(s, "\n");
}

int plot_fig_atlas_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    atlas_t *a = malloc(sizeof *a);
    const int got = a ? atlas_collect(set, a) : 0;
    if (got <= 0) {
        atlas_free(a);
        if (got < 0) snprintf(name, len, "atlas_lr: two runs in one cell");
        return got;
    }
    snprintf(name, len, "atlas_lr");
    plot_range_t y, x;
    char *marks = calloc((size_t)a->ns * a->nd * a->nv, 1);   // which × blocks have rows
    if (!marks) { atlas_free(a); return 0; }
    const int any_div = lr_blocks(s, a, marks, &x, &y);
    for (int l = 0; l < a->nl; l++) plot_range_add(&x, a->lr[l]);
    if (plot_range_empty(&y)) plot_range_add(&y, 0.0);   // every run diverged: the ×s only
    const double plateau = lr_plateau(set);   // the text runs' unigram plateau, dotted
    if (isfinite(plateau)) plot_range_add(&y, plateau);
    const double top = y.hi + 0.08 * (y.hi - y.lo > 0 ? y.hi - y.lo : 1.0);   // the ×s' row
    plot_range_add(&y, top);
    char title[400], sub[700], extra[200];
    atlas_title(set, "Final loss vs learning rate per scheme (the stability atlas)", title,
                sizeof title);
    atlas_subtitle(set, a, "bars", sub, sizeof sub);
    snprintf(extra, sizeof extra, "\na panel per depth%s%s%s", a->nv > 1 ? " and variant" : "",
             any_div ? "; ×: diverged (drawn at the top)" : "",
             isfinite(plateau) ? "; dotted: the unigram plateau" : "");
    snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s", extra);
    sbuf_t keys = {0};
    const int rows = lr_keys(&keys, a, any_div);
    const int prow = a->nv < 4 ? a->nv : 4;   // panel rows: a variant each (at most 4 shown)
    const int one = a->nd == 1;   // one depth: the variants side by side
    plot_grid_t g;
    plot_grid(&g, one ? 1 : prow, one ? prow : a->nd, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    plot_axis(s, "x", &x, 1, 0.08, NAN, NAN);
    plot_axis(s, "y", &y, 0, 0.05, NAN, NAN);
    sbuf_printf(s, "set xtics (");   // a tic at every rate run
    for (int l = 0; l < a->nl; l++) sbuf_printf(s, "%s%g", l ? ", " : "", a->lr[l]);
    sbuf_printf(s, ")\n");
    for (int v = 0; v < prow; v++)
        for (int d = 0; d < a->nd; d++)
            lr_panel(s, a, &g, one ? v : v * a->nd + d, d, v, marks, plateau, top);
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    free(marks);
    atlas_free(a);
    return 1;
}

/* Block $h of the sensitivity map: "x y sensitivity best label colour best-colour" per cell
 * (best-colour: the "best" line's, fainter than the label's but on the same side of the cell's
 * brightness), x = depth × variant, y = scheme (top to bottom as listed); a stuck, diverged or
 * empty cell has NaN (not coloured: the grey behind shows) and says so. Returns the colour
 * scale's top. */
static double sensitivity_cells(sbuf_t *s, const atlas_t *a)
{
    plot_range_t v;
    plot_range_init(&v);
    plot_range_add(&v, 0.0);
    for (int pass = 0; pass < 2; pass++) {   // the scale first, then the cells on it
        if (pass) sbuf_printf(s, "$h << EOD\n");
        for (int sc = 0; sc < a->ns; sc++)
            for (int d = 0; d < a->nd; d++)
                for (int w = 0; w < a->nv; w++) {
                    double half, best;
                    const double x = atlas_sensitivity(a, sc, d, w, &half, &best);
                    const int kind = cell_kind(a, sc, d, w);
                    if (!pass) {
                        if (kind == CELL_TRAINED) plot_range_add(&v, x);
                        continue;
                    }
                    const int cx = d * a->nv + w, cy = a->ns - 1 - sc;
                    if (!isfinite(best)) best = NAN;
                    if (kind == CELL_TRAINED && isfinite(x)) {
                        const int white = palette_text_white(x / (v.hi > 0 ? v.hi : 1.0));
                        char lab[64];
                        if (a->nk > 1) snprintf(lab, sizeof lab, "%.2f ± %.2f", x, isfinite(half) ? half : 0.0);
                        else snprintf(lab, sizeof lab, "%.2f", x);
                        sbuf_printf(s, "%d %d %.6g %.6g \"%s\" %d %d\n", cx, cy, x, best, lab,
                                    white ? 0xffffff : 0x000000, white ? 0xd9d9d9 : 0x404040);
                    } else {
                        static const char *const WHY[] = {"", "stuck", "diverged", "–"};
                        sbuf_printf(s, "%d %d NaN %.6g \"%s\" %d %d\n", cx, cy, best, WHY[kind],
                                    0x333333, 0x404040);
                    }
                }
        if (pass) sbuf_printf(s, "EOD\n");
    }
    return v.hi > 0 ? v.hi : 1.0;
}

int plot_fig_atlas_sensitivity(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    atlas_t *a = malloc(sizeof *a);
    const int got = a ? atlas_collect(set, a) : 0;
    if (got <= 0) {
        atlas_free(a);
        if (got < 0) snprintf(name, len, "atlas_sensitivity: two runs in one cell");
        return got;
    }
    snprintf(name, len, "atlas_sensitivity");
    const double vmax = sensitivity_cells(s, a);
    char title[400], sub[900];
    atlas_title(set, "LR sensitivity per scheme and depth (Wortsman et al. 2023)", title,
                sizeof title);
    atlas_subtitle(set, a, "±", sub, sizeof sub);
    snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "\nmean over %d learning rates of "
             "min(loss, loss_0) − the best loss (0: the rate does not matter; a diverged run "
             "counts as loss_0); under it, the best final loss\ngrey: stuck (no rate trained "
             "below the plateau) or diverged (every run): never robust", a->nl);
    const int nx = a->nd * a->nv;
    plot_grid_t g;
    plot_grid(&g, 1, 1, plot_title_lines(sub), 0);
    size_t longest = 0;   // the scheme labels left of the map ("normformer+rmsnorm")
    for (int sc = 0; sc < a->ns; sc++)
        if (strlen(a->scheme[sc]) > longest) longest = strlen(a->scheme[sc]);
    g.width = 0.84;
    g.left = fmax(0.11, 0.02 + 0.0088 * (double)longest);
    g.below = a->nv > 1 ? 0.1 : 0.08;
    g.bottom = 0.0;
    plot_begin(s, title, sub);
    plot_panel(s, &g, 0);
    sbuf_printf(s, "set xtics (");
    for (int d = 0; d < a->nd; d++)
        for (int w = 0; w < a->nv; w++) {
            char t[300], esc[340];
            plot_enh(a->variant[w], t, sizeof t);
            snprintf(esc, sizeof esc, "L = %g\n%s", a->depth[d], t);
            sbuf_printf(s, "%s\"", d || w ? ", " : "");
            for (const char *c = esc; *c; c++) {
                if (*c == '\n') sbuf_printf(s, "\\n");
                else if (*c == '\\' || *c == '"') sbuf_printf(s, "\\%c", *c);
                else sbuf_printf(s, "%c", *c);
            }
            sbuf_printf(s, "\" %d", d * a->nv + w);
        }
    sbuf_printf(s, ") @F70 scale 0\nset ytics (");
    for (int sc = 0; sc < a->ns; sc++) {
        char label[64];
        plot_escape_name(a->scheme[sc], label, sizeof label);
        sbuf_printf(s, "%s'%s' %d", sc ? ", " : "", label, a->ns - 1 - sc);
    }
    sbuf_printf(s, ") scale 0\nset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nunset key\n", nx - 0.5,
                a->ns - 0.5);
    palette_heat(s, "LR sensitivity (nats)", 0);
    sbuf_printf(s, "set cbrange [0:%g]\nset colorbox user origin screen 0.875, screen %.4f size "
                   "screen 0.02, screen %.4f\n", vmax, g.bottom + g.below,
                g.top - g.above - g.bottom - g.below);
    sbuf_printf(s, "set object 1 rectangle from graph 0, graph 0 to graph 1, graph 1 behind "
                   "fc rgb '#d9d9d9' fs pattern 2 border lc rgb '#bdbdbd'\n"
                   "plot $h using 1:2:3 with image, $h using 1:2:5:6 with labels @F%d offset 0,0.5 "
                   "tc rgb variable, $h using 1:2:(sprintf('best %%.2f', $4)):7 with labels @F70 "
                   "offset 0,-0.6 tc rgb variable\n", a->nk > 1 || nx > 8 ? 70 : 80);
    sbuf_printf(s, "unset multiplot\n");
    atlas_free(a);
    return 1;
}
