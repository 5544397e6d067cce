/* test_remedies_study.c — the remedies study's statistics (study/remedies.c; docs/design.md §6k,
 * "The remedies study"): the Clopper–Pearson interval on values in closed form or tabulated,
 * and the boundary's η_max of one method's runs alone by the atlas's rule (atlas_row_stats
 * without a second half), worked by hand. */
#include <math.h>
#include <string.h>
#include "tests.h"
#include "study/atlas.h"
#include "study/remedies.h"
#include "study/study.h"

START_TEST(test_clopper_pearson)
{
    double lo, hi;
    // 0 of 10: [0, 1 − 0.025^(1/10)] = [0, 0.30850]; 10 of 10 its mirror
    study_clopper_pearson(0, 10, 0.05, &lo, &hi);
    ck_assert_double_eq(lo, 0.0);
    ck_assert_double_eq_tol(hi, 1.0 - pow(0.025, 0.1), 1e-10);
    ck_assert_double_eq_tol(hi, 0.3085, 5e-5);
    study_clopper_pearson(10, 10, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, pow(0.025, 0.1), 1e-10);
    ck_assert_double_eq(hi, 1.0);
    // 5 of 10: the published table's [0.1871, 0.8129], symmetric
    study_clopper_pearson(5, 10, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, 0.1871, 5e-5);
    ck_assert_double_eq_tol(hi, 0.8129, 5e-5);
    ck_assert_double_eq_tol(lo + hi, 1.0, 1e-10);
    // 1 of 2: Beta(1, 2) and Beta(2, 1) quantiles, 1 − √0.975 and √0.975
    study_clopper_pearson(1, 2, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, 1.0 - sqrt(0.975), 1e-10);
    ck_assert_double_eq_tol(hi, sqrt(0.975), 1e-10);
    // 1 of 1: Beta(1, 1) is uniform, lower end 0.025
    study_clopper_pearson(1, 1, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, 0.025, 1e-12);
    ck_assert_double_eq(hi, 1.0);
    study_clopper_pearson(0, 0, 0.05, &lo, &hi);
    ck_assert(isnan(lo) && isnan(hi));
}
END_TEST

static plot_run_t RUN;

/* A row at lr and seed with final loss f (NaN: diverged), trains by the one rule. */
static runs_row_t row_at(double lr, unsigned long seed, double f)
{
    runs_row_t r;
    memset(&r, 0, sizeof r);
    r.run = &RUN;
    r.lr = lr;
    r.seed = seed;
    r.final_loss = f;
    r.loss_init = 5.0;
    r.diverged = isnan(f);
    r.plateau = NAN;
    runs_outcome(&r, ATLAS_TRAINS);
    return r;
}

START_TEST(test_boundary_one_half)
{
    // seed 1: 3.0, 3.1, 3.5; seed 2: 3.0, 3.4, diverged. Means: 3.0, 3.25 (fails), NaN.
    runs_row_t r[6] = {row_at(1e-3, 1, 3.0), row_at(1e-2, 1, 3.1), row_at(3e-2, 1, 3.5),
                       row_at(1e-3, 2, 3.0), row_at(1e-2, 2, 3.4), row_at(3e-2, 2, NAN)};
    const runs_row_t *p[6] = {&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]};
    atlas_row_t row;
    char why[256];
    memset(&row, 0, sizeof row);
    ck_assert_int_eq(atlas_row_stats(p, 6, NULL, 0, &row, why, sizeof why), 0);
    ck_assert_int_eq(row.seeds, 2);
    ck_assert_double_eq(row.warm.top, 1e-3);   // η_max of the means; seed 1 alone says 1e-2
    ck_assert_double_eq(row.warm.best, 3.0);
    ck_assert_double_eq(row.warm.best_lr, 1e-3);
    ck_assert_int_eq(row.warm.diverged, 1);
    atlas_half_t h;
    atlas_half_one(p, 3, &h);
    ck_assert_double_eq(h.top, 1e-2);
}
END_TEST

Suite *remedies_study_suite(void)
{
    Suite *s = suite_create("remedies_study");
    TCase *tc = tcase_create("remedies_study");
    tcase_add_test(tc, test_clopper_pearson);
    tcase_add_test(tc, test_boundary_one_half);
    suite_add_tcase(s, tc);
    return s;
}
