/* test_study.c — what the studies share (study/study.c): the Clopper–Pearson interval of a
 * binomial proportion against its closed forms (Beta(1, n) and Beta(n, 1) have the CDFs
 * 1 − (1 − x)ⁿ and xⁿ, so the ends at k = 0, 1, n − 1, n are powers) and against R's
 * binom.test(5, 10) (0.1870860, 0.8129140). */
#include <math.h>
#include "tests.h"
#include "study/study.h"

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

Suite *study_suite(void)
{
    Suite *s = suite_create("study");
    TCase *tc = tcase_create("study");
    tcase_add_test(tc, test_study_clopper_pearson);
    suite_add_tcase(s, tc);
    return s;
}
