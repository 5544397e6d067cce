/* linear.c — y = x·W + b and its backward; the GEMMs through nn/gemm.h (same bits at any
 * thread count). */
#include <string.h>
#include "nn/linear.h"
#include "nn/gemm.h"
#include "nn/vec.h"
#include "util/threads.h"

/* The passes outside the GEMMs (bias rows, bias gradient), for the parts of a region. */
typedef struct {
    real *out, *db;
    const real *b, *dout;
    size_t N, OC;
} bias_job_t;

/* out (N,OC) = b in every row: rows of part t. */
static void bias_rows_part(void *ctx, int t, int nt)
{
    const bias_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->N, t, nt, 1, &lo, &hi);
    for (size_t i = lo; i < hi; i++) memcpy(j->out + i * j->OC, j->b, j->OC * sizeof(real));
}

/* db (OC) += Σ_i dout[i,:]: columns of part t, each column's rows in order (the serial sums). */
static void bias_grad_part(void *ctx, int t, int nt)
{
    const bias_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->OC, t, nt, 8, &lo, &hi);
    for (size_t i = 0; i < j->N; i++) {
        const real *row = j->dout + i * j->OC;   // (OC)
        size_t c = lo;
        for (; c + VR_LANES <= hi; c += VR_LANES)
            vr_store(j->db + c, vr_load(j->db + c) + vr_load(row + c));
        for (; c < hi; c++) j->db[c] += row[c];
    }
}

void linear_forward(real *out, const real *inp, const real *W, const real *b,
                    size_t N, size_t IC, size_t OC)
{
    // out (N,OC) = b (every row), then += inp (N,IC) · W (IC,OC): the GEMM adds onto the bias
    // (β = 1) instead of zeroing out (OpenBLAS's β = 0 pass) and a second pass adding b.
    if (b) {
        const bias_job_t j = {.out = out, .b = b, .N = N, .OC = OC};
        threads_run(threads_for(0.5 * (double)N * OC), bias_rows_part, (void *)&j);
    }
    gemm(0, 0, (int)N, (int)OC, (int)IC, 1.0, inp, (int)IC, W, (int)OC, b ? 1.0 : 0.0, out,
         (int)OC);
}

/* beta_inp 1: dinp += dout·Wᵀ; 0: dinp = dout·Wᵀ. OpenBLAS's β = 0 fills C with zeros and then
 * adds α·A·B exactly as β = 1 adds it onto a zeroed C: the same bits, one pass less. */
static void backward(real *dinp, double beta_inp, real *dW, real *db, const real *dout,
                     const real *inp, const real *W, size_t N, size_t IC, size_t OC)
{
    // dinp (N,IC) += dout (N,OC) · Wᵀ (OC,IC)
    if (dinp)
        gemm_grad(GEMM_GRAD_A, 0, 1, (int)N, (int)IC, (int)OC, 1.0, dout, (int)OC, W, (int)OC,
                  beta_inp, dinp, (int)IC);
    // dW (IC,OC) += inpᵀ (IC,N) · dout (N,OC)
    gemm_grad(GEMM_GRAD_B, 1, 0, (int)IC, (int)OC, (int)N, 1.0, inp, (int)IC, dout, (int)OC, 1.0,
              dW, (int)OC);
    // db (OC) += Σ_i dout[i,:]
    if (db) {
        const bias_job_t j = {.db = db, .dout = dout, .N = N, .OC = OC};
        threads_run(threads_for((double)N * OC), bias_grad_part, (void *)&j);
    }
}

void linear_backward(real *dinp, real *dW, real *db, const real *dout,
                     const real *inp, const real *W, size_t N, size_t IC, size_t OC)
{
    backward(dinp, 1.0, dW, db, dout, inp, W, N, IC, OC);
}

void linear_backward_set(real *dinp, real *dW, real *db, const real *dout,
                         const real *inp, const real *W, size_t N, size_t IC, size_t OC)
{
    backward(dinp, 0.0, dW, db, dout, inp, W, N, IC, OC);
}
