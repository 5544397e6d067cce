/* optim.h — optimizers over the one parameter buffer, global-norm clipping, learning-rate
 * schedules (docs/design.md §4 [train], §6h). Numerics only.
 *
 * Update number t = 1, 2, … with gradient g (already clipped), learning rate α = optim_lr(t),
 * weight decay λ, all element-wise over the n parameters θ:
 *   sgd:    b ← μ·b + (g + λθ);  θ ← θ − α·b                        (PyTorch SGD, dampening 0)
 *   adam:   g ← g + λθ;  m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;
 *           θ ← θ − α·m̂/(√v̂ + ε),  m̂ = m/(1−β₁ᵗ),  v̂ = v/(1−β₂ᵗ)    (Kingma & Ba 2015)
 *   adamw:  θ ← θ − αλθ, then adam without the λθ term             (Loshchilov & Hutter 2019)
 *   radam:  g ← g + λθ; m, v, m̂, v̂ as adam;  ρ∞ = 2/(1−β₂) − 1,  ρₜ = ρ∞ − 2tβ₂ᵗ/(1−β₂ᵗ);
 *           ρₜ > 4: θ ← θ − α·rₜ·m̂/(√v̂ + ε),
 *                   rₜ = √((ρₜ−4)(ρₜ−2)ρ∞ / ((ρ∞−4)(ρ∞−2)ρₜ));
 *           else:   θ ← θ − α·m̂                                     (Liu et al. 2020, Alg. 2;
 *           the paper's threshold 4 — PyTorch uses 5 — and PyTorch's ε beside √v̂)
 *   gi_adam: adam (with its λθ term) whose v starts from the first gradient: v₀ = g₁², then
 *           v₁ = β₂v₀ + (1−β₂)g₁² = g₁², both bias corrections kept, so v̂₁ = g₁²/(1−β₂) and the
 *           first steps are ≈ √(1−β₂) of adam's                     (Kalra & Barkeshli 2024)
 *   stableadamw: adamw whose α is, per tensor, α/c with c = max(1, √mean(g²/max(v̂, ε²))) over
 *           that tensor, v̂ the one this update uses (AdaFactor's update clipping; Wortsman et
 *           al. 2023b, Alg. 2): θ ← θ − (α/c)λθ − (α/c)·m̂/(√v̂ + ε). The ε² floor keeps a
 *           coordinate without any gradient yet (g = v = 0) at 0.
 *   lamb:   adam's moments, r = m̂/(√v̂ + ε), then per tensor θ ← θ − α·φ·(r + λθ) with the trust
 *           ratio φ = ‖θ‖/‖r + λθ‖ (1 when either is 0)       (You et al. 2020, Alg. 2;
 *           train/update_bound.h)
 *   muon:   on each hidden matrix (tensors_is_hidden) G (rows = in, cols = out):
 *           m ← βm + (1−β)g;  u = (1−β)g + βm (Nesterov);  O = NS(u) (optim_ns);
 *           θ ← θ(1 − αλ) − α·s·O,  s = √max(1, cols/rows) (muon_scale = original: Jordan's
 *           √max(1, fan_out/fan_in)) or 0.2·√max(rows, cols) (match_rms_adamw, Liu et al.
 *           2025); every other tensor adamw at α·muon_adamw_lr/lr   (Jordan et al. 2024)
 *   lion:   c = β₁m + (1−β₁)g;  θ ← θ − α(sign(c) + λθ);  m ← β₂m + (1−β₂)g (Chen et al. 2023)
 *   nsgd:   per tensor b ← μb + g;  θ ← θ(1 − αλ) − α·b/(‖b‖_F + 1e-8)
 *           (normalised SGD with momentum as Riabinin et al. 2026's code has it)
 * Per tensor (optim_seg_t, from the registry by optim_set_tensors) the lr is α·lr_mult (μP's
 * rates, docs/design.md §6h; 1 by default). Every Adam-family update also leaves, per tensor,
 * Σ (m̂/(√v̂ + ε))² — the update direction before α, rₜ and c — for its RMS (Wortsman et al.
 * 2023b), summed in an order fixed by the buffer alone, so the thread count changes no bit.
 */
#ifndef STABILITY_OPTIM_H
#define STABILITY_OPTIM_H

#include "util/real.h"

#include <stddef.h>
#include "config/config.h"
#include "model/model.h"

/* Muon's singular-value spread counts the singular values of O above this fraction of its
 * largest (the rank u has). */
#define OPTIM_SV_FLOOR 1e-3

/* One tensor of the buffer as the optimizer sees it. */
typedef struct {
    size_t offset, size;   /* its elements [offset, offset + size) of params and grads */
    double lr_mult;        /* its lr = α·lr_mult (μP, model_lr_scale); 1 by default */
    double clip;           /* stableadamw: c of the last update (≥ 1); 1 for the others */
    double sumsq;          /* Adam family: Σ (m̂/(√v̂ + ε))² over it at the last update; muon:
                              Σ (s·O)² (hidden) or adamw's; lion Σ sign(c)²; nsgd Σ (b/‖b‖)²;
                              NaN for sgd and before the first update */
    int hidden;            /* tensors_is_hidden: muon orthogonalises it */
    size_t rows, cols;     /* its shape (rows = in); 1 × size for a vector */
    double sv_min, sv_max; /* muon, hidden, with optim_t.want_sv: the extreme singular values of
                              O = NS(u) at the last update (sv_min over those ≥ OPTIM_SV_FLOOR·
                              sv_max: u's null space stays null); else NaN */
} optim_seg_t;

/* A tensor cut at multiples of OPTIM_CHUNK elements of the buffer: the unit of the update's
 * parts and of its sums (internal to optim.c). */
typedef struct {
    size_t lo, hi;
    int seg;
} optim_piece_t;

typedef struct {
    optimizer_t kind;
    double beta1, beta2, eps, weight_decay, momentum;
    size_t n;            /* parameters */
    long t;              /* updates taken */
    real *m;           /* (n) first moment; sgd: the momentum buffer b */
    real *v;           /* (n) second moment; NULL for sgd */
    int nseg;            /* tensors, in buffer order, covering [0, n) */
    optim_seg_t *seg;    /* (nseg) */
    size_t npiece;
    optim_piece_t *piece;   /* (npiece) the tensors cut at OPTIM_CHUNK boundaries */
    double *piece_sum;      /* (npiece) scratch of one pass */
    double floor_rel;       /* optim_precond's relative floor τ (probe.curvature_floor) */
    /* muon (optim_muon.c) */
    int ns_steps;           /* Newton–Schulz iterations */
    double ns_a, ns_b, ns_c;
    int muon_scale;         /* muon_scale_t */
    double adamw_ratio;     /* lr of the non-hidden tensors / lr */
    real *work;             /* scratch of the largest hidden matrix (optim_ns_work) */
    int want_sv;            /* set by the caller: the next update records sv_min, sv_max */
} optim_t;

/* Set up the optimizer of cfg->train for n parameters, moments zero, t = 0, the buffer one
 * tensor with lr_mult 1. Returns 0 or 1 (OOM). */
int optim_init(optim_t *o, const config_t *cfg, size_t n);

/* The tensors of m's registry as the optimizer's segments, each with lr_mult =
 * model_lr_scale (μP). n must be m->num_params. Returns 0 or 1 (OOM). */
int optim_set_tensors(optim_t *o, const model_t *m);

/* Free the moment buffers and the segments. */
void optim_free(optim_t *o);

/* One update of params (n) with grads (n) at learning rate lr; increments o->t first. */
void optim_update(optim_t *o, real *params, const real *grads, double lr);

/* Elements of scratch optim_ns needs for a rows × cols matrix. */
size_t optim_ns_work(size_t rows, size_t cols);

/* Orthogonalise G (rows, cols) in place by Newton–Schulz (Jordan et al. 2024): X = G/(‖G‖_F +
 * 1e-7), transposed when rows > cols so that A is the smaller Gram matrix; `steps` times A = XXᵀ,
 * X ← aX + (bA + cA²)X; back to (rows, cols). Products through BLAS (nn/gemm.h: the same bits
 * at any thread count). work: optim_ns_work(rows, cols) elements. */
void optim_ns(real *G, size_t rows, size_t cols, int steps, double a, double b, double c,
              real *work);

/* One muon update (the rule above), lion's, nsgd's (optim_muon.c, optim_lion.c). */
void optim_muon_update(optim_t *o, real *params, const real *grads, double lr);
void optim_lion_update(optim_t *o, real *params, const real *grads, double lr);
void optim_nsgd_update(optim_t *o, real *params, const real *grads, double lr);

/* Muon's step scale s of a rows × cols hidden matrix (rows = fan_in) under muon_scale_t kind. */
double optim_muon_scale(int kind, size_t rows, size_t cols);

/* The update the optimizer is about to take, without taking it (Kalra et al. 2026's "virtual
 * step"; docs/design.md §10): u (n) with θ_next = θ − η·u the update at learning rate η on
 * grads (n, already clipped), from a copy of the state — linear in η for every optimizer here
 * (the lr multiplies every term, weight decay's too). o is unchanged. 0, or 1 when out of memory. */
int optim_direction(const optim_t *o, const real *params, const real *grads, double *u);

/* RAdam's rectification at update t ≥ 1 (Liu et al. 2020, Alg. 2): *rho = ρₜ and the return
 * rₜ when ρₜ > 4 (the adaptive step), else NaN (the un-adapted momentum step). β₂ and t only. */
double optim_radam_rect(double beta2, long t, double *rho);

/* ‖g‖₂ over all n entries (summed in a fixed order: reproducible). */
double optim_global_norm(const real *g, size_t n);

/* Scale g by max_norm/norm when norm = ‖g‖₂ exceeds max_norm > 0 (0 = off). Returns norm. */
double optim_clip(real *g, size_t n, double max_norm);

/* The factor optim_clip scales a gradient of norm `norm` by: max_norm/norm when max_norm > 0
 * and norm > max_norm, else 1. */
double optim_clip_factor(double norm, double max_norm);

/* The preconditioner of the step actually taken from the raw gradient when clipping scaled it
 * by c (optim_clip_factor): that step is c·P⁻¹·g, so P ← P/c (docs/design.md §10). c = 1 leaves
 * P untouched, bit for bit. */
void optim_precond_clip(double *P, size_t n, double c);

/* Learning rate of update t ≥ 1 of cfg->train: linear warm-up lr·t/w for t ≤ w (warmup 0 or 1:
 * none, w = 1), then inverse_sqrt lr·√(w/t), linear lr·(steps−t)/(steps−w) (0 at t = steps),
 * constant lr, or cosine (Loshchilov & Hutter 2017, without restarts) from lr at t = w to the
 * floor f = lr·min_lr_ratio at t = steps: f + (lr − f)·(1 + cos(π(t−w)/(steps−w)))/2. */
double optim_lr(const config_t *cfg, long t);

/* Adam's preconditioner as the curvature measure reads it (docs/design.md §10; Cohen et al.
 * 2022): the update t was θ_t = θ_{t−1} − η_t·P_t⁻¹·m_t (m_t without bias correction), so
 *   adam, adamw:  P_t = (1 − β₁ᵗ)·(√(v_t/(1 − β₂ᵗ)) + ε)
 *   radam:        the same divided by the rectifier rₜ of update t; P_t = 1 − β₁ᵗ while
 *                 ρₜ ≤ 4 (its un-adapted step θ ← θ − η·m̂)
 *   sgd:          P = 1 (no preconditioner)
 * with t = o->t, the updates taken. At t = 0 it is the preconditioner the first update will use:
 * t = 1 and v₁ = β₂·v + (1 − β₂)·g², g = grads (+ λθ for adam and radam's L2 decay) — the
 * gradient that update will take, after clipping. Computed in double from the moments of either
 * precision, into P (n). floored (n, may be NULL): 1 where the coordinate is floored,
 * √v̂_i < max(ε, τ·√mean_T(v̂)), τ = o->floor_rel (probe.curvature_floor), T its tensor (the optimizer's
 * tensors, optim_set_tensors): the ε term is the larger part of P_i, or the coordinate has had
 * almost none of the gradient its tensor had (a dead or rarely firing ReLU unit, a byte not
 * yet seen, b_K's rounding noise), so P_i⁻¹ is set by ε or by a few samples, not by the
 * gradient's scale (docs/design.md §10); always 0 for sgd and radam's un-adapted step.
 * Returns the number of floored coordinates. */
size_t optim_precond(const optim_t *o, const real *params, const real *grads, double *P,
                     unsigned char *floored);

/* The largest stable sharpness of the next update at learning rate lr (Cohen et al. 2021,
 * 2022): λ_max(P⁻¹H) below it keeps the update of a quadratic stable. adam, adamw, radam
 * (momentum β₁ as an exponential average): 2(1 + β₁)/((1 − β₁)·lr) (38/lr at β₁ = 0.9);
 * sgd with momentum μ: 2(1 + μ)/lr (plain sgd: 2/lr). +∞ when lr = 0. */
double optim_threshold(const optim_t *o, double lr);

/* Bai et al. 2025's preconditioned Hessian Ĥ = diag(D)·H of the next update (their §3, Adam's
 * spatial and momentum preconditioning), scaled so that its stability threshold is 2/lr:
 * D_i = s/P_i (P as optim_precond gives it, n), s = 2/(lr·optim_threshold(lr)) — adam, adamw,
 * radam: (1 − β₁)/(1 + β₁), so Ĥ = (1 − β₁)/((1 + β₁)(1 − β₁ᵗ))·diag(1/(√v̂ + ε))·H as theirs;
 * sgd with momentum μ: 1/(1 + μ) (P = 1; plain sgd: Ĥ = H). λ(Ĥ) > 2/lr ⟺ the same Rayleigh
 * quotient of P⁻¹H above optim_threshold (docs/design.md §10). */
void optim_bai_diag(const optim_t *o, const double *P, size_t n, double *D);

#endif
