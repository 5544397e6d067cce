/* fit.h — statistics over seeds, scaling fits, and the paper's theory values. */
#ifndef STABILITY_FIT_H
#define STABILITY_FIT_H

#include <stddef.h>

/* Mean and half-width of the 95 % confidence interval (Student t, n−1 dof) of the n values
 * x[0], x[stride], …, skipping NaN. *count gets the values used (half = NaN when < 2). */
void fit_mean_ci(const double *x, size_t stride, size_t n, double *mean, double *half,
                 size_t *count);

/* E‖FFN(x)‖²/d for ‖x‖² = d at Xavier init, biases 0, ReLU: 2·d·d_ff/(d + d_ff)²
 * (= 1/2 when d_ff = d). docs/design.md §1. */
double fit_ffn_gain(int d, int d_ff);

/* Lemma 2, Post-LN: E‖x⁵_l‖²/d = 1 + fit_ffn_gain(d, d_ff)  (= 3/2 when d_ff = d). */
double fit_lemma2_post(int d, int d_ff);

/* Lemma 2, Pre-LN: bounds on E‖x‖²/d after l layers (l ≥ 0), starting from e0 = E‖x_1‖²/d
 * (1 + 1/2 with sinusoidal positions): each layer adds the FFN's gain f exactly and the
 * attention's between 0 and 1, so [e0 + l·f, e0 + l·(1 + f)]  (= [1 + l/2, 1 + 3l/2] in the
 * lemma's setting e0 = 1, d_ff = d). */
void fit_lemma2_pre_bounds(int d, int d_ff, int l, double e0, double *lo, double *hi);

/* E‖x_1‖²/d of the input tok_embed·√d + PE with tok_embed ~ N(0, 1/d): 1 + 1/2. */
double fit_input_sqnorm(void);

/* Least-squares power law y = A·x^b on log-log axes (gsl_fit_linear on ln x, ln y; NaN and
 * non-positive values skipped): exponent b, half-width of its 95 % CI (Student t, n−2 dof;
 * NaN when n < 3), and A. Returns the number of points used. */
size_t fit_power_law(const double *x, const double *y, size_t n, double *b, double *b_ci,
                     double *A);

/* The smallest C with y_i ≤ C·f_i for every i: max y_i/f_i (skips NaN and ≤ 0), the constant
 * that turns an O(f) bound into a line no measured point lies above; NaN without a point. */
double fit_bound_scale(const double *y, const double *f, size_t n);

/* Theorem 1's bound on ‖∂L/∂W^{2,L}‖_F up to its constant: d·√(ln d) for Post-LN, independent
 * of L; d·√(ln d / L) for Pre-LN. Their ratio, √L, has no constant left. */
double fit_theorem1(int post, int d, int L);

#endif
