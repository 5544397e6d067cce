/* hvp.h — Hessian-vector products of a batch's objective (model_objective: the loss, plus the
 * z-term when on) with respect to every parameter, by central differences of the exact
 * gradient (docs/design.md §10):
 *
 *     H·v ≈ (∇L(θ + h·v) − ∇L(θ − h·v)) / 2h,     ‖v‖ = 1,
 *
 * never across a kink. The objective is smooth but for ReLU (x > 0 ? x : 0 in every FFN with
 * model.activation = relu; softmax, the norms, tanh, erf, the z-term are smooth, and the max
 * that softmax and the loss subtract is an identity, not a branch). A difference taken across a
 * unit that switched is no second derivative (one unit of 1.6 M switched at h = 1e-5 gives an
 * error of 50), so each product compares the branch (pre > 0) of every ReLU unit of a
 * non-padding row between θ + hv and θ − hv and, when any differs, divides h by 10 and tries
 * again, from HVP_H0 down to HVP_HMIN. A unit that still switches at HVP_HMIN sits on its kink
 * (within 1e-9·|∂pre/∂θ·v|): the Hessian does not exist there; the product is then taken at
 * HVP_HMIN and counted in `kinked` (the curvature measure reports its values NaN).
 *
 * Float64 only (docs/design.md §2: the curvature measure is compiled once). The model's
 * dropout must be off (model_dropout_off); its parameters are θ between products, restored
 * bit for bit.
 */
#ifndef STABILITY_HVP_H
#define STABILITY_HVP_H

#include "util/real.h"
#if REAL_IS_FLOAT
#error "hvp.h is float64 only (docs/design.md §2)"
#endif

#include <stddef.h>
#include "model/model.h"

/* The first step and the smallest (h is divided by 10 until no unit switches). */
#define HVP_H0 1e-6
#define HVP_HMIN 1e-9

typedef struct {
    model_t *m;              /* float64, dropout off; params = θ between products */
    const batch_t *b;        /* the batch of the objective */
    double h0, hmin;         /* first and smallest step */
    double *theta;           /* (n) θ */
    double *gplus;           /* (n) ∇L(θ + hv) */
    unsigned char *branch;   /* (units) each ReLU unit's pre > 0 at θ + hv */
    size_t units;            /* ReLU units of non-padding rows in b */
    /* counts since hvp_init (a caller may reset them) */
    long products;           /* products taken */
    double passes;           /* forward+backward passes (a forward or a backward alone: ½) */
    long shrinks;            /* times h was divided by 10 */
    long kinked;             /* products where a unit switched even at hmin */
    double h_smallest;       /* the smallest h a product used (0 before any) */
} hvp_t;

/* Set up products on model m (float64, dropout off) and batch b (kept by pointer) at the
 * parameters m holds now; h0 ≥ hmin > 0. 0, or 1 when out of memory. */
int hvp_init(hvp_t *h, model_t *m, const batch_t *b, double h0, double hmin);

/* Free what hvp_init allocated. */
void hvp_free(hvp_t *h);

/* Move the point: θ ← theta (n), copied into the model. */
void hvp_set_point(hvp_t *h, const double *theta);

/* Hv (n) = H·v for v (n) of norm 1 (any norm: the step is h·v). Returns the number of units
 * that switched at the step used: 0, or > 0 when even hmin crossed a kink (counted in kinked).
 * *h_used (may be NULL) gets that step. */
size_t hvp_apply(hvp_t *h, const double *v, double *Hv, double *h_used);

/* The same at one fixed step h, without the kink check (what the check guards against; tests).
 * Returns the units that switched. */
size_t hvp_apply_fixed(hvp_t *h, const double *v, double *Hv, double step);

/* ReLU units of non-padding rows of m's last forward on a batch of b's shape (0 without ReLU). */
size_t hvp_relu_units(const model_t *m, const batch_t *b);

#endif
