/* vec.h — two doubles at a time for the element-wise loops (GCC/Clang vector extensions: SSE2 on
 * x86-64, which every x86-64 CPU has, so no -march flag; generic code elsewhere).
 *
 * Every lane does exactly the scalar operation on its own element: IEEE +, −, ×, ÷ and √ are
 * correctly rounded, so a lane's result is the scalar result bit for bit. Nothing here reorders a
 * sum or fuses a multiply-add (the build is -std=c11, i.e. -ffp-contract=off, and no FMA is
 * available without -march anyway). Reductions stay scalar and in their order.
 */
#ifndef STABILITY_VEC_H
#define STABILITY_VEC_H

#include <stdint.h>
#include <string.h>
#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2i __attribute__((vector_size(16)));

static inline v2d v2_load(const double *p)
{
    v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v2_store(double *p, v2d v)
{
    memcpy(p, &v, sizeof v);
}

static inline v2d v2_set1(double x)
{
    return (v2d){x, x};
}

/* Lane-wise x > 0 ? x : +0 (NaN → +0), as the scalar `x > 0.0 ? x : 0.0`. */
static inline v2d v2_relu(v2d x)
{
    const v2d zero = {0.0, 0.0};
    return (v2d)((v2i)x & (v2i)(x > zero));
}

/* Lane-wise x > 0 ? d : +0, as the scalar `x > 0.0 ? d : 0.0`. */
static inline v2d v2_select_pos(v2d x, v2d d)
{
    const v2d zero = {0.0, 0.0};
    return (v2d)((v2i)d & (v2i)(x > zero));
}

/* Lane-wise correctly rounded square root (the same value as sqrt()). */
static inline v2d v2_sqrt(v2d x)
{
#if defined(__SSE2__)
    return (v2d)_mm_sqrt_pd((__m128d)x);
#else
    return (v2d){sqrt(x[0]), sqrt(x[1])};
#endif
}

#endif
