/* h5io_copy.c — a run's file copied whole into a group of a merged sweep file (/runs/NAME;
 * docs/design.md §6): every top-level object but /checkpoint, and every root attribute, after
 * the file was read through in a child (h5io_verify.c); or a run's group of an earlier merged
 * file copied as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>
#include "io/h5io.h"
#include "io/h5io_internal.h"
#include "util/fsutil.h"

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
    hid_t lcpl = h5io_lcpl_intermediate();
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

int h5io_copy_group_from(h5io_file_t *f, const char *dst, const char *src_path, const char *src,
                         char *err, size_t errlen)
{
    if (!fsutil_is_regular(src_path)) {
        snprintf(err, errlen, "%s: cannot open: not a regular file", src_path);
        return 1;
    }
    if (h5io_verify(src_path, 0, err, errlen)) return 1;   // read through in a child first
    const hid_t from = h5io_open_id(src_path);
    if (from < 0) {
        snprintf(err, errlen, "%s: cannot open", src_path);
        return 1;
    }
    hid_t lcpl = h5io_lcpl_intermediate();
    // the group with its datasets, subgroups and attributes, bit for bit
    const int rc = H5Ocopy(from, src, f->id, dst, H5P_DEFAULT, lcpl) < 0;
    H5Pclose(lcpl);
    H5Fclose(from);
    if (rc) snprintf(err, errlen, "%s: cannot copy %s into %s", src_path, src, dst);
    return rc;
}
