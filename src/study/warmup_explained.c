/* warmup_explained.c — the warm-up study's statistics (warmup_explained.h; docs/curvature.md
 * "The experiment"): the cells, their outcomes and indicators, the AUCs and their intervals.
 *
 * The cell of a run is read from its config, never its name (docs/design.md §6d): the atlas's
 * zip of placement, norm and init, the depth, the lr; warm-up apart; one seed per cell, a
 * seeded atlas refused. The outcome is the table of runs' (report/runs.h) at the published
 * 3.2 nats. The per-run indicators are read with the set (report/plot_indicators.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "report/plot_internal.h"
#include "report/runs.h"
#include "train/optim.h"
#include "study/warmup_explained.h"

const struct warmup_indicator WARMUP_IND[WARMUP_N] = {
    {"lr", "the learning rate: the baseline"},
    {"xiong", "‖∂L/∂W²‖ of the last layer, update 1"},
    {"xiong_ratio", "xiong over Pre-LN's (Theorem 1)"},
    {"admin", "output change at initialisation"},
    {"eos", "peak active ratio, upd. 1–20"},
    {"eos0", "active ratio at update 0"},
    {"radam", "1 − r₅ (RAdam's rectifier)"},
    {"kosson", "max ‖ΔW‖/‖W‖, updates 1–20"},
    {"update_rms", "max update RMS, updates 2–20"},
    {"deepnet", "‖F(x, θ₁) − F(x, θ₀)‖"},
};

/* ------------------------------------------------------------------ the cell of a run */

/* The cell of a run from its resolved config: the scheme as the atlas's zip sets it, the depth
 * and the learning rate; warm-up and seed are the caller's. */
static void key_of_run(const plot_run_t *r, warmup_key_t *k)
{
    const config_t *c = &r->cfg;
    snprintf(k->scheme, sizeof k->scheme, "%s-%s-%s", config_placement_name(c->model.placement),
             config_norm_name(c->model.norm), config_init_name(c->init.scheme));
    k->L = c->model.layers;
    k->lr = c->train.lr;
}

/* Whether run r is Theorem 1's reference scheme: Pre-LN with LayerNorm, Xavier-normal. */
static int is_pre_ln(const plot_run_t *r)
{
    return r->cfg.model.placement == PLACEMENT_PRE && r->cfg.model.norm == NORM_LAYERNORM &&
           r->cfg.init.scheme == INIT_XAVIER_NORMAL;
}

static int key_cmp(const warmup_key_t *a, const warmup_key_t *b)
{
    const int s = strcmp(a->scheme, b->scheme);
    if (s) return s;
    if (a->L != b->L) return a->L < b->L ? -1 : 1;
    return a->lr < b->lr ? -1 : a->lr > b->lr;
}

/* trains | stuck | diverged: the table of runs' outcome at the published WARMUP_TRAINS. */
static int outcome(const plot_set_t *set, int i)
{
    runs_row_t row;
    runs_row(set, i, &row);
    runs_outcome(&row, WARMUP_TRAINS);
    return row.diverged ? WARMUP_DIVERGED : row.trains ? WARMUP_TRAINS_OUT : WARMUP_STUCK;
}

/* The outcome run of key k with warm-up (warm) or without: its index, or −1; −2 with why when
 * there are two (two atlases in one set, or a seeded atlas: one outcome per cell). */
static int outcome_run(const plot_set_t *set, const warmup_key_t *k, int warm, char *why,
                       size_t len)
{
    int found = -1;
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        warmup_key_t x;
        if (r->ind || !r->loss || (r->cfg.train.warmup > 1) != warm) continue;
        key_of_run(r, &x);
        if (key_cmp(&x, k)) continue;
        if (found >= 0) {
            const plot_run_t *f = &set->runs[found];
            if (f->cfg.init.seed != r->cfg.init.seed)
                snprintf(why, len, "a seeded atlas (%s, L %d, lr %g at seeds %lu and %lu): the "
                         "warm-up study takes one outcome run per cell; give one seed's runs",
                         k->scheme, k->L, k->lr, f->cfg.init.seed, r->cfg.init.seed);
            else
                snprintf(why, len, "two outcome runs of one cell (%s, %s): give one atlas",
                         f->origin, r->origin);
            return -2;
        }
        found = i;
    }
    return found;
}

/* Admin's output change of (scheme, L) (Liu et al. 2020b): the mean over its seeds of the first
 * atlas_init run of that scheme and depth; NaN when the set has none. */
static double admin_of(const plot_set_t *set, const warmup_key_t *k, int *any)
{
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || !r->probe->output_change) continue;
        *any = 1;
        warmup_key_t x;
        key_of_run(r, &x);
        if (strcmp(x.scheme, k->scheme) || x.L != k->L) continue;
        double s = 0.0;
        int n = 0;
        for (int j = 0; j < r->probe->S; j++)
            if (!isnan(r->probe->output_change[j])) { s += r->probe->output_change[j]; n++; }
        return n ? s / n : NAN;
    }
    return NAN;
}

void warmup_run_values(const plot_run_t *r, double v[WARMUP_N])
{
    const plot_ind_t *d = r->ind;
    double rho;
    const double r5 = optim_radam_rect(r->cfg.train.beta2, 5, &rho);   // the optimizer's rₜ
    v[WARMUP_LR] = r->cfg.train.lr;
    v[WARMUP_XIONG] = d ? d->xiong : NAN;
    v[WARMUP_RATIO] = NAN;
    v[WARMUP_ADMIN] = NAN;
    v[WARMUP_EOS] = d ? d->eos : NAN;
    v[WARMUP_EOS0] = d ? d->eos0 : NAN;
    v[WARMUP_RADAM] = isfinite(r5) ? 1.0 - r5 : 1.0;   // un-adapted at t = 5: 1
    v[WARMUP_KOSSON] = d ? d->kosson : NAN;
    v[WARMUP_RMS] = d ? d->update_rms : NAN;
    v[WARMUP_DEEPNET] = d ? d->deepnet : NAN;
}

static int cell_cmp(const void *a, const void *b)
{
    return key_cmp(&((const warmup_cell_t *)a)->key, &((const warmup_cell_t *)b)->key);
}

/* Theorem 1's ratio of cell c (Xiong et al. 2020): its xiong over Pre-LN's at the same depth
 * and lr. */
static void xiong_ratio(const plot_set_t *set, warmup_cell_t *c)
{
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->ind || !is_pre_ln(r) || r->cfg.model.layers != c->key.L ||
            r->cfg.train.lr != c->key.lr)
            continue;
        const double ref = r->ind->xiong;
        if (ref != 0 && isfinite(ref)) c->v[WARMUP_RATIO] = c->v[WARMUP_XIONG] / ref;
    }
}

int warmup_cells(const plot_set_t *set, warmup_cell_t *cells, int *admin, char *why, size_t len)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].ind) continue;
        warmup_cell_t c = {.ind = i};
        key_of_run(&set->runs[i], &c.key);
        for (int j = 0; j < n; j++)
            if (!key_cmp(&cells[j].key, &c.key)) {
                snprintf(why, len, "two indicator runs of one cell (%s, %s)",
                         set->runs[cells[j].ind].origin, set->runs[i].origin);
                return -1;
            }
        const int cold = outcome_run(set, &c.key, 0, why, len);
        const int warm = cold == -2 ? -2 : outcome_run(set, &c.key, 1, why, len);
        if (cold == -2 || warm == -2) return -1;
        if (cold < 0) continue;
        c.out = outcome(set, cold);
        c.needs = c.out != WARMUP_TRAINS_OUT && warm >= 0 &&
                  outcome(set, warm) == WARMUP_TRAINS_OUT;
        warmup_run_values(&set->runs[i], c.v);
        c.v[WARMUP_ADMIN] = admin_of(set, &c.key, admin);
        cells[n++] = c;
    }
    qsort(cells, (size_t)n, sizeof *cells, cell_cmp);
    for (int j = 0; j < n; j++) xiong_ratio(set, &cells[j]);
    return n;
}

/* ------------------------------------------------------------------ AUC and bootstrap */

double warmup_auc(const double *fail, int nf, const double *ok, int no)
{
    if (nf <= 0 || no <= 0) return NAN;
    double wins = 0.0;   // integers and halves: exact, as the rank-sum U is
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < no; j++)
            wins += fail[i] > ok[j] ? 1.0 : fail[i] == ok[j] ? 0.5 : 0.0;
    return wins / ((double)nf * no);
}

/* The finite values of x[n] into out; their count. */
static int finite_of(const double *x, int n, double *out)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) out[m++] = x[i];
    return m;
}

/* The 2.5 % and 97.5 % points of reps[B] (sorted here) into ci[1], ci[2]. */
static void percentiles(double *reps, int B, double ci[3])
{
    gsl_sort(reps, 1, (size_t)B);
    ci[1] = gsl_stats_quantile_from_sorted_data(reps, 1, (size_t)B, 0.025);
    ci[2] = gsl_stats_quantile_from_sorted_data(reps, 1, (size_t)B, 0.975);
}

/* B stratified replicates of AUC(a) − AUC(b) (b NULL: of AUC(a)) over fa/oa (and fb/ob):
 * each replicate draws nf failing then no training indices with replacement, the same for
 * a and b, into reps. 0, or 1 when out of memory. */
static int bootstrap(const double *fa, const double *fb, int nf, const double *oa,
                     const double *ob, int no, int B, unsigned long seed, double *reps)
{
    double *buf = malloc((size_t)(2 * (nf + no)) * sizeof *buf);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!buf || !rng) { free(buf); if (rng) gsl_rng_free(rng); return 1; }
    gsl_rng_set(rng, seed);
    double *f1 = buf, *o1 = f1 + nf, *f2 = o1 + no, *o2 = f2 + nf;
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < nf; i++) {
            const unsigned long k = gsl_rng_uniform_int(rng, (unsigned long)nf);
            f1[i] = fa[k];
            if (fb) f2[i] = fb[k];
        }
        for (int j = 0; j < no; j++) {
            const unsigned long k = gsl_rng_uniform_int(rng, (unsigned long)no);
            o1[j] = oa[k];
            if (ob) o2[j] = ob[k];
        }
        reps[b] = warmup_auc(f1, nf, o1, no) - (fb ? warmup_auc(f2, nf, o2, no) : 0.0);
    }
    gsl_rng_free(rng);
    free(buf);
    return 0;
}

void warmup_auc_ci(const double *fail, int nf, const double *ok, int no, int B,
                   unsigned long seed, double ci[3])
{
    ci[0] = ci[1] = ci[2] = NAN;
    double *f = malloc((size_t)(nf + no + B + 1) * sizeof *f);
    if (!f) return;
    double *o = f + nf, *reps = o + no;
    const int mf = finite_of(fail, nf, f), mo = finite_of(ok, no, o);
    if (mf && mo && !bootstrap(f, NULL, mf, o, NULL, mo, B, seed, reps)) {
        ci[0] = warmup_auc(f, mf, o, mo);
        percentiles(reps, B, ci);
    }
    free(f);
}

/* The pairs (a[i], b[i]) where both are finite into pa, pb; their count. */
static int finite_pairs(const double *a, const double *b, int n, double *pa, double *pb)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(a[i]) && isfinite(b[i])) { pa[m] = a[i]; pb[m] = b[i]; m++; }
    return m;
}

void warmup_paired_diff_ci(const double *fa, const double *fb, int nf, const double *oa,
                           const double *ob, int no, int B, unsigned long seed, double ci[3])
{
    ci[0] = ci[1] = ci[2] = NAN;
    double *buf = malloc((size_t)(2 * (nf + no) + B + 1) * sizeof *buf);
    if (!buf) return;
    double *pfa = buf, *pfb = pfa + nf, *poa = pfb + nf, *pob = poa + no, *reps = pob + no;
    const int mf = finite_pairs(fa, fb, nf, pfa, pfb), mo = finite_pairs(oa, ob, no, poa, pob);
    if (mf && mo && !bootstrap(pfa, pfb, mf, poa, pob, mo, B, seed, reps)) {
        ci[0] = warmup_auc(pfa, mf, poa, mo) - warmup_auc(pfb, mf, pob, mo);
        percentiles(reps, B, ci);
    }
    free(buf);
}

/* The values of indicator k (lr when k < 0) of the cells whose outcome is in mask (bit o for
 * outcome o; bit WARMUP_NEEDS: the needs flag) into x; their count. */
static int group(const warmup_cell_t *c, int n, int k, unsigned mask, double *x)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        const int o = c[i].needs && (mask & (1u << WARMUP_NEEDS)) ? WARMUP_NEEDS : c[i].out;
        if (mask & (1u << o)) x[m++] = c[i].v[k < 0 ? WARMUP_LR : k];
    }
    return m;
}

void warmup_row(const warmup_cell_t *c, int n, int k, int B, unsigned long seed, int *finite,
                double auc[WARMUP_COLS][3])
{
    enum { T = 1u << WARMUP_TRAINS_OUT, S = 1u << WARMUP_STUCK, D = 1u << WARMUP_DIVERGED,
           N = 1u << WARMUP_NEEDS };
    for (int col = 0; col < WARMUP_COLS; col++) auc[col][0] = auc[col][1] = auc[col][2] = NAN;
    *finite = 0;
    for (int i = 0; i < n; i++) *finite += isfinite(c[i].v[k]) != 0;
    double *x = calloc((size_t)(4 * n + 1), sizeof *x);
    if (!x) return;
    double *fl = x + n, *ok = fl + n, *okl = ok + n;
    const int nf = group(c, n, k, S | D, x), no = group(c, n, k, T, ok);
    group(c, n, -1, S | D, fl);
    group(c, n, -1, T, okl);
    warmup_auc_ci(x, nf, ok, no, B, seed, auc[WARMUP_FAILS]);
    warmup_paired_diff_ci(x, fl, nf, ok, okl, no, B, seed, auc[WARMUP_MINUS_LR]);
    const int nn = group(c, n, k, N, x);   // the needs flag alone: N without S, D
    warmup_auc_ci(x, nn, ok, no, B, seed, auc[WARMUP_NEEDS_VS]);
    const int ns = group(c, n, k, S, x);
    warmup_auc_ci(x, ns, ok, no, B, seed, auc[WARMUP_STUCK_VS]);
    const int nd = group(c, n, k, D, x);
    warmup_auc_ci(x, nd, ok, no, B, seed, auc[WARMUP_DIV_VS]);
    group(c, n, k, S, fl);
    warmup_auc_ci(x, nd, fl, ns, B, seed, auc[WARMUP_DIV_STUCK]);
    free(x);
}
