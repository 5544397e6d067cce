/* plot_style.c — what every figure shares: text gnuplot prints literally, the data a run used,
 * the groups of runs a figure draws, curve styles and keys, per-layer data blocks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "measure/fit.h"

int plot_theory(const plot_run_t *r) { return (int)scheme_of(&r->cfg)->theory; }

int plot_param_col(const plot_run_t *r, const char *name)
{
    return probe_axis_find(r->probe->ax.param, r->probe->ax.nparam, name);
}

int plot_site_col(const probe_t *p, const char *name)
{
    return probe_axis_find(p->ax.site, p->ax.nsite, name);
}

/* A name as literal text inside a single-quoted gnuplot string in enhanced mode: the
 * enhanced-text operators _ ^ { } @ & ~ \ get a backslash (else "post_warm" prints "warm" as a
 * subscript), ' doubles (gnuplot's quote inside '...'), and a control character (a newline
 * would end the command, and the rest of the name would run as one) prints as '?'
 * (docs/design.md §3). Truncates to fit len. */
void plot_enh(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (; *in && o + 2 < len; in++) {
        const char c = (unsigned char)*in < 0x20 || *in == 0x7f ? '?' : *in;
        if (strchr("_^{}@&~\\", c)) out[o++] = '\\';
        out[o++] = c;
    }
    out[o] = '\0';
}

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

const char *plot_optimizer_label(optimizer_t o)
{
    switch (o) {
    case OPT_ADAM: return "Adam";
    case OPT_ADAMW: return "AdamW";
    case OPT_SGD: return "SGD";
    case OPT_RADAM: return "RAdam";
    case OPT_GI_ADAM: return "GI-Adam";
    case OPT_STABLEADAMW: return "StableAdamW";
    case OPT_LAMB: return "LAMB";
    case OPT_MUON: return "Muon";
    case OPT_LION: return "Lion";
    case OPT_NSGD: return "NSGD";
    }
    return config_optimizer_name(o);
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

/* ------------------------------------------------------------------------- styles */

/* Rank of v among the distinct values of vals[0..n) (ascending), and their count. */
static int value_rank(const double *vals, int n, double v, int *distinct)
{
    int rank = 0, d = 0;
    for (int i = 0; i < n; i++) {
        int first = 1;
        for (int j = 0; j < i; j++) first &= !(vals[j] == vals[i]);
        if (!first) continue;
        d++;
        rank += vals[i] < v;
    }
    *distinct = d;
    return rank;
}

/* Whether two of st[0..n) look alike (colour, dash and marker). */
static int styles_alike(const plot_style_t *st, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(st[i].color, st[j].color) && st[i].dt == st[j].dt && st[i].pt == st[j].pt)
                return 1;
    return 0;
}

/* The fallback of docs/design.md §6j when the rules give two curves one look: a colour per
 * curve (Okabe–Ito up to PLOT_QUAL_COUNT, else viridis by curve with a dash cycling over five),
 * the key unchanged (what differs, or the run's name). */
static void styles_per_curve(plot_style_t *st, int n)
{
    for (int i = 0; i < n; i++) {
        if (n <= PLOT_QUAL_COUNT) {
            snprintf(st[i].color, sizeof st[i].color, "%s", palette_qualitative(i));
            st[i].dt = 1;
        } else {
            palette_ordinal(i, n, st[i].color);
            st[i].dt = palette_dash(i);
        }
    }
}

int plot_colour_item(const plot_diff_t *d)
{
    static const char *const PREFER[] = {"train.lr", "train.warmup", "model.layers",
                                         "model.d_model"};
    for (int p = 0; p < 4; p++)
        for (int k = 0; k < d->n; k++)
            if (!strcmp(d->item[k], PREFER[p])) return k;
    for (int k = 0; k < d->n; k++)   // another ordered item; a seed last
        if (plot_item_ordered(d->item[k]) && strcmp(d->item[k], "init.seed")) return k;
    for (int k = 0; k < d->n; k++)
        if (plot_item_ordered(d->item[k])) return k;
    return -1;
}

int plot_styles(const plot_set_t *set, const int *rep, int n, const plot_diff_t *d,
                plot_style_t *st)
{
    const int ordered = plot_colour_item(d);
    int only_scheme = plot_diff_has(d, "scheme");   // each curve its own scheme: its colour
    for (int i = 0; only_scheme && i < n; i++)
        for (int j = 0; j < i && only_scheme; j++) {
            char a[32], b[32];
            scheme_name(&set->runs[rep[i]].cfg, a, sizeof a);
            scheme_name(&set->runs[rep[j]].cfg, b, sizeof b);
            only_scheme = strcmp(a, b) != 0;
        }
    const int by_order = ordered >= 0 && (d->n == 1 || n > PLOT_QUAL_COUNT);
    double *val = calloc((size_t)(n > 0 ? n : 1), sizeof *val);
    for (int i = 0; val && by_order && i < n; i++)
        val[i] = plot_item_value(&set->runs[rep[i]], d->item[ordered]);
    plot_diff_t rest = *d;   // the items a dash tells apart when colour is the ordered one
    if (by_order) plot_diff_drop(&rest, d->item[ordered]);
    char (*other)[300] = calloc((size_t)(n > 0 ? n : 1), sizeof *other);
    int nother = 0;
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[rep[i]];
        plot_style_t *x = &st[i];
        char scheme[32];
        scheme_name(&r->cfg, scheme, sizeof scheme);
        plot_key(d, r, 0, x->key, sizeof x->key);
        x->lw = 2.0;
        x->dt = 1;
        x->pt = palette_scheme_point(scheme, 0);
        if (by_order && val) {
            int distinct;
            const int rank = value_rank(val, n, val[i], &distinct);
            palette_ordinal(rank, distinct, x->color);
            if (rest.n && other) {   // a dash per combination of the other items
                char k[300];
                plot_key(&rest, r, 0, k, sizeof k);
                int j = 0;
                while (j < nother && strcmp(other[j], k)) j++;
                if (j == nother) snprintf(other[nother++], sizeof other[0], "%s", k);
                x->dt = palette_dash(j);
            }
        } else if (only_scheme) {
            snprintf(x->color, sizeof x->color, "%s", palette_scheme(scheme, i));
        } else {
            snprintf(x->color, sizeof x->color, "%s", palette_qualitative(i));
        }
    }
    free(val);
    free(other);
    return !styles_alike(st, n);
}

int plot_styles_apart(const plot_set_t *set, const int *rep, int n, const plot_diff_t *d,
                      plot_style_t *st)
{
    if (plot_styles(set, rep, n, d, st)) return 1;
    styles_per_curve(st, n);   // colours and dashes ran out: a colour per curve, never silence
    return 0;
}

int plot_group_by(const plot_set_t *set, const int *m, int n, const plot_diff_t *d, int *of,
                  int *rep, int max)
{
    char (*key)[300] = malloc((size_t)(n > 0 ? n : 1) * sizeof *key);
    int ng = 0;
    for (int i = 0; key && i < n; i++) {
        plot_key(d, &set->runs[m[i]], 0, key[i], sizeof key[i]);
        of[i] = -1;
        for (int g = 0; g < ng && of[i] < 0; g++)
            if (!strcmp(key[rep[g]], key[i])) of[i] = g;
        if (of[i] < 0 && ng < max) { rep[ng] = i; of[i] = ng++; }
    }
    free(key);
    return ng;
}

void plot_keyentry(sbuf_t *keys, const plot_style_t *st, const char *with)
{
    char q[620];
    plot_quote(st->key, 0, q, sizeof q);
    char pt[16] = "";
    if (strstr(with, "points")) snprintf(pt, sizeof pt, " pt %d", st->pt);
    sbuf_printf(keys, ", keyentry with %s lc rgb '%s' dt %d%s lw %g title '%s' noenhanced", with,
                st->color, st->dt, pt, st->lw, q);
}

/* first[k]: the first curve of the k-th distinct colour (by = 0) or dash (by = 1). */
static int distinct_styles(const plot_style_t *st, int n, int by, int *first)
{
    int nk = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < nk && (by ? st[first[k]].dt != st[i].dt : strcmp(st[first[k]].color, st[i].color)))
            k++;
        if (k == nk) {
            if (nk == PLOT_MAX_SERIES) return -1;
            first[nk++] = i;
        }
    }
    return nk;
}

int plot_keys_factored(const plot_set_t *set, const int *rep, int n, const plot_diff_t *d,
                       const plot_style_t *st, sbuf_t *keys)
{
    const int c = plot_colour_item(d);
    if (c < 0 || d->n < 2 || n < 2) return 0;
    plot_diff_t rest = *d;
    plot_diff_drop(&rest, d->item[c]);
    int col[PLOT_MAX_SERIES], dash[PLOT_MAX_SERIES];
    const int nc = distinct_styles(st, n, 0, col), nd = distinct_styles(st, n, 1, dash);
    if (nc < 1 || nd < 2 || nc + nd >= n) return 0;
    char a[300], b[300];   // a colour is one value of the item, a dash one key of the rest
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            const plot_run_t *ri = &set->runs[rep[i]], *rj = &set->runs[rep[j]];
            if (!strcmp(st[i].color, st[j].color)) {
                plot_item_text(ri, d->item[c], 0, a, sizeof a);
                plot_item_text(rj, d->item[c], 0, b, sizeof b);
                if (strcmp(a, b)) return 0;
            }
            if (st[i].dt == st[j].dt) {
                plot_key(&rest, ri, 0, a, sizeof a);
                plot_key(&rest, rj, 0, b, sizeof b);
                if (strcmp(a, b)) return 0;
            }
        }
    for (int k = 0; k < nc; k++) {
        plot_style_t e = st[col[k]];
        plot_item_text(&set->runs[rep[col[k]]], d->item[c], 0, e.key, sizeof e.key);
        e.dt = 1;
        plot_keyentry(keys, &e, "lines");
    }
    for (int k = 0; k < nd; k++) {
        plot_style_t e = st[dash[k]];
        plot_key(&rest, &set->runs[rep[dash[k]]], 0, e.key, sizeof e.key);
        snprintf(e.color, sizeof e.color, "#000000");
        plot_keyentry(keys, &e, "linespoints");
    }
    return nc + nd;
}

void plot_keyentry_text(sbuf_t *keys, const char *with, const char *text)
{
    char q[620];
    plot_quote(text, 0, q, sizeof q);
    sbuf_printf(keys, ", keyentry with %s title '%s' noenhanced", with, q);
}

int plot_styles_longest(const plot_style_t *st, int n)
{
    int most = 0;
    for (int i = 0; i < n; i++) {
        const int chars = (int)strlen(st[i].key);   // bytes: what gnuplot counts (plot_layout.c)
        most = chars > most ? chars : most;
    }
    return most;
}

void plot_probe_seeds(const plot_run_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "%d seed%s × %d batch%s, bars: 95%% CI", r->probe->S,
             r->probe->S > 1 ? "s" : "", r->cfg.probe.batches, r->cfg.probe.batches > 1 ? "es" : "");
}

/* ------------------------------------------------------------------------- blocks */

void plot_block_per_layer(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                          int k, double scale, plot_range_t *rg)
{
    plot_block_split(s, name, data, S, L, K, k, scale, 0, rg);
}

void plot_block_split(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                      int k, double scale, int split, plot_range_t *rg)
{
    sbuf_printf(s, "$%s << EOD\n", name);
    for (int l = 0; l < L && k >= 0; l++) {
        double mean, half;
        size_t n;
        if (split > 0 && l == split) sbuf_printf(s, "\n");   // gnuplot breaks the line here
        fit_mean_ci(data + (size_t)l * K + k, (size_t)L * K, (size_t)S, &mean, &half, &n);
        if (!n) continue;
        if (isnan(half)) half = 0.0;
        const double lo = fmax(0.0, mean - half) * scale, hi = (mean + half) * scale;   // a norm ≥ 0
        sbuf_printf(s, "%d %.10g %.10g %.10g\n", l + 1, mean * scale, lo, hi);
        if (rg) {
            plot_range_add(rg, lo);
            plot_range_add(rg, hi);
            plot_range_mid(rg, mean * scale);
        }
    }
    sbuf_printf(s, "EOD\n");
}

void plot_layer_axis(sbuf_t *s, int L)
{
    if (L <= 16) {   // a tic per layer
        sbuf_printf(s, "set xrange [0.5:%g]\nset xtics 1, 1, %d\nset mxtics 1\n", L + 0.5, L);
        return;
    }
    static const int STEPS[] = {2, 4, 5, 10, 20, 25, 50, 100, 200, 500, 1000};
    size_t k = 0;   // at most 9 labels, so that a small panel's do not run together
    while (k + 1 < sizeof STEPS / sizeof STEPS[0] && L / STEPS[k] > 8) k++;
    int every = STEPS[k];
    if (every == 2)   // the odd layers
        sbuf_printf(s, "set xrange [0.5:%g]\nset xtics 1, 2, %d\nset mxtics 1\n", L + 0.5, L);
    else
        sbuf_printf(s, "set xrange [0.5:%g]\nset xtics %d, %d, %d\nset xtics add ('1' 1)\n"
                       "set mxtics 1\n", L + 0.5, every, every, L);
}

/* ------------------------------------------------------------------------- atlas helpers */

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

/* The table's rank of a scheme, today's block's "X+rmsnorm" ranked as X, after it. */
static int rank_of(const char *name)
{
    char base[32];
    const int block = scheme_base_name(name, base, sizeof base);
    return 2 * scheme_rank(base) + block;
}

void plot_sort_schemes(char names[][32], int *m, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && rank_of(names[b]) < rank_of(names[b - 1]); b--) {
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

void plot_heat_cells(sbuf_t *s, const char *block, double xspan, double yspan)
{
    sbuf_printf(s, "plot $%s using 1:2:3:($4 + %.6g):5:($6 + %.6g):7 with boxxy fs solid noborder "
                   "lc palette notitle\n", block, xspan / 400, yspan / 400);
}
