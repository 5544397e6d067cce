/* plot_palette.h — every colour a figure uses (docs/design.md §6j): a perceptually uniform,
 * colour-blind-safe map (viridis, van der Walt & Smith 2015) for heat maps with a labelled colour
 * bar; ordinal colours sampled from it for an ordered key (lr, warm-up, depth, width);
 * Okabe & Ito's qualitative set for unordered curves; each scheme its own colour and marker
 * (the scheme table's colour, config/scheme.c), so the atlas tells every scheme apart. */
#ifndef STABILITY_PLOT_PALETTE_H
#define STABILITY_PLOT_PALETTE_H

#include "util/sbuf.h"

#define PLOT_QUAL_COUNT 8

/* gnuplot commands for a heat map's colour scale: viridis, the colour bar labelled label
 * (gnuplot enhanced text), logarithmic when log. */
void palette_heat(sbuf_t *s, const char *label, int log);

/* gnuplot commands for a heat map of a signed quantity around 0: ColorBrewer's diverging RdBu
 * (Brewer 2003; colour-blind safe), red below 0, white at 0, blue above, the bar labelled label. */
void palette_diverging(sbuf_t *s, const char *label);
/* Viridis at t in [0, 1] as "#rrggbb" into buf (8 bytes). */
void palette_viridis(double t, char *buf);

/* Colour i of n ordered values (0 = the smallest): viridis from dark purple to green, never
 * its pale yellow end (it vanishes on white); one value gets the middle colour. */
void palette_ordinal(int i, int n, char *buf);

/* Okabe & Ito's colour i (mod PLOT_QUAL_COUNT) for curves of no order: blue, vermillion,
 * bluish green, orange, reddish purple, sky blue, black, yellow. */
const char *palette_qualitative(int i);

/* The colour of the scheme named name (scheme_name), the same in every figure: its table
 * row's; a name of no row takes the qualitative colour i. */
const char *palette_scheme(const char *name, int i);

/* The scheme's marker (gnuplot point type), unique per row of the scheme table; a name of no
 * row takes marker i. */
int palette_scheme_point(const char *name, int i);

/* gnuplot dash type for the k-th of several line styles (1 solid, then dashes, dots). */
int palette_dash(int k);

/* Whether text on a heat-map cell of scale position t in [0, 1] should be white (dark
 * cells) rather than black. */
int palette_text_white(double t);

#endif
