/* curvature.h — the loss landscape's curvature on one batch (docs/design.md §10; Cohen et al.
 * 2021, 2022; Gilmer et al. 2022; Kalra & Barkeshli 2024): λ_max and λ_min of the Hessian H of
 * the objective the optimizer minimises (the loss, + λI when the optimizer adds L2 decay λθ to
 * the gradient: sgd, adam, radam, gi_adam; not adamw's or stableadamw's decoupled decay), Adam's preconditioned sharpness λ_max(P⁻¹H) with the share of its top
 * eigenvector on ε-floored coordinates and its value without them ("active"), and λ_max of
 * every diagonal block of H (layer × kind, model/tensors.h), plain and preconditioned.
 *
 * Always float64, whatever the run's precision (docs/design.md §2): a curv_t owns a float64
 * copy of the model (a "shadow"), a measurement batch and the work space, and takes the point
 * θ and the preconditioner P as float64 arrays. The shadow is the only model it touches, so a
 * run measures without changing one bit of its training. These functions are compiled once
 * (the Makefile's CORE_F64_ONLY) and this header names no `real`: the float32 core calls them
 * by these names, with its parameters widened (exact).
 *
 * Method: H·v by central differences of the gradient that never cross a ReLU kink
 * (measure/hvp.h); Lanczos with full re-orthogonalisation, K = probe.curvature_iters steps
 * (measure/lanczos.h), the blocks with probe.curvature_block_iters (both at most n, the
 * Krylov space's largest dimension); λ_max(P⁻¹H) =
 * λ_max(P^{−1/2}·H·P^{−1/2}) (similar matrices). One measurement takes 2K forward+backward
 * passes for H, 2K for P⁻¹H, 2K for its active part (when any coordinate is floored) and
 * 2·K_b for each block and each of its two forms, plus the passes a kink check repeats.
 */
#ifndef STABILITY_CURVATURE_H
#define STABILITY_CURVATURE_H

#include <signal.h>
#include <stddef.h>
#include "config/config.h"
#include "data/batch.h"

/* The measurement batch comes from the stream seed + this (drawn once per run, or per probe
 * seed), so the training batches are the same with and without the measure. */
#define CURV_BATCH_OFFSET 0x68E31DA4UL

/* The Lanczos start vectors of the measurement after s updates: the stream seed + this + s. */
#define CURV_START_OFFSET 0x3C6EF372UL

/* The direction v of `stability dump --hvp`: a unit Gaussian from the stream init.seed + this. */
#define CURV_DIRECTION_OFFSET 0x7F4A7C15UL

typedef struct curv curv_t;

/* One measurement. The caller sets step and threshold (the optimizer's, optim_threshold). */
typedef struct {
    long step;                  /* updates before it (0: at initialisation) */
    double hessian_max, hessian_min;          /* λ_max(H), λ_min(H) */
    double hessian_max_res, hessian_min_res;  /* their residual bounds |β_K·s_K| */
    double precond_max, precond_max_res;      /* λ_max(P⁻¹H) */
    double precond_max_active, precond_active_res;   /* without the ε-floored coordinates */
    double precond_eps_share;   /* Σ u_i² over floored i, u the unit top eigenvector of
                                   P^{−1/2}HP^{−1/2} */
    double threshold;           /* the optimizer's at the next update's lr (caller) */
    double h;                   /* the smallest difference step a product used */
    long kinked;                /* products that crossed a kink even at HVP_HMIN: the values
                                   of their Lanczos runs are NaN */
    double passes;              /* forward+backward passes the measurement took */
    int stopped;                /* a stop signal ended it between Lanczos steps (curv_set_stop):
                                   the row is partial, every value unknown; not to be recorded */
    double critical_sharpness;  /* probe.critical_sharpness: 2/η_c along the next update
                                   (Kalra et al. 2026; the caller, curv_critical), else NaN */
    double update_curvature;    /* uᵀHu/uᵀu along that update u (the caller), else NaN */
    double critical_quadratic;  /* uᵀHu/gᵀu: λ_c of the local quadratic model (the caller) */
    double critical_passes;     /* forward passes the critical sharpness took, the loss at θ
                                   included (the caller), else NaN */
    double grad_precond_curvature;   /* Bai et al. 2025: gᵀĤg/gᵀg, Ĥ = diag(D)·H with
                                        optim_bai_diag's D, threshold 2/lr (the caller) */
    double trace, trace_stderr; /* probe.trace_probes: Hutchinson's tr(H) and its standard
                                   error (curv_estimate), else NaN */
    double *block_trace;        /* (rows, TENSOR_BLOCKS) tr of each diagonal block; NULL when
                                   the trace is off, NaN where a row has no such kind */
    double *density_nodes, *density_weights;        /* (probes, iters) SLQ of H; NULL when off */
    double *precond_density_nodes, *precond_density_weights;   /* of the active P⁻¹H */
    double *block_density_nodes, *block_density_weights;   /* (rows, TENSOR_BLOCKS, probes,
                                   iters) SLQ of each diagonal block of H (probe.density_blocks;
                                   NULL when off), NaN where a row has no such kind */
    double *hessian_block_max;  /* (rows, TENSOR_BLOCKS) λ_max of each diagonal block of H;
                                   NaN where a row has no tensor of that kind */
    double *precond_block_max;  /* (rows, TENSOR_BLOCKS) of P^{−1/2}HP^{−1/2}, its floored
                                   coordinates left out (as precond_max_active) */
} curv_row_t;

/* A measure for cfg on batch b (copied) with a float64 model of capacity caps. Returns 0, 1
 * (out of memory) or 2 with err "probe.curvature_iters: ..." (more memory than this machine
 * has). Dropout is off in the copy. */
int curv_create(curv_t **c, const config_t *cfg, const batch_caps_t *caps, const batch_t *b,
                char *err, size_t errlen);

/* Free (c may be NULL). */
void curv_free(curv_t *c);

/* Parameters of the model (the length of θ, P and floored). */
size_t curv_num_params(const curv_t *c);

/* Rows of the block arrays: the model's layer rows (encoder, then decoder) and one last row
 * for the tensors outside the layers (tok_embed, lm_head, the final norms). */
int curv_rows(const curv_t *c);

/* 0, or 2 with err "probe.curvature_iters: ..." when the measure of cfg (its float64 model
 * of capacity caps, min(K, n) + 1 Lanczos vectors of the n parameters) and the run's model
 * need more memory than this machine has: what curv_create checks, for a caller to check first. */
int curv_check_memory(const config_t *cfg, const batch_caps_t *caps, size_t n, char *err,
                      size_t errlen);

/* The flag that ends a measurement between two Lanczos steps when it becomes non-zero (a stop
 * signal; NULL: never): the row then has stopped = 1 and is to be dropped. */
void curv_set_stop(curv_t *c, const volatile sig_atomic_t *stop);

/* The forward+backward passes of the measurement batch (T tokens) a row is expected to take
 * (docs/design.md §10, "Cost"): a Lanczos run of k steps costs its 2k products' passes and a
 * re-orthogonalisation of about 4k²n flops, ≈ 2k²/(3T) passes of ≈ 6nT flops; a row runs K
 * steps on H, P⁻¹H and its active part (precond = 0, sgd: on H alone) and 2·K_b on each of
 * nblocks blocks twice (once without a preconditioner); active_only: K steps alone, no block
 * (a later row of probe.curvature_active_only). An estimate, for warnings and progress. */
double curv_cost_passes(double K, double Kb, int nblocks, double T, int precond, int active_only);

/* curv_cost_passes for c's model (K and K_b as capped at its parameter count, its non-empty
 * blocks, its batch's tokens) with the optimizer of cfg; later: a row after update 0. Uses c's
 * scratch mask. */
double curv_row_passes(curv_t *c, const config_t *cfg, int later);

/* Lanczos steps of c's rows: probe.curvature_iters capped at the parameter count. */
int curv_iters(const curv_t *c);

/* Allocate a row's block arrays for c. 0 or 1. */
int curv_row_alloc(curv_row_t *r, const curv_t *c);
void curv_row_free(curv_row_t *r);

/* Measure at θ (n) with preconditioner P (n; NULL: none, P = 1: the preconditioned values are
 * H's, share 0) and its floored coordinates (n flags; NULL: none), the start vectors from
 * the stream seed. Fills every field of out but step and threshold. */
void curv_measure(curv_t *c, const double *theta, const double *P, const unsigned char *floored,
                  unsigned long seed, curv_row_t *out);

/* Only the active value (probe.curvature_active_only, docs/design.md §10): precond_max_active
 * and its residual by one Lanczos run of K steps on P^{−1/2}HP^{−1/2} without the floored
 * coordinates (P = NULL: on H); every other value of out NaN (blocks too), share NaN. One
 * third of curv_measure's passes without blocks. */
void curv_measure_active(curv_t *c, const double *theta, const double *P,
                         const unsigned char *floored, unsigned long seed, curv_row_t *out);

/* uᵀHu at θ (n) for any u (n), H the Hessian of batch b's objective (NULL: the measurement
 * batch; b of a shape the model holds), by one product H·(u/‖u‖) (CDAT, docs/design.md §6k).
 * 0 when u = 0; NaN when the product crossed a kink even at HVP_HMIN. */
double curv_quad(curv_t *c, const double *theta, const double *u, const batch_t *b);

/* Hv (n) = H·v at θ (n), v of unit norm, and λ_max, λ_min (with residual bounds) of H by
 * probe.curvature_iters steps of Lanczos from the stream seed (the dump's --hvp), H the loss's
 * Hessian without any L2 term; *iters the steps it took: probe.curvature_iters capped at n, or
 * fewer at an invariant space. 0, or the products that crossed a kink (the values are then NaN). */
long curv_hvp_dump(curv_t *c, const double *theta, const double *v, double *Hv,
                   unsigned long seed, double *lmax, double *lmin, double *h, int *iters);

/* ------------------------------------------------- the estimators (measure/estimate.c) */

#include "measure/critical.h"
#include "measure/trace.h"

/* The start vectors of the estimators after s updates: the stream seed + this (+ s). */
#define CURV_ESTIMATE_OFFSET 0x2545F491UL

/* The diagonal block of `block` = row·TENSOR_BLOCKS + kind, or CURV_WHOLE: every parameter. */
#define CURV_WHOLE (-1)

/* SLQ (measure/slq.h) of H at θ (n) — or, with P (n), of P^{−1/2}HP^{−1/2} without the floored
 * coordinates (the active P⁻¹H; floored may be NULL) — on `block`: probe.density_probes
 * Rademacher probes × probe.density_iters steps from the stream seed; nodes, weights
 * (probes, iters). Returns 0, or the products that crossed a kink (the values are then NaN),
 * or −1 when the block is empty or the density is off. */
long curv_density(curv_t *c, const double *theta, const double *P, const unsigned char *floored,
                  int block, unsigned long seed, double *nodes, double *weights);

/* The SLQ density of every diagonal block of H at θ (curv_density on block b from seed + 2 + b:
 * the probes of curv_estimate's block trace, so that with as many probes the mean over them of
 * n_b·Σ_j τ_j²θ_j is that trace; docs/design.md §10) into nodes, weights (rows, TENSOR_BLOCKS,
 * probes, iters), NaN where a row has no such kind. Returns the products that crossed a kink. */
long curv_block_densities(curv_t *c, const double *theta, unsigned long seed, double *nodes,
                          double *weights);

/* The density's Lanczos steps: probe.density_iters, at most n (0 when the density is off). */
int curv_density_iters(const curv_t *c);

/* Hutchinson's trace (measure/trace.h) of H at θ on `block` with probe.trace_probes probes from
 * the stream seed. Returns as curv_density. */
long curv_trace(curv_t *c, const double *theta, int block, unsigned long seed,
                trace_result_t *out);

/* The `count` largest Ritz values of H at θ by probe.curvature_iters Lanczos steps from the
 * stream seed (curv_measure's λ_max is the first), descending, into top. Returns as
 * curv_density. */
long curv_top(curv_t *c, const double *theta, unsigned long seed, int count, double *top);

/* The estimators of a curvature row (docs/design.md §10), those whose keys are on: the trace
 * of H (whole, from the stream seed + 1, and every diagonal block, from seed + 2 + block), the
 * SLQ density of H and of the active P⁻¹H (P NULL: H's again; from the stream seed) and of
 * every diagonal block of H (from seed + 2 + block: the block trace's probes) into out's
 * fields above. */
void curv_estimate(curv_t *c, const double *theta, const double *P, const unsigned char *floored,
                   unsigned long seed, curv_row_t *out);

/* ∇L (n) of the measurement batch at θ (one forward and backward pass of the copy). */
void curv_gradient(curv_t *c, const double *theta, double *g);

/* The critical sharpness along the update u (n; θ − η·u is the update at learning rate η):
 * forward passes only (measure/critical.h) on the measurement batch from guess > 0. */
void curv_critical(curv_t *c, const double *theta, const double *u, double guess,
                   critical_result_t *out);

/* uᵀHu/uᵀu at θ (one Hessian-vector product), and in *quadratic (may be NULL) uᵀHu/gᵀu: the
 * critical sharpness 2/η_c of the local quadratic model along u, g (n) the gradient
 * (measure/critical.h). NaN when the product crossed a kink. */
double curv_update_curvature(curv_t *c, const double *theta, const double *u, const double *g,
                             double *quadratic);

/* Bai et al. 2025's gradient-direction curvature of the preconditioned Hessian at θ,
 * gᵀ·diag(D)·H·g / gᵀg (measure/directional.h; one Hessian-vector product), D (n) the diagonal
 * of their Ĥ = diag(D)·H (the caller: (1 − β₁)/((1 + β₁)(1 − β₁ᵗ)·(√v̂ + ε)) for Adam). NaN when
 * the product crossed a kink. */
double curv_precond_grad(curv_t *c, const double *theta, const double *g, const double *D);

#endif
