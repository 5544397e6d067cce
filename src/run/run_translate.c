/* run_translate.c — decoding a trained encoder–decoder (model/decode.h) and its BLEU (report/
 * bleu.h): `stability translate RUN.h5` and the BLEU of a training run (train.bleu_every). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "data/corpus.h"
#include "io/h5io.h"
#include "model/decode.h"
#include "report/bleu.h"
#include "run/run.h"
#include "util/args.h"
#include "util/fsutil.h"
#include "util/sbuf.h"

/* Rows (sentences × beams) of one decoding batch: the decoding model's activations are sized
 * for this many rows of seq_len tokens, or for one sentence's K beams when K is larger. */
#define DECODE_ROWS 64

static const char *HELP_TRANSLATE =
    "usage: stability translate RUN.h5 [--beam K] [--lenpen A] [--input FILE] [--ids]\n"
    "                           [--max-len-a A] [--max-len-b B]\n"
    "\n"
    "Translates with the parameters of RUN.h5's checkpoint (a training run of model.arch =\n"
    "encdec on data.task = translation), by greedy search (K = 1) or beam search as fairseq's\n"
    "generate (--beam, --lenpen, --max-len-a, --max-len-b; docs/paper_training.md). Without\n"
    "--input: the run's validation split (data.path/valid.en), one translation a line in its\n"
    "order on stdout, and its BLEU against valid.de on stderr (NLTK's corpus BLEU on\n"
    "detokenised text). With --input FILE: FILE's English lines, encoded with data.path/spm.model.\n"
    "  --beam K        beams (default 1: greedy)\n"
    "  --lenpen A      length penalty: a hypothesis' score is log p / length^A (default 1)\n"
    "  --max-len-a A, --max-len-b B   at most A·S + B tokens, S the batch's source width\n"
    "                  (default 1.2 and 10), and at most model.seq_len - 1\n"
    "  --ids           print sentencepiece ids instead of text (no BLEU)\n"
    "Exit: 0; 1 the file or the helper failed; 2 bad usage, or a file that cannot be\n"
    "translated (no checkpoint, an lm run, a diverged run, a missing or other vocabulary).\n";

/* The decoding model of cfg for beam K: max(DECODE_ROWS, K) rows of seq_len, sources up to
 * src_len, so that at least one sentence's K beams always fit (decode_rows >= 1). NULL: OOM. */
static model_t *decode_model(const config_t *cfg, int K)
{
    const int T = cfg->model.seq_len, S = config_src_len(cfg), R = K > DECODE_ROWS ? K : DECODE_ROWS;
    const batch_caps_t caps = {R, T, S, (size_t)R * T, (size_t)R * S};
    model_t *m = model_create(cfg, &caps);
    if (m) model_dropout_off(m);
    return m;
}

/* A sentence in decoding order: by source length, then by index. */
typedef struct { int len; long i; } by_length_t;
static int by_length(const void *a, const void *b)
{
    const by_length_t *x = a, *y = b;
    if (x->len != y->len) return x->len - y->len;
    return (x->i > y->i) - (x->i < y->i);
}

/* Translate the sources src[i] (len[i] ids each, EOS added here) of n sentences with m (of
 * decode_model for beam o->beam): hyp (n, m->T) ids, hlen (n). Batches of sentences of similar
 * length (order). 0, or 1 (OOM, or a sentence that fits no batch: never a batch of none). */
static int translate_all(model_t *m, const decode_opts_t *o, long n, const int32_t *const *src,
                         const int *len, int32_t *hyp, int *hlen)
{
    const int K = o->beam, T = m->T, G_max = m->caps.B / K;
    if (G_max < 1) return 1;
    by_length_t *order = malloc((size_t)n * sizeof *order);
    int32_t *s = malloc((size_t)G_max * m->S * sizeof(int32_t));
    decode_t d;
    if (!order || !s || decode_create(&d, m, G_max, K)) { free(order); free(s); return 1; }
    for (long i = 0; i < n; i++) order[i] = (by_length_t){len[i], i};
    qsort(order, (size_t)n, sizeof *order, by_length);
    int32_t *out = malloc((size_t)G_max * T * sizeof(int32_t));
    int *olen = malloc((size_t)G_max * sizeof(int));
    long a = 0;
    while (a < n && out && olen) {
        // the batch: as many sentences as fit at the longest one's width
        long b = a;
        int width = 0;
        while (b < n && b - a < G_max) {
            const int w = len[order[b].i] + 1 > width ? len[order[b].i] + 1 : width;
            if (decode_rows(m, K, w, G_max) < b - a + 1) break;
            width = w;
            b++;
        }
        const int G = (int)(b - a);
        if (G == 0) break;   // not one sentence fits: an error (a < n), never this batch again
        for (int g = 0; g < G; g++)
            for (int j = 0; j < width; j++) {
                const int l = len[order[a + g].i];
                s[(size_t)g * width + j] = j < l ? src[order[a + g].i][j] : j == l ? CORPUS_EOS : -1;
            }
        decode_batch(&d, m, s, G, width, o, out, olen, NULL);
        for (int g = 0; g < G; g++) {
            memcpy(hyp + (size_t)order[a + g].i * T, out + (size_t)g * T, (size_t)T * sizeof(int32_t));
            hlen[order[a + g].i] = olen[g];
        }
        a = b;
    }
    const int rc = !out || !olen || a < n;
    free(out);
    free(olen);
    free(order);
    free(s);
    decode_free(&d);
    return rc;
}

/* Translate the validation split of c, in the split's order: "LINE<TAB>ids\n" lines into
 * lines, "ids\n" lines into ids (either may be NULL). 0 or 1 (OOM). */
static int translate_valid(model_t *m, const corpus_t *c, const decode_opts_t *o, sbuf_t *lines,
                           sbuf_t *ids)
{
    const corpus_split_t *sp = &c->split[CORPUS_VALID];
    const long n = sp->n;
    const int32_t **src = malloc((size_t)n * sizeof *src);
    int32_t *hyp = malloc((size_t)n * m->T * sizeof(int32_t));
    int *hlen = malloc((size_t)n * sizeof(int));
    int rc = !src || !hyp || !hlen;
    for (long i = 0; !rc && i < n; i++) src[i] = sp->pool + sp->at[i];
    if (!rc) rc = translate_all(m, o, n, src, sp->src_len, hyp, hlen);
    sbuf_t *out[2] = {lines, ids};
    for (int k = 0; k < 2; k++)
        for (long i = 0; !rc && out[k] && i < n; i++) {
            if (k == 0) sbuf_printf(out[k], "%ld\t", sp->line[i]);
            for (int j = 0; j < hlen[i]; j++)
                sbuf_printf(out[k], j ? " %d" : "%d", (int)hyp[(size_t)i * m->T + j]);
            sbuf_printf(out[k], "\n");
        }
    free(src);
    free(hyp);
    free(hlen);
    return rc || (lines && lines->failed) || (ids && ids->failed);
}

int run_bleu(const config_t *cfg, const double *params, const decode_opts_t *o, double *bleu,
             char *err, size_t errlen)
{
    corpus_t c;
    int rc = corpus_open(&c, cfg->data.path, cfg->model.vocab, config_src_len(cfg),
                         cfg->model.seq_len, err, errlen);
    if (rc) return rc;
    model_t *m = decode_model(cfg, o->beam);
    sbuf_t text = {0};
    if (!m) { snprintf(err, errlen, "out of memory"); rc = 1; }
    else {
        memcpy(m->params, params, m->num_params * sizeof(double));
        if (translate_valid(m, &c, o, &text, NULL)) { snprintf(err, errlen, "out of memory"); rc = 1; }
        else rc = bleu_score(cfg->data.path, text.data, bleu, err, errlen);
    }
    sbuf_free(&text);
    if (m) model_free(m);
    corpus_close(&c);
    return rc;
}

/* ---- the verb ------------------------------------------------------------------------- */

typedef struct {
    const char *file, *input;
    decode_opts_t o;
    int ids;
} translate_args_t;

/* Exit 2 with a usage message. */
static int usage(const char *what, const char *arg)
{
    fprintf(stderr, "stability translate: %s%s%s%s\n%s", what, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "", "usage: stability translate RUN.h5 [--beam K] [--lenpen A] "
            "[--input FILE] [--ids] (--help)\n");
    return 2;
}

/* The arguments; −1 after --help, else 0 or 2. */
static int parse_args(int argc, char **argv, translate_args_t *a)
{
    a->o = decode_defaults();
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) { fputs(HELP_TRANSLATE, stdout); return -1; }
        if (!strcmp(s, "--ids")) { a->ids = 1; continue; }
        if (s[0] == '-' && s[1] && !v) return usage("missing value after", s);
        if (!strcmp(s, "--beam")) {
            if (args_parse_long(v, 1, 1000, &n)) return usage("--beam: not a whole number in 1..1000:", v);
            a->o.beam = (int)n;
        } else if (!strcmp(s, "--lenpen")) {
            if (args_parse_double(v, -100, 0, 100, &a->o.lenpen)) return usage("--lenpen: not a number in -100..100:", v);
        } else if (!strcmp(s, "--max-len-a")) {
            if (args_parse_double(v, 0, 0, 1000, &a->o.max_len_a)) return usage("--max-len-a: not a number in 0..1000:", v);
        } else if (!strcmp(s, "--max-len-b")) {
            if (args_parse_long(v, 0, 100000, &n)) return usage("--max-len-b: not a whole number in 0..100000:", v);
            a->o.max_len_b = (int)n;
        } else if (!strcmp(s, "--input")) {
            a->input = v;
        } else if (s[0] == '-') {
            return usage("unknown option", s);
        } else if (a->file) {
            return usage("more than one file:", s);
        } else {
            a->file = s;
            continue;
        }
        i++;
    }
    return a->file ? 0 : usage("no RUN.h5 given", NULL);
}

/* The run file's config and its decoding model for beam K with the checkpoint's parameters, or
 * exit 2 (a file that cannot be translated) / 1 (unreadable) with the message printed. */
static int open_run(const char *path, int K, config_t *cfg, model_t **m, long *step)
{
    char err[2048], why[1024];
    h5io_train_info_t info;
    *m = NULL;
    if (access(path, R_OK) != 0)
        return fprintf(stderr, "stability translate: %s: cannot read it\n", path), 2;
    if (h5io_train_inspect(path, &info, err, sizeof err))
        return fprintf(stderr, "stability translate: %s\n", err), 1;
    int rc = 0;
    if (strcmp(info.kind, "train"))
        snprintf(err, sizeof err, "not a training run's file (%s%s)", info.kind[0] ? "a " : "",
                 info.kind[0] ? info.kind : "no /train"), rc = 2;
    else if (!info.config || config_parse_string(cfg, info.config, path, why, sizeof why))
        snprintf(err, sizeof err, "its config attribute is unreadable: %s", info.config ? why : "missing"), rc = 2;
    else if (cfg->model.arch != ARCH_ENCDEC)
        snprintf(err, sizeof err, "model.arch = %s: translate needs an encoder-decoder (encdec)",
                 config_arch_name(cfg->model.arch)), rc = 2;
    else if (cfg->data.task != TASK_TRANSLATION)
        snprintf(err, sizeof err, "data.task is not translation: there is no vocabulary to "
                 "translate with"), rc = 2;
    else if (info.status && !strcmp(info.status, "diverged"))
        snprintf(err, sizeof err, "the run diverged: its parameters are not a model"), rc = 2;
    h5io_train_info_free(&info);
    long V;
    if (!rc && bleu_vocab(cfg->data.path, &V, err, sizeof err)) rc = 2;
    else if (!rc && V != cfg->model.vocab)
        snprintf(err, sizeof err, "model.vocab = %d but %s/spm.model has %ld pieces: another "
                 "vocabulary", cfg->model.vocab, cfg->data.path, V), rc = 2;
    h5io_file_t *f = NULL;
    if (!rc && h5io_open_read(&f, path, err, sizeof err)) rc = 1;
    if (!rc && !(*m = decode_model(cfg, K))) snprintf(err, sizeof err, "out of memory"), rc = 1;
    if (!rc && h5io_checkpoint_params(f, *m, step, why, sizeof why)) {
        snprintf(err, sizeof err, "no checkpoint to translate with (%s); a run writes one every "
                 "train.checkpoint_every updates, when stopped, and at its end with "
                 "train.bleu_every", why);
        rc = 2;
    }
    if (f) h5io_close(f);
    if (rc) {
        fprintf(stderr, "stability translate: %s: %s\n", path, err);
        if (*m) model_free(*m);
        *m = NULL;
    }
    return rc;
}

/* Sources from the text lines of ids ("id id ...\n" each) into src/len (malloc'd; *n lines).
 * 0, 1 (OOM) or 2 (a line longer than the model's source, err). */
static int parse_sources(const char *ids, int S, const char *input, int32_t **pool, int **len,
                         long *n, char *err, size_t errlen)
{
    long lines = 0, count = 0;
    for (const char *p = ids; *p; p++) lines += *p == '\n';
    for (const char *p = ids; *p; p++) count += (*p >= '0' && *p <= '9') && (p == ids || p[-1] == ' ' || p[-1] == '\n');
    *pool = malloc(((size_t)count + 1) * sizeof(int32_t));
    *len = calloc((size_t)lines + 1, sizeof(int));
    if (!*pool || !*len) return 1;
    const char *p = ids;
    long at = 0;
    for (long i = 0; i < lines; i++) {
        int l = 0;
        while (*p != '\n') {
            char *end;
            (*pool)[at + l++] = (int32_t)strtol(p, &end, 10);
            p = *end == ' ' ? end + 1 : end;
        }
        p++;
        if (l + 1 > S) {
            snprintf(err, errlen, "%s:%ld: %d pieces: longer than model.src_len - 1 = %d", input,
                     i + 1, l, S - 1);
            return 2;
        }
        (*len)[i] = l;
        at += l;
    }
    *n = lines;
    return 0;
}

/* Lines of the regular file path as every reader of user text counts them (runtime/userfile.py
 * for the Python side): the "\n"s, and the text after the last one when there is any. −1 with
 * errno when path cannot be read (a FIFO is never waited for). */
static long count_lines(const char *path)
{
    const int fd = fsutil_open_read(path);
    if (fd < 0) return -1;
    char buf[65536];
    long lines = 0;
    ssize_t got;
    char last = '\n';
    while ((got = read(fd, buf, sizeof buf)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { const int e = errno; close(fd); errno = e; return -1; }
        for (ssize_t i = 0; i < got; i++) lines += buf[i] == '\n';
        last = buf[got - 1];
    }
    close(fd);
    return lines + (last != '\n');
}

/* --input: translate FILE's lines; "ids\n" lines into text. 0, 1 or 2 (err). */
static int translate_input(model_t *m, const config_t *cfg, const translate_args_t *a,
                           sbuf_t *text, char *err, size_t errlen)
{
    char *ids;
    int32_t *pool = NULL;
    int *len = NULL;
    long n = 0;
    if (bleu_encode(cfg->data.path, a->input, &ids, err, errlen)) return 2;
    int rc = parse_sources(ids, m->S, a->input, &pool, &len, &n, err, errlen);
    // one translation per line of FILE, or none: a helper that split FILE at other characters
    // would shift every later translation (docs/faults.md)
    const long want = rc ? 0 : count_lines(a->input);
    if (!rc && want != n) {
        if (want < 0) snprintf(err, errlen, "%s: cannot read: %s", a->input, strerror(errno));
        else snprintf(err, errlen, "%s: %ld lines, but the encoder gave %ld: not translated", a->input,
                      want, n);
        rc = 2;
    }
    const int32_t **src = rc ? NULL : calloc((size_t)n + 1, sizeof *src);
    int32_t *hyp = rc ? NULL : malloc(((size_t)n + 1) * m->T * sizeof(int32_t));
    int *hlen = rc ? NULL : calloc((size_t)n + 1, sizeof(int));
    if (!rc && (!src || !hyp || !hlen)) rc = 1;
    for (long i = 0, at = 0; !rc && i < n; at += len[i], i++) src[i] = pool + at;
    if (!rc && translate_all(m, &a->o, n, src, len, hyp, hlen)) rc = 1;
    for (long i = 0; !rc && i < n; i++) {
        for (int j = 0; j < hlen[i]; j++)
            sbuf_printf(text, j ? " %d" : "%d", (int)hyp[(size_t)i * m->T + j]);
        sbuf_printf(text, "\n");
    }
    if (rc == 1) snprintf(err, errlen, "out of memory");
    free(ids);
    free(pool);
    free(len);
    free(src);
    free(hyp);
    free(hlen);
    return rc;
}

/* Write text to stdout. 0 or 1. */
static int put(const char *text)
{
    const size_t n = strlen(text);
    return fwrite(text, 1, n, stdout) != n || fflush(stdout) != 0;
}

int run_translate(int argc, char **argv)
{
    translate_args_t a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    config_t cfg;
    model_t *m;
    long step;
    if ((rc = open_run(a.file, a.o.beam, &cfg, &m, &step))) return rc;
    char err[1400];
    sbuf_t text = {0}, ids = {0};
    corpus_t c;
    memset(&c, 0, sizeof c);
    if (a.input) rc = translate_input(m, &cfg, &a, &ids, err, sizeof err);
    else if (!(rc = corpus_open(&c, cfg.data.path, cfg.model.vocab, config_src_len(&cfg),
                                cfg.model.seq_len, err, sizeof err))) {
        if (translate_valid(m, &c, &a.o, &text, &ids)) rc = 1, snprintf(err, sizeof err, "out of memory");
    }
    if (!rc && a.ids) rc = put(ids.data ? ids.data : "") ? (snprintf(err, sizeof err, "cannot write stdout"), 1) : 0;
    else if (!rc) rc = bleu_detokenise(cfg.data.path, ids.data ? ids.data : "", 1, err, sizeof err);
    double bleu;
    if (!rc && !a.input && !a.ids) {
        if (!(rc = bleu_score(cfg.data.path, text.data, &bleu, err, sizeof err)))
            fprintf(stderr, "%s: checkpoint of update %ld, beam %d, lenpen %g: BLEU %.2f on the %ld "
                    "sentences of %s/valid.de (NLTK corpus BLEU, detokenised)\n", a.file, step,
                    a.o.beam, a.o.lenpen, bleu, c.split[CORPUS_VALID].n, cfg.data.path);
    }
    if (rc) fprintf(stderr, "stability translate: %s\n", err);
    sbuf_free(&text);
    sbuf_free(&ids);
    corpus_close(&c);
    model_free(m);
    return rc;
}
