/* remedies_figure.c — the remedies study's figure remedies_boundary (docs/design.md §6k, issue
 * 46): the failure boundary as a heat map, a row per method, a column per scheme × depth, the
 * colour log₂(η_max / linear warm-up's η_max) on a diverging colour-blind-safe scale (blue: the
 * method trains at a larger lr than linear warm-up), every cell labelled with its η_max — the
 * lines of the study's statistics (study/remedies.h), drawn here, computed there. Drawn when the
 * set holds a run with a remedy and both baselines (experiments/remedies_reduced*.ini); the
 * figure table of report/plot.c lists it (report/plot_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "study/optimizers.h"
#include "study/remedies.h"
#include "study/warmup_explained.h"

/* Whether the set is the remedies study's: a training run with a remedy (runs_remedy). */
static int has_remedy(const plot_set_t *set)
{
    for (int i = 0; i < set->n; i++) {
        char buf[96];
        runs_remedy(&set->runs[i].cfg, buf, sizeof buf);
        if (set->runs[i].nsteps > 0 && strcmp(buf, "none")) return 1;
    }
    return 0;
}

/* $h ("x y log2-ratio label textcolour") of every line; the largest |log₂ ratio| (at least 1). */
static double boundary_cells(sbuf_t *s, const remedies_t *st)
{
    double m = 1.0;
    for (int pass = 0; pass < 2; pass++) {   // the scale first, then the cells on it
        if (pass) sbuf_printf(s, "$h << EOD\n");
        for (int mi = 0; mi < st->nm; mi++)
            for (int sc = 0; sc < st->ns; sc++)
                for (int d = 0; d < st->nd; d++) {
                    const remedies_line_t *ln = &st->line[((size_t)mi * st->ns + sc) * st->nd + d];
                    const remedies_line_t *w = &st->line[((size_t)st->linwu * st->ns + sc) * st->nd + d];
                    const double v = ln->top > 0 && w->top > 0 ? log2(ln->top / w->top) : NAN;
                    if (!pass) { if (isfinite(v) && fabs(v) > m) m = fabs(v); continue; }
                    char lab[32];
                    if (!ln->runs) snprintf(lab, sizeof lab, "–");
                    else if (ln->top > 0) snprintf(lab, sizeof lab, "%.2g", ln->top);
                    else snprintf(lab, sizeof lab, "none");
                    const int white = isfinite(v) && fabs(v) / m > 0.6;   // RdBu's dark ends
                    char val[32] = "NaN";
                    if (isfinite(v)) snprintf(val, sizeof val, "%.6g", v);
                    sbuf_printf(s, "%d %d %s \"%s\" %d\n", sc * st->nd + d, st->nm - 1 - mi, val, lab,
                                white ? 0xffffff : 0x000000);
                }
        if (pass) sbuf_printf(s, "EOD\n");
    }
    return m;
}

/* The axes' tics: a column per scheme × depth (many: on one slanted line each), a row per
 * method. */
static void tics(sbuf_t *s, const remedies_t *st, int many)
{
    sbuf_printf(s, "set xtics (");
    for (int sc = 0; sc < st->ns; sc++)
        for (int d = 0; d < st->nd; d++) {
            char name[64];
            plot_enh(st->scheme[sc], name, sizeof name);   // in a double-quoted tic
            sbuf_printf(s, "%s\"%s%sL = %d\" %d", sc || d ? ", " : "", name, many ? ", " : "\\n",
                        st->depth[d], sc * st->nd + d);
        }
    sbuf_printf(s, ") @F70 scale 0%s\nset ytics (", many ? " rotate by 40 right" : "");
    for (int mi = 0; mi < st->nm; mi++) {
        char label[200];
        plot_escape_name(st->m[mi].label, label, sizeof label);
        sbuf_printf(s, "%s'%s' %d", mi ? ", " : "", label, st->nm - 1 - mi);
    }
    sbuf_printf(s, ") @F70 scale 0\n");
}

int plot_fig_remedies_boundary(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    // Muon's, Lion's and NSGD's lrs are not in Adam's units: their runs are the optimizers
    // study's (optimizers_boundary), not a ratio to Adam's η_max
    if (!has_remedy(set) || optimizers_in_set(set)) return 0;
    remedies_t st;
    char why[1200];
    if (remedies_build(set, &st, why, sizeof why)) {   // a remedy's runs without the baselines
        remedies_free(&st);
        snprintf(name, len, "remedies_boundary: %s", why);
        return -1;
    }
    snprintf(name, len, "remedies_boundary");
    const double m = boundary_cells(s, &st);
    char title[200], sub[900], lrs[80] = "", depths[80] = "";
    if (st.nl > 1) snprintf(lrs, sizeof lrs, "%d lrs, %g … %g", st.nl, st.lr[0], st.lr[st.nl - 1]);
    else snprintf(lrs, sizeof lrs, "lr %g", st.lr[0]);
    for (int d = 0; d < st.nd; d++)
        snprintf(depths + strlen(depths), sizeof depths - strlen(depths), "%s%d", d ? ", " : "", st.depth[d]);
    const int many = st.ns * st.nd > 8;   // two-line tics would overlap
    snprintf(title, sizeof title, "Warm-up's remedies: the largest lr that trains (η_{max}) per "
             "method, scheme and depth");
    snprintf(sub, sizeof sub, "%d runs: d = %d, L = %s, %s, %d seed%s, %d updates; η_{max}: the "
             "largest lr whose mean final loss over the seeds is below %.1f nats (stability table "
             "remedies)\ncolour: log_2(η_{max} / η_{max} of %s), blue larger; label: η_{max}; grey: "
             "none trains, or %s trains at no lr",
             st.t.n, st.d_model, depths, lrs, st.nk, st.nk > 1 ? "s" : "",
             st.steps, WARMUP_TRAINS, st.m[st.linwu].label, st.m[st.linwu].label);
    plot_grid_t g;
    plot_grid(&g, 1, 1, plot_title_lines(sub), 0);
    size_t longest = 0;   // the method labels left of the map
    for (int mi = 0; mi < st.nm; mi++)
        if (strlen(st.m[mi].label) > longest) longest = strlen(st.m[mi].label);
    g.width = 0.84;
    g.left = fmin(0.4, fmax(0.11, 0.02 + 0.0085 * (double)longest));
    g.below = many ? 0.2 : 0.1;
    g.bottom = 0.0;
    plot_begin(s, title, sub);
    plot_panel(s, &g, 0);
    tics(s, &st, many);
    sbuf_printf(s, "set xlabel 'scheme, depth' @F80 offset 0,%g\nunset ylabel\n"
                   "set label 1 'method (no warm-up unless said)' at screen 0.015, graph 0.5 center "
                   "rotate by 90 @F80\nset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nunset key\n",
                many ? 0.5 : 0.0, st.ns * st.nd - 0.5, st.nm - 0.5);
    palette_diverging(s, "log_2(η_{max} / η_{max} of linear warm-up)");
    sbuf_printf(s, "set cbrange [%g:%g]\nset colorbox user origin screen 0.875, screen %.4f size "
                   "screen 0.02, screen %.4f\n", -m, m, g.bottom + g.below,
                g.top - g.above - g.bottom - g.below);
    sbuf_printf(s, "set object 1 rectangle from graph 0, graph 0 to graph 1, graph 1 behind "
                   "fc rgb '#d9d9d9' fs pattern 2 border lc rgb '#bdbdbd'\n"
                   "plot $h using 1:2:3 with image, $h using 1:2:4:5 with labels @F70 tc rgb variable\n"
                   "unset multiplot\n");
    remedies_free(&st);
    return 1;
}
