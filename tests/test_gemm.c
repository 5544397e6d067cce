/* test_gemm.c — nn/gemm.h: every product shared among the pool gives the bytes of one
 * single-threaded call, at 1, 2, 3 and 16 threads, in float64 and in float32, under the kernel
 * family the machine pins and (the suite again in a child) under STABILITY_KERNELS=portable;
 * and util/blascore.h's classes of CPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* 1 when OpenBLAS runs one of the families whose cuts nn/gemm.c measured (util/blascore.h):
 * SkylakeX's (and Cooperlake's, the same kernels) or Haswell's (and Zen's); there every shape
 * of SHAPES must be shared. Other kernels may keep a product whole. */
static int family_measured(void)
{
    const char *f = blascore_name();
    return !strcasecmp(f, "SkylakeX") || !strcasecmp(f, "Cooperlake") ||
           !strcasecmp(f, "Haswell") || !strcasecmp(f, "Zen");
}

static int family_skylakex(void)
{
    return !strcasecmp(blascore_name(), "SkylakeX") || !strcasecmp(blascore_name(), "Cooperlake");
}

/* One element type's three functions behind void pointers (the float64 core's and the float32
 * core's, nn/gemm.h), and whether its products must be shared here. */
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
    const char *expect = getenv("STABILITY_TEST_KERNELS");   // set by the portable rerun below
    ck_assert_msg(!expect || !strcmp(expect, blascore_name()), "expected kernels %s, run %s",
                  expect ? expect : "", blascore_name());
    const type_t types[] = {
        {"float64", sizeof(double), product_double, gemm_blocks, fill_double, family_measured()},
        {"float32", sizeof(float), product_float, gemm_blocks_f32, fill_float, family_measured()},
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
    // too few rows for two blocks: float64 cuts the columns, float32 only under SkylakeX (the
    // Haswell SGEMM keeps no column cut exact)
    ck_assert_int_eq(gemm_blocks(0, 0, 20, 4096, 64), 2);
    ck_assert_int_eq(gemm_blocks_f32(0, 0, 20, 4096, 64), family_skylakex() ? 2 : 0);
    // SkylakeX: blocks of at most 100³ multiply-adds would take OpenBLAS's small-matrix kernels
    // (another order than the whole call's): 256 × 64 × 64 stays one call, Haswell halves it
    ck_assert_int_eq(gemm_blocks(0, 0, 256, 64, 64), family_skylakex() ? 0 : 2);
    threads_set(saved);
}
END_TEST

/* The suite again under STABILITY_KERNELS=portable, in a child (OpenBLAS picks its kernels
 * when it loads): where the machine pins another family than the portable one, the same
 * sharing and byte-identity must hold under Haswell's kernels too. */
START_TEST(test_gemm_portable_kernels)
{
    if (!strcmp(blascore_name(), BLASCORE_PORTABLE) ||
        blascore_class(blascore_cpu(), 1) == NULL) {
        printf("# test_gemm: the machine runs %s already (or lacks AVX2): no portable rerun\n",
               blascore_name());
        return;
    }
    fflush(NULL);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        unsetenv("OPENBLAS_CORETYPE");   // the pin of the child's main chooses again
        unsetenv("STABILITY_PINNED_CORETYPE");
        setenv("STABILITY_KERNELS", "portable", 1);
        setenv("STABILITY_TEST_KERNELS", BLASCORE_PORTABLE, 1);
        setenv("CK_RUN_SUITE", "gemm", 1);
        char *const argv[] = {"test_runner", NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the gemm suite under STABILITY_KERNELS=portable failed (status %d)", status);
}
END_TEST

/* The families of util/blascore.h's classes, on feature sets of real CPUs. */
START_TEST(test_blascore_classes)
{
    const unsigned avx2 = BLASCORE_SSE3 | BLASCORE_SSSE3 | BLASCORE_SSE42 | BLASCORE_AVX |
                          BLASCORE_AVX2 | BLASCORE_FMA;
    const unsigned skx = avx2 | BLASCORE_AVX512F | BLASCORE_AVX512CD | BLASCORE_AVX512BW |
                         BLASCORE_AVX512DQ | BLASCORE_AVX512VL;
    const unsigned knl = avx2 | BLASCORE_AVX512F | BLASCORE_AVX512CD;   // Xeon Phi: no BW, DQ, VL
    char lack[128];
    ck_assert_str_eq(blascore_class(skx, 0), "SkylakeX");
    ck_assert_str_eq(blascore_class(skx, 1), "Haswell");   // STABILITY_KERNELS=portable
    ck_assert_str_eq(blascore_class(knl, 0), "Haswell");
    ck_assert_str_eq(blascore_class(avx2, 0), "Haswell");
    ck_assert_ptr_null(blascore_class(avx2 & ~BLASCORE_FMA, 0));   // Sandy/Ivy Bridge: OpenBLAS's own
    ck_assert_int_eq(blascore_missing("SkylakeX", knl, lack, sizeof lack), 3);
    ck_assert_str_eq(lack, "AVX512BW AVX512DQ AVX512VL");
    ck_assert_int_eq(blascore_missing("Cooperlake", skx, lack, sizeof lack), 1);
    ck_assert_str_eq(lack, "AVX512_BF16");
    ck_assert_int_eq(blascore_missing("haswell", avx2, lack, sizeof lack), 0);
    ck_assert_int_eq(blascore_missing("Bogus", skx, lack, sizeof lack), -1);
    // this machine: the family it pins is one it runs
    const char *mine = blascore_class(blascore_cpu(), 0);
    if (mine) ck_assert_int_eq(blascore_missing(mine, blascore_cpu(), lack, sizeof lack), 0);
}
END_TEST

Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_gemm_same_bits_any_threads);
    tcase_add_test(tc, test_gemm_small_not_shared);
    tcase_add_test(tc, test_gemm_portable_kernels);
    tcase_add_test(tc, test_blascore_classes);
    suite_add_tcase(s, tc);
    return s;
}
