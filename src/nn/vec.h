/* vec.h — 16 bytes of `real` at a time for the element-wise loops: two doubles, or four floats
 * in the float32 core (util/real.h). GCC/Clang vector extensions: SSE2 on x86-64, which every
 * x86-64 CPU has, so no -march flag; generic code elsewhere.
 *
 * Every lane does exactly the scalar operation on its own element: IEEE +, −, ×, ÷ and √ are
 * correctly rounded, so a lane's result is the scalar result bit for bit when the scalar
 * expression is evaluated in `real` (the float64 core: always; in the float32 core a few tails,
 * in norm.c and loss.c, evaluate in double what the lanes do in float, so a tail element may
 * round differently from a lane: still fixed, since which elements are tail depends on the
 * length alone). Nothing here reorders a sum or
 * fuses a multiply-add (the build is -std=c11, i.e. -ffp-contract=off, and no FMA is available
 * without -march anyway). Reductions stay scalar and in their order. A loop's parts must start at
 * multiples of VR_LANES so that which elements take the scalar tail does not depend on the split.
 */
#ifndef STABILITY_VEC_H
#define STABILITY_VEC_H

#include <stdint.h>
#include <string.h>
#include <math.h>
#include "util/real.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define VR_LANES ((int)(16 / sizeof(real)))

typedef real vreal __attribute__((vector_size(16)));
#if REAL_IS_FLOAT
typedef int32_t vrint __attribute__((vector_size(16)));
#else
typedef int64_t vrint __attribute__((vector_size(16)));
#endif

static inline vreal vr_load(const real *p)
{
    vreal v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vr_store(real *p, vreal v)
{
    memcpy(p, &v, sizeof v);
}

static inline vreal vr_set1(real x)
{
    vreal v;
    for (int i = 0; i < VR_LANES; i++) v[i] = x;
    return v;
}

/* Lane-wise x > 0 ? x : +0 (NaN → +0), as the scalar `x > 0.0 ? x : 0.0`. */
static inline vreal vr_relu(vreal x)
{
    const vreal zero = vr_set1(0);
    return (vreal)((vrint)x & (vrint)(x > zero));
}

/* Lane-wise x > 0 ? d : +0, as the scalar `x > 0.0 ? d : 0.0`. */
static inline vreal vr_select_pos(vreal x, vreal d)
{
    const vreal zero = vr_set1(0);
    return (vreal)((vrint)d & (vrint)(x > zero));
}

/* Lane-wise correctly rounded square root (the same value as sqrt() / sqrtf()). */
static inline vreal vr_sqrt(vreal x)
{
#if defined(__SSE2__) && REAL_IS_FLOAT
    return (vreal)_mm_sqrt_ps((__m128)x);
#elif defined(__SSE2__)
    return (vreal)_mm_sqrt_pd((__m128d)x);
#else
    vreal r;
    for (int i = 0; i < VR_LANES; i++) r[i] = sqrt(x[i]);
    return r;
#endif
}

#endif
