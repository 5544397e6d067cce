/* test_optim.c — each optimizer's update on a 3-vector against values worked out by hand from
 * the formulas in optim.h, the schedules at chosen steps, global-norm clipping.
 *
 * θ₀ = (0.5, −1, 2); gradients g₁ = (0.1, −0.2, 0.3), g₂ = (−0.05, 0.4, 0.1),
 * g₃ = (0.2, 0.2, −0.3), then repeating; lr = 0.01, β = (0.9, 0.98), ε = 1e-8, λ = 0.1, μ = 0.9.
 * The expected values were computed step by step in double precision (Python); sgd, adam and
 * adamw equal torch.optim's SGD/Adam/AdamW exactly, radam equals torch.optim.RAdam wherever
 * ρₜ ∉ (4, 5] (the paper's threshold is 4, PyTorch's 5) to 1.3e-10 (PyTorch puts ε beside √v,
 * not √v̂).
 */
#include <math.h>
#include <string.h>
#include "tests.h"
#include "config/config.h"
#include "train/optim.h"

static const double THETA0[3] = {0.5, -1.0, 2.0};
static const double GRADS[3][3] = {{0.1, -0.2, 0.3}, {-0.05, 0.4, 0.1}, {0.2, 0.2, -0.3}};

/* Run `steps` updates of optimizer kind from THETA0 into theta. */
static void run_optimizer(optimizer_t kind, int steps, double *theta)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.optimizer = kind;
    cfg.train.beta1 = 0.9;
    cfg.train.beta2 = 0.98;
    cfg.train.eps = 1e-8;
    cfg.train.weight_decay = 0.1;
    cfg.train.momentum = 0.9;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    memcpy(theta, THETA0, sizeof THETA0);
    for (int t = 0; t < steps; t++) optim_update(&o, theta, GRADS[t % 3], 0.01);
    ck_assert_int_eq(o.t, steps);
    optim_free(&o);
}

static void assert_close(const double *got, const double *want, const char *what)
{
    for (int i = 0; i < 3; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= 1e-14 * fabs(want[i]), "%s[%d]: %.17g, want %.17g",
                      what, i, got[i], want[i]);
}

/* sgd, 3 steps: b₁ = g₁ + λθ₀ = (0.15, −0.3, 0.5), θ₁ = θ₀ − 0.01·b₁ = (0.4985, −0.997, 1.995), … */
START_TEST(test_sgd_momentum)
{
    double th[3];
    run_optimizer(OPT_SGD, 1, th);
    assert_close(th, (const double[3]){0.4985, -0.997, 1.995}, "sgd step 1");
    run_optimizer(OPT_SGD, 3, th);
    assert_close(th, (const double[3]){0.4934406985, -0.99857839700000006, 1.9817719950000001},
                 "sgd step 3");
}
END_TEST

/* adam: after one step m̂ = g, v̂ = g², so θ₁ = θ₀ − lr·g/(|g| + ε) ≈ θ₀ − 0.01·sign(g + λθ₀). */
START_TEST(test_adam)
{
    double th[3];
    run_optimizer(OPT_ADAM, 1, th);
    // g₁ + λθ₀ = (0.15, −0.3, 0.5)
    const double want1[3] = {0.5 - 0.01 * 0.15 / (0.15 + 1e-8), -1.0 + 0.01 * 0.3 / (0.3 + 1e-8),
                             2.0 - 0.01 * 0.5 / (0.5 + 1e-8)};
    assert_close(th, want1, "adam step 1");
    run_optimizer(OPT_ADAM, 3, th);
    assert_close(th, (const double[3]){0.47522768861417813, -0.99243629730637761, 1.9741816128211798},
                 "adam step 3");
}
END_TEST

/* adamw: θ ← (1 − lr·λ)θ first, then the adam step on g alone. */
START_TEST(test_adamw)
{
    double th[3];
    run_optimizer(OPT_ADAMW, 1, th);
    const double want1[3] = {0.5 * 0.999 - 0.01 * 0.1 / (0.1 + 1e-8),
                             -1.0 * 0.999 + 0.01 * 0.2 / (0.2 + 1e-8),
                             2.0 * 0.999 - 0.01 * 0.3 / (0.3 + 1e-8)};
    assert_close(th, want1, "adamw step 1");
    run_optimizer(OPT_ADAMW, 3, th);
    assert_close(th, (const double[3]){0.4793079464040722, -0.99586246211752683, 1.974806578648614},
                 "adamw step 3");
}
END_TEST

/* radam, β₂ = 0.98: ρ∞ = 99, ρ₁…₇ = 1, 1.99, 2.97, 3.95, 4.92, 5.88, 6.84. Steps 1–4 are
 * momentum-SGD steps θ ← θ − lr·m̂ (step 1: θ₀ − 0.01·(g₁ + λθ₀)); 5–7 are rectified. */
START_TEST(test_radam)
{
    double th[3];
    run_optimizer(OPT_RADAM, 1, th);
    assert_close(th, (const double[3]){0.4985, -0.997, 1.9950000000000001}, "radam step 1");
    run_optimizer(OPT_RADAM, 4, th);
    assert_close(th, (const double[3]){0.4950142967856509, -0.9970923093793328, 1.9859864792128563},
                 "radam step 4");
    run_optimizer(OPT_RADAM, 5, th);
    assert_close(th, (const double[3]){0.49445816116065427, -0.99718423421472679, 1.9853740974855341},
                 "radam step 5 (first rectified: rho = 4.92 > 4)");
    run_optimizer(OPT_RADAM, 7, th);
    assert_close(th, (const double[3]){0.49229171514684611, -0.99729130099339602, 1.9835895677153039},
                 "radam step 7");
}
END_TEST

/* Schedules: warm-up lr·t/w, then inverse_sqrt lr·√(w/t), linear to 0 at steps, constant,
 * cosine to lr·min_lr_ratio at steps (Loshchilov & Hutter 2017: 1/2 (1 + cos(π/4)) a quarter
 * of the way, 1/2 half way). */
START_TEST(test_schedules)
{
    const double lr = 1e-3;
    const struct { schedule_t s; long warmup, steps, t; double want; } cases[] = {
        {SCHED_INVERSE_SQRT, 4000, 100000, 1, 2.5e-7},
        {SCHED_INVERSE_SQRT, 4000, 100000, 2000, 5e-4},
        {SCHED_INVERSE_SQRT, 4000, 100000, 4000, 1e-3},
        {SCHED_INVERSE_SQRT, 4000, 100000, 16000, 5e-4},
        {SCHED_INVERSE_SQRT, 0, 100, 1, 1e-3},       // no warm-up: lr at once, then lr/√t
        {SCHED_INVERSE_SQRT, 1, 100, 4, 5e-4},
        {SCHED_INVERSE_SQRT, 0, 100, 100, 1e-4},
        {SCHED_LINEAR, 10, 100, 5, 5e-4},
        {SCHED_LINEAR, 10, 100, 10, 1e-3},
        {SCHED_LINEAR, 10, 100, 55, 5e-4},
        {SCHED_LINEAR, 10, 100, 100, 0.0},
        {SCHED_LINEAR, 0, 100, 1, 1e-3},
        {SCHED_LINEAR, 0, 101, 51, 5e-4},
        {SCHED_CONSTANT, 0, 100, 1, 1e-3},
        {SCHED_CONSTANT, 0, 100, 77, 1e-3},
        {SCHED_CONSTANT, 500, 1000, 250, 5e-4},
        {SCHED_CONSTANT, 500, 1000, 900, 1e-3},
        {SCHED_COSINE, 10, 110, 5, 5e-4},
        {SCHED_COSINE, 10, 110, 10, 1e-3},
        {SCHED_COSINE, 10, 110, 35, 1e-3 * 0.5 * (1 + 0.70710678118654752)},
        {SCHED_COSINE, 10, 110, 60, 5e-4},
        {SCHED_COSINE, 10, 110, 110, 0.0},
        {SCHED_COSINE, 0, 100, 1, 1e-3},
        {SCHED_COSINE, 10, 110, 60, 5.5e-4},    // min_lr_ratio 0.1 from here: 1e-4 + 9e-4 / 2
        {SCHED_COSINE, 10, 110, 110, 1e-4},     // the floor
    };
    const size_t with_floor = sizeof cases / sizeof cases[0] - 2;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        config_t c;
        config_defaults(&c);
        c.train.schedule = cases[i].s;
        c.train.lr = lr;
        c.train.warmup = (int)cases[i].warmup;
        c.train.steps = (int)cases[i].steps;
        c.train.min_lr_ratio = i >= with_floor ? 0.1 : 0.0;
        const double got = optim_lr(&c, cases[i].t);
        ck_assert_msg(fabs(got - cases[i].want) <= 1e-15, "case %zu: lr(%ld) = %.17g, want %g", i,
                      cases[i].t, got, cases[i].want);
    }
}
END_TEST

/* Clipping: ‖(3, 4)‖ = 5 → (0.6, 0.8) at max 1; untouched at max 10 and with clip off. */
START_TEST(test_clip)
{
    double g[2] = {3.0, 4.0};
    ck_assert_double_eq(optim_clip(g, 2, 10.0), 5.0);
    ck_assert(g[0] == 3.0 && g[1] == 4.0);
    ck_assert_double_eq(optim_clip(g, 2, 0.0), 5.0);
    ck_assert(g[0] == 3.0 && g[1] == 4.0);
    ck_assert_double_eq(optim_clip(g, 2, 1.0), 5.0);
    ck_assert(fabs(g[0] - 0.6) < 1e-15 && fabs(g[1] - 0.8) < 1e-15);
    ck_assert(fabs(optim_global_norm(g, 2) - 1.0) < 1e-15);
}
END_TEST

Suite *optim_suite(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("updates");
    tcase_add_test(tc, test_sgd_momentum);
    tcase_add_test(tc, test_adam);
    tcase_add_test(tc, test_adamw);
    tcase_add_test(tc, test_radam);
    tcase_add_test(tc, test_schedules);
    tcase_add_test(tc, test_clip);
    suite_add_tcase(s, tc);
    return s;
}
