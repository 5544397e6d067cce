/* h5io.h — HDF5 files of docs/design.md §6. Probes and dumps are written to a temporary name and
 * renamed when complete, so a killed run never leaves a file that looks finished; training
 * files are written in place under SWMR (h5io_train.c) so that a killed run leaves its log
 * readable up to the last flush, with status = running. I/O only: no numerics here. */
#ifndef STABILITY_H5IO_H
#define STABILITY_H5IO_H

#include <stddef.h>
#include <stdint.h>
#include "model/model.h"
#include "measure/probe.h"
#include "train/train.h"

typedef struct h5io_file h5io_file_t;

/* Call first in main, before any other HDF5 call: HDF5 prints no errors (they are returned),
 * and its exit-time clean-up is off, so that a file whose close failed (a full disk) cannot
 * crash the exit; every file is closed explicitly (docs/design.md §6). */
void h5io_init(void);

/* Whether path may become an output file: not empty, shorter than 1024 characters, missing or
 * a regular file (never a link, FIFO, device or directory, docs/design.md §6), and missing
 * unless overwrite. Returns 0, or 2 with err set (1 when path cannot be examined). */
int h5io_check_target(const char *path, int overwrite, char *err, size_t errlen);

/* Create "<path>.tmp.<pid>" (making the directory of path). Refuses what h5io_check_target
 * refuses. Returns 0, or 1 (I/O) / 2 (exists without overwrite, not a regular file) with err. */
int h5io_create(h5io_file_t **f, const char *path, int overwrite, char *err, size_t errlen);

/* Write a float64 dataset at dset (intermediate groups created), shape dims[rank]. 0 or 1. */
int h5io_write_doubles(h5io_file_t *f, const char *dset, const double *data, int rank,
                       const size_t *dims);

/* Write an int32 dataset at dset, shape dims[rank]. Returns 0 or 1. */
int h5io_write_ints(h5io_file_t *f, const char *dset, const int32_t *data, int rank,
                    const size_t *dims);

/* Write a variable-length UTF-8 string dataset at dset, shape dims[rank] (row-major values).
 * Returns 0 or 1. */
int h5io_write_strings(h5io_file_t *f, const char *dset, const char *const *values, int rank,
                       const size_t *dims);

/* Copy every top-level object of the file src_path except /checkpoint, and its root
 * attributes, into the group dst (created) of f — byte-identical datasets. 0 or 1 (err set). */
int h5io_copy_file_into(h5io_file_t *f, const char *dst, const char *src_path, char *err,
                        size_t errlen);

/* Status attribute of a finished or unfinished run file, malloc'd ("done", "running", …), or
 * NULL when the file is missing, unreadable or has no status. */
char *h5io_file_status(const char *path);

/* The root attributes status and config of the run file path (each malloc'd, NULL if absent;
 * pass NULL for one not wanted). Returns 0, or 1 when the file is missing or unreadable. */
int h5io_file_attrs(const char *path, char **status, char **config);

/* 1 when stored, a file's resolved config text (its root attribute config), describes the same
 * run as cfg, ignoring what may differ between a run and its resume (train.resume, output.*);
 * else 0 with diff "it has 'KEY = VALUE'" (its first differing line) or why it is unreadable.
 * What --resume and a sweep use to tell a file of this run from a stale one (docs/design.md §6). */
int h5io_config_same(const config_t *cfg, const char *stored, char *diff, size_t len);

/* Attach a variable-length UTF-8 string attribute to object obj ("/" for the root). 0 or 1. */
int h5io_write_attr_string(h5io_file_t *f, const char *obj, const char *name, const char *value);

/* Attach a string-array attribute (e.g. the names along an axis) to obj. 0 or 1. */
int h5io_write_attr_strings(h5io_file_t *f, const char *obj, const char *name,
                            const char *const *values, size_t n);

/* Attach an int64 scalar attribute to obj. 0 or 1. */
int h5io_write_attr_int(h5io_file_t *f, const char *obj, const char *name, long long value);

/* Root attributes every file carries: config (resolved INI), version, created (UTC ISO 8601),
 * seed, status. Returns 0 or 1. */
int h5io_write_root_attrs(h5io_file_t *f, const char *config_ini, unsigned long seed,
                          const char *status);

/* Close and rename to the final path (checked again to be missing or a regular file). Returns
 * 0, or 1 (I/O) / 2 (no longer a regular file) with err set; the temporary is removed. */
int h5io_commit(h5io_file_t *f, char *err, size_t errlen);

/* Close and delete the temporary file (after an error). */
void h5io_abort(h5io_file_t *f);

/* Open an existing file read-only (with SWMR read when a killed writer left its flag set).
 * Returns 0, or 1 with err set. */
int h5io_open_read(h5io_file_t **f, const char *path, char *err, size_t errlen);

/* Close a file opened with h5io_open_read. */
void h5io_close(h5io_file_t *f);

/* True if the object (group or dataset) at path exists. */
int h5io_exists(h5io_file_t *f, const char *path);

/* Read a float64 dataset: *data malloc'd (caller frees), dims[0..*rank−1] (rank ≤ 8).
 * Returns 0, or 1 if absent/unreadable. */
int h5io_read_doubles(h5io_file_t *f, const char *dset, double **data, size_t *dims, int *rank);

/* Read a string attribute of obj into a malloc'd string (caller frees); NULL if absent. */
char *h5io_read_attr_string(h5io_file_t *f, const char *obj, const char *name);

/* Read a string-array attribute (fixed or variable length) of obj: a malloc'd array of *n
 * malloc'd strings (free each, then the array); NULL if absent or not strings. */
char **h5io_read_attr_strings(h5io_file_t *f, const char *obj, const char *name, size_t *n);

/* Read a numeric scalar attribute of obj as double. Returns 0, or 1 if absent. */
int h5io_read_attr_double(h5io_file_t *f, const char *obj, const char *name, double *value);

/* The /probe group (docs/design.md §6) from p, every axis named by string attributes;
 * site_symbols [Q] (the paper's symbols of the sites) may be NULL. 0 or 1. */
int h5io_write_probe(h5io_file_t *f, const probe_t *p, const char *const *site_symbols);

/* Read the probe group under prefix ("" for a run file, "/runs/NAME" in a merged sweep file)
 * into a new probe_t (caller frees with probe_free). 0 or 1. */
int h5io_read_probe(h5io_file_t *f, const char *prefix, probe_t **p, char *err, size_t errlen);

/* Names of the links in group path (malloc'd array of malloc'd strings, sorted by name);
 * *n = 0 and NULL when the group does not exist. Free with h5io_free_names. */
char **h5io_list_group(h5io_file_t *f, const char *path, int *n);

/* Free what h5io_list_group returned. */
void h5io_free_names(char **names, int n);

/* docs/design.md §6 dump: /batch/tokens, /batch/targets (int32 [B][T]), /loss, /params/NAME,
 * /grads/NAME, root attributes. Returns 0, or 1/2 with err set; nothing left on failure. */
int h5io_write_dump(const char *path, const model_t *m, const char *config_ini,
                    unsigned long seed, int overwrite, char *err, size_t errlen);

/* ---- training files (h5io_train.c): /train and /checkpoint, in place, SWMR -------------- */

typedef struct h5io_train h5io_train_t;

/* What an existing training file says about itself. */
typedef struct {
    char *config;          /* root attribute config (malloc'd), NULL if absent */
    char *status;          /* root attribute status (malloc'd), NULL if absent */
    long checkpoint_step;  /* /checkpoint/step: −1 = no complete checkpoint */
} h5io_train_info_t;

/* Create path in place (refusing an existing file unless overwrite) with every /train and
 * /checkpoint dataset for t, root attributes with status = running, and start SWMR writing.
 * Returns 0, or 1 (I/O) / 2 (exists) with err set. */
int h5io_train_create(h5io_train_t **w, const char *path, int overwrite, const train_t *t,
                      const char *config_ini, char *err, size_t errlen);

/* Read config, status and checkpoint step of path (caller frees with h5io_train_info_free).
 * Returns 0, or 1 with err set. */
int h5io_train_inspect(const char *path, h5io_train_info_t *info, char *err, size_t errlen);

/* Free the strings of info. */
void h5io_train_info_free(h5io_train_info_t *info);

/* Load path's checkpoint into t, rewrite the file with its /train rows up to that step (new
 * file renamed over the old one) and continue writing it; *elapsed = its time at that step.
 * Returns 0, or 1 with err set. */
int h5io_train_resume(h5io_train_t **w, const char *path, train_t *t, const char *config_ini,
                      double *elapsed, char *err, size_t errlen);

/* Buffer update r (its probe row from t->probe when r->probed, its val_loss when evaluated);
 * written when a buffer fills or FLUSH_SECONDS passed. elapsed: seconds since the run began.
 * Returns 0 or 1. */
int h5io_train_append(h5io_train_t *w, const train_t *t, const train_record_t *r, double elapsed);

/* Write the buffered rows and flush the file. Returns 0 or 1. */
int h5io_train_flush(h5io_train_t *w);

/* Flush, then write /checkpoint from t (step −1 while writing, t->step when complete).
 * Returns 0 or 1. */
int h5io_train_checkpoint(h5io_train_t *w, const train_t *t);

/* Flush and close, then set the root status (done | diverged | interrupted) and, when
 * diverged_at > 0, /train attributes diverged_at and diverged_reason. Frees w.
 * Returns 0, or 1 with err set. */
int h5io_train_close(h5io_train_t *w, const char *status, long diverged_at, const char *reason,
                     char *err, size_t errlen);

#endif
