/* h5io.c — writing HDF5 files (docs/design.md §6): one is created as a temporary beside its
 * path, claimed against a second writer, filled with datasets and attributes, and committed
 * by a rename (or aborted). Reading is h5io_read.c; a run file copied into a merged sweep file
 * h5io_copy.c; the kinds of file h5io_probe.c, h5io_train.c, h5io_dump.c. */
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
#include "util/blascore.h"
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
    // a file's name, not a directory's: checked before anything is made (its parent
    // directories would be, and the file then refused)
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
        snprintf(err, errlen, "%s: names a directory, not a file (give FILE.h5)", path);
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

hid_t h5io_lcpl_intermediate(void)
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
    hid_t lcpl = h5io_lcpl_intermediate();
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
                          const char *status, const data_identity_t *id)
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
    rc |= h5io_write_attr_string(f, "/", "blas_core", blascore_name());   // the kernels behind the bits
    if (id && id->sha256[0]) {   // what the run read: a run is its config, seed and data
        rc |= h5io_write_attr_string(f, "/", "data_sha256", id->sha256);
        rc |= h5io_write_attr_int(f, "/", "data_bytes", (long long)id->bytes);
    }
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
