/* hvp.c — Hessian-vector products by central differences of the gradient that never cross a
 * ReLU kink (measure/hvp.h, docs/design.md §10). */
#include <stdlib.h>
#include <string.h>
#include "measure/hvp.h"

/* Rows of stack st in a batch of b's shape, and the non-padding positions of row r (m's last
 * forward: the encoder's source lengths, the decoder's target lengths; an lm counts them all). */
static int stack_len(const model_t *m, const layer_stack_t *st, const batch_t *b, int r)
{
    if (st->kind == STACK_ENC) return m->src_len[r];
    if (st->kind == STACK_DEC) return m->tgt_len[r];
    return b->T;
}

static int stack_T(const layer_stack_t *st, const batch_t *b)
{
    return st->kind == STACK_ENC ? b->S : b->T;
}

/* Visit every ReLU unit of a non-padding row in a fixed order: bits[i] = (pre > 0) when set,
 * else the count of those differing from bits. Returns the units visited (set) or differing. */
static size_t relu_branches(const model_t *m, const batch_t *b, unsigned char *bits, int set)
{
    if (m->shape.act != ACT_RELU) return 0;
    const size_t F = (size_t)m->F;
    size_t i = 0, differ = 0;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        const int T = stack_T(st, b);
        for (int k = 0; k < st->L * st->nsub; k++) {
            const sublayer_t *sl = &st->subs[k];
            if (sl->rule.kind != SUB_FFN) continue;
            for (int r = 0; r < b->B; r++) {
                const int len = stack_len(m, st, b, r);
                const real *pre = sl->pre + (size_t)r * T * F;   // (len, F) of row r
                for (size_t j = 0; j < (size_t)len * F; j++, i++) {
                    const unsigned char on = pre[j] > 0.0;
                    if (set) bits[i] = on;
                    else differ += bits[i] != on;
                }
            }
        }
    }
    return set ? i : differ;
}

size_t hvp_relu_units(const model_t *m, const batch_t *b)
{
    if (m->shape.act != ACT_RELU) return 0;
    size_t n = 0;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        size_t rows = 0;
        for (int r = 0; r < b->B; r++) rows += (size_t)stack_len(m, st, b, r);
        for (int k = 0; k < st->L * st->nsub; k++)
            if (st->subs[k].rule.kind == SUB_FFN) n += rows * (size_t)m->F;
    }
    return n;
}

int hvp_init(hvp_t *h, model_t *m, const batch_t *b, double h0, double hmin)
{
    memset(h, 0, sizeof *h);
    h->m = m;
    h->b = b;
    h->h0 = h0;
    h->hmin = hmin;
    // the capacity of the units: every FFN row of the largest batch the model holds
    size_t cap = 0;
    for (int s = 0; s < m->nstacks; s++)
        for (int k = 0; k < m->stack[s].L * m->stack[s].nsub; k++)
            if (m->stack[s].subs[k].rule.kind == SUB_FFN)
                cap += (s == 0 && m->nstacks > 1 ? m->caps.src_tokens : m->caps.tokens) * (size_t)m->F;
    h->theta = malloc(m->num_params * sizeof(double));
    h->gplus = malloc(m->num_params * sizeof(double));
    h->branch = malloc(cap ? cap : 1);
    if (!h->theta || !h->gplus || !h->branch) { hvp_free(h); return 1; }
    memcpy(h->theta, m->params, m->num_params * sizeof(double));
    return 0;
}

void hvp_free(hvp_t *h)
{
    free(h->theta);
    free(h->gplus);
    free(h->branch);
    h->theta = h->gplus = NULL;
    h->branch = NULL;
}

void hvp_set_point(hvp_t *h, const double *theta)
{
    memcpy(h->theta, theta, h->m->num_params * sizeof(double));
    memcpy(h->m->params, theta, h->m->num_params * sizeof(double));
}

/* params = θ + step·v; the forward on the batch. */
static void forward_at(hvp_t *h, const double *v, double step)
{
    model_t *m = h->m;
    for (size_t i = 0; i < m->num_params; i++) m->params[i] = h->theta[i] + step * v[i];
    model_forward(m, h->b);
    h->passes += 0.5;
}

static void backward(hvp_t *h)
{
    model_zero_grad(h->m);
    model_backward(h->m);
    h->passes += 0.5;
}

/* One central difference at step: ∇L(θ+hv) into gplus (branches recorded), the forward at θ−hv;
 * returns the units that switched. With finish (or no switch), the backward and Hv. */
static size_t difference(hvp_t *h, const double *v, double *Hv, double step, int finish)
{
    model_t *m = h->m;
    const size_t n = m->num_params;
    forward_at(h, v, step);
    h->units = relu_branches(m, h->b, h->branch, 1);
    backward(h);
    memcpy(h->gplus, m->grads, n * sizeof(double));
    forward_at(h, v, -step);
    const size_t switched = relu_branches(m, h->b, h->branch, 0);
    if (switched && !finish) return switched;   // before the backward it would waste
    backward(h);
    const double inv = 1.0 / (2.0 * step);
    for (size_t i = 0; i < n; i++) Hv[i] = (h->gplus[i] - m->grads[i]) * inv;
    return switched;
}

size_t hvp_apply(hvp_t *h, const double *v, double *Hv, double *h_used)
{
    double step = h->h0;
    size_t switched;
    for (;;) {
        const int last = step / 10.0 < h->hmin;
        switched = difference(h, v, Hv, step, last);
        if (!switched || last) break;
        h->shrinks++;
        step /= 10.0;
    }
    if (switched) h->kinked++;
    h->products++;
    if (h->h_smallest == 0.0 || step < h->h_smallest) h->h_smallest = step;
    if (h_used) *h_used = step;
    memcpy(h->m->params, h->theta, h->m->num_params * sizeof(double));
    return switched;
}

size_t hvp_apply_fixed(hvp_t *h, const double *v, double *Hv, double step)
{
    const size_t switched = difference(h, v, Hv, step, 1);
    h->products++;
    memcpy(h->m->params, h->theta, h->m->num_params * sizeof(double));
    return switched;
}
