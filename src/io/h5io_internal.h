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
    char bad[700];       /* the first malformed object a read found, "FILE: /obj: what" ("": none) */
    int claim;           /* the writer's claim of path (h5io_claim) while writing, or 0/−1 */
};

/* Create path as a new, empty regular file (O_EXCL, never following a link), so that why it
 * cannot be made is the system's own word (read-only file system, permission, disk full).
 * Returns 0, or 1 with err "PATH: cannot create: REASON". */
int h5io_create_empty(const char *path, char *err, size_t errlen);

/* Link-creation property list that makes intermediate groups (caller closes it). */
hid_t h5io_lcpl_intermediate(void);

/* The variable-length UTF-8 string type every string of our files has (caller closes it). */
hid_t h5io_string_type(void);

/* Record "FILE: obj: what" as f's first malformed object (h5io_error), if none is yet. */
void h5io_bad(h5io_file_t *f, const char *obj, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Replace every control character of text by '?' (a name from a file, printed). */
void h5io_printable(char *text);

/* Open path read-only as readers do: plainly, else with SWMR read (a killed writer's flag).
 * Returns the file id or −1. No checks: callers have verified the file (h5io_verify.c). */
hid_t h5io_open_id(const char *path);

/* mkdir -p of the directory part of path. Returns 0 or -1 (errno set). */
int h5io_make_parent_dirs(const char *path);

/* h5io_open_read with h5io_verify flags (H5IO_VERIFY_CHECKPOINT: the checkpoint's data too). */
int h5io_open_verified(h5io_file_t **f, const char *path, int flags, char *err, size_t errlen);

/* Test hook: STABILITY_KILL_IN=WHERE:N raises SIGKILL the N-th time the program passes WHERE
 * ("CHECKPOINT": in the middle of writing a checkpoint, its parameters written, the moments not). */
void h5io_test_hook(const char *where);

/* ---- h5io_journal.c: the checkpoint journal <file>.checkpoint (docs/design.md §6) ------- */

/* "<path>.checkpoint" into buf. */
void h5io_journal_path(const char *path, char *buf, size_t len);

/* Write t's checkpoint whole into <path>.checkpoint (via a temporary, fsync'd, renamed), tied
 * to its file by the file's config and created attributes. 0, or 1 with why (errno kept), or
 * 2 when <path>.checkpoint (or its temporary) is not a regular file (why names what it is). */
int h5io_journal_write(const char *path, const char *config, const char *created,
                       const train_t *t, char *why, size_t len);

/* 0 when <path>.checkpoint is missing or a regular file (a training run may write it); else 2
 * with err "PATH.checkpoint: is a directory; only a regular file may be replaced" (1: lstat
 * failed). Checked before a run starts, so that none is found out at its first checkpoint. */
int h5io_journal_check(const char *path, char *err, size_t errlen);

/* Remove <path>.checkpoint (after the file's own checkpoint is complete and on disk). */
void h5io_journal_remove(const char *path);

/* The step of path's journal when it is complete, verified and of this file (config and
 * created the file's), else −1 with why. */
long h5io_journal_step(const char *path, const char *config, const char *created, char *why,
                       size_t len);

/* Load path's journal into t (as h5io_checkpoint_load). 0, or 1 with why. */
int h5io_journal_load(const char *path, train_t *t, char *why, size_t len);

/* Flush file and fsync it (its writes on disk before a journal is removed). 0 or −1. */
int h5io_sync(hid_t file);

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
