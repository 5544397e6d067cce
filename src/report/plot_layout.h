/* plot_layout.h — where a figure's parts go (docs/design.md §6j): panels in a grid under the
 * title, the key in a strip of its own under the panels (never over data, never past the
 * image's edge), axis ranges fitted to the data with margins, a log axis only where the data
 * span a decade or more. Positions are fractions of the canvas; every terminal's text has the
 * same size relative to its canvas (plot.c), so one layout fits PNG, PDF and SVG. Font sizes go
 * through the macros @F100, @F90, @F80, @F70 (that share of the terminal's font). */
#ifndef STABILITY_PLOT_LAYOUT_H
#define STABILITY_PLOT_LAYOUT_H

#include "util/sbuf.h"

/* The finite values an axis must show (lo > hi: none yet). */
typedef struct {
    double lo, hi;
    double pos_lo;   /* the smallest positive value (a log axis's lower end) */
    double mid_lo, mid_hi;   /* the points themselves, without their intervals (plot_range_mid) */
} plot_range_t;

void plot_range_init(plot_range_t *r);

/* Widen r to v (NaN and ±Inf ignored). */
void plot_range_add(plot_range_t *r, double v);

/* Widen r to a point v that intervals surround (a mean): whether an axis is logarithmic is
 * decided by the points, and a log axis reaches no lower than a tenth of the lowest point (an
 * interval that reaches towards 0 ends at the frame). */
void plot_range_mid(plot_range_t *r, double v);

/* Whether r has seen no value. */
int plot_range_empty(const plot_range_t *r);

/* Whether the values of r call for a log axis: all positive and spanning a decade or more
 * (the points', plot_range_mid, when r has any). */
int plot_range_log(const plot_range_t *r);

/* "set <axis>range [a:b]" (axis "x", "y", "cb") from r with a margin of frac of the span each
 * side (of the log span on a log axis), never past floor or ceil (NaN: no bound; a norm's 0,
 * BLEU's 0 and 100); log: set or unset logscale. An empty r gives [0:1]. A single value v gets
 * v·(1 ± 10 %) (or ±1 at 0). Tics and their format too: a log axis of two decades or more at
 * the powers of ten (10^k), a shorter one at 1, 2, 5 × 10^k. */
void plot_axis(sbuf_t *s, const char *axis, const plot_range_t *r, int log, double frac,
               double floor, double ceil);

/* A grid of panels under a title of title_lines lines and over a key strip of key_rows rows. */
typedef struct {
    int rows, cols;
    double top, bottom;     /* the grid's extent (screen y) */
    double left, right;     /* room left of each panel (tics, y label) and right (colour box) */
    double left_inner;      /* room left of a panel past the first column (default: left) */
    double below, above;    /* room under each panel (tics, x label) and above (its title) */
    double key;             /* the key strip's height at the bottom (0: no key) */
    double width;           /* the share of the canvas's width the panels take (from the left) */
} plot_grid_t;

/* Lay out rows × cols panels; key_rows 0: no key strip. */
void plot_grid(plot_grid_t *g, int rows, int cols, int title_lines, int key_rows);

/* A step for about at most n tics over span: 1, 2 or 5 times a power of ten. */
double plot_tic_step(double span, int n);

/* "set xtics <step>" for an axis of updates (or epochs, integer 0) spanning r: whole updates. */
void plot_update_tics(sbuf_t *s, const plot_range_t *r, int integer);

/* "set multiplot title" of title and, smaller under it, sub (its lines split at '\n'; NULL or
 * "": none), both gnuplot enhanced text (user text escaped, plot_label.h): written as one
 * double-quoted string. Panels follow (plot_panel), then plot_end. */
void plot_begin(sbuf_t *s, const char *title, const char *sub);

/* "set <what> \"<text>\"" (what: "title", "ylabel", …) of gnuplot enhanced text, written as a
 * double-quoted string, '\n' as a line break. */
void plot_set(sbuf_t *s, const char *what, const char *text);

/* The title lines plot_begin writes for sub (for plot_grid). */
int plot_title_lines(const char *sub);

/* The screen margins of panel k (row-major) of g. */
void plot_panel(sbuf_t *s, const plot_grid_t *g, int k);

/* Rows a key of n entries needs across the canvas when its longest title has chars bytes (what
 * gnuplot counts); plot_key_rows_in: across a share width of the canvas's width (a column of
 * panels). At most the columns gnuplot itself fits, so that it lays out the rows reserved. */
int plot_key_rows(int n, int chars);
int plot_key_rows_in(int n, int chars, double width);

/* The extent (screen x) of column c of g. */
void plot_column(const plot_grid_t *g, int c, double *x0, double *x1);

/* A key of key_rows rows in the box x0…x1 × y0…y1 of the canvas: keys holds the entries
 * (", keyentry with … title '…'" each, a leading ", " on every one). */
void plot_key_box(sbuf_t *s, double x0, double x1, double y0, double y1, int key_rows,
                  const sbuf_t *keys);

/* The key strip of g across the canvas (key_rows 0 or keys empty: none); ends the multiplot. */
void plot_end(sbuf_t *s, const plot_grid_t *g, int key_rows, const sbuf_t *keys);

/* The key strip under each column c of g (keys[c]); ends the multiplot. */
void plot_end_columns(sbuf_t *s, const plot_grid_t *g, int key_rows, const sbuf_t *keys);

#endif
