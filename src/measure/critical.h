/* critical.h — the critical sharpness λ_c = 2/η_c (Kalra, Barkeshli et al. 2026, arXiv
 * 2601.16979, "scalable curvature"; docs/design.md §10): η_c is the smallest step scale at
 * which the loss on a fixed batch rises along the update u the optimizer is about to take,
 *   η_c = min{η > 0 : L(θ − η·u) > L(θ)},
 * found with forward passes only, as the paper's code finds it: from a guess η₀, double while
 * the loss falls (or halve while it rises) until the first change of outcome brackets η_c in
 * [η_lo, η_hi] with η_hi = 2η_lo, then bisect until 1 − η_lo/η_hi ≤ tol (the code's 2⁻⁴);
 * η_c = (η_lo + η_hi)/2. A loss that is not finite counts as a rise.
 * On a quadratic L = ½θᵀAθ (gradient g = Aθ): L(θ − ηu) − L(θ) = −η·gᵀu + ½η²·uᵀAu, so
 * η_c = 2gᵀu/uᵀAu and λ_c = uᵀAu/gᵀu; along u = g (gradient descent) λ_c = gᵀAg/gᵀg, the
 * curvature in the gradient's direction, at most λ_max. No second derivative is taken.
 * Numerics only.
 */
#ifndef STABILITY_CRITICAL_H
#define STABILITY_CRITICAL_H

/* The loss at θ − η·u (one forward pass). */
typedef double (*critical_loss_fn)(void *ctx, double eta);

/* The bisection's stopping tolerance of the paper's code (tol_power 4). */
#define CRITICAL_TOL 0.0625

/* The first guess when the learning rate is 0 (the paper's code's lr_zero). */
#define CRITICAL_GUESS 1e-4

/* Steps of the doubling (or halving) before it gives up. */
#define CRITICAL_MAX_DOUBLINGS 60

typedef struct {
    double lo, hi;      /* the bracket: L(θ − lo·u) ≤ L(θ) < L(θ − hi·u) */
    double eta;         /* η_c = (lo + hi)/2; NaN when no bracket was found */
    double sharpness;   /* λ_c = 2/η_c */
    int passes;         /* forward passes taken (the loss at θ not counted) */
} critical_result_t;

/* The search along loss from guess > 0 with L(θ) = loss0, bisecting until 1 − lo/hi ≤ tol. */
void critical_search(critical_loss_fn loss, void *ctx, double loss0, double guess, double tol,
                     critical_result_t *out);

#endif
