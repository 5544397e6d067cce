/* real.h — the element type of the numerical core (docs/design.md §2, "One core, two
 * precisions").
 *
 * src/nn, src/model, src/measure and src/train are compiled twice by the Makefile: as they are
 * (real = double, the names as written) and with -DSTAB_REAL_FLOAT (real = float, every public
 * name of those folders renamed NAME_f32 by build/f32/names.h, made from `nm` of the double
 * objects). Tensors (parameters, gradients, activations, Adam's moments) are `real`; scalars
 * taken from the config, sums inside reductions and the values a file records are double in
 * both (per-row values on their way there, e.g. each token's loss, sit in `real` buffers). In the double build `real` is `double`, so that build is the code as it was.
 */
#ifndef STABILITY_REAL_H
#define STABILITY_REAL_H

#ifdef STAB_REAL_FLOAT
typedef float real;
#define REAL_IS_FLOAT 1
#else
typedef double real;
#define REAL_IS_FLOAT 0
#endif

#endif
