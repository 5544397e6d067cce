/* change.h — how much the model's output moves: the measures the schemes' papers argue with
 * (docs/design.md §6c). Numerics only.
 *
 *  - Output change at initialisation (Liu et al. 2020, Admin): ‖F(x, W) − F(x, W*)‖ with
 *    W* = W − 1e-4·sign(ε), ε ~ N(0,1) per entry, on every weight matrix and embedding (not
 *    biases, norm parameters, ω or α), F = the model's last hidden state, mean over tokens of
 *    the per-token norm.
 *  - Model update during training (Wang et al. 2022, DeepNet): ‖F(x, θ_t) − F(x, θ_0)‖ on a
 *    fixed batch, mean over tokens of the per-token norm; and each tensor's relative update
 *    ‖W_t − W_{t−1}‖_F / ‖W_{t−1}‖_F.
 * Forwards here run without dropout (every mask 1; the next batch draws fresh masks).
 */
#ifndef STABILITY_CHANGE_H
#define STABILITY_CHANGE_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "measure/probe.h"
#include "model/model.h"

/* The perturbation of the output-change measure. */
#define CHANGE_PERTURB 1e-4

/* True for the tensors the output change perturbs (weight matrices and embeddings). */
int change_perturbed(const tensor_info_t *t);

/* Output change of m on batch b with signs from rng: *out for the logits' input, *enc_out for
 * the encoder's output (encdec; NaN otherwise). save holds num_params reals (scratch); the
 * parameters are restored bit for bit. */
void change_output(model_t *m, const batch_t *b, gsl_rng *rng, real *save, double *out,
                   double *enc_out);

/* Forward on b without dropout and copy the logits' input into ref (B·T, C). */
void change_reference(model_t *m, const batch_t *b, real *ref);

/* Forward on b without dropout: mean over its tokens of ‖F_row − ref_row‖. */
double change_from_reference(model_t *m, const batch_t *b, const real *ref);

/* ‖W − W_prev‖_F / ‖W_prev‖_F of every layer tensor into layer (L,nparam) (NaN where absent). */
void change_relative_update(const probe_axes_t *ax, const model_t *m, const real *prev,
                            double *layer);

#endif
