/* h5io_probe.c — the /probe group (docs/design.md §6): [seed][layer][param|site|norm|sub]
 * datasets with string attributes naming every axis, so h5py/h5dump readers need no project
 * code. Written from measure/probe.h's array table; read back by names, any widths (files
 * written before an axis existed load with that array NaN). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/h5io.h"
#include "io/h5io_internal.h"

/* The HDF5 name of an axis: "param", "site", "norm", "tensor", "sub", "field". */
static const char *axis_label(probe_axis_id_t id) { return probe_axis_label(id); }

int h5io_write_probe(h5io_file_t *f, const probe_t *p, const char *const *site_symbols)
{
    const probe_axes_t *ax = &p->ax;
    int rc = 0;
    for (int d = 0; d < PROBE_NUM_ARRAYS && !rc; d++) {
        const probe_array_t *a = &PROBE_ARRAYS[d];
        const double *data = *(double *const *)((const char *)p + a->field);
        if (!data) continue;
        size_t dims[3];
        int rank = 0;
        const char *axes[3];
        dims[rank] = (size_t)p->S; axes[rank++] = "seed";
        if (a->layered) { dims[rank] = (size_t)ax->L; axes[rank++] = "layer"; }
        if (a->axis != PA_NONE) {
            dims[rank] = (size_t)probe_axis_len(ax, a->axis);
            axes[rank++] = axis_label(a->axis);
        }
        char path[96];
        snprintf(path, sizeof path, "/probe/%s", a->name);
        rc |= h5io_write_doubles(f, path, data, rank, dims);
        rc |= h5io_write_attr_strings(f, path, "axes", axes, (size_t)rank);
        if (a->axis != PA_NONE)
            rc |= h5io_write_attr_strings(f, path, axis_label(a->axis),
                                          (const char *const *)probe_axis_names(ax, a->axis),
                                          (size_t)probe_axis_len(ax, a->axis));
        rc |= h5io_write_attr_string(f, path, "description", a->description);
        if (a->layered && ax->encdec)   // which stack each layer row belongs to
            rc |= h5io_write_attr_strings(f, path, "stack", (const char *const *)ax->stack,
                                          (size_t)ax->L);
        if (a->axis == PA_SITE && site_symbols)
            rc |= h5io_write_attr_strings(f, path, "site_symbols", site_symbols, (size_t)ax->nsite);
    }
    rc |= h5io_write_attr_int(f, "/probe", "seeds", p->S);
    rc |= h5io_write_attr_int(f, "/probe", "layers", ax->L);
    return rc;
}

/* The names of one axis from the attribute label of dataset name under prefix/probe (none
 * when the dataset or attribute is absent: an axis the file predates). */
static char **read_axis(h5io_file_t *f, const char *prefix, const char *name, const char *label,
                        int *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/probe/%s", prefix, name);
    size_t count = 0;
    char **names = h5io_exists(f, path) ? h5io_read_attr_strings(f, path, label, &count) : NULL;
    *n = names ? (int)count : 0;
    return names ? names : calloc(1, sizeof(char *));
}

/* Axes of the probe under prefix from its datasets' attributes; stack "lm" when absent. */
static int read_axes(h5io_file_t *f, const char *prefix, int L, probe_axes_t *ax)
{
    memset(ax, 0, sizeof *ax);
    ax->L = L;
    ax->param = read_axis(f, prefix, "grad_fro", "param", &ax->nparam);
    ax->site = read_axis(f, prefix, "hidden_sqnorm", "site", &ax->nsite);
    ax->norm = read_axis(f, prefix, "jacobian_spec", "norm", &ax->nnorm);
    ax->extra = read_axis(f, prefix, "extra_grad_fro", "tensor", &ax->nextra);
    ax->sub = read_axis(f, prefix, "subout_grad", "sub", &ax->nsub);
    ax->head = read_axis(f, prefix, "attn_entropy", "head", &ax->nhead);   // none before dynamics
    int ns = 0;
    ax->stack = read_axis(f, prefix, "grad_fro", "stack", &ns);
    char path[512];
    snprintf(path, sizeof path, "%s/probe/enc_final_sqnorm", prefix);
    ax->encdec = h5io_exists(f, path);
    snprintf(path, sizeof path, "%s/probe/admin_omega", prefix);
    ax->admin = h5io_exists(f, path);
    if (ax->stack && ns != L) {   // a single stack: every row "lm"
        for (int i = 0; i < ns; i++) free(ax->stack[i]);
        free(ax->stack);
        ax->stack = calloc((size_t)L, sizeof(char *));
        for (int r = 0; ax->stack && r < L; r++) ax->stack[r] = strdup("lm");
    }
    const int bad = !ax->param || !ax->site || !ax->norm || !ax->extra || !ax->sub || !ax->stack ||
                    !ax->head;
    if (bad) probe_axes_free(ax);
    return bad;
}

int h5io_read_probe(h5io_file_t *f, const char *prefix, probe_t **out, char *err, size_t errlen)
{
    *out = NULL;
    double *grad = NULL;
    size_t dims[8];
    int rank;
    char path[512];
    snprintf(path, sizeof path, "%s/probe/grad_fro", prefix);
    if (h5io_read_doubles(f, path, &grad, dims, &rank) || rank != 3) {
        free(grad);
        if (h5io_error(f)) snprintf(err, errlen, "%s", h5io_error(f));
        else snprintf(err, errlen, "no %s [seed][layer][param] in this file", path);
        return 1;
    }
    free(grad);
    if (dims[0] == 0 || dims[1] == 0 || dims[0] > 1000000 || dims[1] > 100000) {
        h5io_bad(f, path, "%zu seeds of %zu layers (at least one of each)", dims[0], dims[1]);
        snprintf(err, errlen, "%s", h5io_error(f));
        return 1;
    }
    probe_axes_t ax;
    if (read_axes(f, prefix, (int)dims[1], &ax) || (size_t)ax.nparam != dims[2]) {
        if (ax.param) probe_axes_free(&ax);
        if (h5io_error(f)) snprintf(err, errlen, "%s", h5io_error(f));
        else snprintf(err, errlen, "%s: no 'param' attribute naming its %zu columns", path, dims[2]);
        return 1;
    }
    probe_t *p = probe_alloc((int)dims[0], &ax);
    probe_axes_free(&ax);
    if (!p) { snprintf(err, errlen, "out of memory"); return 1; }
    for (int d = 0; d < PROBE_NUM_ARRAYS; d++) {
        const probe_array_t *a = &PROBE_ARRAYS[d];
        double **dst = (double **)((char *)p + a->field);
        snprintf(path, sizeof path, "%s/probe/%s", prefix, a->name);
        // an array the file predates: NaN; the curvature's only where the file has them
        if ((!*dst && a->only != PO_CURV) || !h5io_exists(f, path)) continue;
        double *data;
        const size_t n = (size_t)p->S * probe_array_size(&p->ax, a);
        if (h5io_read_doubles(f, path, &data, dims, &rank)) {
            if (h5io_error(f)) snprintf(err, errlen, "%s", h5io_error(f));
            else snprintf(err, errlen, "%s: unreadable", path);
            probe_free(p);
            return 1;
        }
        size_t got = 1;
        for (int i = 0; i < rank; i++) got *= dims[i];
        if (got != n) {
            h5io_bad(f, path, "%zu values, expected %zu", got, n);
            snprintf(err, errlen, "%s", h5io_error(f));
            free(data);
            probe_free(p);
            return 1;
        }
        free(*dst);
        *dst = data;
    }
    if (h5io_error(f)) {   // an axis' names were malformed
        snprintf(err, errlen, "%s", h5io_error(f));
        probe_free(p);
        return 1;
    }
    *out = p;
    return 0;
}
