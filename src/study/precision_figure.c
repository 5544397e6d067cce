/* precision_figure.c — the precision study's figures (issue 49). precision_lines: against the
 * update, the max |attention logit|, the largest weight spectral norm, pure bfloat16's
 * stagnation and the training loss, a row each, a column per lr; a line per arm (the mean over
 * its seeds, Okabe & Ito's colour-blind-safe colours by the arm's place in the study's order)
 * and a band over the seeds' range. The arms and runs are the study's (study/precision.h),
 * drawn here, computed there. precision_lr: the table's final loss against the lr per arm.
 * Both drawn when the set holds a bfloat16, bfloat16_pure or fp8 training run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "study/figures.h"
#include "study/precision.h"

enum { Q_LOGIT, Q_SPEC, Q_STAG, Q_LOSS, NQ };

/* A run's curve q: *x, *y of the returned length (0: none). */
static size_t curve(const plot_run_t *r, int q, const double **x, const double **y)
{
    const plot_prec_t *p = r->prec;
    *x = r->step;
    if (q == Q_LOSS) { *y = r->loss; return r->nsteps; }
    if (q == Q_LOGIT) {
        if (!r->dyn || !r->dyn->max_logit) return 0;
        *y = r->dyn->max_logit;
        return r->dyn->nsteps < r->nsteps ? r->dyn->nsteps : r->nsteps;
    }
    if (!p) return 0;
    if (q == Q_STAG) { *y = p->stagnation; return p->nstag < r->nsteps ? p->nstag : r->nsteps; }
    *x = p->probe_step;
    *y = p->spec_max;
    return p->spec_max ? p->nprobe : 0;
}

/* Block $c<a>_<l>_<q>: "x mean lo hi" over the seeds of arm a at lr l, at the rows of its
 * longest curve (the seeds' range as the band); widens x, y. Returns the rows written. */
static size_t block(sbuf_t *s, const prec_study_t *st, int a, int l, int q, plot_range_t *rx,
                    plot_range_t *ry)
{
    size_t longest = 0;
    int best = -1;
    for (int k = 0; k < st->nk; k++) {
        const int i = precision_at(st, a, l, k);
        const double *x, *y;
        if (i >= 0 && curve(st->t.rows[i].run, q, &x, &y) > longest) {
            longest = curve(st->t.rows[i].run, q, &x, &y);
            best = i;
        }
    }
    if (best < 0) return 0;
    const double *bx, *by;
    curve(st->t.rows[best].run, q, &bx, &by);
    size_t rows = 0;
    sbuf_printf(s, "$c%d_%d_%d << EOD\n", a, l, q);
    for (size_t j = 0; j < longest; j++) {
        double sum = 0.0, lo = INFINITY, hi = -INFINITY;
        int n = 0;
        for (int k = 0; k < st->nk; k++) {
            const int i = precision_at(st, a, l, k);
            const double *x, *y;
            if (i < 0 || curve(st->t.rows[i].run, q, &x, &y) <= j || !isfinite(y[j])) continue;
            sum += y[j], n++;
            lo = fmin(lo, y[j]), hi = fmax(hi, y[j]);
        }
        if (!n) continue;
        sbuf_printf(s, "%.9g %.9g %.9g %.9g\n", bx[j], sum / n, lo, hi);
        plot_range_add(rx, bx[j]);
        plot_range_mid(ry, sum / n);
        plot_range_add(ry, lo);
        plot_range_add(ry, hi);
        rows++;
    }
    sbuf_printf(s, "EOD\n");
    return rows;
}

/* The arm's colour: Okabe & Ito's by its place in the study's order (study/precision.c). */
static const char *arm_colour(const prec_study_t *st, int a)
{
    return palette_qualitative(st->arm[a].rank >= 0 && st->arm[a].rank < 7 ? st->arm[a].rank : 7);
}

static void panel(sbuf_t *s, const plot_grid_t *g, const prec_study_t *st, int row, int q, int l,
                  const size_t *has, const plot_range_t *rx, const plot_range_t *ry)
{
    static const char *const LABEL[NQ] = {"max |attention logit|", "largest ‖W‖_2",
                                          "stagnation (share)", "training loss (nats)"};
    const int log = (q == Q_LOGIT || q == Q_SPEC) && plot_range_log(&ry[q]);
    plot_panel(s, g, row * st->nl + l);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\n");
    plot_axis(s, "x", rx, 0, 0.0, NAN, NAN);
    plot_axis(s, "y", &ry[q], log, 0.05, 0.0, q == Q_STAG ? 1.0 : NAN);
    const double span = ry[q].hi - ry[q].lo > 0 ? ry[q].hi - ry[q].lo : 0.2 * fabs(ry[q].hi) + 1.0;
    if (!log) sbuf_printf(s, "set ytics %g\n", plot_tic_step(span, 3));
    else sbuf_printf(s, "set ytics %s\n", ry[q].hi < 100.0 * ry[q].lo ? "2" : "auto");   // ×2 in 2 decades
    if (l == 0) sbuf_printf(s, "set ylabel '%s' @F80\n", LABEL[q]);
    else sbuf_printf(s, "unset ylabel\n");
    if (q == Q_LOSS) sbuf_printf(s, "set xlabel 'update' @F80\nset format x '%%g'\n");
    else sbuf_printf(s, "unset xlabel\nset format x ''\n");
    if (row == 0) sbuf_printf(s, "set title 'lr %g' @F80\n", st->lr[l]);
    else sbuf_printf(s, "unset title\n");
    sbuf_printf(s, "plot 1/0 notitle");
    for (int a = 0; a < st->na; a++) {
        if (!has[((size_t)a * st->nl + l) * NQ + q]) continue;
        const char *c = arm_colour(st, a);
        sbuf_printf(s, ", $c%d_%d_%d using 1:3:4 with filledcurves lc rgb '%s' fs transparent "
                    "solid 0.18 noborder notitle, $c%d_%d_%d using 1:2 with lines lc rgb '%s' "
                    "dt %d lw 1.6 notitle", a, l, q, c, a, l, q, c, palette_dash(st->arm[a].rank >= 4));
    }
    sbuf_printf(s, "\n");
}

/* The sweep's title when every run shares one (gnuplot enhanced text), else "". */
static void sweep_title(const plot_set_t *set, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 1; i < set->n; i++)
        if (strcmp(set->runs[i].sweep_title, set->runs[0].sweep_title)) return;
    plot_enh(set->runs[0].sweep_title, buf, len);
}

/* The study of set into st for figure fig, and the figure's name (or its refusal) into name:
 * 1 to draw; 0 without a low-precision training run (not this figure's set); −1 when the set is
 * not the study's (name says why; st freed). */
static int study_of(const plot_set_t *set, prec_study_t *st, const char *fig, char *name, size_t len)
{
    int lowp = 0;
    for (int i = 0; i < set->n; i++) lowp |= config_lowp(&set->runs[i].cfg) && set->runs[i].nsteps;
    if (!lowp) return 0;
    char why[1200];
    if (precision_build(set, st, why, sizeof why)) {
        precision_free(st);
        snprintf(name, len, "%s: %s", fig, why);
        return -1;
    }
    snprintf(name, len, "%s", fig);
    return 1;
}

int plot_fig_precision_lines(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    prec_study_t st;
    const int got = study_of(set, &st, "precision_lines", name, len);
    if (got <= 0) return got;
    size_t *has = calloc((size_t)st.na * st.nl * NQ + 1, sizeof *has);
    plot_range_t rx, ry[NQ];
    plot_range_init(&rx);
    for (int q = 0; q < NQ; q++) plot_range_init(&ry[q]);
    for (int a = 0; has && a < st.na; a++)
        for (int l = 0; l < st.nl; l++)
            for (int q = 0; q < NQ; q++)
                has[((size_t)a * st.nl + l) * NQ + q] = block(s, &st, a, l, q, &rx, &ry[q]);
    int qs[NQ], nq = 0;
    for (int q = 0; q < NQ; q++)
        if (!plot_range_empty(&ry[q])) qs[nq++] = q;   // stagnation only with pure bfloat16
    if (!has || !nq) {
        free(has);
        precision_free(&st);
        snprintf(name, len, "precision_lines: no finite value");
        return -1;
    }
    char title[300], sub[900], sweep[300];
    sweep_title(set, sweep, sizeof sweep);
    snprintf(title, sizeof title, "Low precision against float32: %s, L = %d, d = %d, %d updates",
             st.scheme, st.L, st.d_model, st.steps);
    snprintf(sub, sizeof sub, "%s%s%d runs, %d arm%s, %d seed%s; line: the mean over the seeds, "
             "band: their range\n‖W‖_2: the largest weight spectral norm at each probe; stagnation: "
             "pure bfloat16's lost updates (stability table precision)", sweep, sweep[0] ? "\n" : "",
             st.t.n, st.na, st.na > 1 ? "s" : "", st.nk, st.nk > 1 ? "s" : "");
    sbuf_t keys = {0};
    size_t longest = 0;
    for (int a = 0; a < st.na; a++) {
        char with[96];
        snprintf(with, sizeof with, "lines lc rgb '%s' dt %d lw 2", arm_colour(&st, a),
                 palette_dash(st.arm[a].rank >= 4));
        plot_keyentry_text(&keys, with, st.arm[a].label);
        if (strlen(st.arm[a].label) > longest) longest = strlen(st.arm[a].label);
    }
    const int rows = plot_key_rows(st.na, (int)longest + 4);
    plot_grid_t g;
    plot_grid(&g, nq, st.nl, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    for (int r = 0; r < nq; r++)
        for (int l = 0; l < st.nl; l++) panel(s, &g, &st, r, qs[r], l, has, &rx, ry);
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    free(has);
    precision_free(&st);
    return 1;
}

int plot_fig_precision_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    prec_study_t st;
    const int got = study_of(set, &st, "precision_lr", name, len);
    if (got <= 0) return got;
    plot_range_t rx, ry;
    plot_range_init(&rx);
    plot_range_init(&ry);
    for (int a = 0; a < st.na; a++) {   // $l<a>: "lr mean lo hi seeds-used runs"
        sbuf_printf(s, "$l%d << EOD\n", a);
        for (int l = 0; l < st.nl; l++) {
            const precision_cell_t *c = &st.cell[(size_t)a * st.nl + l];
            if (!c->runs || !c->loss.n) continue;
            const double h = isfinite(c->loss.half) ? c->loss.half : 0.0;
            sbuf_printf(s, "%.9g %.9g %.9g %.9g %d %d\n", st.lr[l], c->loss.mean, c->loss.mean - h,
                        c->loss.mean + h, c->loss.n, c->runs);
            plot_range_add(&rx, st.lr[l]);
            plot_range_mid(&ry, c->loss.mean);
        }
        sbuf_printf(s, "EOD\n");
    }
    if (plot_range_empty(&ry)) {
        precision_free(&st);
        snprintf(name, len, "precision_lr: no finite value");
        return -1;
    }
    char title[300], sub[600], sweep[300];
    sweep_title(set, sweep, sizeof sweep);
    snprintf(title, sizeof title, "Final loss against the learning rate per arm: %s, L = %d, d = %d, "
             "%d updates", st.scheme, st.L, st.d_model, st.steps);
    snprintf(sub, sizeof sub, "%s%s%d runs, %d seed%s; point: the mean final loss over the seeds that "
             "did not diverge, bar: 95 %% t-interval (stability table precision)", sweep,
             sweep[0] ? "\n" : "", st.t.n, st.nk, st.nk > 1 ? "s" : "");
    sbuf_t keys = {0};
    size_t longest = 0;
    for (int a = 0; a < st.na; a++) {
        char with[96];
        snprintf(with, sizeof with, "linespoints lc rgb '%s' dt %d lw 2 pt %d", arm_colour(&st, a),
                 palette_dash(st.arm[a].rank >= 4), 5 + 2 * (a % 4));
        plot_keyentry_text(&keys, with, st.arm[a].label);
        if (strlen(st.arm[a].label) > longest) longest = strlen(st.arm[a].label);
    }
    const int rows = plot_key_rows(st.na, (int)longest + 4);
    plot_grid_t g;
    plot_grid(&g, 1, 1, plot_title_lines(sub), rows);
    plot_begin(s, title, sub);
    plot_panel(s, &g, 0);
    sbuf_printf(s, "set grid\nunset key\nset tics @F80\nset xlabel 'learning rate' @F80\n"
                   "set ylabel 'final loss (nats)' @F80\nset logscale x\n");
    sbuf_printf(s, "set xrange [%g:%g]\nset xtics (", rx.lo / 1.5, rx.hi * 1.5);
    for (int l = 0; l < st.nl; l++) sbuf_printf(s, "%s'%g' %.9g", l ? ", " : "", st.lr[l], st.lr[l]);
    sbuf_printf(s, ")\n");
    plot_axis(s, "y", &ry, 0, 0.08, 0.0, NAN);
    sbuf_printf(s, "plot 1/0 notitle");
    for (int a = 0; a < st.na; a++) {
        const char *c = arm_colour(&st, a);
        const double dx = pow(1.04, a - (st.na - 1) / 2.0);   // apart, so the bars do not hide
        sbuf_printf(s, ", $l%d using ($1*%.6g):2:3:4 with yerrorbars lc rgb '%s' pt %d ps 1.2 notitle, "
                    "$l%d using ($1*%.6g):2 with lines lc rgb '%s' dt %d lw 1.6 notitle", a, dx, c,
                    5 + 2 * (a % 4), a, dx, c, palette_dash(st.arm[a].rank >= 4));
    }
    sbuf_printf(s, "\n");
    plot_end(s, &g, rows, &keys);
    sbuf_free(&keys);
    precision_free(&st);
    return 1;
}
