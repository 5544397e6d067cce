/* test_train.c — the text task's split and batches, and the training loop without I/O:
 * determinism, completeness of the resume state, divergence, validation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests.h"
#include "config/config.h"
#include "data/data.h"
#include "train/train.h"

/* A temporary file with n bytes (byte i = (7·i) mod 251); path gets its name. */
static void make_text(char *path, size_t len, size_t n)
{
    snprintf(path, len, "/tmp/stability_text_XXXXXX");
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "wb");
    for (size_t i = 0; i < n; i++) fputc((int)(7 * i % 251), f);
    fclose(f);
}

static void text_config(config_t *cfg, const char *path, int B, int T)
{
    config_defaults(cfg);
    cfg->data.task = TASK_TEXT;
    snprintf(cfg->data.path, sizeof cfg->data.path, "%s", path);
    cfg->model.vocab = 256;
    cfg->model.seq_len = T;
    cfg->data.batch = B;
}

/* Split: the last 10 % is validation; training windows lie inside the training split and are
 * consecutive bytes; validation batches are fixed, inside the validation split. */
START_TEST(test_text_split)
{
    char path[64];
    const size_t n = 10000;
    const int B = 4, T = 16;
    make_text(path, sizeof path, n);
    config_t cfg;
    text_config(&cfg, path, B, T);
    data_t d;
    char err[256];
    ck_assert_int_eq(data_open(&d, &cfg, err, sizeof err), 0);
    ck_assert_uint_eq(d.n_text, n);
    ck_assert_uint_eq(d.n_train, n - 1000);
    ck_assert_int_eq(d.val_batches, (1000 / (T + 1) + B - 1) / B);   // 59 windows → 15 batches
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int32_t tok[64], tgt[64], tok2[64], tgt2[64];
    batch_t bt = {0, 0, 0, NULL, tok, tgt}, bt2 = {0, 0, 0, NULL, tok2, tgt2};
    for (int round = 0; round < 200; round++) {
        data_batch(&d, rng, &bt);
        for (int b = 0; b < B; b++) {
            const int32_t *x = tok + b * T, *y = tgt + b * T;
            // the byte pattern is invertible: 7·i mod 251 → i mod 251 (7⁻¹ = 36 mod 251)
            const long i0 = (long)x[0] * 36 % 251;
            for (int t = 0; t < T; t++) {
                ck_assert_int_eq(x[t], (int32_t)(7 * (i0 + t) % 251));
                ck_assert_int_eq(y[t], (int32_t)(7 * (i0 + t + 1) % 251));
            }
        }
    }
    // validation: first window at the split, last at the end, the same every time
    data_val_batch(&d, 0, &bt);
    ck_assert_int_eq(tok[0], (int32_t)(7 * (n - 1000) % 251));
    data_val_batch(&d, d.val_batches - 1, &bt);
    data_val_batch(&d, d.val_batches - 1, &bt2);
    ck_assert_int_eq(memcmp(tok, tok2, sizeof tok), 0);
    ck_assert_int_eq(tgt[(B - 1) * T + T - 1], (int32_t)(7 * (n - 1) % 251));
    gsl_rng_free(rng);
    data_close(&d);
    unlink(path);
}
END_TEST

/* A missing, empty or too short file is a "data.path: FILE: ..." error, code 2. */
START_TEST(test_text_errors)
{
    config_t cfg;
    data_t d;
    char err[512], path[64];
    text_config(&cfg, "/nonexistent/corpus.txt", 2, 8);
    ck_assert_int_eq(data_open(&d, &cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "data.path: /nonexistent/corpus.txt: cannot open") == err, "%s", err);
    make_text(path, sizeof path, 0);
    text_config(&cfg, path, 2, 8);
    ck_assert_int_eq(data_open(&d, &cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "empty file") != NULL, "%s", err);
    unlink(path);
    make_text(path, sizeof path, 17);   // needs 2·(8+1) = 18
    text_config(&cfg, path, 2, 8);
    ck_assert_int_eq(data_open(&d, &cfg, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "too short") != NULL, "%s", err);
    unlink(path);
}
END_TEST

/* A small Post-LN copy model with dropout (so the dropout stream is part of the state). */
static void small_config(config_t *cfg, optimizer_t opt)
{
    config_defaults(cfg);
    cfg->model.layers = 2;
    cfg->model.d_model = 8;
    cfg->model.heads = 2;
    cfg->model.d_ff = 12;
    cfg->model.vocab = 11;
    cfg->model.seq_len = 6;
    cfg->model.dropout = 0.1;
    cfg->data.task = TASK_COPY;
    cfg->data.batch = 3;
    cfg->train.steps = 6;
    cfg->train.optimizer = opt;
    cfg->train.lr = 1e-2;
    cfg->train.warmup = 3;
    cfg->probe.every = 2;
}

static train_t *create(const config_t *cfg)
{
    train_t *t;
    char err[256];
    ck_assert_int_eq(train_create(&t, cfg, err, sizeof err), 0);
    return t;
}

/* The resume state (params, moments, t, both rngs, step, batches) is complete: copying it from a
 * run after 3 updates into a fresh run gives the same updates 4–6 bit for bit, for every
 * optimizer; and two runs of one config are identical. */
START_TEST(test_state_complete)
{
    for (int opt = OPT_ADAM; opt <= OPT_RADAM; opt++) {
        config_t cfg;
        small_config(&cfg, (optimizer_t)opt);
        train_t *a = create(&cfg), *b = create(&cfg), *c = create(&cfg);
        train_record_t ra[6], rb, rc;
        for (int s = 0; s < 6; s++) {
            train_step(a, &ra[s]);
            ck_assert_int_eq(ra[s].step, s + 1);
            ck_assert_int_eq(ra[s].probed, s == 0 || (s + 1) % 2 == 0);
            ck_assert(isfinite(ra[s].loss) && !ra[s].diverged);
        }
        for (int s = 0; s < 3; s++) {
            train_step(b, &rb);
            ck_assert(memcmp(&rb.loss, &ra[s].loss, sizeof(double)) == 0);
        }
        const size_t n = b->s.model->num_params;
        memcpy(c->s.model->params, b->s.model->params, n * sizeof(double));
        memcpy(c->opt.m, b->opt.m, n * sizeof(double));
        if (b->opt.v) memcpy(c->opt.v, b->opt.v, n * sizeof(double));
        c->opt.t = b->opt.t;
        memcpy(gsl_rng_state(c->s.rng_init), gsl_rng_state(b->s.rng_init), gsl_rng_size(b->s.rng_init));
        memcpy(gsl_rng_state(c->s.rng_data), gsl_rng_state(b->s.rng_data), gsl_rng_size(b->s.rng_data));
        c->step = b->step;
        c->batches = b->batches;
        for (int s = 3; s < 6; s++) {
            train_step(c, &rc);
            ck_assert_int_eq(rc.step, s + 1);
            ck_assert_msg(memcmp(&rc.loss, &ra[s].loss, sizeof(double)) == 0 &&
                          memcmp(&rc.grad_norm, &ra[s].grad_norm, sizeof(double)) == 0,
                          "%s step %d: %.17g vs %.17g", config_optimizer_name((optimizer_t)opt),
                          s + 1, rc.loss, ra[s].loss);
        }
        ck_assert_int_eq(memcmp(c->s.model->params, a->s.model->params, n * sizeof(double)), 0);
        train_free(a);
        train_free(b);
        train_free(c);
    }
}
END_TEST

static int count_steps(void *ctx, const train_t *t, const train_record_t *r)
{
    (void)t;
    *(long *)ctx = r->step;
    return 0;
}

/* A huge learning rate: train_run stops with TRAIN_DIVERGED at the first bad step and does not
 * update θ there; a stop flag set before the run interrupts it before the first update. */
START_TEST(test_divergence_and_stop)
{
    config_t cfg;
    small_config(&cfg, OPT_SGD);
    cfg.model.dropout = 0.0;
    cfg.train.lr = 1e6;
    cfg.train.warmup = 0;
    cfg.train.steps = 1000;
    train_t *t = create(&cfg);
    long last = 0;
    const train_callbacks_t cb = {&last, count_steps, NULL, NULL};
    ck_assert_int_eq(train_run(t, &cb, NULL), TRAIN_DIVERGED);
    ck_assert_int_gt(last, 0);
    ck_assert_int_eq(t->step, last - 1);   // the diverged step made no update
    ck_assert_int_lt(last, 1000);
    train_free(t);

    small_config(&cfg, OPT_ADAM);
    t = create(&cfg);
    volatile sig_atomic_t stop = 1;
    ck_assert_int_eq(train_run(t, &cb, &stop), TRAIN_INTERRUPTED);
    ck_assert_int_eq(t->step, 0);
    stop = 0;
    ck_assert_int_eq(train_run(t, &cb, &stop), TRAIN_DONE);
    ck_assert_int_eq(t->step, cfg.train.steps);
    train_free(t);
}
END_TEST

/* Validation of the text task: finite, the same when repeated (fixed batches, no dropout),
 * reported at eval_every and at the last step. */
START_TEST(test_text_eval)
{
    char path[64];
    make_text(path, sizeof path, 4000);
    config_t cfg;
    text_config(&cfg, path, 2, 8);
    cfg.model.layers = 1;
    cfg.model.d_model = 8;
    cfg.model.heads = 2;
    cfg.model.d_ff = 8;
    cfg.model.dropout = 0.5;
    cfg.train.steps = 5;
    cfg.train.eval_every = 2;
    train_t *t = create(&cfg);
    const double v1 = train_eval(t), v2 = train_eval(t);
    ck_assert(isfinite(v1));
    ck_assert(memcmp(&v1, &v2, sizeof v1) == 0);
    for (int s = 1; s <= 5; s++) {
        train_record_t r;
        train_step(t, &r);
        ck_assert_int_eq(!isnan(r.val_loss), s == 2 || s == 4 || s == 5);
    }
    train_free(t);
    unlink(path);
}
END_TEST

Suite *train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("loop");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_text_split);
    tcase_add_test(tc, test_text_errors);
    tcase_add_test(tc, test_state_complete);
    tcase_add_test(tc, test_divergence_and_stop);
    tcase_add_test(tc, test_text_eval);
    suite_add_tcase(s, tc);
    return s;
}
