/* norm.c — LayerNorm / RMSNorm over the last axis: forward and backward (the Jacobian of one
 * row and its norms: norm_jacobian.c).
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
#include "nn/norm_internal.h"
#include "nn/round.h"
#include "util/lowp.h"

#include <math.h>
#include <string.h>
#include "nn/vec.h"
#include "util/threads.h"

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

/* norm_row_stats of the ROWS rows x, x + C, ... at once: each row's two sums are its own, the
 * same operations in the same order as norm_row_stats, so the same bits; four chains of
 * additions in flight instead of one (a sum's additions wait on each other: latency, not
 * throughput, bounds a row of 64 or 128). */
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
                norm_row_stats(ln, xr + q * C, C, j->eps, ms + q, vs + q, rs + q);
        }
        double m = ms[k], r = rs[k];
        if (round_policy()->norm_stats) {   // bfloat16*, round_norm_stats (nn/round.h)
            m = lowp_bf16((float)m);
            r = lowp_bf16((float)r);
        }
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
            o[i] = norm_gamma_at(gamma, i) * xhat + (b ? b[i] : 0.0);
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
        double dnorm = dor[i] * norm_gamma_at(gamma, i);
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
        const double g = norm_gamma_at(gamma, i);
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
            double dnorm = dor[i] * norm_gamma_at(gamma, i);
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
