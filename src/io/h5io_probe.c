/* h5io_probe.c — the /probe group of DESIGN §6: [seed][layer][param|site|norm] datasets with
 * string attributes naming every axis, so h5py/h5dump readers need no project code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/h5io.h"

/* One probe dataset: name, pointer into probe_t, last-axis length and names, description. */
typedef struct {
    const char *name;
    size_t field;              /* offsetof(probe_t, array) */
    int layered;               /* 1: (S,L,K); 0: (S,K) or (S) when K = 0 */
    int K;
    const char *axis;          /* name of the last axis ("param", "site", "norm", ...) */
    const char *const *labels; /* K names, or NULL */
    const char *description;
} probe_dataset_t;

static const char *const FINAL_JACOBIAN_FIELDS[5] = {"spec", "spec_max", "fro", "lemma3", "bound"};

#define FIELD(x) offsetof(probe_t, x)
static const probe_dataset_t DATASETS[] = {
    {"grad_fro", FIELD(grad_fro), 1, P_NUM_LAYER_PARAMS, "param", PROBE_PARAM_NAMES,
     "||E_batch grad W||_F: Frobenius norm of the gradient averaged over probe.batches batches"},
    {"grad_fro_batchmean", FIELD(grad_fro_batchmean), 1, P_NUM_LAYER_PARAMS, "param",
     PROBE_PARAM_NAMES, "E_batch ||grad W||_F: per-batch Frobenius norm, averaged"},
    {"extra_grad_fro", FIELD(extra_grad_fro), 0, EXTRA_COUNT, "tensor", PROBE_EXTRA_NAMES,
     "||E_batch grad||_F of the tensors outside the layers (NaN where absent)"},
    {"extra_grad_fro_batchmean", FIELD(extra_grad_fro_batchmean), 0, EXTRA_COUNT, "tensor",
     PROBE_EXTRA_NAMES, "E_batch ||grad||_F of the tensors outside the layers"},
    {"hidden_sqnorm", FIELD(hidden_sqnorm), 1, SITE_COUNT, "site", PROBE_SITE_NAMES,
     "E_token ||x||^2 at each site, averaged over batches (see site_symbols)"},
    {"final_sqnorm", FIELD(final_sqnorm), 0, 0, NULL, NULL,
     "E_token ||x_final||^2 (the input of the output projection)"},
    {"jacobian_spec", FIELD(jacobian_spec), 1, PROBE_NORMS, "norm", PROBE_NORM_NAMES,
     "E_token ||J||_2, J = d norm(x)/dx with gamma, exact"},
    {"jacobian_spec_max", FIELD(jacobian_spec_max), 1, PROBE_NORMS, "norm", PROBE_NORM_NAMES,
     "max over tokens and batches of ||J||_2"},
    {"jacobian_fro", FIELD(jacobian_fro), 1, PROBE_NORMS, "norm", PROBE_NORM_NAMES,
     "E_token ||J||_F"},
    {"jacobian_lemma3", FIELD(jacobian_lemma3), 1, PROBE_NORMS, "norm", PROBE_NORM_NAMES,
     "E_token ||J||_2 * ||x - mu|| / sqrt(d) (Lemma 3: O(1))"},
    {"jacobian_bound", FIELD(jacobian_bound), 1, PROBE_NORMS, "norm", PROBE_NORM_NAMES,
     "E_token sqrt(d) / ||x - mu|| (Lemma 3's scale)"},
    {"final_jacobian", FIELD(final_jacobian), 0, 5, "field", FINAL_JACOBIAN_FIELDS,
     "final norm: spec, spec_max, fro, lemma3, bound as above (NaN without a final norm)"},
    {"loss", FIELD(loss), 0, 0, NULL, NULL, "mean loss over the probe's batches"},
};
#define NUM_DATASETS (sizeof DATASETS / sizeof DATASETS[0])

/* Paper symbols of the sites, per placement (DESIGN §1). */
static const char *const SITE_SYMBOLS_POST[SITE_COUNT] = {"x_l", "x^2_l", "x^5_l", "x_{l+1}"};
static const char *const SITE_SYMBOLS_PRE[SITE_COUNT] = {"x_l", "x^3_l", "x_{l+1}", "x_{l+1}"};

int h5io_write_probe(h5io_file_t *f, const probe_t *p, placement_t placement)
{
    int rc = 0;
    for (size_t d = 0; d < NUM_DATASETS && !rc; d++) {
        const probe_dataset_t *ds = &DATASETS[d];
        const double *data = *(double *const *)((const char *)p + ds->field);
        size_t dims[3];
        int rank = 0;
        const char *axes[3];
        dims[rank] = (size_t)p->S; axes[rank++] = "seed";
        if (ds->layered) { dims[rank] = (size_t)p->L; axes[rank++] = "layer"; }
        if (ds->K) { dims[rank] = (size_t)ds->K; axes[rank++] = ds->axis; }
        char path[96];
        snprintf(path, sizeof path, "/probe/%s", ds->name);
        rc |= h5io_write_doubles(f, path, data, rank, dims);
        rc |= h5io_write_attr_strings(f, path, "axes", axes, (size_t)rank);
        if (ds->labels) rc |= h5io_write_attr_strings(f, path, ds->axis, ds->labels, (size_t)ds->K);
        rc |= h5io_write_attr_string(f, path, "description", ds->description);
        if (!strcmp(ds->name, "hidden_sqnorm"))
            rc |= h5io_write_attr_strings(f, path, "site_symbols",
                                          placement == PLACEMENT_PRE ? SITE_SYMBOLS_PRE
                                                                     : SITE_SYMBOLS_POST,
                                          SITE_COUNT);
    }
    rc |= h5io_write_attr_int(f, "/probe", "seeds", p->S);
    rc |= h5io_write_attr_int(f, "/probe", "layers", p->L);
    return rc;
}

int h5io_read_probe(h5io_file_t *f, const char *prefix, probe_t **out, char *err, size_t errlen)
{
    *out = NULL;
    double *grad = NULL;
    size_t dims[8];
    int rank;
    char path[512];
    snprintf(path, sizeof path, "%s/probe/grad_fro", prefix);
    if (h5io_read_doubles(f, path, &grad, dims, &rank) || rank != 3 ||
        dims[2] != P_NUM_LAYER_PARAMS) {
        free(grad);
        snprintf(err, errlen, "no %s [seed][layer][param] in this file", path);
        return 1;
    }
    free(grad);
    probe_t *p = probe_alloc((int)dims[0], (int)dims[1]);
    if (!p) { snprintf(err, errlen, "out of memory"); return 1; }
    for (size_t d = 0; d < NUM_DATASETS; d++) {
        const probe_dataset_t *ds = &DATASETS[d];
        snprintf(path, sizeof path, "%s/probe/%s", prefix, ds->name);
        double *data;
        size_t n = (size_t)p->S * (ds->layered ? (size_t)p->L : 1) * (ds->K ? (size_t)ds->K : 1);
        if (h5io_read_doubles(f, path, &data, dims, &rank)) {
            snprintf(err, errlen, "%s: missing or unreadable", path);
            probe_free(p);
            return 1;
        }
        size_t got = 1;
        for (int i = 0; i < rank; i++) got *= dims[i];
        if (got != n) {
            snprintf(err, errlen, "%s: %zu values, expected %zu", path, got, n);
            free(data);
            probe_free(p);
            return 1;
        }
        double **dst = (double **)((char *)p + ds->field);
        free(*dst);
        *dst = data;
    }
    *out = p;
    return 0;
}
