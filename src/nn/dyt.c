/* dyt.c — Dynamic Tanh forward, backward and Jacobian norms (nn/dyt.h). Serial, fixed order. */
#include <math.h>
#include "nn/dyt.h"

void dyt_forward(real *out, const real *x, double alpha, const real *gamma,
                 const real *beta, size_t N, size_t C)
{
    for (size_t n = 0; n < N; n++) {
        const real *xr = x + n * C;   // (C)
        real *o = out + n * C;        // (C)
        // y = γ ⊙ tanh(α·x) + β  (Zhu et al. 2025, Alg. 1)
        for (size_t i = 0; i < C; i++) o[i] = gamma[i] * tanh(alpha * xr[i]) + (beta ? beta[i] : 0.0);
    }
}

/* set: dx = 0 + α·s instead of dx += α·s (norm.c's backward: the bits of zeroing first). */
static void backward(real *dx, int set, real *dalpha, real *dgamma, real *dbeta,
                     const real *dout, const real *x, double alpha, const real *gamma,
                     size_t N, size_t C)
{
    double da = 0.0;
    for (size_t n = 0; n < N; n++) {
        const real *xr = x + n * C, *g = dout + n * C;   // (C)
        real *dxr = dx + n * C;
        for (size_t i = 0; i < C; i++) {
            const double t = tanh(alpha * xr[i]);
            const double s = g[i] * gamma[i] * (1.0 - t * t);   // ∂L/∂(α·x_i)
            dxr[i] = (set ? 0.0 : dxr[i]) + alpha * s;
            da += s * xr[i];
            dgamma[i] += g[i] * t;
            if (dbeta) dbeta[i] += g[i];
        }
    }
    *dalpha += da;
}

void dyt_backward(real *dx, real *dalpha, real *dgamma, real *dbeta,
                  const real *dout, const real *x, double alpha, const real *gamma,
                  size_t N, size_t C)
{
    backward(dx, 0, dalpha, dgamma, dbeta, dout, x, alpha, gamma, N, C);
}

void dyt_backward_set(real *dx, real *dalpha, real *dgamma, real *dbeta,
                      const real *dout, const real *x, double alpha, const real *gamma,
                      size_t N, size_t C)
{
    backward(dx, 1, dalpha, dgamma, dbeta, dout, x, alpha, gamma, N, C);
}

void dyt_jacobian_norms(const real *x, double alpha, const real *gamma, size_t C,
                        double *spec, double *fro)
{
    // J = diag(γ_i·α·sech²(α·x_i)): ‖J‖₂ = max |J_ii|, ‖J‖_F = √Σ J_ii²
    double mx = 0.0, ss = 0.0;
    for (size_t i = 0; i < C; i++) {
        const double t = tanh(alpha * x[i]);
        const double j = fabs(gamma[i] * alpha * (1.0 - t * t));
        if (j > mx) mx = j;
        ss += j * j;
    }
    *spec = mx;
    *fro = sqrt(ss);
}
