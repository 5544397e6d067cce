/* plot_mlm.c — the validation masked-LM loss of BERT-style pre-training (data.task = mlm,
 * docs/design.md §6f; Xiong et al. 2020's Fig. 5 when the runs are its set) against updates,
 * each configuration the mean of its seeds with a 95 % band (report/plot_band.h), and the
 * update at which each reaches the loss every run reaches. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/plot_band.h"

int plot_fig_mlm(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_BAND_MAX_RUNS], nr = 0;
    for (int i = 0; i < set->n && nr < PLOT_BAND_MAX_RUNS; i++)
        if (set->runs[i].cfg.data.task == TASK_MLM && set->runs[i].nevals > 1) m[nr++] = i;
    plot_group_t g[PLOT_MAX_SERIES];
    const int n = nr ? plot_band_groups(set, m, nr, g, PLOT_MAX_SERIES) : 0;
    if (n <= 0) return 0;
    snprintf(name, len, "mlm_val_loss");
    // the loss every run reaches (the largest of the runs' minima): each seed's update there
    const double target = plot_band_common_target(set, g, n, plot_series_val_loss, 0);
    plot_range_t rx, ry;
    plot_range_init(&rx);
    plot_range_init(&ry);
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "m%d", i);
        plot_band_block(s, block, set, &g[i], plot_series_val_loss, 1.0, 0.0, &rx, &ry);   // ≥ 0
        m[i] = g[i].run[0];   // keys from each group's first seed
    }
    if (plot_range_empty(&ry)) {
        snprintf(name, len, "mlm_val_loss: no finite validation loss");
        return -1;
    }
    plot_diff_t d;
    plot_diff(set, m, n, 0, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    char title[400], sub[900], extra[200] = "";
    plot_title(set, m, n, &d, "Validation masked-LM loss",
               plot_paper_figure(set, m, n, &d, PLOT_KIND_TRAIN), title, sizeof title);
    if (isfinite(target))
        snprintf(extra, sizeof extra, "dotted: %.3f, the loss every run reaches; key: the update "
                 "each first reaches it", target);
    plot_train_subtitle(set, g, n, &d, 0, extra, sub, sizeof sub);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) {
        char *label = st[i].key;
        plot_band_key_note(set, &g[i], label, sizeof st[i].key);
        double at, half;
        int reached = 0;
        if (isfinite(target))
            plot_band_reach_ci(set, &g[i], plot_series_val_loss, target, 0, &at, &half, &reached);
        const size_t used = strlen(label);
        if (reached > 1)
            snprintf(label + used, sizeof st[i].key - used, ": update %.0f ± %.0f", at, half);
        else if (reached == 1)
            snprintf(label + used, sizeof st[i].key - used, ": update %.0f", at);
        plot_keyentry(&keys, &st[i], "linespoints");
    }
    const int rows = plot_key_rows(n, plot_styles_longest(st, n));
    plot_grid_t gr;
    plot_grid(&gr, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    plot_panel(s, &gr, 0);
    sbuf_printf(s, "set grid\nunset key\nset xlabel 'update'\n"
                   "set ylabel 'validation MLM loss (nats per chosen byte)'\n");
    plot_axis(s, "x", &rx, 0, 0.02, 0.0, NAN);
    plot_update_tics(s, &rx, 1);
    plot_axis(s, "y", &ry, plot_range_log(&ry), 0.05, NAN, NAN);
    if (isfinite(target))
        sbuf_printf(s, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead "
                       "dt 3 lc rgb 'gray40'\n", target, target);
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++) {
        char block[16], style[80];
        snprintf(block, sizeof block, "m%d", i);
        snprintf(style, sizeof style, "linespoints pt %d ps 0.8 lw %g dt %d", st[i].pt, st[i].lw,
                 st[i].dt);
        plot_band_clause(s, block, &g[i], st[i].color, style, i == 0);
    }
    sbuf_printf(s, "\n");
    plot_end(s, &gr, rows, &keys);
    sbuf_free(&keys);
    return 1;
}
