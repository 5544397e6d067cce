/* atlas_compare.c — two stability atlases cell by cell (study/atlas.h, docs/atlas.md "In
 * float32", docs/proxies.md): the runs paired by their cell, read from the config — the scheme
 * (today's block's "+rmsnorm" aside, docs/design.md §6i), the depth, the lr, the warm-up and the
 * seed — never by their names; how far the final losses lie apart, the runs that diverged in one
 * only, the lines of the atlas's table whose verdict moves, and per depth and warm-up the order
 * of the schemes by LR sensitivity with Spearman's ρ (GSL). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "config/scheme.h"
#include "study/atlas.h"

/* A run's cell: its scheme of the table, depth, lr, warm-up and seed. */
static void cell_key(const runs_row_t *r, char *buf, size_t len)
{
    char base[32];
    scheme_base_name(r->scheme, base, sizeof base);
    snprintf(buf, len, "%s_L%d_lr%.17g_w%d_s%lu", base, r->L, r->lr, r->warmup, r->seed);
}

/* The training runs of set with their cells; 0, or 1 with why (two runs of one cell). */
static int cells_read(const plot_set_t *set, runs_table_t *t, char (**key)[96], char *why,
                      size_t len)
{
    if (runs_build(t, set)) { snprintf(why, len, "out of memory"); return 1; }
    int n = 0;
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].run->nsteps > 0) t->rows[n++] = t->rows[i];
    t->n = n;
    *key = malloc((size_t)(n ? n : 1) * sizeof **key);
    if (!*key) { snprintf(why, len, "out of memory"); return 1; }
    for (int i = 0; i < n; i++) {
        cell_key(&t->rows[i], (*key)[i], sizeof (*key)[0]);
        for (int j = 0; j < i; j++)
            if (!strcmp((*key)[i], (*key)[j])) {
                snprintf(why, len, "%s and %s are one cell (%s)", t->rows[j].run->origin,
                         t->rows[i].run->origin, (*key)[i]);
                return 1;
            }
    }
    return 0;
}

/* of[i]: the run of b in a's run i's cell, −1 when none; the number paired. */
static int pair_runs(char (*ka)[96], int na, char (*kb)[96], int nb, int *of)
{
    int paired = 0;
    for (int i = 0; i < na; i++) {
        of[i] = -1;
        for (int j = 0; j < nb && of[i] < 0; j++)
            if (!strcmp(ka[i], kb[j])) of[i] = j;
        paired += of[i] >= 0;
    }
    return paired;
}

/* The runs' part: final losses of the runs that finished in both, and the status that differs. */
static void print_runs(const runs_table_t *a, const runs_table_t *b, const int *of, FILE *out)
{
    double *d = malloc((size_t)(a->n ? a->n : 1) * sizeof *d);
    int m = 0, equal = 0, far = -1;
    for (int i = 0; d && i < a->n; i++) {
        const double x = a->rows[i].final_loss, y = b->rows[of[i]].final_loss;
        if (!isfinite(x) || !isfinite(y)) continue;
        d[m] = fabs(y - x);
        equal += d[m] == 0.0;
        if (far < 0 || d[m] > fabs(b->rows[of[far]].final_loss - a->rows[far].final_loss)) far = i;
        m++;
    }
    fprintf(out, "**Runs.** %d in each; %d finished in both", a->n, m);
    if (m) {
        const double largest = fabs(b->rows[of[far]].final_loss - a->rows[far].final_loss);
        gsl_sort(d, 1, (size_t)m);
        fprintf(out, ". Final loss B - A over those: median |Δ| %.2e, largest %.2e (%s); %d equal.\n\n",
                gsl_stats_median_from_sorted_data(d, 1, (size_t)m), largest, a->rows[far].run->name,
                equal);
    } else fprintf(out, ".\n\n");
    free(d);
    int *flip = malloc((size_t)(a->n ? a->n : 1) * sizeof *flip), nf = 0;
    for (int i = 0; flip && i < a->n; i++)   // by name, as listed
        if (a->rows[i].diverged != b->rows[of[i]].diverged) {
            int k = nf++;
            for (; k > 0 && strcmp(a->rows[flip[k - 1]].run->name, a->rows[i].run->name) > 0; k--)
                flip[k] = flip[k - 1];
            flip[k] = i;
        }
    fprintf(out, "**Status differs** in %d runs%s\n", nf, nf ? ":" : ".");
    for (int k = 0; k < nf; k++) {
        const int i = flip[k];
        fprintf(out, "- %s: %s in A, %s in B\n", a->rows[i].run->name,
                a->rows[i].diverged ? "diverged" : "finished",
                b->rows[of[i]].diverged ? "diverged" : "finished");
    }
    free(flip);
}

/* The line of b with line x's scheme of the table, depth and variant; −1 when none. */
static int line_in(const atlas_table_t *b, const atlas_row_t *x)
{
    char bx[32], by[32];
    scheme_base_name(x->scheme, bx, sizeof bx);
    for (int j = 0; j < b->n; j++) {
        scheme_base_name(b->rows[j].scheme, by, sizeof by);
        if (!strcmp(bx, by) && b->rows[j].L == x->L && !strcmp(b->rows[j].label, x->label))
            return j;
    }
    return -1;
}

/* "%g" of x, "nan" for NaN; "%.3f" likewise. */
static const char *g_of(double x, char *buf, size_t len)
{
    if (isnan(x)) snprintf(buf, len, "nan");
    else snprintf(buf, len, "%g", x);
    return buf;
}

static const char *f3_of(double x, char *buf, size_t len)
{
    if (isnan(x)) snprintf(buf, len, "nan");
    else snprintf(buf, len, "%.3f", x);
    return buf;
}

/* What moves in one half between x and y, appended to what ("; " between). */
static void half_moves(const atlas_half_t *x, const atlas_half_t *y, const char *half, char *what,
                       size_t len)
{
    char p[5][32];
    size_t at = strlen(what);
    if (x->top != y->top)
        at += (size_t)snprintf(what + at, len - at, "%slargest lr that trains, %s, %s → %s",
                               at ? "; " : "", half, x->top > 0 ? g_of(x->top, p[0], 32) : "none",
                               y->top > 0 ? g_of(y->top, p[1], 32) : "none");
    if (at < len && x->diverged != y->diverged)
        at += (size_t)snprintf(what + at, len - at, "%sdiverged, %s, %d → %d", at ? "; " : "",
                               half, x->diverged, y->diverged);
    // the best lr moves (NaN: no run of the half finished, in neither: nothing moves)
    if (at < len && !(x->best_lr == y->best_lr) && (isfinite(x->best_lr) || isfinite(y->best_lr)))
        snprintf(what + at, len - at, "%sbest lr, %s, %s → %s (loss %s → %s)", at ? "; " : "",
                 half, g_of(x->best_lr, p[0], 32), g_of(y->best_lr, p[1], 32),
                 f3_of(x->best, p[2], 32), f3_of(y->best, p[3], 32));
}

/* The lines of a's table whose verdict moves in b's. */
static void print_moves(const atlas_table_t *a, const atlas_table_t *b, FILE *out)
{
    fprintf(out, "\n**Cells whose verdict moves** (scheme, L: what, A → B)\n\n");
    int moved = 0;
    for (int i = 0; i < a->n; i++) {
        const atlas_row_t *x = &a->rows[i];
        const int j = line_in(b, x);
        if (j < 0) continue;
        const atlas_row_t *y = &b->rows[j];
        char what[1200] = "";
        if (strcmp(x->needs, y->needs))
            snprintf(what, sizeof what, "needs warm-up %s → %s", x->needs, y->needs);
        half_moves(&x->warm, &y->warm, "warm-up", what, sizeof what);
        half_moves(&x->cold, &y->cold, "none", what, sizeof what);
        if (!what[0]) continue;
        moved++;
        fprintf(out, "- %s%s%s%s, %d: %s\n", x->scheme, x->label[0] ? " (" : "", x->label,
                x->label[0] ? ")" : "", x->L, what);
    }
    fprintf(out, "\n%d of %d cells move.\n\n", moved, a->n);
}

/* Ordinal ranks 0..n−1 of v (NaN last, ties in the order given) into q. */
static void ranks_of(const double *v, int n, double *q)
{
    for (int i = 0; i < n; i++) {
        const double x = isnan(v[i]) ? INFINITY : v[i];
        int r = 0;
        for (int j = 0; j < n; j++) {
            const double y = isnan(v[j]) ? INFINITY : v[j];
            r += y < x || (y == x && j < i);
        }
        q[i] = r;
    }
}

/* One line of the order table: depth L, warm-up or none, over a's lines at L found in b. */
static void print_order(const atlas_table_t *a, const atlas_table_t *b, int L, int warm,
                        study_format_t fmt, FILE *out)
{
    const int n = a->n ? a->n : 1;
    int *ix = malloc((size_t)n * sizeof *ix), m = 0;
    double *sa = calloc((size_t)n, sizeof *sa), *sb = calloc((size_t)n, sizeof *sb);
    double *qa = malloc((size_t)n * sizeof *qa), *qb = malloc((size_t)n * sizeof *qb);
    double *work = malloc(4 * (size_t)n * sizeof *work);   // the values, then GSL's 2n
    if (!ix || !sa || !sb || !qa || !qb || !work) goto done;
    for (int i = 0; i < a->n; i++) {
        const int j = a->rows[i].L == L ? line_in(b, &a->rows[i]) : -1;
        if (j < 0) continue;
        ix[m] = i;
        sa[m] = warm ? a->rows[i].warm.sens : a->rows[i].cold.sens;
        sb[m] = warm ? b->rows[j].warm.sens : b->rows[j].cold.sens;
        m++;
    }
    ranks_of(sa, m, qa);
    ranks_of(sb, m, qb);
    double *xa = work, *xb = work + m;   // a line with no finished run ranks last
    for (int k = 0; k < m; k++) {
        xa[k] = isnan(sa[k]) ? INFINITY : sa[k];
        xb[k] = isnan(sb[k]) ? INFINITY : sb[k];
    }
    // Spearman's ρ (ties: mean ranks); NaN below two lines or when an order is constant
    const double rho = m >= 2 ? gsl_stats_spearman(xa, 1, xb, 1, (size_t)m, work + 2 * m) : NAN;
    char r[32], p[4][32];
    f3_of(rho, r, sizeof r);
    int swaps = 0;
    if (fmt == STUDY_TSV) fprintf(out, "%d\t%s\t%d\t%.17g\t", L, warm ? "yes" : "no", m, rho);
    else fprintf(out, "| %d | %s | %s | ", L, warm ? "yes" : "no", r);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            if (!(qa[i] < qa[j] && qb[i] > qb[j])) continue;
            const atlas_row_t *x = &a->rows[ix[i]], *y = &a->rows[ix[j]];
            if (fmt == STUDY_TSV) { swaps++; continue; }
            fprintf(out, "%s%s%s%s%s / %s%s%s%s (%s / %s → %s / %s)", swaps++ ? "; " : "",
                    x->scheme, x->label[0] ? " (" : "", x->label, x->label[0] ? ")" : "",
                    y->scheme, y->label[0] ? " (" : "", y->label, y->label[0] ? ")" : "",
                    f3_of(sa[i], p[0], 32), f3_of(sa[j], p[1], 32), f3_of(sb[i], p[2], 32),
                    f3_of(sb[j], p[3], 32));
        }
    if (fmt == STUDY_TSV) fprintf(out, "%d\n", swaps);
    else fprintf(out, "%s |\n", swaps ? "" : "—");
done:
    free(ix); free(sa); free(sb); free(qa); free(qb); free(work);
}

/* The order tables: per depth of a and warm-up, Spearman's ρ and the pairs that swap. */
static void print_orders(const atlas_table_t *a, const atlas_table_t *b, study_format_t fmt,
                         FILE *out)
{
    if (fmt == STUDY_TSV) fprintf(out, "L\twarmup\tlines\tspearman\tswaps\n");
    else fprintf(out, "**Order of the schemes by LR sensitivity** (least sensitive first)\n\n"
                      "| L | warm-up | Spearman ρ | pairs that swap (A's order) |\n|---|---|---|---|\n");
    int last = -1;
    for (;;) {   // the depths up
        int L = -1;
        for (int i = 0; i < a->n; i++)
            if (a->rows[i].L > last && (L < 0 || a->rows[i].L < L)) L = a->rows[i].L;
        if (L < 0) break;
        print_order(a, b, L, 1, fmt, out);
        print_order(a, b, L, 0, fmt, out);
        last = L;
    }
}

/* The runs of a (and b) that pair (of, from pair_runs) as sets of their own, sharing the
 * runs' memory (free only .runs); their count. */
static int common_sets(const runs_table_t *a, const runs_table_t *b, const int *of,
                       plot_set_t *ca, plot_set_t *cb)
{
    const size_t n = (size_t)(a->n ? a->n : 1);
    ca->runs = malloc(n * sizeof *ca->runs);
    cb->runs = malloc(n * sizeof *cb->runs);
    ca->n = cb->n = 0;
    for (int i = 0; ca->runs && cb->runs && i < a->n; i++)
        if (of[i] >= 0) {
            ca->runs[ca->n++] = *a->rows[i].run;
            cb->runs[cb->n++] = *b->rows[of[i]].run;
        }
    return ca->n;
}

/* The comparison of the paired runs and their tables. */
static int compare_paired(const plot_set_t *sa, const plot_set_t *sb, study_format_t fmt,
                          FILE *out, char *err, size_t errlen)
{
    runs_table_t a = {0}, b = {0};
    char (*ka)[96] = NULL, (*kb)[96] = NULL;
    atlas_table_t ta = {0}, tb = {0};
    int *of = NULL;
    int rc = cells_read(sa, &a, &ka, err, errlen) || cells_read(sb, &b, &kb, err, errlen);
    if (!rc && !(of = malloc((size_t)(a.n ? a.n : 1) * sizeof *of))) rc = 1;
    if (!rc) pair_runs(ka, a.n, kb, b.n, of);
    if (!rc) rc = atlas_build(sa, &ta, err, errlen) || atlas_build(sb, &tb, err, errlen);
    if (!rc) {
        if (fmt != STUDY_TSV) {
            print_runs(&a, &b, of, out);
            print_moves(&ta, &tb, out);
        }
        print_orders(&ta, &tb, fmt, out);
    }
    runs_free(&a); runs_free(&b);
    free(ka); free(kb); free(of);
    atlas_free_table(&ta); atlas_free_table(&tb);
    return rc;
}

int study_atlas_compare(const plot_set_t *sa, const plot_set_t *sb, int common,
                        study_format_t fmt, FILE *out, char *err, size_t errlen)
{
    runs_table_t a = {0}, b = {0};
    char (*ka)[96] = NULL, (*kb)[96] = NULL;
    int *of = NULL, paired = 0;
    plot_set_t ca = {0}, cb = {0};
    int rc = cells_read(sa, &a, &ka, err, errlen) || cells_read(sb, &b, &kb, err, errlen);
    if (!rc && !(of = malloc((size_t)(a.n ? a.n : 1) * sizeof *of))) rc = 1;
    if (!rc) paired = pair_runs(ka, a.n, kb, b.n, of);
    const int same = !rc && paired == a.n && a.n == b.n && a.n;
    if (!rc && !same && common && paired) {   // the runs both hold, said first
        if (common_sets(&a, &b, of, &ca, &cb) != paired) { snprintf(err, errlen, "out of memory"); rc = 1; }
        else if (fmt != STUDY_TSV)
            fprintf(out, "**Common runs only:** %d of %d in A and %d in B.\n\n", paired, a.n, b.n);
    } else if (!rc && !same) {
        int i = 0;
        while (i < a.n && of[i] >= 0) i++;
        char both[32] = "none in both";
        if (paired) snprintf(both, sizeof both, "%d in both", paired);
        snprintf(err, errlen, "the two files do not hold the same runs: %d in A, %d in B, %s%s%s "
                 "(--common: compare the runs both hold)", a.n, b.n, both,
                 i < a.n ? "; e.g. A's cell " : "", i < a.n ? ka[i] : "");
        rc = 1;
    }
    if (!rc) rc = ca.runs ? compare_paired(&ca, &cb, fmt, out, err, errlen)
                          : compare_paired(sa, sb, fmt, out, err, errlen);
    runs_free(&a); runs_free(&b);
    free(ka); free(kb); free(of); free(ca.runs); free(cb.runs);
    return rc;
}
