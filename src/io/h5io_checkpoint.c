/* h5io_checkpoint.c — the /checkpoint group of a training file: everything a bit-identical
 * resume needs (docs/design.md §6), one dataset per parameter tensor (docs/design.md §5 names) and moment.
 *
 *   /checkpoint/step           int64 ()     update after which the state was taken; −1 = none
 *   /checkpoint/params/NAME    float64      the tensor's shape ([in][out] or [n])
 *   /checkpoint/optim/m/NAME   float64      first moment (sgd: the momentum buffer)
 *   /checkpoint/optim/v/NAME   float64      second moment (not for sgd)
 * (float32 for a run with train.precision = float32: its state as it is in memory, so a resume
 * continues with the same bits; readers of the parameters get them widened exactly.)
 *   /checkpoint/kahan/NAME     float32      bfloat16_pure with train.kahan = on: the store's
 *                                           compensation (train/store.h)
 *   /checkpoint/optim/t        int64 ()     optimizer updates taken
 *   /checkpoint/rng_init       uint8 (S)    gsl_rng state bytes (attribute rng_type = mt19937)
 *   /checkpoint/rng_data       uint8 (S)    the data/dropout stream
 *   /checkpoint/batches        int64 ()     training batches drawn (the data position)
 * Every dataset exists from the start (SWMR writing cannot create any) and is overwritten in
 * place; step is −1 while a checkpoint is being written, so a kill in between leaves no valid
 * checkpoint rather than a mixed one. The checkpoint before it survives in the journal
 * (h5io_journal.c), written first. Every byte is checksummed by HDF5 itself: the arrays are
 * chunked with the Fletcher-32 filter (checked on every read), the scalars are compact, so
 * they live in their object header, which the file format (libver latest) checksums. A flipped
 * bit fails the read, and --resume refuses the checkpoint instead of continuing from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/h5io_internal.h"

/* Bytes of one chunk at most (HDF5 allows 4 GiB): a tensor is split along its first axis. */
#define CHUNK_BYTES ((size_t)64 << 20)

/* A fixed-size dataset (space allocated at its first write): an array chunked with
 * Fletcher-32 checksums, a scalar compact (in its checksummed object header). */
static int create_fixed(hid_t file, const char *path, hid_t type, int rank, const hsize_t *dims)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    if (rank) {
        size_t inner = H5Tget_size(type);
        for (int i = 1; i < rank; i++) inner *= (size_t)dims[i];
        hsize_t chunk[2] = {dims[0], rank > 1 ? dims[1] : 1};
        if (chunk[0] * inner > CHUNK_BYTES) chunk[0] = CHUNK_BYTES / inner ? CHUNK_BYTES / inner : 1;
        if (chunk[0] == 0) chunk[0] = 1;   // an empty tensor still has a chunk shape
        H5Pset_chunk(dcpl, rank, chunk);
        H5Pset_fletcher32(dcpl);
    } else {
        H5Pset_layout(dcpl, H5D_COMPACT);
    }
    hid_t space = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t ds = H5Dcreate2(file, path, type, space, lcpl, dcpl, H5P_DEFAULT);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    if (ds < 0) return 1;
    H5Dclose(ds);
    return 0;
}

static int write_scalar(hid_t file, const char *path, long long v)
{
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    herr_t st = ds < 0 ? -1 : H5Dwrite(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
    if (ds >= 0) H5Dclose(ds);
    return st < 0;
}

/* Open dataset path of f holding count values of class cls (rank and dims too when rank >= 0);
 * the id, or −1 (absent, or recorded as malformed: h5io_error). */
static hid_t open_checked(h5io_file_t *f, const char *path, H5T_class_t cls, hssize_t count,
                          int rank, const hsize_t *dims)
{
    if (!h5io_exists(f, path)) return -1;
    hid_t ds = H5Dopen2(f->id, path, H5P_DEFAULT);
    if (ds < 0) { h5io_bad(f, path, "not a dataset"); return -1; }
    hid_t space = H5Dget_space(ds), type = H5Dget_type(ds);
    hsize_t d[8];
    const int r = H5Sget_simple_extent_ndims(space);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    int ok = H5Tget_class(type) == cls && n == count && r >= 0 && r <= 8;
    if (ok && rank >= 0) {
        ok = r == rank;
        H5Sget_simple_extent_dims(space, d, NULL);
        for (int i = 0; ok && i < r; i++) ok = d[i] == dims[i];
    }
    if (!ok)
        h5io_bad(f, path, "%lld values of rank %d and HDF5 type class %d, expected %lld of "
                 "class %d", (long long)n, r, (int)H5Tget_class(type), (long long)count, (int)cls);
    H5Tclose(type);
    H5Sclose(space);
    if (ok) return ds;
    H5Dclose(ds);
    return -1;
}

/* The int64 scalar at path, or dflt when absent or unreadable (malformed: recorded). */
static long long read_scalar(h5io_file_t *f, const char *path, long long dflt)
{
    long long v = dflt;
    hid_t ds = open_checked(f, path, H5T_INTEGER, 1, -1, NULL);
    if (ds < 0) return dflt;
    if (H5Dread(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) {
        h5io_bad(f, path, "unreadable (damaged, or failing its checksum)");
        v = dflt;
    }
    H5Dclose(ds);
    return v;
}

/* Tensor dims as in dumps: 2-D [rows][cols], 1-D [cols]. */
static int tensor_dims(const tensor_info_t *t, hsize_t *d)
{
    d[0] = t->rank == 2 ? t->rows : t->cols;
    d[1] = t->cols;
    return t->rank;
}

static const char *const PREFIX[4] = {"/checkpoint/params", "/checkpoint/optim/m", "/checkpoint/optim/v",
                                      "/checkpoint/kahan"};

/* The element type of a run's tensors: in the file, in memory, and its size (the float32 core's
 * train_t has the float64 declaration's layout, its buffers hold floats: docs/design.md §2). */
typedef struct {
    hid_t file, mem;
    size_t size;
} elem_t;

static elem_t elem_of(const train_t *t)
{
    if (config_core_float(&t->s.cfg))
        return (elem_t){H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, sizeof(float)};
    return (elem_t){H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};
}

int h5io_checkpoint_create(h5io_file_t *f, const train_t *t)
{
    const model_t *m = t->s.model;
    int rc = 0;
    for (int p = 0; p < 4 && !rc; p++) {
        if ((p == 2 && !t->opt.v) || (p == 3 && !t->store.comp)) continue;
        for (int i = 0; i < m->num_tensors && !rc; i++) {
            hsize_t d[2];
            char path[128];
            snprintf(path, sizeof path, "%s/%s", PREFIX[p], m->tensors[i].name);
            rc |= create_fixed(f->id, path, elem_of(t).file, tensor_dims(&m->tensors[i], d), d);
        }
    }
    hsize_t ni = gsl_rng_size(t->s.rng_init), nd = gsl_rng_size(t->s.rng_data);
    rc |= create_fixed(f->id, "/checkpoint/rng_init", H5T_STD_U8LE, 1, &ni);
    rc |= create_fixed(f->id, "/checkpoint/rng_data", H5T_STD_U8LE, 1, &nd);
    rc |= create_fixed(f->id, "/checkpoint/step", H5T_STD_I64LE, 0, NULL);
    rc |= create_fixed(f->id, "/checkpoint/batches", H5T_STD_I64LE, 0, NULL);
    rc |= create_fixed(f->id, "/checkpoint/optim/t", H5T_STD_I64LE, 0, NULL);
    if (rc) return 1;
    rc |= write_scalar(f->id, "/checkpoint/step", -1);
    rc |= h5io_write_attr_string(f, "/checkpoint", "rng_type", gsl_rng_name(t->s.rng_data));
    rc |= h5io_write_attr_string(f, "/checkpoint", "optimizer",
                                 config_optimizer_name(t->s.cfg.train.optimizer));
    rc |= h5io_write_attr_string(f, "/checkpoint", "description",
                                 "state after update 'step' (-1: none written): params/NAME, "
                                 "optim/m|v/NAME (sgd: m = momentum buffer), optim/t, gsl_rng "
                                 "state bytes rng_init and rng_data, batches = data position");
    return rc;
}

/* Write every tensor of buf (layout of m, elements e) under prefix. */
static int tensors_write(hid_t file, const char *prefix, const model_t *m, const void *buf,
                         elem_t e)
{
    int rc = 0;
    for (int i = 0; i < m->num_tensors && !rc; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", prefix, m->tensors[i].name);
        hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
        if (ds < 0) return 1;
        const char *x = (const char *)buf + m->tensors[i].offset * e.size;
        rc = H5Dwrite(ds, e.mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) < 0;
        H5Dclose(ds);
    }
    return rc;
}

/* Read every tensor of buf (layout of m, elements in memory of type mem and size) from under
 * prefix: each of the tensor's own shape and of floating-point type, else recorded
 * (h5io_error). 0 or 1. */
static int tensors_read(h5io_file_t *f, const char *prefix, const model_t *m, void *buf,
                        elem_t e)
{
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        char path[128];
        hsize_t d[2];
        snprintf(path, sizeof path, "%s/%s", prefix, t->name);
        const int rank = tensor_dims(t, d);
        hid_t ds = open_checked(f, path, H5T_FLOAT, (hssize_t)model_tensor_size(t), rank, d);
        if (ds < 0) {
            if (!h5io_error(f)) h5io_bad(f, path, "missing");
            return 1;
        }
        char *x = (char *)buf + t->offset * e.size;
        const int bad = H5Dread(ds, e.mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) < 0;
        H5Dclose(ds);
        if (bad) { h5io_bad(f, path, "unreadable (damaged, or failing its checksum)"); return 1; }
    }
    return 0;
}

/* Write the state bytes of r at path. */
static int rng_write(hid_t file, const char *path, const gsl_rng *r)
{
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return 1;
    const int rc = H5Dwrite(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, gsl_rng_state(r)) < 0;
    H5Dclose(ds);
    return rc;
}

/* Read the state bytes of r from path: bytes, as many as r has. 0 or 1 (recorded). */
static int rng_read(h5io_file_t *f, const char *path, gsl_rng *r)
{
    hid_t ds = open_checked(f, path, H5T_INTEGER, (hssize_t)gsl_rng_size(r), -1, NULL);
    if (ds < 0) {
        if (!h5io_error(f)) h5io_bad(f, path, "missing");
        return 1;
    }
    const int bad = H5Dread(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, gsl_rng_state(r)) < 0;
    H5Dclose(ds);
    if (bad) h5io_bad(f, path, "unreadable (damaged, or failing its checksum)");
    return bad;
}

int h5io_checkpoint_write(h5io_file_t *f, const train_t *t)
{
    const hid_t file = f->id;
    // step = −1 while the state is being written: a kill in between leaves no valid checkpoint
    int rc = write_scalar(file, "/checkpoint/step", -1);
    rc |= H5Fflush(file, H5F_SCOPE_GLOBAL) < 0;
    const elem_t e = elem_of(t);
    rc |= tensors_write(file, PREFIX[0], t->s.model, t->s.model->params, e);
    h5io_test_hook("CHECKPOINT");   // a test may kill the process here, the state half-written
    rc |= tensors_write(file, PREFIX[1], t->s.model, t->opt.m, e);
    if (t->opt.v) rc |= tensors_write(file, PREFIX[2], t->s.model, t->opt.v, e);
    if (t->store.comp) rc |= tensors_write(file, PREFIX[3], t->s.model, t->store.comp, e);
    rc |= write_scalar(file, "/checkpoint/optim/t", t->opt.t);
    rc |= write_scalar(file, "/checkpoint/batches", t->batches);
    rc |= rng_write(file, "/checkpoint/rng_init", t->s.rng_init);
    rc |= rng_write(file, "/checkpoint/rng_data", t->s.rng_data);
    rc |= H5Fflush(file, H5F_SCOPE_GLOBAL) < 0;
    if (rc) return 1;
    rc |= write_scalar(file, "/checkpoint/step", t->step);
    rc |= H5Fflush(file, H5F_SCOPE_GLOBAL) < 0;
    return rc;
}

size_t h5io_checkpoint_bytes(const train_t *t)
{
    const size_t tensors = (t->opt.v ? 3 : 2) + (t->store.comp != NULL);   // params, m (v, kahan)
    return tensors * t->s.model->num_params * elem_of(t).size + gsl_rng_size(t->s.rng_init) +
           gsl_rng_size(t->s.rng_data) + 3 * sizeof(long long);
}

long h5io_checkpoint_step(h5io_file_t *f)
{
    return (long)read_scalar(f, "/checkpoint/step", -1);
}

int h5io_checkpoint_load(h5io_file_t *f, train_t *t, char *why, size_t len)
{
    const long step = h5io_checkpoint_step(f);
    if (step < 0) {
        snprintf(why, len, "%s", h5io_error(f) ? h5io_error(f) : "no complete checkpoint");
        return 1;
    }
    char *rng = h5io_read_attr_string(f, "/checkpoint", "rng_type");
    const int same_rng = rng && !strcmp(rng, gsl_rng_name(t->s.rng_data));
    free(rng);
    if (!same_rng && !h5io_error(f))
        h5io_bad(f, "/checkpoint", "attribute 'rng_type' is not %s", gsl_rng_name(t->s.rng_data));
    const elem_t e = elem_of(t);
    int rc = !same_rng || tensors_read(f, PREFIX[0], t->s.model, t->s.model->params, e) ||
             tensors_read(f, PREFIX[1], t->s.model, t->opt.m, e) ||
             (t->opt.v && tensors_read(f, PREFIX[2], t->s.model, t->opt.v, e)) ||
             (t->store.comp && tensors_read(f, PREFIX[3], t->s.model, t->store.comp, e)) ||
             rng_read(f, "/checkpoint/rng_init", t->s.rng_init) ||
             rng_read(f, "/checkpoint/rng_data", t->s.rng_data);
    t->opt.t = (long)read_scalar(f, "/checkpoint/optim/t", -1);
    t->batches = (long)read_scalar(f, "/checkpoint/batches", -1);
    t->step = step;
    if (!rc && (t->opt.t < 0 || t->batches < 0) && !h5io_error(f))
        h5io_bad(f, "/checkpoint", "optim/t or batches missing or negative");
    if (rc || h5io_error(f)) {
        snprintf(why, len, "%s", h5io_error(f) ? h5io_error(f) : "unreadable checkpoint");
        return 1;
    }
    data_seek(&t->s.data, t->batches);   // epoch-ordered data continue where they were
    return 0;
}

int h5io_checkpoint_params(h5io_file_t *f, model_t *m, long *step, char *why, size_t len)
{
    *step = h5io_checkpoint_step(f);
    if (*step < 0) {
        snprintf(why, len, "%s", h5io_error(f) ? h5io_error(f) : "no complete checkpoint");
        return 1;
    }
    const elem_t e = {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sizeof(double)};   // float32: widened
    if (tensors_read(f, PREFIX[0], m, m->params, e)) {
        snprintf(why, len, "%s", h5io_error(f) ? h5io_error(f) : "unreadable checkpoint");
        return 1;
    }
    return 0;
}
