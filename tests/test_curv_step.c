/* test_curv_step.c — the curvature of the step actually taken (docs/design.md §10):
 *   - with train.clip active and Adam's L2 decay, a training row's λ_max(H), λ_max(P⁻¹H) and its
 *     active value against GSL's eigenvalues of the explicitly built c·P^{−1/2}(H + λI)P^{−1/2}
 *     (H column by column from H·e_i, c = clip/‖g‖ of the update whose P the row uses);
 *   - the reported active value independent of the clip threshold for the same step.
 * Tolerance: 1e-6 of the matrix's spectral radius (as tests/test_curvature.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_eigen.h>
#include "tests.h"
#include "config/config.h"
#include "measure/curvature.h"
#include "measure/hvp.h"
#include "train/optim.h"
#include "train/train.h"

#define EIG_TOL 1e-6

/* The largest eigenvalue of the symmetric k × k matrix A (not changed), by GSL. */
static double eig_max(const double *A, size_t k)
{
    double *a = malloc(k * k * sizeof(double));
    memcpy(a, A, k * k * sizeof(double));
    gsl_matrix_view av = gsl_matrix_view_array(a, k, k);
    gsl_vector *ev = gsl_vector_alloc(k);
    gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc(k);
    ck_assert_int_eq(gsl_eigen_symm(&av.matrix, ev, w), 0);
    const double top = gsl_vector_max(ev);
    gsl_eigen_symm_free(w);
    gsl_vector_free(ev);
    free(a);
    return top;
}

/* Post-LN, L = 1, d = 4, 2 heads, d_ff = 6, V = 5, n = 4, B = 2, GELU (smooth: no kink),
 * N(0, 0.5²) weights; Adam with L2 decay λ, clip at `clip`; a row at every update, K = every
 * parameter (Lanczos spans the space), no blocks. */
static void step_config(config_t *cfg, double clip, double wd)
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
    cfg->init.seed = 17;
    cfg->init.scheme = INIT_NORMAL;
    cfg->init.std = 0.5;
    cfg->train.optimizer = OPT_ADAM;
    cfg->train.steps = 2;
    cfg->train.warmup = 1;
    cfg->train.lr = 1e-2;
    cfg->train.clip = clip;
    cfg->train.weight_decay = wd;
    cfg->probe.curvature_every = 1;
    cfg->probe.curvature_iters = 174;
    cfg->probe.curvature_block_iters = 0;
}

/* The explicit c·D(H + λI)D (D = P^{−1/2}) at θ on the measurement batch b, and its λ_max,
 * the λ_max of its principal submatrix without the floored coordinates, and λ_max(H + λI). */
static void explicit_row(const config_t *cfg, const batch_caps_t *caps, const batch_t *b,
                         const double *theta, const double *P, const unsigned char *fl, double c,
                         double out[3])
{
    const double wd = cfg->train.weight_decay;
    model_t *m = model_create(cfg, caps);
    ck_assert_ptr_nonnull(m);
    model_dropout_off(m);
    const size_t n = m->num_params;
    memcpy(m->params, theta, n * sizeof(double));
    hvp_t h;
    ck_assert_int_eq(hvp_init(&h, m, b, HVP_H0, HVP_HMIN), 0);
    double *H = malloc(n * n * sizeof(double)), *M = malloc(n * n * sizeof(double));
    double *e = calloc(n, sizeof(double)), *col = malloc(n * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        e[j] = 1.0;
        ck_assert_uint_eq(hvp_apply(&h, e, col, NULL), 0);
        e[j] = 0.0;
        for (size_t i = 0; i < n; i++) H[i * n + j] = col[i];
    }
    for (size_t i = 0; i < n; i++)   // symmetrised, + λI: the objective L + (λ/2)‖θ‖²
        for (size_t j = 0; j <= i; j++) {
            const double s = 0.5 * (H[i * n + j] + H[j * n + i]) + (i == j ? wd : 0.0);
            H[i * n + j] = H[j * n + i] = s;
        }
    out[2] = eig_max(H, n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) M[i * n + j] = c * H[i * n + j] / sqrt(P[i] * P[j]);
    out[0] = eig_max(M, n);
    size_t k = 0;   // the active principal submatrix, packed k × k
    for (size_t i = 0; i < n; i++) {
        if (fl[i]) continue;
        size_t l = 0;
        for (size_t j = 0; j < n; j++)
            if (!fl[j]) H[k * n + l++] = M[i * n + j];
        k++;
    }
    for (size_t i = 0; i < k; i++) memmove(H + i * k, H + i * n, k * sizeof(double));
    out[1] = eig_max(H, k);
    hvp_free(&h);
    model_free(m);
    free(H); free(M); free(e); free(col);
}

/* A row's λ_max(P⁻¹H), its active value and λ_max(H) against the explicit ones, within 1e-6 of
 * the explicit matrix's largest eigenvalue. */
static void row_matches(const curv_row_t *row, const double x[3], const char *what)
{
    printf("curv_step: %s: precond_max %.10g (explicit %.10g), active %.10g (%.10g), "
           "hessian_max %.10g (%.10g)\n", what, row->precond_max, x[0], row->precond_max_active,
           x[1], row->hessian_max, x[2]);
    ck_assert_int_eq(row->kinked, 0);
    ck_assert_msg(fabs(row->precond_max - x[0]) <= EIG_TOL * fabs(x[0]), "%s: precond_max", what);
    ck_assert_msg(fabs(row->precond_max_active - x[1]) <= EIG_TOL * fabs(x[1]), "%s: active", what);
    ck_assert_msg(fabs(row->hessian_max - x[2]) <= EIG_TOL * fabs(x[2]), "%s: hessian_max", what);
}

/* Clip 0.02 (active at both updates: c ≈ 0.01) and L2 decay λ = 0.3: the update-0 row (θ_0,
 * update 1's P from its clipped gradient, c₁) and the row after update 2 (θ_2, P_2, c₂) are the
 * explicit matrices' values. Before the fix the preconditioned values were 1/c too large and
 * λ_max(H) lacked λ. */
START_TEST(test_clip_l2_explicit)
{
    config_t cfg;
    step_config(&cfg, 0.02, 0.3);
    train_t *t;
    char err[512];
    ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
    model_t *m = t->s.model;
    const size_t n = m->num_params;
    ck_assert_uint_eq(n, 174);
    double *theta0 = malloc(n * sizeof(double)), *P = malloc(n * sizeof(double));
    unsigned char *fl = malloc(n);
    memcpy(theta0, m->params, n * sizeof(double));
    train_record_t r;
    train_step(t, &r);
    ck_assert_int_eq(r.curv, 3);
    ck_assert(r.grad_norm > 5.0 * cfg.train.clip);
    optim_t o0;   // update 1's P: a fresh optimizer and the clipped first gradient (in m->grads)
    ck_assert_int_eq(optim_init(&o0, &cfg, n), 0);
    ck_assert_int_eq(optim_set_tensors(&o0, m), 0);
    optim_precond(&o0, theta0, m->grads, P, fl);
    optim_free(&o0);
    double x[3];
    explicit_row(&cfg, &m->caps, &t->curv_batch, theta0, P, fl, cfg.train.clip / r.grad_norm, x);
    row_matches(&t->curv_row[0], x, "update 0");
    train_step(t, &r);
    ck_assert_int_eq(r.curv, 2);
    ck_assert(r.grad_norm > 5.0 * cfg.train.clip);
    optim_precond(&t->opt, m->params, m->grads, P, fl);
    explicit_row(&cfg, &m->caps, &t->curv_batch, m->params, P, fl, cfg.train.clip / r.grad_norm, x);
    row_matches(&t->curv_row[1], x, "after update 2");
    train_free(t);
    free(theta0); free(P); free(fl);
}
END_TEST

/* The same first step, unclipped and clipped at ½ and 1/20 of its gradient norm (Adam's first
 * update is sign(g)·lr whatever the scale of g, up to ε): the update-0 row's active value is the
 * same within 1e-4 (ε/c is the only difference). Before the fix it grew as 1/c: 2× and 20×. */
START_TEST(test_clip_independent)
{
    double active[3], gnorm = 0.0;
    for (int k = 0; k < 3; k++) {
        config_t cfg;
        step_config(&cfg, k == 0 ? 0.0 : k == 1 ? 0.5 * gnorm : 0.05 * gnorm, 0.0);
        cfg.train.steps = 1;
        cfg.probe.curvature_iters = 40;
        train_t *t;
        char err[512];
        ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
        train_record_t r;
        train_step(t, &r);
        ck_assert_int_eq(r.curv, 3);
        if (k == 0) gnorm = r.grad_norm;
        active[k] = t->curv_row[0].precond_max_active;
        printf("curv_step: clip %g (norm %.6g): update-0 active lambda_max(P^-1 H) %.10g\n",
               cfg.train.clip, r.grad_norm, active[k]);
        train_free(t);
    }
    for (int k = 1; k < 3; k++)
        ck_assert_msg(fabs(active[k] - active[0]) <= 1e-4 * active[0], "clip %d: %g vs %g", k,
                      active[k], active[0]);
}
END_TEST

Suite *curv_step_suite(void)
{
    Suite *s = suite_create("curv_step");
    TCase *tc = tcase_create("curv_step");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_clip_l2_explicit);
    tcase_add_test(tc, test_clip_independent);
    suite_add_tcase(s, tc);
    return s;
}
