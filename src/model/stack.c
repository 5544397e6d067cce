/* stack.c — embedding, the sub-layers in order, the final norm (docs/design.md §1, §5, §6b). */
#include <math.h>
#include <string.h>
#include "model/stack.h"
#include "nn/dyt.h"
#include "util/threads.h"
#include "util/arena.h"


sublayer_t *stack_sublayer(const layer_stack_t *st, int l, int i)
{
    return &st->subs[(size_t)l * st->nsub + i];
}

void stack_layout(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_caps_t *cap,
                  int dropout, real *base, size_t *n, real *gbase, size_t *gn)
{
    const size_t NC = cap->rows * (size_t)sh->C;
    const int K = st->L * st->nsub;
    st->embed = arena_take(base, n, NC);
    st->mask_embed = dropout ? arena_take(base, n, NC) : NULL;
    for (int s = 0; s < K; s++) {
        real *b = base ? base + *n : NULL;
        *n += sublayer_layout(&st->subs[s], sh, cap, dropout, b);
    }
    st->top = st->subs[K - 1].out;
    st->output = st->top;
    if (st->final.on) {
        st->final.width = (size_t)sh->C;
        st->final.out = arena_take(base, n, NC);
        st->final.mean = arena_take(base, n, cap->rows);
        st->final.rstd = arena_take(base, n, cap->rows);
        st->output = st->final.out;
    }
    st->dstream[0] = arena_take(gbase, gn, NC);
    st->dstream[1] = arena_take(gbase, gn, NC);
    st->dfinal = st->final.on ? arena_take(gbase, gn, NC) : st->dstream[K % 2];
    st->dblock = st->subs[st->nsub - 1].rule.b2t ? arena_take(gbase, gn, NC) : NULL;
}

/* Fill n mask entries: 0 with probability p, else 1/(1−p). */
static void draw_mask(real *mask, size_t n, double p, gsl_rng *rng)
{
    const double keep = 1.0 / (1.0 - p);
    for (size_t i = 0; i < n; i++) mask[i] = gsl_rng_uniform(rng) < p ? 0.0 : keep;
}

void stack_draw_dropout(layer_stack_t *st, size_t N, int C, double p, gsl_rng *rng)
{
    if (!st->mask_embed) return;
    const size_t NC = N * (size_t)C;
    draw_mask(st->mask_embed, NC, p, rng);
    for (int s = 0; s < st->L * st->nsub; s++) draw_mask(st->subs[s].mask, NC, p, rng);
}

void stack_masks_off(layer_stack_t *st, size_t N, int C)
{
    if (!st->mask_embed) return;
    const size_t NC = N * (size_t)C;
    for (size_t i = 0; i < NC; i++) st->mask_embed[i] = 1.0;
    for (int s = 0; s < st->L * st->nsub; s++)
        for (size_t i = 0; i < NC; i++) st->subs[s].mask[i] = 1.0;
}

/* The embedding's forward (rows) and backward (columns of the table's gradient), for the parts
 * of a region (util/threads.h). */
typedef struct {
    layer_stack_t *st;
    const int32_t *ids;
    const real *tok_embed, *pe, *dx1;
    real *gtok_embed;
    size_t N, T, C;
} embed_job_t;

static void embed_forward_part(void *ctx, int t, int nt)
{
    const embed_job_t *j = ctx;
    const size_t T = j->T, C = j->C;
    const double sqrtC = sqrt((double)C);
    size_t lo, hi;
    threads_part(j->N, t, nt, 1, &lo, &hi);
    // x_1 = tok_embed[id]·√d + PE  (fairseq convention, docs/design.md §5)     // (N,C)
    // (no PE: model.positions = rope or none, docs/design.md §6i)
    for (size_t i = lo; i < hi; i++) {
        real *x = j->st->embed + i * C;
        if (j->ids[i] < 0) { memset(x, 0, C * sizeof(real)); continue; }   // padding
        const real *e = j->tok_embed + (size_t)j->ids[i] * C;
        if (j->pe) {
            const real *pos = j->pe + (i % T) * C;
            for (size_t c = 0; c < C; c++) x[c] = e[c] * sqrtC + pos[c];
        } else {
            for (size_t c = 0; c < C; c++) x[c] = e[c] * sqrtC;
        }
        if (j->st->mask_embed)
            for (size_t c = 0; c < C; c++) x[c] *= j->st->mask_embed[i * C + c];
    }
}

/* dtok_embed[id] += √d·(mask ⊙ dx_1) over columns [lo, hi) of part t: each column's rows in
 * order, so a token seen twice gets its two additions in the serial order. */
static void embed_backward_part(void *ctx, int t, int nt)
{
    const embed_job_t *j = ctx;
    const size_t C = j->C;
    const double sqrtC = sqrt((double)C);
    size_t lo, hi;
    threads_part(C, t, nt, 8, &lo, &hi);
    for (size_t i = 0; i < j->N; i++) {
        if (j->ids[i] < 0) continue;
        real *ge = j->gtok_embed + (size_t)j->ids[i] * C;
        const real *dx = j->dx1 + i * C;
        const real *mask = j->st->mask_embed ? j->st->mask_embed + i * C : NULL;
        for (size_t c = lo; c < hi; c++) ge[c] += sqrtC * (mask ? mask[c] * dx[c] : dx[c]);
    }
}

/* x_1 (N,C) into st->embed; pe NULL: no positions added. */
static void embed_forward(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                          const int32_t *ids, const real *tok_embed, const real *pe)
{
    const size_t T = (size_t)p->T, C = (size_t)sh->C, N = (size_t)p->B * T;
    const embed_job_t j = {.st = st, .ids = ids, .tok_embed = tok_embed, .pe = pe, .N = N,
                           .T = T, .C = C};
    threads_run(threads_for(2.0 * (double)N * C), embed_forward_part, (void *)&j);
}

void stack_forward(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                   const int32_t *ids, const real *tok_embed, const real *pe)
{
    const size_t N = (size_t)p->B * p->T;
    embed_forward(st, sh, p, ids, tok_embed, pe);
    const real *x = st->embed, *xb = x;
    for (int s = 0; s < st->L * st->nsub; s++) {
        if (s % st->nsub == 0) xb = x;   // the layer's input (B2T's bottom-to-top path)
        sublayer_forward(&st->subs[s], sh, p, x, xb);
        x = st->subs[s].out;
    }
    // x_final = Norm(x_top) when the stack ends with a final norm (Pre-LN by default)
    if (st->final.on) norm_site_forward(&st->final, sh, st->top, N);
}

/* Population variance of the n values x[i]·(scale ? scale[i % C] : 1) of the rows ids ≥ 0. */
static double masked_variance(const real *x, const real *scale, const int32_t *ids,
                              size_t N, size_t C)
{
    double sum = 0.0, sq = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < N; i++) {
        if (ids[i] < 0) continue;
        for (size_t c = 0; c < C; c++) {
            const double v = scale ? scale[c] * x[i * C + c] : x[i * C + c];
            sum += v;
            sq += v * v;
            n++;
        }
    }
    if (!n) return 0.0;
    const double mean = sum / (double)n;
    return sq / (double)n - mean * mean;
}

void stack_admin_profile(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                         const int32_t *ids, const real *tok_embed, const real *pe)
{
    const size_t C = (size_t)sh->C, N = (size_t)p->B * p->T;
    embed_forward(st, sh, p, ids, tok_embed, pe);
    const real *x = st->embed, *xb = x;
    double ratio = 1.0;   // Liu et al. 2020 (Transformer-Clinic's adaptive profiling)
    for (int s = 0; s < st->L * st->nsub; s++) {
        sublayer_t *sl = &st->subs[s];
        if (s % st->nsub == 0) xb = x;
        if (sl->omega)   // ω_i ← ratio
            for (size_t c = 0; c < C; c++) sl->omega[c] = ratio;
        sublayer_forward(sl, sh, p, x, xb);
        // ratio ← √(Var(x ⊙ ω_i) + Var(drop(F_i)))
        if (sl->omega) {
            double vf;
            if (sl->mask) {
                for (size_t i = 0; i < N * C; i++) sl->r[i] = sl->mask[i] * sl->fo[i];   // scratch
                vf = masked_variance(sl->r, NULL, ids, N, C);
                sublayer_forward(sl, sh, p, x, xb);   // restore r and out
            } else {
                vf = masked_variance(sl->fo, NULL, ids, N, C);
            }
            ratio = sqrt(masked_variance(x, sl->omega, ids, N, C) + vf);
        }
        x = sl->out;
    }
}

/* Mean over the rows with ids ≥ 0 of the rows' Euclidean norms of x (N,C). */
static double mean_row_norm(const real *x, const int32_t *ids, size_t N, size_t C)
{
    double sum = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < N; i++) {
        if (ids[i] < 0) continue;
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += x[i * C + c] * x[i * C + c];
        sum += sqrt(s);
        n++;
    }
    return n ? sum / (double)n : NAN;
}

void stack_backward(layer_stack_t *st, const sublayer_shape_t *sh, const sublayer_pass_t *p,
                    const int32_t *ids, real *dmem, real *gtok_embed,
                    sublayer_scratch_t *sc)
{
    const size_t C = (size_t)sh->C, N = (size_t)p->B * p->T;
    const int K = st->L * st->nsub;
    if (st->final.on) {
        // dtop = ∂L/∂top: the final norm's backward, written by the sum onto zero (nn/norm.h)
        real *dtop = st->dstream[K % 2];
        if (sh->norm == NORM_DYT)
            dyt_backward_set(dtop, st->final.dalpha, st->final.dgamma, st->final.dbeta,
                             st->dfinal, st->top, *st->final.alpha, st->final.gamma, N, C);
        else
            norm_backward_set(sh->norm, dtop, st->final.dgamma, st->final.dbeta, st->dfinal,
                              st->top, st->final.mean, st->final.rstd, st->final.gamma, N, C);
    }
    for (int s = K - 1; s >= 0; s--) {
        const int first = s % st->nsub == 0, b2t = st->subs[s - s % st->nsub + st->nsub - 1].rule.b2t;
        if (b2t && s % st->nsub == st->nsub - 1) memset(st->dblock, 0, N * C * sizeof(real));
        st->dout_norm[s] = mean_row_norm(st->dstream[(s + 1) % 2], ids, N, C);
        sublayer_backward(&st->subs[s], sh, p, st->dstream[(s + 1) % 2], st->dstream[s % 2],
                          dmem, st->dblock, sc);
        if (b2t && first)   // the layer's input also reached its last residual (B2T)
            for (size_t i = 0; i < N * C; i++) st->dstream[s % 2][i] += st->dblock[i];
    }
    // x_1 = drop(tok_embed[id]·√d + PE):  dtok_embed[id] += √d·(mask ⊙ dx_1)
    const embed_job_t j = {.st = st, .ids = ids, .dx1 = st->dstream[0], .gtok_embed = gtok_embed,
                           .N = N, .C = C};
    threads_run(threads_for(2.0 * (double)N * C), embed_backward_part, (void *)&j);
}
