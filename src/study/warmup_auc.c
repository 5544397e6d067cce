/* warmup_auc.c — the warm-up study's AUCs and their bootstrap intervals (warmup_explained.h;
 * docs/curvature.md "Statistics", docs/design.md §6d "The warm-up study").
 *
 * A unit is one seed of one cell (scheme × L × lr); the seeds of a cell share its scheme,
 * depth and lr, so they are not independent draws and the bootstrap resamples cells with all
 * their seeds as a block (the cluster bootstrap). Blocks are stratified by their units'
 * classes — all failing, all training, mixed — each stratum resampled at its own size, and by
 * lr for the AUC within lr. With one unit a cell the blocks are the units and the replicates
 * are the stratified bootstrap of the unseeded study, draw for draw. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "study/warmup_explained.h"

double warmup_auc(const double *fail, int nf, const double *ok, int no)
{
    if (nf <= 0 || no <= 0) return NAN;
    double wins = 0.0;   // integers and halves: exact, as the rank-sum U is
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < no; j++)
            wins += fail[i] > ok[j] ? 1.0 : fail[i] == ok[j] ? 0.5 : 0.0;
    return wins / ((double)nf * no);
}

double warmup_within_auc(const double *fail, const int *gf, int nf, const double *ok,
                         const int *go, int no)
{
    double wins = 0.0, pairs = 0.0;
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < no; j++) {
            if (gf[i] != go[j]) continue;
            pairs += 1.0;
            wins += fail[i] > ok[j] ? 1.0 : fail[i] == ok[j] ? 0.5 : 0.0;
        }
    return pairs > 0.0 ? wins / pairs : NAN;
}

/* ------------------------------------------------------------------ the block bootstrap */

/* One unit of a bootstrap: its value a (and b for a paired difference), whether it fails
 * (1) or trains (0) in the comparison, its block (cell) and its stratum group (lr; 0 pooled). */
typedef struct { double a, b; int fail, block, group; } unit_t;

/* A statistic of units u[n]: AUC(a) (− AUC(b) when paired), pooled or within groups. */
typedef struct { int paired, within; } stat_t;

/* The statistic over units u[n], fails and oks each in u's order; scratch x of 4n doubles and
 * g of 2n ints. */
static double statistic(const unit_t *u, int n, stat_t st, double *x, int *g)
{
    double *fa = x, *fb = fa + n, *oa = fb + n, *ob = oa + n;
    int *gf = g, *go = g + n, nf = 0, no = 0;
    for (int i = 0; i < n; i++) {
        if (u[i].fail) { fa[nf] = u[i].a; fb[nf] = u[i].b; gf[nf++] = u[i].group; }
        else { oa[no] = u[i].a; ob[no] = u[i].b; go[no++] = u[i].group; }
    }
    double s = st.within ? warmup_within_auc(fa, gf, nf, oa, go, no) : warmup_auc(fa, nf, oa, no);
    if (st.paired)
        s -= st.within ? warmup_within_auc(fb, gf, nf, ob, go, no) : warmup_auc(fb, nf, ob, no);
    return s;
}

/* The 2.5 % and 97.5 % points of the finite reps[B] (sorted here) into ci[1], ci[2]. */
static void percentiles(double *reps, int B, double ci[3])
{
    int m = 0;
    for (int b = 0; b < B; b++)
        if (isfinite(reps[b])) reps[m++] = reps[b];
    if (!m) return;
    gsl_sort(reps, 1, (size_t)m);
    ci[1] = gsl_stats_quantile_from_sorted_data(reps, 1, (size_t)m, 0.025);
    ci[2] = gsl_stats_quantile_from_sorted_data(reps, 1, (size_t)m, 0.975);
}

/* The strata of the blocks of u[n] (block ids 0 … nb−1, groups 0 … ng−1): stratum of block b
 * into sb[b] = 3·group + (0 all failing, 1 all training, 2 mixed). */
static void strata(const unit_t *u, int n, int nb, int *sb)
{
    for (int b = 0; b < nb; b++) sb[b] = -1;
    for (int i = 0; i < n; i++) {
        const int b = u[i].block, cls = u[i].fail ? 0 : 1;
        if (sb[b] < 0) sb[b] = 3 * u[i].group + cls;
        else if (sb[b] % 3 != cls) sb[b] = 3 * u[i].group + 2;
    }
}

/* Units u[n] ordered by block into pos (block b's at first[b] … first[b + 1] − 1, cnt[b] of
 * them); the largest block's size. */
static int by_block(const unit_t *u, int n, int nb, int *cnt, int *first, int *pos)
{
    int maxb = 1;
    for (int b = 0; b < nb; b++) cnt[b] = 0;
    for (int i = 0; i < n; i++) if (++cnt[u[i].block] > maxb) maxb = cnt[u[i].block];
    first[0] = 0;
    for (int b = 0; b < nb; b++) first[b + 1] = first[b] + cnt[b];
    for (int b = 0; b < nb; b++) cnt[b] = 0;
    for (int i = 0; i < n; i++) pos[first[u[i].block] + cnt[u[i].block]++] = i;
    return maxb;
}

/* The statistic of u[n] and the 2.5 % and 97.5 % points of its B block-bootstrap replicates
 * into ci[3]: each replicate draws, stratum by stratum (strata), as many blocks as the
 * stratum has, with replacement, each with all its units. u's blocks are numbered 0 … nb−1
 * in order of first appearance, its groups 0 … ng−1. */
static void block_ci(const unit_t *u, int n, int nb, int ng, stat_t st, int B,
                     unsigned long seed, double ci[3])
{
    ci[0] = ci[1] = ci[2] = NAN;
    int *iw = malloc((size_t)(4 * nb + n + 2) * sizeof *iw);
    if (!iw) return;
    int *cnt = iw, *first = cnt + nb, *sb = first + nb + 1, *order = sb + nb, *pos = order + nb;
    const int maxb = by_block(u, n, nb, cnt, first, pos);
    strata(u, n, nb, sb);
    const size_t cap = (size_t)n * (size_t)maxb + 1;   // a replicate's units at most
    double *x = malloc((4 * cap + (size_t)B + 1) * sizeof *x);
    int *g = malloc(2 * cap * sizeof *g);
    unit_t *rep = malloc(cap * sizeof *rep);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (x && g && rep && rng && isfinite(ci[0] = statistic(u, n, st, x, g))) {
        double *reps = x + 4 * cap;
        gsl_rng_set(rng, seed);
        for (int r = 0; r < B; r++) {
            int m = 0;
            for (int s = 0; s < 3 * ng; s++) {   // all failing, all training, mixed; by group
                int k = 0;
                for (int b = 0; b < nb; b++) if (sb[b] == s) order[k++] = b;
                for (int j = 0; j < k; j++) {
                    const int b = order[gsl_rng_uniform_int(rng, (unsigned long)k)];
                    for (int q = first[b]; q < first[b + 1]; q++) rep[m++] = u[pos[q]];
                }
            }
            reps[r] = statistic(rep, m, st, x, g);
        }
        percentiles(reps, B, ci);
    }
    if (rng) gsl_rng_free(rng);
    free(rep);
    free(g);
    free(x);
    free(iw);
}

/* Units of one unit a block, failing fail[nf] then training ok[no] (b: fb, ob when paired),
 * those with a non-finite value left out; their count. */
static int plain_units(const double *fa, const double *fb, int nf, const double *oa,
                       const double *ob, int no, unit_t *u)
{
    int m = 0;
    for (int i = 0; i < nf + no; i++) {
        const int f = i < nf;
        const double a = f ? fa[i] : oa[i - nf], b = fb ? (f ? fb[i] : ob[i - nf]) : 0.0;
        if (!isfinite(a) || !isfinite(b)) continue;
        u[m] = (unit_t){.a = a, .b = b, .fail = f, .block = m, .group = 0};
        m++;
    }
    return m;
}

void warmup_auc_ci(const double *fail, int nf, const double *ok, int no, int B,
                   unsigned long seed, double ci[3])
{
    ci[0] = ci[1] = ci[2] = NAN;
    unit_t *u = malloc((size_t)(nf + no + 1) * sizeof *u);
    if (!u) return;
    const int m = plain_units(fail, NULL, nf, ok, NULL, no, u);
    block_ci(u, m, m, 1, (stat_t){0, 0}, B, seed, ci);
    free(u);
}

void warmup_paired_diff_ci(const double *fa, const double *fb, int nf, const double *oa,
                           const double *ob, int no, int B, unsigned long seed, double ci[3])
{
    ci[0] = ci[1] = ci[2] = NAN;
    unit_t *u = malloc((size_t)(nf + no + 1) * sizeof *u);
    if (!u) return;
    const int m = plain_units(fa, fb, nf, oa, ob, no, u);
    block_ci(u, m, m, 1, (stat_t){1, 0}, B, seed, ci);
    free(u);
}

/* ------------------------------------------------------------------ the table's columns */

/* Which units fail (1) or train (0) in column col, −1 for neither (outcome o, needs flag). */
static int class_of(int col, int o, int needs)
{
    const int fail = o == WARMUP_STUCK || o == WARMUP_DIVERGED, ok = o == WARMUP_TRAINS_OUT;
    switch (col) {
    case WARMUP_NEEDS_VS: return needs ? 1 : ok ? 0 : -1;
    case WARMUP_STUCK_VS: return o == WARMUP_STUCK ? 1 : ok ? 0 : -1;
    case WARMUP_DIV_VS: return o == WARMUP_DIVERGED ? 1 : ok ? 0 : -1;
    case WARMUP_DIV_STUCK: return o == WARMUP_DIVERGED ? 1 : o == WARMUP_STUCK ? 0 : -1;
    default: return fail ? 1 : ok ? 0 : -1;   // fails vs trains, minus lr's, within lr
    }
}

static int same_cell(const warmup_key_t *a, const warmup_key_t *b)
{
    return !strcmp(a->scheme, b->scheme) && a->L == b->L && a->lr == b->lr;
}

void warmup_column(const warmup_cell_t *c, int n, int k, int col, int B, unsigned long seed,
                   double auc[3])
{
    auc[0] = auc[1] = auc[2] = NAN;
    unit_t *u = malloc((size_t)(n + 1) * sizeof *u);
    double *lrs = malloc((size_t)(n + 1) * sizeof *lrs);
    int *blk = malloc((size_t)(n + 1) * sizeof *blk);
    if (!u || !lrs || !blk) goto done;
    int nlr = 0, nb = 0, m = 0;
    for (int i = 0; i < n; i++) lrs[nlr++] = c[i].key.lr;
    gsl_sort(lrs, 1, (size_t)nlr);   // the groups: the distinct lrs, ascending
    int ng = 0;
    for (int i = 0; i < nlr; i++) if (!ng || lrs[i] != lrs[ng - 1]) lrs[ng++] = lrs[i];
    const stat_t st = {col == WARMUP_MINUS_LR, col == WARMUP_WITHIN_LR};
    for (int i = 0; i < n; i++) {
        const int f = class_of(col, c[i].out, c[i].needs);
        const double a = c[i].v[k], b = st.paired ? c[i].v[WARMUP_LR] : 0.0;
        if (f < 0 || !isfinite(a) || !isfinite(b)) continue;
        int j = 0;   // the block: the cell of an earlier unit, else a new one
        while (j < m && !same_cell(&c[blk[j]].key, &c[i].key)) j++;
        const int block = j < m ? u[j].block : nb++;
        int g = 0;
        while (st.within && lrs[g] != c[i].key.lr) g++;
        blk[m] = i;
        u[m++] = (unit_t){.a = a, .b = b, .fail = f, .block = block, .group = g};
    }
    block_ci(u, m, nb, st.within ? ng : 1, st, B, seed, auc);
done:
    free(blk);
    free(lrs);
    free(u);
}

void warmup_row(const warmup_cell_t *c, int n, int k, int B, unsigned long seed, int *finite,
                double auc[WARMUP_COLS][3])
{
    *finite = 0;
    for (int i = 0; i < n; i++) *finite += isfinite(c[i].v[k]) != 0;
    for (int col = 0; col < WARMUP_COLS; col++) warmup_column(c, n, k, col, B, seed, auc[col]);
}
