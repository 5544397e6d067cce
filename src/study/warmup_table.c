/* warmup_table.c — the warm-up study's tables (warmup_explained.h): `stability table
 * warmup-explained` (the outcome counts and each indicator's AUCs with bootstrap intervals,
 * docs/curvature.md "Which indicator predicts which failure") and `stability table
 * warmup-cells` (every cell's outcome and indicators). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "study/warmup_explained.h"

/* The cells of set into *cells (malloc'd; the caller frees): their count, or −1 with err. */
static int load_cells(const plot_set_t *set, warmup_cell_t **cells, int *admin, char *err,
                      size_t errlen)
{
    *cells = malloc((size_t)(set->n ? set->n : 1) * sizeof **cells);
    if (!*cells) { snprintf(err, errlen, "out of memory"); return -1; }
    *admin = 0;
    const int n = warmup_cells(set, *cells, admin, err, errlen);
    if (n == 0)
        snprintf(err, errlen, "no cell in both the indicators' runs (curvature rows) and the "
                 "atlas's outcome runs without warm-up");
    if (n <= 0) { free(*cells); *cells = NULL; return -1; }
    return n;
}

/* x as the shortest decimal that reads back the same double, written as Python's repr writes
 * it (fixed point with ".0" when the exponent is −4 to 15, else d.ddde±XX; "nan", "inf"), so a
 * TSV reader gets every value to the last bit. */
static void print_exact(FILE *out, double x)
{
    if (isnan(x)) { fputs("nan", out); return; }
    if (isinf(x)) { fputs(x > 0 ? "inf" : "-inf", out); return; }
    char e[40], digits[24];
    int p = 1;
    for (; p < 17; p++) {   // the fewest significant digits that read back x
        snprintf(e, sizeof e, "%.*e", p - 1, x);
        if (strtod(e, NULL) == x) break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, x);
    const char *m = e + (signbit(x) != 0), *ex = strchr(e, 'e');
    int nd = 0;
    for (const char *q = m; q < ex; q++)
        if (*q != '.') digits[nd++] = *q;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    const int exp10 = atoi(ex + 1);
    if (signbit(x)) fputc('-', out);
    if (exp10 < -4 || exp10 >= 16) {
        fprintf(out, "%c%s%s", digits[0], nd > 1 ? "." : "", digits + 1);
        fprintf(out, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (exp10 < 0) {
        fputs("0.", out);
        for (int i = 1; i < -exp10; i++) fputc('0', out);
        fputs(digits, out);
    } else {
        for (int i = 0; i <= exp10 || i < nd; i++) {
            if (i == exp10 + 1) fputc('.', out);
            fputc(i < nd ? digits[i] : '0', out);
        }
        if (nd <= exp10 + 1) fputs(".0", out);
    }
}

/* One Markdown cell: "0.77 [0.68, 0.84]" (diff: signed), "–" for NaN. */
static void print_auc(FILE *out, const double a[3], int diff)
{
    if (!isfinite(a[0])) fputs(" – |", out);
    else if (diff) fprintf(out, " %+.2f [%+.2f, %+.2f] |", a[0], a[1], a[2]);
    else fprintf(out, " %.2f [%.2f, %.2f] |", a[0], a[1], a[2]);
}

static const char *const COL_MD[WARMUP_COLS] = {
    "fails vs trains", "minus lr's (paired)", "needs warm-up vs trains", "stuck vs trains",
    "diverged vs trains", "diverged vs stuck"};
static const char *const COL_TSV[WARMUP_COLS] = {
    "fails_vs_trains", "minus_lr", "needs_vs_trains", "stuck_vs_trains", "diverged_vs_trains",
    "diverged_vs_stuck"};

int study_warmup_explained_table(const plot_set_t *set, study_format_t fmt, FILE *out,
                                 char *err, size_t errlen)
{
    warmup_cell_t *c;
    int admin;
    const int n = load_cells(set, &c, &admin, err, errlen);
    if (n < 0) return 1;
    int count[WARMUP_OUT_N] = {0}, needs = 0;
    for (int i = 0; i < n; i++) { count[c[i].out]++; needs += c[i].needs; }
    if (fmt == STUDY_MARKDOWN) {
        fprintf(out, "%d cells without warm-up: %d train, %d stuck, %d diverged (%d of the "
                "failures train with warm-up); AUC with bootstrap 95 %% intervals (B = %d, "
                "seed %d of GSL's MT19937, stratified).\n\n", n, count[WARMUP_TRAINS_OUT],
                count[WARMUP_STUCK], count[WARMUP_DIVERGED], needs, WARMUP_BOOTSTRAP,
                WARMUP_SEED);
        fputs("| indicator | n |", out);
        for (int col = 0; col < WARMUP_COLS; col++) fprintf(out, " %s |", COL_MD[col]);
        fputs("\n|---|---|", out);
        for (int col = 0; col < WARMUP_COLS; col++) fputs("---|", out);
        fputc('\n', out);
    } else {
        fputs("indicator\tn", out);
        for (int col = 0; col < WARMUP_COLS; col++)
            fprintf(out, "\t%s\t%s_lo\t%s_hi", COL_TSV[col], COL_TSV[col], COL_TSV[col]);
        fputc('\n', out);
    }
    for (int k = 0; k < WARMUP_N; k++) {
        if (k == WARMUP_ADMIN && !admin) continue;   // no atlas_init's probes: no row
        int finite;
        double auc[WARMUP_COLS][3];
        warmup_row(c, n, k, WARMUP_BOOTSTRAP, WARMUP_SEED, &finite, auc);
        fprintf(out, fmt == STUDY_MARKDOWN ? "| %s | %d |" : "%s\t%d", WARMUP_IND[k].name,
                finite);
        for (int col = 0; col < WARMUP_COLS; col++) {
            if (fmt == STUDY_MARKDOWN) { print_auc(out, auc[col], col == WARMUP_MINUS_LR); continue; }
            for (int j = 0; j < 3; j++) { fputc('\t', out); print_exact(out, auc[col][j]); }
        }
        fputc('\n', out);
    }
    free(c);
    return 0;
}

static const char *const OUT_NAME[WARMUP_OUT_N] = {"trains", "needs warm-up", "stuck",
                                                   "diverged"};

int study_warmup_cells_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                             size_t errlen)
{
    warmup_cell_t *c;
    int admin;
    const int n = load_cells(set, &c, &admin, err, errlen);
    if (n < 0) return 1;
    const int md = fmt == STUDY_MARKDOWN;
    fputs(md ? "| scheme | L | lr | outcome | needs warm-up |" : "scheme\tL\tlr\toutcome\tneeds_warmup",
          out);
    for (int k = 0; k < WARMUP_N; k++) fprintf(out, md ? " %s |" : "\t%s", WARMUP_IND[k].name);
    if (md) {
        fputs("\n|---|---|---|---|---|", out);
        for (int k = 0; k < WARMUP_N; k++) fputs("---|", out);
    }
    fputc('\n', out);
    for (int i = 0; i < n; i++) {
        const char *o = OUT_NAME[c[i].out];
        if (md) fprintf(out, "| %s | %d | %g | %s | %s |", c[i].key.scheme, c[i].key.L,
                        c[i].key.lr, o, c[i].needs ? "yes" : "no");
        else fprintf(out, "%s\t%d\t%g\t%s\t%d", c[i].key.scheme, c[i].key.L, c[i].key.lr, o,
                     c[i].needs);
        for (int k = 0; k < WARMUP_N; k++) {
            if (md) {
                if (isfinite(c[i].v[k])) fprintf(out, " %.3g |", c[i].v[k]);
                else fputs(" – |", out);
            } else {
                fputc('\t', out);
                print_exact(out, c[i].v[k]);   // to the last bit: the figure's test holds to it
            }
        }
        fputc('\n', out);
    }
    free(c);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp((*(const plot_run_t *const *)a)->name, (*(const plot_run_t *const *)b)->name);
}

int study_warmup_runs_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                            size_t errlen)
{
    const plot_run_t **r = malloc((size_t)(set->n ? set->n : 1) * sizeof *r);
    if (!r) { snprintf(err, errlen, "out of memory"); return 1; }
    int n = 0;
    for (int i = 0; i < set->n; i++)
        if (set->runs[i].ind) r[n++] = &set->runs[i];
    if (!n) {
        free(r);
        snprintf(err, errlen, "no run with the indicators' rows (curvature rows)");
        return 1;
    }
    qsort(r, (size_t)n, sizeof *r, name_cmp);
    const int md = fmt == STUDY_MARKDOWN;
    if (md) fputs("Fig. 2's runs (outcomes: Fig. 2 itself, docs/warmup.md):\n\n| run |", out);
    else fputs("run", out);
    int cols = 0;
    for (int k = 0; k < WARMUP_N; k++) {
        if (k == WARMUP_ADMIN || k == WARMUP_RATIO) continue;   // they need other runs
        fprintf(out, md ? " %s |" : "\t%s", WARMUP_IND[k].name);
        cols++;
    }
    if (md) { fputs("\n|---|", out); for (int k = 0; k < cols; k++) fputs("---|", out); }
    fputc('\n', out);
    for (int i = 0; i < n; i++) {
        double v[WARMUP_N];
        warmup_run_values(r[i], v);
        fprintf(out, md ? "| %s |" : "%s", r[i]->name);
        for (int k = 0; k < WARMUP_N; k++) {
            if (k == WARMUP_ADMIN || k == WARMUP_RATIO) continue;
            if (md && isnan(v[k])) fputs(" nan |", out);   // as the script printed it
            else if (md) fprintf(out, " %.3g |", v[k]);
            else { fputc('\t', out); print_exact(out, v[k]); }
        }
        fputc('\n', out);
    }
    free(r);
    return 0;
}
