/* autowu.c — AutoWU's exponential warm-up and its Gaussian-process minimum test
 * (train/autowu.h). */
#include <math.h>
#include <string.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_statistics_double.h>
#include "train/autowu.h"

int autowu_init(autowu_t *a, unsigned long seed)
{
    memset(a, 0, sizeof *a);
    for (int j = 0; j < AUTOWU_DRAWS; j++) a->last_p[j] = NAN;
    a->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!a->rng) return 1;
    gsl_rng_set(a->rng, seed + AUTOWU_OFFSET);
    return 0;
}

void autowu_free(autowu_t *a)
{
    if (a->rng) gsl_rng_free(a->rng);
    a->rng = NULL;
}

double autowu_lr(const autowu_t *a, const config_t *cfg, long t)
{
    const double lr = cfg->train.lr;
    if (a->switch_step == 0) {   // Kim et al. 2021: exponential growth from η₀ towards η_max
        const double T = (double)cfg->train.warmup;
        return lr * AUTOWU_START * pow(1.0 / AUTOWU_START, fmin((double)t, T) / T);
    }
    const long s = a->switch_step, steps = cfg->train.steps;
    if (t >= steps) return 0.0;
    const double pi = 3.14159265358979323846;
    return 0.5 * a->switch_lr * (1.0 + cos(pi * (double)(t - s) / (double)(steps - s)));
}

int autowu_posterior(const double *x, const double *y, size_t n, double ell, double s2,
                     double *mean, double *cov)
{
    double K[AUTOWU_WINDOW * AUTOWU_WINDOW], A[AUTOWU_WINDOW * AUTOWU_WINDOW];
    double alpha[AUTOWU_WINDOW];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            const double d = x[i] - x[j];
            K[i * n + j] = exp(-d * d / (2.0 * ell * ell));
            A[i * n + j] = K[i * n + j] + (i == j ? s2 : 0.0);
        }
    gsl_matrix_view Km = gsl_matrix_view_array(K, n, n), Am = gsl_matrix_view_array(A, n, n);
    gsl_vector_const_view yv = gsl_vector_const_view_array(y, n);
    gsl_vector_view av = gsl_vector_view_array(alpha, n), mv = gsl_vector_view_array(mean, n);
    int rc = gsl_linalg_cholesky_decomp1(&Am.matrix);   // K + s²I = LLᵀ
    if (!rc) rc = gsl_linalg_cholesky_solve(&Am.matrix, &yv.vector, &av.vector);
    if (rc) return rc;
    gsl_blas_dgemv(CblasNoTrans, 1.0, &Km.matrix, &av.vector, 0.0, &mv.vector);   // μ = K·α
    // Σ = K − K(K + s²I)⁻¹K = K − VᵀV with V = L⁻¹K
    gsl_matrix_view Cm = gsl_matrix_view_array(cov, n, n);
    double V[AUTOWU_WINDOW * AUTOWU_WINDOW];
    gsl_matrix_view Vm = gsl_matrix_view_array(V, n, n);
    gsl_matrix_memcpy(&Vm.matrix, &Km.matrix);
    gsl_blas_dtrsm(CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, 1.0, &Am.matrix, &Vm.matrix);
    gsl_matrix_memcpy(&Cm.matrix, &Km.matrix);
    gsl_blas_dgemm(CblasTrans, CblasNoTrans, -1.0, &Vm.matrix, &Vm.matrix, 1.0, &Cm.matrix);
    return 0;
}

/* One draw f ~ N(mean, cov) (n) by the Cholesky factor of cov + jitter·I. 0 or a GSL code. */
static int draw(const double *mean, const double *cov, size_t n, gsl_rng *rng, double *f)
{
    double L[AUTOWU_WINDOW * AUTOWU_WINDOW], z[AUTOWU_WINDOW];
    memcpy(L, cov, n * n * sizeof(double));
    for (size_t i = 0; i < n; i++) L[i * n + i] += 1e-10;   // the posterior is near singular
    gsl_matrix_view Lm = gsl_matrix_view_array(L, n, n);
    const int rc = gsl_linalg_cholesky_decomp1(&Lm.matrix);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) z[i] = gsl_ran_gaussian(rng, 1.0);
    for (size_t i = 0; i < n; i++) {   // f = mean + L·z (L lower)
        double s = mean[i];
        for (size_t k = 0; k <= i; k++) s += L[i * n + k] * z[k];
        f[i] = s;
    }
    return 0;
}

int autowu_test(const double *y, size_t n, gsl_rng *rng, double *p)
{
    double x[AUTOWU_WINDOW], ys[AUTOWU_WINDOW], mean[AUTOWU_WINDOW], f[AUTOWU_WINDOW];
    double cov[AUTOWU_WINDOW * AUTOWU_WINDOW];
    const double mu = gsl_stats_mean(y, 1, n), sd = gsl_stats_sd_m(y, 1, n, mu);
    for (size_t i = 0; i < n; i++) {   // steps on [0, 1], losses standardised
        x[i] = n > 1 ? (double)i / (double)(n - 1) : 0.0;
        ys[i] = sd > 0.0 ? (y[i] - mu) / sd : 0.0;
    }
    for (int j = 0; j < AUTOWU_DRAWS; j++) p[j] = NAN;
    if (autowu_posterior(x, ys, n, AUTOWU_LENGTH, AUTOWU_NOISE, mean, cov)) return 0;
    int votes = 0;
    const size_t l = n - 1;
    for (int j = 0; j < AUTOWU_DRAWS; j++) {
        if (draw(mean, cov, n, rng, f)) return 0;
        size_t m = 0;
        for (size_t i = 1; i < n; i++)
            if (f[i] < f[m]) m = i;
        // P(f(t_last) > f(t_m)) under the posterior: f_l − f_m ~ N(μ_l − μ_m, Σ_ll + Σ_mm − 2Σ_lm)
        const double var = cov[l * n + l] + cov[m * n + m] - 2.0 * cov[l * n + m];
        p[j] = m == l ? 0.0 : gsl_cdf_ugaussian_P((mean[l] - mean[m]) / sqrt(fmax(var, 1e-300)));
        votes += p[j] > AUTOWU_P;
    }
    return 2 * votes > AUTOWU_DRAWS;   // the majority of the draws
}

int autowu_observe(autowu_t *a, const config_t *cfg, long t, double loss)
{
    if (a->switch_step) return 0;
    a->loss[a->n % AUTOWU_WINDOW] = loss;
    a->n++;
    const size_t n = a->n < AUTOWU_WINDOW ? (size_t)a->n : AUTOWU_WINDOW;
    int pass = 0;
    if (n >= AUTOWU_MIN_POINTS && isfinite(loss)) {
        double y[AUTOWU_WINDOW];
        for (size_t i = 0; i < n; i++) y[i] = a->loss[(a->n - n + i) % AUTOWU_WINDOW];
        pass = autowu_test(y, n, a->rng, a->last_p);
    }
    a->streak = pass ? a->streak + 1 : 0;
    if (a->streak >= AUTOWU_PATIENCE || t >= cfg->train.warmup) {
        a->switch_lr = autowu_lr(a, cfg, t);
        a->switch_step = t;
        return 1;
    }
    return 0;
}
