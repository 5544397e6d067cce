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

/* The group's runs measured different data (a task, a Zipf exponent). */
static int mixed_data(const plot_set_t *set, const int *m, int n)
{
    char a[64], b[64];
    plot_data_text(&set->runs[m[0]].cfg, a, sizeof a);
    for (int i = 1; i < n; i++) {
        plot_data_text(&set->runs[m[i]].cfg, b, sizeof b);
        if (strcmp(a, b)) return 1;
    }
    return 0;
}

/* Legend entry i of a group: placement, and the data when the runs differ in it (else the run
 * name when two runs share a placement), colour, point type, dash (solid for the first data). */
static void series_style(const plot_set_t *set, const int *m, int n, int i, char *label,
                         size_t len, const char **color, int *pt, int *dt)
{
    const plot_run_t *r = &set->runs[m[i]];
    *dt = 1;
    if (mixed_data(set, m, n)) {
        char data[64], first[64];
        plot_run_label(r, 0, label, len);
        plot_data_text(&r->cfg, data, sizeof data);
        plot_data_text(&set->runs[m[0]].cfg, first, sizeof first);
        const size_t used = strlen(label);
        snprintf(label + used, len - used, ", %s", data);
        *dt = strcmp(data, first) ? 2 : 1;
    } else {
        plot_run_label(r, plot_labels_need_names(set, m, n), label, len);
    }
    *color = plot_run_color(r, plot_family_rank(set, m, n, i));
    *pt = plot_point_type(r);
}

/* The plot command's series of one panel: run i's block $<b><i>_<panel>, styled by
 * series_style; the legend is drawn by the first panel only. */
static void plot_series(sbuf_t *s, const plot_set_t *set, const int *m, int n, char b, int panel,
                        double ps)
{
    for (int i = 0; i < n; i++) {
        char label[200];
        const char *c;
        int pt, dt;
        series_style(set, m, n, i, label, sizeof label, &c, &pt, &dt);
        sbuf_printf(s, "%s$%c%d_%d using 1:2:3 with yerrorlines lc rgb '%s' pt %d ps %g dt %d "
                       "title '%s'", i ? ", " : "", b, i, panel, c, pt, ps, dt, label);
    }
    sbuf_printf(s, "\nunset key\n");
}

/* One legend for a row of panels, below them (set before the first panel, unset after it);
 * the panels' bottom edge leaves it room, so no key covers data. */
static void shared_key(sbuf_t *s)
{
    sbuf_printf(s, "set bmargin at screen 0.2\nset key at screen 0.5, 0.015 center bottom "
                   "horizontal maxrows 2 box opaque width 1 font ',11'\n");
}

int plot_fig_grad_vs_layer_encdec(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES];
    const int n = plot_pick_layer_group(set, ARCH_ENCDEC, m);
    if (n == 0) return 0;
    snprintf(name, len, "grad_vs_layer");
    static const char *const params[2] = {"w1", "w2"};
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        for (int p = 0; p < 2; p++) {
            char block[32];
            snprintf(block, sizeof block, "g%d_%d", i, p);
            plot_block_split(s, block, r->probe->grad_fro, r->probe->S, r->probe->ax.L,
                             r->probe->ax.nparam, plot_param_col(r, params[p]), 1.0,
                             r->cfg.model.layers);
        }
    }
    const plot_run_t *r0 = &set->runs[m[0]];
    char data[64];
    if (mixed_data(set, m, n)) snprintf(data, sizeof data, "data in the legend");
    else plot_data_text(&r0->cfg, data, sizeof data);
    sbuf_printf(s, "set multiplot layout 1,2 title \"Expected gradient norm of the FFN weights "
                   "per layer of the %d-%d encoder–decoder at initialisation (Fig. 3a,b)\\n{/*0.8 "
                   "d = %d, d_{ff} = %d, %s, %d seeds × %d batches, bars: 95%% CI}\"\n",
                r0->cfg.model.layers, config_dec_layers(&r0->cfg), r0->cfg.model.d_model,
                r0->cfg.model.d_ff, data, r0->probe->S, r0->cfg.probe.batches);
    sbuf_printf(s, "set grid\nset yrange [0:*]\n");
    shared_key(s);
    layer_axis(s, &r0->cfg);
    for (int p = 0; p < 2; p++) {
        sbuf_printf(s, "set title 'W^%d'\nset ylabel '‖E_{batch} ∂L/∂W^%d‖_F'\nplot ", p + 1, p + 1);
        plot_series(s, set, m, n, 'g', p, 1.3);
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

int plot_fig_subout(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES], encdec;
    const int n = pick_group(set, m, &encdec);
    if (n == 0) return 0;
    const plot_run_t *r0 = &set->runs[m[0]];
    const probe_axes_t *ax0 = &r0->probe->ax;
    if (ax0->nsub == 0 || !r0->probe->subout_grad || isnan(r0->probe->subout_grad[0])) return 0;
    snprintf(name, len, "subout_grad");
    for (int i = 0; i < n; i++) {
        const probe_t *p = set->runs[m[i]].probe;
        for (int x = 0; x < ax0->nsub; x++) {
            char block[32];
            snprintf(block, sizeof block, "u%d_%d", i, x);
            plot_block_split(s, block, p->subout_grad, p->S, p->ax.L, p->ax.nsub,
                             probe_axis_find(p->ax.sub, p->ax.nsub, ax0->sub[x]), 1.0,
                             encdec ? set->runs[m[i]].cfg.model.layers : 0);
        }
    }
    char sub[256];
    plot_subtitle(r0, sub, sizeof sub);
    if (mixed_data(set, m, n)) {   // the legend says which data each run used
        char data[64];
        plot_data_text(&r0->cfg, data, sizeof data);
        char *at = strstr(sub, data);
        if (at) {
            char rest[256];
            snprintf(rest, sizeof rest, "%s", at + strlen(data));
            snprintf(at, sizeof sub - (size_t)(at - sub), "data in the legend%s", rest);
        }
    }
    sbuf_printf(s, "set multiplot layout 1,%d title \"Gradient reaching each sub-layer's output at "
                   "initialisation, E_{token} ‖∂L/∂ out‖ (Liu et al. 2020, Fig. 3)\\n{/*0.8 %s}\"\n",
                ax0->nsub, sub);
    sbuf_printf(s, "set grid\nset logscale y\nset format y '10^{%%L}'\n");
    shared_key(s);
    if (encdec) {
        layer_axis(s, &r0->cfg);
        if (ax0->nsub > 2) sbuf_printf(s, "set xtics font ',9'\n");
    }
    else sbuf_printf(s, "set xlabel 'layer l'\nset xtics 1\nset offsets 0.3, 0.3, 0, 0\n");
    static const struct { const char *name, *title; } KINDS[] = {
        {"self", "self-attention"}, {"cross", "cross-attention (decoder)"}, {"ffn", "FFN"},
    };
    for (int x = 0; x < ax0->nsub; x++) {
        const char *title = ax0->sub[x];
        for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
            if (!strcmp(KINDS[k].name, ax0->sub[x])) title = KINDS[k].title;
        sbuf_printf(s, "set title '%s'\nset ylabel 'E_{token} ‖∂L/∂ out‖'\nplot ", title);
        plot_series(s, set, m, n, 'u', x, 1.1);
    }
    sbuf_printf(s, "unset multiplot\n");
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
    if (n <= 0) return 0;   // more curves than a legend can tell apart: the atlas' figures
    snprintf(name, len, "val_loss");
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "v%d", i);
        const plot_run_t *r = &set->runs[g[i].run[0]];
        plot_band_block(s, block, set, &g[i], plot_series_val_loss,
                        epochs ? 1.0 / r->epoch_batches : 1.0);
        m[i] = g[i].run[0];   // legends from each group's first seed
    }
    const config_t *c = &set->runs[m[0]].cfg;
    char data[64], depth[48], lr[32] = "", seeds[64];
    plot_data_text(c, data, sizeof data);
    plot_band_caption(g, n, seeds, sizeof seeds);
    if (c->model.arch == ARCH_ENCDEC)
        snprintf(depth, sizeof depth, "%d-%d encoder–decoder", c->model.layers,
                 config_dec_layers(c));
    else snprintf(depth, sizeof depth, "L = %d", c->model.layers);
    int one_lr = 1;
    for (int i = 1; i < n; i++) one_lr &= set->runs[m[i]].cfg.train.lr == c->train.lr;
    const int one_opt = plot_same_optimizer(set, m, n);
    if (one_lr) snprintf(lr, sizeof lr, "%slr %g", one_opt ? " " : "", c->train.lr);
    char opt[48];
    if (one_opt) snprintf(opt, sizeof opt, "%s", config_optimizer_name(c->train.optimizer));
    else snprintf(opt, sizeof opt, "optimizer as keyed%s", one_lr ? ", " : "");
    sbuf_printf(s, "set title \"Validation loss%s\\n{/*0.8 %s, "
                   "d = %d, %s, %s%s, %s schedule after the warm-up%s}\"\n",
                plot_warmup_question(set, m, n), depth,
                c->model.d_model, data, opt, lr,
                config_schedule_name(c->train.schedule), seeds);
    sbuf_printf(s, "set grid\nset key top right box opaque\nset xlabel '%s'\n"
                   "set ylabel 'validation loss (nats per token)'\n", epochs ? "epoch" : "update");
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        char label[300], block[16], style[64];
        plot_train_label(set, m, n, i, label, sizeof label);
        plot_band_seeds_note(&g[i], label, sizeof label);
        int nd = 0;
        for (int k = 0; k < g[i].n; k++) nd += !isnan(set->runs[g[i].run[k]].diverged_at);
        const size_t used = strlen(label);
        if (nd) snprintf(label + used, sizeof label - used, g[i].n > 1 ? " (%d diverged)" : " (diverged)", nd);
        snprintf(block, sizeof block, "v%d", i);
        snprintf(style, sizeof style, "linespoints pt %d lw 2", plot_point_type(r));
        plot_band_clause(s, block, &g[i], plot_run_color(r, plot_family_rank(set, m, n, i)),
                         style, label, i == 0);
    }
    sbuf_printf(s, "\n");
    return 1;
}
