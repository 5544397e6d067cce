/* norm_jacobian.c — the Jacobian J = ∂y/∂x of one row of LayerNorm / RMSNorm (nn/norm.h): built
 * explicitly (tests, small C), and its exact spectral and Frobenius norms without forming it,
 * J being a low-rank update of a diagonal (docs/design.md §9). Double precision; no allocation,
 * no shared state (callers may run rows in parallel). */
#include "nn/norm.h"

#include <math.h>
#include "nn/norm_internal.h"

void norm_jacobian_build(norm_kind_t kind, real *J, const real *x, const real *gamma,
                         size_t C, double eps)
{
    if (kind == NORM_NONE) {
        for (size_t i = 0; i < C; i++)
            for (size_t j = 0; j < C; j++) J[i * C + j] = (i == j) ? 1.0 : 0.0;
        return;
    }
    const int ln = (kind == NORM_LAYERNORM);
    double m, v, r;
    norm_row_stats(ln, x, C, eps, &m, &v, &r);
    const double invC = 1.0 / (double)C;
    const double centre = ln ? invC : 0.0;
    // LayerNorm (docs/design.md §9):  ∂y_i/∂x_j = γ_i·[ (δ_ij − 1/C)/√(σ²+ε) − (x_i−μ)(x_j−μ)/(C·(σ²+ε)^{3/2}) ]
    //                                 = γ_i·r·( δ_ij − 1/C − x̂_i x̂_j / C )
    //           RMSNorm:    ∂y_i/∂x_j = γ_i·[ δ_ij/rms − x_i x_j/(C·rms³) ] = γ_i·r·( δ_ij − x̂_i x̂_j / C )
    for (size_t i = 0; i < C; i++) {
        const double gr = norm_gamma_at(gamma, i) * r;
        const double xi = (x[i] - m) * r;
        for (size_t j = 0; j < C; j++) {
            const double xj = (x[j] - m) * r;
            J[i * C + j] = gr * (((i == j) ? 1.0 : 0.0) - centre - xi * xj * invC);
        }
    }
}

/* The Jacobian as a low-rank update:  J = r·D·P,  D = diag(γ),  P = I − Σ_k c_k u_k u_kᵀ, u_k
 * orthonormal (x̂ ⟂ 1 for LayerNorm). From the entries above:
 *   LayerNorm: u_1 = 1/√C, c_1 = 1;  u_2 = x̂/‖x̂‖, c_2 = ‖x̂‖²/C = σ²/(σ²+ε).
 *   RMSNorm:   u   = x/‖x‖,           c   = ‖x̂‖²/C = ms/(ms+ε).
 * A term with ‖x̂‖ = 0 (x constant, or x = 0 for RMSNorm) vanishes and is dropped.
 * Orthonormality gives P² = I − Σ_k s_k u_k u_kᵀ, s_k = 2c_k − c_k² = c_k(2 − c_k) ∈ [0,1], so
 *   JᵀJ = r²·P D² P  has the eigenvalues of  M = D P² D = A − V S Vᵀ,  A = diag(γ²), V = D U, S = diag(s).
 *
 * Inertia count. Haynsworth inertia additivity on K = [[A − λI, Ṽ], [Ṽᵀ, I_k]], Ṽ = V·S^½, taking
 * the Schur complement of each diagonal block:
 *   In(K) = In(I_k) + In(A − λI − Ṽ Ṽᵀ) = In(A − λI) + In(I − Ṽᵀ(A − λI)⁻¹Ṽ),   Ṽ Ṽᵀ = V S Vᵀ,
 *   #eig(M) > λ = #{i : a_i > λ} + #pos(T(λ)) − k,   T(λ) = I − Σ_i a_i ũ_i ũ_iᵀ/(a_i − λ)   (k×k),
 * ũ_i = S^½·(u_{1,i}, …, u_{k,i}) (ṽ_i = γ_i ũ_i). This is the brief's S⁻¹ − Σ v_i v_iᵀ/(a_i − λ)
 * congruent by S^½ (same inertia), but it needs no 1/s_k: the S⁻¹ form has an entry 1/s ≫ 1 when
 * σ² ≪ ε, and working around it in the pole basis below cancelled at that scale. With
 * a/(a − λ) = 1 + λ/(a − λ) and Σ_i ũ_i ũ_iᵀ = S^½ UᵀU S^½ = S:
 *   T(λ) = (I − S) − λ·Σ_i ũ_i ũ_iᵀ/(a_i − λ),   I − S = diag((1 − c_k)²),
 * accurate also when c_k → 1 (σ² ≫ ε: 1 − s_k would cancel) and when λ ≪ max a_i.
 *
 * Poles. Near a pole a_p the terms with a_i = a_p (one coordinate, or a group with equal γ²) are
 * huge and a plain 2×2 eigenvalue test loses the small eigenvalue to cancellation. So T = T' − β·G,
 * G = Σ_{a_i = a_p} ũ_i ũ_iᵀ, β = λ/(a_p − λ), T' the rest (moderate), and we work in the
 * eigenbasis of G, where β·G is diagonal, pivoting on the huge entry. A single coordinate gives
 * G = z zᵀ exactly of rank 1: the basis is (ẑ, ẑ⊥) and the second eigenvalue is exactly 0.
 * A group is rotated by a Jacobi rotation (Golub & Van Loan §8.5); its rounding puts ~ε·β·|G| off the
 * diagonal, which enters the Schur complement only as (ε·β·|G|)²/(β·|G|); its small eigenvalue is
 * taken as det(G)/large with det(G) from Lagrange's identity (below).
 * λ exactly equal to a_p: the count is right-continuous (an eigenvalue at λ is not > λ), so take
 * λ ↓ a_p: −β·G → +∞ on range(G), giving rank(G) positive eigenvalues plus the sign of T'
 * compressed to null(G) (numerical rank: an eigenvalue of G below 1e-12 of the largest is 0).
 *
 * Accuracy (measured against SVDs of J built in quad precision, 4·10⁴ random rows, C = 2…101,
 * offsets 1e4, σ² ≪ ε, tied γ and x): relative error ≤ 2e-14 for both norms while γ varies within a
 * few-fold. It degrades like C·ε_mach·(r·max|γ| / ‖J‖)² when ‖J‖ ≪ r·max|γ|, i.e. γ spread over
 * decades with its weight on coordinates inside span(1, x̂) (e.g. x = e_i, γ_i ≫ γ_j) — the
 * cancellation is then in 1 − Σ_k u_{k,i}² itself. Cost: ≈ 50 bisection steps × 2–3 passes over C;
 * no allocation, no shared state (callers may run rows in parallel).
 *
 * lowrank_t holds what is needed to evaluate ũ_{k,i} in O(1). */
typedef struct {
    const real *x, *gamma;
    size_t C;
    int nk;               // active terms, 0..2; a LayerNorm's first term is the constant one
    int is_const[2];      // ũ_{k,i} = 1/√C (LayerNorm mean direction, s = 1) ...
    double ucon;          //     = ucon,
    double mean, drift;   // ... else ũ_{k,i} = ((x_i − μ) − drift)·scale,  scale = √s/‖x − μ‖
    double scale;
    double one_minus_s[2];// 1 − s_k = (1 − c_k)²
    int has_x;            // x̂ ≠ 0: the x̂ term is active
    double inv;           // 1/‖(x − μ) − drift‖ (0 without x̂): u_{x̂,i} = ((x_i − μ) − drift)·inv
} lowrank_t;

static inline double lowrank_u(const lowrank_t *L, int k, size_t i)
{
    return L->is_const[k] ? L->ucon : ((L->x[i] - L->mean) - L->drift) * L->scale;
}

/* T(λ) split at its nearest pole a_p (see above): T' (I − S and the coordinates off the pole),
 * G (the pole's group), and the count of a_i > λ. */
typedef struct {
    double ap;                 // a_p: the γ_i² nearest λ
    int hit;                   // λ == a_p exactly
    int above;                 // #{i : a_i > λ}
    size_t group;              // coordinates with a_i = a_p
    double z0, z1;             // ũ_i of the pole when it is a single coordinate
    double gsum;               // Σ ũ_{2,i} over the group
    double t00, t01, t11;      // T'
    double g00, g01, g11;      // G
} lowrank_split_t;

/* Number of positive eigenvalues of the symmetric 2×2 [[p, q], [q, s]]: one LDLᵀ step pivoting on
 * the diagonal entry of larger magnitude (accurate when that entry is huge). */
static int pos_count2(double p, double q, double s)
{
    if (fabs(p) < fabs(s)) { double t = p; p = s; s = t; }
    if (p == 0.0) return q != 0.0;                 // [[0, q], [q, 0]]: ±|q|
    return (p > 0.0) + (s - q * q / p > 0.0);
}

/* Pass 1: the pole a_p nearest λ; *dist = |a_p − λ|. */
static double lowrank_nearest_pole(const lowrank_t *L, double lambda, double *dist)
{
    double ap = 0.0, d_min = INFINITY;
    for (size_t i = 0; i < L->C; i++) {
        const double g = norm_gamma_at(L->gamma, i);
        const double d = fabs(g * g - lambda);
        if (d < d_min) { d_min = d; ap = g * g; }
    }
    *dist = d_min;
    return ap;
}

/* Pass 2: count a_i > λ, accumulate T' and G at the pole P->ap. */
static void lowrank_split(const lowrank_t *L, double lambda, lowrank_split_t *P)
{
    P->above = 0;
    P->group = 0;
    P->z0 = P->z1 = 0.0;
    P->gsum = 0.0;
    P->t00 = L->nk > 0 ? L->one_minus_s[0] : 0.0;
    P->t01 = 0.0;
    P->t11 = L->nk > 1 ? L->one_minus_s[1] : 0.0;
    P->g00 = P->g01 = P->g11 = 0.0;
    for (size_t i = 0; i < L->C; i++) {
        const double g = norm_gamma_at(L->gamma, i);
        const double a = g * g;
        if (a > lambda) P->above++;
        if (L->nk == 0) continue;
        const double u0 = lowrank_u(L, 0, i);
        const double u1 = L->nk > 1 ? lowrank_u(L, 1, i) : 0.0;
        if (a == P->ap) {
            P->group++;
            P->z0 = u0;
            P->z1 = u1;
            P->gsum += u1;
            P->g00 += u0 * u0;
            P->g01 += u0 * u1;
            P->g11 += u1 * u1;
        } else {
            const double w = lambda / (a - lambda);
            P->t00 -= w * u0 * u0;
            P->t01 -= w * u0 * u1;
            P->t11 -= w * u1 * u1;
        }
    }
}

/* Pass 3, over the pole's group: det G. k = 2 only for LayerNorm, whose ũ_1 = 1/√C is
 * constant, so by Lagrange's identity det G = Σ_{i<j} (ũ_{1,i}ũ_{2,j} − ũ_{2,i}ũ_{1,j})² =
 * (m/C)·Σ_group (ũ_{2,i} − mean)² (m = group size), exactly 0 for parallel ũ_i (equal x_i);
 * the sum two-pass (exact 0 for equal values). */
static double lowrank_group_det(const lowrank_t *L, const lowrank_split_t *P)
{
    const double gmean = P->gsum / (double)P->group;
    double m2 = 0.0;
    for (size_t i = 0; i < L->C; i++) {
        const double g = norm_gamma_at(L->gamma, i);
        if (g * g != P->ap) continue;
        const double du = lowrank_u(L, 1, i) - gmean;
        m2 += du * du;
    }
    return (double)P->group / (double)L->C * m2;
}

/* The eigenbasis of G (k = 2): a rotation R = [[c, s], [−s, c]], columns r0 = (c, −s),
 * r1 = (s, c), with RᵀGR = diag(d0, d1). A single coordinate: exactly rank 1; a group: a Jacobi
 * rotation (Golub & Van Loan §8.5), its smaller eigenvalue as det(G)/larger, not from the
 * cancelling sum. */
static void lowrank_rotate(const lowrank_t *L, const lowrank_split_t *P, double *cp, double *snp,
                           double *d0p, double *d1p)
{
    double c = 1.0, sn = 0.0, d0 = P->g00, d1 = P->g11;
    if (P->group == 1) {
        const double nz = hypot(P->z0, P->z1);
        if (nz > 0.0) {
            c = P->z0 / nz;
            sn = -P->z1 / nz;
            d0 = nz * nz;
            d1 = 0.0;
        }
    } else if (P->g01 != 0.0) {
        const double tau = (P->g11 - P->g00) / (2.0 * P->g01);
        const double t = (tau >= 0.0 ? 1.0 : -1.0) / (fabs(tau) + hypot(1.0, tau));
        c = 1.0 / sqrt(1.0 + t * t);
        sn = t * c;
        d0 = P->g00 - t * P->g01;
        d1 = P->g11 + t * P->g01;
        if (L->is_const[0]) {
            const double det = lowrank_group_det(L, P);
            if (fabs(d0) >= fabs(d1)) d1 = d0 > 0.0 ? det / d0 : 0.0;
            else d0 = d1 > 0.0 ? det / d1 : 0.0;
        }
    }
    *cp = c;
    *snp = sn;
    *d0p = d0;
    *d1p = d1;
}

/* #pos(T(λ)) for k = 2, T = T' − β·G, in the eigenbasis of G; λ == a_p: the rank of G
 * positive eigenvalues plus the sign of T' on null(G) (see above). */
static int lowrank_pos_rank2(const lowrank_t *L, const lowrank_split_t *P, double beta)
{
    double c, sn, d0, d1;
    lowrank_rotate(L, P, &c, &sn, &d0, &d1);
    // RᵀT'R
    double p = c * c * P->t00 - 2.0 * c * sn * P->t01 + sn * sn * P->t11;
    const double q = c * sn * (P->t00 - P->t11) + (c * c - sn * sn) * P->t01;
    double s = sn * sn * P->t00 + 2.0 * c * sn * P->t01 + c * c * P->t11;
    if (!P->hit) return pos_count2(p - beta * d0, q, s - beta * d1);
    if (d1 > d0) {   // order d0 ≥ d1
        double t = d0; d0 = d1; d1 = t;
        t = p; p = s; s = t;
    }
    if (d0 <= 0.0) return pos_count2(p, q, s);            // G = 0
    if (d1 <= 1e-12 * d0) return 1 + (s > 0.0);           // rank 1
    return 2;                                             // rank 2
}

/* #{eigenvalues of M > λ}, λ > 0 (see above). O(C). */
static int lowrank_count_above(const lowrank_t *L, double lambda)
{
    lowrank_split_t P;
    double dist;
    P.ap = lowrank_nearest_pole(L, lambda, &dist);
    P.hit = (dist == 0.0);
    lowrank_split(L, lambda, &P);
    const double beta = P.hit ? 0.0 : lambda / (P.ap - lambda);
    int pos = 0;
    if (L->nk == 1)
        pos = P.hit ? (P.g00 > 0.0 ? 1 : P.t00 > 0.0) : (P.t00 - beta * P.g00 > 0.0);
    else if (L->nk == 2)
        pos = lowrank_pos_rank2(L, &P, beta);
    return P.above + pos - L->nk;
}

/* ‖J‖ of rows so short that the u_k span all of R^C: P = Σ_k (1 − c_k) u_k u_kᵀ has no identity
 * part and the low-rank evaluation would cancel to rounding noise; closed forms instead.
 *   LayerNorm C = 1: x̂ = 0, J = 0.   C = 2: P = (1 − c)·wwᵀ, w = (1, −1)/√2, so J = r(1−c)·D w wᵀ
 *   has rank 1 and ‖J‖₂ = ‖J‖_F = r(1 − c)·√((γ_1² + γ_2²)/2).   RMSNorm C = 1: J = r·γ·(1 − c).
 * Both norms are the one returned. omc = 1 − c. */
static double short_row_norm(int ln, const real *gamma, size_t C, double r, double omc)
{
    double nrm = 0.0;
    if (ln && C == 2) {
        const double g0 = norm_gamma_at(gamma, 0), g1 = norm_gamma_at(gamma, 1);
        nrm = r * omc * sqrt(0.5 * (g0 * g0 + g1 * g1));
    } else if (!ln) {
        nrm = r * omc * fabs(norm_gamma_at(gamma, 0));
    }
    return nrm;
}

/* L for the row x (C) with mean m, c = σ²/(σ²+ε) (or ms/(ms+ε)) and omc = 1 − c. */
static void lowrank_init(lowrank_t *L, int ln, const real *x, const real *gamma, size_t C,
                         double m, double c, double omc)
{
    *L = (lowrank_t){ .x = x, .gamma = gamma, .C = C, .nk = 0, .ucon = 1.0 / sqrt((double)C) };
    // LayerNorm mean direction: u_1 = 1/√C, c_1 = 1, s_1 = 1.
    if (ln) {
        L->is_const[L->nk] = 1;
        L->one_minus_s[L->nk] = 0.0;
        L->nk++;
    }
    // Direction of x̂: x − μ, re-centred once more (LayerNorm) so that u_2 ⟂ u_1 to rounding: the
    // rounding of μ leaves a common shift in x − μ (~1e-12 for an offset 1e4), and the P² formula
    // needs u_1 ⟂ u_2. The shift is subtracted from x − μ, not folded into μ (μ + shift == μ).
    double drift = 0.0;
    if (ln) {
        for (size_t i = 0; i < C; i++) drift += x[i] - m;
        drift /= (double)C;
    }
    double ss = 0.0;
    for (size_t i = 0; i < C; i++) {
        const double d = (x[i] - m) - drift;
        ss += d * d;
    }
    L->has_x = ss > 0.0;
    L->inv = L->has_x ? 1.0 / sqrt(ss) : 0.0;
    L->mean = m;
    L->drift = drift;
    if (L->has_x) {
        const double s = c * (2.0 - c);
        L->is_const[L->nk] = 0;
        L->one_minus_s[L->nk] = omc * omc;
        L->nk++;
        L->scale = sqrt(s) * L->inv;
    }
}

/* Frobenius: ‖J‖_F² / r² = tr(M) = Σ_i a_i·‖P e_i‖²,  ‖P e_i‖² = 1 − Σ_k s_k u_{k,i}²,
 * written as (1 − Σ_k u_{k,i}²) + Σ_k (1 − c_k)² u_{k,i}² to avoid cancellation when c → 1.
 * *amax gets max a_i. */
static double lowrank_fro2(const lowrank_t *L, int ln, double omc, double *amax)
{
    const size_t C = L->C;
    double fro2 = 0.0, top = 0.0;
    const double base = ln ? (double)(C - 1) / (double)C : 1.0;   // 1 − u_{1,i}²
    for (size_t i = 0; i < C; i++) {
        const double g = norm_gamma_at(L->gamma, i);
        const double a = g * g;
        double pe = base;
        if (L->has_x) {
            const double u = ((L->x[i] - L->mean) - L->drift) * L->inv;
            pe = fmax(base - u * u, 0.0) + omc * omc * u * u;
        }
        fro2 += a * pe;
        if (a > top) top = a;
    }
    *amax = top;
    return fro2;
}

/* Spectral: ‖J‖₂ = r·√λ_max(M), 0 ≤ λ_max ≤ max a_i = amax (M ⪯ A since S ≥ 0).
 * Bisection on the count; stop when the interval is ≤ 1e-15 of its upper end (≈ 50 steps
 * when λ_max is of the order of max a_i; relative, so also accurate when λ_max ≪ max a_i). */
static double lowrank_spectral(const lowrank_t *L, double amax, double r)
{
    if (amax == 0.0) return 0.0;
    // Uniform γ = g·1 (every probe at initialisation, γ = 1): M = g²·P², whose eigenvalues are
    // g²·{1 (multiplicity C − 2 for LayerNorm, C − 1 for RMSNorm; C > 2 resp. C > 1 here),
    // (1 − c)², 0}, so λ_max = g² exactly and ‖J‖₂ = r·|g| with no bisection.
    int uniform = 1;
    for (size_t i = 1; i < L->C && uniform; i++)
        uniform = norm_gamma_at(L->gamma, i) == norm_gamma_at(L->gamma, 0);
    if (uniform) return r * sqrt(amax);
    double lo = 0.0, hi = amax;
    for (int it = 0; it < 4096 && hi - lo > 1e-15 * hi; it++) {
        const double mid = lo + 0.5 * (hi - lo);
        if (mid <= lo || mid >= hi) break;
        if (lowrank_count_above(L, mid) > 0) lo = mid; else hi = mid;
    }
    return r * sqrt(hi);
}

void norm_jacobian_norms(norm_kind_t kind, const real *x, const real *gamma,
                         size_t C, double eps, double *spec, double *fro)
{
    if (kind == NORM_NONE || C == 0) {
        // J = I
        *spec = C ? 1.0 : 0.0;
        *fro = sqrt((double)C);
        return;
    }
    const int ln = (kind == NORM_LAYERNORM);
    double m, v, r;
    norm_row_stats(ln, x, C, eps, &m, &v, &r);
    // c = σ²/(σ²+ε) (or ms/(ms+ε)), and 1 − c = ε/(σ²+ε) without cancellation.
    const double c = v / (v + eps);
    const double omc = eps / (v + eps);
    if (C <= (ln ? 2u : 1u)) {
        *spec = *fro = short_row_norm(ln, gamma, C, r, omc);
        return;
    }
    lowrank_t L;
    lowrank_init(&L, ln, x, gamma, C, m, c, omc);
    double amax;
    *fro = r * sqrt(lowrank_fro2(&L, ln, omc, &amax));
    *spec = lowrank_spectral(&L, amax, r);
}
