/* rope.h — rotary position embedding (Su et al. 2021, RoFormer eq. 34; Touvron et al. 2023).
 *
 * Rows are (B,T,C) with head h in columns [h·Dh, (h+1)·Dh), Dh = C/H even; row n is position
 * t = n mod T of its sequence. Each head's pair of dimensions (2i, 2i+1), i < Dh/2, is turned by
 * the angle t·θ_i, θ_i = base^(−2i/Dh):
 *
 *     y_2i   = x_2i·cos(tθ_i) − x_2i+1·sin(tθ_i)
 *     y_2i+1 = x_2i·sin(tθ_i) + x_2i+1·cos(tθ_i)
 *
 * RoFormer's interleaved pairs, which Meta's LLaMA code (apply_rotary_emb: view_as_complex of
 * (…, Dh/2, 2)) also uses; Hugging Face's rotate_half pairs (i, i + Dh/2) instead, which is the
 * same model with W_Q's and W_K's columns permuted (docs/design.md §6i). A rotation keeps norms,
 * and q_t·k_s after rotation depends on t − s only.
 */
#ifndef STABILITY_ROPE_H
#define STABILITY_ROPE_H

#include <stddef.h>
#include "util/real.h"

/* The angles' cosines and sines: cos_t, sin_t (T, Dh/2), entry [t][i] of angle t·base^(−2i/Dh)
 * (computed in double: t times the frequency 1/base^(2i/Dh), as the LLaMA reference does). */
void rope_tables(real *cos_t, real *sin_t, int T, int Dh, double base);

/* out (B·T, C) = x rotated (out may be x). Tables of at least T positions. */
void rope_forward(real *out, const real *x, const real *cos_t, const real *sin_t, size_t B,
                  int T, int C, int H);

/* The backward, the transposed rotation: dx (B·T, C) = Rᵀ·dout, OVERWRITTEN (dx may be
 * dout: in place). */
void rope_backward(real *dx, const real *dout, const real *cos_t, const real *sin_t, size_t B,
                   int T, int C, int H);

#endif
