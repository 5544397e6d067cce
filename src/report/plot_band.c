/* plot_band.c — training curves over seeds: groups of runs that differ only in init.seed,
 * their mean with a 95 % band, and the x at which each reaches a loss (docs/design.md §6e). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_band.h"
#include "report/plot_internal.h"
#include "io/h5io.h"
#include "measure/diagnose.h"
#include "measure/fit.h"

size_t plot_series_loss(const plot_run_t *r, const double **x, const double **y)
{
    *x = r->step;
    *y = r->loss;
    return r->step ? r->nsteps : 0;
}

size_t plot_series_val_loss(const plot_run_t *r, const double **x, const double **y)
{
    *x = r->eval_step;
    *y = r->val_loss;
    return r->nevals;
}

size_t plot_series_bleu(const plot_run_t *r, const double **x, const double **y)
{
    *x = r->bleu_step;
    *y = r->bleu;
    return r->nbleu;
}

int plot_member_bleu(const plot_run_t *r)
{
    return r->nbleu > 0 || r->cfg.train.bleu_every > 0;
}

const plot_curve_t PLOT_CURVE_LOSS = {plot_series_loss, 0, "training loss", 4, 0, NULL};
const plot_curve_t PLOT_CURVE_VAL_LOSS = {plot_series_val_loss, 0, "validation loss", 4, 0, NULL};
const plot_curve_t PLOT_CURVE_BLEU = {plot_series_bleu, 1, "BLEU", 2, 1, plot_member_bleu};

int plot_band_groups(const plot_set_t *set, const int *m, int n, plot_group_t *g, int max)
{
    char **keys = calloc((size_t)(max > 0 ? max : 1), sizeof *keys);   // one per group
    int ng = 0, rc = keys ? 0 : -1;
    for (int i = 0; i < n && !rc; i++) {
        char *key = h5io_config_text(&set->runs[m[i]].cfg, 1);   // seeds of one config
        int found = -1;
        for (int k = 0; key && k < ng && found < 0; k++)
            if (!strcmp(keys[k], key)) found = k;
        if (!key || (found < 0 && ng == max) || (found >= 0 && g[found].n == PLOT_MAX_SEEDS)) {
            free(key);
            rc = -1;
            break;
        }
        if (found < 0) {
            keys[ng] = key;
            g[ng].n = 0;
            found = ng++;
        } else {
            free(key);
        }
        g[found].run[g[found].n++] = m[i];
    }
    for (int k = 0; k < ng; k++) {
        free(keys[k]);
        g[k].lines = g[k].n >= 2 && (g[k].n <= PLOT_SEED_LINES || set->seed_lines);
    }
    free(keys);
    return rc ? -1 : ng;
}

int plot_band_max_seeds(const plot_group_t *g, int ngroups)
{
    int most = 1;
    for (int k = 0; k < ngroups; k++) most = g[k].n > most ? g[k].n : most;
    return most;
}

size_t plot_band_stride(size_t n)
{
    return n > PLOT_BAND_MAX_ROWS ? n / PLOT_BAND_MAX_ROWS : 1;
}

void plot_band_key_note(const plot_set_t *set, const plot_group_t *g, char *label, size_t len)
{
    int nd = 0;
    for (int k = 0; k < g->n; k++) nd += !isnan(set->runs[g->run[k]].diverged_at);
    const size_t used = strlen(label);
    if (used >= len) return;
    if (g->n > 1 && nd) snprintf(label + used, len - used, " (%d seeds, %d diverged)", g->n, nd);
    else if (g->n > 1) snprintf(label + used, len - used, " (%d seeds)", g->n);
    else if (nd) snprintf(label + used, len - used, " (diverged)");
}

void plot_band_caption(const plot_group_t *g, int ngroups, char *buf, size_t len)
{
    int lo = PLOT_MAX_SEEDS, hi = 1, lines = 0, bands = 0;
    for (int k = 0; k < ngroups; k++) {
        lo = g[k].n < lo ? g[k].n : lo;
        hi = g[k].n > hi ? g[k].n : hi;
        lines |= g[k].lines;
        bands |= g[k].n > 1 && !g[k].lines;
    }
    char n[32];
    if (lo == hi) snprintf(n, sizeof n, "%d", hi);
    else snprintf(n, sizeof n, "%d–%d", lo, hi);
    if (hi < 2) snprintf(buf, len, "%s", "");
    else if (!lines) snprintf(buf, len, "; mean of %s seeds, band: 95%% CI", n);
    else if (!bands) snprintf(buf, len, "; mean of %s seeds, thin: each seed", n);
    else snprintf(buf, len, "; mean of %s seeds, thin: each seed (up to %d), band: 95%% CI",
                  n, PLOT_SEED_LINES);
}

/* y of curve (x, y, n) at xv: index k when x[k] == xv (the seeds of one configuration
 * evaluate at the same updates), else a search; NaN when the curve has no such x. */
static double value_at(const double *x, const double *y, size_t n, size_t k, double xv)
{
    if (k < n && x[k] == xv) return y[k];
    for (size_t j = 0; j < n; j++)
        if (x[j] == xv) return y[j];
    return NAN;
}

size_t plot_band_block(sbuf_t *s, const char *name, const plot_set_t *set, const plot_group_t *g,
                       plot_series_fn f, double xscale, double floor, plot_range_t *rx,
                       plot_range_t *ry)
{
    const double *gx = NULL;
    size_t glen = 0;
    for (int i = 0; i < g->n; i++) {   // the x grid: the longest curve's
        const double *x, *y;
        const size_t n = f(&set->runs[g->run[i]], &x, &y);
        if (n > glen) { glen = n; gx = x; }
    }
    size_t rows = 0;
    const size_t every = plot_band_stride(glen);
    sbuf_printf(s, "$%s << EOD\n", name);
    for (size_t k = 0; k < glen; k++) {
        if (k % every && k + 1 != glen) continue;
        double v[PLOT_MAX_SEEDS], mean, half;
        size_t count;
        for (int i = 0; i < g->n; i++) {
            const double *x, *y;
            const size_t n = f(&set->runs[g->run[i]], &x, &y);
            v[i] = value_at(x, y, n, k, gx[k]);
            if (!isfinite(v[i])) v[i] = NAN;   // a diverged seed's Inf: not averaged
        }
        fit_mean_ci(v, 1, (size_t)g->n, &mean, &half, &count);
        if (!count) continue;
        if (isnan(half)) half = 0.0;
        const double lo = isnan(floor) ? mean - half : fmax(floor, mean - half);
        sbuf_printf(s, "%.10g %.10g %.10g %.10g %zu", gx[k] * xscale, mean, lo, mean + half,
                    count);
        for (int i = 0; g->lines && i < g->n; i++) {   // each seed's line
            sbuf_printf(s, isnan(v[i]) ? " NaN" : " %.10g", v[i]);
            if (ry) plot_range_add(ry, v[i]);
        }
        sbuf_printf(s, "\n");
        if (rx) plot_range_add(rx, gx[k] * xscale);
        if (ry && !g->lines) {
            plot_range_add(ry, lo);
            plot_range_add(ry, mean + half);
        } else if (ry) {
            plot_range_add(ry, mean);
        }
        rows++;
    }
    sbuf_printf(s, "EOD\n");
    return rows;
}

void plot_band_clause(sbuf_t *s, const char *name, const plot_group_t *g, const char *color,
                      const char *style, int first)
{
    if (!first) sbuf_printf(s, ", ");
    for (int i = 0; g->lines && i < g->n; i++)
        sbuf_printf(s, "$%s using 1:%d with lines lw 0.8 dt 1 lc rgb '%s' notitle, ", name, 6 + i,
                    color);
    if (g->n > 1 && !g->lines)
        sbuf_printf(s, "$%s using 1:3:4 with filledcurves fc rgb '%s' fs transparent solid 0.22 "
                       "noborder notitle, ", name, color);
    sbuf_printf(s, "$%s using 1:2 with %s lc rgb '%s' notitle", name, style, color);
}

double plot_band_reach(const double *x, const double *y, size_t n, double target, int up)
{
    for (size_t k = 0; k < n; k++) {
        if (!(up ? y[k] >= target : y[k] <= target)) continue;
        if (k == 0 || !isfinite(y[k - 1])) return x[k];
        // y[k-1] on the far side of target, y[k] on the near: where the segment crosses it
        return x[k - 1] + (x[k] - x[k - 1]) * (y[k - 1] - target) / (y[k - 1] - y[k]);
    }
    return NAN;
}

void plot_band_reach_ci(const plot_set_t *set, const plot_group_t *g, plot_series_fn f,
                        double target, int up, double *mean, double *half, int *reached)
{
    double at[PLOT_MAX_SEEDS];
    for (int i = 0; i < g->n; i++) {
        const double *x, *y;
        const size_t n = f(&set->runs[g->run[i]], &x, &y);
        at[i] = plot_band_reach(x, y, n, target, up);
    }
    size_t count;
    fit_mean_ci(at, 1, (size_t)g->n, mean, half, &count);
    *reached = (int)count;
}

double plot_band_common_target(const plot_set_t *set, const plot_group_t *g, int ngroups,
                               plot_series_fn f, int up)
{
    const double sign = up ? -1.0 : 1.0;   // as a loss: the largest of the minima of sign·y
    double target = NAN;
    for (int k = 0; k < ngroups; k++)
        for (int i = 0; i < g[k].n; i++) {
            const double *x, *y;
            const size_t n = f(&set->runs[g[k].run[i]], &x, &y);
            double best = INFINITY;
            for (size_t j = 0; j < n; j++)
                if (isfinite(y[j]) && sign * y[j] < best) best = sign * y[j];
            // a BLEU curve that never left 0 (no 4-gram ever matched: NLTK then returns values
            // like 1e-77, printed 0.00) would set the target to ~0, reached by every run at its
            // first evaluation: such a run only never reaches the target
            if (up && -best < 0.01) continue;
            if (isfinite(best) && !(best <= target)) target = best;   // NaN target: the first
        }
    return sign * target;
}

void plot_band_reach_text(double mean, double half, int reached, double xscale, int digits,
                          char *buf, size_t len)
{
    if (reached >= 2)
        snprintf(buf, len, "%.*f ± %.*f", digits, mean * xscale, digits, half * xscale);
    else if (reached == 1) snprintf(buf, len, "%.*f", digits, mean * xscale);
    else snprintf(buf, len, "never");
}

/* "m ± h" (or "m" with one seed, "–" with none) of v[0..n), digits decimals, into buf. */
static void mean_pm(const double *v, int n, int digits, char *buf, size_t len)
{
    double mean, half;
    size_t count;
    fit_mean_ci(v, 1, (size_t)n, &mean, &half, &count);
    if (!count) snprintf(buf, len, "–");
    else if (count == 1) snprintf(buf, len, "%.*f", digits, mean);
    else snprintf(buf, len, "%.*f ± %.*f", digits, mean, digits, half);
}

/* Row k of plot_band_table: group g[k] (its key from its first seed and what differs, d). */
static void table_row(FILE *out, const plot_set_t *set, const plot_curve_t *c,
                      const plot_group_t *g, const plot_diff_t *d, int k, double target, int epochs)
{
    double last[PLOT_MAX_SEEDS], best[PLOT_MAX_SEEDS];
    int nd = 0;
    for (int i = 0; i < g[k].n; i++) {
        const plot_run_t *r = &set->runs[g[k].run[i]];
        const double *x, *y;
        const size_t n = c->f(r, &x, &y);
        last[i] = best[i] = NAN;
        for (size_t j = 0; j < n; j++)
            if (isfinite(y[j])) {
                last[i] = y[j];
                if (isnan(best[i]) || (c->up ? y[j] > best[i] : y[j] < best[i])) best[i] = y[j];
            }
        nd += !isnan(r->diverged_at);
    }
    double mean = NAN, half = NAN;
    int reached = 0;
    if (!isnan(target)) plot_band_reach_ci(set, &g[k], c->f, target, c->up, &mean, &half, &reached);
    char label[300], a[80], b[80], at[80];
    const plot_run_t *r = &set->runs[g[k].run[0]];
    static const char *const ONE[] = {"scheme", "train.warmup", "train.lr", NULL};
    if (d->n) plot_key(d, r, 0, label, sizeof label);
    else plot_shared(d, r, ONE, 0, label, sizeof label);   // one configuration: what it is
    mean_pm(last, g[k].n, c->digits, a, sizeof a);
    mean_pm(best, g[k].n, c->digits, b, sizeof b);
    // the seeds of one configuration share its updates per epoch
    plot_band_reach_text(mean, half, reached, epochs ? 1.0 / r->epoch_batches : 1.0,
                         epochs ? 2 : 0, at, sizeof at);
    if (isnan(target)) snprintf(at, sizeof at, "–");
    fprintf(out, "| %s | %d | %d | %s | %s | %s | %d of %d |\n", label, g[k].n, nd, a, b, at,
            reached, g[k].n);
}

/* The unigram plateau of the runs of groups g (the highest a run records), or NaN. */
static double plateau_of(const plot_set_t *set, const plot_group_t *g, int ng)
{
    double u = NAN;
    for (int k = 0; k < ng; k++)
        for (int i = 0; i < g[k].n; i++) {
            const double x = set->runs[g[k].run[i]].unigram;
            if (isfinite(x) && !(x <= u)) u = x;
        }
    return u;
}

int plot_band_table(FILE *out, const plot_set_t *set, const plot_curve_t *c)
{
    int m[PLOT_BAND_MAX_RUNS], nr = 0, epochs = c->epochs;
    for (int i = 0; i < set->n && nr < PLOT_BAND_MAX_RUNS; i++) {
        const plot_run_t *r = &set->runs[i];
        const double *x, *y;
        if (c->member ? c->member(r) : c->f(r, &x, &y) > 0) {
            m[nr++] = i;
            if (isnan(r->epoch_batches)) epochs = 0;
        }
    }
    plot_group_t g[PLOT_BAND_MAX_RUNS];
    const int ng = nr ? plot_band_groups(set, m, nr, g, PLOT_BAND_MAX_RUNS) : 0;
    if (ng <= 0) return 0;
    const double target = plot_band_common_target(set, g, ng, c->f, c->up);
    char reach[64];
    if (isnan(target))   // no BLEU ever left 0: nothing every run reaches
        snprintf(reach, sizeof reach, "%s reaching (%s)", epochs ? "epoch" : "update",
                 c->up ? "no run's BLEU left 0" : "no finite value");
    else snprintf(reach, sizeof reach, "%s reaching %.4g", epochs ? "epoch" : "update", target);
    fprintf(out, "| run | seeds | diverged | last %s | best %s | %s | seeds reaching |\n"
                 "|---|---|---|---|---|---|---|\n", c->what, c->what, reach);
    int first[PLOT_BAND_MAX_RUNS];
    for (int k = 0; k < ng; k++) first[k] = g[k].run[0];
    plot_diff_t *d = malloc(sizeof *d);
    if (!d) return 0;
    plot_diff(set, first, ng, 0, d);
    for (int k = 0; k < ng; k++) table_row(out, set, c, g, d, k, target, epochs);
    free(d);
    const double plateau = c->up ? NAN : plateau_of(set, g, ng);
    if (!isnan(target) && target >= plateau - DIAG_PLATEAU_BAND)
        fprintf(out, "\n%.4g, the value every run reaches, is not below the unigram plateau "
                     "(%.3f nats, the byte entropy of the training split) by more than %g nats: "
                     "a run reaches it without learning more than the bytes' frequencies, so the "
                     "%s reaching it says nothing about learning (a stuck run reaches it first).\n",
                target, plateau, DIAG_PLATEAU_BAND, epochs ? "epoch" : "update");
    return ng;
}
