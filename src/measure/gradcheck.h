/* gradcheck.h — the analytic backward against finite differences of the loss. */
#ifndef STABILITY_GRADCHECK_H
#define STABILITY_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "model/model.h"

typedef struct {
    const tensor_info_t *tensor;
    size_t checked;        /* entries compared */
    double max_abs_err;    /* max |fd − analytic| over them */
    double scale;          /* max(‖∇ this tensor‖_∞, 1e-3·‖∇ all‖_∞) */
    double rel_err;        /* max_abs_err / scale */
} gradcheck_result_t;

/* Compare m's backward with 5-point central differences (step h·max(1,|θ|)) for every tensor:
 * all entries when a tensor has ≤ max_entries, else max_entries drawn from rng.
 * Errors are relative to the tensor's own largest gradient, floored at 1e-3 of the largest
 * gradient of the whole model: tensors that are zero in exact arithmetic (the key bias b_K)
 * are judged on the scale of the whole gradient (docs/design.md §8).
 * res has m->num_tensors entries. Returns the worst rel_err. Parameters are restored. */
double gradcheck_run(model_t *m, const batch_t *b, size_t max_entries, double h, gsl_rng *rng,
                     gradcheck_result_t *res);

#endif
