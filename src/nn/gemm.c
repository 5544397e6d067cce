/* gemm.c — the model's DGEMMs on the step's pool, with OpenBLAS's bits (nn/gemm.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include "nn/gemm.h"
#include "util/threads.h"

/* OpenBLAS's own API (not in GSL's CBLAS header); we link -lopenblas. */
void openblas_set_num_threads(int num_threads);

/* How a shape is computed. */
enum { PLAN_BLAS,     /* one call on OpenBLAS's n threads (as before this module) */
       PLAN_SERIAL,   /* one single-threaded call on the caller */
       PLAN_ROWS,     /* rows of C split among the pool, each part a single-threaded call */
       PLAN_COLS };   /* columns of C split likewise */

/* Split boundaries are multiples of this (OpenBLAS's kernels work in tiles of 4 or 8 rows/columns;
 * the calibration checks every split anyway). */
#define ALIGN 8

/* Below this M·N·K one call on the caller beats starting a region (≈ 2·10⁵ flops ≈ 4 µs). */
#define SPLIT_MIN_MNK 131072.0

/* Calibration operands at most (doubles): larger shapes keep OpenBLAS's threads uncalibrated. */
#define CALIB_MAX (8u << 20)

typedef struct {
    int ta, tb, M, N, K;   /* the shape */
    int n, parts;          /* threads_get() and the pool's parts when it was calibrated */
    int plan;              /* PLAN_* */
    int serial_ok;         /* one single-threaded call gives the bits */
} shape_t;

#define CACHE_MAX 512
static shape_t cache[CACHE_MAX];
static int ncache = 0;

typedef struct {
    int ta, tb, M, N, K;
    double alpha, beta;
    const double *A, *B;
    double *C;
    int lda, ldb, ldc, plan;
} call_t;

static void call_serial(const call_t *c)
{
    cblas_dgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans,
                c->M, c->N, c->K, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C, c->ldc);
}

/* One call on OpenBLAS's n threads: what cblas_dgemm did when threads_set(n) set OpenBLAS to n. */
static void call_blas(const call_t *c, int n)
{
    if (n > 1) openblas_set_num_threads(n);
    call_serial(c);
    if (n > 1) openblas_set_num_threads(1);
}

/* Part t of nt of a row or column split: the same product on a block of C's rows (A's rows) or
 * columns (B's columns). */
static void split_part(void *ctx, int t, int nt)
{
    const call_t *c = ctx;
    call_t p = *c;
    size_t lo, hi;
    if (c->plan == PLAN_ROWS) {
        threads_part((size_t)c->M, t, nt, ALIGN, &lo, &hi);
        p.M = (int)(hi - lo);
        p.A = c->ta ? c->A + lo : c->A + lo * (size_t)c->lda;
        p.C = c->C + lo * (size_t)c->ldc;
    } else {
        threads_part((size_t)c->N, t, nt, ALIGN, &lo, &hi);
        p.N = (int)(hi - lo);
        p.B = c->tb ? c->B + lo * (size_t)c->ldb : c->B + lo;
        p.C = c->C + lo;
    }
    if (hi > lo) call_serial(&p);
}

static void run(const call_t *c, int n, int parts)
{
    if (c->plan == PLAN_BLAS) call_blas(c, n);
    else if (c->plan == PLAN_SERIAL) call_serial(c);
    else threads_run(parts, split_part, (void *)c);
}

/* Pseudo-random operands in [−1, 1) (xorshift64*; any values with varied magnitudes do). */
static void fill(double *x, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        const uint64_t r = *s * 0x2545F4914F6CDD1DULL;
        x[i] = (double)(r >> 11) * 0x1.0p-52 - 1.0;
    }
}

/* Does plan give, on random operands of e's shape, the bytes of OpenBLAS's n threads (ref)? */
static int same_bits(const shape_t *e, int plan, const double *A, const double *B, const double *C0,
                     const double *ref, double *C1)
{
    const size_t MN = (size_t)e->M * e->N;
    memcpy(C1, C0, MN * sizeof(double));
    const call_t c = {e->ta, e->tb, e->M, e->N, e->K, 1.0, 1.0, A, B, C1,
                      e->ta ? e->M : e->K, e->tb ? e->K : e->N, e->N, plan};
    run(&c, e->n, e->parts);
    return memcmp(C1, ref, MN * sizeof(double)) == 0;
}

/* Choose e's plan: the serial call or a split when it reproduces OpenBLAS's n-thread bits. */
static void calibrate(shape_t *e)
{
    e->plan = PLAN_BLAS;
    e->serial_ok = 0;
    if (e->n <= 1) {   // OpenBLAS runs on one thread: a single call is what it always was
        e->plan = PLAN_SERIAL;
        e->serial_ok = 1;
        return;
    }
    const size_t MK = (size_t)e->M * e->K, KN = (size_t)e->K * e->N, MN = (size_t)e->M * e->N;
    if (MK + KN + 3 * MN > CALIB_MAX || !MN) return;
    double *A = malloc(MK * sizeof(double)), *B = malloc(KN * sizeof(double));
    double *C0 = malloc(MN * sizeof(double)), *ref = malloc(MN * sizeof(double));
    double *C1 = malloc(MN * sizeof(double));
    if (A && B && C0 && ref && C1) {
        uint64_t s = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)e->M << 40) ^ ((uint64_t)e->N << 20) ^
                     (uint64_t)e->K;
        fill(A, MK, &s);
        fill(B, KN, &s);
        fill(C0, MN, &s);
        memcpy(ref, C0, MN * sizeof(double));
        const call_t c = {e->ta, e->tb, e->M, e->N, e->K, 1.0, 1.0, A, B, ref,
                          e->ta ? e->M : e->K, e->tb ? e->K : e->N, e->N, PLAN_BLAS};
        call_blas(&c, e->n);
        e->serial_ok = same_bits(e, PLAN_SERIAL, A, B, C0, ref, C1);
        // a split needs ALIGN rows (columns) per part; try the longer side first
        const int rows_ok = e->M >= 2 * ALIGN, cols_ok = e->N >= 2 * ALIGN;
        const int first = e->M >= e->N ? PLAN_ROWS : PLAN_COLS;
        const int second = first == PLAN_ROWS ? PLAN_COLS : PLAN_ROWS;
        const double mnk = (double)e->M * e->N * e->K;
        if (e->parts > 1 && mnk >= SPLIT_MIN_MNK) {
            for (int k = 0; k < 2 && e->plan == PLAN_BLAS; k++) {
                const int plan = k ? second : first;
                if ((plan == PLAN_ROWS && !rows_ok) || (plan == PLAN_COLS && !cols_ok)) continue;
                if (same_bits(e, plan, A, B, C0, ref, C1)) e->plan = plan;
            }
        }
        if (e->plan == PLAN_BLAS && e->serial_ok && (mnk < SPLIT_MIN_MNK || e->parts <= 1))
            e->plan = PLAN_SERIAL;
    }
    free(A);
    free(B);
    free(C0);
    free(ref);
    free(C1);
}

/* The cached plan of a shape at the current thread count (calibrated on first use). */
static const shape_t *lookup(int ta, int tb, int M, int N, int K)
{
    const int n = threads_get();
    const int parts = n > 1 ? threads_ready(n) : 1;
    for (int i = 0; i < ncache; i++) {
        const shape_t *e = &cache[i];
        if (e->ta == ta && e->tb == tb && e->M == M && e->N == N && e->K == K && e->n == n &&
            e->parts == parts)
            return e;
    }
    shape_t e = {ta, tb, M, N, K, n, parts, PLAN_BLAS, 0};
    calibrate(&e);
    if (ncache == CACHE_MAX) ncache = 0;   // start over (shapes are few; this never happens)
    cache[ncache] = e;
    return &cache[ncache++];
}

void gemm(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
          const double *B, int ldb, double beta, double *C, int ldc)
{
    if (threads_in_part()) {   // not meant to happen (gemm.h): one call, as inside a part
        gemm_serial(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const shape_t *e = lookup(ta, tb, M, N, K);
    const call_t c = {ta, tb, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc, e->plan};
    run(&c, e->n, e->parts);
}

int gemm_serial_ok(int ta, int tb, int M, int N, int K)
{
    if (threads_in_part()) return 0;
    return lookup(ta, tb, M, N, K)->serial_ok;
}

void gemm_serial(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc)
{
    const call_t c = {ta, tb, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc, PLAN_SERIAL};
    call_serial(&c);
}
