/* spectral.c — ‖W‖₂ by power iteration (measure/spectral.h). */
#include "measure/spectral.h"

#include <math.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

double spectral_norm(const real *W, size_t rows, size_t cols)
{
    gsl_matrix *A = gsl_matrix_alloc(rows, cols);
    gsl_vector *v = gsl_vector_alloc(cols), *w = gsl_vector_alloc(rows);
    double sigma = NAN;
    if (A && v && w) {
        for (size_t i = 0; i < rows * cols; i++) A->data[i] = W[i];   // widened, exact
        for (size_t j = 0; j < cols; j++)
            gsl_vector_set(v, j, 1.0 + 0.5 * sin(1.0 + (double)j));
        gsl_vector_scale(v, 1.0 / gsl_blas_dnrm2(v));
        sigma = 0.0;
        for (int k = 0; k < SPECTRAL_ITERS; k++) {
            gsl_blas_dgemv(CblasNoTrans, 1.0, A, v, 0.0, w);     // w = W v
            sigma = gsl_blas_dnrm2(w);                           // ‖W v‖, ‖v‖ = 1
            if (sigma == 0.0 || !isfinite(sigma)) break;
            gsl_blas_dgemv(CblasTrans, 1.0, A, w, 0.0, v);       // v = Wᵀ W v
            gsl_vector_scale(v, 1.0 / gsl_blas_dnrm2(v));
        }
    }
    if (A) gsl_matrix_free(A);
    if (v) gsl_vector_free(v);
    if (w) gsl_vector_free(w);
    return sigma;
}

void spectral_layers(const probe_axes_t *ax, const model_t *m, double *layer, double *extra)
{
    for (size_t i = 0; i < (size_t)ax->L * ax->nparam; i++) layer[i] = NAN;
    for (int e = 0; e < ax->nextra; e++) extra[e] = NAN;
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        if (t->rank != 2) continue;
        const int col = t->layer >= 0 ? probe_axis_find(ax->param, ax->nparam, t->kind)
                                      : probe_axis_find(ax->extra, ax->nextra, t->name);
        if (col < 0) continue;
        const double s = spectral_norm(m->params + t->offset, t->rows, t->cols);
        if (t->layer >= 0) layer[(size_t)t->layer * ax->nparam + col] = s;
        else extra[col] = s;
    }
}
