/* h5io_internal.h — what the h5io*.c files share (not for other modules). */
#ifndef STABILITY_H5IO_INTERNAL_H
#define STABILITY_H5IO_INTERNAL_H

#include <hdf5.h>
#include "io/h5io.h"

/* Longest path a file of this module may have, with its NUL (h5io_file_t.path). */
#define H5IO_PATH_MAX 1024

struct h5io_file {
    hid_t id;
    char path[H5IO_PATH_MAX];
    char tmp[1100];      /* temporary name while writing; "" for files written in place */
};

/* mkdir -p of the directory part of path. Returns 0 or -1 (errno set). */
int h5io_make_parent_dirs(const char *path);

/* ---- h5io_checkpoint.c: the /checkpoint group of a training file (train.h's state) ---- */

/* Create every /checkpoint dataset for t, step = −1 (none yet). Returns 0 or 1. */
int h5io_checkpoint_create(h5io_file_t *f, const train_t *t);

/* Write t's state in place: step −1, flush, the state, flush, step = t->step. 0 or 1. */
int h5io_checkpoint_write(h5io_file_t *f, const train_t *t);

/* /checkpoint/step of f: the update of its last complete checkpoint, −1 if none. */
long h5io_checkpoint_step(h5io_file_t *f);

/* Load f's checkpoint into t (params, moments, t, rngs, step, batches). 0, or 1 with why. */
int h5io_checkpoint_load(h5io_file_t *f, train_t *t, char *why, size_t len);

#endif
