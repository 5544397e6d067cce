/* plot_columns.c — a run's columns beyond its training curve, read with the set by
 * report/plot.c's loader into plot_run_t (plot_internal.h): the training dynamics per layer
 * (docs/design.md §6g; drawn by study/dynamics_figure.c), the indicators of warm-up's
 * explanations from the run's first updates (docs/curvature.md "Indicators": the per-run
 * numbers the warm-up study, study/warmup_explained.h, makes its cells of) and the curvature
 * estimators' columns (docs/estimators.md; drawn by study/estimators_figure.c). Reading only:
 * each study's statistics and figures are in study/. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/h5io.h"
#include "report/plot_internal.h"

/* ------------------------------------------------------------------ the dynamics */

/* /train/<name> of the run at prefix as rows × width (the axes after the first together). */
static double *read_rows(h5io_file_t *f, const char *prefix, const char *name, size_t *rows,
                         size_t *width)
{
    size_t d1, d2;
    double *x = h5io_read_train(f, prefix, name, rows, &d1, &d2);
    *width = d1 * d2;
    return x;
}

/* Per row and layer: sqrt(Σ_c x²) over the columns (norm = 1), mean over the columns
 * picked by use (norm = 0; use NULL: all), or the max (norm = 2); NaN entries skipped. */
static double *per_layer(const double *x, size_t rows, int L, int K, const int *use, int norm)
{
    double *y = malloc((rows * (size_t)L + 1) * sizeof(double));
    for (size_t i = 0; y && i < rows * (size_t)L; i++) {
        double acc = 0.0;
        int n = 0;
        for (int c = 0; c < K; c++) {
            const double v = x[i * K + c];
            if (isnan(v) || (use && !use[c])) continue;
            acc = norm == 1 ? acc + v * v : norm == 2 ? fmax(acc, v) : acc + v;
            n++;
        }
        y[i] = !n ? NAN : norm == 1 ? sqrt(acc) : norm == 2 ? acc : acc / n;
    }
    return y;
}

/* Which names of attribute `label` of /train/<name> start with one of the prefixes. */
static int *pick_names(h5io_file_t *f, const char *prefix, const char *name, const char *label,
                       const char *const *starts, int K)
{
    char path[512];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/train/%s", prefix, name);
    char **names = h5io_read_attr_strings(f, path, label, &n);
    int *use = calloc((size_t)K + 1, sizeof(int));
    for (size_t c = 0; use && names && c < n && (int)c < K; c++)
        for (int s = 0; starts[s]; s++)
            use[c] |= !strncmp(names[c], starts[s], strlen(starts[s]));
    h5io_free_names(names, (int)n);
    return use;
}

static int *param_cols(h5io_file_t *f, const char *prefix, const char *dset,
                       const char *const *names, size_t K);

void plot_dyn_load(h5io_file_t *f, const char *prefix, plot_run_t *r)
{
    plot_dyn_t *d = calloc(1, sizeof *d);
    if (!d) return;
    r->dyn = d;
    size_t w, n2;
    d->max_logit = read_rows(f, prefix, "max_attn_logit", &d->nsteps, &w);
    d->min_entropy = read_rows(f, prefix, "min_attn_entropy", &n2, &w);
    if (!d->max_logit || !d->min_entropy || n2 < d->nsteps) d->nsteps = d->max_logit ? n2 : 0;
    d->probe_step = read_rows(f, prefix, "probe_step", &d->nprobe, &w);
    d->update_step = read_rows(f, prefix, "update_step", &d->nupdate, &w);
    d->L = r->probe ? r->probe->ax.L : r->cfg.model.layers + config_dec_layers(&r->cfg) *
                                            (r->cfg.model.arch == ARCH_ENCDEC);
    const int L = d->L;
    double *x;
    size_t rows;
    static const char *const WEIGHTS[] = {"w", "cw", NULL}, *const SELF[] = {"self", NULL};
    static const char *const W2[] = {"w2", NULL};
    if (d->probe_step && (x = read_rows(f, prefix, "grad_fro", &rows, &w)) && rows >= d->nprobe) {
        d->grad = per_layer(x, d->nprobe, L, (int)(w / L), NULL, 1);   // ‖∇(layer)‖_F
        int *use = param_cols(f, prefix, "grad_fro", W2, w / L);
        if (use) d->grad_w2 = per_layer(x, d->nprobe, L, (int)(w / L), use, 0);   // the one column
        free(use);
        free(x);
    }
    d->wall = NAN;
    if ((x = read_rows(f, prefix, "time", &rows, &w)) && rows && w == 1) d->wall = x[rows - 1];
    free(x);
    if (d->probe_step && (x = read_rows(f, prefix, "attn_entropy", &rows, &w)) && rows >= d->nprobe) {
        int *use = pick_names(f, prefix, "attn_entropy", "head", SELF, (int)(w / L));
        d->entropy = per_layer(x, d->nprobe, L, (int)(w / L), use, 0);  // mean over self heads
        d->logit = NULL;
        free(use);
        free(x);
        if ((x = read_rows(f, prefix, "attn_max_logit", &rows, &w)) && rows >= d->nprobe)
            d->logit = per_layer(x, d->nprobe, L, (int)(w / L), NULL, 2);
        free(x);
    }
    if (d->update_step && (x = read_rows(f, prefix, "update_rel", &rows, &w)) && rows >= d->nupdate) {
        int *use = pick_names(f, prefix, "update_rel", "param", WEIGHTS, (int)(w / L));
        d->update = per_layer(x, d->nupdate, L, (int)(w / L), use, 0);   // mean over matrices
        free(use);
        free(x);
    }
}

void plot_dyn_free(plot_dyn_t *d)
{
    if (!d) return;
    free(d->max_logit); free(d->min_entropy); free(d->probe_step); free(d->update_step);
    free(d->grad); free(d->update); free(d->entropy); free(d->logit); free(d->grad_w2);
    free(d);
}

/* ------------------------------------------------------------------ the indicators */

#define IND_UPTO 20          /* the first updates an indicator looks at */

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
    if (!rel) return;   // no update rows: no Kosson, no DeepNet
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

/* eos_c: the peak over updates 1…20 of λ_c/(2/η), the critical sharpness against the one-step
 * threshold 2/η (docs/design.md, "Which threshold applies to which quantity"), η the lr of the
 * next update. Adam's stability_threshold is 2(1 + β₁)/((1 − β₁)·η), so 2/η is it times
 * (1 − β₁)/(1 + β₁): the same η the eos ratio uses. NaN without the rows or for another
 * optimizer. */
static void read_critical(h5io_file_t *f, const char *prefix, const config_t *cfg,
                          const double *cs, size_t nc, const double *thr, size_t nt,
                          plot_ind_t *d)
{
    size_t n1, w, w2;
    double *lc = h5io_read_train(f, prefix, "critical_sharpness", &n1, &w, &w2);
    if (!lc) return;
    d->critical = 1;
    const double b1 = cfg->train.beta1;
    const int adam = cfg->train.optimizer == OPT_ADAM || cfg->train.optimizer == OPT_ADAMW;
    double *two = thr && adam ? malloc((nt + 1) * sizeof *two) : NULL;
    for (size_t i = 0; two && i < nt; i++) two[i] = thr[i] * (1.0 - b1) / (1.0 + b1);   // 2/η
    size_t n = nc < n1 ? nc : n1;
    if (two) d->eos_c = eos_peak(cs, lc, two, n < nt ? n : nt, 1, IND_UPTO);
    free(two);
    free(lc);
}

void plot_ind_load(h5io_file_t *f, const char *prefix, plot_run_t *r)
{
    size_t nc, n1, n2, w, w2;
    double *cs = h5io_read_train(f, prefix, "curv_step", &nc, &w, &w2);
    if (!cs) return;   // no curvature rows: not an indicators' run
    plot_ind_t *d = calloc(1, sizeof *d);
    if (!d) { free(cs); return; }
    d->xiong = d->eos = d->eos0 = d->eos_c = d->kosson = d->update_rms = d->deepnet = NAN;
    d->xiong = read_xiong(f, prefix, r->cfg.model.layers);
    double *act = h5io_read_train(f, prefix, "precond_max_active", &n1, &w, &w2);
    double *thr = h5io_read_train(f, prefix, "stability_threshold", &n2, &w, &w2);
    if (act && thr) {
        const size_t n = nc < n1 ? (nc < n2 ? nc : n2) : (n1 < n2 ? n1 : n2);
        d->eos = eos_peak(cs, act, thr, n, 1, IND_UPTO);
        d->eos0 = eos_peak(cs, act, thr, n, 0, 0);
    }
    read_critical(f, prefix, &r->cfg, cs, nc, thr, thr ? n2 : 0, d);
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

/* ------------------------------------------------------------------ the estimators */

/* /train/<name> of the run into *out when it has at least c->n rows (c->n shrinks to the
 * common rows of a live file's columns); *d = its row width. NULL when absent. */
static void read_col(h5io_file_t *f, const char *prefix, const char *name, plot_est_t *e,
                     double **out, size_t *d)
{
    size_t k, d1, d2;
    *out = h5io_read_train(f, prefix, name, &k, &d1, &d2);
    if (!*out) return;
    if (k < e->n) e->n = k;
    if (d) *d = d1 * d2;
}

void plot_est_load(h5io_file_t *f, const char *prefix, plot_run_t *r)
{
    size_t n, d1, d2, w = 0;
    double *step = h5io_read_train(f, prefix, "curv_step", &n, &d1, &d2);
    if (!step || !n) { free(step); return; }
    plot_est_t *e = calloc(1, sizeof *e);
    if (!e) { free(step); return; }
    e->step = step;
    e->n = n;
    read_col(f, prefix, "hessian_max", e, &e->hmax, NULL);
    read_col(f, prefix, "precond_max", e, &e->pmax, NULL);
    read_col(f, prefix, "precond_max_active", e, &e->active, NULL);
    read_col(f, prefix, "stability_threshold", e, &e->threshold, NULL);
    read_col(f, prefix, "curv_passes", e, &e->passes, NULL);
    read_col(f, prefix, "critical_sharpness", e, &e->crit, NULL);
    read_col(f, prefix, "critical_quadratic", e, &e->quad, NULL);
    read_col(f, prefix, "update_curvature", e, &e->ucurv, NULL);
    read_col(f, prefix, "grad_precond_curvature", e, &e->bai, NULL);
    read_col(f, prefix, "critical_passes", e, &e->cpasses, NULL);
    read_col(f, prefix, "hessian_trace", e, &e->trace, NULL);
    read_col(f, prefix, "hessian_block_trace", e, &e->btrace, &e->blocks);
    read_col(f, prefix, "density_nodes", e, &e->nodes, &w);
    read_col(f, prefix, "density_weights", e, &e->weights, NULL);
    read_col(f, prefix, "precond_density_nodes", e, &e->pnodes, NULL);
    read_col(f, prefix, "precond_density_weights", e, &e->pweights, NULL);
    if (e->nodes && e->weights && e->pnodes && e->pweights) {
        e->probes = r->cfg.probe.density_probes;   // [probe][m]: m = the row's width / probes
        e->iters = e->probes > 0 ? (int)(w / (size_t)e->probes) : 0;
    }
    if (!e->hmax || !e->active || !e->threshold || (!e->crit && !e->trace && !e->probes)) {
        plot_est_free(e);   // no estimator beside the exact values
        return;
    }
    r->est = e;
}

void plot_est_free(plot_est_t *e)
{
    if (!e) return;
    double *a[] = {e->step, e->hmax, e->pmax, e->active, e->threshold, e->passes, e->crit,
                   e->quad, e->ucurv, e->bai, e->cpasses, e->trace, e->btrace, e->nodes,
                   e->weights, e->pnodes, e->pweights};
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++) free(a[k]);
    free(e);
}
