/* h5io_read.c — reading result files, which may come from anyone (docs/design.md §6): every
 * read checks the rank, shape, type and size of what it reads before reading it, so that a
 * crafted file cannot write past a buffer; what is wrong is recorded once per file as
 * "FILE: /object: what is wrong" (h5io_error) and the read fails. Files are verified in a child
 * process before they are opened here (h5io_verify.c), so that a crash or a hang inside
 * libhdf5 on a damaged file ends that child, not the caller. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hdf5.h>
#include "io/h5io.h"
#include "io/h5io_internal.h"
#include "util/fsutil.h"

/* What one attribute or dataset of a result file may hold: far more than any we write. */
#define MAX_ATTR_BYTES ((size_t)64 << 20)
#define MAX_NAMES ((size_t)1 << 20)
/* A dataset declaring more than this is read only when its storage can hold it. */
#define PHANTOM_BYTES ((size_t)64 << 20)

void h5io_bad(h5io_file_t *f, const char *obj, const char *fmt, ...)
{
    if (f->bad[0]) return;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(f->bad, sizeof f->bad, "%.200s: %.200s: %.290s", f->path, obj, what);
    h5io_printable(f->bad + strlen(f->path));   // names from the file never reach a terminal raw
}

void h5io_printable(char *text)
{
    for (unsigned char *c = (unsigned char *)text; *c; c++)
        if (*c < 0x20 || *c == 0x7f) *c = '?';
}

const char *h5io_error(const h5io_file_t *f)
{
    return f && f->bad[0] ? f->bad : NULL;
}

hid_t h5io_open_id(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t id = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    // a training file whose writer was killed still carries its SWMR-writer flag: SWMR read
    if (id < 0) id = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
    return id;
}

int h5io_open_read(h5io_file_t **out, const char *path, char *err, size_t errlen)
{
    return h5io_open_verified(out, path, 0, err, errlen);
}

int h5io_open_verified(h5io_file_t **out, const char *path, int flags, char *err, size_t errlen)
{
    *out = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return 1;
    }
    if (!fsutil_is_regular(path)) {   // a FIFO would block the open, a device be consumed
        snprintf(err, errlen, "%s: cannot open: not a regular file (a %s)", path, fsutil_kind(path));
        return 1;
    }
    if (h5io_verify(path, flags, err, errlen)) return 1;
    h5io_file_t *f = calloc(1, sizeof *f);
    if (!f) { snprintf(err, errlen, "%s: out of memory", path); return 1; }
    snprintf(f->path, sizeof f->path, "%s", path);
    if ((f->id = h5io_open_id(path)) < 0) {
        snprintf(err, errlen, "%s: not an HDF5 file (or damaged)", path);
        free(f);
        return 1;
    }
    *out = f;
    return 0;
}

void h5io_close(h5io_file_t *f)
{
    if (!f) return;
    H5Fclose(f->id);
    free(f);
}

int h5io_exists(h5io_file_t *f, const char *path)
{
    // check every prefix: H5Lexists fails on a missing intermediate group
    if (!strcmp(path, "/")) return 1;
    char buf[1400];
    if (strlen(path) >= sizeof buf) return 0;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        const char c = *p;
        if (c == '/' || c == '\0') {
            *p = '\0';
            if (H5Lexists(f->id, buf, H5P_DEFAULT) <= 0) return 0;
            if (c == '\0') return 1;
            *p = '/';
        }
    }
}

/* Number of elements of space (a null space holds none), or −1 (the count would overflow). */
static hssize_t space_count(hid_t space)
{
    if (H5Sget_simple_extent_type(space) == H5S_NULL) return 0;
    return H5Sget_simple_extent_npoints(space);
}

int h5io_read_doubles(h5io_file_t *f, const char *dset, double **data, size_t *dims, int *rank)
{
    *data = NULL;
    if (!h5io_exists(f, dset)) return 1;
    hid_t ds = H5Dopen2(f->id, dset, H5P_DEFAULT);
    if (ds < 0) { h5io_bad(f, dset, "not a dataset"); return 1; }
    hid_t space = H5Dget_space(ds), type = H5Dget_type(ds);
    const H5T_class_t cls = H5Tget_class(type);
    const int r = H5Sget_simple_extent_ndims(space);
    hsize_t hd[8];
    size_t n = 1;
    int ok = 1;
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
        h5io_bad(f, dset, "holds no numbers (HDF5 type class %d)", (int)cls);
        ok = 0;
    } else if (r < 0 || r > 8) {
        h5io_bad(f, dset, "rank %d (at most 8)", r);
        ok = 0;
    } else {
        H5Sget_simple_extent_dims(space, hd, NULL);
        for (int i = 0; i < r && ok; i++) {
            if (hd[i] > 0 && n > ((size_t)1 << 40) / hd[i]) {
                h5io_bad(f, dset, "shape too large to read");
                ok = 0;
            }
            n *= (size_t)hd[i];
        }
        // a crafted header may declare more than the file stores (read as fill values)
        const size_t bytes = n * H5Tget_size(type), stored = (size_t)H5Dget_storage_size(ds);
        if (ok && bytes > PHANTOM_BYTES && bytes / 2 > stored) {
            h5io_bad(f, dset, "declares %zu values but stores %zu bytes", n, stored);
            ok = 0;
        }
    }
    if (ok) {
        for (int i = 0; i < r; i++) dims[i] = (size_t)hd[i];
        *rank = r;
        *data = malloc((n ? n : 1) * sizeof(double));
        if (!*data || H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *data) < 0) {
            if (*data) h5io_bad(f, dset, "unreadable (damaged)");
            free(*data);
            *data = NULL;
            ok = 0;
        }
    }
    H5Tclose(type);
    H5Sclose(space);
    H5Dclose(ds);
    return ok ? 0 : 1;
}

double *h5io_read_train(h5io_file_t *f, const char *prefix, const char *name, size_t *rows,
                        size_t *d1, size_t *d2)
{
    char path[512];
    size_t d[8];
    int r;
    double *x = NULL;
    snprintf(path, sizeof path, "%s/train/%s", prefix, name);
    *rows = 0;
    *d1 = *d2 = 1;
    if (!h5io_exists(f, path) || h5io_read_doubles(f, path, &x, d, &r) || r < 1 || r > 3) {
        free(x);
        return NULL;
    }
    *rows = d[0];
    if (r > 1) *d1 = d[1];
    if (r > 2) *d2 = d[2];
    return x;
}

/* Open attribute name of obj: 1 with *a, 0 when absent, −1 when unreadable (recorded). */
static int attr_open(h5io_file_t *f, const char *obj, const char *name, hid_t *a)
{
    if (!h5io_exists(f, obj) || H5Aexists_by_name(f->id, obj, name, H5P_DEFAULT) <= 0) return 0;
    *a = H5Aopen_by_name(f->id, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (*a >= 0) return 1;
    h5io_bad(f, obj, "attribute '%s' unreadable", name);
    return -1;
}

int h5io_read_attr_double(h5io_file_t *f, const char *obj, const char *name, double *value)
{
    hid_t a;
    if (attr_open(f, obj, name, &a) <= 0) return 1;
    hid_t t = H5Aget_type(a), space = H5Aget_space(a);
    const H5T_class_t cls = H5Tget_class(t);
    const hssize_t count = space_count(space);
    int ok = 0;
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || count != 1)
        h5io_bad(f, obj, "attribute '%s': %lld values of HDF5 type class %d, expected one number",
                 name, (long long)count, (int)cls);
    else if (!(ok = H5Aread(a, H5T_NATIVE_DOUBLE, value) >= 0))
        h5io_bad(f, obj, "attribute '%s' unreadable", name);
    H5Sclose(space);
    H5Tclose(t);
    H5Aclose(a);
    return ok ? 0 : 1;
}

int h5io_read_data_identity(h5io_file_t *f, const char *obj, char **sha256, long long *bytes)
{
    *sha256 = NULL;
    *bytes = -1;
    double n;
    if (H5Aexists_by_name(f->id, obj, "data_sha256", H5P_DEFAULT) <= 0) return 1;
    char *s = h5io_read_attr_string(f, obj, "data_sha256");
    if (!s || h5io_read_attr_double(f, obj, "data_bytes", &n) || !(n >= 0)) {
        if (s) h5io_bad(f, obj, "attribute 'data_sha256' without a 'data_bytes' count");
        free(s);
        return 1;
    }
    *sha256 = s;
    *bytes = (long long)n;
    return 0;
}

/* The strings of attribute a (count of them, class string checked): malloc'd array of
 * malloc'd strings, or NULL (recorded). */
static char **read_strings(h5io_file_t *f, const char *obj, const char *name, hid_t a,
                           hid_t ft, hid_t space, size_t count)
{
    char **out = calloc(count + 1, sizeof(char *));
    int ok = out != NULL;
    if (ok && H5Tis_variable_str(ft) > 0) {
        hid_t mt = h5io_string_type();
        char **raw = calloc(count + 1, sizeof(char *));
        ok = raw && H5Aread(a, mt, raw) >= 0;
        for (size_t i = 0; ok && i < count; i++) ok = (out[i] = strdup(raw[i] ? raw[i] : "")) != NULL;
        if (raw) H5Dvlen_reclaim(mt, space, H5P_DEFAULT, raw);
        free(raw);
        H5Tclose(mt);
    } else if (ok) {
        const size_t len = H5Tget_size(ft);
        if (len == 0 || len > MAX_ATTR_BYTES / (count ? count : 1)) {
            h5io_bad(f, obj, "attribute '%s': %zu strings of %zu bytes", name, count, len);
            ok = 0;
        }
        char *buf = ok ? calloc(count * len + 1, 1) : NULL;
        ok = ok && buf && H5Aread(a, ft, buf) >= 0;
        for (size_t i = 0; ok && i < count; i++)
            ok = (out[i] = strndup(buf + i * len, len)) != NULL;
        free(buf);
    }
    if (ok) return out;
    h5io_bad(f, obj, "attribute '%s' unreadable", name);
    for (size_t i = 0; out && i < count; i++) free(out[i]);
    free(out);
    return NULL;
}

char *h5io_read_attr_string(h5io_file_t *f, const char *obj, const char *name)
{
    hid_t a;
    if (attr_open(f, obj, name, &a) <= 0) return NULL;
    hid_t ft = H5Aget_type(a), space = H5Aget_space(a);
    const hssize_t count = space_count(space);
    char *out = NULL;
    // one string, never an array read into a buffer sized for one (docs/design.md §6)
    if (H5Tget_class(ft) != H5T_STRING || count != 1) {
        h5io_bad(f, obj, "attribute '%s': %lld values of HDF5 type class %d, expected one string",
                 name, (long long)count, (int)H5Tget_class(ft));
    } else {
        char **v = read_strings(f, obj, name, a, ft, space, 1);
        if (v) out = v[0];
        free(v);
    }
    H5Sclose(space);
    H5Tclose(ft);
    H5Aclose(a);
    return out;
}

char **h5io_read_attr_strings(h5io_file_t *f, const char *obj, const char *name, size_t *n)
{
    *n = 0;
    hid_t a;
    if (attr_open(f, obj, name, &a) <= 0) return NULL;
    hid_t ft = H5Aget_type(a), space = H5Aget_space(a);
    const hssize_t count = space_count(space);
    char **out = NULL;
    if (H5Tget_class(ft) != H5T_STRING || count < 0 || (size_t)count > MAX_NAMES ||
        H5Sget_simple_extent_ndims(space) > 1) {
        h5io_bad(f, obj, "attribute '%s': expected a list of strings", name);
    } else if ((out = read_strings(f, obj, name, a, ft, space, (size_t)count))) {
        *n = (size_t)count;
    }
    H5Sclose(space);
    H5Tclose(ft);
    H5Aclose(a);
    return out;
}

static herr_t collect_name(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)group;
    (void)info;
    struct { char **names; int n, cap; } *c = data;
    if ((size_t)c->n >= MAX_NAMES) return -1;
    if (c->n == c->cap) {
        const int cap = c->cap ? 2 * c->cap : 16;
        char **grown = realloc(c->names, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        c->names = grown;
        c->cap = cap;
    }
    c->names[c->n] = strdup(name);
    return c->names[c->n++] ? 0 : -1;
}

char **h5io_list_group(h5io_file_t *f, const char *path, int *n)
{
    struct { char **names; int n, cap; } c = {NULL, 0, 0};
    *n = 0;
    if (!h5io_exists(f, path)) return NULL;
    hid_t g = H5Gopen2(f->id, path, H5P_DEFAULT);
    if (g < 0) {
        h5io_bad(f, path, "not a group");
        return NULL;
    }
    if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, collect_name, &c) < 0) {
        h5io_bad(f, path, "its links cannot be listed");
        h5io_free_names(c.names, c.n);
        H5Gclose(g);
        return NULL;
    }
    H5Gclose(g);
    *n = c.n;
    return c.names ? c.names : calloc(1, sizeof(char *));   // an empty group: a list of none
}

void h5io_free_names(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

const char *h5io_kind(h5io_file_t *f)
{
    static const char *const KINDS[][2] = {{"/runs", "merged"}, {"/sweep", "merged"},
                                           {"/train", "train"}, {"/batch", "dump"}, {"/probe", "probe"}};
    for (int k = 0; k < 5; k++)
        if (h5io_exists(f, KINDS[k][0])) return KINDS[k][1];
    return "";
}
