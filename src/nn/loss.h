/* loss.h — softmax cross-entropy with label smoothing and ignored targets (−1),
 * averaged over the scored positions, as torch.nn.functional.cross_entropy(
 * logits, targets, ignore_index=-1, label_smoothing=ε, reduction="mean"). */
#ifndef STABILITY_LOSS_H
#define STABILITY_LOSS_H

#include <stddef.h>
#include <stdint.h>

/* probs (N,V) = softmax(logits); losses (N) per position (0 where ignored);
 * *count = number of scored positions. Returns the mean loss (NaN if count = 0).
 * Per position: ℓ = (1−ε)·(−log p_y) + ε·(−(1/V)·Σ_j log p_j). */
double loss_forward(double *probs, double *losses, int *count, const double *logits,
                    const int32_t *targets, size_t N, size_t V, double eps);

/* dlogits (N,V) = (p − ((1−ε)·onehot(y) + ε/V)) / count; 0 in ignored rows (overwrites). */
void loss_backward(double *dlogits, const double *probs, const int32_t *targets,
                   size_t N, size_t V, double eps, int count);

#endif
