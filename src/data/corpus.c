/* corpus.c — reading the sentence-pair id files and cutting them into batches (corpus.h). */
#include "data/corpus.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <gsl/gsl_randist.h>
#include "util/fsutil.h"

#define CORPUS_PATH_MAX 4096

static const char *const SPLIT_NAME[CORPUS_SPLITS] = {"train", "valid"};
static const char *const SIDE_NAME[2] = {"en", "de"};

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* Make *buf hold at least need elements of size elem (capacity doubles). 0, or 1 if OOM. */
static int reserve(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) return 1;
        n *= 2;
    }
    void *q = realloc(*buf, n * elem);
    if (!q) return 1;
    *buf = q;
    *cap = n;
    return 0;
}

/* A growable list of ids: one side of one line. */
typedef struct {
    int32_t *id;
    size_t n, cap;
} ids_t;

/* Parse one line of space-separated ids into v. Every id must be CORPUS_UNK or in
 * [CORPUS_FIRST_PIECE, vocab), and the line must not be empty. 0, 1 (OOM) or 2. */
static int parse_ids(const char *line, const char *path, long lineno, int vocab, ids_t *v,
                     char *err, size_t errlen)
{
    v->n = 0;
    for (const char *p = line;;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        char *end;
        errno = 0;
        const long id = strtol(p, &end, 10);
        const int len = (int)(end - p);
        if (end == p || (*end && !isspace((unsigned char)*end))) {
            int bad = 0;
            while (p[bad] && !isspace((unsigned char)p[bad]) && bad < 20) bad++;
            return fail(err, errlen, 2, "%s:%ld: not an id: '%.*s'", path, lineno, bad, p);
        }
        if (id >= vocab || (errno == ERANGE && id > 0))
            return fail(err, errlen, 2, "%s:%ld: id %.*s >= model.vocab %d", path, lineno, len,
                        p, vocab);
        if (id < 0) return fail(err, errlen, 2, "%s:%ld: id %.*s < 0", path, lineno, len, p);
        if (id != CORPUS_UNK && id < CORPUS_FIRST_PIECE)
            return fail(err, errlen, 2, "%s:%ld: id %ld is reserved (0 pad, 2 BOS, 3 EOS)",
                        path, lineno, id);
        if (reserve((void **)&v->id, &v->cap, v->n + 1, sizeof *v->id))
            return fail(err, errlen, 1, "%s:%ld: out of memory", path, lineno);
        v->id[v->n++] = (int32_t)id;
        p = end;
    }
    if (v->n == 0) return fail(err, errlen, 2, "%s:%ld: empty sentence", path, lineno);
    return 0;
}

/* A split while it is read: the arrays of corpus_split_t and their capacities. */
typedef struct {
    corpus_split_t *sp;
    size_t pool_n, pool_cap, at_cap, slen_cap, tlen_cap, line_cap;
} builder_t;

/* Append the pair (s, t) of line lineno to the split. 0, or 1 if out of memory. */
static int push_pair(builder_t *b, const ids_t *s, const ids_t *t, long lineno)
{
    corpus_split_t *sp = b->sp;
    const size_t need = (size_t)sp->n + 1;
    if (reserve((void **)&sp->pool, &b->pool_cap, b->pool_n + s->n + t->n, sizeof *sp->pool) ||
        reserve((void **)&sp->at, &b->at_cap, need, sizeof *sp->at) ||
        reserve((void **)&sp->src_len, &b->slen_cap, need, sizeof *sp->src_len) ||
        reserve((void **)&sp->tgt_len, &b->tlen_cap, need, sizeof *sp->tgt_len) ||
        reserve((void **)&sp->line, &b->line_cap, need, sizeof *sp->line))
        return 1;
    sp->line[sp->n] = lineno;
    sp->at[sp->n] = b->pool_n;
    sp->src_len[sp->n] = (int)s->n;
    sp->tgt_len[sp->n] = (int)t->n;
    memcpy(sp->pool + b->pool_n, s->id, s->n * sizeof *s->id);
    memcpy(sp->pool + b->pool_n + s->n, t->id, t->n * sizeof *t->id);
    b->pool_n += s->n + t->n;
    sp->n++;
    return 0;
}

/* path opened for reading if it is a regular file (util/fsutil.h), else NULL with errno. */
static FILE *open_regular(const char *path)
{
    const int fd = fsutil_open_read(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
    if (!f && fd >= 0) {
        const int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* The next line of both files into line[] (got[k] bytes each, with its newline), or 0 at the
 * end of both. 1 (I/O error), 2 when one file ends before the other; *eof set at the common
 * end. */
static int next_lines(FILE *f[2], char *line[2], size_t cap[2], char path[2][CORPUS_PATH_MAX],
                      long lineno, ssize_t got[2], int *eof, char *err, size_t errlen)
{
    for (int k = 0; k < 2; k++) {
        got[k] = getline(&line[k], &cap[k], f[k]);
        if (got[k] < 0 && ferror(f[k]))
            return fail(err, errlen, 1, "%s:%ld: cannot read: %s", path[k], lineno,
                        strerror(errno));
    }
    for (int k = 0; k < 2; k++)   // "4\0 5" is not the line "4"
        if (got[k] > 0 && memchr(line[k], '\0', (size_t)got[k]))
            return fail(err, errlen, 2, "%s:%ld: line contains a NUL byte", path[k], lineno);
    *eof = got[0] < 0 && got[1] < 0;
    if ((got[0] < 0) != (got[1] < 0)) {
        const int longer = got[0] < 0;
        return fail(err, errlen, 2, "%s:%ld: %s has only %ld lines", path[longer], lineno,
                    path[!longer], lineno - 1);
    }
    return 0;
}

/* Read DIR/SPLIT.en.ids and DIR/SPLIT.de.ids into c->split[split], with the SHA-256 and size
 * of each file's bytes as read into hex[side], bytes[side]. 0, 1 or 2. */
static int read_split(corpus_t *c, const char *dir, int split, char hex[2][SHA256_HEX],
                      unsigned long long bytes[2], char *err, size_t errlen)
{
    char path[2][CORPUS_PATH_MAX];
    FILE *f[2] = {NULL, NULL};
    char *line[2] = {NULL, NULL};
    size_t cap[2] = {0, 0};
    ids_t side[2] = {{0}, {0}};
    builder_t b = {.sp = &c->split[split]};
    sha256_t h[2] = {{NULL}, {NULL}};
    int rc = 0;
    for (int k = 0; k < 2; k++) bytes[k] = 0;
    for (int k = 0; k < 2 && rc == 0; k++)
        if (sha256_begin(&h[k])) rc = fail(err, errlen, 1, "corpus_open: out of memory");
    for (int k = 0; k < 2 && rc == 0; k++) {
        const int len = snprintf(path[k], sizeof path[k], "%s/%s.%s.ids", dir,
                                 SPLIT_NAME[split], SIDE_NAME[k]);
        if (len < 0 || (size_t)len >= sizeof path[k])
            rc = fail(err, errlen, 2, "corpus_open: directory name too long: %.80s...", dir);
        else if (!(f[k] = open_regular(path[k])))   // a FIFO would block, a device never end
            rc = fail(err, errlen, 2, "%s: cannot open: %s", path[k],
                      errno == EINVAL ? "not a regular file" : strerror(errno));
    }
    for (long lineno = 1; rc == 0; lineno++) {
        int eof = 0;
        ssize_t got[2];
        rc = next_lines(f, line, cap, path, lineno, got, &eof, err, errlen);
        if (rc || eof) break;
        for (int k = 0; k < 2; k++) {   // the identity of exactly the bytes parsed
            sha256_add(&h[k], line[k], (size_t)got[k]);
            bytes[k] += (unsigned long long)got[k];
        }
        for (int k = 0; k < 2 && rc == 0; k++)
            rc = parse_ids(line[k], path[k], lineno, c->vocab, &side[k], err, errlen);
        if (rc) break;
        if ((long)side[0].n + 1 > c->max_src || (long)side[1].n + 1 > c->max_tgt)
            c->skipped[split]++;
        else if (push_pair(&b, &side[0], &side[1], lineno))
            rc = fail(err, errlen, 1, "%s:%ld: out of memory", path[0], lineno);
    }
    if (rc == 0 && c->split[split].n == 0)
        rc = fail(err, errlen, 2, "%s: no pair fits max_src %d and max_tgt %d (%ld skipped)",
                  path[0], c->max_src, c->max_tgt, c->skipped[split]);
    for (int k = 0; k < 2 && rc == 0; k++)
        if (sha256_end(&h[k], hex[k])) rc = fail(err, errlen, 1, "corpus_open: out of memory");
    for (int k = 0; k < 2; k++) {
        sha256_abort(&h[k]);
        if (f[k]) fclose(f[k]);
        free(line[k]);
        free(side[k].id);
    }
    return rc;
}

int corpus_open(corpus_t *c, const char *dir, int vocab, int max_src, int max_tgt,
                char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (vocab <= CORPUS_FIRST_PIECE)
        return fail(err, errlen, 2, "corpus_open: model.vocab %d: no room for pieces (ids 0-3 "
                    "are pad, unk, BOS, EOS)", vocab);
    if (max_src < 2 || max_tgt < 2)
        return fail(err, errlen, 2, "corpus_open: max_src %d, max_tgt %d: each must be >= 2 "
                    "(one token and EOS/BOS)", max_src, max_tgt);
    c->vocab = vocab;
    c->max_src = max_src;
    c->max_tgt = max_tgt;
    char hex[DATA_CORPUS_FILES][SHA256_HEX];   // DATA_CORPUS_FILE's order: split, then side
    unsigned long long bytes[DATA_CORPUS_FILES];
    for (int s = 0; s < CORPUS_SPLITS; s++) {
        const int rc = read_split(c, dir, s, hex + 2 * s, bytes + 2 * s, err, errlen);
        if (rc) {
            corpus_close(c);
            return rc;
        }
    }
    if (data_identity_of_corpus(hex, bytes, &c->id)) {
        corpus_close(c);
        return fail(err, errlen, 1, "corpus_open: out of memory");
    }
    return 0;
}

void corpus_close(corpus_t *c)
{
    for (int s = 0; s < CORPUS_SPLITS; s++) {
        free(c->split[s].pool);
        free(c->split[s].at);
        free(c->split[s].src_len);
        free(c->split[s].tgt_len);
        free(c->split[s].line);
    }
    memset(c, 0, sizeof *c);
}

/* Row i of a batch with row strides S and T: pair `pair` of sp in the layout of corpus.h.
 * src: (S) s + [EOS], −1 after; tokens: (T) [BOS] + t, −1 after; targets: (T) t + [EOS]. */
static void write_row(const corpus_split_t *sp, long pair, int32_t *src, int S,
                      int32_t *tokens, int32_t *targets, int T)
{
    const int ls = sp->src_len[pair], lt = sp->tgt_len[pair];
    const int32_t *s = sp->pool + sp->at[pair], *t = s + ls;
    for (int j = 0; j < S; j++) src[j] = j < ls ? s[j] : j == ls ? CORPUS_EOS : -1;
    for (int j = 0; j < T; j++) {
        tokens[j] = j == 0 ? CORPUS_BOS : j <= lt ? t[j - 1] : -1;
        targets[j] = j < lt ? t[j] : j == lt ? CORPUS_EOS : -1;
    }
}

void corpus_sample(const corpus_t *c, int split, gsl_rng *rng, int B, batch_t *out)
{
    const corpus_split_t *sp = &c->split[split];
    const int MS = c->max_src, MT = c->max_tgt;
    int S = 1, T = 1;
    /* Rows at the full strides first (the pairs are drawn once), then packed to S and T. */
    for (int b = 0; b < B; b++) {
        const long i = (long)gsl_rng_uniform_int(rng, (unsigned long)sp->n);
        write_row(sp, i, out->src + (size_t)b * MS, MS, out->tokens + (size_t)b * MT,
                  out->targets + (size_t)b * MT, MT);
        if (sp->src_len[i] + 1 > S) S = sp->src_len[i] + 1;
        if (sp->tgt_len[i] + 1 > T) T = sp->tgt_len[i] + 1;
    }
    for (int b = 1; b < B; b++) {   /* row b moves down: b·S ≤ b·MS, memmove keeps the rest */
        memmove(out->src + (size_t)b * S, out->src + (size_t)b * MS, (size_t)S * sizeof(int32_t));
        memmove(out->tokens + (size_t)b * T, out->tokens + (size_t)b * MT,
                (size_t)T * sizeof(int32_t));
        memmove(out->targets + (size_t)b * T, out->targets + (size_t)b * MT,
                (size_t)T * sizeof(int32_t));
    }
    out->B = B;
    out->S = S;
    out->T = T;
}

/* The sort key of one pair: fairseq sorts by source size, then target size, stably after a
 * random permutation, which is this order with rank = the position in that permutation. */
typedef struct {
    int s, t;
    long rank, pair;
} sort_key_t;

static int key_cmp(const void *pa, const void *pb)
{
    const sort_key_t *a = pa, *b = pb;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* p->order: the split's pairs sorted by (|s|, |t|), ties by rng (NULL: by line). 0 or 1. */
static int sort_pairs(corpus_plan_t *p, const corpus_split_t *sp, gsl_rng *rng)
{
    const long n = sp->n;
    sort_key_t *key = malloc((size_t)n * sizeof *key);
    if (!key) return 1;
    for (long i = 0; i < n; i++) p->order[i] = i;
    if (rng) gsl_ran_shuffle(rng, p->order, (size_t)n, sizeof *p->order);
    for (long k = 0; k < n; k++) {
        const long i = p->order[k];
        key[k] = (sort_key_t){sp->src_len[i], sp->tgt_len[i], k, i};
    }
    qsort(key, (size_t)n, sizeof *key, key_cmp);
    for (long k = 0; k < n; k++) p->order[k] = key[k].pair;
    free(key);
    return 0;
}

/* Tokens a pair adds to a batch's width: max(|s|+1, |t|+1) (fairseq's num_tokens). */
static int pair_width(const corpus_split_t *sp, long i)
{
    return (sp->src_len[i] > sp->tgt_len[i] ? sp->src_len[i] : sp->tgt_len[i]) + 1;
}

/* Cut p->order greedily: a pair opens a new batch when rows·width would pass max_tokens
 * (fairseq's batch_by_size); then the largest rows, S and T. */
static void cut_batches(corpus_plan_t *p, const corpus_split_t *sp, int max_tokens)
{
    const long n = sp->n;
    long rows = 0;
    int width = 0;
    p->n_batches = 0;
    for (long k = 0; k < n; k++) {
        const int w = pair_width(sp, p->order[k]);
        const int nw = w > width ? w : width;
        if (rows > 0 && (rows + 1) * (long)nw > max_tokens) {
            p->start[++p->n_batches] = k;
            rows = 0;
            width = w;
        } else {
            width = nw;
        }
        rows++;
    }
    if (n > 0) p->start[++p->n_batches] = n;
    p->max_rows = p->max_S = p->max_T = 0;
    for (long b = 0; b < p->n_batches; b++) {
        const long r = p->start[b + 1] - p->start[b];
        if (r > p->max_rows) p->max_rows = (int)r;
        for (long k = p->start[b]; k < p->start[b + 1]; k++) {
            const long i = p->order[k];
            if (sp->src_len[i] + 1 > p->max_S) p->max_S = sp->src_len[i] + 1;
            if (sp->tgt_len[i] + 1 > p->max_T) p->max_T = sp->tgt_len[i] + 1;
        }
    }
}

int corpus_plan(corpus_plan_t *p, const corpus_t *c, int split, int max_tokens, gsl_rng *rng,
                char *err, size_t errlen)
{
    const corpus_split_t *sp = &c->split[split];
    memset(p, 0, sizeof *p);
    p->split = split;
    for (long i = 0; i < sp->n; i++)
        if (pair_width(sp, i) > max_tokens)
            return fail(err, errlen, 2, "corpus_plan: max_tokens %d < %d, the width "
                        "max(|s|+1, |t|+1) of %s pair %ld", max_tokens, pair_width(sp, i),
                        SPLIT_NAME[split], i + 1);
    p->order = malloc(((size_t)sp->n + 1) * sizeof *p->order);
    p->start = malloc(((size_t)sp->n + 1) * sizeof *p->start);
    if (!p->order || !p->start || sort_pairs(p, sp, rng)) {
        corpus_plan_free(p);
        return fail(err, errlen, 1, "corpus_plan: out of memory");
    }
    p->start[0] = 0;
    cut_batches(p, sp, max_tokens);
    p->perm = malloc(((size_t)p->n_batches + 1) * sizeof *p->perm);
    if (!p->perm) {
        corpus_plan_free(p);
        return fail(err, errlen, 1, "corpus_plan: out of memory");
    }
    for (long b = 0; b < p->n_batches; b++) p->perm[b] = b;
    return 0;
}

void corpus_plan_shuffle(corpus_plan_t *p, gsl_rng *rng)
{
    for (long b = 0; b < p->n_batches; b++) p->perm[b] = b;
    gsl_ran_shuffle(rng, p->perm, (size_t)p->n_batches, sizeof *p->perm);
}

void corpus_plan_fill(const corpus_plan_t *p, const corpus_t *c, long i, batch_t *out)
{
    const corpus_split_t *sp = &c->split[p->split];
    const long b = p->perm[i], k0 = p->start[b], k1 = p->start[b + 1];
    int S = 1, T = 1;
    for (long k = k0; k < k1; k++) {
        const long pair = p->order[k];
        if (sp->src_len[pair] + 1 > S) S = sp->src_len[pair] + 1;
        if (sp->tgt_len[pair] + 1 > T) T = sp->tgt_len[pair] + 1;
    }
    for (long k = k0; k < k1; k++) {
        const size_t r = (size_t)(k - k0);
        write_row(sp, p->order[k], out->src + r * S, S, out->tokens + r * T,
                  out->targets + r * T, T);
    }
    out->B = (int)(k1 - k0);
    out->S = S;
    out->T = T;
}

void corpus_plan_free(corpus_plan_t *p)
{
    free(p->order);
    free(p->start);
    free(p->perm);
    memset(p, 0, sizeof *p);
}
