/* probe.c — measurements at initialisation (Xiong et al. 2020 §3.2–3.4, Fig. 3; Liu et al.
 * 2020 Fig. 3), by names taken from the model (measure/probe.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "measure/change.h"
#include "measure/probe.h"
#include "nn/dyt.h"
#include "nn/norm.h"

const char *const PROBE_JACOBIAN_FIELD_NAMES[PROBE_JACOBIAN_FIELDS] = {
    "spec", "spec_max", "fro", "lemma3", "bound",
};

#define FIELD(x) offsetof(probe_t, x)
const probe_array_t PROBE_ARRAYS[] = {
    {"grad_fro", FIELD(grad_fro), 1, PA_PARAM, PO_ALWAYS,
     "||E_batch grad W||_F: Frobenius norm of the gradient averaged over probe.batches batches"},
    {"grad_fro_batchmean", FIELD(grad_fro_batchmean), 1, PA_PARAM, PO_ALWAYS,
     "E_batch ||grad W||_F: per-batch Frobenius norm, averaged"},
    {"extra_grad_fro", FIELD(extra_grad_fro), 0, PA_EXTRA, PO_ALWAYS,
     "||E_batch grad||_F of the tensors outside the layers (NaN where absent)"},
    {"extra_grad_fro_batchmean", FIELD(extra_grad_fro_batchmean), 0, PA_EXTRA, PO_ALWAYS,
     "E_batch ||grad||_F of the tensors outside the layers"},
    {"hidden_sqnorm", FIELD(hidden_sqnorm), 1, PA_SITE, PO_ALWAYS,
     "E_token ||x||^2 at each site, averaged over batches (see site_symbols)"},
    {"final_sqnorm", FIELD(final_sqnorm), 0, PA_NONE, PO_ALWAYS,
     "E_token ||x_final||^2 (the input of the output projection)"},
    {"jacobian_spec", FIELD(jacobian_spec), 1, PA_NORM, PO_ALWAYS,
     "E_token ||J||_2, J = d norm(x)/dx with gamma, exact"},
    {"jacobian_spec_max", FIELD(jacobian_spec_max), 1, PA_NORM, PO_ALWAYS,
     "max over tokens and batches of ||J||_2"},
    {"jacobian_fro", FIELD(jacobian_fro), 1, PA_NORM, PO_ALWAYS, "E_token ||J||_F"},
    {"jacobian_lemma3", FIELD(jacobian_lemma3), 1, PA_NORM, 0,
     "E_token ||J||_2 * ||x - mu|| / sqrt(d) (Lemma 3: O(1))"},
    {"jacobian_bound", FIELD(jacobian_bound), 1, PA_NORM, PO_ALWAYS,
     "E_token sqrt(d) / ||x - mu|| (Lemma 3's scale)"},
    {"final_jacobian", FIELD(final_jacobian), 0, PA_FIELDS, PO_ALWAYS,
     "final norm: spec, spec_max, fro, lemma3, bound as above (NaN without a final norm)"},
    {"loss", FIELD(loss), 0, PA_NONE, PO_ALWAYS, "mean loss over the probe's batches"},
    {"subout_grad", FIELD(subout_grad), 1, PA_SUB, PO_ALWAYS,
     "E_token ||dL/d(sub-layer output)||, averaged over batches (Liu et al. 2020, Fig. 3)"},
    {"enc_final_sqnorm", FIELD(enc_final_sqnorm), 0, PA_NONE, PO_ENCDEC,
     "E_token ||mem||^2 of the encoder's output (after its final norm, if any)"},
    {"enc_final_jacobian", FIELD(enc_final_jacobian), 0, PA_FIELDS, PO_ENCDEC,
     "the encoder's final norm: spec, spec_max, fro, lemma3, bound (NaN without one)"},
    {"output_change", FIELD(output_change), 0, PA_NONE, PO_ALWAYS,
     "E_token ||F(x,W) - F(x,W*)||, W* = W - 1e-4 sign(N(0,1)) on every weight matrix and "
     "embedding, F = the last hidden state, on each seed's first batch (Liu et al. 2020)"},
    {"enc_output_change", FIELD(enc_output_change), 0, PA_NONE, PO_ENCDEC,
     "the same for the encoder's output"},
    {"admin_omega", FIELD(admin_omega), 1, PA_SUB, PO_ADMIN,
     "Admin's omega of every sub-layer as profiled at initialisation (all entries equal)"},
};
const int PROBE_NUM_ARRAYS = (int)(sizeof PROBE_ARRAYS / sizeof PROBE_ARRAYS[0]);

int probe_array_present(const probe_axes_t *axes, const probe_array_t *a)
{
    return a->only == PO_ALWAYS || (a->only == PO_ENCDEC && axes->encdec) ||
           (a->only == PO_ADMIN && axes->admin);
}

/* ------------------------------------------------------------------------------- axes */

const char *const *probe_site_symbols(const config_t *cfg)
{
    // docs/design.md §1: the sites input, resid1, resid2, output of a layer
    static const char *const POST[4] = {"x_l", "x^2_l", "x^5_l", "x_{l+1}"};
    static const char *const PRE[4] = {"x_l", "x^3_l", "x_{l+1}", "x_{l+1}"};
    if (cfg->model.arch != ARCH_LM) return NULL;
    if (cfg->model.placement == PLACEMENT_POST) return POST;
    if (cfg->model.placement == PLACEMENT_PRE) return PRE;
    return NULL;
}

static const char *const SUB_NAMES[3] = {"self", "cross", "ffn"};   // by sublayer_kind_t
static const char *const STACK_NAMES[3] = {"lm", "enc", "dec"};     // by stack_kind_t

int probe_axis_find(char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

/* names[*n] = strdup(name). 0 or 1. */
static int push(char **names, int *n, const char *name)
{
    return !(names[(*n)++] = strdup(name));
}

void probe_axes_free(probe_axes_t *a)
{
    char **lists[6] = {a->param, a->site, a->norm, a->extra, a->sub, a->stack};
    const int lens[6] = {a->P, a->Q, a->R, a->E, a->X, a->L};
    for (int k = 0; k < 6; k++) {
        for (int i = 0; lists[k] && i < lens[k]; i++) free(lists[k][i]);
        free(lists[k]);
    }
    memset(a, 0, sizeof *a);
}

/* A sub-layer's three norm sites and the name patterns of them (K = its index). */
static const char *const SITE_PATTERN[3] = {"norm%d", "norm%d_out", "norm%d_inner"};

static const norm_site_t *sublayer_site(const sublayer_t *sl, int t)
{
    return t == 0 ? &sl->norm : t == 1 ? &sl->norm_out : &sl->inner;
}

/* Which canonical layer columns (model/tensors.h) the model's sub-layers declare: a norm site
 * counts γ and β (and DyT's α) even where the norm kind has no β. */
static void declared_columns(const model_t *m, int *used)
{
    static const char *const KINDS[3][8] = {
        {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"},
        {"cwq", "cbq", "cwk", "cbk", "cwv", "cbv", "cwo", "cbo"},
        {"w1", "b1", "w2", "b2", NULL, NULL, NULL, NULL},
    };
    static const char *const PARAMS[3] = {"gamma", "beta", "alpha"};
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        for (int k = 0; k < st->L * st->nsub; k++) {
            const sublayer_t *sl = &st->subs[k];
            char name[48], site[32];
            for (int j = 0; j < 8 && KINDS[sl->rule.kind][j]; j++)
                used[tensors_column_index(KINDS[sl->rule.kind][j])] = 1;
            for (int t = 0; t < 3; t++) {
                if (!sublayer_site(sl, t)->on) continue;
                snprintf(site, sizeof site, SITE_PATTERN[t], sl->index);
                for (int q = 0; q < (m->norm == NORM_DYT ? 3 : 2); q++) {
                    snprintf(name, sizeof name, "%s.%s", site, PARAMS[q]);
                    used[tensors_column_index(name)] = 1;
                }
            }
            if (sl->omega) {
                snprintf(name, sizeof name, "omega%d", sl->index);
                used[tensors_column_index(name)] = 1;
            }
            if (sl->gate) used[tensors_column_index("rezero_alpha")] = 1;
        }
    }
}

/* The norm axis: every site of the model in the order norm1 … norm3, norm1_out …, norm1_inner …. */
static int norm_axis(probe_axes_t *a, const model_t *m)
{
    int rc = 0;
    for (int t = 0; t < 3; t++)
        for (int k = 1; k <= 3; k++) {
            int on = 0;
            for (int s = 0; s < m->nstacks; s++)
                for (int i = 0; i < m->stack[s].L * m->stack[s].nsub; i++) {
                    const sublayer_t *sl = &m->stack[s].subs[i];
                    on |= sl->index == k && sublayer_site(sl, t)->on;
                }
            char name[32];
            snprintf(name, sizeof name, SITE_PATTERN[t], k);
            if (on) rc |= push(a->norm, &a->R, name);
        }
    return rc;
}

int probe_axes_from_model(probe_axes_t *a, const model_t *m)
{
    memset(a, 0, sizeof *a);
    const int ncol = tensors_column_count(), nsub = m->nstacks > 1 ? 3 : 2;
    a->L = m->rows;
    a->encdec = m->nstacks > 1;
    a->admin = model_has_admin(m);
    a->param = calloc((size_t)ncol, sizeof(char *));
    a->site = calloc(5, sizeof(char *));
    a->norm = calloc(9, sizeof(char *));
    a->extra = calloc(9, sizeof(char *));
    a->sub = calloc(3, sizeof(char *));
    a->stack = calloc((size_t)a->L, sizeof(char *));
    int *used = calloc((size_t)ncol, sizeof(int));
    int rc = !a->param || !a->site || !a->norm || !a->extra || !a->sub || !a->stack || !used;
    if (!rc) declared_columns(m, used);
    for (int c = 0; !rc && c < ncol; c++)
        if (used[c]) rc |= push(a->param, &a->P, tensors_column_name(c));
    // sites: input, resid1 … resid<nsub>, output; the norm sites that exist
    rc = rc || push(a->site, &a->Q, "input");
    for (int k = 1; !rc && k <= nsub; k++) {
        char name[32];
        snprintf(name, sizeof name, "resid%d", k);
        rc |= push(a->site, &a->Q, name);
    }
    rc = rc || push(a->site, &a->Q, "output") || norm_axis(a, m);
    // the tensors outside the layers (a single stack's four as files have always had them)
    rc = rc || push(a->extra, &a->E, "tok_embed") || push(a->extra, &a->E, "lm_head");
    static const char *const FINALS[2][2] = {{"final_norm", NULL},
                                             {"enc_final_norm", "dec_final_norm"}};
    static const char *const FP[3] = {"gamma", "beta", "alpha"};
    for (int f = 0; !rc && f < 2 && FINALS[a->encdec][f]; f++)
        for (int q = 0; q < (m->norm == NORM_DYT ? 3 : 2); q++) {
            char name[48];
            snprintf(name, sizeof name, "%s.%s", FINALS[a->encdec][f], FP[q]);
            rc |= push(a->extra, &a->E, name);
        }
    for (int k = 0; !rc && k < 3; k++)
        if (k != SUB_CROSS_ATTN || a->encdec) rc |= push(a->sub, &a->X, SUB_NAMES[k]);
    for (int r = 0; !rc && r < a->L; r++) {
        int l;
        rc |= !(a->stack[r] = strdup(STACK_NAMES[model_row_stack(m, r, &l)->kind]));
    }
    free(used);
    if (rc) probe_axes_free(a);
    return rc;
}

/* A copy of names[n] (NULL for n = 0 … still allocated). */
static char **copy_names(char *const *names, int n, int *rc)
{
    char **out = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
    if (!out) { *rc = 1; return NULL; }
    for (int i = 0; i < n; i++)
        if (!(out[i] = strdup(names[i]))) *rc = 1;
    return out;
}

int probe_axes_copy(probe_axes_t *d, const probe_axes_t *s)
{
    int rc = 0;
    *d = *s;
    d->param = copy_names(s->param, s->P, &rc);
    d->site = copy_names(s->site, s->Q, &rc);
    d->norm = copy_names(s->norm, s->R, &rc);
    d->extra = copy_names(s->extra, s->E, &rc);
    d->sub = copy_names(s->sub, s->X, &rc);
    d->stack = copy_names(s->stack, s->L, &rc);
    if (rc) probe_axes_free(d);
    return rc;
}

int probe_axis_len(const probe_axes_t *a, probe_axis_id_t id)
{
    switch (id) {
    case PA_PARAM: return a->P;
    case PA_SITE: return a->Q;
    case PA_NORM: return a->R;
    case PA_EXTRA: return a->E;
    case PA_SUB: return a->X;
    case PA_FIELDS: return PROBE_JACOBIAN_FIELDS;
    case PA_NONE: break;
    }
    return 1;
}

char *const *probe_axis_names(const probe_axes_t *a, probe_axis_id_t id)
{
    switch (id) {
    case PA_PARAM: return a->param;
    case PA_SITE: return a->site;
    case PA_NORM: return a->norm;
    case PA_EXTRA: return a->extra;
    case PA_SUB: return a->sub;
    case PA_FIELDS: return (char *const *)PROBE_JACOBIAN_FIELD_NAMES;
    case PA_NONE: break;
    }
    return NULL;
}

size_t probe_array_size(const probe_axes_t *a, const probe_array_t *arr)
{
    return (arr->layered ? (size_t)a->L : 1) * (size_t)probe_axis_len(a, arr->axis);
}

/* ------------------------------------------------------------------------- allocation */

static double **array_ptr(probe_t *p, const probe_array_t *a)
{
    return (double **)((char *)p + a->field);
}

double probe_memory_bytes(int S, const probe_axes_t *axes)
{
    double n = 0.0;
    for (int k = 0; k < PROBE_NUM_ARRAYS; k++)
        n += (double)S * (double)probe_array_size(axes, &PROBE_ARRAYS[k]);
    return n * sizeof(double);
}

probe_t *probe_alloc(int S, const probe_axes_t *axes)
{
    probe_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->S = S;
    if (probe_axes_copy(&p->ax, axes)) { free(p); return NULL; }
    for (int k = 0; k < PROBE_NUM_ARRAYS; k++) {
        const probe_array_t *a = &PROBE_ARRAYS[k];
        if (!probe_array_present(axes, a)) continue;
        const size_t n = (size_t)S * probe_array_size(axes, a);
        double *x = malloc((n ? n : 1) * sizeof(double));
        if (!x) { probe_free(p); return NULL; }
        for (size_t i = 0; i < n; i++) x[i] = NAN;
        *array_ptr(p, a) = x;
    }
    return p;
}

void probe_free(probe_t *p)
{
    if (!p) return;
    for (int k = 0; k < PROBE_NUM_ARRAYS; k++) free(*array_ptr(p, &PROBE_ARRAYS[k]));
    probe_axes_free(&p->ax);
    free(p);
}

/* ------------------------------------------------------------------ per-forward measures */

static double frobenius(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

void probe_grad_norms(const probe_axes_t *ax, const model_t *m, const double *grads,
                      double *layer, double *extra)
{
    for (size_t i = 0; i < (size_t)ax->L * ax->P; i++) layer[i] = NAN;
    for (int e = 0; e < ax->E; e++) extra[e] = NAN;
    for (int k = 0; k < m->num_tensors; k++) {
        const tensor_info_t *t = &m->tensors[k];
        const double v = frobenius(grads + t->offset, model_tensor_size(t));
        const int col = t->layer >= 0 ? probe_axis_find(ax->param, ax->P, t->kind)
                                      : probe_axis_find(ax->extra, ax->E, t->name);
        if (col < 0) continue;
        if (t->layer >= 0) layer[(size_t)t->layer * ax->P + col] = v;
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
static double mean_row_sqnorm(const double *x, const int32_t *ids, size_t N, size_t C)
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
static const double *site_values(const layer_stack_t *st, int l, const char *name)
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
        for (int q = 0; q < ax->Q; q++) {
            const double *x = site_values(st, l, ax->site[q]);
            hidden[(size_t)r * ax->Q + q] =
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
    const double *x, *gamma, *alpha;
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
static void jacobian_row(const model_t *m, const jac_instance_t *in, const double *row, double *t)
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
    for (int i = 0; i < ax->L * ax->R; i++) layers[i] = nan5;
    *final = nan5;
    if (enc_final) *enc_final = nan5;
    if (m->norm == NORM_NONE) return;
    const int n_max = ax->L * ax->R + 2;
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
                const norm_site_t *site = sublayer_site(sl, t);
                char name[32];
                snprintf(name, sizeof name, SITE_PATTERN[t], sl->index);
                const int q = probe_axis_find(ax->norm, ax->R, name);
                if (!site->on || q < 0) continue;
                // the site's input: x (Norm_in), r (Norm_after), f (Norm_out), ctx / act (inner)
                const double *x = t == 1 ? sl->f
                                  : t == 2 ? (sl->rule.kind == SUB_FFN ? sl->act : sl->ctx)
                                  : sl->rule.norm_in ? sl->x : sl->r;
                inst[n++] = (jac_instance_t){x, site->gamma, site->alpha, site->width,
                                             stack_ids(m, st), stack_rows(m, st),
                                             &layers[r * ax->R + q]};
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
        for (int x = 0; x < ax->X; x++) sub[(size_t)r * ax->X + x] = NAN;
        for (int i = 0; i < st->nsub; i++) {
            const int x = probe_axis_find(ax->sub, ax->X, SUB_NAMES[stack_sublayer(st, l, i)->rule.kind]);
            if (x >= 0) sub[(size_t)r * ax->X + x] = st->dout_norm[(size_t)l * st->nsub + i];
        }
    }
}

void probe_admin_omega(const probe_axes_t *ax, const model_t *m, double *out)
{
    for (int r = 0; r < ax->L; r++) {
        int l;
        const layer_stack_t *st = model_row_stack(m, r, &l);
        for (int x = 0; x < ax->X; x++) out[(size_t)r * ax->X + x] = NAN;
        for (int i = 0; i < st->nsub; i++) {
            const sublayer_t *sl = stack_sublayer(st, l, i);
            const int x = probe_axis_find(ax->sub, ax->X, SUB_NAMES[sl->rule.kind]);
            if (x >= 0 && sl->omega) out[(size_t)r * ax->X + x] = sl->omega[0];
        }
    }
}

/* ------------------------------------------------------------------------------ the run */

/* Running sums over the batches of one seed. */
typedef struct {
    double *gsum;        // (num_params) Σ_b ∇θ
    double *layer_tmp;   // (L,P)
    double *extra_tmp;   // (E)
    double *hidden_tmp;  // (L,Q)
    double *sub_tmp;     // (L,X)
    double *save;        // (num_params) the output change's copy of the parameters
    probe_jacobian_t *jac_tmp, *jac_sum;   // (L,R)
    probe_jacobian_t fin_tmp[2], fin_sum[2];   // the output stack's final norm, the encoder's
} probe_work_t;

static void jacobian_add(probe_jacobian_t *sum, const probe_jacobian_t *x)
{
    sum->spec += x->spec;
    sum->spec_max = fmax(sum->spec_max, x->spec_max);
    sum->fro += x->fro;
    sum->lemma3 += x->lemma3;
    sum->bound += x->bound;
}

/* A probe_jacobian_t sum over nb batches as the five fields of a row. */
static void jacobian_mean(const probe_jacobian_t *sum, int nb, double *f)
{
    f[0] = sum->spec / nb;
    f[1] = sum->spec_max;
    f[2] = sum->fro / nb;
    f[3] = sum->lemma3 / nb;
    f[4] = sum->bound / nb;
}

static void work_free(probe_work_t *w)
{
    free(w->gsum); free(w->layer_tmp); free(w->extra_tmp); free(w->hidden_tmp);
    free(w->sub_tmp); free(w->jac_tmp); free(w->jac_sum); free(w->save);
}

/* Measure one batch of seed s (the forward and backward already run) into the sums. */
static void measure_batch(const probe_axes_t *ax, const model_t *m, probe_t *p, int s, int nb,
                          int jacobian, probe_work_t *w, double *fin, double *enc_fin)
{
    const size_t LP = (size_t)ax->L * ax->P, LQ = (size_t)ax->L * ax->Q;
    const size_t LR = (size_t)ax->L * ax->R, LX = (size_t)ax->L * ax->X;
    double *bm = p->grad_fro_batchmean + (size_t)s * LP;
    double *bme = p->extra_grad_fro_batchmean + (size_t)s * ax->E;
    double *hid = p->hidden_sqnorm + (size_t)s * LQ, *sub = p->subout_grad + (size_t)s * LX;
    double f, ef;
    for (size_t i = 0; i < m->num_params; i++) w->gsum[i] += m->grads[i];
    // E_batch ‖∇W‖_F
    probe_grad_norms(ax, m, m->grads, w->layer_tmp, w->extra_tmp);
    for (size_t i = 0; i < LP; i++) bm[i] += w->layer_tmp[i] / nb;
    for (int e = 0; e < ax->E; e++) bme[e] += w->extra_tmp[e] / nb;
    probe_hidden_norms(ax, m, w->hidden_tmp, &f, &ef);
    for (size_t i = 0; i < LQ; i++) hid[i] += w->hidden_tmp[i] / nb;
    *fin += f / nb;
    *enc_fin += ef / nb;
    probe_subout_grads(ax, m, w->sub_tmp);
    for (size_t i = 0; i < LX; i++) sub[i] += w->sub_tmp[i] / nb;
    if (!jacobian) return;
    probe_jacobians(ax, m, w->jac_tmp, &w->fin_tmp[0], &w->fin_tmp[1]);
    for (size_t i = 0; i < LR; i++) jacobian_add(&w->jac_sum[i], &w->jac_tmp[i]);
    jacobian_add(&w->fin_sum[0], &w->fin_tmp[0]);
    jacobian_add(&w->fin_sum[1], &w->fin_tmp[1]);
}

/* Zero seed s's running slices and sums. */
static void seed_start(const probe_axes_t *ax, const model_t *m, probe_t *p, int s,
                       probe_work_t *w)
{
    const size_t LP = (size_t)ax->L * ax->P, LQ = (size_t)ax->L * ax->Q;
    const size_t LR = (size_t)ax->L * ax->R, LX = (size_t)ax->L * ax->X;
    memset(w->gsum, 0, m->num_params * sizeof(double));
    for (size_t i = 0; i < LP; i++) p->grad_fro_batchmean[(size_t)s * LP + i] = 0.0;
    for (int e = 0; e < ax->E; e++) p->extra_grad_fro_batchmean[(size_t)s * ax->E + e] = 0.0;
    for (size_t i = 0; i < LQ; i++) p->hidden_sqnorm[(size_t)s * LQ + i] = 0.0;
    for (size_t i = 0; i < LX; i++) p->subout_grad[(size_t)s * LX + i] = 0.0;
    memset(w->jac_sum, 0, LR * sizeof(probe_jacobian_t));
    memset(w->fin_sum, 0, sizeof w->fin_sum);
}

/* Seed s's results from its sums over nb batches. */
static void seed_finish(const probe_axes_t *ax, const model_t *m, probe_t *p, int s, int nb,
                        int jacobian, probe_work_t *w)
{
    const size_t LP = (size_t)ax->L * ax->P, LR = (size_t)ax->L * ax->R;
    // ‖E_batch ∇W‖_F (§3.4 "expected gradient")
    for (size_t i = 0; i < m->num_params; i++) w->gsum[i] /= nb;
    probe_grad_norms(ax, m, w->gsum, p->grad_fro + (size_t)s * LP,
                     p->extra_grad_fro + (size_t)s * ax->E);
    if (!jacobian) return;
    for (size_t i = 0; i < LR; i++) {
        double f[PROBE_JACOBIAN_FIELDS];
        jacobian_mean(&w->jac_sum[i], nb, f);
        const size_t o = (size_t)s * LR + i;
        p->jacobian_spec[o] = f[0];
        p->jacobian_spec_max[o] = f[1];
        p->jacobian_fro[o] = f[2];
        p->jacobian_lemma3[o] = f[3];
        p->jacobian_bound[o] = f[4];
    }
    if (model_output_stack(m)->final.on)
        jacobian_mean(&w->fin_sum[0], nb, p->final_jacobian + (size_t)s * PROBE_JACOBIAN_FIELDS);
    if (p->enc_final_jacobian && m->stack[0].final.on)
        jacobian_mean(&w->fin_sum[1], nb, p->enc_final_jacobian + (size_t)s * PROBE_JACOBIAN_FIELDS);
}

int probe_run(session_t *ses, probe_t *p, probe_progress_fn progress, void *ctx)
{
    const config_t *cfg = &ses->cfg;
    model_t *m = ses->model;
    const probe_axes_t *ax = &p->ax;
    const size_t LR = (size_t)ax->L * ax->R;
    probe_work_t w = {
        .gsum = malloc(m->num_params * sizeof(double)),
        .layer_tmp = malloc((size_t)ax->L * ax->P * sizeof(double)),
        .extra_tmp = malloc((size_t)ax->E * sizeof(double)),
        .hidden_tmp = malloc((size_t)ax->L * ax->Q * sizeof(double)),
        .sub_tmp = malloc((size_t)ax->L * ax->X * sizeof(double)),
        .jac_tmp = malloc((LR ? LR : 1) * sizeof(probe_jacobian_t)),
        .jac_sum = malloc((LR ? LR : 1) * sizeof(probe_jacobian_t)),
        .save = malloc(m->num_params * sizeof(double)),
    };
    gsl_rng *signs = gsl_rng_alloc(gsl_rng_mt19937);
    if (!w.gsum || !w.layer_tmp || !w.extra_tmp || !w.hidden_tmp || !w.sub_tmp || !w.jac_tmp ||
        !w.jac_sum || !w.save || !signs) {
        work_free(&w);
        if (signs) gsl_rng_free(signs);
        return 1;
    }
    const int S = cfg->probe.seeds, nb = cfg->probe.batches, jac = cfg->probe.jacobian;
    const long total = (long)S * nb;
    for (int s = 0; s < S; s++) {
        session_init(ses, cfg->init.seed + (unsigned long)s);
        seed_start(ax, m, p, s, &w);
        double loss = 0.0, fin = 0.0, enc_fin = 0.0;
        if (p->admin_omega) probe_admin_omega(ax, m, p->admin_omega + (size_t)s * ax->L * ax->X);
        for (int b = 0; b < nb; b++) {
            session_next_batch(ses);
            loss += model_forward(m, &ses->batch);
            model_zero_grad(m);
            model_backward(m);
            measure_batch(ax, m, p, s, nb, jac, &w, &fin, &enc_fin);
            if (b == 0) {   // Admin's output change, on the seed's first batch (after its measures)
                double enc_change;
                gsl_rng_set(signs, cfg->init.seed + (unsigned long)s + PROBE_CHANGE_OFFSET);
                change_output(m, &ses->batch, signs, w.save, &p->output_change[s], &enc_change);
                if (p->enc_output_change) p->enc_output_change[s] = enc_change;
            }
            if (progress) progress(ctx, (long)s * nb + b + 1, total);
        }
        seed_finish(ax, m, p, s, nb, jac, &w);
        p->loss[s] = loss / nb;
        p->final_sqnorm[s] = fin;
        if (p->enc_final_sqnorm) p->enc_final_sqnorm[s] = enc_fin;
    }
    work_free(&w);
    gsl_rng_free(signs);
    return 0;
}
