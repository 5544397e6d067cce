/* probe_measure.c — the per-forward measurements of a probe and of training (measure/probe.h):
 * gradient norms per tensor, hidden-state norms, exact norm-Jacobian norms, the gradient at
 * every sub-layer's output, Admin's ω; every one by name, padding excluded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/probe_internal.h"
#include "nn/dyt.h"
#include "nn/norm.h"

/* ------------------------------------------------------------------ per-forward measures */

static double frobenius(const real *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

void probe_grad_norms(const probe_axes_t *ax, const model_t *m, const real *grads,
                      double *layer, double *extra)
{
    for (size_t i = 0; i < (size_t)ax->L * ax->nparam; i++) layer[i] = NAN;
    for (int e = 0; e < ax->nextra; e++) extra[e] = NAN;
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        const double v = frobenius(grads + t->offset, model_tensor_size(t));
        const int col = t->layer >= 0 ? probe_axis_find(ax->param, ax->nparam, t->kind)
                                      : probe_axis_find(ax->extra, ax->nextra, t->name);
        if (col < 0) continue;
        if (t->layer >= 0) layer[(size_t)t->layer * ax->nparam + col] = v;
        else extra[col] = v;
    }
}

/* The ids of a stack's positions in the last batch (−1 = padding). */
static const int32_t *stack_ids(const model_t *m, const layer_stack_t *st)
{
    return st->kind == STACK_ENC ? m->batch.src : m->batch.tokens;
}

static size_t stack_rows(const model_t *m, const layer_stack_t *st)
{
    return (size_t)m->batch.B * (st->kind == STACK_ENC ? m->batch.S : m->batch.T);
}

/* Mean over the non-padding rows of x (N,C) of ‖x_row‖². */
static double mean_row_sqnorm(const real *x, const int32_t *ids, size_t N, size_t C)
{
    double s = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < N; i++) {
        if (ids[i] < 0) continue;
        for (size_t c = 0; c < C; c++) s += x[i * C + c] * x[i * C + c];
        n++;
    }
    return n ? s / (double)n : NAN;
}

/* The activation at site name of layer l of st, or NULL. */
static const real *site_values(const layer_stack_t *st, int l, const char *name)
{
    if (!strcmp(name, "input")) return stack_sublayer(st, l, 0)->x;
    if (!strcmp(name, "output")) return stack_sublayer(st, l, st->nsub - 1)->out;
    const int k = atoi(name + 5);   // "residK"
    return k >= 1 && k <= st->nsub ? stack_sublayer(st, l, k - 1)->r : NULL;
}

void probe_hidden_norms(const probe_axes_t *ax, const model_t *m, double *hidden,
                        double *final, double *enc_final)
{
    const size_t C = (size_t)m->C;
    for (int r = 0; r < ax->L; r++) {
        int l;
        const layer_stack_t *st = model_row_stack(m, r, &l);
        for (int q = 0; q < ax->nsite; q++) {
            const real *x = site_values(st, l, ax->site[q]);
            hidden[(size_t)r * ax->nsite + q] =
                x ? mean_row_sqnorm(x, stack_ids(m, st), stack_rows(m, st), C) : NAN;
        }
    }
    const layer_stack_t *out = model_output_stack(m);
    *final = mean_row_sqnorm(out->output, stack_ids(m, out), stack_rows(m, out), C);
    if (enc_final)
        *enc_final = m->nstacks > 1 ? mean_row_sqnorm(m->stack[0].output, m->batch.src,
                                                      stack_rows(m, &m->stack[0]), C)
                                    : NAN;
}

/* One norm instance: its input x (N,C) over the rows ids ≥ 0, its γ, and where its
 * statistics go. */
typedef struct {
    const real *x, *gamma, *alpha;
    size_t width;
    const int32_t *ids;
    size_t N;
    probe_jacobian_t *out;
} jac_instance_t;

/* Run the per-token Jacobian work in parallel only above this many (nominal) operations: an
 * OpenMP region leaves its workers spinning for milliseconds, which the next GEMM's OpenBLAS
 * threads pay for (docs/performance.md). Uniform γ (every probe at initialisation) costs ~4·C per
 * token, so a d = 512, L = 12 probe stays serial; trained γ (bisection, ~150·C) goes parallel. */
#define PROBE_OMP_MIN_WORK 5e7

/* Statistics of one token row (width) of a norm's input: ‖J‖₂, ‖J‖_F, Lemma 3's ratio and
 * bound (LayerNorm, RMSNorm; NaN for DyT, whose Jacobian is diagonal). */
static void jacobian_row(const model_t *m, const jac_instance_t *in, const real *row, double *t)
{
    const size_t C = in->width;
    const double sqrtC = sqrt((double)C);
    double spec, fro, mu = 0.0, centred = 0.0;
    if (m->norm == NORM_DYT) {
        dyt_jacobian_norms(row, *in->alpha, in->gamma, C, &spec, &fro);
        t[0] = spec;
        t[1] = fro;
        t[2] = t[3] = NAN;
        return;
    }
    norm_jacobian_norms(m->norm, row, in->gamma, C, m->norm_eps, &spec, &fro);
    if (m->norm == NORM_LAYERNORM) {
        for (size_t c = 0; c < C; c++) mu += row[c];
        mu /= (double)C;
    }
    for (size_t c = 0; c < C; c++) centred += (row[c] - mu) * (row[c] - mu);
    centred = sqrt(centred);   // ‖x − μ‖ (RMSNorm: ‖x‖)
    t[0] = spec;
    t[1] = fro;
    t[2] = spec * centred / sqrtC;   // Lemma 3: ‖J‖₂ = O(√d/‖x−μ‖)
    t[3] = sqrtC / centred;
}

/* Per-token statistics of every instance, one parallel region over (instance, token), then
 * summed per instance in token order (reproducible for any thread count). tmp holds
 * (n, Nmax, 4). */
static void jacobian_stats(const model_t *m, const jac_instance_t *inst, int n, size_t Nmax,
                           double *tmp)
{
    double work = 0.0;
    for (int k = 0; k < n; k++) {
        int uniform = 1;
        const size_t C = inst[k].width;
        for (size_t c = 1; c < C && uniform && inst[k].gamma; c++)
            uniform = inst[k].gamma[c] == inst[k].gamma[0];
        work += (double)inst[k].N * C * (uniform ? 4.0 : 150.0);
    }
    const long total = (long)n * (long)Nmax;
    #pragma omp parallel for schedule(static) if (work >= PROBE_OMP_MIN_WORK)
    for (long it = 0; it < total; it++) {
        const jac_instance_t *in = &inst[it / (long)Nmax];
        const size_t i = (size_t)(it % (long)Nmax);
        if (i < in->N && in->ids[i] >= 0)
            jacobian_row(m, in, in->x + i * in->width, tmp + (size_t)it * 4);
    }
    for (int k = 0; k < n; k++) {
        const double *t = tmp + (size_t)k * Nmax * 4;
        probe_jacobian_t r = {0.0, 0.0, 0.0, 0.0, 0.0};
        size_t count = 0;
        for (size_t i = 0; i < inst[k].N; i++) {
            if (inst[k].ids[i] < 0) continue;
            r.spec += t[i * 4 + 0];
            r.spec_max = fmax(r.spec_max, t[i * 4 + 0]);
            r.fro += t[i * 4 + 1];
            r.lemma3 += t[i * 4 + 2];
            r.bound += t[i * 4 + 3];
            count++;
        }
        r.spec /= (double)count;
        r.fro /= (double)count;
        r.lemma3 /= (double)count;
        r.bound /= (double)count;
        *inst[k].out = r;
    }
}

void probe_jacobians(const probe_axes_t *ax, const model_t *m, probe_jacobian_t *layers,
                     probe_jacobian_t *final, probe_jacobian_t *enc_final)
{
    const probe_jacobian_t nan5 = {NAN, NAN, NAN, NAN, NAN};
    for (int i = 0; i < ax->L * ax->nnorm; i++) layers[i] = nan5;
    *final = nan5;
    if (enc_final) *enc_final = nan5;
    if (m->norm == NORM_NONE) return;
    const int n_max = ax->L * ax->nnorm + 2;
    size_t Nmax = 0;
    for (int s = 0; s < m->nstacks; s++)
        if (stack_rows(m, &m->stack[s]) > Nmax) Nmax = stack_rows(m, &m->stack[s]);
    jac_instance_t *inst = malloc((size_t)n_max * sizeof *inst);
    double *tmp = malloc((size_t)n_max * Nmax * 4 * sizeof(double) + 1);
    if (!inst || !tmp) { free(inst); free(tmp); return; }
    int n = 0;
    for (int r = 0; r < ax->L; r++) {
        int l;
        const layer_stack_t *st = model_row_stack(m, r, &l);
        for (int i = 0; i < st->nsub; i++) {
            const sublayer_t *sl = stack_sublayer(st, l, i);
            for (int t = 0; t < 3; t++) {
                const norm_site_t *site = probe_sublayer_site(sl, t);
                char name[32];
                tensors_site_name(t, sl->index, name, sizeof name);
                const int q = probe_axis_find(ax->norm, ax->nnorm, name);
                if (!site->on || q < 0) continue;
                // the site's input in the last forward: x (Norm_in), r (Norm_after), the
                // branch output (Norm_out), ctx / act (inner)
                inst[n++] = (jac_instance_t){site->in, site->gamma, site->alpha, site->width,
                                             stack_ids(m, st), stack_rows(m, st),
                                             &layers[r * ax->nnorm + q]};
            }
        }
    }
    for (int s = m->nstacks - 1; s >= 0; s--) {   // the output stack's final norm, then the encoder's
        const layer_stack_t *st = &m->stack[s];
        probe_jacobian_t *dst = s == m->nstacks - 1 ? final : enc_final;
        if (st->final.on && dst)
            inst[n++] = (jac_instance_t){st->top, st->final.gamma, st->final.alpha,
                                         st->final.width, stack_ids(m, st), stack_rows(m, st), dst};
    }
    jacobian_stats(m, inst, n, Nmax, tmp);
    free(inst);
    free(tmp);
}

void probe_subout_grads(const probe_axes_t *ax, const model_t *m, double *sub)
{
    for (int r = 0; r < ax->L; r++) {
        int l;
        const layer_stack_t *st = model_row_stack(m, r, &l);
        for (int x = 0; x < ax->nsub; x++) sub[(size_t)r * ax->nsub + x] = NAN;
        for (int i = 0; i < st->nsub; i++) {
            const int x = probe_axis_find(ax->sub, ax->nsub, PROBE_SUB_NAMES[stack_sublayer(st, l, i)->rule.kind]);
            if (x >= 0) sub[(size_t)r * ax->nsub + x] = st->dout_norm[(size_t)l * st->nsub + i];
        }
    }
}

void probe_admin_omega(const probe_axes_t *ax, const model_t *m, double *out)
{
    for (int r = 0; r < ax->L; r++) {
        int l;
        const layer_stack_t *st = model_row_stack(m, r, &l);
        for (int x = 0; x < ax->nsub; x++) out[(size_t)r * ax->nsub + x] = NAN;
        for (int i = 0; i < st->nsub; i++) {
            const sublayer_t *sl = stack_sublayer(st, l, i);
            const int x = probe_axis_find(ax->sub, ax->nsub, PROBE_SUB_NAMES[sl->rule.kind]);
            if (x >= 0 && sl->omega) out[(size_t)r * ax->nsub + x] = sl->omega[0];
        }
    }
}

