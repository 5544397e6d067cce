/* warmup_figure.c — the warm-up study's figure warmup_indicators (docs/curvature.md "The
 * experiment"; issue 32): a panel per indicator, x the outcome of each cell without warm-up
 * (trains, needs warm-up, stuck, diverged), y the indicator, a point per cell coloured by depth
 * (Okabe & Ito), and each panel's ROC AUC of "fails" against "trains" — the cells and AUCs of
 * the study's statistics (study/warmup_explained.h), drawn here, computed there. Drawn when the
 * set holds the indicators' runs (experiments/warmup_explained.ini: the runs with curvature
 * rows) and the atlas's outcome runs of the same cells (experiments/atlas.ini). The figure
 * table of report/plot.c lists it (report/plot_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "study/figures.h"
#include "study/warmup_explained.h"

enum { OUT_N = WARMUP_OUT_N, I_N = WARMUP_N, I_ADMIN = WARMUP_ADMIN };
static const char *const OUT_TIC[OUT_N] = {"trains", "needs warm-up", "stuck", "diverged"};

/* The figure's x of a cell: its outcome, needs warm-up apart. */
static int category(const warmup_cell_t *c) { return c->needs ? WARMUP_NEEDS : c->out; }

/* ------------------------------------------------------------------ the figure */

/* The AUC of indicator k, "fails" (stuck, diverged, needs warm-up) against "trains", over the
 * cells where it is finite (warmup_auc). */
static double auc_of(const warmup_cell_t *c, int n, int k)
{
    double *x = malloc((size_t)(2 * n + 1) * sizeof *x);
    if (!x) return NAN;
    double *ok = x + n;
    int nf = 0, no = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(c[i].v[k])) continue;
        if (c[i].out == WARMUP_TRAINS_OUT) ok[no++] = c[i].v[k];
        else x[nf++] = c[i].v[k];
    }
    const double a = warmup_auc(x, nf, ok, no);
    free(x);
    return a;
}

/* x of cell i: its outcome, jittered by its rank j among the cells of that outcome (the same in
 * every panel): ±0.3 by the golden-ratio sequence, deterministic. */
static double jitter_x(const warmup_cell_t *c, int i)
{
    int j = 0;
    for (int k = 0; k < i; k++) j += category(&c[k]) == category(&c[i]);
    const double u = fmod((j + 1) * 0.6180339887498949, 1.0);
    return category(&c[i]) + 0.6 * (u - 0.5);
}

/* $cells ("k L lr scheme [seed]": which unit row k is, for a reader of the figure) and $ind_<name>
 * ("k outcome x y L") per indicator drawn (admin only with atlas_init's runs); has[k][d]
 * whether depth d has a point in panel k. */
static void write_blocks(sbuf_t *s, const warmup_cell_t *c, int n, int admin, const double *depth,
                         int nd, char (*has)[PLOT_QUAL_COUNT], plot_range_t *y)
{
    const int seeded = warmup_seeded(c, n);
    sbuf_printf(s, "$cells << EOD\n");
    for (int i = 0; i < n; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s", c[i].key.scheme);
        for (char *p = name; *p; p++)
            if ((unsigned char)*p <= 0x20 || *p == 0x7f) *p = '?';   // one field, one line
        sbuf_printf(s, "%d %d %.17g %s", i, c[i].key.L, c[i].key.lr, name);
        if (seeded) sbuf_printf(s, " %lu", c[i].key.seed);   // the unit's seed
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "EOD\n");
    for (int k = 0; k < I_N; k++) {
        if (!warmup_shown(c, n, k, admin)) continue;
        sbuf_printf(s, "$ind_%s << EOD\n", WARMUP_IND[k].name);
        plot_range_init(&y[k]);
        for (int i = 0; i < n; i++) {
            if (!isfinite(c[i].v[k])) continue;
            int d = 0;
            while (d < nd && depth[d] != c[i].key.L) d++;
            has[k][d % PLOT_QUAL_COUNT] = 1;
            plot_range_add(&y[k], c[i].v[k]);
            sbuf_printf(s, "%d %d %.6f %.17g %d\n", i, category(&c[i]), jitter_x(c, i), c[i].v[k],
                        c[i].key.L);
        }
        sbuf_printf(s, "EOD\n");
    }
}

/* The panel of indicator k. */
static void panel(sbuf_t *s, const warmup_cell_t *c, int n, int k, const double *depth, int nd,
                  const char *has, const plot_range_t *y)
{
    char name[64], t[400];
    plot_enh(WARMUP_IND[k].name, name, sizeof name);
    const double auc = auc_of(c, n, k);
    char a[64] = "AUC –";
    if (isfinite(auc)) snprintf(a, sizeof a, "AUC %.2f", auc);
    snprintf(t, sizeof t, "%s: %s\n%s", name, a, WARMUP_IND[k].what);
    plot_set(s, "title", t);
    sbuf_printf(s, "set title @F70\n");
    const int log = plot_range_log(&y[k]);
    plot_axis(s, "y", &y[k], log, 0.08, NAN, NAN);
    if (!log)   // about five tics: a short panel
        sbuf_printf(s, "set format y '%%g'\nset ytics %g\n", plot_tic_step(y[k].hi > y[k].lo
                    ? y[k].hi - y[k].lo : 0.2 * fabs(y[k].hi), 5));
    sbuf_printf(s, "set xtics (");
    for (int o = 0; o < OUT_N; o++)
        sbuf_printf(s, "%s\"%s\" %d", o ? ", " : "", OUT_TIC[o], o);
    sbuf_printf(s, ") rotate by 40 right @F70\n");
    sbuf_printf(s, "plot 1/0 notitle");
    for (int d = 0; d < nd; d++)
        if (has[d % PLOT_QUAL_COUNT])
            sbuf_printf(s, ", $ind_%s using ($5 == %d ? $3 : 1/0):4 with points pt 7 ps 1.1 "
                           "lc rgb '%s' notitle", WARMUP_IND[k].name, (int)depth[d],
                        palette_qualitative(d));
    sbuf_printf(s, "\n");
}

int plot_fig_warmup_indicators(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    warmup_cell_t *c = malloc((size_t)(set->n ? set->n : 1) * sizeof *c);
    if (!c) return 0;
    char why[1200] = "";
    int admin = 0;
    const int n = warmup_cells(set, c, &admin, why, sizeof why);
    snprintf(name, len, "warmup_indicators%s%s", n < 0 ? ": " : "", n < 0 ? why : "");
    if (n <= 0) { free(c); return n < 0 ? -1 : 0; }   // no atlas's runs in the set: no figure
    double depth[PLOT_QUAL_COUNT];
    int nd = 0, count[OUT_N] = {0};
    for (int i = 0; i < n; i++) {
        plot_intern_value(depth, &nd, c[i].key.L);   // more than 8 depths: the colours repeat
        count[category(&c[i])]++;
    }
    qsort(depth, (size_t)nd, sizeof *depth, plot_cmp_double);
    char has[I_N][PLOT_QUAL_COUNT] = {{0}};
    plot_range_t y[I_N];
    write_blocks(s, c, n, admin, depth, nd, has, y);
    char title[300], sub[1400], none[200] = "";
    int panels = 0;
    for (int k = 0; k < I_N; k++) {   // an indicator no cell has a finite value of: no panel
        if (!warmup_shown(c, n, k, admin)) continue;
        if (!plot_range_empty(&y[k])) { panels++; continue; }
        const size_t u = strlen(none);
        snprintf(none + u, sizeof none - u, "%s%s", u ? ", " : "", WARMUP_IND[k].name);
    }
    if (!panels) {
        free(c);
        snprintf(name, len, "warmup_indicators: no indicator has a finite value in any cell");
        return -1;
    }
    snprintf(title, sizeof title, "Warm-up's explanations: each indicator against the outcome");
    snprintf(sub, sizeof sub, "%d %s without warm-up: %d train, %d need "
             "warm-up, %d stuck, %d diverged (x, points jittered)\ntrains: final loss < %g nats; "
             "needs warm-up: a failure whose warm-up run trains; definitions: "
             "docs/curvature.md\nactive ratio: η·λ_{max}(P⁻¹H) on the coordinates "
             "Adam has measured over 2(1+β_1)/(1−β_1); update RMS: of m̂/(√v̂ + ε)\nXiong et al. "
             "2020; Liu et al. 2020b (admin); Cohen et al. 2022 (eos); Liu et al. 2020a (radam); "
             "Kosson et al. 2024;\nWortsman et al. 2023b (update RMS); Wang et al. 2022 (deepnet)\n"
             "AUC: P(indicator of a failing cell > of a training cell) + ½P(tie), where finite; "
             "bootstrap intervals: stability table warmup-explained",
             n, warmup_seeded(c, n) ? "units (scheme × depth × lr × seed)"
                                    : "cells (scheme × depth × lr)",
             count[WARMUP_TRAINS_OUT], count[WARMUP_NEEDS], count[WARMUP_STUCK],
             count[WARMUP_DIVERGED],
             WARMUP_TRAINS);
    if (warmup_shown(c, n, WARMUP_EOSC, admin)) {
        const size_t u = strlen(sub);
        snprintf(sub + u, sizeof sub - u, "\neos_c: the critical sharpness λ_c = 2/η_c (Kalra et "
                 "al. 2026) over 2/η, its one-step threshold");
    }
    if (none[0]) {   // said, not drawn as an empty frame (nor as gnuplot's "set ytics inf")
        char esc[240];
        plot_enh(none, esc, sizeof esc);
        const size_t u = strlen(sub);
        snprintf(sub + u, sizeof sub - u, "\nno panel: no finite value in any cell: %s", esc);
    }
    sbuf_t keys = {0};
    for (int d = 0; d < nd; d++) {
        plot_style_t st = {.dt = 1, .pt = 7, .lw = 1.0};
        snprintf(st.color, sizeof st.color, "%s", palette_qualitative(d));
        snprintf(st.key, sizeof st.key, "L = %g", depth[d]);
        plot_keyentry(&keys, &st, "points");
    }
    const int cols = (panels + 1) / 2, rows = panels > 1 ? 2 : 1;
    const int krows = plot_key_rows(nd, 7);
    plot_grid_t g;
    plot_grid(&g, rows, cols, plot_title_lines(sub), krows);
    g.top -= 0.012;
    g.below += 0.05;   // the slanted outcome tics
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid ytics\nunset key\nset tics @F70\nset xrange [-0.6:%d.6]\n"
                   "unset ylabel\n", OUT_N - 1);
    for (int k = 0, p = 0; k < I_N; k++) {
        if (!warmup_shown(c, n, k, admin) || plot_range_empty(&y[k])) continue;
        plot_panel(s, &g, p);
        panel(s, c, n, k, depth, nd, has[k], y);
        p++;
    }
    plot_end(s, &g, krows, &keys);
    sbuf_free(&keys);
    free(c);
    return 1;
}
