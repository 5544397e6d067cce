/* test_onednn.c — the fast bfloat16 path (nn/gemm_dnnl.h; docs/design.md, "The fast bfloat16
 * path"): oneDNN's bf16 matmul against the emulation (bfloat16-rounded operands into float32
 * sgemm) and against float64 on the rounded operands, on the model's GEMM shapes; the same bits
 * at 1 and 2 threads; a whole bfloat16 training run on either path; train.gemm_path's rules.
 * Skipped (with a line saying so) when the build has no oneDNN. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "tests.h"
#include "config/config.h"
#include "model/session.h"
#include "nn/gemm.h"
#include "nn/gemm_dnnl.h"
#include "nn/round.h"
#include "train/train.h"
#include "util/lowp.h"
#include "util/threads.h"

int gemm_dnnl_available_f32(void);
int gemm_dnnl_f32(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc);

static const round_policy_t EMULATED = {1, 0, 0, 0, 0, 0, 0}, ONEDNN = {1, 0, 0, 0, 0, 1, 0};

/* A GEMM of the model: C (M,N) = op(A)·op(B) + β·C. */
typedef struct {
    int ta, tb, M, N, K;
    double beta;
} shape_t;

/* d = 256, 4 heads, d_ff 1024, B·T = 512 tokens (bench's u_lm at d 256): the forward's x·W and
 * the FFN's, the backward's dX = dY·Wᵀ and dW += Xᵀ·dY (β = 1), attention's q·kᵀ and P·V for
 * one head (T = 64, Dh = 64), and an odd shape whose tails leave every tile. */
static const shape_t SHAPES[] = {
    {0, 0, 512, 256, 256, 0.0},  {0, 0, 512, 1024, 256, 0.0}, {0, 0, 512, 256, 1024, 0.0},
    {0, 1, 512, 256, 1024, 0.0}, {1, 0, 256, 1024, 512, 1.0}, {1, 0, 1024, 256, 512, 1.0},
    {0, 1, 64, 64, 64, 0.0},     {0, 0, 64, 64, 64, 0.0},     {1, 1, 37, 29, 301, 1.0},
};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

/* Random float32 operands of shape s (stored as op() needs them) and C₀. */
static void operands(const shape_t *s, gsl_rng *r, float **A, float **B, float **C0)
{
    const size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    *A = malloc(na * sizeof(float));
    *B = malloc(nb * sizeof(float));
    *C0 = malloc(nc * sizeof(float));
    for (size_t i = 0; i < na; i++) (*A)[i] = (float)gsl_ran_gaussian(r, 1.0);
    for (size_t i = 0; i < nb; i++) (*B)[i] = (float)gsl_ran_gaussian(r, 1.0);
    for (size_t i = 0; i < nc; i++) (*C0)[i] = (float)gsl_ran_gaussian(r, 1.0);
}

/* The product of s under policy p into C (from C₀). */
static void product(const shape_t *s, const round_policy_t *p, const float *A, const float *B,
                    const float *C0, float *C)
{
    memcpy(C, C0, (size_t)s->M * s->N * sizeof(float));
    round_policy_set_f32(p);
    gemm_f32(s->ta, s->tb, s->M, s->N, s->K, 1.0, A, s->ta ? s->M : s->K, B, s->tb ? s->K : s->N,
             s->beta, C, s->N);
    round_policy_set_f32(NULL);
}

/* Each entry of oneDNN's product and of the emulation's against the float64 sum c of the same
 * terms (the rounded operands' products, exact in float32, plus β·C₀): both are float32 sums of
 * those K (+1) terms in some order, so each is within γ_n·Σ|terms|, γ_n = n·u/(1 − n·u),
 * u = 2⁻²⁴ (Higham 2002, eq. 3.5), of c, and they differ by at most 2γ_n·Σ|terms| — the whole
 * difference is the order of the additions (oneDNN's vdpbf16ps adds pairs k = 2i+1, 2i and
 * blocks K its own way). A plain float32 product (no rounding) fails the same bound: the test
 * sees the operands' rounding. */
START_TEST(test_onednn_vs_emulation_bound)
{
    if (!gemm_dnnl_available_f32()) {
        fprintf(stderr, "onednn: no oneDNN in this build: skipped\n");
        return;
    }
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    threads_set(1);
    double worst_o = 0, worst_e = 0, worst_d = 0, worst_f = 0;
    size_t same = 0, total = 0;
    for (int si = 0; si < NSHAPES; si++) {
        const shape_t *s = &SHAPES[si];
        float *A, *B, *C0;
        operands(s, r, &A, &B, &C0);
        const size_t nc = (size_t)s->M * s->N;
        float *Co = malloc(nc * sizeof(float)), *Ce = malloc(nc * sizeof(float));
        float *Cf = malloc(nc * sizeof(float));
        product(s, &ONEDNN, A, B, C0, Co);
        product(s, &EMULATED, A, B, C0, Ce);
        product(s, NULL, A, B, C0, Cf);
        const int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N, n = s->K + (s->beta != 0);
        const double u = 0x1p-24, gamma = n * u / (1 - n * u);
        for (int i = 0; i < s->M; i++)
            for (int j = 0; j < s->N; j++) {
                double c = s->beta * C0[(size_t)i * s->N + j], mag = fabs(c);
                for (int k = 0; k < s->K; k++) {
                    const double a = lowp_bf16(s->ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
                    const double b = lowp_bf16(s->tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                    c += a * b;
                    mag += fabs(a * b);
                }
                const size_t e = (size_t)i * s->N + j;
                worst_o = fmax(worst_o, fabs(Co[e] - c) / (gamma * mag));
                worst_e = fmax(worst_e, fabs(Ce[e] - c) / (gamma * mag));
                worst_d = fmax(worst_d, fabs(Co[e] - Ce[e]) / (2 * gamma * mag));
                worst_f = fmax(worst_f, fabs(Cf[e] - c) / (gamma * mag));
                same += memcmp(&Co[e], &Ce[e], sizeof(float)) == 0;
                total++;
            }
        free(A), free(B), free(C0), free(Co), free(Ce), free(Cf);
    }
    threads_set(0);
    fprintf(stderr, "onednn: |onednn − exact|/γ·Σ %.3g, |emulated − exact|/γ·Σ %.3g, "
            "|onednn − emulated|/2γ·Σ %.3g, float32 unrounded %.3g; bit-equal %zu of %zu\n",
            worst_o, worst_e, worst_d, worst_f, same, total);
    ck_assert_double_le(worst_o, 1.0);
    ck_assert_double_le(worst_e, 1.0);
    ck_assert_double_le(worst_d, 1.0);
    ck_assert_double_gt(worst_f, 1.0);   // the operands' rounding (relative 2⁻⁹) is seen
    gsl_rng_free(r);
}
END_TEST

/* The promise of nn/gemm.h on the oneDNN path: each product has the bytes of one call at 1 and
 * at 2 threads (the pool's blocks, each one single-threaded oneDNN call), and the split really
 * happens for the larger shapes (gemm_blocks ≥ 2), so the comparison is not of one call with
 * itself; and one call made where OpenMP may use 2 threads has the bits of one made at 1, and
 * leaves the caller's OpenMP maximum as it was. */
START_TEST(test_onednn_same_bits_1_2_threads)
{
    if (!gemm_dnnl_available_f32()) {
        fprintf(stderr, "onednn: no oneDNN in this build: skipped\n");
        return;
    }
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 6);
    int split = 0;
    for (int si = 0; si < NSHAPES; si++) {
        const shape_t *s = &SHAPES[si];
        float *A, *B, *C0;
        operands(s, r, &A, &B, &C0);
        const size_t nc = (size_t)s->M * s->N;
        float *C1 = malloc(nc * sizeof(float)), *C2 = malloc(nc * sizeof(float));
        threads_set(1);
        product(s, &ONEDNN, A, B, C0, C1);
        threads_set(2);
        round_policy_set_f32(&ONEDNN);
        const int nb = gemm_blocks_f32(s->ta, s->tb, s->M, s->N, s->K);
        round_policy_set_f32(NULL);
        split += nb >= 2;
        product(s, &ONEDNN, A, B, C0, C2);
        fprintf(stderr, "onednn: %s%s %d×%d×%d: %d blocks at 2 threads\n", s->ta ? "T" : "N",
                s->tb ? "T" : "N", s->M, s->N, s->K, nb);
        ck_assert_int_eq(memcmp(C1, C2, nc * sizeof(float)), 0);
        free(A), free(B), free(C0), free(C1), free(C2);
    }
    threads_set(0);
    ck_assert_int_ge(split, 4);
    // one call from a thread whose OpenMP maximum is 2: the bits of a call at 1 (oneDNN runs one
    // thread inside our calls), and the caller's maximum is 2 again afterwards
    enum { M = 16, N = 16, K = 8192 };
    float *A = malloc(M * K * sizeof(float)), *B = malloc(K * N * sizeof(float)), C[2][M * N];
    for (int i = 0; i < M * K; i++) A[i] = (float)gsl_ran_gaussian(r, 1.0);
    for (int i = 0; i < K * N; i++) B[i] = (float)gsl_ran_gaussian(r, 1.0);
    const int saved = omp_get_max_threads();
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        ck_assert_int_eq(gemm_dnnl_f32(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C[t], N), 0);
        ck_assert_int_eq(omp_get_max_threads(), t + 1);
    }
    omp_set_num_threads(saved);
    ck_assert_int_eq(memcmp(C[0], C[1], sizeof C[0]), 0);
    free(A), free(B);
    gsl_rng_free(r);
}
END_TEST

/* train.gemm_path: refused outside bfloat16 and bfloat16_pure (float32 has no rounded operands,
 * fp8's are not bfloat16) and, as onednn, with round_gemm off; written to the resolved config
 * when not emulated (the default, which keeps every stored config's text and never depends on
 * the CPU); auto is oneDNN only on a CPU with AMX, and onednn where it is asked for. */
START_TEST(test_gemm_path_key)
{
    config_t cfg;
    char err[512];
    static char ini[16384];
    const char *refused[][2] = {{"train.precision=float32", "train.gemm_path=onednn"},
                                {"train.precision=fp8", "train.gemm_path=emulated"},
                                {"train.precision=bfloat16", "train.round_gemm=off"}};
    for (int i = 0; i < 3; i++) {
        config_defaults(&cfg);
        ck_assert_int_eq(config_set(&cfg, refused[i][0], err, sizeof err), 0);
        ck_assert_int_eq(config_set(&cfg, refused[i][1], err, sizeof err), 0);
        if (i == 2) ck_assert_int_eq(config_set(&cfg, "train.gemm_path=onednn", err, sizeof err), 0);
        ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);
        ck_assert_msg(strstr(err, "gemm_path") != NULL, "%s", err);
    }
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.precision=bfloat16", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 0);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_null(strstr(ini, "gemm_path"));
    ck_assert_int_eq(session_gemm_onednn(&cfg), 0);   // the default: the emulation on every CPU
    ck_assert_int_eq(config_set(&cfg, "train.gemm_path=auto", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 0);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "gemm_path = auto"));   // another configuration
    ck_assert_int_eq(session_gemm_onednn(&cfg), gemm_dnnl_amx());
    ck_assert_int_eq(config_set(&cfg, "train.gemm_path=onednn", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 0);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "gemm_path = onednn"));
    ck_assert_int_eq(session_gemm_onednn(&cfg), 1);
    ck_assert_int_eq(config_set(&cfg, "train.gemm_path=emulated", err, sizeof err), 0);
    ck_assert_int_eq(session_gemm_onednn(&cfg), 0);
}
END_TEST

Suite *onednn_suite(void)
{
    Suite *s = suite_create("onednn");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_onednn_vs_emulation_bound);
    tcase_add_test(tc, test_onednn_same_bits_1_2_threads);
    tcase_add_test(tc, test_gemm_path_key);
    suite_add_tcase(s, tc);
    return s;
}
