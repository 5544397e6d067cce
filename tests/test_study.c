/* test_study.c — what the studies share (study/study.c): the Clopper–Pearson interval of a
 * binomial proportion against its closed forms (Beta(1, n) and Beta(n, 1) have the CDFs
 * 1 − (1 − x)ⁿ and xⁿ, so the ends at k = 0, 1, n − 1, n are powers) and against R's
 * binom.test(5, 10) (0.1870860, 0.8129140). The warm-up table's measures of one run
 * (study/warmup.c) on a curve worked by hand. */
#include <math.h>
#include <string.h>
#include "tests.h"
#include "study/study.h"
#include "study/warmup.h"

START_TEST(test_study_clopper_pearson)
{
    double lo, hi;
    // k = 0 of 10: [0, 1 − (α/2)^(1/n)]
    study_clopper_pearson(0, 10, 0.05, &lo, &hi);
    ck_assert_double_eq(lo, 0.0);
    ck_assert_double_eq_tol(hi, 1 - pow(0.025, 0.1), 1e-12);   // 0.3085
    // k = n = 10: [(α/2)^(1/n), 1]
    study_clopper_pearson(10, 10, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, pow(0.025, 0.1), 1e-12);       // 0.6915
    ck_assert_double_eq(hi, 1.0);
    // k = 1 of 3: lo = 1 − (1 − α/2)^(1/3); k = 2 of 3: hi = (1 − α/2)^(1/3)
    study_clopper_pearson(1, 3, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, 1 - pow(0.975, 1.0 / 3), 1e-12);   // 0.0084
    study_clopper_pearson(2, 3, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(hi, pow(0.975, 1.0 / 3), 1e-12);       // 0.9916
    // 5 of 10: R's binom.test, printed to 7 digits; symmetric about 1/2
    study_clopper_pearson(5, 10, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, 0.1870860, 1e-7);
    ck_assert_double_eq_tol(hi, 0.8129140, 1e-7);
    ck_assert_double_eq_tol(lo, 1 - hi, 1e-12);
    // a 90 % interval is inside the 95 % one
    double lo90, hi90;
    study_clopper_pearson(5, 10, 0.10, &lo90, &hi90);
    ck_assert(lo90 > lo && hi90 < hi);
    // no trials: no interval
    study_clopper_pearson(0, 0, 0.05, &lo, &hi);
    ck_assert(isnan(lo) && isnan(hi));
}
END_TEST

/* 60 updates, 3.0 for the first 30 and 2.0 after: the 50-update window starting at update
 * i + 1 (i = 0…10) has 30 − i values of 3.0, mean 2 + (30 − i)/50, below 2.5 first at i = 6
 * (2.48), ending at update 56; lowest at i = 10 (2.4). The final loss is the last validation
 * loss (2.7; the lowest 2.5, NaN skipped); without validation the mean of the last tenth (6
 * updates of 2.0); diverged, none. ‖∂L/∂W²‖ of layers 1…3 at update 100: 0.5, 1, 4 → 0.125. */
START_TEST(test_study_warmup_measure)
{
    double loss[60], val[4] = {3.0, NAN, 2.5, 2.7}, step[2] = {1, 100};
    double w2[6] = {9, 9, 9, 0.5, 1.0, 4.0};   // (nprobe, L): update 1, update 100
    for (int t = 0; t < 60; t++) loss[t] = t < 30 ? 3.0 : 2.0;
    plot_dyn_t dyn = {.L = 3, .nprobe = 2, .probe_step = step, .grad_w2 = w2, .wall = 12.5};
    plot_run_t run;
    memset(&run, 0, sizeof run);
    config_defaults(&run.cfg);
    run.cfg.model.layers = 3;
    snprintf(run.status, sizeof run.status, "done");
    run.loss = loss;
    run.nsteps = 60;
    run.val_loss = val;
    run.nevals = 4;
    run.diverged_at = NAN;
    run.unigram = NAN;
    run.dyn = &dyn;
    plot_set_t set = {.runs = &run, .n = 1};
    warmup_run_t w;
    warmup_run_measure(&set, 0, &w);
    ck_assert_double_eq_tol(w.best, 2.4, 1e-12);
    ck_assert_int_eq(w.to_below, 56);
    ck_assert_double_eq(w.final_loss, 2.7);
    ck_assert_double_eq(w.val_final, 2.7);
    ck_assert_double_eq(w.val_best, 2.5);
    ck_assert_double_eq_tol(w.ratio, 0.125, 1e-15);
    ck_assert_double_eq(w.wall, 12.5);
    run.nevals = 0;
    warmup_run_measure(&set, 0, &w);
    ck_assert_double_eq(w.final_loss, 2.0);
    ck_assert(isnan(w.val_final) && isnan(w.val_best));
    step[1] = 99;   // update 100 not probed: no ratio
    snprintf(run.status, sizeof run.status, "diverged");
    warmup_run_measure(&set, 0, &w);
    ck_assert(isnan(w.ratio) && isnan(w.final_loss));
}
END_TEST

Suite *study_suite(void)
{
    Suite *s = suite_create("study");
    TCase *tc = tcase_create("study");
    tcase_add_test(tc, test_study_clopper_pearson);
    tcase_add_test(tc, test_study_warmup_measure);
    suite_add_tcase(s, tc);
    return s;
}
