/* test_attn_fix.c — train.attn_round_fix: flash attention's rounding of exp(s − m) with
 * Qiu & Yao 2025's m (arXiv 2510.04212; nn/attention.c, flash_row; docs/design.md, "Low
 * precision, emulated"). A hand-computed row pair whose plain flash rounding is biased and whose
 * fixed rounding is not; the backward's convention (the derivative at the stored probabilities);
 * the key refused where the probabilities do not round, and written only when on. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "tests.h"
#include "config/config.h"
#include "nn/attention.h"
#include "nn/round.h"
#include "util/lowp.h"

void attention_forward_opt_f32(float *ctx, float *att, const float *q, const float *k,
                               const float *v, int B, int Tq, int Tk, int C, int H, int causal,
                               const int *key_len, const attention_opts_t *o);
void attention_backward_opt_f32(float *dq, float *dk, float *dv, float *datt, const float *dctx,
                                const float *q, const float *k, const float *v, const float *att,
                                int B, int Tq, int Tk, int C, int H, const attention_opts_t *o);

enum { NQ = 256 };

/* One head, Dh = 1, two keys k = (1, 1 − 2⁻¹¹), values v = (−1, −1), and NQ queries q_i = ±a_i,
 * a_i from 0.55 to 1.9: scores a and a(1 − 2⁻¹¹) (or their negatives), 2⁻¹¹·a < 10⁻³ apart, so
 * every row's max repeats in Qiu & Yao's sense. Runs the float32 core's forward under policy
 * attn_fix = fix (0: the probabilities rounded after normalising), returns the reported bias and
 * the mean of ctx − ctx(unrounded) in *dctx. */
static double two_keys(int fix, double *dctx)
{
    static float q[NQ], k[2] = {1.0f, 1.0f - 0x1p-11f}, v[2] = {-1.0f, -1.0f}, att[NQ * 2];
    static float ctx0[NQ], ctx1[NQ];
    for (int i = 0; i < NQ; i++) {
        const double a = 0.55 + 1.35 * (i / 2) / (NQ / 2 - 1);
        q[i] = (float)(i % 2 ? -a : a);
    }
    float bias = 0.0f;   // real in the float32 core
    attention_opts_t o = {0};
    o.round_bias = (double *)(void *)&bias;
    attention_forward_opt_f32(ctx0, att, q, k, v, 1, NQ, 2, 1, 1, 0, NULL, NULL);   // policy off
    const round_policy_t p = {0, 1, 0, 0, 0, 0, fix};
    round_policy_set_f32(&p);
    attention_forward_opt_f32(ctx1, att, q, k, v, 1, NQ, 2, 1, 1, 0, NULL, &o);
    round_policy_set_f32(NULL);
    double d = 0.0;
    for (int i = 0; i < NQ; i++) d += (double)ctx1[i] - ctx0[i];
    *dctx = d / NQ;
    return bias;
}

/* Plain flash rounding (fix = 2, m = the row max): P̄ = (1, e^(−2⁻¹¹a)) and e^(−2⁻¹¹a) >
 * 1 − 2⁻⁹ rounds up to 1, so both probabilities become 1/ℓ, ℓ = 1 + e^(−2⁻¹¹a): by hand the
 * bias is −mean_i (1 − e_i)/(1 + e_i) (≈ −2⁻¹²·ā ≈ −3e-4), every row's error of one sign. With
 * the fix (m = 2a for a > 0, 0 for a < 0) no P̄ is near 1 and the errors of bf16(e^(−a)) change
 * sign with a: the bias is the one computed here from the definition with util/lowp.h's
 * rounding of the float32 P̄ (flash's P̃), and less than a tenth of the plain one. Rounding the normalised probabilities
 * (fix = 0) takes both to 0.5: no bias beyond float32's storage of P (≲ 1e-7). In each case
 * the mean change of ctx equals the reported bias (float32's accumulation, ≲ 1e-7). */
START_TEST(test_attn_fix_removes_the_bias)
{
    double dplain, dfix, dnorm;
    const double plain = two_keys(2, &dplain), fix = two_keys(1, &dfix), norm = two_keys(0, &dnorm);
    double hand = 0.0, want = 0.0;
    for (int i = 0; i < NQ; i++) {
        const double a = 0.55 + 1.35 * (i / 2) / (NQ / 2 - 1);
        const float qa = (float)(i % 2 ? -a : a);
        const double s[2] = {qa, qa * (1.0f - 0x1p-11f)};   // the float32 scores
        const double mx = fmax(s[0], s[1]), e = exp(fmin(s[0], s[1]) - mx);
        hand -= (1.0 - e) / (1.0 + e);
        const double m = mx > 0.0 ? 2.0 * mx : 0.0;
        const double p0 = exp(s[0] - m), p1 = exp(s[1] - m), l = p0 + p1;
        want -= ((double)lowp_bf16((float)p0) - (float)p0 + lowp_bf16((float)p1) - (float)p1) / l;
    }
    hand /= NQ, want /= NQ;
    fprintf(stderr, "attn_round_fix: bias plain flash %.6g (by hand %.6g), fixed %.6g (by the "
            "definition %.6g), normalised %.3g; mean ctx change %.6g, %.6g, %.3g\n",
            plain, hand, fix, want, norm, dplain, dfix, dnorm);
    ck_assert_double_lt(fabs(plain - hand), 1e-8);   // the float32 of the bias: 2⁻²⁴·3e-4
    ck_assert_double_lt(hand, -2e-4);
    ck_assert_double_lt(fabs(fix - want), 1e-9);
    ck_assert_double_lt(fabs(fix), 0.1 * fabs(plain));
    ck_assert_double_lt(fabs(norm), 1e-7);
    ck_assert_double_lt(fabs(dplain - plain), 1e-7);
    ck_assert_double_lt(fabs(dfix - fix), 1e-7);
}
END_TEST

/* The backward with the fix: the derivative at the stored probabilities A (straight through the
 * rounding, as every rounding place's): dv = Aᵀ·dctx, dS = A ⊙ (dA − rowsum(A ⊙ dA)),
 * dA = dctx·vᵀ, dq = scale·dS·k — computed here in double from the stored A, equal within
 * float32's accumulation (|terms| ≲ 10, T = 12: 1e-5). Keys repeat (k_j = k_0 for odd j), so
 * the rows' maxima repeat and the fix's m acts. */
START_TEST(test_attn_fix_backward)
{
    enum { T = 12, C = 8, H = 2, Dh = C / H };
    static float q[T * C], k[T * C], v[T * C], att[H * T * T], ctx[T * C], dctx[T * C];
    static float dq[T * C], dk[T * C], dv[T * C], datt[H * T * T];
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    for (int i = 0; i < T * C; i++) {
        q[i] = (float)gsl_ran_gaussian(r, 1.5);
        k[i] = (float)gsl_ran_gaussian(r, 1.5);
        v[i] = (float)gsl_ran_gaussian(r, 1.0);
        dctx[i] = (float)gsl_ran_gaussian(r, 1.0);
    }
    for (int t = 1; t < T; t += 2) memcpy(k + t * C, k, C * sizeof(float));
    const round_policy_t p = {0, 1, 0, 0, 0, 0, 1};
    round_policy_set_f32(&p);
    attention_forward_opt_f32(ctx, att, q, k, v, 1, T, T, C, H, 1, NULL, NULL);
    attention_backward_opt_f32(dq, dk, dv, datt, dctx, q, k, v, att, 1, T, T, C, H, NULL);
    round_policy_set_f32(NULL);
    double worst = 0.0, off1 = 0.0;
    const double scale = 1.0 / sqrt((double)Dh);
    for (int h = 0; h < H; h++) {
        const float *A = att + (size_t)h * T * T;
        double dS[T][T];
        for (int i = 0; i < T; i++) {
            double dA[T], dot = 0.0, rs = 0.0;
            for (int j = 0; j < T; j++) {
                dA[j] = 0.0;
                for (int d = 0; d < Dh; d++) dA[j] += (double)dctx[i * C + h * Dh + d] * v[j * C + h * Dh + d];
                dot += A[i * T + j] * dA[j];
                rs += A[i * T + j];
            }
            off1 = fmax(off1, fabs(rs - 1.0));
            for (int j = 0; j < T; j++) dS[i][j] = A[i * T + j] * (dA[j] - dot);
        }
        for (int i = 0; i < T; i++)
            for (int d = 0; d < Dh; d++) {
                double gq = 0.0, gv = 0.0;
                for (int j = 0; j < T; j++) {
                    gq += scale * dS[i][j] * k[j * C + h * Dh + d];
                    gv += (double)A[j * T + i] * dctx[j * C + h * Dh + d];
                }
                worst = fmax(worst, fabs(gq - dq[i * C + h * Dh + d]));
                worst = fmax(worst, fabs(gv - dv[i * C + h * Dh + d]));
            }
    }
    fprintf(stderr, "attn_round_fix backward: worst |dq, dv − from stored A| %.3g; rows of A "
            "sum to 1 within %.3g (the rounding)\n", worst, off1);
    ck_assert_double_lt(worst, 1e-5);
    ck_assert_double_gt(off1, 1e-4);   // A is the rounded one, not a softmax
    gsl_rng_free(r);
}
END_TEST

/* Refused where the probabilities are not rounded; written to the resolved config only on. */
START_TEST(test_attn_fix_key)
{
    config_t cfg;
    char err[512];
    static char ini[16384];
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.precision=float32", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&cfg, "train.attn_round_fix=on", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "attn_round_fix") && strstr(err, "bfloat16"), "%s", err);
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.precision=bfloat16", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&cfg, "train.round_attn_probs=off", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&cfg, "train.attn_round_fix=on", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "round_attn_probs = on"), "%s", err);
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.precision=bfloat16", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 0);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_null(strstr(ini, "attn_round_fix"));
    ck_assert_int_eq(config_set(&cfg, "train.attn_round_fix=on", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 0);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "attn_round_fix = on"));
}
END_TEST

Suite *attn_fix_suite(void)
{
    Suite *s = suite_create("attn_fix");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_attn_fix_removes_the_bias);
    tcase_add_test(tc, test_attn_fix_backward);
    tcase_add_test(tc, test_attn_fix_key);
    suite_add_tcase(s, tc);
    return s;
}
