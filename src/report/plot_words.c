/* plot_words.c — the words of titles, subtitles and keys: each config item's name and value as a
 * reader says them ("warm-up 500", "Post-LN"), keys, shared lines and titles from a plot_diff_t
 * (report/plot_label.h, docs/design.md §6j). Which items differ is plot_label.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_label.h"
#include "report/plot_internal.h"

/* ------------------------------------------------------------------------- words */

/* An item's words: fmt with %s for the value (NULL: a function below), its name in a title,
 * whether its values are ordered, and the value that says nothing in a subtitle — which an
 * unwritten key also says (a key the stored config leaves out is at its default). */
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
    {"model.activation", NULL, "activation", 0, "relu"},
    {"model.positions", NULL, "positions", 0, "sinusoidal"},
    {"model.bias", NULL, "biases", 0, "on"},
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
    {"init.parametrization", NULL, "parametrization", 0, "standard"},
    {"init.base_width", NULL, "μP's base width", 1, "0"},
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
    {"probe.curvature_every", NULL, "curvature rows", 1, "0"},
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
    plot_item_raw(r, item, v, sizeof v);
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
    } else if (!strcmp(item, "model.positions")) {
        snprintf(buf, len, "%s", c->model.positions == POS_ROPE ? "RoPE"
                                 : c->model.positions == POS_NONE ? "no positions"
                                                                  : "sinusoidal positions");
    } else if (!strcmp(item, "model.bias")) {
        snprintf(buf, len, "%s", c->model.bias ? "biases" : "no biases");
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
    } else if (!strcmp(item, "init.parametrization")) {   // Yang et al. 2022 (docs/design.md §6h)
        // the stored names (§6h): `mup` μParam (simple), as the figures always said; Table 3
        const parametrization_t pz = c->init.parametrization;
        snprintf(buf, len, "%s", pz == PARAM_MUP_SIMPLE   ? "μP"
                                 : pz == PARAM_MUP_TABLE3 ? "μP Table 3"
                                                          : "standard parametrization");
    } else if (!strcmp(item, "init.base_width")) {
        if (c->init.base_width > 0) snprintf(buf, len, "base width %d", c->init.base_width);
        else snprintf(buf, len, "no base width");
    } else if (!strcmp(item, "probe.curvature_every")) {
        if (c->probe.curvature_every > 0)
            snprintf(buf, len, "curvature every %d updates", c->probe.curvature_every);
        else snprintf(buf, len, "no curvature rows");
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

/* The item's words, plain (report/plot_internal.h). */
void plot_item_plain(const plot_run_t *r, const char *item, int quiet, char *buf, size_t len)
{
    const word_t *w = word_of(item);
    char v[256] = "";
    if (strcmp(item, "scheme") && strcmp(item, "data")) plot_item_raw(r, item, v, sizeof v);
    if (quiet && w && w->quiet && (!v[0] || !strcmp(v, w->quiet))) {   // a default goes unsaid
        buf[0] = '\0';
        return;
    }
    if (w && w->fmt) snprintf(buf, len, w->fmt, v);
    else special_text(r, item, v, buf, len);
}

void plot_item_text(const plot_run_t *r, const char *item, int enhanced, char *buf, size_t len)
{
    char plain[256];
    plot_item_plain(r, item, 0, plain, sizeof plain);
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
        if ((skip && plot_diff_has(skip, item)) || (fol && plot_diff_follows(fol, item))) continue;
        char w[256];
        plot_item_plain(r, item, quiet, w, sizeof w);
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
                                        "model.positions", "model.activation", "model.bias",
                                        "data.task", "model.tie_embeddings", "model.qk_norm",
                                        NULL};
const char *const PLOT_SHARED_TRAIN[] = {"scheme", "model.d_model", "model.layers",
                                         "model.positions", "model.activation", "model.bias",
                                         "data.task",
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
        if (plot_diff_follows(d, d->item[k])) continue;
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
        if (!plot_listed(allowed, d->item[k])) return 0;
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
