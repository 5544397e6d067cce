/* test_mup_coord.c — μP as published (Yang et al. 2022, "Tensor Programs V", Table 3, Adam;
 * docs/design.md §6h): Yang et al.'s coordinate check as a test, and Table 3's embedding
 * lr and readout variance by hand. After a few Adam updates at one lr, the mean |Δ| of the
 * embedding's output, of every sub-layer's output and of the logits on a fixed batch, at
 * d = 64, 128, 256: under mup flat in d, under standard growing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_statistics_double.h>
#include "tests.h"
#include "config/config.h"
#include "model/session.h"
#include "train/train.h"

enum { CC_L = 2, CC_SUB = 2, CC_ROWS = 1 + CC_L * CC_SUB + 1, CC_STEPS = 4, CC_BASE = 64, CC_SEEDS = 3 };

/* A 2-layer Pre-LN lm of width d (heads of width 32, d_ff = 4d, as docs/proxies.md's axis),
 * Adam at a constant lr. */
static void coord_config(config_t *cfg, int d, parametrization_t par, int tied)
{
    config_defaults(cfg);
    cfg->model.layers = CC_L;
    cfg->model.d_model = d;
    cfg->model.heads = d / 32;
    cfg->model.d_ff = 4 * d;
    cfg->model.vocab = 64;
    cfg->model.seq_len = 8;
    cfg->model.placement = PLACEMENT_PRE;
    cfg->model.tie_embeddings = tied;
    cfg->data.task = TASK_COPY;
    cfg->data.batch = 2;
    cfg->train.steps = CC_STEPS;
    cfg->train.lr = 3e-3;
    cfg->train.warmup = 0;
    cfg->train.schedule = SCHED_CONSTANT;
    cfg->init.parametrization = par;
    cfg->init.base_width = par == PARAM_STANDARD ? 0 : CC_BASE;
}

/* The activations the check follows, of model m after a forward: x_1 (embedding), every
 * sub-layer's output, the logits; each copied into out[r] (N·C or N·V reals). */
static void coord_snapshot(const model_t *m, double **out, size_t nc, size_t nv)
{
    const layer_stack_t *st = &m->stack[0];
    memcpy(out[0], st->embed, nc * sizeof(double));
    for (int s = 0; s < CC_L * CC_SUB; s++) memcpy(out[1 + s], st->subs[s].out, nc * sizeof(double));
    memcpy(out[CC_ROWS - 1], m->logits, nv * sizeof(double));
}

/* delta[r] = mean |Δ| of row r after CC_STEPS updates, on one batch of the data stream. */
static void coord_changes(int d, parametrization_t par, int tied, unsigned long seed,
                          double *delta)
{
    config_t cfg;
    coord_config(&cfg, d, par, tied);
    cfg.init.seed = seed;
    char err[256];
    session_t ev;
    ck_assert_int_eq(session_open(&ev, &cfg, err, sizeof err), 0);
    session_init(&ev, cfg.init.seed + 7);
    ck_assert_int_eq(session_next_batch(&ev), 0);
    train_t *t;
    ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
    model_t *m = t->s.model;
    const size_t N = (size_t)cfg.data.batch * cfg.model.seq_len;
    const size_t nc = N * d, nv = N * cfg.model.vocab;
    double *a[CC_ROWS], *b[CC_ROWS];
    for (int r = 0; r < CC_ROWS; r++) {
        a[r] = malloc((r == CC_ROWS - 1 ? nv : nc) * sizeof(double));
        b[r] = malloc((r == CC_ROWS - 1 ? nv : nc) * sizeof(double));
    }
    model_forward(m, &ev.batch);
    coord_snapshot(m, a, nc, nv);
    train_record_t rec;
    for (int s = 0; s < CC_STEPS; s++) train_step(t, &rec);
    model_forward(m, &ev.batch);
    coord_snapshot(m, b, nc, nv);
    for (int r = 0; r < CC_ROWS; r++) {
        const size_t n = r == CC_ROWS - 1 ? nv : nc;
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) sum += fabs(b[r][j] - a[r][j]);
        delta[r] = sum / (double)n;
        free(a[r]);
        free(b[r]);
    }
    train_free(t);
    session_close(&ev);
}

/* log₂ slope per doubling of d of each row over d = 64, 128, 256 (least squares, GSL). */
static void coord_slopes(parametrization_t par, int tied, double *slope)
{
    const int widths[3] = {64, 128, 256};
    double delta[3][CC_ROWS];
    for (int k = 0; k < 3; k++) {
        double one[CC_ROWS];
        for (int r = 0; r < CC_ROWS; r++) delta[k][r] = 0.0;
        for (unsigned long seed = 1; seed <= CC_SEEDS; seed++) {
            coord_changes(widths[k], par, tied, seed, one);
            for (int r = 0; r < CC_ROWS; r++) delta[k][r] += one[r] / CC_SEEDS;
        }
    }
    const double x[3] = {0.0, 1.0, 2.0};
    for (int r = 0; r < CC_ROWS; r++) {
        double y[3];
        for (int k = 0; k < 3; k++) y[k] = log2(delta[k][r]);
        const double mx = gsl_stats_mean(x, 1, 3), my = gsl_stats_mean(y, 1, 3);
        slope[r] = gsl_stats_covariance_m(x, 1, y, 1, 3, mx, my) / gsl_stats_variance_m(x, 1, 3, mx);
    }
}

/* The coordinate check (Yang et al. 2022; docs/design.md §6h): slopes of log₂ mean |Δ| per
 * doubling of d, 4 updates at lr 3e-3, 2 × 8 tokens, Δ averaged over 3 seeds. Measured, rows
 * embed, l1.attn, l1.ffn, l2.attn, l2.ffn, logits:
 *   mup untied    −0.016 −0.079 −0.036 −0.019 −0.028 −0.116
 *   mup tied      +0.025 −0.025 −0.076 −0.006 +0.004 −0.131
 *   mup_simple    +0.497 −0.018 +0.021 +0.024 +0.020 −0.411  (untied; the embedding's √d)
 *   standard tied +0.436 +0.956 +1.066 +1.006 +1.065 +0.608
 * Asserted: mup |slope| < 0.2 on every row; mup_simple's embedding > 0.35 (what Table 3
 * removes); standard > 0.35 on every row. */
START_TEST(test_mup_coord_check)
{
    const char *rows[CC_ROWS] = {"embed", "l1.attn", "l1.ffn", "l2.attn", "l2.ffn", "logits"};
    double s[CC_ROWS];
    for (int tied = 0; tied <= 1; tied++) {
        coord_slopes(PARAM_MUP_TABLE3, tied, s);
        for (int r = 0; r < CC_ROWS; r++)
            ck_assert_msg(fabs(s[r]) < 0.2, "mup %s %s: slope %g", tied ? "tied" : "untied",
                          rows[r], s[r]);
    }
    coord_slopes(PARAM_MUP_SIMPLE, 0, s);
    ck_assert_msg(s[0] > 0.35, "mup_simple: embed slope %g", s[0]);
    coord_slopes(PARAM_STANDARD, 1, s);
    for (int r = 0; r < CC_ROWS; r++)
        ck_assert_msg(s[r] > 0.35, "standard %s: slope %g", rows[r], s[r]);
}
END_TEST

/* Table 3 by hand at d = 256, base 64 (r = 1/4; docs/design.md §6h): lr multipliers hidden
 * 1/4, tok_embed √r = 1/2 (its input multiplier √d: √256·1/2 = √64, the base width's step),
 * lm_head, biases and gains 1; logits × r untied, × √r tied; attention 1/d_head. The untied
 * lm_head drawn with Var 1/(d·r) = 1/64, so the effective readout r·W has Var r/d = 1/1024 =
 * base/d² (Table 3's 1/fan_in², against 1/16384 = r²/d under mup_simple); tok_embed keeps
 * Var 1/d. Sample variances of 16 384 draws: within 5% (the standard error is 1.1%). */
START_TEST(test_mup_table3_rules)
{
    for (int tied = 0; tied <= 1; tied++) {
        config_t cfg;
        coord_config(&cfg, 256, PARAM_MUP_TABLE3, tied);
        train_t *t;
        char err[256];
        ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
        const model_t *m = t->s.model;
        ck_assert(m->logit_scale == (tied ? 0.5 : 0.25) && m->shape.attn_scale == 1.0 / 32.0);
        for (int i = 0; i < m->num_tensors; i++) {
            const tensor_info_t *ti = &m->tensors[i];
            const double want = !strcmp(ti->name, "tok_embed") ? 0.5
                                : !strcmp(ti->name, "lm_head") ? 1.0
                                : ti->rank == 2 ? 0.25 : 1.0;
            ck_assert_msg(t->opt.seg[i].lr_mult == want, "%s: lr × %g, want %g", ti->name,
                          t->opt.seg[i].lr_mult, want);
            if (ti->rank != 2 || ti->init != TENSOR_EMBED) continue;
            const size_t n = model_tensor_size(ti);
            const double var = gsl_stats_variance_m(m->params + ti->offset, 1, n, 0.0);
            const double want_var = !strcmp(ti->name, "lm_head") ? 1.0 / 64 : 1.0 / 256;
            ck_assert_msg(fabs(var / want_var - 1.0) < 0.05, "%s: Var %g, want %g", ti->name,
                          var, want_var);
            if (!strcmp(ti->name, "lm_head"))   // the effective readout: base/d²
                ck_assert(fabs(m->logit_scale * m->logit_scale * var * 1024.0 - 1.0) < 0.05);
        }
        train_free(t);
    }
}
END_TEST

Suite *mup_coord_suite(void)
{
    Suite *s = suite_create("mup_coord");
    TCase *tc = tcase_create("table3");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_mup_coord_check);
    tcase_add_test(tc, test_mup_table3_rules);
    suite_add_tcase(s, tc);
    return s;
}
