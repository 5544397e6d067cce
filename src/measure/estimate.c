/* estimate.c — the cheap curvature estimators on the measure's float64 copy and batch
 * (measure/curvature.h; docs/design.md §10): the SLQ spectral density of H and of the active
 * P⁻¹H, whole or per diagonal block; Hutchinson's trace; the top-k Ritz values; the critical
 * sharpness by forward passes alone; the exact curvature along the update. Float64 only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "measure/curvature_internal.h"
#include "measure/directional.h"
#include "measure/slq.h"

int curv_estimate_alloc(curv_t *c, const config_t *cfg)
{
    const int slq = cfg->probe.density_probes > 0, tr = cfg->probe.trace_probes > 0;
    if (!slq && !tr && !cfg->probe.critical_sharpness) return 0;
    c->ev = malloc(c->n * sizeof(double));
    c->ew = malloc(c->n * sizeof(double));
    c->samples = malloc((size_t)(tr ? cfg->probe.trace_probes : 1) * sizeof(double));
    if (!c->ev || !c->ew || !c->samples) return 1;
    c->est_probes = cfg->probe.density_probes;
    c->est_trace = cfg->probe.trace_probes;
    c->est_blocks = slq && cfg->probe.density_blocks;
    if (!slq) return 0;
    // a Krylov space has at most n dimensions
    c->est_iters = (size_t)cfg->probe.density_iters < c->n ? cfg->probe.density_iters : (int)c->n;
    return lanczos_alloc(&c->lz_slq, c->n, c->est_iters);
}

int curv_density_iters(const curv_t *c) { return c->est_probes > 0 ? c->est_iters : 0; }

void curv_estimate_free(curv_t *c)
{
    lanczos_free(&c->lz_slq);
    free(c->ev);
    free(c->ew);
    free(c->samples);
    c->ev = c->ew = c->samples = NULL;
}

/* The support of `block` into c->mask (floored coordinates left out when floored != NULL), or
 * NULL for the whole model without floored ones; *empty when it has no coordinate. */
static const unsigned char *support_of(curv_t *c, int block, const unsigned char *floored,
                                       int *empty)
{
    *empty = 0;
    if (block == CURV_WHOLE && !floored) return NULL;
    if (block == CURV_WHOLE) {
        size_t count = 0;
        for (size_t i = 0; i < c->n; i++) count += (c->mask[i] = !floored[i]);
        *empty = count == 0;
        return c->mask;
    }
    *empty = curv_block_mask(c, block / TENSOR_BLOCKS, block % TENSOR_BLOCKS, floored) == 0;
    return c->mask;
}

/* D = P^{−1/2} (P NULL: none). */
static void set_precond(curv_t *c, const double *P)
{
    c->D = NULL;
    if (!P) return;
    for (size_t i = 0; i < c->n; i++) c->Dbuf[i] = 1.0 / sqrt(P[i]);
    c->D = c->Dbuf;
}

long curv_density(curv_t *c, const double *theta, const double *P, const unsigned char *floored,
                  int block, unsigned long seed, double *nodes, double *weights)
{
    if (c->est_probes < 1) return -1;
    int empty;
    const unsigned char *support = support_of(c, block, P ? floored : NULL, &empty);
    if (empty) return -1;
    hvp_set_point(&c->hvp, theta);
    set_precond(c, P);
    gsl_rng_set(c->rng, seed);
    const long before = c->hvp.kinked;
    slq_run(&c->lz_slq, P ? curv_op_precond : curv_op_hessian, c, support, c->est_probes,
            c->est_iters, 0, c->rng, c->ev, nodes, weights);
    c->D = NULL;
    const long kinked = c->hvp.kinked - before;
    if (kinked)
        for (size_t i = 0; i < (size_t)c->est_probes * c->est_iters; i++) nodes[i] = weights[i] = NAN;
    return kinked;
}

long curv_trace(curv_t *c, const double *theta, int block, unsigned long seed,
                trace_result_t *out)
{
    if (c->est_trace < 1) return -1;
    int empty;
    const unsigned char *support = support_of(c, block, NULL, &empty);
    if (empty) return -1;
    hvp_set_point(&c->hvp, theta);
    c->D = NULL;
    gsl_rng_set(c->rng, seed);
    const long before = c->hvp.kinked;
    trace_hutchinson(curv_op_hessian, c, support, c->n, c->est_trace, c->rng, c->ev, c->ew,
                     c->samples, out);
    const long kinked = c->hvp.kinked - before;
    if (kinked) out->mean = out->se = NAN;
    return kinked;
}

long curv_top(curv_t *c, const double *theta, unsigned long seed, int count, double *top)
{
    hvp_set_point(&c->hvp, theta);
    c->D = NULL;
    gsl_rng_set(c->rng, seed);
    const long before = c->hvp.kinked;
    lanczos_result_t res;
    lanczos_run(&c->lz, curv_op_hessian, c, NULL, c->K, c->rng, &res, NULL);
    lanczos_top(&c->lz, res.iters, count, top);
    const long kinked = c->hvp.kinked - before;
    if (kinked)
        for (int i = 0; i < count; i++) top[i] = NAN;
    return kinked;
}

long curv_block_densities(curv_t *c, const double *theta, unsigned long seed, double *nodes,
                          double *weights)
{
    const size_t d = (size_t)c->est_probes * c->est_iters;
    long kinked = 0;
    for (int b = 0; b < c->rows * TENSOR_BLOCKS; b++) {
        double *nb = nodes + b * d, *wb = weights + b * d;   // (probes, iters)
        // block b from seed + 2 + b: the probes of its Hutchinson trace (curv_estimate)
        const long k = curv_density(c, theta, NULL, NULL, b, seed + 2 + (unsigned long)b, nb, wb);
        if (k > 0) kinked += k;
        if (k < 0)   // an empty block
            for (size_t i = 0; i < d; i++) nb[i] = wb[i] = NAN;
    }
    return kinked;
}

void curv_estimate(curv_t *c, const double *theta, const double *P, const unsigned char *floored,
                   unsigned long seed, curv_row_t *out)
{
    long k;   // products that crossed a kink: their values are NaN, counted in the row
    out->trace = out->trace_stderr = NAN;
    if (c->est_trace > 0) {
        trace_result_t tr;
        if ((k = curv_trace(c, theta, CURV_WHOLE, seed + 1, &tr)) >= 0) {
            out->trace = tr.mean;
            out->trace_stderr = tr.se;
            out->kinked += k;
        }
        for (int b = 0; b < c->rows * TENSOR_BLOCKS; b++) {
            out->block_trace[b] = NAN;
            if ((k = curv_trace(c, theta, b, seed + 2 + (unsigned long)b, &tr)) >= 0) {
                out->block_trace[b] = tr.mean;
                out->kinked += k;
            }
        }
    }
    if (c->est_probes > 0) {
        const size_t d = (size_t)c->est_probes * c->est_iters;
        if ((k = curv_density(c, theta, NULL, NULL, CURV_WHOLE, seed, out->density_nodes,
                              out->density_weights)) > 0)
            out->kinked += k;
        if ((k = curv_density(c, theta, P, floored, CURV_WHOLE, seed, out->precond_density_nodes,
                              out->precond_density_weights)) > 0)
            out->kinked += k;
        if (k < 0)   // every coordinate floored
            for (size_t i = 0; i < d; i++)
                out->precond_density_nodes[i] = out->precond_density_weights[i] = NAN;
        if (c->est_blocks)
            out->kinked += curv_block_densities(c, theta, seed, out->block_density_nodes,
                                                out->block_density_weights);
    }
    if (c->est_trace > 0 || c->est_probes > 0) out->passes = c->hvp.passes;   // the row's, these too
}

void curv_gradient(curv_t *c, const double *theta, double *g)
{
    memcpy(c->m->params, theta, c->n * sizeof(double));
    model_forward(c->m, &c->batch);
    model_zero_grad(c->m);
    model_backward(c->m);
    memcpy(g, c->m->grads, c->n * sizeof(double));
}

/* The line search's loss: the objective of the measurement batch at θ − η·u (a forward pass). */
typedef struct {
    curv_t *c;
    const double *theta, *u;
} along_t;

static double loss_along(void *ctx, double eta)
{
    const along_t *a = ctx;
    model_t *m = a->c->m;
    for (size_t i = 0; i < a->c->n; i++) m->params[i] = a->theta[i] - eta * a->u[i];
    model_forward(m, &a->c->batch);
    return model_objective(m);
}

void curv_critical(curv_t *c, const double *theta, const double *u, double guess,
                   critical_result_t *out)
{
    along_t a = {c, theta, u};
    const double loss0 = loss_along(&a, 0.0);
    critical_search(loss_along, &a, loss0, guess, CRITICAL_TOL, out);
    memcpy(c->m->params, theta, c->n * sizeof(double));
}

/* c->ew = H·x̂ for the unit x̂ = x/‖x‖ (in c->ev); returns ‖x‖, or NaN (zero x, or a kink). */
static double unit_product(curv_t *c, const double *theta, const double *x)
{
    double s = 0.0;
    for (size_t i = 0; i < c->n; i++) s += x[i] * x[i];
    s = sqrt(s);
    if (!(s > 0.0)) return NAN;
    for (size_t i = 0; i < c->n; i++) c->ev[i] = x[i] / s;
    hvp_set_point(&c->hvp, theta);
    c->D = NULL;
    return hvp_apply(&c->hvp, c->ev, c->ew, NULL) ? NAN : s;
}

double curv_update_curvature(curv_t *c, const double *theta, const double *u, const double *g,
                             double *quadratic)
{
    const double s = unit_product(c, theta, u);
    if (quadratic) *quadratic = NAN;
    if (isnan(s)) return NAN;
    const double rq = directional_curvature(c->ev, c->ew, c->n);   // ûᵀHû
    if (quadratic) {   // uᵀHu/gᵀu = ‖u‖²·ûᵀHû/gᵀu
        double gu = 0.0;
        for (size_t i = 0; i < c->n; i++) gu += g[i] * u[i];
        *quadratic = rq * s * s / gu;
    }
    return rq;
}

double curv_precond_grad(curv_t *c, const double *theta, const double *g, const double *D)
{
    if (isnan(unit_product(c, theta, g))) return NAN;
    return directional_precond_grad(c->ev, c->ew, D, c->n);   // invariant to g's scale
}
