/* precision.c — the precision study's statistics (study/precision.h, issue 49). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "measure/fit.h"
#include "report/plot_internal.h"
#include "study/precision.h"

int precision_at(const prec_study_t *st, int a, int l, int k)
{
    return st->idx[((size_t)a * st->nl + l) * st->nk + k];
}

/* The arm of a run's config: the precision, bfloat16_pure's store, Qiu & Yao's fix and any
 * rounding place off its default (so two recipes are never one arm). */
static void arm_of(const config_t *c, precision_arm_t *a)
{
    const int pure = c->train.precision == PRECISION_BFLOAT16_PURE, lowp = config_lowp(c);
    const char *p = config_precision_name(c->train.precision);
    char places[40] = "";
    if (lowp && (!c->train.round_gemm || !c->train.round_attn_probs || c->train.round_residual ||
                 c->train.round_norm_stats))
        snprintf(places, sizeof places, " (rounds %s%s%s%s)", c->train.round_gemm ? "g" : "",
                 c->train.round_attn_probs ? "p" : "", c->train.round_residual ? "r" : "",
                 c->train.round_norm_stats ? "n" : "");
    const char *store = !pure ? "" : c->train.kahan ? ", Kahan" :
                        c->train.rounding == ROUNDING_STOCHASTIC ? ", stochastic" : ", nearest";
    const char *fix = lowp && c->train.attn_round_fix ? " + Qiu-Yao fix" : "";
    snprintf(a->label, sizeof a->label, "%s%s%s%s", p, store, fix, places);
    snprintf(a->key, sizeof a->key, "%s", a->label);
    static const char *const ORDER[] = {"float32", "bfloat16", "bfloat16 + Qiu-Yao fix", "fp8",
                                        "bfloat16_pure, nearest", "bfloat16_pure, stochastic",
                                        "bfloat16_pure, Kahan"};
    a->rank = 7 + (c->train.precision == PRECISION_FLOAT64 ? -8 : 0);
    for (int k = 0; k < 7; k++)
        if (!strcmp(a->label, ORDER[k])) a->rank = k;
}

static int by_arm(const void *x, const void *y)
{
    const precision_arm_t *a = x, *b = y;
    return a->rank != b->rank ? a->rank - b->rank : strcmp(a->key, b->key);
}
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

int precision_spikes(const double *step, const double *loss, size_t n)
{
    double lo = INFINITY;
    int spikes = 0, above = 0;
    for (size_t i = 0; i < n && isfinite(loss[i]); i++) {
        if (step[i] > PRECISION_SPIKE_AFTER && isfinite(lo)) {
            const int up = loss[i] > lo + PRECISION_SPIKE_NATS;
            spikes += up && !above;
            above = up;
        }
        lo = fmin(lo, loss[i]);
    }
    return spikes;
}

/* Whether row r is of another setting than row f (what the study holds fixed); its name. */
static const char *other_setting(const runs_row_t *f, const runs_row_t *r)
{
    if (strcmp(f->scheme, r->scheme)) return "scheme";
    if (f->L != r->L || f->d_model != r->d_model || f->heads != r->heads || f->d_ff != r->d_ff)
        return "model size";
    if (f->steps != r->steps) return "train.steps";
    if (strcmp(f->optimizer, r->optimizer) || f->warmup != r->warmup) return "optimizer or warm-up";
    if (strcmp(f->task, r->task)) return "task";
    return NULL;
}

/* The training rows of set, their arms, lrs and seeds (sorted) and their places in st->idx. */
static int read_rows(const plot_set_t *set, prec_study_t *st, char *why, size_t len)
{
    if (runs_build(&st->t, set)) { snprintf(why, len, "out of memory"); return 1; }
    const size_t n = (size_t)(st->t.n ? st->t.n : 1);
    st->arm = calloc(n, sizeof *st->arm);
    st->lr = calloc(n, sizeof *st->lr);
    st->seed = calloc(n, sizeof *st->seed);
    if (!st->arm || !st->lr || !st->seed) { snprintf(why, len, "out of memory"); return 1; }
    int kept = 0, lowp = 0;
    for (int i = 0; i < st->t.n; i++) {
        const runs_row_t *r = &st->t.rows[i];
        if (r->steps <= 0 || r->run->nsteps == 0) continue;   // a probe has no outcome
        st->t.rows[kept++] = *r;
        const char *o = other_setting(&st->t.rows[0], r);
        if (o) {
            snprintf(why, len, "%s and %s differ in %s: the precision study compares its arms on one "
                     "setting", st->t.rows[0].run->origin, r->run->origin, o);
            return 1;
        }
        lowp |= config_lowp(&r->run->cfg);
        precision_arm_t a;
        arm_of(&r->run->cfg, &a);
        int j = 0;
        while (j < st->na && strcmp(st->arm[j].key, a.key)) j++;
        if (j == st->na) st->arm[st->na++] = a;
        int l = 0, k = 0;
        while (l < st->nl && st->lr[l] != r->lr) l++;
        if (l == st->nl) st->lr[st->nl++] = r->lr;
        while (k < st->nk && st->seed[k] != r->seed) k++;
        if (k == st->nk) st->seed[st->nk++] = r->seed;
    }
    st->t.n = kept;
    if (!kept) { snprintf(why, len, "no training runs"); return 1; }
    if (!lowp) { snprintf(why, len, "no bfloat16, bfloat16_pure or fp8 run: not the precision study's runs"); return 1; }
    qsort(st->arm, (size_t)st->na, sizeof *st->arm, by_arm);
    qsort(st->lr, (size_t)st->nl, sizeof *st->lr, by_double);
    qsort(st->seed, (size_t)st->nk, sizeof *st->seed, by_ulong);
    const runs_row_t *f = &st->t.rows[0];
    snprintf(st->scheme, sizeof st->scheme, "%s", f->scheme);
    st->steps = f->steps, st->d_model = f->d_model, st->L = f->L;
    const size_t slots = (size_t)st->na * st->nl * st->nk;
    st->idx = malloc(slots * sizeof *st->idx);
    if (!st->idx) { snprintf(why, len, "out of memory"); return 1; }
    for (size_t i = 0; i < slots; i++) st->idx[i] = -1;
    st->ref = -1;
    for (int a = 0; a < st->na; a++)
        if (!strcmp(st->arm[a].key, "float32")) st->ref = a;
    for (int i = 0; i < st->t.n; i++) {
        const runs_row_t *r = &st->t.rows[i];
        precision_arm_t a;
        arm_of(&r->run->cfg, &a);
        int ai = 0, l = 0, k = 0;
        while (strcmp(st->arm[ai].key, a.key)) ai++;
        while (st->lr[l] != r->lr) l++;
        while (st->seed[k] != r->seed) k++;
        int *at = &st->idx[((size_t)ai * st->nl + l) * st->nk + k];
        if (*at >= 0) {
            snprintf(why, len, "%s and %s are one arm (%s), lr %g and seed %lu: another key tells "
                     "them apart, which this study does not compare", st->t.rows[*at].run->origin,
                     r->run->origin, a.label, r->lr, r->seed);
            return 1;
        }
        *at = i;
    }
    return 0;
}

/* The mean of the finite x[0..n) (NaN without). */
static double finite_mean(const double *x, size_t n)
{
    double s = 0.0;
    size_t c = 0;
    for (size_t i = 0; x && i < n; i++)
        if (isfinite(x[i])) { s += x[i]; c++; }
    return c ? s / (double)c : NAN;
}

/* One run's per-seed values: v[0] final loss, [1] spikes, [2] peak max logit, [3] first update
 * past PRECISION_LOGIT_GROWTH × the first, [4] stagnation, [5] ‖W‖₂ growth, [6] mean |pv_round_bias|. */
static void run_values(const runs_row_t *r, double v[7])
{
    const plot_run_t *p = r->run;
    v[0] = r->final_loss;
    v[1] = precision_spikes(p->step, p->loss, p->nsteps);
    v[2] = v[3] = v[4] = v[5] = v[6] = NAN;
    const plot_dyn_t *d = p->dyn;
    for (size_t i = 0; d && d->max_logit && i < d->nsteps && i < p->nsteps; i++) {
        const double m = d->max_logit[i];
        if (isfinite(m) && !(m <= v[2])) v[2] = m;
        if (isnan(v[3]) && m > PRECISION_LOGIT_GROWTH * d->max_logit[0]) v[3] = p->step[i];
    }
    const plot_prec_t *q = p->prec;
    if (!q) return;
    if (q->nstag) v[4] = finite_mean(q->stagnation, q->nstag);
    double first = NAN, last = NAN;
    for (size_t i = 0; q->spec_max && i < q->nprobe; i++)
        if (isfinite(q->spec_max[i])) { if (isnan(first)) first = q->spec_max[i]; last = q->spec_max[i]; }
    v[5] = last / first;
    if (q->pv_bias) v[6] = finite_mean(q->pv_bias, q->nprobe);
}

static void ci_of(const double *x, int n, precision_ci_t *c)
{
    size_t used;
    fit_mean_ci(x, 1, (size_t)n, &c->mean, &c->half, &used);
    c->n = (int)used;
}

/* The statistics of arm a at lr l over its seeds. */
static void cell_stats(prec_study_t *st, int a, int l)
{
    precision_cell_t *c = &st->cell[(size_t)a * st->nl + l];
    double *v = malloc(8 * (size_t)st->nk * sizeof *v), *dl = v + 7 * (size_t)st->nk;   // (8, nk)
    if (!v) return;
    int n = 0, np = 0;
    for (int k = 0; k < st->nk; k++) {
        const int i = precision_at(st, a, l, k);
        if (i < 0) continue;
        const runs_row_t *r = &st->t.rows[i];
        double x[7];
        run_values(r, x);
        for (int q = 0; q < 7; q++) v[(size_t)q * st->nk + n] = x[q];
        n++;
        c->trains += r->trains;
        c->diverged += r->diverged;
        const int f = st->ref >= 0 ? precision_at(st, st->ref, l, k) : -1;
        if (f >= 0 && a != st->ref && isfinite(r->final_loss) && isfinite(st->t.rows[f].final_loss))
            dl[np++] = r->final_loss - st->t.rows[f].final_loss;
    }
    c->runs = n;
    study_clopper_pearson(c->trains, n, 0.05, &c->tr_lo, &c->tr_hi);
    study_clopper_pearson(c->diverged, n, 0.05, &c->dv_lo, &c->dv_hi);
    precision_ci_t *out[7] = {&c->loss, &c->spikes, &c->peak, &c->pass, &c->stag, &c->growth, &c->pv};
    for (int q = 0; q < 7; q++) ci_of(v + (size_t)q * st->nk, n, out[q]);
    ci_of(dl, np, &c->dloss);
    free(v);
}

int precision_build(const plot_set_t *set, prec_study_t *st, char *why, size_t len)
{
    memset(st, 0, sizeof *st);
    if (read_rows(set, st, why, len)) return 1;
    st->cell = calloc((size_t)st->na * st->nl, sizeof *st->cell);
    if (!st->cell) { snprintf(why, len, "out of memory"); return 1; }
    for (int a = 0; a < st->na; a++)
        for (int l = 0; l < st->nl; l++) cell_stats(st, a, l);
    return 0;
}

void precision_free(prec_study_t *st)
{
    runs_free(&st->t);
    free(st->arm); free(st->lr); free(st->seed); free(st->idx); free(st->cell);
    memset(st, 0, sizeof *st);
}
