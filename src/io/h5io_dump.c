/* h5io_dump.c — the dump file of `stability dump` (docs/design.md §6): one batch, the loss,
 * every parameter and its gradient, for the PyTorch cross-checks. */
#include <stdio.h>
#include "io/h5io.h"

/* The estimators of /hvp (docs/design.md §10): Hutchinson's trace and its standard error; the
 * SLQ nodes and weights [probe][m] and the density they give on a grid; every block's nodes and
 * weights [layer][kind][probe][m] (probe.density_blocks). */
static int write_estimators(h5io_file_t *f, const h5io_hvp_t *h)
{
    int rc = 0;
    if (h->trace_probes > 0) {
        rc |= h5io_write_doubles(f, "/hvp/trace", &h->trace, 0, NULL);
        rc |= h5io_write_doubles(f, "/hvp/trace_stderr", &h->trace_stderr, 0, NULL);
        rc |= h5io_write_attr_int(f, "/hvp/trace", "probes", h->trace_probes);
    }
    if (h->density_probes > 0) {
        const size_t dims[2] = {(size_t)h->density_probes, (size_t)h->density_iters},
                     pts = (size_t)h->density_points;
        rc |= h5io_write_doubles(f, "/hvp/density_nodes", h->density_nodes, 2, dims);
        rc |= h5io_write_doubles(f, "/hvp/density_weights", h->density_weights, 2, dims);
        rc |= h5io_write_doubles(f, "/hvp/density_grid", h->density_grid, 1, &pts);
        rc |= h5io_write_doubles(f, "/hvp/density", h->density, 1, &pts);
        rc |= h5io_write_attr_double(f, "/hvp/density", "sigma", h->density_sigma);
    }
    if (h->density_probes > 0 && h->block_rows > 0) {   // [layer][kind][probe][m]
        const size_t dims[4] = {(size_t)h->block_rows, TENSOR_BLOCKS, (size_t)h->density_probes,
                                (size_t)h->density_iters};
        rc |= h5io_write_doubles(f, "/hvp/block_density_nodes", h->block_density_nodes, 4, dims);
        rc |= h5io_write_doubles(f, "/hvp/block_density_weights", h->block_density_weights, 4,
                                 dims);
    }
    return rc;
}

/* /hvp: v and H·v named as /params, λ_max and λ_min of H (docs/design.md §10). */
static int write_hvp(h5io_file_t *f, const model_t *m, const h5io_hvp_t *h)
{
    int rc = 0;
    for (int i = 0; i < m->num_tensors && !rc; i++) {
        const tensor_info_t *t = &m->tensors[i];
        const size_t dims[2] = {t->rank == 2 ? t->rows : t->cols, t->cols};
        char name[96];
        snprintf(name, sizeof name, "/hvp/v/%s", t->name);
        rc |= h5io_write_doubles(f, name, h->v + t->offset, t->rank, dims);
        snprintf(name, sizeof name, "/hvp/Hv/%s", t->name);
        rc |= h5io_write_doubles(f, name, h->Hv + t->offset, t->rank, dims);
    }
    rc |= h5io_write_doubles(f, "/hvp/hessian_max", &h->hessian_max, 0, NULL);
    rc |= h5io_write_doubles(f, "/hvp/hessian_min", &h->hessian_min, 0, NULL);
    char what[400];
    snprintf(what, sizeof what, "H v of the objective on /batch (dropout off) for a unit Gaussian "
             "direction v (stream init.seed + 0x%lX), central differences of the gradient at "
             "step h that cross no ReLU kink; hessian_max, hessian_min by Lanczos (iters steps)",
             CURV_DIRECTION_OFFSET);
    rc |= h5io_write_attr_string(f, "/hvp", "description", what);
    rc |= h5io_write_attr_double(f, "/hvp", "h", h->h);
    rc |= h5io_write_attr_int(f, "/hvp", "kinked", h->kinked);
    rc |= h5io_write_attr_int(f, "/hvp", "iters", h->iters);
    return rc | write_estimators(f, h);
}

int h5io_write_dump(const char *path, const model_t *m, const char *config_ini,
                    unsigned long seed, const data_identity_t *id, int overwrite,
                    const char *precision, const h5io_hvp_t *hvp, const char *diverged,
                    char *err, size_t errlen)
{
    h5io_file_t *f;
    int rc = h5io_create(&f, path, overwrite, "a dump", err, errlen);
    if (rc) return rc;
    const batch_t *b = &m->batch;
    const size_t bt[2] = {(size_t)b->B, (size_t)b->T}, bs[2] = {(size_t)b->B, (size_t)b->S};
    if (b->src) rc |= h5io_write_ints(f, "/batch/src_tokens", b->src, 2, bs);
    rc |= h5io_write_ints(f, "/batch/tokens", b->tokens, 2, bt);
    rc |= h5io_write_ints(f, "/batch/targets", b->targets, 2, bt);
    rc |= h5io_write_doubles(f, "/loss", &m->loss, 0, NULL);
    for (int i = 0; i < m->num_tensors && !rc; i++) {
        const tensor_info_t *t = &m->tensors[i];
        const size_t dims[2] = {t->rank == 2 ? t->rows : t->cols, t->cols};
        char name[96];
        snprintf(name, sizeof name, "/params/%s", t->name);
        rc |= h5io_write_doubles(f, name, m->params + t->offset, t->rank, dims);
        snprintf(name, sizeof name, "/grads/%s", t->name);
        rc |= h5io_write_doubles(f, name, m->grads + t->offset, t->rank, dims);
    }
    if (hvp && !rc) rc |= write_hvp(f, m, hvp);
    rc |= h5io_write_root_attrs(f, config_ini, seed, diverged ? "diverged" : "done", id);
    if (diverged) rc |= h5io_write_attr_string(f, "/", "diverged_reason", diverged);
    if (precision) rc |= h5io_write_attr_string(f, "/", "precision", precision);
    if (rc) {
        snprintf(err, errlen, "%s: cannot write the dump", path);
        h5io_abort(f);
        return 1;
    }
    return h5io_commit(f, err, errlen);
}
