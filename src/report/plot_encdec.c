/* plot_encdec.c — figures over the rows of a model's layers that an encoder–decoder adds
 * (docs/design.md §6b): Fig. 3(a,b) with the encoder's and the decoder's layers on one axis,
 * Liu et al. 2020's gradient at every sub-layer's output, and validation loss per epoch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/plot_band.h"

/* x tics E1 … EN, D1 … DM (rows 1 … N+M) and a dotted line between the stacks. The order is
 * the forward pass's: left to right is distance from the input, so the decoder's growth reads
 * on from the encoder's. */
static void layer_axis(sbuf_t *s, const config_t *c)
{
    const int N = c->model.layers, M = config_dec_layers(c);
    sbuf_printf(s, "set xtics (");
    for (int i = 0; i < N + M; i++)
        sbuf_printf(s, "%s'%s%d' %d", i ? ", " : "", i < N ? "E" : "D", i < N ? i + 1 : i - N + 1,
                    i + 1);
    sbuf_printf(s, ")\nset arrow 1 from %g, graph 0 to %g, graph 1 nohead dt 3 lc rgb 'gray40'\n"
                   "set xlabel 'layer (E = encoder, D = decoder)'\nset xrange [0.5:%g]\n",
                N + 0.5, N + 0.5, N + M + 0.5);
}

/* The group a layer figure draws: encoder–decoder runs if there are any, else single stacks. */
static int pick_group(const plot_set_t *set, int *m, int *encdec)
{
    int n = plot_pick_layer_group(set, ARCH_ENCDEC, m);
    *encdec = n > 0;
    if (!n) n = plot_pick_layer_group(set, ARCH_LM, m);
    return n;
}

/* The plot command of one panel: run i's block $<b><i>_<panel> in its style, no titles. */
static void plot_series(sbuf_t *s, const plot_style_t *st, int n, char b, int panel, double ps)
{
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++)
        sbuf_printf(s, "%s$%c%d_%d using 1:2:3:4 with yerrorlines lc rgb '%s' pt %d ps %g dt %d lw 2 "
                       "notitle", i ? ", " : "", b, i, panel, st[i].color, st[i].pt, ps, st[i].dt);
    sbuf_printf(s, "\n");
}

int plot_fig_grad_vs_layer_encdec(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES];
    const int n = plot_pick_layer_group(set, ARCH_ENCDEC, m);
    if (n == 0) return 0;
    snprintf(name, len, "grad_vs_layer");
    static const char *const params[2] = {"w1", "w2"};
    plot_range_t rg[2];
    for (int p = 0; p < 2; p++) {
        plot_range_init(&rg[p]);
        for (int i = 0; i < n; i++) {
            const plot_run_t *r = &set->runs[m[i]];
            char block[32];
            snprintf(block, sizeof block, "g%d_%d", i, p);
            plot_block_split(s, block, r->probe->grad_fro, r->probe->S, r->probe->ax.L,
                             r->probe->ax.nparam, plot_param_col(r, params[p]), 1.0,
                             r->cfg.model.layers, &rg[p]);
        }
    }
    if (plot_range_empty(&rg[0]) && plot_range_empty(&rg[1])) {
        snprintf(name, len, "grad_vs_layer: no finite gradient");
        return -1;
    }
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    const plot_run_t *r0 = &set->runs[m[0]];
    char title[400], sub[600], shared[300], seeds[80];
    plot_title(set, m, n, &d, "Expected gradient of the FFN weights per layer at initialisation",
               plot_paper_figure(set, m, n, &d, PLOT_KIND_LAYERS), title, sizeof title);
    plot_shared(&d, r0, PLOT_SHARED_INIT, 1, shared, sizeof shared);
    plot_probe_seeds(r0, seeds, sizeof seeds);
    snprintf(sub, sizeof sub, "%s; %s", shared, seeds);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) plot_keyentry(&keys, &st[i], "linespoints");
    const int rows = plot_key_rows(n, plot_styles_longest(st, n));
    plot_grid_t g;
    plot_grid(&g, 1, 2, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\n");
    layer_axis(s, &r0->cfg);
    for (int p = 0; p < 2; p++) {
        plot_panel(s, &g, p);
        plot_axis(s, "y", &rg[p], plot_range_log(&rg[p]), 0.06, 0.0, NAN);
        sbuf_printf(s, "set title 'W^%d'\nset ylabel '‖E_{batch} ∂L/∂W^%d‖_F'\n", p + 1, p + 1);
        plot_series(s, st, n, 'g', p, 1.3);
    }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}

int plot_fig_subout(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES], encdec;
    const int n = pick_group(set, m, &encdec);
    if (n == 0) return 0;
    const plot_run_t *r0 = &set->runs[m[0]];
    const probe_axes_t *ax0 = &r0->probe->ax;
    if (ax0->nsub == 0 || !r0->probe->subout_grad) return 0;
    snprintf(name, len, "subout_grad");
    plot_range_t rg[8];
    for (int x = 0; x < ax0->nsub && x < 8; x++) {
        plot_range_init(&rg[x]);
        for (int i = 0; i < n; i++) {
            const probe_t *p = set->runs[m[i]].probe;
            char block[32];
            snprintf(block, sizeof block, "u%d_%d", i, x);
            plot_block_split(s, block, p->subout_grad, p->S, p->ax.L, p->ax.nsub,
                             probe_axis_find(p->ax.sub, p->ax.nsub, ax0->sub[x]), 1.0,
                             encdec ? set->runs[m[i]].cfg.model.layers : 0, &rg[x]);
        }
    }
    int any = 0;
    for (int x = 0; x < ax0->nsub && x < 8; x++) any |= !plot_range_empty(&rg[x]);
    if (!any) {
        snprintf(name, len, "subout_grad: no finite gradient");
        return -1;
    }
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_INIT, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    char title[400], sub[600], shared[300], seeds[80];
    plot_title(set, m, n, &d, "Gradient reaching each sub-layer's output at initialisation, "
               "E_{token} ‖∂L/∂ out‖", "Liu et al. 2020, Fig. 3", title, sizeof title);
    plot_shared(&d, r0, PLOT_SHARED_INIT, 1, shared, sizeof shared);
    plot_probe_seeds(r0, seeds, sizeof seeds);
    snprintf(sub, sizeof sub, "%s; %s", shared, seeds);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) plot_keyentry(&keys, &st[i], "linespoints");
    const int rows = plot_key_rows(n, plot_styles_longest(st, n));
    const int panels = ax0->nsub < 8 ? ax0->nsub : 8;
    plot_grid_t g;
    plot_grid(&g, 1, panels, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset ylabel 'E_{token} ‖∂L/∂ out‖'\n");
    if (encdec) {
        layer_axis(s, &r0->cfg);
        if (panels > 2) sbuf_printf(s, "set xtics @F70\n");
    } else {
        sbuf_printf(s, "set xlabel 'layer l'\n");
        plot_layer_axis(s, r0->cfg.model.layers);
    }
    static const struct { const char *name, *title; } KINDS[] = {
        {"self", "self-attention"}, {"cross", "cross-attention (decoder)"}, {"ffn", "FFN"},
    };
    for (int x = 0; x < panels; x++) {
        const char *title_x = ax0->sub[x];
        for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
            if (!strcmp(KINDS[k].name, ax0->sub[x])) title_x = KINDS[k].title;
        plot_panel(s, &g, x);
        plot_axis(s, "y", &rg[x], plot_range_log(&rg[x]), 0.06, 0.0, NAN);
        sbuf_printf(s, "set title '%s'\n", title_x);
        plot_series(s, st, n, 'u', x, 1.1);
    }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}

int plot_fig_val_loss(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_BAND_MAX_RUNS], nr = 0, epochs = 1;
    for (int i = 0; i < set->n && nr < PLOT_BAND_MAX_RUNS; i++)
        if (set->runs[i].nevals > 1 && set->runs[i].cfg.data.task != TASK_MLM) {   // mlm: Fig. 5
            // a curve needs two points (one: the final loss only)
            m[nr++] = i;
            if (isnan(set->runs[i].epoch_batches)) epochs = 0;
        }
    plot_group_t g[PLOT_MAX_SERIES];
    const int n = nr ? plot_band_groups(set, m, nr, g, PLOT_MAX_SERIES) : 0;
    if (n <= 0) return 0;   // more curves than a key can tell apart: the atlas' figures
    snprintf(name, len, "val_loss");
    plot_range_t rx, ry;
    plot_range_init(&rx);
    plot_range_init(&ry);
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "v%d", i);
        const plot_run_t *r = &set->runs[g[i].run[0]];
        plot_band_block(s, block, set, &g[i], plot_series_val_loss,
                        epochs ? 1.0 / r->epoch_batches : 1.0, 0.0, &rx, &ry);   // a loss ≥ 0
        m[i] = g[i].run[0];   // keys from each group's first seed
    }
    if (plot_range_empty(&ry)) {
        snprintf(name, len, "val_loss: no finite validation loss");
        return -1;
    }
    plot_diff_t d;
    plot_diff(set, m, n, 0, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    char title[400], sub[700];
    plot_title(set, m, n, &d, "Validation loss", plot_paper_figure(set, m, n, &d, PLOT_KIND_TRAIN),
               title, sizeof title);
    plot_train_subtitle(set, g, n, &d, 0, "", sub, sizeof sub);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) {
        plot_band_key_note(set, &g[i], st[i].key, sizeof st[i].key);
        plot_keyentry(&keys, &st[i], "linespoints");
    }
    const int rows = plot_key_rows(n, plot_styles_longest(st, n));
    plot_grid_t gr;
    plot_grid(&gr, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    plot_panel(s, &gr, 0);
    sbuf_printf(s, "set grid\nunset key\nset xlabel '%s'\n"
                   "set ylabel 'validation loss (nats per token)'\n", epochs ? "epoch" : "update");
    plot_axis(s, "x", &rx, 0, 0.02, NAN, NAN);
    plot_update_tics(s, &rx, !epochs);
    plot_axis(s, "y", &ry, plot_range_log(&ry), 0.05, NAN, NAN);
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++) {
        char block[16], style[80];
        snprintf(block, sizeof block, "v%d", i);
        snprintf(style, sizeof style, "linespoints pt %d lw %g dt %d", st[i].pt, st[i].lw, st[i].dt);
        plot_band_clause(s, block, &g[i], st[i].color, style, i == 0);
    }
    sbuf_printf(s, "\n");
    plot_end(s, &gr, rows, &keys);
    sbuf_free(&keys);
    return 1;
}
