/* test_figures.c — what figures say and how they draw it (docs/design.md §6j): the items that
 * differ between runs and the keys and titles built from them, the paper's figure decided from
 * the configs, one run given twice, the palette's lightness, heat-map cells at their true
 * spans, intervals within a metric's range, "diverged" only when a run did, the atlas's cells
 * keyed by every key that differs and its stuck cells never coloured as robust, the plateau
 * note of `info --train`. Expected values are worked out by hand here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests.h"
#include "report/plot_band.h"
#include "report/plot_internal.h"
#include "study/figures.h"

#define NR 8
#define NT 4
static double xs[NR][NT], ys[NR][NT], vx[NR][1], vy[NR][1];

/* Run i: defaults, Post-LN, warm-up w, lr, NT updates of loss 5.5, 5, 4.5, 4 (a validation
 * loss of `final` at the last), named n. */
static void run(plot_run_t *r, int i, const char *n, int w, double lr, double final)
{
    memset(r, 0, sizeof *r);
    config_defaults(&r->cfg);
    r->cfg.train.warmup = w;
    r->cfg.train.lr = lr;
    r->cfg.train.steps = NT;
    snprintf(r->name, sizeof r->name, "%s", n);
    snprintf(r->status, sizeof r->status, "done");
    for (int k = 0; k < NT; k++) { xs[i][k] = k + 1; ys[i][k] = 5.5 - 0.5 * k; }
    vx[i][0] = NT;
    vy[i][0] = final;
    r->nsteps = NT;
    r->step = xs[i];
    r->loss = ys[i];
    r->nevals = 1;
    r->eval_step = vx[i];
    r->val_loss = vy[i];
    r->diverged_at = r->epoch_batches = r->unigram = NAN;
}

static void set_of(plot_set_t *set, plot_run_t *runs, int n)
{
    set->runs = runs;
    set->n = n;
}

START_TEST(test_diff_keys)
{
    plot_run_t r[4];
    plot_set_t set;
    run(&r[0], 0, "a", 20, 1e-3, 2.0);
    run(&r[1], 1, "b", 50, 1e-3, 2.0);   // warm-up alone differs: two keys, never alike
    set_of(&set, r, 2);
    const int m[4] = {0, 1, 2, 3};
    plot_diff_t d;
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_int_eq(d.n, 1);
    ck_assert_str_eq(d.item[0], "train.warmup");
    char a[300], b[300], t[400];
    plot_key(&d, &r[0], 0, a, sizeof a);
    plot_key(&d, &r[1], 0, b, sizeof b);
    ck_assert_str_eq(a, "warm-up 20");
    ck_assert_str_eq(b, "warm-up 50");
    plot_title(&set, m, 2, &d, "Training loss", NULL, t, sizeof t);
    ck_assert_str_eq(t, "Training loss by warm-up");
    run(&r[2], 2, "c", 20, 1e-3, 2.0);   // float32 beside float64: a key of its own
    r[2].cfg.train.precision = PRECISION_FLOAT32;
    set_of(&set, r, 3);
    plot_diff(&set, m, 3, 0, &d);
    ck_assert_int_eq(d.n, 2);
    plot_key(&d, &r[2], 0, a, sizeof a);
    plot_key(&d, &r[0], 0, b, sizeof b);
    ck_assert_str_eq(a, "warm-up 20, float32");
    ck_assert_str_eq(b, "warm-up 20, float64");
    plot_title(&set, m, 3, &d, "Training loss", "Fig. 2", t, sizeof t);
    ck_assert_str_eq(t, "Training loss by warm-up and precision (Fig. 2)");
    run(&r[3], 3, "d", 20, 1e-3, 2.0);   // a seed: one curve's band, unless seeds count
    r[3].cfg.init.seed = 2;
    set_of(&set, r, 4);
    const int ad[2] = {0, 3};
    plot_diff(&set, ad, 2, 0, &d);
    ck_assert_int_eq(d.n, 0);
    plot_diff(&set, ad, 2, PLOT_DIFF_SEED, &d);
    ck_assert_int_eq(d.n, 1);
    plot_key(&d, &r[3], 0, a, sizeof a);
    ck_assert_str_eq(a, "seed 2");
    r[1].cfg.train.warmup = 20;   // a scheme apart: "scheme", not its placement's keys
    r[1].cfg.model.placement = PLACEMENT_PRE;
    r[1].cfg.model.final_norm = FINAL_NORM_AUTO;
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_int_eq(d.n, 1);
    ck_assert_str_eq(d.item[0], "scheme");
    plot_key(&d, &r[1], 0, a, sizeof a);
    ck_assert_str_eq(a, "Pre-LN");
    snprintf(r[0].sweep_title, sizeof r[0].sweep_title, "Post & Pre_LN");   // a sweep's title
    snprintf(r[1].sweep_title, sizeof r[1].sweep_title, "Post & Pre_LN");
    plot_title(&set, m, 2, &d, "Training loss", NULL, t, sizeof t);
    ck_assert_str_eq(t, "Training loss: Post \\& Pre\\_LN");   // escaped for gnuplot
}
END_TEST

/* Keys that split the runs alike (a data set and the vocabulary, length and batch it comes
 * with) are named once, by the data, in keys and titles; the subtitle says the rest per data
 * set. Two items alone stay apart. */
START_TEST(test_covary)
{
    plot_run_t r[4];
    plot_set_t set;
    for (int i = 0; i < 4; i++) {
        run(&r[i], i, "x", 20, 1e-3, 2.0);
        if (i % 2) {
            r[i].cfg.model.placement = PLACEMENT_PRE;
            r[i].cfg.model.final_norm = FINAL_NORM_AUTO;
        }
        if (i >= 2) {
            r[i].cfg.data.task = TASK_COPY;
            r[i].cfg.model.vocab = 777;
            r[i].cfg.model.seq_len = 48;
            r[i].cfg.data.batch = 5;
        }
    }
    set_of(&set, r, 4);
    const int m[4] = {0, 1, 2, 3};
    plot_diff_t d;
    plot_diff(&set, m, 4, 0, &d);
    ck_assert(plot_diff_has(&d, "model.vocab") && plot_diff_has(&d, "data.batch"));
    ck_assert_int_eq(d.nf, 3);   // vocabulary, length, batch follow the task
    char a[300], b[300], t[400], sub[900];
    plot_key(&d, &r[3], 0, a, sizeof a);
    plot_item_text(&r[3], "data.task", 0, b, sizeof b);
    char want[400];
    snprintf(want, sizeof want, "Pre-LN, %s", b);
    ck_assert_str_eq(a, want);
    ck_assert(!strstr(a, "777") && !strstr(a, "batch"));
    plot_title(&set, m, 4, &d, "Training loss", NULL, t, sizeof t);
    ck_assert_str_eq(t, "Training loss by scheme and task");
    const char *const none[] = {NULL};
    plot_shared(&d, &r[0], none, 0, sub, sizeof sub);
    snprintf(want, sizeof want, "%s: V = 777, n = 48, batch 5", b);
    ck_assert_msg(strstr(sub, want) != NULL, "%s", sub);
    run(&r[0], 0, "a", 20, 1e-3, 2.0);   // two items alone: both in the key
    run(&r[1], 1, "b", 50, 1e-2, 2.0);
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_int_eq(d.nf, 0);
    plot_key(&d, &r[1], 0, a, sizeof a);
    ck_assert_str_eq(a, "lr 0.01, warm-up 50");
    r[1].cfg.model.placement = PLACEMENT_PRE;   // Fig. 5: scheme, lr and warm-up vary together;
    r[1].cfg.model.final_norm = FINAL_NORM_AUTO;   // what an experiment compares stays in the key
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_int_eq(d.nf, 0);
    plot_key(&d, &r[1], 0, a, sizeof a);
    ck_assert_str_eq(a, "Pre-LN, lr 0.01, warm-up 50");
    for (int i = 0; i < 3; i++) {   // a width and its d_ff swept together: the rule, said once
        run(&r[i], i, "w", 20, 1e-3, 2.0);
        r[i].cfg.model.d_model = 8 << i;
        r[i].cfg.model.d_ff = 16 << i;
    }
    set_of(&set, r, 3);
    plot_diff(&set, m, 3, 0, &d);
    ck_assert(plot_diff_follows(&d, "model.d_ff"));
    plot_shared(&d, &r[0], none, 0, sub, sizeof sub);
    ck_assert_msg(strstr(sub, "d_ff = 2d") && !strstr(sub, "d = 8:"), "%s", sub);
    r[2].cfg.model.d_ff = 66;   // within implied()'s 5 % but no one ratio: a clause per width
    plot_diff(&set, m, 3, 0, &d);
    ck_assert(plot_diff_follows(&d, "model.d_ff"));
    plot_shared(&d, &r[0], none, 0, sub, sizeof sub);
    ck_assert_msg(!strstr(sub, "2d") && strstr(sub, "d = 32: d_ff = 66"), "%s", sub);
}
END_TEST

/* The paper's figure is the set of runs' (their configs), not the code path's. */
START_TEST(test_paper_figure)
{
    plot_run_t r[3];
    plot_set_t set;
    const int m[3] = {0, 1, 2};
    plot_diff_t d;
    run(&r[0], 0, "a", 1, 1e-3, 2.0);
    run(&r[1], 1, "b", 20, 1e-3, 2.0);
    set_of(&set, r, 2);
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_str_eq(plot_paper_figure(&set, m, 2, &d, PLOT_KIND_TRAIN), "Fig. 2");
    r[1].cfg.model.layers = 12;   // a 12-layer sweep over depth too: not Fig. 2's set
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_ptr_null(plot_paper_figure(&set, m, 2, &d, PLOT_KIND_TRAIN));
    r[1].cfg.model.layers = r[0].cfg.model.layers;
    r[0].cfg.train.warmup = 20;   // Post-LN with warm-up, Pre-LN without: Fig. 4
    r[1].cfg.train.warmup = 1;
    r[1].cfg.model.placement = PLACEMENT_PRE;
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_str_eq(plot_paper_figure(&set, m, 2, &d, PLOT_KIND_TRAIN), "Fig. 4");
    r[0].cfg.data.task = r[1].cfg.data.task = TASK_MLM;   // BERT's: Fig. 5
    plot_diff(&set, m, 2, 0, &d);
    ck_assert_str_eq(plot_paper_figure(&set, m, 2, &d, PLOT_KIND_TRAIN), "Fig. 5");
    plot_diff(&set, m, 2, PLOT_DIFF_INIT, &d);   // at initialisation the warm-up is no key
    ck_assert_str_eq(plot_paper_figure(&set, m, 2, &d, PLOT_KIND_LAYERS), "Fig. 3(a,b)");
    run(&r[2], 2, "c", 1, 1e-3, 2.0);   // a third scheme: the paper has no such figure
    r[2].cfg.model.placement = PLACEMENT_DEEPNORM;
    set_of(&set, r, 3);
    plot_diff(&set, m, 3, 0, &d);
    ck_assert_ptr_null(plot_paper_figure(&set, m, 3, &d, PLOT_KIND_LAYERS));
    r[1].cfg.model.d_model = 64;   // Post-LN and Pre-LN at two widths: not Fig. 3(a,b)
    plot_diff(&set, m, 2, PLOT_DIFF_INIT, &d);
    ck_assert_ptr_null(plot_paper_figure(&set, m, 2, &d, PLOT_KIND_LAYERS));
    r[1].cfg.model.d_model = r[0].cfg.model.d_model;
    r[1].cfg.model.layers = 12;   // over depth: Fig. 3(c,d)
    plot_diff(&set, m, 2, PLOT_DIFF_INIT, &d);
    ck_assert_str_eq(plot_paper_figure(&set, m, 2, &d, PLOT_KIND_DEPTH), "Fig. 3(c,d)");
}
END_TEST

/* CIE L* of "#rrggbb" (sRGB, D65). */
static double lightness(const char *hex)
{
    unsigned rgb;
    sscanf(hex + 1, "%x", &rgb);
    double lin[3];
    for (int c = 0; c < 3; c++) {
        const double v = ((rgb >> (16 - 8 * c)) & 0xff) / 255.0;
        lin[c] = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
    }
    const double y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return y > 216.0 / 24389.0 ? 116.0 * cbrt(y) - 16.0 : y * 24389.0 / 27.0;
}

/* A perceptually uniform map: lightness rises at a near-constant step (a rainbow's goes up
 * and down), so it reads in greyscale and to the colour-blind; every scheme its own colour
 * and its own marker. */
START_TEST(test_palette)
{
    double l[11];
    char c[8];
    for (int k = 0; k <= 10; k++) {
        palette_viridis(k / 10.0, c);
        l[k] = lightness(c);
    }
    const double step = (l[10] - l[0]) / 10.0;
    ck_assert(step > 5.0);   // dark to light: about 16 to 92
    for (int k = 1; k <= 10; k++)
        ck_assert_msg(l[k] - l[k - 1] > 0.5 * step && l[k] - l[k - 1] < 1.6 * step,
                      "L* step %d: %.2f (mean %.2f)", k, l[k] - l[k - 1], step);
    for (int i = 1; i < 5; i++) {   // ordinal colours: ordered by lightness
        char a[8], b[8];
        palette_ordinal(i - 1, 5, a);
        palette_ordinal(i, 5, b);
        ck_assert(lightness(b) > lightness(a) + 5.0);
    }
    for (int i = 0; i < SCHEME_COUNT; i++)
        for (int j = 0; j < i; j++) {
            ck_assert_msg(strcmp(palette_scheme(SCHEMES[i].name, i), palette_scheme(SCHEMES[j].name, j)),
                          "%s and %s share a colour", SCHEMES[i].name, SCHEMES[j].name);
            ck_assert_int_ne(palette_scheme_point(SCHEMES[i].name, i),
                             palette_scheme_point(SCHEMES[j].name, j));
        }
    // today's block's "X+rmsnorm" (docs/design.md §6i) is drawn as X, and ranked right after it
    ck_assert_str_eq(palette_scheme("deepnorm+rmsnorm", 7), palette_scheme("deepnorm", 3));
    ck_assert_int_eq(palette_scheme_point("post+rmsnorm", 9), palette_scheme_point("post", 0));
    char names[4][32] = {"pre", "post+rmsnorm", "tfixup", "post"};
    plot_sort_schemes(names, NULL, 4);
    ck_assert_str_eq(names[0], "post");
    ck_assert_str_eq(names[1], "post+rmsnorm");
    ck_assert_str_eq(names[2], "pre");
    ck_assert_str_eq(names[3], "tfixup");
}
END_TEST

/* The same run twice is one; another seed or other data is another. */
START_TEST(test_same_run)
{
    plot_run_t r[2];
    run(&r[0], 0, "a", 20, 1e-3, 2.0);
    run(&r[1], 1, "a copy", 20, 1e-3, 2.0);
    snprintf(r[1].cfg.output.file, sizeof r[1].cfg.output.file, "elsewhere.h5");
    ck_assert(plot_same_run(&r[0], &r[1]));
    snprintf(r[0].data_id, sizeof r[0].data_id, "ab12:100");   // a file before the identity:
    ck_assert(plot_same_run(&r[0], &r[1]));                     // the config decides
    snprintf(r[1].data_id, sizeof r[1].data_id, "cd34:100");
    ck_assert(!plot_same_run(&r[0], &r[1]));
    snprintf(r[1].data_id, sizeof r[1].data_id, "ab12:100");
    r[1].cfg.init.seed = 7;
    ck_assert(!plot_same_run(&r[0], &r[1]));
    r[1].cfg.init.seed = r[0].cfg.init.seed;
    r[1].cfg.train.precision = PRECISION_FLOAT32;
    ck_assert(!plot_same_run(&r[0], &r[1]));
}
END_TEST

/* A heat map's column spans the updates since the previous measurement: probes at 1, 10, 20
 * give (0, 1], (1, 10], (10, 20] — not a first column half-way to the second. Viridis with
 * a labelled colour bar. */
START_TEST(test_heat_cells)
{
    plot_run_t r[1];
    run(&r[0], 0, "a", 20, 1e-3, 2.0);
    static double step[3] = {1, 10, 20}, grad[6] = {1, 2, 3, 4, 5, 6};
    plot_dyn_t dyn = {.L = 2, .nprobe = 3, .probe_step = step, .grad = grad};
    r[0].dyn = &dyn;
    plot_set_t set;
    set_of(&set, r, 1);
    sbuf_t s = {0};
    char name[256];
    ck_assert_int_eq(plot_fig_dyn_grad(&set, &s, name, sizeof name), 1);
    ck_assert_msg(strstr(s.data, "\n0.5 1 0 1 0.5 1.5 1\n"), "%s", s.data);
    ck_assert_ptr_nonnull(strstr(s.data, "\n5.5 2 1 10 1.5 2.5 4\n"));
    ck_assert_ptr_nonnull(strstr(s.data, "\n15 1 10 20 0.5 1.5 5\n"));
    ck_assert_ptr_nonnull(strstr(s.data, "set palette defined (0 '#440154'"));
    ck_assert_ptr_nonnull(strstr(s.data, "set cblabel '‖∇W‖_F of the layer'"));
    ck_assert_ptr_null(strstr(s.data, "rgbformulae"));
    sbuf_free(&s);
}
END_TEST

/* A band respects its metric's range: BLEU of two seeds 0.1 and 3.0 at an epoch has a 95 %
 * interval of ±18 around 1.55, drawn from 0 up, never below. Two seeds are drawn as their
 * lines (PLOT_SEED_LINES): the row carries both values and the axis spans them, 0.1 … 3. */
START_TEST(test_band_floor)
{
    plot_run_t r[2];
    run(&r[0], 0, "a", 20, 1e-3, 0.1);
    run(&r[1], 1, "b", 20, 1e-3, 3.0);
    r[1].cfg.init.seed = 2;
    plot_set_t set;
    set_of(&set, r, 2);
    const int m[2] = {0, 1};
    plot_group_t g[1];
    ck_assert_int_eq(plot_band_groups(&set, m, 2, g, 1), 1);
    ck_assert_int_eq(g[0].lines, 1);
    sbuf_t s = {0};
    plot_range_t rx, ry;
    plot_range_init(&rx);
    plot_range_init(&ry);
    plot_band_block(&s, "b", &set, &g[0], plot_series_val_loss, 1.0, 0.0, &rx, &ry);
    ck_assert_msg(strstr(s.data, " 2 0.1 3\n"), "%s", s.data);   // count, then each seed
    ck_assert_double_eq(ry.lo, 0.1);
    ck_assert_double_eq(ry.hi, 3.0);
    sbuf_free(&s);
    g[0].lines = 0;   // the band, as more seeds get it
    plot_range_init(&ry);
    plot_band_block(&s, "b", &set, &g[0], plot_series_val_loss, 1.0, 0.0, &rx, &ry);
    double x, mean, lo, hi;
    ck_assert_int_eq(sscanf(strchr(s.data, '\n') + 1, "%lf %lf %lf %lf", &x, &mean, &lo, &hi), 4);
    const double half = 12.706204736174705 * (2.9 / sqrt(2.0)) / sqrt(2.0);
    ck_assert_double_eq_tol(mean, 1.55, 1e-12);
    ck_assert_double_eq(lo, 0.0);
    ck_assert_double_eq_tol(hi, 1.55 + half, 1e-8);
    ck_assert_double_eq(ry.lo, 0.0);
    sbuf_free(&s);
}
END_TEST

/* The loss figure: "diverged" only when a run diverged; every curve keyed in the strip (no
 * title on data, no key over it); the x axis is the update. */
START_TEST(test_loss_marks)
{
    plot_run_t r[2];
    run(&r[0], 0, "a", 1, 1e-3, 2.0);
    run(&r[1], 1, "b", 20, 1e-3, 2.0);
    plot_set_t set;
    set_of(&set, r, 2);
    sbuf_t s = {0};
    char name[256];
    ck_assert_int_eq(plot_fig_loss(&set, &s, name, sizeof name), 1);
    ck_assert_ptr_null(strstr(s.data, "diverged"));
    ck_assert_ptr_null(strstr(s.data, "'step'"));
    ck_assert_ptr_nonnull(strstr(s.data, "set xlabel 'update'"));
    ck_assert_ptr_nonnull(strstr(s.data, "title 'no warm-up' noenhanced"));
    ck_assert_ptr_nonnull(strstr(s.data, "title 'warm-up 20' noenhanced"));
    int titled = 0, entries = 0;
    for (const char *p = s.data; (p = strstr(p, " title '")); p++) titled++;
    for (const char *p = s.data; (p = strstr(p, "keyentry")); p++) entries++;
    ck_assert_int_eq(titled, entries);
    sbuf_free(&s);
    r[1].diverged_at = 4;
    ck_assert_int_eq(plot_fig_loss(&set, &s, name, sizeof name), 1);
    ck_assert_ptr_nonnull(strstr(s.data, "×: diverged"));
    ck_assert_ptr_nonnull(strstr(s.data, "title 'warm-up 20 (diverged)' noenhanced"));
    sbuf_free(&s);
    for (int k = 0; k < NT; k++) ys[0][k] = ys[1][k] = NAN;   // no finite loss: skipped
    ck_assert_int_eq(plot_fig_loss(&set, &s, name, sizeof name), -1);
    ck_assert_str_eq(name, "loss: no finite training loss");
    sbuf_free(&s);
}
END_TEST

/* The atlas's cells: two schemes, two rates, warm-up 20 and 50 (two variants, two panels,
 * two columns of the map, neither hiding the other); Post-LN stuck at its plateau (3.0 nats:
 * every final loss above 2.9) is grey and "stuck", never coloured as the most robust. */
START_TEST(test_atlas_cells)
{
    plot_run_t r[NR];
    static const double final[NR] = {3.2, 3.3, 3.1, 3.25, 2.0, 2.4, 2.1, 2.6};
    for (int i = 0; i < NR; i++) {
        char n[16];
        snprintf(n, sizeof n, "r%d", i);
        run(&r[i], i, n, i % 4 < 2 ? 20 : 50, i % 2 ? 1e-2 : 1e-3, final[i]);
        r[i].cfg.model.placement = i < 4 ? PLACEMENT_POST : PLACEMENT_PRE;
        r[i].cfg.model.final_norm = FINAL_NORM_AUTO;
        r[i].unigram = 3.0;
    }
    plot_set_t set;
    set_of(&set, r, NR);
    sbuf_t s = {0};
    char name[256];
    ck_assert_int_eq(plot_fig_atlas_lr(&set, &s, name, sizeof name), 1);
    ck_assert_ptr_nonnull(strstr(s.data, "L = 6, warm-up 50"));
    ck_assert_ptr_nonnull(strstr(s.data, "L = 6, warm-up 20"));
    sbuf_free(&s);
    ck_assert_int_eq(plot_fig_atlas_sensitivity(&set, &s, name, sizeof name), 1);
    const char *h = strstr(s.data, "$h << EOD\n");
    ck_assert_ptr_nonnull(h);
    // rows: x = variant (warm-up 50, then 20), y = scheme (post at the top: 1)
    ck_assert_msg(strstr(h, "\n0 1 NaN 3.1 \"stuck\"") && strstr(h, "\n1 1 NaN 3.2 \"stuck\""),
                  "%s", h);
    // pre, warm-up 50: finals 2.1, 2.6 from 5.5: mean(2.1, 2.6) − 2.1 = 0.25
    ck_assert_msg(strstr(h, "\n0 0 0.25 2.1 \"0.25\""), "%s", h);
    ck_assert_ptr_nonnull(strstr(h, "\n1 0 0.2 2 \"0.20\""));
    sbuf_free(&s);
}
END_TEST

/* info --train: a threshold every run reaches only on the unigram plateau is said to be one;
 * a BLEU no run left 0 gives no "nan". */
START_TEST(test_table_plateau)
{
    plot_run_t r[2];
    run(&r[0], 0, "a", 1, 1e-3, 3.15);
    run(&r[1], 1, "b", 20, 1e-3, 3.3);
    for (int i = 0; i < 2; i++) r[i].unigram = 3.2;
    plot_set_t set;
    set_of(&set, r, 2);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ck_assert_int_eq(plot_band_table(out, &set, &PLOT_CURVE_VAL_LOSS), 2);
    fclose(out);
    ck_assert_msg(strstr(text, "| update reaching 3.3 |") && strstr(text, "3.3, the value every "
                  "run reaches, is not below the unigram plateau (3.200 nats"), "%s", text);
    ck_assert_msg(strstr(text, "| no warm-up | 1 | 0 |"), "%s", text);
    free(text);
    vy[0][0] = 2.6;   // runs that learned: both below the plateau by more than 0.1, no note
    vy[1][0] = 2.5;
    out = open_memstream(&text, &size);
    plot_band_table(out, &set, &PLOT_CURVE_VAL_LOSS);
    fclose(out);
    ck_assert_msg(!strstr(text, "plateau"), "%s", text);
    free(text);
    static double bs[2] = {10, 20}, bleu[2][2] = {{0.0, 1e-77}, {0.0, 0.004}};
    for (int i = 0; i < 2; i++) {
        r[i].nbleu = 2;
        r[i].bleu_step = bs;
        r[i].bleu = bleu[i];
    }
    out = open_memstream(&text, &size);
    ck_assert_int_eq(plot_band_table(out, &set, &PLOT_CURVE_BLEU), 2);
    fclose(out);
    ck_assert_msg(!strstr(text, "nan") && strstr(text, "(no run's BLEU left 0)") &&
                  !strstr(text, "never"), "%s", text);
    free(text);
}
END_TEST

/* Keys for Markdown are plain text; for gnuplot's titles, escaped. */
START_TEST(test_plain_keys)
{
    plot_run_t r[2];
    run(&r[0], 0, "a", 20, 1e-3, 2.0);
    run(&r[1], 1, "b", 20, 1e-3, 2.0);
    r[0].cfg.data.task = r[1].cfg.data.task = TASK_TEXT;
    snprintf(r[0].cfg.data.path, sizeof r[0].cfg.data.path, "results/a'b_c.txt");
    snprintf(r[1].cfg.data.path, sizeof r[1].cfg.data.path, "results/k&l.txt");
    plot_set_t set;
    set_of(&set, r, 2);
    const int m[2] = {0, 1};
    plot_diff_t d;
    plot_diff(&set, m, 2, 0, &d);
    char k[300];
    plot_key(&d, &r[0], 0, k, sizeof k);
    ck_assert_str_eq(k, "path results/a'b_c.txt");
    plot_key(&d, &r[1], 1, k, sizeof k);
    ck_assert_str_eq(k, "path results/k\\&l.txt");
    plot_quote("a'b", 0, k, sizeof k);
    ck_assert_str_eq(k, "a''b");
}
END_TEST

/* The tics of a log axis gnuplot is given (set ytics (t1, t2, …)): their count, every one
 * inside [lo, hi]. */
static int log_tics_in(const char *script, double lo, double hi)
{
    const char *p = strstr(script, "set ytics (");
    if (!p) return -1;
    p += strlen("set ytics (");
    int n = 0;
    for (char *end; *p && *p != ')'; p = *end == ',' ? end + 1 : end) {
        const double t = strtod(p, &end);
        if (end == p) return -1;
        if (t < lo || t > hi) return -1;
        n++;
    }
    return n;
}

/* Every log axis has two labelled tics or more (docs/design.md §6j): a log axis asked for over
 * 3.1 … 4.6 has none of 1, 2, 5 × 10^k inside (the axis, 3.05 … 4.67 with its 4 % margins, got
 * no label); 1 … 9 × 10^k gives 4 alone, so both ends to two digits: 3.1 and 4.6; 30 … 70
 * (50 alone before) gets 30 … 70 by tens. A span of 2 … 9 keeps 1, 2, 5's two (2, 5): those
 * figures draw as before. */
START_TEST(test_log_tics)
{
    plot_range_t r;
    plot_range_init(&r);
    plot_range_add(&r, 3.1);
    plot_range_add(&r, 4.6);
    sbuf_t s = {0};
    plot_axis(&s, "y", &r, 1, 0.04, NAN, NAN);
    ck_assert_ptr_nonnull(strstr(s.data, "set logscale y"));
    ck_assert_int_eq(log_tics_in(s.data, 3.05, 4.67), 2);
    ck_assert_ptr_nonnull(strstr(s.data, "set ytics (3.1, 4.6)"));
    sbuf_free(&s);
    plot_range_init(&r);   // 30 … 70: 1 … 9 × 10^k gives 30, 40, 50, 60, 70
    plot_range_add(&r, 30.0);
    plot_range_add(&r, 70.0);
    plot_axis(&s, "y", &r, 1, 0.04, NAN, NAN);
    ck_assert_ptr_nonnull(strstr(s.data, "set ytics (30, 40, 50, 60, 70)"));
    sbuf_free(&s);
    plot_range_init(&r);
    plot_range_add(&r, 2.0);
    plot_range_add(&r, 9.0);
    plot_axis(&s, "y", &r, 1, 0.04, NAN, NAN);
    ck_assert_ptr_nonnull(strstr(s.data, "set ytics (2, 5)"));
    sbuf_free(&s);
}
END_TEST

/* plot_order: runs given as warm-up 30, 6, 1 (a sweep's names sort so) come out as no
 * warm-up, 6, 30; a seed of one configuration stays after its first. */
START_TEST(test_order)
{
    plot_run_t r[4];
    plot_set_t set;
    run(&r[0], 0, "w30", 30, 1e-3, 2.0);
    run(&r[1], 1, "w6", 6, 1e-3, 2.0);
    run(&r[2], 2, "w1", 1, 1e-3, 2.0);
    run(&r[3], 3, "w6s2", 6, 1e-3, 2.0);
    r[3].cfg.init.seed = 2;
    set_of(&set, r, 4);
    plot_order(&set);
    ck_assert_str_eq(r[0].name, "w1");
    ck_assert_str_eq(r[1].name, "w6");
    ck_assert_str_eq(r[2].name, "w6s2");
    ck_assert_str_eq(r[3].name, "w30");
}
END_TEST

Suite *figures_suite(void)
{
    Suite *s = suite_create("figures");
    TCase *tc = tcase_create("labels");
    tcase_add_test(tc, test_diff_keys);
    tcase_add_test(tc, test_covary);
    tcase_add_test(tc, test_paper_figure);
    tcase_add_test(tc, test_palette);
    tcase_add_test(tc, test_same_run);
    tcase_add_test(tc, test_heat_cells);
    tcase_add_test(tc, test_band_floor);
    tcase_add_test(tc, test_loss_marks);
    tcase_add_test(tc, test_atlas_cells);
    tcase_add_test(tc, test_table_plateau);
    tcase_add_test(tc, test_plain_keys);
    tcase_add_test(tc, test_log_tics);
    tcase_add_test(tc, test_order);
    suite_add_tcase(s, tc);
    return s;
}
