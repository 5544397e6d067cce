/* families.c — one OpenBLAS kernel family (the one OPENBLAS_CORETYPE makes OpenBLAS load) at the
 * model's GEMM shapes: how fast, which bits, and where a product may be cut (docs/performance.md,
 * "Kernel families"). bench/families.py runs it under each family, alternately, and compares.
 *
 *   build/bench/families time [--f32] [--reps N]     median ms and GFLOP/s per shape, 1 thread
 *   build/bench/families bits [--f32]                a hash of each product's bytes, and its
 *                                                    error against a long double sum
 *   build/bench/families cuts [--f32] [--min-call W] [--aligns A,B,...] [--side rows|cols]
 *                                                    blocks of C cut as nn/gemm.c does against
 *                                                    the whole call: shapes passed and failed
 *
 * Products are C (M, N) = α·op(A)·op(B) + β·C in row-major order, as the model calls them, each
 * one single-threaded call (what nn/gemm.c makes of every product). Timing lives here, never in
 * the tests. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gsl/gsl_cblas.h>

/* OpenBLAS's own API. */
char *openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);

typedef struct {
    int ta, tb, M, N, K;
    char name[40];
} shape_t;

static shape_t shapes[96];
static int nshapes = 0;

static void add(int ta, int tb, int M, int N, int K, const char *name)
{
    shape_t *s = &shapes[nshapes++];
    *s = (shape_t){ta, tb, M, N, K, ""};
    snprintf(s->name, sizeof s->name, "%s", name);
}

/* The model's products at N = B·T = 512 and 1024 rows, d = 64 … 512, d_ff = 4d, V = 2000:
 * a projection, the FFN's two, the logits and their three gradients' kinds; then 1024³. */
static void model_shapes(void)
{
    const int rows[] = {512, 1024}, ds[] = {64, 128, 256, 512};
    char n[40];
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++) {
            const int R = rows[r], d = ds[i];
#define ADD(ta, tb, M, N, K, what) (snprintf(n, sizeof n, "N%d d%d %s", R, d, what), \
                                    add(ta, tb, M, N, K, n))
            ADD(0, 1, R, d, d, "x·Wt");
            ADD(0, 1, R, 4 * d, d, "ffn up");
            ADD(0, 1, R, d, 4 * d, "ffn down");
            ADD(0, 1, R, 2000, d, "logits");
            ADD(0, 0, R, d, 2000, "dlogits·E");
            ADD(1, 0, d, d, R, "dW d×d");
            ADD(1, 0, 4 * d, d, R, "dW 4d×d");
            ADD(1, 0, 2000, d, R, "dE");
#undef ADD
        }
    add(0, 0, 1024, 1024, 1024, "1024^3");
}

/* Odd sides, for the cuts: tests/test_gemm.c's shapes and sides no multiple of a tile. */
static void odd_shapes(void)
{
    add(0, 0, 512, 64, 64, "t512x64x64");
    add(0, 1, 300, 80, 333, "t300x80x333");
    add(1, 0, 128, 160, 600, "t128x160x600");
    add(0, 1, 96, 1000, 64, "t96x1000x64");
    add(1, 1, 250, 90, 130, "t250x90x130");
    add(0, 0, 1000, 70, 520, "t1000x70x520");
    add(0, 1, 320, 1000, 64, "o320x1000x64");
    add(1, 0, 1000, 64, 320, "o1000x64x320");
    add(0, 1, 600, 333, 700, "o600x333x700");
    add(1, 1, 777, 300, 450, "o777x300x450");
    add(0, 0, 200, 200, 1500, "o200x200x1500");
}

static int f32 = 0;

static size_t esz(void) { return f32 ? sizeof(float) : sizeof(double); }

static uint64_t state;

static double uniform(void)   /* xorshift64 in [−1, 1) */
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (double)(state >> 11) * 0x1.0p-52 - 1.0;
}

static void *matrix(size_t n)
{
    char *x = malloc(n * esz());
    if (!x) { fprintf(stderr, "families: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) {
        const double v = uniform();
        if (f32) ((float *)x)[i] = (float)v;
        else ((double *)x)[i] = v;
    }
    return x;
}

static double at(const void *x, size_t i) { return f32 ? ((const float *)x)[i] : ((const double *)x)[i]; }

/* One single-threaded call; M, N the block's, A, B, C already offset. */
static void call(const shape_t *s, int M, int N, double alpha, const void *A, const void *B,
                 double beta, void *C)
{
    const int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N, ldc = s->N;
    const enum CBLAS_TRANSPOSE ta = s->ta ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = s->tb ? CblasTrans : CblasNoTrans;
    if (f32)
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, s->K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, M, N, s->K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run_time(int reps)
{
    for (int i = 0; i < nshapes; i++) {
        const shape_t *s = &shapes[i];
        state = 88172645463325252ULL + (uint64_t)i;
        void *A = matrix((size_t)s->M * s->K), *B = matrix((size_t)s->K * s->N);
        void *C = matrix((size_t)s->M * s->N);
        double t[64];
        call(s, s->M, s->N, 1.0, A, B, 0.0, C);   // warm: pages, caches
        for (int r = 0; r < reps; r++) {
            const double t0 = now();
            call(s, s->M, s->N, 1.0, A, B, 0.0, C);
            t[r] = now() - t0;
        }
        qsort(t, (size_t)reps, sizeof t[0], by_value);
        const double med = t[reps / 2];
        printf("%s\t%s\t%.4f\t%.2f\n", openblas_get_corename(), s->name, med * 1e3,
               2.0 * s->M * s->N * (double)s->K / med * 1e-9);
        free(A);
        free(B);
        free(C);
    }
}

static uint64_t fnv(const void *x, size_t n, uint64_t h)
{
    const unsigned char *c = x;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001B3ULL;
    return h;
}

/* The largest error of 64 sampled entries of C = op(A)·op(B) against a long double sum, in
 * units of ε·Σ|a·b| (the classical bound of a sum of K products is about K of them). */
static double error_of(const shape_t *s, const void *A, const void *B, const void *C)
{
    const int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    const double eps = f32 ? 0x1.0p-24 : 0x1.0p-53;
    double worst = 0;
    for (int q = 0; q < 64; q++) {
        const size_t i = (size_t)((uniform() + 1) / 2 * s->M), j = (size_t)((uniform() + 1) / 2 * s->N);
        long double sum = 0, mag = 0;
        for (size_t k = 0; k < (size_t)s->K; k++) {
            const long double p = (long double)at(A, s->ta ? k * lda + i : i * lda + k) *
                                  at(B, s->tb ? j * ldb + k : k * ldb + j);
            sum += p;
            mag += fabsl(p);
        }
        const double e = (double)(fabsl(sum - at(C, i * s->N + j)) / (mag * eps));
        if (e > worst) worst = e;
    }
    return worst;
}

/* Per shape: one hash of C = op(A)·op(B) (α = 1, β = 0) and of 0.7·op(A)·op(B) + C₀. */
static void run_bits(void)
{
    for (int i = 0; i < nshapes; i++) {
        const shape_t *s = &shapes[i];
        const size_t mn = (size_t)s->M * s->N;
        state = 88172645463325252ULL + (uint64_t)i;
        void *A = matrix((size_t)s->M * s->K), *B = matrix((size_t)s->K * s->N);
        void *C = matrix(mn), *C0 = matrix(mn);
        call(s, s->M, s->N, 1.0, A, B, 0.0, C);
        const double e = error_of(s, A, B, C);
        call(s, s->M, s->N, 0.7, A, B, 1.0, C0);
        const uint64_t h = fnv(C0, mn * esz(), fnv(C, mn * esz(), 1469598103934665603ULL));
        printf("%s\t%s\t%016llx\t%.3f\n", openblas_get_corename(), s->name, (unsigned long long)h, e);
        free(A);
        free(B);
        free(C);
        free(C0);
    }
}

/* Shape s cut along rows (side 0) or columns (1) for nt threads as nn/gemm.c lays it out:
 * blocks of bs ≥ ⌈len/nt⌉, ≥ 2¹⁸ and min_call multiply-adds, a multiple of align, a last block
 * short of min_call joined to the one before. Returns −1 when that is one call, else 1 when
 * the blocks give the whole call's bytes (α = 0.7, β = 0 and β = 1 onto random C₀). */
static int cut_exact(const shape_t *s, int side, int align, int nt, double min_call)
{
    const long len = side ? s->N : s->M, other = side ? s->M : s->N;
    const double least = min_call > 262144.0 ? min_call : 262144.0;
    const long by_count = (len + nt - 1) / nt, by_work = (long)(least / ((double)other * s->K)) + 1;
    long bs = by_count > by_work ? by_count : by_work;
    bs = (bs + align - 1) / align * align;
    long nb = (len + bs - 1) / bs;
    if (nb >= 2 && (double)(len - (nb - 1) * bs) * other * s->K < min_call) nb--;
    if (nb < 2 || len < 2 * align) return -1;
    const int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    const size_t mn = (size_t)s->M * s->N, sz = esz();
    state = 1234 + (uint64_t)s->M * 7 + (uint64_t)s->N * 13 + (uint64_t)s->K;
    void *A = matrix((size_t)s->M * s->K), *B = matrix((size_t)s->K * s->N), *C0 = matrix(mn);
    char *W = malloc(mn * sz), *X = malloc(mn * sz);
    int ok = W && X;
    for (int beta = 0; beta < 2 && ok; beta++) {
        memcpy(W, C0, mn * sz);
        memcpy(X, C0, mn * sz);
        call(s, s->M, s->N, 0.7, A, B, beta, W);
        for (long b = 0; b < nb; b++) {
            const long lo = b * bs, hi = b == nb - 1 ? len : lo + bs;
            if (side == 0)
                call(s, (int)(hi - lo), s->N, 0.7, (const char *)A + (s->ta ? lo : lo * lda) * sz,
                     B, beta, X + lo * s->N * sz);
            else
                call(s, s->M, (int)(hi - lo), 0.7, A,
                     (const char *)B + (s->tb ? lo * ldb : lo) * sz, beta, X + lo * sz);
        }
        ok = memcmp(W, X, mn * sz) == 0;
    }
    free(A);
    free(B);
    free(C0);
    free(W);
    free(X);
    return ok;
}

static void run_cuts(const int *aligns, int naligns, int sides, double min_call)
{
    static const int NT[] = {2, 3, 16};
    for (int side = 0; side < 2; side++) {
        if (!(sides >> side & 1)) continue;
        for (int a = 0; a < naligns; a++) {
            int pass = 0, fail = 0;
            char failed[600] = "";
            for (int i = 0; i < nshapes; i++) {
                const shape_t *s = &shapes[i];
                if ((double)s->M * s->N * s->K > 3e8) continue;   // keep it short
                for (int t = 0; t < 3; t++) {
                    const int r = cut_exact(s, side, aligns[a], NT[t], min_call);
                    if (r < 0) continue;
                    if (r) {
                        pass++;
                        continue;
                    }
                    fail++;
                    if (strlen(failed) < sizeof failed - 60)   // the first few, named
                        snprintf(failed + strlen(failed), sizeof failed - strlen(failed),
                                 " %s/%d", s->name, NT[t]);
                }
            }
            printf("%s\t%s\t%s\t%d\tpass %d\tfail %d%s%s\n", openblas_get_corename(),
                   f32 ? "float32" : "float64", side ? "cols" : "rows", aligns[a], pass, fail,
                   fail ? "\t" : "", failed);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int reps = 5, aligns[16] = {4, 8, 12, 16, 24, 32, 48}, naligns = 7, sides = 3;
    double min_call = 0;
    for (int i = 2; i < argc; i++) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--f32")) f32 = 1;
        else if (!strcmp(argv[i], "--reps") && more) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-call") && more) min_call = atof(argv[++i]);
        else if (!strcmp(argv[i], "--side") && more) {
            const char *v = argv[++i];
            sides = !strcmp(v, "rows") ? 1 : !strcmp(v, "cols") ? 2 : 3;
        } else if (!strcmp(argv[i], "--aligns") && more) {
            char *p = argv[++i];
            for (naligns = 0; *p && naligns < 16;) {
                aligns[naligns++] = (int)strtol(p, &p, 10);
                if (*p == ',') p++;
                else break;
            }
        } else {
            mode = "";
            break;
        }
    }
    if (reps < 1 || reps > 64) reps = 5;
    openblas_set_num_threads(1);
    model_shapes();
    if (!strcmp(mode, "time")) run_time(reps);
    else if (!strcmp(mode, "bits")) run_bits();
    else if (!strcmp(mode, "cuts")) {
        odd_shapes();
        run_cuts(aligns, naligns, sides, min_call);
    } else {
        fprintf(stderr, "usage: families time|bits|cuts [--f32] [--reps N] [--min-call W] "
                "[--aligns A,B,...] [--side rows|cols]\n");
        return 2;
    }
    return 0;
}
