/* optimizers.c — the optimizers study's statistics (study/optimizers.h, docs/design.md §6h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "measure/fit.h"
#include "report/plot_internal.h"
#include "study/atlas.h"
#include "study/optimizers.h"

/* The place of optimizer o, scheme s, depth d, arm a in st->line: (no, ns, nd, na). */
static size_t line_slot(const optimizers_t *st, int o, int s, int d, int a)
{
    return (((size_t)o * st->ns + s) * st->nd + d) * st->na + a;
}

int optimizers_at(const optimizers_t *st, int o, int s, int d, int a, int l, int k)
{
    return st->idx[(line_slot(st, o, s, d, a) * st->nl + l) * st->nk + k];
}

const optimizers_line_t *optimizers_line(const optimizers_t *st, int o, int s, int d, int a)
{
    return &st->line[line_slot(st, o, s, d, a)];
}

int optimizers_has_lr(const optimizers_t *st, int o, int s, int d, int l)
{
    for (int a = 0; a < st->na; a++)
        for (int k = 0; k < st->nk; k++)
            if (optimizers_at(st, o, s, d, a, l, k) >= 0) return 1;
    return 0;
}

static const char *const OPTS[][2] = {{"adam", "Adam"}, {"muon", "Muon"}, {"lion", "Lion"},
                                      {"nsgd", "NSGD"}};
enum { NOPTS = 4 };

const char *optimizers_label(const char *opt)
{
    for (int k = 0; k < NOPTS; k++)
        if (!strcmp(opt, OPTS[k][0])) return OPTS[k][1];
    return opt;
}

/* The arm of row r: none, linear W or the suboptimality schedule (its own warm-up), each with the
 * row's other remedies (runs_remedy: "suboptimality F/D" names the schedule's arm, the rest
 * joined by '+' make it an extra arm). */
static void arm_of(const runs_row_t *r, optimizers_arm_t *a)
{
    memset(a, 0, sizeof *a);
    a->warmup = r->warmup > 1 ? r->warmup : 1;
    a->subopt = !strcmp(r->schedule, "suboptimality");
    char fit[32] = "", rest[48] = "", rem[96], *save = NULL;
    snprintf(rem, sizeof rem, "%s", r->remedy);
    for (char *part = strtok_r(rem, "+", &save); part; part = strtok_r(NULL, "+", &save)) {
        if (!strncmp(part, "suboptimality ", 14)) snprintf(fit, sizeof fit, "%s", part + 14);
        else if (strcmp(part, "none"))
            snprintf(rest + strlen(rest), sizeof rest - strlen(rest), "%s%s", *rest ? " + " : "", part);
    }
    a->extra = *rest != 0;
    char base[48];
    if (a->subopt) snprintf(base, sizeof base, "suboptimality%s%s", *fit ? " " : "", fit);
    else if (a->warmup > 1) snprintf(base, sizeof base, "linear %d", a->warmup);
    else snprintf(base, sizeof base, "none");
    if (a->subopt && a->warmup > 1)
        snprintf(base + strlen(base), sizeof base - strlen(base), " + warm-up %d", a->warmup);
    snprintf(a->label, sizeof a->label, "%s%s%s", base, a->extra ? " + " : "", rest);
    if (a->extra && !strncmp(rest, "qk_clip ", 8)) snprintf(a->tick, sizeof a->tick, "clip %s", rest + 8);
    else if (a->extra) snprintf(a->tick, sizeof a->tick, "%s", rest);
    else if (a->subopt) snprintf(a->tick, sizeof a->tick, "sub%s%s", *fit ? " " : "", fit);
    else if (a->warmup > 1) snprintf(a->tick, sizeof a->tick, "lin. %d", a->warmup);
    else snprintf(a->tick, sizeof a->tick, "%s", base);
}

static int by_arm(const void *x, const void *y)
{
    const optimizers_arm_t *a = x, *b = y;
    if (a->subopt != b->subopt) return a->subopt - b->subopt;
    if (a->extra != b->extra) return a->extra - b->extra;
    if (a->warmup != b->warmup) return a->warmup - b->warmup;
    return strcmp(a->label, b->label);
}

int optimizers_in_set(const plot_set_t *set)
{
    for (int i = 0; i < set->n; i++) {
        const optimizer_t o = set->runs[i].cfg.train.optimizer;
        if (set->runs[i].nsteps > 0 && (o == OPT_MUON || o == OPT_LION || o == OPT_NSGD)) return 1;
    }
    return 0;
}

/* Adam first (the reference), then Muon, Lion, NSGD, then any other by name. */
static int opt_rank(const char *o)
{
    for (int k = 0; k < NOPTS; k++)
        if (!strcmp(o, OPTS[k][0])) return k;
    return NOPTS;
}

static int by_opt(const void *x, const void *y)
{
    const char *a = x, *b = y;
    const int ra = opt_rank(a), rb = opt_rank(b);
    return ra != rb ? ra - rb : strcmp(a, b);
}

static int by_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static int by_ulong(const void *a, const void *b)
{
    const unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return (x > y) - (x < y);
}

/* Where v (size bytes) is in vals[n] (memcmp equal), or −1; add: append it when absent. */
static int find(void *vals, int *n, const void *v, size_t size, int add)
{
    for (int i = 0; i < *n; i++)
        if (!memcmp((char *)vals + (size_t)i * size, v, size)) return i;
    if (!add) return -1;
    memcpy((char *)vals + (size_t)*n * size, v, size);
    return (*n)++;
}

/* The largest finite max |attention logit| of any update of run r (/train/max_attn_logit), or
 * NaN without the column. */
static double peak_logit(const plot_run_t *r)
{
    double p = NAN;
    for (size_t t = 0; r->dyn && r->dyn->max_logit && t < r->dyn->nsteps; t++)
        if (isfinite(r->dyn->max_logit[t]) && !(r->dyn->max_logit[t] <= p)) p = r->dyn->max_logit[t];
    return p;
}

/* The training rows of set (runs_outcome at ATLAS_TRAINS, the one rule) and their axes, sorted. */
static int read_axes(const plot_set_t *set, optimizers_t *st, char *why, size_t len)
{
    if (runs_build(&st->t, set)) { snprintf(why, len, "out of memory"); return 1; }
    const size_t n = (size_t)(st->t.n ? st->t.n : 1);
    st->opt = calloc(n, sizeof *st->opt);
    st->scheme = calloc(n, sizeof *st->scheme);
    st->depth = calloc(n, sizeof *st->depth);
    st->arm = calloc(n, sizeof *st->arm);
    st->lr = calloc(n, sizeof *st->lr);
    st->seed = calloc(n, sizeof *st->seed);
    st->logit = calloc(n, sizeof *st->logit);
    if (!st->opt || !st->scheme || !st->depth || !st->arm || !st->lr || !st->seed || !st->logit) {
        snprintf(why, len, "out of memory");
        return 1;
    }
    int kept = 0;
    for (int i = 0; i < st->t.n; i++) {   // training runs only: a probe has no outcome
        runs_row_t *r = &st->t.rows[i];
        if (r->steps <= 0 || r->run->nsteps == 0) continue;
        st->t.rows[kept] = *r;
        r = &st->t.rows[kept++];
        runs_outcome(r, ATLAS_TRAINS);
        char o[24] = {0}, sc[32] = {0};
        snprintf(o, sizeof o, "%s", r->optimizer);
        snprintf(sc, sizeof sc, "%s", r->scheme);
        optimizers_arm_t a;
        arm_of(r, &a);
        find(st->opt, &st->no, o, sizeof o, 1);
        find(st->scheme, &st->ns, sc, sizeof sc, 1);
        find(st->depth, &st->nd, &r->L, sizeof r->L, 1);
        find(st->arm, &st->na, &a, sizeof a, 1);
        find(st->lr, &st->nl, &r->lr, sizeof r->lr, 1);
        find(st->seed, &st->nk, &r->seed, sizeof r->seed, 1);
        if (r->steps > st->steps) st->steps = r->steps;
        if (r->d_model > st->d_model) st->d_model = r->d_model;
    }
    st->t.n = kept;
    if (!kept) { snprintf(why, len, "no training runs"); return 1; }
    qsort(st->opt, (size_t)st->no, sizeof *st->opt, by_opt);
    plot_sort_schemes(st->scheme, NULL, st->ns);
    qsort(st->depth, (size_t)st->nd, sizeof *st->depth, by_int);
    qsort(st->arm, (size_t)st->na, sizeof *st->arm, by_arm);
    qsort(st->lr, (size_t)st->nl, sizeof *st->lr, plot_cmp_double);
    qsort(st->seed, (size_t)st->nk, sizeof *st->seed, by_ulong);
    st->none = st->linear = -1;
    for (int a = st->na - 1; a >= 0; a--) {
        const optimizers_arm_t *m = &st->arm[a];
        if (!m->subopt && !m->extra && m->warmup == 1) st->none = a;
        if (!m->subopt && !m->extra && m->warmup > 1) st->linear = a;   // the shortest
    }
    return 0;
}

/* Each row's place in st->idx; 1 with why when a place is taken twice. */
static int place_rows(optimizers_t *st, char *why, size_t len)
{
    const size_t n = (size_t)st->no * st->ns * st->nd * st->na * st->nl * st->nk;
    st->idx = malloc(n * sizeof *st->idx);
    if (!st->idx) { snprintf(why, len, "out of memory"); return 1; }
    for (size_t i = 0; i < n; i++) st->idx[i] = -1;
    for (int i = 0; i < st->t.n; i++) {
        const runs_row_t *r = &st->t.rows[i];
        char o[24] = {0}, sc[32] = {0};
        snprintf(o, sizeof o, "%s", r->optimizer);
        snprintf(sc, sizeof sc, "%s", r->scheme);
        optimizers_arm_t am;
        arm_of(r, &am);
        const int oi = find(st->opt, &st->no, o, sizeof o, 0), s = find(st->scheme, &st->ns, sc, sizeof sc, 0);
        const int d = find(st->depth, &st->nd, &r->L, sizeof r->L, 0), a = find(st->arm, &st->na, &am, sizeof am, 0);
        const int l = find(st->lr, &st->nl, &r->lr, sizeof r->lr, 0), k = find(st->seed, &st->nk, &r->seed, sizeof r->seed, 0);
        int *at = &st->idx[(line_slot(st, oi, s, d, a) * st->nl + l) * st->nk + k];
        if (*at >= 0) {
            snprintf(why, len, "%s and %s are one cell (%s, %s, L %d, lr %g, warm-up %s) at one seed "
                     "(%lu): another key tells them apart, which this study does not compare",
                     st->t.rows[*at].run->origin, r->run->origin, r->optimizer, r->scheme, r->L, r->lr,
                     am.label, r->seed);
            return 1;
        }
        *at = i;
        st->logit[i] = peak_logit(r->run);
    }
    return 0;
}

/* The line of optimizer o, scheme s, depth d, arm a: trains, η_max and best by the atlas's rule
 * (atlas_row_stats, the arm's runs as its one half), each seed's η_max (atlas_half_one), the
 * seeds' half-width at the best lr (fit_mean_ci). buf holds t.n rows. 0, 1 with why. */
static int line_stats(optimizers_t *st, int o, int s, int d, int a, const runs_row_t **buf, char *why,
                      size_t len)
{
    optimizers_line_t *ln = &st->line[line_slot(st, o, s, d, a)];
    double *tops = &st->top_seed[line_slot(st, o, s, d, a) * st->nk];
    ln->best = ln->best_lr = ln->best_half = NAN;
    for (int k = 0; k < st->nk; k++) tops[k] = NAN;
    int n = 0;
    for (int l = 0; l < st->nl; l++)
        for (int k = 0; k < st->nk; k++) {
            const int r = optimizers_at(st, o, s, d, a, l, k);
            if (r < 0) continue;
            buf[n++] = &st->t.rows[r];
            ln->trains += st->t.rows[r].trains;
        }
    ln->runs = n;
    if (!n) return 0;
    atlas_row_t row;
    memset(&row, 0, sizeof row);
    if (atlas_row_stats(buf, n, NULL, 0, &row, why, len)) return 1;
    ln->top = row.warm.top;
    ln->best = row.warm.best;
    ln->best_lr = row.warm.best_lr;
    if (atlas_seed_tops(buf, n, st->seed, st->nk, ln->best_lr, tops, &ln->best_half)) {
        snprintf(why, len, "out of memory");
        return 1;
    }
    return 0;
}

/* The warm-up question of each optimizer × scheme × depth: the (lr, seed)s run without warm-up
 * and with the first linear one, those where only warm-up trains and those where only its
 * absence does. */
static void warmup_question(optimizers_t *st)
{
    for (int o = 0; o < st->no; o++)
        for (int s = 0; s < st->ns; s++)
            for (int d = 0; d < st->nd; d++) {
                optimizers_cell_t *c = &st->cell[((size_t)o * st->ns + s) * st->nd + d];
                for (int l = 0; l < st->nl; l++)
                    for (int k = 0; k < st->nk; k++) {
                        const int x = optimizers_at(st, o, s, d, st->none, l, k);
                        const int w = optimizers_at(st, o, s, d, st->linear, l, k);
                        if (x < 0 || w < 0) continue;
                        const int cold = st->t.rows[x].trains, warm = st->t.rows[w].trains;
                        c->pairs++;
                        c->needs += !cold && warm;
                        c->hurts += cold && !warm;
                    }
            }
}

int optimizers_build(const plot_set_t *set, optimizers_t *st, char *why, size_t len)
{
    memset(st, 0, sizeof *st);
    if (read_axes(set, st, why, len) || place_rows(st, why, len)) return 1;
    if (st->none < 0 || st->linear < 0) {
        snprintf(why, len, "the optimizers study compares each optimizer without warm-up (warmup 1, "
                 "a schedule other than suboptimality) and with a linear warm-up (warmup > 1): this "
                 "set has %s", st->none < 0 && st->linear < 0 ? "neither"
                 : st->none < 0 ? "no run without warm-up" : "no run with a linear warm-up");
        return 1;
    }
    const size_t nline = (size_t)st->no * st->ns * st->nd * st->na;
    st->line = calloc(nline, sizeof *st->line);
    st->top_seed = calloc(nline * st->nk, sizeof *st->top_seed);
    st->cell = calloc((size_t)st->no * st->ns * st->nd, sizeof *st->cell);
    const runs_row_t **buf = malloc((size_t)(st->t.n ? st->t.n : 1) * sizeof *buf);
    if (!st->line || !st->top_seed || !st->cell || !buf) {
        free(buf);
        snprintf(why, len, "out of memory");
        return 1;
    }
    warmup_question(st);
    int rc = 0;
    for (int o = 0; !rc && o < st->no; o++)
        for (int s = 0; !rc && s < st->ns; s++)
            for (int d = 0; !rc && d < st->nd; d++)
                for (int a = 0; !rc && a < st->na; a++) rc = line_stats(st, o, s, d, a, buf, why, len);
    free(buf);
    return rc;
}

void optimizers_free(optimizers_t *st)
{
    runs_free(&st->t);
    free(st->opt); free(st->scheme); free(st->depth); free(st->arm); free(st->lr); free(st->seed);
    free(st->logit); free(st->idx); free(st->line); free(st->top_seed); free(st->cell);
    memset(st, 0, sizeof *st);
}
