/* test_norm.c — LayerNorm / RMSNorm: forward statistics, backward vs central finite differences and
 * vs the seed-000/003 mean/var path form, dx vs doutᵀ·J, J vs finite differences, the exact Jacobian
 * norms vs GSL's SVD of the explicit J, the γ = 1 closed form and the paper's Lemma 3.
 *
 * Errors are "relative" in the max-norm: max_i |got_i − want_i| / max_i |want_i| (so an entry that
 * is zero in exact arithmetic is judged on the scale of the whole array).
 * NORM_TEST_VERBOSE=1 prints the worst error of every test.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_vector.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "nn/dyt.h"
#include "nn/norm.h"
#include "tests.h"

#define EPS_LN 1e-5          /* torch.nn.LayerNorm default, the project's norm_eps */
#define CMAX 256

static const norm_kind_t KINDS[2] = { NORM_LAYERNORM, NORM_RMSNORM };

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                     */

static gsl_rng *rng_new(unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

static void fill_gauss(gsl_rng *r, double *v, size_t n, double mu, double sd)
{
    for (size_t i = 0; i < n; i++) v[i] = mu + gsl_ran_gaussian(r, sd);
}

static void fill_const(double *v, size_t n, double c)
{
    for (size_t i = 0; i < n; i++) v[i] = c;
}

/* max|got − want| / max|want| (absolute when want is all zero) */
static double rel_err(const double *got, const double *want, size_t n)
{
    double dmax = 0.0, wmax = 0.0;
    for (size_t i = 0; i < n; i++) {
        dmax = fmax(dmax, fabs(got[i] - want[i]));
        wmax = fmax(wmax, fabs(want[i]));
    }
    return wmax > 0.0 ? dmax / wmax : dmax;
}

static double rel1(double got, double want)
{
    return want != 0.0 ? fabs(got - want) / fabs(want) : fabs(got);
}

static void report(const char *what, double worst)
{
    const char *v = getenv("NORM_TEST_VERBOSE");
    if (v && *v && *v != '0') printf("  %-46s worst %.3e\n", what, worst);
}

static const char *kname(norm_kind_t k)
{
    return k == NORM_LAYERNORM ? "layernorm" : k == NORM_RMSNORM ? "rmsnorm" : "none";
}

/* L = Σ dout ⊙ y(x, γ, β), N rows */
static double loss_dot(norm_kind_t kind, const double *x, const double *g, const double *b,
                       const double *dout, size_t N, size_t C, double eps)
{
    double y[3 * CMAX], mean[3], rstd[3];
    norm_forward(kind, y, mean, rstd, x, g, b, N, C, eps);
    double L = 0.0;
    for (size_t i = 0; i < N * C; i++) L += dout[i] * y[i];
    return L;
}

/* ∂L/∂θ by central differences, θ perturbed in place (step h·max(1, |θ_i|)). */
static void fd_grad(norm_kind_t kind, double *theta, size_t n, double *grad,
                    double *x, double *g, double *b, const double *dout,
                    size_t N, size_t C, double eps)
{
    for (size_t i = 0; i < n; i++) {
        const double t0 = theta[i];
        const double h = 1e-5 * fmax(1.0, fabs(t0));
        theta[i] = t0 + h;
        const double lp = loss_dot(kind, x, g, b, dout, N, C, eps);
        theta[i] = t0 - h;
        const double lm = loss_dot(kind, x, g, b, dout, N, C, eps);
        theta[i] = t0;
        grad[i] = (lp - lm) / (2.0 * h);
    }
}

/* Singular values of the C×C matrix J (descending) via gsl_linalg_SV_decomp. */
static void svd_norms(const double *J, size_t C, double *spec, double *fro)
{
    gsl_matrix *A = gsl_matrix_alloc(C, C);
    gsl_matrix *V = gsl_matrix_alloc(C, C);
    gsl_vector *S = gsl_vector_alloc(C);
    gsl_vector *w = gsl_vector_alloc(C);
    memcpy(A->data, J, C * C * sizeof(double));   // alloc'd matrix: tda == C
    ck_assert_int_eq(gsl_linalg_SV_decomp(A, V, S, w), 0);
    *spec = gsl_vector_get(S, 0);
    double f2 = 0.0;
    for (size_t i = 0; i < C; i++) f2 += gsl_vector_get(S, i) * gsl_vector_get(S, i);
    *fro = sqrt(f2);
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(w);
}

/* ------------------------------------------------------------------------------------------ */
/* forward                                                                                     */

START_TEST(test_forward_layernorm_stats)
{
    // γ = 1, β = 0: every output row has mean 0 and biased variance σ²/(σ²+ε) (not 1: ε is inside
    // the sqrt). ε is made to matter by using σ² from 1e-8 to 1e4 against ε = 1e-5 and 1e-2.
    gsl_rng *rng = rng_new(1001);
    const size_t Cs[] = { 4, 7, 16, 64 };
    const double sds[] = { 1e-4, 3e-3, 0.1, 1.0, 100.0 };
    const double epss[] = { EPS_LN, 1e-2 };
    double x[CMAX], g[CMAX], b[CMAX], y[CMAX], mean, rstd;
    double worst_mean = 0.0, worst_var = 0.0, worst_stats = 0.0;
    for (size_t ic = 0; ic < 4; ic++)
        for (size_t is = 0; is < 5; is++)
            for (size_t ie = 0; ie < 2; ie++) {
                const size_t C = Cs[ic];
                const double eps = epss[ie];
                fill_gauss(rng, x, C, 3.0, sds[is]);
                fill_const(g, C, 1.0);
                fill_const(b, C, 0.0);
                norm_forward(NORM_LAYERNORM, y, &mean, &rstd, x, g, b, 1, C, eps);
                long double mu = 0, var = 0, ym = 0, yv = 0;   // independent reference
                for (size_t i = 0; i < C; i++) mu += x[i];
                mu /= C;
                for (size_t i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
                var /= C;
                for (size_t i = 0; i < C; i++) ym += y[i];
                ym /= C;
                for (size_t i = 0; i < C; i++) yv += (y[i] - ym) * (y[i] - ym);
                yv /= C;
                const double want_var = (double)(var / (var + eps));
                const double want_r = (double)(1.0L / sqrtl(var + eps));
                // Rounding: x − μ carries an error ~ε_mach·|μ| (the offset 3 dominates when σ is
                // small), amplified by r: tolerate |mean y| ≤ 16·ε_mach·(|μ|·r + 1), and a relative
                // var(y) error ≤ 16·ε_mach·(|μ|/σ + 1).
                const double sigma = (double)sqrtl(var);
                const double tol_m = 16 * DBL_EPSILON * (fabs((double)mu) * want_r + 1.0);
                const double tol_v = 16 * DBL_EPSILON * (fabs((double)mu) / sigma + 1.0);
                const double em = fabs((double)ym);
                const double ev = rel1((double)yv, want_var);
                const double es = fmax(rel1(mean, (double)mu), rel1(rstd, want_r));
                ck_assert_msg(em < tol_m, "C=%zu sd=%g eps=%g: mean(y) = %.3e (tol %.3e)", C, sds[is],
                              eps, em, tol_m);
                ck_assert_msg(ev < tol_v, "C=%zu sd=%g eps=%g: var(y) err %.3e (tol %.3e)",
                              C, sds[is], eps, ev, tol_v);
                ck_assert_msg(es < 1e-13, "saved mean/rstd err %.3e", es);
                worst_mean = fmax(worst_mean, em / tol_m);
                worst_var = fmax(worst_var, ev / tol_v);
                worst_stats = fmax(worst_stats, es);
            }
    report("forward layernorm |mean(y)| / tolerance", worst_mean);
    report("forward layernorm var(y) err / tolerance", worst_var);
    report("forward layernorm saved mean, rstd", worst_stats);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(test_forward_rmsnorm_stats)
{
    // γ = 1: mean(y²) = ms/(ms+ε), ms = mean(x²); the saved mean is 0.
    gsl_rng *rng = rng_new(1002);
    const size_t Cs[] = { 4, 7, 16, 64 };
    const double sds[] = { 1e-4, 3e-3, 0.1, 1.0, 100.0 };
    const double epss[] = { EPS_LN, 1e-2 };
    double x[CMAX], g[CMAX], y[CMAX], mean, rstd;
    double worst = 0.0;
    for (size_t ic = 0; ic < 4; ic++)
        for (size_t is = 0; is < 5; is++)
            for (size_t ie = 0; ie < 2; ie++) {
                const size_t C = Cs[ic];
                const double eps = epss[ie];
                fill_gauss(rng, x, C, 0.0, sds[is]);
                fill_const(g, C, 1.0);
                mean = 123.0;
                norm_forward(NORM_RMSNORM, y, &mean, &rstd, x, g, NULL, 1, C, eps);
                long double ms = 0, y2 = 0;
                for (size_t i = 0; i < C; i++) ms += (long double)x[i] * x[i];
                ms /= C;
                for (size_t i = 0; i < C; i++) y2 += (long double)y[i] * y[i];
                y2 /= C;
                const double e = rel1((double)y2, (double)(ms / (ms + eps)));
                ck_assert_msg(e < 1e-13, "C=%zu sd=%g eps=%g: mean(y^2) err %.3e", C, sds[is], eps, e);
                ck_assert(mean == 0.0);
                ck_assert(rel1(rstd, (double)(1.0L / sqrtl(ms + eps))) < 1e-14);
                worst = fmax(worst, e);
            }
    report("forward rmsnorm mean(y^2) vs ms/(ms+eps)", worst);
    gsl_rng_free(rng);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* backward                                                                                    */

START_TEST(test_backward_fd)
{
    // dx, dγ, dβ against central differences of L = Σ dout ⊙ y (double precision, step 1e-5:
    // truncation ~1e-10, rounding ~1e-11). Tolerance: relative error < 1e-7.
    gsl_rng *rng = rng_new(1003);
    const size_t N = 3, Cs[] = { 4, 7, 16 };
    double worst[2] = { 0.0, 0.0 };
    for (int ik = 0; ik < 2; ik++)
        for (size_t ic = 0; ic < 3; ic++) {
            const norm_kind_t kind = KINDS[ik];
            const size_t C = Cs[ic];
            double x[3 * CMAX], g[CMAX], b[CMAX], dout[3 * CMAX], y[3 * CMAX], mean[3], rstd[3];
            double dx[3 * CMAX] = { 0 }, dg[CMAX] = { 0 }, db[CMAX] = { 0 };
            double fx[3 * CMAX], fg[CMAX], fb[CMAX];
            fill_gauss(rng, x, N * C, 0.5, 1.3);
            fill_gauss(rng, g, C, 1.0, 0.5);
            fill_gauss(rng, b, C, 0.0, 0.5);
            fill_gauss(rng, dout, N * C, 0.0, 1.0);
            norm_forward(kind, y, mean, rstd, x, g, b, N, C, EPS_LN);
            norm_backward(kind, dx, dg, kind == NORM_LAYERNORM ? db : NULL, dout, x, mean, rstd,
                          g, N, C);
            fd_grad(kind, x, N * C, fx, x, g, b, dout, N, C, EPS_LN);
            fd_grad(kind, g, C, fg, x, g, b, dout, N, C, EPS_LN);
            const double ex = rel_err(dx, fx, N * C), eg = rel_err(dg, fg, C);
            ck_assert_msg(ex < 1e-7, "%s C=%zu: dx rel err %.3e", kname(kind), C, ex);
            ck_assert_msg(eg < 1e-7, "%s C=%zu: dgamma rel err %.3e", kname(kind), C, eg);
            double e = fmax(ex, eg);
            if (kind == NORM_LAYERNORM) {
                fd_grad(kind, b, C, fb, x, g, b, dout, N, C, EPS_LN);
                const double eb = rel_err(db, fb, C);
                ck_assert_msg(eb < 1e-7, "%s C=%zu: dbeta rel err %.3e", kname(kind), C, eb);
                e = fmax(e, eb);
            }
            worst[ik] = fmax(worst[ik], e);
        }
    report("backward layernorm vs FD (dx,dgamma,dbeta)", worst[0]);
    report("backward rmsnorm vs FD (dx,dgamma)", worst[1]);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(test_backward_accumulates)
{
    // Backward adds into dx, dγ, dβ: twice from zero gives exactly 2×, from p gives exactly p + g.
    gsl_rng *rng = rng_new(1004);
    const size_t N = 3, C = 7;
    for (int ik = 0; ik < 3; ik++) {
        const norm_kind_t kind = ik < 2 ? KINDS[ik] : NORM_NONE;
        double x[21], g[7], b[7], dout[21], y[21], mean[3], rstd[3];
        double dx[21] = { 0 }, dg[7] = { 0 }, db[7] = { 0 };
        double dx1[21], dg1[7], db1[7];
        double px[21], pg[7], pb[7];
        fill_gauss(rng, x, N * C, 0.2, 1.0);
        fill_gauss(rng, g, C, 1.0, 0.3);
        fill_gauss(rng, b, C, 0.0, 0.3);
        fill_gauss(rng, dout, N * C, 0.0, 1.0);
        norm_forward(kind, y, mean, rstd, x, g, b, N, C, EPS_LN);
        norm_backward(kind, dx, dg, db, dout, x, mean, rstd, g, N, C);
        memcpy(dx1, dx, sizeof dx); memcpy(dg1, dg, sizeof dg); memcpy(db1, db, sizeof db);
        norm_backward(kind, dx, dg, db, dout, x, mean, rstd, g, N, C);
        // Bit-equal under the project's flags (-std=c11: no FMA contraction); a contracted
        // dx += r·(…) may differ in the last bit, hence 2 ulp-level tolerance rather than ==.
        double twice[21], want[21];
        for (size_t i = 0; i < N * C; i++) twice[i] = 2.0 * dx1[i];
        ck_assert(rel_err(dx, twice, N * C) <= 2 * DBL_EPSILON);
        for (size_t i = 0; i < C; i++) twice[i] = 2.0 * dg1[i];
        ck_assert(rel_err(dg, twice, C) <= 2 * DBL_EPSILON);
        for (size_t i = 0; i < C; i++) twice[i] = 2.0 * db1[i];
        ck_assert(rel_err(db, twice, C) <= 2 * DBL_EPSILON);
        // starting from arbitrary contents p: p + g
        fill_gauss(rng, px, N * C, 0.0, 1.0);
        fill_gauss(rng, pg, C, 0.0, 1.0);
        fill_gauss(rng, pb, C, 0.0, 1.0);
        memcpy(dx, px, sizeof dx); memcpy(dg, pg, sizeof dg); memcpy(db, pb, sizeof db);
        norm_backward(kind, dx, dg, db, dout, x, mean, rstd, g, N, C);
        for (size_t i = 0; i < N * C; i++) want[i] = px[i] + dx1[i];
        ck_assert(rel_err(dx, want, N * C) <= 2 * DBL_EPSILON);
        for (size_t i = 0; i < C; i++) want[i] = pg[i] + dg1[i];
        ck_assert(rel_err(dg, want, C) <= 2 * DBL_EPSILON);
        for (size_t i = 0; i < C; i++) want[i] = pb[i] + db1[i];
        ck_assert(rel_err(db, want, C) <= 2 * DBL_EPSILON);
        if (kind == NORM_NONE) {
            for (size_t i = 0; i < N * C; i++) ck_assert(dx1[i] == dout[i] && y[i] == x[i]);
            for (size_t i = 0; i < C; i++) ck_assert(dg1[i] == 0.0 && db1[i] == 0.0);
        }
        if (kind == NORM_RMSNORM)   // no β: dbeta untouched
            for (size_t i = 0; i < C; i++) ck_assert(db1[i] == 0.0);
    }
    gsl_rng_free(rng);
}
END_TEST

/* The mean/variance path form of LayerNorm's backward (= the three-path chain rule of
 * docs/design.md §9), written out independently:
 *   dx̂ = dout ⊙ γ
 *   dvar  = Σ dx̂ (x−μ) · (−1/2)(σ²+ε)^{−3/2}
 *   dmean = Σ dx̂ · (−1/√(σ²+ε)) + dvar · Σ(−2(x−μ))/C
 *   dx    = dx̂/√(σ²+ε) + dvar · 2(x−μ)/C + dmean/C
 * RMSNorm (docs/design.md §9, two paths): dms = Σ dx̂ x · (−1/2)(ms+ε)^{−3/2},  dx = dx̂/√(ms+ε) + dms·2x/C. */
static void ref_backward(norm_kind_t kind, double *dx, double *dg, double *db, const double *dout,
                         const double *x, const double *g, size_t N, size_t C, double eps)
{
    for (size_t n = 0; n < N; n++) {
        const double *xr = x + n * C, *dr = dout + n * C;
        double mu = 0.0, var = 0.0;
        if (kind == NORM_LAYERNORM) {
            for (size_t i = 0; i < C; i++) mu += xr[i];
            mu /= C;
        }
        for (size_t i = 0; i < C; i++) var += (xr[i] - mu) * (xr[i] - mu);
        var /= C;
        const double sd = sqrt(var + eps);
        double dvar = 0.0, dmean = 0.0, sum_xc = 0.0;
        for (size_t i = 0; i < C; i++)
            dvar += dr[i] * g[i] * (xr[i] - mu) * (-0.5) * pow(var + eps, -1.5);
        if (kind == NORM_LAYERNORM) {
            for (size_t i = 0; i < C; i++) {
                dmean += dr[i] * g[i] * (-1.0 / sd);
                sum_xc += -2.0 * (xr[i] - mu);
            }
            dmean += dvar * sum_xc / C;
        }
        for (size_t i = 0; i < C; i++) {
            dx[n * C + i] = dr[i] * g[i] / sd + dvar * 2.0 * (xr[i] - mu) / C + dmean / C;
            dg[i] += dr[i] * (xr[i] - mu) / sd;
            db[i] += dr[i];
        }
    }
}

START_TEST(test_backward_seed003)
{
    gsl_rng *rng = rng_new(1005);
    const size_t N = 3, Cs[] = { 4, 7, 16, 64, 256 };
    double worst[2] = { 0.0, 0.0 };
    for (int ik = 0; ik < 2; ik++)
        for (size_t ic = 0; ic < 5; ic++)
            for (int rep = 0; rep < 4; rep++) {
                const norm_kind_t kind = KINDS[ik];
                const size_t C = Cs[ic];
                double x[3 * CMAX], g[CMAX], b[CMAX], dout[3 * CMAX], y[3 * CMAX], mean[3], rstd[3];
                double dx[3 * CMAX] = { 0 }, dg[CMAX] = { 0 }, db[CMAX] = { 0 };
                double rx[3 * CMAX], rg[CMAX] = { 0 }, rb[CMAX] = { 0 };
                // rep 3: large offset and tiny spread (σ² ≪ ε)
                fill_gauss(rng, x, N * C, rep == 3 ? 5.0 : 0.3, rep == 3 ? 1e-3 : 1.0 + rep);
                fill_gauss(rng, g, C, 1.0, 0.5);
                fill_gauss(rng, b, C, 0.0, 0.5);
                fill_gauss(rng, dout, N * C, 0.0, 1.0);
                norm_forward(kind, y, mean, rstd, x, g, b, N, C, EPS_LN);
                norm_backward(kind, dx, dg, db, dout, x, mean, rstd, g, N, C);
                ref_backward(kind, rx, rg, rb, dout, x, g, N, C, EPS_LN);
                double e = fmax(rel_err(dx, rx, N * C), rel_err(dg, rg, C));
                if (kind == NORM_LAYERNORM) e = fmax(e, rel_err(db, rb, C));
                ck_assert_msg(e < 1e-12, "%s C=%zu rep=%d: rel err %.3e", kname(kind), C, rep, e);
                worst[ik] = fmax(worst[ik], e);
            }
    report("backward layernorm vs the mean/variance path form", worst[0]);
    report("backward rmsnorm vs two-path form", worst[1]);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(test_backward_vs_jacobian)
{
    // dx of a row = doutᵀ·J (J from norm_jacobian_build), relative 1e-12.
    gsl_rng *rng = rng_new(1006);
    const size_t Cs[] = { 4, 7, 16, 64 };
    static double J[64 * 64];
    double worst[2] = { 0.0, 0.0 };
    for (int ik = 0; ik < 2; ik++)
        for (size_t ic = 0; ic < 4; ic++)
            for (int rep = 0; rep < 3; rep++) {
                const norm_kind_t kind = KINDS[ik];
                const size_t C = Cs[ic];
                double x[64], g[64], y[64], dout[64], mean, rstd, dx[64] = { 0 }, dg[64] = { 0 };
                double want[64];
                fill_gauss(rng, x, C, rep == 2 ? 100.0 : 0.0, 1.0);
                fill_gauss(rng, g, C, 1.0, 0.5);
                fill_gauss(rng, dout, C, 0.0, 1.0);
                norm_forward(kind, y, &mean, &rstd, x, g, NULL, 1, C, EPS_LN);
                norm_backward(kind, dx, dg, NULL, dout, x, &mean, &rstd, g, 1, C);
                norm_jacobian_build(kind, J, x, g, C, EPS_LN);
                for (size_t j = 0; j < C; j++) {
                    want[j] = 0.0;
                    for (size_t i = 0; i < C; i++) want[j] += dout[i] * J[i * C + j];
                }
                const double e = rel_err(dx, want, C);
                ck_assert_msg(e < 1e-12, "%s C=%zu: dx vs dout^T J rel err %.3e", kname(kind), C, e);
                worst[ik] = fmax(worst[ik], e);
            }
    report("dx vs dout^T J, layernorm", worst[0]);
    report("dx vs dout^T J, rmsnorm", worst[1]);
    gsl_rng_free(rng);
}
END_TEST

#ifdef _OPENMP
START_TEST(test_deterministic_threads)
{
    // Large enough to run the OpenMP loops: 1 thread and 4 threads must agree bit for bit.
    gsl_rng *rng = rng_new(1007);
    const size_t N = 300, C = 256, NC = N * C;
    double *x = malloc(NC * sizeof *x), *dout = malloc(NC * sizeof *dout);
    double *y[2], *dx[2], *dg[2], *db[2], mean[2][300], rstd[2][300];
    double g[256], b[256];
    fill_gauss(rng, x, NC, 0.1, 2.0);
    fill_gauss(rng, dout, NC, 0.0, 1.0);
    fill_gauss(rng, g, C, 1.0, 0.5);
    fill_gauss(rng, b, C, 0.0, 0.5);
    const int saved = omp_get_max_threads();
    for (int ik = 0; ik < 2; ik++) {
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(t == 0 ? 1 : 4);
            y[t] = malloc(NC * sizeof(double));
            dx[t] = calloc(NC, sizeof(double));
            dg[t] = calloc(C, sizeof(double));
            db[t] = calloc(C, sizeof(double));
            norm_forward(KINDS[ik], y[t], mean[t], rstd[t], x, g, b, N, C, EPS_LN);
            norm_backward(KINDS[ik], dx[t], dg[t], db[t], dout, x, mean[t], rstd[t], g, N, C);
        }
        ck_assert(memcmp(y[0], y[1], NC * sizeof(double)) == 0);
        ck_assert(memcmp(rstd[0], rstd[1], N * sizeof(double)) == 0);
        ck_assert(memcmp(dx[0], dx[1], NC * sizeof(double)) == 0);
        ck_assert(memcmp(dg[0], dg[1], C * sizeof(double)) == 0);
        ck_assert(memcmp(db[0], db[1], C * sizeof(double)) == 0);
        for (int t = 0; t < 2; t++) { free(y[t]); free(dx[t]); free(dg[t]); free(db[t]); }
    }
    omp_set_num_threads(saved);
    free(x);
    free(dout);
    gsl_rng_free(rng);
}
END_TEST
#endif

/* ------------------------------------------------------------------------------------------ */
/* Jacobian                                                                                    */

START_TEST(test_jacobian_fd)
{
    // J[i][j] = ∂y_i/∂x_j against central differences of norm_forward (step 1e-5·max(1,|x_j|)),
    // relative < 1e-7.
    gsl_rng *rng = rng_new(1008);
    const size_t Cs[] = { 4, 7, 16 };
    double worst[2] = { 0.0, 0.0 };
    for (int ik = 0; ik < 2; ik++)
        for (size_t ic = 0; ic < 3; ic++)
            for (int rep = 0; rep < 3; rep++) {
                const norm_kind_t kind = KINDS[ik];
                const size_t C = Cs[ic];
                double x[16], g[16], J[256], F[256], yp[16], ym[16], mean, rstd;
                fill_gauss(rng, x, C, rep == 1 ? 3.0 : 0.0, rep == 2 ? 0.01 : 1.0);
                fill_gauss(rng, g, C, 1.0, 0.5);
                norm_jacobian_build(kind, J, x, g, C, EPS_LN);
                for (size_t j = 0; j < C; j++) {
                    const double x0 = x[j], h = 1e-5 * fmax(1.0, fabs(x0)) * (rep == 2 ? 0.01 : 1.0);
                    x[j] = x0 + h;
                    norm_forward(kind, yp, &mean, &rstd, x, g, NULL, 1, C, EPS_LN);
                    x[j] = x0 - h;
                    norm_forward(kind, ym, &mean, &rstd, x, g, NULL, 1, C, EPS_LN);
                    x[j] = x0;
                    for (size_t i = 0; i < C; i++) F[i * C + j] = (yp[i] - ym[i]) / (2.0 * h);
                }
                const double e = rel_err(J, F, C * C);
                ck_assert_msg(e < 1e-7, "%s C=%zu rep=%d: J vs FD rel err %.3e", kname(kind), C, rep, e);
                worst[ik] = fmax(worst[ik], e);
            }
    report("jacobian_build vs FD, layernorm", worst[0]);
    report("jacobian_build vs FD, rmsnorm", worst[1]);
    gsl_rng_free(rng);
}
END_TEST

/* The x of the norm tests: case 0 N(0,1); 1 offset 1e4 + N(0,1); 2 tiny spread 3 + 1e-4·N(0,1)
 * (σ² ~ 1e-8 ≪ ε); 3 σ² ≈ ε; 4 large scale 1e3·N(0,1); 5 constant (x̂ = 0: term dropped; RMSNorm
 * uses x = 0 there); 6 x = e_1 (x̂ ∝ e_1 − 1/C). */
#define NXCASES 7
static void x_case(gsl_rng *rng, int c, norm_kind_t kind, double *x, size_t C)
{
    switch (c) {
    case 0: fill_gauss(rng, x, C, 0.0, 1.0); break;
    case 1: fill_gauss(rng, x, C, 1e4, 1.0); break;
    case 2: fill_gauss(rng, x, C, 3.0, 1e-4); break;
    case 3: fill_gauss(rng, x, C, kind == NORM_LAYERNORM ? -2.0 : 0.0, sqrt(EPS_LN)); break;
    case 4: fill_gauss(rng, x, C, 0.0, 1e3); break;
    case 5: fill_const(x, C, kind == NORM_LAYERNORM ? 0.7 : 0.0); break;
    default: fill_const(x, C, 0.0); x[0] = 1.0; break;
    }
}

START_TEST(test_jacobian_norms_svd)
{
    // Exact ‖J‖₂, ‖J‖_F (no J formed) against GSL's SVD of the explicit J. The required accuracy is
    // 1e-8 relative; asserted at 1e-11 (measured ~1e-14) so that a loss of digits shows up here.
    // Frobenius also against Σ J_ij² directly (relative < 1e-12).
    gsl_rng *rng = rng_new(1009);
    const size_t Cs[] = { 4, 16, 64 };
    static double J[64 * 64];
    double worst_spec[2] = { 0 }, worst_fro[2] = { 0 }, worst_direct = 0.0;
    for (int ik = 0; ik < 2; ik++)
        for (size_t ic = 0; ic < 3; ic++)
            for (int gc = 0; gc < 3; gc++)           // γ: random, 1, ties from {0.5, 1, 2}
                for (int xc = 0; xc < NXCASES; xc++)
                    for (int rep = 0; rep < 3; rep++) {
                        const norm_kind_t kind = KINDS[ik];
                        const size_t C = Cs[ic];
                        double x[64], g[64], spec, fro, sspec, sfro;
                        if (gc == 0) fill_gauss(rng, g, C, 1.0, 0.5);
                        else if (gc == 1) fill_const(g, C, 1.0);
                        else for (size_t i = 0; i < C; i++) g[i] = ldexp(1.0, (int)gsl_rng_uniform_int(rng, 3) - 1);
                        x_case(rng, xc, kind, x, C);
                        norm_jacobian_build(kind, J, x, g, C, EPS_LN);
                        norm_jacobian_norms(kind, x, g, C, EPS_LN, &spec, &fro);
                        svd_norms(J, C, &sspec, &sfro);
                        double f2 = 0.0;
                        for (size_t i = 0; i < C * C; i++) f2 += J[i] * J[i];
                        const double es = rel1(spec, sspec), ef = rel1(fro, sfro);
                        const double ed = rel1(fro, sqrt(f2));
                        ck_assert_msg(es < 1e-11, "%s C=%zu g%d x%d: spec %.17g svd %.17g (rel %.3e)",
                                      kname(kind), C, gc, xc, spec, sspec, es);
                        ck_assert_msg(ef < 1e-11, "%s C=%zu g%d x%d: fro %.17g svd %.17g (rel %.3e)",
                                      kname(kind), C, gc, xc, fro, sfro, ef);
                        ck_assert_msg(ed < 1e-12, "%s C=%zu g%d x%d: fro %.17g direct %.17g",
                                      kname(kind), C, gc, xc, fro, sqrt(f2));
                        worst_spec[ik] = fmax(worst_spec[ik], es);
                        worst_fro[ik] = fmax(worst_fro[ik], ef);
                        worst_direct = fmax(worst_direct, ed);
                    }
    report("jacobian spec vs SVD, layernorm", worst_spec[0]);
    report("jacobian spec vs SVD, rmsnorm", worst_spec[1]);
    report("jacobian fro vs SVD, layernorm", worst_fro[0]);
    report("jacobian fro vs SVD, rmsnorm", worst_fro[1]);
    report("jacobian fro vs sqrt(sum J^2)", worst_direct);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(test_jacobian_norms_stress)
{
    // Many small rows against GSL's SVD, aimed at the bisection's weak spots: repeated γ² (a pole
    // group; dyadic values are hit exactly by the bisection midpoints), repeated x (parallel vectors
    // within a group), σ² ≪ ε (c → 0), large offsets, C = 3. γ stays within a factor 4, where the
    // method is accurate to rounding; tolerance 1e-11 relative (the brief's bar is 1e-8). (C = 2 is
    // a closed form, tested below: there ‖J‖ ~ r·ε/σ² and the explicit J itself cancels.)
    // (With γ spread over decades and γ's weight inside span(1, x̂) the relative accuracy degrades
    // like C·ε_mach·(r·max|γ| / ‖J‖)², see norm.c.)
    gsl_rng *rng = rng_new(1012);
    static double J[16 * 16];
    double worst_spec = 0.0, worst_fro = 0.0;
    for (int rep = 0; rep < 6000; rep++) {
        const norm_kind_t kind = KINDS[rep & 1];
        const size_t C = 3 + gsl_rng_uniform_int(rng, 10);
        const int gm = (int)gsl_rng_uniform_int(rng, 4), xm = (int)gsl_rng_uniform_int(rng, 5);
        double x[16], g[16], spec, fro, sspec, sfro;
        for (size_t i = 0; i < C; i++) {
            switch (gm) {
            case 0: g[i] = 1.0 + gsl_ran_gaussian(rng, 0.3); break;
            case 1: g[i] = ldexp(1.0, (int)gsl_rng_uniform_int(rng, 3) - 1); break;
            case 2: g[i] = (i % 3 == 0) ? 2.0 : 1.0; break;
            default: g[i] = (gsl_rng_uniform(rng) < 0.5 ? -1.0 : 1.0) * sqrt(1.0 + gsl_rng_uniform_int(rng, 3));
            }
            switch (xm) {
            case 0: x[i] = gsl_ran_gaussian(rng, 1.0); break;
            case 1: x[i] = 1e4 + gsl_ran_gaussian(rng, 1.0); break;
            case 2: x[i] = 5e-6 + gsl_ran_gaussian(rng, 1e-2 * pow(10.0, -3.0 * gsl_rng_uniform(rng))); break;
            case 3: x[i] = (double)gsl_rng_uniform_int(rng, 3); break;
            default: x[i] = 1e3 * gsl_ran_gaussian(rng, 1.0);
            }
        }
        norm_jacobian_build(kind, J, x, g, C, EPS_LN);
        norm_jacobian_norms(kind, x, g, C, EPS_LN, &spec, &fro);
        svd_norms(J, C, &sspec, &sfro);
        const double es = rel1(spec, sspec), ef = rel1(fro, sfro);
        ck_assert_msg(es < 1e-11, "%s C=%zu g%d x%d: spec %.17g svd %.17g (rel %.3e)", kname(kind), C,
                      gm, xm, spec, sspec, es);
        ck_assert_msg(ef < 1e-11, "%s C=%zu g%d x%d: fro %.17g svd %.17g (rel %.3e)", kname(kind), C,
                      gm, xm, fro, sfro, ef);
        worst_spec = fmax(worst_spec, es);
        worst_fro = fmax(worst_fro, ef);
    }
    report("stress (ties, poles, C=3..12) spec vs SVD", worst_spec);
    report("stress (ties, poles, C=3..12) fro vs SVD", worst_fro);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(test_jacobian_norms_tiny_rows)
{
    // Closed forms for rows the low-rank form cannot resolve: LayerNorm C = 1 (J = 0), C = 2 (rank 1),
    // RMSNorm C = 1 (J = r·γ·(1 − c)). Against the explicit J, the SVD and the formula.
    const double eps = EPS_LN;
    double x2[2] = { 0.3, -1.1 }, g2[2] = { 1.5, -0.7 }, J[4], spec, fro, sspec, sfro;
    norm_jacobian_norms(NORM_LAYERNORM, x2, g2, 2, eps, &spec, &fro);
    norm_jacobian_build(NORM_LAYERNORM, J, x2, g2, 2, eps);
    svd_norms(J, 2, &sspec, &sfro);
    const double var = 0.7 * 0.7, want = (eps / (var + eps)) / sqrt(var + eps) * sqrt(0.5 * (1.5 * 1.5 + 0.7 * 0.7));
    ck_assert_msg(rel1(spec, want) < 1e-12 && rel1(fro, want) < 1e-12, "C=2: %.17g %.17g want %.17g",
                  spec, fro, want);
    ck_assert_msg(rel1(spec, sspec) < 1e-8 && rel1(fro, sfro) < 1e-8, "C=2 svd %.17g %.17g", sspec, sfro);
    double x1 = 0.4, g1 = -2.0, J1;
    norm_jacobian_norms(NORM_LAYERNORM, &x1, &g1, 1, eps, &spec, &fro);
    norm_jacobian_build(NORM_LAYERNORM, &J1, &x1, &g1, 1, eps);
    ck_assert(spec == 0.0 && fro == 0.0 && J1 == 0.0);
    norm_jacobian_norms(NORM_RMSNORM, &x1, &g1, 1, eps, &spec, &fro);
    norm_jacobian_build(NORM_RMSNORM, &J1, &x1, &g1, 1, eps);
    const double want1 = 2.0 * (eps / (0.16 + eps)) / sqrt(0.16 + eps);
    ck_assert_msg(rel1(spec, want1) < 1e-12 && spec == fro, "rms C=1: %.17g want %.17g", spec, want1);
    ck_assert_msg(rel1(fabs(J1), want1) < 1e-9, "rms C=1 J %.17g want %.17g", J1, want1);
}
END_TEST

START_TEST(test_jacobian_norms_pole)
{
    // λ_max of M lands exactly on a pole a_i = γ_i² that the bisection hits (γ = (1, ½, ½, ½),
    // x = e_1: λ_max = ¼ with multiplicity 2, and the second midpoint is exactly ¼).
    double x[4] = { 1, 0, 0, 0 }, g[4] = { 1, 0.5, 0.5, 0.5 }, J[16], spec, fro, sspec, sfro;
    norm_jacobian_norms(NORM_LAYERNORM, x, g, 4, EPS_LN, &spec, &fro);
    norm_jacobian_build(NORM_LAYERNORM, J, x, g, 4, EPS_LN);
    svd_norms(J, 4, &sspec, &sfro);
    double mean, rstd, y[4];
    norm_forward(NORM_LAYERNORM, y, &mean, &rstd, x, g, NULL, 1, 4, EPS_LN);
    ck_assert_msg(rel1(spec, 0.5 * rstd) < 1e-14, "spec %.17g want %.17g", spec, 0.5 * rstd);
    ck_assert_msg(rel1(spec, sspec) < 1e-8 && rel1(fro, sfro) < 1e-8, "svd %.17g %.17g", sspec, sfro);
    report("pole case spec vs r/2", rel1(spec, 0.5 * rstd));
    // A pole group whose vectors are parallel (equal γ² and equal x at coordinates 0 and 2): its 2×2
    // G is rank 1 and its small eigenvalue must come out as 0, not as rounding noise times β.
    double x4[4] = { 1, 2, 1, 2 }, g4[4] = { sqrt(2.0), sqrt(3.0), -sqrt(2.0), -1.0 };
    norm_jacobian_norms(NORM_LAYERNORM, x4, g4, 4, EPS_LN, &spec, &fro);
    norm_jacobian_build(NORM_LAYERNORM, J, x4, g4, 4, EPS_LN);
    svd_norms(J, 4, &sspec, &sfro);
    ck_assert_msg(rel1(spec, sspec) < 1e-12 && rel1(fro, sfro) < 1e-12, "parallel group: %.17g svd %.17g",
                  spec, sspec);
    report("parallel pole group spec vs SVD", rel1(spec, sspec));
}
END_TEST

START_TEST(test_jacobian_norms_gamma1)
{
    // γ = 1: M = I − Σ s_k u_k u_kᵀ has the eigenvalue 1 (multiplicity C − k ≥ 1) on top, so
    // ‖J‖₂ = r exactly (LayerNorm C ≥ 3, RMSNorm C ≥ 2), and ‖J‖_F² = r²·(C − Σ_k s_k)
    // = r²·(C − 2 + (1−c)²) for LayerNorm, r²·(C − 1 + (1−c)²) for RMSNorm.
    gsl_rng *rng = rng_new(1010);
    const size_t Cs[] = { 3, 4, 16, 64, 512 };
    double worst_spec = 0.0, worst_fro = 0.0;
    for (int ik = 0; ik < 2; ik++)
        for (size_t ic = 0; ic < 5; ic++)
            for (int xc = 0; xc < NXCASES; xc++) {
                const norm_kind_t kind = KINDS[ik];
                const size_t C = Cs[ic];
                double x[512], g[512], y[512], spec, fro, mean, rstd;
                fill_const(g, C, 1.0);
                x_case(rng, xc, kind, x, C);
                norm_forward(kind, y, &mean, &rstd, x, g, NULL, 1, C, EPS_LN);
                norm_jacobian_norms(kind, x, g, C, EPS_LN, &spec, &fro);
                long double v = 0;
                for (size_t i = 0; i < C; i++) v += ((long double)x[i] - mean) * (x[i] - mean);
                v /= C;
                const double omc = (double)(EPS_LN / (v + EPS_LN));
                const int has_x = v > 0;
                const double k = (kind == NORM_LAYERNORM) + has_x;
                const double want_fro = rstd * sqrt(C - k + (has_x ? omc * omc : 0.0));
                const double es = rel1(spec, rstd), ef = rel1(fro, want_fro);
                ck_assert_msg(es <= 2 * DBL_EPSILON, "%s C=%zu x%d: spec %.17g r %.17g",
                              kname(kind), C, xc, spec, rstd);
                ck_assert_msg(ef < 1e-12, "%s C=%zu x%d: fro %.17g want %.17g",
                              kname(kind), C, xc, fro, want_fro);
                worst_spec = fmax(worst_spec, es);
                worst_fro = fmax(worst_fro, ef);
            }
    report("gamma=1: spec vs r", worst_spec);
    report("gamma=1: fro vs r*sqrt(C-k+(1-c)^2)", worst_fro);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(test_lemma3)
{
    // Paper Lemma 3, γ = 1: ‖J‖₂ = r = 1/√(σ²+ε), so ‖J‖₂·‖x−μ‖/√C = σ/√(σ²+ε) → 1 as ε → 0,
    // with 1 − it ≈ ε/(2σ²). Check: equal to σ/√(σ²+ε) (1e-14), never above 1, the gap shrinks as
    // ε → 0, and it is within 1e-6 of 1 whenever ‖x−μ‖²/C = σ² ≥ 1e6·ε (≫ ε).
    gsl_rng *rng = rng_new(1011);
    const size_t Cs[] = { 16, 64, 256 };
    const double epss[] = { 1e-1, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12 };
    double worst = 0.0, worst_asym = 0.0;
    for (size_t ic = 0; ic < 3; ic++)
        for (int rep = 0; rep < 3; rep++) {
            const size_t C = Cs[ic];
            double x[256], g[256], spec, fro;
            fill_gauss(rng, x, C, 1.5 * rep, 1.0 + rep);
            fill_const(g, C, 1.0);
            long double mu = 0, s2 = 0;
            for (size_t i = 0; i < C; i++) mu += x[i];
            mu /= C;
            for (size_t i = 0; i < C; i++) s2 += (x[i] - mu) * (x[i] - mu);
            const double dnorm = (double)sqrtl(s2), var = (double)(s2 / C);
            double prev_gap = INFINITY;
            for (int ie = 0; ie < 7; ie++) {
                const double eps = epss[ie];
                norm_jacobian_norms(NORM_LAYERNORM, x, g, C, eps, &spec, &fro);
                const double prod = spec * dnorm / sqrt((double)C);
                const double gap = fabs(1.0 - prod);
                ck_assert_msg(prod <= 1.0 + 1e-14, "C=%zu eps=%g: %.17g > 1", C, eps, prod);
                ck_assert_msg(gap <= prev_gap + 4e-16, "C=%zu eps=%g: gap %.3e grew", C, eps, gap);
                prev_gap = gap;
                if (var >= 1e6 * eps) {
                    ck_assert_msg(gap < 1e-6, "C=%zu eps=%g: |1 - lemma3| = %.3e", C, eps, gap);
                    worst = fmax(worst, gap);
                }
                const double asym = rel1(prod, sqrt(var / (var + eps)));
                ck_assert_msg(asym < 1e-14, "C=%zu eps=%g: %.17g vs sigma/sqrt(s2+eps) %.17g",
                              C, eps, prod, sqrt(var / (var + eps)));
                worst_asym = fmax(worst_asym, asym);
            }
        }
    report("lemma 3 |1 - |J|*|x-mu|/sqrt(C)| (s2>=1e6 eps)", worst);
    report("lemma 3 product vs sigma/sqrt(s2+eps)", worst_asym);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(test_norm_none)
{
    double x[5] = { 1, -2, 3, 0.5, 7 }, y[5], J[25], spec, fro, mean[1], rstd[1];
    norm_forward(NORM_NONE, y, NULL, rstd, x, NULL, NULL, 1, 5, EPS_LN);
    ck_assert(memcmp(x, y, sizeof x) == 0);
    norm_forward(NORM_NONE, y, mean, rstd, x, NULL, NULL, 1, 5, EPS_LN);
    ck_assert(mean[0] == 0.0 && rstd[0] == 1.0);
    norm_jacobian_norms(NORM_NONE, x, NULL, 5, EPS_LN, &spec, &fro);
    ck_assert(spec == 1.0 && fro == sqrt(5.0));
    norm_jacobian_build(NORM_NONE, J, x, NULL, 5, EPS_LN);
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++) ck_assert(J[i * 5 + j] == (i == j ? 1.0 : 0.0));
}
END_TEST

/* DyT (Zhu et al. 2025): the backward (dx, dα, dγ, dβ) against central differences of the
 * loss Σ w ⊙ y, and the Jacobian norms against GSL's SVD of the Jacobian built by finite
 * differences, at random γ, β, α. */
START_TEST(test_dyt)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 77);
    const size_t N = 3, C = 7;
    double x[21], g[7], b[7], w[21], y[21], dx[21] = {0}, dg[7] = {0}, db[7] = {0}, da = 0.0;
    for (size_t i = 0; i < N * C; i++) { x[i] = gsl_ran_gaussian(r, 1.5); w[i] = gsl_ran_gaussian(r, 1.0); }
    for (size_t i = 0; i < C; i++) { g[i] = 1 + gsl_ran_gaussian(r, 0.5); b[i] = gsl_ran_gaussian(r, 0.3); }
    double alpha = 0.7;
    dyt_backward(dx, &da, dg, db, w, x, alpha, g, N, C);   // dout = w
    const double h = 1e-6;
    double *vars[4] = {x, g, b, &alpha};
    const double *grads[4] = {dx, dg, db, &da};
    const size_t counts[4] = {N * C, C, C, 1};
    for (int v = 0; v < 4; v++)
        for (size_t i = 0; i < counts[v]; i++) {
            double f[2];
            const double saved = vars[v][i];
            for (int s = 0; s < 2; s++) {
                vars[v][i] = saved + (s ? h : -h);
                dyt_forward(y, x, alpha, g, b, N, C);
                f[s] = 0.0;
                for (size_t k = 0; k < N * C; k++) f[s] += w[k] * y[k];
            }
            vars[v][i] = saved;
            const double fd = (f[1] - f[0]) / (2 * h);
            ck_assert_msg(fabs(fd - grads[v][i]) < 1e-7 * (1 + fabs(fd)), "dyt var %d entry %zu: "
                          "fd %.12g, backward %.12g", v, i, fd, grads[v][i]);
        }
    // Jacobian of row 1: build it by central differences, compare its norms with dyt's
    double J[49], spec, fro, s_svd, f_svd;
    for (size_t j = 0; j < C; j++) {
        double xp[7], xm[7], yp[7], ym[7];
        memcpy(xp, x + C, sizeof xp);
        memcpy(xm, x + C, sizeof xm);
        xp[j] += h;
        xm[j] -= h;
        dyt_forward(yp, xp, alpha, g, b, 1, C);
        dyt_forward(ym, xm, alpha, g, b, 1, C);
        for (size_t i = 0; i < C; i++) J[i * C + j] = (yp[i] - ym[i]) / (2 * h);
    }
    dyt_jacobian_norms(x + C, alpha, g, C, &spec, &fro);
    svd_norms(J, C, &s_svd, &f_svd);
    ck_assert_double_eq_tol(spec, s_svd, 1e-8 * s_svd);
    ck_assert_double_eq_tol(fro, f_svd, 1e-8 * f_svd);
    gsl_rng_free(r);
}
END_TEST

Suite *norm_suite(void)
{
    Suite *s = suite_create("norm");
    TCase *tf = tcase_create("forward");
    tcase_add_test(tf, test_forward_layernorm_stats);
    tcase_add_test(tf, test_forward_rmsnorm_stats);
    tcase_add_test(tf, test_norm_none);
    suite_add_tcase(s, tf);

    TCase *tb = tcase_create("backward");
    tcase_add_test(tb, test_backward_fd);
    tcase_add_test(tb, test_backward_accumulates);
    tcase_add_test(tb, test_backward_seed003);
    tcase_add_test(tb, test_backward_vs_jacobian);
#ifdef _OPENMP
    tcase_add_test(tb, test_deterministic_threads);
#endif
    suite_add_tcase(s, tb);

    TCase *tj = tcase_create("jacobian");
    tcase_set_timeout(tj, 120);
    tcase_add_test(tj, test_jacobian_fd);
    tcase_add_test(tj, test_jacobian_norms_svd);
    tcase_add_test(tj, test_jacobian_norms_stress);
    tcase_add_test(tj, test_jacobian_norms_tiny_rows);
    tcase_add_test(tj, test_jacobian_norms_pole);
    tcase_add_test(tj, test_jacobian_norms_gamma1);
    tcase_add_test(tj, test_lemma3);
    tcase_add_test(tj, test_dyt);
    suite_add_tcase(s, tj);
    return s;
}
