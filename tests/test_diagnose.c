/* test_diagnose.c — the diagnosis rules of measure/diagnose.h on made-up series, each event at
 * the update its rule names, with the place and the remedies its message gives. (The rules on
 * real runs, through `stability` and its files: tests/test_watch.py.) */
#include <math.h>
#include <string.h>
#include "tests.h"
#include "config/config.h"
#include "measure/diagnose.h"
#include "measure/diagnose_curv.h"
#include "model/tensors.h"
#include "report/diagnosis_curv.h"

/* A byte-level LM's config: V = 256 (ln V = 5.545), Post-LN, no warm-up, 300 updates. */
static config_t lm_config(void)
{
    config_t c;
    config_defaults(&c);
    c.model.vocab = 256;
    c.train.steps = 300;
    c.train.warmup = 1;
    c.train.lr = 1e-3;
    c.data.task = TASK_COPY;
    c.model.causal = 1;   // next-token prediction: without the mask the targets leak (test_leak)
    return c;
}

static diagnose_update_t update(long t, double loss, double lr)
{
    return (diagnose_update_t){.step = t, .loss = loss, .lr = lr, .grad_norm = 1.0,
                               .max_logit = NAN, .min_entropy = NAN};
}

/* train.warmup > train.steps: known before update 1; the lr ends at lr·steps/warmup. */
START_TEST(test_warmup_longer_than_run)
{
    config_t c = lm_config();
    c.train.steps = 200;
    c.train.warmup = 4000;
    c.train.lr = 5e-4;
    diagnose_t d;
    diagnose_init(&d, &c, NAN);
    ck_assert_int_eq(diagnose_start(&d), DIAG_WARMUP_LONG);
    ck_assert(fabs(d.value[diagnose_index(DIAG_WARMUP_LONG)] - 2.5e-5) < 1e-20);
    char msg[1200];
    diagnose_message(&d, DIAG_WARMUP_LONG, msg, sizeof msg);
    // the one warm-up answer: 2/(1 - 0.98) = 100 updates (measure/diagnose.h), half the run
    ck_assert_msg(strstr(msg, "--set train.warmup=100 or more train.steps") != NULL, "%s", msg);
    ck_assert_int_eq(diagnose_warmup_updates(&c, 0), 100);
    ck_assert_int_eq(diagnose_warmup_updates(&c, 150.2), 151);   // a measured need above it wins
    c.train.beta2 = 0.999;
    ck_assert_int_eq(diagnose_warmup_updates(&c, 0), 2000);
    diagnose_message(&d, DIAG_WARMUP_LONG, msg, sizeof msg);   // 2000 does not fit 200 updates
    ck_assert_msg(strstr(msg, "--set train.steps=12000 (three times the warm-up)") != NULL, "%s", msg);
    c.train.beta2 = 0.98;
    c.train.optimizer = OPT_SGD;   // no rule for SGD: a tenth of the run
    ck_assert_int_eq(diagnose_warmup_updates(&c, 0), 20);
    c.train.optimizer = OPT_ADAM;
    c.train.warmup = 200;   // equal: the run reaches its lr at its last update
    diagnose_init(&d, &c, NAN);
    ck_assert_int_eq(diagnose_start(&d), 0);
}
END_TEST

/* Not learning: the last 20 updates' mean less than 5 % below the first 20's, with the reasons
 * the run gives: it ended in its warm-up, and Σ lr = 5e-4·(200·201/2)/4000 = 2.5125e-3 < 0.01. */
START_TEST(test_not_learning)
{
    config_t c = lm_config();
    c.train.steps = 200;
    c.train.warmup = 4000;
    c.train.lr = 5e-4;
    diagnose_t d;
    diagnose_init(&d, &c, NAN);
    diagnose_start(&d);
    for (long t = 1; t <= 200; t++) {
        const diagnose_update_t u = update(t, t <= 20 ? 3.0 : 2.86, 5e-4 * t / 4000);
        ck_assert_int_eq(diagnose_step(&d, &u) & DIAG_NOT_LEARNING, 0);   // judged at the end only
    }
    ck_assert_int_eq(diagnose_finish(&d, 1), DIAG_NOT_LEARNING);   // 2.86 > 0.95 × 3.0
    ck_assert_int_eq(d.why, DIAG_WHY_WARMUP | DIAG_WHY_LR_TINY);
    ck_assert(fabs(d.lr_sum - 5e-4 * 20100 / 4000) < 1e-15);
    ck_assert(fabs(d.start_mean - 3.0) < 1e-15 && fabs(d.end_mean - 2.86) < 1e-15);
    // 2.84 < 2.85: it learned (5.3 %); the same run interrupted or resumed is not judged
    const double last[3] = {2.84, 2.86, 2.86};
    const int ended[3] = {1, 0, 1}, first[3] = {1, 1, 101};
    for (int k = 0; k < 3; k++) {
        diagnose_init(&d, &c, NAN);
        for (long t = first[k]; t < first[k] + 200; t++) {
            const diagnose_update_t u = update(t, t < first[k] + 20 ? 3.0 : last[k], 1e-3);
            diagnose_step(&d, &u);
        }
        ck_assert_int_eq(diagnose_finish(&d, ended[k]), 0);
    }
    // a uniform random task: nothing to learn, said so
    c = lm_config();
    c.data.task = TASK_RANDOM;
    diagnose_init(&d, &c, NAN);
    for (long t = 1; t <= 100; t++) {
        const diagnose_update_t u = update(t, 5.5, 1e-3);
        diagnose_step(&d, &u);
    }
    ck_assert_int_eq(diagnose_finish(&d, 1), DIAG_NOT_LEARNING);
    ck_assert_int_eq(d.why, DIAG_WHY_NOTHING);
}
END_TEST

/* A finite explosion: losses 5.0, then 20.0 from update 31; the line is 2·max(ln 256, 5.0) =
 * 11.09, which the 20-update mean (20k + 5(20 − k))/20 first passes at k = 9 (update 39),
 * reported as since update 31. A jump past the line at the diverged update is the divergence. */
START_TEST(test_exploded)
{
    config_t c = lm_config();
    diagnose_t d;
    diagnose_init(&d, &c, NAN);
    int seen = 0;
    for (long t = 1; t <= 100; t++) {
        const diagnose_update_t u = update(t, t <= 30 ? 5.0 : 20.0, 1e-3);
        const int e = diagnose_step(&d, &u);
        if (e & DIAG_EXPLODED) ck_assert_int_eq(t, 39);
        seen |= e;
    }
    ck_assert_int_eq(seen, DIAG_EXPLODED);
    ck_assert_int_eq(d.at[diagnose_index(DIAG_EXPLODED)], 31);
    ck_assert_int_eq(diagnose_finish(&d, 1), 0);   // exploded is not "not learning"
    char msg[1200];
    diagnose_message(&d, DIAG_EXPLODED, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "from update 31") && strstr(msg, "ends exploded") &&
                  strstr(msg, "--set train.lr=0.0001"), "%s", msg);
    // the one warm-up answer raised by the curvature rows' need (advise's): 150.2 → 151
    ck_assert_int_eq(diagnose_warmup_answer(&d), 100);
    d.warmup_need = 150.2;
    ck_assert_int_eq(diagnose_warmup_answer(&d), 151);
    diagnose_message(&d, DIAG_EXPLODED, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "--set train.warmup=151 (the curvature rows' need"), "%s", msg);
    d.warmup_need = 40;   // below 2/(1 - 0.98): the untuned rule's 100, as before
    diagnose_message(&d, DIAG_EXPLODED, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "--set train.warmup=100 (2/(1 - beta2)"), "%s", msg);
    char flags[300];
    diagnose_flags(&d, flags, sizeof flags);
    ck_assert_str_eq(flags, "exploded@31");
    // a loss of 1e6 at update 40 (the loop's divergence, > 100 ln V): diverged, not exploded
    diagnose_init(&d, &c, NAN);
    for (long t = 1; t <= 40; t++) {
        const diagnose_update_t u = update(t, t < 40 ? 5.0 : 1e6, 1e-3);
        int e = diagnose_step(&d, &u);
        if (t == 40) e = (e | diagnose_diverged(&d, 40, "loss > 100 ln V")) & d.events;
        if (t == 40) ck_assert_int_eq(e, DIAG_DIVERGED);
    }
    diagnose_finish(&d, 1);
    diagnose_flags(&d, flags, sizeof flags);
    ck_assert_str_eq(flags, "diverged@40");
}
END_TEST

/* Logit growth needs 100 × the update-1 value and an absolute 10 (issue 34 (i): a tiny
 * initialisation's 3.7e-7 → 4e-5 is no growth); its place comes from the first probe row at or
 * after it: layer 2, self-attention head 1 holds the largest logit there. */
START_TEST(test_logit_floor_and_place)
{
    config_t c = lm_config();
    const char *heads[2] = {"self.h0", "self.h1"};
    diagnose_t d;
    diagnose_init(&d, &c, NAN);
    diagnose_axes(&d, 2, NULL, 2, heads);
    for (long t = 1; t <= 50; t++) {
        diagnose_update_t u = update(t, 5.0, 1e-3);
        u.max_logit = t == 1 ? 3.7e-7 : 4e-5;
        ck_assert_int_eq(diagnose_step(&d, &u), 0);
    }
    diagnose_init(&d, &c, NAN);
    diagnose_axes(&d, 2, NULL, 2, heads);
    const double row[4] = {1.0, 2.0, 50.0, 3.0};   // (layer, head): the largest at layer 2, head 1
    for (long t = 1; t <= 10; t++) {
        diagnose_update_t u = update(t, 5.0, 1e-3);
        u.max_logit = t == 1 ? 0.4 : 50.0;
        if (t == 10) u.head_logit = row;
        const int e = diagnose_step(&d, &u);
        ck_assert_int_eq(e, t == 10 ? DIAG_LOGIT_GROWTH : 0);   // waits for its place
    }
    ck_assert_int_eq(d.at[diagnose_index(DIAG_LOGIT_GROWTH)], 2);
    char msg[1200];
    diagnose_message(&d, DIAG_LOGIT_GROWTH, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "at update 2") && strstr(msg, "layer 2, self-attention head 1 (50") &&
                  strstr(msg, "--set model.qk_norm=layernorm"), "%s", msg);
}
END_TEST

/* Under 10 updates no rule can judge: "too-short", never "healthy", even when the loss fell
 * (and a rising one is not "healthy" either). */
START_TEST(test_too_short)
{
    config_t c = lm_config();
    for (long n = 6; n <= 10; n += 4) {
        diagnose_t d;
        diagnose_init(&d, &c, NAN);
        for (long t = 1; t <= n; t++) {
            diagnose_update_t u = update(t, 3.0 + 0.01 * t, 1e-3);   // rising
            diagnose_step(&d, &u);
        }
        diagnose_finish(&d, 1);
        char flags[100], msg[300];
        diagnose_flags(&d, flags, sizeof flags);
        diagnose_healthy(&d, msg, sizeof msg);
        if (n < 10) {
            ck_assert_str_eq(flags, "too-short");
            ck_assert_msg(!strncmp(msg, "too short to judge: 6 updates", 29), "%s", msg);
        } else {
            ck_assert_str_eq(flags, "not-learning");   // 10 updates: two windows of 5
        }
    }
}
END_TEST

/* Gradient collapse: the lowest / highest layer gradient below 1/50 of its value at the first
 * probe row. A 4-layer run whose ratio fell from 0.625 to 0.012 (52x; the absolute 0.01 of old
 * never fired there) is flagged at that row with its lowest layer; a dip to 0.03 (21x: runs that
 * train dip so before they escape) is not; a deep stack that starts at 0.009 and stays is not. */
START_TEST(test_grad_collapse)
{
    config_t c = lm_config();
    const double r1[4] = {0.5, 0.6, 0.7, 0.8}, dip[4] = {0.024, 0.3, 0.5, 0.8},
                 low[4] = {0.0096, 0.05, 0.3, 0.8}, deep[4] = {0.0072, 0.05, 0.3, 0.8};
    const double *rows[3][3] = {{r1, dip, low}, {r1, dip, dip}, {deep, deep, deep}};
    const int want[3] = {DIAG_GRAD_COLLAPSE, 0, 0};
    for (int k = 0; k < 3; k++) {
        diagnose_t d;
        diagnose_init(&d, &c, NAN);
        diagnose_axes(&d, 4, NULL, 0, NULL);
        for (long t = 1; t <= 200; t++) {
            diagnose_update_t u = update(t, 3.0, 1e-3);
            if (t == 1 || t % 100 == 0) { u.grad = rows[k][t / 100]; u.K = 1; }
            diagnose_step(&d, &u);
        }
        ck_assert_int_eq(d.events & DIAG_GRAD_COLLAPSE, want[k]);
        if (!want[k]) continue;
        ck_assert_int_eq(d.at[diagnose_index(DIAG_GRAD_COLLAPSE)], 200);
        char msg[1200];
        diagnose_message(&d, DIAG_GRAD_COLLAPSE, msg, sizeof msg);
        ck_assert_msg(strstr(msg, "at update 200: lowest / highest layer gradient 0.012, 52 x below "
                             "its 0.625 at update 1") && strstr(msg, "lowest in layer 1") &&
                      strstr(msg, "--set train.warmup=100"), "%s", msg);
    }
}
END_TEST

/* A leak: a next-token task trained without the causal mask is flagged before update 1 (copy,
 * random, text; not mlm, not a probe); on the random task a loss below 0.9 × the entropy of its
 * i.i.d. tokens (ln 11 = 2.398 for V = 11) is flagged where it happens, and a loss at the
 * entropy is not. */
START_TEST(test_leak)
{
    config_t c = lm_config();
    c.model.causal = 0;   // copy without the mask
    diagnose_t d;
    diagnose_init(&d, &c, NAN);
    ck_assert_int_eq(diagnose_start(&d), DIAG_LEAK);
    char msg[1200];
    diagnose_message(&d, DIAG_LEAK, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "data.task = copy predicts the next token") &&
                  strstr(msg, "--set model.causal=true"), "%s", msg);
    c.model.causal = 1;
    diagnose_init(&d, &c, NAN);
    ck_assert_int_eq(diagnose_start(&d), 0);
    c.model.causal = 0;
    c.data.task = TASK_MLM;   // bidirectional by design: its targets are masked in the input
    diagnose_init(&d, &c, NAN);
    ck_assert_int_eq(diagnose_start(&d), 0);
    c.data.task = TASK_RANDOM;
    c.model.causal = 1;
    c.model.vocab = 11;
    for (int k = 0; k < 2; k++) {
        diagnose_init(&d, &c, NAN);
        ck_assert(fabs(d.floor - log(11.0)) < 1e-15);
        ck_assert_int_eq(diagnose_start(&d), 0);
        int ev = 0;
        for (long t = 1; t <= 100; t++) {
            diagnose_update_t u = update(t, k ? 2.4 : (t < 50 ? 2.4 : 2.0), 1e-3);
            ev |= diagnose_step(&d, &u);
        }
        ck_assert_int_eq(ev & DIAG_LEAK, k ? 0 : DIAG_LEAK);
        if (k) continue;
        // the window of 20 falls below 0.9 ln 11 = 2.158 with its 13th loss of 2.0 (2.4 − 13 ×
        // 0.02 = 2.14): update 62
        ck_assert_int_eq(d.at[diagnose_index(DIAG_LEAK)], 62);
        diagnose_message(&d, DIAG_LEAK, msg, sizeof msg);
        ck_assert_msg(strstr(msg, "fell to 2.14 at update 62, below 0.9 x the entropy of the "
                             "task's independent tokens, 2.398"), "%s", msg);
    }
    c.data.zipf = 1.1;   // the Zipf entropy, below ln V
    diagnose_init(&d, &c, NAN);
    double z = 0, h = 0;
    for (int k = 1; k <= 11; k++) z += pow(k, -1.1);
    for (int k = 1; k <= 11; k++) h -= pow(k, -1.1) / z * log(pow(k, -1.1) / z);
    ck_assert(fabs(d.floor - h) < 1e-12 && h < log(11.0));
}
END_TEST

/* The remedies name only keys the run does not use yet: a Pre-LN run with QK-norm and a
 * warm-up is not told to use them. */
START_TEST(test_remedies_not_in_use)
{
    config_t c = lm_config();
    diagnose_t d;
    diagnose_init(&d, &c, 3.0);
    d.events = DIAG_PLATEAU | DIAG_LOGIT_GROWTH;
    char msg[1200];
    diagnose_message(&d, DIAG_PLATEAU, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "--set train.warmup=100 (2/(1 - beta2) for beta2 = 0.98, Ma & Yarats 2021)") &&
                  strstr(msg, "--set model.placement=pre"), "%s", msg);
    c.model.placement = PLACEMENT_PRE;
    c.model.qk_norm = QK_NORM_LAYERNORM;
    c.train.warmup = 100;
    diagnose_message(&d, DIAG_PLATEAU, msg, sizeof msg);
    ck_assert_msg(!strstr(msg, "placement") && !strstr(msg, "warmup="), "%s", msg);   // never the config again
    diagnose_message(&d, DIAG_LOGIT_GROWTH, msg, sizeof msg);
    ck_assert_msg(!strstr(msg, "qk_norm") && strstr(msg, "--set model.attn_softcap=50"), "%s", msg);
}
END_TEST

/* ---------------------------------------------------------------- the curvature rows */

/* Curvature rows at updates 0, 2, …, 20 of an Adam run at lr 1e-3 (threshold 38/lr = 38 000),
 * ratios given; blocks (3 layers + outside) × 6 kinds: at the peak (update 0) the largest is
 * layer 2's ffn, elsewhere the embedding outside the layers. */
#define CURV_ROWS 11
static const double RATIO[CURV_ROWS] = {5.37, 1.62, 0.403, 0.252, 1.3, 0.175, NAN, 0.136,
                                         0.118, 0.109, 0.116};
static double blocks[CURV_ROWS][4 * TENSOR_BLOCKS];

static void feed_rows(diagnose_curv_t *d, const config_t *c, int with_peak_blocks)
{
    const double thr = 38.0 / c->train.lr;
    diagnose_curv_init(d, c, 4, TENSOR_BLOCKS);
    for (int i = 0; i < CURV_ROWS; i++) {
        for (int k = 0; k < 4 * TENSOR_BLOCKS; k++) blocks[i][k] = NAN;
        for (int l = 0; l < 3; l++)   // the layers' blocks: a tenth of the row's value
            for (int k = TENSOR_BLOCK_ATTN_QK; k <= TENSOR_BLOCK_NORM; k++)
                blocks[i][l * TENSOR_BLOCKS + k] = 0.1 * RATIO[i] * thr;
        blocks[i][3 * TENSOR_BLOCKS + TENSOR_BLOCK_EMBED] = 0.5 * RATIO[i] * thr;
        if (i == 0) blocks[i][1 * TENSOR_BLOCKS + TENSOR_BLOCK_FFN] = 0.8 * RATIO[i] * thr;
        const diagnose_curv_row_t r = {
            .step = 2L * i, .active = RATIO[i] * thr, .threshold = thr,
            .full = i == 0 ? 1e7 * thr : RATIO[i] * thr, .eps_share = i == 0 ? 0.9 : 0.0,
            .block = i == 0 && !with_peak_blocks ? NULL : blocks[i]};
        const int first = diagnose_curv_row(d, &r);
        ck_assert_int_eq(first, i == 0);   // the live warning's moment: the first row above
    }
}

/* The first crossing, the peak (and after update 0), how long, how many rows, the block at
 * the peak, the ε-floor note and the warm-up estimate, each checked against its definition. */
START_TEST(test_curv_crossing)
{
    config_t c = lm_config();
    diagnose_curv_t d;
    feed_rows(&d, &c, 1);
    ck_assert_int_eq(d.seen, 11);
    ck_assert_int_eq(d.measured, 10);   // the NaN row (kinked) is no measured row
    ck_assert_int_eq(d.first, 0);
    ck_assert(fabs(d.first_ratio - 5.37) < 1e-12);
    ck_assert_int_eq(d.peak_step, 0);
    ck_assert(fabs(d.peak - 5.37) < 1e-12);
    ck_assert_int_eq(d.peak1_step, 2);
    ck_assert(fabs(d.peak1 - 1.62) < 1e-12);
    ck_assert_int_eq(d.last, 8);        // above again at update 8 (1.3)
    ck_assert_int_eq(d.above, 3);
    ck_assert_int_eq(d.block_step, 0);
    ck_assert_int_eq(d.block_row, 1);
    ck_assert_int_eq(d.block_kind, TENSOR_BLOCK_FFN);
    ck_assert(fabs(d.block_ratio - 0.8 * 5.37) < 1e-12);
    ck_assert(diagnose_curv_floor_note(&d));
    ck_assert(fabs(d.full0 - 1e7) < 1e-3);
    // the warm-up: N must bring every row above below 1 under ratio·min(1, (t + 1)/N) — and be
    // the smallest integer that does: update 8's 9 × 1.3 = 11.7 sets it, N = 12
    const long N = diagnose_curv_warmup(&d);
    ck_assert_int_eq(N, 12);
    ck_assert_int_eq(d.warmup_step, 8);
    for (long n = N - 1; n <= N; n++) {
        int below = 1;
        for (int i = 0; i < CURV_ROWS; i++) {
            const double t1 = 2.0 * i + 1, r = RATIO[i] * (t1 < n ? t1 / (double)n : 1.0);
            if (r >= 1.0) below = 0;
        }
        ck_assert_int_eq(below, n == N);
    }
    char msg[2000];
    report_curvature_message(&d, &c, NULL, 0, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "at update 0: precond_max_active / stability_threshold = 5.37") &&
                  strstr(msg, "peak 5.37 at update 0 (after update 0: 1.62 at update 2)") &&
                  strstr(msg, "from update 0 to 8 (8 updates; 3 of 10 measured rows above)") &&
                  strstr(msg, "at the peak: layer 2 ffn 4.3 x the threshold") &&
                  strstr(msg, "precond_eps_share") &&
                  strstr(msg, "--set train.warmup=100 (the diagnosis' warm-up, at least the 12 updates") &&
                  strstr(msg, "--set train.optimizer=gi_adam") &&
                  strstr(msg, "--set model.placement=pre"), "%s", msg);
    report_curvature_message(&d, &c, NULL, 1, msg, sizeof msg);   // the live warning
    ck_assert_msg(strstr(msg, "at update 0") && strstr(msg, "layer 2 ffn") &&
                  strstr(msg, "precond_eps_share") && !strstr(msg, "above only") &&
                  !strstr(msg, "--set"), "%s", msg);
    // above at update 0 alone: said so, and the warm-up is (0 + 1)·3 → 4
    const double thr = 38.0 / c.train.lr;
    diagnose_curv_init(&d, &c, 0, 0);
    for (int i = 0; i < 3; i++) {
        const diagnose_curv_row_t r = {.step = i, .active = (i ? 0.5 : 3.0) * thr,
                                       .threshold = thr, .full = NAN, .eps_share = 0.0};
        diagnose_curv_row(&d, &r);
    }
    ck_assert_int_eq(diagnose_curv_warmup(&d), 4);
    report_curvature_message(&d, &c, NULL, 0, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "at update 0 alone (1 of 3 measured rows)") &&
                  strstr(msg, "above only at update 0") && !strstr(msg, "precond_eps_share") &&
                  strstr(msg, "--set train.warmup=100 (the diagnosis' warm-up, at least the 4 updates"), "%s", msg);
}
END_TEST

/* The peak row without blocks: the block is the highest row above 1 that has them, said so;
 * encoder–decoder rows are named within their stack. */
START_TEST(test_curv_block_elsewhere)
{
    config_t c = lm_config();
    diagnose_curv_t d;
    feed_rows(&d, &c, 0);
    ck_assert_int_eq(d.block_step, 2);   // 1.62 > 1.3 at update 8
    ck_assert_int_eq(d.block_row, 3);
    ck_assert_int_eq(d.block_kind, TENSOR_BLOCK_EMBED);
    ck_assert(fabs(d.block_ratio - 0.5 * 1.62) < 1e-12);
    const char *stack[4] = {"enc", "dec", "dec", "outside"};
    const report_curv_axes_t ax = {stack, NULL};
    char msg[2000];
    report_curvature_message(&d, &c, &ax, 0, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "embed, outside the layers, 0.81 x the threshold at update 2"), "%s", msg);
    int l, k;
    const double v = diagnose_curv_block_max(blocks[4], 4, TENSOR_BLOCKS, &l, &k);
    ck_assert(l == 3 && k == TENSOR_BLOCK_EMBED && v == blocks[4][3 * TENSOR_BLOCKS]);
    d.block_row = 2;
    d.block_kind = TENSOR_BLOCK_ATTN_QK;
    report_curvature_message(&d, &c, &ax, 0, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "decoder layer 2 attn_qk"), "%s", msg);
}
END_TEST

/* A run that had a warm-up of W: its lr at update t + 1 was already scaled by min(1, (t+1)/W),
 * so a row above at t + 1 ≤ W needs N > W·ratio. Remedies the run uses are not offered; a
 * warm-up longer than the run becomes a smaller lr. */
START_TEST(test_curv_warmup_and_remedies)
{
    config_t c = lm_config();
    c.train.warmup = 5;
    c.train.optimizer = OPT_GI_ADAM;
    c.model.placement = PLACEMENT_PRE;
    diagnose_curv_t d;
    diagnose_curv_init(&d, &c, 0, 0);
    const double thr = 38.0 / c.train.lr;
    const diagnose_curv_row_t r0 = {.step = 1, .active = 1.5 * thr, .threshold = thr,   // 2nd update
                                    .full = NAN, .eps_share = NAN};
    diagnose_curv_row(&d, &r0);
    ck_assert_int_eq(diagnose_curv_warmup(&d), 8);   // 5 × 1.5 = 7.5
    // check: at full lr the row is 1.5·5/2 = 3.75; under N = 8 it is 3.75·2/8 < 1, under 7 not
    ck_assert(3.75 * 2 / 8 < 1 && 3.75 * 2 / 7 >= 1);
    ck_assert(!diagnose_curv_floor_note(&d));   // no update-0 row
    char msg[2000];
    report_curvature_message(&d, &c, NULL, 0, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "--set train.warmup=100 (the diagnosis' warm-up, at least the 8 updates") &&
                  !strstr(msg, "optimizer=") &&
                  !strstr(msg, "placement") && !strstr(msg, "block") &&
                  strstr(msg, "at update 1 alone (1 of 1 measured rows)"), "%s", msg);
    c.train.steps = 6;   // N = 8 outlasts the run: the lr that keeps the peak under, lr / 1.5
    report_curvature_message(&d, &c, NULL, 0, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "--set train.lr=0.00067") && !strstr(msg, "train.warmup="), "%s", msg);
}
END_TEST

/* Below the threshold everywhere: no crossing, no warm-up, one line that says so; no rows:
 * nothing at all. */
START_TEST(test_curv_below)
{
    config_t c = lm_config();
    diagnose_curv_t d;
    diagnose_curv_init(&d, &c, 0, 0);
    char msg[2000];
    report_curvature_message(&d, &c, NULL, 0, msg, sizeof msg);
    ck_assert_str_eq(msg, "");
    const double thr = 38.0 / c.train.lr;
    for (long t = 0; t <= 20; t += 5) {
        const diagnose_curv_row_t r = {.step = t, .active = (0.5 + 0.01 * (double)t) * thr,
                                       .threshold = thr, .full = NAN, .eps_share = 0.0};
        ck_assert_int_eq(diagnose_curv_row(&d, &r), 0);
    }
    ck_assert_int_eq(d.above, 0);
    ck_assert_int_eq(d.first, -1);
    ck_assert_int_eq(diagnose_curv_warmup(&d), 0);
    ck_assert_int_eq(d.peak_step, 20);
    report_curvature_message(&d, &c, NULL, 0, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "stayed below adam's stability threshold at all 5 measured rows") &&
                  strstr(msg, "0.7, at update 20") && !strstr(msg, "--set"), "%s", msg);
}
END_TEST

/* diagnose_target_entropy on two pairs built by hand: targets (4, 4) and (5), each + EOS (3),
 * are 4 ×2, 5 ×1, EOS ×2 of 5: H = −2·0.4 ln 0.4 − 0.2 ln 0.2 = 1.0549201679861442; the sources
 * (7, 8, 9) are not counted. With eps = 0.1 over V = 10: t = 0.9 p + 0.01 →
 * 0.37 (×2), 0.19, 0.01 (×7): −Σ t ln t = 1.3736475245897417 (python3's math.log). */
START_TEST(test_target_entropy)
{
    int32_t pool[] = {7, 8, 4, 4, 9, 5};   // pair 0: s (7, 8), t (4, 4); pair 1: s (9), t (5)
    size_t at[] = {0, 4};
    int src_len[] = {2, 1}, tgt_len[] = {2, 1};
    corpus_t c = {.vocab = 10};
    c.split[CORPUS_TRAIN] = (corpus_split_t){.n = 2, .pool = pool, .at = at, .src_len = src_len,
                                             .tgt_len = tgt_len};
    ck_assert_double_eq_tol(diagnose_target_entropy(&c, 0.0), 1.0549201679861442, 1e-15);
    ck_assert_double_eq_tol(diagnose_target_entropy(&c, 0.1), 1.3736475245897417, 1e-15);
    c.split[CORPUS_TRAIN].n = 0;
    ck_assert(isnan(diagnose_target_entropy(&c, 0.0)));
}
END_TEST

/* The plateau finding names the plateau it used: a translation run's is its targets' entropy. */
START_TEST(test_plateau_names_targets)
{
    static const struct { task_t task; const char *said; } CASE[2] = {
        {TASK_TEXT, "of the training text's unigram entropy 7.000"},
        {TASK_TRANSLATION, "of the training targets' unigram entropy 7.000"}};
    for (int k = 0; k < 2; k++) {
        config_t c = lm_config();
        c.data.task = CASE[k].task;
        diagnose_t d;
        diagnose_init(&d, &c, 7.0);
        diagnose_start(&d);
        int ev = 0;
        for (long t = 1; t <= 150; t++) {
            const diagnose_update_t u = update(t, 7.02, 1e-3);
            ev |= diagnose_step(&d, &u);
        }
        ck_assert(ev & DIAG_PLATEAU);
        char msg[1200];
        diagnose_message(&d, DIAG_PLATEAU, msg, sizeof msg);
        ck_assert_msg(strstr(msg, CASE[k].said), "%s", msg);
    }
}
END_TEST

Suite *diagnose_suite(void)
{
    Suite *s = suite_create("diagnose");
    TCase *tc = tcase_create("diagnose");
    tcase_add_test(tc, test_warmup_longer_than_run);
    tcase_add_test(tc, test_grad_collapse);
    tcase_add_test(tc, test_too_short);
    tcase_add_test(tc, test_leak);
    tcase_add_test(tc, test_not_learning);
    tcase_add_test(tc, test_exploded);
    tcase_add_test(tc, test_logit_floor_and_place);
    tcase_add_test(tc, test_remedies_not_in_use);
    tcase_add_test(tc, test_curv_crossing);
    tcase_add_test(tc, test_curv_block_elsewhere);
    tcase_add_test(tc, test_curv_warmup_and_remedies);
    tcase_add_test(tc, test_curv_below);
    tcase_add_test(tc, test_target_entropy);
    tcase_add_test(tc, test_plateau_names_targets);
    suite_add_tcase(s, tc);
    return s;
}
