/* test_warmup.c — the warm-up study's statistics (study/warmup_explained.c; docs/curvature.md
 * "The experiment") on hand-made cells: Mann–Whitney's AUC counted pair by pair, the stratified
 * bootstrap's interval where the replicates' distribution is known in closed form, the paired
 * difference, a row of the AUC table, and the cells of a made-up set (outcomes, needs warm-up,
 * Theorem 1's ratio, RAdam's term, a seeded atlas refused). Every expected number is worked by
 * hand here. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tests.h"
#include "report/plot_internal.h"
#include "study/warmup_explained.h"

START_TEST(test_warmup_auc)
{
    // pairs: 3>1, 3>0.5, 1=1 (½), 1>0.5, 2>1, 2>0.5: 5.5 of 6
    const double fail[] = {3.0, 1.0, 2.0}, ok[] = {1.0, 0.5};
    ck_assert_double_eq_tol(warmup_auc(fail, 3, ok, 2), 5.5 / 6.0, 1e-15);
    ck_assert_double_eq_tol(warmup_auc(ok, 2, fail, 3), 0.5 / 6.0, 1e-15);   // 1 − AUC
    ck_assert(isnan(warmup_auc(fail, 0, ok, 2)));
    // the interval's AUC leaves out what is not finite: the same 5.5/6
    const double failn[] = {3.0, NAN, 1.0, 2.0}, okn[] = {1.0, INFINITY, 0.5};
    double ci[3];
    warmup_auc_ci(failn, 4, okn, 3, 200, 1, ci);
    ck_assert_double_eq_tol(ci[0], 5.5 / 6.0, 1e-15);
    ck_assert(ci[1] <= ci[0] && ci[0] <= ci[2]);
    const double none[] = {NAN};
    warmup_auc_ci(none, 1, ok, 2, 200, 1, ci);
    ck_assert(isnan(ci[0]) && isnan(ci[1]) && isnan(ci[2]));
}
END_TEST

START_TEST(test_warmup_bootstrap)
{
    double ci[3];
    // fail {1} against ok {0, 2, 2, 2}: a replicate resamples ok only, its AUC is the share of
    // 0s among 4 draws, Binomial(4, ¼)/4: P(0) = (¾)⁴ = 0.316 > 2.5 %, so the 2.5 % point is 0;
    // P(≥ ¾) = 4·(¼)³·¾ + (¼)⁴ = 0.051 > 2.5 % and P(1) = 0.0039 < 2.5 %, so the 97.5 % point
    // is ¾; the AUC itself ¼
    const double f1[] = {1.0}, o1[] = {0.0, 2.0, 2.0, 2.0};
    warmup_auc_ci(f1, 1, o1, 4, 2000, 1, ci);
    ck_assert_double_eq_tol(ci[0], 0.25, 1e-15);
    ck_assert_double_eq_tol(ci[1], 0.0, 1e-15);
    ck_assert_double_eq_tol(ci[2], 0.75, 1e-15);
    // fail {1} against ok {0, 2}: replicates 1 ({0, 0}), 0 ({2, 2}) at ¼ each, ½ at ½
    const double o2[] = {0.0, 2.0};
    warmup_auc_ci(f1, 1, o2, 2, 4000, 7, ci);
    ck_assert(ci[0] == 0.5 && ci[1] == 0.0 && ci[2] == 1.0);
    // perfect separation: 1 [1, 1]; a constant (RAdam's term): ½ [½, ½]
    const double f3[] = {2, 3, 4}, o3[] = {0, 1}, c4[] = {0.9, 0.9, 0.9, 0.9};
    warmup_auc_ci(f3, 3, o3, 2, 500, 1, ci);
    ck_assert(ci[0] == 1.0 && ci[1] == 1.0 && ci[2] == 1.0);
    warmup_auc_ci(c4, 4, c4, 3, 500, 1, ci);
    ck_assert(ci[0] == 0.5 && ci[1] == 0.5 && ci[2] == 0.5);
    // the same seed, the same interval; the paired difference resamples the cells once for
    // both: an indicator minus itself is 0 in every replicate, [0, 0]
    const double fa[] = {0.3, 0.8, 0.5, 0.9}, oa[] = {0.1, 0.6, 0.4, 0.2, 0.7};
    double d1[3], d2[3];
    warmup_auc_ci(fa, 4, oa, 5, 300, 3, d1);
    warmup_auc_ci(fa, 4, oa, 5, 300, 3, d2);
    ck_assert(d1[1] == d2[1] && d1[2] == d2[2]);
    warmup_paired_diff_ci(fa, fa, 4, oa, oa, 5, 500, 1, ci);
    ck_assert(ci[0] == 0.0 && ci[1] == 0.0 && ci[2] == 0.0);
    // perfect separation minus a constant: ½ [½, ½]
    warmup_paired_diff_ci(f3, c4, 3, o3, c4, 2, 500, 1, ci);
    ck_assert(ci[0] == 0.5 && ci[1] == 0.5 && ci[2] == 0.5);
    // minus its negation: 2·AUC − 1; AUC of fa vs oa by pairs: 0.3 beats 0.1, 0.2 (2);
    // 0.8 all 5; 0.5 beats 0.1, 0.4, 0.2 (3); 0.9 all 5: 15 of 20 = ¾, so ½
    const double fn[] = {-0.3, -0.8, -0.5, -0.9}, on[] = {-0.1, -0.6, -0.4, -0.2, -0.7};
    warmup_paired_diff_ci(fa, fn, 4, oa, on, 5, 500, 1, ci);
    ck_assert_double_eq_tol(ci[0], 0.5, 1e-15);
    ck_assert(ci[1] <= 0.5 && 0.5 <= ci[2]);
}
END_TEST

/* Five cells: trains (v 1, lr 1e-3), trains (2, 1e-2), stuck and needs warm-up (3, 3e-3),
 * stuck (0.5, 1e-2), diverged (4, 3e-2); and a sixth, trains with v NaN (lr 1e-4). */
START_TEST(test_warmup_row)
{
    static const int out[] = {WARMUP_TRAINS_OUT, WARMUP_TRAINS_OUT, WARMUP_STUCK, WARMUP_STUCK,
                              WARMUP_DIVERGED, WARMUP_TRAINS_OUT};
    static const double v[] = {1.0, 2.0, 3.0, 0.5, 4.0, NAN}, lr[] = {1e-3, 1e-2, 3e-3, 1e-2,
                                                                     3e-2, 1e-4};
    warmup_cell_t c[6];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 6; i++) {
        c[i].out = out[i];
        c[i].v[WARMUP_LR] = lr[i];
        c[i].v[WARMUP_EOS] = v[i];
    }
    c[2].needs = 1;
    int n;
    double auc[WARMUP_COLS][3];
    warmup_row(c, 6, WARMUP_EOS, 500, 1, &n, auc);
    ck_assert_int_eq(n, 5);
    // fails {3, 0.5, 4} vs trains {1, 2}: 3 and 4 beat both, 0.5 neither: 4 of 6
    ck_assert_double_eq_tol(auc[WARMUP_FAILS][0], 4.0 / 6.0, 1e-15);
    // lr over the same cells (the sixth left out: its eos is NaN): fails {3e-3, 1e-2, 3e-2}
    // vs trains {1e-3, 1e-2}: 1 + (1 + ½) + 2 = 4.5 of 6; the difference −0.5/6
    ck_assert_double_eq_tol(auc[WARMUP_MINUS_LR][0], -0.5 / 6.0, 1e-15);
    ck_assert_double_eq_tol(auc[WARMUP_NEEDS_VS][0], 1.0, 1e-15);        // {3} vs {1, 2}
    ck_assert_double_eq_tol(auc[WARMUP_STUCK_VS][0], 0.5, 1e-15);        // {3, 0.5} vs {1, 2}
    ck_assert_double_eq_tol(auc[WARMUP_DIV_VS][0], 1.0, 1e-15);          // {4} vs {1, 2}
    ck_assert_double_eq_tol(auc[WARMUP_DIV_STUCK][0], 1.0, 1e-15);       // {4} vs {3, 0.5}
    for (int col = 0; col < WARMUP_COLS; col++)
        ck_assert(auc[col][1] <= auc[col][0] && auc[col][0] <= auc[col][2]);
    // the lr's own row: all six cells; fails vs trains {1e-3, 1e-2, 1e-4}: 3e-3 beats 2,
    // 1e-2 beats 2 and ties 1, 3e-2 beats 3: 7.5 of 9; minus itself 0 [0, 0]
    warmup_row(c, 6, WARMUP_LR, 500, 1, &n, auc);
    ck_assert_int_eq(n, 6);
    ck_assert_double_eq_tol(auc[WARMUP_FAILS][0], 7.5 / 9.0, 1e-15);
    ck_assert(auc[WARMUP_MINUS_LR][0] == 0.0 && auc[WARMUP_MINUS_LR][1] == 0.0 &&
              auc[WARMUP_MINUS_LR][2] == 0.0);
}
END_TEST

START_TEST(test_warmup_within)
{
    // within strata, by hand: stratum 0 fails {3} vs trains {2, 0.5}: 2 wins of 2 pairs;
    // stratum 1 fails {1} vs trains {1}: a tie, ½ of 1; pooled by pair count: 2.5 of 3
    static const double f[] = {3.0, 1.0}, o[] = {2.0, 0.5, 1.0};
    static const int gf[] = {0, 1}, go[] = {0, 0, 1};
    ck_assert_double_eq_tol(warmup_within_auc(f, gf, 2, o, go, 3), 2.5 / 3.0, 1e-15);
    ck_assert(isnan(warmup_within_auc(f, gf, 1, o + 2, go + 2, 1)));   // no pair shares a stratum
    // units of the row test, each cell with two seeds of equal values: the block bootstrap
    // draws whole cells, so every replicate is a one-seed replicate with each unit doubled —
    // the same AUC — and the interval is the one-seed interval to the last bit (a bootstrap of
    // units would narrow it)
    static const int out[] = {WARMUP_TRAINS_OUT, WARMUP_TRAINS_OUT, WARMUP_STUCK, WARMUP_STUCK,
                              WARMUP_DIVERGED};
    static const double v[] = {1.0, 2.0, 3.0, 0.5, 4.0}, lr[] = {1e-3, 1e-2, 1e-3, 1e-2, 3e-2};
    warmup_cell_t one[5], two[10];
    memset(one, 0, sizeof one);
    for (int i = 0; i < 5; i++) {
        snprintf(one[i].key.scheme, sizeof one[i].key.scheme, "s%d", i);
        one[i].key.lr = lr[i];
        one[i].key.seed = 1;
        one[i].out = out[i];
        one[i].v[WARMUP_LR] = lr[i];
        one[i].v[WARMUP_EOS] = v[i];
        two[2 * i] = two[2 * i + 1] = one[i];
        two[2 * i + 1].key.seed = 2;
    }
    double a1[3], a2[3], wide = 0.0;
    for (int col = 0; col < WARMUP_COLS; col++) {
        warmup_column(one, 5, WARMUP_EOS, col, 400, 3, a1);
        warmup_column(two, 10, WARMUP_EOS, col, 400, 3, a2);
        for (int j = 0; j < 3; j++)
            ck_assert_msg(a1[j] == a2[j] || (isnan(a1[j]) && isnan(a2[j])),
                          "column %d: %g vs %g", col, a1[j], a2[j]);
        if (col == WARMUP_FAILS) wide = a1[2] - a1[1];
    }
    ck_assert(wide > 0.1);   // fails vs trains: a real interval, not a point
    // within lr: lr 1e-3 {3} vs {1}, lr 1e-2 {0.5} vs {2}, 3e-2 no training unit: 1 of 2;
    // each stratum one block: every replicate the same, [½, ½]
    ck_assert(a1[0] == 0.5 && a1[1] == 0.5 && a1[2] == 0.5);
    // the lr within lr ties every pair: ½, and every replicate too
    warmup_column(two, 10, WARMUP_LR, WARMUP_WITHIN_LR, 400, 3, a2);
    ck_assert(a2[0] == 0.5 && a2[1] == 0.5 && a2[2] == 0.5);
}
END_TEST

#define NR 8
static double losses[NR][10];

/* A made-up set: indicator runs of post (L 2, lr 1e-3; 1e-2; 3e-2) and pre (L 2, lr 1e-3) with
 * xiong 4, 5, 6 and 2; outcome runs without warm-up of post 1e-3 (stuck, 3.5), post 1e-2
 * (diverged), pre 1e-3 (trains, 2.0), and with warm-up of post 1e-3 (trains, 2.5) and post
 * 1e-2 (stuck, 3.6); post 3e-2 has no outcome run. */
static void make_set(plot_set_t *set, plot_run_t *r, plot_ind_t *ind)
{
    static const int pre[NR] = {0, 0, 0, 1, 0, 0, 1, 0}, warm[NR] = {1, 1, 1, 1, 1, 1, 1, 100};
    static const double lr[NR] = {1e-3, 1e-2, 3e-2, 1e-3, 1e-3, 1e-2, 1e-3, 1e-3};
    static const double last[NR] = {0, 0, 0, 0, 3.5, 9.0, 2.0, 2.5};
    memset(r, 0, NR * sizeof *r);
    for (int i = 0; i < NR; i++) {
        config_defaults(&r[i].cfg);
        r[i].cfg.model.placement = pre[i] ? PLACEMENT_PRE : PLACEMENT_POST;
        r[i].cfg.model.norm = NORM_LAYERNORM;
        r[i].cfg.init.scheme = INIT_XAVIER_NORMAL;
        r[i].cfg.model.layers = 2;
        r[i].cfg.train.lr = lr[i];
        r[i].cfg.train.warmup = warm[i];
        r[i].cfg.train.beta2 = 0.98;
        snprintf(r[i].name, sizeof r[i].name, "r%d", i);
        snprintf(r[i].origin, sizeof r[i].origin, "f%d.h5", i);
        snprintf(r[i].status, sizeof r[i].status, "done");
        r[i].diverged_at = NAN;
        r[i].unigram = NAN;
        if (i < 4) {   // an indicators' run
            ind[i] = (plot_ind_t){.xiong = i < 3 ? 4.0 + i : 2.0, .eos = 0.1 * (i + 1),
                                  .eos0 = NAN, .kosson = NAN, .update_rms = NAN, .deepnet = NAN};
            r[i].ind = &ind[i];
            continue;
        }
        for (int t = 0; t < 10; t++) losses[i][t] = t < 9 ? 5.0 : last[i];
        r[i].loss = losses[i];
        r[i].nsteps = 10;
    }
    r[5].diverged_at = 4;
    set->runs = r;
    set->n = NR;
}

START_TEST(test_warmup_cells)
{
    plot_set_t set;
    plot_run_t r[NR + 1];
    plot_ind_t ind[4];
    make_set(&set, r, ind);
    warmup_cell_t c[NR + 1];
    int admin = 0;
    char why[400] = "";
    const int n = warmup_cells(&set, c, &admin, why, sizeof why);
    ck_assert_msg(n == 3, "%d cells (%s)", n, why);   // post 3e-2: no outcome run, no cell
    ck_assert_int_eq(admin, 0);
    // sorted: post 1e-3, post 1e-2, pre 1e-3
    ck_assert_str_eq(c[0].key.scheme, "post-layernorm-xavier_normal");
    ck_assert(c[0].key.lr == 1e-3 && c[1].key.lr == 1e-2);
    ck_assert_str_eq(c[2].key.scheme, "pre-layernorm-xavier_normal");
    ck_assert(c[0].out == WARMUP_STUCK && c[0].needs == 1);     // 3.5 ≥ 3.2; warm-up 2.5
    ck_assert(c[1].out == WARMUP_DIVERGED && c[1].needs == 0);  // its warm-up run: none here
    ck_assert(c[2].out == WARMUP_TRAINS_OUT && c[2].needs == 0);
    // Theorem 1's ratio: post's 4 over pre's 2 at L 2, lr 1e-3; no pre at 1e-2: NaN
    ck_assert_double_eq_tol(c[0].v[WARMUP_RATIO], 2.0, 1e-15);
    ck_assert(isnan(c[1].v[WARMUP_RATIO]));
    ck_assert_double_eq_tol(c[2].v[WARMUP_RATIO], 1.0, 1e-15);
    ck_assert(c[1].v[WARMUP_XIONG] == 5.0 && c[1].v[WARMUP_EOS] == 0.2 && c[1].v[WARMUP_LR] == 1e-2);
    // RAdam's 1 − r₅ at β₂ = 0.98 (Liu et al. 2020a, Alg. 2): ρ_∞ = 99, ρ₅ = 99 − 10·β₂⁵/(1 − β₂⁵)
    const double b5 = pow(0.98, 5), rho = 99.0 - 10.0 * b5 / (1.0 - b5);
    const double r5 = sqrt((rho - 4.0) * (rho - 2.0) * 99.0 / (95.0 * 97.0 * rho));
    ck_assert_double_eq_tol(r5, 0.0766, 1e-4);   // the paper's r₅ ≈ 0.077
    ck_assert_double_eq_tol(c[0].v[WARMUP_RADAM], 1.0 - r5, 1e-12);
    // seeds as replicates: an outcome run of pre 1e-3 at seed 2 alone adds no unit (no
    // indicators' run of seed 2 to pair with); with one it adds the unit (pre, 1e-3, seed 2),
    // sorted after seed 1's, its outcome its own seed's (3.5: stuck), not seed 1's (trains)
    static double stuck[10] = {5, 5, 5, 5, 5, 5, 5, 5, 5, 3.5};
    r[NR] = r[6];
    r[NR].cfg.init.seed = r[6].cfg.init.seed + 1;
    r[NR].loss = stuck;
    set.n = NR + 1;
    ck_assert_int_eq(warmup_cells(&set, c, &admin, why, sizeof why), 3);
    ck_assert(!warmup_seeded(c, 3));
    plot_run_t r2[NR + 2];
    memcpy(r2, r, (NR + 1) * sizeof *r);
    r2[NR + 1] = r[3];   // pre 1e-3's indicators' run, at seed 2
    r2[NR + 1].cfg.init.seed = r[3].cfg.init.seed + 1;
    set.runs = r2;
    set.n = NR + 2;
    warmup_cell_t c2[NR + 2];
    ck_assert_int_eq(warmup_cells(&set, c2, &admin, why, sizeof why), 4);
    ck_assert(warmup_seeded(c2, 4) && c2[3].key.seed == c2[2].key.seed + 1);
    ck_assert(c2[2].out == WARMUP_TRAINS_OUT && c2[3].out == WARMUP_STUCK);
    ck_assert_double_eq_tol(c2[3].v[WARMUP_RATIO], 1.0, 1e-15);   // its own seed's Pre-LN
    // a remedy's run (a ratio cap) in the same set is ignored, not refused
    r2[NR] = r[6];
    r2[NR].cfg.train.update_ratio_cap = 0.01;
    ck_assert_int_eq(warmup_cells(&set, c2, &admin, why, sizeof why), 3);
}
END_TEST

Suite *warmup_suite(void)
{
    Suite *s = suite_create("warmup");
    TCase *tc = tcase_create("warmup");
    tcase_add_test(tc, test_warmup_auc);
    tcase_add_test(tc, test_warmup_bootstrap);
    tcase_add_test(tc, test_warmup_row);
    tcase_add_test(tc, test_warmup_cells);
    tcase_add_test(tc, test_warmup_within);
    suite_add_tcase(s, tc);
    return s;
}
