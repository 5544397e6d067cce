/* plot_indicators.c — a run's indicators of warm-up's explanations (docs/curvature.md
 * "Indicators"), read with the set (report/plot.c's loader) from the run's first updates: the
 * per-run numbers the warm-up study (study/warmup_explained.h) makes its cells of. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"

#define IND_UPTO 20          /* the first updates an indicator looks at */

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

