/* loss.h — softmax cross-entropy with label smoothing and ignored targets (−1),
 * averaged over the scored positions, as torch.nn.functional.cross_entropy(
 * logits, targets, ignore_index=-1, label_smoothing=ε, reduction="mean"). */
#ifndef STABILITY_LOSS_H
#define STABILITY_LOSS_H

#include "util/real.h"

#include <stddef.h>
#include <stdint.h>

/* probs (N,V) = softmax(logits); losses (N) per position (0 where ignored);
 * *count = number of scored positions. Returns the mean loss (NaN if count = 0).
 * Per position: ℓ = (1−ε)·(−log p_y) + ε·(−(1/V)·Σ_j log p_j). */
double loss_forward(real *probs, real *losses, int *count, const real *logits,
                    const int32_t *targets, size_t N, size_t V, double eps);

/* loss_forward, and per position lse (N) = log Σ_j exp z_j (log Z) and absmax (N) = max_j |z_j|
 * (either may be NULL; probs, losses and the mean keep the bits of loss_forward). */
double loss_forward_opt(real *probs, real *losses, int *count, const real *logits,
                        const int32_t *targets, size_t N, size_t V, double eps, real *lse,
                        real *absmax);

/* The z-loss (Chowdhery et al. 2022, PaLM): c · mean over scored positions of (log Z)². */
double loss_z_term(const real *lse, const int32_t *targets, size_t N, double c);

/* dlogits (N,V) = (p − ((1−ε)·onehot(y) + ε/V)) / count; 0 in ignored rows (overwrites). */
void loss_backward(real *dlogits, const real *probs, const int32_t *targets,
                   size_t N, size_t V, double eps, int count);

/* loss_backward of CE + loss_z_term(c): scored rows add 2c·log Z·p_j / count (∂(log Z)/∂z_j
 * = p_j); c = 0 is loss_backward, bit for bit. lse (N) from loss_forward_opt. */
void loss_backward_z(real *dlogits, const real *probs, const int32_t *targets, size_t N,
                     size_t V, double eps, int count, double c, const real *lse);

#endif
