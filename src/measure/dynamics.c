/* dynamics.c — attention entropy, attention and output logits, log Z, residual RMS
 * (docs/design.md §6g), from the statistics the last forward kept. */
#include <math.h>
#include "measure/dynamics.h"

/* Queries row b of sub-layer sl's attention counted (the pass's qlen): the encoder's source
 * length, the decoder's non-padding inputs, every position of an lm. */
static int counted_queries(const model_t *m, const layer_stack_t *st, int b)
{
    if (m->nstacks == 1) return m->batch.T;
    return st->kind == STACK_ENC ? m->src_len[b] : m->tgt_len[b];
}

/* Entropy per head h of sl (mean over counted queries of the batch) and max |logit|. */
static void head_stats(const model_t *m, const layer_stack_t *st, const sublayer_t *sl, int h,
                       double *ent, double *amax)
{
    const int B = m->batch.B, H = m->H;
    double sum = 0.0, n = 0.0, mx = 0.0;
    for (int b = 0; b < B; b++) {
        sum += sl->ent[(size_t)b * H + h];
        n += counted_queries(m, st, b);
        const double a = sl->amax[(size_t)b * H + h];
        if (a > mx || isnan(a)) mx = a;
    }
    *ent = n > 0 ? sum / n : NAN;
    *amax = mx;
}

/* Output statistics over the scored positions: mean |log Z|, max |log Z|, max |logit|. */
static void output_stats(const model_t *m, double *out)
{
    const size_t N = (size_t)m->batch.B * m->batch.T;
    const int32_t *y = m->batch.targets;
    double sum = 0.0, mx = 0.0, lmax = 0.0;
    long n = 0;
    for (size_t i = 0; y && i < N; i++) {
        if (y[i] < 0) continue;
        const double a = fabs(m->lse[i]);
        sum += a;
        n++;
        if (a > mx || isnan(a)) mx = a;
        if (m->logit_absmax[i] > lmax || isnan(m->logit_absmax[i])) lmax = m->logit_absmax[i];
    }
    out[0] = n ? sum / n : NAN;
    out[1] = n ? mx : NAN;
    out[2] = n ? lmax : NAN;
}

void dynamics_scalars(const model_t *m, dynamics_scalars_t *d)
{
    double out[3];
    d->max_logit = 0.0;
    d->min_entropy = INFINITY;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        for (int k = 0; k < st->L * st->nsub; k++) {
            const sublayer_t *sl = &st->subs[k];
            if (sl->rule.kind == SUB_FFN) continue;
            double mean = 0.0;
            for (int h = 0; h < m->H; h++) {
                double e, a;
                head_stats(m, st, sl, h, &e, &a);
                mean += e / m->H;
                if (a > d->max_logit || isnan(a)) d->max_logit = a;
            }
            if (mean < d->min_entropy || isnan(mean)) d->min_entropy = mean;
        }
    }
    output_stats(m, out);
    d->logz_mean_abs = out[0];
    d->z_term = m->z_loss > 0.0 ? m->z_term : 0.0;
}

/* RMS of the N rows (C) of x over the counted positions of stack st. */
static double stream_rms(const model_t *m, const layer_stack_t *st, const real *x)
{
    const int B = m->batch.B, T = st->kind == STACK_ENC ? m->batch.S : m->batch.T;
    double sum = 0.0;
    long n = 0;
    for (int b = 0; b < B; b++) {
        const int rows = counted_queries(m, st, b);
        for (int t = 0; t < rows; t++) {
            const real *r = x + ((size_t)b * T + t) * m->C;
            for (int c = 0; c < m->C; c++) sum += r[c] * r[c];
            n += m->C;
        }
    }
    return n ? sqrt(sum / n) : NAN;
}

void dynamics_layers(const probe_axes_t *ax, const model_t *m, double *entropy,
                     double *max_logit, double *rms, double *out)
{
    const size_t LH = (size_t)ax->L * ax->nhead;
    for (size_t i = 0; i < LH; i++) entropy[i] = max_logit[i] = NAN;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        for (int l = 0; l < st->L; l++) {
            const int row = st->first_row + l;
            for (int i = 0; i < st->nsub; i++) {
                const sublayer_t *sl = stack_sublayer(st, l, i);
                if (sl->rule.kind == SUB_FFN) continue;
                const int first = sl->rule.kind == SUB_CROSS_ATTN ? m->H : 0;   // "cross.h0"
                for (int h = 0; h < m->H && first + h < ax->nhead; h++) {
                    const size_t o = (size_t)row * ax->nhead + first + h;
                    head_stats(m, st, sl, h, &entropy[o], &max_logit[o]);
                }
            }
            rms[row] = stream_rms(m, st, stack_sublayer(st, l, st->nsub - 1)->out);
        }
    }
    output_stats(m, out);
}
