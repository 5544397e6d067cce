/* warmup_table.c — the warm-up study's tables (warmup_explained.h): `stability table
 * warmup-explained` (the outcome counts and each indicator's AUCs with bootstrap intervals,
 * docs/curvature.md "Which indicator predicts which failure") and `stability table
 * warmup-cells` (every cell's outcome and indicators). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_sort_int.h>
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
    "diverged vs trains", "diverged vs stuck", "fails vs trains within lr"};
static const char *const COL_TSV[WARMUP_COLS] = {
    "fails_vs_trains", "minus_lr", "needs_vs_trains", "stuck_vs_trains", "diverged_vs_trains",
    "diverged_vs_stuck", "within_lr"};

/* The units' sentence before a table: "N cells" (one seed) or "N units (cell × seed) in M
 * cells" into buf. */
static void units_said(const warmup_cell_t *c, int n, char *buf, size_t len)
{
    if (!warmup_seeded(c, n)) { snprintf(buf, len, "%d cells", n); return; }
    int cells = 0;
    for (int i = 0; i < n; i++)
        cells += !i || strcmp(c[i].key.scheme, c[i - 1].key.scheme) || c[i].key.L != c[i - 1].key.L
                 || c[i].key.lr != c[i - 1].key.lr;
    snprintf(buf, len, "%d units (cell × seed) in %d cells", n, cells);
}

/* The per-depth table of the n units: a row per shown indicator, a column per depth, each the
 * AUC of fails vs trains among that depth's units (warmup_column on them). */
static void print_depths(const warmup_cell_t *c, int n, int admin, study_format_t fmt,
                         FILE *out)
{
    int *L = malloc((size_t)(n + 1) * sizeof *L), nl = 0;   // the distinct depths, ascending
    warmup_cell_t *d = malloc((size_t)(n + 1) * sizeof *d);
    int *m = calloc((size_t)n + 1, sizeof *m);
    if (!L || !d || !m) { free(L); free(d); free(m); return; }
    for (int i = 0; i < n; i++) L[i] = c[i].key.L;
    gsl_sort_int(L, 1, (size_t)n);
    for (int i = 0; i < n; i++) if (!nl || L[i] != L[nl - 1]) L[nl++] = L[i];
    const int md = fmt == STUDY_MARKDOWN;
    fputs(md ? "| indicator |" : "indicator", out);
    for (int j = 0; j < nl; j++) {
        for (int i = 0; i < n; i++) m[j] += c[i].key.L == L[j];
        if (md) fprintf(out, " L = %d (%d) |", L[j], m[j]);
        else fprintf(out, "\tL%d\tL%d_lo\tL%d_hi", L[j], L[j], L[j]);
    }
    if (md) { fputs("\n|---|", out); for (int j = 0; j < nl; j++) fputs("---|", out); }
    fputc('\n', out);
    for (int k = 0; k < WARMUP_N; k++) {
        if (!warmup_shown(c, n, k, admin)) continue;
        fprintf(out, md ? "| %s |" : "%s", WARMUP_IND[k].name);
        for (int j = 0; j < nl; j++) {
            int u = 0;
            for (int i = 0; i < n; i++) if (c[i].key.L == L[j]) d[u++] = c[i];
            double a[3];
            warmup_column(d, u, k, WARMUP_FAILS, WARMUP_BOOTSTRAP, WARMUP_SEED, a);
            if (md) print_auc(out, a, 0);
            else for (int q = 0; q < 3; q++) { fputc('\t', out); print_exact(out, a[q]); }
        }
        fputc('\n', out);
    }
    free(m);
    free(d);
    free(L);
}

int study_warmup_explained_table(const plot_set_t *set, study_format_t fmt, FILE *out,
                                 char *err, size_t errlen)
{
    warmup_cell_t *c;
    int admin;
    const int n = load_cells(set, &c, &admin, err, errlen);
    if (n < 0) return 1;
    int count[WARMUP_OUT_N] = {0}, needs = 0;
    for (int i = 0; i < n; i++) { count[c[i].out]++; needs += c[i].needs; }
    char units[96];
    units_said(c, n, units, sizeof units);
    if (fmt == STUDY_MARKDOWN) {
        fprintf(out, "%s without warm-up: %d train, %d stuck, %d diverged (%d of the "
                "failures train with warm-up); AUC with bootstrap 95 %% intervals (B = %d, "
                "seed %d of GSL's MT19937, stratified%s).\n\n", units, count[WARMUP_TRAINS_OUT],
                count[WARMUP_STUCK], count[WARMUP_DIVERGED], needs, WARMUP_BOOTSTRAP,
                WARMUP_SEED, warmup_seeded(c, n) ? "; cells resampled with their seeds" : "");
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
        if (!warmup_shown(c, n, k, admin)) continue;   // no atlas_init's probes: no admin row
        int finite;
        double auc[WARMUP_COLS][3];
        warmup_row(c, n, k, WARMUP_BOOTSTRAP, WARMUP_SEED, &finite, auc);
        fprintf(out, fmt == STUDY_MARKDOWN ? "| %s | %d |" : "%s\t%d", WARMUP_IND[k].name,
                finite);
        for (int col = 0; col < WARMUP_COLS; col++) {
            if (fmt == STUDY_MARKDOWN) {
                print_auc(out, auc[col], col == WARMUP_MINUS_LR);
                continue;
            }
            for (int j = 0; j < 3; j++) { fputc('\t', out); print_exact(out, auc[col][j]); }
        }
        fputc('\n', out);
    }
    if (fmt == STUDY_MARKDOWN) {
        fprintf(out, "\nPer depth: fails vs trains among the units of each depth L (units in "
                "parentheses; same bootstrap):\n\n");
        print_depths(c, n, admin, fmt, out);
    }
    free(c);
    return 0;
}

int study_warmup_depth_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                             size_t errlen)
{
    warmup_cell_t *c;
    int admin;
    const int n = load_cells(set, &c, &admin, err, errlen);
    if (n < 0) return 1;
    print_depths(c, n, admin, fmt, out);
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
    const int md = fmt == STUDY_MARKDOWN, seeded = warmup_seeded(c, n);
    int shown[WARMUP_N], cols = 0;   // admin's column always (NaN without atlas_init's)
    for (int k = 0; k < WARMUP_N; k++)
        cols += shown[k] = k == WARMUP_ADMIN || warmup_shown(c, n, k, admin);
    fputs(md ? "| scheme | L | lr |" : "scheme\tL\tlr", out);
    if (seeded) fputs(md ? " seed |" : "\tseed", out);
    fputs(md ? " outcome | needs warm-up |" : "\toutcome\tneeds_warmup", out);
    for (int k = 0; k < WARMUP_N; k++)
        if (shown[k]) fprintf(out, md ? " %s |" : "\t%s", WARMUP_IND[k].name);
    if (md) {
        fputs(seeded ? "\n|---|---|---|---|---|---|" : "\n|---|---|---|---|---|", out);
        for (int k = 0; k < cols; k++) fputs("---|", out);
    }
    fputc('\n', out);
    for (int i = 0; i < n; i++) {
        const char *o = OUT_NAME[c[i].out];
        if (md) fprintf(out, "| %s | %d | %g |", c[i].key.scheme, c[i].key.L, c[i].key.lr);
        else fprintf(out, "%s\t%d\t%g", c[i].key.scheme, c[i].key.L, c[i].key.lr);
        if (seeded) fprintf(out, md ? " %lu |" : "\t%lu", c[i].key.seed);
        if (md) fprintf(out, " %s | %s |", o, c[i].needs ? "yes" : "no");
        else fprintf(out, "\t%s\t%d", o, c[i].needs);
        for (int k = 0; k < WARMUP_N; k++) {
            if (!shown[k]) continue;
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
    int critical = 0;   // eos_c's column only when a run has critical-sharpness rows
    for (int i = 0; i < n; i++) critical |= warmup_run_critical(r[i]);
    if (md) fputs("Fig. 2's runs (outcomes: Fig. 2 itself, docs/warmup.md):\n\n| run |", out);
    else fputs("run", out);
    int cols = 0;
    for (int k = 0; k < WARMUP_N; k++) {
        if (k == WARMUP_ADMIN || k == WARMUP_RATIO) continue;   // they need other runs
        if (k == WARMUP_EOSC && !critical) continue;
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
            if (k == WARMUP_ADMIN || k == WARMUP_RATIO || (k == WARMUP_EOSC && !critical))
                continue;
            if (md && isnan(v[k])) fputs(" nan |", out);   // as the script printed it
            else if (md) fprintf(out, " %.3g |", v[k]);
            else { fputc('\t', out); print_exact(out, v[k]); }
        }
        fputc('\n', out);
    }
    free(r);
    return 0;
}
