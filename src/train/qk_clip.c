/* qk_clip.c — QK-Clip after the update (Kimi K2's MuonClip) and the optimizer's per-tensor
 * statistics (docs/design.md §6h). */
#include <math.h>
#include "train/qk_clip.h"

/* Columns [h·Dh, (h+1)·Dh) of the (rows, C) matrix w (and of bias b, when not NULL) × g. */
static void scale_head(real *w, real *b, size_t rows, int C, int Dh, int h, double g)
{
    for (size_t r = 0; r < rows; r++)
        for (int j = h * Dh; j < (h + 1) * Dh; j++) w[r * (size_t)C + j] = (real)(w[r * (size_t)C + j] * g);
    if (b)
        for (int j = h * Dh; j < (h + 1) * Dh; j++) b[j] = (real)(b[j] * g);
}

int qk_clip_apply(model_t *m, double tau)
{
    const int H = m->H, C = m->C, Dh = C / H, B = m->batch.B;
    int clipped = 0;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        for (int k = 0; k < st->L * st->nsub; k++) {
            sublayer_t *sl = &st->subs[k];
            if (sl->rule.kind == SUB_FFN) continue;
            for (int h = 0; h < H; h++) {
                double S = 0.0;   // S^h_max over the batch (Kimi K2, Eq. 3)
                for (int b = 0; b < B; b++)
                    if (sl->amax[(size_t)b * H + h] > S) S = sl->amax[(size_t)b * H + h];
                if (!(S > tau)) continue;
                // W_q^h, W_k^h ← W^h·√(τ/S): the head's logits scale by τ/S (Kimi K2, §2.1)
                const double g = sqrt(tau / S);
                scale_head(sl->w[0], sl->b[0], (size_t)C, C, Dh, h, g);
                scale_head(sl->w[1], sl->b[1], (size_t)C, C, Dh, h, g);
                clipped++;
            }
        }
    }
    return clipped;
}

void qk_optim_stats(const probe_axes_t *ax, const model_t *m, const optim_t *o, double lr,
                    double *rms, double *spec, double *sv_min, double *sv_max)
{
    const size_t LP = (size_t)ax->L * ax->nparam;
    for (size_t i = 0; i < LP; i++) rms[i] = spec[i] = sv_min[i] = sv_max[i] = NAN;
    for (int k = 0; k < m->num_tensors && k < o->nseg; k++) {
        const tensor_info_t *t = &m->tensors[k];
        const int col = t->layer >= 0 ? probe_axis_find(ax->param, ax->nparam, t->kind) : -1;
        if (col < 0) continue;
        const optim_seg_t *g = &o->seg[k];
        const size_t i = (size_t)t->layer * ax->nparam + col;
        rms[i] = g->size ? sqrt(g->sumsq / (double)g->size) : NAN;
        sv_min[i] = g->sv_min;
        sv_max[i] = g->sv_max;
        if (g->hidden && !isnan(g->sv_max))
            spec[i] = lr * g->lr_mult * optim_muon_scale(o->muon_scale, g->rows, g->cols) * g->sv_max;
    }
}
