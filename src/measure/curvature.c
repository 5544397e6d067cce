/* curvature.c — λ_max and λ_min of the Hessian, Adam's preconditioned sharpness and the
 * diagonal blocks' maxima on a float64 copy of the model (measure/curvature.h, docs/design.md
 * §10). Float64 only: compiled once (the Makefile's CORE_F64_ONLY). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include "measure/curvature.h"
#include "measure/curvature_internal.h"
#include "model/session.h"

size_t curv_num_params(const curv_t *c) { return c->n; }
void curv_set_stop(curv_t *c, const volatile sig_atomic_t *stop) { c->lz.stop = stop; }
int curv_rows(const curv_t *c) { return c->rows; }

void curv_free(curv_t *c)
{
    if (!c) return;
    hvp_free(&c->hvp);
    lanczos_free(&c->lz);
    if (c->rng) gsl_rng_free(c->rng);
    model_free(c->m);
    free(c->batch.src);
    free(c->batch.tokens);
    free(c->batch.targets);
    free(c->Dbuf);
    free(c->u);
    free(c->top);
    free(c->mask);
    curv_estimate_free(c);
    free(c);
}

/* A copy of b into c's own buffers. 0 or 1. */
static int copy_batch(curv_t *c, const batch_t *b)
{
    const size_t nt = (size_t)b->B * b->T, ns = (size_t)b->B * b->S;
    c->batch = (batch_t){b->B, b->S, b->T, NULL, malloc(nt * sizeof(int32_t)),
                         malloc(nt * sizeof(int32_t))};
    if (ns) c->batch.src = malloc(ns * sizeof(int32_t));
    if (!c->batch.tokens || !c->batch.targets || (ns && !c->batch.src)) return 1;
    memcpy(c->batch.tokens, b->tokens, nt * sizeof(int32_t));
    memcpy(c->batch.targets, b->targets, nt * sizeof(int32_t));
    if (ns) memcpy(c->batch.src, b->src, ns * sizeof(int32_t));
    return 0;
}

/* λ when cfg's optimizer adds L2 decay λθ to the gradient (sgd, adam, radam, gi_adam:
 * train/optim.h), so it minimises L + (λ/2)‖θ‖², whose Hessian is H + λI; 0 for the decoupled
 * decay of adamw and stableadamw, which is no term of the objective (docs/design.md §10). */
static double objective_l2(const config_t *cfg)
{
    const optimizer_t k = cfg->train.optimizer;
    return k == OPT_ADAMW || k == OPT_STABLEADAMW ? 0.0 : cfg->train.weight_decay;
}

/* Lanczos vectors the measure of cfg holds for n parameters (K + 1, at most n + 1). */
static double lanczos_vectors(const config_t *cfg, size_t n)
{
    const int K = cfg->probe.curvature_iters > cfg->probe.curvature_block_iters
                      ? cfg->probe.curvature_iters : cfg->probe.curvature_block_iters;
    return fmin((double)K, (double)n) + 1.0;
}

int curv_check_memory(const config_t *cfg, const batch_caps_t *caps, size_t n, char *err,
                      size_t errlen)
{
    // the copy, the Lanczos vectors, six more vectors (θ, two gradients, D, the direction, the
    // top vector) and a byte mask, beside the run's own model
    const double need = model_memory_doubles(cfg, caps) * sizeof(double) +
                        (lanczos_vectors(cfg, n) + 6.0) * (double)n * sizeof(double) + (double)n;
    const double have = session_physical_bytes();
    if (have > 0.0 && need + session_memory_bytes(cfg) > have) {
        snprintf(err, errlen, "probe.curvature_iters: the curvature measure needs about %.1f GiB "
                 "(a float64 copy of the model and %.0f Lanczos vectors of %zu parameters) "
                 "besides the run's model; this machine has %.1f GiB (reduce "
                 "probe.curvature_iters or the model)", need / 1073741824.0,
                 lanczos_vectors(cfg, n), n, have / 1073741824.0);
        return 2;
    }
    return 0;
}

int curv_create(curv_t **out, const config_t *cfg, const batch_caps_t *caps, const batch_t *b,
                char *err, size_t errlen)
{
    *out = NULL;
    curv_t *c = calloc(1, sizeof *c);
    if (!c) { snprintf(err, errlen, "out of memory"); return 1; }
    c->m = model_create(cfg, caps);   // calloc: pages are taken only when written
    if (!c->m) { curv_free(c); snprintf(err, errlen, "out of memory"); return 1; }
    c->n = c->m->num_params;
    c->rows = c->m->rows + 1;
    const int rc = curv_check_memory(cfg, caps, c->n, err, errlen);
    if (rc) { curv_free(c); return rc; }
    // a Krylov space has at most n dimensions: more steps than parameters add nothing
    const int n = c->n < (size_t)INT_MAX ? (int)c->n : INT_MAX;
    c->K = cfg->probe.curvature_iters < n ? cfg->probe.curvature_iters : n;
    c->Kb = cfg->probe.curvature_block_iters < n ? cfg->probe.curvature_block_iters : n;
    const int K = c->K > c->Kb ? c->K : c->Kb;
    c->l2 = objective_l2(cfg);
    model_dropout_off(c->m);
    c->rng = gsl_rng_alloc(gsl_rng_mt19937);
    c->Dbuf = malloc(c->n * sizeof(double));
    c->u = malloc(c->n * sizeof(double));
    c->top = malloc(c->n * sizeof(double));
    c->mask = malloc(c->n ? c->n : 1);
    if (!c->rng || !c->Dbuf || !c->u || !c->top || !c->mask || copy_batch(c, b) ||
        hvp_init(&c->hvp, c->m, &c->batch, HVP_H0, HVP_HMIN) || lanczos_alloc(&c->lz, c->n, K) ||
        curv_estimate_alloc(c, cfg)) {
        curv_free(c);
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    *out = c;
    return 0;
}

int curv_row_alloc(curv_row_t *r, const curv_t *c)
{
    memset(r, 0, sizeof *r);
    const size_t n = (size_t)c->rows * TENSOR_BLOCKS;
    r->hessian_block_max = malloc(n * sizeof(double));
    r->precond_block_max = malloc(n * sizeof(double));
    if (!r->hessian_block_max || !r->precond_block_max) { curv_row_free(r); return 1; }
    // the estimators' arrays, only when their keys are on (measure/estimate.c)
    const size_t d = (size_t)c->est_probes * c->est_iters;
    if ((c->est_trace > 0 && !(r->block_trace = malloc(n * sizeof(double)))) ||
        (d && (!(r->density_nodes = malloc(d * sizeof(double))) ||
              !(r->density_weights = malloc(d * sizeof(double))) ||
              !(r->precond_density_nodes = malloc(d * sizeof(double))) ||
              !(r->precond_density_weights = malloc(d * sizeof(double))))) ||
        (d && c->est_blocks && (!(r->block_density_nodes = malloc(n * d * sizeof(double))) ||
                                !(r->block_density_weights = malloc(n * d * sizeof(double)))))) {
        curv_row_free(r);
        return 1;
    }
    return 0;
}

void curv_row_free(curv_row_t *r)
{
    free(r->hessian_block_max);
    free(r->precond_block_max);
    free(r->block_trace);
    free(r->density_nodes);
    free(r->density_weights);
    free(r->precond_density_nodes);
    free(r->precond_density_weights);
    free(r->block_density_nodes);
    free(r->block_density_weights);
    r->hessian_block_max = r->precond_block_max = r->block_trace = NULL;
    r->density_nodes = r->density_weights = NULL;
    r->precond_density_nodes = r->precond_density_weights = NULL;
    r->block_density_nodes = r->block_density_weights = NULL;
}

/* ------------------------------------------------------------------------- operators */

/* y = (H + λI)·x (x of unit norm: a Lanczos vector; λ = c->l2). */
void curv_op_hessian(void *ctx, const double *x, double *y)
{
    curv_t *c = ctx;
    hvp_apply(&c->hvp, x, y, NULL);
    if (c->l2 != 0.0)
        for (size_t i = 0; i < c->n; i++) y[i] += c->l2 * x[i];
}

/* y = D·(H + λI)·D·x, D = P^{−1/2}: the product is taken along the unit direction D·x/‖D·x‖
 * (so the difference step stays h) and scaled back. */
void curv_op_precond(void *ctx, const double *x, double *y)
{
    curv_t *c = ctx;
    double s = 0.0;
    for (size_t i = 0; i < c->n; i++) {
        c->u[i] = c->D[i] * x[i];
        s += c->u[i] * c->u[i];
    }
    s = sqrt(s);
    if (!(s > 0.0)) { memset(y, 0, c->n * sizeof(double)); return; }
    for (size_t i = 0; i < c->n; i++) c->u[i] /= s;
    hvp_apply(&c->hvp, c->u, y, NULL);
    for (size_t i = 0; i < c->n; i++) y[i] *= c->D[i] * s;
    if (c->l2 != 0.0)
        for (size_t i = 0; i < c->n; i++) y[i] += c->l2 * c->D[i] * c->D[i] * x[i];
}

/* One Lanczos run of `iters` steps on the operator (preconditioned when pre) restricted to
 * support; a run during which a product crossed a kink gives NaN (and adds to *kinked). Once a
 * run of the measurement was stopped (c->stopped), the others give NaN at once. */
static void run(curv_t *c, int pre, const unsigned char *support, int iters, lanczos_result_t *res,
                double *top, long *kinked)
{
    if (c->stopped) iters = 0;   // NaN without a step
    const long before = c->hvp.kinked;
    lanczos_run(&c->lz, pre ? curv_op_precond : curv_op_hessian, c, support, iters, c->rng, res, top);
    if (res->stopped) c->stopped = 1;
    if (c->hvp.kinked > before) {
        *kinked += c->hvp.kinked - before;
        res->max = res->min = res->res_max = res->res_min = NAN;
        if (top)
            for (size_t i = 0; i < c->n; i++) top[i] = NAN;
    }
}

/* ------------------------------------------------------------------------------ cost */

double curv_cost_passes(double K, double Kb, int nblocks, double T, int precond, int active_only)
{
    const double t = T > 0.0 ? T : 1.0;
    const double run_K = 2.0 * K + 2.0 * K * K / (3.0 * t);
    if (active_only) return run_K;
    return (precond ? 3.0 : 1.0) * run_K + (double)nblocks * (precond ? 2.0 : 1.0) * 2.0 * Kb;
}

int curv_iters(const curv_t *c) { return c->K; }

double curv_row_passes(curv_t *c, const config_t *cfg, int later)
{
    int nblocks = 0;
    for (int r = 0; c->Kb >= 1 && r < c->rows; r++)
        for (int k = 0; k < TENSOR_BLOCKS; k++) nblocks += curv_block_mask(c, r, k, NULL) > 0;
    const double T = (double)c->batch.B * (double)c->batch.T + (double)c->batch.B * c->batch.S;
    return curv_cost_passes(c->K, c->Kb, nblocks, T, cfg->train.optimizer != OPT_SGD,
                            later && cfg->probe.curvature_active_only);
}

/* ---------------------------------------------------------------------- measurement */

/* mask = the coordinates of block (row, kind), without the floored ones when floored != NULL.
 * Returns how many. */
size_t curv_block_mask(curv_t *c, int row, int kind, const unsigned char *floored)
{
    const model_t *m = c->m;
    memset(c->mask, 0, c->n);
    size_t count = 0;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        const int r = t->layer >= 0 ? t->layer : c->rows - 1;
        if (r != row || tensors_block_of(t) != kind) continue;
        for (size_t j = t->offset; j < t->offset + model_tensor_size(t); j++)
            if (!floored || !floored[j]) {
                c->mask[j] = 1;
                count++;
            }
    }
    return count;
}

/* Every block's λ_max, plain and preconditioned (floored coordinates left out). */
static void measure_blocks(curv_t *c, const unsigned char *floored, curv_row_t *out)
{
    for (int r = 0; r < c->rows; r++)
        for (int k = 0; k < TENSOR_BLOCKS; k++) {
            const size_t o = (size_t)r * TENSOR_BLOCKS + k;
            out->hessian_block_max[o] = out->precond_block_max[o] = NAN;
            if (c->Kb < 1 || !curv_block_mask(c, r, k, NULL)) continue;
            lanczos_result_t res;
            run(c, 0, c->mask, c->Kb, &res, NULL, &out->kinked);
            out->hessian_block_max[o] = res.max;
            if (!c->D) {
                out->precond_block_max[o] = res.max;
                continue;
            }
            if (!curv_block_mask(c, r, k, floored)) continue;
            run(c, 1, c->mask, c->Kb, &res, NULL, &out->kinked);
            out->precond_block_max[o] = res.max;
        }
}

/* λ_max(P⁻¹H), its floored share and its active value (c->D set); both runs start from the
 * stream seed + 1, as curv_measure_active's, so an active-only row has a complete row's value. */
static void measure_precond(curv_t *c, const unsigned char *floored, unsigned long seed,
                            curv_row_t *out)
{
    lanczos_result_t res;
    gsl_rng_set(c->rng, seed + 1);
    run(c, 1, NULL, c->K, &res, c->top, &out->kinked);
    out->precond_max = res.max;
    out->precond_max_res = res.res_max;
    size_t nf = 0;
    double share = 0.0;
    for (size_t i = 0; i < c->n; i++)
        if (floored && floored[i]) {
            nf++;
            share += c->top[i] * c->top[i];
        }
    out->precond_eps_share = share;
    if (nf == 0) {   // the same operator and start: the same run
        out->precond_max_active = res.max;
        out->precond_active_res = res.res_max;
        return;
    }
    for (size_t i = 0; i < c->n; i++) c->mask[i] = !floored[i];
    gsl_rng_set(c->rng, seed + 1);
    run(c, 1, c->mask, c->K, &res, NULL, &out->kinked);   // NaN when every one is floored
    out->precond_max_active = res.max;
    out->precond_active_res = res.res_max;
}

void curv_measure(curv_t *c, const double *theta, const double *P, const unsigned char *floored,
                  unsigned long seed, curv_row_t *out)
{
    hvp_set_point(&c->hvp, theta);
    c->hvp.passes = 0.0;
    c->hvp.h_smallest = 0.0;
    c->stopped = 0;
    out->kinked = 0;
    gsl_rng_set(c->rng, seed);
    lanczos_result_t res;
    run(c, 0, NULL, c->K, &res, NULL, &out->kinked);
    out->hessian_max = res.max;
    out->hessian_min = res.min;
    out->hessian_max_res = res.res_max;
    out->hessian_min_res = res.res_min;
    c->D = NULL;
    if (P) {
        for (size_t i = 0; i < c->n; i++) c->Dbuf[i] = 1.0 / sqrt(P[i]);
        c->D = c->Dbuf;
        measure_precond(c, floored, seed, out);
    } else {   // P = 1: the preconditioned sharpness is H's
        out->precond_max = out->precond_max_active = res.max;
        out->precond_max_res = out->precond_active_res = res.res_max;
        out->precond_eps_share = 0.0;
    }
    measure_blocks(c, floored, out);
    out->h = c->hvp.h_smallest;
    out->passes = c->hvp.passes;
    out->stopped = c->stopped;
    c->D = NULL;
}

void curv_measure_active(curv_t *c, const double *theta, const double *P,
                         const unsigned char *floored, unsigned long seed, curv_row_t *out)
{
    hvp_set_point(&c->hvp, theta);
    c->hvp.passes = 0.0;
    c->hvp.h_smallest = 0.0;
    c->stopped = 0;
    out->kinked = 0;
    gsl_rng_set(c->rng, P ? seed + 1 : seed);   // measure_precond's start, or (sgd) H's
    out->hessian_max = out->hessian_min = out->hessian_max_res = out->hessian_min_res = NAN;
    out->precond_max = out->precond_max_res = out->precond_eps_share = NAN;
    for (size_t o = 0; o < (size_t)c->rows * TENSOR_BLOCKS; o++)
        out->hessian_block_max[o] = out->precond_block_max[o] = NAN;
    c->D = NULL;
    if (P) {
        for (size_t i = 0; i < c->n; i++) c->Dbuf[i] = 1.0 / sqrt(P[i]);
        c->D = c->Dbuf;
    }
    const unsigned char *support = NULL;
    if (P && floored) {
        for (size_t i = 0; i < c->n; i++) c->mask[i] = !floored[i];
        support = c->mask;
    }
    lanczos_result_t res;
    run(c, c->D != NULL, support, c->K, &res, NULL, &out->kinked);
    out->precond_max_active = res.max;
    out->precond_active_res = res.res_max;
    out->h = c->hvp.h_smallest;
    out->passes = c->hvp.passes;
    out->stopped = c->stopped;
    c->D = NULL;
}

long curv_hvp_dump(curv_t *c, const double *theta, const double *v, double *Hv,
                   unsigned long seed, double *lmax, double *lmin, double *h, int *iters)
{
    hvp_set_point(&c->hvp, theta);
    c->D = NULL;
    c->stopped = 0;
    const double l2 = c->l2;
    c->l2 = 0.0;   // the dump's H·v and extremes are the loss's (measure/curvature.h)
    long kinked = hvp_apply(&c->hvp, v, Hv, h) ? 1 : 0;
    gsl_rng_set(c->rng, seed);
    lanczos_result_t res;
    run(c, 0, NULL, c->K, &res, NULL, &kinked);
    c->l2 = l2;
    *lmax = res.max;
    *lmin = res.min;
    *iters = res.iters;
    return kinked;
}

double curv_quad(curv_t *c, const double *theta, const double *u, const batch_t *b)
{
    double norm = 0.0;
    for (size_t i = 0; i < c->n; i++) norm += u[i] * u[i];
    norm = sqrt(norm);
    if (norm == 0.0) return 0.0;
    for (size_t i = 0; i < c->n; i++) c->u[i] = u[i] / norm;
    const batch_t *keep = c->hvp.b;
    if (b) c->hvp.b = b;   // the products' batch for this one (the caps hold it)
    hvp_set_point(&c->hvp, theta);
    const size_t kinked = hvp_apply(&c->hvp, c->u, c->top, NULL);
    c->hvp.b = keep;
    double q = 0.0;   // (u/‖u‖)ᵀH(u/‖u‖)·‖u‖²
    for (size_t i = 0; i < c->n; i++) q += c->u[i] * c->top[i];
    return kinked ? NAN : q * norm * norm;
}
