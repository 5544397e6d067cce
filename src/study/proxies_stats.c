/* proxies_stats.c — the size study's numbers from its grid (study/proxies_grid.h;
 * docs/proxies.md; Wortsman et al. 2023): LR sensitivity and its interval, the best lr and its
 * spread over widths, a cell's final loss over the seeds, the median peak attention logit. The
 * same numbers feed the study's tables (study/proxies.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "study/atlas.h"
#include "study/proxies_grid.h"
#include "measure/fit.h"

double size_sensitivity(const size_study_t *st, int c, int a, int w, int k)
{
    double f[SIZE_LRS], z[SIZE_LRS];
    for (int l = 0; l < st->nl; l++) {
        const size_t x = SIZE_IX(st, c, a, w, l, k);
        f[l] = st->ran[x] ? st->final[x] : NAN;
        z[l] = st->ran[x] ? st->loss0[x] : NAN;   // an lr not run is left out
    }
    return plot_lr_sensitivity(f, z, st->nl);
}

void size_sensitivity_ci(const size_study_t *st, int c, int a, int w, double *mean, double *half,
                         size_t *n)
{
    double v[SIZE_SEEDS];
    for (int k = 0; k < st->nk; k++) v[k] = size_sensitivity(st, c, a, w, k);
    fit_mean_ci(v, 1, (size_t)st->nk, mean, half, n);
}

double size_best_lr(const size_study_t *st, int c, int a, int w, int k, int *edge)
{
    double x[SIZE_LRS], y[SIZE_LRS];
    int n = 0, b = 0;
    for (int l = 0; l < st->nl; l++) {
        const size_t i = SIZE_IX(st, c, a, w, l, k);
        if (!st->ran[i]) continue;
        x[n] = log10(st->lr[l]);
        y[n] = isfinite(st->final[i]) ? fmin(st->final[i], st->loss0[i]) : st->loss0[i];
        if (y[n] < y[b]) b = n;
        n++;
    }
    *edge = 0;
    if (!n) return NAN;
    if (b == 0 || b == n - 1) {
        *edge = 1;
        return pow(10.0, x[b]);
    }
    // the parabola through (x, y) at b − 1, b, b + 1 (Newton's divided differences)
    const double d1 = (y[b] - y[b - 1]) / (x[b] - x[b - 1]), d2 = (y[b + 1] - y[b]) / (x[b + 1] - x[b]);
    const double a2 = (d2 - d1) / (x[b + 1] - x[b - 1]);
    if (!(a2 > 0)) return pow(10.0, x[b]);   // no curvature: the grid's point
    return pow(10.0, 0.5 * (x[b - 1] + x[b]) - d1 / (2.0 * a2));
}

double size_best_lr_seed_spread(const size_study_t *st, int c, int a, int k)
{
    double lo = INFINITY, hi = -INFINITY;
    int widths = 0;
    for (int w = 0; w < st->nw; w++) {
        int arm_has = 0, seed_has = 0;   // the arm's widths; the seed must have each
        for (int l = 0; l < st->nl; l++)
            for (int q = 0; q < st->nk; q++) {
                arm_has |= st->ran[SIZE_IX(st, c, a, w, l, q)];
                seed_has |= q == k && st->ran[SIZE_IX(st, c, a, w, l, q)];
            }
        if (!arm_has) continue;
        int edge;
        const double b = size_best_lr(st, c, a, w, k, &edge);
        if (!seed_has || !isfinite(b)) return NAN;
        lo = fmin(lo, log10(b));
        hi = fmax(hi, log10(b));
        widths++;
    }
    return widths ? hi - lo : NAN;
}

void size_best_lr_spread(const size_study_t *st, int c, int a, double *mean, double *half,
                         size_t *n)
{
    double v[SIZE_SEEDS];
    for (int k = 0; k < st->nk; k++) v[k] = size_best_lr_seed_spread(st, c, a, k);
    fit_mean_ci(v, 1, (size_t)st->nk, mean, half, n);
}

double size_final_ci(const size_study_t *st, int c, int a, int w, int l, double *half, int *div,
                     int *ran)
{
    double v[SIZE_SEEDS], mean;
    *div = *ran = 0;
    for (int k = 0; k < st->nk; k++) {
        const size_t x = SIZE_IX(st, c, a, w, l, k);
        v[k] = st->ran[x] ? st->final[x] : NAN;
        *div |= st->diverged[x];
        *ran += st->ran[x];
    }
    size_t n;
    fit_mean_ci(v, 1, (size_t)st->nk, &mean, half, &n);
    return n ? mean : NAN;
}

double size_logit_median(const size_study_t *st, int c, int a, int w, int l, double *lo,
                         double *hi)
{
    double v[SIZE_SEEDS];
    int n = 0;
    for (int k = 0; k < st->nk; k++) {
        const size_t x = SIZE_IX(st, c, a, w, l, k);
        if (st->ran[x] && isfinite(st->logit[x])) v[n++] = st->logit[x];
    }
    *lo = *hi = NAN;
    if (!n) return NAN;
    qsort(v, (size_t)n, sizeof *v, plot_cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------------------------------- text */
