/* plot_label.c — titles, subtitles and keys from what the runs of a figure share and what tells
 * them apart (report/plot_label.h, docs/design.md §6j). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_label.h"
#include "report/plot_internal.h"
#include "io/h5io.h"

#define MAX_KEYS 128

/* One run's resolved config as "section.key" → value (pointers into text). */
typedef struct {
    char *text;
    int n;
    char key[MAX_KEYS][48];
    const char *value[MAX_KEYS];
} items_t;

/* Parse the resolved config of r (without the output keys and train.resume) into it. */
static int items_read(const plot_run_t *r, items_t *it)
{
    it->n = 0;
    it->text = h5io_config_text(&r->cfg, 0);
    if (!it->text) return 1;
    char section[32] = "";
    for (char *line = it->text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (line[0] == '[') {
            snprintf(section, sizeof section, "%.*s", (int)strcspn(line + 1, "]"), line + 1);
            continue;
        }
        char *eq = strstr(line, " = ");
        if (!eq || line[0] == ';' || it->n == MAX_KEYS) continue;
        *eq = '\0';
        snprintf(it->key[it->n], sizeof it->key[0], "%s.%s", section, line);
        it->value[it->n++] = eq + 3;
    }
    return 0;
}

static const char *items_get(const items_t *it, const char *key)
{
    for (int k = 0; k < it->n; k++)
        if (!strcmp(it->key[k], key)) return it->value[k];
    return NULL;
}

/* The raw value of config key item for run r into buf ("" when the config does not write it). */
static void raw_value(const plot_run_t *r, const char *item, char *buf, size_t len)
{
    items_t *it = malloc(sizeof *it);
    buf[0] = '\0';
    if (it && !items_read(r, it)) {
        const char *v = items_get(it, item);
        snprintf(buf, len, "%s", v ? v : "");
    }
    if (it) free(it->text);
    free(it);
}

static int same(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Keys the scheme explains when it differs (scheme_name is placement, norm and T-Fixup). */
static const char *const COVERED[] = {"model.placement", "model.norm", "model.final_norm",
                                      "init.scheme", NULL};

static int listed(const char *const *list, const char *key)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], key)) return 1;
    return 0;
}

static void diff_add(plot_diff_t *d, const char *item)
{
    if (d->n < PLOT_DIFF_MAX && !plot_diff_has(d, item))
        snprintf(d->item[d->n++], sizeof d->item[0], "%s", item);
}

/* Whether key differs between runs (its[] per run); *within_scheme: also between two runs of
 * one scheme (asked only when covered: O(n²)). */
static int key_differs(items_t *const *its, char (*scheme)[32], int n, const char *key,
                       int covered, int *within_scheme)
{
    int differs = 0;
    *within_scheme = 0;
    const char *v0 = n ? items_get(its[0], key) : NULL;
    for (int i = 1; i < n && !differs; i++) differs = !same(items_get(its[i], key), v0);
    for (int i = 1; differs && covered && i < n && !*within_scheme; i++)
        for (int j = 0; j < i && !*within_scheme; j++)
            *within_scheme = !strcmp(scheme[i], scheme[j]) &&
                             !same(items_get(its[i], key), items_get(its[j], key));
    return differs;
}

/* Whether every run has as many decoder layers as encoder layers (or is a single stack). */
static int n_by_n(const plot_set_t *set, const int *m, int n)
{
    for (int i = 0; i < n; i++) {
        const config_t *c = &set->runs[m[i]].cfg;
        if (c->model.arch == ARCH_ENCDEC && config_dec_layers(c) != c->model.layers) return 0;
    }
    return 1;
}

static int skipped(const char *key, int flags)
{
    if (!strcmp(key, "init.seed")) return !(flags & PLOT_DIFF_SEED);
    if (flags & PLOT_DIFF_INIT)
        return !strncmp(key, "train.", 6) || !strcmp(key, "probe.every") ||
               !strcmp(key, "probe.model_update");
    return 0;
}

static void item_plain(const plot_run_t *r, const char *item, int quiet, char *buf, size_t len);

/* Item k's value for run i ("" when its config does not write the key). */
static const char *item_value(const plot_set_t *set, const int *m, items_t *const *its,
                              char (*scheme)[32], int i, const char *item)
{
    if (!strcmp(item, "scheme")) return scheme[i];
    if (!strcmp(item, "data")) return set->runs[m[i]].data_id;
    const char *v = items_get(its[i], item);
    return v ? v : "";
}

/* cls[i] = the first run with run i's value of item: two items split the runs alike (any two
 * runs that differ in one differ in the other) exactly when their cls are equal. */
static void classes(const plot_set_t *set, const int *m, int n, items_t *const *its,
                    char (*scheme)[32], const char *item, const char **val, int *cls)
{
    for (int i = 0; i < n; i++) val[i] = item_value(set, m, its, scheme, i, item);
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < i && strcmp(val[j], val[i])) j++;
        cls[i] = j;
    }
}

/* Items that lead a group of items which split the runs alike, best first: a data set's
 * vocabulary, lengths and batch come with it, a width its heads and d_ff (docs/design.md §6j).
 * Only these lead, and only FOLLOWERS follow: the scheme, lr, warm-up and optimizer are what an
 * experiment compares and always stay in the keys. */
static const char *const LEADERS[] = {"data.task", "data.path", "model.d_model", NULL};
static const char *const FOLLOWERS[] = {"model.vocab", "model.seq_len", "model.src_len",
                                        "model.heads", "model.d_ff", NULL};

static int leader_rank(const char *item)
{
    for (int k = 0; LEADERS[k]; k++)
        if (!strcmp(LEADERS[k], item)) return k;
    return -1;
}

static int can_follow(const char *item)
{
    if (!strncmp(item, "data", 4) && leader_rank(item) < 0) return 1;   // data.*, the data's hash
    for (int k = 0; FOLLOWERS[k]; k++)
        if (!strcmp(FOLLOWERS[k], item)) return 1;
    return 0;
}

/* Group d's items that split the runs alike; a group led by a data key (any size), or of three
 * or more items, is named by its leader alone in keys and titles, the others go to d->follower
 * and, per value of the leader, to d->covary for the subtitle. Two items alone stay apart
 * (two runs differing in lr and warm-up read "lr 0.01, no warm-up"). */
static void covary(const plot_set_t *set, const int *m, int n, items_t *const *its,
                   char (*scheme)[32], plot_diff_t *d)
{
    int *cls = malloc((size_t)(d->n > 0 ? d->n : 1) * (size_t)(n > 0 ? n : 1) * sizeof *cls);
    const char **val = malloc((size_t)(n > 0 ? n : 1) * sizeof *val);
    if (!cls || !val) { free(cls); free(val); return; }   // no grouping: every item its own
    for (int k = 0; k < d->n; k++) classes(set, m, n, its, scheme, d->item[k], val, cls + k * n);
    int group[PLOT_DIFF_MAX];
    for (int k = 0; k < d->n; k++) group[k] = -1;
    size_t used = 0;
    for (int r = 0; LEADERS[r]; r++) {
        int k = 0;
        while (k < d->n && strcmp(d->item[k], LEADERS[r])) k++;
        if (k == d->n || group[k] >= 0) continue;
        const int lead = k;
        int size = 1;
        for (int j = 0; j < d->n; j++)
            if (j != k && group[j] < 0 && can_follow(d->item[j]) &&
                !memcmp(cls + k * n, cls + j * n, (size_t)n * sizeof *cls)) {
                group[j] = k;
                size++;
            }
        if (size < 2 || (size < 3 && strncmp(d->item[lead], "data.", 5))) {
            for (int j = 0; j < d->n; j++)
                if (group[j] == k) group[j] = -1;   // a width with one follower: both stay keys
            continue;
        }
        group[k] = k;
        for (int i = 0; i < n; i++) {   // one clause per value of the leader, in run order
            if (cls[lead * n + i] != i) continue;
            char lw[256], w[256];
            item_plain(&set->runs[m[i]], d->item[lead], 0, lw, sizeof lw);
            if (used < sizeof d->covary)
                used += (size_t)snprintf(d->covary + used, sizeof d->covary - used, "%s%s:",
                                         used ? "; " : "", lw);
            int first = 1;
            for (int j = 0; j < d->n; j++) {
                if (group[j] != k || j == lead || !strcmp(d->item[j], "data")) continue;
                if (!item_value(set, m, its, scheme, i, d->item[j])[0])
                    continue;   // a key at its default the run's config does not write
                item_plain(&set->runs[m[i]], d->item[j], 0, w, sizeof w);
                if (!w[0] || strstr(lw, w)) continue;   // data.zipf says what data.task says
                if (used < sizeof d->covary)
                    used += (size_t)snprintf(d->covary + used, sizeof d->covary - used, "%s %s",
                                             first ? "" : ",", w);
                first = 0;
            }
        }
        for (int j = 0; j < d->n; j++)
            if (group[j] == k && j != lead && d->nf < PLOT_DIFF_MAX)
                memcpy(d->follower[d->nf++], d->item[j], sizeof d->follower[0]);   // same size
    }
    free(cls);
    free(val);
}

static int is_follower(const plot_diff_t *d, const char *item)
{
    for (int k = 0; k < d->nf; k++)
        if (!strcmp(d->follower[k], item)) return 1;
    return 0;
}

void plot_diff(const plot_set_t *set, const int *m, int n, int flags, plot_diff_t *d)
{
    memset(d, 0, sizeof *d);
    items_t **its = calloc((size_t)(n > 0 ? n : 1), sizeof *its);
    char (*scheme)[32] = calloc((size_t)(n > 0 ? n : 1), sizeof *scheme);
    int ok = its && scheme;
    for (int i = 0; ok && i < n; i++) {
        ok = (its[i] = malloc(sizeof *its[i])) && !items_read(&set->runs[m[i]], its[i]);
        if (ok) scheme_name(&set->runs[m[i]].cfg, scheme[i], sizeof scheme[i]);
    }
    int scheme_differs = 0;
    for (int i = 1; ok && i < n; i++) scheme_differs |= strcmp(scheme[i], scheme[0]) != 0;
    if (scheme_differs) diff_add(d, "scheme");
    for (int i = 0; ok && i < n; i++)   // every key of every run, in the order first met
        for (int k = 0; k < its[i]->n; k++) {
            const char *key = its[i]->key[k];
            int within;
            const int covered = scheme_differs && listed(COVERED, key);
            if (skipped(key, flags) || plot_diff_has(d, key) ||
                !key_differs(its, scheme, n, key, covered, &within))
                continue;
            if (covered && !within) continue;
            if (!strcmp(key, "model.dec_layers") && plot_diff_has(d, "model.layers") &&
                n_by_n(set, m, n))
                continue;   // N-N encoder–decoders: "model.layers" says both
            diff_add(d, key);
        }
    for (int i = 1; ok && i < n; i++)
        if (strcmp(set->runs[m[i]].data_id, set->runs[m[0]].data_id)) diff_add(d, "data");
    if (ok) covary(set, m, n, its, scheme, d);
    for (int i = 0; its && i < n; i++) {
        if (its[i]) free(its[i]->text);
        free(its[i]);
    }
    free(its);
    free(scheme);
}

int plot_diff_has(const plot_diff_t *d, const char *item)
{
    for (int k = 0; k < d->n; k++)
        if (!strcmp(d->item[k], item)) return 1;
    return 0;
}

void plot_diff_drop(plot_diff_t *d, const char *item)
{
    for (int k = 0; k < d->n; k++)
        if (!strcmp(d->item[k], item)) {
            memmove(d->item[k], d->item[k + 1], (size_t)(d->n - k - 1) * sizeof d->item[0]);
            d->n--;
            return;
        }
}

/* ------------------------------------------------------------------------- words */

/* An item's words: fmt with %s for the value (NULL: a function below), its name in a title,
 * whether its values are ordered, and the value that says nothing in a subtitle. */
typedef struct {
    const char *item, *fmt, *word;
    int ordered;
    const char *quiet;
} word_t;

static const word_t WORDS[] = {
    {"scheme", NULL, "scheme", 0, NULL},
    {"data", NULL, "data", 0, NULL},
    {"model.arch", NULL, "architecture", 0, NULL},
    {"model.layers", NULL, "depth", 1, NULL},
    {"model.dec_layers", "%s decoder layers", "decoder depth", 1, NULL},
    {"model.d_model", "d = %s", "width", 1, NULL},
    {"model.heads", "%s heads", "heads", 1, NULL},
    {"model.d_ff", "d_ff = %s", "FFN width", 1, NULL},
    {"model.vocab", "V = %s", "vocabulary", 1, NULL},
    {"model.seq_len", "n = %s", "sequence length", 1, NULL},
    {"model.norm", NULL, "norm", 0, NULL},
    {"model.activation", NULL, "activation", 0, NULL},
    {"model.causal", NULL, "attention mask", 0, NULL},
    {"model.tie_embeddings", NULL, "output projection", 0, "true"},
    {"model.final_norm", "final norm %s", "final norm", 0, NULL},
    {"model.dropout", "dropout %s", "dropout", 1, "0"},
    {"model.qk_norm", NULL, "QK-norm", 0, "off"},
    {"model.attn_softcap", NULL, "soft-cap", 1, "0"},
    {"model.mix_ratio", "mix ratio %s", "mix ratio", 1, NULL},
    {"model.dyt_alpha", "DyT α %s", "DyT α", 1, NULL},
    {"init.scheme", NULL, "initialisation", 0, NULL},
    {"init.std", "init std %s", "init std", 1, NULL},
    {"init.zero_qk", NULL, "W_Q, W_K at init", 0, "false"},
    {"init.seed", "seed %s", "seed", 1, NULL},
    {"data.task", NULL, "task", 0, NULL},
    {"data.batch", "batch %s", "batch size", 1, NULL},
    {"data.zipf", NULL, "token distribution", 1, NULL},
    {"data.label_smoothing", "label smoothing %s", "label smoothing", 1, "0"},
    {"data.max_tokens", "%s tokens a batch", "batch size", 1, "0"},
    {"data.mask_rate", "mask rate %s", "mask rate", 1, NULL},
    {"train.steps", "%s updates", "length", 1, NULL},
    {"train.optimizer", NULL, "optimizer", 0, NULL},
    {"train.lr", "lr %s", "learning rate", 1, NULL},
    {"train.warmup", NULL, "warm-up", 1, NULL},
    {"train.schedule", NULL, "schedule", 0, NULL},
    {"train.beta1", "β₁ %s", "β₁", 1, NULL},
    {"train.beta2", "β₂ %s", "β₂", 1, NULL},
    {"train.eps", "ε %s", "ε", 1, NULL},
    {"train.weight_decay", "weight decay %s", "weight decay", 1, "0"},
    {"train.clip", NULL, "clipping", 1, "0"},
    {"train.z_loss", NULL, "z-loss", 1, "0"},
    {"train.precision", NULL, "precision", 0, "float64"},
    {"probe.seeds", "%s seeds", "seeds", 1, NULL},
    {"probe.batches", "%s batches", "batches", 1, NULL},
};
#define NWORDS ((int)(sizeof WORDS / sizeof WORDS[0]))

static const word_t *word_of(const char *item)
{
    for (int i = 0; i < NWORDS; i++)
        if (!strcmp(WORDS[i].item, item)) return &WORDS[i];
    return NULL;
}

int plot_item_ordered(const char *item)
{
    const word_t *w = word_of(item);
    return w ? w->ordered : 0;
}

double plot_item_value(const plot_run_t *r, const char *item)
{
    char v[160];
    if (!strcmp(item, "model.layers")) return r->cfg.model.layers;
    if (!strcmp(item, "train.lr")) return r->cfg.train.lr;
    if (!strcmp(item, "train.warmup")) return r->cfg.train.warmup > 1 ? r->cfg.train.warmup : 0;
    raw_value(r, item, v, sizeof v);
    char *end;
    const double x = strtod(v, &end);
    return end != v ? x : NAN;
}

/* Words for the items whose values need more than fmt: into buf, plain. */
static void special_text(const plot_run_t *r, const char *item, const char *v, char *buf,
                         size_t len)
{
    const config_t *c = &r->cfg;
    if (!strcmp(item, "scheme")) {
        char label[64];
        scheme_label(c, label, sizeof label);
        const char *norm = c->model.norm == NORM_RMSNORM ? " (RMSNorm)"
                           : c->model.norm == NORM_NONE && scheme_of(c)->norms != SCHEME_NORMS_NONE
                               ? " (no norm)" : "";
        snprintf(buf, len, "%s%s", label, scheme_of(c)->theory != SCHEME_THEORY_NONE ? norm : "");
    } else if (!strcmp(item, "data")) {
        snprintf(buf, len, "data %.12s", r->data_id[0] ? r->data_id : "unrecorded");
    } else if (!strcmp(item, "model.layers")) {
        if (c->model.arch == ARCH_ENCDEC)
            snprintf(buf, len, "%d-%d encoder–decoder", c->model.layers, config_dec_layers(c));
        else snprintf(buf, len, "L = %d", c->model.layers);
    } else if (!strcmp(item, "model.arch")) {
        snprintf(buf, len, "%s", c->model.arch == ARCH_ENCDEC ? "encoder–decoder" : "one stack");
    } else if (!strcmp(item, "model.norm")) {
        snprintf(buf, len, "%s", c->model.norm == NORM_LAYERNORM ? "LayerNorm"
                                 : c->model.norm == NORM_RMSNORM ? "RMSNorm"
                                 : c->model.norm == NORM_DYT     ? "DyT" : "no norm");
    } else if (!strcmp(item, "model.activation")) {
        snprintf(buf, len, "%s", c->model.activation == ACT_GELU ? "GELU"
                                 : c->model.activation == ACT_SWIGLU ? "SwiGLU" : "ReLU");
    } else if (!strcmp(item, "model.causal")) {
        snprintf(buf, len, "%s", c->model.causal ? "causal" : "bidirectional");
    } else if (!strcmp(item, "model.tie_embeddings")) {
        snprintf(buf, len, "%s", c->model.tie_embeddings ? "tied output" : "untied output");
    } else if (!strcmp(item, "model.qk_norm")) {
        snprintf(buf, len, "%s", c->model.qk_norm == QK_NORM_OFF ? "no QK-norm"
                                 : c->model.qk_norm == QK_NORM_RMSNORM ? "QK-RMSNorm" : "QK-norm");
    } else if (!strcmp(item, "model.attn_softcap")) {
        if (c->model.attn_softcap > 0) snprintf(buf, len, "soft-cap %g", c->model.attn_softcap);
        else snprintf(buf, len, "no soft-cap");
    } else if (!strcmp(item, "init.scheme")) {
        snprintf(buf, len, "%s init", config_init_name(c->init.scheme));
    } else if (!strcmp(item, "init.zero_qk")) {
        snprintf(buf, len, "%s", c->init.zero_qk ? "W_Q = W_K = 0" : "random W_Q, W_K");
    } else if (!strcmp(item, "data.task") || !strcmp(item, "data.zipf")) {
        plot_data_text(c, buf, len);
    } else if (!strcmp(item, "train.optimizer")) {
        snprintf(buf, len, "%s", plot_optimizer_label(c->train.optimizer));
    } else if (!strcmp(item, "train.warmup")) {
        if (c->train.warmup > 1) snprintf(buf, len, "warm-up %d", c->train.warmup);
        else snprintf(buf, len, "no warm-up");
    } else if (!strcmp(item, "train.schedule")) {
        snprintf(buf, len, "%s", !strcmp(v, "constant") ? "constant lr after any warm-up" : !strcmp(v, "inverse_sqrt")
                                 ? "inverse-√ decay" : !strcmp(v, "linear") ? "linear decay" : v);
        if (strcmp(v, "constant") && strcmp(v, "inverse_sqrt") && strcmp(v, "linear"))
            snprintf(buf, len, "%s schedule", v);
    } else if (!strcmp(item, "train.clip")) {
        if (c->train.clip > 0) snprintf(buf, len, "clip %g", c->train.clip);
        else snprintf(buf, len, "no clipping");
    } else if (!strcmp(item, "train.z_loss")) {
        if (c->train.z_loss > 0) snprintf(buf, len, "z-loss %g", c->train.z_loss);
        else snprintf(buf, len, "no z-loss");
    } else if (!strcmp(item, "train.precision")) {
        snprintf(buf, len, "%s", config_precision_name(c->train.precision));
    } else {   // a key of no entry: its name and value ("attn rope on")
        const char *dot = strrchr(item, '.');
        snprintf(buf, len, "%s %s", dot ? dot + 1 : item, v);
        for (char *p = buf; *p && p < buf + strlen(dot ? dot + 1 : item); p++)
            if (*p == '_') *p = ' ';
    }
}

/* The item's words, plain; quiet: "" when the value says nothing in a subtitle. */
static void item_plain(const plot_run_t *r, const char *item, int quiet, char *buf, size_t len)
{
    const word_t *w = word_of(item);
    char v[256] = "";
    if (strcmp(item, "scheme") && strcmp(item, "data")) raw_value(r, item, v, sizeof v);
    if (quiet && w && w->quiet && !strcmp(v, w->quiet)) { buf[0] = '\0'; return; }
    if (quiet && !strcmp(item, "train.precision") && r->cfg.train.precision == PRECISION_FLOAT64) {
        buf[0] = '\0';
        return;
    }
    if (w && w->fmt) snprintf(buf, len, w->fmt, v);
    else special_text(r, item, v, buf, len);
}

void plot_item_text(const plot_run_t *r, const char *item, int enhanced, char *buf, size_t len)
{
    char plain[256];
    item_plain(r, item, 0, plain, sizeof plain);
    if (enhanced) plot_enh(plain, buf, len);
    else snprintf(buf, len, "%s", plain);
}

/* Join the words of items (n of them, or NULL-terminated when n < 0) of run r. */
static void join(const plot_run_t *r, const char (*items)[48], const char *const *list, int n,
                 const plot_diff_t *skip, const plot_diff_t *fol, int quiet, int enhanced,
                 char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; n < 0 ? list[k] != NULL : k < n; k++) {
        const char *item = n < 0 ? list[k] : items[k];
        if ((skip && plot_diff_has(skip, item)) || (fol && is_follower(fol, item))) continue;
        char w[256];
        item_plain(r, item, quiet, w, sizeof w);
        if (!w[0] || used >= len) continue;
        if (strstr(buf, w)) continue;   // data.task and data.zipf say the same
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", w);
    }
    if (enhanced) {
        char *tmp = malloc(len);
        if (tmp) {
            plot_enh(buf, tmp, len);
            snprintf(buf, len, "%s", tmp);
            free(tmp);
        }
    }
}

void plot_key(const plot_diff_t *d, const plot_run_t *r, int enhanced, char *buf, size_t len)
{
    if (d->n) join(r, d->item, NULL, d->n, NULL, d, 0, enhanced, buf, len);
    else if (enhanced) plot_enh(r->name, buf, len);
    else snprintf(buf, len, "%s", r->name);
}

void plot_shared(const plot_diff_t *d, const plot_run_t *r, const char *const *items, int enhanced,
                 char *buf, size_t len)
{
    join(r, NULL, items, -1, d, NULL, 1, enhanced, buf, len);
    if (!d->covary[0]) return;
    const size_t used = strlen(buf);
    char esc[1200];
    if (enhanced) plot_enh(d->covary, esc, sizeof esc);
    else snprintf(esc, sizeof esc, "%s", d->covary);
    snprintf(buf + used, len - used, "%s%s", used ? "\n" : "", esc);   // a line of its own
}

const char *const PLOT_SHARED_INIT[] = {"scheme", "model.d_model", "model.d_ff", "model.layers",
                                        "data.task", "model.tie_embeddings", "model.qk_norm",
                                        NULL};
const char *const PLOT_SHARED_TRAIN[] = {"scheme", "model.d_model", "model.layers", "data.task",
                                         "model.tie_embeddings", "train.optimizer",
                                         "train.lr", "train.warmup", "train.schedule",
                                         "train.steps", "train.precision", "model.qk_norm",
                                         "train.z_loss", "model.attn_softcap", NULL};

/* ------------------------------------------------------------------------- titles */

void plot_title(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                const char *measure, const char *paper, char *buf, size_t len)
{
    const char *title = n ? set->runs[m[0]].sweep_title : "";
    for (int i = 1; i < n && title[0]; i++)
        if (strcmp(set->runs[m[i]].sweep_title, title)) title = "";
    if (title[0]) {
        char esc[600];
        plot_enh(title, esc, sizeof esc);
        snprintf(buf, len, "%s: %s", measure, esc);
        return;
    }
    size_t used = (size_t)snprintf(buf, len, "%s", measure);
    const char *words[PLOT_DIFF_MAX];
    int nw = 0;
    for (int k = 0; k < d->n; k++) {
        if (is_follower(d, d->item[k])) continue;
        const word_t *w = word_of(d->item[k]);
        const char *dot = strrchr(d->item[k], '.');
        const char *word = w ? w->word : dot ? dot + 1 : d->item[k];
        int dup = 0;
        for (int j = 0; j < nw; j++) dup |= !strcmp(words[j], word);
        if (!dup) words[nw++] = word;
    }
    const int shown = nw < 3 ? nw : 3;   // "by a", "by a and b", "by a, b and c", "… and more"
    for (int k = 0; k < shown && used < len; k++) {
        char esc[64];
        plot_enh(words[k], esc, sizeof esc);
        const char *sep = k == 0 ? " by " : k + 1 == shown && nw <= 3 ? " and " : ", ";
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, esc);
    }
    if (nw > 3 && used < len) used += (size_t)snprintf(buf + used, len - used, " and more");
    if (paper && used < len) snprintf(buf + used, len - used, " (%s)", paper);
}

/* Whether every item of d is one of allowed (NULL-terminated). */
static int only(const plot_diff_t *d, const char *const *allowed)
{
    for (int k = 0; k < d->n; k++)
        if (!listed(allowed, d->item[k])) return 0;
    return 1;
}

const char *plot_paper_figure(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                              int kind)
{
    int post = 0, pre = 0, other = 0, mlm = 0, post_warm = 0, post_cold = 0, pre_warm = 0;
    for (int i = 0; i < n; i++) {
        const config_t *c = &set->runs[m[i]].cfg;
        char s[32];
        scheme_name(c, s, sizeof s);
        const int p = !strcmp(s, "post"), q = !strcmp(s, "pre");
        post += p;
        pre += q;
        other += !p && !q;
        mlm += c->data.task == TASK_MLM;
        post_warm += p && c->train.warmup > 1;
        post_cold += p && c->train.warmup <= 1;
        pre_warm += q && c->train.warmup > 1;
    }
    if (other || !n) return NULL;
    static const char *const LAYERS[] = {"scheme", NULL};
    static const char *const DEPTH[] = {"scheme", "model.layers", "model.dec_layers", NULL};
    static const char *const FIG2[] = {"scheme", "train.warmup", "train.lr", "train.optimizer", NULL};
    static const char *const FIG4[] = {"scheme", "train.warmup", "train.lr", NULL};
    if (kind == PLOT_KIND_LAYERS) return post && pre && only(d, LAYERS) ? "Fig. 3(a,b)" : NULL;
    if (kind == PLOT_KIND_DEPTH) return post && pre && only(d, DEPTH) ? "Fig. 3(c,d)" : NULL;
    // Fig. 2: Post-LN with and without warm-up (Adam, SGD, two rates), Pre-LN beside it
    if (!mlm && post_warm && post_cold && only(d, FIG2)) return "Fig. 2";
    // Fig. 4 (translation) and 5 (BERT): Post-LN with warm-up beside Pre-LN without
    if (post && pre && post_warm == post && !pre_warm && only(d, FIG4))
        return mlm == n ? "Fig. 5" : mlm ? NULL : "Fig. 4";
    return NULL;
}

void plot_quote(const char *in, int enhanced, char *out, size_t len)
{
    if (enhanced) { plot_escape_name(in, out, len); return; }
    size_t o = 0;
    for (; *in && o + 3 < len; in++) {
        const char c = (unsigned char)*in < 0x20 || *in == 0x7f ? '?' : *in;
        if (c == '\'') out[o++] = '\'';
        out[o++] = c;
    }
    out[o] = '\0';
}
