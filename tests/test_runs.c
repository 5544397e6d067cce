/* test_runs.c — the table of runs (report/runs.c; docs/design.md §6d): the outcome columns of
 * made-up runs and the grid's cells, means and Student-t half-widths. Every expected number is
 * worked by hand here. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tests.h"
#include "report/runs.h"

#define NRUN 5
/* Student's t quantile 0.975 with 2 degrees of freedom in closed form, (2p − 1)·√(2 / (4p(1 − p))):
 * independent of the GSL routine the grid calls. */
#define T975_2 (0.95 * sqrt(2.0 / (4.0 * 0.975 * 0.025)))
static double loss[NRUN][20];

/* Runs 0-2: one config (lr 5e-4) at seeds 1-3, 20 updates from 4.0 to a last tenth of 3.0, 3.3,
 * 3.6; run 3: lr 1e-3 seed 1, diverged at 7; run 4: lr 1e-3 seed 2, a text run on a 3.5-nat
 * plateau ending at 3.5. */
static void make_set(plot_set_t *set, plot_run_t *runs)
{
    static const double last[NRUN] = {3.0, 3.3, 3.6, 9.0, 3.5};
    memset(runs, 0, NRUN * sizeof *runs);
    for (int i = 0; i < NRUN; i++) {
        config_defaults(&runs[i].cfg);
        runs[i].cfg.init.seed = i < 3 ? (unsigned long)i + 1 : (unsigned long)i - 2;
        if (i >= 3) runs[i].cfg.train.lr = 1e-3;
        runs[i].cfg.train.steps = 20;
        snprintf(runs[i].name, sizeof runs[i].name, "r%d", i);
        snprintf(runs[i].status, sizeof runs[i].status, "done");
        for (int t = 0; t < 20; t++) loss[i][t] = t < 18 ? 4.0 - 0.01 * t : last[i];
        loss[i][18] = last[i] - 0.1;   // the last tenth: updates 18, 19, mean last − 0.05
        runs[i].nsteps = 20;
        runs[i].loss = loss[i];
        runs[i].diverged_at = NAN;
        runs[i].unigram = NAN;
    }
    runs[3].diverged_at = 7;
    runs[4].unigram = 3.5;
    set->runs = runs;
    set->n = NRUN;
}

START_TEST(test_runs_outcome)
{
    plot_set_t set;
    plot_run_t runs[NRUN];
    make_set(&set, runs);
    runs_table_t t;
    ck_assert_int_eq(runs_build(&t, &set), 0);
    ck_assert_int_eq(t.n, NRUN);
    // final loss: the mean of the last tenth (2 of 20 updates)
    ck_assert_double_eq_tol(t.rows[0].final_loss, 2.95, 1e-12);
    ck_assert_double_eq_tol(t.rows[4].final_loss, 3.45, 1e-12);
    ck_assert(isnan(t.rows[3].final_loss));   // diverged
    ck_assert_double_eq(t.rows[0].loss_init, 4.0);
    ck_assert(isnan(t.rows[0].plateau));
    ck_assert_double_eq(t.rows[4].plateau, 3.5);
    // the default rule: below the plateau (else loss_init 4.0) by 0.1 nats
    ck_assert_int_eq(t.rows[2].trains, 1);   // 3.55 < 3.9
    ck_assert_int_eq(t.rows[3].diverged, 1);
    ck_assert_int_eq(t.rows[3].trains + t.rows[3].stuck, 0);
    ck_assert_int_eq(t.rows[4].trains, 0);   // 3.45 is not below 3.5 − 0.1
    ck_assert_int_eq(t.rows[4].stuck, 1);
    // an absolute threshold (the warm-up study's 3.2 nats)
    runs_outcome(&t.rows[1], 3.2);           // 3.25
    ck_assert_int_eq(t.rows[1].trains, 0);
    ck_assert_int_eq(t.rows[1].stuck, 1);
    runs_outcome(&t.rows[0], 3.2);           // 2.95
    ck_assert_int_eq(t.rows[0].trains, 1);
    // identity from the config, never the name
    ck_assert_str_eq(t.rows[0].scheme, "post");
    ck_assert_double_eq(t.rows[3].lr, 1e-3);
    ck_assert_uint_eq(t.rows[4].seed, 2);
    ck_assert_str_eq(t.rows[0].block, "2017");
    char b[64];
    ck_assert_int_eq(runs_text(&t.rows[3], "final_loss", b, sizeof b), 0);
    ck_assert_str_eq(b, "nan");
    ck_assert_int_eq(runs_text(&t.rows[3], "lr", b, sizeof b), 0);
    ck_assert_str_eq(b, "0.001");
    ck_assert_int_eq(runs_text(&t.rows[3], "nothing", b, sizeof b), -1);
    runs_free(&t);
}
END_TEST

START_TEST(test_runs_grid)
{
    plot_set_t set;
    plot_run_t runs[NRUN];
    make_set(&set, runs);
    runs_table_t t;
    ck_assert_int_eq(runs_build(&t, &set), 0);
    runs_grid_t g;
    char why[512] = "";
    const char *const axes[] = {"scheme", "L", "lr"};
    ck_assert_int_eq(runs_grid(&t, axes, 3, "final_loss", &g, why, sizeof why), 0);
    ck_assert_int_eq(g.n, 2);
    ck_assert_int_eq(g.cells[0].n, 3);
    ck_assert_int_eq(g.cells[0].finite, 3);
    // 2.95, 3.25, 3.55: mean 3.25, sd 0.3, half = t(0.975; 2)·0.3/√3
    ck_assert_double_eq_tol(g.cells[0].mean, 3.25, 1e-12);
    ck_assert_double_eq_tol(g.cells[0].half, T975_2 * 0.3 / sqrt(3.0), 1e-9);
    ck_assert_int_eq(g.cells[1].n, 2);
    ck_assert_int_eq(g.cells[1].finite, 1);   // the diverged seed has no final loss
    ck_assert_double_eq_tol(g.cells[1].mean, 3.45, 1e-12);
    ck_assert(isnan(g.cells[1].half));
    runs_grid_free(&g);
    // two rows at one seed in a cell: a refusal that names both
    const char *const lr_only[] = {"lr"};
    runs[4].cfg.init.seed = 1;
    runs_free(&t);
    ck_assert_int_eq(runs_build(&t, &set), 0);
    ck_assert_int_eq(runs_grid(&t, lr_only, 1, "final_loss", &g, why, sizeof why), 1);
    ck_assert_ptr_nonnull(strstr(why, "one seed"));
    runs_grid_free(&g);
    const char *const bad[] = {"colour"};
    ck_assert_int_eq(runs_grid(&t, bad, 1, "final_loss", &g, why, sizeof why), 1);
    ck_assert_ptr_nonnull(strstr(why, "colour"));
    runs_grid_free(&g);
    runs_free(&t);
}
END_TEST

/* runs_remedy: each remedy key by itself, two at once in the documented order, and none. */
START_TEST(test_runs_remedy)
{
    config_t c;
    char buf[96];
    config_defaults(&c);
    runs_remedy(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "none");
    c.train.lr_control = LR_CONTROL_CDAT;
    c.train.cdat_sigma = 2;
    runs_remedy(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "cdat 2");
    c.train.lr_control = LR_CONTROL_CURVATURE;
    c.train.curvature_cap = 0.5;
    c.train.spectral_bound = 0.05;
    runs_remedy(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "curvature_cap 0.5+spectral_bound 0.05");
    config_defaults(&c);
    c.train.warmup_start = WARMUP_START_CATAPULT;
    c.train.update_ratio_cap = 0.01;
    c.train.schedule = SCHED_AUTOWU;
    runs_remedy(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "catapult+ratio_cap 0.01+autowu");
    config_defaults(&c);
    c.train.qk_clip = 100;                  // QK-Clip (Kimi K2), the optimizers study's arm
    runs_remedy(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "qk_clip 100");
    c.train.schedule = SCHED_SUBOPTIMALITY;  // Riabinin et al.'s schedule: f_star / lr_div
    c.train.f_star = 3.2;
    c.train.lr_div = 5;
    runs_remedy(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "suboptimality 3.2/5+qk_clip 100");
}
END_TEST

Suite *runs_suite(void)
{
    Suite *s = suite_create("runs");
    TCase *tc = tcase_create("runs");
    tcase_add_test(tc, test_runs_outcome);
    tcase_add_test(tc, test_runs_grid);
    tcase_add_test(tc, test_runs_remedy);
    suite_add_tcase(s, tc);
    return s;
}
