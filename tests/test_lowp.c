/* test_lowp.c — util/lowp.h: bfloat16 rounding bit for bit against PyTorch's
 * `.to(torch.bfloat16)` (/usr/bin/python3, torch 1.13), the fp8 formats against a table made
 * here from the OCP OFP8 definitions, stochastic rounding's mean. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_rng.h>
#include "tests.h"
#include "util/lowp.h"

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Every upper half (all exponents and signs: zeros, subnormals, inf, NaN payloads) with the
 * low halves that decide rounding: 0 (exact), 0x7FFF (just below a tie), 0x8000 (the tie),
 * 0x8001 (just above), 0xFFFF and one pseudo-random half. */
#define LOW_CASES 6
static uint32_t pattern(uint32_t i, uint64_t *state)
{
    static const uint32_t low[LOW_CASES - 1] = {0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    const uint32_t hi = i / LOW_CASES, k = i % LOW_CASES;
    if (k < LOW_CASES - 1) return hi << 16 | low[k];
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return hi << 16 | (uint32_t)(*state >> 48);
}

START_TEST(test_bf16_matches_torch)
{
    const uint32_t n = 65536u * LOW_CASES;
    uint32_t *in = malloc(n * sizeof *in);
    uint16_t *torch = malloc(n * sizeof *torch);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(torch);
    uint64_t state = 12345;
    for (uint32_t i = 0; i < n; i++) in[i] = pattern(i, &state);
    char dir[64], pin[128], pout[128], cmd[1024];
    snprintf(dir, sizeof dir, "/tmp/stability_lowp.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(pin, sizeof pin, "%s/in.bin", dir);
    snprintf(pout, sizeof pout, "%s/out.bin", dir);
    FILE *f = fopen(pin, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(in, sizeof *in, n, f), n);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import numpy as np, torch; "
             "x = torch.from_numpy(np.fromfile('%s', dtype=np.float32)); "
             "x.to(torch.bfloat16).view(torch.int16).numpy().tofile('%s')\"", pin, pout);
    ck_assert_int_eq(system(cmd), 0);
    f = fopen(pout, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(torch, sizeof *torch, n, f), n);
    fclose(f);
    unlink(pin);
    unlink(pout);
    rmdir(dir);
    uint32_t ties = 0, subnormal = 0, nan = 0, differ = 0;
    for (uint32_t i = 0; i < n; i++) {
        const float x = float_of(in[i]);
        const uint16_t b = lowp_bf16_bits(x);
        if (isnan(x)) {   // NaN stays NaN (torch's vector and scalar paths differ in payload)
            nan++;
            differ += !isnan(lowp_bf16_value(b)) || !isnan(lowp_bf16_value(torch[i]));
            continue;
        }
        ties += (in[i] & 0xFFFF) == 0x8000;
        subnormal += fpclassify(x) == FP_SUBNORMAL;
        if (b != torch[i] && differ++ < 5)
            fprintf(stderr, "bf16 of %08x: %04x, torch %04x\n", in[i], b, torch[i]);
    }
    ck_assert_uint_eq(differ, 0);
    ck_assert_uint_gt(ties, 60000);
    ck_assert_uint_gt(subnormal, 1000);
    ck_assert_uint_gt(nan, 1000);
    // by hand: 1 + 2⁻⁸ is the tie between 1 and 1 + 2⁻⁷: to even, 1; 1 + 3·2⁻⁸ to 1 + 2⁻⁶
    ck_assert_uint_eq(lowp_bf16_bits(1.0f + 0x1p-8f), 0x3F80);
    ck_assert_uint_eq(lowp_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3F82);
    ck_assert_uint_eq(lowp_bf16_bits(INFINITY), 0x7F80);
    ck_assert_uint_eq(lowp_bf16_bits(-INFINITY), 0xFF80);
    ck_assert_uint_eq(lowp_bf16_bits(0x1.FFFFFEp127f), 0x7F80);   // FLT_MAX rounds to inf
    free(in);
    free(torch);
}
END_TEST

/* The value of every code, from the definition (OFP8 rev. 1.0, §5.1): (−1)^S·2^(E−bias)·1.M,
 * or 2^(1−bias)·0.M for E = 0; E4M3: S.1111.111 NaN, no inf; E5M2: E = 31 inf (M = 0) or NaN. */
static double table_value(int b, int e4m3)
{
    const int mb = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    const int E = (b & 0x7F) >> mb, M = b & ((1 << mb) - 1), top = e4m3 ? 15 : 31;
    const double s = b & 0x80 ? -1 : 1;
    if (e4m3 && E == 15 && M == 7) return NAN;
    if (!e4m3 && E == top) return M ? NAN : s * INFINITY;
    double frac = 0;
    for (int k = 0; k < mb; k++) if (M >> (mb - 1 - k) & 1) frac += pow(2, -(k + 1));
    return E == 0 ? s * pow(2, 1 - bias) * frac : s * pow(2, E - bias) * (1 + frac);
}

static void check_format(lowp_fp8_t f)
{
    const int e4m3 = f == LOWP_E4M3;
    double pos[128];   // the non-negative finite values, ascending with the code
    int npos = 0;
    for (int b = 0; b < 256; b++) {
        const double v = table_value(b, e4m3), got = lowp_fp8_value((uint8_t)b, f);
        if (isnan(v)) { ck_assert(isnan(got)); ck_assert(isnan(lowp_fp8_value(lowp_fp8_bits(v, f, 0), f))); continue; }
        ck_assert_double_eq(got, v);
        if (isinf(v)) continue;
        if (v != 0.0 || b == 0) ck_assert_uint_eq(lowp_fp8_bits(v, f, 0), (unsigned)b);   // round trip
        if (b < 0x80) pos[npos++] = v;
    }
    ck_assert_int_eq(npos, e4m3 ? 127 : 124);
    ck_assert_double_eq(pos[npos - 1], lowp_fp8_max(f));
    for (int i = 0; i + 1 < npos; i++) {   // the midpoints: ties to the even code, else nearest
        const double mid = (pos[i] + pos[i + 1]) / 2, eps = (pos[i + 1] - pos[i]) / 64;
        const unsigned even = i % 2 == 0 ? (unsigned)i : (unsigned)i + 1;
        ck_assert_uint_eq(lowp_fp8_bits(mid, f, 0), even);
        ck_assert_uint_eq(lowp_fp8_bits(-mid, f, 0), 0x80 | even);
        ck_assert_uint_eq(lowp_fp8_bits(mid - eps, f, 0), (unsigned)i);
        ck_assert_uint_eq(lowp_fp8_bits(mid + eps, f, 0), (unsigned)i + 1);
    }
    // past the largest value: the tie with the next binade's first step goes to even (max is
    // odd-coded ...110 in E4M3, ...011 in E5M2), beyond it overflow
    const double max = pos[npos - 1], step = max - pos[npos - 2];
    const unsigned maxc = (unsigned)npos - 1, over = e4m3 ? 0x7F : 0x7C;
    ck_assert_uint_eq(lowp_fp8_bits(max + step / 4, f, 0), maxc);
    ck_assert_uint_eq(lowp_fp8_bits(max + step, f, 0), over);
    ck_assert_uint_eq(lowp_fp8_bits(max + step, f, 1), maxc);
    ck_assert_uint_eq(lowp_fp8_bits(-INFINITY, f, 1), 0x80 | maxc);
    ck_assert_uint_eq(lowp_fp8_bits(-INFINITY, f, 0), 0x80 | over);
    ck_assert_uint_eq(lowp_fp8_bits(pos[1] / 2, f, 0), 0);          // half the smallest: to 0
    ck_assert_uint_eq(lowp_fp8_bits(pos[1] * 0.51, f, 0), 1);
}

START_TEST(test_fp8_formats_match_the_definition)
{
    check_format(LOWP_E4M3);
    check_format(LOWP_E5M2);
    // by hand: E4M3 0x7E = 2⁸·1.75 = 448, 0x08 = 2⁻⁶, 0x01 = 2⁻⁹; E5M2 0x7B = 57344, 0x01 = 2⁻¹⁶
    ck_assert_double_eq(lowp_fp8_value(0x7E, LOWP_E4M3), 448.0);
    ck_assert_double_eq(lowp_fp8_value(0x08, LOWP_E4M3), 0x1p-6);
    ck_assert_double_eq(lowp_fp8_value(0x01, LOWP_E4M3), 0x1p-9);
    ck_assert_double_eq(lowp_fp8_value(0x7B, LOWP_E5M2), 57344.0);
    ck_assert_double_eq(lowp_fp8_value(0x01, LOWP_E5M2), 0x1p-16);
    ck_assert(isinf(lowp_fp8_value(0x7C, LOWP_E5M2)));
    // per-tensor scaling: amax 3.5 maps to 448; 3.5 and 0.4375 = 3.5/8 survive exactly
    const float x[3] = {3.5f, -0.4375f, 0.001f};
    float y[3];
    const float s = lowp_fp8_scale(x, 3, LOWP_E4M3);
    ck_assert_float_eq(s, 128.0f);
    lowp_fp8_round(x, y, 3, LOWP_E4M3, s);
    ck_assert_float_eq(y[0], 3.5f);
    ck_assert_float_eq(y[1], -0.4375f);
    ck_assert_float_eq(y[2], 0.125f / 128.0f);   // 0.128 → 0.125 (spacing 2⁻⁶ there)
}
END_TEST

/* Stochastic rounding is unbiased: x = 1 + 2⁻¹⁰ sits a quarter of the way from 1 to 1 + 2⁻⁷ (bf16
 * neighbours), so it rounds up with probability 1/8; the mean of N = 2²⁰ draws is x within
 * 5 standard errors, 5·2⁻⁷·√(p(1−p)/N) = 2.0·10⁻⁵, where nearest rounding is off by 2⁻¹⁰ ≈ 9.8·10⁻⁴. */
START_TEST(test_bf16_stochastic_unbiased)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    const float xs[3] = {1.0f + 0x1p-10f, -3.0e-3f, 0x1.234566p-130f};   // incl. a subnormal
    for (int k = 0; k < 3; k++) {
        const float x = xs[k];
        uint32_t u;
        memcpy(&u, &x, sizeof u);
        // the bfloat16 neighbours: truncated (toward 0), and one step further from 0
        const float lo = lowp_bf16_value((uint16_t)(u >> 16));
        const float hi = lowp_bf16_value((uint16_t)((u >> 16) + 1));
        const double gap = fabs((double)hi - lo), p = fabs((double)x - lo) / gap;
        const long N = 1L << 20;
        double sum = 0;
        for (long i = 0; i < N; i++) {
            const float y = lowp_bf16_stochastic(x, (uint16_t)(gsl_rng_get(r) >> 16));
            ck_assert(y == lo || y == hi);
            sum += y;
        }
        const double mean = sum / N, se = gap * sqrt(p * (1 - p) / N);
        ck_assert_double_lt(fabs(mean - x), 5 * se);
        ck_assert_double_gt(fabs((double)lowp_bf16(x) - x), 20 * se);
    }
    ck_assert(isnan(lowp_bf16_stochastic(NAN, 0xFFFF)));
    ck_assert_float_eq(lowp_bf16_stochastic(INFINITY, 0xFFFF), INFINITY);
    gsl_rng_free(r);
}
END_TEST

/* Pattern i of the strided sweep of every float32 bit pattern: i·2⁸ (all signs, exponents —
 * zeros, subnormals, ±inf, NaNs — and the 15 upper mantissa bits, which hold every bf16 and fp8
 * tie), on odd i with a pseudo-random low byte (values between the ties). */
static float sweep_value(uint32_t i)
{
    const uint32_t low = i & 1 ? (uint32_t)(i * 2654435761u) >> 24 : 0;
    return float_of(i << 8 | low);
}

#define SWEEP (1u << 24)

/* The vectorised array roundings equal their definitions on every pattern of the sweep, bit
 * for bit (NaN's bits too): lowp_fp8_round (float64 bit arithmetic) against
 * value(bits(s·x, saturating)) / s of lowp_fp8_bits/lowp_fp8_value (frexp, ldexp, nearbyint),
 * for both formats at scales 1 (ties at the sweep's own patterns), 2⁻¹²⁰ (the float32 normals
 * into fp8's subnormals and zero) and 0.37 (no power of two), into another array and in place;
 * lowp_bf16_round against lowp_bf16. */
START_TEST(test_fast_rounding_matches_the_definition)
{
    float *x = malloc(SWEEP * sizeof *x), *y = malloc(SWEEP * sizeof *y);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(y);
    for (uint32_t i = 0; i < SWEEP; i++) x[i] = sweep_value(i);
    const float scales[3] = {1.0f, 0x1p-120f, 0.37f};
    uint32_t ties = 0, subnormal = 0, nan = 0, saturated = 0;
    for (int f = LOWP_E4M3; f <= LOWP_E5M2; f++) {
        const int mbits = f == LOWP_E4M3 ? 3 : 2;
        const double smallest_normal = f == LOWP_E4M3 ? 0x1p-6 : 0x1p-14;
        for (int k = 0; k < 3; k++) {
            const float s = scales[k];
            lowp_fp8_round(x, y, SWEEP, (lowp_fp8_t)f, s);
            uint32_t differ = 0;
            for (uint32_t i = 0; i < SWEEP; i++) {
                const double a = (double)s * x[i];
                const float ref = (float)(lowp_fp8_value(lowp_fp8_bits(a, f, 1), f) / s);
                if (memcmp(&ref, &y[i], sizeof ref) && differ++ < 5)
                    fprintf(stderr, "fp8 %d, s %a, x %a: %a, definition %a\n", f, s, x[i], y[i], ref);
                const double m = fabs(a);
                nan += isnan(m);
                saturated += m > lowp_fp8_max(f) && isfinite(m);
                subnormal += m > 0 && m < smallest_normal;
                if (k == 0 && m >= smallest_normal && m <= lowp_fp8_max(f)) {
                    uint32_t u;
                    memcpy(&u, &x[i], sizeof u);
                    const uint32_t drop = 23 - (uint32_t)mbits;
                    ties += (u & ((1u << drop) - 1)) == 1u << (drop - 1);   // half a step: a tie
                }
            }
            ck_assert_uint_eq(differ, 0);
        }
    }
    // every tie of fp8's normals at s = 1 is in the sweep: E4M3 15 binades × 8 steps × 2 signs
    // less the 2 × 2 above 448, E5M2 30 binades × 4 × 2 less the 2 × 1 above 57344
    ck_assert_uint_eq(ties, 236 + 238);
    ck_assert_uint_gt(subnormal, 100000);
    ck_assert_uint_gt(nan, 100000);
    ck_assert_uint_gt(saturated, 100000);
    // in place: the same values
    memcpy(y, x, SWEEP * sizeof *x);
    float *z = malloc(SWEEP * sizeof *z);
    ck_assert_ptr_nonnull(z);
    lowp_fp8_round(x, z, SWEEP, LOWP_E4M3, 0.37f);
    lowp_fp8_round(y, y, SWEEP, LOWP_E4M3, 0.37f);
    ck_assert_int_eq(memcmp(y, z, SWEEP * sizeof *y), 0);
    // bfloat16: apart and in place
    lowp_bf16_round(x, y, SWEEP);
    uint32_t differ = 0;
    for (uint32_t i = 0; i < SWEEP; i++) {
        const float ref = lowp_bf16(x[i]);
        differ += memcmp(&ref, &y[i], sizeof ref) != 0;
    }
    ck_assert_uint_eq(differ, 0);
    lowp_bf16_round(x, x, SWEEP);
    ck_assert_int_eq(memcmp(x, y, SWEEP * sizeof *x), 0);
    free(x);
    free(y);
    free(z);
}
END_TEST

Suite *lowp_suite(void)
{
    Suite *s = suite_create("lowp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fp8_formats_match_the_definition);
    tcase_add_test(tc, test_bf16_stochastic_unbiased);
    tcase_add_test(tc, test_fast_rounding_matches_the_definition);
    suite_add_tcase(s, tc);
    // PyTorch's rounding, through /usr/bin/python3: a test case of its own, so a build whose
    // system libraries are hidden (tests/test_cluster_build.sh: numpy cannot load libblas
    // there) leaves it out by its tag, CK_EXCLUDE_TAGS=torch, and runs every other check
    TCase *tt = tcase_create("torch");
    tcase_set_tags(tt, "torch");
    tcase_set_timeout(tt, 120);
    tcase_add_test(tt, test_bf16_matches_torch);
    suite_add_tcase(s, tt);
    return s;
}
