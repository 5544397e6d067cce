/* plot_figs.c — one gnuplot script per figure: every measurement beside its theory.
 * Statistics and fits come from fit.c; this file only arranges them for gnuplot. Titles,
 * subtitles and keys: report/plot_label.h; colours: plot_palette.h; layout: plot_layout.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/plot_band.h"
#include "measure/fit.h"

/* The subtitle of a figure at initialisation: what the runs share and the seeds. */
static void init_subtitle(const plot_set_t *set, const int *m, const plot_diff_t *d,
                          const char *extra, char *buf, size_t len)
{
    char shared[300], seeds[80];
    plot_shared(d, &set->runs[m[0]], PLOT_SHARED_INIT, 1, shared, sizeof shared);
    plot_probe_seeds(&set->runs[m[0]], seeds, sizeof seeds);
    snprintf(buf, len, "%s%s%s%s%s", shared, shared[0] ? "; " : "", seeds, extra[0] ? "\n" : "",
             extra);
}

/* ------------------------------------------------------------------ Fig. 3(a,b) */

int plot_fig_grad_vs_layer(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES];
    const int n = plot_pick_layer_group(set, ARCH_LM, m);
    if (n == 0) return 0;
    snprintf(name, len, "grad_vs_layer");
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    static const char *const params[2] = {"w1", "w2"};
    static const char *const ylabels[2] = {"‖E_{batch} ∂L/∂W^1‖_F", "‖E_{batch} ∂L/∂W^2‖_F"};
    plot_range_t rg[2];
    for (int p = 0; p < 2; p++) {
        plot_range_init(&rg[p]);
        for (int i = 0; i < n; i++) {
            const plot_run_t *r = &set->runs[m[i]];
            char block[32];
            snprintf(block, sizeof block, "g%d_%d", i, p);
            plot_block_per_layer(s, block, r->probe->grad_fro, r->probe->S, r->probe->ax.L,
                                 r->probe->ax.nparam, plot_param_col(r, params[p]), 1.0, &rg[p]);
        }
    }
    if (plot_range_empty(&rg[0]) && plot_range_empty(&rg[1])) {
        snprintf(name, len, "grad_vs_layer: no finite gradient");
        return -1;
    }
    char title[400], sub[600];
    plot_title(set, m, n, &d, "Expected gradient of the FFN weights per layer at initialisation",
               plot_paper_figure(set, m, n, &d, PLOT_KIND_LAYERS), title, sizeof title);
    init_subtitle(set, m, &d, "", sub, sizeof sub);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) plot_keyentry(&keys, &st[i], "linespoints");
    const int rows = plot_key_rows(n, plot_styles_longest(st, n));
    plot_grid_t g;
    plot_grid(&g, 1, 2, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset xlabel 'layer l'\n");
    plot_layer_axis(s, set->runs[m[0]].cfg.model.layers);
    for (int p = 0; p < 2; p++) {
        plot_panel(s, &g, p);
        plot_axis(s, "y", &rg[p], plot_range_log(&rg[p]), 0.06, 0.0, NAN);
        sbuf_printf(s, "set title 'W^%d'\nset ylabel '%s'\nplot ", p + 1, ylabels[p]);
        for (int i = 0; i < n; i++)
            sbuf_printf(s, "%s$g%d_%d using 1:2:3:4 with yerrorlines lc rgb '%s' pt %d ps 1.3 lw 2 "
                           "notitle", i ? ", " : "", i, p, st[i].color, st[i].pt);
        sbuf_printf(s, "\n");
    }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
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
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    plot_range_t rg[2];
    for (int q = 0; q < 2; q++) {
        plot_range_init(&rg[q]);
        for (int i = 0; i < n; i++) {
            const probe_t *p = set->runs[m[i]].probe;
            char block[32];
            snprintf(block, sizeof block, "j%d_%d", i, q);
            plot_block_per_layer(s, block, p->jacobian_spec, p->S, p->ax.L, p->ax.nnorm,
                                 q < p->ax.nnorm ? q : -1, 1.0, &rg[q]);
            snprintf(block, sizeof block, "b%d_%d", i, q);
            plot_block_per_layer(s, block, p->jacobian_bound, p->S, p->ax.L, p->ax.nnorm,
                                 q < p->ax.nnorm ? q : -1, 1.0, &rg[q]);
        }
    }
    if (plot_range_empty(&rg[0])) {
        snprintf(name, len, "jacobian: no finite Jacobian norm");
        return -1;
    }
    char title[400], sub[600];
    plot_title(set, m, n, &d, "Norm-layer Jacobian ‖J_{LN}(x)‖_2 per layer beside Lemma 3's "
               "√d/‖x−μ‖", NULL, title, sizeof title);
    init_subtitle(set, m, &d, "", sub, sizeof sub);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) plot_keyentry(&keys, &st[i], "points");
    plot_keyentry_text(&keys, "points pt 7 lc rgb 'black'", "exact ‖J‖₂");
    plot_keyentry_text(&keys, "lines dt 2 lc rgb 'black'", "Lemma 3: √d/‖x−μ‖");
    const int rows = plot_key_rows(n + 2, plot_styles_longest(st, n));
    plot_grid_t g;
    plot_grid(&g, 1, 2, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset xlabel 'layer l'\nset ylabel '‖J‖_2'\n");
    plot_layer_axis(s, set->runs[m[0]].cfg.model.layers);
    for (int q = 0; q < 2; q++) {
        if (plot_range_empty(&rg[q])) continue;
        plot_panel(s, &g, q);
        plot_axis(s, "y", &rg[q], plot_range_log(&rg[q]), 0.08, 0.0, NAN);
        sbuf_printf(s, "set title '%s (%s)'\nplot ", q ? "second norm" : "first norm",
                    q == 0 ? "post: LN(x^2), pre: LN(x_l)" : "post: LN(x^5), pre: LN(x^3)");
        for (int i = 0; i < n; i++)
            sbuf_printf(s, "%s$j%d_%d using 1:2:3:4 with yerrorbars lc rgb '%s' pt %d ps 1.3 notitle, "
                           "$b%d_%d using 1:2 with lines dt 2 lc rgb '%s' notitle",
                        i ? ", " : "", i, q, st[i].color, st[i].pt, i, q, st[i].color);
        sbuf_printf(s, "\n");
    }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}

/* ------------------------------------------------------------------ Lemma 2 */

/* Blocks $h<i>_a (the block's output: x⁵ for Post-LN, x_{l+1} for Pre-LN) and $h<i>_b (after
 * attention: x², x³) of E‖x‖²/d per layer, and $bounds, Lemma 2's Pre-LN bounds; rg[post] the
 * values of each panel, Lemma 2's lines with them. */
static void hidden_blocks(sbuf_t *s, const plot_set_t *set, const int *m, int n, plot_range_t *rg)
{
    const config_t *c0 = &set->runs[m[0]].cfg;
    const int dm = c0->model.d_model, dff = c0->model.d_ff, L = c0->model.layers;
    plot_range_init(&rg[0]);
    plot_range_init(&rg[1]);
    for (int i = 0; i < n; i++) {
        const probe_t *p = set->runs[m[i]].probe;
        const int post = plot_theory(&set->runs[m[i]]) == SCHEME_THEORY_POST;
        char block[32];
        snprintf(block, sizeof block, "h%d_a", i);
        plot_block_per_layer(s, block, p->hidden_sqnorm, p->S, p->ax.L, p->ax.nsite,
                             plot_site_col(p, post ? "resid2" : "output"), 1.0 / dm, &rg[post]);
        snprintf(block, sizeof block, "h%d_b", i);
        plot_block_per_layer(s, block, p->hidden_sqnorm, p->S, p->ax.L, p->ax.nsite,
                             plot_site_col(p, "resid1"), 1.0 / dm, &rg[post]);
    }
    sbuf_printf(s, "$bounds << EOD\n");
    for (int l = 0; l <= L + 1; l++) {
        double lo, hi;
        fit_lemma2_pre_bounds(dm, dff, l, fit_input_sqnorm(), &lo, &hi);
        sbuf_printf(s, "%d %.10g %.10g\n", l, lo, hi);
        if (l >= 1 && l <= L) { plot_range_add(&rg[0], lo); plot_range_add(&rg[0], hi); }
    }
    sbuf_printf(s, "EOD\n");
    plot_range_add(&rg[1], fit_lemma2_post(dm, dff));
}

int plot_fig_hidden_norms(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES], n = plot_pick_layer_group(set, ARCH_LM, m), k = 0;
    char skipped[200] = "";   // Lemma 2 is stated for Post-LN and Pre-LN: the others are left out
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        if (plot_theory(r) != SCHEME_THEORY_NONE) { m[k++] = m[i]; continue; }
        char label[64];
        scheme_label(&r->cfg, label, sizeof label);
        const size_t used = strlen(skipped);
        snprintf(skipped + used, sizeof skipped - used, "%s%s", used ? ", " : "not drawn (Lemma 2 "
                 "is stated for Post-LN and Pre-LN): ", label);
    }
    if (!(n = k)) return 0;
    snprintf(name, len, "hidden_norms");
    int has_post = 0, has_pre = 0;
    for (int i = 0; i < n; i++) {
        if (plot_theory(&set->runs[m[i]]) == SCHEME_THEORY_POST) has_post = 1;
        else has_pre = 1;
    }
    plot_diff_t all, d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &all);
    d = all;
    plot_diff_drop(&d, "scheme");   // a panel each
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    const config_t *c0 = &set->runs[m[0]].cfg;
    const int dm = c0->model.d_model, dff = c0->model.d_ff, L = c0->model.layers;
    plot_range_t rg[2];   // [post]
    hidden_blocks(s, set, m, n, rg);
    char title[400], sub[700];
    plot_title(set, m, n, &d, "Hidden-state norms E‖x‖^2/d per layer beside Lemma 2", NULL, title,
               sizeof title);
    char skip_enh[300];
    plot_enh(skipped, skip_enh, sizeof skip_enh);
    init_subtitle(set, m, &all, skip_enh, sub, sizeof sub);
    sbuf_t keys = {0};
    for (int i = 0; i < n && d.n; i++) plot_keyentry(&keys, &st[i], "linespoints");
    sbuf_printf(&keys, ", keyentry with linespoints pt 7 lc rgb 'black' title 'output of the "
                       "block: x^5_l / d (Post-LN), x_{l+1} / d (Pre-LN)'"
                       ", keyentry with linespoints pt 6 dt 3 lc rgb 'black' title 'after "
                       "attention: x^2_l / d (Post-LN), x^3_l / d (Pre-LN)'");
    if (has_post)
        sbuf_printf(&keys, ", keyentry with lines dt 2 lw 2 lc rgb 'black' title 'Lemma 2 (Post-LN):"
                           " 1 + 2dd_{ff}/(d+d_{ff})^2 = %.3f'", fit_lemma2_post(dm, dff));
    if (has_pre)
        sbuf_printf(&keys, ", keyentry with filledcurves fc rgb '#c6dbef' title 'Lemma 2''s bounds "
                           "(Pre-LN), from E‖x_1‖^2 = 1.5d'");
    const int rows = plot_key_rows((d.n ? n : 0) + 2 + has_post + has_pre, 60);
    plot_grid_t g;
    plot_grid(&g, 1, has_post + has_pre, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset xlabel 'layer l'\nset ylabel 'E‖x‖^2 / d'\n");
    plot_layer_axis(s, L);
    int panel = 0;
    for (int post = 1; post >= 0; post--) {
        if ((post && !has_post) || (!post && !has_pre)) continue;
        plot_panel(s, &g, panel++);
        plot_axis(s, "y", &rg[post], 0, 0.06, 0.0, NAN);
        if (post)
            sbuf_printf(s, "set title 'Post-LN: x^5_l = x^3_l + FFN(x^3_l)'\nplot %.10g with lines "
                           "dt 2 lw 2 lc rgb 'black' notitle", fit_lemma2_post(dm, dff));
        else
            sbuf_printf(s, "set title 'Pre-LN: x_{l+1} = x^3_l + FFN(LN(x^3_l))'\n"
                           "plot $bounds using 1:2:3 with filledcurves fc rgb '#c6dbef' notitle");
        for (int i = 0; i < n; i++) {
            const plot_run_t *r = &set->runs[m[i]];
            if ((plot_theory(r) == SCHEME_THEORY_POST) != post) continue;
            const char *c = d.n ? st[i].color : post ? palette_scheme("post", 0) : palette_scheme("pre", 1);
            sbuf_printf(s, ", $h%d_a using 1:2:3:4 with yerrorlines lc rgb '%s' pt 7 ps 1.3 notitle"
                           ", $h%d_b using 1:2:3:4 with yerrorlines dt 3 lc rgb '%s' pt 6 notitle",
                        i, c, i, c);
        }
        sbuf_printf(s, "\n");
    }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}

/* ------------------------------------------------------------------ training loss */

/* Rows "x loss" of a × at each diverged seed's last finite loss. Returns how many. */
static int mark_diverged(sbuf_t *s, const plot_set_t *set, const plot_group_t *g)
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
    return nd;
}

/* The subtitle of a training figure: what its runs share, the seeds, "×: diverged" when one
 * did, and extra (a line of its own; "" none). */
void plot_train_subtitle(const plot_set_t *set, const plot_group_t *g, int n, const plot_diff_t *d,
                         int diverged, const char *extra, char *buf, size_t len)
{
    char shared[400], seeds[80];
    plot_shared(d, &set->runs[g[0].run[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    plot_band_caption(g, n, seeds, sizeof seeds);
    snprintf(buf, len, "%s%s%s%s%s", shared, seeds, diverged ? "; ×: diverged (its last finite "
             "value)" : "", extra[0] ? "\n" : "", extra);
}

/* Blocks of each group i: l<i> its loss band, r<i> its learning rate (the seeds share the
 * schedule), x<i> the ×s of its diverged seeds (diverged[i] of them). rx, ry (loss) and rl (lr)
 * set. Returns the diverged seeds of all. */
static int loss_blocks(sbuf_t *s, const plot_set_t *set, const plot_group_t *g, int n,
                       int *diverged, plot_range_t *rx, plot_range_t *ry, plot_range_t *rl)
{
    int any_div = 0;
    plot_range_init(rx);
    plot_range_init(ry);
    plot_range_init(rl);
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "l%d", i);
        plot_band_block(s, block, set, &g[i], plot_series_loss, 1.0, 0.0, rx, ry);   // ≥ 0
        const plot_run_t *r = &set->runs[g[i].run[0]];   // the seeds share the schedule
        sbuf_printf(s, "$r%d << EOD\n", i);
        const size_t every = plot_band_stride(r->nsteps);
        for (size_t t = 0; r->lr && t < r->nsteps; t++)
            if ((t % every == 0 || t + 1 == r->nsteps) && isfinite(r->lr[t])) {
                sbuf_printf(s, "%.10g %.10g\n", r->step[t], r->lr[t]);
                plot_range_add(rl, r->lr[t]);
            }
        sbuf_printf(s, "EOD\n$x%d << EOD\n", i);
        any_div += diverged[i] = mark_diverged(s, set, &g[i]);
        sbuf_printf(s, "EOD\n");
    }
    return any_div;
}

/* Whether every group's learning rate is one value over its updates (a constant schedule
 * without warm-up): a panel of flat lines says nothing the subtitle cannot. */
static int lr_constant(const plot_set_t *set, const plot_group_t *g, int n)
{
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[g[i].run[0]];   // the seeds share the schedule
        for (size_t t = 1; r->lr && t < r->nsteps; t++)
            if (r->lr[t] != r->lr[0]) return 0;
    }
    return 1;
}

/* The two panels: the loss (log when it spans decades) above, the learning rate below, on one
 * update axis; the loss alone when lr_panel is 0 (a constant lr). */
static void loss_panels(sbuf_t *s, const plot_grid_t *gr, const plot_group_t *g, int n,
                        const plot_style_t *st, const int *diverged, const plot_range_t *rx,
                        const plot_range_t *ry, plot_range_t *rl, int lr_panel)
{
    const double h = gr->top - gr->bottom, split = gr->bottom + 0.3 * h;   // the lr panel below
    sbuf_printf(s, "set grid\nunset key\n");
    plot_axis(s, "x", rx, 0, 0.01, 0.0, NAN);
    plot_update_tics(s, rx, 1);
    if (lr_panel)
        sbuf_printf(s, "set lmargin at screen %.4f\nset rmargin at screen 0.985\n"
                       "set tmargin at screen %.4f\nset bmargin at screen %.4f\n"
                       "set format x ''\nunset xlabel\nset ylabel 'training loss (nats)'\n",
                    gr->left, gr->top - 0.01, split + 0.01);
    else
        sbuf_printf(s, "set lmargin at screen %.4f\nset rmargin at screen 0.985\n"
                       "set tmargin at screen %.4f\nset bmargin at screen %.4f\n"
                       "set format x '%%g'\nset xlabel 'update'\n"
                       "set ylabel 'training loss (nats)'\n",
                    gr->left, gr->top - 0.01, gr->bottom + gr->below);
    plot_axis(s, "y", ry, plot_range_log(ry), 0.04, NAN, NAN);   // a spike of 10× stays readable
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++) {
        char block[16], style[64];
        snprintf(block, sizeof block, "l%d", i);
        snprintf(style, sizeof style, "lines lw %g dt %d", st[i].lw, st[i].dt);
        plot_band_clause(s, block, &g[i], st[i].color, style, i == 0);
        if (diverged[i])
            sbuf_printf(s, ", $x%d using 1:2 with points pt 2 ps 2 lw 2 lc rgb '%s' notitle", i,
                        st[i].color);
    }
    if (!lr_panel) {
        sbuf_printf(s, "\n");
        return;
    }
    sbuf_printf(s, "\nset tmargin at screen %.4f\nset bmargin at screen %.4f\nset format x '%%g'\n"
                   "set xlabel 'update'\nset ylabel 'learning rate'\n",
                split - 0.01, gr->bottom + gr->below);
    plot_range_add(rl, 0.0);
    plot_axis(s, "y", rl, 0, 0.1, 0.0, NAN);
    sbuf_printf(s, "set ytics %g\nset format y '%%.0e'\nplot ", plot_tic_step(rl->hi, 2));
    for (int i = 0; i < n; i++)
        sbuf_printf(s, "%s$r%d using 1:2 with lines lw %g dt %d lc rgb '%s' notitle", i ? ", " : "",
                    i, st[i].lw, st[i].dt, st[i].color);
    sbuf_printf(s, "\nset format y '%%g'\n");
}

int plot_fig_loss(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_BAND_MAX_RUNS], nr = 0;
    for (int i = 0; i < set->n && nr < PLOT_BAND_MAX_RUNS; i++)
        if (set->runs[i].nsteps > 0) m[nr++] = i;
    plot_group_t g[PLOT_MAX_SERIES];
    const int n = nr ? plot_band_groups(set, m, nr, g, PLOT_MAX_SERIES) : 0;
    if (n <= 0) return 0;   // more curves than a key can tell apart: the atlas' figures
    snprintf(name, len, "loss");
    plot_range_t rx, ry, rl;
    int diverged[PLOT_MAX_SERIES];
    const int any_div = loss_blocks(s, set, g, n, diverged, &rx, &ry, &rl);
    for (int i = 0; i < n; i++) m[i] = g[i].run[0];   // keys from each group's first seed
    if (plot_range_empty(&ry)) {
        snprintf(name, len, "loss: no finite training loss");
        return -1;
    }
    plot_diff_t d;
    plot_diff(set, m, n, 0, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    char title[400], sub[700];
    plot_title(set, m, n, &d, "Training loss", plot_paper_figure(set, m, n, &d, PLOT_KIND_TRAIN),
               title, sizeof title);
    const int lr_panel = !lr_constant(set, g, n);
    plot_train_subtitle(set, g, n, &d, any_div,
                        lr_panel ? "" : "the learning rate is constant in every run (no panel)",
                        sub, sizeof sub);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) {
        plot_band_key_note(set, &g[i], st[i].key, sizeof st[i].key);
        plot_keyentry(&keys, &st[i], "lines");
    }
    if (any_div) plot_keyentry_text(&keys, "points pt 2 ps 2 lw 2 lc rgb 'black'", "diverged");
    const int rows = plot_key_rows(n + (any_div > 0), plot_styles_longest(st, n));
    plot_grid_t gr;
    plot_grid(&gr, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    loss_panels(s, &gr, g, n, st, diverged, &rx, &ry, &rl, lr_panel);
    plot_end(s, &gr, rows, &keys);
    sbuf_free(&keys);
    return 1;
}
