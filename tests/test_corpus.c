/* test_corpus.c — the sentence-pair reader and its batches (src/data/corpus.h), on fixture
 * directories the tests write themselves. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_rng.h>
#include "data/corpus.h"

Suite *corpus_suite(void);

static const char *const FILES[4] = {"train.en.ids", "train.de.ids", "valid.en.ids",
                                     "valid.de.ids"};

/* A fresh directory with the four files (a NULL content leaves that file out). */
static void write_dir(char *dir, const char *const content[4])
{
    strcpy(dir, "/tmp/stability_corpus_test.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (int k = 0; k < 4; k++) {
        if (!content[k]) continue;
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, FILES[k]);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(content[k], f);
        fclose(f);
    }
}

static void remove_dir(const char *dir)
{
    for (int k = 0; k < 4; k++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, FILES[k]);
        unlink(path);
    }
    rmdir(dir);
}

/* Row b of bt is pair (s, t) in the layout of corpus.h, with the batch's strides S, T. */
static void check_row(const batch_t *bt, int b, const int32_t *s, int ls, const int32_t *t,
                      int lt)
{
    const int32_t *src = bt->src + b * bt->S, *tok = bt->tokens + b * bt->T,
                  *tgt = bt->targets + b * bt->T;
    ck_assert_int_ge(bt->S, ls + 1);
    ck_assert_int_ge(bt->T, lt + 1);
    for (int j = 0; j < bt->S; j++)
        ck_assert_int_eq(src[j], j < ls ? s[j] : j == ls ? CORPUS_EOS : -1);
    for (int j = 0; j < bt->T; j++) {
        ck_assert_int_eq(tok[j], j == 0 ? CORPUS_BOS : j <= lt ? t[j - 1] : -1);
        ck_assert_int_eq(tgt[j], j < lt ? t[j] : j == lt ? CORPUS_EOS : -1);
    }
}

/* The exact arrays of a two-pair batch: sorted by source length, padded to the longest. */
START_TEST(test_layout)
{
    const char *content[4] = {"5 6\n8\n", "7\n9 10 11\n", "5\n", "1 6\n"};
    char dir[64], err[512];
    write_dir(dir, content);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, 20, 10, 10, err, sizeof err), 0);
    corpus_plan_t p;
    ck_assert_int_eq(corpus_plan(&p, &c, CORPUS_TRAIN, 100, NULL, err, sizeof err), 0);
    ck_assert_int_eq(p.n_batches, 1);
    int32_t src[20], tok[20], tgt[20];
    batch_t bt = {.src = src, .tokens = tok, .targets = tgt};
    corpus_plan_fill(&p, &c, 0, &bt);
    const int32_t want_src[] = {8, 3, -1, 5, 6, 3};
    const int32_t want_tok[] = {2, 9, 10, 11, 2, 7, -1, -1};
    const int32_t want_tgt[] = {9, 10, 11, 3, 7, 3, -1, -1};
    ck_assert_int_eq(bt.B, 2);
    ck_assert_int_eq(bt.S, 3);
    ck_assert_int_eq(bt.T, 4);
    for (int j = 0; j < 6; j++) ck_assert_int_eq(src[j], want_src[j]);
    for (int j = 0; j < 8; j++) {
        ck_assert_int_eq(tok[j], want_tok[j]);
        ck_assert_int_eq(tgt[j], want_tgt[j]);
    }
    /* valid: unk (1) is a legal id; its one pair. */
    corpus_plan_free(&p);
    ck_assert_int_eq(corpus_plan(&p, &c, CORPUS_VALID, 100, NULL, err, sizeof err), 0);
    corpus_plan_fill(&p, &c, 0, &bt);
    const int32_t s[] = {5}, t[] = {1, 6};
    ck_assert_int_eq(bt.B, 1);
    check_row(&bt, 0, s, 1, t, 2);
    corpus_plan_free(&p);
    corpus_close(&c);
    remove_dir(dir);
}
END_TEST

/* Every bad file gives rc and exactly the message DIR/FILE:LINE: ..., and nothing leaks. */
START_TEST(test_errors)
{
    static const struct {
        const char *content[4];
        int vocab, rc;
        const char *msg;   /* after "DIR/" */
    } cases[] = {
        {{"5\n6\n7\n", "5\n6\n9000\n", "5\n", "5\n"}, 8000, 2,
         "train.de.ids:3: id 9000 >= model.vocab 8000"},
        {{"5\n", "5\n", "2 5\n", "5\n"}, 100, 2,
         "valid.en.ids:1: id 2 is reserved (0 pad, 2 BOS, 3 EOS)"},
        {{"5 0\n", "5\n", "5\n", "5\n"}, 100, 2,
         "train.en.ids:1: id 0 is reserved (0 pad, 2 BOS, 3 EOS)"},
        {{"5\n", "5\n", "5\n", "5 -4\n"}, 100, 2, "valid.de.ids:1: id -4 < 0"},
        {{"5\n5 x7\n", "5\n5\n", "5\n", "5\n"}, 100, 2, "train.en.ids:2: not an id: 'x7'"},
        {{"5\n", "5\n", "5\n\n", "5\n6\n"}, 100, 2, "valid.en.ids:2: empty sentence"},
        {{"5\n6\n7\n", "5\n6\n", "5\n", "5\n"}, 100, 2,
         "train.en.ids:3: DIR/train.de.ids has only 2 lines"},
        {{"5\n", "5\n", "5\n", NULL}, 100, 2,
         "valid.de.ids: cannot open: No such file or directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[64], err[512] = "", want[600];
        write_dir(dir, cases[i].content);
        corpus_t c;
        ck_assert_int_eq(corpus_open(&c, dir, cases[i].vocab, 64, 64, err, sizeof err),
                         cases[i].rc);
        snprintf(want, sizeof want, "%s/%s", dir, cases[i].msg);
        char *at = strstr(want, "DIR/");       /* the second file named in the message */
        if (at) {
            char tail[600];
            snprintf(tail, sizeof tail, "%s/%s", dir, at + 4);
            strcpy(at, tail);
        }
        ck_assert_str_eq(err, want);
        ck_assert_ptr_null(c.split[CORPUS_TRAIN].pool);   /* nothing left allocated */
        remove_dir(dir);
    }
    /* the largest piece id and unk are fine */
    const char *ok[4] = {"1 7999\n", "4\n", "5\n", "5\n"};
    char dir[64], err[512];
    write_dir(dir, ok);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, 8000, 64, 64, err, sizeof err), 0);
    corpus_close(&c);
    remove_dir(dir);
    /* a NUL byte inside a line: "4\0 5" is an error, never the sentence "4" */
    const char *nul[4] = {"5\n", "5\n", "5\n", "5\n"};
    write_dir(dir, nul);
    char path[256], want[600];
    snprintf(path, sizeof path, "%s/train.de.ids", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fwrite("4\0 5\n", 1, 5, f);
    fclose(f);
    ck_assert_int_eq(corpus_open(&c, dir, 100, 64, 64, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:1: line contains a NUL byte", path);
    ck_assert_str_eq(err, want);
    remove_dir(dir);
}
END_TEST

/* |s|+1 > max_src or |t|+1 > max_tgt drops a pair (counted once), the rest are kept. */
START_TEST(test_length_filter)
{
    /* (|s|, |t|): (1,2) (3,4) (4,1) (1,5) (4,5) (3,1); max_src 4, max_tgt 5 keep 3 of 6 */
    const char *content[4] = {"4\n4 5 6\n4 5 6 7\n4\n4 5 6 7\n4 5 6\n",
                              "4 5\n4 5 6 7\n4\n4 5 6 7 8\n4 5 6 7 8\n4\n",
                              "4 5\n4 5 6 7 8 9 10 11 12\n", "4 5\n4\n"};
    char dir[64], err[512];
    write_dir(dir, content);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, 100, 4, 5, err, sizeof err), 0);
    ck_assert_int_eq(c.split[CORPUS_TRAIN].n, 3);
    ck_assert_int_eq(c.skipped[CORPUS_TRAIN], 3);
    ck_assert_int_eq(c.split[CORPUS_VALID].n, 1);
    ck_assert_int_eq(c.skipped[CORPUS_VALID], 1);
    const int want_s[] = {1, 3, 3}, want_t[] = {2, 4, 1};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(c.split[CORPUS_TRAIN].src_len[i], want_s[i]);
        ck_assert_int_eq(c.split[CORPUS_TRAIN].tgt_len[i], want_t[i]);
    }
    corpus_close(&c);
    /* no training pair fits: an error, not an empty split */
    ck_assert_int_eq(corpus_open(&c, dir, 100, 2, 2, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "no pair fits max_src 2 and max_tgt 2 (6 skipped)"));
    remove_dir(dir);
}
END_TEST

/* A random fixture: pair i's source starts with id 4 + i (so a row names its pair), lengths
 * 1..30 on both sides. */
enum { NP = 400, MAXLEN = 30, FIX_VOCAB = 1000 };
static int32_t fs[NP][MAXLEN], ft[NP][MAXLEN];
static int fsl[NP], ftl[NP];

static void write_random_dir(char *dir)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 42);
    char *text[2];
    size_t len[2];
    FILE *f[2] = {open_memstream(&text[0], &len[0]), open_memstream(&text[1], &len[1])};
    for (int i = 0; i < NP; i++) {
        fsl[i] = 1 + (int)gsl_rng_uniform_int(r, MAXLEN);
        ftl[i] = 1 + (int)gsl_rng_uniform_int(r, MAXLEN);
        for (int j = 0; j < fsl[i]; j++)
            fs[i][j] = j == 0 ? 4 + i : 4 + (int)gsl_rng_uniform_int(r, FIX_VOCAB - 4);
        for (int j = 0; j < ftl[i]; j++) ft[i][j] = 4 + (int)gsl_rng_uniform_int(r, FIX_VOCAB - 4);
        for (int j = 0; j < fsl[i]; j++) fprintf(f[0], j ? " %d" : "%d", fs[i][j]);
        for (int j = 0; j < ftl[i]; j++) fprintf(f[1], j ? " %d" : "%d", ft[i][j]);
        fputc('\n', f[0]);
        fputc('\n', f[1]);
    }
    fclose(f[0]);
    fclose(f[1]);
    const char *content[4] = {text[0], text[1], text[0], text[1]};
    write_dir(dir, content);
    free(text[0]);
    free(text[1]);
    gsl_rng_free(r);
}

static gsl_rng *rng_seeded(unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

/* Buffers for the largest batch of a plan. */
typedef struct {
    int32_t *src, *tok, *tgt;
} bufs_t;

static batch_t batch_for(bufs_t *m, long rows, long S, long T)
{
    m->src = malloc((size_t)(rows * S) * sizeof(int32_t));
    m->tok = malloc((size_t)(rows * T) * sizeof(int32_t));
    m->tgt = malloc((size_t)(rows * T) * sizeof(int32_t));
    return (batch_t){.src = m->src, .tokens = m->tok, .targets = m->tgt};
}

static void bufs_free(bufs_t *m)
{
    free(m->src);
    free(m->tok);
    free(m->tgt);
}

/* One epoch of a plan: every pair exactly once, every row in the layout, padded to the
 * batch's longest row, no batch over max_tokens, buffers as announced. */
static void check_epoch(const corpus_plan_t *p, const corpus_t *c, int max_tokens)
{
    bufs_t m;
    batch_t bt = batch_for(&m, p->max_rows, p->max_S, p->max_T);
    int seen[NP] = {0};
    for (long i = 0; i < p->n_batches; i++) {
        corpus_plan_fill(p, c, i, &bt);
        ck_assert_int_le((long)bt.B * (bt.S > bt.T ? bt.S : bt.T), max_tokens);
        ck_assert_int_le(bt.B, p->max_rows);
        ck_assert_int_le(bt.S, p->max_S);
        ck_assert_int_le(bt.T, p->max_T);
        int S = 0, T = 0;
        for (int b = 0; b < bt.B; b++) {
            const int k = bt.src[b * bt.S] - 4;
            ck_assert(k >= 0 && k < NP);
            seen[k]++;
            check_row(&bt, b, fs[k], fsl[k], ft[k], ftl[k]);
            if (fsl[k] + 1 > S) S = fsl[k] + 1;
            if (ftl[k] + 1 > T) T = ftl[k] + 1;
        }
        ck_assert_int_eq(bt.S, S);
        ck_assert_int_eq(bt.T, T);
    }
    for (int k = 0; k < NP; k++) ck_assert_int_eq(seen[k], 1);
    bufs_free(&m);
}

START_TEST(test_plan_epoch)
{
    char dir[64], err[512];
    write_random_dir(dir);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, FIX_VOCAB, 64, 64, err, sizeof err), 0);
    for (int mt = 31; mt <= 1024; mt *= 2) {
        gsl_rng *r = rng_seeded(7);
        corpus_plan_t p;
        ck_assert_int_eq(corpus_plan(&p, &c, CORPUS_TRAIN, mt, r, err, sizeof err), 0);
        check_epoch(&p, &c, mt);          /* sorted order */
        corpus_plan_shuffle(&p, r);
        check_epoch(&p, &c, mt);          /* epoch 1 */
        corpus_plan_shuffle(&p, r);
        check_epoch(&p, &c, mt);          /* epoch 2 */
        corpus_plan_free(&p);
        gsl_rng_free(r);
    }
    corpus_close(&c);
    remove_dir(dir);
}
END_TEST

/* Before any shuffle the batches follow (|s|, |t|) order, and each is full as fairseq's
 * batch_by_size makes them: the next batch's first pair would have overflowed it. */
START_TEST(test_plan_sorted_and_greedy)
{
    char dir[64], err[512];
    write_random_dir(dir);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, FIX_VOCAB, 64, 64, err, sizeof err), 0);
    const int mt = 200;
    corpus_plan_t p;
    ck_assert_int_eq(corpus_plan(&p, &c, CORPUS_TRAIN, mt, NULL, err, sizeof err), 0);
    bufs_t m;
    batch_t bt = batch_for(&m, p.max_rows, p.max_S, p.max_T);
    int prev_s = 0, prev_t = 0, rows = 0, width = 0;
    for (long i = 0; i < p.n_batches; i++) {
        corpus_plan_fill(&p, &c, i, &bt);
        for (int b = 0; b < bt.B; b++) {
            const int k = bt.src[b * bt.S] - 4;
            ck_assert(fsl[k] > prev_s || (fsl[k] == prev_s && ftl[k] >= prev_t));
            prev_s = fsl[k];
            prev_t = ftl[k];
            const int w = (fsl[k] > ftl[k] ? fsl[k] : ftl[k]) + 1;
            if (b == 0 && i > 0)   /* it did not fit in the previous batch */
                ck_assert_int_gt((rows + 1) * (w > width ? w : width), mt);
        }
        rows = bt.B;
        width = bt.S > bt.T ? bt.S : bt.T;
    }
    bufs_free(&m);
    corpus_plan_free(&p);
    corpus_close(&c);
    remove_dir(dir);
}
END_TEST

/* The first pair of every batch of an epoch: the batch order. */
static void epoch_order(const corpus_t *c, unsigned long seed, int epochs, int *first,
                        long *n_batches)
{
    gsl_rng *r = rng_seeded(seed);
    char err[512];
    corpus_plan_t p;
    ck_assert_int_eq(corpus_plan(&p, c, CORPUS_TRAIN, 128, r, err, sizeof err), 0);
    bufs_t m;
    batch_t bt = batch_for(&m, p.max_rows, p.max_S, p.max_T);
    for (int e = 0; e < epochs; e++) corpus_plan_shuffle(&p, r);
    for (long i = 0; i < p.n_batches; i++) {
        corpus_plan_fill(&p, c, i, &bt);
        first[i] = bt.src[0];
    }
    *n_batches = p.n_batches;
    bufs_free(&m);
    corpus_plan_free(&p);
    gsl_rng_free(r);
}

/* Same seed, same batches in the same order; another seed or epoch, another order. */
START_TEST(test_plan_determinism)
{
    char dir[64], err[512];
    write_random_dir(dir);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, FIX_VOCAB, 64, 64, err, sizeof err), 0);
    int a[NP], b[NP], d[NP], e[NP];
    long na, nb, nd, ne;
    epoch_order(&c, 7, 1, a, &na);
    epoch_order(&c, 7, 1, b, &nb);
    epoch_order(&c, 8, 1, d, &nd);
    epoch_order(&c, 7, 2, e, &ne);
    ck_assert_int_gt(na, 10);
    ck_assert_int_eq(na, nb);
    ck_assert_mem_eq(a, b, (size_t)na * sizeof a[0]);
    ck_assert(nd != na || memcmp(a, d, (size_t)na * sizeof a[0]) != 0);
    ck_assert_int_eq(ne, na);
    ck_assert(memcmp(a, e, (size_t)na * sizeof a[0]) != 0);
    corpus_close(&c);
    remove_dir(dir);
}
END_TEST

/* Ties in (|s|, |t|) are broken by the rng (by line without one); the lengths sequence is
 * the same whatever the seed. A shuffle depends only on the rng state, not on earlier ones. */
START_TEST(test_plan_ties_and_shuffle)
{
    char dir[64], err[512];
    write_random_dir(dir);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, FIX_VOCAB, 64, 64, err, sizeof err), 0);
    corpus_plan_t p[3];
    gsl_rng *r7 = rng_seeded(7), *r8 = rng_seeded(8);
    ck_assert_int_eq(corpus_plan(&p[0], &c, CORPUS_TRAIN, 128, r7, err, sizeof err), 0);
    ck_assert_int_eq(corpus_plan(&p[1], &c, CORPUS_TRAIN, 128, r8, err, sizeof err), 0);
    ck_assert_int_eq(corpus_plan(&p[2], &c, CORPUS_TRAIN, 128, NULL, err, sizeof err), 0);
    int ties_differ = 0;
    for (long k = 0; k < NP; k++) {
        const long a = p[0].order[k], b = p[1].order[k], n = p[2].order[k];
        ck_assert_int_eq(fsl[a], fsl[b]);
        ck_assert_int_eq(ftl[a], ftl[b]);
        ties_differ += a != b;
        if (k > 0 && fsl[n] == fsl[p[2].order[k - 1]] && ftl[n] == ftl[p[2].order[k - 1]])
            ck_assert_int_gt(n, p[2].order[k - 1]);       /* no rng: line order */
    }
    ck_assert_int_gt(ties_differ, 0);
    /* p[0] shuffled by an rng at seed 5; p[1] first by seed 9, then by seed 5: same order */
    gsl_rng *r5 = rng_seeded(5), *r9 = rng_seeded(9), *r5b = rng_seeded(5);
    corpus_plan_shuffle(&p[2], r5);
    corpus_plan_t q;
    ck_assert_int_eq(corpus_plan(&q, &c, CORPUS_TRAIN, 128, NULL, err, sizeof err), 0);
    corpus_plan_shuffle(&q, r9);
    corpus_plan_shuffle(&q, r5b);
    ck_assert_mem_eq(p[2].perm, q.perm, (size_t)q.n_batches * sizeof *q.perm);
    for (int i = 0; i < 3; i++) corpus_plan_free(&p[i]);
    corpus_plan_free(&q);
    gsl_rng_free(r5);
    gsl_rng_free(r5b);
    gsl_rng_free(r7);
    gsl_rng_free(r8);
    gsl_rng_free(r9);
    corpus_close(&c);
    remove_dir(dir);
}
END_TEST

/* Validation: no rng, the same fixed batches every time; too small max_tokens is an error. */
START_TEST(test_plan_valid_fixed)
{
    char dir[64], err[512];
    write_random_dir(dir);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, FIX_VOCAB, 64, 64, err, sizeof err), 0);
    corpus_plan_t p, q;
    ck_assert_int_eq(corpus_plan(&p, &c, CORPUS_VALID, 256, NULL, err, sizeof err), 0);
    ck_assert_int_eq(corpus_plan(&q, &c, CORPUS_VALID, 256, NULL, err, sizeof err), 0);
    ck_assert_int_eq(p.n_batches, q.n_batches);
    ck_assert_mem_eq(p.order, q.order, (size_t)c.split[CORPUS_VALID].n * sizeof *p.order);
    check_epoch(&p, &c, 256);
    corpus_plan_free(&q);
    corpus_plan_free(&p);
    ck_assert_int_eq(corpus_plan(&p, &c, CORPUS_VALID, 30, NULL, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "max_tokens 30 < 31"));
    ck_assert_ptr_null(p.order);
    corpus_close(&c);
    remove_dir(dir);
}
END_TEST

/* corpus_sample: rows in the layout, padded to the longest drawn row; same seed, same batch. */
START_TEST(test_sample)
{
    char dir[64], err[512];
    write_random_dir(dir);
    corpus_t c;
    ck_assert_int_eq(corpus_open(&c, dir, FIX_VOCAB, 64, 64, err, sizeof err), 0);
    enum { B = 16 };
    int32_t src[2][B * 64], tok[2][B * 64], tgt[2][B * 64];
    for (int run = 0; run < 2; run++) {
        gsl_rng *r = rng_seeded(3);
        batch_t bt = {.src = src[run], .tokens = tok[run], .targets = tgt[run]};
        corpus_sample(&c, CORPUS_TRAIN, r, B, &bt);
        ck_assert_int_eq(bt.B, B);
        int S = 0, T = 0;
        for (int b = 0; b < B; b++) {
            const int k = bt.src[b * bt.S] - 4;
            ck_assert(k >= 0 && k < NP);
            check_row(&bt, b, fs[k], fsl[k], ft[k], ftl[k]);
            if (fsl[k] + 1 > S) S = fsl[k] + 1;
            if (ftl[k] + 1 > T) T = ftl[k] + 1;
        }
        ck_assert_int_eq(bt.S, S);
        ck_assert_int_eq(bt.T, T);
        gsl_rng_free(r);
    }
    ck_assert_mem_eq(src[0], src[1], sizeof src[0]);
    ck_assert_mem_eq(tgt[0], tgt[1], sizeof tgt[0]);
    corpus_close(&c);
    remove_dir(dir);
}
END_TEST

Suite *corpus_suite(void)
{
    Suite *s = suite_create("corpus");
    TCase *tc = tcase_create("corpus");
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_length_filter);
    tcase_add_test(tc, test_plan_epoch);
    tcase_add_test(tc, test_plan_sorted_and_greedy);
    tcase_add_test(tc, test_plan_determinism);
    tcase_add_test(tc, test_plan_ties_and_shuffle);
    tcase_add_test(tc, test_plan_valid_fixed);
    tcase_add_test(tc, test_sample);
    suite_add_tcase(s, tc);
    return s;
}
