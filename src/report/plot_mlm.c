/* plot_mlm.c — Fig. 5 of Xiong et al. (2020): the validation masked-LM loss of BERT-style
 * pre-training (data.task = mlm, docs/design.md §6f) against updates, Post-LN with warm-up
 * beside Pre-LN without, each configuration the mean of its seeds with a 95 % band
 * (report/plot_band.h), and the update at which each reaches the loss every run reaches. */
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
    int steps = 0;
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "m%d", i);
        plot_band_block(s, block, set, &g[i], plot_series_val_loss, 1.0);
        m[i] = g[i].run[0];   // legends from each group's first seed
        for (int k = 0; k < g[i].n; k++)
            if (set->runs[g[i].run[k]].cfg.train.steps > steps)
                steps = set->runs[g[i].run[k]].cfg.train.steps;
    }
    const config_t *c = &set->runs[m[0]].cfg;
    const int seeds = plot_band_max_seeds(g, n);
    char seeds_txt[64];
    plot_band_caption(g, n, seeds_txt, sizeof seeds_txt);
    sbuf_printf(s, "set title \"Validation masked-LM loss: Post-LN with warm-up, Pre-LN without "
                   "(Fig. 5, BERT)\\n{/*0.8 L = %d, d = %d, bidirectional, %g%% of bytes chosen "
                   "(80/10/10), %s, %s decay}\\n{/*0.8 %d seed%s × %d updates%s; dotted: %.3f, the "
                   "loss every run reaches}\"\n",
                c->model.layers, c->model.d_model, 100.0 * c->data.mask_rate,
                config_optimizer_name(c->train.optimizer),
                config_schedule_name(c->train.schedule), seeds, seeds > 1 ? "s" : "", steps,
                seeds_txt, target);
    sbuf_printf(s, "set grid\nset key top right box opaque\nset xlabel 'update'\n"
                   "set ylabel 'validation MLM loss (nats per chosen byte)'\n");
    if (isfinite(target))
        sbuf_printf(s, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead "
                       "dt 3 lc rgb 'gray40'\n", target, target);
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        char label[400], block[16], style[64];
        plot_train_label(set, m, n, i, label, sizeof label);
        plot_band_seeds_note(&g[i], label, sizeof label);
        double at, half;
        int reached;
        plot_band_reach_ci(set, &g[i], plot_series_val_loss, target, 0, &at, &half, &reached);
        size_t used = strlen(label);
        if (reached > 1)
            snprintf(label + used, sizeof label - used, ": %.3f at update %.0f ± %.0f", target,
                     at, half);
        else if (reached == 1)
            snprintf(label + used, sizeof label - used, ": %.3f at update %.0f", target, at);
        snprintf(block, sizeof block, "m%d", i);
        snprintf(style, sizeof style, "linespoints pt %d ps 0.8 lw 2", plot_point_type(r));
        plot_band_clause(s, block, &g[i], plot_run_color(r, plot_family_rank(set, m, n, i)),
                         style, label, i == 0);
    }
    sbuf_printf(s, "\n");
    return 1;
}
