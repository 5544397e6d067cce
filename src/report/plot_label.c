/* plot_label.c — which config items tell the runs of a figure apart, and which co-vary and so
 * count as one factor: what titles, subtitles and keys are made of (report/plot_label.h,
 * docs/design.md §6j). Their words are plot_words.c's. */
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

void plot_item_raw(const plot_run_t *r, const char *item, char *buf, size_t len)
{
    items_t *it = malloc(sizeof *it);
    buf[0] = '\0';
    if (it && !items_read(r, it)) {
        const char *v = items_get(it, item);
        if (v) snprintf(buf, len, "%s", v);
        else if (config_value_text(&r->cfg, item, buf, len))   // a key left out at its
            buf[0] = '\0';                                      // default: named by its value
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

int plot_listed(const char *const *list, const char *key)
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

/* Whether the μP runs among m have one base width (standard runs have none: docs/design.md §4). */
static int mup_one_width(const plot_set_t *set, const int *m, int n)
{
    int width = -1;
    for (int i = 0; i < n; i++) {
        const config_t *c = &set->runs[m[i]].cfg;
        if (!config_is_mup(c)) continue;
        if (width >= 0 && c->init.base_width != width) return 0;
        width = c->init.base_width;
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
static const char *const LEADERS[] = {"data.task", "data.path", "model.d_model",
                                      "model.activation", "init.parametrization",
                                      "probe.curvature_every", NULL};
#define CLASS_LEADERS 3   /* the first three lead by splitting the runs alike; the others only
                             lead the items they imply (implied) */
static const char *const FOLLOWERS[] = {"model.vocab", "model.seq_len", "model.src_len",
                                        "model.heads", "model.d_ff", NULL};

/* The FFN's width over d of run r in units of the 2017 block's: SwiGLU's three matrices of
 * d × d_ff hold the parameters of two of d × 3/2·d_ff (Shazeer 2020, "GLU variants": d_ff
 * 8d/3 for 4d), so its d_ff counts 3/2. */
static double ffn_ratio(const config_t *c)
{
    return c->model.d_ff * (c->model.activation == ACT_SWIGLU ? 1.5 : 1.0) / c->model.d_model;
}

/* Whether item is implied by leader over the runs, so that keys name the leader alone
 * (docs/design.md §6j): d_ff by the width or the activation when the FFN is one multiple of d
 * (SwiGLU's 2/3 of it, within 5 % for its rounding: 344 for d = 128); heads by the width when
 * the head width is one; μP's base width by the parametrization and the curvature keys by
 * probe.curvature_every when runs of one value of the leader share the item's value. */
static int implied(const plot_set_t *set, const int *m, int n, const char *item, const char *leader,
                   const char **lv, const char **iv)
{
    if (!strcmp(item, "model.d_ff") &&
        (!strcmp(leader, "model.d_model") || !strcmp(leader, "model.activation"))) {
        const double r0 = ffn_ratio(&set->runs[m[0]].cfg);
        for (int i = 1; i < n; i++)
            if (fabs(ffn_ratio(&set->runs[m[i]].cfg) / r0 - 1.0) > 0.05) return 0;
        return 1;
    }
    if (!strcmp(item, "model.heads") && !strcmp(leader, "model.d_model")) {
        const config_t *c0 = &set->runs[m[0]].cfg;
        for (int i = 1; i < n; i++) {
            const config_t *c = &set->runs[m[i]].cfg;
            if ((long)c->model.d_model * c0->model.heads != (long)c0->model.d_model * c->model.heads)
                return 0;
        }
        return 1;
    }
    const int fn = (!strcmp(leader, "init.parametrization") && !strcmp(item, "init.base_width")) ||
                   (!strcmp(leader, "probe.curvature_every") &&
                    !strncmp(item, "probe.curvature_", 16));
    for (int i = 0; fn && i < n; i++)   // the item a function of the leader
        for (int j = 0; j < i; j++)
            if (!strcmp(lv[i], lv[j]) && strcmp(iv[i], iv[j])) return 0;
    return fn;
}

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

/* "d_ff = 2d" when the group led by item lead has one follower j, both numbers in every run and
 * j = R·lead with one R for all of them (a width and its d_ff swept together): the subtitle says
 * the rule once, not a clause per width. 1 with the clause appended to d->covary at *used. */
static int covary_ratio(const plot_set_t *set, const int *m, int n, items_t *const *its,
                        char (*scheme)[32], plot_diff_t *d, const int *group, int lead,
                        size_t *used)
{
    int j = -1;
    for (int k = 0; k < d->n; k++) {
        if (group[k] != lead || k == lead) continue;
        if (j >= 0 || !strcmp(d->item[k], "data")) return 0;
        j = k;
    }
    if (j < 0 || n < 2) return 0;
    double ratio = NAN;
    for (int i = 0; i < n; i++) {
        const char *sa = item_value(set, m, its, scheme, i, d->item[lead]);
        const char *sb = item_value(set, m, its, scheme, i, d->item[j]);
        char *e1, *e2;
        const double a = strtod(sa, &e1), b = strtod(sb, &e2);
        if (!*sa || !*sb || *e1 || *e2 || !(a > 0) || !isfinite(b)) return 0;   // "": not written
        if (i == 0) ratio = b / a;
        else if (fabs(b / a - ratio) > 1e-12 * fabs(ratio)) return 0;
    }
    char lw[256], w[256];   // "d = 64", "d_ff = 128": the names before " = "
    plot_item_plain(&set->runs[m[0]], d->item[lead], 0, lw, sizeof lw);
    plot_item_plain(&set->runs[m[0]], d->item[j], 0, w, sizeof w);
    char *el = strstr(lw, " = "), *ew = strstr(w, " = ");
    if (!el || !ew) return 0;
    *el = *ew = '\0';
    char r[32] = "";
    if (ratio != 1.0) snprintf(r, sizeof r, ratio == floor(ratio) && ratio < 1e6 ? "%.0f" : "%g·", ratio);
    if (*used < sizeof d->covary)
        *used += (size_t)snprintf(d->covary + *used, sizeof d->covary - *used, "%s%s = %s%s",
                                  *used ? "; " : "", w, r, lw);
    return 1;
}

/* Group d's items that split the runs alike; a group led by a data key (any size), or of three
 * or more items, is named by its leader alone in keys and titles, the others go to d->follower
 * and, per value of the leader, to d->covary for the subtitle. Two items alone stay apart
 * (two runs differing in lr and warm-up read "lr 0.01, no warm-up"). */
static void covary(const plot_set_t *set, const int *m, int n, items_t *const *its,
                   char (*scheme)[32], plot_diff_t *d)
{
    int *cls = malloc((size_t)(d->n > 0 ? d->n : 1) * (size_t)(n > 0 ? n : 1) * sizeof *cls);
    const char **val = malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof *val);
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
        int size = 1, implies = 0;
        for (int j = 0; j < d->n; j++) {
            if (j == k || group[j] >= 0) continue;
            const int alike = r < CLASS_LEADERS && can_follow(d->item[j]) &&
                              !memcmp(cls + k * n, cls + j * n, (size_t)n * sizeof *cls);
            const char **iv = val + n;
            for (int i = 0; i < n; i++) {
                val[i] = item_value(set, m, its, scheme, i, d->item[k]);
                iv[i] = item_value(set, m, its, scheme, i, d->item[j]);
            }
            const int imp = implied(set, m, n, d->item[j], d->item[k], val, iv);
            if (alike || imp) {
                group[j] = k;
                size++;
                implies |= imp;
            }
        }
        if (size < 2 || (size < 3 && !implies && strncmp(d->item[lead], "data.", 5))) {
            for (int j = 0; j < d->n; j++)
                if (group[j] == k) group[j] = -1;   // a width with one follower: both stay keys
            continue;
        }
        group[k] = k;
        const int ruled = covary_ratio(set, m, n, its, scheme, d, group, lead, &used);
        for (int i = 0; i < n && !ruled; i++) {   // else one clause per value of the leader
            if (cls[lead * n + i] != i) continue;
            char lw[256], w[256];
            plot_item_plain(&set->runs[m[i]], d->item[lead], 0, lw, sizeof lw);
            const size_t start = used;
            if (used < sizeof d->covary)
                used += (size_t)snprintf(d->covary + used, sizeof d->covary - used, "%s%s:",
                                         used ? "; " : "", lw);
            int first = 1;
            for (int j = 0; j < d->n; j++) {
                if (group[j] != k || j == lead || !strcmp(d->item[j], "data")) continue;
                if (!item_value(set, m, its, scheme, i, d->item[j])[0])
                    continue;   // a key at its default the run's config does not write
                plot_item_plain(&set->runs[m[i]], d->item[j], 0, w, sizeof w);
                if (!w[0] || strstr(lw, w)) continue;   // data.zipf says what data.task says
                if (used < sizeof d->covary)
                    used += (size_t)snprintf(d->covary + used, sizeof d->covary - used, "%s %s",
                                             first ? "" : ",", w);
                first = 0;
            }
            if (first && implies && start < sizeof d->covary) {   // "standard parametrization:"
                used = start;                                     // says nothing: left out
                d->covary[start] = '\0';
            }
        }
        for (int j = 0; j < d->n; j++)
            if (group[j] == k && j != lead && d->nf < PLOT_DIFF_MAX)
                memcpy(d->follower[d->nf++], d->item[j], sizeof d->follower[0]);   // same size
    }
    free(cls);
    free(val);
}

int plot_diff_follows(const plot_diff_t *d, const char *item)
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
            const int covered = scheme_differs && plot_listed(COVERED, key);
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
    if (ok && plot_diff_has(d, "init.parametrization") && mup_one_width(set, m, n))
        plot_diff_drop(d, "init.base_width");   // "mup" says it: standard reads none (§4)
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

/* ------------------------------------------------------------------------- order */

/* Run i's sort key of item k of d: its value for an ordered item (NaN: after the numbers), else
 * the rank of its words' first appearance in the set; 0 for an item that follows another. */
static void order_keys(const plot_set_t *set, const plot_diff_t *d, double *key)
{
    char (*seen)[160] = malloc((size_t)set->n * sizeof *seen);
    for (int k = 0; seen && k < d->n; k++) {
        const int ordered = plot_item_ordered(d->item[k]);
        const int follows = plot_diff_follows(d, d->item[k]);   // its leader orders it
        int nseen = 0;
        for (int i = 0; i < set->n; i++) {
            double *x = &key[(size_t)i * d->n + k];
            if (follows) { *x = 0.0; continue; }
            if (ordered && !isnan(*x = plot_item_value(&set->runs[i], d->item[k]))) continue;
            char w[160];
            plot_item_text(&set->runs[i], d->item[k], 0, w, sizeof w);
            int j = 0;
            while (j < nseen && strcmp(seen[j], w)) j++;
            if (j == nseen) snprintf(seen[nseen++], sizeof seen[0], "%s", w);
            *x = (ordered ? 1e300 : 0.0) + j;   // an ordered item's words after its numbers
        }
    }
    free(seen);
}

/* A run's place: its sort keys (nk of them) and its index in the set (ties keep it). */
typedef struct {
    const double *key;
    int nk, index;
} place_t;

static int place_cmp(const void *pa, const void *pb)
{
    const place_t *a = pa, *b = pb;
    for (int k = 0; k < a->nk; k++)
        if (a->key[k] != b->key[k]) return a->key[k] < b->key[k] ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

void plot_order(plot_set_t *set)
{
    if (set->n < 2) return;
    int *all = malloc((size_t)set->n * sizeof *all);
    plot_diff_t *d = malloc(sizeof *d);
    place_t *pl = malloc((size_t)set->n * sizeof *pl);
    plot_run_t *runs = malloc((size_t)set->n * sizeof *runs);
    double *key = d && all && pl && runs
                      ? malloc((size_t)set->n * PLOT_DIFF_MAX * sizeof *key) : NULL;
    if (key) {
        for (int i = 0; i < set->n; i++) all[i] = i;
        plot_diff(set, all, set->n, PLOT_DIFF_SEED, d);
        if (plot_diff_has(d, "init.seed")) {   // the seed last: a configuration's seeds together
            plot_diff_drop(d, "init.seed");
            snprintf(d->item[d->n++], sizeof d->item[0], "init.seed");
        }
        order_keys(set, d, key);
        for (int i = 0; i < set->n; i++)
            pl[i] = (place_t){key + (size_t)i * d->n, d->n, i};
        qsort(pl, (size_t)set->n, sizeof *pl, place_cmp);   // stable: the index breaks ties
        for (int i = 0; i < set->n; i++) runs[i] = set->runs[pl[i].index];
        memcpy(set->runs, runs, (size_t)set->n * sizeof *runs);
    }
    free(key);
    free(runs);
    free(pl);
    free(d);
    free(all);
}
