/* dynamics_figure.c — the training dynamics' figures (docs/design.md §6g, docs/dynamics.md):
 * layer × update heat maps of the gradient, the update ratio, the attention entropy and its
 * largest logit (viridis, a labelled colour bar, each column the updates since the previous
 * measurement); the largest attention logit, the lowest entropy and the loss against the
 * update, as small multiples (a panel per configuration but the ordered key, which the colour
 * shows); the final loss against the learning rate per configuration (Wortsman et al. 2023,
 * Fig. 1). The data come from /train, read by report/plot_columns.c (files written before a
 * column existed draw without it). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/runs.h"
#include "study/figures.h"

#define DYN_MAX_HEAT 6      /* runs side by side in a heat map */
#define DYN_MAX_LINES 48    /* runs in the line plots */
#define DYN_MAX_COLUMNS 300 /* update columns of a heat map */

/* ------------------------------------------------------------------------- heat maps */

typedef struct {
    const char *name, *title, *cb;
    int log;                                  /* a log colour scale when the values span decades */
    size_t field, steps, count;               /* offsetof(plot_dyn_t, …): values, x, rows */
} heat_t;

#define DF(x) offsetof(plot_dyn_t, x)
static const heat_t HEATS[] = {
    {"dyn_grad", "Gradient per layer during training", "‖∇W‖_F of the layer", 1, DF(grad),
     DF(probe_step), DF(nprobe)},
    {"dyn_update", "Relative update per layer (DeepNet's update ratio)",
     "mean ‖ΔW‖_F/‖W‖_F of its matrices", 1, DF(update), DF(update_step), DF(nupdate)},
    {"dyn_entropy", "Attention entropy per layer", "mean self-attention entropy (nats)", 0,
     DF(entropy), DF(probe_step), DF(nprobe)},
    {"dyn_logit", "Largest attention logit per layer", "max |attention logit|", 1, DF(logit),
     DF(probe_step), DF(nprobe)},
};

#define AT(d, off, type) (*(type *)((char *)(d) + (off)))

/* One run's cells: the column of a measurement at update t spans the updates since the
 * previous one drawn, (t_prev, t] ([t − 1, t] for the first): its true span, not half-way to
 * its neighbours; at most DYN_MAX_COLUMNS columns (every stride-th row and the last). y =
 * layer ± ½. Values that cannot be drawn (NaN, ≤ 0 on a log scale) are left out. */
static void heat_block(sbuf_t *s, int i, const plot_dyn_t *d, const heat_t *h, int log,
                       plot_range_t *x)
{
    const double *v = AT(d, h->field, double *), *t = AT(d, h->steps, double *);
    const size_t n = AT(d, h->count, size_t);
    const size_t stride = n > DYN_MAX_COLUMNS ? (n + DYN_MAX_COLUMNS - 1) / DYN_MAX_COLUMNS : 1;
    sbuf_printf(s, "$h%d << EOD\n", i);
    double prev = NAN;
    for (size_t k = 0; k < n;) {
        const double lo = isnan(prev) ? t[k] - 1.0 : prev, hi = t[k];
        plot_range_add(x, lo);
        plot_range_add(x, hi);
        for (int l = 0; l < d->L; l++) {
            const double y = v[k * d->L + l];
            if (isfinite(y) && (!log || y > 0))
                sbuf_printf(s, "%.10g %d %.10g %.10g %g %g %.6g\n", 0.5 * (lo + hi), l + 1, lo, hi,
                            l + 0.5, l + 1.5, y);
        }
        prev = t[k];
        k = k + stride < n ? k + stride : k + 1 < n ? n - 1 : n;   // n: the end
    }
    sbuf_printf(s, "EOD\n");
}

/* Heat map h of up to DYN_MAX_HEAT runs, a panel each titled by what tells it apart, one colour
 * scale and one labelled colour bar. */
static int fig_heat(const plot_set_t *set, sbuf_t *s, char *name, size_t len, const heat_t *h)
{
    int m[DYN_MAX_HEAT], n = 0;
    for (int i = 0; i < set->n; i++) {
        const plot_dyn_t *d = set->runs[i].dyn;
        if (!d || !AT(d, h->field, double *) || AT(d, h->count, size_t) < 2) continue;
        if (n == DYN_MAX_HEAT) return 0;   // a sweep's worth: the line plots tell them apart
        m[n++] = i;
    }
    if (!n) return 0;
    snprintf(name, len, "%s", h->name);
    plot_range_t v;   // one colour scale for every panel
    plot_range_init(&v);
    for (int i = 0; i < n; i++) {
        const plot_dyn_t *d = set->runs[m[i]].dyn;
        const double *x = AT(d, h->field, double *);
        for (size_t k = 0; k < AT(d, h->count, size_t) * (size_t)d->L; k++)
            if (!h->log || x[k] > 0) plot_range_add(&v, x[k]);
    }
    if (plot_range_empty(&v)) {
        snprintf(name, len, "%s: no value to draw", h->name);
        return -1;
    }
    const int log = h->log && plot_range_log(&v);
    plot_range_t x;
    plot_range_init(&x);
    for (int i = 0; i < n; i++) heat_block(s, i, set->runs[m[i]].dyn, h, log, &x);
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &d);
    char title[400], sub[600], shared[400];
    plot_title(set, m, n, &d, h->title, NULL, title, sizeof title);
    plot_shared(&d, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    snprintf(sub, sizeof sub, "%s\neach column: the updates since the previous measurement",
             shared);
    const int cols = n <= 3 ? n : n == 4 ? 2 : 3, rows = (n + cols - 1) / cols;
    plot_grid_t g;
    plot_grid(&g, rows, cols, plot_title_lines(sub), 0);
    g.width = 0.86;   // the colour bar right of the panels, its label right of it
    g.bottom = 0.01;
    plot_begin(s, title, sub);
    palette_heat(s, h->cb, log);
    plot_axis(s, "cb", &v, log, 0.0, NAN, NAN);
    sbuf_printf(s, "set colorbox user origin screen 0.885, screen %.4f size "
                   "screen 0.02, screen %.4f\nset xlabel 'update'\nset ylabel 'layer (1 = input "
                   "side)'\nunset key\n", g.bottom + g.below,
                g.top - g.above - g.bottom - g.below);
    sbuf_printf(s, "set xrange [%.10g:%.10g]\nset xtics %g\n", x.lo, x.hi,
                fmax(1.0, plot_tic_step(x.hi - x.lo, cols > 2 ? 3 : 4)));
    for (int i = 0; i < n; i++) {
        char key[400];
        plot_key(&d, &set->runs[m[i]], 1, key, sizeof key);
        plot_panel(s, &g, i);
        plot_set(s, "title", key);
        const int L = set->runs[m[i]].dyn->L;   // each run its own depth
        sbuf_printf(s, "set yrange [0.5:%g]\nset ytics 1, %d, %d\n", L + 0.5, L <= 16 ? 1 : L / 8, L);
        char block[16];
        snprintf(block, sizeof block, "h%d", i);
        plot_heat_cells(s, block, x.hi - x.lo, L);
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

int plot_fig_dyn_grad(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[0]);
}

int plot_fig_dyn_update(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[1]);
}

int plot_fig_dyn_entropy(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[2]);
}

int plot_fig_dyn_logit(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[3]);
}

/* ------------------------------------------------------------------- lines and lr scans */

/* The small multiples of runs m[0..n): colour by the ordered item c of d (−1: a colour per
 * run), a panel per value of the other items, at most DYN_MAX_PANELS; when there would be more,
 * panels by the first other item and a dash per value of the rest (named in the key). Returns 0
 * when the runs cannot be told apart so (more configurations than panels, colours or dashes):
 * the figure is then not drawn (an atlas-sized set has its own figures). */
#define DYN_MAX_PANELS 6
typedef struct {
    int np;                        /* panels */
    char panel[DYN_MAX_PANELS][300];
    int of[DYN_MAX_LINES];         /* each run's panel */
    plot_style_t st[DYN_MAX_LINES];
} multiples_t;

static int multiples(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                     multiples_t *mu)
{
    const int c = plot_colour_item(d);
    if (c < 0 && n > PLOT_QUAL_COUNT) return 0;   // more runs than colours: none told apart
    plot_diff_t rest = *d, first = *d, dash = *d;
    if (c >= 0) plot_diff_drop(&rest, d->item[c]);
    first.n = rest.n ? 1 : 0;   // the fallback: panels by the first other item,
    if (rest.n) snprintf(first.item[0], sizeof first.item[0], "%s", rest.item[0]);
    dash = rest;                //   dashes by the others
    if (rest.n) plot_diff_drop(&dash, rest.item[0]);
    int of[DYN_MAX_LINES], rep[DYN_MAX_LINES];
    const int fallback = plot_group_by(set, m, n, &rest, of, rep, DYN_MAX_LINES) > DYN_MAX_PANELS;
    plot_diff_t colour = {0};
    if (c >= 0) { colour.n = 1; snprintf(colour.item[0], sizeof colour.item[0], "%s", d->item[c]); }
    plot_styles(set, m, n, c >= 0 ? &colour : d, mu->st);
    if (c < 0)   // no ordered item: the key names the whole run
        for (int i = 0; i < n; i++) plot_key(d, &set->runs[m[i]], 0, mu->st[i].key, sizeof mu->st[i].key);
    mu->np = 0;
    char dk[DYN_MAX_LINES][300];
    int nd = 0;
    for (int i = 0; i < n; i++) {
        char p[300];
        if (c < 0) snprintf(p, sizeof p, "%s", "");   // one panel
        else plot_key(fallback ? &first : &rest, &set->runs[m[i]], 0, p, sizeof p);
        int j = 0;
        while (j < mu->np && strcmp(mu->panel[j], p)) j++;
        if (j == DYN_MAX_PANELS) return 0;   // more configurations than panels
        if (j == mu->np) snprintf(mu->panel[mu->np++], sizeof mu->panel[0], "%s", p);
        mu->of[i] = j;
        if (fallback && dash.n) {   // a dash per value of the others, said in the key
            char q[300];
            plot_key(&dash, &set->runs[m[i]], 0, q, sizeof q);
            int e = 0;
            while (e < nd && strcmp(dk[e], q)) e++;
            if (e == 5) return 0;   // more than five dashes: some would look alike
            if (e == nd) snprintf(dk[nd++], sizeof dk[0], "%s", q);
            mu->st[i].dt = palette_dash(e);
            const size_t used = strlen(mu->st[i].key);
            snprintf(mu->st[i].key + used, sizeof mu->st[i].key - used, ", %s", q);
        }
    }
    return 1;
}

/* Block $d<i>: "update max-logit min-entropy loss" of run r (at most about 500 rows); x, y[3]
 * widened. */
static void lines_block(sbuf_t *s, int i, const plot_run_t *r, plot_range_t *x, plot_range_t *y)
{
    const plot_dyn_t *d = r->dyn;
    const size_t T = d->nsteps < r->nsteps ? d->nsteps : r->nsteps, every = T > 500 ? T / 500 : 1;
    sbuf_printf(s, "$d%d << EOD\n", i);
    for (size_t t = 0; t < T; t++)
        if (t % every == 0 || t + 1 == T) {
            const double v[3] = {d->max_logit[t], d->min_entropy[t], r->loss[t]};
            sbuf_printf(s, "%.10g %.8g %.8g %.8g\n", r->step[t], v[0], v[1], v[2]);
            plot_range_add(x, r->step[t]);
            for (int p = 0; p < 3; p++) plot_range_add(&y[p], v[p]);
        }
    sbuf_printf(s, "EOD\n");
}

/* The key of the small multiples: an entry per colour (and dash), not per run, in the order of
 * the colour's item. Returns the entries. */
static int lines_keys(sbuf_t *keys, const plot_set_t *set, const int *m, int n,
                      const plot_diff_t *d, const multiples_t *mu)
{
    int first[DYN_MAX_LINES], nk = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= !strcmp(mu->st[j].color, mu->st[i].color) && mu->st[j].dt == mu->st[i].dt;
        if (!seen) first[nk++] = i;
    }
    const int c = plot_colour_item(d);
    for (int a = 1; c >= 0 && a < nk; a++)
        for (int b = a; b > 0 && plot_item_value(&set->runs[m[first[b]]], d->item[c]) <
                                     plot_item_value(&set->runs[m[first[b - 1]]], d->item[c]); b--) {
            const int t = first[b];
            first[b] = first[b - 1];
            first[b - 1] = t;
        }
    for (int k = 0; k < nk; k++) plot_keyentry(keys, &mu->st[first[k]], "lines");
    return nk;
}

/* The runs with dynamics and a training curve into m. Returns their count; 0 when they are more
 * than DYN_MAX_LINES (more curves than can be told apart: the atlas's figures). */
static int lines_members(const plot_set_t *set, int *m)
{
    int n = 0;
    for (int i = 0; i < set->n; i++)
        if (set->runs[i].dyn && set->runs[i].dyn->nsteps > 0 && set->runs[i].nsteps > 0) {
            if (n == DYN_MAX_LINES) return 0;
            m[n++] = i;
        }
    return n;
}

/* The grid: three rows (max logit, entropy, loss) sharing the x axis, a column per panel sharing
 * the y axis, room above the first row for titles of an item a line. */
static void lines_grid(plot_grid_t *g, const multiples_t *mu, const char *sub, int rows)
{
    plot_grid(g, 3, mu->np, plot_title_lines(sub), rows);
    g->bottom += 0.065;   // the bottom row's tics and label; the rows above share the x axis
    g->below = 0.025;
    if (mu->np > 1) {     // the columns share the y axis: its label on the first only
        g->left = 0.075;
        g->left_inner = 0.035;
    }
    int lines = 1;        // the panels' titles: an item a line when the panels are narrow
    for (int c = 0; mu->np > 3 && c < mu->np; c++) {
        int k = 1;
        for (const char *p = mu->panel[c]; (p = strstr(p, ", ")); p += 2) k++;
        lines = k > lines ? k : lines;
    }
    g->top -= (lines - 1) * 0.02;   // room above the first row only
}

/* Panel (p, c): quantity p (0 the max logit, 1 the lowest entropy, 2 the loss; range y) of the
 * n runs that mu puts in column c; the first row titled by the column's configuration. */
static void lines_panel(sbuf_t *s, const plot_grid_t *g, const multiples_t *mu, int n, int p,
                        int c, const plot_range_t *y)
{
    static const char *const LABEL[3] = {"max |attention logit|", "lowest layer-mean entropy (nats)",
                                         "training loss (nats)"};
    const int log = plot_range_log(y);
    plot_panel(s, g, p * mu->np + c);
    plot_axis(s, "y", y, log, 0.05, p < 2 ? 0.0 : NAN, NAN);
    const double span = y->hi - y->lo > 0 ? y->hi - y->lo : 0.2 * fabs(y->hi) + 1.0;
    if (!log) sbuf_printf(s, "set ytics %g\n", plot_tic_step(span, 3));
    if (c == 0) sbuf_printf(s, "set ylabel '%s' @F80\n", LABEL[p]);
    else sbuf_printf(s, "unset ylabel\n");
    if (p == 2) sbuf_printf(s, "set xlabel 'update' @F80\nset format x '%%g'\n");
    else sbuf_printf(s, "unset xlabel\nset format x ''\n");
    if (p == 0) {   // the panel's configuration, an item a line when panels are narrow
        char t[320], *sep;
        plot_enh(mu->panel[c], t, sizeof t);
        while (mu->np > 3 && (sep = strstr(t, ", "))) {
            *sep = '\n';
            memmove(sep + 1, sep + 2, strlen(sep + 2) + 1);
        }
        plot_set(s, "title", t);
        sbuf_printf(s, "set title @F70\n");
    } else {
        sbuf_printf(s, "unset title\n");
    }
    sbuf_printf(s, "plot 1/0 notitle");
    for (int i = 0; i < n; i++)
        if (mu->of[i] == c)
            sbuf_printf(s, ", $d%d using 1:%d with lines lc rgb '%s' dt %d lw 1.5 notitle", i,
                        p + 2, mu->st[i].color, mu->st[i].dt);
    sbuf_printf(s, "\n");
}

int plot_fig_dyn_lines(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[DYN_MAX_LINES];
    const int n = lines_members(set, m);
    if (!n) return 0;
    snprintf(name, len, "dyn_lines");
    plot_range_t x, y[3];
    plot_range_init(&x);
    for (int p = 0; p < 3; p++) plot_range_init(&y[p]);
    for (int i = 0; i < n; i++) lines_block(s, i, &set->runs[m[i]], &x, y);
    if (plot_range_empty(&y[0]) && plot_range_empty(&y[1]) && plot_range_empty(&y[2])) {
        snprintf(name, len, "dyn_lines: no finite value");
        return -1;
    }
    plot_diff_t d;
    plot_diff(set, m, n, PLOT_DIFF_SEED, &d);
    multiples_t *mu = malloc(sizeof *mu);
    if (!mu || !multiples(set, m, n, &d, mu)) {
        free(mu);
        return 0;
    }
    char title[400], sub[600], shared[400];
    plot_title(set, m, n, &d, "Attention-logit growth and entropy collapse", NULL, title, sizeof title);
    plot_shared(&d, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    snprintf(sub, sizeof sub, "%s", shared);
    sbuf_t keys = {0};
    const int nk = lines_keys(&keys, set, m, n, &d, mu);
    const int rows = plot_key_rows(nk, plot_styles_longest(mu->st, n));
    plot_grid_t g;
    lines_grid(&g, mu, sub, rows);
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    plot_axis(s, "x", &x, 0, 0.0, NAN, NAN);
    sbuf_printf(s, "set xtics %g\n", fmax(1.0, plot_tic_step(x.hi - x.lo, mu->np > 3 ? 3 : 5)));
    for (int p = 0; p < 3; p++)
        for (int c = 0; c < mu->np; c++) lines_panel(s, &g, mu, n, p, c, &y[p]);
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    free(mu);
    return 1;
}

/* Block $f<j>: "lr mean-final-loss any-diverged" of the runs m[i] of series j (of[i] == j) over
 * the rates lrs[0..nl), the final loss the table of runs' (report/runs.h: NaN when diverged, so
 * the mean is over the seeds that did not); then block $x<j>: the rates at which every run
 * diverged (drawn × at the top). x, y widened, seeds per point into *lo, *hi (their fewest and
 * most), *div set when a run diverged. Returns whether $x<j> has rows. */
static int lr_block(sbuf_t *s, const plot_set_t *set, const int *m, int n, const int *of, int j,
                    const double *lrs, int nl, plot_range_t *x, plot_range_t *y, int *lo,
                    int *hi, int *div)
{
    double gone[DYN_MAX_LINES * 4];
    int ngone = 0;
    sbuf_printf(s, "$f%d << EOD\n", j);
    for (int q = 0; q < nl; q++) {
        double sum = 0.0;
        int cnt = 0, runs = 0, anydiv = 0;
        for (int i = 0; i < n; i++) {
            if (of[i] != j || set->runs[m[i]].cfg.train.lr != lrs[q]) continue;
            runs_row_t row;
            runs_row(set, m[i], &row);
            if (isfinite(row.final_loss)) { sum += row.final_loss; cnt++; }
            anydiv |= row.diverged;
            runs++;
        }
        if (!runs) continue;
        *lo = runs < *lo ? runs : *lo;
        *hi = runs > *hi ? runs : *hi;
        *div |= anydiv;
        plot_range_add(x, lrs[q]);
        if (!cnt) {
            if (anydiv) gone[ngone++] = lrs[q];
            continue;
        }
        sbuf_printf(s, "%.10g %.8g %d\n", lrs[q], sum / cnt, anydiv);
        plot_range_add(y, sum / cnt);
    }
    sbuf_printf(s, "EOD\n");
    if (!ngone) return 0;
    sbuf_printf(s, "$x%d << EOD\n", j);
    for (int q = 0; q < ngone; q++) sbuf_printf(s, "%.10g\n", gone[q]);
    sbuf_printf(s, "EOD\n");
    return 1;
}

int plot_fig_dyn_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[DYN_MAX_LINES * 4], n = 0;
    for (int i = 0; i < set->n && n < DYN_MAX_LINES * 4; i++)
        if (set->runs[i].dyn && set->runs[i].dyn->nsteps > 0 && set->runs[i].nsteps > 0) m[n++] = i;
    if (n < 2) return 0;
    plot_diff_t all;
    plot_diff(set, m, n, 0, &all);
    if (!plot_diff_has(&all, "train.lr")) return 0;
    snprintf(name, len, "dyn_lr");
    // a series per configuration but the lr (and seed): every key that differs tells one apart
    plot_diff_t by = all;
    plot_diff_drop(&by, "train.lr");
    int rep[DYN_MAX_LINES], of[DYN_MAX_LINES * 4], reps[DYN_MAX_LINES];
    const int ns = plot_group_by(set, m, n, &by, of, rep, PLOT_MAX_SERIES + 1);
    if (ns > PLOT_MAX_SERIES) return PLOT_TOO_MANY(name, len, "dyn_lr", n);   // a key per line
    double lrs[DYN_MAX_LINES * 4];
    int nl = 0;
    for (int i = 0; i < n; i++) plot_intern_value(lrs, &nl, set->runs[m[i]].cfg.train.lr);
    qsort(lrs, (size_t)nl, sizeof *lrs, plot_cmp_double);
    plot_range_t x, y;
    plot_range_init(&x);
    plot_range_init(&y);
    int seeds_lo = 1 << 30, seeds_hi = 0, any_div = 0, gone[DYN_MAX_LINES], any_gone = 0;
    for (int j = 0; j < ns; j++) {
        gone[j] = lr_block(s, set, m, n, of, j, lrs, nl, &x, &y, &seeds_lo, &seeds_hi, &any_div);
        any_gone |= gone[j];
        reps[j] = m[rep[j]];
    }
    if (plot_range_empty(&y)) {
        snprintf(name, len, "dyn_lr: no finite final loss");
        return -1;
    }
    const double top = y.hi + 0.08 * (y.hi - y.lo > 0 ? y.hi - y.lo : 1.0);   // the ×s' row
    if (any_gone) plot_range_add(&y, top);
    plot_style_t st[DYN_MAX_LINES];
    plot_styles_apart(set, reps, ns, &by, st);
    char title[400], sub[700], shared[400], seeds[80] = "";
    plot_title(set, m, n, &by, "Final loss vs learning rate", "Wortsman et al. 2023, Fig. 1",
               title, sizeof title);
    plot_shared(&all, &set->runs[m[0]], PLOT_SHARED_TRAIN, 1, shared, sizeof shared);
    if (seeds_hi > 1 && seeds_lo == seeds_hi) snprintf(seeds, sizeof seeds, "; mean of %d seeds", seeds_hi);
    else if (seeds_hi > 1) snprintf(seeds, sizeof seeds, "; mean of %d–%d seeds", seeds_lo, seeds_hi);
    snprintf(sub, sizeof sub, "%s%s\nfinal loss: the last validation loss, else the mean training "
             "loss of the last tenth%s", shared, seeds,   // docs/design.md §6d
             any_div ? "; ×: a run diverged (the others' mean; at the top: all did)" : "");
    sbuf_t keys = {0};
    for (int j = 0; j < ns; j++) plot_keyentry(&keys, &st[j], "linespoints");
    if (any_div) plot_keyentry_text(&keys, "points pt 2 ps 2 lw 2 lc rgb 'black'", "diverged");
    const int rows = plot_key_rows(ns + any_div, plot_styles_longest(st, ns));
    plot_grid_t g;
    plot_grid(&g, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    plot_panel(s, &g, 0);
    sbuf_printf(s, "set grid\nunset key\nset xlabel 'learning rate'\nset ylabel 'final loss (nats)'\n");
    plot_axis(s, "x", &x, 1, 0.08, NAN, NAN);
    plot_axis(s, "y", &y, plot_range_log(&y), 0.06, NAN, NAN);
    sbuf_printf(s, "set xtics (");   // a tic at every rate run
    for (int q = 0; q < nl; q++) sbuf_printf(s, "%s%g", q ? ", " : "", lrs[q]);
    sbuf_printf(s, ")\nplot ");
    for (int j = 0; j < ns; j++)
        sbuf_printf(s, "%s$f%d using 1:2 with linespoints lc rgb '%s' dt %d lw %g pt %d notitle, "
                       "$f%d using 1:($3 != 0 ? $2 : 1/0) with points pt 2 ps 2.5 lw 2 lc rgb '%s' "
                       "notitle", j ? ", " : "", j, st[j].color, st[j].dt, st[j].lw, st[j].pt, j,
                    st[j].color);
    for (int j = 0; j < ns; j++)
        if (gone[j])
            sbuf_printf(s, ", $x%d using 1:(%.10g) with points pt 2 ps 2.5 lw 2 lc rgb '%s' "
                           "notitle", j, top, st[j].color);
    sbuf_printf(s, "\n");
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    return 1;
}
