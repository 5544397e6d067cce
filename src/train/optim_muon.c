/* optim_muon.c — Muon (Jordan et al. 2024, "Muon: an optimizer for hidden layers"; Liu et al.
 * 2025, "Muon is scalable for LLM training"): momentum orthogonalised by Newton–Schulz on the
 * hidden matrices, AdamW on every other tensor (docs/design.md §6h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_linalg.h>
#include "nn/gemm.h"
#include "train/optim.h"

size_t optim_ns_work(size_t rows, size_t cols)
{
    const size_t r = rows < cols ? rows : cols;
    return 2 * rows * cols + 2 * r * r;   // X, Y (r, c); A, B (r, r)
}

void optim_ns(real *G, size_t rows, size_t cols, int steps, double a, double b, double c,
              real *work)
{
    const int tr = rows > cols;
    const size_t r = tr ? cols : rows, n = tr ? rows : cols;   // X is (r, n), r ≤ n
    real *X = work, *Y = X + r * n, *A = Y + r * n, *B = A + r * r;
    double ss = 0.0;
    for (size_t i = 0; i < rows * cols; i++) ss += (double)G[i] * G[i];
    const double inv = 1.0 / (sqrt(ss) + 1e-7);   // X ← G/(‖G‖_F + 1e-7)
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            X[tr ? j * rows + i : i * cols + j] = (real)(G[i * cols + j] * inv);
    const int R = (int)r, N = (int)n;
    for (int k = 0; k < steps; k++) {
        gemm(0, 1, R, R, N, 1.0, X, N, X, N, 0.0, A, R);           // A = XXᵀ         (r, r)
        for (size_t i = 0; i < r * r; i++) B[i] = (real)(b * A[i]);
        gemm(0, 0, R, R, R, c, A, R, A, R, 1.0, B, R);              // B = bA + cA²    (r, r)
        memcpy(Y, X, r * n * sizeof(real));
        gemm(0, 0, R, N, R, 1.0, B, R, X, N, a, Y, N);              // Y = aX + BX     (r, n)
        real *t = X; X = Y; Y = t;
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            G[i * cols + j] = X[tr ? j * rows + i : i * cols + j];
}

double optim_muon_scale(int kind, size_t rows, size_t cols)
{
    const double in = (double)rows, out = (double)cols;   // the harness stores W as [in][out]
    if (kind == MUON_SCALE_MATCH_RMS_ADAMW) return 0.2 * sqrt(in > out ? in : out);
    return sqrt(out / in > 1.0 ? out / in : 1.0);   // Jordan: √max(1, rows/cols) of [out][in]
}

/* The extreme singular values of O (rows, cols) by GSL's SVD (on the taller orientation, which
 * gsl_linalg_SV_decomp requires). */
static void singular_range(const real *O, size_t rows, size_t cols, double *lo, double *hi)
{
    const int tr = rows < cols;
    const size_t M = tr ? cols : rows, N = tr ? rows : cols;
    gsl_matrix *U = gsl_matrix_alloc(M, N), *V = gsl_matrix_alloc(N, N);
    gsl_vector *S = gsl_vector_alloc(N), *w = gsl_vector_alloc(N);
    *lo = *hi = NAN;
    if (U && V && S && w) {
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++)
                gsl_matrix_set(U, tr ? j : i, tr ? i : j, O[i * cols + j]);
        if (!gsl_linalg_SV_decomp(U, V, S, w)) {   // S descending
            *hi = gsl_vector_get(S, 0);
            // NS keeps u's null space (a LayerNorm's input to W_Q has rank ≤ d − 1): the spread
            // is over the directions u has, σ ≥ OPTIM_SV_FLOOR·σ_max
            for (size_t k = 0; k < N && gsl_vector_get(S, k) >= OPTIM_SV_FLOOR * *hi; k++)
                *lo = gsl_vector_get(S, k);
        }
    }
    gsl_matrix_free(U);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(w);
}

/* Muon on hidden segment s at lr α: m ← βm + (1−β)g, u = (1−β)g + βm, O = NS(u),
 * θ ← θ(1 − αλ) − α·s·O (Jordan et al. 2024; decoupled decay as Liu et al. 2025). */
static void muon_matrix(optim_t *o, int s, real *params, const real *grads, double lr)
{
    optim_seg_t *sg = &o->seg[s];
    const double beta = o->momentum, wd = o->weight_decay;
    const size_t n = sg->size;
    real *p = params + sg->offset, *m = o->m + sg->offset;
    const real *g = grads + sg->offset;
    real *U = o->work + optim_ns_work(sg->rows, sg->cols);   // u after NS's scratch
    real *work = o->work;
    for (size_t i = 0; i < n; i++) {
        m[i] = (real)(beta * m[i] + (1.0 - beta) * g[i]);
        U[i] = (real)((1.0 - beta) * g[i] + beta * m[i]);
    }
    optim_ns(U, sg->rows, sg->cols, o->ns_steps, o->ns_a, o->ns_b, o->ns_c, work);
    const double scale = optim_muon_scale(o->muon_scale, sg->rows, sg->cols);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = scale * U[i];
        p[i] = (real)(p[i] * (1.0 - lr * wd) - lr * d);
        sum += d * d;
    }
    sg->sumsq = sum;
    sg->sv_min = sg->sv_max = NAN;
    if (o->want_sv) singular_range(U, sg->rows, sg->cols, &sg->sv_min, &sg->sv_max);
}

/* AdamW (Loshchilov & Hutter 2019) on segment s at lr α, element by element in double. */
static void adamw_segment(optim_t *o, int s, real *params, const real *grads, double lr)
{
    optim_seg_t *sg = &o->seg[s];
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    const double bc1 = 1.0 - pow(b1, (double)o->t), bc2 = 1.0 - pow(b2, (double)o->t);
    double sum = 0.0;
    for (size_t i = sg->offset; i < sg->offset + sg->size; i++) {
        const double g = grads[i];
        double p = params[i];
        p -= lr * wd * p;
        const double m = b1 * o->m[i] + (1.0 - b1) * g, v = b2 * o->v[i] + (1.0 - b2) * g * g;
        o->m[i] = (real)m;
        o->v[i] = (real)v;
        const double u = (m / bc1) / (sqrt(v / bc2) + eps);
        params[i] = (real)(p - lr * u);
        sum += u * u;
    }
    sg->sumsq = sum;
    sg->sv_min = sg->sv_max = NAN;
}

void optim_muon_update(optim_t *o, real *params, const real *grads, double lr)
{
    for (int s = 0; s < o->nseg; s++) {
        const double a = lr * o->seg[s].lr_mult;
        if (o->seg[s].hidden && o->work) muon_matrix(o, s, params, grads, a);
        else adamw_segment(o, s, params, grads, a * o->adamw_ratio);
    }
}
