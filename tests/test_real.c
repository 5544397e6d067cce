/* test_real.c — the float32 core (util/real.h, docs/design.md §2 "One core, two precisions"):
 * its structures have the float64 core's layout, and its loss and gradients agree with the
 * float64 core's on the same parameters and batch, for every scheme in both architectures, to a
 * stated multiple of float32's ε times the depth. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests.h"
#include "config/config.h"
#include "config/scheme.h"
#include "train/core_f32.h"
#include "model/model.h"
#include "model/session.h"
#include "train/train.h"

/* The bound: ‖g₃₂ − g₆₄‖_F ≤ GRAD_EPS_MULT · FLT_EPSILON · (layers) · scale per tensor, scale =
 * max(‖g₆₄‖_F of the tensor, 10⁻³ · the largest of any tensor) (a tensor whose gradient is
 * nearly zero is held to the model's scale, as gradcheck does); the loss to
 * LOSS_EPS_MULT · FLT_EPSILON relative. Measured worst (this machine): see the printed line. */
#define GRAD_EPS_MULT 64.0
#define LOSS_EPS_MULT 4.0

/* io reads a float32 run's train_t through the float64 declaration (h5io_checkpoint.c, run.c):
 * every size and offset it relies on must be the same in both cores. */
START_TEST(test_layout_same)
{
    size_t a[TRAIN_LAYOUT_N], b[TRAIN_LAYOUT_N];
    train_layout(a);
    train_layout_f32(b);
    for (int i = 0; i < TRAIN_LAYOUT_N; i++)
        ck_assert_msg(a[i] == b[i], "layout value %d: float64 %zu, float32 %zu", i, a[i], b[i]);
}
END_TEST

/* A small model with some depth: d = 32, 4 heads, d_ff = 48, 4 layers (lm) or 3-3 (encdec). */
static void real_config(config_t *cfg, placement_t p, norm_kind_t n, int encdec, int seed)
{
    config_defaults(cfg);
    cfg->model.layers = encdec ? 3 : 4;
    cfg->model.d_model = 32;
    cfg->model.heads = 4;
    cfg->model.d_ff = 48;
    cfg->model.seq_len = 12;
    cfg->model.vocab = 29;
    cfg->model.placement = p;
    cfg->model.norm = n;
    cfg->data.batch = 4;
    cfg->data.task = TASK_RANDOM;
    cfg->init.seed = (unsigned long)seed;
    if (p == PLACEMENT_MIXLN) cfg->model.mix_ratio = 0.5;
    if (encdec) {
        cfg->model.arch = ARCH_ENCDEC;
        cfg->model.src_len = 10;
        cfg->data.min_len = 4;
    }
}

typedef struct {
    double grad, loss;   /* worst multiples of ε·depth and of ε */
    char name[160];      /* where the worst gradient is */
} worst_t;

/* Both cores on the same parameters (the float64 initialisation, perturbed, rounded to float
 * and widened back) and the same batch: loss and every tensor's gradient against the bound. */
static void compare(const config_t *cfg, const char *what, worst_t *w)
{
    session_t d, f;
    char err[256];
    ck_assert_int_eq(session_open(&d, cfg, err, sizeof err), 0);
    ck_assert_int_eq(session_open_f32(&f, cfg, err, sizeof err), 0);
    session_init(&d, cfg->init.seed);
    session_init_f32(&f, cfg->init.seed);
    model_perturb(d.model, d.rng_init, 0.3);   // γ, β, biases, ω, α away from 1 and 0
    model_t *md = d.model, *mf = f.model;
    ck_assert_uint_eq(md->num_params, mf->num_params);
    float *pf = (float *)(void *)mf->params;
    for (size_t i = 0; i < md->num_params; i++) {
        pf[i] = (float)md->params[i];
        md->params[i] = pf[i];
    }
    ck_assert_int_eq(session_next_batch(&d), 0);
    ck_assert_int_eq(session_next_batch_f32(&f), 0);
    const size_t nt = (size_t)d.batch.B * d.batch.T;
    ck_assert_int_eq(memcmp(d.batch.tokens, f.batch.tokens, nt * sizeof(int32_t)), 0);
    model_forward(md, &d.batch);
    model_forward_f32(mf, &f.batch);
    const double l64 = model_objective(md), l32 = model_objective_f32(mf);
    model_zero_grad(md);
    model_backward(md);
    model_zero_grad_f32(mf);
    model_backward_f32(mf);

    const double depth = md->L + md->M, eps = FLT_EPSILON;
    const double lr = fabs(l32 - l64) / fabs(l64) / eps;
    ck_assert_msg(lr <= LOSS_EPS_MULT, "%s: loss %.9g (float32) vs %.9g: %.1f·ε", what, l32, l64,
                  lr);
    if (lr > w->loss) w->loss = lr;
    const float *gf = (const float *)(const void *)mf->grads;
    double gmax = 0.0;
    for (int k = 0; k < md->num_tensors; k++) {
        const tensor_info_t *t = &md->tensors[k];
        double s = 0.0;
        for (size_t i = 0; i < model_tensor_size(t); i++)
            s += md->grads[t->offset + i] * md->grads[t->offset + i];
        if (sqrt(s) > gmax) gmax = sqrt(s);
    }
    for (int k = 0; k < md->num_tensors; k++) {
        const tensor_info_t *t = &md->tensors[k];
        double diff = 0.0, norm = 0.0;
        for (size_t i = 0; i < model_tensor_size(t); i++) {
            const double a = md->grads[t->offset + i], b = gf[t->offset + i];
            diff += (b - a) * (b - a);
            norm += a * a;
        }
        const double scale = fmax(sqrt(norm), 1e-3 * gmax);
        const double r = sqrt(diff) / scale / (eps * depth);
        ck_assert_msg(r <= GRAD_EPS_MULT, "%s: %s: ‖Δg‖/‖g‖ = %.3e = %.1f·ε·%g", what, t->name,
                      sqrt(diff) / scale, r, depth);
        if (r > w->grad) {
            w->grad = r;
            snprintf(w->name, sizeof w->name, "%s %s", what, t->name);
        }
    }
    session_close(&d);
    session_close_f32(&f);
}

/* Every scheme of the table (config/scheme.c) × {lm, encdec}: each placement with its first
 * allowed norm (layernorm; none for a scheme without norms), plus the rows a norm or an init
 * selects (rmsnorm, dyt, T-Fixup) on a placement they go with. A new row is covered. */
START_TEST(test_grads_every_scheme)
{
    worst_t w = {0.0, 0.0, ""};
    int n = 0, seed = 700;
    for (int arch = 0; arch < 2; arch++) {
        for (int i = 0; i < SCHEME_COUNT; i++) {
            const scheme_t *s = &SCHEMES[i];
            int p = i < PLACEMENT_COUNT ? i : 0;
            while (i >= PLACEMENT_COUNT && s->placements && !((s->placements >> p) & 1u)) p++;
            norm_kind_t nk = s->norms == SCHEME_NORMS_NONE ? NORM_NONE : NORM_LAYERNORM;
            if (s->by == SCHEME_BY_NORM) nk = (norm_kind_t)s->value;
            config_t cfg;
            real_config(&cfg, (placement_t)p, nk, arch, seed++);
            if (s->by == SCHEME_BY_INIT) {
                cfg.init.scheme = (init_scheme_t)s->value;
                cfg.model.norm = NORM_NONE;
            }
            char what[96];
            snprintf(what, sizeof what, "%s %s/%s", arch ? "encdec" : "lm", s->name,
                     config_norm_name(cfg.model.norm));
            compare(&cfg, what, &w);
            n++;
        }
    }
    printf("float32 vs float64: %d models, worst gradient %.1f·ε·depth (%s; bound %g), worst loss "
           "%.1f·ε (bound %g)\n", n, w.grad, w.name, GRAD_EPS_MULT, w.loss, LOSS_EPS_MULT);
}
END_TEST

/* Today's block (docs/design.md §6i: rope, SwiGLU, no biases) on every scheme of the table ×
 * {lm, encdec}, RMSNorm (none where a scheme has no norms), QK-norm on every other model: the
 * float32 core against the float64 core under the same bound. */
START_TEST(test_grads_llama_block)
{
    worst_t w = {0.0, 0.0, ""};
    int n = 0, seed = 760;
    for (int arch = 0; arch < 2; arch++) {
        for (int i = 0; i < SCHEME_COUNT; i++) {
            const scheme_t *s = &SCHEMES[i];
            int p = i < PLACEMENT_COUNT ? i : 0;
            while (i >= PLACEMENT_COUNT && s->placements && !((s->placements >> p) & 1u)) p++;
            if (i >= PLACEMENT_COUNT && s->by == SCHEME_BY_NORM) p = PLACEMENT_PRE;
            norm_kind_t nk = s->norms == SCHEME_NORMS_NONE ? NORM_NONE : NORM_RMSNORM;
            if (s->by == SCHEME_BY_NORM) nk = (norm_kind_t)s->value;
            config_t cfg;
            real_config(&cfg, (placement_t)p, nk, arch, seed++);
            cfg.model.positions = POS_ROPE;
            cfg.model.activation = ACT_SWIGLU;
            cfg.model.bias = 0;
            cfg.model.d_ff = 40;   // ~ 8d/3 with d = 32 (heads 4: d_head 8, even)
            if (!arch) cfg.model.causal = 1;
            if (n % 2) cfg.model.qk_norm = QK_NORM_RMSNORM;
            if (s->by == SCHEME_BY_INIT) {
                cfg.init.scheme = (init_scheme_t)s->value;
                cfg.model.norm = NORM_NONE;
            }
            char what[96];
            snprintf(what, sizeof what, "%s %s/%s llama%s", arch ? "encdec" : "lm", s->name,
                     config_norm_name(cfg.model.norm), n % 2 ? "+qk" : "");
            compare(&cfg, what, &w);
            n++;
        }
    }
    printf("float32 vs float64, LLaMA block: %d models, worst gradient %.1f·ε·depth (%s; bound "
           "%g), worst loss %.1f·ε (bound %g)\n", n, w.grad, w.name, GRAD_EPS_MULT, w.loss,
           LOSS_EPS_MULT);
}
END_TEST

Suite *real_suite(void)
{
    Suite *s = suite_create("real");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_layout_same);
    tcase_add_test(tc, test_grads_every_scheme);
    tcase_add_test(tc, test_grads_llama_block);
    suite_add_tcase(s, tc);
    return s;
}
