/* autowu.h — AutoWU, the automated warm-up (Kim et al. 2021, "Automated learning rate scheduler
 * for large-batch training", arXiv 2107.05855; docs/design.md §6k). Numerics only.
 *
 * Warm-up: η_t = η₀·(η_max/η₀)^(t/T), η_max = train.lr, T = train.warmup (the longest warm-up),
 * η₀ = η_max·AUTOWU_START. After every update t of the warm-up its training loss joins a window
 * of the last AUTOWU_WINDOW; a Gaussian process (RBF kernel, steps scaled to [0, 1], losses
 * standardised, length AUTOWU_LENGTH, noise variance AUTOWU_NOISE) smooths them, and the test
 * asks whether the minimum is behind: from AUTOWU_DRAWS posterior draws f_j of the window, each
 * with its minimum at m_j, p_j = P(f(t_last) > f(t_{m_j})) under the posterior; the update
 * passes when a majority of the draws has p_j > AUTOWU_P. After AUTOWU_PATIENCE passing updates
 * in a row (or at t = T) the warm-up ends at update s* with η* its lr, and the decay follows:
 * η_t = η*·(1 + cos(π(t − s*)/(steps − s*)))/2 (to 0 at steps).
 */
#ifndef STABILITY_AUTOWU_H
#define STABILITY_AUTOWU_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "config/config.h"

#define AUTOWU_START 1e-3      /* η₀/η_max */
#define AUTOWU_WINDOW 64       /* losses the GP sees */
#define AUTOWU_MIN_POINTS 10   /* no test before this many */
#define AUTOWU_LENGTH 0.3      /* RBF length on the window scaled to [0, 1] */
#define AUTOWU_NOISE 0.25      /* noise variance of the standardised losses */
#define AUTOWU_DRAWS 5
#define AUTOWU_P 0.95
#define AUTOWU_PATIENCE 3

/* The draws come from the stream init.seed + this (training batches unchanged). */
#define AUTOWU_OFFSET 0x2545F491UL

typedef struct {
    double loss[AUTOWU_WINDOW];   /* ring of the last losses */
    long n;                       /* losses seen */
    int streak;                   /* passing tests in a row */
    long switch_step;             /* s*: the last warm-up update; 0 while warming up */
    double switch_lr;             /* η* */
    double last_p[AUTOWU_DRAWS];  /* the last test's p_j (NaN before one) */
    gsl_rng *rng;
} autowu_t;

/* A controller at update 0 with its stream from seed. 0 or 1 (out of memory). */
int autowu_init(autowu_t *a, unsigned long seed);
void autowu_free(autowu_t *a);

/* The lr of update t ≥ 1. */
double autowu_lr(const autowu_t *a, const config_t *cfg, long t);

/* After update t (whose lr was autowu_lr(a, cfg, t)) with training loss `loss`: the test, and
 * the switch to decay. Returns 1 when the warm-up ended at this update. */
int autowu_observe(autowu_t *a, const config_t *cfg, long t, double loss);

/* The GP posterior of f at the n points x (n ≤ AUTOWU_WINDOW) given y there: mean (n) and
 * covariance (n, n) with kernel exp(−(x−x')²/2ℓ²) and noise variance s2 (GSL's Cholesky).
 * 0, or a GSL error code. */
int autowu_posterior(const double *x, const double *y, size_t n, double ell, double s2,
                     double *mean, double *cov);

/* The test on the window y (n points, oldest first): 1 when a majority of the draws has
 * p_j > AUTOWU_P; p (AUTOWU_DRAWS) gets the p_j. */
int autowu_test(const double *y, size_t n, gsl_rng *rng, double *p);

#endif
