/* plot_style.c — what every figure shares: colours, labels that gnuplot prints literally,
 * the data a run used, the groups of runs a figure draws, per-layer data blocks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "measure/fit.h"

const char *const PLOT_COLORS[PLOT_NCOLORS] = {"#c0392b", "#1f5fa8", "#e67e22", "#27ae60", "#8e44ad",
                                     "#7f8c8d", "#d35400", "#16a085"};

/* Each family's shades (the first is its colour) and point type: Post-LN-like warm circles,
 * Pre-LN-like cold squares, norm-free triangles, mixed diamonds (config/scheme.h). */
static const struct { const char *shade[4]; int pt; } FAMILY_STYLE[4] = {
    [SCHEME_POST_LIKE] = {{"#c0392b", "#e67e22", "#8e44ad", "#d35400"}, 7},
    [SCHEME_PRE_LIKE] = {{"#1f5fa8", "#16a085", "#27ae60", "#7f8c8d"}, 5},
    [SCHEME_NORM_FREE] = {{"#2c3e50", "#6ab04c", "#f1c40f", "#95a5a6"}, 9},
    [SCHEME_MIXED] = {{"#8e44ad", "#e84393", "#9b59b6", "#d35400"}, 13},
};

static int family_of(const plot_run_t *r)
{
    const scheme_family_t f = scheme_family(&r->cfg);
    return f < 4 ? (int)f : 0;
}

int plot_point_type(const plot_run_t *r) { return FAMILY_STYLE[family_of(r)].pt; }

int plot_theory(const plot_run_t *r) { return (int)scheme_of(&r->cfg)->theory; }

/* Column of a layer tensor (e.g. "w2") in a run's probe, or −1. */
int plot_param_col(const plot_run_t *r, const char *name)
{
    return probe_axis_find(r->probe->ax.param, r->probe->ax.nparam, name);
}

/* Column of a hidden-state site (e.g. "resid1") in a probe, or −1. */
int plot_site_col(const probe_t *p, const char *name)
{
    return probe_axis_find(p->ax.site, p->ax.nsite, name);
}

/* Post-LN red, Pre-LN blue; further runs of the same family take its next shades. */
const char *plot_run_color(const plot_run_t *r, int rank_in_family)
{
    return FAMILY_STYLE[family_of(r)].shade[rank_in_family % 4];
}

/* A run name as literal text inside a single-quoted gnuplot string in enhanced mode: the
 * enhanced-text operators _ ^ { } @ & ~ \ get a backslash (else "post_warm" prints "warm" as a
 * subscript), ' doubles (gnuplot's quote inside '...'), and a control character (a newline
 * would end the command, and the rest of the name would run as one) prints as '?'
 * (docs/design.md §3). Truncates to fit len. */
void plot_escape_name(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (; *in && o + 3 < len; in++) {
        const char c = (unsigned char)*in < 0x20 || *in == 0x7f ? '?' : *in;
        if (strchr("_^{}@&~\\", c)) out[o++] = '\\';
        else if (c == '\'') out[o++] = '\'';
        out[o++] = c;
    }
    out[o] = '\0';
}

void plot_run_label(const plot_run_t *r, int with_name, char *buf, size_t len)
{
    const char *norm = r->cfg.model.norm == NORM_RMSNORM ? " (RMSNorm)"
                       : r->cfg.model.norm == NORM_NONE  ? " (no norm)" : "";
    char name[160], label[64], esc[64];   // fits the label buffers (200) with the scheme
    plot_escape_name(r->name, name, sizeof name);
    scheme_label(&r->cfg, label, sizeof label);
    if (plot_theory(r) == SCHEME_THEORY_NONE) {   // a later scheme: its name, as the atlas's
        plot_escape_name(label, esc, sizeof esc);
        norm = "";
    } else {
        snprintf(esc, sizeof esc, "%s", label);
    }
    if (with_name) snprintf(buf, len, "%s%s: %s", esc, norm, name);
    else snprintf(buf, len, "%s%s", esc, norm);
}

void plot_skipped_note(const plot_set_t *set, const int *m, int n, const char *what, char *buf,
                       size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        if (plot_theory(r) != SCHEME_THEORY_NONE) continue;
        char label[200];
        plot_run_label(r, 0, label, sizeof label);
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "; not drawn: ", label);
    }
    if (used && used < len)
        snprintf(buf + used, len - used, " (%s is stated for Post-LN and Pre-LN)", what);
}

/* "Zipf(1.1) tokens" etc.: which data a figure used (docs/design.md §1 asks to say so), and
 * "untied output" when the logits do not reuse tok_embed (it changes the depth exponent). */
void plot_data_text(const config_t *c, char *buf, size_t len)
{
    char data[48];
    if (c->data.task == TASK_RANDOM && c->data.zipf > 0)
        snprintf(data, sizeof data, "Zipf(%g) tokens", c->data.zipf);
    else if (c->data.task == TASK_RANDOM) snprintf(data, sizeof data, "uniform tokens");
    else if (c->data.task == TASK_MLM)
        snprintf(data, sizeof data, "masked LM, %g%% of bytes", 100.0 * c->data.mask_rate);
    else if (c->data.task == TASK_TRANSLATION)
        snprintf(data, sizeof data, "En→De corpus (BPE %d)", c->model.vocab);
    else if (c->data.zipf > 0 && c->data.task != TASK_TEXT)
        snprintf(data, sizeof data, "%s task, Zipf(%g) tokens", config_task_name(c->data.task),
                 c->data.zipf);
    else snprintf(data, sizeof data, "%s task", config_task_name(c->data.task));
    snprintf(buf, len, "%s%s", data, c->model.tie_embeddings ? "" : ", untied output");
}

/* The probe runs of arch with the most common (d, L); ties go to the larger L, then d. */
int plot_pick_layer_group(const plot_set_t *set, arch_t arch, int *members)
{
    int best = -1, best_count = 0;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].probe || set->runs[i].cfg.model.arch != arch) continue;
        const config_t *ci = &set->runs[i].cfg;
        int count = 0;
        for (int j = 0; j < set->n; j++)
            if (set->runs[j].probe && set->runs[j].cfg.model.arch == arch &&
                set->runs[j].cfg.model.d_model == ci->model.d_model &&
                set->runs[j].cfg.model.layers == ci->model.layers)
                count++;
        if (best < 0 || count > best_count ||
            (count == best_count && (ci->model.layers > set->runs[best].cfg.model.layers ||
                                     (ci->model.layers == set->runs[best].cfg.model.layers &&
                                      ci->model.d_model > set->runs[best].cfg.model.d_model)))) {
            best = i;
            best_count = count;
        }
    }
    int n = 0;
    for (int j = 0; best >= 0 && j < set->n && n < PLOT_MAX_SERIES; j++)
        if (set->runs[j].probe && set->runs[j].cfg.model.arch == arch &&
            set->runs[j].cfg.model.d_model == set->runs[best].cfg.model.d_model &&
            set->runs[j].cfg.model.layers == set->runs[best].cfg.model.layers)
            members[n++] = j;
    return n;
}

/* Rank of run k among the members of its family (for colours), and whether labels need run
 * names (two runs' legends would read the same). */
int plot_family_rank(const plot_set_t *set, const int *members, int n, int k)
{
    int rank = 0;
    for (int i = 0; i < k && i < n; i++)
        if (family_of(&set->runs[members[i]]) == family_of(&set->runs[members[k]])) rank++;
    return rank;
}

int plot_labels_need_names(const plot_set_t *set, const int *members, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            char a[200], b[200];
            plot_run_label(&set->runs[members[i]], 0, a, sizeof a);
            plot_run_label(&set->runs[members[j]], 0, b, sizeof b);
            if (!strcmp(a, b)) return 1;
        }
    return 0;
}

/* Data block $name: rows "x mean ci" of a per-seed array over layers (column k of width K). */
void plot_block_per_layer(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                          int k, double scale)
{
    plot_block_split(s, name, data, S, L, K, k, scale, 0);
}

void plot_block_split(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                      int k, double scale, int split)
{
    sbuf_printf(s, "$%s << EOD\n", name);
    for (int l = 0; l < L && k >= 0; l++) {
        double mean, half;
        size_t n;
        if (split > 0 && l == split) sbuf_printf(s, "\n");   // gnuplot breaks the line here
        fit_mean_ci(data + (size_t)l * K + k, (size_t)L * K, (size_t)S, &mean, &half, &n);
        if (n) sbuf_printf(s, "%d %.10g %.10g\n", l + 1, mean * scale, isnan(half) ? 0.0 : half * scale);
    }
    sbuf_printf(s, "EOD\n");
}

void plot_subtitle(const plot_run_t *r, char *buf, size_t len)
{
    char data[64];
    plot_data_text(&r->cfg, data, sizeof data);
    char depth[48];
    if (r->cfg.model.arch == ARCH_ENCDEC)
        snprintf(depth, sizeof depth, "%d-%d encoder–decoder", r->cfg.model.layers,
                 config_dec_layers(&r->cfg));
    else
        snprintf(depth, sizeof depth, "L = %d", r->cfg.model.layers);
    snprintf(buf, len, "d = %d, d_{ff} = %d, %s, %s, %d seeds × %d batches, bars: 95%% CI",
             r->cfg.model.d_model, r->cfg.model.d_ff, depth, data, r->probe->S,
             r->cfg.probe.batches);
}


const char *plot_warmup_question(const plot_set_t *set, const int *m, int n)
{
    int within = 0, between = 0;
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            const config_t *a = &set->runs[m[i]].cfg, *b = &set->runs[m[k]].cfg;
            if ((a->train.warmup > 1) == (b->train.warmup > 1)) continue;
            char sa[32], sb[32];
            scheme_name(a, sa, sizeof sa);
            scheme_name(b, sb, sizeof sb);
            if (!strcmp(sa, sb)) within = 1;
            else between = 1;
        }
    return within ? " with and without warm-up (Fig. 2)"
                  : between ? ": each scheme with or without warm-up (Fig. 4)" : "";
}

int plot_same_optimizer(const plot_set_t *set, const int *m, int n)
{
    for (int i = 1; i < n; i++)
        if (set->runs[m[i]].cfg.train.optimizer != set->runs[m[0]].cfg.train.optimizer) return 0;
    return 1;
}

const char *plot_optimizer_label(optimizer_t o)
{
    switch (o) {
    case OPT_ADAM: return "Adam";
    case OPT_ADAMW: return "AdamW";
    case OPT_SGD: return "SGD";
    case OPT_RADAM: return "RAdam";
    case OPT_GI_ADAM: return "GI-Adam";
    case OPT_STABLEADAMW: return "StableAdamW";
    }
    return config_optimizer_name(o);
}

void plot_train_label(const plot_set_t *set, const int *m, int n, int i, char *buf, size_t len)
{
    const plot_run_t *r = &set->runs[m[i]];
    const config_t *c = &r->cfg;
    int lr_differs = 0, same = 0;
    for (int j = 0; j < n; j++) {
        const config_t *o = &set->runs[m[j]].cfg;
        if (o->train.lr != c->train.lr) lr_differs = 1;
        if (j != i && o->model.placement == c->model.placement && o->model.norm == c->model.norm &&
            o->init.scheme == c->init.scheme && o->train.warmup == c->train.warmup &&
            o->train.lr == c->train.lr && o->model.layers == c->model.layers &&
            o->train.optimizer == c->train.optimizer)
            same = 1;
    }
    char scheme[64], label[40];
    scheme_label(c, label, sizeof label);
    if (plot_theory(r) != SCHEME_THEORY_NONE && c->model.norm != NORM_LAYERNORM)   // "Pre-LN (rmsnorm)"
        snprintf(scheme, sizeof scheme, "%s (%s)", label, config_norm_name(c->model.norm));
    else
        snprintf(scheme, sizeof scheme, "%s", label);
    char warm[32], lr[24] = "", name[160] = "";
    if (c->train.warmup > 1) snprintf(warm, sizeof warm, "warm-up %d", c->train.warmup);
    else snprintf(warm, sizeof warm, "no warm-up");
    if (lr_differs) snprintf(lr, sizeof lr, ", lr %g", c->train.lr);
    char opt[24] = "";   // Fig. 2(b): SGD beside Adam
    if (!plot_same_optimizer(set, m, n)) snprintf(opt, sizeof opt, ", %s", plot_optimizer_label(c->train.optimizer));
    if (same) {   // what tells it apart is not in the config keys above: the run's name
        char esc[150];
        plot_escape_name(r->name, esc, sizeof esc);
        snprintf(name, sizeof name, " (%s)", esc);
    }
    snprintf(buf, len, "%s%s, %s%s%s", scheme, opt, warm, lr, name);
}

int plot_intern_name(char names[][32], int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(names[i], name)) return i;
    if (*n == PLOT_ATLAS_MAX) return -1;
    snprintf(names[*n], 32, "%s", name);
    return (*n)++;
}

int plot_intern_value(double *vals, int *n, double v)
{
    for (int i = 0; i < *n; i++)
        if (vals[i] == v) return i;
    if (*n == PLOT_ATLAS_MAX) return -1;
    vals[*n] = v;
    return (*n)++;
}

int plot_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void plot_sort_schemes(char names[][32], int *m, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && scheme_rank(names[b]) < scheme_rank(names[b - 1]); b--) {
            char t[32];
            memcpy(t, names[b], sizeof t);
            memcpy(names[b], names[b - 1], sizeof t);
            memcpy(names[b - 1], t, sizeof t);
            if (m) {
                const int k = m[b];
                m[b] = m[b - 1];
                m[b - 1] = k;
            }
        }
}

const char *plot_scheme_color(const char *name, int i)
{
    const scheme_t *s = scheme_by_name(name);
    return s ? s->color : SCHEMES[i % SCHEME_COUNT].color;
}
