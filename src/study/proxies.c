/* proxies.c — the size study's statistics (study/proxies.h, docs/proxies.md; Wortsman et al.
 * 2023): the failing lr, the best lr's exponent, paired differences over seeds and the failing
 * lr's line against width. The sensitivity, the best lr and its spread are the figures' own
 * (study/proxies_stats.c). */
#include <math.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_fit.h>
#include "measure/fit.h"
#include "study/proxies.h"

/* The lrs seed k ran at width w, ascending, as log10 lr in x and the capped final loss in y
 * (min(final, initial loss), a diverged run its initial loss: docs/design.md §6c); their count. */
static int seed_curve(const size_study_t *st, int c, int a, int w, int k, double *x, double *y)
{
    int n = 0;
    for (int l = 0; l < st->nl; l++) {
        const size_t i = SIZE_IX(st, c, a, w, l, k);
        if (!st->ran[i]) continue;
        x[n] = log10(st->lr[l]);
        y[n] = isfinite(st->final[i]) ? fmin(st->final[i], st->loss0[i]) : st->loss0[i];
        n++;
    }
    return n;
}

double proxies_fail_lr(const size_study_t *st, int c, int a, int w, int k, double margin,
                       int *above)
{
    double x[SIZE_LRS], y[SIZE_LRS];
    const int n = seed_curve(st, c, a, w, k, x, y);
    *above = 0;
    if (!n) return NAN;
    int b = 0;
    for (int i = 1; i < n; i++)
        if (y[i] < y[b]) b = i;   // the first minimum
    const double thr = y[b] + margin;
    for (int i = b + 1; i < n; i++)
        if (y[i] > thr)   // linear in log10 lr between the last point within and the first beyond
            return pow(10.0, x[i - 1] + (thr - y[i - 1]) / (y[i] - y[i - 1]) * (x[i] - x[i - 1]));
    *above = 1;
    return pow(10.0, x[n - 1]);
}

int proxies_arm_has(const size_study_t *st, int c, int a, int w)
{
    for (int l = 0; l < st->nl; l++)
        for (int k = 0; k < st->nk; k++)
            if (st->ran[SIZE_IX(st, c, a, w, l, k)]) return 1;
    return 0;
}

/* Whether seed k ran width w of arm a of context c. */
static int seed_has(const size_study_t *st, int c, int a, int w, int k)
{
    for (int l = 0; l < st->nl; l++)
        if (st->ran[SIZE_IX(st, c, a, w, l, k)]) return 1;
    return 0;
}

double proxies_best_lr_exponent(const size_study_t *st, int c, int a, int k)
{
    double x[SIZE_WIDTHS], y[SIZE_WIDTHS];
    size_t n = 0;
    for (int w = 0; w < st->nw; w++) {
        if (!proxies_arm_has(st, c, a, w)) continue;
        if (!seed_has(st, c, a, w, k)) return NAN;
        int edge;
        x[n] = log10(st->width[w]);
        y[n++] = log10(size_best_lr(st, c, a, w, k, &edge));
    }
    if (n < 2) return NAN;
    double c0, c1, cov00, cov01, cov11, sumsq;
    gsl_fit_linear(x, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
    return c1;
}

void proxies_paired(const double *x, const double *y, int n, double *mean, double *half)
{
    double v[SIZE_SEEDS];
    for (int k = 0; k < n; k++) v[k] = x[k] - y[k];   // NaN when either is
    size_t m;
    fit_mean_ci(v, 1, (size_t)n, mean, half, &m);
    if (!m) *mean = NAN;
}

int proxies_fail_fit(const size_study_t *st, int c, int a, double margin, proxies_fit_t *f)
{
    double x[SIZE_WIDTHS * SIZE_SEEDS], y[SIZE_WIDTHS * SIZE_SEEDS], dmax = 0;
    int n = 0, widths = 0;
    *f = (proxies_fit_t){.k = NAN, .k_half = NAN, .y = NAN, .h_mean = NAN, .h_pred = NAN};
    for (int w = 0; w < st->nw; w++) {
        if (!proxies_arm_has(st, c, a, w)) continue;
        dmax = st->width[w];
        int here = 0;
        for (int k = 0; k < st->nk; k++) {
            int above;
            const double v = proxies_fail_lr(st, c, a, w, k, margin, &above);
            if (!isfinite(v)) continue;
            if (above) { f->above++; continue; }
            x[n] = log10(st->width[w]);
            y[n++] = log10(v);
            here = 1;
        }
        widths += here;
    }
    f->n = n;
    f->d_next = 2.0 * dmax;
    if (n < 3 || widths < 2) return 0;
    double c0, c1, cov00, cov01, cov11, sumsq, err;
    gsl_fit_linear(x, 1, y, 1, (size_t)n, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
    gsl_fit_linear_est(log10(f->d_next), c0, c1, cov00, cov01, cov11, &f->y, &err);
    const double t = gsl_cdf_tdist_Pinv(0.975, (double)(n - 2)), s2 = sumsq / (n - 2);
    f->k = c1;
    f->k_half = t * sqrt(cov11);
    f->h_mean = t * err;   // the line's mean at d_next
    f->h_pred = t * sqrt(err * err + s2);   // one new run there
    return 1;
}

int study_proxies_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                        size_t errlen)
{
    size_study_t st;
    char why[512] = "";
    const int rc = size_study_read(set, &st, why, sizeof why);
    if (rc != 1) {
        snprintf(err, errlen, "%s", rc < 0 ? why : "the runs are no size study (several widths, "
                 "each at several learning rates, in some arm)");
        size_study_free(&st);
        return 1;
    }
    proxies_print(&st, fmt, out);
    size_study_free(&st);
    return 0;
}
