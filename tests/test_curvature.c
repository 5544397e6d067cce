/* test_curvature.c — the curvature measure (measure/hvp.h, lanczos.h, curvature.h; docs/design.md
 * §10) against explicitly built matrices:
 *   - Lanczos on explicit symmetric matrices: all eigenvalues once K = n, each Ritz value within
 *     its residual bound of an eigenvalue, a support giving the principal submatrix's;
 *   - the Hessian of a tiny model built column by column from H·e_i, symmetric, against
 *     4-point second differences of the loss alone (no backward: an independent check);
 *   - λ_max, λ_min of curv_measure against GSL's eigenvalues of that Hessian, and λ_max of
 *     P^{−1/2}HP^{−1/2}, its active part (floored coordinates left out), the top eigenvector's
 *     floored share and every diagonal block's maximum against the explicit matrices;
 *   - the kink check: a step that switches ReLU units gives a wrong product, the check shrinks it;
 *   - Adam's preconditioner and thresholds (train/optim.h) against their formulas by hand;
 *   - training unchanged by the measure (bit for bit), and a float32 run's measure equal to a
 *     float64 one on its widened parameters and moments.
 * Tolerances: 1e-6 of the spectral radius for eigenvalues (docs/design.md §10), stated per test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include "tests.h"
#include "config/config.h"
#include "measure/curvature.h"
#include "measure/hvp.h"
#include "measure/lanczos.h"
#include "model/session.h"
#include "train/core_f32.h"
#include "train/optim.h"
#include "train/train.h"

#define EIG_TOL 1e-6

/* ------------------------------------------------------------------ explicit matrices */

/* Eigenvalues (ascending) and, when vecs != NULL, unit eigenvectors (columns) of the symmetric
 * n × n matrix A (not changed), by GSL. */
static void eigen(const double *A, size_t n, double *vals, double *vecs)
{
    double *a = malloc(n * n * sizeof(double));
    memcpy(a, A, n * n * sizeof(double));
    gsl_matrix_view av = gsl_matrix_view_array(a, n, n);
    gsl_vector_view ev = gsl_vector_view_array(vals, n);
    gsl_matrix *V = gsl_matrix_alloc(n, n);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc(n);
    ck_assert_int_eq(gsl_eigen_symmv(&av.matrix, &ev.vector, V, w), 0);
    gsl_eigen_symmv_sort(&ev.vector, V, GSL_EIGEN_SORT_VAL_ASC);
    if (vecs) memcpy(vecs, V->data, n * n * sizeof(double));
    gsl_eigen_symmv_free(w);
    gsl_matrix_free(V);
    free(a);
}

/* The principal submatrix of A (n × n) on the coordinates with keep[i]; returns its size. */
static size_t submatrix(const double *A, size_t n, const unsigned char *keep, double *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) continue;
        size_t l = 0;
        for (size_t j = 0; j < n; j++)
            if (keep[j]) out[k * n + l++] = A[i * n + j];
        k++;
    }
    // compact the rows (they were written with stride n)
    for (size_t i = 0; i < k; i++) memmove(out + i * k, out + i * n, k * sizeof(double));
    return k;
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

/* Lanczos on a random symmetric 40 × 40 matrix: with K = n (the whole space) its extreme Ritz
 * values are the extreme eigenvalues to 1e-10 of the radius; with K = 8 each extreme Ritz value
 * lies within its residual bound of an eigenvalue; a support gives the principal submatrix's
 * extremes. */
START_TEST(test_lanczos_explicit)
{
    const size_t n = 40;
    double *A = malloc(n * n * sizeof(double)), *vals = malloc(n * sizeof(double));
    double *sub = malloc(n * n * sizeof(double)), *sv = malloc(n * sizeof(double));
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) A[i * n + j] = A[j * n + i] = gsl_ran_gaussian(r, 1.0);
    eigen(A, n, vals, NULL);
    const double radius = fmax(fabs(vals[0]), fabs(vals[n - 1]));
    dense_t d = {A, n};
    lanczos_t l;
    ck_assert_int_eq(lanczos_alloc(&l, n, (int)n), 0);
    lanczos_result_t res;
    lanczos_run(&l, dense_op, &d, NULL, (int)n, r, &res, NULL);
    ck_assert_msg(fabs(res.max - vals[n - 1]) <= 1e-10 * radius, "max %.15g vs %.15g", res.max,
                  vals[n - 1]);
    ck_assert_msg(fabs(res.min - vals[0]) <= 1e-10 * radius, "min %.15g vs %.15g", res.min, vals[0]);
    lanczos_run(&l, dense_op, &d, NULL, 8, r, &res, NULL);
    ck_assert_int_eq(res.iters, 8);
    for (int e = 0; e < 2; e++) {
        const double theta = e ? res.min : res.max, bound = e ? res.res_min : res.res_max;
        double nearest = INFINITY;
        for (size_t i = 0; i < n; i++) nearest = fmin(nearest, fabs(vals[i] - theta));
        ck_assert_msg(nearest <= bound * (1 + 1e-9) + 1e-12 * radius,
                      "Ritz value %g: nearest eigenvalue %g away, bound %g", theta, nearest, bound);
        ck_assert(theta >= vals[0] - 1e-12 * radius && theta <= vals[n - 1] + 1e-12 * radius);
    }
    unsigned char keep[40];
    for (size_t i = 0; i < n; i++) keep[i] = i % 3 != 0;
    const size_t k = submatrix(A, n, keep, sub);
    eigen(sub, k, sv, NULL);
    lanczos_run(&l, dense_op, &d, keep, (int)n, r, &res, NULL);
    ck_assert_int_le(res.iters, (int)k);   // the restricted space has dimension k
    ck_assert_msg(fabs(res.max - sv[k - 1]) <= 1e-10 * radius, "restricted max %.15g vs %.15g",
                  res.max, sv[k - 1]);
    ck_assert_msg(fabs(res.min - sv[0]) <= 1e-10 * radius, "restricted min");
    lanczos_free(&l);
    gsl_rng_free(r);
    free(A); free(vals); free(sub); free(sv);
}
END_TEST

/* ------------------------------------------------------------------- a tiny model */

/* Post-LN, L = 1, d = 4, 2 heads, d_ff = 6, V = 5, n = 4, B = 2: 174 parameters. */
static void tiny_config(config_t *cfg, activation_t act, int seed)
{
    config_defaults(cfg);
    cfg->model.layers = 1;
    cfg->model.d_model = 4;
    cfg->model.heads = 2;
    cfg->model.d_ff = 6;
    cfg->model.vocab = 5;
    cfg->model.seq_len = 4;
    cfg->model.activation = act;
    cfg->data.batch = 2;
    cfg->data.task = TASK_RANDOM;
    cfg->init.seed = (unsigned long)seed;
    cfg->init.scheme = INIT_NORMAL;   // N(0, 0.5²): curvature well away from zero
    cfg->init.std = 0.5;
}

typedef struct {
    session_t s;
    model_t *m;
    hvp_t h;
    double *H;     /* (n, n) the explicit Hessian, symmetrised */
    size_t n;
    double asym;   /* max |H − Hᵀ| / max |H| before symmetrising */
} explicit_t;

/* The session of cfg (perturbed so biases and γ are not 0 and 1), its first batch, and H built
 * column by column: H·e_i by the kink-checked central difference. */
static void explicit_open(explicit_t *x, const config_t *cfg)
{
    char err[512];
    ck_assert_int_eq(session_open(&x->s, cfg, err, sizeof err), 0);
    session_init(&x->s, cfg->init.seed);
    model_perturb(x->s.model, x->s.rng_init, 0.3);
    ck_assert_int_eq(session_next_batch(&x->s), 0);
    x->m = x->s.model;
    model_dropout_off(x->m);
    x->n = x->m->num_params;
    ck_assert_int_eq(hvp_init(&x->h, x->m, &x->s.batch, HVP_H0, HVP_HMIN), 0);
    x->H = malloc(x->n * x->n * sizeof(double));
    double *e = calloc(x->n, sizeof(double)), *col = malloc(x->n * sizeof(double));
    for (size_t j = 0; j < x->n; j++) {
        e[j] = 1.0;
        ck_assert_uint_eq(hvp_apply(&x->h, e, col, NULL), 0);
        e[j] = 0.0;
        for (size_t i = 0; i < x->n; i++) x->H[i * x->n + j] = col[i];
    }
    double big = 0.0, asym = 0.0;
    for (size_t i = 0; i < x->n; i++)
        for (size_t j = 0; j < x->n; j++) {
            big = fmax(big, fabs(x->H[i * x->n + j]));
            asym = fmax(asym, fabs(x->H[i * x->n + j] - x->H[j * x->n + i]));
        }
    x->asym = asym / big;
    for (size_t i = 0; i < x->n; i++)
        for (size_t j = 0; j < i; j++)
            x->H[i * x->n + j] = x->H[j * x->n + i] =
                0.5 * (x->H[i * x->n + j] + x->H[j * x->n + i]);
    free(e);
    free(col);
}

static void explicit_close(explicit_t *x)
{
    hvp_free(&x->h);
    free(x->H);
    session_close(&x->s);
}

/* The loss (objective) at θ + a·e_i + b·e_j. */
static double loss_at(explicit_t *x, size_t i, size_t j, double a, double b)
{
    model_t *m = x->m;
    const double pi = m->params[i], pj = m->params[j];
    m->params[i] += a;
    m->params[j] += b;
    model_forward(m, &x->s.batch);
    const double L = model_objective(m);
    m->params[i] = pi;
    m->params[j] = pj;
    return L;
}

/* The explicit Hessian of a smooth (GELU) tiny model is symmetric to 1e-8 of its largest entry
 * and equals the 4-point second differences of the loss alone, (L(+,+) − L(+,−) − L(−,+) +
 * L(−,−))/4δ², δ = 1e-4 (error O(δ²) + rounding ε/δ²), within 1e-6 of its largest entry, at
 * 300 entries spread over every tensor pair. */
START_TEST(test_hessian_against_loss)
{
    config_t cfg;
    tiny_config(&cfg, ACT_GELU, 5);
    explicit_t x;
    explicit_open(&x, &cfg);
    ck_assert_msg(x.asym <= 1e-8, "H − Hᵀ: %g of its largest entry", x.asym);
    double big = 0.0, worst = 0.0;
    for (size_t i = 0; i < x.n * x.n; i++) big = fmax(big, fabs(x.H[i]));
    const double d = 1e-4;
    for (int k = 0; k < 300; k++) {
        const size_t i = (size_t)k * 7919 % x.n, j = (size_t)k * 104729 % x.n;
        const double fd = i == j
            ? (-loss_at(&x, i, i, 2 * d, 0) + 16 * loss_at(&x, i, i, d, 0) - 30 * loss_at(&x, i, i, 0, 0) +
               16 * loss_at(&x, i, i, -d, 0) - loss_at(&x, i, i, -2 * d, 0)) / (12 * d * d)
            : (loss_at(&x, i, j, d, d) - loss_at(&x, i, j, d, -d) - loss_at(&x, i, j, -d, d) +
               loss_at(&x, i, j, -d, -d)) / (4 * d * d);
        worst = fmax(worst, fabs(fd - x.H[i * x.n + j]) / big);
    }
    printf("curvature: explicit Hessian (%zu parameters) vs second differences of the loss: "
           "worst %.2e of its largest entry, asymmetry %.2e\n", x.n, worst, x.asym);
    ck_assert_msg(worst <= 1e-6, "second differences: %g", worst);
    explicit_close(&x);
}
END_TEST

/* curv_create for cfg on x's batch (dropout off in the copy). */
static curv_t *curv_on(const config_t *cfg, explicit_t *x)
{
    curv_t *c;
    char err[512];
    ck_assert_int_eq(curv_create(&c, cfg, &x->m->caps, &x->s.batch, err, sizeof err), 0);
    ck_assert_uint_eq(curv_num_params(c), x->n);
    return c;
}

/* λ_max and λ_min of curv_measure equal the explicit Hessian's eigenvalues (GSL) within 1e-6 of
 * the spectral radius: with K = n Lanczos spans the space, and with the default K = 20 each
 * extreme lies within its residual bound of an eigenvalue. ReLU and GELU. */
START_TEST(test_extremes_against_explicit)
{
    for (int a = 0; a < 2; a++) {
        config_t cfg;
        tiny_config(&cfg, a ? ACT_GELU : ACT_RELU, 7 + a);
        explicit_t x;
        explicit_open(&x, &cfg);
        double *vals = malloc(x.n * sizeof(double));
        eigen(x.H, x.n, vals, NULL);
        const double radius = fmax(fabs(vals[0]), fabs(vals[x.n - 1]));
        cfg.probe.curvature_iters = (int)x.n;
        cfg.probe.curvature_block_iters = 0;
        curv_t *c = curv_on(&cfg, &x);
        curv_row_t row;
        ck_assert_int_eq(curv_row_alloc(&row, c), 0);
        curv_measure(c, x.m->params, NULL, NULL, 99, &row);
        printf("curvature: %s tiny model: lambda_max %.12g (explicit %.12g), lambda_min %.12g "
               "(explicit %.12g), h %g\n", a ? "GELU" : "ReLU", row.hessian_max, vals[x.n - 1],
               row.hessian_min, vals[0], row.h);
        ck_assert_int_eq(row.kinked, 0);
        ck_assert_msg(fabs(row.hessian_max - vals[x.n - 1]) <= EIG_TOL * radius, "lambda_max");
        ck_assert_msg(fabs(row.hessian_min - vals[0]) <= EIG_TOL * radius, "lambda_min");
        curv_row_free(&row);
        curv_free(c);
        cfg.probe.curvature_iters = 20;
        c = curv_on(&cfg, &x);
        ck_assert_int_eq(curv_row_alloc(&row, c), 0);
        curv_measure(c, x.m->params, NULL, NULL, 99, &row);
        const double got[2] = {row.hessian_max, row.hessian_min};
        const double bound[2] = {row.hessian_max_res, row.hessian_min_res};
        for (int e = 0; e < 2; e++) {
            double nearest = INFINITY;
            for (size_t i = 0; i < x.n; i++) nearest = fmin(nearest, fabs(vals[i] - got[e]));
            ck_assert_msg(nearest <= bound[e] + EIG_TOL * radius, "K = 20: Ritz value %g is %g "
                          "from the spectrum, bound %g", got[e], nearest, bound[e]);
        }
        curv_row_free(&row);
        curv_free(c);
        free(vals);
        explicit_close(&x);
    }
}
END_TEST

/* A preconditioner with ε-floored coordinates, as Adam's at update 0: every 5th coordinate
 * P = (1 − β₁)·ε = 1e-9 (floored), the others (1 − β₁)·(|g| + ε) for |g| in [1e-3, 1]. */
static void test_precond(size_t n, double *P, unsigned char *floored)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 3);
    for (size_t i = 0; i < n; i++) {
        floored[i] = i % 5 == 2;
        P[i] = floored[i] ? 0.1 * 1e-8 : 0.1 * (pow(10.0, -3.0 * gsl_rng_uniform(r)) + 1e-8);
    }
    gsl_rng_free(r);
}

/* λ_max of P^{−1/2}HP^{−1/2} of the explicit H, of its principal submatrix without the floored
 * coordinates (active), the top eigenvector's share on them, and every diagonal block's λ_max,
 * plain and preconditioned-active: against curv_measure with K and K_b spanning each space, to
 * 1e-6 of the matrix's spectral radius (the share to 1e-6). */
START_TEST(test_precond_and_blocks)
{
    config_t cfg;
    tiny_config(&cfg, ACT_RELU, 13);
    explicit_t x;
    explicit_open(&x, &cfg);
    const size_t n = x.n;
    double *P = malloc(n * sizeof(double)), *DHD = malloc(n * n * sizeof(double));
    double *vals = malloc(n * sizeof(double)), *vecs = malloc(n * n * sizeof(double));
    double *sub = malloc(n * n * sizeof(double));
    unsigned char *floored = malloc(n), *keep = malloc(n);
    test_precond(n, P, floored);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) DHD[i * n + j] = x.H[i * n + j] / sqrt(P[i] * P[j]);
    eigen(DHD, n, vals, vecs);
    const double pmax = vals[n - 1], prad = fmax(fabs(vals[0]), fabs(pmax));
    double share = 0.0;
    for (size_t i = 0; i < n; i++)
        if (floored[i]) share += vecs[i * n + n - 1] * vecs[i * n + n - 1];
    for (size_t i = 0; i < n; i++) keep[i] = !floored[i];
    size_t k = submatrix(DHD, n, keep, sub);
    eigen(sub, k, vals, NULL);
    const double active = vals[k - 1], arad = fmax(fabs(vals[0]), fabs(active));

    cfg.probe.curvature_iters = (int)n;
    cfg.probe.curvature_block_iters = (int)n;
    curv_t *c = curv_on(&cfg, &x);
    curv_row_t row;
    ck_assert_int_eq(curv_row_alloc(&row, c), 0);
    curv_measure(c, x.m->params, P, floored, 5, &row);
    printf("curvature: lambda_max(P^-1 H) %.10g (explicit %.10g), active %.10g (%.10g), floored "
           "share %.9f (%.9f)\n", row.precond_max, pmax, row.precond_max_active, active,
           row.precond_eps_share, share);
    ck_assert_msg(fabs(row.precond_max - pmax) <= EIG_TOL * prad, "precond_max");
    ck_assert_msg(fabs(row.precond_max_active - active) <= EIG_TOL * arad, "precond_max_active");
    ck_assert_msg(fabs(row.precond_eps_share - share) <= 1e-6, "eps share");
    ck_assert_msg(share > 0.5, "the test's P should put the top eigenvector on the floor (%g)", share);

    // every block: the registry's kinds, rows = layers + the tensors outside them
    const int rows = curv_rows(c);
    ck_assert_int_eq(rows, x.m->rows + 1);
    int blocks = 0;
    for (int r = 0; r < rows; r++)
        for (int kind = 0; kind < TENSOR_BLOCKS; kind++) {
            memset(keep, 0, n);
            for (int t = 0; t < x.m->num_tensors; t++) {
                const tensor_info_t *ti = &x.m->tensors[t];
                if ((ti->layer >= 0 ? ti->layer : rows - 1) == r && tensors_block_of(ti) == kind)
                    memset(keep + ti->offset, 1, model_tensor_size(ti));
            }
            const double got = row.hessian_block_max[r * TENSOR_BLOCKS + kind];
            const double pgot = row.precond_block_max[r * TENSOR_BLOCKS + kind];
            k = submatrix(x.H, n, keep, sub);
            if (k == 0) {
                ck_assert_msg(isnan(got) && isnan(pgot), "block %d/%s has no tensor: NaN", r,
                              tensors_block_name(kind));
                continue;
            }
            blocks++;
            eigen(sub, k, vals, NULL);
            ck_assert_msg(fabs(got - vals[k - 1]) <= EIG_TOL * fmax(fabs(vals[0]), fabs(vals[k - 1])),
                          "block %d/%s: %.12g vs %.12g", r, tensors_block_name(kind), got, vals[k - 1]);
            for (size_t i = 0; i < n; i++) keep[i] = keep[i] && !floored[i];
            k = submatrix(DHD, n, keep, sub);
            eigen(sub, k, vals, NULL);
            ck_assert_msg(fabs(pgot - vals[k - 1]) <= EIG_TOL * fmax(fabs(vals[0]), fabs(vals[k - 1])),
                          "preconditioned block %d/%s: %.12g vs %.12g", r,
                          tensors_block_name(kind), pgot, vals[k - 1]);
        }
    ck_assert_int_eq(blocks, 5);   // embed; attention Q/K, V/O; FFN; norms
    curv_row_free(&row);
    curv_free(c);
    free(P); free(DHD); free(vals); free(vecs); free(sub); free(floored); free(keep);
    explicit_close(&x);
}
END_TEST

/* The kink rule matters: on a ReLU model with 2 560 units, a step of 0.1 switches units and its
 * central difference is far from H·v (the product at h = 1e-6, which switches none); the
 * checked product started at 0.1 shrinks h until no unit switches and agrees within 1e-5
 * (what is left is the O(h²) truncation of the step it settles on). */
START_TEST(test_kink_check)
{
    config_t cfg;
    tiny_config(&cfg, ACT_RELU, 21);
    cfg.model.d_ff = 40;
    cfg.model.seq_len = 8;
    cfg.data.batch = 8;
    cfg.model.layers = 1;
    session_t s;
    char err[256];
    ck_assert_int_eq(session_open(&s, &cfg, err, sizeof err), 0);
    session_init(&s, cfg.init.seed);
    ck_assert_int_eq(session_next_batch(&s), 0);
    model_t *m = s.model;
    const size_t n = m->num_params;
    double *v = malloc(n * sizeof(double)), *ref = malloc(n * sizeof(double));
    double *wide = malloc(n * sizeof(double)), *checked = malloc(n * sizeof(double));
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 4);
    double nv = 0.0;
    for (size_t i = 0; i < n; i++) {
        v[i] = gsl_ran_gaussian(r, 1.0);
        nv += v[i] * v[i];
    }
    for (size_t i = 0; i < n; i++) v[i] /= sqrt(nv);
    hvp_t h;
    ck_assert_int_eq(hvp_init(&h, m, &s.batch, HVP_H0, HVP_HMIN), 0);
    ck_assert_uint_eq(hvp_apply(&h, v, ref, NULL), 0);
    ck_assert_uint_eq(h.units, (size_t)8 * 8 * 40);
    const size_t switched = hvp_apply_fixed(&h, v, wide, 0.1);
    double e_wide = 0.0, e_checked = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; i++) norm += ref[i] * ref[i];
    for (size_t i = 0; i < n; i++) e_wide += (wide[i] - ref[i]) * (wide[i] - ref[i]);
    hvp_t h2;
    ck_assert_int_eq(hvp_init(&h2, m, &s.batch, 0.1, HVP_HMIN), 0);
    double used;
    ck_assert_uint_eq(hvp_apply(&h2, v, checked, &used), 0);
    for (size_t i = 0; i < n; i++) e_checked += (checked[i] - ref[i]) * (checked[i] - ref[i]);
    e_wide = sqrt(e_wide / norm);
    e_checked = sqrt(e_checked / norm);
    printf("curvature: h = 0.1 switched %zu of %zu ReLU units, error %.3g; the check shrank "
           "h %ld times to %g, error %.3g\n", switched, h.units, e_wide, h2.shrinks, used,
           e_checked);
    ck_assert_msg(switched > 0, "h = 0.1 switched no unit: the test shows nothing");
    ck_assert_msg(e_wide > 1e-2, "the product across kinks should be wrong (%g)", e_wide);
    ck_assert_int_gt(h2.shrinks, 0);
    ck_assert_msg(e_checked <= 1e-5, "the checked product: %g", e_checked);
    // the parameters are θ again, bit for bit
    ck_assert_int_eq(memcmp(m->params, h.theta, n * sizeof(double)), 0);
    hvp_free(&h);
    hvp_free(&h2);
    gsl_rng_free(r);
    free(v); free(ref); free(wide); free(checked);
    session_close(&s);
}
END_TEST

/* ----------------------------------------------------------------- the optimizer's side */

/* optim_precond (docs/design.md §10) by hand on three coordinates: adam at t = 0 from the
 * gradient the first update takes, P = (1 − β₁)(|g| + ε), floored where |g| < ε; the same P
 * after that update (t = 1, from v); L2 weight decay enters the first gradient; radam's
 * un-adapted step P = 1 − β₁ᵗ, its adapted one divided by rₜ; sgd P = 1; the thresholds. */
START_TEST(test_optim_precond)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.beta1 = 0.9;
    cfg.train.beta2 = 0.98;
    cfg.train.eps = 1e-8;
    const double g[3] = {0.1, 0.0, 3e-9}, theta[3] = {1.0, -2.0, 0.5};
    double th[3], P[3], P1[3];
    unsigned char fl[3];
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    ck_assert_uint_eq(optim_precond(&o, theta, g, P, fl), 2);
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(fabs(P[i] - 0.1 * (fabs(g[i]) + 1e-8)) <= 1e-15 * P[i], "P[%d]", i);
        ck_assert_int_eq(fl[i], i > 0);
    }
    memcpy(th, theta, sizeof th);
    optim_update(&o, th, g, 1e-3);
    ck_assert_uint_eq(optim_precond(&o, th, g, P1, fl), 2);
    for (int i = 0; i < 3; i++) ck_assert_msg(P1[i] == P[i], "P after update 1 [%d]", i);
    ck_assert_double_eq_tol(optim_threshold(&o, 1e-3), 38.0 / 1e-3, 1e-9);
    ck_assert(isinf(optim_threshold(&o, 0.0)));
    optim_free(&o);

    cfg.train.weight_decay = 0.1;   // adam's L2: the first gradient is g + λθ
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    optim_precond(&o, theta, g, P, fl);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(fabs(P[i] - 0.1 * (fabs(g[i] + 0.1 * theta[i]) + 1e-8)) <= 1e-15 * P[i],
                      "L2 P[%d]", i);
    optim_free(&o);
    cfg.train.weight_decay = 0.0;

    cfg.train.optimizer = OPT_RADAM;   // ρ₁ = 1 ≤ 4: the un-adapted step at t = 1
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    ck_assert_uint_eq(optim_precond(&o, theta, g, P, fl), 0);
    for (int i = 0; i < 3; i++) ck_assert_double_eq_tol(P[i], 0.1, 1e-15);
    memcpy(th, theta, sizeof th);
    for (int t = 0; t < 6; t++) optim_update(&o, th, g, 1e-3);   // ρ₆ = 5.9 > 4: adapted
    optim_precond(&o, th, g, P, fl);
    const double b2t = pow(0.98, 6), rinf = 2 / 0.02 - 1, rho = rinf - 12 * b2t / (1 - b2t);
    const double rect = sqrt((rho - 4) * (rho - 2) * rinf / ((rinf - 4) * (rinf - 2) * rho));
    const double want0 = (1 - pow(0.9, 6)) * (sqrt(o.v[0] / (1 - b2t)) + 1e-8) / rect;
    ck_assert_msg(rho > 4 && fabs(P[0] - want0) <= 1e-12 * want0, "radam P %.17g vs %.17g", P[0], want0);
    optim_free(&o);

    cfg.train.optimizer = OPT_SGD;
    cfg.train.momentum = 0.9;
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    ck_assert_uint_eq(optim_precond(&o, theta, g, P, fl), 0);
    for (int i = 0; i < 3; i++) ck_assert(P[i] == 1.0 && !fl[i]);
    ck_assert_double_eq_tol(optim_threshold(&o, 0.01), 2 * 1.9 / 0.01, 1e-9);
    o.momentum = 0.0;
    ck_assert_double_eq_tol(optim_threshold(&o, 0.01), 2 / 0.01, 1e-9);
    optim_free(&o);
}
END_TEST

/* The relative floor of optim_precond (docs/design.md §10) by hand: two tensors, adam at
 * t = 0 (v̂ = g²). Tensor A: |g| = 1, 1, 1, 1, 5e-3, 2e-2, 0, so RMS(√v̂) = √(4.000425/7) and
 * the floor 1e-2 of it is 7.56e-3: 5e-3 and 0 are floored, 2e-2 is not. Tensor B: every |g|
 * 1e-6 but one 2e-9: its RMS·1e-2 ≈ 1e-8 is at ε, so only the 2e-9 (below ε) is floored —
 * the floor is per tensor, never below ε. P itself does not depend on the floor. */
START_TEST(test_optim_precond_floor)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.beta1 = 0.9;
    cfg.train.beta2 = 0.98;
    cfg.train.eps = 1e-8;
    const double g[11] = {1, -1, 1, 1, 5e-3, -2e-2, 0, 1e-6, -1e-6, 1e-6, 2e-9};
    const unsigned char want[11] = {0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1};
    double theta[11] = {0}, P[11];
    unsigned char fl[11];
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 11), 0);
    optim_seg_t *seg = realloc(o.seg, 2 * sizeof *seg);   // two tensors: [0, 7), [7, 11)
    ck_assert_ptr_nonnull(seg);
    o.seg = seg;
    o.nseg = 2;
    o.seg[1] = o.seg[0];
    o.seg[0].size = 7;
    o.seg[1].offset = 7;
    o.seg[1].size = 4;
    ck_assert(o.floor_rel == 1e-2);   // probe.curvature_floor's default
    ck_assert_double_eq_tol(o.floor_rel * sqrt(4.000425 / 7.0), 7.5596e-3, 1e-7);
    ck_assert_uint_eq(optim_precond(&o, theta, g, P, fl), 3);
    for (int i = 0; i < 11; i++) {
        ck_assert_msg(fl[i] == want[i], "floored[%d] = %d", i, fl[i]);
        ck_assert_msg(fabs(P[i] - 0.1 * (fabs(g[i]) + 1e-8)) <= 1e-15 * P[i], "P[%d]", i);
    }
    o.floor_rel = 0.0;   // probe.curvature_floor = 0: ε alone (0 and 2e-9)
    ck_assert_uint_eq(optim_precond(&o, theta, g, P, fl), 2);
    for (int i = 0; i < 11; i++) ck_assert_int_eq(fl[i], i == 6 || i == 10);
    o.floor_rel = 0.5;   // a larger τ: A's cut 0.378 also takes 2e-2; B's 4.3e-7 still not 1e-6
    ck_assert_uint_eq(optim_precond(&o, theta, g, P, fl), 4);
    for (int i = 0; i < 11; i++) ck_assert_int_eq(fl[i], i == 4 || i == 5 || i == 6 || i == 10);
    optim_free(&o);
}
END_TEST

/* ------------------------------------------------------------------ training */

static void train_config(config_t *cfg, int every)
{
    tiny_config(cfg, ACT_RELU, 31);
    cfg->model.layers = 2;
    cfg->model.d_model = 8;
    cfg->model.d_ff = 12;
    cfg->model.vocab = 11;
    cfg->model.seq_len = 5;
    cfg->model.dropout = 0.1;     // the measure turns dropout off in its copy only
    cfg->train.steps = 3;
    cfg->train.warmup = 1;
    cfg->train.lr = 1e-3;
    cfg->probe.every = 1;
    cfg->probe.curvature_every = every;
    cfg->probe.curvature_iters = 6;
    cfg->probe.curvature_block_iters = 3;
}

/* Training with the measure (every update) gives the same losses, gradient norms, probe rows
 * and parameters, bit for bit, as without; the rows come at updates 0 (in update 1), 1, 2, 3. */
START_TEST(test_training_unchanged)
{
    config_t cfg[2];
    train_t *t[2];
    char err[512];
    double loss[2][3], gnorm[2][3];
    for (int k = 0; k < 2; k++) {
        train_config(&cfg[k], k);
        ck_assert_int_eq(train_create(&t[k], &cfg[k], err, sizeof err), 0);
        ck_assert(k ? t[k]->curv != NULL : t[k]->curv == NULL);
        for (int s = 0; s < 3; s++) {
            train_record_t r;
            train_step(t[k], &r);
            ck_assert_int_eq(r.diverged, 0);
            ck_assert_int_eq(r.curv, k ? (s == 0 ? 3 : 2) : 0);
            loss[k][s] = r.loss;
            gnorm[k][s] = r.grad_norm;
            if (k && s == 0) {
                ck_assert_int_eq(t[k]->curv_row[0].step, 0);
                ck_assert(isfinite(t[k]->curv_row[0].hessian_max));
                ck_assert(t[k]->curv_row[0].hessian_max >= t[k]->curv_row[0].hessian_min);
            }
            if (k) ck_assert_int_eq(t[k]->curv_row[1].step, s + 1);
        }
    }
    for (int s = 0; s < 3; s++) {
        ck_assert_msg(memcmp(&loss[0][s], &loss[1][s], sizeof(double)) == 0, "loss %d", s);
        ck_assert_msg(memcmp(&gnorm[0][s], &gnorm[1][s], sizeof(double)) == 0, "grad %d", s);
    }
    const model_t *a = t[0]->s.model, *b = t[1]->s.model;
    ck_assert_int_eq(memcmp(a->params, b->params, a->num_params * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(t[0]->opt.v, t[1]->opt.v, a->num_params * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(t[0]->probe.grad_fro, t[1]->probe.grad_fro,
                            (size_t)t[0]->ax.L * t[0]->ax.nparam * sizeof(double)), 0);
    train_free(t[0]);
    train_free(t[1]);
}
END_TEST

/* optim_precond gives the P each optimizer's update implies (docs/design.md §10, §6h): after
 * update s, P_i = −η_s·m_i/(θ_s − θ_{s−1})_i (m without bias correction, weight decay 0), for
 * adam, gi_adam (whose first v is g², so update 1's P is bc1·(|g| + ε)), stableadamw (the
 * tensor's lr divided by its c) and μP's per-tensor rates (divided by lr_mult); at update 1 also
 * the t = 0 route (a fresh optimizer, the same tensors, the first gradient). Checked on every
 * coordinate whose step is not lost to rounding (|Δθ| > 1e-9·|θ|), to 1e-7 relative. */
START_TEST(test_optim_precond_implied)
{
    const optimizer_t kinds[4] = {OPT_ADAM, OPT_GI_ADAM, OPT_STABLEADAMW, OPT_ADAM};
    const char *label[4] = {"adam", "gi_adam", "stableadamw", "adam, mup"};
    for (int k = 0; k < 4; k++) {
        config_t cfg;
        train_config(&cfg, 0);
        cfg.model.dropout = 0.0;
        cfg.train.optimizer = kinds[k];
        cfg.train.lr = 3e-2;
        cfg.train.steps = 5;
        if (k == 3) {
            cfg.init.parametrization = PARAM_MUP_SIMPLE;
            cfg.init.base_width = 4;   // d = 8: the matrices train at lr·½
        }
        train_t *t;
        char err[512];
        ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
        model_t *m = t->s.model;
        const size_t n = m->num_params;
        double *before = malloc(n * sizeof(double)), *P = malloc(n * sizeof(double));
        double *P0 = malloc(n * sizeof(double));
        unsigned char *fl = malloc(n);
        double worst = 0.0, mults = 1.0, clips = 1.0;
        size_t checked = 0;
        for (long s = 1; s <= cfg.train.steps; s++) {
            memcpy(before, m->params, n * sizeof(double));
            train_record_t r;
            train_step(t, &r);
            ck_assert_int_eq(r.diverged, 0);
            optim_precond(&t->opt, m->params, m->grads, P, fl);
            if (s == 1) {   // the t = 0 route: the P the first update will use
                optim_t o0;
                ck_assert_int_eq(optim_init(&o0, &cfg, n), 0);
                ck_assert_int_eq(optim_set_tensors(&o0, m), 0);
                optim_precond(&o0, before, m->grads, P0, NULL);
                for (size_t i = 0; i < n; i++)
                    ck_assert_msg(fabs(P0[i] - P[i]) <= 1e-14 * P[i], "%s: t = 0 route [%zu]",
                                  label[k], i);
                optim_free(&o0);
            }
            for (int g = 0; g < t->opt.nseg; g++) {
                mults = fmin(mults, t->opt.seg[g].lr_mult);
                clips = fmax(clips, t->opt.seg[g].clip);
            }
            for (size_t i = 0; i < n; i++) {
                const double d = m->params[i] - before[i];
                if (!(fabs(d) > 1e-9 * fabs(m->params[i])) || t->opt.m[i] == 0.0) continue;
                const double implied = -r.lr * t->opt.m[i] / d;
                worst = fmax(worst, fabs(implied - P[i]) / P[i]);
                checked++;
            }
        }
        printf("curvature: optim_precond against the P implied by %s's updates: %zu "
               "coordinate-updates, worst %.2e relative (smallest lr_mult %g, largest c %.4g)\n",
               label[k], checked, worst, mults, clips);
        ck_assert_msg(worst <= 1e-7, "%s: P off by %.3g", label[k], worst);
        ck_assert(checked > n);
        if (k == 3) ck_assert(mults == 0.5);
        if (k == 2) ck_assert(clips > 1.0);   // StableAdamW's c was at work
        train_free(t);
        free(before); free(P); free(P0); free(fl);
    }
}
END_TEST

/* Every field of a row, bit for bit (NaN equal to NaN). */
static void rows_same(const curv_row_t *a, const curv_row_t *b, size_t nblocks)
{
    const double x[] = {a->hessian_max, a->hessian_min, a->precond_max, a->precond_max_active,
                        a->precond_eps_share, a->threshold, a->h, a->hessian_max_res};
    const double y[] = {b->hessian_max, b->hessian_min, b->precond_max, b->precond_max_active,
                        b->precond_eps_share, b->threshold, b->h, b->hessian_max_res};
    ck_assert_int_eq(memcmp(x, y, sizeof x), 0);
    ck_assert_int_eq(memcmp(a->hessian_block_max, b->hessian_block_max, nblocks * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(a->precond_block_max, b->precond_block_max, nblocks * sizeof(double)), 0);
}

/* A float32 run's measure is the float64 measure of its parameters and Adam's v widened
 * (exact): after two float32 updates, optim_precond of a float64 optim_t holding the widened
 * v and curv_measure on the widened θ give the run's row bit for bit (update 0's too, from the
 * widened first gradient). */
START_TEST(test_float32_route)
{
    config_t cfg;
    train_config(&cfg, 1);
    cfg.model.dropout = 0.0;
    cfg.train.precision = PRECISION_FLOAT32;
    train_t *t;
    char err[512];
    ck_assert_int_eq(train_create_f32(&t, &cfg, err, sizeof err), 0);
    const size_t n = t->s.model->num_params;
    double *theta0 = malloc(n * sizeof(double)), *g1 = malloc(n * sizeof(double));
    double *theta = malloc(n * sizeof(double)), *P = malloc(n * sizeof(double));
    unsigned char *fl = malloc(n);
    const float *pf = (const float *)(const void *)t->s.model->params;
    const float *gf = (const float *)(const void *)t->s.model->grads;
    for (size_t i = 0; i < n; i++) theta0[i] = pf[i];
    train_record_t r;
    train_step_f32(t, &r);
    ck_assert_int_eq(r.curv, 3);
    for (size_t i = 0; i < n; i++) g1[i] = gf[i];
    train_step_f32(t, &r);
    ck_assert_int_eq(r.curv, 2);

    curv_t *c;
    ck_assert_int_eq(curv_create(&c, &cfg, &t->s.model->caps, &t->curv_batch, err, sizeof err), 0);
    curv_row_t row;
    ck_assert_int_eq(curv_row_alloc(&row, c), 0);
    const size_t nb = (size_t)curv_rows(c) * TENSOR_BLOCKS;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, n), 0);
    // the run's tensors (the floor is per tensor, docs/design.md §10)
    optim_seg_t *seg = realloc(o.seg, (size_t)t->opt.nseg * sizeof *seg);
    ck_assert_ptr_nonnull(seg);
    memcpy(seg, t->opt.seg, (size_t)t->opt.nseg * sizeof *seg);
    o.seg = seg;
    o.nseg = t->opt.nseg;
    // update 0: θ_0 and the first gradient, widened
    optim_precond(&o, theta0, g1, P, fl);
    curv_measure(c, theta0, P, fl, cfg.init.seed + CURV_START_OFFSET, &row);
    row.step = 0;
    row.threshold = optim_threshold(&o, 1e-3);
    rows_same(&row, &t->curv_row[0], nb);
    // update 2: θ_2 and v_2, widened
    const float *vf = (const float *)(const void *)t->opt.v;
    for (size_t i = 0; i < n; i++) {
        theta[i] = pf[i];
        o.v[i] = vf[i];
    }
    o.t = 2;
    optim_precond(&o, theta, g1, P, fl);
    curv_measure(c, theta, P, fl, cfg.init.seed + CURV_START_OFFSET + 2, &row);
    row.threshold = optim_threshold(&o, optim_lr(&cfg, 3));
    rows_same(&row, &t->curv_row[1], nb);
    printf("curvature: float32 run, update 2: lambda_max %.10g, lambda_max(P^-1 H) active "
           "%.10g: the float64 measure of its widened state, bit for bit\n", row.hessian_max,
           row.precond_max_active);
    optim_free(&o);
    curv_row_free(&row);
    curv_free(c);
    train_free_f32(t);
    free(theta0); free(g1); free(theta); free(P); free(fl);
}
END_TEST

Suite *curvature_suite(void)
{
    Suite *s = suite_create("curvature");
    TCase *tc = tcase_create("curvature");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_lanczos_explicit);
    tcase_add_test(tc, test_hessian_against_loss);
    tcase_add_test(tc, test_extremes_against_explicit);
    tcase_add_test(tc, test_precond_and_blocks);
    tcase_add_test(tc, test_kink_check);
    tcase_add_test(tc, test_optim_precond);
    tcase_add_test(tc, test_optim_precond_floor);
    tcase_add_test(tc, test_optim_precond_implied);
    tcase_add_test(tc, test_training_unchanged);
    tcase_add_test(tc, test_float32_route);
    suite_add_tcase(s, tc);
    return s;
}
