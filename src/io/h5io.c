/* h5io.c — HDF5 files: create/commit, datasets, attributes, reading; dumps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <hdf5.h>
#include "io/h5io.h"
#include "io/h5io_internal.h"
#include "util/fsutil.h"
#include "util/tmpfiles.h"

#ifndef STABILITY_VERSION
#define STABILITY_VERSION "0.1"
#endif

void h5io_init(void)
{
    // HDF5's atexit handler closes what is still open; after a close that failed (a flush
    // that ran out of disk) it dereferences a freed file and crashes the exit (SIGSEGV)
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

int h5io_make_parent_dirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

int h5io_check_target(const char *path, int overwrite, char *err, size_t errlen)
{
    struct stat st;
    if (!path[0] || strlen(path) >= H5IO_PATH_MAX) {
        snprintf(err, errlen, "%.64s%s: %s", path, strlen(path) > 64 ? "..." : "",
                 path[0] ? "path longer than 1023 characters" : "empty output path");
        return 2;
    }
    // only a regular file may be replaced: never a device, FIFO, directory or symbolic link
    const int rc = fsutil_check_replaceable(path, err, errlen);
    if (rc) return rc;
    if (!overwrite && lstat(path, &st) == 0) {
        snprintf(err, errlen, "%s: exists (use --force or [output] overwrite = true)", path);
        return 2;
    }
    return 0;
}

int h5io_create(h5io_file_t **out, const char *path, int overwrite, const char *what,
                char *err, size_t errlen)
{
    *out = NULL;
    if (errlen) err[0] = '\0';
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);   // errors are reported through err, not printed
    int rc = h5io_check_target(path, overwrite, err, errlen);
    if (rc) return rc;
    if (h5io_make_parent_dirs(path) != 0) {
        snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
        return 1;
    }
    // the claim first: a second writer of path refuses now, naming us (docs/design.md §6)
    const int claim = h5io_claim(path, what, err, errlen);
    if (claim < 0) return 1;
    h5io_file_t *f = calloc(1, sizeof *f);
    if (!f) { snprintf(err, errlen, "%s: out of memory", path); h5io_unclaim(path, claim); return 1; }
    f->claim = claim;
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%ld", path, (long)getpid());
    tmpfiles_add(f->tmp);   // removed if a signal ends the process meanwhile
    if (h5io_create_empty(f->tmp, err, errlen) ||
        (f->id = H5Fcreate(f->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) < 0) {
        if (!err[0]) snprintf(err, errlen, "%s: cannot create the HDF5 file", f->tmp);
        fsutil_unlink_regular(f->tmp);   // ours: made by h5io_create_empty
        tmpfiles_forget(f->tmp);
        h5io_unclaim(path, claim);
        free(f);
        return 1;
    }
    tmpfiles_test_hook();
    *out = f;
    return 0;
}

/* Link-creation property list that makes intermediate groups. */
static hid_t lcpl_intermediate(void)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    return lcpl;
}

static int write_dataset(h5io_file_t *f, const char *dset, hid_t type, const void *data,
                         int rank, const size_t *dims)
{
    hsize_t hd[8];
    for (int i = 0; i < rank; i++) hd[i] = dims[i];
    hid_t space = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, hd, NULL);
    hid_t lcpl = lcpl_intermediate();
    hid_t ds = H5Dcreate2(f->id, dset, type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = ds < 0 ? -1 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (ds >= 0) H5Dclose(ds);
    H5Pclose(lcpl);
    H5Sclose(space);
    return st < 0 ? 1 : 0;
}

int h5io_write_doubles(h5io_file_t *f, const char *dset, const double *data, int rank,
                       const size_t *dims)
{
    return write_dataset(f, dset, H5T_NATIVE_DOUBLE, data, rank, dims);
}

int h5io_write_ints(h5io_file_t *f, const char *dset, const int32_t *data, int rank,
                    const size_t *dims)
{
    return write_dataset(f, dset, H5T_NATIVE_INT32, data, rank, dims);
}

hid_t h5io_string_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

static int write_attr(h5io_file_t *f, const char *obj, const char *name, hid_t type,
                      hid_t space, const void *data)
{
    if (H5Aexists_by_name(f->id, obj, name, H5P_DEFAULT) > 0)
        H5Adelete_by_name(f->id, obj, name, H5P_DEFAULT);
    hid_t a = H5Acreate_by_name(f->id, obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
    herr_t st = a < 0 ? -1 : H5Awrite(a, type, data);
    if (a >= 0) H5Aclose(a);
    return st < 0 ? 1 : 0;
}

int h5io_write_strings(h5io_file_t *f, const char *dset, const char *const *values, int rank,
                       const size_t *dims)
{
    hid_t t = h5io_string_type();
    const int rc = write_dataset(f, dset, t, values, rank, dims);
    H5Tclose(t);
    return rc;
}

/* H5Literate callback: copy one top-level object (not /checkpoint) into the group ctx. */
typedef struct { hid_t src, dst; int rc; } copy_ctx_t;

static herr_t copy_object(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)group;
    (void)info;
    copy_ctx_t *c = data;
    if (!strcmp(name, "checkpoint")) return 0;
    if (H5Ocopy(c->src, name, c->dst, name, H5P_DEFAULT, H5P_DEFAULT) < 0) c->rc = 1;
    return 0;
}

/* H5Aiterate callback: copy one root attribute (any type) onto the group ctx. */
static herr_t copy_attribute(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    copy_ctx_t *c = data;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t type = H5Aget_type(a), space = H5Aget_space(a);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    const size_t size = H5Tget_size(type);
    void *buf = calloc((size_t)(n > 0 ? n : 1), size);
    if (buf && H5Aread(a, type, buf) >= 0) {
        hid_t b = H5Acreate2(c->dst, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
        if (b < 0 || H5Awrite(b, type, buf) < 0) c->rc = 1;
        if (b >= 0) H5Aclose(b);
        if (H5Tis_variable_str(type) > 0) H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf);
    } else {
        c->rc = 1;
    }
    free(buf);
    H5Sclose(space);
    H5Tclose(type);
    H5Aclose(a);
    return 0;
}

int h5io_copy_file_into(h5io_file_t *f, const char *dst, const char *src_path, char *err,
                        size_t errlen)
{
    copy_ctx_t c = {.rc = 0};
    if (!fsutil_is_regular(src_path)) {
        snprintf(err, errlen, "%s: cannot open: not a regular file", src_path);
        return 1;
    }
    // read through in a child first: a damaged file must not crash the sweep (h5io_verify.c)
    if (h5io_verify(src_path, 0, err, errlen)) return 1;
    c.src = h5io_open_id(src_path);
    if (c.src < 0) {
        snprintf(err, errlen, "%s: cannot open", src_path);
        return 1;
    }
    hid_t lcpl = lcpl_intermediate();
    c.dst = H5Gcreate2(f->id, dst, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    if (c.dst < 0) {
        H5Fclose(c.src);
        snprintf(err, errlen, "%s: cannot create group", dst);
        return 1;
    }
    H5Literate(c.src, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_object, &c);
    H5Aiterate2(c.src, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_attribute, &c);
    H5Gclose(c.dst);
    H5Fclose(c.src);
    if (c.rc) snprintf(err, errlen, "%s: cannot copy into %s", src_path, dst);
    return c.rc;
}

/* Resolved INI text of cfg without the keys that may change between a run and its resume
 * (train.resume, output.*), malloc'd. */
static char *ini_for_compare(const config_t *cfg)
{
    config_t c = *cfg;
    c.train.resume = 0;
    c.output.file[0] = '\0';
    c.output.overwrite = 0;
    c.output.plots = 0;
    const size_t len = config_to_ini(&c, NULL, 0) + 1;
    char *ini = malloc(len);
    if (ini) config_to_ini(&c, ini, len);
    return ini;
}

int h5io_config_same(const config_t *cfg, const char *stored, char *diff, size_t len)
{
    config_t old;
    char err[CONFIG_ERR_MAX];
    snprintf(diff, len, "its config attribute is unreadable");
    if (!stored || config_parse_string(&old, stored, "file", err, sizeof err)) return 0;
    if (old.train.precision != cfg->train.precision) {   // a float64 file has no such line
        snprintf(diff, len, "it was trained with train.precision = %s, not %s",
                 config_precision_name(old.train.precision),
                 config_precision_name(cfg->train.precision));
        return 0;
    }
    char *a = ini_for_compare(&old), *b = ini_for_compare(cfg);
    const int same = a && b && !strcmp(a, b);
    if (a && b && !same) {
        // the first differing line, as the file has it
        const char *p = a, *q = b;
        while (*p && *p == *q) p++, q++;
        while (p > a && p[-1] != '\n') p--;
        const char *e = strchr(p, '\n');
        snprintf(diff, len, "it has '%.*s'", (int)(e ? e - p : (long)strlen(p)), p);
    }
    free(a);
    free(b);
    return same;
}

int h5io_write_attr_string(h5io_file_t *f, const char *obj, const char *name, const char *value)
{
    hid_t t = h5io_string_type(), s = H5Screate(H5S_SCALAR);
    int rc = write_attr(f, obj, name, t, s, &value);
    H5Sclose(s);
    H5Tclose(t);
    return rc;
}

int h5io_write_attr_strings(h5io_file_t *f, const char *obj, const char *name,
                            const char *const *values, size_t n)
{
    hsize_t dim = n;
    hid_t t = h5io_string_type(), s = H5Screate_simple(1, &dim, NULL);
    int rc = write_attr(f, obj, name, t, s, values);
    H5Sclose(s);
    H5Tclose(t);
    return rc;
}

int h5io_write_attr_int(h5io_file_t *f, const char *obj, const char *name, long long value)
{
    hid_t s = H5Screate(H5S_SCALAR);
    int rc = write_attr(f, obj, name, H5T_NATIVE_LLONG, s, &value);
    H5Sclose(s);
    return rc;
}

int h5io_write_attr_double(h5io_file_t *f, const char *obj, const char *name, double value)
{
    hid_t s = H5Screate(H5S_SCALAR);
    int rc = write_attr(f, obj, name, H5T_NATIVE_DOUBLE, s, &value);
    H5Sclose(s);
    return rc;
}

int h5io_write_root_attrs(h5io_file_t *f, const char *config_ini, unsigned long seed,
                          const char *status)
{
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int rc = h5io_write_attr_string(f, "/", "config", config_ini);
    rc |= h5io_write_attr_string(f, "/", "version", STABILITY_VERSION);
    rc |= h5io_write_attr_string(f, "/", "created", created);
    rc |= h5io_write_attr_int(f, "/", "seed", (long long)seed);
    rc |= h5io_write_attr_string(f, "/", "status", status);
    return rc;
}

int h5io_commit(h5io_file_t *f, char *err, size_t errlen)
{
    int rc = 0, lock = -1;
    errno = 0;
    if (H5Fclose(f->id) < 0) {   // its last writes happen here: errno says why they failed
        snprintf(err, errlen, "%s: cannot write the HDF5 file%s%s", f->tmp, errno ? ": " : "",
                 errno ? strerror(errno) : "");
        rc = 1;
    } else if ((rc = fsutil_check_replaceable(f->path, err, errlen))) {
        // checked again: the path may have changed while the file was written
    } else if (fsutil_lock_exclusive(f->path, &lock) != 0) {
        // a training run started on this path meanwhile: its file is not replaced under it
        snprintf(err, errlen, "%s: in use by a running training run", f->path);
        rc = 1;
    } else if (rename(f->tmp, f->path) != 0) {
        snprintf(err, errlen, "%s: cannot rename from %s: %s", f->path, f->tmp, strerror(errno));
        rc = 1;
    }
    if (lock >= 0) close(lock);
    if (rc) fsutil_unlink_regular(f->tmp);
    tmpfiles_forget(f->tmp);
    h5io_unclaim(f->path, f->claim);
    free(f);
    return rc;
}

void h5io_abort(h5io_file_t *f)
{
    if (!f) return;
    H5Fclose(f->id);
    fsutil_unlink_regular(f->tmp);
    tmpfiles_forget(f->tmp);
    h5io_unclaim(f->path, f->claim);
    free(f);
}

int h5io_write_dump(const char *path, const model_t *m, const char *config_ini,
                    unsigned long seed, int overwrite, const char *precision, char *err,
                    size_t errlen)
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
    rc |= h5io_write_root_attrs(f, config_ini, seed, "done");
    if (precision) rc |= h5io_write_attr_string(f, "/", "precision", precision);
    if (rc) {
        snprintf(err, errlen, "%s: cannot write the dump", path);
        h5io_abort(f);
        return 1;
    }
    return h5io_commit(f, err, errlen);
}
