/* plot_layout.c — panels, key strips and fitted ranges (report/plot_layout.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report/plot_layout.h"

/* Text height and width per character on the canvas at the key's font (@F80): the terminals'
 * fonts are 1/60 of the canvas's height (plot.c); the canvas is 14:9. */
#define LINE_H (0.8 / 60.0 * 1.3)
#define CHAR_W (0.8 / 60.0 * 0.62 * 9.0 / 14.0)
/* gnuplot's own width of a key column (graphics.c, do_key_layout): per byte of the title and for
 * the sample and gaps, on the canvas's width. Measured on pngcairo 1400×900 at the key's font:
 * two columns of 1372 px hold titles of at most 62 bytes, three at most 39 (pdfcairo's font is
 * the same share of its canvas). */
#define GP_CHAR_W (10.0 / 1400.0)
#define GP_SAMPLE (62.0 / 1400.0)
/* The widest axis a script writes: gnuplot reads a range's ends as doubles, and a margin past
 * DBL_MAX prints "inf", which it takes for an undefined variable (docs/faults.md, round 4). */
#define AXIS_EXP 307.0
#define AXIS_MAX 1e307

void plot_range_init(plot_range_t *r)
{
    r->lo = r->mid_lo = r->pos_lo = INFINITY;
    r->hi = r->mid_hi = -INFINITY;
}

void plot_range_mid(plot_range_t *r, double v)
{
    if (!isfinite(v)) return;
    plot_range_add(r, v);
    r->mid_lo = fmin(r->mid_lo, v);
    r->mid_hi = fmax(r->mid_hi, v);
}

void plot_range_add(plot_range_t *r, double v)
{
    if (!isfinite(v)) return;
    r->lo = fmin(r->lo, v);
    r->hi = fmax(r->hi, v);
    if (v > 0) r->pos_lo = fmin(r->pos_lo, v);
}

int plot_range_empty(const plot_range_t *r)
{
    return !(r->lo <= r->hi);
}

int plot_range_log(const plot_range_t *r)
{
    if (r->mid_lo <= r->mid_hi) return r->mid_lo > 0 && r->mid_hi >= 10.0 * r->mid_lo;
    return !plot_range_empty(r) && r->lo > 0 && r->hi >= 10.0 * r->lo;
}

/* The tics of a log axis [a, b] under two decades into t: 1, 2, 5 × 10^k; where that labels
 * fewer than two (a max logit on [3.1, 4.6] had one), 1 … 9 × 10^k; where even that does, both
 * ends to two digits, inside the axis. Returns their count (docs/design.md §6j). */
#define LOG_TICS_MAX 40
static int log_tics(double a, double b, double *t)
{
    static const double MANT[2][9] = {{1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
    static const int NMANT[2] = {3, 9};
    int n = 0;
    for (int fine = 0; fine < 2 && n < 2; fine++) {
        n = 0;
        for (double p = pow(10.0, floor(log10(a))); p <= b && n < LOG_TICS_MAX - 9; p *= 10.0)
            for (int k = 0; k < NMANT[fine]; k++) {
                const double v = p * MANT[fine][k];
                if (v >= a && v <= b) t[n++] = v;
            }
    }
    if (n >= 2) return n;
    const double p = pow(10.0, floor(log10(a)) - 1.0);   // two digits of a's decade
    t[0] = ceil(a / p) * p;
    t[1] = floor(b / p) * p;
    return t[1] > t[0] ? 2 : 1;
}

void plot_axis(sbuf_t *s, const char *axis, const plot_range_t *r, int log, double frac,
               double lo_bound, double hi_bound)
{
    double a = 0.0, b = 1.0;
    if (!plot_range_empty(r) && log && r->pos_lo <= r->hi) {
        const double lowest = r->mid_lo > 0 && r->mid_lo <= r->mid_hi
                                  ? fmax(r->pos_lo, r->mid_lo / 10.0) : r->pos_lo;
        const double la = log10(lowest), lb = log10(r->hi);
        const double m = la < lb ? frac * (lb - la) : 0.05;
        a = pow(10.0, fmax(la - m, -AXIS_EXP));   // a margin never past the doubles gnuplot
        b = pow(10.0, fmin(lb + m, AXIS_EXP));    // reads (a ratio of 1e295: not 10^318 = inf)
    } else if (!plot_range_empty(r)) {
        log = 0;
        const double span = r->hi - r->lo;
        const double m = span > 0 ? frac * span : r->lo != 0 ? 0.1 * fabs(r->lo) : 1.0;
        a = fmax(r->lo - m, -AXIS_MAX);
        b = fmin(r->hi + m, AXIS_MAX);
    } else {
        log = 0;
    }
    if (!isnan(lo_bound) && a < lo_bound) a = lo_bound;
    if (!isnan(hi_bound) && b > hi_bound) b = hi_bound;
    if (!(a < b)) b = a + 1.0;
    sbuf_printf(s, "%s logscale %s\nset %srange [%.10g:%.10g]\n", log ? "set" : "unset", axis, axis,
                a, b);
    if (log && b < 100.0 * a) {   // under two decades: tics at 1, 2, 5 × 10^k, not one or two
        double t[LOG_TICS_MAX];
        const int nt = log_tics(a, b, t);
        sbuf_printf(s, "set %stics (", axis);
        for (int k = 0; k < nt; k++) sbuf_printf(s, "%s%.3g", k ? ", " : "", t[k]);
        sbuf_printf(s, ")\nset format %s '%%g'\n", axis);
    } else {
        if (strcmp(axis, "cb")) sbuf_printf(s, "set %stics autofreq\n", axis);
        const int plain = !log || (a >= 1e-3 && b <= 1e5);   // 0.01, 10, 1000 as they are
        sbuf_printf(s, "set format %s '%s'\n", axis, plain ? "%g" : "10^{%L}");
    }
}

void plot_grid(plot_grid_t *g, int rows, int cols, int title_lines, int key_rows)
{
    g->rows = rows;
    g->cols = cols;
    g->top = 1.0 - 0.02 - title_lines * (1.0 / 60.0 * 1.5);
    g->key = key_rows > 0 ? key_rows * LINE_H + 0.03 : 0.0;
    g->bottom = g->key;
    g->left = cols > 2 ? 0.075 * 3.0 / cols + 0.03 : 0.08;
    g->right = 0.015;
    g->left_inner = g->left;
    g->below = rows > 2 ? 0.075 : 0.095;
    g->above = 0.05;
    g->width = 0.99;
}

double plot_tic_step(double span, int n)
{
    if (!(span > 0) || n < 1) return 1.0;
    if (span > AXIS_MAX) span = AXIS_MAX;   // the span of ±1e308 overflows: a finite step
    const double raw = span / n, p = pow(10.0, floor(log10(raw)));
    const double f = raw / p;
    return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * p;
}

/* text inside a double-quoted gnuplot string: \ and " escaped, a newline as \n. */
static void dq(sbuf_t *s, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '\\' || *c == '"') sbuf_printf(s, "\\%c", *c);
        else if (*c == '\n') sbuf_printf(s, "}\\n{/*0.8 ");   // the next subtitle line
        else sbuf_printf(s, "%c", *c);
    }
}

void plot_update_tics(sbuf_t *s, const plot_range_t *r, int integer)
{
    if (plot_range_empty(r)) return;
    double step = plot_tic_step(r->hi - r->lo, 8);
    if (integer && step < 1.0) step = 1.0;
    sbuf_printf(s, "set xtics %g\n", step);
}

void plot_begin(sbuf_t *s, const char *title, const char *sub)
{
    sbuf_printf(s, "set multiplot title \"");
    dq(s, title);
    if (sub && sub[0]) {
        sbuf_printf(s, "\\n{/*0.8 ");
        dq(s, sub);
        sbuf_printf(s, "}");
    }
    sbuf_printf(s, "\"\n");
}

void plot_set(sbuf_t *s, const char *what, const char *text)
{
    sbuf_printf(s, "set %s \"", what);
    for (const char *c = text; *c; c++) {
        if (*c == '\\' || *c == '"') sbuf_printf(s, "\\%c", *c);
        else if (*c == '\n') sbuf_printf(s, "\\n");
        else sbuf_printf(s, "%c", *c);
    }
    sbuf_printf(s, "\"\n");
}

int plot_title_lines(const char *sub)
{
    int n = 1 + (sub && sub[0]);
    for (const char *c = sub; c && *c; c++) n += *c == '\n';
    return n;
}

/* The plot area of column c: x0 … x1 (every column's the same width). */
static void column_area(const plot_grid_t *g, int c, double *x0, double *x1)
{
    const double w = (g->width - g->left - (g->cols - 1) * g->left_inner - g->cols * g->right) /
                     g->cols;
    *x0 = 0.005 + g->left + c * (w + g->right + g->left_inner);
    *x1 = *x0 + w;
}

void plot_panel(sbuf_t *s, const plot_grid_t *g, int k)
{
    const int r = k / g->cols, c = k % g->cols;
    const double h = (g->top - g->bottom) / g->rows, y1 = g->top - r * h;
    double x0, x1;
    column_area(g, c, &x0, &x1);
    sbuf_printf(s, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                   "set tmargin at screen %.4f\nset bmargin at screen %.4f\n",
                x0, x1, y1 - g->above, y1 - h + g->below);
}

int plot_key_rows_in(int n, int chars, double width)
{
    const double w = chars * CHAR_W + 0.07;   // the sample line and the gap after it
    int cols = (int)(width / w);
    // Never more columns than gnuplot fits: it sizes a key column by its own estimate (every
    // byte of the title at GP_CHAR_W, wider than the glyphs, plus GP_SAMPLE) and, when fewer
    // columns fit than maxrows asks for, lays the key out in more rows than the strip holds.
    const int gp = (int)(width / (chars * GP_CHAR_W + GP_SAMPLE));
    if (gp < cols) cols = gp;
    if (cols < 1) cols = 1;
    if (cols > n) cols = n;
    return n > 0 ? (n + cols - 1) / cols : 0;
}

int plot_key_rows(int n, int chars)
{
    return plot_key_rows_in(n, chars, 0.96);
}

void plot_column(const plot_grid_t *g, int c, double *x0, double *x1)
{
    column_area(g, c, x0, x1);
    *x0 -= c ? g->left_inner : g->left;
    *x1 += g->right;
}

void plot_key_box(sbuf_t *s, double x0, double x1, double y0, double y1, int key_rows,
                  const sbuf_t *keys)
{
    if (key_rows <= 0 || !keys || !keys->data) return;
    sbuf_printf(s, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                   "set tmargin at screen %.4f\nset bmargin at screen %.4f\n"
                   "unset title\nunset border\nunset tics\nunset xlabel\nunset ylabel\n"
                   "unset grid\nunset colorbox\nunset label\nunset arrow\nunset object\n"
                   "unset logscale\nset xrange [0:1]\nset yrange [0:1]\n"
                   "set key center center horizontal maxrows %d @F80 samplen 2.5 spacing 1 "
                   "width 1 noautotitle nobox\nplot 2 notitle%s\n",
                x0, x1, y1, y0, key_rows, keys->data);
}

void plot_end(sbuf_t *s, const plot_grid_t *g, int key_rows, const sbuf_t *keys)
{
    plot_key_box(s, 0.01, 0.99, 0.005, g->key, key_rows, keys);
    sbuf_printf(s, "unset multiplot\n");
}

void plot_end_columns(sbuf_t *s, const plot_grid_t *g, int key_rows, const sbuf_t *keys)
{
    for (int c = 0; c < g->cols; c++) {
        double x0, x1;
        plot_column(g, c, &x0, &x1);
        plot_key_box(s, x0 + 0.01, x1 - 0.01, 0.005, g->key, key_rows, &keys[c]);
    }
    sbuf_printf(s, "unset multiplot\n");
}
