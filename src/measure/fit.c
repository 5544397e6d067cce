/* fit.c — GSL statistics and the closed-form theory values of Xiong et al. (2020). */
#include <math.h>
#include <stdlib.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_statistics_double.h>
#include "measure/fit.h"

void fit_mean_ci(const double *x, size_t stride, size_t n, double *mean, double *half,
                 size_t *count)
{
    double buf[256];
    double *v = n <= 256 ? buf : malloc(n * sizeof(double));
    size_t m = 0;
    for (size_t i = 0; v && i < n; i++)
        if (!isnan(x[i * stride])) v[m++] = x[i * stride];
    *mean = m ? gsl_stats_mean(v, 1, m) : NAN;
    *half = m >= 2 ? gsl_cdf_tdist_Pinv(0.975, (double)(m - 1)) * gsl_stats_sd(v, 1, m) / sqrt((double)m)
                   : NAN;
    if (count) *count = m;
    if (v != buf) free(v);
}

double fit_ffn_gain(int d, int d_ff)
{
    const double s = (double)d + d_ff;
    return 2.0 * d * d_ff / (s * s);
}

double fit_lemma2_post(int d, int d_ff)
{
    return 1.0 + fit_ffn_gain(d, d_ff);
}

void fit_lemma2_pre_bounds(int d, int d_ff, int l, double e0, double *lo, double *hi)
{
    const double f = fit_ffn_gain(d, d_ff);
    *lo = e0 + l * f;
    *hi = e0 + l * (1.0 + f);
}

double fit_input_sqnorm(void)
{
    return 1.5;
}

size_t fit_power_law(const double *x, const double *y, size_t n, double *b, double *b_ci,
                     double *A)
{
    double *lx = malloc((n ? n : 1) * sizeof(double)), *ly = malloc((n ? n : 1) * sizeof(double));
    size_t m = 0;
    for (size_t i = 0; lx && ly && i < n; i++) {
        if (!(x[i] > 0.0) || !(y[i] > 0.0)) continue;   // also skips NaN
        lx[m] = log(x[i]);
        ly[m++] = log(y[i]);
    }
    *b = *b_ci = *A = NAN;
    if (m >= 2) {
        double c0, c1, cov00, cov01, cov11, sumsq;
        gsl_fit_linear(lx, 1, ly, 1, m, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
        *b = c1;
        *A = exp(c0);
        if (m >= 3) *b_ci = gsl_cdf_tdist_Pinv(0.975, (double)(m - 2)) * sqrt(cov11);
    }
    free(lx);
    free(ly);
    return m;
}

double fit_bound_scale(const double *y, const double *f, size_t n)
{
    double C = NAN;
    for (size_t i = 0; i < n; i++) {
        if (!(y[i] > 0.0) || !(f[i] > 0.0)) continue;
        if (isnan(C) || y[i] / f[i] > C) C = y[i] / f[i];
    }
    return C;
}

double fit_theorem1(int post, int d, int L)
{
    const double ld = log((double)d);
    return post ? d * sqrt(ld) : d * sqrt(ld / L);
}
