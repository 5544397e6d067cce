/* plot_indicators.c — warm-up's explanations against the atlas's outcome (docs/curvature.md
 * "The experiment"; issue 32): the figure warmup_indicators, a panel per indicator, x the
 * outcome of each cell without warm-up (trains, needs warm-up, stuck, diverged), y the indicator,
 * a point per cell coloured by depth (Okabe & Ito), and each panel's ROC AUC of "fails" against
 * "trains" (Mann–Whitney). Drawn when the set holds the indicators' runs
 * (experiments/warmup_explained.ini: the runs with curvature rows) and the atlas's outcome runs of
 * the same cells (experiments/atlas.ini).
 *
 * The cell of a run is read from its config, never its name (key_of_run: the atlas's zip of
 * placement, norm and init, the depth, the lr; warm-up apart; one seed per cell, a seeded atlas
 * refused); the outcome is the table of runs' (report/runs.h) at the published table's 3.2
 * nats. The indicators are scripts/warmup_explained.py's (read_indicators; Admin's from
 * atlas_init's probes, read_admin, when those runs are in the set).
 * tests/test_indicators_plot.py checks every point drawn against the script's --cells table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/runs.h"

#define IND_UPTO 20          /* the first updates an indicator looks at (the script's upto) */
#define IND_TRAINS 3.2       /* a run trains below this final loss (nats): the threshold of the
                                published table (atlas_table.py, docs/design.md §6d) */

struct plot_ind {
    double xiong;            /* ‖∂L/∂W²‖_F of the last layer at update 1 */
    double eos, eos0;        /* peak active η·λ_max(P⁻¹H) / threshold at updates 1…20, at 0 */
    double kosson;           /* max ‖ΔW‖_F/‖W‖_F over updates ≤ 20, layers, matrices */
    double update_rms;       /* max RMS of m̂/(√v̂ + ε) over updates 2…20 and layers */
    double deepnet;          /* ‖F(x, θ_1) − F(x, θ_0)‖ */
};

/* ------------------------------------------------------------------ the cell of a run */

typedef struct {
    char scheme[160];
    int L;
    double lr;
} cell_key_t;

/* The cell of a run, from its resolved config, never its name (docs/design.md §6d): the scheme
 * as the atlas's zip sets it, "{placement}-{norm}-{init.scheme}" (the script's cell text), the
 * depth and the learning rate; warm-up and seed are the caller's. */
static void key_of_run(const plot_run_t *r, cell_key_t *k)
{
    const config_t *c = &r->cfg;
    snprintf(k->scheme, sizeof k->scheme, "%s-%s-%s", config_placement_name(c->model.placement),
             config_norm_name(c->model.norm), config_init_name(c->init.scheme));
    k->L = c->model.layers;
    k->lr = c->train.lr;
}

/* Whether run r is Theorem 1's reference scheme: Pre-LN with LayerNorm, Xavier-normal. */
static int is_pre_ln(const plot_run_t *r)
{
    return r->cfg.model.placement == PLACEMENT_PRE && r->cfg.model.norm == NORM_LAYERNORM &&
           r->cfg.init.scheme == INIT_XAVIER_NORMAL;
}

static int key_cmp(const cell_key_t *a, const cell_key_t *b)
{
    const int s = strcmp(a->scheme, b->scheme);
    if (s) return s;
    if (a->L != b->L) return a->L < b->L ? -1 : 1;
    return a->lr < b->lr ? -1 : a->lr > b->lr;
}

/* ------------------------------------------------------------------ reading the indicators */

/* Which columns of attribute "param" of /train/<dset> are one of names[] (NULL-terminated);
 * calloc'd K flags, or NULL. */
static int *param_cols(h5io_file_t *f, const char *prefix, const char *dset,
                       const char *const *names, size_t K)
{
    char path[512];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/train/%s", prefix, dset);
    char **got = h5io_read_attr_strings(f, path, "param", &n);
    int *use = calloc(K + 1, sizeof *use);
    for (size_t c = 0; use && got && c < n && c < K; c++)
        for (int j = 0; names[j]; j++) use[c] |= !strcmp(got[c], names[j]);
    h5io_free_names(got, (int)n);
    return use;
}

/* max over the rows lo ≤ step ≤ hi of active/threshold (finite ratios; NaN when none). */
static double eos_peak(const double *step, const double *act, const double *thr, size_t n,
                       double lo, double hi)
{
    double best = NAN;
    for (size_t i = 0; i < n; i++) {
        const double q = act[i] / thr[i];
        if (step[i] >= lo && step[i] <= hi && isfinite(q) && !(q <= best)) best = q;
    }
    return best;
}

/* The largest finite value of the rows i of x (rows × width) with lo ≤ step[i] ≤ hi, over the
 * columns use flags (NULL: all); NaN when none. */
static double rows_max(const double *x, const double *step, size_t rows, size_t width,
                       const int *use, double lo, double hi)
{
    double best = NAN;
    for (size_t i = 0; i < rows; i++) {
        if (!(step[i] >= lo && step[i] <= hi)) continue;
        for (size_t c = 0; c < width; c++) {
            const double v = x[i * width + c];
            if ((!use || use[c]) && isfinite(v) && !(v <= best))
                best = v;
        }
    }
    return best;
}

/* Theorem 1's quantity: grad_fro[0, L−1, w2], L the cell's depth. */
static double read_xiong(h5io_file_t *f, const char *prefix, int L)
{
    size_t rows, nl, K;
    double *g = h5io_read_train(f, prefix, "grad_fro", &rows, &nl, &K);
    static const char *const W2[] = {"w2", NULL};
    int *use = g ? param_cols(f, prefix, "grad_fro", W2, K) : NULL;
    double v = NAN;
    for (size_t c = 0; use && rows && L >= 1 && (size_t)L <= nl && c < K; c++)
        if (use[c]) { v = g[((size_t)L - 1) * K + c]; break; }
    free(use);
    free(g);
    return v;
}

/* Kosson's ‖ΔW‖/‖W‖ over the weight matrices and DeepNet's model update at update 1. */
static void read_updates(h5io_file_t *f, const char *prefix, plot_ind_t *d)
{
    size_t rows, nl, K, nu, w, nm, w2;
    double *rel = h5io_read_train(f, prefix, "update_rel", &rows, &nl, &K);
    if (!rel) return;   // the script's `if "update_rel" in t`
    double *us = h5io_read_train(f, prefix, "update_step", &nu, &w, &w2);
    double *mu = h5io_read_train(f, prefix, "model_update", &nm, &w, &w2);
    static const char *const MATRICES[] = {"wq", "wk", "wv", "wo", "w1", "w2", NULL};
    int *use = param_cols(f, prefix, "update_rel", MATRICES, K);
    int *wide = use ? calloc(nl * K + 1, sizeof *wide) : NULL;   // (layer, param) flags
    for (size_t c = 0; wide && c < nl * K; c++) wide[c] = use[c % K];
    if (us && wide) d->kosson = rows_max(rel, us, rows < nu ? rows : nu, nl * K, wide, -INFINITY,
                                         IND_UPTO);
    if (us && mu && nm && nu && us[0] == 1.0) d->deepnet = mu[0];
    free(wide);
    free(use);
    free(rel);
    free(us);
    free(mu);
}

void plot_ind_load(h5io_file_t *f, const char *prefix, plot_run_t *r)
{
    size_t nc, n1, n2, w, w2;
    double *cs = h5io_read_train(f, prefix, "curv_step", &nc, &w, &w2);
    if (!cs) return;   // no curvature rows: not an indicators' run
    plot_ind_t *d = calloc(1, sizeof *d);
    if (!d) { free(cs); return; }
    d->xiong = d->eos = d->eos0 = d->kosson = d->update_rms = d->deepnet = NAN;
    cell_key_t k;
    key_of_run(r, &k);
    d->xiong = read_xiong(f, prefix, k.L);
    double *act = h5io_read_train(f, prefix, "precond_max_active", &n1, &w, &w2);
    double *thr = h5io_read_train(f, prefix, "stability_threshold", &n2, &w, &w2);
    if (act && thr) {
        const size_t n = nc < n1 ? (nc < n2 ? nc : n2) : (n1 < n2 ? n1 : n2);
        d->eos = eos_peak(cs, act, thr, n, 1, IND_UPTO);
        d->eos0 = eos_peak(cs, act, thr, n, 0, 0);
    }
    free(act);
    free(thr);
    free(cs);
    read_updates(f, prefix, d);
    size_t ns, nr, L;
    double *step = h5io_read_train(f, prefix, "step", &ns, &w, &w2);
    double *rms = h5io_read_train(f, prefix, "update_rms", &nr, &L, &w2);
    if (step && rms) d->update_rms = rows_max(rms, step, ns < nr ? ns : nr, L * w2, NULL, 2,
                                              IND_UPTO);
    free(step);
    free(rms);
    r->ind = d;
}

void plot_ind_free(plot_ind_t *d) { free(d); }

/* ------------------------------------------------------------------ cells and outcomes */

enum { OUT_TRAINS, OUT_NEEDS, OUT_STUCK, OUT_DIVERGED, OUT_N };
static const char *const OUT_TIC[OUT_N] = {"trains", "needs warm-up", "stuck", "diverged"};

enum { I_LR, I_XIONG, I_RATIO, I_ADMIN, I_EOS, I_EOS0, I_RADAM, I_KOSSON, I_RMS, I_DEEPNET, I_N };

/* The indicators in the script's order: name, and what it is (gnuplot enhanced text, short
 * enough for a panel's title; the subtitle cites the papers). */
static const struct { const char *name, *what; } IND[I_N] = {
    {"lr", "the learning rate: the baseline"},
    {"xiong", "‖∂L/∂W²‖ of the last layer, update 1"},
    {"xiong_ratio", "xiong over Pre-LN's (Theorem 1)"},
    {"admin", "output change at initialisation"},
    {"eos", "peak active ratio, upd. 1–20"},
    {"eos0", "active ratio at update 0"},
    {"radam", "1 − r₅ (RAdam's rectifier)"},
    {"kosson", "max ‖ΔW‖/‖W‖, updates 1–20"},
    {"update_rms", "max update RMS, updates 2–20"},
    {"deepnet", "‖F(x, θ₁) − F(x, θ₀)‖"},
};

typedef struct {
    cell_key_t key;
    int out;                 /* OUT_* */
    int ind;                 /* the indicators' run (index into the set) */
    double v[I_N];
} cell_t;

/* trains | stuck | diverged (OUT_*): the table of runs' outcome (report/runs.h) at the
 * published table's IND_TRAINS nats. */
static int outcome(const plot_set_t *set, int i)
{
    runs_row_t row;
    runs_row(set, i, &row);
    runs_outcome(&row, IND_TRAINS);
    return row.diverged ? OUT_DIVERGED : row.trains ? OUT_TRAINS : OUT_STUCK;
}

/* The outcome run of key k with warm-up (warm) or without: its index, or −1; −2 with why when
 * there are two (two atlases in one set, or a seeded atlas: one outcome per cell). */
static int outcome_run(const plot_set_t *set, const cell_key_t *k, int warm, char *why, size_t len)
{
    int found = -1;
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        cell_key_t x;
        if (r->ind || !r->loss || (r->cfg.train.warmup > 1) != warm) continue;
        key_of_run(r, &x);
        if (key_cmp(&x, k)) continue;
        if (found >= 0) {
            const plot_run_t *f = &set->runs[found];
            if (f->cfg.init.seed != r->cfg.init.seed)
                snprintf(why, len, "a seeded atlas (%s, L %d, lr %g at seeds %lu and %lu): the "
                         "warm-up study takes one outcome run per cell; give one seed's runs",
                         k->scheme, k->L, k->lr, f->cfg.init.seed, r->cfg.init.seed);
            else
                snprintf(why, len, "two outcome runs of one cell (%s, %s): give one atlas",
                         f->origin, r->origin);
            return -2;
        }
        found = i;
    }
    return found;
}

/* Admin's output change of (scheme, L): the mean over its seeds of the first atlas_init run of
 * that scheme and depth (by config; the script's read_admin); NaN when the set has none. */
static double admin_of(const plot_set_t *set, const cell_key_t *k, int *any)
{
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || !r->probe->output_change) continue;
        *any = 1;
        cell_key_t x;
        key_of_run(r, &x);
        if (strcmp(x.scheme, k->scheme) || x.L != k->L) continue;
        double s = 0.0;
        int n = 0;
        for (int j = 0; j < r->probe->S; j++)
            if (!isnan(r->probe->output_change[j])) { s += r->probe->output_change[j]; n++; }
        return n ? s / n : NAN;
    }
    return NAN;
}

/* RAdam's rₜ (Liu et al. 2020a, Alg. 2); NaN while ρₜ ≤ 4 (the script's radam_rect). */
static double radam_rect(double beta2, int t)
{
    const double rho_inf = 2.0 / (1.0 - beta2) - 1.0, b2t = pow(beta2, t);
    const double rho = rho_inf - 2.0 * t * b2t / (1.0 - b2t);
    if (rho <= 4.0) return NAN;
    return sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho));
}

/* The indicators of cell c from its run r (the script's read_indicators). */
static void cell_values(const plot_run_t *r, cell_t *c)
{
    const plot_ind_t *d = r->ind;
    const double r5 = radam_rect(r->cfg.train.beta2, 5);
    c->v[I_LR] = c->key.lr;
    c->v[I_XIONG] = d->xiong;
    c->v[I_RATIO] = NAN;
    c->v[I_ADMIN] = NAN;
    c->v[I_EOS] = d->eos;
    c->v[I_EOS0] = d->eos0;
    c->v[I_RADAM] = isfinite(r5) ? 1.0 - r5 : 1.0;   // un-adapted at t = 5: 1
    c->v[I_KOSSON] = d->kosson;
    c->v[I_RMS] = d->update_rms;
    c->v[I_DEEPNET] = d->deepnet;
}

static int cell_cmp(const void *a, const void *b)
{
    return key_cmp(&((const cell_t *)a)->key, &((const cell_t *)b)->key);
}

/* The cells in both the indicators' runs and the atlas's (sorted by key), *admin whether the
 * set holds atlas_init's probes; the count, or −1 with a note in why (a cell twice). */
static int collect_cells(const plot_set_t *set, cell_t *cells, int *admin, char *why, size_t len)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].ind) continue;
        cell_t c = {.ind = i};
        key_of_run(&set->runs[i], &c.key);
        for (int j = 0; j < n; j++)
            if (!key_cmp(&cells[j].key, &c.key)) {
                snprintf(why, len, "two indicator runs of one cell (%s, %s)",
                         set->runs[cells[j].ind].origin, set->runs[i].origin);
                return -1;
            }
        const int cold = outcome_run(set, &c.key, 0, why, len);
        const int warm = cold == -2 ? -2 : outcome_run(set, &c.key, 1, why, len);
        if (cold == -2 || warm == -2) return -1;
        if (cold < 0) continue;
        c.out = outcome(set, cold);
        if (c.out != OUT_TRAINS && warm >= 0 && outcome(set, warm) == OUT_TRAINS)
            c.out = OUT_NEEDS;
        cell_values(&set->runs[i], &c);
        c.v[I_ADMIN] = admin_of(set, &c.key, admin);
        cells[n++] = c;
    }
    qsort(cells, (size_t)n, sizeof *cells, cell_cmp);
    for (int j = 0; j < n; j++) {   // Theorem 1's ratio: over Pre-LN's at the same depth and lr
        for (int i = 0; i < set->n; i++) {
            const plot_run_t *r = &set->runs[i];
            if (!r->ind || !is_pre_ln(r) || r->cfg.model.layers != cells[j].key.L ||
                r->cfg.train.lr != cells[j].key.lr)
                continue;
            const double ref = r->ind->xiong;
            if (ref != 0 && isfinite(ref)) cells[j].v[I_RATIO] = cells[j].v[I_XIONG] / ref;
        }
    }
    return n;
}

/* ------------------------------------------------------------------ the figure */

/* Mann–Whitney's AUC of indicator k, "fails" (stuck, diverged, needs warm-up) against "trains",
 * over the cells where it is finite: P(f > o) + ½ P(f = o) over every pair; NaN when a group is
 * empty. */
static double auc_of(const cell_t *c, int n, int k)
{
    double wins = 0.0, pairs = 0.0;
    for (int i = 0; i < n; i++) {
        if (c[i].out == OUT_TRAINS || !isfinite(c[i].v[k])) continue;
        for (int j = 0; j < n; j++) {
            if (c[j].out != OUT_TRAINS || !isfinite(c[j].v[k])) continue;
            wins += c[i].v[k] > c[j].v[k] ? 1.0 : c[i].v[k] == c[j].v[k] ? 0.5 : 0.0;
            pairs += 1.0;
        }
    }
    return pairs > 0 ? wins / pairs : NAN;
}

/* x of cell i: its outcome, jittered by its rank j among the cells of that outcome (the same in
 * every panel): ±0.3 by the golden-ratio sequence, deterministic. */
static double jitter_x(const cell_t *c, int i)
{
    int j = 0;
    for (int k = 0; k < i; k++) j += c[k].out == c[i].out;
    const double u = fmod((j + 1) * 0.6180339887498949, 1.0);
    return c[i].out + 0.6 * (u - 0.5);
}

/* $cells ("k L lr scheme": which cell row k is, for a reader of the script) and $ind_<name>
 * ("k outcome x y L") per indicator drawn (admin only with atlas_init's runs); has[k][d]
 * whether depth d has a point in panel k. */
static void write_blocks(sbuf_t *s, const cell_t *c, int n, int admin, const double *depth,
                         int nd, char (*has)[PLOT_QUAL_COUNT], plot_range_t *y)
{
    sbuf_printf(s, "$cells << EOD\n");
    for (int i = 0; i < n; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s", c[i].key.scheme);
        for (char *p = name; *p; p++)
            if ((unsigned char)*p <= 0x20 || *p == 0x7f) *p = '?';   // one field, one line
        sbuf_printf(s, "%d %d %.17g %s\n", i, c[i].key.L, c[i].key.lr, name);
    }
    sbuf_printf(s, "EOD\n");
    for (int k = 0; k < I_N; k++) {
        if (k == I_ADMIN && !admin) continue;
        sbuf_printf(s, "$ind_%s << EOD\n", IND[k].name);
        plot_range_init(&y[k]);
        for (int i = 0; i < n; i++) {
            if (!isfinite(c[i].v[k])) continue;
            int d = 0;
            while (d < nd && depth[d] != c[i].key.L) d++;
            has[k][d % PLOT_QUAL_COUNT] = 1;
            plot_range_add(&y[k], c[i].v[k]);
            sbuf_printf(s, "%d %d %.6f %.17g %d\n", i, c[i].out, jitter_x(c, i), c[i].v[k],
                        c[i].key.L);
        }
        sbuf_printf(s, "EOD\n");
    }
}

/* The panel of indicator k. */
static void panel(sbuf_t *s, const cell_t *c, int n, int k, const double *depth, int nd,
                  const char *has, const plot_range_t *y)
{
    char name[64], t[400];
    plot_enh(IND[k].name, name, sizeof name);
    const double auc = auc_of(c, n, k);
    char a[64] = "AUC –";
    if (isfinite(auc)) snprintf(a, sizeof a, "AUC %.2f", auc);
    snprintf(t, sizeof t, "%s: %s\n%s", name, a, IND[k].what);
    plot_set(s, "title", t);
    sbuf_printf(s, "set title @F70\n");
    const int log = plot_range_log(&y[k]);
    plot_axis(s, "y", &y[k], log, 0.08, NAN, NAN);
    if (!log)   // about five tics: a short panel
        sbuf_printf(s, "set format y '%%g'\nset ytics %g\n", plot_tic_step(y[k].hi > y[k].lo
                    ? y[k].hi - y[k].lo : 0.2 * fabs(y[k].hi), 5));
    sbuf_printf(s, "set xtics (");
    for (int o = 0; o < OUT_N; o++)
        sbuf_printf(s, "%s\"%s\" %d", o ? ", " : "", OUT_TIC[o], o);
    sbuf_printf(s, ") rotate by 40 right @F70\n");
    sbuf_printf(s, "plot 1/0 notitle");
    for (int d = 0; d < nd; d++)
        if (has[d % PLOT_QUAL_COUNT])
            sbuf_printf(s, ", $ind_%s using ($5 == %d ? $3 : 1/0):4 with points pt 7 ps 1.1 "
                           "lc rgb '%s' notitle", IND[k].name, (int)depth[d],
                        palette_qualitative(d));
    sbuf_printf(s, "\n");
}

int plot_fig_warmup_indicators(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    cell_t *c = malloc((size_t)(set->n ? set->n : 1) * sizeof *c);
    if (!c) return 0;
    char why[1200] = "";
    int admin = 0;
    const int n = collect_cells(set, c, &admin, why, sizeof why);
    snprintf(name, len, "warmup_indicators%s%s", n < 0 ? ": " : "", n < 0 ? why : "");
    if (n <= 0) { free(c); return n < 0 ? -1 : 0; }   // no atlas's runs in the set: no figure
    double depth[PLOT_QUAL_COUNT];
    int nd = 0, count[OUT_N] = {0};
    for (int i = 0; i < n; i++) {
        plot_intern_value(depth, &nd, c[i].key.L);   // more than 8 depths: the colours repeat
        count[c[i].out]++;
    }
    qsort(depth, (size_t)nd, sizeof *depth, plot_cmp_double);
    char has[I_N][PLOT_QUAL_COUNT] = {{0}};
    plot_range_t y[I_N];
    write_blocks(s, c, n, admin, depth, nd, has, y);
    char title[300], sub[1400], none[200] = "";
    int panels = 0;
    for (int k = 0; k < I_N; k++) {   // an indicator no cell has a finite value of: no panel
        if (k == I_ADMIN && !admin) continue;
        if (!plot_range_empty(&y[k])) { panels++; continue; }
        const size_t u = strlen(none);
        snprintf(none + u, sizeof none - u, "%s%s", u ? ", " : "", IND[k].name);
    }
    if (!panels) {
        free(c);
        snprintf(name, len, "warmup_indicators: no indicator has a finite value in any cell");
        return -1;
    }
    snprintf(title, sizeof title, "Warm-up's explanations: each indicator against the outcome");
    snprintf(sub, sizeof sub, "%d cells (scheme × depth × lr) without warm-up: %d train, %d need "
             "warm-up, %d stuck, %d diverged (x, points jittered)\ntrains: final loss < %g nats; "
             "needs warm-up: a failure whose warm-up run trains; definitions: "
             "scripts/warmup\\_explained.py\nactive ratio: η·λ_{max}(P⁻¹H) on the coordinates "
             "Adam has measured over 2(1+β_1)/(1−β_1); update RMS: of m̂/(√v̂ + ε)\nXiong et al. "
             "2020; Liu et al. 2020b (admin); Cohen et al. 2022 (eos); Liu et al. 2020a (radam); "
             "Kosson et al. 2024;\nWortsman et al. 2023b (update RMS); Wang et al. 2022 (deepnet)\n"
             "AUC: P(indicator of a failing cell > of a training cell) + ½P(tie), where finite; "
             "bootstrap intervals: the script's table",
             n, count[OUT_TRAINS], count[OUT_NEEDS], count[OUT_STUCK], count[OUT_DIVERGED],
             IND_TRAINS);
    if (none[0]) {   // said, not drawn as an empty frame (nor as gnuplot's "set ytics inf")
        char esc[240];
        plot_enh(none, esc, sizeof esc);
        const size_t u = strlen(sub);
        snprintf(sub + u, sizeof sub - u, "\nno panel: no finite value in any cell: %s", esc);
    }
    sbuf_t keys = {0};
    for (int d = 0; d < nd; d++) {
        plot_style_t st = {.dt = 1, .pt = 7, .lw = 1.0};
        snprintf(st.color, sizeof st.color, "%s", palette_qualitative(d));
        snprintf(st.key, sizeof st.key, "L = %g", depth[d]);
        plot_keyentry(&keys, &st, "points");
    }
    const int cols = (panels + 1) / 2, rows = panels > 1 ? 2 : 1;
    const int krows = plot_key_rows(nd, 7);
    plot_grid_t g;
    plot_grid(&g, rows, cols, plot_title_lines(sub), krows);
    g.top -= 0.012;
    g.below += 0.05;   // the slanted outcome tics
    plot_begin(s, title, sub);
    sbuf_printf(s, "set grid ytics\nunset key\nset tics @F70\nset xrange [-0.6:%d.6]\n"
                   "unset ylabel\n", OUT_N - 1);
    for (int k = 0, p = 0; k < I_N; k++) {
        if ((k == I_ADMIN && !admin) || plot_range_empty(&y[k])) continue;
        plot_panel(s, &g, p);
        panel(s, c, n, k, depth, nd, has[k], y);
        p++;
    }
    plot_end(s, &g, krows, &keys);
    sbuf_free(&keys);
    free(c);
    return 1;
}
