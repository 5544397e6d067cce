/* probe_axes.c — the named axes of a probe, taken from the model (measure/probe.h): the
 * layer tensors it declares, its hidden-state and norm sites, the tensors outside its layers,
 * its sub-layers, the stack of every layer row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/probe_internal.h"

/* ------------------------------------------------------------------------------- axes */

const char *const *probe_site_symbols(const config_t *cfg)
{
    // docs/design.md §1: the sites input, resid1, resid2, output of a layer, by the placement's
    // row of the scheme table (its wiring: T-Fixup's post keeps Post-LN's names)
    if (cfg->model.arch != ARCH_LM) return NULL;
    const scheme_t *s = scheme_of_placement((int)cfg->model.placement);
    return s ? s->site_symbols : NULL;
}

const char *const PROBE_SUB_NAMES[3] = {"self", "cross", "ffn"};   // by sublayer_kind_t
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
    char **lists[9] = {a->param, a->site, a->norm, a->extra, a->sub, a->stack, a->head,
                       a->channel, a->unit};
    const int lens[9] = {a->nparam, a->nsite, a->nnorm, a->nextra, a->nsub, a->L, a->nhead,
                         a->nchannel, a->nunit};
    for (int k = 0; k < 9; k++) {
        for (int i = 0; lists[k] && i < lens[k]; i++) free(lists[k][i]);
        free(lists[k]);
    }
    memset(a, 0, sizeof *a);
}

const norm_site_t *probe_sublayer_site(const sublayer_t *sl, int t)
{
    return t == 0 ? &sl->norm : t == 1 ? &sl->norm_out : &sl->inner;
}

/* Which canonical layer columns (model/tensors.h) the model's sub-layers declare: a norm site
 * counts γ and β (and DyT's α) even where the norm kind has no β. */
static void declared_columns(const model_t *m, int *used)
{
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        for (int k = 0; k < st->L * st->nsub; k++) {
            const sublayer_t *sl = &st->subs[k];
            int n;
            const char *const *branch = tensors_branch_names(sl->rule.kind, &n);
            for (int j = 0; j < n; j++) used[tensors_column_index(branch[j])] = 1;
            for (int t = 0; t < 3; t++) {
                if (!probe_sublayer_site(sl, t)->on) continue;
                for (int q = 0; q < (m->norm == NORM_DYT ? 3 : 2); q++)
                    used[tensors_column_index(tensors_site_param(t, sl->index, q))] = 1;
            }
            for (int p = 0; p < SUBLAYER_NPARAMS; p++)   // the schemes' own (ω, ReZero's α, …)
                if (sublayer_param_values(&SUBLAYER_PARAMS[p], sl))
                    used[tensors_column_index(SUBLAYER_PARAMS[p].name(sl->index))] = 1;
            for (int q = 0; sl->qn.gamma && q < 4; q++)   // QK-norm: γ and β of q and k
                used[tensors_column_index(tensors_qk_name(sl->rule.kind == SUB_CROSS_ATTN,
                                                          q / 2, q % 2))] = 1;
        }
    }
    for (int i = 0; i < m->num_tensors; i++)   // and every layer tensor it has (SwiGLU's w3 b3)
        if (m->tensors[i].column >= 0) used[m->tensors[i].column] = 1;
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
                    on |= sl->index == k && probe_sublayer_site(sl, t)->on;
                }
            char name[32];
            tensors_site_name(t, k, name, sizeof name);
            if (on) rc |= push(a->norm, &a->nnorm, name);
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
    a->head = calloc((size_t)(2 * m->H), sizeof(char *));
    a->channel = calloc((size_t)m->C, sizeof(char *));
    a->unit = calloc((size_t)m->F, sizeof(char *));
    int *used = calloc((size_t)ncol, sizeof(int));
    int rc = !a->param || !a->site || !a->norm || !a->extra || !a->sub || !a->stack || !a->head ||
             !a->channel || !a->unit || !used;
    if (!rc) declared_columns(m, used);
    for (int c = 0; !rc && c < ncol; c++)
        if (used[c]) rc |= push(a->param, &a->nparam, tensors_column_name(c));
    // sites: input, resid1 … resid<nsub>, output; the norm sites that exist
    rc = rc || push(a->site, &a->nsite, "input");
    for (int k = 1; !rc && k <= nsub; k++) {
        char name[32];
        snprintf(name, sizeof name, "resid%d", k);
        rc |= push(a->site, &a->nsite, name);
    }
    rc = rc || push(a->site, &a->nsite, "output") || norm_axis(a, m);
    // the tensors outside the layers (a single stack's four as files have always had them)
    rc = rc || push(a->extra, &a->nextra, tensors_embed_name()) ||
         push(a->extra, &a->nextra, tensors_head_name());
    for (int s = 0; !rc && s < m->nstacks; s++)   // lm; or encoder, decoder
        for (int q = 0; q < (m->norm == NORM_DYT ? 3 : 2); q++) {
            char name[48];
            snprintf(name, sizeof name, "%s.%s", tensors_final_norm_name(m->stack[s].kind),
                     tensors_param_suffix(q));
            rc |= push(a->extra, &a->nextra, name);
        }
    for (int k = 0; !rc && k < 3; k++)
        if (k != SUB_CROSS_ATTN || a->encdec) rc |= push(a->sub, &a->nsub, PROBE_SUB_NAMES[k]);
    for (int r = 0; !rc && r < a->L; r++) {
        int l;
        rc |= !(a->stack[r] = strdup(STACK_NAMES[model_row_stack(m, r, &l)->kind]));
    }
    for (int k = 0; !rc && k < (a->encdec ? 2 : 1); k++)   // every attention's heads
        for (int h = 0; !rc && h < m->H; h++) {
            char name[32];
            snprintf(name, sizeof name, "%s.h%d", PROBE_SUB_NAMES[k], h);
            rc |= push(a->head, &a->nhead, name);
        }
    for (int c = 0; !rc && c < m->C + m->F; c++) {   // the precision measures' axes
        char name[32];
        snprintf(name, sizeof name, "%c%d", c < m->C ? 'c' : 'u', c < m->C ? c : c - m->C);
        rc |= c < m->C ? push(a->channel, &a->nchannel, name) : push(a->unit, &a->nunit, name);
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
    d->param = copy_names(s->param, s->nparam, &rc);
    d->site = copy_names(s->site, s->nsite, &rc);
    d->norm = copy_names(s->norm, s->nnorm, &rc);
    d->extra = copy_names(s->extra, s->nextra, &rc);
    d->sub = copy_names(s->sub, s->nsub, &rc);
    d->stack = copy_names(s->stack, s->L, &rc);
    d->head = copy_names(s->head, s->nhead, &rc);
    d->channel = copy_names(s->channel, s->nchannel, &rc);
    d->unit = copy_names(s->unit, s->nunit, &rc);
    if (rc) probe_axes_free(d);
    return rc;
}

int probe_axis_len(const probe_axes_t *a, probe_axis_id_t id)
{
    switch (id) {
    case PA_PARAM: return a->nparam;
    case PA_SITE: return a->nsite;
    case PA_NORM: return a->nnorm;
    case PA_EXTRA: return a->nextra;
    case PA_SUB: return a->nsub;
    case PA_FIELDS: return PROBE_JACOBIAN_FIELDS;
    case PA_HEAD: return a->nhead;
    case PA_KIND: return TENSOR_BLOCKS;
    case PA_CHANNEL: return a->nchannel;
    case PA_UNIT: return a->nunit;
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
    case PA_HEAD: return a->head;
    case PA_KIND: return (char *const *)tensors_block_names();
    case PA_CHANNEL: return a->channel;
    case PA_UNIT: return a->unit;
    case PA_NONE: break;
    }
    return NULL;
}

const char *probe_axis_label(probe_axis_id_t id)
{
    static const char *const LABELS[] = {"", "param", "site", "norm", "tensor", "sub", "field",
                                         "head", "kind", "channel", "unit"};
    return LABELS[id];
}

size_t probe_array_size(const probe_axes_t *a, const probe_array_t *arr)
{
    return (arr->layered ? (size_t)a->L : 1) * (size_t)probe_axis_len(a, arr->axis);
}

