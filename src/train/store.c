/* store.c — bfloat16_pure's weight store (train/store.h). */
#include "train/store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/lowp.h"

int store_init(store_t *s, const config_t *cfg, size_t n)
{
    memset(s, 0, sizeof *s);
    s->rounding = cfg->train.rounding;
    s->kahan = cfg->train.kahan;
    s->n = n;
    s->prev = malloc((n ? n : 1) * sizeof(real));
    if (s->kahan) s->comp = calloc(n ? n : 1, sizeof(real));
    return !s->prev || (s->kahan && !s->comp);
}

void store_free(store_t *s)
{
    free(s->prev);
    free(s->comp);
    memset(s, 0, sizeof *s);
}

void store_begin(store_t *s, const real *params)
{
    memcpy(s->prev, params, s->n * sizeof(real));
}

double store_end(store_t *s, real *params, gsl_rng *rng)
{
    size_t moved = 0, lost = 0;
    unsigned long bits = 0;
    for (size_t i = 0; i < s->n; i++) {
        const float w = (float)s->prev[i], u = (float)params[i] - w;   // the float32 update
        float next;
        if (s->kahan) {
            const float y = u + (float)s->comp[i];
            next = lowp_bf16(w + y);
            s->comp[i] = y - (next - w);
        } else if (s->rounding == ROUNDING_STOCHASTIC) {
            if (i % 2 == 0) bits = gsl_rng_get(rng);   // mt19937: 32 bits, two draws of 16
            next = lowp_bf16_stochastic((float)params[i], (uint16_t)(i % 2 ? bits : bits >> 16));
        } else {
            next = lowp_bf16((float)params[i]);
        }
        params[i] = next;
        moved += u != 0.0f;
        lost += u != 0.0f && next == w;
    }
    return moved ? (double)lost / (double)moved : NAN;
}
