/* remedies.c — the remedies study's statistics (study/remedies.h, docs/design.md §6k). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "measure/fit.h"
#include "report/plot_internal.h"
#include "study/atlas.h"
#include "study/remedies.h"
#include "study/warmup_explained.h"

/* The place of method m, scheme s, depth d, lr l, seed k in st->idx: (nm, ns, nd, nl, nk). */
static size_t slot(const remedies_t *st, int m, int s, int d, int l, int k)
{
    return ((((size_t)m * st->ns + s) * st->nd + d) * st->nl + l) * st->nk + k;
}

int remedies_at(const remedies_t *st, int m, int s, int d, int l, int k)
{
    return st->idx[slot(st, m, s, d, l, k)];
}

/* The method of row r: its label, key and rank (remedies_method_t). */
static void method_of(const runs_row_t *r, remedies_method_t *m)
{
    static const char *const OPT[][2] = {{"lamb", "LAMB"}, {"gi_adam", "GI-Adam"},
                                         {"radam", "RAdam"}, {"stableadamw", "StableAdamW"}};
    static const int OPT_RANK[] = {7, 9, 10, 11};
    const int w = r->warmup > 1 ? r->warmup : 1, adam = !strcmp(r->optimizer, "adam");
    char name[48] = "", opt[48];
    double v = NAN;
    sscanf(r->remedy, "%47s %lf", name, &v);
    snprintf(m->key, sizeof m->key, "%s|%s|%d", r->optimizer, r->remedy, w);
    snprintf(opt, sizeof opt, "%s", r->optimizer);
    m->rank = 12;
    m->warmup = w;
    for (int k = 0; k < 4; k++)
        if (!strcmp(r->optimizer, OPT[k][0])) {
            snprintf(opt, sizeof opt, "%s", OPT[k][1]);
            m->rank = OPT_RANK[k];
        }
    if (!strcmp(r->remedy, "none")) {
        if (adam) m->rank = w > 1;
        if (adam && w > 1) snprintf(m->label, sizeof m->label, "Adam, linear warm-up %d", w);
        else if (adam) snprintf(m->label, sizeof m->label, "Adam, no warm-up");
        else if (w > 1) snprintf(m->label, sizeof m->label, "%s, warm-up %d", opt, w);
        else snprintf(m->label, sizeof m->label, "%s", opt);
        return;
    }
    static const char *const REM[][2] = {
        {"curvature_cap", "curvature cap c = %g"}, {"cdat", "CDAT σ = %g"},
        {"catapult", "catapult η_init + warm-up %.0f"}, {"ratio_cap", "relative-update cap r = %g"},
        {"spectral_bound", "AdamW² spectral bound τ = %g"}, {"autowu", "AutoWU"}};
    static const int REM_RANK[] = {2, 3, 4, 5, 6, 8};
    snprintf(m->label, sizeof m->label, "%s", r->remedy);   // several remedies: as the row says
    m->rank = 12;
    for (int k = 0; k < 6 && !strchr(r->remedy, '+'); k++)
        if (!strcmp(name, REM[k][0])) {
            snprintf(m->label, sizeof m->label, REM[k][1], k == 2 ? (double)w : v);
            m->rank = REM_RANK[k];
        }
    size_t at = strlen(m->label);
    if (!adam) snprintf(m->label + at, sizeof m->label - at, " (%s)", opt);
    at = strlen(m->label);
    if (w > 1 && strcmp(name, "catapult") && strcmp(name, "autowu"))
        snprintf(m->label + at, sizeof m->label - at, ", warm-up %d", w);
}

static int by_method(const void *a, const void *b)
{
    const remedies_method_t *x = a, *y = b;
    if (x->rank != y->rank) return x->rank - y->rank;
    if (x->warmup != y->warmup) return x->warmup - y->warmup;
    return strcmp(x->key, y->key);
}

static int by_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static int by_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static int by_ulong(const void *a, const void *b)
{
    const unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return (x > y) - (x < y);
}

/* Append v (size bytes) to vals[*n] when no equal one is there. */
static void add_unique(void *vals, int *n, const void *v, size_t size)
{
    for (int i = 0; i < *n; i++)
        if (!memcmp((char *)vals + (size_t)i * size, v, size)) return;
    memcpy((char *)vals + (size_t)(*n)++ * size, v, size);
}

/* Where value v is in the sorted vals[n] (memcmp equal), or −1. */
static int where(const void *vals, int n, const void *v, size_t size)
{
    for (int i = 0; i < n; i++)
        if (!memcmp((const char *)vals + (size_t)i * size, v, size)) return i;
    return -1;
}

/* The training rows of set (runs_outcome at WARMUP_TRAINS) and their axes and methods, sorted. */
static int read_axes(const plot_set_t *set, remedies_t *st, char *why, size_t len)
{
    if (runs_build(&st->t, set)) { snprintf(why, len, "out of memory"); return 1; }
    const size_t n = (size_t)(st->t.n ? st->t.n : 1);
    st->m = calloc(n, sizeof *st->m);
    st->scheme = calloc(n, sizeof *st->scheme);
    st->depth = calloc(n, sizeof *st->depth);
    st->lr = calloc(n, sizeof *st->lr);
    st->seed = calloc(n, sizeof *st->seed);
    if (!st->m || !st->scheme || !st->depth || !st->lr || !st->seed) {
        snprintf(why, len, "out of memory");
        return 1;
    }
    int kept = 0;
    for (int i = 0; i < st->t.n; i++) {   // training runs only: a probe has no outcome
        runs_row_t *r = &st->t.rows[i];
        if (r->steps <= 0 || r->run->nsteps == 0) continue;
        st->t.rows[kept] = *r;
        r = &st->t.rows[kept++];
        runs_outcome(r, WARMUP_TRAINS);   // the one rule, the published threshold
        remedies_method_t m;
        method_of(r, &m);
        int j = 0;
        while (j < st->nm && strcmp(st->m[j].key, m.key)) j++;
        if (j == st->nm) st->m[st->nm++] = m;
        char sc[32] = {0};
        snprintf(sc, sizeof sc, "%s", r->scheme);
        add_unique(st->scheme, &st->ns, sc, sizeof sc);
        add_unique(st->depth, &st->nd, &r->L, sizeof r->L);
        add_unique(st->lr, &st->nl, &r->lr, sizeof r->lr);
        add_unique(st->seed, &st->nk, &r->seed, sizeof r->seed);
        if (r->steps > st->steps) st->steps = r->steps;
        if (r->d_model > st->d_model) st->d_model = r->d_model;
    }
    st->t.n = kept;
    if (!kept) { snprintf(why, len, "no training runs"); return 1; }
    qsort(st->m, (size_t)st->nm, sizeof *st->m, by_method);
    plot_sort_schemes(st->scheme, NULL, st->ns);
    qsort(st->depth, (size_t)st->nd, sizeof *st->depth, by_int);
    qsort(st->lr, (size_t)st->nl, sizeof *st->lr, by_double);
    qsort(st->seed, (size_t)st->nk, sizeof *st->seed, by_ulong);
    return 0;
}

/* Each row's place in st->idx; 1 with why when a place is taken twice. */
static int place_rows(remedies_t *st, char *why, size_t len)
{
    const size_t n = (size_t)st->nm * st->ns * st->nd * st->nl * st->nk;
    st->idx = malloc(n * sizeof *st->idx);
    if (!st->idx) { snprintf(why, len, "out of memory"); return 1; }
    for (size_t i = 0; i < n; i++) st->idx[i] = -1;
    for (int i = 0; i < st->t.n; i++) {
        const runs_row_t *r = &st->t.rows[i];
        remedies_method_t m;
        method_of(r, &m);
        char sc[32] = {0};
        snprintf(sc, sizeof sc, "%s", r->scheme);
        int mi = 0;
        while (strcmp(st->m[mi].key, m.key)) mi++;
        const int s = where(st->scheme, st->ns, sc, sizeof sc);
        const int d = where(st->depth, st->nd, &r->L, sizeof r->L);
        const int l = where(st->lr, st->nl, &r->lr, sizeof r->lr);
        const int k = where(st->seed, st->nk, &r->seed, sizeof r->seed);
        int *at = &st->idx[slot(st, mi, s, d, l, k)];
        if (*at >= 0) {
            snprintf(why, len, "%s and %s are one cell (%s, L %d, lr %g) of one method (%s) at one "
                     "seed (%lu): another key tells them apart, which this study does not compare",
                     st->t.rows[*at].run->origin, r->run->origin, r->scheme, r->L, r->lr, m.label,
                     r->seed);
            return 1;
        }
        *at = i;
    }
    return 0;
}

/* The causal test: which (cell, seed)s need warm-up, and what each method does there and where
 * Adam without warm-up trains. */
static void causal_test(remedies_t *st)
{
    for (int s = 0; s < st->ns; s++)
        for (int d = 0; d < st->nd; d++)
            for (int l = 0; l < st->nl; l++)
                for (int k = 0; k < st->nk; k++) {
                    const int c = remedies_at(st, st->nowu, s, d, l, k);
                    const int w = remedies_at(st, st->linwu, s, d, l, k);
                    if (c < 0) continue;
                    const int cold = st->t.rows[c].trains, needs = !cold && w >= 0 && st->t.rows[w].trains;
                    st->needs += needs;
                    st->cold_ok += cold;
                    for (int m = 0; m < st->nm; m++) {
                        const int r = remedies_at(st, m, s, d, l, k);
                        if (r < 0) continue;
                        if (needs) { st->asked[m]++; st->fixed[m] += st->t.rows[r].trains; }
                        if (cold) { st->kept[m]++; st->broke[m] += !st->t.rows[r].trains; }
                    }
                }
}

/* The line of method m at scheme s, depth d: η_max, best and the seeds by the atlas's rule
 * (atlas_row_stats, the method's runs as its one half), the cost. 0, 1 with why. */
static int line_stats(remedies_t *st, int m, int s, int d, const runs_row_t **buf, char *why, size_t len)
{
    remedies_line_t *ln = &st->line[((size_t)m * st->ns + s) * st->nd + d];
    memset(ln, 0, sizeof *ln);
    ln->best = ln->best_lr = ln->best_half = ln->sec = NAN;
    int n = 0, nsec = 0;
    double sec = 0.0;
    for (int l = 0; l < st->nl; l++)
        for (int k = 0, at_l = 0; k < st->nk; k++) {
            const int r = remedies_at(st, m, s, d, l, k);
            if (r < 0) continue;
            ln->lrs += !at_l++;
            buf[n++] = &st->t.rows[r];
            if (isfinite(st->t.rows[r].sec_per_update)) { sec += st->t.rows[r].sec_per_update; nsec++; }
        }
    ln->runs = n;
    if (!n) return 0;
    if (nsec) ln->sec = sec / nsec;
    atlas_row_t row;
    memset(&row, 0, sizeof row);
    if (atlas_row_stats(buf, n, NULL, 0, &row, why, len)) return 1;
    ln->seeds = row.seeds;
    ln->top = row.warm.top;
    ln->best = row.warm.best;
    ln->best_lr = row.warm.best_lr;
    double *tops = malloc((size_t)st->nk * sizeof *tops);
    if (!tops || atlas_seed_tops(buf, n, st->seed, st->nk, ln->best_lr, tops, &ln->best_half)) {
        free(tops);
        snprintf(why, len, "out of memory");
        return 1;
    }
    for (int k = 0; k < st->nk; k++) ln->agree += tops[k] == ln->top;   // NaN: the seed ran none
    free(tops);
    return 0;
}

int remedies_build(const plot_set_t *set, remedies_t *st, char *why, size_t len)
{
    memset(st, 0, sizeof *st);
    if (read_axes(set, st, why, len) || place_rows(st, why, len)) return 1;
    st->nowu = st->linwu = -1;
    for (int m = st->nm - 1; m >= 0; m--) {
        if (st->m[m].rank == 0) st->nowu = m;
        if (st->m[m].rank == 1) st->linwu = m;   // the shortest linear warm-up
    }
    if (st->nowu < 0 || st->linwu < 0) {
        snprintf(why, len, "the remedies study compares every method with its baselines, Adam "
                 "without warm-up (optimizer adam, no remedy, warmup 1) and Adam with a linear "
                 "warm-up (warmup > 1): this set has %s", st->nowu < 0 && st->linwu < 0 ? "neither"
                 : st->nowu < 0 ? "no Adam run without warm-up" : "no Adam run with a linear warm-up");
        return 1;
    }
    st->fixed = calloc((size_t)st->nm * 4, sizeof *st->fixed);
    st->line = calloc((size_t)st->nm * st->ns * st->nd, sizeof *st->line);
    const runs_row_t **buf = malloc((size_t)(st->t.n ? st->t.n : 1) * sizeof *buf);
    if (!st->fixed || !st->line || !buf) { free(buf); snprintf(why, len, "out of memory"); return 1; }
    st->asked = st->fixed + st->nm;
    st->broke = st->asked + st->nm;
    st->kept = st->broke + st->nm;
    causal_test(st);
    int rc = 0;
    for (int m = 0; !rc && m < st->nm; m++)
        for (int s = 0; !rc && s < st->ns; s++)
            for (int d = 0; !rc && d < st->nd; d++) rc = line_stats(st, m, s, d, buf, why, len);
    free(buf);
    return rc;
}

void remedies_free(remedies_t *st)
{
    runs_free(&st->t);
    free(st->m); free(st->scheme); free(st->depth); free(st->lr); free(st->seed);
    free(st->idx); free(st->fixed); free(st->line);
    memset(st, 0, sizeof *st);
}
