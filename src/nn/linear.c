/* linear.c — y = x·W + b and its backward, the GEMMs through GSL's CBLAS API (OpenBLAS). */
#include <string.h>
#include <gsl/gsl_cblas.h>
#include "nn/linear.h"

void linear_forward(double *out, const double *inp, const double *W, const double *b,
                    size_t N, size_t IC, size_t OC)
{
    // out (N,OC) = b (every row), then += inp (N,IC) · W (IC,OC): the GEMM adds onto the bias
    // (β = 1) instead of zeroing out (OpenBLAS's β = 0 pass) and a second pass adding b.
    if (b)
        for (size_t i = 0; i < N; i++) memcpy(out + i * OC, b, OC * sizeof(double));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)OC, (int)IC,
                1.0, inp, (int)IC, W, (int)OC, b ? 1.0 : 0.0, out, (int)OC);
}

/* beta_inp 1: dinp += dout·Wᵀ; 0: dinp = dout·Wᵀ. OpenBLAS's β = 0 fills C with zeros and then
 * adds α·A·B exactly as β = 1 adds it onto a zeroed C: the same bits, one pass less. */
static void backward(double *dinp, double beta_inp, double *dW, double *db, const double *dout,
                     const double *inp, const double *W, size_t N, size_t IC, size_t OC)
{
    // dinp (N,IC) += dout (N,OC) · Wᵀ (OC,IC)
    if (dinp)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)IC, (int)OC,
                    1.0, dout, (int)OC, W, (int)OC, beta_inp, dinp, (int)IC);
    // dW (IC,OC) += inpᵀ (IC,N) · dout (N,OC)
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)IC, (int)OC, (int)N,
                1.0, inp, (int)IC, dout, (int)OC, 1.0, dW, (int)OC);
    // db (OC) += Σ_i dout[i,:]
    if (db) {
        for (size_t i = 0; i < N; i++) {
            const double *row = dout + i * OC;
            for (size_t j = 0; j < OC; j++) db[j] += row[j];
        }
    }
}

void linear_backward(double *dinp, double *dW, double *db, const double *dout,
                     const double *inp, const double *W, size_t N, size_t IC, size_t OC)
{
    backward(dinp, 1.0, dW, db, dout, inp, W, N, IC, OC);
}

void linear_backward_set(double *dinp, double *dW, double *db, const double *dout,
                         const double *inp, const double *W, size_t N, size_t IC, size_t OC)
{
    backward(dinp, 0.0, dW, db, dout, inp, W, N, IC, OC);
}
