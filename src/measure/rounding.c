/* rounding.c — softmax·V's rounding bias per head (measure/rounding.h). */
#include "measure/rounding.h"

#include <math.h>

void rounding_pv_bias(const probe_axes_t *ax, const model_t *m, double *out)
{
    const size_t LH = (size_t)ax->L * ax->nhead;
    const int B = m->batch.B, H = m->H;
    for (size_t i = 0; i < LH; i++) out[i] = NAN;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        for (int l = 0; l < st->L; l++) {
            for (int i = 0; i < st->nsub; i++) {
                const sublayer_t *sl = stack_sublayer(st, l, i);
                if (sl->rule.kind == SUB_FFN || !sl->rbias) continue;
                const int first = sl->rule.kind == SUB_CROSS_ATTN ? H : 0;   // "cross.h0"
                for (int h = 0; h < H && first + h < ax->nhead; h++) {
                    double sum = 0.0;
                    for (int b = 0; b < B; b++) sum += sl->rbias[(size_t)b * H + h];
                    out[(size_t)(st->first_row + l) * ax->nhead + first + h] = sum / B;
                }
            }
        }
    }
}
