/* change.c — output change, model update, relative update (measure/change.h). */
#include <math.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "measure/change.h"

int change_perturbed(const tensor_info_t *t)
{
    // Transformer-Clinic's --plot_stability perturbs every parameter but biases, LayerNorm's
    // and Admin's ratios: here the rank-2 tensors (weight matrices and embeddings)
    return t->rank == 2;
}

/* Mean over the rows with ids ≥ 0 of ‖a_row − b_row‖ over (N,C). */
static double mean_row_distance(const real *a, const real *b, const int32_t *ids, size_t N,
                                size_t C)
{
    double sum = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < N; i++) {
        if (ids[i] < 0) continue;
        double s = 0.0;
        for (size_t c = 0; c < C; c++) {
            const double d = a[i * C + c] - b[i * C + c];
            s += d * d;
        }
        sum += sqrt(s);
        n++;
    }
    return n ? sum / (double)n : NAN;
}

/* Copy of a stack's output (rows × C) into dst. */
static void copy_output(const model_t *m, const layer_stack_t *st, size_t rows, real *dst)
{
    memcpy(dst, st->output, rows * (size_t)m->C * sizeof(real));
}

void change_output(model_t *m, const batch_t *b, gsl_rng *rng, real *save, double *out,
                   double *enc_out)
{
    const size_t C = (size_t)m->C, N = (size_t)b->B * b->T, Ns = (size_t)b->B * b->S;
    const layer_stack_t *dec = model_output_stack(m), *enc = m->nstacks > 1 ? &m->stack[0] : NULL;
    // the unperturbed outputs go to the gradient arena's stream buffers (free until a backward)
    real *ref = m->scratch.dr, *ref_enc = enc ? m->stack[0].dstream[0] : NULL;
    memcpy(save, m->params, m->num_params * sizeof(real));
    model_dropout_off(m);
    model_forward(m, b);
    copy_output(m, dec, N, ref);
    if (enc) copy_output(m, enc, Ns, ref_enc);
    // W* = W − 1e-4·sign(ε)
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        if (!change_perturbed(t)) continue;
        real *p = m->params + t->offset;
        for (size_t j = 0; j < model_tensor_size(t); j++)
            p[j] -= CHANGE_PERTURB * (gsl_ran_ugaussian(rng) >= 0.0 ? 1.0 : -1.0);
    }
    model_forward(m, b);
    *out = mean_row_distance(dec->output, ref, b->tokens, N, C);
    *enc_out = enc ? mean_row_distance(enc->output, ref_enc, b->src, Ns, C) : NAN;
    memcpy(m->params, save, m->num_params * sizeof(real));
}

void change_reference(model_t *m, const batch_t *b, real *ref)
{
    model_dropout_off(m);
    model_forward(m, b);
    copy_output(m, model_output_stack(m), (size_t)b->B * b->T, ref);
}

double change_from_reference(model_t *m, const batch_t *b, const real *ref)
{
    model_dropout_off(m);
    model_forward(m, b);
    return mean_row_distance(model_output_stack(m)->output, ref, b->tokens,
                             (size_t)b->B * b->T, (size_t)m->C);
}

void change_relative_update(const probe_axes_t *ax, const model_t *m, const real *prev,
                            double *layer)
{
    for (size_t i = 0; i < (size_t)ax->L * ax->nparam; i++) layer[i] = NAN;
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        const int col = t->layer >= 0 ? probe_axis_find(ax->param, ax->nparam, t->kind) : -1;
        if (col < 0) continue;
        double d = 0.0, w = 0.0;
        for (size_t j = 0; j < model_tensor_size(t); j++) {
            const double a = prev[t->offset + j], c = m->params[t->offset + j];
            d += (c - a) * (c - a);
            w += a * a;
        }
        layer[(size_t)t->layer * ax->nparam + col] = w > 0.0 ? sqrt(d / w) : NAN;
    }
}
