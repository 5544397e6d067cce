/* plot_curvature.c — the curvature's figures (docs/design.md §10, docs/curvature.md): the
 * curvature lens on training (the active η·λ_max(P⁻¹H) over Adam's threshold against the
 * update, a line at 1: Cohen et al. 2021, 2022; Kalra & Barkeshli 2024), λ_max(H) at
 * initialisation against depth per scheme, and the per-block sharpness as a layer × update heat
 * map (viridis, log colour bar, as the gradient's in study/dynamics_figure.c). The data: /train's
 * curvature rows (curv_step, hessian_max, precond_max_active, stability_threshold,
 * hessian_block_max and precond_block_max [row][layer + 1][kind]) and /probe's hessian_max. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/scheme.h"
#include "io/h5io.h"
#include "report/plot_internal.h"

#define CURV_MAX_RUNS 256   /* runs of a lens or depth figure (the indicator sweep: 144) */
#define CURV_MAX_PANELS 16  /* a lens panel per scheme when one panel cannot tell the runs apart */
#define CURV_MAX_BLOCK_RUNS 4

/* ------------------------------------------------------------------------- loading */

void plot_curv_load(h5io_file_t *f, const char *prefix, plot_run_t *r)
{
    size_t n, d1, d2, k;
    double *step = h5io_read_train(f, prefix, "curv_step", &n, &d1, &d2);
    if (!step || !n) { free(step); return; }
    plot_curv_t *c = calloc(1, sizeof *c);
    if (!c) { free(step); return; }
    c->step = step;
    c->n = n;
    double **col[3] = {&c->hessian_max, &c->active, &c->threshold};
    static const char *const NAME[3] = {"hessian_max", "precond_max_active", "stability_threshold"};
    for (int j = 0; j < 3; j++) {   // a live run's columns grow one after another: common rows
        *col[j] = h5io_read_train(f, prefix, NAME[j], &k, &d1, &d2);
        if (!*col[j]) c->n = 0;
        else if (k < c->n) c->n = k;
    }
    double **blk[2] = {&c->hblock, &c->pblock};
    static const char *const BNAME[2] = {"hessian_block_max", "precond_block_max"};
    for (int j = 0; j < 2; j++) {
        *blk[j] = h5io_read_train(f, prefix, BNAME[j], &k, &d1, &d2);
        if (*blk[j] && (k < c->n || d1 < 2 || (c->rows && (size_t)c->rows != d1))) {
            free(*blk[j]);   // fewer rows than the rest, or no layer row: no blocks
            *blk[j] = NULL;
        }
        if (*blk[j]) { c->rows = (int)d1; c->kinds = (int)d2; }
    }
    r->curv = c;
}

void plot_curv_free(plot_curv_t *c)
{
    if (!c) return;
    free(c->step); free(c->hessian_max); free(c->active); free(c->threshold);
    free(c->hblock); free(c->pblock);
    free(c);
}

/* Row k's active ratio η·λ_max(P⁻¹H)_active / (2(1 + β₁)/(1 − β₁)) = precond_max_active over
 * stability_threshold (which is 2(1 + β₁)/((1 − β₁)η), η the next update's lr: §10); NaN when
 * either is not finite or the ratio is not positive (a log axis). */
static double curv_ratio(const plot_curv_t *c, size_t k)
{
    const double v = c->active[k] / c->threshold[k];
    return isfinite(v) && v > 0 ? v : NAN;
}

/* λ_max(H) at initialisation of run r into v[0..): the update-0 row of /train, else every seed
 * of /probe; returns the count. */
static int init_values(const plot_run_t *r, double *v, int max)
{
    const plot_curv_t *c = r->curv;
    if (c && c->n && c->step[0] == 0 && isfinite(c->hessian_max[0])) {
        v[0] = c->hessian_max[0];
        return 1;
    }
    int n = 0;
    for (int s = 0; r->probe && r->probe->hessian_max && s < r->probe->S && n < max; s++)
        if (isfinite(r->probe->hessian_max[s])) v[n++] = r->probe->hessian_max[s];
    return n;
}

/* Whether run a comes before run b: by the scheme table's order, then by each ordered item of
 * d (lr, warm-up, depth) — the key's order. */
static int run_before(const plot_set_t *set, int a, int b, const plot_diff_t *d)
{
    char x[32], y[32];
    scheme_name(&set->runs[a].cfg, x, sizeof x);
    scheme_name(&set->runs[b].cfg, y, sizeof y);
    if (scheme_rank(x) != scheme_rank(y)) return scheme_rank(x) < scheme_rank(y);
    for (int k = 0; k < d->n; k++) {
        if (!plot_item_ordered(d->item[k])) continue;
        const double u = plot_item_value(&set->runs[a], d->item[k]),
                     v = plot_item_value(&set->runs[b], d->item[k]);
        if (u != v) return u < v;
    }
    return 0;
}

/* Sort m[0..n) by run_before (a stable insertion sort). */
static void sort_runs(const plot_set_t *set, int *m, int n, const plot_diff_t *d)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && run_before(set, m[b], m[b - 1], d); b--) {
            const int t = m[b];
            m[b] = m[b - 1];
            m[b - 1] = t;
        }
}

/* -------------------------------------------------------------------- the curvature lens */

/* The runs with at least two finite ratios into m; their count (0 past max). */
static int lens_members(const plot_set_t *set, int *m, int max)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) {
        const plot_curv_t *c = set->runs[i].curv;
        size_t finite = 0;
        for (size_t k = 0; c && k < c->n; k++) finite += isfinite(curv_ratio(c, k));
        if (finite < 2) continue;
        if (n == max) return 0;
        m[n++] = i;
    }
    return n;
}

/* Block $c<i>: "update ratio" of run r's finite rows; x, y widened. */
static void lens_block(sbuf_t *s, int i, const plot_run_t *r, plot_range_t *x, plot_range_t *y)
{
    const plot_curv_t *c = r->curv;
    sbuf_printf(s, "$c%d << EOD\n", i);
    for (size_t k = 0; k < c->n; k++) {
        const double v = curv_ratio(c, k);
        if (!isfinite(v)) continue;
        sbuf_printf(s, "%.10g %.10g\n", c->step[k], v);
        plot_range_add(x, c->step[k]);
        plot_range_add(y, v);
    }
    sbuf_printf(s, "EOD\n");
}

/* Panels of the lens: one (np = 1) when the runs' styles tell them apart or only the scheme
 * does not differ (then a colour per curve, plot_styles_apart); else a panel per scheme with
 * the styles of what else differs. of[i] the panel of run i, st[i] its style, key[]
 * the indices (into m) of one run per distinct style. Returns the panels, 0 when none works. */
static int lens_panels(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                       int *of, plot_style_t *st, char panel[][64], int *key, int *nkey)
{
    int rep[CURV_MAX_RUNS], grp[CURV_MAX_RUNS];
    plot_diff_t by = *d;
    int np = 1;
    if ((n > PLOT_MAX_SERIES || !plot_styles(set, m, n, d, st)) && plot_diff_has(d, "scheme")) {
        plot_diff_drop(&by, "scheme");
        np = 0;
        for (int i = 0; i < n; i++) {
            char name[64];
            plot_item_text(&set->runs[m[i]], "scheme", 0, name, sizeof name);
            int p = 0;
            while (p < np && strcmp(panel[p], name)) p++;
            if (p == CURV_MAX_PANELS) return 0;
            if (p == np) snprintf(panel[np++], 64, "%s", name);
            of[i] = p;
        }
    } else {
        for (int i = 0; i < n; i++) of[i] = 0;
        panel[0][0] = '\0';
    }
    const int ng = plot_group_by(set, m, n, &by, grp, rep, PLOT_MAX_SERIES + 1);
    if (ng > PLOT_MAX_SERIES) return 0;
    int reps[PLOT_MAX_SERIES];
    plot_style_t gs[PLOT_MAX_SERIES];
    for (int g = 0; g < ng; g++) reps[g] = m[rep[g]];
    plot_styles_apart(set, reps, ng, &by, gs);
    for (int i = 0; i < n; i++) st[i] = gs[grp[i]];
    for (int g = 0; g < ng; g++) key[g] = rep[g];
    *nkey = ng;
    return np;
}

/* The lens's key: with a panel per scheme, the colour item and the dashes keyed apart when
 * that is shorter (plot_keys_factored), each dash also a marker (a dash alone is lost between
 * the points of a 20-update line); else an entry per style (key[0..nk) into m). */
static int lens_key(const plot_set_t *set, const int *m, int n, const plot_diff_t *d, int np,
                    plot_style_t *st, const int *key, int nk, sbuf_t *keys)
{
    static const int PT[] = {7, 5, 9, 11, 13};   // circle, square, triangles, diamond
    int rep[PLOT_MAX_SERIES], dts[PLOT_MAX_SERIES], nd = 0;
    plot_style_t ks[PLOT_MAX_SERIES];
    for (int k = 0; k < nk; k++) {
        rep[k] = m[key[k]];
        ks[k] = st[key[k]];
        int j = 0;
        while (j < nd && dts[j] != ks[k].dt) j++;
        if (j == nd) dts[nd++] = ks[k].dt;
        ks[k].pt = PT[j % 5];
    }
    plot_diff_t by = *d;   // the panels say the scheme
    plot_diff_drop(&by, "scheme");
    const int nf = np > 1 ? plot_keys_factored(set, rep, nk, &by, ks, keys) : 0;
    if (nf) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < nd; j++)
                if (st[i].dt == dts[j]) st[i].pt = PT[j % 5];
        return nf;
    }
    for (int k = 0; k < nk; k++) plot_keyentry(keys, &st[key[k]], "linespoints");
    return nk;
}

/* The lens's title: "Fig. 2 through the curvature lens" when the runs are Fig. 2's set. */
static void lens_title(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                       char *title, size_t len)
{
    const char *paper = plot_paper_figure(set, m, n, d, PLOT_KIND_TRAIN);
    char measure[200];
    if (paper) snprintf(measure, sizeof measure, "%s through the curvature lens: active "
                        "sharpness over the threshold", paper);
    else snprintf(measure, sizeof measure, "Active preconditioned sharpness over the threshold");
    plot_title(set, m, n, d, measure, NULL, title, len);
}

int plot_fig_curv_lens(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[CURV_MAX_RUNS], of[CURV_MAX_RUNS], key[PLOT_MAX_SERIES], nk = 0;
    const int n = lens_members(set, m, CURV_MAX_RUNS);
    if (!n) return 0;
    snprintf(name, len, "curv_lens");
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &d);
    sort_runs(set, m, n, &d);
    plot_style_t *st = malloc((size_t)n * sizeof *st);
    char (*panel)[64] = malloc(CURV_MAX_PANELS * sizeof *panel);
    const int np = st && panel ? lens_panels(set, m, n, &d, of, st, panel, key, &nk) : 0;
    if (!np) {
        free(st);
        free(panel);
        return PLOT_TOO_MANY(name, len, "curv_lens", n);
    }
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    plot_range_add(&y, 1.0);   // the threshold is always in view
    for (int i = 0; i < n; i++) lens_block(s, i, &set->runs[m[i]], &x, &y);
    char title[500], sub[900], shared[400];
    lens_title(set, m, n, &d, title, sizeof title);
    plot_shared(&d, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    snprintf(sub, sizeof sub, "%s\nη·λ_{max}(P^{−1}H) on the coordinates Adam has measured "
             "(floor τ = %g) over 2(1+β_1)/(1−β_1), η the next update's lr\nabove 1 a step is "
             "unstable by the quadratic model (docs/curvature.md)%s", shared, set->runs[m[0]].cfg.probe.curvature_floor,
             np > 1 ? "; a panel per scheme" : "");
    sbuf_t keys = {0};
    const int nkeys = lens_key(set, m, n, &d, np, st, key, nk, &keys);
    plot_keyentry_text(&keys, "lines lc rgb 'black' dt 2 lw 1.5", "stability threshold (ratio 1)");
    int longest = plot_styles_longest(st, n);
    longest = longest > 30 ? longest : 30;
    const int rows = plot_key_rows(nkeys + 1, longest);
    const int cols = np <= 3 ? np : np <= 8 ? (np + 1) / 2 : 4, prow = (np + cols - 1) / cols;
    plot_grid_t g;
    plot_grid(&g, prow, cols, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\nset xlabel 'update' @F80\n");
    plot_axis(s, "x", &x, 0, 0.02, NAN, NAN);
    plot_update_tics(s, &x, 1);
    plot_axis(s, "y", &y, 1, 0.06, NAN, NAN);
    for (int p = 0; p < np; p++) {
        plot_panel(s, &g, p);
        if (np > 1) {
            char t[160];
            plot_enh(panel[p], t, sizeof t);
            plot_set(s, "title", t);
            sbuf_printf(s, "set title @F80\n");
        }
        plot_set(s, "xlabel", p + cols < np ? "" : "update");   // under a column's last panel
        plot_set(s, "ylabel", p % cols ? "" : prow > 1 ? "active ratio" // the subtitle says of what
                 : "η·λ_{max}(P^{−1}H)_{active} / (2(1+β_1)/(1−β_1))");
        if (np == 1)   // small multiples: the key names the line; a label would not fit a panel
            sbuf_printf(s, "set label 1 'stability threshold' at graph 0.99, first 1 right "
                           "offset 0, %g @F70\n", y.hi > 1.5 ? 0.6 : -0.6);   // above the line,
                                                                        // below it at the top
        sbuf_printf(s, "plot 1 with lines lc rgb 'black' dt 2 lw 1.5 notitle");
        for (int i = 0; i < n; i++)
            if (of[i] == p)
                sbuf_printf(s, ", $c%d using 1:2 with linespoints lc rgb '%s' dt %d lw %g pt %d "
                               "ps 0.8 notitle", i, st[i].color, st[i].dt, st[i].lw, st[i].pt);
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "unset label 1\n");
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    free(st);
    free(panel);
    return 1;
}

/* -------------------------------------------------------------- λ_max(H) at initialisation */

/* Block $i<j>: "L mean lo hi count" of series j over the depths; *spread set when runs of one
 * point differ, *most the most values a point has. */
static void depth_block(sbuf_t *s, const plot_set_t *set, const int *m, int n, const int *of,
                        int j, plot_range_t *x, plot_range_t *y, int *spread, int *most)
{
    double depths[PLOT_ATLAS_MAX];
    int nd = 0;
    for (int i = 0; i < n; i++)
        if (of[i] == j) plot_intern_value(depths, &nd, set->runs[m[i]].cfg.model.layers);
    qsort(depths, (size_t)nd, sizeof *depths, plot_cmp_double);
    sbuf_printf(s, "$i%d << EOD\n", j);
    for (int q = 0; q < nd; q++) {
        double sum = 0.0, lo = INFINITY, hi = -INFINITY, v[64];
        int cnt = 0;
        for (int i = 0; i < n; i++) {
            if (of[i] != j || set->runs[m[i]].cfg.model.layers != depths[q]) continue;
            const int k = init_values(&set->runs[m[i]], v, 64);
            for (int e = 0; e < k; e++, cnt++) {
                sum += v[e];
                lo = fmin(lo, v[e]);
                hi = fmax(hi, v[e]);
            }
        }
        if (!cnt) continue;
        *spread |= hi > lo;
        *most = cnt > *most ? cnt : *most;
        sbuf_printf(s, "%g %.12g %.12g %.12g %d\n", depths[q], sum / cnt, lo, hi, cnt);
        plot_range_add(x, depths[q]);
        plot_range_mid(y, sum / cnt);
        plot_range_add(y, lo);
        plot_range_add(y, hi);
    }
    sbuf_printf(s, "EOD\n");
}

/* What the runs of one point differ by, in words ("lr", "lr and seed"), into buf. */
static void point_items(const plot_set_t *set, const int *m, int n, const plot_diff_t *by,
                        char *buf, size_t len)
{
    plot_diff_t all;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &all);
    plot_diff_drop(&all, "model.layers");
    for (int k = 0; k < by->n; k++) plot_diff_drop(&all, by->item[k]);
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < all.n && used < len; k++) {
        const char *dot = strrchr(all.item[k], '.');
        used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? ", " : "",
                                 dot ? dot + 1 : all.item[k]);
    }
}

int plot_fig_curv_init_depth(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[CURV_MAX_RUNS], n = 0, nd = 0;
    double depths[PLOT_ATLAS_MAX], v[64];
    for (int i = 0; i < set->n && n < CURV_MAX_RUNS; i++)
        if (init_values(&set->runs[i], v, 64) > 0) {
            m[n++] = i;
            plot_intern_value(depths, &nd, set->runs[i].cfg.model.layers);
        }
    if (nd < 2) return 0;
    snprintf(name, len, "curv_init_depth");
    plot_diff_t all, by;   // a series per scheme (and whatever else changes the model at θ_0)
    plot_diff(set, m, n, PLOT_DIFF_INIT, &all);
    sort_runs(set, m, n, &all);
    by = all;
    plot_diff_drop(&by, "model.layers");
    int of[CURV_MAX_RUNS], rep[PLOT_MAX_SERIES + 1], reps[PLOT_MAX_SERIES];
    const int ns = plot_group_by(set, m, n, &by, of, rep, PLOT_MAX_SERIES + 1);
    if (ns > PLOT_MAX_SERIES) return PLOT_TOO_MANY(name, len, "curv_init_depth", n);
    for (int j = 0; j < ns; j++) reps[j] = m[rep[j]];
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, reps, ns, &by, st);
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    int spread = 0, most = 0;
    for (int j = 0; j < ns; j++) depth_block(s, set, m, n, of, j, &x, &y, &spread, &most);
    char title[500], sub[1100], shared[400], items[200], how[400];
    plot_title(set, m, n, &by, "λ_{max}(H) at initialisation vs depth", NULL, title, sizeof title);
    plot_shared(&all, &set->runs[m[0]], PLOT_SHARED_INIT, 1, shared, sizeof shared);
    point_items(set, m, n, &by, items, sizeof items);
    char of_point[300];   // where a point's values come from: runs that differ, probe seeds
    if (items[0]) snprintf(of_point, sizeof of_point, "its runs differ in %s", items);
    else snprintf(of_point, sizeof of_point, "probe seeds");
    if (most <= 1) snprintf(how, sizeof how, "one value per point");
    else if (!spread) snprintf(how, sizeof how, "the %d values of a point (%s) are equal to the "
                               "last bit: one point each", most, of_point);
    else snprintf(how, sizeof how, "the mean of up to %d values of a point (%s), bars: their "
                  "range", most, of_point);
    snprintf(sub, sizeof sub, "%s\nλ_{max} of the Hessian at θ_0 on the measurement batch "
             "(the update-0 row of /train, else /probe's seeds)\n%s", shared, how);
    sbuf_t keys = {0};
    for (int j = 0; j < ns; j++) plot_keyentry(&keys, &st[j], "linespoints");
    const int rows = plot_key_rows(ns, plot_styles_longest(st, ns));
    plot_grid_t g;
    plot_grid(&g, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    plot_panel(s, &g, 0);
    sbuf_printf(s, "set grid\nunset key\nset xlabel 'layers L'\n");
    plot_set(s, "ylabel", "λ_{max}(H) at initialisation");
    plot_axis(s, "x", &x, 0, 0.06, NAN, NAN);
    qsort(depths, (size_t)nd, sizeof *depths, plot_cmp_double);
    sbuf_printf(s, "set xtics (");   // a tic at every depth run
    for (int q = 0; q < nd; q++) sbuf_printf(s, "%s%g", q ? ", " : "", depths[q]);
    sbuf_printf(s, ")\n");
    plot_axis(s, "y", &y, plot_range_log(&y), 0.06, NAN, NAN);
    sbuf_printf(s, "plot ");
    for (int j = 0; j < ns; j++)
        sbuf_printf(s, "%s$i%d using 1:2%s with %s lc rgb '%s' dt %d lw %g pt %d ps 1.3 notitle",
                    j ? ", " : "", j, spread ? ":3:4" : "", spread ? "yerrorlines" : "linespoints",
                    st[j].color, st[j].dt, st[j].lw, st[j].pt);
    sbuf_printf(s, "\n");
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}

/* ------------------------------------------------------------------ per-block heat map */

/* The block value of row k, layer row l: the max over the kinds of the finite entries (NaN
 * when none, or when not positive: a log colour scale). */
static double block_max(const plot_curv_t *c, const double *b, size_t k, int l)
{
    double v = NAN;
    for (int q = 0; q < c->kinds; q++) {
        const double x = b[(k * (size_t)c->rows + (size_t)l) * (size_t)c->kinds + (size_t)q];
        if (isfinite(x) && (isnan(v) || x > v)) v = x;
    }
    return v > 0 ? v : NAN;
}

/* Whether b (hblock or pblock of c) holds a value to draw. */
static int block_any(const plot_curv_t *c, const double *b)
{
    for (size_t k = 0; b && k < c->n; k++)
        for (int l = 0; l < c->rows; l++)
            if (isfinite(block_max(c, b, k, l))) return 1;
    return 0;
}

/* Block $b<p>_<i>: "x layer x0 x1 y0 y1 value" cells of run r's b, a column per row spanning
 * the updates since the previous one ([t − 1, t] for the first, as study/dynamics_figure.c's). */
static void block_cells(sbuf_t *s, int p, int i, const plot_curv_t *c, const double *b,
                        plot_range_t *x, plot_range_t *v)
{
    sbuf_printf(s, "$b%d_%d << EOD\n", p, i);
    for (size_t k = 0; k < c->n; k++) {
        const double lo = k ? c->step[k - 1] : c->step[k] - 1.0, hi = c->step[k];
        plot_range_add(x, lo);
        plot_range_add(x, hi);
        for (int l = 0; l < c->rows; l++) {
            const double y = block_max(c, b, k, l);
            if (!isfinite(y)) continue;
            sbuf_printf(s, "%.10g %d %.10g %.10g %g %g %.10g\n", 0.5 * (lo + hi), l + 1, lo, hi,
                        l + 0.5, l + 1.5, y);
            plot_range_add(v, y);
        }
    }
    sbuf_printf(s, "EOD\n");
}

/* Panel row p (0 H, 1 P⁻¹H) of the heat map: a panel per run, its colour bar right of the row. */
static void blocks_row(sbuf_t *s, const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                       const plot_grid_t *g, int p, const plot_range_t *v, double xspan)
{
    static const char *const CB[2] = {"λ_{max}(H_{bb}), the largest block",
                                      "λ_{max}(P^{−1}H)_{bb} active, the largest block"};
    const double h = (g->top - g->bottom) / g->rows, y1 = g->top - p * h;
    const int log = plot_range_log(v);
    palette_heat(s, CB[p], log);
    sbuf_printf(s, "set cbtics autofreq\n");   // the previous row's list of tics goes
    plot_axis(s, "cb", v, log, 0.0, NAN, NAN);
    sbuf_printf(s, "set colorbox user origin screen 0.885, screen %.4f size screen 0.02, screen "
                   "%.4f\n", y1 - h + g->below, h - g->below - g->above);
    for (int i = 0; i < n; i++) {
        const plot_curv_t *c = set->runs[m[i]].curv;
        plot_panel(s, g, p * n + i);
        if (p == 0) {   // the column's run over the top row; the colour bars name the rows
            char key[300];
            plot_key(d, &set->runs[m[i]], 1, key, sizeof key);
            plot_set(s, "title", key);
            sbuf_printf(s, "set title @F%d\n", n > 2 ? 70 : 90);
        } else {
            sbuf_printf(s, "unset title\n");
        }
        sbuf_printf(s, "set yrange [0.5:%g]\nset ytics (", c->rows + 0.5);
        const int every = c->rows <= 17 ? 1 : c->rows / 8;
        for (int l = 1; l < c->rows; l += every) sbuf_printf(s, i ? "'' %d, " : "'%d' %d, ", l, l);
        sbuf_printf(s, i ? "'' %d)\n" : "'outside' %d)\n", c->rows);   // labels on the first
        if (i == 0) sbuf_printf(s, "set ylabel 'layer (1 = input side)'\n");
        else sbuf_printf(s, "unset ylabel\n");
        if (i == n - 1) sbuf_printf(s, "set colorbox\n");
        else sbuf_printf(s, "unset colorbox\n");
        char block[24];
        snprintf(block, sizeof block, "b%d_%d", p, i);
        plot_heat_cells(s, block, xspan, c->rows);
    }
}

int plot_fig_curv_blocks(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[CURV_MAX_BLOCK_RUNS], n = 0, pre = 0;
    for (int i = 0; i < set->n; i++) {
        const plot_curv_t *c = set->runs[i].curv;
        if (!c || !block_any(c, c->hblock)) continue;
        if (n == CURV_MAX_BLOCK_RUNS) return 0;   // a sweep's worth: not a heat map's
        pre |= block_any(c, c->pblock);
        m[n++] = i;
    }
    if (!n) return 0;
    snprintf(name, len, "curv_blocks");
    plot_range_t x, v[2];
    plot_range_init(&x);
    plot_range_init(&v[0]);
    plot_range_init(&v[1]);
    for (int p = 0; p < 1 + pre; p++)
        for (int i = 0; i < n; i++) {
            const plot_curv_t *c = set->runs[m[i]].curv;
            block_cells(s, p, i, c, p ? c->pblock : c->hblock, &x, &v[p]);
        }
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &d);
    char title[400], sub[900], shared[400];
    plot_title(set, m, n, &d, "Per-block sharpness", NULL, title, sizeof title);
    plot_shared(&d, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    snprintf(sub, sizeof sub, "%s\na cell: the largest λ_{max} of a layer's diagonal blocks "
             "(embed, attn\\_qk, attn\\_vo, ffn, norm, gain); outside: the tensors outside the "
             "layers\n%seach column: the updates since the previous measurement", shared,
             pre ? "P^{−1}H: P^{−1/2}H_{bb}P^{−1/2} without its floored coordinates; " : "");
    plot_grid_t g;
    plot_grid(&g, 1 + pre, n, plot_title_lines(sub), 0);
    g.width = 0.86;   // the colour bars right of the panels, their labels right of them
    g.bottom = 0.01;
    g.left = 0.11;    // the first column's layer labels ("outside") and the axis label
    g.left_inner = 0.03;
    plot_begin(s, title, sub);
    sbuf_printf(s, "set xlabel 'update'\nunset key\nset tics @F80\n");
    sbuf_printf(s, "set xrange [%.10g:%.10g]\nset xtics %g\n", x.lo, x.hi,
                fmax(1.0, plot_tic_step(x.hi - x.lo, n > 2 ? 3 : 5)));
    for (int p = 0; p < 1 + pre; p++) blocks_row(s, set, m, n, &d, &g, p, &v[p], x.hi - x.lo);
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}
