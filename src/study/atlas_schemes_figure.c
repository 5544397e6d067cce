/* atlas_schemes_figure.c — the atlas's every scheme side by side (docs/atlas.md; docs/design.md
 * §6c, §6d): the gradient per layer at initialisation (atlas_grad), Liu et al.'s output change
 * vs depth (output_change), and DeepNet's model update in the first updates (model_update). Runs
 * that differ in any other key are panels or curves of their own (report/plot_label.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/fit.h"
#include "report/plot_internal.h"
#include "study/figures.h"

/* Sort m[0..n) by scheme (the atlas's order), stable. */
static void sort_by_scheme(const plot_set_t *set, int *m, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0; b--) {
            char x[32], y[32];
            scheme_name(&set->runs[m[b]].cfg, x, sizeof x);
            scheme_name(&set->runs[m[b - 1]].cfg, y, sizeof y);
            if (scheme_rank(x) >= scheme_rank(y)) break;
            const int t = m[b];
            m[b] = m[b - 1];
            m[b - 1] = t;
        }
}

/* The single-stack probe runs at one depth (the most common; ties: the deeper) when they are of
 * ≥ 3 schemes, into m (in the atlas's order of schemes). Returns the count. */
static int pick_scheme_probes(const plot_set_t *set, int *m)
{
    double depth[PLOT_ATLAS_MAX];
    int count[PLOT_ATLAS_MAX] = {0}, nd = 0, best = -1;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].probe || set->runs[i].cfg.model.arch != ARCH_LM) continue;
        const int d = plot_intern_value(depth, &nd, set->runs[i].cfg.model.layers);
        if (d >= 0) count[d]++;
    }
    for (int d = 0; d < nd; d++)
        if (best < 0 || count[d] > count[best] || (count[d] == count[best] && depth[d] > depth[best]))
            best = d;
    int n = 0, ns = 0;
    char names[PLOT_ATLAS_MAX][32];
    for (int i = 0; best >= 0 && i < set->n && n < PLOT_ATLAS_MAX; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || r->cfg.model.arch != ARCH_LM || r->cfg.model.layers != depth[best])
            continue;
        char name[32];
        scheme_name(&r->cfg, name, sizeof name);
        plot_intern_name(names, &ns, name);
        m[n++] = i;
    }
    sort_by_scheme(set, m, n);
    return ns >= 3 ? n : 0;   // two schemes are Fig. 3(a,b)'s own figure
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
    int m[PLOT_ATLAS_MAX];
    const int n = pick_scheme_probes(set, m);
    if (!n) return 0;
    snprintf(name, len, "atlas_grad");
    plot_range_t rg[PLOT_ATLAS_MAX];
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        plot_range_init(&rg[i]);
        for (int p = 0; p < 2; p++) {
            char block[32];
            snprintf(block, sizeof block, "g%d_%d", i, p);
            plot_block_per_layer(s, block, r->probe->grad_fro, r->probe->S, r->probe->ax.L,
                                 r->probe->ax.nparam, plot_param_col(r, p ? "w2" : "w1"), 1.0,
                                 &rg[i]);
        }
    }
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    char title[400], sub[600], shared[300], seeds[80];
    plot_title(set, m, n, &d, "Expected gradient of the FFN weights per layer at initialisation",
               NULL, title, sizeof title);
    plot_shared(&d, &set->runs[m[0]], PLOT_SHARED_INIT, 1, shared, sizeof shared);
    plot_probe_seeds(&set->runs[m[0]], seeds, sizeof seeds);
    snprintf(sub, sizeof sub, "%s; %s", shared, seeds);
    const char *c1 = palette_qualitative(0), *c2 = palette_qualitative(1);
    sbuf_t keys = {0};
    sbuf_printf(&keys, ", keyentry with linespoints pt 7 lc rgb '%s' title 'W^1'"
                       ", keyentry with linespoints pt 5 lc rgb '%s' title 'W^2'", c1, c2);
    const int cols = n > 12 ? 5 : n > 8 ? 4 : 3, rows = (n + cols - 1) / cols;
    plot_grid_t g;
    plot_grid(&g, rows, cols, plot_title_lines(sub), 1);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset tics @F70\n");
    plot_layer_axis(s, set->runs[m[0]].cfg.model.layers);
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        char key[300];
        plot_key(&d, r, 1, key, sizeof key);
        plot_panel(s, &g, i);
        plot_set(s, "title", key);
        sbuf_printf(s, "set title @F80\n%s\n%s\n",
                    i % cols == 0 ? "set ylabel '‖E ∂L/∂W‖_F' @F70" : "unset ylabel",
                    i / cols == rows - 1 || i + cols >= n ? "set xlabel 'layer' @F70" : "unset xlabel");
        const int zero = grad_all_zero(r, plot_param_col(r, "w1")) &&
                         grad_all_zero(r, plot_param_col(r, "w2"));
        if (zero)   // what the zeros mean
            sbuf_printf(s, "set label 1 'exactly 0 at initialisation' at graph 0.5,0.5 center @F70\n");
        plot_axis(s, "y", &rg[i], 0, 0.06, 0.0, NAN);
        sbuf_printf(s, "plot $g%d_0 using 1:2:3:4 with yerrorlines pt 7 ps 0.6 lc rgb '%s' notitle, "
                       "$g%d_1 using 1:2:3:4 with yerrorlines pt 5 ps 0.6 lc rgb '%s' notitle\n", i,
                    c1, i, c2);
        if (zero) sbuf_printf(s, "unset label 1\n");
    }
    plot_end(s, &g, 1, &keys);
    sbuf_free(&keys);
    return 1;
}

/* Block $c<j> of the runs m[i] of group j (of[i] == j): "depth mean lo hi", the 95 % interval
 * of the output change over seeds never below 0; x and y widened; the power law fitted to every
 * seed's value into *slope ± *ci. */
static void output_change_block(sbuf_t *s, const plot_set_t *set, const int *m, int n,
                                const int *of, int j, plot_range_t *x, plot_range_t *y,
                                double *slope, double *ci)
{
    double xs[512], ys[512], rows[PLOT_ATLAS_MAX][4];   // rows: depth, mean, 95 % CI
    size_t np = 0;
    int nr = 0;
    for (int i = 0; i < n && nr < PLOT_ATLAS_MAX; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        if (of[i] != j) continue;
        double mean, half;
        size_t cnt;
        fit_mean_ci(r->probe->output_change, 1, (size_t)r->probe->S, &mean, &half, &cnt);
        if (!cnt) continue;
        if (isnan(half)) half = 0.0;
        rows[nr][0] = r->cfg.model.layers;
        rows[nr][1] = mean;
        rows[nr][2] = fmax(0.0, mean - half);   // a norm: its interval never below 0
        rows[nr++][3] = mean + half;
        plot_range_add(x, r->cfg.model.layers);
        plot_range_add(y, fmax(0.0, mean - half));
        plot_range_add(y, mean + half);
        plot_range_mid(y, mean);
        for (int k = 0; k < r->probe->S && np < 512; k++) {
            xs[np] = r->cfg.model.layers;
            ys[np++] = r->probe->output_change[k];
        }
    }
    qsort(rows, (size_t)nr, sizeof rows[0], plot_cmp_double);   // by depth (a merged file
    sbuf_printf(s, "$c%d << EOD\n", j);                   // lists runs by name)
    for (int k = 0; k < nr; k++)
        sbuf_printf(s, "%g %.10g %.10g %.10g\n", rows[k][0], rows[k][1], rows[k][2], rows[k][3]);
    sbuf_printf(s, "EOD\n");
    double A;
    fit_power_law(xs, ys, np, slope, ci, &A);
}

/* The probe runs that measured the output change into m (at most 512); *ns their schemes.
 * Returns their count. */
static int output_change_members(const plot_set_t *set, int *m, int *ns)
{
    int n = 0;
    char names[PLOT_ATLAS_MAX][32];
    *ns = 0;
    for (int i = 0; i < set->n && n < 512; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || !r->probe->output_change || isnan(r->probe->output_change[0])) continue;
        char nm[32];
        scheme_name(&r->cfg, nm, sizeof nm);
        plot_intern_name(names, ns, nm);
        m[n++] = i;
    }
    return n;
}

/* The key: a line per group (representative run reps[j]) in its scheme's colour (when the scheme
 * is all that differs) and marker, with its fitted exponent slope[j] ± ci[j]. */
static void output_change_keys(sbuf_t *keys, const plot_set_t *set, const int *reps, int nl,
                               const plot_diff_t *d, plot_style_t *st, const double *slope,
                               const double *ci)
{
    for (int j = 0; j < nl; j++) {   // the scheme's colour and marker; the fit in the key
        char nm[32];
        scheme_name(&set->runs[reps[j]].cfg, nm, sizeof nm);
        if (d->n == 1) snprintf(st[j].color, sizeof st[j].color, "%s", palette_scheme(nm, j));
        st[j].pt = palette_scheme_point(nm, j);
        const size_t used = strlen(st[j].key);
        snprintf(st[j].key + used, sizeof st[j].key - used, ": exponent %.2f ± %.2f", plot_nz(slope[j]),
                 isnan(ci[j]) ? 0.0 : ci[j]);
        plot_keyentry(keys, &st[j], "linespoints");
    }
}

/* The panel: the output change against the depth (log-log), a tic at every depth measured, a
 * line per group (blocks $c<j>). */
static void output_change_panel(sbuf_t *s, const plot_grid_t *g, const plot_set_t *set,
                                const int *m, int n, int nl, const plot_style_t *st, int encdec,
                                const plot_range_t *x, const plot_range_t *y)
{
    plot_panel(s, g, 0);
    sbuf_printf(s, "set grid\nunset key\nset xlabel '%s'\nset ylabel 'E_{token} ‖ΔF‖'\n",
                encdec ? "encoder layers = decoder layers N" : "layers L");
    plot_axis(s, "x", x, 1, 0.05, NAN, NAN);
    plot_axis(s, "y", y, plot_range_log(y), 0.05, 0.0, NAN);
    sbuf_printf(s, "set xtics (");
    double seen[PLOT_ATLAS_MAX];
    int nseen = 0;
    for (int i = 0; i < n; i++) {   // a tic at every depth measured
        const int before = nseen;
        if (plot_intern_value(seen, &nseen, set->runs[m[i]].cfg.model.layers) == before)
            sbuf_printf(s, "%s%d", before ? ", " : "", set->runs[m[i]].cfg.model.layers);
    }
    sbuf_printf(s, ")\nplot ");
    for (int j = 0; j < nl; j++)
        sbuf_printf(s, "%s$c%d using 1:2:3:4 with yerrorlines pt %d ps 0.9 lw 1.5 lc rgb '%s' notitle",
                    j ? ", " : "", j, st[j].pt, st[j].color);
    sbuf_printf(s, "\n");
}

int plot_fig_output_change(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[512], ns;
    const int n = output_change_members(set, m, &ns);
    if (ns < 2 || n < 3 * ns) return 0;   // at least 3 depths a scheme on average
    snprintf(name, len, "output_change");
    sort_by_scheme(set, m, n);
    plot_diff_t d;   // a line per configuration but the depth
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    plot_diff_drop(&d, "model.layers");
    plot_diff_drop(&d, "model.dec_layers");
    int rep[PLOT_ATLAS_MAX], of[512], reps[PLOT_ATLAS_MAX];
    const int nl = plot_group_by(set, m, n, &d, of, rep, PLOT_ATLAS_MAX);
    for (int i = 0; i < n; i++)
        if (of[i] < 0) return PLOT_TOO_MANY(name, len, "output_change", n);   // none left out
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    double slope[PLOT_ATLAS_MAX], ci[PLOT_ATLAS_MAX];
    for (int j = 0; j < nl; j++) {
        output_change_block(s, set, m, n, of, j, &x, &y, &slope[j], &ci[j]);
        reps[j] = m[rep[j]];
    }
    plot_style_t st[PLOT_ATLAS_MAX];
    plot_styles_apart(set, reps, nl, &d, st);
    const int encdec = set->runs[m[0]].cfg.model.arch == ARCH_ENCDEC;
    sbuf_t keys = {0};
    output_change_keys(&keys, set, reps, nl, &d, st, slope, ci);
    plot_diff_t all;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &all);
    char title[400], sub[700], shared[300];
    plot_title(set, m, n, &d, "Output change at initialisation vs depth", "Liu et al. 2020",
               title, sizeof title);
    static const char *const SHARED[] = {"model.d_model", "data.task", "model.tie_embeddings", NULL};
    plot_shared(&all, &set->runs[m[0]], SHARED, 1, shared, sizeof shared);
    snprintf(sub, sizeof sub, "E_{token} ‖F(x,W) − F(x,W*)‖, W* = W − 10^{-4}·sign(N(0,1)), F the "
             "%s; %s\nkey: the fitted exponent ± 95%% CI (½: an O(N) squared change)",
             encdec ? "decoder's output" : "last hidden state", shared);
    const int rows = plot_key_rows(nl, plot_styles_longest(st, nl));
    plot_grid_t g;
    plot_grid(&g, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    output_change_panel(s, &g, set, m, n, nl, st, encdec, &x, &y);
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}

/* Sort m[0..n) by scheme (the atlas's order), the deepest first within a scheme; stable. */
static void sort_by_scheme_depth(const plot_set_t *set, int *m, int n)
{
    for (int a = 1; a < n; a++)
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
}

/* Block $u<i> of run m[i]'s finite, positive model updates ("update value"), and $ux<i> the ×
 * at its last one when it diverged (diverged[i] = 1). x, y widened. Returns whether any did. */
static int model_update_blocks(sbuf_t *s, const plot_set_t *set, const int *m, int n,
                               int *diverged, plot_range_t *x, plot_range_t *y)
{
    int any_div = 0;
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        double lx = NAN, ly = NAN;
        sbuf_printf(s, "$u%d << EOD\n", i);
        for (size_t k = 0; k < r->nupdates; k++)
            if (isfinite(r->model_update[k]) && r->model_update[k] > 0) {
                sbuf_printf(s, "%.10g %.10g\n", r->update_step[k], r->model_update[k]);
                plot_range_add(x, r->update_step[k]);
                plot_range_add(y, r->model_update[k]);
                lx = r->update_step[k];
                ly = r->model_update[k];
            }
        sbuf_printf(s, "EOD\n");
        if (!isnan(r->diverged_at) && !isnan(lx)) {
            sbuf_printf(s, "$ux%d << EOD\n%.10g %.10g\nEOD\n", i, lx, ly);
            any_div = diverged[i] = 1;
        }
    }
    return any_div;
}

/* The panel: each run's model update against the update (log axes when they span decades). */
static void model_update_panel(sbuf_t *s, const plot_grid_t *g, int n, const plot_style_t *st,
                               const int *diverged, const plot_range_t *x, const plot_range_t *y)
{
    plot_panel(s, g, 0);
    sbuf_printf(s, "set grid\nunset key\nset xlabel 'update'\n"
                   "set ylabel 'E_{token} ‖F(x,θ_t) − F(x,θ_0)‖'\n");
    plot_axis(s, "x", x, plot_range_log(x), 0.03, NAN, NAN);
    plot_axis(s, "y", y, plot_range_log(y), 0.04, NAN, NAN);
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++) {
        sbuf_printf(s, "%s$u%d using 1:2 with lines lw 2 dt %d lc rgb '%s' notitle", i ? ", " : "",
                    i, st[i].dt, st[i].color);
        if (diverged[i])
            sbuf_printf(s, ", $ux%d using 1:2 with points pt 2 ps 2 lw 2 lc rgb '%s' notitle", i,
                        st[i].color);
    }
    sbuf_printf(s, "\n");
}

/* DeepNet's Fig. 1 (Wang et al. 2022): the model update ‖F(x, θ_t) − F(x, θ_0)‖ on a fixed
 * batch during the first updates, one line per training run that measured it, keyed by what
 * tells it apart; × marks a run that diverged (at its last finite value). */
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
    sort_by_scheme_depth(set, m, n);
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    int diverged[PLOT_MAX_SERIES] = {0};
    const int any_div = model_update_blocks(s, set, m, n, diverged, &x, &y);
    if (plot_range_empty(&y)) {
        snprintf(name, len, "model_update: no finite model update");
        return -1;
    }
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    char title[400], sub[700], shared[400];
    plot_title(set, m, n, &d, "Model update during training", "DeepNet, Wang et al. 2022",
               title, sizeof title);
    plot_shared(&d, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    snprintf(sub, sizeof sub, "E_{token} ‖F(x,θ_t) − F(x,θ_0)‖ on a fixed batch, F the last hidden "
             "state; %s%s", shared, any_div ? "; ×: diverged" : "");
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) {
        if (diverged[i]) {
            const size_t used = strlen(st[i].key);
            snprintf(st[i].key + used, sizeof st[i].key - used, " (diverged)");
        }
        plot_keyentry(&keys, &st[i], "lines");
    }
    const int rows = plot_key_rows(n, plot_styles_longest(st, n));
    plot_grid_t g;
    plot_grid(&g, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    model_update_panel(s, &g, n, st, diverged, &x, &y);
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}
