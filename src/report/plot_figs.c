/* plot_figs.c — one gnuplot script per figure: every measurement beside its theory.
 * Statistics and fits come from fit.c; this file only arranges them for gnuplot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/plot_band.h"
#include "measure/fit.h"

/* ------------------------------------------------------------------ Fig. 3(a,b) */

int plot_fig_grad_vs_layer(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES];
    const int n = plot_pick_layer_group(set, ARCH_LM, m);
    if (n == 0) return 0;
    snprintf(name, len, "grad_vs_layer");
    const int names = plot_labels_need_names(set, m, n);
    char sub[256];
    plot_subtitle(&set->runs[m[0]], sub, sizeof sub);
    static const char *const params[2] = {"w1", "w2"};
    static const char *const ylabels[2] = {"‖E_{batch} ∂L/∂W^1‖_F", "‖E_{batch} ∂L/∂W^2‖_F"};
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        for (int p = 0; p < 2; p++) {
            char block[32];
            snprintf(block, sizeof block, "g%d_%d", i, p);
            plot_block_per_layer(s, block, r->probe->grad_fro, r->probe->S, r->probe->ax.L,
                            r->probe->ax.nparam, plot_param_col(r, params[p]), 1.0);
        }
    }
    sbuf_printf(s, "set multiplot layout 1,2 title \"Expected gradient norm of the FFN weights "
                   "per layer at initialisation (Fig. 3a,b)\\n{/*0.8 %s}\"\n", sub);
    sbuf_printf(s, "set grid\nset key top left box opaque\nset xlabel 'layer l'\n"
                   "set xtics 1\nset offsets 0.3, 0.3, 0, 0\nset yrange [0:*]\n");
    for (int p = 0; p < 2; p++) {
        sbuf_printf(s, "set title 'W^%d'\nset ylabel '%s'\nplot ", p + 1, ylabels[p]);
        for (int i = 0; i < n; i++) {
            const plot_run_t *r = &set->runs[m[i]];
            char label[200];
            plot_run_label(r, names, label, sizeof label);
            sbuf_printf(s, "%s$g%d_%d using 1:2:3 with yerrorlines lc rgb '%s' pt %d ps 1.3 "
                           "title '%s'", i ? ", " : "", i, p,
                        plot_run_color(r, plot_family_rank(set, m, n, i)), plot_point_type(r), label);
        }
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

/* ------------------------------------------------------------------ Lemma 3 */

int plot_fig_jacobian(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES], n = plot_pick_layer_group(set, ARCH_LM, m), k = 0;
    for (int i = 0; i < n; i++)   // runs with a norm and Jacobian data
        if (set->runs[m[i]].cfg.model.norm != NORM_NONE && !isnan(set->runs[m[i]].probe->jacobian_spec[0]))
            m[k++] = m[i];
    if (!(n = k)) return 0;
    snprintf(name, len, "jacobian");
    const int names = plot_labels_need_names(set, m, n);
    char sub[256];
    plot_subtitle(&set->runs[m[0]], sub, sizeof sub);
    for (int i = 0; i < n; i++) {
        const probe_t *p = set->runs[m[i]].probe;
        for (int q = 0; q < p->ax.nnorm && q < 2; q++) {
            char block[32];
            snprintf(block, sizeof block, "j%d_%d", i, q);
            plot_block_per_layer(s, block, p->jacobian_spec, p->S, p->ax.L, p->ax.nnorm, q, 1.0);
            snprintf(block, sizeof block, "b%d_%d", i, q);
            plot_block_per_layer(s, block, p->jacobian_bound, p->S, p->ax.L, p->ax.nnorm, q, 1.0);
        }
    }
    sbuf_printf(s, "set multiplot layout 1,2 title \"Norm-layer Jacobian ‖J_{LN}(x)‖_2 per layer "
                   "beside Lemma 3's √d/‖x−μ‖\\n{/*0.8 %s; points: exact ‖J‖_2, dashed: √d/‖x−μ‖}\"\n",
                sub);
    sbuf_printf(s, "set grid\nset key bottom left Left reverse samplen 2 font ',12' box opaque\n"
                   "set xlabel 'layer l'\nset xtics 1\n"
                   "set offsets 0.3, 0.3, graph 0.6, graph 0.05\nset logscale y\n");
    for (int q = 0; q < 2; q++) {
        sbuf_printf(s, "set title '%s (%s)'\nset ylabel '‖J‖_2'\nplot ", q ? "norm2" : "norm1",
                    q == 0 ? "post: LN(x^2), pre: LN(x_l)" : "post: LN(x^5), pre: LN(x^3)");
        for (int i = 0; i < n; i++) {
            const plot_run_t *r = &set->runs[m[i]];
            char label[200];
            const char *c = plot_run_color(r, plot_family_rank(set, m, n, i));
            plot_run_label(r, names, label, sizeof label);
            sbuf_printf(s, "%s$j%d_%d using 1:2:3 with yerrorbars lc rgb '%s' pt %d ps 1.3 title '%s ‖J‖_2', "
                           "$b%d_%d using 1:2 with lines dt 2 lc rgb '%s' title '%s √d/‖x−μ‖'",
                        i ? ", " : "", i, q, c, plot_point_type(r), label, i, q, c, label);
        }
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

/* ------------------------------------------------------------------ Lemma 2 */

int plot_fig_hidden_norms(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES], n = plot_pick_layer_group(set, ARCH_LM, m), k = 0;
    char skipped[160];   // Lemma 2 is stated for Post-LN and Pre-LN: the other schemes' runs
    plot_skipped_note(set, m, n, "Lemma 2", skipped, sizeof skipped);   // are left out
    for (int i = 0; i < n; i++)
        if (plot_theory(&set->runs[m[i]]) != SCHEME_THEORY_NONE) m[k++] = m[i];
    if (!(n = k)) return 0;
    snprintf(name, len, "hidden_norms");
    int has_post = 0, has_pre = 0;
    for (int i = 0; i < n; i++) {
        if (plot_theory(&set->runs[m[i]]) == SCHEME_THEORY_POST) has_post = 1;
        else has_pre = 1;
    }
    char sub[256], full[420];
    plot_subtitle(&set->runs[m[0]], sub, sizeof sub);
    snprintf(full, sizeof full, "%s%s", sub, skipped);
    const config_t *c0 = &set->runs[m[0]].cfg;
    const int d = c0->model.d_model, dff = c0->model.d_ff, L = c0->model.layers;
    for (int i = 0; i < n; i++) {
        const probe_t *p = set->runs[m[i]].probe;
        char block[32];
        snprintf(block, sizeof block, "h%d_a", i);
        plot_block_per_layer(s, block, p->hidden_sqnorm, p->S, p->ax.L, p->ax.nsite,
                        plot_site_col(p, plot_theory(&set->runs[m[i]]) == SCHEME_THEORY_POST
                                             ? "resid2" : "output"), 1.0 / d);
        snprintf(block, sizeof block, "h%d_b", i);
        plot_block_per_layer(s, block, p->hidden_sqnorm, p->S, p->ax.L, p->ax.nsite, plot_site_col(p, "resid1"),
                        1.0 / d);
    }
    sbuf_printf(s, "$bounds << EOD\n");
    for (int l = 0; l <= L + 1; l++) {
        double lo, hi;
        fit_lemma2_pre_bounds(d, dff, l, fit_input_sqnorm(), &lo, &hi);
        sbuf_printf(s, "%d %.10g %.10g\n", l, lo, hi);
    }
    sbuf_printf(s, "EOD\n");
    sbuf_printf(s, "set multiplot layout 1,%d title \"Hidden-state norms E‖x‖^2/d per layer beside "
                   "Lemma 2\\n{/*0.8 %s}\"\n", has_post + has_pre, full);
    sbuf_printf(s, "set grid\nset key top left box opaque\nset xlabel 'layer l'\nset xtics 1\n"
                   "set offsets 0.3, 0.3, 0, 0\nset ylabel 'E‖x‖^2 / d'\nset yrange [0:*]\n");
    for (int post = 1; post >= 0; post--) {
        if ((post && !has_post) || (!post && !has_pre)) continue;
        if (post)
            sbuf_printf(s, "set title 'Post-LN: x^5_l = x^3_l + FFN(x^3_l)'\nplot %.10g with lines dt 2 lw 2 "
                           "lc rgb 'black' title 'Lemma 2: 1 + 2dd_{ff}/(d+d_{ff})^2 = %.3f'",
                        fit_lemma2_post(d, dff), fit_lemma2_post(d, dff));
        else
            sbuf_printf(s, "set title 'Pre-LN: x_{l+1} = x^3_l + FFN(LN(x^3_l))'\n"
                           "plot [0.5:%g] $bounds using 1:2:3 with filledcurves fc rgb '#d6e4f0' "
                           "title 'Lemma 2 bounds (from E‖x_1‖^2 = 1.5d)'", L + 0.5);
        for (int i = 0; i < n; i++) {
            const plot_run_t *r = &set->runs[m[i]];
            if ((plot_theory(r) == SCHEME_THEORY_POST) != post) continue;
            const char *c = plot_run_color(r, plot_family_rank(set, m, n, i));
            sbuf_printf(s, ", $h%d_a using 1:2:3 with yerrorlines lc rgb '%s' pt %d ps 1.3 title '%s'",
                        i, c, post ? 7 : 5, post ? "x^5_l / d" : "x_{l+1} / d");
            sbuf_printf(s, ", $h%d_b using 1:2:3 with yerrorlines dt 3 lc rgb '%s' pt 6 title '%s'",
                        i, c, post ? "x^2_l / d" : "x^3_l / d");
        }
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

/* ------------------------------------------------------------------ Fig. 2 */

/* Rows "x loss" of a × at each diverged seed's last finite loss; " (diverged)",
 * " (2 of 3 seeds diverged)" or "" into note. Returns the number of diverged seeds. */
static int mark_diverged(sbuf_t *s, const plot_set_t *set, const plot_group_t *g, char *note,
                         size_t len)
{
    int nd = 0;
    for (int k = 0; k < g->n; k++) {
        const plot_run_t *r = &set->runs[g->run[k]];
        double last_x = NAN, last_y = NAN;
        for (size_t t = 0; t < r->nsteps; t++)
            if (isfinite(r->loss[t])) { last_x = r->step[t]; last_y = r->loss[t]; }
        if (isnan(r->diverged_at) || isnan(last_x)) continue;
        sbuf_printf(s, "%.10g %.10g\n", last_x, last_y);
        nd++;
    }
    if (nd && g->n > 1) snprintf(note, len, " (%d of %d seeds diverged)", nd, g->n);
    else snprintf(note, len, "%s", nd ? " (diverged)" : "");
    return nd;
}

int plot_fig_loss(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_BAND_MAX_RUNS], nr = 0;
    for (int i = 0; i < set->n && nr < PLOT_BAND_MAX_RUNS; i++)
        if (set->runs[i].nsteps > 0 && set->runs[i].step) m[nr++] = i;
    plot_group_t g[PLOT_MAX_SERIES];
    const int n = nr ? plot_band_groups(set, m, nr, g, PLOT_MAX_SERIES) : 0;
    if (n <= 0) return 0;   // more curves than a legend can tell apart: the atlas' figures
    snprintf(name, len, "loss");
    int diverged[PLOT_MAX_SERIES] = {0};
    char dnote[PLOT_MAX_SERIES][48];
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "l%d", i);
        plot_band_block(s, block, set, &g[i], plot_series_loss, 1.0);
        const plot_run_t *r = &set->runs[g[i].run[0]];   // the seeds share the schedule
        sbuf_printf(s, "$r%d << EOD\n", i);
        const size_t every = plot_band_stride(r->nsteps);
        for (size_t t = 0; r->lr && t < r->nsteps; t++)
            if ((t % every == 0 || t + 1 == r->nsteps) && isfinite(r->loss[t]))
                sbuf_printf(s, "%.10g %.10g\n", r->step[t], r->lr[t]);
        sbuf_printf(s, "EOD\n$x%d << EOD\n", i);
        diverged[i] = mark_diverged(s, set, &g[i], dnote[i], sizeof dnote[i]);
        sbuf_printf(s, "EOD\n");
    }
    for (int i = 0; i < n; i++) m[i] = g[i].run[0];   // legends from each group's first seed
    const config_t *c = &set->runs[m[0]].cfg;
    char data[64];
    plot_data_text(c, data, sizeof data);
    char depth[48];
    if (c->model.arch == ARCH_ENCDEC)
        snprintf(depth, sizeof depth, "%d-%d encoder–decoder", c->model.layers,
                 config_dec_layers(c));
    else snprintf(depth, sizeof depth, "L = %d", c->model.layers);
    char seeds[64];
    plot_band_caption(g, n, seeds, sizeof seeds);
    const int one_opt = plot_same_optimizer(set, m, n);
    sbuf_printf(s, "set multiplot layout 2,1 title \"Training loss%s"
                   "\\n{/*0.8 d = %d, %s, %s, %s; × = diverged (NaN/Inf)%s}\"\n",
                plot_warmup_question(set, m, n), c->model.d_model, depth, data,
                one_opt ? config_optimizer_name(c->train.optimizer) : "optimizer as keyed", seeds);
    double lo = INFINITY, hi = 0.0;   // a log axis only when the losses span a decade
    for (int i = 0; i < n; i++)
        for (int k = 0; k < g[i].n; k++) {
            const plot_run_t *r = &set->runs[g[i].run[k]];
            for (size_t t = 0; t < r->nsteps; t++)
                if (isfinite(r->loss[t]) && r->loss[t] > 0) {
                    lo = fmin(lo, r->loss[t]);
                    hi = fmax(hi, r->loss[t]);
                }
        }
    sbuf_printf(s, "set grid\nset key outside right box opaque\nset xlabel 'step'\n"
                   "set ylabel 'training loss'\n%sset autoscale yfix\n"
                   "set offsets 0, 0, graph 0.04, graph 0.04\nset size 1,0.62\nset origin 0,0.33\n"
                   "plot ", hi > 10 * lo ? "set logscale y\n" : "");
    char names[PLOT_MAX_SERIES][256];
    double lr_max = 0.0;
    const char *colors[PLOT_MAX_SERIES];
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        plot_train_label(set, m, n, i, names[i], sizeof names[i]);
        plot_band_seeds_note(&g[i], names[i], sizeof names[i]);
        colors[i] = plot_run_color(r, plot_family_rank(set, m, n, i));
        for (size_t t = 0; r->lr && t < r->nsteps; t++)
            if (isfinite(r->lr[t]) && r->lr[t] > lr_max) lr_max = r->lr[t];
    }
    for (int i = 0; i < n; i++) {
        const char *col = colors[i];
        char block[16], title[320];
        snprintf(block, sizeof block, "l%d", i);
        snprintf(title, sizeof title, "%.255s%.47s", names[i], dnote[i]);
        plot_band_clause(s, block, &g[i], col, "lines", title, i == 0);
        if (diverged[i])
            sbuf_printf(s, ", $x%d using 1:2 with points pt 2 ps 3 lw 3 lc rgb '%s' notitle", i, col);
    }
    sbuf_printf(s, "\nunset logscale y\nset autoscale y\nset offsets 0, 0, 0, 0\nset size 1,0.3\n"
                   "set origin 0,0.0\nunset title\n"
                   "set ylabel 'learning rate'\nset format y '%%.1e'\n");
    // headroom above the largest lr, so a constant schedule is not hidden in the top border
    if (lr_max > 0.0) sbuf_printf(s, "set yrange [0:%.10g]\n", 1.15 * lr_max);
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++)
        sbuf_printf(s, "%s$r%d using 1:2 with lines lc rgb '%s' title '%s'", i ? ", " : "", i,
                    colors[i], names[i]);
    sbuf_printf(s, "\nunset multiplot\n");
    return 1;
}
