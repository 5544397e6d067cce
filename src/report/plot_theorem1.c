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

/* One placement's scan of the last layer's gradient of parameter k: data block, fit, theory. */
typedef struct {
    int n;
    double xmin, xmax;        /* range of the varied dimension */
    double x0, y0;            /* first point (for the theory line) */
    double slope, slope_ci;   /* fitted exponent */
    double C;                 /* fitted constant of the width theory */
    int has_jac;              /* Pre-LN: block <name>j holds ‖J_LN(x_{L+1})‖₂ scaled to y0 */
    double jac_slope, jac_ci; /* its fitted exponent */
} scan_t;

static scan_t scan_block(sbuf_t *s, const plot_set_t *set, const int *m, int n, int depth,
                         const char *k, const char *block)
{
    scan_t sc = {.n = n, .x0 = NAN, .y0 = NAN, .xmin = INFINITY, .xmax = -INFINITY};
    double xs[4096], ys[4096], fs[4096];
    size_t np = 0;
    sbuf_printf(s, "$%s << EOD\n", block);
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        const int L = r->probe->ax.L, P = r->probe->ax.nparam, d = r->cfg.model.d_model;
        const int kc = plot_param_col(r, k);
        if (kc < 0) continue;
        const size_t stride = (size_t)L * P;
        const double *last = r->probe->grad_fro + (size_t)(L - 1) * P + kc;   // the last FFN's
        double mean, half;
        size_t cnt;
        fit_mean_ci(last, stride, (size_t)r->probe->S, &mean, &half, &cnt);
        const double x = depth ? r->cfg.model.layers : d;
        if (!cnt) continue;
        sbuf_printf(s, "%g %.10g %.10g\n", x, mean, isnan(half) ? 0.0 : half);
        if (isnan(sc.x0)) { sc.x0 = x; sc.y0 = mean; }
        sc.xmin = fmin(sc.xmin, x);
        sc.xmax = fmax(sc.xmax, x);
        for (int seed = 0; seed < r->probe->S && np < 4096; seed++) {
            xs[np] = x;
            ys[np] = last[seed * stride];
            fs[np++] = fit_theorem1(plot_theory(r) == SCHEME_THEORY_POST, d, L);
        }
    }
    sbuf_printf(s, "EOD\n");
    double A;
    fit_power_law(xs, ys, np, &sc.slope, &sc.slope_ci, &A);
    sc.C = fit_scale(ys, fs, np);
    // Theorem 1's mechanism for Pre-LN: ‖J_LN(x_{L+1})‖₂ = O(√d/‖x_{L+1}‖) of the final norm,
    // drawn through the first gradient point so its slope can be compared with the gradient's
    double jx[4096], jy[4096], j0 = NAN;
    size_t nj = 0;
    for (int i = 0; i < n && depth; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        if (plot_theory(r) != SCHEME_THEORY_PRE || isnan(r->probe->final_jacobian[0])) continue;
        double mean, half;
        size_t cnt;
        fit_mean_ci(r->probe->final_jacobian, 5, (size_t)r->probe->S, &mean, &half, &cnt);
        if (!sc.has_jac) { sbuf_printf(s, "$%sj << EOD\n", block); j0 = mean; sc.has_jac = 1; }
        sbuf_printf(s, "%d %.10g\n", r->cfg.model.layers, mean * sc.y0 / j0);
        for (int seed = 0; seed < r->probe->S && nj < 4096; seed++) {
            jx[nj] = r->cfg.model.layers;
            jy[nj++] = r->probe->final_jacobian[seed * 5];
        }
    }
    if (sc.has_jac) {
        sbuf_printf(s, "EOD\n");
        fit_power_law(jx, jy, nj, &sc.jac_slope, &sc.jac_ci, &A);
    }
    return sc;
}

static int scan_figure(const plot_set_t *set, sbuf_t *s, int depth)
{
    int mp[64], mq[64];
    arch_t arch = ARCH_LM;   // a single stack's scan, else an encoder–decoder's
    const int POST = SCHEME_THEORY_POST, PRE = SCHEME_THEORY_PRE;
    int np = pick_scan(set, arch, POST, depth, mp), nq = pick_scan(set, arch, PRE, depth, mq);
    if (!np && !nq) {
        arch = ARCH_ENCDEC;
        np = pick_scan(set, arch, POST, depth, mp);
        nq = pick_scan(set, arch, PRE, depth, mq);
    }
    if (!np && !nq) return 0;
    const plot_run_t *ref = &set->runs[np ? mp[0] : mq[0]];
    char data[64];
    plot_data_text(&ref->cfg, data, sizeof data);
    static const char *const params[2] = {"w1", "w2"};
    if (depth && arch == ARCH_ENCDEC)
        sbuf_printf(s, "set multiplot layout 1,2 title \"Gradient of the last decoder FFN sub-layer vs "
                       "depth of an N-N encoder–decoder (Fig. 3c,d)\\n{/*0.8 d = %d, %s, %d seeds, "
                       "bars: 95%% CI; dashed: theory through the first point}\"\n",
                    ref->cfg.model.d_model, data, ref->probe->S);
    else if (depth)
        sbuf_printf(s, "set multiplot layout 1,2 title \"Gradient of the last FFN sub-layer vs depth "
                       "(Fig. 3c,d)\\n{/*0.8 d = %d, %s, %d seeds, bars: 95%% CI; dashed: theory "
                       "through the first point}\"\n", ref->cfg.model.d_model, data, ref->probe->S);
    else
        sbuf_printf(s, "set multiplot layout 1,2 title \"Gradient of the last FFN sub-layer vs width "
                       "(Theorem 1)\\n{/*0.8 L = %d, %s, %d seeds; dashed: C·d·√(ln d) (Post-LN), "
                       "C·d·√(ln d/L) (Pre-LN), C fitted}\"\n", ref->cfg.model.layers, data,
                    ref->probe->S);
    sbuf_printf(s, "set grid\nset logscale xy\nset key top left Left reverse samplen 2 "
                   "font ',12' box opaque\nset xlabel '%s'\n"
                   "set offsets graph 0.05, graph 0.05, graph 0.45, graph 0.02\n",
                !depth ? "width d" : arch == ARCH_ENCDEC ? "encoder layers = decoder layers N"
                                                         : "number of layers L");
    // the depth's letter: N for an encoder-decoder's N-N sweep, L for a single stack
    const char *dv = !depth ? "d" : arch == ARCH_ENCDEC ? "N" : "L";
    for (int p = 0; p < 2; p++) {
        scan_t post = {0}, pre = {0};
        if (np) post = scan_block(s, set, mp, np, depth, params[p], p ? "post2" : "post1");
        if (nq) pre = scan_block(s, set, mq, nq, depth, params[p], p ? "pre2" : "pre1");
        const double xmin = fmin(np ? post.xmin : INFINITY, nq ? pre.xmin : INFINITY);
        const double xmax = fmax(np ? post.xmax : -INFINITY, nq ? pre.xmax : -INFINITY);
        sbuf_printf(s, "set xrange [%g:%g]\nset xtics (", xmin / 1.12, xmax * 1.12);
        for (int i = 0; i < (np ? np : nq); i++) {   // a tic at every value scanned
            const config_t *c = &set->runs[np ? mp[i] : mq[i]].cfg;
            sbuf_printf(s, "%s%d", i ? ", " : "", depth ? c->model.layers : c->model.d_model);
        }
        const char *top = depth ? dv : "L";
        sbuf_printf(s, ")\nset title 'W^{%d,%s}'\nset ylabel '‖E_{batch} ∂L/∂W^{%d,%s}‖_F'\nplot ",
                    p + 1, top, p + 1, top);
        const char *sep = "";
        if (np) {
            sbuf_printf(s, "$post%d using 1:2:3 with yerrorlines lc rgb '%s' pt 7 ps 1.3 "
                           "title 'Post-LN: fit ∝ %s^{%.2f ± %.2f}'", p + 1, PLOT_COLORS[0],
                        dv, post.slope, post.slope_ci);
            if (depth)
                sbuf_printf(s, ", %.10g title 'theory ∝ %s^0' with lines dt 2 lc rgb '%s'", post.y0,
                            dv, PLOT_COLORS[0]);
            else
                sbuf_printf(s, ", %.10g*x*sqrt(log(x)) title 'theory C·d√(ln d)' with lines dt 2 lc rgb '%s'",
                            post.C, PLOT_COLORS[0]);
            sep = ", ";
        }
        if (nq) {
            const int L = set->runs[mq[0]].cfg.model.layers;
            sbuf_printf(s, "%s$pre%d using 1:2:3 with yerrorlines lc rgb '%s' pt 5 ps 1.3 "
                           "title 'Pre-LN: fit ∝ %s^{%.2f ± %.2f}'", sep, p + 1, PLOT_COLORS[1],
                        dv, pre.slope, pre.slope_ci);
            if (depth)
                sbuf_printf(s, ", %.10g*(x/%g)**(-0.5) title 'theory ∝ %s^{-1/2}' with lines dt 2 lc rgb '%s'",
                            pre.y0, pre.x0, dv, PLOT_COLORS[1]);
            if (depth && pre.has_jac)
                sbuf_printf(s, ", $pre%dj using 1:2 with linespoints dt 3 pt 6 lc rgb '%s' "
                               "title '‖J_{LN}(x_{%s+1})‖_2 (scaled) ∝ %s^{%.2f ± %.2f}'",
                            p + 1, PLOT_COLORS[3], dv, dv, pre.jac_slope, pre.jac_ci);
            else
                sbuf_printf(s, ", %.10g*x*sqrt(log(x)/%d) title 'theory C·d√(ln d / L)' with lines dt 2 lc rgb '%s'",
                            pre.C, L, PLOT_COLORS[1]);
        }
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "unset multiplot\n");
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

