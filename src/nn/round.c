/* round.c — the core's bfloat16 rounding policy (nn/round.h). */
#include "nn/round.h"

#include "util/lowp.h"

static round_policy_t policy;   // every place off: the float32 and float64 runs

void round_policy_set(const round_policy_t *p)
{
    static const round_policy_t off = {0};
    policy = p ? *p : off;
}

const round_policy_t *round_policy(void) { return &policy; }

void round_bf16(real *x, size_t n)
{
#if REAL_IS_FLOAT
    lowp_bf16_round_inplace(x, n);   // the same bits, vectorised (util/lowp.h)
#else
    for (size_t i = 0; i < n; i++) x[i] = lowp_bf16((float)x[i]);
#endif
}
