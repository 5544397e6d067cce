/* norm.c — LayerNorm / RMSNorm over the last axis: forward, backward, Jacobian and its norms.
 *
 * x is (N,C) row-major, one normalisation per row (token). Everything is double precision.
 * Seeds: 000 (LayerNorm forward + backward derivation), 001 (RMSNorm, manual Jacobians),
 * 003 (mean/var path form), 004 (biased variance, eps inside the sqrt, as torch.nn.LayerNorm).
 *
 * Threads: the step's pool (util/threads.h), never OpenMP (an OpenMP region per norm call left its
 * workers spinning for milliseconds afterwards, starving OpenBLAS's threads in the next GEMM:
 * docs/performance.md). The forward splits rows; the backward splits the rows of dx and, in the
 * same region, the columns of dgamma/dbeta. Every reduction (over the C entries of a row; over the
 * N rows of a column of dgamma/dbeta) still runs whole, in its fixed order, on one thread: results
 * are bit-identical at every thread count and to the serial code.
 */
#include "nn/norm.h"

#include <math.h>
#include <string.h>
#include "nn/vec.h"
#include "util/threads.h"

/* gamma == NULL means γ = 1 (convenient for probes and tests; not required by norm.h). */
static inline double gamma_at(const real *gamma, size_t i)
{
    return gamma ? gamma[i] : 1.0;
}

/* Statistics of one row (C). LayerNorm (Ba et al. 2016):  μ = Σx/C,  σ² = Σ(x−μ)²/C (biased),
 * r = 1/√(σ² + ε).  RMSNorm (Zhang & Sennrich 2019):  μ := 0,  ms = Σx²/C,  r = 1/√(ms + ε).
 * *var gets σ² (LayerNorm) or ms (RMSNorm); for both x̂ = (x − μ)·r. */
static void row_stats(int layernorm, const real *x, size_t C, double eps,
                      double *mean, double *var, double *rstd)
{
    double m = 0.0;
    if (layernorm) {
        for (size_t i = 0; i < C; i++) m += x[i];
        m /= (double)C;
    }
    double v = 0.0;
    for (size_t i = 0; i < C; i++) {
        double d = x[i] - m;
        v += d * d;
    }
    v /= (double)C;
    *mean = m;
    *var = v;
    *rstd = 1.0 / sqrt(v + eps);
}

/* ------------------------------------------------------------------------------------------ */
/* forward / backward                                                                          */

/* One call's arguments, for the parts of a region (util/threads.h). */
typedef struct {
    norm_kind_t kind;
    int set;
    real *out, *mean, *rstd;                 /* forward */
    real *dx, *dgamma, *dbeta;               /* backward */
    const real *x, *gamma, *beta, *dout, *smean, *srstd;
    size_t N, C;
    double eps;
} norm_job_t;

/* row_stats of the ROWS rows x, x + C, ... at once: each row's two sums are its own, the same
 * operations in the same order as row_stats, so the same bits; four chains of additions in
 * flight instead of one (a sum's additions wait on each other: latency, not throughput, bounds
 * a row of 64 or 128). */
#define ROWS 4
static void row_stats_rows(int layernorm, const real *x, size_t C, double eps, double *mean,
                           double *var, double *rstd)
{
    const real *x0 = x, *x1 = x + C, *x2 = x + 2 * C, *x3 = x + 3 * C;   // (C) each
    double m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0;   // scalars: registers, not the stack
    if (layernorm) {
        for (size_t i = 0; i < C; i++) {
            m0 += x0[i];
            m1 += x1[i];
            m2 += x2[i];
            m3 += x3[i];
        }
        m0 /= (double)C;
        m1 /= (double)C;
        m2 /= (double)C;
        m3 /= (double)C;
    }
    double v0 = 0.0, v1 = 0.0, v2 = 0.0, v3 = 0.0;
    for (size_t i = 0; i < C; i++) {
        double d0 = x0[i] - m0, d1 = x1[i] - m1, d2 = x2[i] - m2, d3 = x3[i] - m3;
        v0 += d0 * d0;
        v1 += d1 * d1;
        v2 += d2 * d2;
        v3 += d3 * d3;
    }
    const double m[ROWS] = {m0, m1, m2, m3}, v[ROWS] = {v0, v1, v2, v3};
    for (int k = 0; k < ROWS; k++) {
        mean[k] = m[k];
        var[k] = v[k] / (double)C;
        rstd[k] = 1.0 / sqrt(var[k] + eps);
    }
}

/* Rows [n0, n1) of the forward. */
static void forward_rows(const norm_job_t *j, size_t n0, size_t n1)
{
    const size_t C = j->C;
    const int ln = (j->kind == NORM_LAYERNORM);
    const real *gamma = j->gamma, *b = ln ? j->beta : NULL;   // RMSNorm has no β
    double ms[ROWS], vs[ROWS], rs[ROWS];
    for (size_t n = n0; n < n1; n++) {
        const real *xr = j->x + n * C;  // (C)
        real *o = j->out + n * C;       // (C)
        const size_t k = (n - n0) % ROWS;   // the row's place in its group of ROWS rows
        if (k == 0) {   // the group's statistics: together when the group is whole
            const size_t rows = n1 - n < ROWS ? n1 - n : ROWS;
            if (rows == ROWS) row_stats_rows(ln, xr, C, j->eps, ms, vs, rs);
            else for (size_t q = 0; q < rows; q++)
                row_stats(ln, xr + q * C, C, j->eps, ms + q, vs + q, rs + q);
        }
        const double m = ms[k], r = rs[k];
        // y = γ ⊙ (x − μ)·r + β   (Ba et al.: x̂_i = (x_i − μ)/√(σ²+ε), y_i = γ x̂_i + β)
        // y = γ ⊙ x·r             (Zhang & Sennrich: x / √(mean(x²) + ε) · γ)
        size_t i = 0;
        if (gamma) {   // VR_LANES lanes, each the scalar expression below
            const vreal vm = vr_set1(m), vr = vr_set1(r), zero = vr_set1(0.0);
            for (; i + VR_LANES <= C; i += VR_LANES) {
                const vreal xhat = (vr_load(xr + i) - vm) * vr;
                vr_store(o + i, vr_load(gamma + i) * xhat + (b ? vr_load(b + i) : zero));
            }
        }
        for (; i < C; i++) {
            double xhat = (xr[i] - m) * r;
            o[i] = gamma_at(gamma, i) * xhat + (b ? b[i] : 0.0);
        }
        if (j->mean) j->mean[n] = m;    // zero for RMSNorm
        j->rstd[n] = r;
    }
}

static void forward_part(void *ctx, int t, int nt)
{
    const norm_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->N, t, nt, 1, &lo, &hi);
    forward_rows(j, lo, hi);
}

void norm_forward(norm_kind_t kind, real *out, real *mean, real *rstd,
                  const real *x, const real *gamma, const real *beta,
                  size_t N, size_t C, double eps)
{
    if (kind == NORM_NONE) {
        // y = x
        if (out != x) memmove(out, x, N * C * sizeof *out);
        for (size_t n = 0; n < N; n++) {
            if (mean) mean[n] = 0.0;
            if (rstd) rstd[n] = 1.0;
        }
        return;
    }
    norm_job_t j = {.kind = kind, .out = out, .mean = mean, .rstd = rstd, .x = x,
                    .gamma = gamma, .beta = beta, .N = N, .C = C, .eps = eps};
    threads_run(threads_for(6.0 * (double)N * C), forward_part, &j);
}

/* Row n's sums of the backward: *s1 = Σ_i dx̂_i, *s2 = Σ_i dx̂_i·x̂_i, in order. */
static void backward_sums(const norm_job_t *j, size_t n, int ln, double *s1, double *s2)
{
    const size_t C = j->C;
    const real *xr = j->x + n * C, *dor = j->dout + n * C, *gamma = j->gamma;   // (C)
    const double m = ln ? j->smean[n] : 0.0, r = j->srstd[n];
    double a = 0.0, b = 0.0;
    for (size_t i = 0; i < C; i++) {
        double xhat = (xr[i] - m) * r;
        double dnorm = dor[i] * gamma_at(gamma, i);
        a += dnorm;
        b += dnorm * xhat;
    }
    *s1 = a;
    *s2 = b;
}

/* backward_sums of the ROWS rows from n at once: each row's the same operations in the same
 * order, so the same bits, with ROWS chains of additions in flight (row_stats_rows). */
static void backward_sums_rows(const norm_job_t *j, size_t n, int ln, double *s1, double *s2)
{
    const size_t C = j->C;
    const real *x = j->x + n * C, *dout = j->dout + n * C, *gamma = j->gamma;   // (ROWS,C)
    const real *x0 = x, *x1 = x + C, *x2 = x + 2 * C, *x3 = x + 3 * C;
    const real *d0 = dout, *d1 = dout + C, *d2 = dout + 2 * C, *d3 = dout + 3 * C;
    const double m0 = ln ? j->smean[n] : 0.0, m1 = ln ? j->smean[n + 1] : 0.0;
    const double m2 = ln ? j->smean[n + 2] : 0.0, m3 = ln ? j->smean[n + 3] : 0.0;
    const double r0 = j->srstd[n], r1 = j->srstd[n + 1], r2 = j->srstd[n + 2];
    const double r3 = j->srstd[n + 3];
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0;
    for (size_t i = 0; i < C; i++) {
        const double g = gamma_at(gamma, i);
        double xh0 = (x0[i] - m0) * r0, xh1 = (x1[i] - m1) * r1;
        double xh2 = (x2[i] - m2) * r2, xh3 = (x3[i] - m3) * r3;
        double dn0 = d0[i] * g, dn1 = d1[i] * g, dn2 = d2[i] * g, dn3 = d3[i] * g;
        a0 += dn0;
        a1 += dn1;
        a2 += dn2;
        a3 += dn3;
        b0 += dn0 * xh0;
        b1 += dn1 * xh1;
        b2 += dn2 * xh2;
        b3 += dn3 * xh3;
    }
    s1[0] = a0, s1[1] = a1, s1[2] = a2, s1[3] = a3;
    s2[0] = b0, s2[1] = b1, s2[2] = b2, s2[3] = b3;
}

/* Rows [n0, n1) of the backward: dx, and with params the parameter gradients of those rows too
 * (the serial form: one pass). set: dx = 0 + (the gradient) instead of dx += it. 0.0 + v is v
 * but for v = −0 (→ +0), exactly what zeroing dx and accumulating gave, without that pass.
 *   LayerNorm:  ∂L/∂x_i = r·[ dx̂_i − (1/C)Σ_j dx̂_j − x̂_i·(1/C)Σ_j dx̂_j x̂_j ],  dx̂ = dout ⊙ γ
 *   RMSNorm (no mean path):  ∂L/∂x_i = r·[ dx̂_i − x̂_i·(1/C)Σ_j dx̂_j x̂_j ]
 *   ∂L/∂γ = Σ_n dout ⊙ x̂,  ∂L/∂β = Σ_n dout (LayerNorm)  (accumulated row by row, in order) */
static void backward_rows(const norm_job_t *j, size_t n0, size_t n1, int params)
{
    const size_t C = j->C;
    const int ln = (j->kind == NORM_LAYERNORM), set = j->set;
    const real *gamma = j->gamma;
    real *dgamma = params ? j->dgamma : NULL, *db = params && ln ? j->dbeta : NULL;
    double s1[ROWS], s2[ROWS];
    for (size_t n = n0; n < n1; n++) {
        const real *xr = j->x + n * C;       // (C)
        const real *dor = j->dout + n * C;   // (C)
        real *dxr = j->dx + n * C;           // (C)
        const double m = ln ? j->smean[n] : 0.0;
        const double r = j->srstd[n];
        const size_t k = (n - n0) % ROWS;   // the row's place in its group of ROWS rows
        if (k == 0) {   // the group's sums: together when the group is whole
            const size_t rows = n1 - n < ROWS ? n1 - n : ROWS;
            if (rows == ROWS) backward_sums_rows(j, n, ln, s1, s2);
            else for (size_t q = 0; q < rows; q++) backward_sums(j, n + q, ln, s1 + q, s2 + q);
        }
        const double dnorm_mean = ln ? s1[k] / (double)C : 0.0;   // mean(dx̂)
        const double dnorm_norm_mean = s2[k] / (double)C;        // mean(dx̂ ⊙ x̂)
        size_t i = 0;
        if (gamma) {   // VR_LANES lanes, each the scalar expression below
            const vreal vm = vr_set1(m), vr = vr_set1(r), zero = vr_set1(0.0);
            const vreal vmean = vr_set1(dnorm_mean), vnm = vr_set1(dnorm_norm_mean);
            for (; i + VR_LANES <= C; i += VR_LANES) {
                const vreal xhat = (vr_load(xr + i) - vm) * vr, d = vr_load(dor + i);
                const vreal dnorm = d * vr_load(gamma + i);
                vr_store(dxr + i, (set ? zero : vr_load(dxr + i)) +
                                      vr * (dnorm - vmean - xhat * vnm));
                if (dgamma) vr_store(dgamma + i, vr_load(dgamma + i) + d * xhat);
                if (db) vr_store(db + i, vr_load(db + i) + d);
            }
        }
        for (; i < C; i++) {
            double xhat = (xr[i] - m) * r;
            double dnorm = dor[i] * gamma_at(gamma, i);
            dxr[i] = (set ? 0.0 : dxr[i]) + r * (dnorm - dnorm_mean - xhat * dnorm_norm_mean);
            if (dgamma) dgamma[i] += dor[i] * xhat;
            if (db) db[i] += dor[i];
        }
    }
}

/* Columns [c0, c1) of dgamma, dbeta over all rows, each column's rows in order: the same
 * additions in the same order as the row loop makes them. */
static void backward_params(const norm_job_t *j, size_t c0, size_t c1)
{
    const size_t C = j->C;
    const int ln = (j->kind == NORM_LAYERNORM);
    real *dgamma = j->dgamma, *db = ln ? j->dbeta : NULL;
    for (size_t n = 0; n < j->N; n++) {
        const real *xr = j->x + n * C, *dor = j->dout + n * C;
        const double m = ln ? j->smean[n] : 0.0;
        const double r = j->srstd[n];
        const vreal vm = vr_set1(m), vr = vr_set1(r);
        size_t i = c0;
        for (; i + VR_LANES <= c1; i += VR_LANES) {   // lanes: the scalar expression below
            const vreal xhat = (vr_load(xr + i) - vm) * vr, d = vr_load(dor + i);
            if (dgamma) vr_store(dgamma + i, vr_load(dgamma + i) + d * xhat);
            if (db) vr_store(db + i, vr_load(db + i) + d);
        }
        for (; i < c1; i++) {
            double xhat = (xr[i] - m) * r;
            if (dgamma) dgamma[i] += dor[i] * xhat;
            if (db) db[i] += dor[i];
        }
    }
}

/* Part t: a block of rows of dx, and a block of columns of the parameter gradients. */
static void backward_part(void *ctx, int t, int nt)
{
    const norm_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->N, t, nt, 1, &lo, &hi);
    backward_rows(j, lo, hi, 0);
    threads_part(j->C, t, nt, 8, &lo, &hi);
    backward_params(j, lo, hi);
}

/* y = x: dx (+)= dout over elements [lo, hi) of part t. */
static void identity_part(void *ctx, int t, int nt)
{
    const norm_job_t *j = ctx;
    size_t lo, hi;
    threads_part(j->N * j->C, t, nt, 8, &lo, &hi);
    if (j->set) for (size_t i = lo; i < hi; i++) j->dx[i] = 0.0 + j->dout[i];
    else for (size_t i = lo; i < hi; i++) j->dx[i] += j->dout[i];
}

static void backward(norm_kind_t kind, real *dx, int set, real *dgamma, real *dbeta,
                     const real *dout, const real *x, const real *mean,
                     const real *rstd, const real *gamma, size_t N, size_t C)
{
    norm_job_t j = {.kind = kind, .set = set, .dx = dx, .dgamma = dgamma, .dbeta = dbeta,
                    .x = x, .gamma = gamma, .dout = dout, .smean = mean, .srstd = rstd,
                    .N = N, .C = C};
    if (kind == NORM_NONE) {
        threads_run(threads_for((double)N * C), identity_part, &j);
        return;
    }
    const int nt = threads_for(12.0 * (double)N * C);
    if (nt <= 1) backward_rows(&j, 0, N, 1);
    else threads_run(nt, backward_part, &j);
}

void norm_backward(norm_kind_t kind, real *dx, real *dgamma, real *dbeta,
                   const real *dout, const real *x, const real *mean,
                   const real *rstd, const real *gamma, size_t N, size_t C)
{
    backward(kind, dx, 0, dgamma, dbeta, dout, x, mean, rstd, gamma, N, C);
}

void norm_backward_set(norm_kind_t kind, real *dx, real *dgamma, real *dbeta,
                       const real *dout, const real *x, const real *mean,
                       const real *rstd, const real *gamma, size_t N, size_t C)
{
    backward(kind, dx, 1, dgamma, dbeta, dout, x, mean, rstd, gamma, N, C);
}

/* ------------------------------------------------------------------------------------------ */
/* Jacobian of one row                                                                         */

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
    row_stats(ln, x, C, eps, &m, &v, &r);
    const double invC = 1.0 / (double)C;
    const double centre = ln ? invC : 0.0;
    // LayerNorm (docs/design.md §9):  ∂y_i/∂x_j = γ_i·[ (δ_ij − 1/C)/√(σ²+ε) − (x_i−μ)(x_j−μ)/(C·(σ²+ε)^{3/2}) ]
    //                                 = γ_i·r·( δ_ij − 1/C − x̂_i x̂_j / C )
    //           RMSNorm:    ∂y_i/∂x_j = γ_i·[ δ_ij/rms − x_i x_j/(C·rms³) ] = γ_i·r·( δ_ij − x̂_i x̂_j / C )
    for (size_t i = 0; i < C; i++) {
        const double gr = gamma_at(gamma, i) * r;
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
 * The struct holds what is needed to evaluate ũ_{k,i} in O(1). */
typedef struct {
    const real *x, *gamma;
    size_t C;
    int nk;               // active terms, 0..2; a LayerNorm's first term is the constant one
    int is_const[2];      // ũ_{k,i} = 1/√C (LayerNorm mean direction, s = 1) ...
    double ucon;          //     = ucon,
    double mean, drift;   // ... else ũ_{k,i} = ((x_i − μ) − drift)·scale,  scale = √s/‖x − μ‖
    double scale;
    double one_minus_s[2];// 1 − s_k = (1 − c_k)²
} lowrank_t;

static inline double lowrank_u(const lowrank_t *L, int k, size_t i)
{
    return L->is_const[k] ? L->ucon : ((L->x[i] - L->mean) - L->drift) * L->scale;
}

/* Number of positive eigenvalues of the symmetric 2×2 [[p, q], [q, s]]: one LDLᵀ step pivoting on
 * the diagonal entry of larger magnitude (accurate when that entry is huge). */
static int pos_count2(double p, double q, double s)
{
    if (fabs(p) < fabs(s)) { double t = p; p = s; s = t; }
    if (p == 0.0) return q != 0.0;                 // [[0, q], [q, 0]]: ±|q|
    return (p > 0.0) + (s - q * q / p > 0.0);
}

/* #{eigenvalues of M > λ}, λ > 0 (see above). O(C). */
static int lowrank_count_above(const lowrank_t *L, double lambda)
{
    // pass 1: the nearest pole
    double ap = 0.0, dist = INFINITY;
    for (size_t i = 0; i < L->C; i++) {
        const double g = gamma_at(L->gamma, i);
        const double d = fabs(g * g - lambda);
        if (d < dist) { dist = d; ap = g * g; }
    }
    const int hit = (dist == 0.0);
    // pass 2: count a_i > λ, accumulate T' and G
    int above = 0;
    size_t group = 0;
    double z0 = 0.0, z1 = 0.0;       // ũ_i of the pole when it is a single coordinate
    double gsum = 0.0;               // Σ ũ_{2,i} over the group
    double t00 = L->nk > 0 ? L->one_minus_s[0] : 0.0, t01 = 0.0;
    double t11 = L->nk > 1 ? L->one_minus_s[1] : 0.0;
    double g00 = 0.0, g01 = 0.0, g11 = 0.0;
    for (size_t i = 0; i < L->C; i++) {
        const double g = gamma_at(L->gamma, i);
        const double a = g * g;
        if (a > lambda) above++;
        if (L->nk == 0) continue;
        const double u0 = lowrank_u(L, 0, i);
        const double u1 = L->nk > 1 ? lowrank_u(L, 1, i) : 0.0;
        if (a == ap) {
            group++;
            z0 = u0;
            z1 = u1;
            gsum += u1;
            g00 += u0 * u0;
            g01 += u0 * u1;
            g11 += u1 * u1;
        } else {
            const double w = lambda / (a - lambda);
            t00 -= w * u0 * u0;
            t01 -= w * u0 * u1;
            t11 -= w * u1 * u1;
        }
    }
    const double beta = hit ? 0.0 : lambda / (ap - lambda);
    int pos = 0;
    if (L->nk == 1) {
        pos = hit ? (g00 > 0.0 ? 1 : t00 > 0.0) : (t00 - beta * g00 > 0.0);
    } else if (L->nk == 2) {
        // rotation R = [[c, s], [−s, c]], columns r0 = (c, −s), r1 = (s, c), with RᵀGR = diag(d0, d1)
        double c = 1.0, sn = 0.0, d0 = g00, d1 = g11;
        if (group == 1) {
            const double nz = hypot(z0, z1);
            if (nz > 0.0) {
                c = z0 / nz;
                sn = -z1 / nz;
                d0 = nz * nz;
                d1 = 0.0;
            }
        } else if (g01 != 0.0) {
            const double tau = (g11 - g00) / (2.0 * g01);
            const double t = (tau >= 0.0 ? 1.0 : -1.0) / (fabs(tau) + hypot(1.0, tau));
            c = 1.0 / sqrt(1.0 + t * t);
            sn = t * c;
            d0 = g00 - t * g01;
            d1 = g11 + t * g01;
            // The smaller eigenvalue as det(G)/larger, not from the cancelling sum above. k = 2 only
            // for LayerNorm, whose ũ_1 = 1/√C is constant, so by Lagrange's identity
            // det G = Σ_{i<j} (ũ_{1,i}ũ_{2,j} − ũ_{2,i}ũ_{1,j})² = (m/C)·Σ_group (ũ_{2,i} − mean)²
            // (m = group size), exactly 0 for parallel ũ_i (equal x_i).
            if (L->is_const[0]) {
                // pass 3 over the group: Σ (ũ_{2,i} − mean)², two-pass (exact 0 for equal values)
                const double gmean = gsum / (double)group;
                double m2 = 0.0;
                for (size_t i = 0; i < L->C; i++) {
                    const double g = gamma_at(L->gamma, i);
                    if (g * g != ap) continue;
                    const double du = lowrank_u(L, 1, i) - gmean;
                    m2 += du * du;
                }
                const double det = (double)group / (double)L->C * m2;
                if (fabs(d0) >= fabs(d1)) d1 = d0 > 0.0 ? det / d0 : 0.0;
                else d0 = d1 > 0.0 ? det / d1 : 0.0;
            }
        }
        // RᵀT'R
        double p = c * c * t00 - 2.0 * c * sn * t01 + sn * sn * t11;
        const double q = c * sn * (t00 - t11) + (c * c - sn * sn) * t01;
        double s = sn * sn * t00 + 2.0 * c * sn * t01 + c * c * t11;
        if (!hit) {
            pos = pos_count2(p - beta * d0, q, s - beta * d1);
        } else {
            if (d1 > d0) {   // order d0 ≥ d1
                double t = d0; d0 = d1; d1 = t;
                t = p; p = s; s = t;
            }
            if (d0 <= 0.0) pos = pos_count2(p, q, s);            // G = 0
            else if (d1 <= 1e-12 * d0) pos = 1 + (s > 0.0);      // rank 1
            else pos = 2;                                        // rank 2
        }
    }
    return above + pos - L->nk;
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
    row_stats(ln, x, C, eps, &m, &v, &r);
    // c = σ²/(σ²+ε) (or ms/(ms+ε)), and 1 − c = ε/(σ²+ε) without cancellation.
    const double c = v / (v + eps);
    const double omc = eps / (v + eps);

    // Rows so short that the u_k span all of R^C: P = Σ_k (1 − c_k) u_k u_kᵀ has no identity part and
    // the low-rank evaluation below would cancel to rounding noise; closed forms instead.
    //   LayerNorm C = 1: x̂ = 0, J = 0.   C = 2: P = (1 − c)·wwᵀ, w = (1, −1)/√2, so J = r(1−c)·D w wᵀ
    //   has rank 1 and ‖J‖₂ = ‖J‖_F = r(1 − c)·√((γ_1² + γ_2²)/2).   RMSNorm C = 1: J = r·γ·(1 − c).
    if (C <= (ln ? 2u : 1u)) {
        double nrm = 0.0;
        if (ln && C == 2) {
            const double g0 = gamma_at(gamma, 0), g1 = gamma_at(gamma, 1);
            nrm = r * omc * sqrt(0.5 * (g0 * g0 + g1 * g1));
        } else if (!ln) {
            nrm = r * omc * fabs(gamma_at(gamma, 0));
        }
        *spec = *fro = nrm;
        return;
    }

    lowrank_t L = { .x = x, .gamma = gamma, .C = C, .nk = 0, .ucon = 1.0 / sqrt((double)C) };
    // LayerNorm mean direction: u_1 = 1/√C, c_1 = 1, s_1 = 1.
    if (ln) {
        L.is_const[L.nk] = 1;
        L.one_minus_s[L.nk] = 0.0;
        L.nk++;
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
    const int has_x = ss > 0.0;
    const double inv = has_x ? 1.0 / sqrt(ss) : 0.0;
    if (has_x) {
        const double s = c * (2.0 - c);
        L.is_const[L.nk] = 0;
        L.one_minus_s[L.nk] = omc * omc;
        L.nk++;
        L.mean = m;
        L.drift = drift;
        L.scale = sqrt(s) * inv;
    }

    // Frobenius: ‖J‖_F² = r²·tr(M) = r²·Σ_i a_i·‖P e_i‖²,  ‖P e_i‖² = 1 − Σ_k s_k u_{k,i}²,
    // written as (1 − Σ_k u_{k,i}²) + Σ_k (1 − c_k)² u_{k,i}² to avoid cancellation when c → 1.
    double fro2 = 0.0, amax = 0.0;
    const double base = ln ? (double)(C - 1) / (double)C : 1.0;   // 1 − u_{1,i}²
    for (size_t i = 0; i < C; i++) {
        const double g = gamma_at(gamma, i);
        const double a = g * g;
        double pe = base;
        if (has_x) {
            const double u = ((x[i] - m) - drift) * inv;
            pe = fmax(base - u * u, 0.0) + omc * omc * u * u;
        }
        fro2 += a * pe;
        if (a > amax) amax = a;
    }
    *fro = r * sqrt(fro2);

    // Spectral: ‖J‖₂² = r²·λ_max(M), 0 ≤ λ_max ≤ max a_i (M ⪯ A since S ≥ 0).
    // Bisection on the count; stop when the interval is ≤ 1e-15 of its upper end (≈ 50 steps
    // when λ_max is of the order of max a_i; relative, so also accurate when λ_max ≪ max a_i).
    if (amax == 0.0) { *spec = 0.0; return; }
    // Uniform γ = g·1 (every probe at initialisation, γ = 1): M = g²·P², whose eigenvalues are
    // g²·{1 (multiplicity C − 2 for LayerNorm, C − 1 for RMSNorm; C > 2 resp. C > 1 here),
    // (1 − c)², 0}, so λ_max = g² exactly and ‖J‖₂ = r·|g| with no bisection.
    int uniform = 1;
    for (size_t i = 1; i < C && uniform; i++) uniform = gamma_at(gamma, i) == gamma_at(gamma, 0);
    if (uniform) { *spec = r * sqrt(amax); return; }
    double lo = 0.0, hi = amax;
    for (int it = 0; it < 4096 && hi - lo > 1e-15 * hi; it++) {
        const double mid = lo + 0.5 * (hi - lo);
        if (mid <= lo || mid >= hi) break;
        if (lowrank_count_above(&L, mid) > 0) lo = mid; else hi = mid;
    }
    *spec = r * sqrt(hi);
}
