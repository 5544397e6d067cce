/* test_optim.c — each optimizer's update on a 3-vector against values worked out by hand from
 * the formulas in optim.h, the schedules at chosen steps, global-norm clipping; GI-Adam and
 * StableAdamW against the papers' formulas; the optimizer's tensors (per-tensor lr, pieces,
 * the update's RMS) against tensor-by-tensor runs and direct sums; RAdam's ρₜ against its
 * definition as an SMA length; resuming the new optimizers (μP's model: tests/test_mup.c).
 *
 * θ₀ = (0.5, −1, 2); gradients g₁ = (0.1, −0.2, 0.3), g₂ = (−0.05, 0.4, 0.1),
 * g₃ = (0.2, 0.2, −0.3), then repeating; lr = 0.01, β = (0.9, 0.98), ε = 1e-8, λ = 0.1, μ = 0.9.
 * The expected values were computed step by step in double precision (Python); sgd, adam and
 * adamw equal torch.optim's SGD/Adam/AdamW exactly, radam equals torch.optim.RAdam wherever
 * ρₜ ∉ (4, 5] (the paper's threshold is 4, PyTorch's 5) to 1.3e-10 (PyTorch puts ε beside √v,
 * not √v̂).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "tests.h"
#include "config/config.h"
#include "train/optim.h"
#include "train/train.h"
#include "util/threads.h"

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

/* ---------------------------------------------------------------- GI-Adam, StableAdamW */

/* GI-Adam from Kalra & Barkeshli (2024) written out per element: Adam with its L2 term whose
 * v₀ is the first (decayed) gradient squared, both bias corrections kept. */
static void ref_gi_adam(double *th, int steps)
{
    const double b1 = 0.9, b2 = 0.98, eps = 1e-8, wd = 0.1, lr = 0.01;
    double m[3] = {0}, v[3] = {0};
    for (int t = 1; t <= steps; t++)
        for (int i = 0; i < 3; i++) {
            const double g = GRADS[(t - 1) % 3][i] + wd * th[i];
            if (t == 1) v[i] = g * g;
            m[i] = b1 * m[i] + (1.0 - b1) * g;
            v[i] = b2 * v[i] + (1.0 - b2) * g * g;
            const double mh = m[i] / (1.0 - pow(b1, t)), vh = v[i] / (1.0 - pow(b2, t));
            th[i] -= lr * mh / (sqrt(vh) + eps);
        }
}

/* Step 1: v̂₁ = g²/(1 − β₂), so θ₁ = θ₀ − lr·g/(√50·|g| + ε) with g = g₁ + λθ₀, and the update's
 * RMS is 1/√50 (not adam's 1); steps 2–4 as the definition. */
START_TEST(test_gi_adam)
{
    double th[3], want[3];
    run_optimizer(OPT_GI_ADAM, 1, th);
    const double g1[3] = {0.15, -0.3, 0.5};
    for (int i = 0; i < 3; i++)
        want[i] = THETA0[i] - 0.01 * g1[i] / (sqrt(50.0) * fabs(g1[i]) + 1e-8);
    assert_close(th, want, "gi_adam step 1");
    for (int steps = 2; steps <= 4; steps++) {
        run_optimizer(OPT_GI_ADAM, steps, th);
        memcpy(want, THETA0, sizeof want);
        ref_gi_adam(want, steps);
        assert_close(th, want, "gi_adam steps 2-4");
    }
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.optimizer = OPT_GI_ADAM;
    cfg.train.weight_decay = 0.1;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    memcpy(th, THETA0, sizeof th);
    optim_update(&o, th, GRADS[0], 0.01);
    ck_assert_msg(fabs(sqrt(o.seg[0].sumsq / 3.0) * sqrt(50.0) - 1.0) < 1e-6, "rms %.17g",
                  sqrt(o.seg[0].sumsq / 3.0));
    optim_free(&o);
}
END_TEST

/* A buffer of the given tensor sizes as a registry (no model: model_lr_scale gives 1). */
static void fake_model(model_t *m, tensor_info_t *ts, const size_t *sizes, int n)
{
    memset(m, 0, sizeof *m);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        memset(&ts[i], 0, sizeof ts[i]);
        ts[i].offset = off;
        ts[i].rows = 1;
        ts[i].cols = sizes[i];
        ts[i].layer = -1;
        off += sizes[i];
    }
    m->tensors = ts;
    m->num_tensors = n;
    m->num_params = off;
}

/* Two tensors A = θ[0..2], B = θ[3..5], both from θ₀, λ = 0.1. Update 1 (g₁ on both): g²/v̂ = 1,
 * c = 1, the bits of adamw. Update 2 (A: 10·g₁, B: g₂): c_A = √(100(1+β₂)/(β₂+100)) > 1,
 * c_B = max(1, √mean(g₂²/v̂)) = 1, θ₂ = θ₁ − (α/c)λθ₁ − (α/c)·m̂/(√v̂ + ε) (Wortsman et al.
 * 2023b, Alg. 2). */
START_TEST(test_stableadamw)
{
    const double b1 = 0.9, b2 = 0.98, eps = 1e-8, wd = 0.1, lr = 0.01;
    const size_t sizes[2] = {3, 3};
    tensor_info_t ts[2];
    model_t m;
    fake_model(&m, ts, sizes, 2);
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.weight_decay = wd;
    optim_t o[2];
    double th[2][6], g[6];
    for (int k = 0; k < 2; k++) {
        cfg.train.optimizer = k ? OPT_ADAMW : OPT_STABLEADAMW;
        ck_assert_int_eq(optim_init(&o[k], &cfg, 6), 0);
        ck_assert_int_eq(optim_set_tensors(&o[k], &m), 0);
        for (int i = 0; i < 6; i++) th[k][i] = THETA0[i % 3];
        for (int i = 0; i < 6; i++) g[i] = GRADS[0][i % 3];
        optim_update(&o[k], th[k], g, lr);
    }
    ck_assert_int_eq(memcmp(th[0], th[1], sizeof th[0]), 0);
    ck_assert(o[0].seg[0].clip == 1.0 && o[0].seg[1].clip == 1.0);
    double want[6], th1[6];
    memcpy(th1, th[0], sizeof th1);
    for (int i = 0; i < 6; i++) g[i] = i < 3 ? 10.0 * GRADS[0][i] : GRADS[1][i - 3];
    optim_update(&o[0], th[0], g, lr);
    double c[2] = {0, 0};
    for (int i = 0; i < 6; i++) {   // the moments after update 2, from their definitions
        const double g1 = GRADS[0][i % 3];
        const double v = b2 * (1 - b2) * g1 * g1 + (1 - b2) * g[i] * g[i];
        c[i / 3] += g[i] * g[i] / (v / (1 - b2 * b2)) / 3.0;
    }
    for (int k = 0; k < 2; k++) c[k] = c[k] > 1.0 ? sqrt(c[k]) : 1.0;
    ck_assert_msg(fabs(c[0] - sqrt(100 * (1 + b2) / (b2 + 100))) < 1e-14 && c[1] == 1.0, "c %g %g",
                  c[0], c[1]);
    for (int i = 0; i < 6; i++) {
        const double g1 = GRADS[0][i % 3], a = lr / c[i / 3];
        const double mm = b1 * (1 - b1) * g1 + (1 - b1) * g[i];
        const double v = b2 * (1 - b2) * g1 * g1 + (1 - b2) * g[i] * g[i];
        const double mhat = mm / (1 - b1 * b1), vhat = v / (1 - b2 * b2);
        want[i] = th1[i] - a * wd * th1[i] - a * mhat / (sqrt(vhat) + eps);
    }
    ck_assert_msg(fabs(o[0].seg[0].clip - c[0]) < 1e-14 * c[0] && o[0].seg[1].clip == 1.0,
                  "clip %.17g, want %.17g", o[0].seg[0].clip, c[0]);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabs(th[0][i] - want[i]) <= 1e-14 * fabs(want[i]), "θ[%d] %.17g want %.17g",
                      i, th[0][i], want[i]);
    optim_free(&o[0]);
    optim_free(&o[1]);
}
END_TEST

/* ---------------------------------------------------------------- the optimizer's tensors */

/* Tensors of 3, 5, 4099, 1 and 5000 elements (blocks of VR_LANES that run across tensors,
 * pieces cut at 4096) with lr multipliers 0.5, 1, 0.25, 2, 1: six updates of one optimizer over
 * the buffer equal, bit for bit, separate optimizers over each tensor at lr·mult (θ, m, v), at
 * 1 and 2 threads; each tensor's Σ (m̂/(√v̂ + ε))² equals the separate run's to 1e-13. */
START_TEST(test_tensor_lr)
{
    const size_t sizes[5] = {3, 5, 4099, 1, 5000};
    const double mult[5] = {0.5, 1.0, 0.25, 2.0, 1.0};
    tensor_info_t ts[5];
    model_t m;
    fake_model(&m, ts, sizes, 5);
    const size_t n = m.num_params;
    double *th0 = malloc(n * sizeof(double)), *g = malloc(6 * n * sizeof(double));
    double *th = malloc(n * sizeof(double)), *one = malloc(n * sizeof(double));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (size_t i = 0; i < n; i++) th0[i] = gsl_ran_gaussian(rng, 1.0);
    for (size_t i = 0; i < 6 * n; i++) g[i] = gsl_ran_gaussian(rng, 0.1) * (i % 7 == 0 ? 0.0 : 1.0);
    const optimizer_t kinds[4] = {OPT_ADAM, OPT_ADAMW, OPT_RADAM, OPT_GI_ADAM};
    const int saved = threads_get();
    for (int k = 0; k < 4; k++)
        for (int nt = 1; nt <= 2; nt++) {
            threads_set(nt);
            config_t cfg;
            config_defaults(&cfg);
            cfg.train.optimizer = kinds[k];
            cfg.train.weight_decay = 0.05;
            optim_t o;
            ck_assert_int_eq(optim_init(&o, &cfg, n), 0);
            ck_assert_int_eq(optim_set_tensors(&o, &m), 0);
            for (int s = 0; s < 5; s++) o.seg[s].lr_mult = mult[s];
            memcpy(th, th0, n * sizeof(double));
            for (int t = 0; t < 6; t++) optim_update(&o, th, g + (size_t)t * n, 1e-2);
            for (int s = 0; s < 5; s++) {   // tensor s alone, at lr·mult
                const size_t off = ts[s].offset, len = sizes[s];
                optim_t p;
                ck_assert_int_eq(optim_init(&p, &cfg, len), 0);
                memcpy(one, th0 + off, len * sizeof(double));
                for (int t = 0; t < 6; t++)
                    optim_update(&p, one, g + (size_t)t * n + off, 1e-2 * mult[s]);
                ck_assert_msg(!memcmp(one, th + off, len * sizeof(double)) &&
                              !memcmp(p.m, o.m + off, len * sizeof(double)) &&
                              !memcmp(p.v, o.v + off, len * sizeof(double)),
                              "%s tensor %d at %d threads", config_optimizer_name(kinds[k]), s, nt);
                ck_assert_msg(fabs(p.seg[0].sumsq - o.seg[s].sumsq) <= 1e-13 * p.seg[0].sumsq,
                              "sumsq %d: %.17g vs %.17g", s, o.seg[s].sumsq, p.seg[0].sumsq);
                optim_free(&p);
            }
            optim_free(&o);
        }
    threads_set(saved);
    gsl_rng_free(rng);
    free(th0);
    free(g);
    free(th);
    free(one);
}
END_TEST

/* A small lm of cfg's optimizer (d = 16, L = 2, copy task). */
static void lm_config(config_t *cfg, optimizer_t opt)
{
    config_defaults(cfg);
    cfg->model.layers = 2;
    cfg->model.d_model = 16;
    cfg->model.heads = 2;
    cfg->model.d_ff = 24;
    cfg->model.vocab = 13;
    cfg->model.seq_len = 6;
    cfg->data.task = TASK_COPY;
    cfg->data.batch = 3;
    cfg->train.steps = 6;
    cfg->train.optimizer = opt;
    cfg->train.lr = 1e-2;
    cfg->train.warmup = 0;
    cfg->probe.every = 2;
}

static train_t *train_of(const config_t *cfg)
{
    train_t *t;
    char err[256];
    ck_assert_int_eq(train_create(&t, cfg, err, sizeof err), 0);
    return t;
}

/* /train/update_rms after three updates: each layer row's RMS of m̂/(√v̂ + ε), computed here
 * from the optimizer's m, v over the row's tensors, to 1e-12; tok_embed's in update_rms_extra,
 * NaN for the absent lm_head; everything NaN with sgd. */
START_TEST(test_update_rms)
{
    for (int k = 0; k < 3; k++) {
        config_t cfg;
        lm_config(&cfg, k == 0 ? OPT_ADAM : k == 1 ? OPT_STABLEADAMW : OPT_SGD);
        train_t *t = train_of(&cfg);
        train_record_t r;
        for (int s = 0; s < 3; s++) train_step(t, &r);
        const model_t *m = t->s.model;
        const optim_t *o = &t->opt;
        const double bc1 = 1 - pow(o->beta1, 3), bc2 = 1 - pow(o->beta2, 3);
        double sum[2] = {0, 0}, emb = 0;
        size_t cnt[2] = {0, 0};
        for (int i = 0; i < m->num_tensors && o->v; i++) {
            const tensor_info_t *ti = &m->tensors[i];
            for (size_t j = ti->offset; j < ti->offset + model_tensor_size(ti); j++) {
                const double u = o->m[j] / bc1 / (sqrt(o->v[j] / bc2) + o->eps);
                if (ti->layer >= 0) sum[ti->layer] += u * u, cnt[ti->layer]++;
                else if (!strcmp(ti->name, "tok_embed")) emb += u * u;
            }
        }
        for (int l = 0; l < 2; l++) {
            const double want = o->v ? sqrt(sum[l] / (double)cnt[l]) : NAN, got = t->update_rms[l];
            ck_assert_msg(o->v ? fabs(got - want) <= 1e-12 * want : isnan(got),
                          "%s layer %d: %.17g, direct %.17g", config_optimizer_name(cfg.train.optimizer),
                          l, got, want);
        }
        const double want = sqrt(emb / (13.0 * 16.0));
        ck_assert(o->v ? fabs(t->update_rms_extra[0] - want) <= 1e-12 * want
                       : isnan(t->update_rms_extra[0]));
        ck_assert(isnan(t->update_rms_extra[1]));   // lm_head: tied
        train_free(t);
    }
}
END_TEST

/* RAdam's ρₜ is the length of the simple moving average whose centre of mass is the EMA's
 * (Liu et al. 2020, §3): ρₜ = 1 + 2·Σ_{k<t} k·(1−β₂)β₂ᵏ/(1−β₂ᵗ), summed here; rₜ is NaN exactly
 * where ρₜ ≤ 4 (β₂ = 0.98: updates 1–4), in (0, 1] after, and → 1 as t grows. */
START_TEST(test_radam_term)
{
    const double betas[2] = {0.98, 0.999};
    const long ts[8] = {1, 2, 4, 5, 6, 10, 100, 3000};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 8; i++) {
            const double b2 = betas[b];
            double sum = 0.0, rho;
            for (long k = 0; k < ts[i]; k++) sum += (double)k * (1 - b2) * pow(b2, (double)k);
            const double want = 1.0 + 2.0 * sum / (1.0 - pow(b2, (double)ts[i]));
            const double r = optim_radam_rect(b2, ts[i], &rho);
            // the closed form ρ∞ − 2tβ₂ᵗ/(1 − β₂ᵗ) cancels terms of ρ∞'s size: ~1e-13·ρ∞ absolute
            ck_assert_msg(fabs(rho - want) <= 1e-13 * (2 / (1 - b2)), "β₂ %g t %ld: ρ %.17g, want %.17g", b2,
                          ts[i], rho, want);
            ck_assert(want > 4.0 ? r > 0.0 && r <= 1.0 : isnan(r));
        }
    double rho;
    ck_assert(isnan(optim_radam_rect(0.98, 4, &rho)) && !isnan(optim_radam_rect(0.98, 5, &rho)));
    ck_assert(fabs(optim_radam_rect(0.98, 100000, &rho) - 1.0) < 1e-9);
}
END_TEST

/* Resuming is complete for the new optimizers and μP: a run given the state of another after
 * three updates (params, m, v, t, both streams, step, batches) makes its updates 4–6 bit for
 * bit (GI-Adam's v₀ = g² belongs to update 1 only; StableAdamW's c and μP's rates are
 * recomputed, not state). */
START_TEST(test_resume_new)
{
    for (int k = 0; k < 3; k++) {
        config_t cfg;
        lm_config(&cfg, k == 0 ? OPT_GI_ADAM : k == 1 ? OPT_STABLEADAMW : OPT_ADAMW);
        cfg.train.weight_decay = 0.1;
        cfg.train.lr = 0.05;
        if (k == 2) cfg.init.parametrization = PARAM_MUP_SIMPLE, cfg.init.base_width = 4;
        train_t *a = train_of(&cfg), *b = train_of(&cfg), *c = train_of(&cfg);
        train_record_t ra[6], rb, rc;
        for (int s = 0; s < 6; s++) train_step(a, &ra[s]);
        for (int s = 0; s < 3; s++) train_step(b, &rb);
        const size_t n = b->s.model->num_params;
        memcpy(c->s.model->params, b->s.model->params, n * sizeof(double));
        memcpy(c->opt.m, b->opt.m, n * sizeof(double));
        memcpy(c->opt.v, b->opt.v, n * sizeof(double));
        c->opt.t = b->opt.t;
        memcpy(gsl_rng_state(c->s.rng_init), gsl_rng_state(b->s.rng_init), gsl_rng_size(b->s.rng_init));
        memcpy(gsl_rng_state(c->s.rng_data), gsl_rng_state(b->s.rng_data), gsl_rng_size(b->s.rng_data));
        c->step = b->step;
        c->batches = b->batches;
        for (int s = 3; s < 6; s++) {
            train_step(c, &rc);
            ck_assert_msg(memcmp(&rc.loss, &ra[s].loss, sizeof(double)) == 0, "%s step %d",
                          config_optimizer_name(cfg.train.optimizer), s + 1);
        }
        ck_assert_int_eq(memcmp(c->s.model->params, a->s.model->params, n * sizeof(double)), 0);
        ck_assert_int_eq(memcmp(c->update_rms, a->update_rms, 2 * sizeof(double)), 0);
        train_free(a);
        train_free(b);
        train_free(c);
    }
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
    tcase_add_test(tc, test_gi_adam);
    tcase_add_test(tc, test_stableadamw);
    tcase_add_test(tc, test_tensor_lr);
    tcase_add_test(tc, test_update_rms);
    tcase_add_test(tc, test_radam_term);
    tcase_add_test(tc, test_resume_new);
    suite_add_tcase(s, tc);
    return s;
}
