/* plot_bleu.c — BLEU against epochs (Fig. 2 and Fig. 4 of Xiong et al. 2020, as the paper
 * draws them beside the validation loss): /train/bleu of every run that logged it
 * (train.bleu_every, docs/paper_training.md), one line per run. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report/plot_internal.h"

int plot_fig_bleu(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[PLOT_MAX_SERIES], n = 0, epochs = 1, more = 0;
    for (int i = 0; i < set->n; i++)
        if (set->runs[i].nbleu > 0) {
            if (n == PLOT_MAX_SERIES) { more = 1; break; }
            m[n++] = i;
            if (isnan(set->runs[i].epoch_batches)) epochs = 0;
        }
    if (!n || more) return 0;   // more curves than a legend can tell apart
    snprintf(name, len, "bleu");
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        sbuf_printf(s, "$b%d << EOD\n", i);
        for (size_t k = 0; k < r->nbleu; k++)
            if (isfinite(r->bleu[k]))
                sbuf_printf(s, "%.10g %.10g\n",
                            epochs ? r->bleu_step[k] / r->epoch_batches : r->bleu_step[k],
                            r->bleu[k]);
        sbuf_printf(s, "EOD\n");
    }
    const config_t *c = &set->runs[m[0]].cfg;
    char data[64];
    plot_data_text(c, data, sizeof data);
    sbuf_printf(s, "set title \"BLEU on the validation split (Fig. 2, Fig. 4)\\n{/*0.8 %d-%d "
                   "encoder–decoder, d = %d, %s; greedy, NLTK corpus BLEU on detokenised "
                   "text}\"\n", c->model.layers, config_dec_layers(c), c->model.d_model, data);
    sbuf_printf(s, "set grid\nset key bottom right box opaque\nset xlabel '%s'\n"
                   "set ylabel 'BLEU'\nset yrange [0:*]\n", epochs ? "epoch" : "update");
    sbuf_printf(s, "plot ");
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        char label[200];
        plot_train_label(set, m, n, i, label, sizeof label);
        sbuf_printf(s, "%s$b%d using 1:2 with linespoints pt %d lw 2 lc rgb '%s' title '%s%s'",
                    i ? ", " : "", i, plot_point_type(r),
                    plot_run_color(r, plot_family_rank(set, m, n, i)), label,
                    isnan(r->diverged_at) ? "" : " (diverged)");
    }
    sbuf_printf(s, "\n");
    return 1;
}
