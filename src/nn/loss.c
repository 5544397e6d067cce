/* loss.c — softmax cross-entropy (max-subtracted, log-sum-exp form) and its gradient.
 * Rows are independent: they are split among the step's pool (util/threads.h); the mean over the
 * scored rows is then summed on one thread, in row order, as the serial loop did. */
#include <math.h>
#include "nn/loss.h"
#include "nn/vec.h"
#include "util/threads.h"

typedef struct {
    real *probs, *losses, *dlogits;
    const real *logits, *cprobs;
    const int32_t *targets;
    size_t N, V;
    double eps, inv;
    real *lse, *absmax;        /* (N) or NULL: log Z and max |z| of each row */
    double zc;                   /* the z-loss coefficient c (backward) */
    const real *clse;          /* (N) log Z of each row (backward with c > 0) */
} loss_job_t;

static void forward_part(void *ctx, int t, int nt)
{
    const loss_job_t *j = ctx;
    const size_t V = j->V;
    const double eps = j->eps;
    size_t lo, hi;
    threads_part(j->N, t, nt, 1, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const real *z = j->logits + i * V;   // (V)
        real *p = j->probs + i * V;          // (V)
        double mx = z[0];
        for (size_t c = 1; c < V; c++) if (z[c] > mx) mx = z[c];
        double sum = 0.0;
        for (size_t c = 0; c < V; c++) { p[c] = exp(z[c] - mx); sum += p[c]; }
        const double lse = mx + log(sum);   // log Σ_j exp z_j
        if (j->lse) j->lse[i] = lse;
        if (j->absmax) {
            double mn = z[0];
            for (size_t c = 1; c < V; c++) if (z[c] < mn) mn = z[c];
            j->absmax[i] = fmax(mx, -mn);
        }
        size_t c = 0;
        const vreal S = vr_set1(sum);
        for (; c + VR_LANES <= V; c += VR_LANES)
            vr_store(p + c, vr_load(p + c) / S);   // p_j /= sum, VR_LANES lanes
        for (; c < V; c++) p[c] /= sum;
        if (!j->targets || j->targets[i] < 0) { j->losses[i] = 0.0; continue; }
        // −log p_j = lse − z_j
        double mean_nll = 0.0;
        if (eps > 0.0) {
            for (size_t k = 0; k < V; k++) mean_nll += lse - z[k];
            mean_nll /= (double)V;
        }
        j->losses[i] = (1.0 - eps) * (lse - z[j->targets[i]]) + eps * mean_nll;
    }
}

double loss_forward(real *probs, real *losses, int *count, const real *logits,
                    const int32_t *targets, size_t N, size_t V, double eps)
{
    return loss_forward_opt(probs, losses, count, logits, targets, N, V, eps, NULL, NULL);
}

double loss_z_term(const real *lse, const int32_t *targets, size_t N, double c)
{
    double total = 0.0;
    int n = 0;
    for (size_t i = 0; i < N; i++) {
        if (!targets || targets[i] < 0) continue;
        total += lse[i] * lse[i];
        n++;
    }
    return n > 0 ? c * total / n : NAN;
}

double loss_forward_opt(real *probs, real *losses, int *count, const real *logits,
                        const int32_t *targets, size_t N, size_t V, double eps, real *lse,
                        real *absmax)
{
    loss_job_t j = {.probs = probs, .losses = losses, .logits = logits, .targets = targets,
                    .N = N, .V = V, .eps = eps, .lse = lse, .absmax = absmax};
    threads_run(threads_for(20.0 * (double)N * V), forward_part, &j);
    double total = 0.0;
    int n = 0;
    for (size_t i = 0; i < N; i++) {
        if (!targets || targets[i] < 0) continue;
        total += losses[i];
        n++;
    }
    *count = n;
    return n > 0 ? total / n : NAN;
}

static void backward_part(void *ctx, int t, int nt)
{
    const loss_job_t *j = ctx;
    const size_t V = j->V;
    const double eps = j->eps, inv = j->inv;
    size_t lo, hi;
    threads_part(j->N, t, nt, 1, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        real *d = j->dlogits + i * V;
        const real *p = j->cprobs + i * V;
        if (j->targets[i] < 0) {
            for (size_t c = 0; c < V; c++) d[c] = 0.0;
            continue;
        }
        // ∂ℓ/∂z_j = p_j − q_j,  q = (1−ε)·onehot(y) + ε/V
        for (size_t c = 0; c < V; c++) d[c] = (p[c] - eps / (double)V) * inv;
        d[j->targets[i]] -= (1.0 - eps) * inv;
        if (j->zc > 0.0) {   // c·(log Z)²/count: ∂/∂z_j = 2c·log Z·p_j/count
            const double g = 2.0 * j->zc * j->clse[i] * inv;
            for (size_t c = 0; c < V; c++) d[c] += g * p[c];
        }
    }
}

void loss_backward_z(real *dlogits, const real *probs, const int32_t *targets, size_t N,
                     size_t V, double eps, int count, double c, const real *lse)
{
    loss_job_t j = {.dlogits = dlogits, .cprobs = probs, .targets = targets, .N = N, .V = V,
                    .eps = eps, .inv = count > 0 ? 1.0 / count : 0.0, .zc = c, .clse = lse};
    threads_run(threads_for((double)N * V), backward_part, &j);
}

void loss_backward(real *dlogits, const real *probs, const int32_t *targets,
                   size_t N, size_t V, double eps, int count)
{
    loss_backward_z(dlogits, probs, targets, N, V, eps, count, 0.0, NULL);
}
