/* plot_bleu.c — BLEU against epochs (as Xiong et al. 2020's Fig. 2 and Fig. 4 draw it beside
 * the validation loss): /train/bleu of every run that logged it (train.bleu_every,
 * docs/paper_training.md), each configuration the mean of its seeds with a 95 % band that
 * never goes below 0 (report/plot_band.h), and the epoch at which each first reaches the BLEU
 * every run reaches (§4.1: Pre-LN without warm-up reaches a given BLEU in fewer epochs). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/plot_band.h"

/* The key of group i: what tells it apart, its seeds and diverged seeds, and the epoch (update)
 * at which its seeds reach target, mean ± 95 % half-width (docs/design.md §6e). */
static void bleu_key(const plot_set_t *set, const plot_group_t *g, int i, double target,
                     double xscale, int epochs, char *label, size_t len)
{
    plot_band_key_note(set, &g[i], label, len);
    if (!isfinite(target)) return;
    double at, half;
    int reached;
    plot_band_reach_ci(set, &g[i], plot_series_bleu, target, 1, &at, &half, &reached);
    char when[64];
    plot_band_reach_text(at, half, reached, xscale, epochs ? 2 : 0, when, sizeof when);
    size_t used = strlen(label);
    if (used < len)
        snprintf(label + used, len - used, reached ? ": %s %s" : ": never", epochs ? "epoch" : "update",
                 when);
    used = strlen(label);
    if (reached && reached < g[i].n && used < len)
        snprintf(label + used, len - used, " (%d of %d seeds)", reached, g[i].n);
}

/* The figure's configurations: every run that logged BLEU (with the seeds that diverged before
 * one) grouped by configuration into g; *epochs: every run knows its updates per epoch. Returns
 * the groups (0: none, or more curves than a key can tell apart). */
static int bleu_groups(const plot_set_t *set, plot_group_t *g, int *epochs)
{
    int m[PLOT_BAND_MAX_RUNS], nr = 0, logged = 0;
    *epochs = 1;
    for (int i = 0; i < set->n && nr < PLOT_BAND_MAX_RUNS; i++)
        if (plot_member_bleu(&set->runs[i])) {   // with the seeds that diverged before a BLEU
            m[nr++] = i;
            logged |= set->runs[i].nbleu > 0;
            if (isnan(set->runs[i].epoch_batches)) *epochs = 0;
        }
    return logged ? plot_band_groups(set, m, nr, g, PLOT_MAX_SERIES) : 0;
}

/* Block b<i> of each group's BLEU, against the epoch (or the update); rows_of[i] its rows; rx, ry
 * set. Returns the rows of all. */
static size_t bleu_blocks(sbuf_t *s, const plot_set_t *set, const plot_group_t *g, int n,
                          int epochs, size_t *rows_of, plot_range_t *rx, plot_range_t *ry)
{
    size_t any = 0;
    plot_range_init(rx);
    plot_range_init(ry);
    for (int i = 0; i < n; i++) {
        char block[16];
        snprintf(block, sizeof block, "b%d", i);
        const plot_run_t *r = &set->runs[g[i].run[0]];
        rows_of[i] = plot_band_block(s, block, set, &g[i], plot_series_bleu,
                                     epochs ? 1.0 / r->epoch_batches : 1.0, 0.0, rx, ry);
        any += rows_of[i];
    }
    return any;
}

/* Title and subtitle: what the runs share, their seeds, and what the dotted target and the key
 * say. m: each group's first seed. */
static void bleu_caption(const plot_set_t *set, const int *m, const plot_group_t *g, int n,
                         const plot_diff_t *d, double target, int epochs, char *title,
                         size_t tlen, char *sub, size_t slen)
{
    char extra[300] = "greedy decoding, NLTK corpus BLEU on detokenised text";
    plot_title(set, m, n, d, "BLEU on the validation split",
               plot_paper_figure(set, m, n, d, PLOT_KIND_TRAIN), title, tlen);
    if (isfinite(target))
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "; dotted: BLEU %.2f, the "
                 "lowest of the runs' best; key: the %s each first reaches it (mean ± 95 %% CI)",
                 target, epochs ? "epoch" : "update");
    else
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "; no run's BLEU left 0");
    plot_train_subtitle(set, g, n, d, 0, extra, sub, slen);
}

/* The panel: BLEU (0-100) against the epoch (or update), the target dotted, a band a group. */
static void bleu_panel(sbuf_t *s, const plot_grid_t *gr, const plot_group_t *g, int n,
                       const plot_style_t *st, const size_t *rows_of, plot_range_t *rx,
                       plot_range_t *ry, double target, int epochs)
{
    plot_panel(s, gr, 0);
    sbuf_printf(s, "set grid\nunset key\nset xlabel '%s'\nset ylabel 'BLEU'\n",
                epochs ? "epoch" : "update");
    plot_axis(s, "x", rx, 0, 0.03, NAN, NAN);
    plot_update_tics(s, rx, !epochs);
    plot_range_add(ry, 0.0);
    plot_range_add(ry, 1.0);   // a BLEU that never left 0 is drawn at 0, not magnified
    plot_axis(s, "y", ry, 0, 0.05, 0.0, 100.0);
    if (isfinite(target))
        sbuf_printf(s, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead "
                       "dt 3 lc rgb 'gray40'\n", target, target);
    sbuf_printf(s, "plot ");
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (!rows_of[i]) continue;   // every seed diverged before its first BLEU: `info --train`
        char block[16], style[80];
        snprintf(block, sizeof block, "b%d", i);
        snprintf(style, sizeof style, "linespoints pt %d lw %g dt %d", st[i].pt, st[i].lw, st[i].dt);
        plot_band_clause(s, block, &g[i], st[i].color, style, first);
        first = 0;
    }
    sbuf_printf(s, "\n");
}

int plot_fig_bleu(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    plot_group_t g[PLOT_MAX_SERIES];
    int epochs;
    const int n = bleu_groups(set, g, &epochs);
    if (n <= 0) return 0;   // more curves than a key can tell apart
    snprintf(name, len, "bleu");
    // the BLEU every run reaches (the smallest of the runs' best from 0.01 up): each seed's epoch there
    const double target = plot_band_common_target(set, g, n, plot_series_bleu, 1);
    size_t rows_of[PLOT_MAX_SERIES];
    plot_range_t rx, ry;
    if (!bleu_blocks(s, set, g, n, epochs, rows_of, &rx, &ry)) {
        snprintf(name, len, "bleu: no finite BLEU");
        return -1;
    }
    int m[PLOT_MAX_SERIES];
    for (int i = 0; i < n; i++) m[i] = g[i].run[0];   // keys from each group's first seed
    plot_diff_t d;
    plot_diff(set, m, n, 0, &d);
    plot_style_t st[PLOT_MAX_SERIES];
    plot_styles_apart(set, m, n, &d, st);
    char title[400], sub[900];
    bleu_caption(set, m, g, n, &d, target, epochs, title, sizeof title, sub, sizeof sub);
    sbuf_t keys = {0};
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        bleu_key(set, g, i, target, epochs ? 1.0 / r->epoch_batches : 1.0, epochs, st[i].key,
                 sizeof st[i].key);
        plot_keyentry(&keys, &st[i], "linespoints");
    }
    const int rows = plot_key_rows(n, plot_styles_longest(st, n));
    plot_grid_t gr;
    plot_grid(&gr, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    bleu_panel(s, &gr, g, n, st, rows_of, &rx, &ry, target, epochs);
    plot_end(s, &gr, rows, &keys);
    sbuf_free(&keys);
    return 1;
}
