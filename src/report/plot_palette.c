/* plot_palette.c — the figures' colours (report/plot_palette.h, docs/design.md §6j). */
#include <math.h>
#include <stdio.h>
#include "report/plot_palette.h"
#include "config/scheme.h"

/* Viridis (van der Walt & Smith 2015, matplotlib's default map) at t = 0, 0.1, …, 1: its
 * lightness rises evenly from dark purple to yellow, so the map reads in greyscale and to the
 * colour-blind; between the stops, linear in RGB (tests/test_report.c checks the lightness). */
static const unsigned VIRIDIS[11] = {0x440154, 0x482576, 0x414487, 0x35608d, 0x2a788e, 0x21908c,
                                     0x22a884, 0x43bf71, 0x7ad151, 0xbbdf27, 0xfde725};

/* Okabe & Ito (2008), "Color universal design": distinct to every common colour vision. */
static const char *const QUAL[PLOT_QUAL_COUNT] = {"#0072b2", "#d55e00", "#009e73", "#e69f00",
                                                  "#cc79a7", "#56b4e9", "#000000", "#f0e442"};

/* A marker per row of the scheme table (filled and open circles, squares, triangles, …). */
static const int POINTS[] = {7, 5, 4, 9, 11, 13, 6, 15, 8, 12, 10, 14, 1, 2, 3};
#define NPOINTS ((int)(sizeof POINTS / sizeof POINTS[0]))

void palette_viridis(double t, char *buf)
{
    t = isnan(t) ? 0.0 : t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
    const double x = t * 10.0;
    const int k = x >= 10.0 ? 9 : (int)x;
    const double f = x - k;
    unsigned rgb[3];
    for (int c = 0; c < 3; c++) {
        const int sh = 16 - 8 * c;
        const double a = (VIRIDIS[k] >> sh) & 0xff, b = (VIRIDIS[k + 1] >> sh) & 0xff;
        rgb[c] = (unsigned)lround(a + f * (b - a));
    }
    snprintf(buf, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

void palette_heat(sbuf_t *s, const char *label, int log)
{
    sbuf_printf(s, "set palette defined (");
    for (int k = 0; k < 11; k++)
        sbuf_printf(s, "%s%d '#%06x'", k ? ", " : "", k, VIRIDIS[k]);
    sbuf_printf(s, ")\nset cblabel '%s'\n%s", label, log ? "set logscale cb\n" : "unset logscale cb\n");
}

void palette_diverging(sbuf_t *s, const char *label)
{
    static const unsigned RDBU[7] = {0xb2182b, 0xef8a62, 0xfddbc7, 0xf7f7f7, 0xd1e5f0, 0x67a9cf, 0x2166ac};
    sbuf_printf(s, "set palette defined (");
    for (int k = 0; k < 7; k++) sbuf_printf(s, "%s%d '#%06x'", k ? ", " : "", k - 3, RDBU[k]);
    sbuf_printf(s, ")\nset cblabel '%s'\nunset logscale cb\n", label);
}

void palette_ordinal(int i, int n, char *buf)
{
    palette_viridis(n > 1 ? 0.85 * i / (n - 1) : 0.45, buf);
}

const char *palette_qualitative(int i)
{
    return QUAL[(i % PLOT_QUAL_COUNT + PLOT_QUAL_COUNT) % PLOT_QUAL_COUNT];
}

const char *palette_scheme(const char *name, int i)
{
    char base[32];   // today's block's "post+rmsnorm" in Post-LN's colour
    scheme_base_name(name, base, sizeof base);
    const scheme_t *s = scheme_by_name(base);
    return s ? s->color : palette_qualitative(i);
}

int palette_scheme_point(const char *name, int i)
{
    char base[32];
    scheme_base_name(name, base, sizeof base);
    const int r = scheme_rank(base);
    return POINTS[(r < SCHEME_COUNT ? r : i) % NPOINTS];
}

int palette_dash(int k)
{
    static const int DT[] = {1, 2, 4, 3, 5};
    return DT[k % 5];
}

int palette_text_white(double t)
{
    return !(t > 0.55);   // viridis is dark below about its middle
}
