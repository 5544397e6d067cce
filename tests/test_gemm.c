/* test_gemm.c — nn/gemm.h: every product shared among the pool gives the bytes of one
 * single-threaded call, at 1, 2, 3 and 16 threads, in float64 and in float32. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tests.h"
#include "nn/gemm.h"
#include "util/blascore.h"
#include "util/threads.h"

/* Shapes that are shared (checked below: gemm_blocks ≥ 2): rows and columns of C, every
 * transpose, K within one of OpenBLAS's K blocks (≤ 256), within two (256..512: its threaded
 * driver halves K another way) and beyond, sides that are no multiple of a block or a tile. */
static const int SHAPES[][5] = {   // ta, tb, M, N, K
    {0, 0, 512, 64, 64},     // a projection of 512 tokens at d = 64
    {0, 1, 300, 80, 333},    // dX of a linear layer, K between one and two K blocks
    {1, 0, 128, 160, 600},   // dW, columns of C, K = 600 tokens
    {0, 1, 96, 1000, 64},    // logits: columns (vocabulary)
    {1, 1, 250, 90, 130},
    {0, 0, 1000, 70, 520},
};

/* One element type's three functions behind void pointers (the float64 core's and the float32
 * core's, nn/gemm.h), and whether its products must be shared here: float32 cuts are checked
 * exact for the pinned Haswell SGEMM (nn/gemm.c); other kernels may keep every product whole. */
typedef struct {
    const char *name;
    size_t size;
    void (*product)(int shared, int ta, int tb, int M, int N, int K, double alpha, const void *A,
                    int lda, const void *B, int ldb, double beta, void *C, int ldc);
    int (*blocks)(int ta, int tb, int M, int N, int K);
    void (*fill)(void *x, size_t i, double v);
    int must_share;
} type_t;

static void product_double(int shared, int ta, int tb, int M, int N, int K, double alpha,
                           const void *A, int lda, const void *B, int ldb, double beta, void *C,
                           int ldc)
{
    (shared ? gemm : gemm_serial)(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void product_float(int shared, int ta, int tb, int M, int N, int K, double alpha,
                          const void *A, int lda, const void *B, int ldb, double beta, void *C,
                          int ldc)
{
    (shared ? gemm_f32 : gemm_serial_f32)(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void fill_double(void *x, size_t i, double v) { ((double *)x)[i] = v; }
static void fill_float(void *x, size_t i, double v) { ((float *)x)[i] = (float)v; }

static uint64_t lcg = 12345;

static double uniform(void)
{
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

static void *random_matrix(const type_t *ty, size_t n)
{
    void *x = malloc(n * ty->size);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++) ty->fill(x, i, uniform());
    return x;
}

/* Every shape of SHAPES in type ty: gemm() at each thread count against gemm_serial(), byte for
 * byte, with leading dimensions larger than the rows (as attention's strided views have), α ≠ 1,
 * β = 1 onto random C and β = 0. */
static void check_type(const type_t *ty)
{
    const int counts[] = {1, 2, 3, 16};
    const size_t sz = ty->size;
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const int ta = SHAPES[s][0], tb = SHAPES[s][1], M = SHAPES[s][2], N = SHAPES[s][3],
                  K = SHAPES[s][4];
        const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
        const size_t nc = (size_t)M * ldc;
        void *A = random_matrix(ty, (size_t)(ta ? K : M) * lda);
        void *B = random_matrix(ty, (size_t)(tb ? N : K) * ldb);
        void *C0 = random_matrix(ty, nc), *ref = malloc(nc * sz), *C = malloc(nc * sz);
        ck_assert_ptr_nonnull(ref);
        ck_assert_ptr_nonnull(C);
        threads_set(2);
        const int blocks = ty->blocks(ta, tb, M, N, K);
        ck_assert_msg(blocks >= 2 || !ty->must_share, "%s shape %zu is not shared (%d blocks)",
                      ty->name, s, blocks);
        threads_set(16);   // one block per thread at most: more threads, at least as many
        ck_assert_msg(ty->blocks(ta, tb, M, N, K) >= blocks, "%s shape %zu: fewer blocks at 16",
                      ty->name, s);
        for (int beta = 0; beta < 2; beta++) {
            memcpy(ref, C0, nc * sz);
            ty->product(0, ta, tb, M, N, K, 0.7, A, lda, B, ldb, beta, ref, ldc);
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                threads_set(counts[k]);
                memcpy(C, C0, nc * sz);
                ty->product(1, ta, tb, M, N, K, 0.7, A, lda, B, ldb, beta, C, ldc);
                size_t differ = 0;
                for (size_t i = 0; i < nc; i++)
                    differ += memcmp((char *)C + i * sz, (char *)ref + i * sz, sz) != 0;
                ck_assert_msg(differ == 0, "%s shape %zu (%d %d %d %d %d) beta %d at %d threads: "
                              "%zu entries differ from one call", ty->name, s, ta, tb, M, N, K,
                              beta, counts[k], differ);
            }
        }
        free(A);
        free(B);
        free(C0);
        free(ref);
        free(C);
    }
}

START_TEST(test_gemm_same_bits_any_threads)
{
    const int saved = threads_get();
    const type_t types[] = {
        {"float64", sizeof(double), product_double, gemm_blocks, fill_double, 1},
        {"float32", sizeof(float), product_float, gemm_blocks_f32, fill_float,
         strcmp(blascore_name(), BLASCORE_PINNED) == 0},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) check_type(&types[t]);
    threads_set(saved);
}
END_TEST

/* Small products are not shared: one call on the caller. */
START_TEST(test_gemm_small_not_shared)
{
    const int saved = threads_get();
    threads_set(2);
    ck_assert_int_eq(gemm_blocks(0, 0, 16, 16, 16), 0);
    ck_assert_int_eq(gemm_blocks(0, 1, 7, 3, 1000), 0);   // no side long enough for two blocks
    ck_assert_int_eq(gemm_blocks_f32(0, 0, 16, 16, 16), 0);
    // too few rows for two blocks: float64 cuts the columns, float32 never does
    ck_assert_int_eq(gemm_blocks(0, 0, 20, 4096, 64), 2);
    ck_assert_int_eq(gemm_blocks_f32(0, 0, 20, 4096, 64), 0);
    threads_set(saved);
}
END_TEST

Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_gemm_same_bits_any_threads);
    tcase_add_test(tc, test_gemm_small_not_shared);
    suite_add_tcase(s, tc);
    return s;
}
