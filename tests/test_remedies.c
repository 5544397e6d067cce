/* test_remedies.c — the lr remedies of warm-up (train/lr_control.h, cdat.h, catapult.h,
 * update_bound.h; docs/design.md §6k):
 *   - each rule on numbers worked out by hand: the curvature bound c·38/λ and the count of
 *     updates held below the schedule, CDAT's bias-corrected EMAs, the catapult search on a
 *     quadratic (η_c = 2/a), the relative-update cap per tensor, the catapult warm-up formula,
 *     LAMB's first update with its trust ratio, AdamW²'s spectral bound (σ₁ by power iteration
 *     against GSL's SVD), AutoWU's GP posterior on two points, its minimum test and schedule;
 *   - the curvature cap's λ and CDAT's uᵀHu equal to the explicit Hessian's values (built column
 *     by column from H·e_i, eigenvalues by GSL) on a tiny model, and the lr each applied;
 *   - the keys refused where they do not apply. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include "tests.h"
#include "config/config.h"
#include "measure/hvp.h"
#include "train/autowu.h"
#include "train/lr_control.h"
#include "train/train.h"
#include "train/update_bound.h"

/* c·T₁/λ with c = 0.5, β₁ = 0.9 (T₁ = 2·1.9/0.1 = 38), λ = 100: 0.19; applied only below the
 * schedule, and only then counted; a NaN row keeps the λ held; λ ≤ 0 bounds nothing. */
START_TEST(test_curvature_bound)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.curvature_cap = 0.5;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    lrctl_t c;
    lrctl_init(&c);
    ck_assert(isinf(lrctl_curvature_bound(&cfg, &o, &c)));
    lrctl_observe(&c, 100.0);
    const double b = lrctl_curvature_bound(&cfg, &o, &c);
    ck_assert_msg(fabs(b - 0.19) <= 1e-15, "bound %.17g, want 0.19", b);
    ck_assert_double_eq(lrctl_apply(&c, 0.3, b), b);
    ck_assert_double_eq(lrctl_apply(&c, 0.1, b), 0.1);
    ck_assert_int_eq(c.held, 1);
    lrctl_observe(&c, NAN);
    ck_assert_double_eq(c.lambda, 100.0);
    lrctl_observe(&c, -3.0);
    ck_assert(isinf(lrctl_curvature_bound(&cfg, &o, &c)));
    optim_free(&o);
}
END_TEST

/* ρ = 0.5, σ = 2: (−gᵀu, uᵀHu) = (3, 2) gives N = 1.5, D = 1, corrections ½: 2·3/2 = 3; then
 * (−1, −4): N = 0.75 (max(−1, 0) = 0), D = 2.5, corrections ¾: 2·1/(10/3) = 0.6; a NaN product
 * changes nothing and keeps 0.6. */
START_TEST(test_cdat_rule)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.cdat_ema = 0.5;
    cfg.train.cdat_sigma = 2.0;
    lrctl_t c;
    lrctl_init(&c);
    double lr = lrctl_cdat(&cfg, &c, 3.0, 2.0);
    ck_assert_msg(fabs(lr - 3.0) <= 1e-11, "first %.17g, want 3", lr);
    lr = lrctl_cdat(&cfg, &c, -1.0, -4.0);
    ck_assert_msg(fabs(lr - 0.6) <= 1e-11, "second %.17g, want 0.6", lr);
    lr = lrctl_cdat(&cfg, &c, 1.0, NAN);
    ck_assert_msg(fabs(lr - 0.6) <= 1e-11 && c.cdat_n == 2, "NaN product: %.17g", lr);
}
END_TEST

/* One gradient step on L = (a/2)x² from x₀ = 1: L₁ = L₀(1 − aη)², above L₀ iff η > 2/a. */
static double quad_after(void *ctx, double lr)
{
    const double a = *(const double *)ctx, x = 1.0 - a * lr;
    return 0.5 * a * x * x;
}

static double never_after(void *ctx, double lr)
{
    (void)ctx;
    return -lr;
}

/* a = 4, η_c = 0.5: doubling from 1e-3 stops at 0.512 (lo 0.256), bisection leaves hi ≤ 1.1·lo:
 * 0.5 < η_c ≤ 0.55; halving from 10 brackets [0.3125, 0.625] and ends in the same interval; a
 * loss that never rises gives +∞. */
START_TEST(test_catapult_search)
{
    double a = 4.0;
    const double L0 = 0.5 * a;
    int n;
    const double up = lrctl_catapult_search(1e-3, L0, quad_after, &a, &n);
    ck_assert_msg(up > 0.5 && up <= 0.55, "doubling: %.17g", up);
    printf("remedies: catapult search on a quadratic: eta_c %.6g (2/a = 0.5) in %d losses\n", up, n);
    const double down = lrctl_catapult_search(10.0, L0, quad_after, &a, NULL);
    ck_assert_msg(down > 0.5 && down <= 0.55, "halving: %.17g", down);
    ck_assert(isinf(lrctl_catapult_search(1e-3, 0.0, never_after, NULL, NULL)));
}
END_TEST

/* lr 3e-3, W = 5, η_c = 1e-3: updates 1…5 at 1e-3, 1.5e-3, 2e-3, 2.5e-3, 3e-3, then the
 * schedule (constant); η_c above lr starts at lr. */
START_TEST(test_catapult_warmup)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.lr = 3e-3;
    cfg.train.warmup = 5;
    cfg.train.steps = 10;
    cfg.train.schedule = SCHED_CONSTANT;
    cfg.train.warmup_start = WARMUP_START_CATAPULT;
    lrctl_t c;
    lrctl_init(&c);
    c.catapult_lr = 1e-3;
    const double want[6] = {1e-3, 1.5e-3, 2e-3, 2.5e-3, 3e-3, 3e-3};
    for (int t = 1; t <= 6; t++)
        ck_assert_msg(fabs(lrctl_scheduled(&cfg, &c, t) - want[t - 1]) <= 1e-18, "update %d: %.17g",
                      t, lrctl_scheduled(&cfg, &c, t));
    c.catapult_lr = 1.0;
    ck_assert_double_eq(lrctl_scheduled(&cfg, &c, 1), 3e-3);
    cfg.train.warmup_start = WARMUP_START_ZERO;   // as before: lr·t/W
    ck_assert_double_eq(lrctl_scheduled(&cfg, &c, 1), optim_lr(&cfg, 1));
}
END_TEST

/* Three tensors: (3, 4) → (3.3, 4.4): ‖ΔW‖/‖W‖ = 0.5/5 = 0.1 > r = 0.05, scaled by 0.5 to
 * (3.15, 4.2); (0, 0) → (1, 1): ‖W‖ = 0, left; (1, 0) → (1.01, 0): 0.01 ≤ r, left. */
START_TEST(test_update_ratio_cap)
{
    config_t cfg;
    config_defaults(&cfg);
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 6), 0);
    o.nseg = 3;   // optim_init allocates one segment: use a local table of three
    optim_seg_t seg[3] = {{.offset = 0, .size = 2, .lr_mult = 1, .clip = 1}, {.offset = 2, .size = 2, .lr_mult = 1, .clip = 1},
                         {.offset = 4, .size = 2, .lr_mult = 1, .clip = 1}};
    optim_seg_t *keep = o.seg;
    o.seg = seg;
    const double prev[6] = {3, 4, 0, 0, 1, 0};
    double p[6] = {3.3, 4.4, 1, 1, 1.01, 0};
    ck_assert_int_eq(update_bound_ratio(&o, p, prev, 0.05), 1);
    const double want[6] = {3.15, 4.2, 1, 1, 1.01, 0};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabs(p[i] - want[i]) <= 1e-15 * fabs(want[i]) + 1e-300, "[%d] %.17g", i, p[i]);
    o.seg = keep;
    o.nseg = 1;
    optim_free(&o);
}
END_TEST

/* LAMB, update 1 (m̂ = g, v̂ = g²): r = g/(|g| + ε) ≈ (1, −1, 1), u = r + λθ₀ = (1.05, −1.1, 1.2)
 * for θ₀ = (0.5, −1, 2), g = (0.1, −0.2, 0.3), λ = 0.1; the trust ratio ‖θ₀‖/‖u‖ =
 * √5.25/√3.7525 = 1.18282…, θ₁ = θ₀ − 0.01·1.18282·u = (0.48758, −0.98699, 1.98581); a tensor at 0
 * takes ratio 1: θ₁ = −0.01·r = (−0.0099999990, 0.0099999995). */
START_TEST(test_lamb)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.optimizer = OPT_LAMB;
    cfg.train.weight_decay = 0.1;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 5), 0);
    optim_seg_t seg[2] = {{.offset = 0, .size = 3, .lr_mult = 1, .clip = 1}, {.offset = 3, .size = 2, .lr_mult = 1, .clip = 1}};
    optim_seg_t *keep = o.seg;
    o.seg = seg;
    o.nseg = 2;
    double th[5] = {0.5, -1.0, 2.0, 0.0, 0.0};
    const double g[5] = {0.1, -0.2, 0.3, 0.1, -0.2};
    optim_update(&o, th, g, 0.01);
    const double want[5] = {0.4875803721627436, -0.9869889606656147, 1.9858061386570418,
                            -0.0099999990000001, 0.009999999500000025};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(fabs(th[i] - want[i]) <= 1e-15 * fabs(want[i]), "[%d] %.17g, want %.17g", i,
                      th[i], want[i]);
    // Σ r² of each tensor (the update RMS): 3 and 2, less the ε terms
    ck_assert_msg(fabs(seg[0].sumsq - 3.0) < 1e-6 && fabs(seg[1].sumsq - 2.0) < 1e-6, "sumsq");
    o.seg = keep;
    o.nseg = 1;
    optim_free(&o);
}
END_TEST

/* ------------------------------------------------------------------- a tiny model */

/* Post-LN, GELU (no kinks), L = 1, d = 4, 2 heads, d_ff = 6, V = 5, n = 4, B = 2; Lanczos with
 * K = n steps spans the space, so its λ is the explicit one to rounding. */
static void tiny(config_t *cfg, lr_control_t ctl)
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
    cfg->init.seed = 7;
    cfg->init.scheme = INIT_NORMAL;
    cfg->init.std = 0.5;
    cfg->train.steps = 2;
    cfg->train.warmup = 1;
    cfg->train.lr = 0.05;
    cfg->train.schedule = SCHED_CONSTANT;
    cfg->train.lr_control = ctl;
    cfg->probe.every = 1;
    cfg->probe.curvature_iters = 400;
    cfg->probe.curvature_block_iters = 0;
}

/* The explicit Hessian (n × n, symmetrised) of batch b's objective at θ (n), on a float64 model
 * of m's config and capacity. */
static double *explicit_hessian(const config_t *cfg, const model_t *m, const double *theta,
                                const batch_t *b)
{
    model_t *x = model_create(cfg, &m->caps);
    ck_assert_ptr_nonnull(x);
    const size_t n = x->num_params;
    memcpy(x->params, theta, n * sizeof(double));
    model_dropout_off(x);
    hvp_t h;
    ck_assert_int_eq(hvp_init(&h, x, b, HVP_H0, HVP_HMIN), 0);
    double *H = malloc(n * n * sizeof(double)), *e = calloc(n, sizeof(double));
    double *col = malloc(n * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        e[j] = 1.0;
        ck_assert_uint_eq(hvp_apply(&h, e, col, NULL), 0);
        e[j] = 0.0;
        for (size_t i = 0; i < n; i++) H[i * n + j] = col[i];
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++) H[i * n + j] = H[j * n + i] = 0.5 * (H[i * n + j] + H[j * n + i]);
    hvp_free(&h);
    model_free(x);
    free(e);
    free(col);
    return H;
}

/* λ_max of P^{−1/2}HP^{−1/2} on the coordinates not floored, by GSL. */
static double explicit_active(const double *H, size_t n, const double *P, const unsigned char *fl)
{
    size_t k = 0, *idx = malloc(n * sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        if (!fl[i]) idx[k++] = i;
    gsl_matrix *A = gsl_matrix_alloc(k, k);
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++)
            gsl_matrix_set(A, i, j, H[idx[i] * n + idx[j]] / sqrt(P[idx[i]] * P[idx[j]]));
    gsl_vector *ev = gsl_vector_alloc(k);
    gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc(k);
    ck_assert_int_eq(gsl_eigen_symm(A, ev, w), 0);
    const double top = gsl_vector_max(ev);
    gsl_eigen_symm_free(w);
    gsl_vector_free(ev);
    gsl_matrix_free(A);
    free(idx);
    return top;
}

/* σ₁ by power iteration against GSL's SVD on a 7 × 5 Gaussian matrix (1e-9 relative), and 0
 * for a zero matrix. */
START_TEST(test_sigma1)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    double A[35], work[12];
    gsl_matrix *U = gsl_matrix_alloc(7, 5), *V = gsl_matrix_alloc(5, 5);
    gsl_vector *S = gsl_vector_alloc(5), *w = gsl_vector_alloc(5);
    for (int i = 0; i < 35; i++) A[i] = gsl_ran_gaussian(r, 1.0);
    for (int i = 0; i < 35; i++) gsl_matrix_set(U, (size_t)i / 5, (size_t)i % 5, A[i]);
    ck_assert_int_eq(gsl_linalg_SV_decomp(U, V, S, w), 0);
    const double got = update_bound_sigma1(A, 7, 5, work), want = gsl_vector_get(S, 0);
    printf("remedies: sigma_1 by power iteration %.15g, GSL SVD %.15g\n", got, want);
    ck_assert_msg(fabs(got - want) <= 1e-9 * want, "σ₁ %.17g, SVD %.17g", got, want);
    memset(A, 0, sizeof A);
    ck_assert_double_eq(update_bound_sigma1(A, 7, 5, work), 0.0);
    gsl_matrix_free(U);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(w);
    gsl_rng_free(r);
}
END_TEST

/* AdamW²'s bound on a model's matrices, τ = 0.5, every matrix W = diag(3, 1, 0, …) (σ₁ = 3);
 * on the first ΔW = 2·e₂e₂ᵀ:
 * σ₁(ΔW) = 2 > 0.5·3 = 1.5, scaled by 0.75 to 1.5·e₂e₂ᵀ; a tensor whose update is within the
 * bound and every 1-D tensor are left as they are. */
START_TEST(test_spectral_bound)
{
    config_t cfg;
    tiny(&cfg, LR_CONTROL_NONE);
    model_t *m = model_create(&cfg, &(batch_caps_t){0});
    ck_assert_ptr_nonnull(m);
    const size_t n = m->num_params;
    double *prev = calloc(n, sizeof(double)), *p = calloc(n, sizeof(double));
    double *work = malloc(update_bound_work_size(m) * sizeof(double));
    int first = -1, second = -1, vec = -1;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->rank == 2 && first < 0) first = i;
        else if (t->rank == 2 && second < 0) second = i;
        else if (t->rank == 1 && vec < 0) vec = i;
    }
    ck_assert(first >= 0 && second >= 0 && vec >= 0);
    for (int i = 0; i < m->num_tensors; i++) {   // W = diag(3, 1, …) on every matrix: σ₁ = 3
        const tensor_info_t *t = &m->tensors[i];
        if (t->rank == 2) {
            prev[t->offset] = 3.0;
            prev[t->offset + t->cols + 1] = 1.0;
        }
    }
    memcpy(p, prev, n * sizeof(double));
    const tensor_info_t *a = &m->tensors[first], *b = &m->tensors[second], *v = &m->tensors[vec];
    p[a->offset + a->cols + 1] += 2.0;   // σ₁(ΔW) = 2 > 1.5: scaled
    p[b->offset + b->cols + 1] += 1.0;   // σ₁(ΔW) = 1 ≤ 1.5: left
    p[v->offset] += 100.0;               // a vector: left
    ck_assert_int_eq(update_bound_spectral(m, p, prev, 0.5, work), 1);
    ck_assert_msg(fabs(p[a->offset + a->cols + 1] - 2.5) <= 1e-12, "scaled: %.17g",
                  p[a->offset + a->cols + 1]);
    ck_assert_double_eq(p[a->offset], 3.0);
    ck_assert_double_eq(p[b->offset + b->cols + 1], 2.0);
    ck_assert_double_eq(p[v->offset], 100.0);
    free(prev);
    free(p);
    free(work);
    model_free(m);
}
END_TEST

/* AutoWU's GP on two points x = (0, 1), y = (1, −1), ℓ = 1, s² = 0.5: with k = e^{−1/2},
 * A = K + s²I = [[1.5, k], [k, 1.5]], the mean is ±(1 − k)/(1.5 − k) = ±0.440384…, and
 * Σ = K − K·A⁻¹·K by the 2 × 2 inverse: Σ₀₀ = 1 − (1.5(1 + k²) − 2k²)/(2.25 − k²),
 * Σ₀₁ = k − (1.5·2k − k(1 + k²))/(2.25 − k²). */
START_TEST(test_autowu_posterior)
{
    const double x[2] = {0.0, 1.0}, y[2] = {1.0, -1.0};
    double mean[2], cov[4];
    ck_assert_int_eq(autowu_posterior(x, y, 2, 1.0, 0.5, mean, cov), 0);
    const double k = exp(-0.5), det = 2.25 - k * k;
    const double m0 = (1.0 - k) / (1.5 - k);
    const double c00 = 1.0 - (1.5 * (1.0 + k * k) - 2.0 * k * k) / det;
    const double c01 = k - (1.5 * 2.0 * k - k * (1.0 + k * k)) / det;
    ck_assert_msg(fabs(mean[0] - m0) <= 1e-14 && fabs(mean[1] + m0) <= 1e-14, "mean %.17g", mean[0]);
    ck_assert_msg(fabs(cov[0] - c00) <= 1e-14 && fabs(cov[3] - c00) <= 1e-14, "Σ₀₀ %.17g vs %.17g",
                  cov[0], c00);
    ck_assert_msg(fabs(cov[1] - c01) <= 1e-14 && fabs(cov[2] - c01) <= 1e-14, "Σ₀₁ %.17g vs %.17g",
                  cov[1], c01);
}
END_TEST

/* The minimum test: losses |i − 10| over 30 updates (the minimum 19 updates behind) pass with
 * every draw's p above 0.95; losses falling to the last update fail (each draw's minimum is
 * the last point: p = 0). */
START_TEST(test_autowu_minimum_test)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    double y[30], p[AUTOWU_DRAWS];
    for (int i = 0; i < 30; i++) y[i] = fabs(i - 10.0);
    ck_assert_int_eq(autowu_test(y, 30, r, p), 1);
    for (int j = 0; j < AUTOWU_DRAWS; j++) ck_assert_msg(p[j] > 0.95, "V: p[%d] = %g", j, p[j]);
    for (int i = 0; i < 30; i++) y[i] = 30.0 - i;
    ck_assert_int_eq(autowu_test(y, 30, r, p), 0);
    for (int j = 0; j < AUTOWU_DRAWS; j++) ck_assert_msg(p[j] == 0.0, "falling: p[%d] = %g", j, p[j]);
    gsl_rng_free(r);
}
END_TEST

/* lr = 1, warmup T = 100, steps 200: η_t = 1e-3·1000^{t/T}, η₅₀ = 0.0316227766…; with losses
 * that keep falling the warm-up ends at T with η* = 1 and the cosine decay is η*·½ half-way
 * (update 150) and 0 at steps; losses that fall for 20 updates and then rise end it within
 * three passing tests of the rise's becoming clear, never before update 23. */
START_TEST(test_autowu_schedule)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.lr = 1.0;
    cfg.train.warmup = 100;
    cfg.train.steps = 200;
    cfg.train.schedule = SCHED_AUTOWU;
    autowu_t a;
    ck_assert_int_eq(autowu_init(&a, 1), 0);
    ck_assert_msg(fabs(autowu_lr(&a, &cfg, 50) - 0.031622776601683791) <= 1e-15, "η₅₀ %.17g",
                  autowu_lr(&a, &cfg, 50));
    long end = 0;
    for (long t = 1; t <= 100 && !end; t++)
        if (autowu_observe(&a, &cfg, t, 10.0 - 0.05 * (double)t)) end = t;
    ck_assert_int_eq(end, 100);
    ck_assert_double_eq(a.switch_lr, 1.0);
    ck_assert_msg(fabs(autowu_lr(&a, &cfg, 150) - 0.5) <= 1e-15, "half-way %.17g",
                  autowu_lr(&a, &cfg, 150));
    ck_assert_double_eq(autowu_lr(&a, &cfg, 200), 0.0);
    autowu_free(&a);
    ck_assert_int_eq(autowu_init(&a, 1), 0);
    end = 0;
    for (long t = 1; t <= 100 && !end; t++) {
        const double loss = t <= 20 ? 10.0 - 0.1 * (double)t : 8.0 + 0.3 * (double)(t - 20);
        if (autowu_observe(&a, &cfg, t, loss)) end = t;
    }
    printf("remedies: AutoWU on losses that turn up after update 20: warm-up ends at update %ld, "
           "lr %.4g\n", end, a.switch_lr);
    ck_assert_msg(end >= 23 && end <= 30, "switch at %ld", end);
    ck_assert_double_eq(a.switch_lr, autowu_lr(&(autowu_t){0}, &cfg, end));
    autowu_free(&a);
}
END_TEST

/* lr_control = curvature: the row of update 0 holds the explicit active λ_max(P⁻¹H) of the
 * measurement batch at θ₀ (P of update 1) within 1e-6, and update 1 runs at
 * min(lr, 38/λ) — the bound, on this sharp model. */
START_TEST(test_curvature_cap_explicit)
{
    config_t cfg;
    tiny(&cfg, LR_CONTROL_CURVATURE);
    train_t *t;
    char err[512];
    ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
    const model_t *m = t->s.model;
    const size_t n = m->num_params;
    double *theta0 = malloc(n * sizeof(double));
    memcpy(theta0, m->params, n * sizeof(double));
    train_record_t r;
    train_step(t, &r);
    ck_assert_int_eq(r.diverged, 0);
    double *H = explicit_hessian(&cfg, m, theta0, &t->curv_batch);
    const double lam = explicit_active(H, n, t->curv_P, t->curv_floored);
    const double got = t->curv_row[0].precond_max_active, want_lr = fmin(0.05, 38.0 / lam);
    printf("remedies: curvature cap on a tiny model (%zu parameters): active lambda %.12g "
           "(explicit %.12g), lr of update 1 %.12g (min(0.05, 38/lambda) %.12g)\n", n, got, lam,
           r.lr, want_lr);
    ck_assert_msg(fabs(got - lam) <= 1e-6 * fabs(lam), "λ %.17g, explicit %.17g", got, lam);
    ck_assert_msg(fabs(r.lr - want_lr) <= 1e-6 * want_lr, "lr %.17g, want %.17g", r.lr, want_lr);
    ck_assert_msg(r.lr < 0.05, "the bound should bind here (lr %.17g)", r.lr);
    ck_assert_int_eq(t->ctl.held, 1);
    free(H);
    free(theta0);
    train_free(t);
}
END_TEST

/* lr_control = cdat: update 1 runs at min(lr, σ·(−gᵀu)/(|uᵀHu| + ε)) with u Adam's first
 * direction at lr 1 (a fresh optimizer on the same gradient), g the training gradient and H the
 * explicit Hessian of the training batch at θ₀; and θ₁ = θ₀ + η·u. */
START_TEST(test_cdat_explicit)
{
    config_t cfg;
    tiny(&cfg, LR_CONTROL_CDAT);
    train_t *t;
    char err[512];
    ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
    const model_t *m = t->s.model;
    const size_t n = m->num_params;
    double *theta0 = malloc(n * sizeof(double)), *u = malloc(n * sizeof(double));
    memcpy(theta0, m->params, n * sizeof(double));
    train_record_t r;
    train_step(t, &r);
    ck_assert_int_eq(r.diverged, 0);
    optim_t o;   // u: Adam's first update at lr 1 on the same gradient
    ck_assert_int_eq(optim_init(&o, &cfg, n), 0);
    memcpy(u, theta0, n * sizeof(double));
    optim_update(&o, u, m->grads, 1.0);
    optim_free(&o);
    for (size_t i = 0; i < n; i++) u[i] -= theta0[i];
    double *H = explicit_hessian(&cfg, m, theta0, &t->s.batch);
    double ngu = 0.0, q = 0.0;
    for (size_t i = 0; i < n; i++) {
        ngu -= m->grads[i] * u[i];
        double hu = 0.0;
        for (size_t j = 0; j < n; j++) hu += H[i * n + j] * u[j];
        q += u[i] * hu;
    }
    const double want = fmin(0.05, 2.0 * fmax(ngu, 0.0) / (fabs(q) + LRCTL_CDAT_EPS));
    printf("remedies: CDAT on a tiny model: -g.u %.10g, u.Hu %.10g (explicit), lr %.12g "
           "(want %.12g)\n", ngu, q, r.lr, want);
    ck_assert_msg(fabs(r.lr - want) <= 1e-6 * want, "lr %.17g, want %.17g", r.lr, want);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(m->params[i] - (theta0[i] + r.lr * u[i])) <= 1e-12, "θ₁[%zu]", i);
    free(H);
    free(u);
    free(theta0);
    train_free(t);
}
END_TEST

/* The keys refused where nothing reads them, with the key named; accepted where they apply. */
START_TEST(test_remedy_keys)
{
    static const char *const bad[][2] = {
        {"train.lr_control_every=3", "train.lr_control_every: needs train.lr_control = curvature"},
        {"train.curvature_cap=0.5", "train.curvature_cap: needs train.lr_control = curvature"},
        {"train.cdat_sigma=1", "train.cdat_sigma: needs train.lr_control = cdat"},
        {"train.cdat_ema=0.5", "train.cdat_ema: needs train.lr_control = cdat"},
        {"train.warmup_start=catapult", "needs train.warmup >= 2"},
    };
    char err[CONFIG_ERR_MAX];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        config_t cfg;
        config_defaults(&cfg);
        cfg.train.warmup = 1;
        ck_assert_int_eq(config_set(&cfg, bad[k][0], err, sizeof err), 0);
        ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad[k][1]) != NULL, "%s: %s", bad[k][0], err);
    }
    config_t cfg;
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "train.lr_control=curvature", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);   // steps = 0: nothing to act on
    ck_assert_msg(strstr(err, "train.steps: the remedies") != NULL, "%s", err);
    cfg.train.steps = 10;
    ck_assert_int_eq(config_set(&cfg, "train.lr_control_every=3", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 0);
    ck_assert_int_eq(config_set(&cfg, "train.resume=auto", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "train.resume: must be off") != NULL, "%s", err);
}
END_TEST

Suite *remedies_suite(void)
{
    Suite *s = suite_create("remedies");
    TCase *tc = tcase_create("remedies");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_curvature_bound);
    tcase_add_test(tc, test_cdat_rule);
    tcase_add_test(tc, test_catapult_search);
    tcase_add_test(tc, test_catapult_warmup);
    tcase_add_test(tc, test_update_ratio_cap);
    tcase_add_test(tc, test_lamb);
    tcase_add_test(tc, test_sigma1);
    tcase_add_test(tc, test_spectral_bound);
    tcase_add_test(tc, test_autowu_posterior);
    tcase_add_test(tc, test_autowu_minimum_test);
    tcase_add_test(tc, test_autowu_schedule);
    tcase_add_test(tc, test_curvature_cap_explicit);
    tcase_add_test(tc, test_cdat_explicit);
    tcase_add_test(tc, test_remedy_keys);
    suite_add_tcase(s, tc);
    return s;
}
