/* proxies.h — the size study's statistics and tables (docs/proxies.md; Wortsman et al. 2023,
 * "Small-scale proxies for large-scale Transformer training instabilities"), computed once on
 * the study's grid (study/proxies_grid.h): per context, arm and width the LR sensitivity, the
 * best lr and where the width fails; per arm the best lr's spread and exponent over the widths
 * and the failing lr's line extrapolated to the next width; the peak attention logit and the
 * final loss per lr. `stability table proxies FILE.h5...` prints them. */
#ifndef STABILITY_STUDY_PROXIES_H
#define STABILITY_STUDY_PROXIES_H

#include <stdio.h>
#include "study/proxies_grid.h"
#include "study/study.h"

/* A width fails at an lr above its best once its capped final loss lies this many nats above
 * the seed's best (docs/proxies.md). */
#define PROXIES_FAIL_MARGIN 0.2

/* Whether arm a of context c ran width w (at any lr and seed). */
int proxies_arm_has(const size_study_t *st, int c, int a, int w);

/* One seed's failing lr at one width: the lr above the best at which min(final, initial loss)
 * (a diverged run its initial loss) first exceeds the best by more than margin, linear in log10
 * lr between the last point within it and the first beyond; *above = 1 and the largest lr run
 * when none exceeds it. NaN when the seed ran at no lr. */
double proxies_fail_lr(const size_study_t *st, int c, int a, int w, int k, double margin,
                       int *above);

/* One seed's exponent k of lr* ∝ d^k: the least-squares slope (gsl_fit_linear) of log10 size_best_lr
 * against log10 d over the arm's widths; NaN when the seed misses a width or there is one. */
double proxies_best_lr_exponent(const size_study_t *st, int c, int a, int k);

/* Mean and 95 % half-width (fit_mean_ci) of x[k] − y[k] over the n seeds where both are finite. */
void proxies_paired(const double *x, const double *y, int n, double *mean, double *half);

/* The failing lr against width of one arm: the line log10 lr_fail = c0 + k·log10 d through every
 * (width, seed) not above the grid, and its prediction at twice the largest width. */
typedef struct {
    int n, above;           /* points in the fit; (width, seed)s above the grid, left out */
    double k, k_half;       /* the slope and its 95 % half-width (Student t, n − 2 dof) */
    double d_next;          /* twice the arm's largest width */
    double y, h_mean, h_pred;   /* log10 lr_fail there; half-widths of the line's 95 % interval
                                   and of one run's 95 % prediction interval */
} proxies_fit_t;

/* Fit f for context c and arm a: 1, or 0 with fewer than 3 points or one width. */
int proxies_fail_fit(const size_study_t *st, int c, int a, double margin, proxies_fit_t *f);

/* The study's Markdown tables (docs/proxies.md) or TSV (a row per context, arm and width). */
void proxies_print(const size_study_t *st, study_format_t fmt, FILE *out);

/* The study's entry in study.c: `stability table proxies FILE.h5...`. */
int study_proxies_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                        size_t errlen);

#endif
