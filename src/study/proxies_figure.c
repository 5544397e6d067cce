/* proxies_figure.c — the size study's four figures (docs/proxies.md; Wortsman et al. 2023,
 * "Small-scale proxies for large-scale Transformer training instabilities"), drawn when the runs
 * form a size study (study/proxies_grid.h: several widths at several learning rates):
 *   size_lr           final loss vs lr, a curve per width, a panel per remedy (their Fig. 1)
 *   size_sensitivity  LR sensitivity vs width, a line per remedy (docs/design.md §6c, §6d)
 *   size_best_lr      the best lr vs width, standard vs μP, each seed and their mean
 *   size_logit        peak max |attention logit| vs lr, a curve per width, a panel per remedy
 * A name ends "_by_block" (or by the key that differs) when the runs hold several blocks or
 * depths: then a row of panels, or a panel, per block. Words, colours and layout come from
 * report/plot_label.h, plot_palette.h and plot_layout.h (docs/design.md §6j): widths in ordinal colours
 * (viridis), remedies in Okabe & Ito's, each with its own marker too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/fit.h"
#include "study/figures.h"
#include "study/proxies_grid.h"

#define PANELS_MAX 16
/* Filled markers a series each (circle, square, triangles, diamond, pentagon, …). */
static const int MARK[] = {7, 5, 9, 11, 13, 15, 4, 6};

/* Read the study, or a note in name (−1) when it cannot be drawn. */
static int study_of(const plot_set_t *set, size_study_t *st, const char *fig, char *name,
                    size_t len)
{
    char why[300] = "";
    const int rc = size_study_read(set, st, why, sizeof why);
    if (rc < 0) snprintf(name, len, "%s: %s", fig, why);
    if (rc <= 0) size_study_free(st);
    return rc;
}

static void fig_name(const size_study_t *st, const char *base, char *name, size_t len)
{
    snprintf(name, len, "%s%s%s", base, st->nc > 1 ? "_by_" : "", st->nc > 1 ? st->by : "");
}

/* The figure's title (gnuplot enhanced text): what it measures, "a panel per …" when panels. */
static void size_title(const plot_set_t *set, const size_study_t *st, const char *measure,
                       int panels, const char *paper, char *buf, size_t len)
{
    char what[300], by[64];
    plot_enh(st->by, by, sizeof by);
    if (panels && st->na > 1)
        snprintf(what, sizeof what, "%s, a panel per %s%sremedy", measure, st->nc > 1 ? by : "",
                 st->nc > 1 ? " and " : "");
    else if (st->nc > 1) snprintf(what, sizeof what, "%s, a panel per %s", measure, by);
    else snprintf(what, sizeof what, "%s", measure);
    const plot_diff_t none = {0};
    plot_title(set, st->m, st->n, &none, what, paper, buf, len);
}

/* Width w in words ("d = 64"), from a run of that width. */
static void width_key(const plot_set_t *set, const size_study_t *st, int w, char *buf, size_t len)
{
    snprintf(buf, len, "d = %g", st->width[w]);
    for (int i = 0; i < st->n; i++)
        if (set->runs[st->m[i]].cfg.model.d_model == st->width[w]) {
            plot_item_text(&set->runs[st->m[i]], "model.d_model", 0, buf, len);
            return;
        }
}

static void width_style(const plot_set_t *set, const size_study_t *st, int w, plot_style_t *x)
{
    palette_ordinal(w, st->nw, x->color);
    x->dt = 1;
    x->lw = 2.0;
    x->pt = MARK[w % 8];
    width_key(set, st, w, x->key, sizeof x->key);
}

static void arm_style(const size_study_t *st, int a, plot_style_t *x)
{
    snprintf(x->color, sizeof x->color, "%s", palette_qualitative(a));
    x->dt = 1;
    x->lw = 2.0;
    x->pt = MARK[a % 8];
    snprintf(x->key, sizeof x->key, "%s", st->arm[a]);
}

/* "set title" of panel (c, a) (of context c alone when a < 0), then second on a line of its
 * own, at @F<font>. */
static void panel_title(sbuf_t *s, const plot_set_t *set, const size_study_t *st, int c, int a,
                        const char *second, int font)
{
    char t[600], esc[1000] = "";
    if (a >= 0) size_panel_title(set, st, c, a, t, sizeof t);
    else snprintf(t, sizeof t, "%s", st->nc > 1 ? st->ctx[c] : "");
    if (second && second[0]) snprintf(t + strlen(t), sizeof t - strlen(t), "%s%s", t[0] ? "\n" : "", second);
    size_enh_lines(t, esc, sizeof esc);
    plot_set(s, "title", esc);
    sbuf_printf(s, "set title @F%d\n", font);
}

/* The lr axis: log, a tic at every rate run, labelled at the powers of ten when some are (a
 * label at each would crowd a narrow panel), else each. */
static void lr_axis(sbuf_t *s, const size_study_t *st, const plot_range_t *x)
{
    plot_axis(s, "x", x, 1, 0.08, NAN, NAN);
    int decades = 0;
    for (int l = 0; l < st->nl; l++) decades += fabs(log10(st->lr[l]) - round(log10(st->lr[l]))) < 1e-9;
    sbuf_printf(s, "set xtics (");
    for (int l = 0; l < st->nl; l++) {
        const int p = (int)round(log10(st->lr[l]));
        if (!decades) sbuf_printf(s, "%s\"%g\" %g", l ? ", " : "", st->lr[l], st->lr[l]);
        else if (fabs(log10(st->lr[l]) - p) < 1e-9) sbuf_printf(s, "%s\"10^{%d}\" %g", l ? ", " : "", p, st->lr[l]);
        else sbuf_printf(s, "%s\"\" %g", l ? ", " : "", st->lr[l]);
    }
    sbuf_printf(s, ")\n");
}

/* The width axis: log base 2, a tic at every width run, half an octave of margin. */
static void width_axis(sbuf_t *s, const size_study_t *st)
{
    const double lo = st->width[0], hi = st->width[st->nw - 1];
    sbuf_printf(s, "set logscale x 2\nset xrange [%.10g:%.10g]\nset xtics (", lo / pow(2.0, 0.35),
                hi * pow(2.0, 0.35));
    for (int w = 0; w < st->nw; w++) sbuf_printf(s, "%s%g", w ? ", " : "", st->width[w]);
    sbuf_printf(s, ")\nset format x '%%g'\nset xlabel 'width d (model dimension)' @F80\n");
}

/* x of arm a (the j-th of n drawn) at width w: offset a little along the log axis so that the
 * arms' bars do not hide one another. */
static double dodge(const size_study_t *st, int w, int j, int n)
{
    return st->width[w] * pow(2.0, 0.07 * (j - 0.5 * (n - 1)));
}

/* ------------------------------------------------------------- against the lr, per width */

enum { BY_LOSS, BY_LOGIT };

static int diverged_at(const size_study_t *st, int c, int a, int w, int l)
{
    for (int k = 0; k < st->nk; k++)
        if (st->diverged[SIZE_IX(st, c, a, w, l, k)]) return 1;
    return 0;
}

/* Where width w's point at lr l is drawn: with bars (several seeds), the widths a little apart
 * along the lr axis (a 30th of a decade each) so that their bars do not hide one another. */
static double lr_at(const size_study_t *st, int w, int l)
{
    return st->nk > 1 ? st->lr[l] * pow(10.0, (w - 0.5 * (st->nw - 1)) / 30.0) : st->lr[l];
}

/* What a figure against the lr draws and where: the lrs (x) and values (y) drawn, the row of ×s
 * (top), the initial loss above which a final loss is drawn at it (cap; ∞ for the logits), and
 * which of these marks (a diverged seed, a loss above the cap, bars cut at the frame, the
 * plateau's line) it shows. */
typedef struct {
    plot_range_t x, y;
    double top, cap;
    int log, any_div, above, cut, plateau;
    unsigned char mark[SIZE_CTX][SIZE_ARMS][SIZE_WIDTHS];   /* which blocks have rows: MARK_* */
} lr_frame_t;

enum { MARK_V = 1, MARK_X = 2, MARK_ABOVE = 4 };   /* a curve, a ×, a △ (gnuplot warns on none) */

/* Blocks $v<c>_<a>_<w> ("x value lo hi lr above": the seeds' mean and 95 % CI of the final loss,
 * or the median and range of the peak logit; a mean above f->cap drawn at it, above = 1) and
 * $x<c>_<a>_<w> (the lrs where a seed diverged); f->x the lrs, f->y the values (plot_range_mid),
 * bars their bars' ends. */
static void lr_blocks(sbuf_t *s, const size_study_t *st, int kind, lr_frame_t *f, plot_range_t *bars)
{
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++)
            for (int w = 0; w < st->nw; w++) {
                sbuf_printf(s, "$v%d_%d_%d << EOD\n", c, a, w);
                for (int l = 0; l < st->nl; l++) {
                    double v, lo, hi, half;
                    int div, ran;
                    if (kind == BY_LOSS) {
                        v = size_final_ci(st, c, a, w, l, &half, &div, &ran);
                        lo = isfinite(half) ? v - half : v;
                        hi = isfinite(half) ? v + half : v;
                    } else {
                        v = size_logit_median(st, c, a, w, l, &lo, &hi);
                        div = diverged_at(st, c, a, w, l);
                    }
                    f->any_div |= div;
                    if (!isfinite(v)) continue;
                    const int above = v > f->cap;
                    f->above |= above;
                    f->mark[c][a][w] |= MARK_V | (above ? MARK_ABOVE : 0);
                    if (above) v = lo = hi = f->cap;
                    sbuf_printf(s, "%.10g %.10g %.10g %.10g %g %d\n", lr_at(st, w, l), v, lo, hi,
                                st->lr[l], above);
                    plot_range_add(&f->x, st->lr[l]);
                    plot_range_mid(&f->y, v);
                    plot_range_add(bars, lo);
                    plot_range_add(bars, fmin(hi, f->cap));
                }
                sbuf_printf(s, "EOD\n$x%d_%d_%d << EOD\n", c, a, w);
                for (int l = 0; l < st->nl; l++)
                    if (diverged_at(st, c, a, w, l)) {
                        sbuf_printf(s, "%.10g\n", lr_at(st, w, l));
                        f->mark[c][a][w] |= MARK_X;
                    }
                sbuf_printf(s, "EOD\n");
            }
}

/* The blocks and the ranges of a figure against the lr; 0 when nothing finite is drawn. A loss
 * axis shows the bars of two or three seeds (t = 12.7, 4.3), which may dwarf the curves, to half
 * the points' span (at least 0.25 nats) past the points, and no higher than the initial loss. */
static int lr_frame(sbuf_t *s, const size_study_t *st, int kind, lr_frame_t *f)
{
    memset(f, 0, sizeof *f);
    plot_range_t bars;
    plot_range_init(&f->x);
    plot_range_init(&f->y);
    plot_range_init(&bars);
    f->cap = kind == BY_LOSS ? -INFINITY : INFINITY;
    const size_t N = (size_t)st->nc * st->na * st->nw * st->nl * st->nk;
    for (size_t i = 0; kind == BY_LOSS && i < N; i++)
        if (st->ran[i] && isfinite(st->loss0[i])) f->cap = fmax(f->cap, st->loss0[i]);
    if (f->cap == -INFINITY) f->cap = INFINITY;
    lr_blocks(s, st, kind, f, &bars);
    if (plot_range_empty(&f->y)) return 0;
    f->log = kind == BY_LOGIT && plot_range_log(&f->y);
    const double ext = kind == BY_LOSS ? fmax(0.25, 0.5 * (f->y.hi - f->y.lo)) : INFINITY;
    f->cut = bars.lo < f->y.lo - ext || bars.hi > f->y.hi + ext;
    plot_range_add(&f->y, fmax(bars.lo, f->y.lo - ext));
    plot_range_add(&f->y, fmin(bars.hi, f->y.hi + ext));
    for (int c = 0; kind == BY_LOSS && c < st->nc; c++)
        if (isfinite(st->plateau[c])) { plot_range_add(&f->y, st->plateau[c]); f->plateau = 1; }
    const plot_range_t *y = &f->y;
    f->top = f->log ? y->hi * pow(y->hi / y->pos_lo, 0.08) : y->hi + 0.08 * (y->hi - y->lo);
    if (f->any_div) plot_range_add(&f->y, f->top);   // the ×s' row
    return 1;
}

/* The subtitle's lines of a figure against the lr. */
static void lr_caption(const size_study_t *st, int kind, const lr_frame_t *f, char *buf, size_t len)
{
    char seeds[200];
    if (st->nk == 1) snprintf(seeds, sizeof seeds, "one seed");
    else if (kind == BY_LOSS)
        snprintf(seeds, sizeof seeds, "mean of %d seeds, bars: 95 %% CI (Student t)", st->nk);
    else snprintf(seeds, sizeof seeds, "median of %d seeds, bars: their range", st->nk);
    if (f->cut) snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), ", cut at the frame");
    if (st->nk > 1 && st->nw > 1)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "; widths offset slightly in lr");
    snprintf(buf, len, "%s; %s%s%s%s", kind == BY_LOSS ? "final loss: the last validation loss"
             : "peak: the largest max |attention logit| of any update (the scaled logits the "
               "softmax sees)", seeds, f->plateau ? "; dotted: the unigram plateau" : "",
             f->any_div || f->above ? "\n" : "", f->any_div && f->above
             ? "×: a seed diverged at that lr (drawn at the top); △: a mean above the initial "
               "loss, drawn at it" : f->any_div ? "×: a seed diverged at that lr (drawn at the top)"
             : f->above ? "△: a mean above the initial loss, drawn at it" : "");
}

/* Panel (c, a), the k-th of a grid of cols columns, of a figure against the lr. */
static void lr_panel(sbuf_t *s, const plot_set_t *set, const size_study_t *st, int kind, int c,
                     int a, int k, int cols, const plot_style_t *ws, const lr_frame_t *f)
{
    panel_title(s, set, st, c, a, NULL, cols >= 4 ? 80 : 90);
    sbuf_printf(s, "%s\n%s\nunset arrow\n", k % cols == 0 ? (kind == BY_LOSS
                ? "set ylabel 'final validation loss (nats)' @F80"
                : "set ylabel 'peak max |attention logit|' @F80") : "unset ylabel",
                a + cols >= st->na ? "set xlabel 'learning rate (after warm-up)' @F80"
                                   : "unset xlabel");
    if (kind == BY_LOSS && isfinite(st->plateau[c]))
        sbuf_printf(s, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead dt 3 "
                       "lc rgb 'gray40'\n", st->plateau[c], st->plateau[c]);
    sbuf_printf(s, "plot 1/0 notitle");
    for (int w = 0; w < st->nw; w++) {
        const int mark = f->mark[c][a][w];
        if (mark & MARK_V)
            sbuf_printf(s, ", $v%d_%d_%d using 1:2:3:4 with %s lw 2 pt %d ps 1.1 lc rgb '%s' "
                           "notitle", c, a, w, st->nk > 1 ? "yerrorlines" : "linespoints",
                        ws[w].pt, ws[w].color);
        if (mark & MARK_ABOVE)
            sbuf_printf(s, ", $v%d_%d_%d using 1:($6 > 0 ? $2 : 1/0) with points pt 8 ps 2.2 lw 2 "
                           "lc rgb '%s' notitle", c, a, w, ws[w].color);
        if (mark & MARK_X)
            sbuf_printf(s, ", $x%d_%d_%d using 1:(%.10g) with points pt 2 ps 1.6 lw 2 lc rgb '%s' "
                           "notitle", c, a, w, f->top, ws[w].color);
    }
    sbuf_printf(s, "\n");
}

static int fig_by_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len, int kind)
{
    const char *base = kind == BY_LOSS ? "size_lr" : "size_logit";
    size_study_t st;
    const int got = study_of(set, &st, base, name, len);
    if (got <= 0) return got;
    const int cols = st.na <= 4 ? st.na : (st.na + 1) / 2, per = (st.na + cols - 1) / cols;
    lr_frame_t f;
    if (st.nc * per * cols > PANELS_MAX)
        snprintf(name, len, "%s: %d panels (%d groups × %d remedies): plot fewer files at once",
                 base, st.nc * per * cols, st.nc, st.na);
    else if (!lr_frame(s, &st, kind, &f)) snprintf(name, len, "%s: no finite value", base);
    else fig_name(&st, base, name, len);
    if (strchr(name, ':')) {
        size_study_free(&st);
        return -1;
    }
    char title[500], sub[1600], extra[500];
    size_title(set, &st, kind == BY_LOSS ? "Final loss vs learning rate by width"
                         : "Peak attention logit vs learning rate by width", 1,
               kind == BY_LOSS ? "Wortsman et al. 2023, Fig. 1" : "Wortsman et al. 2023",
               title, sizeof title);
    lr_caption(&st, kind, &f, extra, sizeof extra);
    size_subtitle(set, &st, extra, sub, sizeof sub);
    sbuf_t keys = {0};
    plot_style_t ws[SIZE_WIDTHS];
    for (int w = 0; w < st.nw; w++) {
        width_style(set, &st, w, &ws[w]);
        plot_keyentry(&keys, &ws[w], "linespoints");
    }
    if (f.any_div) plot_keyentry_text(&keys, "points pt 2 ps 1.6 lw 2 lc rgb 'black'",
                                      "a seed diverged there");
    if (f.above) plot_keyentry_text(&keys, "points pt 8 ps 2 lw 2 lc rgb 'black'",
                                    "above the initial loss");
    const int rows = plot_key_rows(st.nw + f.any_div + f.above,
                                   f.above ? 22 : f.any_div ? 21 : plot_styles_longest(ws, st.nw));
    plot_grid_t g;
    plot_grid(&g, st.nc * per, cols, plot_title_lines(sub), rows);
    g.top -= 0.012;   // the panels' titles clear of the subtitle
    if (st.nc > 1) {  // titles of two lines: the context, the remedy
        g.top -= 0.022;
        g.above += 0.022;
    }
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    lr_axis(s, &st, &f.x);
    plot_axis(s, "y", &f.y, f.log, 0.05, kind == BY_LOGIT ? 0.0 : NAN, NAN);
    for (int c = 0; c < st.nc; c++)
        for (int a = 0; a < st.na; a++)
            if (st.rep[c][a] >= 0) {
                const int k = (c * per + a / cols) * cols + a % cols;
                plot_panel(s, &g, k);
                lr_panel(s, set, &st, kind, c, a, k, cols, ws, &f);
            }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    size_study_free(&st);
    return 1;
}

int plot_fig_size_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_by_lr(set, s, name, len, BY_LOSS);
}

int plot_fig_size_logit(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_by_lr(set, s, name, len, BY_LOGIT);
}

/* ------------------------------------------------------------- against the width, per remedy */

/* The panels of a figure against the width: one per context, side by side, one key under them. */
static void width_grid(plot_grid_t *g, const size_study_t *st, const char *sub, int key_rows,
                       int title_lines)
{
    plot_grid(g, 1, st->nc, plot_title_lines(sub), key_rows);
    g->top -= 0.012 + (title_lines - 1) * 0.022;   // the panels' titles clear of the subtitle
}

int plot_fig_size_sensitivity(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    size_study_t st;
    const int got = study_of(set, &st, "size_sensitivity", name, len);
    if (got <= 0) return got;
    fig_name(&st, "size_sensitivity", name, len);
    plot_range_t y;
    plot_range_init(&y);
    plot_range_add(&y, 0.0);   // a sensitivity of 0: the lr does not matter
    char has[SIZE_CTX][SIZE_ARMS] = {{0}};   // the blocks with rows (gnuplot warns on none)
    for (int c = 0; c < st.nc; c++)
        for (int a = 0; a < st.na; a++) {
            sbuf_printf(s, "$s%d_%d << EOD\n", c, a);   // width x mean lo hi half seeds
            for (int w = 0; w < st.nw; w++) {
                double mean, half;
                size_t n;
                size_sensitivity_ci(&st, c, a, w, &mean, &half, &n);
                if (!n) continue;
                const double h = isfinite(half) ? half : 0.0;
                sbuf_printf(s, "%g %.10g %.12g %.10g %.10g %.12g %zu\n", st.width[w],
                            dodge(&st, w, a, st.na), mean, fmax(0.0, mean - h), mean + h, half, n);
                plot_range_mid(&y, mean);
                plot_range_add(&y, mean + h);
                has[c][a] = 1;
            }
            sbuf_printf(s, "EOD\n");
        }
    char title[500], sub[1600], extra[600];
    size_title(set, &st, "LR sensitivity vs width by remedy", 0, "Wortsman et al. 2023", title,
               sizeof title);
    snprintf(extra, sizeof extra, "LR sensitivity: the mean over the %d learning rates %g … %g of "
             "min(final loss, loss_0) − the best final loss\nloss_0: the loss at update 1 (a "
             "diverged run counts as loss_0); %s%s", st.nl, st.lr[0], st.lr[st.nl - 1],
             st.nk > 1 ? "mean of the seeds' own, bars: 95 % CI (Student t)" : "one seed",
             st.na > 1 && st.nk > 1 ? "; remedies offset slightly in width" : "");
    size_subtitle(set, &st, extra, sub, sizeof sub);
    sbuf_t keys = {0};
    plot_style_t as[SIZE_ARMS];
    for (int a = 0; a < st.na; a++) {
        arm_style(&st, a, &as[a]);
        plot_keyentry(&keys, &as[a], "linespoints");
    }
    const int rows = plot_key_rows(st.na, plot_styles_longest(as, st.na));
    plot_grid_t g;
    width_grid(&g, &st, sub, rows, 1);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    width_axis(s, &st);
    plot_axis(s, "y", &y, 0, 0.06, 0.0, NAN);
    for (int c = 0; c < st.nc; c++) {
        plot_panel(s, &g, c);
        panel_title(s, set, &st, c, -1, NULL, 90);
        sbuf_printf(s, "%s\nplot 1/0 notitle", c == 0 ? "set ylabel 'LR sensitivity (nats)' @F80"
                                                      : "unset ylabel");
        for (int a = 0; a < st.na; a++)
            if (has[c][a])
                sbuf_printf(s, ", $s%d_%d using 2:3:4:5 with %s lw 2 pt %d ps 1.2 lc rgb '%s' "
                               "notitle", c, a, st.nk > 1 ? "yerrorlines" : "linespoints",
                            as[a].pt, as[a].color);
        sbuf_printf(s, "\n");
    }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    size_study_free(&st);
    return 1;
}

/* Blocks $b<c>_<a> ("width x lr lo hi": the geometric mean of the seeds' best lrs and its 95 %
 * CI) and $p<c>_<a> ("x lr" of each seed) of the arms drawn (use[a]); y the values, has[c][a]
 * whether they have rows. */
static void best_blocks(sbuf_t *s, const size_study_t *st, const int *use, int nuse,
                        plot_range_t *y, char (*has)[SIZE_ARMS])
{
    for (int c = 0; c < st->nc; c++)
        for (int a = 0, j = 0; a < st->na; a++) {
            if (!use[a]) continue;
            sbuf_printf(s, "$b%d_%d << EOD\n", c, a);
            sbuf_t pts = {0};
            for (int w = 0; w < st->nw; w++) {
                double lg[SIZE_SEEDS], mean, half;
                size_t n;
                for (int k = 0; k < st->nk; k++) {
                    int edge;
                    const double b = size_best_lr(st, c, a, w, k, &edge);
                    lg[k] = isfinite(b) ? log10(b) : NAN;
                    if (isfinite(b)) {
                        sbuf_printf(&pts, "%.10g %.10g\n", dodge(st, w, j, nuse), b);
                        plot_range_add(y, b);
                    }
                }
                fit_mean_ci(lg, 1, (size_t)st->nk, &mean, &half, &n);
                if (!n) continue;
                const double h = isfinite(half) ? half : 0.0;
                sbuf_printf(s, "%g %.10g %.10g %.10g %.10g\n", st->width[w], dodge(st, w, j, nuse),
                            pow(10.0, mean), pow(10.0, mean - h), pow(10.0, mean + h));
                has[c][a] = 1;   // $b and $p have rows
                plot_range_mid(y, pow(10.0, mean));
                plot_range_add(y, pow(10.0, mean - h));
                plot_range_add(y, pow(10.0, mean + h));
            }
            sbuf_printf(s, "EOD\n$p%d_%d << EOD\n%sEOD\n", c, a, pts.data ? pts.data : "");
            sbuf_free(&pts);
            j++;
        }
}

/* Panel c's second title line: each arm's spread of the best lr over the widths. */
static void spread_line(const size_study_t *st, int c, const int *use, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "spread (decades):");
    for (int a = 0; a < st->na && used < len; a++) {
        if (!use[a]) continue;
        double mean, half;
        size_t n;
        size_best_lr_spread(st, c, a, &mean, &half, &n);
        if (!n) continue;
        used += (size_t)snprintf(buf + used, len - used, "%s %s %.2f", used > 17 ? "," : "",
                                 st->arm[a], mean);
        if (isfinite(half) && used < len)
            used += (size_t)snprintf(buf + used, len - used, " ± %.2f", half);
    }
}

int plot_fig_size_best_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    size_study_t st;
    const int got = study_of(set, &st, "size_best_lr", name, len);
    if (got <= 0) return got;
    fig_name(&st, "size_best_lr", name, len);
    int use[SIZE_ARMS], pairs = 0, nuse = 0;
    char measure[200];   // standard vs μP (the arms of a pair), and any other optimizer's arm
    for (int a = 0; a < st.na; a++) pairs |= st.partner[a] >= 0;
    snprintf(measure, sizeof measure, "%s", pairs ? "Best learning rate vs width, standard vs μP"
                                                  : "Best learning rate vs width by remedy");
    for (int a = 0; a < st.na; a++) {
        nuse += use[a] = !pairs || st.partner[a] >= 0 || st.opt[a];
        int r = -1;
        for (int c = 0; c < st.nc && r < 0; c++) r = st.rep[c][a];
        if (pairs && st.opt[a] && r >= 0)
            snprintf(measure + strlen(measure), sizeof measure - strlen(measure), " vs %s",
                     plot_optimizer_label(set->runs[r].cfg.train.optimizer));
    }
    plot_range_t y;
    plot_range_init(&y);
    char has[SIZE_CTX][SIZE_ARMS] = {{0}};
    best_blocks(s, &st, use, nuse, &y, has);
    plot_range_add(&y, st.lr[0]);   // the grid's ends, dotted
    plot_range_add(&y, st.lr[st.nl - 1]);
    char title[500], sub[1600], extra[600];
    size_title(set, &st, measure, 0, "Wortsman et al. 2023", title, sizeof title);
    snprintf(extra, sizeof extra, "best lr: per seed, the lr of the lowest min(final loss, loss_0), "
             "refined by the parabola through it and its two neighbours in log lr\n%s; grey: "
             "outside the lr grid (a best lr there is only a bound)\nspread: max − min over the "
             "widths of log10 best lr%s", st.nk > 1
             ? "line: geometric mean over the seeds, bars: its 95 % CI, open points: each seed"
             : "one seed", st.nk > 1 ? ", per seed; mean ± 95 % CI over the seeds" : "");
    size_subtitle(set, &st, extra, sub, sizeof sub);
    sbuf_t keys = {0};
    plot_style_t as[SIZE_ARMS];
    for (int a = 0; a < st.na; a++) {
        arm_style(&st, a, &as[a]);
        if (use[a]) plot_keyentry(&keys, &as[a], "linespoints");
    }
    if (st.nk > 1) plot_keyentry_text(&keys, "points pt 6 ps 1.5 lw 1.5 lc rgb 'black'", "one seed");
    const int rows = plot_key_rows(nuse + (st.nk > 1), plot_styles_longest(as, st.na));
    plot_grid_t g;
    width_grid(&g, &st, sub, rows, 2);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    width_axis(s, &st);
    plot_axis(s, "y", &y, 1, 0.08, NAN, NAN);
    for (int c = 0; c < st.nc; c++) {
        char line[400];
        spread_line(&st, c, use, line, sizeof line);
        plot_panel(s, &g, c);
        panel_title(s, set, &st, c, -1, line, 90);
        sbuf_printf(s, "%s\n", c == 0 ? "set ylabel 'best learning rate' @F80" : "unset ylabel");
        sbuf_printf(s, "set object 1 rectangle from graph 0, graph 0 to graph 1, first %.10g behind "
                       "fc rgb '#e8e8e8' fs solid noborder\nset object 2 rectangle from graph 0, "
                       "first %.10g to graph 1, graph 1 behind fc rgb '#e8e8e8' fs solid noborder\n",
                    st.lr[0], st.lr[st.nl - 1]);
        sbuf_printf(s, "plot 1/0 notitle");
        for (int a = 0; a < st.na; a++) {
            if (!use[a] || !has[c][a]) continue;
            sbuf_printf(s, ", $b%d_%d using 2:3:4:5 with %s lw 2 pt %d ps 1.2 lc rgb '%s' notitle",
                        c, a, st.nk > 1 ? "yerrorlines" : "linespoints", as[a].pt, as[a].color);
            if (st.nk > 1)
                sbuf_printf(s, ", $p%d_%d using 1:2 with points pt 6 ps 1.5 lw 1.5 lc rgb '%s' notitle",
                            c, a, as[a].color);
        }
        sbuf_printf(s, "\n");
    }
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    size_study_free(&st);
    return 1;
}
