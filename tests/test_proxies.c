/* test_proxies.c — the size study's statistics (study/proxies.c; docs/proxies.md) on a hand-made
 * grid: the failing lr (linear in log lr past the best + margin, a diverged run at its initial
 * loss, "above the grid"), the best lr's exponent over widths, differences paired by seed, and
 * the failing lr's least-squares line with its intervals at the next width. Every expected
 * number is worked by hand here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tests.h"
#include "study/proxies.h"

/* Student's t quantile 0.975 with 2 degrees of freedom in closed form,
 * (2p − 1)·sqrt(2 / (4p(1 − p))): independent of GSL. */
#define T975_2 (0.95 * sqrt(2.0 / (4.0 * 0.975 * 0.025)))

#define LOSS0 5.5

/* One context and arm, widths 32 and 64, lrs 1e-3, 1e-2, 1e-1, two seeds; y[w][k][l] the final
 * loss (NaN: diverged), every run's initial loss LOSS0. */
static void study_make(size_study_t *st, double y[2][2][3])
{
    memset(st, 0, sizeof *st);
    st->nc = st->na = 1;
    st->nw = 2, st->nl = 3, st->nk = 2;
    st->width[0] = 32, st->width[1] = 64;
    st->lr[0] = 1e-3, st->lr[1] = 1e-2, st->lr[2] = 1e-1;
    st->seed[0] = 1, st->seed[1] = 2;
    st->final = malloc(12 * sizeof *st->final);
    st->loss0 = malloc(12 * sizeof *st->loss0);
    st->logit = malloc(12 * sizeof *st->logit);
    st->diverged = calloc(12, 1);
    st->ran = calloc(12, 1);
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 2; k++)
            for (int l = 0; l < 3; l++) {
                const size_t x = SIZE_IX(st, 0, 0, w, l, k);
                st->final[x] = y[w][k][l];
                st->loss0[x] = LOSS0;
                st->logit[x] = NAN;
                st->diverged[x] = (char)isnan(y[w][k][l]);
                st->ran[x] = 1;
            }
}

static void study_drop(size_study_t *st)
{
    free(st->final); free(st->loss0); free(st->logit); free(st->diverged); free(st->ran);
}

START_TEST(test_proxies_fail)
{
    // best 1.8 at 1e-2, threshold 2.0: the seeds cross it at log10 lr = −2 + 0.2/(Y − 1.8)
    double y[2][2][3] = {{{2.0, 1.8, 2.2}, {2.0, 1.8, 2.6}},
                         {{2.0, 1.8, 3.0}, {2.0, 1.8, 2.4}}};
    size_study_t st;
    study_make(&st, y);
    int above;
    ck_assert_double_eq_tol(proxies_fail_lr(&st, 0, 0, 0, 0, 0.2, &above), pow(10.0, -1.5), 1e-12);
    ck_assert_int_eq(above, 0);
    ck_assert_double_eq_tol(proxies_fail_lr(&st, 0, 0, 1, 0, 0.2, &above), pow(10.0, -2.0 + 1.0 / 6), 1e-12);
    // the line: slope (mean64 − mean32)/log10 2 = (−1.75 + 1.625)/log10 2; at d = 128 the value
    // 2·mean64 − mean32 = −1.875; with the residuals' s² = 0.0451389/2, Sxx = (log10 2)²,
    // (x0 − x̄)²/Sxx = 2.25: line ± t·sqrt(s²(1/4 + 2.25)), one run ± t·sqrt(s²(1 + 1/4 + 2.25))
    proxies_fit_t f;
    ck_assert_int_eq(proxies_fail_fit(&st, 0, 0, 0.2, &f), 1);
    const double s2 = (2 * 0.125 * 0.125 + 2 * (1.0 / 12) * (1.0 / 12)) / 2, l2 = log10(2.0);
    ck_assert_int_eq(f.n, 4);
    ck_assert_int_eq(f.above, 0);
    ck_assert_double_eq_tol(f.k, -0.125 / l2, 1e-12);
    ck_assert_double_eq_tol(f.k_half, T975_2 * sqrt(s2) / l2, 1e-9);
    ck_assert_double_eq(f.d_next, 128.0);
    ck_assert_double_eq_tol(f.y, -1.875, 1e-12);
    ck_assert_double_eq_tol(f.h_mean, T975_2 * sqrt(2.5 * s2), 1e-9);
    ck_assert_double_eq_tol(f.h_pred, T975_2 * sqrt(3.5 * s2), 1e-9);
    // a diverged run counts as its initial loss: Y = 5.5; a seed that never passes 2.0: above
    st.final[SIZE_IX(&st, 0, 0, 0, 2, 0)] = NAN;
    st.final[SIZE_IX(&st, 0, 0, 1, 2, 1)] = 1.95;
    ck_assert_double_eq_tol(proxies_fail_lr(&st, 0, 0, 0, 0, 0.2, &above), pow(10.0, -2.0 + 0.2 / 3.7), 1e-12);
    ck_assert_double_eq_tol(proxies_fail_lr(&st, 0, 0, 1, 1, 0.2, &above), 0.1, 1e-15);
    ck_assert_int_eq(above, 1);
    ck_assert_int_eq(proxies_fail_fit(&st, 0, 0, 0.2, &f), 1);
    ck_assert_int_eq(f.n, 3);
    ck_assert_int_eq(f.above, 1);
    // two points fail: too few for a line
    st.final[SIZE_IX(&st, 0, 0, 1, 2, 0)] = 1.9;
    ck_assert_int_eq(proxies_fail_fit(&st, 0, 0, 0.2, &f), 0);
    study_drop(&st);
}
END_TEST

START_TEST(test_proxies_exponent_paired)
{
    // seed 1: best at the grid's edges, 1e-3 at d = 32 and 1e-1 at d = 64: k = 2/log10 2;
    // seed 2: 1e-3 at both widths: k = 0
    double y[2][2][3] = {{{1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}},
                         {{3.0, 2.0, 1.0}, {1.0, 2.0, 3.0}}};
    size_study_t st;
    study_make(&st, y);
    ck_assert_double_eq_tol(proxies_best_lr_exponent(&st, 0, 0, 0), 2.0 / log10(2.0), 1e-12);
    ck_assert_double_eq_tol(proxies_best_lr_exponent(&st, 0, 0, 1), 0.0, 1e-12);
    // a seed missing a width has no exponent
    for (int l = 0; l < 3; l++) st.ran[SIZE_IX(&st, 0, 0, 1, l, 1)] = 0;
    ck_assert(isnan(proxies_best_lr_exponent(&st, 0, 0, 1)));
    study_drop(&st);
    // paired by seed: differences 1 and 2: mean 1.5, half-width t(0.975, 1)·(1/√2)/√2;
    // a seed NaN on either side is left out
    const double a[3] = {1.0, 3.0, NAN}, b[3] = {0.0, 1.0, 2.0};
    double m, h;
    proxies_paired(a, b, 3, &m, &h);
    ck_assert_double_eq_tol(m, 1.5, 1e-12);
    ck_assert_double_eq_tol(h, tan(3.14159265358979323846 * 0.475) * 0.5, 1e-9);
}
END_TEST

Suite *proxies_suite(void)
{
    Suite *s = suite_create("proxies");
    TCase *tc = tcase_create("proxies");
    tcase_add_test(tc, test_proxies_fail);
    tcase_add_test(tc, test_proxies_exponent_paired);
    suite_add_tcase(s, tc);
    return s;
}
