/* loss.c — softmax cross-entropy (max-subtracted, log-sum-exp form) and its gradient. */
#include <math.h>
#include "nn/loss.h"

double loss_forward(double *probs, double *losses, int *count, const double *logits,
                    const int32_t *targets, size_t N, size_t V, double eps)
{
    double total = 0.0;
    int n = 0;
    for (size_t i = 0; i < N; i++) {
        const double *z = logits + i * V;   // (V)
        double *p = probs + i * V;          // (V)
        double mx = z[0];
        for (size_t j = 1; j < V; j++) if (z[j] > mx) mx = z[j];
        double sum = 0.0;
        for (size_t j = 0; j < V; j++) { p[j] = exp(z[j] - mx); sum += p[j]; }
        const double lse = mx + log(sum);   // log Σ_j exp z_j
        for (size_t j = 0; j < V; j++) p[j] /= sum;
        if (!targets || targets[i] < 0) { losses[i] = 0.0; continue; }
        // −log p_j = lse − z_j
        double mean_nll = 0.0;
        if (eps > 0.0) {
            for (size_t j = 0; j < V; j++) mean_nll += lse - z[j];
            mean_nll /= (double)V;
        }
        losses[i] = (1.0 - eps) * (lse - z[targets[i]]) + eps * mean_nll;
        total += losses[i];
        n++;
    }
    *count = n;
    return n > 0 ? total / n : NAN;
}

void loss_backward(double *dlogits, const double *probs, const int32_t *targets,
                   size_t N, size_t V, double eps, int count)
{
    const double inv = count > 0 ? 1.0 / count : 0.0;
    for (size_t i = 0; i < N; i++) {
        double *d = dlogits + i * V;
        const double *p = probs + i * V;
        if (targets[i] < 0) {
            for (size_t j = 0; j < V; j++) d[j] = 0.0;
            continue;
        }
        // ∂ℓ/∂z_j = p_j − q_j,  q = (1−ε)·onehot(y) + ε/V
        for (size_t j = 0; j < V; j++) d[j] = (p[j] - eps / (double)V) * inv;
        d[targets[i]] -= (1.0 - eps) * inv;
    }
}
