/* data.c — task batches from the run's gsl_rng: synthetic tasks and byte-level text. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "data/data.h"
#include "util/fsutil.h"

/* Read all of path into d->text (d->n_text bytes): a regular file only (a FIFO would block, a
 * device never end), its size checked before reading. Returns 0, 2 (cannot read) or 1 (OOM). */
static int read_text(data_t *d, const char *path, char *err, size_t errlen)
{
    const int fd = fsutil_open_read(path);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        const int e = errno;
        snprintf(err, errlen, "data.path: %s: cannot open: %s", path,
                 e == EINVAL ? "not a regular file" : strerror(e));
        if (fd >= 0) close(fd);
        return 2;
    }
    if ((unsigned long long)st.st_size > 0xFFFFFFFFULL) {   // offsets: 32-bit draws (open_text)
        snprintf(err, errlen, "data.path: %s: larger than 4 GiB", path);
        close(fd);
        return 2;
    }
    // the size as stat saw it, plus one byte to see a file that grew meanwhile
    const size_t cap = (size_t)st.st_size + 1;
    unsigned char *buf = malloc(cap);
    size_t n = 0;
    int rc = buf ? 0 : 1;
    while (!rc && n < cap) {
        const ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(err, errlen, "data.path: %s: cannot read: %s", path, strerror(errno));
            rc = 2;
        }
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (!rc && n == cap) {
        snprintf(err, errlen, "data.path: %s: grew while it was read", path);
        rc = 2;
    }
    if (rc == 1) snprintf(err, errlen, "data.path: %s: out of memory", path);
    if (!rc && sha256_hex(buf, n, d->id.sha256)) {   // the identity of the very bytes read
        snprintf(err, errlen, "data.path: %s: out of memory", path);
        rc = 1;
    }
    if (rc) { free(buf); return rc; }
    d->text = buf;
    d->n_text = n;
    d->id.bytes = n;
    return 0;
}

/* Zipf's law over n token ids: w[k] = (k+1)^(−s), unnormalised (the random task's tokens,
 * the enc-dec's content ids; data_token_entropy). */
static void zipf_weights(int n, double s, double *w)
{
    for (int k = 0; k < n; k++) w[k] = pow(k + 1.0, -s);
}

/* The text task: read the file, split it, count the validation batches. Returns 0, 1 or 2. */
static int open_text(data_t *d, const char *path, char *err, size_t errlen)
{
    const int rc = read_text(d, path, err, errlen);
    if (rc) return rc;
    const size_t n = d->n_text, W = (size_t)d->T + 1;   // a window: T tokens + the last target
    if (n == 0) {
        snprintf(err, errlen, "data.path: %s: empty file", path);
        return 2;
    }
    if (n > 0xFFFFFFFFUL) {   // offsets are drawn with gsl_rng_uniform_int (mt19937: 32 bits)
        snprintf(err, errlen, "data.path: %s: larger than 4 GiB", path);
        return 2;
    }
    size_t n_val = (size_t)(DATA_VAL_FRACTION * (double)n);
    if (n_val < W) n_val = W;
    if (n < n_val + W) {
        snprintf(err, errlen, "data.path: %s: %zu bytes, too short for model.seq_len = %d "
                 "(needs at least %zu: one window of seq_len+1 bytes for training and one for "
                 "validation)", path, n, d->T, 2 * W);
        return 2;
    }
    d->n_train = n - n_val;
    const size_t windows = n_val / W;   // non-overlapping validation windows
    size_t nb = (windows + (size_t)d->B - 1) / (size_t)d->B;
    if (nb < 1) nb = 1;
    if (nb > DATA_VAL_MAX_BATCHES) nb = DATA_VAL_MAX_BATCHES;
    d->val_batches = (int)nb;
    return 0;
}

int data_open(data_t *d, const config_t *cfg, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->task = cfg->data.task;
    d->arch = cfg->model.arch;
    d->B = cfg->data.batch;
    d->T = cfg->model.seq_len;
    d->S = config_src_len(cfg);
    d->V = cfg->model.vocab;
    d->min_len = cfg->data.min_len;
    d->zipf = cfg->data.zipf;
    d->mask_rate = cfg->data.mask_rate;
    d->zipf_table = NULL;
    d->text = NULL;
    d->n_text = d->n_train = 0;
    d->val_batches = 0;
    if (d->task == TASK_TEXT || d->task == TASK_MLM) {
        if (!cfg->data.path[0]) {
            snprintf(err, errlen, "data.path: must name the corpus file for data.task = %s",
                     config_task_name(d->task));
            return 2;
        }
        const int need = d->task == TASK_MLM ? DATA_MASK_ID + 1 : 256;
        if (d->V < need) {
            snprintf(err, errlen, "model.vocab: must be >= %d for data.task = %s (got %d)", need,
                     config_task_name(d->task), d->V);
            return 2;
        }
        int rc = open_text(d, cfg->data.path, err, errlen);
        if (!rc && d->task == TASK_MLM && !(d->val_rng = gsl_rng_alloc(gsl_rng_mt19937))) {
            snprintf(err, errlen, "data.task: out of memory");
            rc = 1;
        }
        if (rc) data_close(d);
        return rc;
    }
    if (d->task == TASK_TRANSLATION) {
        const int rc = translation_open(d, cfg, err, errlen);
        if (rc) data_close(d);
        return rc;
    }
    if (d->arch == ARCH_LM && (d->task == TASK_COPY || d->task == TASK_REVERSE) &&
        (d->V < 3 || d->T < 3)) {
        snprintf(err, errlen, "data.task: %s needs model.vocab >= 3 and model.seq_len >= 3",
                 config_task_name(d->task));
        return 2;
    }
    const int encdec = d->arch == ARCH_ENCDEC;
    if ((d->task == TASK_RANDOM || encdec) && d->zipf > 0.0) {
        // Zipf's law over token ids: p(k) ∝ (k+1)^(−s), sampled by GSL's Walker alias table
        // (encdec: over the V − 1 content ids 1 … V−1; 0 is BOS)
        const int n = encdec ? d->V - 1 : d->V;
        double *w = malloc((size_t)n * sizeof *w);
        if (!w) { snprintf(err, errlen, "data.zipf: out of memory"); return 1; }
        zipf_weights(n, d->zipf, w);
        d->zipf_table = gsl_ran_discrete_preproc((size_t)n, w);
        free(w);
        if (!d->zipf_table) { snprintf(err, errlen, "data.zipf: cannot build table"); return 1; }
    }
    return 0;
}

double data_token_entropy(const config_t *cfg)
{
    if (cfg->data.task != TASK_RANDOM || cfg->model.arch != ARCH_LM) return NAN;
    const int n = cfg->model.vocab;
    if (!(cfg->data.zipf > 0.0)) return log((double)n);
    double *w = malloc((size_t)n * sizeof *w);
    if (!w) return NAN;
    zipf_weights(n, cfg->data.zipf, w);
    double z = 0.0, h = 0.0;
    for (int k = 0; k < n; k++) z += w[k];
    for (int k = 0; k < n; k++) h -= w[k] / z * log(w[k] / z);
    free(w);
    return h;
}

void data_close(data_t *d)
{
    translation_close(d);
    if (d->zipf_table) gsl_ran_discrete_free(d->zipf_table);
    d->zipf_table = NULL;
    free(d->text);
    d->text = NULL;
    if (d->val_rng) gsl_rng_free(d->val_rng);
    d->val_rng = NULL;
}

/* One row from the text window starting at offset o: tokens = text[o..o+T−1],
 * targets = text[o+1..o+T]. */
static void text_row(const data_t *d, size_t o, int32_t *tok, int32_t *tgt)
{
    for (int t = 0; t < d->T; t++) {
        tok[t] = d->text[o + (size_t)t];
        tgt[t] = d->text[o + (size_t)t + 1];
    }
}

void data_caps(const data_t *d, batch_caps_t *c)
{
    c->B = d->B;
    c->T = d->T;
    c->S = d->arch == ARCH_ENCDEC ? d->S : 0;
    c->tokens = (size_t)c->B * c->T;
    c->src_tokens = (size_t)c->B * c->S;
    if (d->task != TASK_TRANSLATION) return;
    // Validation is always planned by tokens (translation.c), training only when
    // data.max_tokens > 0: a plan's batch has rows × max(S, T) ≤ its budget, so short
    // sentences give more rows than data.batch, but never more tokens than the budget.
    const corpus_plan_t *p[2] = {&d->vplan, &d->plan};
    for (int k = 0; k < (d->max_tokens > 0 ? 2 : 1); k++)
        if (p[k]->max_rows > c->B) c->B = p[k]->max_rows;
    const size_t mt = d->max_tokens > 0 ? (size_t)d->max_tokens
                                        : (size_t)d->B * (size_t)(d->S > d->T ? d->S : d->T);
    c->tokens = (size_t)c->B * c->T;
    c->src_tokens = (size_t)c->B * c->S;
    if (c->tokens > mt) c->tokens = mt;
    if (c->src_tokens > mt) c->src_tokens = mt;
}

long data_epoch_batches(const data_t *d)
{
    return d->task == TASK_TRANSLATION && d->max_tokens > 0 ? d->plan.n_batches : 0;
}

void data_seek(data_t *d, long batches)
{
    d->drawn = batches;
    d->epoch = -1;
}

void data_val_batch(const data_t *d, int i, batch_t *bt)
{
    if (d->task == TASK_TRANSLATION) {
        corpus_plan_fill(&d->vplan, &d->corpus, i, bt);
        return;
    }
    int32_t *tokens = bt->tokens, *targets = bt->targets;
    bt->B = d->B;
    bt->T = d->T;
    bt->S = 0;
    const size_t W = (size_t)d->T + 1, span = d->n_text - d->n_train - W;   // last start offset
    const size_t nw = (size_t)d->val_batches * (size_t)d->B;                 // windows in all
    for (int b = 0; b < d->B; b++) {
        const size_t j = (size_t)i * (size_t)d->B + (size_t)b;
        const size_t o = d->n_train + (nw > 1 ? j * span / (nw - 1) : 0);    // evenly spaced
        text_row(d, o, tokens + (size_t)b * d->T, targets + (size_t)b * d->T);
    }
    if (d->task != TASK_MLM) return;
    gsl_rng_set(d->val_rng, DATA_MLM_VAL_SEED + (unsigned long)i);   // the same masks each call
    for (int b = 0; b < d->B; b++)
        mlm_mask_row(d->val_rng, d->mask_rate, tokens + (size_t)b * d->T,
                     targets + (size_t)b * d->T, d->T);
}

static int32_t draw_token(const data_t *d, gsl_rng *rng)
{
    if (d->zipf_table) return (int32_t)gsl_ran_discrete(rng, d->zipf_table);
    return (int32_t)gsl_rng_uniform_int(rng, (unsigned long)d->V);
}

/* A content token in [1, V): uniform, or Zipf over the V − 1 content ids. */
static int32_t draw_content(const data_t *d, gsl_rng *rng)
{
    if (d->zipf_table) return 1 + (int32_t)gsl_ran_discrete(rng, d->zipf_table);
    return 1 + (int32_t)gsl_rng_uniform_int(rng, (unsigned long)(d->V - 1));
}

/* A row length in [min_len, max] (max when min_len is 0). */
static int draw_length(const data_t *d, gsl_rng *rng, int max)
{
    if (d->min_len <= 0 || d->min_len >= max) return max;
    return d->min_len + (int)gsl_rng_uniform_int(rng, (unsigned long)(max - d->min_len + 1));
}

/* The encdec tasks (data.h): per row a source, the decoder input and the targets. */
static void encdec_batch(data_t *d, gsl_rng *rng, batch_t *bt)
{
    const int S = d->S, T = d->T;
    bt->B = d->B;
    bt->S = S;
    bt->T = T;
    for (int b = 0; b < d->B; b++) {
        int32_t *src = bt->src + (size_t)b * S;      // (S)
        int32_t *tok = bt->tokens + (size_t)b * T;   // (T)
        int32_t *tgt = bt->targets + (size_t)b * T;  // (T)
        const int m = draw_length(d, rng, S);
        for (int i = 0; i < S; i++) src[i] = i < m ? draw_content(d, rng) : -1;
        const int n = d->task == TASK_RANDOM ? draw_length(d, rng, T) : m;
        for (int i = 0; i < T; i++) {
            int32_t y = -1;
            if (i < n && d->task == TASK_COPY) y = src[i];
            else if (i < n && d->task == TASK_REVERSE) y = src[m - 1 - i];
            else if (i < n) y = draw_content(d, rng);
            tgt[i] = y;
        }
        // decoder input: BOS, then the target shifted right; padding after the target
        for (int i = 0; i < T; i++) tok[i] = i == 0 ? DATA_BOS : i < n ? tgt[i - 1] : -1;
    }
}

void data_batch(data_t *d, gsl_rng *rng, batch_t *bt)
{
    if (d->task == TASK_TRANSLATION) {
        translation_batch(d, rng, bt);
        return;
    }
    if (d->arch == ARCH_ENCDEC) {
        encdec_batch(d, rng, bt);
        return;
    }
    const int T = d->T;
    int32_t *tokens = bt->tokens, *targets = bt->targets;
    bt->B = d->B;
    bt->T = T;
    bt->S = 0;
    for (int b = 0; b < d->B; b++) {
        int32_t *tok = tokens + (size_t)b * T;   // (T)
        int32_t *tgt = targets + (size_t)b * T;  // (T)
        if (d->task == TASK_TEXT || d->task == TASK_MLM) {
            // a window of T+1 bytes at a uniform offset inside the training split
            const unsigned long starts = (unsigned long)(d->n_train - (size_t)T);
            text_row(d, gsl_rng_uniform_int(rng, starts), tok, tgt);
            if (d->task == TASK_MLM) mlm_mask_row(rng, d->mask_rate, tok, tgt, T);   // §6f
            continue;
        }
        if (d->task == TASK_RANDOM) {
            // x_0..x_T i.i.d.; predict the next token
            tok[0] = draw_token(d, rng);
            for (int t = 0; t < T; t++) {
                tgt[t] = draw_token(d, rng);
                if (t + 1 < T) tok[t + 1] = tgt[t];
            }
            continue;
        }
        // copy / reverse: m content tokens in [1,V), separator 0, then the answer
        const int m = (T + 1) / 2;
        for (int i = 0; i < m; i++) {
            tok[i] = 1 + (int32_t)gsl_rng_uniform_int(rng, (unsigned long)(d->V - 1));
            tgt[i] = -1;
        }
        // tokens = a_0..a_{m−1}, 0, answer…;  targets = −1 ×m, answer (shifted by one)
        for (int j = 0; m + j < T; j++) {
            const int32_t ans = d->task == TASK_COPY ? tok[j] : tok[m - 1 - j];
            tgt[m + j] = ans;
            if (m + j + 1 < T) tok[m + j + 1] = ans;
        }
        tok[m] = 0;
    }
}
