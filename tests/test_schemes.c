/* test_schemes.c — the normalisation schemes (docs/design.md §6c): every parameter of every
 * scheme against finite differences in both architectures, the schemes' constants against
 * their formulas, and their defining properties at initialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include "tests.h"
#include "config/config.h"
#include "model/session.h"
#include "measure/gradcheck.h"
#include "model/model.h"
#include "model/placement.h"
#include "report/report.h"

/* A tiny model: d = 8, 2 heads, d_ff = 12, 3 layers (lm) or 2-2 (encdec, padded sources). */
static void scheme_config(config_t *cfg, placement_t p, norm_kind_t n, int encdec, int seed)
{
    config_defaults(cfg);
    cfg->model.layers = encdec ? 2 : 3;
    cfg->model.d_model = 8;
    cfg->model.heads = 2;
    cfg->model.d_ff = 12;
    cfg->model.seq_len = 5;
    cfg->model.vocab = 11;
    cfg->model.placement = p;
    cfg->model.norm = n;
    // GELU: smooth, so a finite difference never straddles a kink (ReLU's are covered exactly by
    // tests/test_torch_schemes.py, and in tests/test_model.c for Post/Pre-LN)
    cfg->model.activation = ACT_GELU;
    cfg->data.batch = 2;
    cfg->data.task = TASK_RANDOM;
    cfg->init.seed = (unsigned long)seed;
    if (p == PLACEMENT_MIXLN) cfg->model.mix_ratio = 0.5;   // both kinds of layer
    if (encdec) {
        cfg->model.arch = ARCH_ENCDEC;
        cfg->model.src_len = 6;
        cfg->data.min_len = 2;
    }
}

/* Worst relative error of finite differences over every entry of every tensor. */
static double fd_worst(const config_t *cfg, const char **worst_name)
{
    session_t s;
    char err[256];
    ck_assert_int_eq(session_open(&s, cfg, err, sizeof err), 0);
    session_init(&s, cfg->init.seed);
    model_perturb(s.model, s.rng_init, 0.3);   // biases, γ, β, ω, α away from 0 and 1
    session_next_batch(&s);
    gradcheck_result_t *res = calloc((size_t)s.model->num_tensors, sizeof *res);
    const double worst = gradcheck_run(s.model, &s.batch, (size_t)-1, 1e-5, s.rng_data, res);
    *worst_name = "";
    for (int k = 0; k < s.model->num_tensors; k++)
        if (res[k].rel_err == worst) *worst_name = res[k].tensor->name;
    free(res);
    session_close(&s);
    return worst;
}

/* Finite differences of one tiny model (fd_worst): relative error < 1e-6 on every entry. */
static void fd_case(const config_t *cfg, const char *what, double *worst, int *n)
{
    const char *name;
    const double e = fd_worst(cfg, &name);
    ck_assert_msg(e < 1e-6, "%s %s/%s%s: %s rel.err %.3e", cfg->model.arch ? "encdec" : "lm", what,
                  config_norm_name(cfg->model.norm), cfg->init.scheme == INIT_TFIXUP ? "/tfixup" : "",
                  name, e);
    if (e > *worst) *worst = e;
    (*n)++;
}

/* Every scheme of the table (config/scheme.c) × {lm, encdec} × the norms it allows:
 * {layernorm, rmsnorm, dyt} for a scheme that places norms, none for one that needs none, dyt
 * for post and pre (their other norms: tests/test_model.c), and the init variants (T-Fixup)
 * with norm = none on their first placement. A new row is covered without an edit here. */
START_TEST(test_fd_every_scheme)
{
    static const norm_kind_t N[] = {NORM_LAYERNORM, NORM_RMSNORM, NORM_DYT};
    double worst = 0.0;
    int n = 0, seed = 400;
    for (int arch = 0; arch < 2; arch++) {
        for (int p = 0; p < PLACEMENT_COUNT; p++) {
            const scheme_t *s = scheme_of_placement(p);
            for (size_t k = 0; k < 3; k++) {
                if (s->norms == SCHEME_NORMS_NONE && k > 0) break;
                if (s->norms == SCHEME_NORMS_ANY && N[k] != NORM_DYT) continue;
                config_t cfg;
                scheme_config(&cfg, (placement_t)p, s->norms == SCHEME_NORMS_NONE ? NORM_NONE : N[k],
                              arch, seed++);
                fd_case(&cfg, s->name, &worst, &n);
            }
        }
        for (int i = PLACEMENT_COUNT; i < SCHEME_COUNT; i++) {   // the init variants
            const scheme_t *s = &SCHEMES[i];
            if (s->by != SCHEME_BY_INIT) continue;
            int p = 0;
            while (s->placements && !((s->placements >> p) & 1u)) p++;
            config_t cfg;
            scheme_config(&cfg, (placement_t)p, NORM_NONE, arch, seed++);
            cfg.init.scheme = (init_scheme_t)s->value;
            fd_case(&cfg, s->name, &worst, &n);
        }
    }
    printf("gradcheck schemes: %d models, worst relative error %.3e\n", n, worst);
}
END_TEST

/* Every row of the scheme table is reachable under its name: some placement with the row's
 * norm and init validates and selects it; config_to_ini writes it back; the report's first
 * line names it by its label, and says Post-LN only for Post-LN (it said so for every scheme
 * but pre). */
START_TEST(test_scheme_table)
{
    for (int i = 0; i < SCHEME_COUNT; i++) {
        const scheme_t *s = &SCHEMES[i];
        config_t c;
        char err[512], name[64], line[512], ini[4096];
        int found = 0;
        for (int p = 0; p < PLACEMENT_COUNT && !found; p++) {
            config_defaults(&c);
            c.model.placement = (placement_t)p;
            if (s->by == SCHEME_BY_NORM) c.model.norm = (norm_kind_t)s->value;
            if (s->norms == SCHEME_NORMS_NONE) c.model.norm = NORM_NONE;
            if (s->by == SCHEME_BY_INIT) c.init.scheme = (init_scheme_t)s->value;
            scheme_name(&c, name, sizeof name);
            found = config_validate(&c, err, sizeof err) == 0 && scheme_of(&c) == s &&
                    !strcmp(name, s->name);
        }
        ck_assert_msg(found, "no configuration selects row %s", s->name);
        if (i < PLACEMENT_COUNT)   // a placement's own final norm (auto)
            ck_assert_int_eq(config_has_final_norm(&c), s->final_norm && c.model.norm != NORM_NONE);
        config_to_ini(&c, ini, sizeof ini);
        config_t back;
        ck_assert_int_eq(config_parse_string(&back, ini, "ini", err, sizeof err), 0);
        ck_assert_ptr_eq(scheme_of(&back), s);
        FILE *f = fmemopen(line, sizeof line, "w");
        report_config(f, &c);
        fclose(f);
        char want[96];
        snprintf(want, sizeof want, "default: %s, ", s->label);
        ck_assert_msg(!strncmp(line, want, strlen(want)), "%s: report says '%s'", s->name, line);
        ck_assert_msg((strstr(line, "Post-LN") != NULL) == (s == scheme_of_placement(PLACEMENT_POST)),
                      "%s: report says '%s'", s->name, line);
    }
}
END_TEST

/* The constants of docs/design.md §6c against their formulas, written out independently. */
START_TEST(test_scheme_constants)
{
    config_t c;
    double a, b;
    config_defaults(&c);
    c.model.layers = 6;
    placement_deepnorm(&c, STACK_LM, &a, &b);   // (2L)^¼, (8L)^−¼
    ck_assert_double_eq_tol(a, 1.861209718204198, 1e-14);
    ck_assert_double_eq_tol(b, 0.3799178428257963, 1e-14);
    ck_assert_double_eq_tol(placement_subln_gain(&c, STACK_LM), sqrt(log(12.0)), 1e-15);
    ck_assert_double_eq_tol(placement_tfixup_scale(&c, STACK_LM), pow(54.0, -0.25), 1e-15);
    c.model.mix_ratio = 0.25;
    ck_assert_int_eq(placement_mix_post_layers(&c, STACK_LM), 1);   // ⌊1.5⌋
    c.model.mix_ratio = 0.5;
    ck_assert_int_eq(placement_mix_post_layers(&c, STACK_LM), 3);
    c.model.arch = ARCH_ENCDEC;
    c.model.dec_layers = 6;
    placement_deepnorm(&c, STACK_ENC, &a, &b);  // 0.81(N⁴M)^1/16, 0.87(N⁴M)^−1/16
    ck_assert_double_eq_tol(a, 0.81 * pow(7776.0, 1.0 / 16), 1e-14);
    ck_assert_double_eq_tol(a, 1.4179378, 1e-6);
    ck_assert_double_eq_tol(b, 0.4969886, 1e-6);
    placement_deepnorm(&c, STACK_DEC, &a, &b);  // (3M)^¼, (12M)^−¼
    ck_assert_double_eq_tol(a, 2.0597671, 1e-6);
    ck_assert_double_eq_tol(b, 0.3432945, 1e-6);
    ck_assert_double_eq_tol(placement_subln_gain(&c, STACK_ENC), 1.5472880, 1e-6);
    ck_assert_double_eq_tol(placement_subln_gain(&c, STACK_DEC), 1.7001090, 1e-6);
    ck_assert_double_eq_tol(placement_tfixup_scale(&c, STACK_ENC), 0.67 * pow(6.0, -0.25), 1e-15);
    ck_assert_double_eq_tol(placement_tfixup_scale(&c, STACK_DEC), 0.3688939, 1e-6);
}
END_TEST

/* Sample standard deviation of a tensor of m. */
static double tensor_sd(const model_t *m, const char *name)
{
    const tensor_info_t *t = model_find_tensor(m, name);
    ck_assert_msg(t != NULL, "%s missing", name);
    const size_t n = model_tensor_size(t);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += m->params[t->offset + i] * m->params[t->offset + i];
    return sqrt(s / (double)n);
}

/* The init gains reach the tensors: DeepNorm W_V, W_O, W¹, W² have Xavier's sd times β,
 * W_Q keeps gain 1; Sub-LN times γ; B2T every matrix times L^−½; T-Fixup's embedding ×
 * (9L)^−¼. d = 64 matrices: sd within 5 % (≈ 5 standard errors of the sample sd). */
START_TEST(test_scheme_init_gains)
{
    struct { placement_t p; norm_kind_t n; init_scheme_t init; const char *t; double gain; } cases[] = {
        {PLACEMENT_DEEPNORM, NORM_LAYERNORM, INIT_XAVIER_NORMAL, "layers/01/wv", 0.3799178428},
        {PLACEMENT_DEEPNORM, NORM_LAYERNORM, INIT_XAVIER_NORMAL, "layers/01/w2", 0.3799178428},
        {PLACEMENT_DEEPNORM, NORM_LAYERNORM, INIT_XAVIER_NORMAL, "layers/01/wq", 1.0},
        {PLACEMENT_SUBLN, NORM_LAYERNORM, INIT_XAVIER_NORMAL, "layers/00/wo", 1.5763586},
        {PLACEMENT_SUBLN, NORM_LAYERNORM, INIT_XAVIER_NORMAL, "layers/00/wk", 1.0},
        {PLACEMENT_B2T, NORM_LAYERNORM, INIT_XAVIER_NORMAL, "layers/02/wk", 0.4082482905},
        {PLACEMENT_POST, NORM_NONE, INIT_TFIXUP, "layers/00/w1", 0.3688939},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        config_t c;
        config_defaults(&c);
        c.model.layers = 6;
        c.model.d_model = 64;
        c.model.d_ff = 64;
        c.model.vocab = 500;
        c.model.seq_len = 4;
        c.data.batch = 1;
        c.model.placement = cases[k].p;
        c.model.norm = cases[k].n;
        c.init.scheme = cases[k].init;
        model_t *m = model_create(&c, NULL);
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(r, 3 + k);
        model_init(m, &c, r);
        // Xavier over 64×64: normal sd √(2/128); T-Fixup: uniform on ±√(6/128), sd √(2/128) too
        const double want = cases[k].gain * sqrt(2.0 / 128.0), got = tensor_sd(m, cases[k].t);
        ck_assert_msg(fabs(got / want - 1.0) < 0.05, "%s %s: sd %g, want %g",
                      config_placement_name(cases[k].p), cases[k].t, got, want);
        if (cases[k].init == INIT_TFIXUP) {   // tok_embed ~ N(0, 1/d)·(9L)^−¼
            const double e = tensor_sd(m, "tok_embed"), we = pow(54.0, -0.25) / 8.0;
            ck_assert_msg(fabs(e / we - 1.0) < 0.03, "tfixup tok_embed sd %g, want %g", e, we);
        }
        gsl_rng_free(r);
        model_free(m);
    }
}
END_TEST

/* Admin's profiling (Liu et al. 2020): ω_1 = 1, ω grows along the stack, every entry of a
 * vector equal, and ω of the last sub-layer is of the order of the closed form
 * √((n+1)/ln(n+1) − 1) of admin-torch (n = 2L residual sub-layers): within a factor 2. */
START_TEST(test_admin_profile)
{
    config_t c;
    scheme_config(&c, PLACEMENT_ADMIN, NORM_LAYERNORM, 0, 7);
    c.model.layers = 6;
    c.model.d_model = 32;
    c.model.heads = 4;
    c.model.d_ff = 64;
    c.model.seq_len = 16;
    c.data.batch = 4;
    session_t s;
    char err[256];
    ck_assert_int_eq(session_open(&s, &c, err, sizeof err), 0);
    session_init(&s, c.init.seed);
    double prev = 0.0;
    for (int k = 0; k < 12; k++) {
        const sublayer_t *sl = &s.model->stack[0].subs[k];
        ck_assert_ptr_nonnull(sl->omega);
        for (int j = 1; j < 32; j++) ck_assert(sl->omega[j] == sl->omega[0]);
        if (k == 0) ck_assert(sl->omega[0] == 1.0);
        else ck_assert_double_gt(sl->omega[0], prev);
        prev = sl->omega[0];
    }
    const double closed = sqrt(13.0 / log(13.0) - 1.0);
    printf("admin: profiled omega of the last sub-layer %.3f, closed form %.3f\n", prev, closed);
    ck_assert(prev > closed / 2 && prev < closed * 2);
    session_close(&s);
}
END_TEST

/* The schemes' defining properties at initialisation: ReZero is the identity on the stream
 * (α = 0: the output is the embedding); DeepNorm with α = 1 is Post-LN (same forward); Mix-LN
 * with mix_ratio 0 is Pre-LN and with 1 Post-LN plus a final norm. */
/* Wortsman et al.'s LR sensitivity as the atlas computes it (docs/design.md §6c): the mean over
 * the learning rates of min(loss, loss_0) − the best loss, a diverged run (NaN) counting as its
 * initial loss; worked by hand. */
double plot_lr_sensitivity(const double *final, const double *loss0, int n);   // study/atlas.h
START_TEST(test_lr_sensitivity)
{
    const double z[4] = {5.5, 5.5, 5.5, 5.5};
    // best 2.4; terms 0.1, 0, 5.5 − 2.4 (diverged), min(6.0, 5.5) − 2.4: mean 6.3 / 4
    const double f[4] = {2.5, 2.4, NAN, 6.0};
    ck_assert_double_eq_tol(plot_lr_sensitivity(f, z, 4), (0.1 + 0.0 + 3.1 + 3.1) / 4, 1e-12);
    const double flat[3] = {2.0, 2.0, 2.0};   // the lr does not matter
    ck_assert_double_eq_tol(plot_lr_sensitivity(flat, z, 3), 0.0, 1e-15);
    const double none[2] = {NAN, NAN};   // nothing trained: no value, not 0
    ck_assert(isnan(plot_lr_sensitivity(none, z, 2)));
}
END_TEST

START_TEST(test_scheme_identities)
{
    config_t a, b;
    session_t sa, sb;
    char err[256];
    // ReZero at α = 0: x_final = x_1
    scheme_config(&a, PLACEMENT_REZERO, NORM_NONE, 0, 11);
    ck_assert_int_eq(session_open(&sa, &a, err, sizeof err), 0);
    session_init(&sa, a.init.seed);
    session_next_batch(&sa);
    model_forward(sa.model, &sa.batch);
    const layer_stack_t *st = &sa.model->stack[0];
    ck_assert_int_eq(memcmp(st->output, st->embed, 10 * 8 * sizeof(double)), 0);
    session_close(&sa);
    // Mix-LN at the ends: the same loss as Pre-LN (ratio 0) and Post-LN + final norm (ratio 1)
    for (int end = 0; end < 2; end++) {
        scheme_config(&a, PLACEMENT_MIXLN, NORM_LAYERNORM, 0, 12);
        a.model.mix_ratio = end;
        scheme_config(&b, end ? PLACEMENT_POST : PLACEMENT_PRE, NORM_LAYERNORM, 0, 12);
        b.model.final_norm = FINAL_NORM_ON;
        ck_assert_int_eq(session_open(&sa, &a, err, sizeof err), 0);
        ck_assert_int_eq(session_open(&sb, &b, err, sizeof err), 0);
        session_init(&sa, 12);
        session_init(&sb, 12);
        session_next_batch(&sa);
        session_next_batch(&sb);
        const double la = model_forward(sa.model, &sa.batch), lb = model_forward(sb.model, &sb.batch);
        ck_assert_msg(la == lb, "mixln ratio %d: %.17g vs %.17g", end, la, lb);
        session_close(&sa);
        session_close(&sb);
    }
}
END_TEST

Suite *schemes_suite(void)
{
    Suite *s = suite_create("schemes");
    TCase *tc = tcase_create("gradients");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, test_fd_every_scheme);
    suite_add_tcase(s, tc);
    TCase *tc2 = tcase_create("constants");
    tcase_add_test(tc2, test_scheme_table);
    tcase_add_test(tc2, test_scheme_constants);
    tcase_add_test(tc2, test_scheme_init_gains);
    tcase_add_test(tc2, test_admin_profile);
    tcase_add_test(tc2, test_scheme_identities);
    tcase_add_test(tc2, test_lr_sensitivity);
    suite_add_tcase(s, tc2);
    return s;
}
