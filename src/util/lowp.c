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

void lowp_bf16_round(const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = lowp_bf16(x[i]);
}

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

float lowp_fp8_scale(const float *x, size_t n, lowp_fp8_t f)
{
    double amax = 0.0;
    for (size_t i = 0; i < n; i++) amax = fmax(amax, fabs((double)x[i]));
    if (!(amax > 0.0) || !isfinite(amax)) return 1.0f;
    return (float)(FP8[f].max / amax);
}

void lowp_fp8_round(const float *x, float *y, size_t n, lowp_fp8_t f, float s)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)(lowp_fp8_value(lowp_fp8_bits((double)s * x[i], f, 1), f) / s);
}
