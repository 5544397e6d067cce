/* gradcheck.c — finite-difference check of every parameter tensor. */
#include <math.h>
#include <stdlib.h>
#include "measure/gradcheck.h"

/* f'(θ) ≈ [f(θ−2h) − 8f(θ−h) + 8f(θ+h) − f(θ+2h)] / 12h, truncation error O(h⁴). */
static double central_difference(model_t *m, real *theta, double h, const batch_t *b)
{
    const double saved = *theta;
    double f[4];
    const double steps[4] = {-2.0, -1.0, 1.0, 2.0};
    for (int s = 0; s < 4; s++) {
        *theta = saved + steps[s] * h;
        model_forward(m, b);
        f[s] = model_objective(m);   // with train.z_loss: the cross-entropy + the z-term
    }
    *theta = saved;
    return (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * h);
}

double gradcheck_run(model_t *m, const batch_t *b, size_t max_entries, double h, gsl_rng *rng,
                     gradcheck_result_t *res)
{
    model_forward(m, b);
    model_zero_grad(m);
    model_backward(m);

    double global = 0.0;
    for (size_t i = 0; i < m->num_params; i++)
        if (fabs(m->grads[i]) > global) global = fabs(m->grads[i]);

    double worst = 0.0;
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        const size_t n = model_tensor_size(t);
        real *p = m->params + t->offset;
        const real *g = m->grads + t->offset;
        double own = 0.0;
        for (size_t i = 0; i < n; i++) if (fabs(g[i]) > own) own = fabs(g[i]);
        gradcheck_result_t *r = &res[k];
        r->tensor = t;
        r->checked = n <= max_entries ? n : max_entries;
        r->max_abs_err = 0.0;
        r->scale = fmax(own, 1e-3 * global);
        for (size_t j = 0; j < r->checked; j++) {
            const size_t i = n <= max_entries ? j : gsl_rng_uniform_int(rng, n);
            const double step = h * fmax(1.0, fabs(p[i]));
            const double fd = central_difference(m, &p[i], step, b);
            const double err = fabs(fd - g[i]);
            if (!(err <= r->max_abs_err)) r->max_abs_err = err;   // NaN propagates
        }
        r->rel_err = r->scale > 0.0 ? r->max_abs_err / r->scale : r->max_abs_err;
        if (!(r->rel_err <= worst)) worst = r->rel_err;
    }
    // leave the model's activations consistent with the unperturbed parameters
    model_forward(m, b);
    return worst;
}
