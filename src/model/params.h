/* params.h — a model's parameter layout and views (model/params.c); for model.c only. */
#ifndef STABILITY_PARAMS_H
#define STABILITY_PARAMS_H

#include "model/model.h"

/* Register every tensor of m's stacks (their rules set) in buffer order: tok_embed,
 * [lm_head], per stack its layers in the canonical order of model/tensors.c, [final norm].
 * Sets num_tensors and num_params. 0, or 1 when out of memory. */
int params_build(model_t *m);

/* Point every sub-layer's and final norm's views at m->params and m->grads. */
void params_bind(model_t *m);

#endif
