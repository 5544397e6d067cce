/* precision_print.c — `stability table precision`: the precision study's table
 * (study/precision.h), Markdown for the docs or TSV, each value with its interval over seeds. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "study/precision.h"

/* "m ± h" (fmt the printf of one value), "m" with one value, "—" without. */
static void ci_text(const precision_ci_t *c, const char *fmt, char *buf, size_t len)
{
    char m[40], h[40];
    if (!c->n || !isfinite(c->mean)) { snprintf(buf, len, "—"); return; }
    snprintf(m, sizeof m, fmt, c->mean);
    if (c->n < 2 || !isfinite(c->half)) { snprintf(buf, len, "%s", m); return; }
    char hf[16];   // the half-width without a sign: fmt without its '+'
    snprintf(hf, sizeof hf, "%%%s", fmt[1] == '+' ? fmt + 2 : fmt + 1);
    snprintf(h, sizeof h, hf, c->half);
    snprintf(buf, len, "%s ± %s", m, h);
}

/* "k/n (lo–hi)": a count with its Clopper–Pearson interval. */
static void cp_text(int k, int n, double lo, double hi, char *buf, size_t len)
{
    snprintf(buf, len, "%d/%d (%.2f–%.2f)", k, n, lo, hi);
}

static void print_markdown(const prec_study_t *st, FILE *out)
{
    fprintf(out, "%d runs: %s, L = %d, d = %d, %d updates; %d arm%s, %d lr%s, %d seed%s. trains: "
            "final loss below the plateau (report/runs.h's rule), Clopper–Pearson 95 %%; other "
            "columns: mean ± 95 %% Student-t half-width over the seeds; Δ: final loss − float32's, "
            "same seed and lr; spike: the loss %.1f nats above its running minimum after update "
            "%d; max logit × %g: the first update past %g × its value at update 1 (seeds that pass); ‖W‖₂: the largest "
            "weight spectral norm, last probe / first.\n\n", st->t.n, st->scheme, st->L,
            st->d_model, st->steps, st->na, st->na > 1 ? "s" : "", st->nl, st->nl > 1 ? "s" : "",
            st->nk, st->nk > 1 ? "s" : "", PRECISION_SPIKE_NATS, PRECISION_SPIKE_AFTER,
            PRECISION_LOGIT_GROWTH, PRECISION_LOGIT_GROWTH);
    fprintf(out, "| arm | lr | trains | diverged | final loss | Δ vs float32 | spikes | peak max "
            "logit | max logit × %g | stagnation | ‖W‖₂ growth | mean \\|pv_round_bias\\| |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n", PRECISION_LOGIT_GROWTH);
    for (int a = 0; a < st->na; a++)
        for (int l = 0; l < st->nl; l++) {
            const precision_cell_t *c = &st->cell[(size_t)a * st->nl + l];
            if (!c->runs) continue;
            char tr[96], dv[96], loss[96], dl[96], sp[96], pk[96], ps[128], sg[96], gr[96], pv[96];
            cp_text(c->trains, c->runs, c->tr_lo, c->tr_hi, tr, sizeof tr);
            cp_text(c->diverged, c->runs, c->dv_lo, c->dv_hi, dv, sizeof dv);
            ci_text(&c->loss, "%.3f", loss, sizeof loss);
            ci_text(&c->dloss, "%+.3f", dl, sizeof dl);
            if (a == st->ref) snprintf(dl, sizeof dl, "(reference)");
            ci_text(&c->spikes, "%.2f", sp, sizeof sp);
            ci_text(&c->peak, "%.3g", pk, sizeof pk);
            if (!c->pass.n) snprintf(ps, sizeof ps, "never");
            else {
                char t[96];
                ci_text(&c->pass, "%.0f", t, sizeof t);
                snprintf(ps, sizeof ps, "%s (%d/%d)", t, c->pass.n, c->runs);
            }
            ci_text(&c->stag, "%.3f", sg, sizeof sg);
            ci_text(&c->growth, "%.3f", gr, sizeof gr);
            ci_text(&c->pv, "%.2e", pv, sizeof pv);
            fprintf(out, "| %s | %g | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                    st->arm[a].label, st->lr[l], tr, dv, loss, dl, sp, pk, ps, sg, gr, pv);
        }
}

static void print_tsv(const prec_study_t *st, FILE *out)
{
    fprintf(out, "arm\tlr\truns\ttrains\ttrains_lo\ttrains_hi\tdiverged\tdiverged_lo\tdiverged_hi");
    static const char *const COL[] = {"final_loss", "dloss_float32", "spikes", "peak_max_logit",
                                      "first_update_logit_grown", "stagnation", "weight_spec_growth",
                                      "pv_round_bias_abs"};
    for (int q = 0; q < 8; q++) fprintf(out, "\t%s\t%s_half\t%s_n", COL[q], COL[q], COL[q]);
    fprintf(out, "\n");
    for (int a = 0; a < st->na; a++)
        for (int l = 0; l < st->nl; l++) {
            const precision_cell_t *c = &st->cell[(size_t)a * st->nl + l];
            if (!c->runs) continue;
            fprintf(out, "%s\t%.17g\t%d\t%d\t%.17g\t%.17g\t%d\t%.17g\t%.17g", st->arm[a].label,
                    st->lr[l], c->runs, c->trains, c->tr_lo, c->tr_hi, c->diverged, c->dv_lo, c->dv_hi);
            const precision_ci_t *v[] = {&c->loss, &c->dloss, &c->spikes, &c->peak, &c->pass,
                                         &c->stag, &c->growth, &c->pv};
            for (int q = 0; q < 8; q++) {
                if (isfinite(v[q]->mean)) fprintf(out, "\t%.17g", v[q]->mean); else fprintf(out, "\tnan");
                if (isfinite(v[q]->half)) fprintf(out, "\t%.17g", v[q]->half); else fprintf(out, "\tnan");
                fprintf(out, "\t%d", v[q]->n);
            }
            fprintf(out, "\n");
        }
}

int study_precision_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                          size_t errlen)
{
    prec_study_t st;
    if (precision_build(set, &st, err, errlen)) { precision_free(&st); return 1; }
    if (fmt == STUDY_MARKDOWN) print_markdown(&st, out);
    else print_tsv(&st, out);
    precision_free(&st);
    return 0;
}
