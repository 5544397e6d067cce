/* test_data.c — the synthetic tasks' batches. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_rng.h>
#include "tests.h"
#include "config/config.h"
#include "data/data.h"

/* A batch over the caller's arrays. */
static batch_t over(int32_t *src, int32_t *tok, int32_t *tgt)
{
    return (batch_t){0, 0, 0, src, tok, tgt};
}

static void open_task(data_t *d, config_t *cfg, task_t task, int B, int T, int V, double zipf)
{
    char err[256];
    config_defaults(cfg);
    cfg->data.task = task;
    cfg->data.batch = B;
    cfg->model.seq_len = T;
    cfg->model.vocab = V;
    cfg->data.zipf = zipf;
    ck_assert_int_eq(data_open(d, cfg, err, sizeof err), 0);
}

/* random: targets are the next tokens, every position scored, tokens in range. */
START_TEST(test_random_next_token)
{
    config_t cfg;
    data_t d;
    open_task(&d, &cfg, TASK_RANDOM, 3, 9, 17, 0.0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int32_t tok[27], tgt[27];
    batch_t bt = over(NULL, tok, tgt);
    data_batch(&d, rng, &bt);
    ck_assert_int_eq(bt.B, 3);
    ck_assert_int_eq(bt.T, 9);
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 9; t++) {
            ck_assert_int_ge(tgt[b * 9 + t], 0);
            ck_assert_int_lt(tgt[b * 9 + t], 17);
            if (t + 1 < 9) ck_assert_int_eq(tok[b * 9 + t + 1], tgt[b * 9 + t]);
        }
    gsl_rng_free(rng);
    data_close(&d);
}
END_TEST

/* copy and reverse: the scored targets are the content (or its reverse), the token after the
 * separator is the previous answer (teacher forcing), the content part is not scored. */
START_TEST(test_copy_reverse)
{
    for (int rev = 0; rev < 2; rev++) {
        for (int T = 3; T <= 8; T++) {
            config_t cfg;
            data_t d;
            open_task(&d, &cfg, rev ? TASK_REVERSE : TASK_COPY, 2, T, 9, 0.0);
            gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
            int32_t tok[16], tgt[16];
            batch_t bt = over(NULL, tok, tgt);
            data_batch(&d, rng, &bt);
            const int m = (T + 1) / 2;
            for (int b = 0; b < 2; b++) {
                const int32_t *x = tok + b * T, *y = tgt + b * T;
                for (int i = 0; i < m; i++) {
                    ck_assert_int_ge(x[i], 1);
                    ck_assert_int_eq(y[i], -1);
                }
                ck_assert_int_eq(x[m], 0);
                for (int j = 0; m + j < T; j++) {
                    ck_assert_int_eq(y[m + j], rev ? x[m - 1 - j] : x[j]);
                    if (m + j + 1 < T) ck_assert_int_eq(x[m + j + 1], y[m + j]);
                }
            }
            gsl_rng_free(rng);
            data_close(&d);
        }
    }
}
END_TEST

/* Zipf(s = 1.1): the frequency of each of the first tokens matches p(k) = (k+1)^−s / H
 * within 5 binomial standard errors over 200k draws; uniform (s = 0) matches 1/V. */
START_TEST(test_zipf_frequencies)
{
    const int V = 50, B = 100, T = 100, rounds = 20;
    for (int z = 0; z < 2; z++) {
        const double s = z ? 1.1 : 0.0;
        config_t cfg;
        data_t d;
        open_task(&d, &cfg, TASK_RANDOM, B, T, V, s);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        int32_t *tok = malloc(sizeof(int32_t) * B * T), *tgt = malloc(sizeof(int32_t) * B * T);
        double count[50] = {0}, H = 0.0;
        for (int r = 0; r < rounds; r++) {
            batch_t bt = over(NULL, tok, tgt);
            data_batch(&d, rng, &bt);
            for (int i = 0; i < B * T; i++) count[tgt[i]] += 1.0;
        }
        for (int k = 0; k < V; k++) H += pow(k + 1.0, -s);
        const double n = (double)rounds * B * T;
        for (int k = 0; k < 5; k++) {
            const double p = pow(k + 1.0, -s) / H, se = sqrt(p * (1 - p) / n);
            ck_assert_msg(fabs(count[k] / n - p) < 5 * se, "zipf %g token %d: %g vs %g", s, k,
                          count[k] / n, p);
        }
        free(tok);
        free(tgt);
        gsl_rng_free(rng);
        data_close(&d);
    }
}
END_TEST

/* encdec copy/reverse/random: right-padded sources of min_len..S tokens in [1,V), the decoder
 * input is BOS then the target shifted right, padding after the target, rows of varying length. */
START_TEST(test_encdec_tasks)
{
    const task_t tasks[3] = {TASK_COPY, TASK_REVERSE, TASK_RANDOM};
    for (int k = 0; k < 3; k++) {
        config_t cfg;
        data_t d;
        char err[256];
        config_defaults(&cfg);
        cfg.model.arch = ARCH_ENCDEC;
        cfg.model.src_len = 7;
        cfg.model.seq_len = 8;
        cfg.model.vocab = 13;
        cfg.data.task = tasks[k];
        cfg.data.batch = 40;
        cfg.data.min_len = 3;
        ck_assert_int_eq(data_open(&d, &cfg, err, sizeof err), 0);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        int32_t src[280], tok[320], tgt[320];
        batch_t bt = over(src, tok, tgt);
        data_batch(&d, rng, &bt);
        ck_assert_int_eq(bt.B, 40);
        ck_assert_int_eq(bt.S, 7);
        ck_assert_int_eq(bt.T, 8);
        int seen[8] = {0};
        for (int b = 0; b < 40; b++) {
            const int32_t *x = src + b * 7, *in = tok + b * 8, *y = tgt + b * 8;
            int m = 0, n = 0;
            while (m < 7 && x[m] >= 0) m++;
            while (n < 8 && y[n] >= 0) n++;
            seen[m] = 1;
            ck_assert_int_ge(m, 3);
            for (int i = m; i < 7; i++) ck_assert_int_eq(x[i], -1);   // right padding only
            for (int i = n; i < 8; i++) ck_assert_int_eq(y[i], -1);
            for (int i = 0; i < m; i++) ck_assert(x[i] >= 1 && x[i] < 13);
            if (tasks[k] != TASK_RANDOM) ck_assert_int_eq(n, m);
            for (int i = 0; i < n; i++) {
                if (tasks[k] == TASK_COPY) ck_assert_int_eq(y[i], x[i]);
                if (tasks[k] == TASK_REVERSE) ck_assert_int_eq(y[i], x[m - 1 - i]);
                ck_assert_int_eq(in[i], i == 0 ? DATA_BOS : y[i - 1]);   // teacher forcing
            }
            for (int i = n; i < 8; i++) ck_assert_int_eq(in[i], -1);
        }
        ck_assert(seen[3] + seen[4] + seen[5] + seen[6] + seen[7] >= 4);   // lengths vary
        gsl_rng_free(rng);
        data_close(&d);
    }
}
END_TEST

START_TEST(test_copy_needs_room)
{
    config_t cfg;
    data_t d;
    char err[256];
    config_defaults(&cfg);
    cfg.data.task = TASK_COPY;
    cfg.model.vocab = 2;
    ck_assert_int_eq(data_open(&d, &cfg, err, sizeof err), 2);
}
END_TEST

/* mlm (BERT, Devlin et al. 2019; docs/design.md §6f): over 256 000 positions the share chosen,
 * and among the chosen the shares [MASK], another byte and the same byte, each within its
 * binomial 99.9 % interval (normal approximation, z = 3.29; the counts are in the thousands);
 * unchosen positions keep their byte and are not scored, chosen ones are scored with the clean
 * byte. Expected shares: chosen rate + (1 − rate)^T / T (a row with none chosen gets one);
 * a random replacement equals the clean byte with probability 1/256. */
static void expect_binomial(long k, long n, double p, const char *what)
{
    const double sd = sqrt((double)n * p * (1.0 - p));
    ck_assert_msg(fabs((double)k - (double)n * p) <= 3.29 * sd, "%s: %ld of %ld, expected %.1f ± %.1f",
                  what, k, n, (double)n * p, 3.29 * sd);
}

START_TEST(test_mlm_rates)
{
    enum { T = 64, ROWS = 4000 };
    const double rates[2] = {0.15, 0.4};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 12345);
    for (int r = 0; r < 2; r++) {
        long chosen = 0, masked = 0, other = 0, same = 0;
        for (int row = 0; row < ROWS; row++) {
            int32_t tok[T], tgt[T], clean[T];
            for (int t = 0; t < T; t++) clean[t] = tok[t] = (row * 7 + t * 13) % 256;
            mlm_mask_row(rng, rates[r], tok, tgt, T);
            for (int t = 0; t < T; t++) {
                if (tgt[t] < 0) {
                    ck_assert_int_eq(tgt[t], -1);
                    ck_assert_int_eq(tok[t], clean[t]);   // unchosen: input kept, not scored
                    continue;
                }
                ck_assert_int_eq(tgt[t], clean[t]);   // scored against the clean byte
                chosen++;
                if (tok[t] == DATA_MASK_ID) masked++;
                else if (tok[t] == clean[t]) same++;
                else { ck_assert(tok[t] >= 0 && tok[t] < 256); other++; }
            }
        }
        const double p = rates[r] + pow(1.0 - rates[r], T) / T;
        expect_binomial(chosen, (long)ROWS * T, p, "chosen");
        expect_binomial(masked, chosen, 0.8, "[MASK]");
        expect_binomial(other, chosen, 0.1 * 255.0 / 256.0, "another byte");
        expect_binomial(same, chosen, 0.1 + 0.1 / 256.0, "the same byte");
    }
    gsl_rng_free(rng);
}
END_TEST

/* mlm batches from a corpus file: each row's clean bytes are a window of the training split;
 * the validation batches are the same at every call and for every seed. */
START_TEST(test_mlm_batches)
{
    char path[] = "/tmp/stability-mlm-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    char text[6000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + (i * i + i / 7) % 26);
    ck_assert_int_eq(write(fd, text, sizeof text), (int)sizeof text);
    close(fd);
    config_t cfg;
    data_t d, d2;
    char err[256];
    config_defaults(&cfg);
    cfg.data.task = TASK_MLM;
    cfg.model.vocab = 257;
    cfg.model.seq_len = 32;
    cfg.data.batch = 5;
    snprintf(cfg.data.path, sizeof cfg.data.path, "%s", path);
    ck_assert_int_eq(data_open(&d, &cfg, err, sizeof err), 0);
    cfg.init.seed = 99;
    ck_assert_int_eq(data_open(&d2, &cfg, err, sizeof err), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int32_t tok[160], tgt[160], tok2[160], tgt2[160];
    batch_t bt = over(NULL, tok, tgt), b2 = over(NULL, tok2, tgt2);
    for (int k = 0; k < 20; k++) {
        data_batch(&d, rng, &bt);
        for (int b = 0; b < 5; b++) {
            char clean[32];
            for (int t = 0; t < 32; t++) {
                const int32_t x = tok[b * 32 + t], y = tgt[b * 32 + t];
                ck_assert(x >= 0 && x <= DATA_MASK_ID && y >= -1 && y < 256);
                clean[t] = (char)(y >= 0 ? y : x);
            }
            int found = 0;
            for (size_t o = 0; o + 32 <= d.n_train && !found; o++) found = !memcmp(text + o, clean, 32);
            ck_assert_msg(found, "row %d: the clean row is not a window of the training split", b);
        }
    }
    ck_assert_int_ge(d.val_batches, 1);
    data_val_batch(&d, 0, &bt);
    data_val_batch(&d2, 0, &b2);
    ck_assert_mem_eq(tok, tok2, sizeof tok);
    ck_assert_mem_eq(tgt, tgt2, sizeof tgt);
    data_batch(&d, rng, &bt);   // a training draw between two validation calls changes nothing
    data_val_batch(&d, 0, &bt);
    ck_assert_mem_eq(tok, tok2, sizeof tok);
    int scored = 0;
    for (int i = 0; i < 160; i++) scored += tgt[i] >= 0;
    ck_assert(scored > 0 && scored < 160);
    gsl_rng_free(rng);
    data_close(&d);
    data_close(&d2);
    unlink(path);
}
END_TEST

Suite *data_suite(void)
{
    Suite *s = suite_create("data");
    TCase *tc = tcase_create("tasks");
    tcase_add_test(tc, test_random_next_token);
    tcase_add_test(tc, test_copy_reverse);
    tcase_add_test(tc, test_zipf_frequencies);
    tcase_add_test(tc, test_copy_needs_room);
    tcase_add_test(tc, test_encdec_tasks);
    tcase_add_test(tc, test_mlm_rates);
    tcase_add_test(tc, test_mlm_batches);
    suite_add_tcase(s, tc);
    return s;
}
