/* curvature_internal.h — the measure's state, shared by curvature.c and the estimators on top
 * of it (estimate.c: density, trace, critical sharpness; docs/design.md §10). Float64 only. */
#ifndef STABILITY_CURVATURE_INTERNAL_H
#define STABILITY_CURVATURE_INTERNAL_H

#include <gsl/gsl_rng.h>
#include "measure/curvature.h"
#include "measure/hvp.h"
#include "measure/lanczos.h"
#include "model/model.h"

struct curv {
    model_t *m;               /* the float64 copy, dropout off */
    batch_t batch;            /* the measurement batch (own buffers) */
    hvp_t hvp;
    lanczos_t lz;
    gsl_rng *rng;
    int K, Kb;                /* Lanczos steps: whole, blocks (0: no blocks) */
    double l2;                /* λ of L2 decay in the gradient: the objective's Hessian is
                                 H + λI (0: none, or the dump's loss alone) */
    int rows;                 /* block rows: layer rows + 1 */
    size_t n;
    double *D;                /* (n) P^{−1/2} of the running measurement, or NULL: plain H */
    double *u;                /* (n) scratch: the direction of a preconditioned product */
    double *top;              /* (n) the top eigenvector of P^{−1/2}HP^{−1/2} */
    double *Dbuf;             /* (n) storage of D */
    unsigned char *mask;      /* (n) the support of a restricted run */
    int stopped;              /* a run of the current measurement was stopped by the flag */
    /* the estimators (estimate.c), allocated only when a key asks for them */
    lanczos_t lz_slq;         /* density_iters steps (K = 0: none) */
    int est_probes, est_iters, est_trace;   /* probe.density_probes, its steps, trace_probes */
    int est_blocks;           /* probe.density_blocks: the density of every diagonal block too */
    double *ev, *ew;          /* (n) a probe and its product; the update direction */
    double *samples;          /* (trace_probes) zᵀHz */
};


/* y = (H + λI)·x (x of unit norm: a Lanczos vector; λ = c->l2: the objective's Hessian). */
void curv_op_hessian(void *ctx, const double *x, double *y);

/* y = D·(H + λI)·D·x, D = P^{−1/2} (c->D set). */
void curv_op_precond(void *ctx, const double *x, double *y);

/* c->mask = the coordinates of block (row, kind), without the floored ones when floored != NULL.
 * Returns how many. */
size_t curv_block_mask(curv_t *c, int row, int kind, const unsigned char *floored);

/* The estimators' work space for cfg's keys (nothing when they are off). 0 or 1. */
int curv_estimate_alloc(curv_t *c, const config_t *cfg);

/* Free it. */
void curv_estimate_free(curv_t *c);

#endif
