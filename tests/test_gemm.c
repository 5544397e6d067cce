/* test_gemm.c — nn/gemm.h: every product shared among the pool gives the bytes of one
 * single-threaded call, at 1, 2, 3 and 16 threads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tests.h"
#include "nn/gemm.h"
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

static uint64_t lcg = 12345;

static double uniform(void)
{
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

static double *random_matrix(size_t n)
{
    double *x = malloc(n * sizeof(double));
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++) x[i] = uniform();
    return x;
}

/* Leading dimensions larger than the rows (as attention's strided views have), α ≠ 1, β = 1
 * onto random C and β = 0: gemm() at each thread count against gemm_serial(), byte for byte. */
START_TEST(test_gemm_same_bits_any_threads)
{
    const int saved = threads_get();
    const int counts[] = {1, 2, 3, 16};
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const int ta = SHAPES[s][0], tb = SHAPES[s][1], M = SHAPES[s][2], N = SHAPES[s][3],
                  K = SHAPES[s][4];
        const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
        double *A = random_matrix((size_t)(ta ? K : M) * lda);
        double *B = random_matrix((size_t)(tb ? N : K) * ldb);
        double *C0 = random_matrix((size_t)M * ldc);
        double *ref = malloc((size_t)M * ldc * sizeof(double));
        double *C = malloc((size_t)M * ldc * sizeof(double));
        threads_set(2);
        const int blocks = gemm_blocks(ta, tb, M, N, K);
        ck_assert_msg(blocks >= 2, "shape %zu is not shared (%d blocks)", s, blocks);
        threads_set(16);
        ck_assert_int_eq(gemm_blocks(ta, tb, M, N, K), blocks);   // the shape's, not the threads'
        for (int beta = 0; beta < 2; beta++) {
            memcpy(ref, C0, (size_t)M * ldc * sizeof(double));
            gemm_serial(ta, tb, M, N, K, 0.7, A, lda, B, ldb, beta, ref, ldc);
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                threads_set(counts[k]);
                memcpy(C, C0, (size_t)M * ldc * sizeof(double));
                gemm(ta, tb, M, N, K, 0.7, A, lda, B, ldb, beta, C, ldc);
                size_t differ = 0;
                for (size_t i = 0; i < (size_t)M * ldc; i++)
                    differ += memcmp(&C[i], &ref[i], sizeof(double)) != 0;
                ck_assert_msg(differ == 0, "shape %zu (%d %d %d %d %d) beta %d at %d threads: "
                              "%zu entries differ from one call", s, ta, tb, M, N, K, beta,
                              counts[k], differ);
            }
        }
        free(A);
        free(B);
        free(C0);
        free(ref);
        free(C);
    }
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
