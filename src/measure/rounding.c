/* rounding.c — softmax·V's rounding bias per head (measure/rounding.h). */
#include "measure/rounding.h"

#include <math.h>
#include <string.h>

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

/* Positions of row b that the statistics count (as measure/dynamics.c): every position of an
 * lm, the non-padding ones of an encoder or decoder. */
static int counted(const model_t *m, const layer_stack_t *st, int b)
{
    if (m->nstacks == 1) return m->batch.T;
    return st->kind == STACK_ENC ? m->src_len[b] : m->tgt_len[b];
}

void rounding_channel_amax(const probe_axes_t *ax, const model_t *m, double *out)
{
    const int C = m->C, B = m->batch.B;
    for (size_t i = 0; i < (size_t)ax->L * ax->nchannel; i++) out[i] = NAN;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        const int T = st->kind == STACK_ENC ? m->batch.S : m->batch.T;
        for (int l = 0; l < st->L && ax->nchannel == C; l++) {
            const real *x = stack_sublayer(st, l, st->nsub - 1)->out;   // (B·T, C)
            double *row = out + (size_t)(st->first_row + l) * C;
            for (int c = 0; c < C; c++) row[c] = 0.0;
            for (int b = 0; b < B; b++)
                for (int t = 0; t < counted(m, st, b); t++) {
                    const real *xr = x + ((size_t)b * T + t) * C;
                    for (int c = 0; c < C; c++)
                        if (fabs((double)xr[c]) > row[c] || isnan(xr[c])) row[c] = fabs((double)xr[c]);
                }
        }
    }
}

/* The tensor of kind at layer row l, or NULL. */
static const tensor_info_t *find_tensor(const model_t *m, int l, const char *kind)
{
    for (int k = 0; k < m->num_tensors; k++)
        if (m->tensors[k].layer == l && !strcmp(m->tensors[k].kind, kind)) return &m->tensors[k];
    return NULL;
}

void rounding_swiglu_cos(const probe_axes_t *ax, const model_t *m, double *out)
{
    for (size_t i = 0; i < (size_t)ax->L * ax->nunit; i++) out[i] = NAN;
    for (int l = 0; l < ax->L; l++) {
        const tensor_info_t *g = find_tensor(m, l, "w1"), *u = find_tensor(m, l, "w3");
        if (!g || !u || g->rows != u->rows || g->cols != u->cols || (int)g->cols != ax->nunit)
            continue;
        const real *G = m->params + g->offset, *U = m->params + u->offset;   // (C, F) [in][out]
        const size_t R = g->rows, F = g->cols;
        for (size_t j = 0; j < F; j++) {   // column j of each, strided by F
            double gu = 0.0, gg = 0.0, uu = 0.0;
            for (size_t i = 0; i < R; i++) {
                const double a = G[i * F + j], b = U[i * F + j];
                gu += a * b;
                gg += a * a;
                uu += b * b;
            }
            out[(size_t)l * F + j] = gg > 0.0 && uu > 0.0 ? gu / sqrt(gg * uu) : NAN;
        }
    }
}
