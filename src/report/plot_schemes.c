/* plot_schemes.c — every scheme side by side (docs/design.md §6c, §6d): the gradient per layer
 * at initialisation, Liu et al.'s output change vs depth, and DeepNet's model update in the
 * first updates. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "measure/fit.h"

/* The single-stack probe runs of ≥ 3 schemes at one depth (the most common; ties: the
 * deeper), one run per scheme, into m (in the atlas's order of schemes). Returns the count. */
static int pick_scheme_probes(const plot_set_t *set, int *m, char names[][32])
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
    for (int i = 0; best >= 0 && i < set->n && n < PLOT_ATLAS_MAX; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || r->cfg.model.arch != ARCH_LM || r->cfg.model.layers != depth[best])
            continue;
        char name[32];
        scheme_name(&r->cfg, name, sizeof name);
        const int before = ns;
        if (plot_intern_name(names, &ns, name) == before) m[n++] = i;   // the first run of each scheme
    }
    plot_sort_schemes(names, m, n);
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
    int m[PLOT_ATLAS_MAX];
    char names[PLOT_ATLAS_MAX][32];
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
    char names[PLOT_ATLAS_MAX][32];
    int ns = 0, any = 0;
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || !r->probe->output_change || isnan(r->probe->output_change[0])) continue;
        char nm[32];
        scheme_name(&r->cfg, nm, sizeof nm);
        plot_intern_name(names, &ns, nm);
        any++;
    }
    if (ns < 2 || any < 3 * ns) return 0;   // at least 3 depths a scheme on average
    plot_sort_schemes(names, NULL, ns);
    snprintf(name, len, "output_change");
    double slope[PLOT_ATLAS_MAX], ci[PLOT_ATLAS_MAX], lo = INFINITY, hi = 0.0;
    for (int sc = 0; sc < ns; sc++) {
        double xs[512], ys[512], rows[PLOT_ATLAS_MAX][3];   // rows: depth, mean, CI half-width
        size_t np = 0;
        int nr = 0;
        for (int i = 0; i < set->n && nr < PLOT_ATLAS_MAX; i++) {
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
        qsort(rows, (size_t)nr, sizeof rows[0], plot_cmp_double);   // by depth (a merged file
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
                       "title '%s: %s^{%.2f ± %.2f}'", sc ? ", " : "", sc, plot_scheme_color(names[sc], sc),
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
        const char *col = plot_scheme_color(scheme, i);
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
