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

/* ---- h5io_guard.c: a training writer's lock, and disk space reserved before its writes -- */

/* 1 when a process holds a lock on path: a live training writer or an open reader. */
int h5io_in_use(const char *path);

/* Open path and take the locks of a live writer (h5io_guard.c); the fd, or −1. Closing it
 * releases them. */
int h5io_lock_hold(const char *path);

/* 1 when path still names the file open as fd (nothing was renamed over it), or fd < 0. */
int h5io_same_file(int fd, const char *path);

/* Reserve bytes of disk beyond the end of file (beyond HDF5's allocated end, its EOA), so
 * that the writes that follow cannot run out of space half-way. 0, or −1 with errno (ENOSPC). */
int h5io_space_reserve(hid_t file, size_t bytes);

/* Give back what was reserved beyond the end of the (closed) file at path. */
void h5io_space_release(const char *path);

/* ---- h5io_checkpoint.c: the /checkpoint group of a training file (train.h's state) ---- */

/* Create every /checkpoint dataset for t, step = −1 (none yet). Returns 0 or 1. */
int h5io_checkpoint_create(h5io_file_t *f, const train_t *t);

/* Write t's state in place: step −1, flush, the state, flush, step = t->step. 0 or 1. */
int h5io_checkpoint_write(h5io_file_t *f, const train_t *t);

/* Bytes of t's checkpoint data (what its first write allocates in the file). */
size_t h5io_checkpoint_bytes(const train_t *t);

/* /checkpoint/step of f: the update of its last complete checkpoint, −1 if none. */
long h5io_checkpoint_step(h5io_file_t *f);

/* Load f's checkpoint into t (params, moments, t, rngs, step, batches). 0, or 1 with why. */
int h5io_checkpoint_load(h5io_file_t *f, train_t *t, char *why, size_t len);

#endif
