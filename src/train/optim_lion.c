/* optim_lion.c — Lion (Chen et al. 2023, "Symbolic discovery of optimization algorithms",
 * Alg. 2) and normalised SGD with momentum (Riabinin et al. 2026's third optimizer), over the
 * registry's tensors (docs/design.md §6h). */
#include <math.h>
#include "train/optim.h"

void optim_lion_update(optim_t *o, real *params, const real *grads, double lr)
{
    const double b1 = o->beta1, b2 = o->beta2, wd = o->weight_decay;
    for (int s = 0; s < o->nseg; s++) {
        optim_seg_t *sg = &o->seg[s];
        const double a = lr * sg->lr_mult;
        double sum = 0.0;
        for (size_t i = sg->offset; i < sg->offset + sg->size; i++) {
            // c = β₁m + (1−β₁)g;  θ ← θ − α(sign(c) + λθ);  m ← β₂m + (1−β₂)g
            const double g = grads[i], c = b1 * o->m[i] + (1.0 - b1) * g;
            const double u = c > 0 ? 1.0 : c < 0 ? -1.0 : 0.0;
            const double p = params[i];
            params[i] = (real)(p - a * (u + wd * p));
            o->m[i] = (real)(b2 * o->m[i] + (1.0 - b2) * g);
            sum += u * u;
        }
        sg->sumsq = sum;
    }
}

void optim_nsgd_update(optim_t *o, real *params, const real *grads, double lr)
{
    const double mu = o->momentum, wd = o->weight_decay;
    for (int s = 0; s < o->nseg; s++) {
        optim_seg_t *sg = &o->seg[s];
        const double a = lr * sg->lr_mult;
        const size_t lo = sg->offset, hi = sg->offset + sg->size;
        double ss = 0.0;
        for (size_t i = lo; i < hi; i++) {   // b ← μb + g (PyTorch SGD's buffer, dampening 0)
            o->m[i] = (real)(mu * o->m[i] + grads[i]);
            ss += (double)o->m[i] * o->m[i];
        }
        // θ ← θ(1 − αλ) − α·b/(‖b‖_F + 1e-8), the tensor's Frobenius norm (Euclidean LMO)
        const double inv = 1.0 / (sqrt(ss) + 1e-8);
        double sum = 0.0;
        for (size_t i = lo; i < hi; i++) {
            const double u = o->m[i] * inv;
            params[i] = (real)(params[i] * (1.0 - a * wd) - a * u);
            sum += u * u;
        }
        sg->sumsq = sum;
    }
}
