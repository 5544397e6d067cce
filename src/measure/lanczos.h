/* lanczos.h — the extreme eigenvalues of a symmetric operator A (n × n, given only as x ↦ A·x)
 * by K steps of Lanczos with full re-orthogonalisation (docs/design.md §10; Golub & Van Loan,
 * Matrix Computations, §10.1; Ghorbani et al. 2019 for the Hessian):
 *
 *   q₁ = a unit Gaussian vector from rng;  for j = 1 … K:  w = A·q_j;  α_j = q_jᵀw;
 *   w ← w − α_j q_j − β_{j−1} q_{j−1};  w ← w − Q(Qᵀw) twice (classical Gram–Schmidt, "twice is
 *   enough");  β_j = ‖w‖;  q_{j+1} = w/β_j.
 *
 * The K × K tridiagonal T = tridiag(β, α, β) is diagonalised by GSL (gsl_eigen_symmv); its
 * extreme Ritz values θ are the estimates and |β_K·s_K| (s the Ritz vector's last component)
 * bounds each pair's residual ‖A·y − θ·y‖ (y = Q·s, ‖y‖ = 1). When β_j vanishes (below 1e-12 of
 * the running scale |α| + β: a Krylov space invariant under A, K ≥ the dimension it spans) the
 * iteration stops there.
 *
 * A support restricts the operator to a set of coordinates: the start vector is zero outside
 * it and A·q is cut to it, so the result is that of the principal submatrix (a diagonal block
 * of the Hessian; the preconditioned Hessian without its ε-floored coordinates).
 * Float64 only (docs/design.md §2).
 */
#ifndef STABILITY_LANCZOS_H
#define STABILITY_LANCZOS_H

#include <signal.h>
#include <stddef.h>
#include <gsl/gsl_rng.h>

/* y (n) = A·x (n). */
typedef void (*lanczos_op_fn)(void *ctx, const double *x, double *y);

/* Work space for K steps on vectors of n. */
typedef struct {
    size_t n;
    int K;
    double *Q;               /* (K+1, n) the Lanczos vectors */
    double *w;               /* (n) */
    double *alpha, *beta;    /* (K) */
    double *T, *S, *theta;   /* (K,K) the tridiagonal, its eigenvectors; (K) its eigenvalues */
    const volatile sig_atomic_t *stop;   /* non-zero ends a run between two steps (NULL: never) */
} lanczos_t;

typedef struct {
    double max, min;         /* the largest and smallest Ritz value */
    double res_max, res_min; /* their residual bounds |β_k·s_k| */
    int iters;               /* steps taken: K, or fewer at an invariant space */
    int stopped;             /* *stop ended the run: every value NaN, a partial result */
} lanczos_result_t;

/* Allocate for n and K ≥ 1. 0, or 1 when out of memory. */
int lanczos_alloc(lanczos_t *l, size_t n, int K);

/* Free. */
void lanczos_free(lanczos_t *l);

/* Run up to `iters` (≤ K) steps of A restricted to support (n flags, nonzero = in; NULL = all)
 * from a start drawn from rng. top (n, may be NULL) gets the unit Ritz vector of max. A support
 * with no coordinate, or a step that is not finite, gives NaN everywhere (iters 0); so does a
 * non-zero *l->stop before a step (stopped 1: a signal, docs/design.md §10). */
void lanczos_run(lanczos_t *l, lanczos_op_fn op, void *ctx, const unsigned char *support,
                 int iters, gsl_rng *rng, lanczos_result_t *res, double *top);

/* The same from a given start (n; scaled to unit norm, cut to the support; may be l->Q itself).
 * A start of zero norm gives NaN everywhere. */
void lanczos_run_from(lanczos_t *l, lanczos_op_fn op, void *ctx, const unsigned char *support,
                      int iters, const double *start, lanczos_result_t *res, double *top);

/* Gauss quadrature of the last run of `iters` = res.iters steps (Golub & Meurant 1994; Ubaru et
 * al. 2017, eq. 3.4): nodes (iters) the tridiagonal's eigenvalues θ_j, weights (iters) the
 * squared first components τ_j² of its unit eigenvectors (they sum to 1), so that for the start
 * q₁, Σ_j τ_j²·θ_j^p = q₁ᵀA^p q₁ exactly for p ≤ 2·iters − 1. */
void lanczos_quadrature(const lanczos_t *l, int iters, double *nodes, double *weights);

/* The `count` largest Ritz values of the last run of `iters` steps, descending (NaN past iters). */
void lanczos_top(const lanczos_t *l, int iters, int count, double *out);

#endif
