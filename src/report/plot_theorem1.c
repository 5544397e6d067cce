/* plot_theorem1.c — Theorem 1 of Xiong et al. 2020 (docs/design.md §1) against the measured
 * gradient of the last FFN's weights: its scans over depth (Fig. 3c,d) and over width. Runs of
 * schemes without a line of the paper (config/scheme.c) are never drawn against it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "measure/fit.h"

/* Probe runs of the schemes with one line of Theorem 1 (theory: Post-LN's or Pre-LN's; runs of
 * other schemes are never drawn against it) at the most common value of the fixed dimension
 * (width for a depth scan: fixed = d, varied = L; and the other way round). Returns the count. */
static int pick_scan(const plot_set_t *set, arch_t arch, int theory, int scan_depth, int *members)
{
    int fixed_best = -1, best_count = 0;
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || plot_theory(r) != theory || r->cfg.model.arch != arch) continue;
        const int fixed = scan_depth ? r->cfg.model.d_model : r->cfg.model.layers;
        int count = 0;
        for (int j = 0; j < set->n; j++) {
            const plot_run_t *q = &set->runs[j];
            if (q->probe && plot_theory(q) == theory && q->cfg.model.arch == arch &&
                (scan_depth ? q->cfg.model.d_model : q->cfg.model.layers) == fixed)
                count++;
        }
        if (count > best_count) { best_count = count; fixed_best = fixed; }
    }
    int n = 0;
    for (int j = 0; j < set->n && n < 64; j++) {
        const plot_run_t *q = &set->runs[j];
        if (q->probe && plot_theory(q) == theory && q->cfg.model.arch == arch &&
            (scan_depth ? q->cfg.model.d_model : q->cfg.model.layers) == fixed_best)
            members[n++] = j;
    }
    // sort by the varied dimension
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0; b--) {
            const config_t *x = &set->runs[members[b - 1]].cfg, *y = &set->runs[members[b]].cfg;
            const int vx = scan_depth ? x->model.layers : x->model.d_model;
            const int vy = scan_depth ? y->model.layers : y->model.d_model;
            if (vx <= vy) break;
            const int t = members[b]; members[b] = members[b - 1]; members[b - 1] = t;
        }
    // distinct values of the varied dimension
    int distinct = 0;
    for (int a = 0; a < n; a++) {
        const config_t *x = &set->runs[members[a]].cfg;
        const config_t *p = a ? &set->runs[members[a - 1]].cfg : NULL;
        const int v = scan_depth ? x->model.layers : x->model.d_model;
        if (!p || v != (scan_depth ? p->model.layers : p->model.d_model)) distinct++;
    }
    return distinct >= 3 ? n : 0;
}

/* The last layer's ‖E_batch ∇W‖_F of parameter k in run r: mean and 95 % CI half-width over
 * its seeds, its per-seed values (stride apart) in *seeds. 0 when r has no such column. */
static int last_layer(const plot_run_t *r, const char *k, double *mean, double *half,
                      const double **seeds, size_t *stride)
{
    const int L = r->probe->ax.L, P = r->probe->ax.nparam, kc = plot_param_col(r, k);
    if (kc < 0) return 0;
    *stride = (size_t)L * P;
    *seeds = r->probe->grad_fro + (size_t)(L - 1) * P + kc;   // the last FFN's
    size_t cnt;
    fit_mean_ci(*seeds, *stride, (size_t)r->probe->S, mean, half, &cnt);
    return cnt > 0;
}

/* One line of the paper's scan of the last layer's gradient of parameter k: data block, fit,
 * and Theorem 1's bound. */
typedef struct {
    int n;
    double xmin, xmax;        /* range of the varied dimension */
    double y0;                /* first point (the Jacobian line goes through it) */
    double slope, slope_ci;   /* fitted exponent */
    double C;                 /* the smallest C with every point ≤ C·fit_theorem1 */
    int has_jac;              /* Pre-LN: block <name>j holds ‖J_LN(x_{L+1})‖₂ scaled to y0 */
    double jac_slope, jac_ci; /* its fitted exponent */
    plot_range_t y;           /* the values drawn (points ± CI, the scaled Jacobian) */
} scan_t;

/* Pre-LN's mechanism (Theorem 1's proof): the final norm's ‖J_LN(x_{L+1})‖₂ = O(√d/‖x_{L+1}‖),
 * drawn as block <block>j through the first gradient point, with its fitted exponent. */
static void jacobian_block(sbuf_t *s, const plot_set_t *set, const int *m, int n,
                           const char *block, scan_t *sc)
{
    double jx[4096], jy[4096], j0 = NAN, A;
    size_t nj = 0;
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        if (plot_theory(r) != SCHEME_THEORY_PRE || isnan(r->probe->final_jacobian[0])) continue;
        double mean, half;
        size_t cnt;
        fit_mean_ci(r->probe->final_jacobian, 5, (size_t)r->probe->S, &mean, &half, &cnt);
        if (!sc->has_jac) { sbuf_printf(s, "$%sj << EOD\n", block); j0 = mean; sc->has_jac = 1; }
        sbuf_printf(s, "%d %.10g\n", r->cfg.model.layers, mean * sc->y0 / j0);
        plot_range_add(&sc->y, mean * sc->y0 / j0);
        for (int seed = 0; seed < r->probe->S && nj < 4096; seed++) {
            jx[nj] = r->cfg.model.layers;
            jy[nj++] = r->probe->final_jacobian[seed * 5];
        }
    }
    if (sc->has_jac) {
        sbuf_printf(s, "EOD\n");
        fit_power_law(jx, jy, nj, &sc->jac_slope, &sc->jac_ci, &A);
    }
}

static scan_t scan_block(sbuf_t *s, const plot_set_t *set, const int *m, int n, int depth,
                         const char *k, const char *block)
{
    scan_t sc = {.n = n, .y0 = NAN, .xmin = INFINITY, .xmax = -INFINITY};
    plot_range_init(&sc.y);
    double xs[4096], ys[4096], means[64], fs[64];
    size_t np = 0, nm = 0;
    sbuf_printf(s, "$%s << EOD\n", block);
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        const int L = r->cfg.model.layers, d = r->cfg.model.d_model;
        double mean, half;
        const double *last;
        size_t stride;
        if (!last_layer(r, k, &mean, &half, &last, &stride)) continue;
        const double x = depth ? L : d;
        sbuf_printf(s, "%g %.10g %.10g\n", x, mean, isnan(half) ? 0.0 : half);
        plot_range_add(&sc.y, mean - (isnan(half) ? 0.0 : half));
        plot_range_add(&sc.y, mean + (isnan(half) ? 0.0 : half));
        plot_range_mid(&sc.y, mean);
        if (isnan(sc.y0)) sc.y0 = mean;
        sc.xmin = fmin(sc.xmin, x);
        sc.xmax = fmax(sc.xmax, x);
        if (nm < 64) {   // Theorem 1's bound up to its constant, at this point
            means[nm] = mean;
            fs[nm++] = fit_theorem1(plot_theory(r) == SCHEME_THEORY_POST, d, L);
        }
        for (int seed = 0; seed < r->probe->S && np < 4096; seed++) {
            xs[np] = x;
            ys[np++] = last[seed * stride];
        }
    }
    sbuf_printf(s, "EOD\n");
    double A;
    fit_power_law(xs, ys, np, &sc.slope, &sc.slope_ci, &A);
    sc.C = fit_bound_scale(means, fs, nm);
    if (depth) jacobian_block(s, set, m, n, block, &sc);
    return sc;
}

/* The two lines' runs of arch's scan (depth or width) into mp (Post-LN) and mq (Pre-LN): a
 * single stack's, else an encoder–decoder's. */
static arch_t pick_scans(const plot_set_t *set, int depth, int *mp, int *np, int *mq, int *nq)
{
    arch_t arch = ARCH_LM;
    *np = pick_scan(set, arch, SCHEME_THEORY_POST, depth, mp);
    *nq = pick_scan(set, arch, SCHEME_THEORY_PRE, depth, mq);
    if (!*np && !*nq) {
        arch = ARCH_ENCDEC;
        *np = pick_scan(set, arch, SCHEME_THEORY_POST, depth, mp);
        *nq = pick_scan(set, arch, SCHEME_THEORY_PRE, depth, mq);
    }
    return arch;
}

/* The figure's title and subtitle (gnuplot enhanced text): the last FFN's gradient vs depth
 * (an N-N encoder–decoder's last decoder FFN) or width, Fig. 3(c,d) when the runs are its set. */
static void scan_title(const plot_set_t *set, const int *mp, int np, const int *mq, int nq,
                       int depth, arch_t arch, char *title, size_t tlen, char *sub, size_t slen)
{
    int m[128], n = 0;
    for (int i = 0; i < np; i++) m[n++] = mp[i];
    for (int i = 0; i < nq; i++) m[n++] = mq[i];
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    const char *paper = depth ? plot_paper_figure(set, m, n, &d, PLOT_KIND_DEPTH) : "Theorem 1";
    plot_diff_drop(&d, "scheme");   // Post-LN and Pre-LN: the two lines
    plot_diff_drop(&d, depth ? "model.layers" : "model.d_model");   // the x axis
    plot_diff_drop(&d, "model.dec_layers");
    plot_diff_drop(&d, "model.d_ff");   // a width scan scales d_ff with d
    const char *what = !depth ? "Gradient of the last FFN sub-layer vs width"
                       : arch == ARCH_ENCDEC ? "Gradient of the last decoder FFN sub-layer vs depth "
                                               "of an N-N encoder–decoder"
                                             : "Gradient of the last FFN sub-layer vs depth";
    plot_title(set, m, n, &d, what, paper, title, tlen);
    static const char *const SHARED_DEPTH[] = {"model.d_model", "model.d_ff", "data.task",
                                               "model.tie_embeddings", NULL};
    static const char *const SHARED_WIDTH[] = {"model.layers", "data.task", "model.tie_embeddings",
                                               NULL};
    char shared[300], seeds[80];
    plot_shared(&d, &set->runs[m[0]], depth ? SHARED_DEPTH : SHARED_WIDTH, 1, shared, sizeof shared);
    plot_probe_seeds(&set->runs[m[0]], seeds, sizeof seeds);
    snprintf(sub, slen, "%s; %s\ndashed: Theorem 1's bounds, each with the least constant that "
             "keeps every point under it", shared, seeds);
}

/* Theorem 1's bound of one line (post: O(d√(ln d)), else O(d√(ln d/L))) at x (L for a depth
 * scan, d for a width scan): C·fit_theorem1, C from the scan, every point under it. */
static double bound_at(const scan_t *sc, int post, int depth, int d, int L, double x)
{
    if (post && depth) return sc->C * fit_theorem1(1, d, L);   // independent of L
    if (depth) return sc->C * d * sqrt(log((double)d) / x);
    if (post) return sc->C * x * sqrt(log(x));
    return sc->C * x * sqrt(log(x) / L);
}

/* The bound as a gnuplot function of x drawn dashed in color, and its key entry. */
static void bound_line(sbuf_t *s, sbuf_t *keys, const scan_t *sc, int post, int depth, int d,
                       int L, const char *dv, const char *color)
{
    char what[80];
    if (post && depth) {
        sbuf_printf(s, ", %.10g with lines dt 2 lc rgb '%s' notitle", sc->C * fit_theorem1(1, d, L),
                    color);
        snprintf(what, sizeof what, "O(d√(ln d)), ∝ %s^0", dv);
    } else if (depth) {
        sbuf_printf(s, ", %.10g/sqrt(x) with lines dt 2 lc rgb '%s' notitle",
                    sc->C * d * sqrt(log((double)d)), color);
        snprintf(what, sizeof what, "O(d√(ln d/%s)), ∝ %s^{-1/2}", dv, dv);
    } else if (post) {
        sbuf_printf(s, ", %.10g*x*sqrt(log(x)) with lines dt 2 lc rgb '%s' notitle", sc->C, color);
        snprintf(what, sizeof what, "O(d√(ln d))");
    } else {
        sbuf_printf(s, ", %.10g*x*sqrt(log(x)/%d) with lines dt 2 lc rgb '%s' notitle", sc->C, L,
                    color);
        snprintf(what, sizeof what, "O(d√(ln d / L))");
    }
    sbuf_printf(keys, ", keyentry with lines dt 2 lc rgb '%s' title '%s, Theorem 1: %s'", color,
                post ? "Post-LN" : "Pre-LN", what);
}

/* One panel (p = 0: W¹, 1: W²) of the scan: the axis, both lines' points and fits, and on W²,
 * which the theorem states, its bounds; its key entries into keys. */
static void scan_panel(sbuf_t *s, sbuf_t *keys, const plot_set_t *set, const int *mp, int np,
                       const int *mq, int nq, int depth, int p, const char *dv)
{
    static const char *const params[2] = {"w1", "w2"};
    const char *cpost = palette_scheme("post", 0), *cpre = palette_scheme("pre", 1);
    scan_t post = {0}, pre = {0};
    plot_range_init(&post.y);
    plot_range_init(&pre.y);
    if (np) post = scan_block(s, set, mp, np, depth, params[p], p ? "post2" : "post1");
    if (nq) pre = scan_block(s, set, mq, nq, depth, params[p], p ? "pre2" : "pre1");
    const double xmin = fmin(np ? post.xmin : INFINITY, nq ? pre.xmin : INFINITY);
    const double xmax = fmax(np ? post.xmax : -INFINITY, nq ? pre.xmax : -INFINITY);
    plot_range_t y = post.y, x;
    plot_range_add(&y, pre.y.lo);
    plot_range_add(&y, pre.y.hi);
    plot_range_mid(&y, pre.y.mid_lo);
    plot_range_mid(&y, pre.y.mid_hi);
    plot_range_init(&x);
    plot_range_add(&x, xmin);
    plot_range_add(&x, xmax);
    for (int k = 0; p && k < 2; k++) {   // the bounds where they are drawn
        const double at = k ? xmax : xmin;
        if (np) plot_range_add(&y, bound_at(&post, 1, depth, set->runs[mp[0]].cfg.model.d_model,
                                            set->runs[mp[0]].cfg.model.layers, at));
        if (nq) plot_range_add(&y, bound_at(&pre, 0, depth, set->runs[mq[0]].cfg.model.d_model,
                                            set->runs[mq[0]].cfg.model.layers, at));
    }
    plot_axis(s, "x", &x, 1, 0.06, NAN, NAN);
    plot_axis(s, "y", &y, 1, 0.06, NAN, NAN);   // log–log: the exponents are slopes
    sbuf_printf(s, "set xtics (");
    for (int i = 0; i < (np ? np : nq); i++) {   // a tic at every value scanned
        const config_t *c = &set->runs[np ? mp[i] : mq[i]].cfg;
        sbuf_printf(s, "%s%d", i ? ", " : "", depth ? c->model.layers : c->model.d_model);
    }
    const char *top = depth ? dv : "L";
    sbuf_printf(s, ")\nset title 'W^{%d,%s}%s'\nset ylabel '‖E_{batch} ∂L/∂W^{%d,%s}‖_F'\nplot ",
                p + 1, top, p ? "" : " (Theorem 1 states W^2)", p + 1, top);
    if (np) {
        const config_t *c = &set->runs[mp[0]].cfg;
        sbuf_printf(s, "$post%d using 1:2:3 with yerrorlines lc rgb '%s' pt 7 ps 1.3 notitle",
                    p + 1, cpost);
        sbuf_printf(keys, ", keyentry with linespoints lc rgb '%s' pt 7 ps 1.3 title 'Post-LN: "
                          "fit ∝ %s^{%.2f ± %.2f}'", cpost, dv, plot_nz(post.slope), post.slope_ci);
        if (p) bound_line(s, keys, &post, 1, depth, c->model.d_model, c->model.layers, dv, cpost);
    }
    if (nq) {
        const config_t *c = &set->runs[mq[0]].cfg;
        sbuf_printf(s, "%s$pre%d using 1:2:3 with yerrorlines lc rgb '%s' pt 5 ps 1.3 notitle",
                    np ? ", " : "", p + 1, cpre);
        sbuf_printf(keys, ", keyentry with linespoints lc rgb '%s' pt 5 ps 1.3 title 'Pre-LN: "
                          "fit ∝ %s^{%.2f ± %.2f}'", cpre, dv, plot_nz(pre.slope), pre.slope_ci);
        if (p) bound_line(s, keys, &pre, 0, depth, c->model.d_model, c->model.layers, dv, cpre);
        if (pre.has_jac) {
            sbuf_printf(s, ", $pre%dj using 1:2 with linespoints dt 3 pt 6 lc rgb '%s' notitle",
                        p + 1, palette_qualitative(2));
            sbuf_printf(keys, ", keyentry with linespoints dt 3 pt 6 lc rgb '%s' title "
                              "'‖J_{LN}(x_{%s+1})‖_2 (scaled) ∝ %s^{%.2f ± %.2f}'",
                        palette_qualitative(2), dv, dv, plot_nz(pre.jac_slope), pre.jac_ci);
        }
    }
    sbuf_printf(s, "\n");
}

static int scan_figure(const plot_set_t *set, sbuf_t *s, int depth)
{
    int mp[64], mq[64], np, nq;
    const arch_t arch = pick_scans(set, depth, mp, &np, mq, &nq);
    if (!np && !nq) return 0;
    char title[400], sub[600];
    scan_title(set, mp, np, mq, nq, depth, arch, title, sizeof title, sub, sizeof sub);
    // the depth's letter: N for an encoder-decoder's N-N sweep, L for a single stack
    const char *dv = !depth ? "d" : arch == ARCH_ENCDEC ? "N" : "L";
    const int entries = 2 * (np > 0) + 2 * (nq > 0) + (nq > 0);   // W²'s: fits, bounds, ‖J‖
    const int rows = plot_key_rows_in(entries, 44, 0.47);
    plot_grid_t g;
    plot_grid(&g, 1, 2, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset xlabel '%s'\n",
                !depth ? "width d" : arch == ARCH_ENCDEC ? "encoder layers = decoder layers N"
                                                         : "number of layers L");
    sbuf_t keys[2] = {{0}, {0}};
    for (int p = 0; p < 2; p++) {
        plot_panel(s, &g, p);
        scan_panel(s, &keys[p], set, mp, np, mq, nq, depth, p, dv);
    }
    plot_end_columns(s, &g, rows, keys);
    sbuf_free(&keys[0]);
    sbuf_free(&keys[1]);
    return 1;
}

int plot_fig_grad_vs_depth(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    snprintf(name, len, "grad_vs_depth");
    return scan_figure(set, s, 1);
}

int plot_fig_grad_vs_width(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    snprintf(name, len, "grad_vs_width");
    return scan_figure(set, s, 0);
}

/* ------------------------------------------------------------------ the ratio, no constants */

/* The Post-LN / Pre-LN ratio of one scan: its points, range and fitted exponent. */
typedef struct {
    int n;
    double x[64], y[64], ci[64];
    double b, b_ci;           /* the ratio ∝ x^b */
} ratio_t;

/* Block $<block>: "x ratio ci" of Post-LN's over Pre-LN's last-layer ‖E∇W²‖ for every pair of
 * runs (one of each line) with the same d and L, x = L (depth) or d; the CI by the delta
 * method, √((ci_p/m_p)² + (ci_q/m_q)²)·ratio. */
static ratio_t ratio_block(sbuf_t *s, const plot_set_t *set, const int *mp, int np,
                           const int *mq, int nq, int depth, const char *block)
{
    ratio_t rt = {0};
    double A;
    sbuf_printf(s, "$%s << EOD\n", block);
    for (int i = 0; i < np; i++)
        for (int j = 0; j < nq && rt.n < 64; j++) {
            const plot_run_t *p = &set->runs[mp[i]], *q = &set->runs[mq[j]];
            if (p->cfg.model.d_model != q->cfg.model.d_model ||
                p->cfg.model.layers != q->cfg.model.layers)
                continue;
            double mean_p, half_p, mean_q, half_q;
            const double *seeds;
            size_t stride;
            if (!last_layer(p, "w2", &mean_p, &half_p, &seeds, &stride) ||
                !last_layer(q, "w2", &mean_q, &half_q, &seeds, &stride) || !(mean_q > 0.0))
                continue;
            const double ratio = mean_p / mean_q, rel_p = isnan(half_p) ? 0.0 : half_p / mean_p,
                         rel_q = isnan(half_q) ? 0.0 : half_q / mean_q;
            rt.x[rt.n] = depth ? p->cfg.model.layers : p->cfg.model.d_model;
            rt.y[rt.n] = ratio;
            rt.ci[rt.n] = ratio * sqrt(rel_p * rel_p + rel_q * rel_q);
            sbuf_printf(s, "%g %.10g %.10g %.10g\n", rt.x[rt.n], ratio,
                        fmax(0.0, ratio - rt.ci[rt.n]), ratio + rt.ci[rt.n]);   // a ratio ≥ 0
            rt.n++;
        }
    sbuf_printf(s, "EOD\n");
    fit_power_law(rt.x, rt.y, (size_t)rt.n, &rt.b, &rt.b_ci, &A);
    return rt;
}

/* One panel of the ratio figure: the points, the fit, and √L (against L) or the flat √L;
 * its key entries into keys. */
static void ratio_panel(sbuf_t *s, sbuf_t *keys, const ratio_t *rt, const config_t *c, int depth,
                        arch_t arch)
{
    const char *dv = !depth ? "d" : arch == ARCH_ENCDEC ? "N" : "L";
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    for (int i = 0; i < rt->n; i++) {
        plot_range_add(&x, rt->x[i]);
        plot_range_add(&y, fmax(0.0, rt->y[i] - rt->ci[i]));
        plot_range_add(&y, rt->y[i] + rt->ci[i]);
        plot_range_add(&y, depth ? sqrt(rt->x[i]) : sqrt((double)c->model.layers));
    }
    if (depth)
        sbuf_printf(s, "set title 'against the depth (d = %d)'\nset xlabel '%s'\n", c->model.d_model,
                    arch == ARCH_ENCDEC ? "encoder layers = decoder layers N" : "layers L");
    else
        sbuf_printf(s, "set title 'against the width (L = %d)'\nset xlabel 'width d'\n",
                    c->model.layers);
    plot_axis(s, "x", &x, 1, 0.06, NAN, NAN);
    plot_axis(s, "y", &y, 0, 0.08, 0.0, NAN);
    sbuf_printf(s, "set xtics (");
    for (int i = 0; i < rt->n; i++) sbuf_printf(s, "%s%g", i ? ", " : "", rt->x[i]);
    char fit[64] = "";
    if (!isnan(rt->b_ci)) snprintf(fit, sizeof fit, ": fit ∝ %s^{%.2f ± %.2f}", dv, plot_nz(rt->b), rt->b_ci);
    const char *col = palette_qualitative(0);
    sbuf_printf(s, ")\nplot $%s using 1:2:3:4 with yerrorlines lc rgb '%s' pt 7 ps 1.3 notitle, ",
                depth ? "rd" : "rw", col);
    sbuf_printf(keys, ", keyentry with linespoints lc rgb '%s' pt 7 ps 1.3 title 'measured%s'", col,
                fit);
    if (depth) {
        sbuf_printf(s, "sqrt(x) with lines dt 2 lc rgb 'black' notitle\n");
        sbuf_printf(keys, ", keyentry with lines dt 2 lc rgb 'black' title '√%s (no constant)'", dv);
    } else {
        sbuf_printf(s, "%.10g with lines dt 2 lc rgb 'black' notitle\n", sqrt((double)c->model.layers));
        sbuf_printf(keys, ", keyentry with lines dt 2 lc rgb 'black' title '√L = %.2f (no "
                          "constant)'", sqrt((double)c->model.layers));
    }
}

/* Theorem 1 without its constants (docs/design.md §1): Post-LN's bound over Pre-LN's is √L,
 * whatever d. Panels: the ratio of the last FFN's ‖E∇W²‖ against the depth with √L beside it,
 * and against the width with the flat √L; each where the runs scan it (≥ 2 pairs). */
int plot_fig_grad_ratio(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int mp[2][64], mq[2][64], np[2], nq[2];
    ratio_t rt[2] = {{0}, {0}};
    arch_t arch[2];
    for (int depth = 0; depth < 2; depth++) {
        arch[depth] = pick_scans(set, depth, mp[depth], &np[depth], mq[depth], &nq[depth]);
        if (np[depth] && nq[depth])
            rt[depth] = ratio_block(s, set, mp[depth], np[depth], mq[depth], nq[depth], depth,
                                    depth ? "rd" : "rw");
    }
    if (rt[0].n < 2 && rt[1].n < 2) return 0;
    snprintf(name, len, "grad_ratio");
    const int ref = rt[1].n >= 2;
    int m[128], n = 0;
    for (int i = 0; i < np[ref]; i++) m[n++] = mp[ref][i];
    for (int i = 0; i < nq[ref]; i++) m[n++] = mq[ref][i];
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    static const char *const SHARED[] = {"data.task", "model.tie_embeddings", NULL};
    char shared[300], seeds[80], title[400], sub[600];
    plot_shared(&d, &set->runs[m[0]], SHARED, 1, shared, sizeof shared);
    plot_probe_seeds(&set->runs[m[0]], seeds, sizeof seeds);
    snprintf(sub, sizeof sub, "%s; %s of the ratio", shared, seeds);
    const char *dn = arch[ref] == ARCH_ENCDEC ? "N" : "L";   // an N-N encoder–decoder's depth is N
    snprintf(title, sizeof title, "Post-LN over Pre-LN: the last FFN's ‖E_{batch} ∂L/∂W^2‖_F "
             "(Theorem 1 without its constants: √%s, independent of d)", dn);
    const int panels = (rt[0].n >= 2) + (rt[1].n >= 2);
    const int rows = plot_key_rows_in(2, 36, 0.96 / panels);
    plot_grid_t g;
    plot_grid(&g, 1, panels, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset ylabel 'Post-LN / Pre-LN'\n");
    sbuf_t keys[2] = {{0}, {0}};
    int k = 0;
    for (int depth = 1; depth >= 0; depth--)
        if (rt[depth].n >= 2) {
            plot_panel(s, &g, k);
            ratio_panel(s, &keys[k++], &rt[depth], &set->runs[mp[depth][0]].cfg, depth, arch[depth]);
        }
    plot_end_columns(s, &g, rows, keys);
    sbuf_free(&keys[0]);
    sbuf_free(&keys[1]);
    return 1;
}
