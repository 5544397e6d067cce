/* linear.h — the affine map y = x·W + b (W stored [in][out], docs/design.md §5), through BLAS. */
#ifndef STABILITY_LINEAR_H
#define STABILITY_LINEAR_H

#include "util/real.h"

#include <stddef.h>

/* out (N,OC) = inp (N,IC) · W (IC,OC) + b (OC); b may be NULL. */
void linear_forward(real *out, const real *inp, const real *W, const real *b,
                    size_t N, size_t IC, size_t OC);

/* Accumulates: dinp (N,IC) += dout·Wᵀ, dW (IC,OC) += inpᵀ·dout, db (OC) += Σ_rows dout.
 * dinp or db may be NULL (not needed / no bias). */
void linear_backward(real *dinp, real *dW, real *db, const real *dout,
                     const real *inp, const real *W, size_t N, size_t IC, size_t OC);

/* As linear_backward, but OVERWRITES dinp (N,IC) = dout·Wᵀ (dW, db still accumulate): the bits
 * of zeroing dinp and accumulating, without the zeroing pass. */
void linear_backward_set(real *dinp, real *dW, real *db, const real *dout,
                         const real *inp, const real *W, size_t N, size_t IC, size_t OC);

#endif
