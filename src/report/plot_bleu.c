/* plot_bleu.c — BLEU against epochs (Fig. 2 and Fig. 4 of Xiong et al. 2020, as the paper
 * draws them beside the validation loss): /train/bleu of every run that logged it
 * (train.bleu_every, docs/paper_training.md), each configuration the mean of its seeds with a
 * 95 % band (report/plot_band.h), and the epoch at which each first reaches the BLEU every run
 * reaches (§4.1: Pre-LN without warm-up reaches a given BLEU in fewer epochs). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/plot_band.h"

/* The legend of group i: its label, seeds, diverged seeds and the epoch (update) at which its
 * seeds reach target, mean ± 95 % half-width (docs/design.md §6e). */
static void bleu_label(const plot_set_t *set, const plot_group_t *g, const int *m, int n, int i,
                       double target, double xscale, int epochs, char *label, size_t len)
{
    plot_train_label(set, m, n, i, label, len);
    plot_band_seeds_note(&g[i], label, len);
    int nd = 0;
    for (int k = 0; k < g[i].n; k++) nd += !isnan(set->runs[g[i].run[k]].diverged_at);
    size_t used = strlen(label);
    if (nd && used < len)
        snprintf(label + used, len - used, g[i].n > 1 ? " (%d diverged)" : " (diverged)", nd);
    if (!isfinite(target)) return;
    double at, half;
    int reached;
    plot_band_reach_ci(set, &g[i], plot_series_bleu, target, 1, &at, &half, &reached);
    char when[64];
    plot_band_reach_text(at, half, reached, xscale, epochs ? 2 : 0, when, sizeof when);
    used = strlen(label);
    if (used < len)
        snprintf(label + used, len - used, reached ? ": %.2f at %s %s" : ": never %.2f", target,
                 epochs ? "epoch" : "update", when);
    used = strlen(label);
    if (reached && reached < g[i].n && used < len)
        snprintf(label + used, len - used, " (%d of %d seeds)", reached, g[i].n);
}

int plot_fig_bleu(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_BAND_MAX_RUNS], nr = 0, epochs = 1, logged = 0;
    for (int i = 0; i < set->n && nr < PLOT_BAND_MAX_RUNS; i++)
        if (plot_member_bleu(&set->runs[i])) {   // with the seeds that diverged before a BLEU
            m[nr++] = i;
            logged |= set->runs[i].nbleu > 0;
            if (isnan(set->runs[i].epoch_batches)) epochs = 0;
        }
    plot_group_t g[PLOT_MAX_SERIES];
    const int n = logged ? plot_band_groups(set, m, nr, g, PLOT_MAX_SERIES) : 0;
    if (n <= 0) return 0;   // more curves than a legend can tell apart
    snprintf(name, len, "bleu");
    // the BLEU every run reaches (the smallest of the runs' best from 0.01 up): each seed's epoch there
    const double target = plot_band_common_target(set, g, n, plot_series_bleu, 1);
    size_t rows[PLOT_MAX_SERIES], any = 0;
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "b%d", i);
        const plot_run_t *r = &set->runs[g[i].run[0]];
        rows[i] = plot_band_block(s, block, set, &g[i], plot_series_bleu,
                                  epochs ? 1.0 / r->epoch_batches : 1.0);
        m[i] = g[i].run[0];   // legends from each group's first seed
        any += rows[i];
    }
    if (!any) return 0;   // no finite BLEU at all
    const config_t *c = &set->runs[m[0]].cfg;
    char data[64], seeds[64];
    plot_data_text(c, data, sizeof data);
    plot_band_caption(g, n, seeds, sizeof seeds);
    sbuf_printf(s, "set title \"BLEU on the validation split (Fig. 2, Fig. 4)\\n{/*0.8 %d-%d "
                   "encoder–decoder, d = %d, %s; greedy, NLTK corpus BLEU on detokenised "
                   "text%s}", c->model.layers, config_dec_layers(c), c->model.d_model, data,
                seeds);
    if (isfinite(target))
        sbuf_printf(s, "\\n{/*0.8 dotted: BLEU %.2f, the lowest of the runs' best from 0.01 up}"
                       "\\n{/*0.8 key: the %s each configuration first reaches it, mean ± 95%% "
                       "CI over its seeds (linear between evaluations)}", target,
                    epochs ? "epoch" : "update");
    sbuf_printf(s, "\"\nset grid\nset key top left box opaque\nset xlabel '%s'\n"
                   "set ylabel 'BLEU'\nset yrange [0:*<100]\n", epochs ? "epoch" : "update");
    if (isfinite(target))
        sbuf_printf(s, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead "
                       "dt 3 lc rgb 'gray40'\n", target, target);
    sbuf_printf(s, "plot ");
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (!rows[i]) continue;   // every seed diverged before its first BLEU: `info --train`
        const plot_run_t *r = &set->runs[m[i]];
        char label[400], block[16], style[64];
        bleu_label(set, g, m, n, i, target, epochs ? 1.0 / r->epoch_batches : 1.0, epochs,
                   label, sizeof label);
        snprintf(block, sizeof block, "b%d", i);
        snprintf(style, sizeof style, "linespoints pt %d lw 2", plot_point_type(r));
        plot_band_clause(s, block, &g[i], plot_run_color(r, plot_family_rank(set, m, n, i)),
                         style, label, first);
        first = 0;
    }
    sbuf_printf(s, "\n");
    return 1;
}
