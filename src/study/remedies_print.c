/* remedies_print.c — `stability table remedies` (study/remedies.h): the causal test, the failure
 * boundary and the cost, as Markdown for the docs or TSV (three blocks, each a header line and a
 * row per line, a blank line between). */
#include <math.h>
#include <string.h>
#include "study/remedies.h"
#include "study/study.h"
#include "study/warmup_explained.h"

/* The line of method m at scheme s, depth d. */
static const remedies_line_t *line_of(const remedies_t *st, int m, int s, int d)
{
    return &st->line[((size_t)m * st->ns + s) * st->nd + d];
}

/* A real for TSV: a tab, then %.17g, "nan" for NaN (never "-nan"). */
static void tsv_real(FILE *out, double x)
{
    if (isnan(x)) fprintf(out, "\tnan");
    else fprintf(out, "\t%.17g", x);
}

/* x as %.3g, or "none" when not above 0, "nan" for NaN. */
static void lr_text(char *buf, size_t len, double x, const char *none)
{
    if (isnan(x)) snprintf(buf, len, "nan");
    else if (!(x > 0)) snprintf(buf, len, "%s", none);
    else snprintf(buf, len, "%.3g", x);
}

/* η_max of a line relative to linear warm-up's, NaN when either trains at no lr. */
static double top_ratio(const remedies_line_t *a, const remedies_line_t *w)
{
    return a->top > 0 && w->top > 0 ? a->top / w->top : NAN;
}

static void print_causal(const remedies_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV)
        fprintf(out, "method\tneeds_trained\tneeds_run\tfraction\tci_lo\tci_hi\tbreaks\tcold_trains_run\n");
    else
        fprintf(out, "### Causal test: the (cell, seed)s that need warm-up, trained without it\n\n"
                     "| method | needs warm-up: trains | fraction [95 %% CI] | trains without warm-up: "
                     "breaks |\n|---|---|---|---|\n");
    for (int m = 0; m < st->nm; m++) {
        if (m == st->nowu || m == st->linwu) continue;   // 0 and all by definition
        const int k = st->fixed[m], n = st->asked[m];
        double lo, hi;
        study_clopper_pearson(k, n, 0.05, &lo, &hi);
        const double f = n ? (double)k / n : NAN;
        if (fmt == STUDY_TSV) {
            fprintf(out, "%s\t%d\t%d", st->m[m].label, k, n);
            tsv_real(out, f); tsv_real(out, lo); tsv_real(out, hi);
            fprintf(out, "\t%d\t%d\n", st->broke[m], st->kept[m]);
            continue;
        }
        if (n) fprintf(out, "| %s | %d of %d | %.2f [%.2f, %.2f] | %d of %d |\n", st->m[m].label, k, n, f,
                       lo, hi, st->broke[m], st->kept[m]);
        else fprintf(out, "| %s | 0 of 0 | - | %d of %d |\n", st->m[m].label, st->broke[m], st->kept[m]);
    }
    if (fmt == STUDY_MARKDOWN)
        fprintf(out, "\nA cell is a scheme, depth and lr; its seeds are replicates. A (cell, seed) needs "
                     "warm-up when %s fails there and %s trains: %d here. trains: of those, the ones "
                     "the method trains (its fraction, Clopper–Pearson 95 %% interval); breaks: of the "
                     "%d (cell, seed)s %s trains, the ones the method fails (of those it was run on).\n\n",
                st->m[st->nowu].label, st->m[st->linwu].label, st->needs, st->cold_ok, st->m[st->nowu].label);
}

static void print_boundary(const remedies_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV)
        fprintf(out, "scheme\tL\tmethod\teta_max\tseeds\tagree\tratio_to_linear_warmup\tlrs\n");
    else
        fprintf(out, "### Boundary: the largest lr that trains (η_max)\n\n| scheme | L | method | η_max "
                     "| seeds agree | η_max / %s's |\n|---|---|---|---|---|---|\n", st->m[st->linwu].label);
    for (int s = 0; s < st->ns; s++)
        for (int d = 0; d < st->nd; d++)
            for (int m = 0; m < st->nm; m++) {
                const remedies_line_t *ln = line_of(st, m, s, d), *w = line_of(st, st->linwu, s, d);
                if (!ln->runs) continue;
                const double q = top_ratio(ln, w);
                if (fmt == STUDY_TSV) {
                    fprintf(out, "%s\t%d\t%s", st->scheme[s], st->depth[d], st->m[m].label);
                    tsv_real(out, ln->top);
                    fprintf(out, "\t%d\t%d", ln->seeds, ln->agree);
                    tsv_real(out, q);
                    fprintf(out, "\t%d\n", ln->lrs);
                    continue;
                }
                char top[64], ratio[32];
                lr_text(top, sizeof top, ln->top, "none");
                if (ln->lrs < st->nl)   // a sweep under way: η_max of the lrs run so far
                    snprintf(top + strlen(top), sizeof top - strlen(top), " (%d of %d lrs)", ln->lrs,
                             st->nl);
                if (isnan(q)) snprintf(ratio, sizeof ratio, "none");
                else snprintf(ratio, sizeof ratio, "%.3g", q);
                fprintf(out, "| %s | %d | %s | %s | %d of %d | %s |\n", st->scheme[s], st->depth[d],
                        st->m[m].label, top, ln->agree, ln->seeds, ratio);
            }
    if (fmt == STUDY_MARKDOWN)
        fprintf(out, "\nη_max as `stability table atlas` decides it: the largest lr whose mean final loss "
                     "over the seeds is below %.1f nats (an lr where a seed diverged counts as diverged); "
                     "seeds agree: how many seeds alone give the same η_max; none: it trains at no lr "
                     "(the ratio: either does); (k of n lrs): run at k of the set's n lrs only.\n\n", WARMUP_TRAINS);
}

static void print_cost(const remedies_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV)
        fprintf(out, "scheme\tL\tmethod\tbest_loss\tbest_half\tbest_lr\tminus_linear_warmup\t"
                     "sec_per_update\tsec_ratio_to_no_warmup\n");
    else
        fprintf(out, "### Cost: the final loss at the best lr, and the compute per update\n\n"
                     "| scheme | L | method | best loss (lr) | − %s's best | s / update | × %s's |\n"
                     "|---|---|---|---|---|---|---|\n", st->m[st->linwu].label, st->m[st->nowu].label);
    for (int s = 0; s < st->ns; s++)
        for (int d = 0; d < st->nd; d++)
            for (int m = 0; m < st->nm; m++) {
                const remedies_line_t *ln = line_of(st, m, s, d), *w = line_of(st, st->linwu, s, d),
                                      *c = line_of(st, st->nowu, s, d);
                if (!ln->runs) continue;
                const double dl = ln->best - w->best, q = ln->sec / c->sec;
                if (fmt == STUDY_TSV) {
                    fprintf(out, "%s\t%d\t%s", st->scheme[s], st->depth[d], st->m[m].label);
                    const double v[6] = {ln->best, ln->best_half, ln->best_lr, dl, ln->sec, q};
                    for (int k = 0; k < 6; k++) tsv_real(out, v[k]);
                    fprintf(out, "\n");
                    continue;
                }
                char best[64] = "-", diff[32] = "-", sec[32] = "-", rel[32] = "-";
                if (isfinite(ln->best) && isfinite(ln->best_half))
                    snprintf(best, sizeof best, "%.3f ± %.3f (%g)", ln->best, ln->best_half, ln->best_lr);
                else if (isfinite(ln->best)) snprintf(best, sizeof best, "%.3f (%g)", ln->best, ln->best_lr);
                if (isfinite(dl)) snprintf(diff, sizeof diff, "%+.3f", dl);
                if (isfinite(ln->sec)) snprintf(sec, sizeof sec, "%.3g", ln->sec);
                if (isfinite(q)) snprintf(rel, sizeof rel, "%.2f", q);
                fprintf(out, "| %s | %d | %s | %s | %s | %s | %s |\n", st->scheme[s], st->depth[d],
                        st->m[m].label, best, diff, sec, rel);
            }
    if (fmt == STUDY_MARKDOWN)
        fprintf(out, "\nbest loss: the lowest of the lrs' mean final losses over the seeds, ± the 95 %% "
                     "Student-t half-width over the seeds at that lr; s / update: the wall seconds an "
                     "update (/train/time's last row over its update, every measurement of the run "
                     "included), the mean over the method's runs of the scheme and depth.\n");
}

int study_remedies_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                         size_t errlen)
{
    remedies_t st;
    if (remedies_build(set, &st, err, errlen)) { remedies_free(&st); return 1; }
    if (fmt == STUDY_MARKDOWN) {
        fprintf(out, "%d runs: %d methods, %d scheme%s, L =", st.t.n, st.nm, st.ns, st.ns > 1 ? "s" : "");
        for (int d = 0; d < st.nd; d++) fprintf(out, "%s %d", d ? "," : "", st.depth[d]);
        fprintf(out, ", %d lrs (%g … %g), %d seed%s, %d updates, d = %d; a run trains when its final "
                     "loss is below %.1f nats.\n\n", st.nl, st.lr[0], st.lr[st.nl - 1], st.nk,
                st.nk > 1 ? "s" : "", st.steps, st.d_model, WARMUP_TRAINS);
    }
    print_causal(&st, fmt, out);
    if (fmt == STUDY_TSV) fprintf(out, "\n");
    print_boundary(&st, fmt, out);
    if (fmt == STUDY_TSV) fprintf(out, "\n");
    print_cost(&st, fmt, out);
    remedies_free(&st);
    return 0;
}
