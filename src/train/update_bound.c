/* update_bound.c — LAMB's trust ratio and the relative-update cap (train/update_bound.h). */
#include <math.h>
#include <gsl/gsl_blas.h>
#include "train/update_bound.h"

int update_bound_ratio(const optim_t *o, real *params, const real *prev, double r)
{
    int scaled = 0;
    for (int s = 0; s < o->nseg; s++) {
        const size_t lo = o->seg[s].offset, hi = lo + o->seg[s].size;
        double w2 = 0.0, d2 = 0.0;   // ‖W_{t−1}‖², ‖ΔW‖²
        for (size_t i = lo; i < hi; i++) {
            const double d = (double)params[i] - (double)prev[i];
            w2 += (double)prev[i] * prev[i];
            d2 += d * d;
        }
        const double w = sqrt(w2), d = sqrt(d2);
        if (!(w > 0.0) || !(d > r * w)) continue;   // Kosson et al. 2024: ‖ΔW‖/‖W‖ ≤ r
        const double k = r * w / d;
        for (size_t i = lo; i < hi; i++)
            params[i] = (real)((double)prev[i] + k * ((double)params[i] - (double)prev[i]));
        scaled++;
    }
    return scaled;
}

/* LAMB's moments and r_i over tensor s; returns Σ r² and leaves ‖θ‖², ‖r + λθ‖² in *w2, *u2. */
static double lamb_moments(optim_t *o, int s, const real *params, const real *grads,
                           double *w2, double *u2)
{
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    const double bc1 = 1.0 - pow(b1, (double)o->t), bc2 = 1.0 - pow(b2, (double)o->t);
    const size_t lo = o->seg[s].offset, hi = lo + o->seg[s].size;
    double r2 = 0.0;
    *w2 = *u2 = 0.0;
    for (size_t i = lo; i < hi; i++) {
        const double g = grads[i];
        o->m[i] = b1 * o->m[i] + (1.0 - b1) * g;
        o->v[i] = b2 * o->v[i] + (1.0 - b2) * g * g;
        const double r = (o->m[i] / bc1) / (sqrt(o->v[i] / bc2) + eps), u = r + wd * params[i];
        r2 += r * r;
        *w2 += (double)params[i] * params[i];
        *u2 += u * u;
    }
    return r2;
}

void update_bound_lamb(optim_t *o, real *params, const real *grads, double lr)
{
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    const double bc1 = 1.0 - pow(b1, (double)o->t), bc2 = 1.0 - pow(b2, (double)o->t);
    for (int s = 0; s < o->nseg; s++) {
        double w2, u2;
        o->seg[s].sumsq = lamb_moments(o, s, params, grads, &w2, &u2);
        // You et al. 2020, Alg. 2: the trust ratio φ(‖θ‖)/‖r + λθ‖, φ(z) = z
        const double ratio = w2 > 0.0 && u2 > 0.0 ? sqrt(w2) / sqrt(u2) : 1.0;
        const double step = lr * o->seg[s].lr_mult * ratio;
        const size_t lo = o->seg[s].offset, hi = lo + o->seg[s].size;
        for (size_t i = lo; i < hi; i++) {
            const double r = (o->m[i] / bc1) / (sqrt(o->v[i] / bc2) + eps);
            params[i] = (real)(params[i] - step * (r + wd * params[i]));
        }
    }
}

double update_bound_sigma1(const double *A, size_t rows, size_t cols, double *work)
{
    gsl_matrix_const_view a = gsl_matrix_const_view_array(A, rows, cols);
    gsl_vector_view v = gsl_vector_view_array(work, cols), w = gsl_vector_view_array(work + cols, rows);
    gsl_vector_set_all(&v.vector, 1.0 / sqrt((double)cols));
    double sigma = 0.0;
    for (int k = 0; k < UPDATE_BOUND_POWER_ITERS; k++) {
        gsl_blas_dgemv(CblasNoTrans, 1.0, &a.matrix, &v.vector, 0.0, &w.vector);   // w = A·v
        const double s = gsl_blas_dnrm2(&w.vector);   // ‖A·v‖ → σ₁ from below
        if (s == 0.0) return 0.0;
        gsl_blas_dgemv(CblasTrans, 1.0 / s, &a.matrix, &w.vector, 0.0, &v.vector);   // Aᵀw/‖w‖
        const double n = gsl_blas_dnrm2(&v.vector);
        if (n == 0.0) return s;
        gsl_blas_dscal(1.0 / n, &v.vector);
        const int done = fabs(s - sigma) <= UPDATE_BOUND_POWER_TOL * s;
        sigma = s;
        if (done) break;
    }
    return sigma;
}

size_t update_bound_work_size(const model_t *m)
{
    size_t big = 0, dim = 0;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->rank != 2) continue;
        if (t->rows * t->cols > big) big = t->rows * t->cols;
        if (t->rows + t->cols > dim) dim = t->rows + t->cols;
    }
    return 2 * big + dim + 1;
}

int update_bound_spectral(const model_t *m, real *params, const real *prev, double tau,
                          double *work)
{
    size_t big = 0;
    for (int i = 0; i < m->num_tensors; i++)
        if (m->tensors[i].rank == 2 && m->tensors[i].rows * m->tensors[i].cols > big)
            big = m->tensors[i].rows * m->tensors[i].cols;
    double *W = work, *D = work + big, *vec = work + 2 * big;   // W_{t−1}, ΔW, the vectors
    int scaled = 0;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->rank != 2) continue;
        const size_t n = t->rows * t->cols, o = t->offset;
        for (size_t j = 0; j < n; j++) {
            W[j] = prev[o + j];
            D[j] = (double)params[o + j] - (double)prev[o + j];
        }
        const double sw = update_bound_sigma1(W, t->rows, t->cols, vec);
        const double sd = update_bound_sigma1(D, t->rows, t->cols, vec);
        if (!(sd > tau * sw)) continue;   // Qi et al. 2025: η ≤ τ·σ₁(W_{t−1})/σ₁(U_t)
        const double k = tau * sw / sd;
        for (size_t j = 0; j < n; j++) params[o + j] = (real)(W[j] + k * D[j]);
        scaled++;
    }
    return scaled;
}
