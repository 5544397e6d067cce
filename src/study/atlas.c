/* atlas.c — the stability atlas's statistics and tables (study/atlas.h, docs/design.md §6d). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "measure/fit.h"
#include "report/plot_internal.h"
#include "study/atlas.h"

/* Wortsman et al. 2023's LR sensitivity of one scheme, depth and warm-up: the mean over the
 * learning rates of min(loss(lr), loss_0) − min_lr loss(lr), a diverged run counting as
 * loss_0. NaN when no run of the row finished. */
double plot_lr_sensitivity(const double *final, const double *loss0, int n)
{
    double best = INFINITY, sum = 0.0;
    int count = 0;
    for (int l = 0; l < n; l++) if (isfinite(final[l]) && final[l] < best) best = final[l];
    if (!isfinite(best)) return NAN;
    for (int l = 0; l < n; l++) {
        if (isnan(loss0[l])) continue;
        const double x = isfinite(final[l]) ? fmin(final[l], loss0[l]) : loss0[l];
        sum += x - best;
        count++;
    }
    return count ? sum / count : NAN;
}

static int by_lr(const void *a, const void *b)
{
    const double x = (*(const runs_row_t *const *)a)->lr, y = (*(const runs_row_t *const *)b)->lr;
    return (x > y) - (x < y);
}

void atlas_half_one(const runs_row_t *const *r, int n, atlas_half_t *h)
{
    const runs_row_t **s = malloc((size_t)(n ? n : 1) * sizeof *s);
    double *f = malloc((size_t)(n ? n : 1) * sizeof *f), *z = malloc((size_t)(n ? n : 1) * sizeof *z);
    *h = (atlas_half_t){.runs = n, .sens = NAN, .half = NAN, .best = NAN, .best_lr = NAN};
    if (!s || !f || !z) { free(s); free(f); free(z); return; }
    memcpy(s, r, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, by_lr);   // the rates in order: the best's tie goes to the lower
    for (int l = 0; l < n; l++) {
        f[l] = s[l]->final_loss;   // NaN when diverged (runs_row)
        z[l] = s[l]->loss_init;
        h->diverged += s[l]->diverged;
        if (isfinite(f[l]) && !(f[l] >= h->best)) { h->best = f[l]; h->best_lr = s[l]->lr; }
        if (s[l]->trains && s[l]->lr > h->top) h->top = s[l]->lr;
    }
    h->sens = plot_lr_sensitivity(f, z, n);   // Wortsman et al. 2023, the figure's definition
    free(s); free(f); free(z);
}

int atlas_seed_tops(const runs_row_t *const *r, int n, const unsigned long *seeds, int nk,
                    double best_lr, double *tops, double *half)
{
    *half = NAN;
    const runs_row_t **one = malloc((size_t)(n ? n : 1) * sizeof *one);
    double *f = malloc((size_t)(nk ? nk : 1) * sizeof *f);
    if (!one || !f) { free(one); free(f); return 1; }
    int nf = 0;
    for (int k = 0; k < nk; k++) {   // each seed alone, and the seeds' losses at best_lr
        int m = 0;
        tops[k] = NAN;
        for (int i = 0; i < n; i++)
            if (r[i]->seed == seeds[k]) {
                one[m++] = r[i];
                if (r[i]->lr == best_lr) f[nf++] = r[i]->final_loss;
            }
        if (!m) continue;
        atlas_half_t h;
        atlas_half_one(one, m, &h);
        tops[k] = h.top;
    }
    double mean;
    size_t used;
    if (nf) fit_mean_ci(f, 1, (size_t)nf, &mean, half, &used);   // mean is the line's best
    free(one);
    free(f);
    return 0;
}

const char *atlas_needs(const atlas_half_t *warm, const atlas_half_t *cold)
{
    if (!(warm->top > 0) && !(cold->top > 0)) return "trains at no lr";   // e.g. deep Post-LN
    return warm->top > cold->top ? "yes" : "no";
}

/* The rows of r[0..n) at seed k into out; their count. */
static int of_seed(const runs_row_t *const *r, int n, unsigned long k, const runs_row_t **out)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (r[i]->seed == k) out[m++] = r[i];
    return m;
}

/* A half over several seeds: each lr's mean final loss over the seeds (runs_grid, the seeds its
 * replicates; NaN when a seed diverged there) and mean loss at init, read as one run each by
 * atlas_half_one under the one trains rule; diverged counts every seed's runs. 0, 1 with why. */
static int half_means(const runs_row_t *const *r, int n, atlas_half_t *h, char *why, size_t len)
{
    runs_table_t t = {malloc((size_t)(n ? n : 1) * sizeof(runs_row_t)), n};
    runs_row_t *mean = malloc((size_t)(n ? n : 1) * sizeof *mean);
    const runs_row_t **p = malloc((size_t)(n ? n : 1) * sizeof *p);
    runs_grid_t g = {0};
    static const char *const AXES[] = {"lr"};
    int rc = !t.rows || !mean || !p;
    if (rc) snprintf(why, len, "out of memory");
    for (int i = 0; !rc && i < n; i++) t.rows[i] = *r[i];
    if (!rc) rc = runs_grid(&t, AXES, 1, "final_loss", &g, why, len);
    for (int c = 0; !rc && c < g.n; c++) {
        const runs_cell_t *cell = &g.cells[c];
        double z = 0.0;
        int div = 0;
        for (int j = 0; j < cell->n; j++) {
            z += t.rows[cell->rows[j]].loss_init;
            div |= t.rows[cell->rows[j]].diverged;
        }
        mean[c] = t.rows[cell->rows[0]];
        mean[c].loss_init = z / cell->n;
        mean[c].final_loss = div ? NAN : cell->mean;
        mean[c].diverged = 0;   // counted below over every seed's runs
        runs_outcome(&mean[c], ATLAS_TRAINS);
        p[c] = &mean[c];
    }
    if (!rc) {
        atlas_half_one(p, g.n, h);
        h->runs = n;
        h->diverged = 0;
        for (int i = 0; i < n; i++) h->diverged += r[i]->diverged;
    }
    runs_grid_free(&g);
    free(t.rows); free(mean); free(p);
    return rc;
}

int atlas_row_stats(const runs_row_t *const *w, int nw, const runs_row_t *const *c, int nc,
                    atlas_row_t *row, char *why, size_t len)
{
    const int n = nw + nc;
    unsigned long *seed = malloc((size_t)(n ? n : 1) * sizeof *seed);
    const runs_row_t **buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    atlas_half_t *pw = malloc((size_t)(n ? n : 1) * sizeof *pw), *pc = malloc((size_t)(n ? n : 1) * sizeof *pc);
    double *sw = malloc((size_t)(n ? n : 1) * sizeof *sw), *sc = malloc((size_t)(n ? n : 1) * sizeof *sc);
    int rc = !seed || !buf || !pw || !pc || !sw || !sc, ns = 0;
    if (rc) snprintf(why, len, "out of memory");
    for (int i = 0; !rc && i < n; i++) {   // the seeds, in order
        const unsigned long k = (i < nw ? w[i] : c[i - nw])->seed;
        int j = ns;
        while (j > 0 && seed[j - 1] > k) j--;
        if (j > 0 && seed[j - 1] == k) continue;
        memmove(seed + j + 1, seed + j, (size_t)(ns - j) * sizeof *seed);
        seed[j] = k;
        ns++;
    }
    for (int k = 0; !rc && k < ns; k++) {   // each seed alone
        atlas_half_one(buf, of_seed(w, nw, seed[k], buf), &pw[k]);
        atlas_half_one(buf, of_seed(c, nc, seed[k], buf), &pc[k]);
        sw[k] = pw[k].sens;
        sc[k] = pc[k].sens;
    }
    row->seeds = ns;
    if (!rc && ns == 1) {
        row->warm = pw[0];
        row->cold = pc[0];
    } else if (!rc) {
        rc = half_means(w, nw, &row->warm, why, len) || half_means(c, nc, &row->cold, why, len);
        size_t m;
        fit_mean_ci(sw, 1, (size_t)ns, &row->warm.sens, &row->warm.half, &m);   // NaN skipped
        fit_mean_ci(sc, 1, (size_t)ns, &row->cold.sens, &row->cold.half, &m);
    }
    row->needs = nw && nc ? atlas_needs(&row->warm, &row->cold) : "—";
    row->agree = ns;
    if (!rc && nw && nc)
        for (int k = 0; k < ns; k++) row->agree -= strcmp(atlas_needs(&pw[k], &pc[k]), row->needs) != 0;
    free(seed); free(buf); free(pw); free(pc); free(sw); free(sc);
    return rc;
}

/* The atlas's axes, not a variant's keys: the scheme's keys, the depth, the rate, the seed, and
 * the warm-up, which pairs a line's two halves. */
static const char *const AXES[] = {"scheme", "model.layers", "model.dec_layers", "train.lr",
                                   "train.warmup", "init.seed"};

/* What the atlas is made of: its training rows, each one's variant, and the axes' values. */
typedef struct {
    runs_table_t t;                /* the training runs' rows (runs_outcome at ATLAS_TRAINS) */
    char (*variant)[200];          /* (t.n) the row's variant: the other keys that differ */
    char (*scheme)[32];            /* (ns) in the scheme table's order */
    int *depth, *warm, *cold;      /* depths up; warm-ups > 1 down; ≤ 1 up */
    int ns, nd, nw, nc;
} atlas_axes_t;

static void axes_free(atlas_axes_t *x)
{
    runs_free(&x->t);
    free(x->variant); free(x->scheme); free(x->depth); free(x->warm); free(x->cold);
}

/* Add v to vals[*n] when absent, keeping them sorted (up, or down when down). */
static void add_sorted(int *vals, int *n, int v, int down)
{
    for (int i = 0; i < *n; i++)
        if (vals[i] == v) return;
    int j = *n;
    while (j > 0 && (down ? vals[j - 1] < v : vals[j - 1] > v)) { vals[j] = vals[j - 1]; j--; }
    vals[j] = v;
    (*n)++;
}

/* The rows and axes of set's training runs; 0, or 1 with why. */
static int axes_read(const plot_set_t *set, atlas_axes_t *x, char *why, size_t len)
{
    memset(x, 0, sizeof *x);
    const size_t n = (size_t)(set->n ? set->n : 1);
    int *m = malloc(n * sizeof *m);
    x->t.rows = malloc(n * sizeof *x->t.rows);
    x->variant = malloc(n * sizeof *x->variant);
    x->scheme = malloc(n * sizeof *x->scheme);
    x->depth = malloc(n * sizeof *x->depth);
    x->warm = malloc(n * sizeof *x->warm);
    x->cold = malloc(n * sizeof *x->cold);
    if (!m || !x->t.rows || !x->variant || !x->scheme || !x->depth || !x->warm || !x->cold) {
        free(m);
        snprintf(why, len, "out of memory");
        return 1;
    }
    for (int i = 0; i < set->n; i++)   // training runs only: a probe has no outcome
        if (set->runs[i].nsteps > 0) m[x->t.n++] = i;
    plot_diff_t d;
    plot_diff(set, m, x->t.n, 0, &d);
    for (size_t k = 0; k < sizeof AXES / sizeof AXES[0]; k++) plot_diff_drop(&d, AXES[k]);
    for (int i = 0; i < x->t.n; i++) {
        runs_row_t *r = &x->t.rows[i];
        runs_row(set, m[i], r);
        runs_outcome(r, ATLAS_TRAINS);   // the one rule, the atlas's threshold
        if (d.n) plot_key(&d, r->run, 0, x->variant[i], sizeof x->variant[0]);
        else x->variant[i][0] = '\0';
        int s = 0;
        while (s < x->ns && strcmp(x->scheme[s], r->scheme)) s++;
        if (s == x->ns) snprintf(x->scheme[x->ns++], sizeof x->scheme[0], "%s", r->scheme);
        add_sorted(x->depth, &x->nd, r->L, 0);
        if (r->warmup > 1) add_sorted(x->warm, &x->nw, r->warmup, 1);
        else add_sorted(x->cold, &x->nc, r->warmup, 0);
    }
    free(m);
    plot_sort_schemes(x->scheme, NULL, x->ns);
    if (!x->t.n) { snprintf(why, len, "no training runs"); return 1; }
    return 0;
}

/* The warm-up w in words as run rows of x have it ("warm-up 20", "no warm-up"). */
static void warmup_words(const atlas_axes_t *x, int w, char *buf, size_t len)
{
    for (int i = 0; i < x->t.n; i++)
        if (x->t.rows[i].warmup == w) {
            plot_item_text(x->t.rows[i].run, "train.warmup", 0, buf, len);
            return;
        }
    buf[0] = '\0';
}

/* Append line (s, L, variant v, warm-up w / cold c, −1: none) to a when it has runs. */
static int add_line(const atlas_axes_t *x, int s, int L, const char *v, int w, int c,
                    atlas_table_t *a, const runs_row_t **buf, char *why, size_t len)
{
    int nw = 0, nc = 0;
    for (int half = 0; half < 2; half++)
        for (int i = 0; i < x->t.n; i++) {
            const runs_row_t *r = &x->t.rows[i];
            if (strcmp(r->scheme, x->scheme[s]) || r->L != L || strcmp(x->variant[i], v)) continue;
            if (!half && r->warmup == w) buf[nw++] = r;
            if (half && r->warmup == c) buf[nw + nc++] = r;
        }
    if (!nw && !nc) return 0;   // a warm-up this variant was not run at
    atlas_row_t *row = &a->rows[a->n];
    memset(row, 0, sizeof *row);
    snprintf(row->scheme, sizeof row->scheme, "%s", x->scheme[s]);
    row->L = L;
    char ww[64] = "", cw[64] = "";
    if (x->nw > 1) warmup_words(x, w, ww, sizeof ww);
    if (x->nc > 1) warmup_words(x, c, cw, sizeof cw);
    const char *part[3] = {v, ww, cw};
    for (int k = 0; k < 3; k++)
        if (part[k][0]) {
            const size_t at = strlen(row->label);
            snprintf(row->label + at, sizeof row->label - at, "%s%s", at ? ", " : "", part[k]);
        }
    if (atlas_row_stats(buf, nw, buf + nw, nc, row, why, len)) return 1;
    if (row->seeds > a->seeds) a->seeds = row->seeds;
    a->n++;
    return 0;
}

int atlas_build(const plot_set_t *set, atlas_table_t *a, char *why, size_t len)
{
    atlas_axes_t x;
    memset(a, 0, sizeof *a);
    int rc = axes_read(set, &x, why, len);
    const size_t n = (size_t)(x.t.n ? x.t.n : 1);
    const runs_row_t **buf = rc ? NULL : malloc(n * sizeof *buf);
    const int lines = (x.nw ? x.nw : 1) * (x.nc ? x.nc : 1);   // per scheme, depth, variant
    a->rows = rc ? NULL : malloc(n * (size_t)lines * sizeof *a->rows);
    if (!rc && (!buf || !a->rows)) { snprintf(why, len, "out of memory"); rc = 1; }
    for (int s = 0; !rc && s < x.ns; s++)
        for (int d = 0; !rc && d < x.nd; d++)
            for (int i = 0; !rc && i < x.t.n; i++) {   // the variants as met
                const runs_row_t *r = &x.t.rows[i];
                if (strcmp(r->scheme, x.scheme[s]) || r->L != x.depth[d]) continue;
                int seen = 0;
                for (int j = 0; j < i && !seen; j++)
                    seen = !strcmp(x.t.rows[j].scheme, r->scheme) && x.t.rows[j].L == r->L &&
                           !strcmp(x.variant[j], x.variant[i]);
                for (int w = 0; !seen && !rc && w < (x.nw ? x.nw : 1); w++)
                    for (int c = 0; !rc && c < (x.nc ? x.nc : 1); c++)
                        rc = add_line(&x, s, x.depth[d], x.variant[i], x.nw ? x.warm[w] : -1,
                                      x.nc ? x.cold[c] : -1, a, buf, why, len);
            }
    free(buf);
    axes_free(&x);
    if (rc) atlas_free_table(a);
    return rc;
}

void atlas_free_table(atlas_table_t *a)
{
    free(a->rows);
    a->rows = NULL;
    a->n = 0;
}

/* x with digits decimals, "nan" for NaN (never "-nan"). */
static void fixed(char *buf, size_t len, double x, int digits)
{
    if (isnan(x)) snprintf(buf, len, "nan");
    else snprintf(buf, len, "%.*f", digits, x);
}

/* A half's Markdown cells: sensitivity ("0.123" or "0.123 ± 0.045"), best ("0.123 (0.001)"),
 * top ("0.001" or "none"). */
static void half_cells(const atlas_half_t *h, char *sens, char *best, char *top, size_t len)
{
    char m[24], e[24];
    fixed(m, sizeof m, h->sens, 3);
    fixed(e, sizeof e, h->half, 3);
    if (isfinite(h->half)) snprintf(sens, len, "%s ± %s", m, e);
    else snprintf(sens, len, "%s", m);
    if (isfinite(h->best)) snprintf(best, len, "%.3f (%g)", h->best, h->best_lr);
    else snprintf(best, len, "-");
    if (h->top > 0) snprintf(top, len, "%g", h->top);
    else snprintf(top, len, "none");
}

static void print_markdown(const atlas_table_t *a, FILE *out)
{
    fprintf(out, "| scheme | L | LR sensitivity, warm-up | none | best loss, warm-up (lr) | none (lr) "
                 "| largest lr that trains, warm-up / none | diverged, warm-up / none | needs warm-up |\n"
                 "|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < a->n; i++) {
        const atlas_row_t *r = &a->rows[i];
        char sw[80], bw[80], tw[80], sc[80], bc[80], tc[80], agree[48] = "";
        half_cells(&r->warm, sw, bw, tw, sizeof sw);
        half_cells(&r->cold, sc, bc, tc, sizeof sc);
        if (r->seeds > 1) snprintf(agree, sizeof agree, " (%d of %d seeds)", r->agree, r->seeds);
        fprintf(out, "| %s%s%s%s | %d | %s | %s | %s | %s | %s / %s | %d / %d | %s%s |\n",
                r->scheme, r->label[0] ? " (" : "", r->label, r->label[0] ? ")" : "", r->L, sw, sc,
                bw, bc, tw, tc, r->warm.diverged, r->cold.diverged, r->needs, agree);
    }
    if (a->seeds > 1)
        fprintf(out, "\n%d seeds a cell: LR sensitivity as mean ± 95 %% half-width over the seeds "
                     "(Student t); best loss, largest lr that trains and needs warm-up from each "
                     "lr's mean final loss over the seeds (an lr where a seed diverged counts as "
                     "diverged); diverged counts every seed's runs; (k of n seeds): how many seeds "
                     "alone give the same verdict.\n", a->seeds);
}

/* A real for TSV: %.17g, "nan" for NaN. */
static void tsv_real(FILE *out, double x)
{
    if (isnan(x)) fprintf(out, "\tnan");
    else fprintf(out, "\t%.17g", x);
}

static void print_tsv(const atlas_table_t *a, FILE *out)
{
    fprintf(out, "scheme\tL\tvariant\tsens_warmup\tsens_warmup_half\tsens_none\tsens_none_half\t"
                 "best_warmup\tbest_lr_warmup\tbest_none\tbest_lr_none\ttop_lr_warmup\ttop_lr_none\t"
                 "diverged_warmup\tdiverged_none\truns_warmup\truns_none\tneeds_warmup\tseeds\t"
                 "agree\n");
    for (int i = 0; i < a->n; i++) {
        const atlas_row_t *r = &a->rows[i];
        fprintf(out, "%s\t%d\t%s", r->scheme, r->L, r->label);
        tsv_real(out, r->warm.sens); tsv_real(out, r->warm.half);
        tsv_real(out, r->cold.sens); tsv_real(out, r->cold.half);
        tsv_real(out, r->warm.best); tsv_real(out, r->warm.best_lr);
        tsv_real(out, r->cold.best); tsv_real(out, r->cold.best_lr);
        tsv_real(out, r->warm.top); tsv_real(out, r->cold.top);
        fprintf(out, "\t%d\t%d\t%d\t%d\t%s\t%d\t%d\n", r->warm.diverged, r->cold.diverged,
                r->warm.runs, r->cold.runs, r->needs, r->seeds, r->agree);
    }
}

void atlas_print(const atlas_table_t *a, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV) print_tsv(a, out);
    else print_markdown(a, out);
}

int study_atlas_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                      size_t errlen)
{
    atlas_table_t a;
    if (atlas_build(set, &a, err, errlen)) return 1;
    atlas_print(&a, fmt, out);
    atlas_free_table(&a);
    return 0;
}
