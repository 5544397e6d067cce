/* test_atlas.c — the atlas's statistics (study/atlas.c; docs/design.md §6d) on hand-made rows of
 * the table of runs: Wortsman et al.'s LR sensitivity, the best loss and its lr, the largest lr
 * that trains, the warm-up verdict, and over two seeds the means, the Student-t half-width and
 * how many seeds agree. Every expected number is worked by hand here. */
#include <math.h>
#include <string.h>
#include "tests.h"
#include "study/atlas.h"

/* Student's t quantile 0.975 with 1 degree of freedom in closed form, tan(π(p − ½)): independent
 * of the GSL routine fit_mean_ci calls. */
#define T975_1 tan(3.14159265358979323846 * 0.475)

static plot_run_t RUN;   /* the rows' run: a name for runs_grid's messages */

/* A row at lr and seed: final loss f (NaN: diverged), loss at init z, trains by the one rule. */
static runs_row_t row_at(double lr, unsigned long seed, double f, double z)
{
    runs_row_t r;
    memset(&r, 0, sizeof r);
    r.run = &RUN;
    r.lr = lr;
    r.seed = seed;
    r.final_loss = f;
    r.loss_init = z;
    r.diverged = isnan(f);
    r.plateau = NAN;
    runs_outcome(&r, ATLAS_TRAINS);
    return r;
}

START_TEST(test_atlas_one_seed)
{
    // without warm-up: 3.0, 2.8, then two diverged runs (counted as loss_0 = 5.5)
    runs_row_t c[4] = {row_at(3e-2, 1, NAN, 5.5), row_at(1e-3, 1, 3.0, 5.5),
                       row_at(1e-2, 1, NAN, 5.5), row_at(3e-3, 1, 2.8, 5.5)};
    // with warm-up: 3.1, 2.9, 2.7, and 6.0 above loss_0 (counted as 5.5; does not train)
    runs_row_t w[4] = {row_at(1e-3, 1, 3.1, 5.5), row_at(3e-3, 1, 2.9, 5.5),
                       row_at(1e-2, 1, 2.7, 5.5), row_at(3e-2, 1, 6.0, 5.5)};
    const runs_row_t *pw[4] = {&w[0], &w[1], &w[2], &w[3]}, *pc[4] = {&c[0], &c[1], &c[2], &c[3]};
    atlas_row_t row;
    char why[256];
    ck_assert_int_eq(atlas_row_stats(pw, 4, pc, 4, &row, why, sizeof why), 0);
    ck_assert_int_eq(row.seeds, 1);
    // (3.0 + 2.8 + 5.5 + 5.5) / 4 − 2.8 = 1.4; (3.1 + 2.9 + 2.7 + 5.5) / 4 − 2.7 = 0.85
    ck_assert_double_eq_tol(row.cold.sens, 1.4, 1e-12);
    ck_assert_double_eq_tol(row.warm.sens, 0.85, 1e-12);
    ck_assert(isnan(row.warm.half));
    ck_assert_double_eq(row.cold.best, 2.8);
    ck_assert_double_eq(row.cold.best_lr, 3e-3);
    ck_assert_double_eq(row.warm.best, 2.7);
    ck_assert_double_eq(row.warm.best_lr, 1e-2);
    ck_assert_double_eq(row.cold.top, 3e-3);   // below 3.2: 3.0 at 1e-3, 2.8 at 3e-3
    ck_assert_double_eq(row.warm.top, 1e-2);   // 6.0 at 3e-2 does not train
    ck_assert_int_eq(row.cold.diverged, 2);
    ck_assert_int_eq(row.warm.diverged, 0);
    ck_assert_str_eq(row.needs, "yes");
    ck_assert_int_eq(row.agree, 1);
    // a half never run: no verdict
    ck_assert_int_eq(atlas_row_stats(pw, 4, pc, 0, &row, why, sizeof why), 0);
    ck_assert_str_eq(row.needs, "—");
    // neither trains anywhere
    atlas_half_t none = {.top = 0.0};
    ck_assert_str_eq(atlas_needs(&none, &none), "trains at no lr");
}
END_TEST

START_TEST(test_atlas_seeds)
{
    // without warm-up, seeds 1 and 2: lr 1e-3 3.0 and 3.3; lr 1e-2 diverged and 3.1 (loss_0 5)
    runs_row_t c[4] = {row_at(1e-3, 1, 3.0, 5.0), row_at(1e-3, 2, 3.3, 5.0),
                       row_at(1e-2, 1, NAN, 5.0), row_at(1e-2, 2, 3.1, 5.0)};
    // with warm-up, both seeds alike: lr 1e-3 3.1, lr 1e-2 3.0
    runs_row_t w[4] = {row_at(1e-3, 1, 3.1, 5.0), row_at(1e-3, 2, 3.1, 5.0),
                       row_at(1e-2, 1, 3.0, 5.0), row_at(1e-2, 2, 3.0, 5.0)};
    const runs_row_t *pw[4] = {&w[0], &w[1], &w[2], &w[3]}, *pc[4] = {&c[0], &c[1], &c[2], &c[3]};
    atlas_row_t row;
    char why[256];
    ck_assert_int_eq(atlas_row_stats(pw, 4, pc, 4, &row, why, sizeof why), 0);
    ck_assert_int_eq(row.seeds, 2);
    // seeds' own sensitivities: (3.0 + 5.0)/2 − 3.0 = 1.0 and (3.3 + 3.1)/2 − 3.1 = 0.1; their
    // mean 0.55, sd 0.9/√2, half-width t·sd/√2 = 0.45·t
    ck_assert_double_eq_tol(row.cold.sens, 0.55, 1e-12);
    ck_assert_double_eq_tol(row.cold.half, 0.45 * T975_1, 1e-9);
    ck_assert_double_eq_tol(row.warm.sens, 0.05, 1e-12);
    ck_assert_double_eq_tol(row.warm.half, 0.0, 1e-12);
    // the lrs' means: 1e-3 (3.0 + 3.3)/2 = 3.15 trains; 1e-2 diverged in a seed: NaN
    ck_assert_double_eq_tol(row.cold.best, 3.15, 1e-12);
    ck_assert_double_eq(row.cold.best_lr, 1e-3);
    ck_assert_double_eq(row.cold.top, 1e-3);
    ck_assert_double_eq(row.warm.top, 1e-2);
    ck_assert_int_eq(row.cold.diverged, 1);
    // the means say yes; seed 1 alone yes (1e-2 > 1e-3), seed 2 alone no (1e-2 both)
    ck_assert_str_eq(row.needs, "yes");
    ck_assert_int_eq(row.agree, 1);
    // two runs of one lr at one seed: refused
    runs_row_t dup[2] = {row_at(1e-3, 1, 3.0, 5.0), row_at(1e-3, 1, 3.1, 5.0)};
    const runs_row_t *pd[3] = {&dup[0], &dup[1], &c[1]};
    ck_assert_int_eq(atlas_row_stats(pd, 3, pc, 4, &row, why, sizeof why), 1);
    ck_assert_ptr_nonnull(strstr(why, "one seed"));
}
END_TEST

Suite *atlas_suite(void)
{
    Suite *s = suite_create("atlas");
    TCase *tc = tcase_create("atlas");
    tcase_add_test(tc, test_atlas_one_seed);
    tcase_add_test(tc, test_atlas_seeds);
    suite_add_tcase(s, tc);
    return s;
}
