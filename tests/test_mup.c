/* test_mup.c — μP (docs/design.md §6h; Yang et al. 2022, Table 3): the per-tensor lr
 * multipliers reach the optimizer, d = base_width is the standard model but for the attention
 * scale (bit for bit), the draws by their statistics, the backward against finite differences;
 * and the keys init.embed, init.parametrization, init.base_width (stored only when set, their
 * errors). The optimizer side of μP against PyTorch: tests/test_torch_optim.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_statistics_double.h>
#include "tests.h"
#include "config/config.h"
#include "measure/gradcheck.h"
#include "model/session.h"
#include "train/train.h"

/* A session of cfg: model initialised from init.seed, one batch. */
static void open_session(session_t *s, const config_t *cfg)
{
    char err[256];
    ck_assert_int_eq(session_open(s, cfg, err, sizeof err), 0);
    session_init(s, cfg->init.seed);
    ck_assert_int_eq(session_next_batch(s), 0);
}

/* A small lm (d = 16, L = 2, copy task) under μParam (simple) with the given widths (Table 3's
 * own rules: tests/test_mup_coord.c). */
static void mup_config(config_t *cfg, int d, int d_ff, int base)
{
    config_defaults(cfg);
    cfg->model.layers = 2;
    cfg->model.d_model = d;
    cfg->model.heads = 2;
    cfg->model.d_ff = d_ff;
    cfg->model.vocab = 13;
    cfg->model.seq_len = 6;
    cfg->data.task = TASK_COPY;
    cfg->data.batch = 3;
    cfg->train.steps = 6;
    cfg->train.lr = 1e-2;
    cfg->train.warmup = 0;
    cfg->init.parametrization = PARAM_MUP_SIMPLE;
    cfg->init.base_width = base;
}

/* μP at d = 32, base 8 (Yang et al. 2022, Table 3): the hidden matrices' lr × 1/4 reaches the
 * optimizer's tensors, every other tensor keeps 1; logits × 1/4, attention scale 1/d_head. */
START_TEST(test_mup_rates)
{
    config_t cfg;
    mup_config(&cfg, 32, 48, 8);
    cfg.model.tie_embeddings = 0;
    train_t *t;
    char err[256];
    ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
    const model_t *m = t->s.model;
    ck_assert(m->logit_scale == 0.25 && m->shape.attn_scale == 1.0 / 16.0);
    int matrices = 0;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *ti = &m->tensors[i];
        const int hidden = ti->rank == 2 && strcmp(ti->name, "tok_embed") &&
                           strcmp(ti->name, "lm_head");
        matrices += hidden;
        ck_assert_msg(t->opt.seg[i].lr_mult == (hidden ? 0.25 : 1.0) &&
                      t->opt.seg[i].offset == ti->offset, "%s: lr × %g", ti->name,
                      t->opt.seg[i].lr_mult);
    }
    ck_assert_int_eq(matrices, 2 * 6);   // wq wk wv wo w1 w2 of two layers
    train_free(t);
}
END_TEST

/* At d = base_width μP is the standard model but for the attention scale
 * (docs/design.md §6h):
 * with d_ff = d every parameter is drawn bit for bit alike (Xavier's 2/(2d) and 1/fan_in = 1/d
 * round to the same double; init.scheme = normal: std·√1), and the loss and every gradient
 * equal the standard model's once its attention scale is set to 1/d_head by hand — but not
 * without that (the scale matters). With d_ff ≠ d only W¹ and W² differ (1/fan_in ≠ Xavier's
 * 2/(d + d_ff)). */
START_TEST(test_mup_base_width)
{
    const init_scheme_t schemes[3] = {INIT_XAVIER_NORMAL, INIT_XAVIER_UNIFORM, INIT_NORMAL};
    for (int k = 0; k < 3; k++)
        for (int dff = 16; dff <= 24; dff += 8) {
            config_t cm, cs;
            mup_config(&cm, 16, dff, 16);
            cm.init.scheme = schemes[k];
            cs = cm;
            cs.init.parametrization = PARAM_STANDARD;
            session_t sm, ss;
            open_session(&sm, &cm);
            open_session(&ss, &cs);
            model_t *mm = sm.model, *ms = ss.model;
            ck_assert(mm->logit_scale == 1.0 && ms->num_params == mm->num_params);
            for (int i = 0; i < mm->num_tensors; i++) {
                const tensor_info_t *ti = &mm->tensors[i];
                const int ffn = !strcmp(ti->kind, "w1") || !strcmp(ti->kind, "w2");
                const int same = !memcmp(mm->params + ti->offset, ms->params + ti->offset,
                                         model_tensor_size(ti) * sizeof(double));
                ck_assert_msg(same == !(ffn && dff != 16 && k != 2), "%s %s d_ff %d: %s",
                              config_init_name(schemes[k]), ti->name, dff, same ? "same" : "differs");
            }
            if (dff != 16) { session_close(&sm); session_close(&ss); continue; }
            const double lm = model_forward(mm, &sm.batch), ls = model_forward(ms, &ss.batch);
            ck_assert(lm != ls);
            ms->shape.attn_scale = 1.0 / 8.0;   // d_head = 8
            ck_assert(model_forward(ms, &ss.batch) == lm);
            model_zero_grad(mm);
            model_zero_grad(ms);
            model_forward(mm, &sm.batch);
            model_backward(mm);
            model_backward(ms);
            ck_assert(!memcmp(mm->grads, ms->grads, mm->num_params * sizeof(double)));
            session_close(&sm);
            session_close(&ss);
        }
}
END_TEST

/* The sample variance s² of x (n, mean 0 known) against σ²: |s²/σ² − 1| ≤ 5 standard errors,
 * √((κ − 1)/n) with κ the distribution's kurtosis (3 Gaussian, 9/5 uniform). */
static void assert_variance(const real *x, size_t n, double var, double kurtosis, const char *what)
{
    const double s2 = gsl_stats_variance_with_fixed_mean(x, 1, n, 0.0);
    const double tol = 5.0 * sqrt((kurtosis - 1.0) / (double)n);
    ck_assert_msg(fabs(s2 / var - 1.0) <= tol, "%s: variance %.4g, want %.4g (±%.1f %%)", what, s2,
                  var, 100 * tol);
}

static const real *tensor_of(const model_t *m, const char *name, size_t *n)
{
    const tensor_info_t *t = model_find_tensor(m, name);
    ck_assert_ptr_nonnull(t);
    *n = model_tensor_size(t);
    return m->params + t->offset;
}

/* μP's draws by their statistics, d = 128, d_ff = 512, base 32 (tolerance: 5 standard errors
 * of the sample variance): xavier_normal and xavier_uniform W_Q, W¹ Var = 1/128, W² 1/512
 * (uniform: |w| ≤ √(3/fan_in)); normal std 0.02: Var = 0.02²·32/128; the embedding N(0, 1/d),
 * or with init.embed = xavier_uniform U(±√(6/(V + d))), Var 2/(V + d). */
START_TEST(test_mup_init_variance)
{
    const init_scheme_t schemes[3] = {INIT_XAVIER_NORMAL, INIT_XAVIER_UNIFORM, INIT_NORMAL};
    const char *names[3] = {"layers/00/wq", "layers/00/w1", "layers/00/w2"};
    const double fan_in[3] = {128, 128, 512};
    for (int k = 0; k < 3; k++) {
        config_t cfg;
        mup_config(&cfg, 128, 512, 32);
        cfg.model.layers = 1;
        cfg.model.heads = 4;
        cfg.model.vocab = 64;
        cfg.init.scheme = schemes[k];
        cfg.init.embed = k == 1 ? EMBED_XAVIER_UNIFORM : EMBED_NORMAL;
        session_t s;
        open_session(&s, &cfg);
        size_t n;
        for (int j = 0; j < 3; j++) {
            const real *w = tensor_of(s.model, names[j], &n);
            const double var = k == 2 ? 0.02 * 0.02 * 32.0 / 128.0 : 1.0 / fan_in[j];
            assert_variance(w, n, var, k == 1 ? 1.8 : 3.0, names[j]);
            for (size_t i = 0; k == 1 && i < n; i++) ck_assert(fabs(w[i]) <= sqrt(3.0 / fan_in[j]));
        }
        const real *e = tensor_of(s.model, "tok_embed", &n);
        assert_variance(e, n, k == 1 ? 2.0 / (64 + 128) : 1.0 / 128, k == 1 ? 1.8 : 3.0, "tok_embed");
        for (size_t i = 0; k == 1 && i < n; i++) ck_assert(fabs(e[i]) <= sqrt(6.0 / (64 + 128)));
        session_close(&s);
    }
}
END_TEST

/* μP's backward (logits × base/d, attention q·k/d_head) against 5-point finite differences at
 * d = 2·base_width, tied and untied, Post- and Pre-LN: relative error < 1e-6 on every tensor. */
START_TEST(test_mup_gradcheck)
{
    for (int k = 0; k < 4; k++) {
        config_t cfg;
        mup_config(&cfg, 8, 12, 4);
        cfg.model.tie_embeddings = k & 1;
        cfg.model.placement = k & 2 ? PLACEMENT_PRE : PLACEMENT_POST;
        session_t s;
        open_session(&s, &cfg);
        model_perturb(s.model, s.rng_init, 0.3);
        gradcheck_result_t *res = calloc((size_t)s.model->num_tensors, sizeof *res);
        const double worst = gradcheck_run(s.model, &s.batch, (size_t)-1, 1e-5, s.rng_init, res);
        ck_assert_msg(worst < 1e-6, "case %d: worst relative error %.3g", k, worst);
        free(res);
        session_close(&s);
    }
}
END_TEST

/* ---------------------------------------------------------------- the new keys */

/* init.embed, init.parametrization and init.base_width appear in the stored config only when
 * set (so every existing run's config text stays what it was) and read back; μP without a
 * base width, with base_width ≤ 0 or with sgd, and an unknown value, are errors naming the key
 * (code 2). */
START_TEST(test_new_keys)
{
    config_t c, d;
    char text[8192], err[CONFIG_ERR_MAX];
    config_defaults(&c);
    config_to_ini(&c, text, sizeof text);
    ck_assert(!strstr(text, "embed =") && !strstr(text, "parametrization") &&
              !strstr(text, "base_width"));
    ck_assert_int_eq(config_set(&c, "init.embed=xavier_uniform", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&c, "init.parametrization=mup_simple", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&c, "init.base_width=64", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&c, "train.optimizer=stableadamw", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 0);
    config_to_ini(&c, text, sizeof text);
    // the simple rules are stored as `mup`, the name their results were written with
    ck_assert(strstr(text, "embed = xavier_uniform\nparametrization = mup\nbase_width = 64\n"));
    ck_assert_int_eq(config_parse_string(&d, text, "stored", err, sizeof err), 0);
    ck_assert(d.init.embed == EMBED_XAVIER_UNIFORM && d.init.parametrization == PARAM_MUP_SIMPLE &&
              d.init.base_width == 64 && d.train.optimizer == OPT_STABLEADAMW);
    // a user's `mup` is Table 3, stored as mup_table3 and read back as Table 3
    ck_assert_int_eq(config_set(&c, "init.parametrization=mup", err, sizeof err), 0);
    ck_assert_int_eq(c.init.parametrization, PARAM_MUP_TABLE3);
    config_to_ini(&c, text, sizeof text);
    ck_assert(strstr(text, "\nparametrization = mup_table3\n"));
    ck_assert_int_eq(config_parse_string(&d, text, "stored", err, sizeof err), 0);
    ck_assert_int_eq(d.init.parametrization, PARAM_MUP_TABLE3);
    const struct { const char *set[3]; const char *key; } bad[] = {
        {{"init.parametrization=mup", NULL, NULL}, "init.base_width: must be > 0"},
        {{"init.parametrization=mup", "init.base_width=-1", NULL}, "init.base_width: must be"},
        {{"init.base_width=8", "init.parametrization=mup", NULL}, NULL},   // fine
        {{"init.parametrization=mup", "init.base_width=8", "train.optimizer=sgd"},
         "init.parametrization: muP (init.parametrization = mup) is defined here for the Adam"},
        {{"init.embed=xavier", NULL, NULL}, "init.embed: must be normal or xavier_uniform"},
        {{"train.optimizer=giadam", NULL, NULL},
         "train.optimizer: must be adam, adamw, sgd, radam, gi_adam, stableadamw, lamb, muon, lion or nsgd"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        config_defaults(&c);
        int rc = 0;
        for (int j = 0; j < 3 && bad[i].set[j] && !rc; j++)
            rc = config_set(&c, bad[i].set[j], err, sizeof err);
        if (!rc) rc = config_validate(&c, err, sizeof err);
        if (!bad[i].key) { ck_assert_msg(rc == 0, "%s", err); continue; }
        ck_assert_msg(rc == 2 && strstr(err, bad[i].key), "case %zu: rc %d, '%s'", i, rc, err);
    }
}
END_TEST

Suite *mup_suite(void)
{
    Suite *s = suite_create("mup");
    TCase *tc = tcase_create("mup");
    tcase_add_test(tc, test_mup_rates);
    tcase_add_test(tc, test_mup_base_width);
    tcase_add_test(tc, test_mup_init_variance);
    tcase_add_test(tc, test_mup_gradcheck);
    tcase_add_test(tc, test_new_keys);
    suite_add_tcase(s, tc);
    return s;
}
