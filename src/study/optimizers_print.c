/* optimizers_print.c — `stability table optimizers` (study/optimizers.h): the warm-up question
 * per cell and arm, the best final loss seed by seed, adaptive against fixed warm-up and the
 * peak attention logit, as Markdown for the docs or TSV (five blocks, each a header line and a
 * row per line, a blank line between). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "measure/fit.h"
#include "study/atlas.h"
#include "study/optimizers.h"
#include "study/study.h"

/* A real for TSV: a tab, then %.17g, "nan" for NaN (never "-nan"). */
static void tsv_real(FILE *out, double x)
{
    if (isnan(x)) fprintf(out, "\tnan");
    else fprintf(out, "\t%.17g", x);
}

/* The first columns of a row: optimizer, scheme, depth (Markdown "| … |", TSV tab-separated). */
static void row_head(const optimizers_t *st, int o, int s, int d, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV) fprintf(out, "%s\t%s\t%d", st->opt[o], st->scheme[s], st->depth[d]);
    else fprintf(out, "| %s | %s | %d |", optimizers_label(st->opt[o]), st->scheme[s], st->depth[d]);
}

/* Whether optimizer o ran anything in scheme s, depth d. */
static int cell_ran(const optimizers_t *st, int o, int s, int d)
{
    for (int a = 0; a < st->na; a++)
        if (optimizers_line(st, o, s, d, a)->runs) return 1;
    return 0;
}

/* "k of n [lo, hi]" (Clopper–Pearson 95 %), "0 of 0" when n is 0; or TSV's k, n, lo, hi. */
static void share(int k, int n, study_format_t fmt, FILE *out)
{
    double lo, hi;
    study_clopper_pearson(k, n, 0.05, &lo, &hi);
    if (fmt == STUDY_TSV) {
        fprintf(out, "\t%d\t%d", k, n);
        tsv_real(out, lo);
        tsv_real(out, hi);
    } else if (n) fprintf(out, " %d of %d [%.2f, %.2f] |", k, n, lo, hi);
    else fprintf(out, " 0 of 0 |");
}

static void print_trains(const optimizers_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV) {
        fprintf(out, "optimizer\tscheme\tL\tarm\ttrains\truns\tci_lo\tci_hi\teta_max");
        for (int k = 0; k < st->nk; k++) fprintf(out, "\teta_max_seed%lu", st->seed[k]);
        fprintf(out, "\n");
    } else
        fprintf(out, "### Trains, per cell and warm-up arm\n\n| optimizer | scheme | L | warm-up | "
                     "trains [95 %% CI] | η_max | η_max per seed |\n|---|---|---|---|---|---|---|\n");
    for (int o = 0; o < st->no; o++)
        for (int s = 0; s < st->ns; s++)
            for (int d = 0; d < st->nd; d++)
                for (int a = 0; a < st->na; a++) {
                    const optimizers_line_t *ln = optimizers_line(st, o, s, d, a);
                    const double *tops = st->top_seed + ((size_t)((o * st->ns + s) * st->nd + d) * st->na + a) * st->nk;
                    if (!ln->runs) continue;
                    row_head(st, o, s, d, fmt, out);
                    if (fmt == STUDY_TSV) fprintf(out, "\t%s", st->arm[a].label);
                    else fprintf(out, " %s |", st->arm[a].label);
                    share(ln->trains, ln->runs, fmt, out);
                    if (fmt == STUDY_TSV) {
                        tsv_real(out, ln->top);
                        for (int k = 0; k < st->nk; k++) tsv_real(out, tops[k]);
                        fprintf(out, "\n");
                        continue;
                    }
                    if (ln->top > 0) fprintf(out, " %.3g |", ln->top);
                    else fprintf(out, " none |");
                    for (int k = 0; k < st->nk; k++) {
                        const char *sep = k ? "," : "";
                        if (isnan(tops[k])) fprintf(out, "%s –", sep);
                        else if (tops[k] > 0) fprintf(out, "%s %.3g", sep, tops[k]);
                        else fprintf(out, "%s none", sep);
                    }
                    fprintf(out, " |\n");
                }
    if (fmt == STUDY_MARKDOWN)
        fprintf(out, "\ntrains: the runs (every lr and seed) whose final loss is below %.1f nats, "
                     "with the Clopper–Pearson 95 %% interval; η_max as `stability table atlas` "
                     "decides it: the largest lr whose mean final loss over the seeds trains (an lr "
                     "where a seed diverged counts as diverged); per seed: each seed alone (seeds "
                     "in order", ATLAS_TRAINS);
    for (int k = 0; fmt == STUDY_MARKDOWN && k < st->nk; k++) fprintf(out, "%s %lu", k ? "," : "", st->seed[k]);
    if (fmt == STUDY_MARKDOWN) fprintf(out, "); none: no lr trains; –: not run.\n\n");
}

static void print_needs(const optimizers_t *st, study_format_t fmt, FILE *out)
{
    const char *lin = st->arm[st->linear].label;
    if (fmt == STUDY_TSV)
        fprintf(out, "optimizer\tscheme\tL\tneeds\tpairs\tneeds_lo\tneeds_hi\thurts\thurts_pairs\thurts_lo\thurts_hi\n");
    else
        fprintf(out, "### Does it need warm-up? No warm-up against %s, (lr, seed) by (lr, seed)\n\n"
                     "| optimizer | scheme | L | needs warm-up [95 %% CI] | warm-up hurts [95 %% CI] |\n"
                     "|---|---|---|---|---|\n", lin);
    for (int o = 0; o < st->no; o++)
        for (int s = 0; s < st->ns; s++)
            for (int d = 0; d < st->nd; d++) {
                const optimizers_cell_t *c = &st->cell[((size_t)o * st->ns + s) * st->nd + d];
                if (!cell_ran(st, o, s, d)) continue;
                row_head(st, o, s, d, fmt, out);
                share(c->needs, c->pairs, fmt, out);
                share(c->hurts, c->pairs, fmt, out);
                fprintf(out, "\n");
            }
    if (fmt == STUDY_MARKDOWN)
        fprintf(out, "\nOf the (lr, seed)s run both without warm-up and with %s: needs warm-up, "
                     "those where no warm-up fails (stuck or diverged) and %s trains; warm-up "
                     "hurts, the reverse (Clopper–Pearson 95 %% intervals).\n\n", lin, lin);
}

/* The best finite final loss of seed k over every lr and arm of a cell, its lr and arm, and
 * whether any run of the seed trains; the seed's runs. */
static int seed_best(const optimizers_t *st, int o, int s, int d, int k, double *best, double *lr,
                     int *arm, int *trains)
{
    int runs = 0;
    *best = *lr = NAN;
    *arm = -1;
    *trains = 0;
    for (int a = 0; a < st->na; a++)
        for (int l = 0; l < st->nl; l++) {
            const int r = optimizers_at(st, o, s, d, a, l, k);
            if (r < 0) continue;
            const runs_row_t *x = &st->t.rows[r];
            runs++;
            *trains |= x->trains;
            if (isfinite(x->final_loss) && !(x->final_loss >= *best)) {
                *best = x->final_loss;
                *lr = x->lr;
                *arm = a;
            }
        }
    return runs;
}

static void print_best(const optimizers_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV)
        fprintf(out, "optimizer\tscheme\tL\tseed\tbest_loss\tbest_lr\tbest_arm\ttrains\truns\n");
    else {
        fprintf(out, "### Does the failure survive? The best final loss over the grid, seed by seed\n\n"
                     "| optimizer | scheme | L |");
        for (int k = 0; k < st->nk; k++) fprintf(out, " seed %lu |", st->seed[k]);
        fprintf(out, " seeds where an lr trains |\n|---|---|---|");
        for (int k = 0; k <= st->nk; k++) fprintf(out, "---|");
        fprintf(out, "\n");
    }
    for (int o = 0; o < st->no; o++)
        for (int s = 0; s < st->ns; s++)
            for (int d = 0; d < st->nd; d++) {
                if (!cell_ran(st, o, s, d)) continue;
                int any = 0, seeds = 0;
                if (fmt == STUDY_MARKDOWN) row_head(st, o, s, d, fmt, out);
                for (int k = 0; k < st->nk; k++) {
                    double best, lr;
                    int arm, tr;
                    const int runs = seed_best(st, o, s, d, k, &best, &lr, &arm, &tr);
                    seeds += runs > 0;
                    any += tr;
                    if (fmt == STUDY_TSV) {
                        row_head(st, o, s, d, fmt, out);
                        fprintf(out, "\t%lu", st->seed[k]);
                        tsv_real(out, best);
                        tsv_real(out, lr);
                        fprintf(out, "\t%s\t%d\t%d\n", arm >= 0 ? st->arm[arm].label : "nan", tr, runs);
                    } else if (!runs) fprintf(out, " – |");
                    else if (arm < 0) fprintf(out, " diverged at every lr |");
                    else fprintf(out, " %.3f (%g, %s)%s |", best, lr, st->arm[arm].label, tr ? "" : " ✗");
                }
                if (fmt == STUDY_MARKDOWN) fprintf(out, " %d of %d |\n", any, seeds);
            }
    if (fmt == STUDY_MARKDOWN)
        fprintf(out, "\nEach seed's lowest final loss over every lr and warm-up arm it ran, with "
                     "that lr and arm; ✗: no run of the seed trains (below %.1f nats).\n\n", ATLAS_TRAINS);
}

/* The paired difference, seed by seed, of arm a's final loss at its best lr and arm b's at
 * its: mean and 95 % half-width over the seeds where both finished (fit_mean_ci). */
static double paired(const optimizers_t *st, int o, int s, int d, int a, int b, double *half)
{
    const optimizers_line_t *x = optimizers_line(st, o, s, d, a), *y = optimizers_line(st, o, s, d, b);
    double *v = malloc((size_t)st->nk * sizeof *v), mean = NAN;
    *half = NAN;
    if (!v) return NAN;
    for (int k = 0; k < st->nk; k++) {
        v[k] = NAN;
        int rx = -1, ry = -1;
        for (int l = 0; l < st->nl; l++) {
            if (st->lr[l] == x->best_lr) rx = optimizers_at(st, o, s, d, a, l, k);
            if (st->lr[l] == y->best_lr) ry = optimizers_at(st, o, s, d, b, l, k);
        }
        if (rx >= 0 && ry >= 0) v[k] = st->t.rows[rx].final_loss - st->t.rows[ry].final_loss;
    }
    size_t n;
    fit_mean_ci(v, 1, (size_t)st->nk, &mean, half, &n);
    free(v);
    return n ? mean : NAN;
}

/* The arm with the lowest best loss of a cell among the fixed warm-ups (no remedy beside them:
 * subopt 0) or among the suboptimality schedule's arms (subopt 1), or −1. */
static int best_arm(const optimizers_t *st, int o, int s, int d, int subopt)
{
    int b = -1;
    for (int a = 0; a < st->na; a++) {
        const optimizers_line_t *ln = optimizers_line(st, o, s, d, a);
        if (st->arm[a].subopt != subopt || st->arm[a].extra || !isfinite(ln->best)) continue;
        if (b < 0 || ln->best < optimizers_line(st, o, s, d, b)->best) b = a;
    }
    return b;
}

/* "mean ± half (lr)" of a line's best, "mean (lr)" with one seed, "–" without. */
static void best_text(const optimizers_line_t *ln, char *buf, size_t len)
{
    if (!ln->runs || !isfinite(ln->best)) snprintf(buf, len, ln->runs ? "diverged" : "–");
    else if (isfinite(ln->best_half)) snprintf(buf, len, "%.3f ± %.3f (%g)", ln->best, ln->best_half, ln->best_lr);
    else snprintf(buf, len, "%.3f (%g)", ln->best, ln->best_lr);
}

static void print_adaptive(const optimizers_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV)
        fprintf(out, "optimizer\tscheme\tL\tarm\tbest_loss\tbest_half\tbest_lr\tbest_fixed_arm\t"
                     "minus_best_fixed\tminus_half\n");
    else {
        fprintf(out, "### Adaptive against fixed warm-up: the final loss at each arm's best lr\n\n"
                     "| optimizer | scheme | L |");
        for (int a = 0; a < st->na; a++) fprintf(out, " %s |", st->arm[a].label);
        fprintf(out, " best suboptimality − best fixed |\n|---|---|---|");
        for (int a = 0; a <= st->na; a++) fprintf(out, "---|");
        fprintf(out, "\n");
    }
    for (int o = 0; o < st->no; o++)
        for (int s = 0; s < st->ns; s++)
            for (int d = 0; d < st->nd; d++) {
                if (!cell_ran(st, o, s, d)) continue;
                const int f = best_arm(st, o, s, d, 0), sub = best_arm(st, o, s, d, 1);
                const int has_sub = sub >= 0;
                double half = NAN;
                const double diff = has_sub && f >= 0 ? paired(st, o, s, d, sub, f, &half) : NAN;
                if (fmt == STUDY_MARKDOWN) row_head(st, o, s, d, fmt, out);
                for (int a = 0; a < st->na; a++) {
                    const optimizers_line_t *ln = optimizers_line(st, o, s, d, a);
                    if (fmt == STUDY_TSV) {
                        if (!ln->runs) continue;
                        row_head(st, o, s, d, fmt, out);
                        fprintf(out, "\t%s", st->arm[a].label);
                        tsv_real(out, ln->best); tsv_real(out, ln->best_half); tsv_real(out, ln->best_lr);
                        fprintf(out, "\t%s", a == sub && f >= 0 ? st->arm[f].label : "nan");
                        tsv_real(out, a == sub ? diff : NAN); tsv_real(out, a == sub ? half : NAN);
                        fprintf(out, "\n");
                        continue;
                    }
                    char b[96];
                    best_text(ln, b, sizeof b);
                    fprintf(out, " %s |", b);
                }
                if (fmt == STUDY_TSV) continue;
                if (!has_sub) fprintf(out, " – |\n");
                else if (isnan(diff)) fprintf(out, " none finished |\n");
                else if (isfinite(half))
                    fprintf(out, " %+.3f ± %.3f (%s − %s) |\n", diff, half, st->arm[sub].label, st->arm[f].label);
                else fprintf(out, " %+.3f (%s − %s) |\n", diff, st->arm[sub].label, st->arm[f].label);
            }
    if (fmt == STUDY_MARKDOWN)
        fprintf(out, "\nEach arm: the lowest of the lrs' mean final losses over the seeds, ± the 95 %% "
                     "Student-t half-width over the seeds at that lr (its lr in brackets). The last "
                     "column: seed by seed, the final loss of the suboptimality schedule's best arm "
                     "(of its f*/lr_div fits) at its best lr minus the best fixed arm's at its (both "
                     "named), mean ± 95 %% half-width over the "
                     "seeds where both finished; below 0: the adaptive warm-up does better.\n\n");
}

/* The median over the seeds of the runs' peak logits at arm a, lr l of a cell (GSL), the
 * seeds that ran and whether one diverged; NaN without a finite peak. */
static double logit_median(const optimizers_t *st, int o, int s, int d, int a, int l, int *ran, int *div)
{
    double *v = malloc((size_t)st->nk * sizeof *v), m = NAN;
    int n = 0;
    *ran = *div = 0;
    if (!v) return NAN;
    for (int k = 0; k < st->nk; k++) {
        const int r = optimizers_at(st, o, s, d, a, l, k);
        if (r < 0) continue;
        (*ran)++;
        *div |= st->t.rows[r].diverged;
        if (isfinite(st->logit[r])) v[n++] = st->logit[r];
    }
    if (n) {
        gsl_sort(v, 1, (size_t)n);
        m = gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
    }
    free(v);
    return m;
}

/* One optimizer's block of the logit table: a row per scheme, depth and arm, a column per lr. */
static void logit_block(const optimizers_t *st, int o, study_format_t fmt, FILE *out)
{
    int *has = calloc((size_t)st->nl, sizeof *has);
    if (!has) return;
    for (int s = 0; s < st->ns; s++)
        for (int d = 0; d < st->nd; d++)
            for (int l = 0; l < st->nl; l++) has[l] |= optimizers_has_lr(st, o, s, d, l);
    if (fmt == STUDY_MARKDOWN) {
        fprintf(out, "%s:\n\n| scheme | L | warm-up |", optimizers_label(st->opt[o]));
        for (int l = 0; l < st->nl; l++) if (has[l]) fprintf(out, " %g |", st->lr[l]);
        fprintf(out, "\n|---|---|---|");
        for (int l = 0; l < st->nl; l++) if (has[l]) fprintf(out, "---|");
        fprintf(out, "\n");
    }
    for (int s = 0; s < st->ns; s++)
        for (int d = 0; d < st->nd; d++)
            for (int a = 0; a < st->na; a++) {
                if (!optimizers_line(st, o, s, d, a)->runs) continue;
                if (fmt == STUDY_MARKDOWN)
                    fprintf(out, "| %s | %d | %s |", st->scheme[s], st->depth[d], st->arm[a].label);
                for (int l = 0; l < st->nl; l++) {
                    if (!has[l]) continue;
                    int ran, div;
                    const double m = logit_median(st, o, s, d, a, l, &ran, &div);
                    if (fmt == STUDY_TSV) {
                        if (!ran) continue;
                        row_head(st, o, s, d, fmt, out);
                        fprintf(out, "\t%s", st->arm[a].label);
                        tsv_real(out, st->lr[l]);
                        tsv_real(out, m);
                        fprintf(out, "\t%d\t%d\n", ran, div);
                    } else if (!ran) fprintf(out, " |");
                    else if (isnan(m)) fprintf(out, " –%s |", div ? " ×" : "");
                    else fprintf(out, " %.3g%s |", m, div ? " ×" : "");
                }
                if (fmt == STUDY_MARKDOWN) fprintf(out, "\n");
            }
    if (fmt == STUDY_MARKDOWN) fprintf(out, "\n");
    free(has);
}

static void print_logit(const optimizers_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV) fprintf(out, "optimizer\tscheme\tL\tarm\tlr\tmax_logit_median\tseeds\tdiverged\n");
    else
        fprintf(out, "### Peak max |attention logit|\n\nThe largest /train/max_attn_logit over the "
                     "updates of a run (every attention, head and visible query–key pair), the "
                     "median over the seeds; × : a seed diverged at that lr; –: no logit logged.\n\n");
    for (int o = 0; o < st->no; o++) logit_block(st, o, fmt, out);
}

int study_optimizers_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                           size_t errlen)
{
    optimizers_t st;
    if (optimizers_build(set, &st, err, errlen)) { optimizers_free(&st); return 1; }
    if (fmt == STUDY_MARKDOWN) {
        fprintf(out, "%d runs:", st.t.n);
        for (int o = 0; o < st.no; o++) fprintf(out, "%s %s", o ? "," : "", optimizers_label(st.opt[o]));
        fprintf(out, "; %d scheme%s, L =", st.ns, st.ns > 1 ? "s" : "");
        for (int d = 0; d < st.nd; d++) fprintf(out, "%s %d", d ? "," : "", st.depth[d]);
        fprintf(out, "; warm-up");
        for (int a = 0; a < st.na; a++) fprintf(out, "%s %s", a ? "," : "", st.arm[a].label);
        fprintf(out, "; %d seed%s, %d updates, d = %d; a run trains when its final loss is below "
                     "%.1f nats.\n\n", st.nk, st.nk > 1 ? "s" : "", st.steps, st.d_model, ATLAS_TRAINS);
    }
    print_trains(&st, fmt, out);
    if (fmt == STUDY_TSV) fprintf(out, "\n");
    print_needs(&st, fmt, out);
    if (fmt == STUDY_TSV) fprintf(out, "\n");
    print_best(&st, fmt, out);
    if (fmt == STUDY_TSV) fprintf(out, "\n");
    print_adaptive(&st, fmt, out);
    if (fmt == STUDY_TSV) fprintf(out, "\n");
    print_logit(&st, fmt, out);
    optimizers_free(&st);
    return 0;
}
