/* store.h — how train.precision = bfloat16_pure stores an updated weight (docs/design.md, "Low
 * precision, emulated"): the optimizer computes θ' = θ + u in float32 from θ, a bfloat16 value,
 * and the store rounds it back to bfloat16:
 *   nearest:     θ ← bf16(θ')                          (round-to-nearest-even)
 *   stochastic:  θ ← bf16_sr(θ')                       (E[θ] = θ'; Gupta et al. 2015, Zamirai
 *                                                        et al. 2020), 16 random bits per weight
 *                                                        from the run's rng_init (checkpointed)
 *   kahan:       y = u + c;  θ ← bf16(θ + y);  c ← y − (θ_new − θ)   (Kahan summation of the
 *                                                        updates; Zamirai et al. 2020, Alg. 2)
 * and counts the stagnation: the share of the non-zero updates (u ≠ 0 in float32) that left the
 * stored weight as it was (|u| under half a bfloat16 ULP, Ozkara et al. 2025). The
 * compensation is part of the checkpoint (io/h5io_checkpoint.c).
 */
#ifndef STABILITY_STORE_H
#define STABILITY_STORE_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "config/config.h"
#include "util/real.h"

typedef struct {
    rounding_t rounding;
    int kahan;
    size_t n;
    real *prev;   /* (n) θ before the update */
    real *comp;   /* (n) Kahan's compensation c, or NULL */
} store_t;

/* Set up the store of cfg->train for n weights (c = 0). 0 or 1 (OOM). */
int store_init(store_t *s, const config_t *cfg, size_t n);

/* Free its buffers. */
void store_free(store_t *s);

/* Remember θ (n) before the optimizer's update. */
void store_begin(store_t *s, const real *params);

/* Round the updated params (n) back to bfloat16 by the store's rule (rng: the stochastic
 * draws, one gsl_rng_get per two weights, in index order). Returns the stagnation: lost
 * non-zero updates / non-zero updates (NaN when no update was non-zero). */
double store_end(store_t *s, real *params, gsl_rng *rng);

#endif
