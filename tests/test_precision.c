/* test_precision.c — train.precision = bfloat16 and bfloat16_pure on the float32 core
 * (docs/design.md, "Low precision, emulated"): a GEMM with rounded operands against float64 on
 * the same rounded operands within float32 accumulation's error bound; pure bfloat16 weights
 * that stagnate under nearest rounding and move under stochastic rounding and Kahan; the
 * spectral norm against GSL's SVD; the keys refused where they do not act. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "tests.h"
#include "config/config.h"
#include "measure/rounding.h"
#include "measure/spectral.h"
#include "model/session.h"
#include "nn/attention.h"
#include "nn/gemm.h"
#include "nn/norm.h"
#include "nn/round.h"
#include "train/train.h"
#include "util/lowp.h"

/* C = op(A)·op(B) for every transpose, with a leading dimension wider than the block (as
 * attention's heads): with round_gemm on, each entry of the float32 core's product equals the
 * float64 product of the bfloat16-rounded operands within the bound of float32 accumulation,
 * |ĉ − c| ≤ γ_K·Σ_k |a_k b_k|, γ_K = K·u/(1 − K·u), u = 2⁻²⁴ (Higham 2002, eq. 3.5; each
 * product of two bfloat16 values is exact in float32, 8 + 8 ≤ 24 significant bits, so only the
 * additions round). With the policy off (plain float32 operands) the same comparison fails:
 * the rounding of the operands (relative 2⁻⁹) is what the test sees. */
START_TEST(test_bf16_gemm_within_float32_accumulation)
{
    enum { M = 37, N = 29, K = 300, LD = 310 };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 3);
    float *A = malloc((size_t)LD * LD * sizeof(float)), *B = malloc((size_t)LD * LD * sizeof(float));
    float *C = malloc((size_t)M * N * sizeof(float));
    for (size_t i = 0; i < (size_t)LD * LD; i++) {
        A[i] = (float)gsl_ran_gaussian(r, 1.0);
        B[i] = (float)gsl_ran_gaussian(r, 1.0);
    }
    const double u = 0x1p-24, gamma = K * u / (1 - K * u);
    for (int pass = 0; pass < 2; pass++) {
        const round_policy_t on = {1, 0, 0, 0, 0, 0, 0};
        round_policy_set_f32(pass == 0 ? &on : NULL);
        double worst = 0.0;   // largest |ĉ − c| / bound over the passes' entries
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                gemm_f32(ta, tb, M, N, K, 1.0, A, LD, B, LD, 0.0, C, N);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        double c = 0.0, mag = 0.0;
                        for (int k = 0; k < K; k++) {
                            const double a = lowp_bf16(ta ? A[(size_t)k * LD + i] : A[(size_t)i * LD + k]);
                            const double b = lowp_bf16(tb ? B[(size_t)j * LD + k] : B[(size_t)k * LD + j]);
                            c += a * b;
                            mag += fabs(a * b);
                        }
                        worst = fmax(worst, fabs(C[i * N + j] - c) / (gamma * mag));
                    }
            }
        if (pass == 0) ck_assert_double_le(worst, 1.0);   // measured 0.0046: far inside
        else ck_assert_double_gt(worst, 1.0);             // measured 44: the operands' rounding
        fprintf(stderr, "bf16 gemm: worst |error|/bound %s rounding = %.3g\n",
                pass == 0 ? "with" : "without", worst);
    }
    round_policy_set_f32(NULL);
    free(A);
    free(B);
    free(C);
    gsl_rng_free(r);
}
END_TEST

void linear_forward_f32(float *out, const float *inp, const float *W, const float *b, size_t N,
                        size_t IC, size_t OC);
void linear_backward_set_f32(float *dinp, float *dW, float *db, const float *dout, const float *inp,
                             const float *W, size_t N, size_t IC, size_t OC);

/* Entry (i, j) of op(X)·op(Y) over K in float64 on bfloat16-rounded operands, and Σ|x y|. */
static double dot_bf16(const float *X, size_t xs, const float *Y, size_t ys, size_t K, double *mag)
{
    double c = 0.0;
    *mag = 0.0;
    for (size_t k = 0; k < K; k++) {
        const double p = (double)lowp_bf16(X[k * xs]) * lowp_bf16(Y[k * ys]);
        c += p;
        *mag += fabs(p);
    }
    return c;
}

/* A linear layer's forward and backward under train.precision = bfloat16 (round_gemm; nn/linear.h)
 * against float64 on the rounded operands: y = bf16(x)·bf16(W) + b, dX = bf16(dY)·bf16(W)ᵀ,
 * dW = bf16(x)ᵀ·bf16(dY), each within float32 accumulation's γ_K·Σ|ab| (Higham 2002, eq. 3.5;
 * K = IC, OC, N); the bias enters the forward's sum (β = 1), so there the bound is
 * γ_(K+1)·(Σ|ab| + |b|). Measured: 0.031 of the bound at worst. */
START_TEST(test_bf16_linear_forward_backward)
{
    enum { N = 48, IC = 40, OC = 56 };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 8);
    static float x[N * IC], W[IC * OC], b[OC], y[N * OC], dy[N * OC], dx[N * IC], dW[IC * OC], db[OC];
    for (int i = 0; i < N * IC; i++) x[i] = (float)gsl_ran_gaussian(r, 1.0);
    for (int i = 0; i < IC * OC; i++) W[i] = (float)gsl_ran_gaussian(r, 0.2);
    for (int i = 0; i < OC; i++) b[i] = (float)gsl_ran_gaussian(r, 0.1);
    for (int i = 0; i < N * OC; i++) dy[i] = (float)gsl_ran_gaussian(r, 1e-2);
    memset(dW, 0, sizeof dW);
    memset(db, 0, sizeof db);
    const round_policy_t on = {1, 0, 0, 0, 0, 0, 0};
    round_policy_set_f32(&on);
    linear_forward_f32(y, x, W, b, N, IC, OC);
    linear_backward_set_f32(dx, dW, db, dy, x, W, N, IC, OC);
    round_policy_set_f32(NULL);
    const double u = 0x1p-24;
#define GAMMA(K) ((K) * u / (1 - (K) * u))
    double worst = 0.0, mag;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < OC; j++) {   // y = x·W + b
            const double c = dot_bf16(x + i * IC, 1, W + j, OC, IC, &mag) + b[j];
            worst = fmax(worst, fabs(y[i * OC + j] - c) / (GAMMA(IC + 1) * (mag + fabs(b[j]))));
        }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < IC; k++) {   // dX = dY·Wᵀ
            const double c = dot_bf16(dy + i * OC, 1, W + k * OC, 1, OC, &mag);
            worst = fmax(worst, fabs(dx[i * IC + k] - c) / (GAMMA(OC) * mag));
        }
    for (int k = 0; k < IC; k++)
        for (int j = 0; j < OC; j++) {   // dW = xᵀ·dY
            const double c = dot_bf16(x + k, IC, dy + j, OC, N, &mag);
            worst = fmax(worst, fabs(dW[k * OC + j] - c) / (GAMMA(N) * mag));
        }
#undef GAMMA
    fprintf(stderr, "bf16 linear forward/backward: worst |error|/bound %.3g\n", worst);
    ck_assert_double_le(worst, 1.0);
    gsl_rng_free(r);
}
END_TEST

void gemm_grad_f32(int grad, int ta, int tb, int M, int N, int K, double alpha, const float *A,
                   int lda, const float *B, int ldb, double beta, float *C, int ldc);

/* train.precision = fp8: a product's forward operand goes through E4M3 and its gradient operand
 * through E5M2, each with its own scale from its amax (util/lowp.h); the result equals the
 * float64 product of those quantised operands within γ_K·Σ|a b| (Higham 2002, eq. 3.5: the
 * quantised values over their scales are not short, so the products round too, which γ_K
 * covers), and swapping which operand is the gradient changes the result (E4M3 ≠ E5M2). */
START_TEST(test_fp8_gemm_operands)
{
    enum { M = 23, N = 31, K = 200 };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 4);
    static float A[M * K], B[K * N], C[M * N], C2[M * N], A8[M * K], B8[K * N];
    for (int i = 0; i < M * K; i++) A[i] = (float)gsl_ran_gaussian(r, 2.0);
    for (int i = 0; i < K * N; i++) B[i] = (float)gsl_ran_gaussian(r, 1e-3);   // a gradient's scale
    const round_policy_t fp8 = {1, 0, 0, 0, 1, 0, 0};
    round_policy_set_f32(&fp8);
    gemm_grad_f32(GEMM_GRAD_B, 0, 0, M, N, K, 1.0, A, K, B, N, 0.0, C, N);
    gemm_grad_f32(GEMM_GRAD_A, 0, 0, M, N, K, 1.0, A, K, B, N, 0.0, C2, N);
    round_policy_set_f32(NULL);
    lowp_fp8_round(A, A8, M * K, LOWP_E4M3, lowp_fp8_scale(A, M * K, LOWP_E4M3));
    lowp_fp8_round(B, B8, K * N, LOWP_E5M2, lowp_fp8_scale(B, K * N, LOWP_E5M2));
    const double gamma = K * 0x1p-24 / (1 - K * 0x1p-24);
    double worst = 0.0, swapped = 0.0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double c = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                c += (double)A8[i * K + k] * B8[k * N + j];
                mag += fabs((double)A8[i * K + k] * B8[k * N + j]);
            }
            worst = fmax(worst, fabs(C[i * N + j] - c) / (gamma * mag));
            swapped = fmax(swapped, fabs(C2[i * N + j] - c) / (gamma * mag));
        }
    fprintf(stderr, "fp8 gemm: worst |error|/bound %.3g; with the formats swapped %.3g\n", worst, swapped);
    ck_assert_double_le(worst, 1.0);
    ck_assert_double_gt(swapped, 1.0);
    gsl_rng_free(r);
}
END_TEST

/* The float32 core's attention (build/f32/names.h); its options struct has the layout of this
 * build's, with float where this one has double (only pointers differ). */
void attention_forward_opt_f32(float *ctx, float *att, const float *q, const float *k,
                               const float *v, int B, int Tq, int Tk, int C, int H, int causal,
                               const int *key_len, const attention_opts_t *o);

/* softmax·V's rounding bias (nn/attention.h): with only the probabilities rounded, the mean
 * over a head's outputs of ctx(rounded P) − ctx(P), two real forwards, equals the bias the
 * forward reports from its column-sum formula, within float32's accumulation error (|ctx| ≲ 3,
 * Tk = 40: ≲ 40·3·2⁻²⁴ ≈ 7e-6 per entry, far less on the mean); the bias itself is ~1e-4. */
START_TEST(test_pv_round_bias)
{
    enum { B = 2, T = 40, C = 16, H = 2, Dh = C / H };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    static float q[B * T * C], k[B * T * C], v[B * T * C], att[B * H * T * T];
    static float ctx0[B * T * C], ctx1[B * T * C];
    float bias[B * H];
    for (int i = 0; i < B * T * C; i++) {
        q[i] = (float)gsl_ran_gaussian(r, 1.5);
        k[i] = (float)gsl_ran_gaussian(r, 1.5);
        v[i] = (float)(1.0 + gsl_ran_gaussian(r, 1.0));   // a mean ≠ 0, as the bias needs
    }
    attention_opts_t o = {0};
    o.round_bias = (double *)(void *)bias;
    attention_forward_opt_f32(ctx0, att, q, k, v, B, T, T, C, H, 1, NULL, &o);   // policy off
    const round_policy_t probs = {0, 1, 0, 0, 0, 0, 0};
    round_policy_set_f32(&probs);
    attention_forward_opt_f32(ctx1, att, q, k, v, B, T, T, C, H, 1, NULL, &o);
    round_policy_set_f32(NULL);
    double worst = 0.0, smallest = INFINITY;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            double d = 0.0;
            for (int t = 0; t < T; t++)
                for (int j = 0; j < Dh; j++) {
                    const size_t i = ((size_t)b * T + t) * C + (size_t)h * Dh + j;
                    d += (double)ctx1[i] - ctx0[i];
                }
            d /= T * Dh;
            worst = fmax(worst, fabs(d - bias[b * H + h]));
            smallest = fmin(smallest, fabs(d));
        }
    fprintf(stderr, "pv_round_bias: worst |mean difference - reported| %.3g, smallest |bias| %.3g\n",
            worst, smallest);
    ck_assert_double_lt(worst, 1e-6);
    ck_assert_double_gt(smallest, 1e-5);
    gsl_rng_free(r);
}
END_TEST

void norm_forward_f32(norm_kind_t kind, float *out, float *mean, float *rstd, const float *x,
                      const float *gamma, const float *beta, size_t N, size_t C, double eps);

/* round_norm_stats: LayerNorm's output is γ(x − μ̃)·r̃ + β with μ̃, r̃ the bfloat16 values of
 * the row's mean and 1/√(σ² + ε), computed here in double from the definition (Ba et al. 2016)
 * and rounded with util/lowp.h: equal within float32's rounding of the output (relative 2⁻²³
 * of the largest term, checked at 1e-6 absolute for |y| ≲ 5); the stored statistics are the
 * rounded ones. Without the policy the output differs from that by up to r's rounding (2⁻⁹). */
START_TEST(test_norm_stats_rounded)
{
    enum { N = 6, C = 24 };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 9);
    float x[N * C], g[C], b[C], y[N * C], mean[N], rstd[N];
    for (int i = 0; i < N * C; i++) x[i] = (float)(0.7 + gsl_ran_gaussian(r, 1.3));
    for (int i = 0; i < C; i++) {
        g[i] = (float)(1.0 + 0.2 * gsl_ran_gaussian(r, 1.0));
        b[i] = (float)(0.1 * gsl_ran_gaussian(r, 1.0));
    }
    for (int pass = 0; pass < 2; pass++) {
        const round_policy_t stats = {0, 0, 0, 1, 0, 0, 0};
        round_policy_set_f32(pass == 0 ? &stats : NULL);
        norm_forward_f32(NORM_LAYERNORM, y, mean, rstd, x, g, b, N, C, 1e-5);
        double worst = 0.0;
        for (int n = 0; n < N; n++) {
            double mu = 0.0, var = 0.0;
            for (int i = 0; i < C; i++) mu += x[n * C + i];
            mu /= C;
            for (int i = 0; i < C; i++) var += (x[n * C + i] - mu) * (x[n * C + i] - mu);
            var /= C;
            const double mt = lowp_bf16((float)mu), rt = lowp_bf16((float)(1.0 / sqrt(var + 1e-5)));
            if (pass == 0) {
                ck_assert_float_eq(mean[n], (float)mt);
                ck_assert_float_eq(rstd[n], (float)rt);
            }
            for (int i = 0; i < C; i++)
                worst = fmax(worst, fabs(y[n * C + i] - (g[i] * (x[n * C + i] - mt) * rt + b[i])));
        }
        fprintf(stderr, "norm stats %s rounding: worst |y - hand| %.3g\n", pass ? "without" : "with", worst);
        if (pass == 0) ck_assert_double_lt(worst, 1e-6);
        else ck_assert_double_gt(worst, 1e-4);
    }
    round_policy_set_f32(NULL);
    gsl_rng_free(r);
}
END_TEST

/* A tiny Pre-LN copy model at a constant lr of 1e-5 (Adam's step ≈ lr per weight, far under half
 * a bfloat16 ULP of a weight near 0.3, 2⁻¹⁰ ≈ 1e-3). */
static void stagnation_config(config_t *cfg, precision_t p)
{
    config_defaults(cfg);
    cfg->model.layers = 2;
    cfg->model.d_model = 16;
    cfg->model.heads = 2;
    cfg->model.d_ff = 32;
    cfg->model.vocab = 13;
    cfg->model.seq_len = 6;
    cfg->model.placement = PLACEMENT_PRE;
    cfg->data.task = TASK_COPY;
    cfg->data.batch = 4;
    cfg->train.steps = 200;
    cfg->train.lr = 1e-5;
    cfg->train.warmup = 0;
    cfg->train.schedule = SCHED_CONSTANT;
    cfg->probe.every = 1000;
    cfg->probe.model_update = 0;
    cfg->train.precision = p;
}

/* The run of cfg: θ_N − θ_0 into delta (num_params, allocated), its mean stagnation. */
static size_t run_delta(const config_t *cfg, double **delta, double *stagnation)
{
    train_t *t;
    char err[256];
    ck_assert_int_eq(train_create_f32(&t, cfg, err, sizeof err), 0);
    const model_t *m = t->s.model;
    const size_t n = m->num_params;
    const float *p = (const float *)(const void *)m->params;
    *delta = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) (*delta)[i] = -(double)p[i];
    double stag = 0.0;
    train_record_t r;
    for (long s = 0; s < cfg->train.steps; s++) {
        train_step_f32(t, &r);
        ck_assert_int_eq(r.diverged, 0);
        stag += r.stagnation;
    }
    for (size_t i = 0; i < n; i++) (*delta)[i] += p[i];
    *stagnation = stag / (double)cfg->train.steps;
    train_free_f32(t);
    return n;
}

/* How far a run went along the float32 run's way: ⟨Δ, Δ₃₂⟩/‖Δ₃₂‖² (1 for float32 itself; the
 * rounding noise of stochastic rounding is orthogonal to it on average). */
static double progress(const double *d, const double *d32, size_t n)
{
    double dot = 0.0, sq = 0.0;
    for (size_t i = 0; i < n; i++) { dot += d[i] * d32[i]; sq += d32[i] * d32[i]; }
    return dot / sq;
}

/* Pure bfloat16 with nearest rounding loses the updates (Ozkara et al. 2025): after 200 updates
 * its weights have gone less than 0.3 of the float32 run's way (the biases, at 0, and the smallest
 * weights still move) and most updates are lost; stochastic rounding and Kahan summation go
 * 0.8–1.2 of it. A float32 run records no stagnation (NaN). */
START_TEST(test_pure_bf16_stagnates_nearest_not_stochastic_or_kahan)
{
    config_t cfg;
    double stag, s_near, s_sr, s_kahan, *d32, *d;
    stagnation_config(&cfg, PRECISION_FLOAT32);
    const size_t n = run_delta(&cfg, &d32, &stag);
    ck_assert(isnan(stag));
    stagnation_config(&cfg, PRECISION_BFLOAT16_PURE);
    run_delta(&cfg, &d, &s_near);
    const double p_near = progress(d, d32, n);
    free(d);
    cfg.train.rounding = ROUNDING_STOCHASTIC;
    run_delta(&cfg, &d, &s_sr);
    const double p_sr = progress(d, d32, n);
    free(d);
    cfg.train.rounding = ROUNDING_NEAREST;
    cfg.train.kahan = 1;
    run_delta(&cfg, &d, &s_kahan);
    const double p_kahan = progress(d, d32, n);
    free(d);
    free(d32);
    fprintf(stderr, "pure bf16, %d updates at lr 1e-5, progress along float32's way: nearest "
            "%.3f, stochastic %.3f, kahan %.3f; stagnation nearest %.3f, stochastic %.3f, "
            "kahan %.3f\n", cfg.train.steps, p_near, p_sr, p_kahan, s_near, s_sr, s_kahan);
    ck_assert_double_lt(p_near, 0.3);   // measured 0.097
    ck_assert_double_gt(s_near, 0.5);
    ck_assert_double_lt(fabs(p_sr - 1.0), 0.2);
    ck_assert_double_lt(fabs(p_kahan - 1.0), 0.2);
}
END_TEST

/* ‖W‖₂ by power iteration against GSL's SVD, on a 40 × 24 Gaussian matrix (gap σ₂/σ₁ ≈ 0.8:
 * 30 iterations leave a relative error near 0.8⁶⁰ ≈ 2e-6). */
START_TEST(test_spectral_norm_vs_svd)
{
    enum { R = 40, Cc = 24 };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    double W[R * Cc];
    gsl_matrix *A = gsl_matrix_alloc(R, Cc), *V = gsl_matrix_alloc(Cc, Cc);
    gsl_vector *S = gsl_vector_alloc(Cc), *work = gsl_vector_alloc(Cc);
    for (int i = 0; i < R * Cc; i++) A->data[i] = W[i] = gsl_ran_gaussian(r, 1.0);
    gsl_linalg_SV_decomp(A, V, S, work);
    const double got = spectral_norm(W, R, Cc), want = gsl_vector_get(S, 0);
    ck_assert_double_lt(fabs(got - want) / want, 1e-4);
    ck_assert_double_le(got, want * (1 + 1e-12));   // a Rayleigh quotient: never above σ₁
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(work);
    gsl_rng_free(r);
}
END_TEST

/* swiglu_cos and channel_amax (measure/rounding.h) on a float64 SwiGLU model: with W³ of layer 1
 * set to 2·W¹ every cosine is 1, with −W¹ in layer 0 every cosine is −1, and a unit whose W³
 * column is W¹'s with its first half negated and its halves of equal norm is 0; a spike of 123
 * written into layer 1's output at (b = 1, t = 2, c = 5) is that channel's amax and no other's. */
START_TEST(test_swiglu_cos_and_channel_amax)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.model.layers = 2;
    cfg.model.d_model = 8;
    cfg.model.heads = 2;
    cfg.model.d_ff = 6;
    cfg.model.vocab = 11;
    cfg.model.seq_len = 5;
    cfg.model.activation = ACT_SWIGLU;
    cfg.data.batch = 2;
    session_t se;
    char err[256];
    ck_assert_int_eq(session_open(&se, &cfg, err, sizeof err), 0);
    session_init(&se, 1);
    ck_assert_int_eq(session_next_batch(&se), 0);
    model_t *m = se.model;
    probe_axes_t ax;
    ck_assert_int_eq(probe_axes_from_model(&ax, m), 0);
    ck_assert_int_eq(ax.nunit, 6);
    ck_assert_int_eq(ax.nchannel, 8);
    const tensor_info_t *g[2] = {NULL, NULL}, *u[2] = {NULL, NULL};
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        if (t->layer >= 0 && !strcmp(t->kind, "w1")) g[t->layer] = t;
        if (t->layer >= 0 && !strcmp(t->kind, "w3")) u[t->layer] = t;
    }
    ck_assert(g[0] && g[1] && u[0] && u[1]);
    const size_t R = g[0]->rows, F = g[0]->cols;
    for (size_t i = 0; i < R * F; i++) {
        m->params[u[0]->offset + i] = -m->params[g[0]->offset + i];
        m->params[u[1]->offset + i] = 2 * m->params[g[1]->offset + i];
    }
    for (size_t i = 0; i < R; i++) {   // unit 3 of layer 0: W¹ = (1,…,1), W³ = (−1,…,−1, 1,…,1)
        m->params[g[0]->offset + i * F + 3] = 1.0;
        m->params[u[0]->offset + i * F + 3] = i < R / 2 ? -1.0 : 1.0;
    }
    double cosv[2 * 6], amax[2 * 8];
    rounding_swiglu_cos(&ax, m, cosv);
    for (size_t j = 0; j < F; j++) {
        if (j == 3) ck_assert_double_lt(fabs(cosv[j]), 1e-15);
        else ck_assert_double_lt(fabs(cosv[j] + 1.0), 1e-14);
        ck_assert_double_lt(fabs(cosv[F + j] - 1.0), 1e-14);
    }
    model_forward(m, &se.batch);
    const layer_stack_t *st = &m->stack[0];
    real *out = stack_sublayer(st, 1, st->nsub - 1)->out;
    out[((size_t)1 * 5 + 2) * 8 + 5] = 123.0;
    rounding_channel_amax(&ax, m, amax);
    ck_assert_double_eq(amax[8 + 5], 123.0);
    for (int c = 0; c < 16; c++) if (c != 13) ck_assert_double_lt(amax[c], 123.0);
    for (int c = 0; c < 16; c++) ck_assert_double_gt(amax[c], 0.0);
    probe_axes_free(&ax);
    session_close(&se);
}
END_TEST

/* The low-precision keys are refused where they do not act, and written to the resolved config
 * only where they do. */
START_TEST(test_lowp_keys)
{
    config_t cfg;
    char err[512];
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.round_residual=on", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "needs train.precision = bfloat16") != NULL, "%s", err);
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.precision=bfloat16", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&cfg, "train.rounding=stochastic", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "train.rounding") && strstr(err, "bfloat16_pure"), "%s", err);
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.precision=bfloat16_pure", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&cfg, "train.kahan=on", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 0);
    static char ini[16384];
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "kahan = on"));
    ck_assert_ptr_nonnull(strstr(ini, "round_gemm = on"));
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.precision=float32", err, sizeof err), 0);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_null(strstr(ini, "kahan"));
    ck_assert_ptr_null(strstr(ini, "round_gemm"));
    ck_assert_ptr_null(strstr(ini, "precision_measures"));
    ck_assert_int_eq(config_precision_measures(&cfg), 0);   // auto: not in a float32 run
    ck_assert_int_eq(config_set(&cfg, "probe.precision_measures=on", err, sizeof err), 0);
    ck_assert_int_eq(config_precision_measures(&cfg), 1);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "precision_measures = on"));
}
END_TEST

Suite *precision_suite(void)
{
    Suite *s = suite_create("precision");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_bf16_gemm_within_float32_accumulation);
    tcase_add_test(tc, test_pure_bf16_stagnates_nearest_not_stochastic_or_kahan);
    tcase_add_test(tc, test_spectral_norm_vs_svd);
    tcase_add_test(tc, test_pv_round_bias);
    tcase_add_test(tc, test_fp8_gemm_operands);
    tcase_add_test(tc, test_bf16_linear_forward_backward);
    tcase_add_test(tc, test_norm_stats_rounded);
    tcase_add_test(tc, test_swiglu_cos_and_channel_amax);
    tcase_add_test(tc, test_lowp_keys);
    suite_add_tcase(s, tc);
    return s;
}
