/* test_report.c — the seed bands of training figures (report/plot_band.c): which runs form one
 * curve, the mean and Student-t band written for gnuplot, and the update at which a curve
 * reaches a loss (docs/design.md §6e). Every expected number is worked by hand here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests.h"
#include "study/estimators_table.h"
#include "report/plot_band.h"

#define NRUN 5
/* Student's t quantile 0.975 with 2 degrees of freedom in closed form, (2p − 1)·√(2 / (4p(1 − p))):
 * independent of the GSL routine the helper calls. */
#define T975_2 (0.95 * sqrt(2.0 / (4.0 * 0.975 * 0.025)))
static double ex[NRUN][3], ey[NRUN][3];

/* Runs 0-2: one config at seeds 1-3; run 3: lr differs (seed 1); run 4: that lr at seed 2.
 * Validation losses at updates 0, 100, 200. */
static void make_set(plot_set_t *set, plot_run_t *runs)
{
    static const double y[NRUN][3] = {
        {3.0, 1.0, 0.5}, {3.0, 2.0, 1.0}, {3.0, 3.0, 1.5},   // at 100: 1, 2, 3
        {4.0, 2.5, 1.5}, {4.0, 3.5, NAN},                    // seed 2 of lr 1e-3 diverged
    };
    memset(runs, 0, NRUN * sizeof *runs);
    for (int i = 0; i < NRUN; i++) {
        config_defaults(&runs[i].cfg);
        runs[i].cfg.init.seed = i < 3 ? (unsigned long)i + 1 : (unsigned long)i - 2;
        if (i >= 3) runs[i].cfg.train.lr = 1e-3;
        snprintf(runs[i].cfg.output.file, sizeof runs[i].cfg.output.file, "r%d.h5", i);
        for (int k = 0; k < 3; k++) { ex[i][k] = 100.0 * k; ey[i][k] = y[i][k]; }
        runs[i].nevals = 3;
        runs[i].eval_step = ex[i];
        runs[i].val_loss = ey[i];
        runs[i].diverged_at = NAN;
        runs[i].unigram = NAN;
    }
    set->runs = runs;
    set->n = NRUN;
}

START_TEST(test_band_groups)
{
    plot_set_t set;
    plot_run_t runs[NRUN];
    make_set(&set, runs);
    const int m[NRUN] = {0, 3, 1, 4, 2};   // interleaved: groups keep first appearance
    plot_group_t g[4];
    ck_assert_int_eq(plot_band_groups(&set, m, NRUN, g, 4), 2);
    ck_assert_int_eq(g[0].n, 3);
    ck_assert_int_eq(g[0].run[0], 0);
    ck_assert_int_eq(g[0].run[1], 1);
    ck_assert_int_eq(g[0].run[2], 2);
    ck_assert_int_eq(g[1].n, 2);
    ck_assert_int_eq(g[1].run[1], 4);
    ck_assert_int_eq(plot_band_groups(&set, m, NRUN, g, 1), -1);   // two configurations, room for one
    runs[1].cfg.model.layers = 7;   // not a seed of run 0 any more
    ck_assert_int_eq(plot_band_groups(&set, m, NRUN, g, 4), 3);
}
END_TEST

START_TEST(test_band_block)
{
    plot_set_t set;
    plot_run_t runs[NRUN];
    make_set(&set, runs);
    const int m[NRUN] = {0, 1, 2, 3, 4};
    plot_group_t g[4];
    ck_assert_int_eq(plot_band_groups(&set, m, NRUN, g, 4), 2);
    sbuf_t s = {0};
    ck_assert_uint_eq(plot_band_block(&s, "v0", &set, &g[0], plot_series_val_loss, 0.5, NAN, NULL, NULL), 3);
    // at update 100 the seeds give 1, 2, 3: mean 2, sd 1, half = t(0.975; 2)/√3
    const double half = T975_2 / sqrt(3.0);
    double x, mean, lo, hi;
    unsigned count;
    const char *row = strstr(s.data, "\n50 ");
    ck_assert_ptr_nonnull(row);
    ck_assert_int_eq(sscanf(row, "%lf %lf %lf %lf %u", &x, &mean, &lo, &hi, &count), 5);
    ck_assert_double_eq(x, 50.0);   // xscale: updates to epochs
    ck_assert_double_eq_tol(mean, 2.0, 1e-12);
    ck_assert_double_eq_tol(lo, 2.0 - half, 1e-8);
    ck_assert_double_eq_tol(hi, 2.0 + half, 1e-8);
    ck_assert_uint_eq(count, 3);
    sbuf_free(&s);
    // the second group's diverged seed (NaN at 200) leaves one seed there: no band
    ck_assert_uint_eq(plot_band_block(&s, "v1", &set, &g[1], plot_series_val_loss, 1.0, NAN, NULL, NULL), 3);
    row = strstr(s.data, "\n200 ");
    ck_assert_ptr_nonnull(row);
    ck_assert_int_eq(sscanf(row, "%lf %lf %lf %lf %u", &x, &mean, &lo, &hi, &count), 5);
    ck_assert_double_eq_tol(mean, 1.5, 1e-12);
    ck_assert_double_eq(lo, 1.5);
    ck_assert_uint_eq(count, 1);
    sbuf_free(&s);
}
END_TEST

START_TEST(test_band_reach)
{
    const double x[4] = {0, 100, 200, 300}, y[4] = {3.0, 2.5, 1.5, 1.0};
    ck_assert_double_eq_tol(plot_band_reach(x, y, 4, 2.0, 0), 150.0, 1e-12);   // 2.5 → 1.5
    ck_assert_double_eq_tol(plot_band_reach(x, y, 4, 2.5, 0), 100.0, 1e-12);   // met exactly
    ck_assert_double_eq(plot_band_reach(x, y, 4, 5.0, 0), 0.0);              // there at once
    ck_assert(isnan(plot_band_reach(x, y, 4, 0.5, 0)));                         // never
    const double b[4] = {0.0, 4.0, 12.0, 20.0};   // BLEU, reached from below
    ck_assert_double_eq_tol(plot_band_reach(x, b, 4, 10.0, 1), 175.0, 1e-12);

    plot_set_t set;
    plot_run_t runs[NRUN];
    make_set(&set, runs);
    const int m[NRUN] = {0, 1, 2, 3, 4};
    plot_group_t g[4];
    ck_assert_int_eq(plot_band_groups(&set, m, NRUN, g, 4), 2);
    // every run's minimum: 0.5 1.0 1.5 1.5 3.5 → the loss all of them reach is 3.5
    ck_assert_double_eq_tol(plot_band_common_target(&set, g, 2, plot_series_val_loss, 0), 3.5, 1e-15);
    // loss 2.0 in group 0: seed 1 at 50 (3 → 1), seed 2 at 100 (met), seed 3 at 100 + 100·1/1.5
    const double at[3] = {50.0, 100.0, 100.0 + 100.0 / 1.5};
    const double mu = (at[0] + at[1] + at[2]) / 3.0;
    const double sd = sqrt(((at[0] - mu) * (at[0] - mu) + (at[1] - mu) * (at[1] - mu) +
                            (at[2] - mu) * (at[2] - mu)) / 2.0);
    double mean, half;
    int reached;
    plot_band_reach_ci(&set, &g[0], plot_series_val_loss, 2.0, 0, &mean, &half, &reached);
    ck_assert_int_eq(reached, 3);
    ck_assert_double_eq_tol(mean, mu, 1e-9);
    ck_assert_double_eq_tol(half, T975_2 * sd / sqrt(3.0), 1e-8);
    // group 1 never reaches 1.6 with seed 2 (diverged): one seed, no half-width
    plot_band_reach_ci(&set, &g[1], plot_series_val_loss, 1.6, 0, &mean, &half, &reached);
    ck_assert_int_eq(reached, 1);
    ck_assert_double_eq_tol(mean, 100.0 + 100.0 * 0.9 / 1.0, 1e-9);
    ck_assert(isnan(half));
}
END_TEST

/* Fig. 5's figure draws mlm runs only, with the loss every run reaches (3.5: the diverged
 * seed's minimum) and each configuration's update there: group 1's seeds reach 3.5 at
 * 100·(4 − 3.5)/(4 − 2.5) = 33.3 and at 100. */
int plot_fig_mlm(const plot_set_t *set, sbuf_t *s, char *name, size_t len);   // report/
int plot_fig_bleu(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
START_TEST(test_band_mlm_figure)
{
    plot_set_t set;
    plot_run_t runs[NRUN];
    make_set(&set, runs);
    sbuf_t s = {0};
    char name[64];
    ck_assert_int_eq(plot_fig_mlm(&set, &s, name, sizeof name), 0);   // not mlm runs
    sbuf_free(&s);
    for (int i = 0; i < NRUN; i++) runs[i].cfg.data.task = TASK_MLM;
    ck_assert_int_eq(plot_fig_mlm(&set, &s, name, sizeof name), 1);
    ck_assert_str_eq(name, "mlm_val_loss");
    char want[64];
    const double mu = (100.0 / 3.0 + 100.0) / 2.0, sd = (100.0 - 100.0 / 3.0) / sqrt(2.0);
    const double half = 12.706204736174705 * sd / sqrt(2.0);   // t(0.975; 1) = tan(0.475π)
    ck_assert_double_eq_tol(tan(0.475 * 4.0 * atan(1.0)), 12.706204736174705, 1e-9);
    snprintf(want, sizeof want, ": update %.0f ± %.0f", mu, half);
    ck_assert_msg(strstr(s.data, want), "'%s' not in the script", want);
    ck_assert_ptr_nonnull(strstr(s.data, "first 3.5 "));   // the dotted line
    sbuf_free(&s);
}
END_TEST

/* BLEU (Fig. 4): two configurations, BLEU at updates 50, 100, 150 with 50 updates an epoch.
 * Group 0 (seeds 1-3): {4, 10, 16}, {2, 8, 14} and a seed that diverged at update 30, before
 * its first BLEU (train.bleu_every set, no rows); group 1 (lr 1e-3, seeds 1-2): {10, 20, 30},
 * {6, 12, 18}. The best BLEU every run reaches: min(16, 14, 30, 18) = 14. */
#define NBLEU 5
static double bx[NBLEU][3], by[NBLEU][3];
static void make_bleu_set(plot_set_t *set, plot_run_t *runs)
{
    static const double y[NBLEU][3] = {
        {4, 10, 16}, {2, 8, 14}, {NAN, NAN, NAN}, {10, 20, 30}, {6, 12, 18},
    };
    memset(runs, 0, NBLEU * sizeof *runs);
    for (int i = 0; i < NBLEU; i++) {
        config_defaults(&runs[i].cfg);
        runs[i].cfg.init.seed = i < 3 ? (unsigned long)i + 1 : (unsigned long)i - 2;
        if (i >= 3) runs[i].cfg.train.lr = 1e-3;
        runs[i].cfg.train.bleu_every = 50;
        snprintf(runs[i].cfg.output.file, sizeof runs[i].cfg.output.file, "b%d.h5", i);
        for (int k = 0; k < 3; k++) { bx[i][k] = 50.0 * (k + 1); by[i][k] = y[i][k]; }
        runs[i].nbleu = i == 2 ? 0 : 3;
        runs[i].bleu_step = bx[i];
        runs[i].bleu = by[i];
        runs[i].epoch_batches = 50.0;
        runs[i].diverged_at = i == 2 ? 30.0 : NAN;
        runs[i].unigram = NAN;
    }
    set->runs = runs;
    set->n = NBLEU;
}

/* mean and 95 % half-width of two values (t(0.975; 1) = tan(0.475π)) */
static void ci2(double a, double b, double *mean, double *half)
{
    *mean = (a + b) / 2.0;
    *half = tan(0.475 * 4.0 * atan(1.0)) * fabs(a - b) / sqrt(2.0) / sqrt(2.0);
}

START_TEST(test_band_reach_up)
{
    plot_set_t set;
    plot_run_t runs[NBLEU];
    make_bleu_set(&set, runs);
    const int m[NBLEU] = {0, 1, 2, 3, 4};
    plot_group_t g[4];
    ck_assert_int_eq(plot_band_groups(&set, m, NBLEU, g, 4), 2);
    ck_assert_int_eq(g[0].n, 3);   // the seed without BLEU rows is one of them
    ck_assert_double_eq(plot_band_common_target(&set, g, 2, plot_series_bleu, 1), 14.0);
    by[1][0] = 0.0, by[1][1] = 1e-77, by[1][2] = 0.009;   // never scored: not the target
    ck_assert_double_eq(plot_band_common_target(&set, g, 2, plot_series_bleu, 1), 16.0);
    by[1][0] = 2, by[1][1] = 8, by[1][2] = 14;
    double mean, half, mu, h;
    int reached;
    // BLEU 14: seed 1 at 100 + 50·4/6, seed 2 at 150 (met there), seed 3 never
    plot_band_reach_ci(&set, &g[0], plot_series_bleu, 14.0, 1, &mean, &half, &reached);
    ck_assert_int_eq(reached, 2);
    ci2(100.0 + 50.0 * 4.0 / 6.0, 150.0, &mu, &h);
    ck_assert_double_eq_tol(mean, mu, 1e-9);
    ck_assert_double_eq_tol(half, h, 1e-8);
    // BLEU 19 in group 1: seed 1 at 50 + 50·9/10, seed 2 (best 18) never: no half-width
    plot_band_reach_ci(&set, &g[1], plot_series_bleu, 19.0, 1, &mean, &half, &reached);
    ck_assert_int_eq(reached, 1);
    ck_assert_double_eq_tol(mean, 95.0, 1e-12);
    ck_assert(isnan(half));
    plot_band_reach_ci(&set, &g[0], plot_series_bleu, 17.0, 1, &mean, &half, &reached);
    ck_assert_int_eq(reached, 0);   // no seed of group 0 gets past 16
    ck_assert(isnan(mean));
    char txt[64];
    plot_band_reach_text(95.0, NAN, 1, 1.0 / 50.0, 2, txt, sizeof txt);
    ck_assert_str_eq(txt, "1.90");
    plot_band_reach_text(NAN, NAN, 0, 1.0, 0, txt, sizeof txt);
    ck_assert_str_eq(txt, "never");
}
END_TEST

/* The table of `stability info --train` for BLEU: the epoch each configuration reaches 14, mean
 * ± 95 % half-width, with how many seeds reach it; in updates when an epoch's length is unknown. */
START_TEST(test_band_bleu_table)
{
    plot_set_t set;
    plot_run_t runs[NBLEU];
    make_bleu_set(&set, runs);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ck_assert_int_eq(plot_band_table(out, &set, &PLOT_CURVE_BLEU), 2);
    fclose(out);
    ck_assert_msg(strstr(text, "| last BLEU | best BLEU | epoch reaching 14 | seeds reaching |"),
                  "%s", text);
    double mu, h, l, lh;
    char want[160];
    ci2(16.0, 14.0, &l, &lh);   // last BLEU of group 0 (the diverged seed has none)
    ci2((100.0 + 50.0 * 4.0 / 6.0) / 50.0, 3.0, &mu, &h);
    snprintf(want, sizeof want, "| 3 | 1 | %.2f ± %.2f | %.2f ± %.2f | %.2f ± %.2f | 2 of 3 |", l,
             lh, l, lh, mu, h);
    ck_assert_msg(strstr(text, want), "'%s' not in\n%s", want, text);
    ci2(30.0, 18.0, &l, &lh);
    ci2((50.0 + 50.0 * 4.0 / 10.0) / 50.0, (100.0 + 50.0 * 2.0 / 6.0) / 50.0, &mu, &h);
    snprintf(want, sizeof want, "| 2 | 0 | %.2f ± %.2f | %.2f ± %.2f | %.2f ± %.2f | 2 of 2 |", l,
             lh, l, lh, mu, h);
    ck_assert_msg(strstr(text, want), "'%s' not in\n%s", want, text);
    free(text);
    runs[4].epoch_batches = NAN;   // one run without epochs: every reach in updates
    out = open_memstream(&text, &size);
    ck_assert_int_eq(plot_band_table(out, &set, &PLOT_CURVE_BLEU), 2);
    fclose(out);
    ci2(100.0 + 50.0 * 4.0 / 6.0, 150.0, &mu, &h);
    snprintf(want, sizeof want, "| update reaching 14 |");
    ck_assert_msg(strstr(text, want), "%s", text);
    snprintf(want, sizeof want, "| %.0f ± %.0f | 2 of 3 |", mu, h);
    ck_assert_msg(strstr(text, want), "'%s' not in\n%s", want, text);
    free(text);
}
END_TEST

/* The BLEU figure: a thin line per seed (3 seeds: PLOT_SEED_LINES), the dotted BLEU every run
 * reaches and each configuration's epoch there in its key. */
START_TEST(test_band_bleu_figure)
{
    plot_set_t set;
    plot_run_t runs[NBLEU];
    make_bleu_set(&set, runs);
    sbuf_t s = {0};
    char name[64], want[160];
    ck_assert_int_eq(plot_fig_bleu(&set, &s, name, sizeof name), 1);
    ck_assert_str_eq(name, "bleu");
    double mu, h;
    ci2((100.0 + 50.0 * 4.0 / 6.0) / 50.0, 3.0, &mu, &h);
    snprintf(want, sizeof want, ": epoch %.2f ± %.2f (2 of 3 seeds)", mu, h);
    ck_assert_msg(strstr(s.data, want), "'%s' not in the script\n%s", want, s.data);
    ck_assert_ptr_nonnull(strstr(s.data, "(3 seeds, 1 diverged)"));
    ck_assert_ptr_nonnull(strstr(s.data, "first 14 "));   // the dotted line
    ck_assert_ptr_null(strstr(s.data, "filledcurves"));   // no band of 3 seeds: their lines
    ck_assert_ptr_nonnull(strstr(s.data, "using 1:8 with lines lw 0.8"));   // the third seed's
    // group 1's mean at epoch 2 (update 100): (20 + 12) / 2
    ck_assert_ptr_nonnull(strstr(s.data, "\n2 16 "));
    sbuf_free(&s);
    for (int i = 0; i < NBLEU; i++) runs[i].nbleu = 0;   // nothing logged: no figure
    ck_assert_int_eq(plot_fig_bleu(&set, &s, name, sizeof name), 0);
    sbuf_free(&s);
}
END_TEST

/* The estimators' table's numerics by hand (study/estimators_table.h): relative errors of the pairs
 * with both values finite and a non-zero reference — |1.1 − 1|/1 = 0.1, |2 − 2.5|/2.5 = 0.2,
 * |−3 − 2|/2 = 2.5 (NaN, ref 0 left out): median 0.2, max 2.5, 3 pairs; none: NaN, 0. The SLQ
 * top node skips NaN nodes and zero weights (9 has weight 0: 4 is the largest); Ĥ's scale
 * (1 − 0.9)/(1 + 0.9) = 1/19 for Adam, 1/(1 + 0.5) for sgd with momentum 0.5. */
START_TEST(test_est_numerics)
{
    const double est[5] = {1.1, 2.0, NAN, 5.0, -3.0}, ref[5] = {1.0, 2.5, 3.0, 0.0, 2.0};
    double scratch[5];
    est_err_t e;
    est_relerr(est, ref, 5, scratch, &e);
    ck_assert_uint_eq(e.count, 3);
    ck_assert_double_eq_tol(e.median, 0.2, 1e-15);
    ck_assert_double_eq_tol(e.max, 2.5, 1e-15);
    est_relerr(est + 2, ref + 2, 2, scratch, &e);
    ck_assert(e.count == 0 && isnan(e.median) && isnan(e.max));
    const double nodes[6] = {1.0, 4.0, 9.0, NAN, -2.0, 3.0}, w[6] = {0.5, 0.5, 0.0, 0.0, 0.2, 0.8};
    ck_assert_double_eq(est_slq_top(nodes, w, 2, 3), 4.0);
    ck_assert(isnan(est_slq_top(nodes + 2, w + 2, 1, 2)));
    // Spearman by hand: x = 1, 2, 3, 4 against y = 10, 30, 20, 40 (NaN pair left out): ranks
    // 1 2 3 4 and 1 3 2 4, Σd² = 2, ρ = 1 − 6·2/(4·15) = 0.8
    const double x[5] = {1, 2, NAN, 3, 4}, y[5] = {10, 30, 5, 20, 40};
    double sc[20];
    size_t k;
    ck_assert_double_eq_tol(est_spearman(x, y, 5, sc, &k), 0.8, 1e-12);
    ck_assert_uint_eq(k, 4);
    ck_assert(isnan(est_spearman(x, y, 2, sc, &k)));
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.optimizer = OPT_ADAM;
    cfg.train.beta1 = 0.9;
    ck_assert_double_eq_tol(est_hhat_scale(&cfg), 1.0 / 19.0, 1e-15);
    cfg.train.optimizer = OPT_SGD;
    cfg.train.momentum = 0.5;
    ck_assert_double_eq_tol(est_hhat_scale(&cfg), 1.0 / 1.5, 1e-15);
}
END_TEST

Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("band");
    tcase_add_test(tc, test_band_groups);
    tcase_add_test(tc, test_band_block);
    tcase_add_test(tc, test_band_reach);
    tcase_add_test(tc, test_band_mlm_figure);
    tcase_add_test(tc, test_band_reach_up);
    tcase_add_test(tc, test_band_bleu_table);
    tcase_add_test(tc, test_band_bleu_figure);
    tcase_add_test(tc, test_est_numerics);
    suite_add_tcase(s, tc);
    return s;
}
