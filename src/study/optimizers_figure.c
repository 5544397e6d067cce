/* optimizers_figure.c — the optimizers study's figure optimizers_boundary (docs/design.md §6h,
 * issue 47): per optimizer × scheme × depth a heat map of the share of seeds that train, a row
 * per lr of the optimizer's grid and a column per warm-up arm, on viridis (colour-blind safe),
 * every cell labelled k/n — the study's statistics (study/optimizers.h), drawn here, computed
 * there. Drawn when the set holds a training run of a norm-constrained optimizer (Muon, Lion,
 * NSGD) beside runs without and with a linear warm-up (experiments/optimizers_reduced_*.ini). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "study/atlas.h"
#include "study/optimizers.h"

/* The lrs optimizer o ran in scheme s, depth d (their indices into st->lr) into ls; the count. */
static int panel_lrs(const optimizers_t *st, int o, int s, int d, int *ls)
{
    int n = 0;
    for (int l = 0; l < st->nl; l++)
        if (optimizers_has_lr(st, o, s, d, l)) ls[n++] = l;
    return n;
}

/* $pK ("arm lr-row share label textcolour") of panel k: every arm × lr of the panel, NaN and
 * "–" where it was not run. */
static void panel_cells(sbuf_t *s, const optimizers_t *st, int o, int sc, int d, const int *ls, int n,
                        int k)
{
    sbuf_printf(s, "$p%d << EOD\n", k);
    for (int a = 0; a < st->na; a++)
        for (int j = 0; j < n; j++) {
            int ran = 0, ok = 0;
            for (int q = 0; q < st->nk; q++) {
                const int r = optimizers_at(st, o, sc, d, a, ls[j], q);
                if (r < 0) continue;
                ran++;
                ok += st->t.rows[r].trains;
            }
            if (!ran) { sbuf_printf(s, "%d %d NaN \"–\" 0\n", a, j); continue; }
            const double t = (double)ok / ran;
            sbuf_printf(s, "%d %d %.6g \"%d/%d\" %d\n", a, j, t, ok, ran,
                        palette_text_white(t) ? 0xffffff : 0x000000);
        }
    sbuf_printf(s, "EOD\n");
}

/* One panel: its title, the arms' and lrs' tics, the map and its labels. */
static void panel(sbuf_t *s, const optimizers_t *st, const plot_grid_t *g, int k, int o, int sc, int d,
                  const int *ls, int n)
{
    char name[64];
    plot_panel(s, g, k);
    plot_enh(st->scheme[sc], name, sizeof name);
    sbuf_printf(s, "set title \"%s, %s, L = %d\" @F70 offset 0,-0.6\nset xtics (", optimizers_label(st->opt[o]),
                name, st->depth[d]);
    for (int a = 0; a < st->na; a++) {
        char lab[80];
        plot_escape_name(st->arm[a].tick, lab, sizeof lab);
        sbuf_printf(s, "%s'%s' %d", a ? ", " : "", lab, a);
    }
    sbuf_printf(s, ") @F70 scale 0 rotate by 30 right\nset ytics (");
    for (int j = 0; j < n; j++) sbuf_printf(s, "%s'%g' %d", j ? ", " : "", st->lr[ls[j]], j);
    sbuf_printf(s, ") @F70 scale 0\nset xrange [-0.5:%g]\nset yrange [-0.5:%g]\n", st->na - 0.5, n - 0.5);
    if (k) sbuf_printf(s, "unset colorbox\n");
    // boxes, not `with image`: a panel of one lr or one arm is no grid gnuplot can image; a
    // cell not run (NaN) left out, so the grey behind shows
    sbuf_printf(s, "plot $p%d using ($3 == $3 ? $1 : NaN):2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder fc palette, "
                   "$p%d using 1:2:4:5 with labels @F70 tc rgb variable\n", k, k);
}

int plot_fig_optimizers_boundary(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    if (!optimizers_in_set(set)) return 0;
    optimizers_t st;
    char why[1200];
    if (optimizers_build(set, &st, why, sizeof why)) {   // not the study's set: not its figure
        optimizers_free(&st);
        return 0;
    }
    int *ls = malloc((size_t)st.nl * sizeof *ls), np = 0;
    for (int o = 0; o < st.no; o++)   // the panels that ran
        for (int sc = 0; sc < st.ns; sc++)
            for (int d = 0; d < st.nd; d++) np += ls && panel_lrs(&st, o, sc, d, ls) > 0;
    if (!ls || !np) { free(ls); optimizers_free(&st); return 0; }
    snprintf(name, len, "optimizers_boundary");
    char title[200], sub[900], arms[400] = "none", depths[80] = "", opts[120] = "";
    int lin = 0, clip = 0, subopt = 0;   // the kinds of arm the set has, each explained once
    for (int a = 0; a < st.na; a++) {
        lin |= !st.arm[a].subopt && !st.arm[a].extra && st.arm[a].warmup > 1;
        clip |= !strncmp(st.arm[a].tick, "clip ", 5);
        subopt |= st.arm[a].subopt;
    }
    if (lin) snprintf(arms + strlen(arms), sizeof arms - strlen(arms), "; lin. W: a linear warm-up of W updates");
    if (clip) snprintf(arms + strlen(arms), sizeof arms - strlen(arms), "; clip T: none + QK-Clip at τ = T (Kimi K2)");
    if (subopt)
        snprintf(arms + strlen(arms), sizeof arms - strlen(arms), ";\nsub F/D: Riabinin et al. 2026's "
                 "suboptimality schedule, f* = F, starting at lr/D");
    for (int d = 0; d < st.nd; d++)
        snprintf(depths + strlen(depths), sizeof depths - strlen(depths), "%s%d", d ? ", " : "", st.depth[d]);
    for (int o = 0; o < st.no; o++)
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%s%s", o ? ", " : "", optimizers_label(st.opt[o]));
    snprintf(title, sizeof title, "Do the optimizers need warm-up? The share of seeds that train, per lr "
             "and warm-up arm");
    snprintf(sub, sizeof sub, "%d runs: %s; d = %d, L = %s, %d seed%s, %d updates\nwarm-up arms: %s\n"
             "colour and label: the seeds whose final loss is below %.1f nats, of those run (stability "
             "table optimizers); grey: not run", st.t.n, opts, st.d_model, depths, st.nk,
             st.nk > 1 ? "s" : "", st.steps, arms, ATLAS_TRAINS);
    const int cols = st.ns, rows = st.no * st.nd;
    plot_grid_t g;
    plot_grid(&g, rows, cols, plot_title_lines(sub), 0);
    g.width = 0.9;
    g.left = 0.06;
    g.left_inner = 0.06;
    g.below = rows > 4 ? 0.05 : 0.08;   // the arms' tics, rotated
    g.bottom += 0.02;                   // and the last row's
    g.above = rows > 4 ? 0.03 : 0.05;
    plot_begin(s, title, sub);
    palette_heat(s, "share of seeds that train", 0);
    sbuf_printf(s, "set cbrange [0:1]\nset colorbox user origin screen 0.935, screen %.4f size screen "
                   "0.015, screen %.4f\nunset key\nunset xlabel\nunset ylabel\n"
                   "set object 1 rectangle from graph 0, graph 0 to graph 1, graph 1 behind "
                   "fc rgb '#d9d9d9' fs solid 1.0 border lc rgb '#bdbdbd'\n"
                   "set label 1 'learning rate' at screen 0.012, screen %.4f center rotate by 90 @F80\n",
                g.bottom + 0.1, g.top - g.bottom - 0.2, 0.5 * (g.top + g.bottom));
    for (int o = 0; o < st.no; o++)
        for (int d = 0; d < st.nd; d++)
            for (int sc = 0; sc < st.ns; sc++) {
                const int k = (o * st.nd + d) * st.ns + sc, n = panel_lrs(&st, o, sc, d, ls);
                if (!n) continue;
                panel_cells(s, &st, o, sc, d, ls, n, k);
                panel(s, &st, &g, k, o, sc, d, ls, n);
            }
    sbuf_printf(s, "unset multiplot\n");
    free(ls);
    optimizers_free(&st);
    return 1;
}
