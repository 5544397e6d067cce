/* subopt.h — the learning rate from the suboptimality gap (Riabinin et al. 2026, "Where does
 * warm-up come from? Adaptive scheduling for norm-constrained optimizers", arXiv 2602.05813;
 * docs/design.md §6h): η(Δ) = Δ/(K₀ + K₁Δ + K₂Δ²), Δ = max(loss − f*, 1e-8), its constants
 * fitted at update 1 as the authors' code (lipschitz_computeK.py, mode linear_and_cos) fits
 * them, then cosine decay from the update where Δ first reaches Δ*. Numerics only.
 */
#ifndef STABILITY_SUBOPT_H
#define STABILITY_SUBOPT_H

#include "config/config.h"
#include "model/model.h"

/* The schedule's state: the fit and where the decay began. */
typedef struct {
    double K0, K1, K2;      /* η(Δ) = Δ/(K₀ + K₁Δ + K₂Δ²) */
    double delta0;          /* Δ₀ = loss₁ − f* */
    double delta_star;      /* Δ* the fit chose: η(Δ*) = lr, the peak */
    double kappa;           /* sup ‖v‖_dual / ‖v‖ of the optimizer's norm over the model's matrices */
    long switched;          /* the update the cosine decay began at, 0 before */
    int fitted;
} subopt_t;

/* κ of the optimizer's norm over the registry's 2-D tensors (the code's p.dim() == 2): muon
 * Σ min(rows, cols) (nuclear/spectral), lion Σ rows·cols (ℓ₁/ℓ∞), nsgd their count (Frobenius). */
double subopt_kappa(const model_t *m, optimizer_t kind);

/* Fit K₀, K₁, K₂ and Δ* for peak lr, lr/div at Δ₀ (> 0.02) and κ: for each of 500 Δ* evenly in
 * [0.01, Δ₀ − 0.01], K₂ = Δ₀(div − 1)/(lr(Δ₀ − Δ*)²), K₀ = K₂Δ*², K₁ = 1/lr − 2K₂Δ*, and the
 * objective ∫₀^Δ₀ w(Δ)(η(Δ) − target(Δ))² dΔ/Δ₀ (target: a half cosine from 0 to lr on [0, Δ*],
 * a line from lr to lr/div on [Δ*, Δ₀]; w = exp(−(Δ − Δ*)²·σ_F·κ/2), σ_F = 1e-3), by GSL's QAGS
 * (QUADPACK's, as SciPy's quad); the least wins. Returns 0, or 1 (Δ₀ ≤ 0.02: no fit). */
int subopt_fit(subopt_t *s, double lr, double div, double delta0, double kappa);

/* The lr of update t ≥ 1 whose batch loss (before the update) is loss: fits at t = 1 from
 * Δ₀ = loss − f*; then η(Δ) clamped to [lr/lr_div, lr] while Δ > Δ*; from the first update
 * with Δ ≤ Δ* (s) on, cosine f + (lr − f)(1 + cos(π(t − s)/(steps − s)))/2, f = lr·min_lr_ratio. */
double subopt_lr(subopt_t *s, const config_t *cfg, long t, double loss);

/* The state after updates 1…n whose batch losses were loss (n): subopt_lr replayed, so a resumed
 * run continues with the fit and switch update of the run it resumes (the state is a function of
 * the losses alone). */
void subopt_replay(subopt_t *s, const config_t *cfg, const double *loss, long n);

#endif
