/* core_f32.h — the float32 core's functions that code outside the core calls directly (the
 * tests and the benchmark; a training run goes through train.h's train_*_f32). They are
 * session.h's and model.h's functions compiled with real = float (util/real.h, docs/design.md
 * §2). Their session_t and model_t have the float64 declarations' layout (train_layout), but
 * the model's params, grads and activations hold floats: read them as `const float *`.
 */
#ifndef STABILITY_CORE_F32_H
#define STABILITY_CORE_F32_H

#include "model/session.h"
#include "train/optim.h"

#if !REAL_IS_FLOAT
int session_open_f32(session_t *s, const config_t *cfg, char *err, size_t errlen);
void session_close_f32(session_t *s);
void session_init_f32(session_t *s, unsigned long seed);
int session_next_batch_f32(session_t *s);
double model_forward_f32(model_t *m, const batch_t *b);
double model_objective_f32(const model_t *m);
void model_zero_grad_f32(model_t *m);
void model_backward_f32(model_t *m);
int optim_init_f32(optim_t *o, const config_t *cfg, size_t n);
void optim_free_f32(optim_t *o);
void optim_update_f32(optim_t *o, double *params, const double *grads, double lr);
#endif

#endif
