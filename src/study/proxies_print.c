/* proxies_print.c — the size study's tables (study/proxies.h; docs/proxies.md): Markdown for the
 * docs, or TSV with a row per context, arm and width. */
#include <math.h>
#include <string.h>
#include "measure/fit.h"
#include "study/proxies.h"

/* "m ± h" with prec decimals; "–" when m is NaN, no "± h" when h is. */
static const char *pm(double m, double h, int prec, char *buf, size_t len)
{
    if (!isfinite(m)) snprintf(buf, len, "–");
    else if (!isfinite(h)) snprintf(buf, len, "%.*f", prec, m);
    else snprintf(buf, len, "%.*f ± %.*f", prec, m, prec, h);
    return buf;
}

/* The geometric mean of lrs given as log10 values v[0..n) (NaN skipped) with its 95 %
 * interval: "a [lo, hi]"; "–" when none. */
static const char *lr_interval(const double *v, int n, char *buf, size_t len)
{
    double m, h;
    size_t used;
    fit_mean_ci(v, 1, (size_t)n, &m, &h, &used);
    if (!used) snprintf(buf, len, "–");
    else if (!isfinite(h)) snprintf(buf, len, "%.2g", pow(10.0, m));
    else snprintf(buf, len, "%.2g [%.2g, %.2g]", pow(10.0, m), pow(10.0, m - h), pow(10.0, m + h));
    return buf;
}

static const char *verdict(double m, double h)
{
    if (!isfinite(m) || !isfinite(h)) return "–";
    return m - h > 0 ? "up" : m + h < 0 ? "down" : "not resolved";
}

/* An arm's name: its context, when there are several, then its remedies. */
static const char *label(const size_study_t *st, int c, int a, char *buf, size_t len)
{
    if (st->ctx[c][0]) snprintf(buf, len, "%s, %s", st->ctx[c], st->arm[a]);
    else snprintf(buf, len, "%s", st->arm[a]);
    return buf;
}

/* The lrs arm a of context c ran: the least, the largest, how many. */
static int grid(const size_study_t *st, int c, int a, double *lo, double *hi)
{
    int n = 0;
    for (int l = 0; l < st->nl; l++) {
        int any = 0;
        for (int w = 0; w < st->nw; w++)
            for (int k = 0; k < st->nk; k++) any |= st->ran[SIZE_IX(st, c, a, w, l, k)];
        if (!any) continue;
        if (!n) *lo = st->lr[l];
        *hi = st->lr[l];
        n++;
    }
    return n;
}

/* Per seed the number `what` of arm a at width w: 's' sensitivity, 'b' best lr (log10). */
static void per_seed(const size_study_t *st, int c, int a, int w, char what, double *v)
{
    for (int k = 0; k < st->nk; k++) {
        int edge;
        v[k] = what == 's' ? size_sensitivity(st, c, a, w, k)
                           : log10(size_best_lr(st, c, a, w, k, &edge));
    }
}

/* A table's header: the columns first (" | "-joined text, ncols of them), a column per width,
 * then last (ntail columns, "" for none), and its rule. */
static void header(FILE *out, const char *first, int ncols, const size_study_t *st, int widths,
                   const char *last, int ntail)
{
    fprintf(out, "| %s |", first);
    for (int w = 0; widths && w < st->nw; w++) fprintf(out, " d = %g |", st->width[w]);
    fprintf(out, "%s\n|", last);
    for (int i = 0; i < ncols + (widths ? st->nw : 0) + ntail; i++) fputs("---|", out);
    fputc('\n', out);
}

static void table_sensitivity(const size_study_t *st, FILE *out)
{
    char b[256], g[64];
    fprintf(out, "### LR sensitivity per width\n\nMean over the lr grid of min(final loss, initial "
            "loss) − best final loss (nats; a diverged run counts as its initial loss), mean ± 95 %% "
            "half-width over %d seeds; (k div): diverged runs.\n\n", st->nk);
    header(out, "arm | lr grid", 2, st, 1, "", 0);
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++) {
            if (st->rep[c][a] < 0) continue;
            double lo = NAN, hi = NAN;
            const int n = grid(st, c, a, &lo, &hi);
            fprintf(out, "| %s | %g … %g (%d) |", label(st, c, a, b, sizeof b), lo, hi, n);
            for (int w = 0; w < st->nw; w++) {
                if (!proxies_arm_has(st, c, a, w)) { fputs(" – |", out); continue; }
                double m, h;
                size_t used;
                size_sensitivity_ci(st, c, a, w, &m, &h, &used);
                int div = 0;
                for (int l = 0; l < st->nl; l++)
                    for (int k = 0; k < st->nk; k++) {
                        const size_t x = SIZE_IX(st, c, a, w, l, k);
                        div += st->ran[x] && st->diverged[x];
                    }
                fprintf(out, " %s", pm(m, h, 3, g, sizeof g));
                if (div) fprintf(out, " (%d div)", div);
                fputs(" |", out);
            }
            fputc('\n', out);
        }
}

static void table_order(const size_study_t *st, FILE *out)
{
    char b[256], g[64];
    fputs("\n### Ordering of the widths by LR sensitivity\n\nWidths from the least to the most "
          "sensitive (means); Δ = the largest width's sensitivity minus the smallest's, paired by "
          "seed, mean ± 95 % half-width: 'up' when the interval lies above 0 (more sensitive as "
          "the model grows, Wortsman et al.'s finding without QK-norm), 'down' below, else 'not "
          "resolved'.\n\n", out);
    header(out, "arm | order (least sensitive first) | Δ largest − smallest | trend", 4, st, 0, "", 0);
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++) {
            if (st->rep[c][a] < 0) continue;
            int ws[SIZE_WIDTHS], n = 0;
            double mean[SIZE_WIDTHS], h;
            size_t used;
            for (int w = 0; w < st->nw; w++)
                if (proxies_arm_has(st, c, a, w)) {
                    size_sensitivity_ci(st, c, a, w, &mean[n], &h, &used);
                    ws[n++] = w;
                }
            for (int i = 1; i < n; i++)   // insertion sort by mean: stable, ties by width
                for (int j = i; j > 0 && mean[j] < mean[j - 1]; j--) {
                    const double t = mean[j]; mean[j] = mean[j - 1]; mean[j - 1] = t;
                    const int u = ws[j]; ws[j] = ws[j - 1]; ws[j - 1] = u;
                }
            fprintf(out, "| %s | ", label(st, c, a, b, sizeof b));
            int lo = st->nw, hi = -1;
            for (int i = 0; i < n; i++) {
                fprintf(out, "%s%g", i ? " < " : "", st->width[ws[i]]);
                if (ws[i] < lo) lo = ws[i];
                if (ws[i] > hi) hi = ws[i];
            }
            double m = NAN;
            h = NAN;
            if (n > 1) {
                double x[SIZE_SEEDS], y[SIZE_SEEDS];
                per_seed(st, c, a, hi, 's', x);
                per_seed(st, c, a, lo, 's', y);
                proxies_paired(x, y, st->nk, &m, &h);
            }
            fprintf(out, " | %s | %s |\n", pm(m, h, 3, g, sizeof g), verdict(m, h));
        }
}

/* Arm r of context c, an arm with remedies, paired with the arm of the same parametrization
 * without any: the sensitivity without minus with, per width. */
static void table_remedies(const size_study_t *st, FILE *out)
{
    char b[256], g[64];
    int any = 0;
    for (int c = 0; c < st->nc; c++)
        for (int r = 0; r < st->na; r++)
            for (int a = 0; a < st->na; a++) {
                if (st->rep[c][a] < 0 || st->rep[c][r] < 0 || st->rem[a][0] || !st->rem[r][0]
                    || st->mup[a] != st->mup[r]) continue;
                if (!any++) {
                    fputs("\nWhat a remedy changes: the sensitivity without it minus with it, "
                          "paired by seed (mean ± 95 % half-width; > 0: the remedy lowers it).\n\n", out);
                    header(out, "arm | + remedy", 2, st, 1, "", 0);
                }
                fprintf(out, "| %s | %s |", label(st, c, a, b, sizeof b), st->rem[r]);
                for (int w = 0; w < st->nw; w++) {
                    if (!proxies_arm_has(st, c, a, w) || !proxies_arm_has(st, c, r, w)) {
                        fputs(" – |", out);
                        continue;
                    }
                    double x[SIZE_SEEDS], y[SIZE_SEEDS], m, h;
                    per_seed(st, c, a, w, 's', x);
                    per_seed(st, c, r, w, 's', y);
                    proxies_paired(x, y, st->nk, &m, &h);
                    fprintf(out, " %s |", pm(m, h, 3, g, sizeof g));
                }
                fputc('\n', out);
            }
}

/* Per seed the spread and the exponent of arm a's best lr over its widths. */
static void spread_k(const size_study_t *st, int c, int a, double *sp, double *k)
{
    for (int q = 0; q < st->nk; q++) {
        sp[q] = size_best_lr_seed_spread(st, c, a, q);
        k[q] = proxies_best_lr_exponent(st, c, a, q);
    }
}

static void table_best_lr(const size_study_t *st, FILE *out)
{
    char b[256], g[64], h2[64];
    fputs("\n### The best learning rate against width\n\nPer seed the grid's best lr refined by the "
          "parabola through it and its neighbours in log lr (* : the best is the grid's edge in "
          "some seed); geometric mean over the seeds with its 95 % interval. Spread: max − min of "
          "log10 lr* over the widths (decades), per seed; exponent k of lr* ∝ d^k (least squares "
          "over the widths, per seed); both mean ± 95 % half-width over the seeds. μP's claim: "
          "spread and k near 0.\n\n", out);
    header(out, "arm", 1, st, 1, " spread (decades) | k |", 2);
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++) {
            if (st->rep[c][a] < 0) continue;
            fprintf(out, "| %s |", label(st, c, a, b, sizeof b));
            for (int w = 0; w < st->nw; w++) {
                if (!proxies_arm_has(st, c, a, w)) { fputs(" – |", out); continue; }
                double v[SIZE_SEEDS];
                int edge = 0, e;
                per_seed(st, c, a, w, 'b', v);
                for (int k = 0; k < st->nk; k++) {
                    size_best_lr(st, c, a, w, k, &e);
                    edge |= e && isfinite(v[k]);
                }
                fprintf(out, " %s%s |", lr_interval(v, st->nk, g, sizeof g), edge ? " *" : "");
            }
            double sp[SIZE_SEEDS], k[SIZE_SEEDS], m1, s1, m2, s2;
            size_t n;
            spread_k(st, c, a, sp, k);
            fit_mean_ci(sp, 1, (size_t)st->nk, &m1, &s1, &n);
            if (!n) m1 = NAN;
            fit_mean_ci(k, 1, (size_t)st->nk, &m2, &s2, &n);
            if (!n) m2 = NAN;
            fprintf(out, " %s | %s |\n", pm(m1, s1, 2, g, sizeof g), pm(m2, s2, 2, h2, sizeof h2));
        }
    int any = 0;
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++) {
            const int p = st->partner[a];
            if (st->mup[a] || p < 0 || st->rep[c][a] < 0 || st->rep[c][p] < 0) continue;
            if (!any++) {
                fputs("\nStandard minus μP, paired by seed (mean ± 95 % half-width; spread > 0: "
                      "μP's best lr moves less across the widths).\n\n", out);
                header(out, "arms | Δ spread (decades) | Δ k", 3, st, 0, "", 0);
            }
            double sa[SIZE_SEEDS], ka[SIZE_SEEDS], sb[SIZE_SEEDS], kb[SIZE_SEEDS], m1, h1, m2, h2v;
            spread_k(st, c, a, sa, ka);
            spread_k(st, c, p, sb, kb);
            proxies_paired(sa, sb, st->nk, &m1, &h1);
            proxies_paired(ka, kb, st->nk, &m2, &h2v);
            fprintf(out, "| %s vs μP | %s | %s |\n", label(st, c, a, b, sizeof b),
                    pm(m1, h1, 2, g, sizeof g), pm(m2, h2v, 2, h2, sizeof h2));
        }
}

/* "geometric mean [95 %] (> top in n of m)" of arm a's failing lr at width w. */
static void fail_cell(const size_study_t *st, int c, int a, int w, FILE *out)
{
    double v[SIZE_SEEDS], lo = NAN, top = NAN;
    int ok = 0, above = 0, seeds = 0;
    for (int k = 0; k < st->nk; k++) {
        int up;
        const double f = proxies_fail_lr(st, c, a, w, k, PROXIES_FAIL_MARGIN, &up);
        v[k] = NAN;
        if (!isfinite(f)) continue;
        seeds++;
        if (up) above++;
        else { v[k] = log10(f); ok++; }
    }
    grid(st, c, a, &lo, &top);
    char g[64];
    fprintf(out, " %s", ok ? lr_interval(v, st->nk, g, sizeof g) : "");
    if (above) fprintf(out, "%s(> %g in %d of %d)", ok ? " " : "", top, above, seeds);
    fputs(" |", out);
}

static void table_fail(const size_study_t *st, FILE *out)
{
    char b[256], g[64];
    fprintf(out, "\n### Where each width fails, and the next width up\n\nlr_fail: the lr above the "
            "best at which the final loss first lies more than %g nats above the seed's best "
            "(capped at the initial loss, diverged = initial loss), interpolated in log lr; "
            "geometric mean over the seeds with its 95 %% interval ('> lr': no lr of the grid "
            "fails in some seed, left out of the fit). Fit: log10 lr_fail = c + k·log10 d over "
            "every (width, seed), GSL least squares; the next width's lr_fail with the 95 %% "
            "interval of the line and the 95 %% prediction interval of one run.\n\n",
            PROXIES_FAIL_MARGIN);
    header(out, "arm", 1, st, 1, " k ± 95 % | next width: lr_fail [line] [one run] |", 2);
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++) {
            if (st->rep[c][a] < 0) continue;
            fprintf(out, "| %s |", label(st, c, a, b, sizeof b));
            for (int w = 0; w < st->nw; w++)
                if (proxies_arm_has(st, c, a, w)) fail_cell(st, c, a, w, out);
                else fputs(" – |", out);
            proxies_fit_t f;
            if (!proxies_fail_fit(st, c, a, PROXIES_FAIL_MARGIN, &f)) {
                fputs(" – | too few widths fail |\n", out);
                continue;
            }
            fprintf(out, " %s | d = %g: %.2g [%.2g, %.2g] [%.2g, %.2g] (%d points",
                    pm(f.k, f.k_half, 2, g, sizeof g), f.d_next, pow(10.0, f.y),
                    pow(10.0, f.y - f.h_mean), pow(10.0, f.y + f.h_mean),
                    pow(10.0, f.y - f.h_pred), pow(10.0, f.y + f.h_pred), f.n);
            if (f.above) fprintf(out, ", %d above the grid left out", f.above);
            fputs(") |\n", out);
        }
}

/* One row per arm and width, a column per lr: the peak logit's median over the seeds (logit)
 * or the final loss's mean ± 95 % half-width; "×" when a seed diverged there. */
static void table_per_lr(const size_study_t *st, int logit, FILE *out)
{
    char b[256], g[64];
    if (logit)
        fputs("\n### Peak max |attention logit|\n\nmax over the updates of /train/max_attn_logit, "
              "median over the seeds (× : a seed diverged at that lr).\n\n| arm | d |", out);
    else
        fputs("\n### Final loss against lr (their Fig. 1)\n\nMean final validation loss over the "
              "seeds ± 95 % half-width (× : a seed diverged).\n\n| arm | d |", out);
    for (int l = 0; l < st->nl; l++) fprintf(out, " %g |", st->lr[l]);
    fputs("\n|---|---|", out);
    for (int l = 0; l < st->nl; l++) fputs("---|", out);
    fputc('\n', out);
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++)
            for (int w = 0; w < st->nw; w++) {
                if (st->rep[c][a] < 0 || !proxies_arm_has(st, c, a, w)) continue;
                fprintf(out, "| %s | %g |", label(st, c, a, b, sizeof b), st->width[w]);
                for (int l = 0; l < st->nl; l++) {
                    double h, lo, hi;
                    int div, ran;
                    const double m = size_final_ci(st, c, a, w, l, &h, &div, &ran);
                    if (!ran) { fputs(" |", out); continue; }
                    if (logit) {
                        const double md = size_logit_median(st, c, a, w, l, &lo, &hi);
                        if (isfinite(md)) fprintf(out, " %.3g", md);
                        else fputs(" –", out);
                    } else
                        fprintf(out, " %s", pm(m, h, 3, g, sizeof g));
                    fprintf(out, "%s |", div ? " ×" : "");
                }
                fputc('\n', out);
            }
}

/* The geometric mean of the finite log10 values v[0..n) and its 95 % interval (NaN when none;
 * lo, hi NaN with one). */
static void geo(const double *v, int n, double *m, double *lo, double *hi)
{
    double mean, h;
    size_t used;
    fit_mean_ci(v, 1, (size_t)n, &mean, &h, &used);
    *m = used ? pow(10.0, mean) : NAN;
    *lo = used ? pow(10.0, mean - h) : NAN;
    *hi = used ? pow(10.0, mean + h) : NAN;
}

/* One TSV row per context, arm and width: that width's numbers, then its arm's. */
static void print_tsv(const size_study_t *st, FILE *out)
{
    fputs("context\tarm\td\tsens\tsens_half\tseeds\tdiverged\tbest_lr\tbest_lr_lo\tbest_lr_hi"
          "\tbest_edge\tfail_lr\tfail_lr_lo\tfail_lr_hi\tfail_above\tspread\tspread_half\tk"
          "\tk_half\tfail_k\tfail_k_half\tnext_d\tnext_fail_lr\n", out);
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++) {
            if (st->rep[c][a] < 0) continue;
            double sp[SIZE_SEEDS], k[SIZE_SEEDS], ms, hs, mk, hk;
            size_t n;
            spread_k(st, c, a, sp, k);
            fit_mean_ci(sp, 1, (size_t)st->nk, &ms, &hs, &n);
            if (!n) ms = NAN;
            fit_mean_ci(k, 1, (size_t)st->nk, &mk, &hk, &n);
            if (!n) mk = NAN;
            proxies_fit_t f;
            const int fit = proxies_fail_fit(st, c, a, PROXIES_FAIL_MARGIN, &f);
            for (int w = 0; w < st->nw; w++) {
                if (!proxies_arm_has(st, c, a, w)) continue;
                double s, hsens, b[SIZE_SEEDS], fl[SIZE_SEEDS], bm, blo, bhi, fm, flo, fhi;
                size_t seeds;
                int div = 0, edge = 0, above = 0;
                size_sensitivity_ci(st, c, a, w, &s, &hsens, &seeds);
                per_seed(st, c, a, w, 'b', b);
                for (int q = 0; q < st->nk; q++) {
                    int e, up;
                    size_best_lr(st, c, a, w, q, &e);
                    edge |= e && isfinite(b[q]);
                    fl[q] = log10(proxies_fail_lr(st, c, a, w, q, PROXIES_FAIL_MARGIN, &up));
                    if (up) { above++; fl[q] = NAN; }
                    for (int l = 0; l < st->nl; l++) {
                        const size_t x = SIZE_IX(st, c, a, w, l, q);
                        div += st->ran[x] && st->diverged[x];
                    }
                }
                geo(b, st->nk, &bm, &blo, &bhi);
                geo(fl, st->nk, &fm, &flo, &fhi);
                fprintf(out, "%s\t%s\t%g\t%.17g\t%.17g\t%zu\t%d\t%.17g\t%.17g\t%.17g\t%d\t%.17g"
                        "\t%.17g\t%.17g\t%d\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%g\t%.17g\n",
                        st->ctx[c], st->arm[a], st->width[w], s, hsens, seeds, div, bm, blo, bhi,
                        edge, fm, flo, fhi, above, ms, hs, mk, hk, fit ? f.k : NAN,
                        fit ? f.k_half : NAN, f.d_next, fit ? pow(10.0, f.y) : NAN);
            }
        }
}

void proxies_print(const size_study_t *st, study_format_t fmt, FILE *out)
{
    if (fmt == STUDY_TSV) { print_tsv(st, out); return; }
    table_sensitivity(st, out);
    table_order(st, out);
    table_remedies(st, out);
    table_best_lr(st, out);
    table_fail(st, out);
    table_per_lr(st, 1, out);
    table_per_lr(st, 0, out);
}
