/* lanczos.c — Lanczos with full re-orthogonalisation; the tridiagonal eigenproblem by GSL
 * (measure/lanczos.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_randist.h>
#include "measure/lanczos.h"

int lanczos_alloc(lanczos_t *l, size_t n, int K)
{
    memset(l, 0, sizeof *l);
    l->n = n;
    l->K = K;
    const size_t k = (size_t)K;
    l->Q = malloc((k + 1) * (n ? n : 1) * sizeof(double));
    l->w = malloc((n ? n : 1) * sizeof(double));
    l->alpha = malloc(k * sizeof(double));
    l->beta = malloc(k * sizeof(double));
    l->T = malloc(k * k * sizeof(double));
    l->S = malloc(k * k * sizeof(double));
    l->theta = malloc(k * sizeof(double));
    if (!l->Q || !l->w || !l->alpha || !l->beta || !l->T || !l->S || !l->theta) {
        lanczos_free(l);
        return 1;
    }
    return 0;
}

void lanczos_free(lanczos_t *l)
{
    free(l->Q);
    free(l->w);
    free(l->alpha);
    free(l->beta);
    free(l->T);
    free(l->S);
    free(l->theta);
    memset(l, 0, sizeof *l);
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void cut(double *x, const unsigned char *support, size_t n)
{
    if (support)
        for (size_t i = 0; i < n; i++)
            if (!support[i]) x[i] = 0.0;
}

/* w ← w − Σ_{i<k} (q_iᵀw)·q_i, twice. */
static void reorthogonalise(const lanczos_t *l, double *w, int k)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < k; i++) {
            const double *q = l->Q + (size_t)i * l->n;
            const double c = dot(q, w, l->n);
            for (size_t j = 0; j < l->n; j++) w[j] -= c * q[j];
        }
}

static void nan_result(lanczos_result_t *res, double *top, size_t n)
{
    res->max = res->min = res->res_max = res->res_min = NAN;
    res->iters = 0;
    if (top)
        for (size_t i = 0; i < n; i++) top[i] = NAN;
}

/* The Ritz values of the k × k tridiagonal (GSL) into res; top = Q·s of the largest. 0 or 1. */
static int ritz(lanczos_t *l, int k, lanczos_result_t *res, double *top)
{
    memset(l->T, 0, (size_t)k * k * sizeof(double));
    for (int i = 0; i < k; i++) {
        l->T[(size_t)i * k + i] = l->alpha[i];
        if (i + 1 < k) l->T[(size_t)i * k + i + 1] = l->T[(size_t)(i + 1) * k + i] = l->beta[i];
    }
    gsl_matrix_view T = gsl_matrix_view_array(l->T, (size_t)k, (size_t)k);
    gsl_matrix_view S = gsl_matrix_view_array(l->S, (size_t)k, (size_t)k);
    gsl_vector_view th = gsl_vector_view_array(l->theta, (size_t)k);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)k);
    if (!ws) return 1;
    const int rc = gsl_eigen_symmv(&T.matrix, &th.vector, &S.matrix, ws);
    gsl_eigen_symmv_free(ws);
    if (rc) return 1;
    int imax = 0, imin = 0;
    for (int i = 1; i < k; i++) {
        if (l->theta[i] > l->theta[imax]) imax = i;
        if (l->theta[i] < l->theta[imin]) imin = i;
    }
    const double bk = l->beta[k - 1];   // ≈ 0 at an invariant space
    res->max = l->theta[imax];
    res->min = l->theta[imin];
    res->res_max = fabs(bk * l->S[(size_t)(k - 1) * k + imax]);
    res->res_min = fabs(bk * l->S[(size_t)(k - 1) * k + imin]);
    res->iters = k;
    if (top) {
        memset(top, 0, l->n * sizeof(double));
        for (int i = 0; i < k; i++) {
            const double s = l->S[(size_t)i * k + imax], *q = l->Q + (size_t)i * l->n;
            for (size_t j = 0; j < l->n; j++) top[j] += s * q[j];
        }
        const double nrm = sqrt(dot(top, top, l->n));
        for (size_t j = 0; j < l->n; j++) top[j] /= nrm;
    }
    return 0;
}

void lanczos_run(lanczos_t *l, lanczos_op_fn op, void *ctx, const unsigned char *support,
                 int iters, gsl_rng *rng, lanczos_result_t *res, double *top)
{
    // the start: Gaussian on the support (drawn in coordinate order)
    double *q = l->Q;
    for (size_t i = 0; i < l->n; i++)
        q[i] = !support || support[i] ? gsl_ran_gaussian(rng, 1.0) : 0.0;
    lanczos_run_from(l, op, ctx, support, iters, q, res, top);
}

void lanczos_run_from(lanczos_t *l, lanczos_op_fn op, void *ctx, const unsigned char *support,
                      int iters, const double *start, lanczos_result_t *res, double *top)
{
    const size_t n = l->n;
    res->stopped = 0;
    if (iters > l->K) iters = l->K;
    double *q = l->Q;   // the start, unit norm
    if (start != q) memcpy(q, start, n * sizeof(double));
    cut(q, support, n);
    const double q0 = sqrt(dot(q, q, n));
    if (!(q0 > 0.0) || iters < 1) { nan_result(res, top, n); return; }
    for (size_t i = 0; i < n; i++) q[i] /= q0;
    // the scale below which β counts as zero: the Krylov space is invariant
    double scale = 0.0;
    int k = 0;
    for (int j = 0; j < iters; j++) {
        if (l->stop && *l->stop) {   // a stop signal: give up the run, its values unknown
            nan_result(res, top, n);
            res->stopped = 1;
            return;
        }
        const double *qj = l->Q + (size_t)j * n;
        op(ctx, qj, l->w);
        cut(l->w, support, n);
        l->alpha[j] = dot(qj, l->w, n);
        for (size_t i = 0; i < n; i++) l->w[i] -= l->alpha[j] * qj[i];
        if (j > 0) {
            const double *qprev = l->Q + (size_t)(j - 1) * n;
            for (size_t i = 0; i < n; i++) l->w[i] -= l->beta[j - 1] * qprev[i];
        }
        reorthogonalise(l, l->w, j + 1);
        l->beta[j] = sqrt(dot(l->w, l->w, n));
        k = j + 1;
        if (!isfinite(l->alpha[j]) || !isfinite(l->beta[j])) { nan_result(res, top, n); return; }
        scale = fmax(scale, fabs(l->alpha[j]) + l->beta[j] + (j > 0 ? l->beta[j - 1] : 0.0));
        if (l->beta[j] <= 1e-12 * scale) break;   // invariant: T's eigenvalues are A's there
        double *next = l->Q + (size_t)(j + 1) * n;
        for (size_t i = 0; i < n; i++) next[i] = l->w[i] / l->beta[j];
    }
    if (ritz(l, k, res, top)) nan_result(res, top, n);
}

void lanczos_quadrature(const lanczos_t *l, int iters, double *nodes, double *weights)
{
    const size_t k = (size_t)iters;
    for (size_t j = 0; j < k; j++) {
        nodes[j] = l->theta[j];
        weights[j] = l->S[j] * l->S[j];   // row 0 of S: the eigenvectors' first components
    }
}

static int cmp_desc(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

void lanczos_top(const lanczos_t *l, int iters, int count, double *out)
{
    double *t = l->w;   // scratch: n ≥ iters (a Krylov space has at most n dimensions)
    memcpy(t, l->theta, (size_t)iters * sizeof(double));
    qsort(t, (size_t)iters, sizeof(double), cmp_desc);
    for (int i = 0; i < count; i++) out[i] = i < iters ? t[i] : NAN;
}
