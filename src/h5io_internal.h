/* h5io_internal.h — what the h5io*.c files share (not for other modules). */
#ifndef STABILITY_H5IO_INTERNAL_H
#define STABILITY_H5IO_INTERNAL_H

#include <hdf5.h>
#include "h5io.h"

struct h5io_file {
    hid_t id;
    char path[1024];
    char tmp[1100];      /* temporary name while writing; "" for files written in place */
};

/* mkdir -p of the directory part of path. Returns 0 or -1 (errno set). */
int h5io_make_parent_dirs(const char *path);

#endif
