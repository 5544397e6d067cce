/* lowp.h — low-precision number formats, emulated exactly on float32 values (docs/design.md,
 * "Low precision, emulated"): bfloat16 by round-to-nearest-even (the bits of PyTorch's
 * `torch.Tensor.to(torch.bfloat16)`) or stochastic rounding, and the OCP 8-bit floating-point
 * formats E4M3 and E5M2 (OCP "8-bit Floating Point Specification (OFP8)", rev. 1.0, 2023) with a
 * per-tensor scale. A rounded value is kept as the float32 it equals (every bfloat16 and fp8 value
 * is one), so the float32 core computes on it unchanged. Pure functions; no I/O.
 */
#ifndef STABILITY_LOWP_H
#define STABILITY_LOWP_H

#include <stddef.h>
#include <stdint.h>

/* The upper 16 bits of x rounded to nearest, ties to even (PyTorch's round_to_nearest_even):
 * ±inf stay ±inf, a finite value past the largest bfloat16 rounds to ±inf, subnormals round as
 * any other value, NaN gives a quiet NaN of its sign. */
uint16_t lowp_bf16_bits(float x);

/* The float32 of bfloat16 bits b (exact: b in the upper half, zeros below). */
float lowp_bf16_value(uint16_t b);

/* x rounded to bfloat16 (nearest-even) as a float32. */
float lowp_bf16(float x);

/* x rounded to bfloat16 stochastically (Gupta et al. 2015; Zamirai et al. 2020): up with
 * probability (distance to the value below)/(gap), from r, the 16 random low bits of a uniform
 * draw — E[result] = x exactly for finite x whose neighbours are finite. NaN and ±inf stay. */
float lowp_bf16_stochastic(float x, uint16_t r);

/* x (n) rounded to bfloat16, nearest-even, into y (n); y may be x (else they must not overlap).
 * The bits of lowp_bf16 element by element, NaN's payload included, without a branch. */
void lowp_bf16_round(const float *x, float *y, size_t n);

/* x (n) rounded to bfloat16 in place, as lowp_bf16_round(x, x, n). */
void lowp_bf16_round_inplace(float *x, size_t n);

/* The OCP 8-bit formats: E4M3 (bias 7, largest 448, no infinities, NaN S.1111.111) and E5M2
 * (bias 15, largest 57344, ±inf S.11111.00, NaN S.11111.{01,10,11}), as IEEE 754 would. */
typedef enum { LOWP_E4M3 = 0, LOWP_E5M2 = 1 } lowp_fp8_t;

/* The largest finite value of the format (448 or 57344). */
double lowp_fp8_max(lowp_fp8_t f);

/* The code of x rounded to nearest, ties to even. Past the largest finite value (after
 * rounding): sat = 1 gives ±max (the OCP spec's saturating conversion); sat = 0 gives NaN in E4M3
 * (0x7F | sign) and ±inf in E5M2. ±inf: ±max with sat, else NaN / ±inf. NaN: 0x7F or 0xFF. */
uint8_t lowp_fp8_bits(double x, lowp_fp8_t f, int sat);

/* The value of code b (NaN for a NaN code, ±inf for E5M2's). */
double lowp_fp8_value(uint8_t b, lowp_fp8_t f);

/* The per-tensor scale of x (n) from its current amax (Micikevicius et al. 2022, "FP8 Formats
 * for Deep Learning", §3: per-tensor scaling; the current, not Transformer Engine's delayed,
 * amax): s = max_f / amax, so the largest |x| maps to the format's largest value; 1 when amax
 * is 0 or not finite. */
float lowp_fp8_scale(const float *x, size_t n, lowp_fp8_t f);

/* x (n) through the format with scale s: y = value(bits(s·x, saturating)) / s, in float32;
 * y may be x. Computed on the float64 bits of s·x, the same bits as that definition. */
void lowp_fp8_round(const float *x, float *y, size_t n, lowp_fp8_t f, float s);

#endif
