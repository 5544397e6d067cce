/* estimators_table.h — the curvature estimators against the exact values over training
 * (docs/estimators.md; docs/design.md §10, "Estimators at scale"): for each estimator its
 * relative error |e − x|/|x| against its exact reference over every curvature row of a set of
 * runs, as median and maximum, and its cost in Hessian-vector products or forward passes; the
 * verdicts on 2/η; per run, whether λ_c follows the exact λ_max (Spearman's ρ). Markdown
 * (`stability table estimators FILE.h5...`). */
#ifndef STABILITY_STUDY_ESTIMATORS_TABLE_H
#define STABILITY_STUDY_ESTIMATORS_TABLE_H

#include <stddef.h>
#include <stdio.h>
#include "config/config.h"
#include "report/plot.h"

typedef struct {
    double median, max;   /* of the relative errors; NaN when count = 0 */
    size_t count;         /* pairs with both values finite and the reference non-zero */
} est_err_t;

/* The relative errors |est_k − ref_k|/|ref_k| of n pairs, those with both values finite and
 * ref_k ≠ 0: their median and maximum (GSL statistics). scratch (n). */
void est_relerr(const double *est, const double *ref, size_t n, double *scratch, est_err_t *out);

/* Spearman's rank correlation of the pairs (x_k, y_k) with both finite (GSL; ties get their
 * mean rank), their count into *count; NaN below 3 pairs. scratch (4n). */
double est_spearman(const double *x, const double *y, size_t n, double *scratch, size_t *count);

/* s of Ĥ = s·P⁻¹H, Bai et al.'s Adam preconditioned Hessian with its momentum factor (as
 * optim_bai_diag): (1 − β₁)/(1 + β₁) for the Adam family, 1/(1 + μ) for sgd; 2/η = s times
 * stability_threshold. */
double est_hhat_scale(const config_t *cfg);

/* The largest node of SLQ nodes, weights (probes, iters) with a non-zero weight (NaN when
 * none): the density's estimate of λ_max. */
double est_slq_top(const double *nodes, const double *weights, int probes, int iters);

/* Print the tables of the runs of set with estimator columns (report/plot_internal.h's
 * plot_est) to out: Markdown, or with tsv a header line and a row per line for each table
 * (full precision, NaN as "nan"). Returns the runs it read, 0 when none has them. */
int est_table_print(const plot_set_t *set, int tsv, FILE *out);

#endif
