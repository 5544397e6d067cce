/* lowp.c — bfloat16 and the OCP fp8 formats, emulated exactly (util/lowp.h). */
#include "util/lowp.h"

#include <math.h>
#include <string.h>

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint64_t bits_of_double(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double double_of(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define SIGN64 0x8000000000000000ull
#define INF64 0x7FF0000000000000ull

/* Function multiversioning: the loops below are compiled for AVX-512, AVX2 and the baseline,
 * and the loader picks the widest the CPU has. Integer and IEEE operations only (no sum, no
 * fused multiply-add: -std=c11 is -ffp-contract=off), so every version gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define LOWP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LOWP_CLONES
#endif

uint16_t lowp_bf16_bits(float x)
{
    const uint32_t u = bits_of(x);
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x0040);   // quiet, sign kept
    // c10::BFloat16's round_to_nearest_even: add 0x7FFF plus the kept part's lowest bit, so a
    // tie (low half 0x8000) carries only when that bit is 1; a carry into the exponent is the
    // next binade, or inf past the largest value
    const uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7FFFu + lsb) >> 16);
}

float lowp_bf16_value(uint16_t b) { return float_of((uint32_t)b << 16); }

float lowp_bf16(float x) { return lowp_bf16_value(lowp_bf16_bits(x)); }

float lowp_bf16_stochastic(float x, uint16_t r)
{
    if (isnan(x) || isinf(x)) return isnan(x) ? lowp_bf16(x) : x;
    // the magnitude's bits carry into the kept half with probability low/2¹⁶ (sign untouched)
    return lowp_bf16_value((uint16_t)((bits_of(x) + r) >> 16));
}

/* lowp_bf16's bits (as a float32 word) without a branch: NaN's quiet bit set and the low half
 * cleared, any other value rounded to nearest-even as lowp_bf16_bits does. */
static inline uint32_t bf16_word(uint32_t u)
{
    const uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
    return ((u & 0x7FFFFFFFu) > 0x7F800000u ? u | 0x00400000u : rounded) & 0xFFFF0000u;
}

LOWP_CLONES static void bf16_round_apart(const float *restrict x, float *restrict y, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = float_of(bf16_word(bits_of(x[i])));
}

void lowp_bf16_round(const float *x, float *y, size_t n)
{
    // one pointer, or two that do not overlap: either way the loop vectorises with no check
    if (x == y) lowp_bf16_round_inplace(y, n);
    else bf16_round_apart(x, y, n);
}

LOWP_CLONES static void bf16_round_inplace(float *x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] = float_of(bf16_word(bits_of(x[i])));
}

void lowp_bf16_round_inplace(float *x, size_t n) { bf16_round_inplace(x, n); }

/* One format: exponent and mantissa bits, bias (OFP8 rev. 1.0, Table 1). */
typedef struct {
    int ebits, mbits, bias;
    double max;
} fp8_def_t;

static const fp8_def_t FP8[2] = {
    [LOWP_E4M3] = {4, 3, 7, 448.0},       // S.1111.110 = 2⁸·1.75; S.1111.111 is NaN
    [LOWP_E5M2] = {5, 2, 15, 57344.0},    // S.11110.11 = 2¹⁵·1.75; S.11111.00 is inf
};

double lowp_fp8_max(lowp_fp8_t f) { return FP8[f].max; }

/* E4M3's only NaN S.1111.111; E5M2's quiet S.11111.11. */
static uint8_t fp8_nan(uint8_t sign) { return (uint8_t)(sign | 0x7F); }

static uint8_t fp8_overflow(lowp_fp8_t f, uint8_t sign, int sat)
{
    if (sat) return (uint8_t)(sign | (f == LOWP_E4M3 ? 0x7E : 0x7B));
    return f == LOWP_E4M3 ? fp8_nan(sign) : (uint8_t)(sign | 0x7C);
}

uint8_t lowp_fp8_bits(double x, lowp_fp8_t f, int sat)
{
    const fp8_def_t *d = &FP8[f];
    const uint8_t sign = signbit(x) ? 0x80 : 0x00;
    if (isnan(x)) return fp8_nan(sign);
    const double a = fabs(x);
    if (isinf(a)) return fp8_overflow(f, sign, sat);
    if (a == 0.0) return sign;
    const int emin = 1 - d->bias;   // the smallest normal exponent; subnormals share its quantum
    int e;
    frexp(a, &e);                   // a = m·2^e, m in [0.5, 1): a's exponent is e − 1
    if (e - 1 < emin) e = emin + 1;
    const double q = ldexp(1.0, e - 1 - d->mbits);   // the spacing of a's binade
    const double v = nearbyint(a / q) * q;            // to nearest, ties to even (a/q is exact)
    if (v > d->max) return fp8_overflow(f, sign, sat);
    if (v == 0.0) return sign;
    int ev;
    const double m = frexp(v, &ev);  // v may have rounded up into the next binade
    int field = ev - 1 + d->bias;
    int mant;
    if (field <= 0) {                // subnormal: v = mant · 2^(emin − mbits)
        field = 0;
        mant = (int)ldexp(v, d->mbits - emin);
    } else {
        mant = (int)ldexp(2.0 * m - 1.0, d->mbits);
    }
    return (uint8_t)(sign | (field << d->mbits) | mant);
}

double lowp_fp8_value(uint8_t b, lowp_fp8_t f)
{
    const fp8_def_t *d = &FP8[f];
    const double s = (b & 0x80) ? -1.0 : 1.0;
    const int field = (b & 0x7F) >> d->mbits, mant = b & ((1 << d->mbits) - 1);
    const int top = (1 << d->ebits) - 1;
    if (f == LOWP_E4M3 && field == top && mant == (1 << d->mbits) - 1) return NAN;
    if (f == LOWP_E5M2 && field == top) return mant ? NAN : s * INFINITY;
    if (field == 0) return s * ldexp((double)mant, 1 - d->bias - d->mbits);
    return s * ldexp(1.0 + ldexp((double)mant, -d->mbits), field - d->bias);
}

/* The magnitude bits of a float32 with NaNs as 0: a finite or infinite |x| orders as its bits. */
static inline uint32_t abs_bits(float x)
{
    const uint32_t m = bits_of(x) & 0x7FFFFFFFu;
    return m > 0x7F800000u ? 0u : m;
}

/* The largest abs_bits of x (n): an integer maximum, exact in any order, so it vectorises. */
LOWP_CLONES static uint32_t abs_bits_max(const float *x, size_t n)
{
    uint32_t m = 0;
#pragma omp simd reduction(max : m)
    for (size_t i = 0; i < n; i++) {
        const uint32_t b = abs_bits(x[i]);
        m = b > m ? b : m;
    }
    return m;
}

float lowp_fp8_scale(const float *x, size_t n, lowp_fp8_t f)
{
    // amax = max |x_i| ignoring NaN, as fmax does, by the magnitudes' bits
    const double amax = (double)float_of(abs_bits_max(x, n));
    if (!(amax > 0.0) || !isfinite(amax)) return 1.0f;
    return (float)(FP8[f].max / amax);
}

/* lowp_fp8_value(lowp_fp8_bits(s·x, f, 1), f) / s in float32 for each x (lowp_fp8_round), by
 * arithmetic on the float64 bits of a = s·x (exact: 24 × 24 ≤ 53 bits) instead of frexp/ldexp:
 * at or above the smallest normal 2^emin, round-to-nearest-even of the mantissa to mbits bits
 * (add half a quantum less one plus the kept part's lowest bit, then clear the dropped bits; a
 * carry is the next binade); below it, the fixed quantum 2^(emin − mbits) by adding and
 * subtracting 2^(52 + emin − mbits), whose ULP that quantum is (the FPU's own round-to-nearest-
 * even); then saturation at ±max, ±inf to ±max, NaN to the definition's NAN. Branch-free, so it
 * vectorises; the same bits as the definition on every input (tests/test_lowp.c sweeps them).
 * The format's numbers are constants of each caller (it is inlined), so the shifts are too. */
static inline void fp8_round_fast(const float *x, float *y, size_t n, int mbits, int bias,
                                  double max, float s)
{
    const int sh = 52 - mbits;
    const uint64_t low = (1ull << sh) - 1, half = low >> 1;
    const double normal = double_of((uint64_t)(1023 + 1 - bias) << 52);      // 2^emin
    const double magic = double_of((uint64_t)(1023 + 53 - bias - mbits) << 52);
    const double sd = s;
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        const double a = sd * (double)x[i];
        const uint64_t u = bits_of_double(a), sign = u & SIGN64, mag = u ^ sign;
        const double am = double_of(mag);
        const double vn = double_of((mag + half + ((mag >> sh) & 1)) & ~low);
        const double vs = (am + magic) - magic;
        double v = am < normal ? vs : vn;
        v = v > max ? max : v;
        v = mag > INF64 ? (double)NAN : double_of(bits_of_double(v) | sign);
        y[i] = (float)(v / sd);
    }
}

LOWP_CLONES static void fp8_round_e4m3(const float *x, float *y, size_t n, float s)
{
    fp8_round_fast(x, y, n, 3, 7, 448.0, s);
}

LOWP_CLONES static void fp8_round_e5m2(const float *x, float *y, size_t n, float s)
{
    fp8_round_fast(x, y, n, 2, 15, 57344.0, s);
}

void lowp_fp8_round(const float *x, float *y, size_t n, lowp_fp8_t f, float s)
{
    if (f == LOWP_E4M3) fp8_round_e4m3(x, y, n, s);
    else fp8_round_e5m2(x, y, n, s);
}
