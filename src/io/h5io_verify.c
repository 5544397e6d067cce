/* h5io_verify.c — a result file read through once in a child process before anyone trusts it
 * (docs/design.md §6). libhdf5 reads a damaged file's metadata without defending itself:
 * bit flips crash it (SIGSEGV) or make it loop. So every file this program did not just write
 * is first walked by a child (util/proc.h's proc_isolate): every link, every attribute and
 * every dataset's data, with a time limit. A crash or a hang ends the child, and the caller
 * says "FILE: damaged: ..." (exit 1) or, in a sweep, redoes the run; only a file the child read
 * through is opened by the caller, which then validates each object it reads (h5io_read.c).
 * Isolation and validation both: validation alone cannot reach into libhdf5.
 *
 * A file with an external link (a link into another file, which could be a FIFO or a device)
 * is refused: we never write one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hdf5.h>
#include "io/h5io.h"
#include "io/h5io_internal.h"
#include "util/args.h"
#include "util/fsutil.h"
#include "util/proc.h"

#define SLAB_BYTES ((size_t)16 << 20)      /* data read per call while walking */
#define MAX_OBJECT_BYTES ((size_t)1 << 36) /* no dataset of ours is near this */
#define PHANTOM_BYTES ((size_t)64 << 20)   /* more than this must be stored to be read */

typedef struct {
    int flags;
    char why[600];
} walk_t;

static int walk_bad(walk_t *w, const char *obj, const char *what)
{
    if (!w->why[0]) snprintf(w->why, sizeof w->why, "%.300s: %s", obj, what);
    h5io_printable(w->why);
    return -1;
}

/* H5Aiterate callback: read one attribute whole (vlen data reclaimed). */
static herr_t read_attr(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    walk_t *w = data;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return walk_bad(w, name, "attribute unreadable");
    hid_t ft = H5Aget_type(a), space = H5Aget_space(a);
    hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
    const hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    const size_t size = mt >= 0 ? H5Tget_size(mt) : 0;
    herr_t rc = 0;
    if (mt < 0 || n < 0 || size == 0 || (size_t)n > ((size_t)64 << 20) / size) {
        rc = walk_bad(w, name, "attribute of an unreadable type or size");
    } else {
        void *buf = calloc((size_t)n + 1, size);
        if (!buf || H5Aread(a, mt, buf) < 0) rc = walk_bad(w, name, "attribute unreadable");
        else if (H5Tdetect_class(mt, H5T_VLEN) > 0 || H5Tis_variable_str(mt) > 0)
            H5Dvlen_reclaim(mt, space, H5P_DEFAULT, buf);
        free(buf);
    }
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    if (space >= 0) H5Sclose(space);
    H5Aclose(a);
    return rc;
}

/* H5Ewalk callback: whether an entry of HDF5's error stack says "checksum". */
static herr_t mentions_checksum(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    if (e->desc && strstr(e->desc, "checksum")) *(int *)data = 1;
    return 0;
}

/* Why the read that just failed failed, from HDF5's error stack. */
static const char *read_failure(void)
{
    int checksum = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, mentions_checksum, &checksum);
    return checksum ? "data fail their checksum (damaged)" : "data unreadable (damaged)";
}

/* Read dataset ds (named name) through, at most SLAB_BYTES at a time along its first axis. */
static int read_dataset(hid_t ds, const char *name, walk_t *w)
{
    hid_t space = H5Dget_space(ds), ft = H5Dget_type(ds);
    hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
    hsize_t dims[32];
    const int r = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    const size_t size = mt >= 0 ? H5Tget_size(mt) : 0;
    int rc = 0;
    size_t row = size;   // bytes of one slice along the first axis
    if (mt < 0 || r < 0 || size == 0) rc = walk_bad(w, name, "dataset of an unreadable type or shape");
    else H5Sget_simple_extent_dims(space, dims, NULL);
    for (int i = 1; i < r && !rc; i++) {
        if (dims[i] && row > MAX_OBJECT_BYTES / dims[i]) rc = walk_bad(w, name, "dataset too large");
        row *= (size_t)dims[i];
    }
    const size_t rows = r > 0 ? (size_t)dims[0] : 1, stored = (size_t)H5Dget_storage_size(ds);
    if (!rc && row && rows > MAX_OBJECT_BYTES / row) rc = walk_bad(w, name, "dataset too large");
    if (!rc && rows * row > PHANTOM_BYTES && rows * row / 2 > stored)
        rc = walk_bad(w, name, "dataset declares more data than the file stores");
    const int vlen = !rc && (H5Tdetect_class(mt, H5T_VLEN) > 0 || H5Tis_variable_str(mt) > 0);
    const size_t step = row >= SLAB_BYTES ? 1 : SLAB_BYTES / (row ? row : 1);
    void *buf = rc || stored == 0 ? NULL : malloc((step < rows ? step : rows) * row + size);
    if (!rc && stored > 0 && !buf) rc = walk_bad(w, name, "out of memory");
    for (size_t at = 0; buf && !rc && at < rows; at += step) {
        hsize_t start[32] = {at}, count[32];
        const size_t k = rows - at < step ? rows - at : step;
        for (int i = 0; i < r; i++) count[i] = i ? dims[i] : (hsize_t)k;
        hid_t fs = H5Scopy(space), ms = r ? H5Screate_simple(r, count, NULL) : H5Screate(H5S_SCALAR);
        if (r) H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        if (H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf) < 0)
            rc = walk_bad(w, name, read_failure());
        else if (vlen)
            H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, buf);
        H5Sclose(ms);
        H5Sclose(fs);
        if (!r) break;
    }
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* H5Lvisit callback: every link hard (or soft), every object's attributes and data read. */
static herr_t visit_link(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    walk_t *w = data;
    char obj[400];
    snprintf(obj, sizeof obj, "/%s", name);
    if (info->type != H5L_TYPE_HARD && info->type != H5L_TYPE_SOFT)
        return walk_bad(w, obj, "a link into another file (stability never writes one)");
    if (info->type == H5L_TYPE_SOFT) return 0;   // its target is visited by its own hard link
    // a live run rewrites its /checkpoint in place: only --resume reads it (and needs it whole)
    const int checkpoint = !strcmp(name, "checkpoint") || !strncmp(name, "checkpoint/", 11);
    if (checkpoint && !(w->flags & H5IO_VERIFY_CHECKPOINT)) return 0;
    hid_t o = H5Oopen(g, name, H5P_DEFAULT);
    if (o < 0) return walk_bad(w, obj, "object unreadable");
    herr_t rc = H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, NULL, read_attr, w) < 0 ? -1 : 0;
    if (!rc && H5Iget_type(o) == H5I_DATASET) rc = read_dataset(o, obj, w);
    H5Oclose(o);
    if (rc < 0 && !w->why[0]) walk_bad(w, obj, "unreadable");
    return rc;
}

/* The child's side of h5io_verify: walk the file, write why it fails to fd. Exit code. */
static int verify_child(void *arg, int fd)
{
    const struct { const char *path; int flags; } *a = arg;
    walk_t w = {.flags = a->flags};
    hid_t f = h5io_open_id(a->path);
    if (f < 0) snprintf(w.why, sizeof w.why, "not an HDF5 file (or damaged)");
    else if (H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, NULL, read_attr, &w) < 0 ||
             H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, visit_link, &w) < 0) {
        if (!w.why[0]) snprintf(w.why, sizeof w.why, "its objects cannot be listed (damaged)");
    }
    if (!w.why[0]) return 0;
    if (write(fd, w.why, strlen(w.why)) < 0) return 1;
    return 1;
}

double h5io_read_timeout(const char *path)
{
    const char *env = getenv("STABILITY_READ_TIMEOUT");
    double t;
    if (env && !args_parse_double(env, 0, 1, 1e6, &t)) return t;
    struct stat st;
    // generous: 60 s, and 1 s for every 20 MB (a slow network file system)
    return 60.0 + (stat(path, &st) == 0 ? (double)st.st_size / 20e6 : 0.0);
}

int h5io_verify(const char *path, int flags, char *err, size_t errlen)
{
    const struct { const char *path; int flags; } arg = {path, flags};
    char answer[700], why[160];
    const double timeout = h5io_read_timeout(path);
    const int rc = proc_isolate(verify_child, (void *)&arg, timeout, answer, sizeof answer, why,
                                sizeof why);
    if (rc == 0) return 0;
    if (rc < 0 && !strncmp(why, "cannot start", 12)) snprintf(err, errlen, "%s: %s", path, why);
    else if (rc < 0) snprintf(err, errlen, "%s: damaged: HDF5 %s reading it", path, why);
    else snprintf(err, errlen, "%s: %s", path, answer[0] ? answer : "unreadable");
    return 1;
}

/* The child's side of h5io_summarize: "kind\0S status\0bad\0W sweep file\0C config\0D sha256
 * bytes\0B blas_core" to fd (S/W/C/D/B: '+' when the attribute is there, '-' when not). */
static int summary_child(void *arg, int fd)
{
    const struct { const char *path; int full; } *a = arg;
    h5io_file_t f = {.id = h5io_open_id(a->path)};
    snprintf(f.path, sizeof f.path, "%s", a->path);
    if (f.id < 0) return 2;
    const char *kind = h5io_kind(&f);
    char *status = h5io_read_attr_string(&f, "/", "status");
    char *config = h5io_read_attr_string(&f, "/", "config");
    char *sweep = h5io_exists(&f, "/sweep") ? h5io_read_attr_string(&f, "/sweep", "file") : NULL;
    char *data = NULL;
    long long bytes = -1;
    h5io_read_data_identity(&f, "/", &data, &bytes);
    char *core = h5io_read_attr_string(&f, "/", "blas_core");   // absent before issue 35
    walk_t w = {0};
    const int finished = status && (!strcmp(status, "done") || !strcmp(status, "diverged"));
    if (f.bad[0]) snprintf(w.why, sizeof w.why, "%s", f.bad + strlen(f.path) + 2);
    else if (a->full && finished &&
             (H5Aiterate2(f.id, H5_INDEX_NAME, H5_ITER_INC, NULL, read_attr, &w) < 0 ||
              H5Lvisit(f.id, H5_INDEX_NAME, H5_ITER_INC, visit_link, &w) < 0) && !w.why[0])
        snprintf(w.why, sizeof w.why, "its objects cannot be listed (damaged)");
    FILE *out = fdopen(fd, "w");
    if (!out) return 1;
    fprintf(out, "%s%c%c%s%c%s%c%c%s%c%c%s%c%c%s %lld%c%c%s", kind, 0, status ? '+' : '-',
            status ? status : "", 0, w.why, 0, sweep ? '+' : '-', sweep ? sweep : "", 0,
            config ? '+' : '-', config ? config : "", 0, data ? '+' : '-', data ? data : "", bytes,
            0, core ? '+' : '-', core ? core : "");
    return fclose(out) == 0 ? 0 : 1;
}

int h5io_summarize(const char *path, int full, h5io_summary_t *s)
{
    memset(s, 0, sizeof *s);
    if (access(path, F_OK) != 0) return 1;
    if (!fsutil_is_regular(path) || access(path, R_OK) != 0) {
        snprintf(s->damaged, sizeof s->damaged, "not a readable regular file (a %s)", fsutil_kind(path));
        return 1;
    }
    const struct { const char *path; int full; } arg = {path, full};
    char *answer = calloc((1 << 20) + 8, 1), why[160];
    if (!answer) { snprintf(s->damaged, sizeof s->damaged, "out of memory"); return 1; }
    const int rc = proc_isolate(summary_child, (void *)&arg, h5io_read_timeout(path), answer,
                                1 << 20, why, sizeof why);
    if (rc != 0) {
        if (rc < 0) snprintf(s->damaged, sizeof s->damaged, "damaged: HDF5 %s reading it", why);
        else snprintf(s->damaged, sizeof s->damaged, "not an HDF5 file (or damaged)");
        free(answer);
        return 1;
    }
    // seven fields, NUL-separated (the last one ends at the answer's NUL)
    const char *kind = answer, *st = kind + strlen(kind) + 1, *bad = st + strlen(st) + 1;
    const char *sw = bad + strlen(bad) + 1, *cf = sw + strlen(sw) + 1, *id = cf + strlen(cf) + 1;
    const char *bc = id + strlen(id) + 1;
    snprintf(s->kind, sizeof s->kind, "%.15s", kind);
    if (st[0] == '+') s->status = strdup(st + 1);
    if (bad[0]) snprintf(s->damaged, sizeof s->damaged, "%.690s", bad);
    if (sw[0] == '+') s->sweep_file = strdup(sw + 1);
    if (cf[0] == '+') s->config = strdup(cf + 1);
    s->data_bytes = -1;
    char sha[SHA256_HEX + 8];
    if (id[0] == '+' && sscanf(id + 1, "%70s %lld", sha, &s->data_bytes) == 2) s->data_sha256 = strdup(sha);
    if (bc[0] == '+') s->blas_core = strdup(bc + 1);
    free(answer);
    return 0;
}

void h5io_summary_free(h5io_summary_t *s)
{
    free(s->status);
    free(s->config);
    free(s->sweep_file);
    free(s->data_sha256);
    free(s->blas_core);
    s->status = s->config = s->sweep_file = s->data_sha256 = s->blas_core = NULL;
}

char *h5io_file_status(const char *path)
{
    h5io_summary_t s;
    if (h5io_summarize(path, 0, &s)) return NULL;
    char *status = s.status;
    s.status = NULL;
    h5io_summary_free(&s);
    return status;
}
