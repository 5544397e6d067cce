/* plot_internal.h — shared between plot.c (loading, gnuplot pipe) and plot_figs.c (figures). */
#ifndef STABILITY_PLOT_INTERNAL_H
#define STABILITY_PLOT_INTERNAL_H

#include <stddef.h>
#include "report/plot.h"

/* A growing string: the gnuplot script with its inline data blocks. */
typedef struct {
    char *data;
    size_t len, cap;
    int failed;
} sbuf_t;

/* Append printf-formatted text (sets failed on OOM). */
void sbuf_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Free the buffer. */
void sbuf_free(sbuf_t *b);

/* Write one figure's script: returns 1 and fills name when the runs support the figure,
 * 0 otherwise. */
typedef int (*plot_figure_fn)(const plot_set_t *set, sbuf_t *script, char *name, size_t len);

int plot_fig_grad_vs_layer(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_grad_vs_depth(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_grad_vs_width(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_jacobian(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_hidden_norms(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_loss(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* Send script to gnuplot once per format into dir/name.<fmt> (gnuplot writes to its standard
 * output, which is the file). 0, or −1 (gnuplot failed) / −2 (an output that is not a regular
 * file, an unknown format) with err set. */
int plot_render(const char *script, const char *dir, const char *name, const char *formats,
                int quiet, char *err, size_t errlen);

#endif
