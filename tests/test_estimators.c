/* test_estimators.c — the curvature estimators (measure/slq.h, trace.h, critical.h,
 * directional.h, curvature.h's curv_density, curv_trace, curv_top; docs/design.md §10) against
 * exact values:
 *   - SLQ on an explicit symmetric matrix and on a tiny model's explicit Hessian: each probe's
 *     weights sum to 1 and its quadrature is exact for degree ≤ 2m − 1 (Σ τ²θ^p = vᵀH^p v/vᵀv);
 *     the probes' mean estimates tr(H^p)/n within its standard error; the same for a diagonal
 *     block (its principal submatrix) and for the active P^{−1/2}HP^{−1/2}; every block's
 *     density of a curvature row (probe.density_blocks) against its block of the Hessian;
 *   - Hutchinson's mean within its standard error of tr(H) over repeated seeds, whole and block;
 *   - the top-k Ritz values against GSL's eigenvalues;
 *   - the critical sharpness on a quadratic, where η_c = 2gᵀu/uᵀAu in closed form;
 *   - the directional and Bai et al.'s gradient-direction curvature on a case by hand;
 *   - the optimizer's update about to be taken (optim_direction) against the update it takes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort_vector.h>
#include <gsl/gsl_statistics_double.h>
#include "tests.h"
#include "config/config.h"
#include "measure/critical.h"
#include "measure/curvature.h"
#include "measure/directional.h"
#include "measure/hvp.h"
#include "measure/slq.h"
#include "model/session.h"
#include "train/optim.h"

/* Eigenvalues (ascending) of the symmetric n × n matrix A, by GSL. */
static void eigen(const double *A, size_t n, double *vals)
{
    double *a = malloc(n * n * sizeof(double));
    memcpy(a, A, n * n * sizeof(double));
    gsl_matrix_view av = gsl_matrix_view_array(a, n, n);
    gsl_vector_view ev = gsl_vector_view_array(vals, n);
    gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc(n);
    ck_assert_int_eq(gsl_eigen_symm(&av.matrix, &ev.vector, w), 0);
    gsl_sort_vector(&ev.vector);
    gsl_eigen_symm_free(w);
    free(a);
}

typedef struct {
    const double *A;
    size_t n;
} dense_t;

static void dense_op(void *ctx, const double *x, double *y)
{
    const dense_t *d = ctx;
    for (size_t i = 0; i < d->n; i++) {
        double s = 0.0;
        for (size_t j = 0; j < d->n; j++) s += d->A[i * d->n + j] * x[j];
        y[i] = s;
    }
}

/* vᵀA^p v / vᵀv by p products. */
static double rayleigh_power(const double *A, size_t n, const double *v, int p)
{
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double)), vv = 0.0, s = 0.0;
    memcpy(x, v, n * sizeof(double));
    dense_t d = {A, n};
    for (int k = 0; k < p; k++) {
        dense_op(&d, x, y);
        memcpy(x, y, n * sizeof(double));
    }
    for (size_t i = 0; i < n; i++) { s += v[i] * x[i]; vv += v[i] * v[i]; }
    free(x); free(y);
    return s / vv;
}

/* tr(A^p)/n from the eigenvalues. */
static double trace_power(const double *vals, size_t n, int p)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += pow(vals[i], p);
    return s / n;
}

/* SLQ of A (n × n, radius ρ) with `probes` probes × m steps from seed, against the exact
 * moments: each probe's weights sum to 1, Σ τ²θ^p = vᵀA^p v/vᵀv within tol·ρ^p for p ≤ 2m − 1,
 * and for p = 1, 2, 3 the probes' mean within 4 standard errors of tr(A^p)/n (plus tol·ρ^p).
 * A is used through op (the operator SLQ ran on: dense or the model's HVP); the probes are
 * redrawn from the same seed. Returns the largest p = 2 error in standard errors. */
static double check_slq(const double *A, size_t n, const unsigned char *support,
                        const double *nodes, const double *weights, int probes, int m,
                        unsigned long seed, double tol, const char *what)
{
    double *vals = malloc(n * sizeof(double)), *v = malloc(n * sizeof(double));
    double *mom = malloc((size_t)probes * sizeof(double));
    eigen(A, n, vals);
    const double rho = fmax(fabs(vals[0]), fabs(vals[n - 1]));
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    double worst = 0.0;
    for (int k = 0; k < probes; k++) {
        double sw = 0.0;
        for (int j = 0; j < m; j++) sw += weights[(size_t)k * m + j];
        ck_assert_msg(fabs(sw - 1.0) <= 1e-12, "%s: probe %d weights sum to %.15g", what, k, sw);
        slq_draw(r, 0, support, n, v);
        for (int p = 0; p <= 2 * m - 1; p++) {
            double q;
            slq_moments(nodes + (size_t)k * m, weights + (size_t)k * m, 1, m, p, &q);
            const double exact = rayleigh_power(A, n, v, p);
            worst = fmax(worst, fabs(q - exact) / pow(rho, p));
            ck_assert_msg(fabs(q - exact) <= tol * pow(rho, p), "%s: probe %d degree %d: %.15g vs "
                          "%.15g", what, k, p, q, exact);
        }
    }
    double zmax = 0.0;
    for (int p = 1; p <= 3; p++) {
        slq_moments(nodes, weights, probes, m, p, mom);
        const double mean = gsl_stats_mean(mom, 1, (size_t)probes);
        const double se = gsl_stats_sd(mom, 1, (size_t)probes) / sqrt(probes);
        const double exact = trace_power(vals, n, p), z = fabs(mean - exact) / se;
        printf("estimators: %s: degree %d mean %.8g vs tr(H^p)/n %.8g (%.2f standard errors)\n",
               what, p, mean, exact, z);
        ck_assert_msg(fabs(mean - exact) <= 4.0 * se + tol * pow(rho, p), "%s: degree %d", what, p);
        if (p == 2) zmax = z;
    }
    printf("estimators: %s: worst quadrature error %.2e of rho^p (degree <= %d)\n", what, worst,
           2 * m - 1);
    gsl_rng_free(r);
    free(vals); free(v); free(mom);
    return zmax;
}

/* SLQ on a random symmetric 30 × 30 matrix, 12 Rademacher probes × 5 steps: exact moments to
 * 1e-10 of ρ^p up to degree 9; and with m = n every node is an eigenvalue. */
START_TEST(test_slq_dense)
{
    const size_t n = 30;
    const int probes = 12, m = 5;
    double *A = malloc(n * n * sizeof(double)), *v = malloc(n * sizeof(double));
    double *nodes = malloc((size_t)probes * n * sizeof(double));
    double *weights = malloc((size_t)probes * n * sizeof(double)), vals[30];
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) A[i * n + j] = A[j * n + i] = gsl_ran_gaussian(r, 1.0);
    dense_t d = {A, n};
    lanczos_t l;
    ck_assert_int_eq(lanczos_alloc(&l, n, (int)n), 0);
    gsl_rng_set(r, 77);
    ck_assert_int_eq(slq_run(&l, dense_op, &d, NULL, probes, m, 0, r, v, nodes, weights), 0);
    check_slq(A, n, NULL, nodes, weights, probes, m, 77, 1e-10, "dense 30x30");
    eigen(A, n, vals);
    gsl_rng_set(r, 78);
    ck_assert_int_eq(slq_run(&l, dense_op, &d, NULL, 1, (int)n, 0, r, v, nodes, weights), 0);
    for (size_t j = 0; j < n; j++) {
        double nearest = INFINITY;
        for (size_t i = 0; i < n; i++) nearest = fmin(nearest, fabs(nodes[j] - vals[i]));
        ck_assert_msg(nearest <= 1e-9, "node %g is no eigenvalue (%g away)", nodes[j], nearest);
    }
    // the broadened density integrates to 1 (trapezoid on a wide grid)
    double t[4001], phi[4001], integral = 0.0;
    for (int k = 0; k < 4001; k++) t[k] = vals[0] - 5.0 + (vals[n - 1] - vals[0] + 10.0) * k / 4000.0;
    slq_density(nodes, weights, 1, (int)n, 0.3, t, 4001, phi);
    for (int k = 1; k < 4001; k++) integral += 0.5 * (phi[k] + phi[k - 1]) * (t[k] - t[k - 1]);
    ck_assert_msg(fabs(integral - 1.0) <= 1e-6, "density integrates to %.10g", integral);
    lanczos_free(&l);
    gsl_rng_free(r);
    free(A); free(v); free(nodes); free(weights);
}
END_TEST

/* ------------------------------------------------------------------- a tiny model */

/* Post-LN, L = 1, d = 4, 2 heads, d_ff = 6, V = 5, n = 4, B = 2, GELU (smooth): 174 parameters. */
static void tiny_config(config_t *cfg, int seed)
{
    config_defaults(cfg);
    cfg->model.layers = 1;
    cfg->model.d_model = 4;
    cfg->model.heads = 2;
    cfg->model.d_ff = 6;
    cfg->model.vocab = 5;
    cfg->model.seq_len = 4;
    cfg->model.activation = ACT_GELU;
    cfg->data.batch = 2;
    cfg->data.task = TASK_RANDOM;
    cfg->init.seed = (unsigned long)seed;
    cfg->init.scheme = INIT_NORMAL;
    cfg->init.std = 0.5;
}

typedef struct {
    session_t s;
    model_t *m;
    double *H;    /* (n, n) the explicit Hessian from H·e_i, symmetrised */
    size_t n;
    curv_t *c;
} tiny_t;

static void tiny_open(tiny_t *x, config_t *cfg)
{
    char err[512];
    ck_assert_int_eq(session_open(&x->s, cfg, err, sizeof err), 0);
    session_init(&x->s, cfg->init.seed);
    model_perturb(x->s.model, x->s.rng_init, 0.3);
    ck_assert_int_eq(session_next_batch(&x->s), 0);
    x->m = x->s.model;
    model_dropout_off(x->m);
    x->n = x->m->num_params;
    hvp_t h;
    ck_assert_int_eq(hvp_init(&h, x->m, &x->s.batch, HVP_H0, HVP_HMIN), 0);
    x->H = malloc(x->n * x->n * sizeof(double));
    double *e = calloc(x->n, sizeof(double)), *col = malloc(x->n * sizeof(double));
    for (size_t j = 0; j < x->n; j++) {
        e[j] = 1.0;
        ck_assert_uint_eq(hvp_apply(&h, e, col, NULL), 0);
        e[j] = 0.0;
        for (size_t i = 0; i < x->n; i++) x->H[i * x->n + j] = col[i];
    }
    for (size_t i = 0; i < x->n; i++)
        for (size_t j = 0; j < i; j++)
            x->H[i * x->n + j] = x->H[j * x->n + i] = 0.5 * (x->H[i * x->n + j] + x->H[j * x->n + i]);
    free(e); free(col);
    hvp_free(&h);
    ck_assert_int_eq(curv_create(&x->c, cfg, &x->m->caps, &x->s.batch, err, sizeof err), 0);
}

static void tiny_close(tiny_t *x)
{
    curv_free(x->c);
    free(x->H);
    session_close(&x->s);
}

/* The principal submatrix of A on keep (k × k); returns k. */
static size_t submatrix(const double *A, size_t n, const unsigned char *keep, double *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            for (size_t j = 0; j < n; j++)
                if (keep[j]) out[k++] = A[i * n + j];
    return (size_t)sqrt((double)k + 0.5);
}

/* SLQ of the tiny model's Hessian (16 probes × 6 steps): every probe's quadrature exact for
 * degree ≤ 11 within 1e-6 of ρ^p (the HVP's differences: docs/design.md §10's tolerance), the
 * mean within its standard error of tr(H^p)/n; then the same on the FFN block of layer 0 (its
 * principal submatrix) and on the active P^{−1/2}HP^{−1/2} (P with floored coordinates). */
START_TEST(test_slq_model)
{
    config_t cfg;
    tiny_config(&cfg, 5);
    cfg.probe.density_probes = 16;
    cfg.probe.density_iters = 6;
    tiny_t x;
    tiny_open(&x, &cfg);
    const size_t n = x.n;
    const int P_ = 16, m = 6;
    double *nodes = malloc((size_t)P_ * m * sizeof(double)), *weights = malloc((size_t)P_ * m * sizeof(double));
    ck_assert_int_eq(curv_density(x.c, x.m->params, NULL, NULL, CURV_WHOLE, 101, nodes, weights), 0);
    check_slq(x.H, n, NULL, nodes, weights, P_, m, 101, 1e-6, "tiny model H");
    // a block: FFN of layer 0 (its coordinates from the model's registry)
    unsigned char *keep = calloc(n, 1);
    for (int i = 0; i < x.m->num_tensors; i++) {
        const tensor_info_t *t = &x.m->tensors[i];
        if (t->layer == 0 && tensors_block_of(t) == TENSOR_BLOCK_FFN)
            for (size_t j = t->offset; j < t->offset + model_tensor_size(t); j++) keep[j] = 1;
    }
    double *sub = malloc(n * n * sizeof(double));
    const size_t k = submatrix(x.H, n, keep, sub);
    ck_assert_int_eq(curv_density(x.c, x.m->params, NULL, NULL, 0 * TENSOR_BLOCKS + TENSOR_BLOCK_FFN, 102,
                                  nodes, weights), 0);
    // the block's probes are drawn on the support: compare on the compacted coordinates
    double *subv = malloc(n * sizeof(double));
    (void)subv;
    unsigned char *all = malloc(k);
    memset(all, 1, k);
    check_slq(sub, k, all, nodes, weights, P_, m, 102, 1e-6, "tiny model FFN block");
    // the active preconditioned Hessian: D = P^{-1/2} with every 5th coordinate floored
    double *P = malloc(n * sizeof(double)), *DHD = malloc(n * n * sizeof(double));
    unsigned char *floored = malloc(n), *active = malloc(n);
    for (size_t i = 0; i < n; i++) {
        floored[i] = i % 5 == 2;
        active[i] = !floored[i];
        P[i] = 0.1 * (0.05 + (double)(i % 7) / 7.0);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) DHD[i * n + j] = x.H[i * n + j] / sqrt(P[i] * P[j]);
    const size_t ka = submatrix(DHD, n, active, sub);
    ck_assert_int_eq(curv_density(x.c, x.m->params, P, floored, CURV_WHOLE, 103, nodes, weights), 0);
    unsigned char *alla = malloc(ka);
    memset(alla, 1, ka);
    check_slq(sub, ka, alla, nodes, weights, P_, m, 103, 1e-6, "tiny model active P^-1 H");
    free(nodes); free(weights); free(keep); free(sub); free(subv); free(all); free(P); free(DHD);
    free(floored); free(active); free(alla);
    tiny_close(&x);
}
END_TEST

/* The SLQ density of every diagonal block (probe.density_blocks) as a curvature row has it
 * (curv_estimate, 16 probes × 6 steps from seed + 2 + block) against the block's principal
 * submatrix H_b of the explicit Hessian: each probe's weights sum to 1 and its quadrature is
 * exact for degree ≤ 11 within 1e-8 of ρ_b^p; with 16 trace probes from the same seeds, the
 * probes' mean of n_b·Σ τ²θ is the row's hessian_block_trace (1e-10 relative, the same unit
 * probes) and within 4 standard errors of tr(H_b); a kind a row lacks is NaN in both. */
START_TEST(test_block_density)
{
    config_t cfg;
    tiny_config(&cfg, 7);
    cfg.probe.density_probes = cfg.probe.trace_probes = 16;
    cfg.probe.density_iters = 6;
    cfg.probe.density_blocks = 1;
    tiny_t x;
    tiny_open(&x, &cfg);
    const size_t n = x.n, d = 16 * 6;
    const unsigned long seed = 31;
    curv_row_t row;
    ck_assert_int_eq(curv_row_alloc(&row, x.c), 0);
    curv_estimate(x.c, x.m->params, NULL, NULL, seed, &row);
    ck_assert_int_eq(row.kinked, 0);
    unsigned char *keep = malloc(n), *all = malloc(n);
    double *sub = malloc(n * n * sizeof(double)), mom[16];
    memset(all, 1, n);
    int measured = 0;
    for (int b = 0; b < curv_rows(x.c) * TENSOR_BLOCKS; b++) {
        memset(keep, 0, n);
        for (int i = 0; i < x.m->num_tensors; i++) {
            const tensor_info_t *t = &x.m->tensors[i];
            const int r = t->layer >= 0 ? t->layer : curv_rows(x.c) - 1;
            if (r * TENSOR_BLOCKS + tensors_block_of(t) == b)
                memset(keep + t->offset, 1, model_tensor_size(t));
        }
        double trb = 0.0;
        for (size_t i = 0; i < n; i++) trb += keep[i] ? x.H[i * n + i] : 0.0;
        const size_t k = submatrix(x.H, n, keep, sub);
        const double *nodes = row.block_density_nodes + b * d, *w = row.block_density_weights + b * d;
        if (k == 0) {
            for (size_t i = 0; i < d; i++) ck_assert(isnan(nodes[i]) && isnan(w[i]));
            ck_assert(isnan(row.block_trace[b]));
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "block %d (row %d, %s, n_b %zu)", b, b / TENSOR_BLOCKS,
                 tensors_block_name(b % TENSOR_BLOCKS), k);
        check_slq(sub, k, all, nodes, w, 16, 6, seed + 2 + (unsigned long)b, 1e-8, what);
        slq_moments(nodes, w, 16, 6, 1, mom);
        for (int p = 0; p < 16; p++) mom[p] *= (double)k;   // n_b·v̂ᵀH_b v̂ = vᵀH_b v
        const double mean = gsl_stats_mean(mom, 1, 16), se = gsl_stats_sd(mom, 1, 16) / 4.0;
        printf("estimators: %s: n_b*mean %.10g, hessian_block_trace %.10g, tr(H_b) %.10g "
               "(se %.3g)\n", what, mean, row.block_trace[b], trb, se);
        ck_assert_msg(fabs(mean - row.block_trace[b]) <= 1e-10 * fabs(row.block_trace[b]),
                      "%s: %.15g vs block trace %.15g", what, mean, row.block_trace[b]);
        ck_assert_msg(fabs(mean - trb) <= 4.0 * se + 1e-8 * fabs(trb), "%s: vs tr(H_b)", what);
        measured++;
    }
    ck_assert_int_ge(measured, 4);
    curv_row_free(&row);
    free(keep); free(all); free(sub);
    tiny_close(&x);
}
END_TEST

/* Hutchinson (30 Rademacher probes) over 20 seeds: every estimate within 4 standard errors of
 * the explicit tr(H), the mean square of the z-scores within [0.3, 3] (1 if the standard error
 * is honest); the FFN block's trace against its diagonal's sum. The top-3 Ritz values with
 * K = n against GSL's three largest eigenvalues (1e-6 of ρ), the first equal to curv_measure's
 * λ_max from the same stream. */
START_TEST(test_trace_and_top)
{
    config_t cfg;
    tiny_config(&cfg, 9);
    cfg.probe.trace_probes = 30;
    cfg.probe.curvature_iters = 174;
    tiny_t x;
    tiny_open(&x, &cfg);
    const size_t n = x.n;
    double tr = 0.0, trb = 0.0, z2 = 0.0;
    for (size_t i = 0; i < n; i++) tr += x.H[i * n + i];
    for (int i = 0; i < x.m->num_tensors; i++) {
        const tensor_info_t *t = &x.m->tensors[i];
        if (t->layer == 0 && tensors_block_of(t) == TENSOR_BLOCK_FFN)
            for (size_t j = t->offset; j < t->offset + model_tensor_size(t); j++) trb += x.H[j * n + j];
    }
    const int seeds = 20;
    for (int s = 0; s < seeds; s++) {
        trace_result_t r;
        ck_assert_int_eq(curv_trace(x.c, x.m->params, CURV_WHOLE, 500 + s, &r), 0);
        const double z = (r.mean - tr) / r.se;
        z2 += z * z / seeds;
        ck_assert_msg(fabs(z) <= 4.0, "seed %d: %.8g vs tr(H) %.8g, se %.3g", s, r.mean, tr, r.se);
        if (s == 0) printf("estimators: Hutchinson %.8g +- %.3g vs tr(H) %.8g\n", r.mean, r.se, tr);
        ck_assert_int_eq(curv_trace(x.c, x.m->params, 0 * TENSOR_BLOCKS + TENSOR_BLOCK_FFN, 900 + s, &r), 0);
        ck_assert_msg(fabs(r.mean - trb) <= 4.0 * r.se, "block seed %d: %.8g vs %.8g (se %.3g)", s,
                      r.mean, trb, r.se);
    }
    printf("estimators: Hutchinson over %d seeds: mean square z-score %.3f\n", seeds, z2);
    ck_assert_msg(z2 >= 0.3 && z2 <= 3.0, "mean square z-score %g", z2);
    double *vals = malloc(n * sizeof(double)), top[3];
    eigen(x.H, n, vals);
    const double rho = fmax(fabs(vals[0]), fabs(vals[n - 1]));
    ck_assert_int_eq(curv_top(x.c, x.m->params, 7, 3, top), 0);
    for (int i = 0; i < 3; i++) {
        printf("estimators: top %d: %.10g (explicit %.10g)\n", i + 1, top[i], vals[n - 1 - i]);
        ck_assert_msg(fabs(top[i] - vals[n - 1 - i]) <= 1e-6 * rho, "top %d", i + 1);
    }
    curv_row_t row;   // from the same stream, the first is curv_measure's λ_max, bit for bit
    ck_assert_int_eq(curv_row_alloc(&row, x.c), 0);
    curv_measure(x.c, x.m->params, NULL, NULL, 7, &row);
    ck_assert(top[0] == row.hessian_max);
    curv_row_free(&row);
    free(vals);
    tiny_close(&x);
}
END_TEST

/* ------------------------------------------------------------- critical sharpness */

typedef struct {
    const double *A, *theta, *u;
    size_t n;
} quad_t;

/* ½(θ − ηu)ᵀA(θ − ηu). */
static double quad_loss(void *ctx, double eta)
{
    const quad_t *q = ctx;
    double s = 0.0;
    for (size_t i = 0; i < q->n; i++)
        for (size_t j = 0; j < q->n; j++)
            s += (q->theta[i] - eta * q->u[i]) * q->A[i * q->n + j] * (q->theta[j] - eta * q->u[j]);
    return 0.5 * s;
}

/* On L = ½θᵀAθ (A 12 × 12 positive definite), along u = g and along an Adam-like u = g/(|g| +
 * 0.1): the bracket holds η* = 2gᵀu/uᵀAu with 1 − lo/hi ≤ 1/16 from guesses 77× and 0.013× of
 * it; at tolerance 1e-12, λ_c = uᵀAu/gᵀu to 1e-9. Along u = g, λ_c ≤ λ_max. */
START_TEST(test_critical_quadratic)
{
    const size_t n = 12;
    double A[144], B[144], theta[12], g[12], u[12], vals[12];
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 3);
    for (size_t i = 0; i < n * n; i++) B[i] = gsl_ran_gaussian(r, 1.0);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = i == j ? 0.1 : 0.0;
            for (size_t k = 0; k < n; k++) s += B[i * n + k] * B[j * n + k];
            A[i * n + j] = s;
        }
    for (size_t i = 0; i < n; i++) theta[i] = gsl_ran_gaussian(r, 1.0);
    dense_t d = {A, n};
    dense_op(&d, theta, g);
    eigen(A, n, vals);
    for (int form = 0; form < 2; form++) {
        for (size_t i = 0; i < n; i++) u[i] = form ? g[i] / (fabs(g[i]) + 0.1) : g[i];
        double Au[12], gu = 0.0, uAu = 0.0;
        dense_op(&d, u, Au);
        for (size_t i = 0; i < n; i++) { gu += g[i] * u[i]; uAu += u[i] * Au[i]; }
        const double eta_star = 2.0 * gu / uAu;
        quad_t q = {A, theta, u, n};
        const double L0 = quad_loss(&q, 0.0);
        for (int side = 0; side < 2; side++) {
            critical_result_t c;
            critical_search(quad_loss, &q, L0, side ? 77.0 * eta_star : 0.013 * eta_star,
                            CRITICAL_TOL, &c);
            ck_assert_msg(c.lo <= eta_star && eta_star <= c.hi, "bracket [%g, %g] vs %g", c.lo,
                          c.hi, eta_star);
            ck_assert(1.0 - c.lo / c.hi <= CRITICAL_TOL);
            ck_assert_double_eq_tol(c.sharpness, 2.0 / c.eta, 1e-15 * c.sharpness);
            printf("estimators: quadratic, u %s, guess %s: eta_c %.6g in [%.6g, %.6g] (exact "
                   "%.6g), %d passes\n", form ? "adam-like" : "= g", side ? "above" : "below",
                   c.eta, c.lo, c.hi, eta_star, c.passes);
        }
        critical_result_t c;
        critical_search(quad_loss, &q, L0, 1.0, 1e-12, &c);
        ck_assert_msg(fabs(c.sharpness - uAu / gu) <= 1e-9 * uAu / gu, "lambda_c %.15g vs %.15g",
                      c.sharpness, uAu / gu);
        if (!form) ck_assert(c.sharpness <= vals[n - 1] * (1 + 1e-9));
    }
    gsl_rng_free(r);
}
END_TEST

/* By hand: H = [[2, 1], [1, 3]], g = (1, 2), Hg = (4, 7): gᵀHg/gᵀg = 18/5 = 3.6; with D =
 * (0.5, 0.25), gᵀDHg/gᵀg = (1·0.5·4 + 2·0.25·7)/5 = 5.5/5 = 1.1. */
START_TEST(test_directional_by_hand)
{
    const double g[2] = {1, 2}, Hg[2] = {4, 7}, D[2] = {0.5, 0.25}, z[2] = {0, 0};
    ck_assert_double_eq_tol(directional_curvature(g, Hg, 2), 3.6, 1e-15);
    ck_assert_double_eq_tol(directional_precond_grad(g, Hg, D, 2), 1.1, 1e-15);
    ck_assert(isnan(directional_curvature(z, Hg, 2)));
}
END_TEST

/* optim_direction is the update about to be taken: for every optimizer (weight decay 0.1,
 * momentum 0.9 for sgd) after 3 updates — and at t = 0, before any — θ − η·u equals the state's
 * own next update at η = 3e-3 to 1e-12 of ‖Δθ‖, and the state (t, m, v) is unchanged by it. */
START_TEST(test_optim_direction)
{
    const size_t n = 40;
    const optimizer_t kinds[] = {OPT_ADAM, OPT_ADAMW, OPT_SGD, OPT_RADAM, OPT_GI_ADAM,
                                 OPT_STABLEADAMW};
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    real theta[40], g[40], next[40], m0[40], v0[40];
    double u[40];
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int before = 0; before <= 3; before += 3) {
            config_t cfg;
            config_defaults(&cfg);
            cfg.train.optimizer = kinds[k];
            cfg.train.weight_decay = 0.1;
            cfg.train.momentum = 0.9;
            optim_t o;
            ck_assert_int_eq(optim_init(&o, &cfg, n), 0);
            gsl_rng_set(r, 40 + k);
            for (size_t i = 0; i < n; i++) theta[i] = gsl_ran_gaussian(r, 1.0);
            for (int t = 0; t < before; t++) {
                for (size_t i = 0; i < n; i++) g[i] = gsl_ran_gaussian(r, 1.0);
                optim_update(&o, theta, g, 1e-2);
            }
            for (size_t i = 0; i < n; i++) g[i] = gsl_ran_gaussian(r, 1.0);
            memcpy(m0, o.m, n * sizeof(real));
            if (o.v) memcpy(v0, o.v, n * sizeof(real));
            const long t0 = o.t;
            ck_assert_int_eq(optim_direction(&o, theta, g, u), 0);
            ck_assert_int_eq(o.t, t0);
            ck_assert(!memcmp(m0, o.m, n * sizeof(real)) && (!o.v || !memcmp(v0, o.v, n * sizeof(real))));
            memcpy(next, theta, n * sizeof(real));
            optim_update(&o, next, g, 3e-3);
            double err = 0.0, step = 0.0;
            for (size_t i = 0; i < n; i++) {
                const double d = theta[i] - next[i];
                step += d * d;
                err = fmax(err, fabs(d - 3e-3 * u[i]));
            }
            ck_assert_msg(err <= 1e-12 * sqrt(step), "optimizer %d after %d updates: %g of %g",
                          (int)kinds[k], before, err, sqrt(step));
            optim_free(&o);
        }
    gsl_rng_free(r);
}
END_TEST

/* Bai et al. 2025's Ĥ = diag(D)·H by hand: adam (β₁ = 0.9) with P = (2, 0.5): D = 0.1/(1.9·P) =
 * (1/38, 1/9.5); sgd, momentum 0.9: D = 1/1.9; plain sgd: 1. And the threshold 2/η it implies:
 * Adam's iteration with the preconditioner frozen on L = ½aθ² (m ← β₁m + (1 − β₁)aθ,
 * θ ← θ − η·m/P, as optim_precond defines P) decays when a·D = 0.98·2/η and grows when
 * a·D = 1.02·2/η (D without the momentum factor, the old definition, would put the boundary
 * 19× lower). */
START_TEST(test_bai_diag)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.optimizer = OPT_ADAM;
    cfg.train.beta1 = 0.9;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 2), 0);
    const double P[2] = {2.0, 0.5};
    double D[2];
    optim_bai_diag(&o, P, 2, D);
    ck_assert_double_eq_tol(D[0], 1.0 / 38.0, 1e-15);
    ck_assert_double_eq_tol(D[1], 1.0 / 9.5, 1e-15);
    const double eta = 1e-3;
    for (int up = 0; up <= 1; up++) {
        const double a = (up ? 1.02 : 0.98) * (2.0 / eta) / D[0];
        double theta = 1.0, m = 0.0;
        for (int t = 0; t < 4000 && fabs(theta) < 1e6; t++) {
            m = 0.9 * m + 0.1 * a * theta;
            theta -= eta * m / P[0];
        }
        ck_assert_msg(up ? fabs(theta) > 1e3 : fabs(theta) < 1e-3, "a·D %s 2/eta: theta %g",
                      up ? "above" : "below", theta);
    }
    optim_free(&o);
    const double one = 1.0;
    cfg.train.optimizer = OPT_SGD;
    cfg.train.momentum = 0.9;
    ck_assert_int_eq(optim_init(&o, &cfg, 1), 0);
    optim_bai_diag(&o, &one, 1, D);
    ck_assert_double_eq_tol(D[0], 1.0 / 1.9, 1e-15);
    optim_free(&o);
    cfg.train.momentum = 0.0;
    ck_assert_int_eq(optim_init(&o, &cfg, 1), 0);
    optim_bai_diag(&o, &one, 1, D);
    ck_assert_double_eq_tol(D[0], 1.0, 1e-15);
    optim_free(&o);
}
END_TEST

Suite *estimators_suite(void)
{
    Suite *s = suite_create("estimators");
    TCase *tc = tcase_create("estimators");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_slq_dense);
    tcase_add_test(tc, test_slq_model);
    tcase_add_test(tc, test_trace_and_top);
    tcase_add_test(tc, test_block_density);
    tcase_add_test(tc, test_critical_quadratic);
    tcase_add_test(tc, test_directional_by_hand);
    tcase_add_test(tc, test_optim_direction);
    tcase_add_test(tc, test_bai_diag);
    suite_add_tcase(s, tc);
    return s;
}
