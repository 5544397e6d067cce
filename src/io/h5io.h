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
#include "data/identity.h"

typedef struct h5io_file h5io_file_t;

/* Call first in main, before any other HDF5 call: HDF5 prints no errors (they are returned),
 * and its exit-time clean-up is off, so that a file whose close failed (a full disk) cannot
 * crash the exit; every file is closed explicitly (docs/design.md §6). */
void h5io_init(void);

/* Whether path may become an output file: not empty, shorter than 1024 characters, a file's
 * name (not ending in '/', '.' or '..'), missing or a regular file (never a link, FIFO, device or directory, docs/design.md §6), and missing
 * unless overwrite. Returns 0, or 2 with err set (1 when path cannot be examined). */
int h5io_check_target(const char *path, int overwrite, char *err, size_t errlen);

/* Claim path for writing (util/fsutil.h's fsutil_claim, what names the writer: "a probe"), then
 * remove what killed processes left beside it (fsutil_remove_stale). Returns the claim's fd,
 * or −1 with err "PATH: in use by process PID on HOST (a training run, since ...)". */
int h5io_claim(const char *path, const char *what, char *err, size_t errlen);

/* Give up a claim (fd from h5io_claim; fd <= 0: nothing). */
void h5io_unclaim(const char *path, int fd);

/* Claim path (h5io_claim; what names the writer), then create "<path>.tmp.<pid>" (making the
 * directory of path); the claim is held until h5io_commit or h5io_abort. Refuses what
 * h5io_check_target refuses. Returns 0, or 1 (I/O, in use) / 2 (exists without overwrite,
 * not a regular file) with err. */
int h5io_create(h5io_file_t **f, const char *path, int overwrite, const char *what, char *err,
                size_t errlen);

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

/* Copy the group src of the file src_path (a run of an earlier merged file, /runs/NAME) with
 * everything in it and its attributes into dst of f, after src_path was read through in a
 * child (h5io_verify). 0 or 1 (err set). */
int h5io_copy_group_from(h5io_file_t *f, const char *dst, const char *src_path, const char *src,
                         char *err, size_t errlen);

/* Status attribute of a run file, malloc'd ("done", "running", …), or NULL when the file is
 * missing, unreadable or has no status (read in a child process: h5io_summarize). */
char *h5io_file_status(const char *path);

/* What a result file is, as a sweep needs to know before it trusts it. */
typedef struct {
    char *status, *config;   /* root attributes (malloc'd), NULL when absent */
    char kind[16];           /* "train" (/train), "probe", "dump" (/batch), "merged" (/runs) or "" */
    char *sweep_file;        /* a merged file's /sweep attribute file (malloc'd), or NULL */
    char *data_sha256;       /* the data's identity (data/identity.h; malloc'd), NULL when the */
    long long data_bytes;    /* file has none (no data read, or an older file); its bytes */
    char *blas_core;         /* the kernels behind its bits (malloc'd), NULL when absent */
    char damaged[700];       /* why the file cannot be used ("" when it can) */
} h5io_summary_t;

/* Summarize path, read in a child process with a time limit (h5io_verify.c), so that a damaged
 * file can neither crash nor hang the caller; full: a finished file (done, diverged) is also
 * read through (h5io_verify). Returns 0 (damaged may still be set: a malformed attribute, a
 * damaged object), or 1 when the file is missing or cannot be read at all (damaged says why
 * when it exists). Free with h5io_summary_free. */
int h5io_summarize(const char *path, int full, h5io_summary_t *s);

/* Free the strings of s. */
void h5io_summary_free(h5io_summary_t *s);

/* h5io_verify flags: also read the data of /checkpoint (what --resume loads; a live run
 * rewrites it in place, so other readers skip its data). */
#define H5IO_VERIFY_CHECKPOINT 1

/* Read path through in a child process: every link, attribute and dataset, within
 * h5io_read_timeout. Returns 0, or 1 with err "FILE: /object: what is wrong" or "FILE:
 * damaged: HDF5 crashed (Segmentation fault) reading it" (docs/design.md §6). */
int h5io_verify(const char *path, int flags, char *err, size_t errlen);

/* Seconds a reader of path may take: STABILITY_READ_TIMEOUT, else 60 + 1 per 20 MB. */
double h5io_read_timeout(const char *path);

/* 1 when stored, a file's resolved config text (its root attribute config), describes the same
 * run as cfg, ignoring what may differ between a run and its resume (train.resume, output.*);
 * else 0 with diff "it has 'KEY = VALUE'" (its first differing line) or why it is unreadable.
 * What --resume and a sweep use to tell a file of this run from a stale one (docs/design.md §6). */
int h5io_config_same(const config_t *cfg, const char *stored, char *diff, size_t len);

/* The resolved INI text of cfg without the keys that do not change a run's results
 * (train.resume, output.*) and, with any_seed, init.seed set to 0: equal texts are one run
 * (h5io_config_same), or with any_seed seeds of one configuration. malloc'd, NULL. */
char *h5io_config_text(const config_t *cfg, int any_seed);

/* Attach a variable-length UTF-8 string attribute to object obj ("/" for the root). 0 or 1. */
int h5io_write_attr_string(h5io_file_t *f, const char *obj, const char *name, const char *value);

/* Attach a string-array attribute (e.g. the names along an axis) to obj. 0 or 1. */
int h5io_write_attr_strings(h5io_file_t *f, const char *obj, const char *name,
                            const char *const *values, size_t n);

/* Attach an int64 scalar attribute to obj. 0 or 1. */
int h5io_write_attr_int(h5io_file_t *f, const char *obj, const char *name, long long value);

/* A scalar double attribute name = value on obj. 0 or 1. */
int h5io_write_attr_double(h5io_file_t *f, const char *obj, const char *name, double value);

/* Root attributes every file carries: config (resolved INI), version, created (UTC ISO 8601),
 * seed, status; and, when the run read data (id not NULL, id->sha256 not ""), the data's
 * identity data_sha256 (hex) and data_bytes (data/identity.h). Returns 0 or 1. */
int h5io_write_root_attrs(h5io_file_t *f, const char *config_ini, unsigned long seed,
                          const char *status, const data_identity_t *id);

/* Close and rename to the final path (checked again to be missing or a regular file). Returns
 * 0, or 1 (I/O) / 2 (no longer a regular file) with err set; the temporary is removed. */
int h5io_commit(h5io_file_t *f, char *err, size_t errlen);

/* Close and delete the temporary file (after an error). */
void h5io_abort(h5io_file_t *f);

/* Open an existing file read-only (with SWMR read when a killed writer left its flag set),
 * after h5io_verify has read it through. Returns 0, or 1 with err set. */
int h5io_open_read(h5io_file_t **f, const char *path, char *err, size_t errlen);

/* The first malformed object a read of f found ("FILE: /object: what is wrong"), or NULL.
 * Every read below checks rank, shape, type and size first and fails on what it records. */
const char *h5io_error(const h5io_file_t *f);

/* What f is, by the groups it has: "merged" (/runs or /sweep), "train" (/train), "dump"
 * (/batch), "probe" (/probe), or "" (none of ours). */
const char *h5io_kind(h5io_file_t *f);

/* Close a file opened with h5io_open_read. */
void h5io_close(h5io_file_t *f);

/* True if the object (group or dataset) at path exists. */
int h5io_exists(h5io_file_t *f, const char *path);

/* Read a float64 dataset: *data malloc'd (caller frees), dims[0..*rank−1] (rank ≤ 8).
 * Returns 0, or 1 if absent/unreadable. */
int h5io_read_doubles(h5io_file_t *f, const char *dset, double **data, size_t *dims, int *rank);

/* /train/<name> of the run at prefix ("" or /runs/NAME; docs/design.md §6): *rows × *d1 × *d2
 * (1 where the dataset has fewer axes), malloc'd; NULL with *rows = 0 when absent (a file from
 * before the column) or not of rank 1 to 3. */
double *h5io_read_train(h5io_file_t *f, const char *prefix, const char *name, size_t *rows,
                        size_t *d1, size_t *d2);

/* Read a string attribute of obj (one string) into a malloc'd string (caller frees); NULL if
 * absent or malformed (h5io_error). */
char *h5io_read_attr_string(h5io_file_t *f, const char *obj, const char *name);

/* Read a string-array attribute (fixed or variable length) of obj: a malloc'd array of *n
 * malloc'd strings (free each, then the array); NULL if absent or not strings. */
char **h5io_read_attr_strings(h5io_file_t *f, const char *obj, const char *name, size_t *n);

/* Read a numeric scalar attribute of obj as double. Returns 0, or 1 if absent. */
int h5io_read_attr_double(h5io_file_t *f, const char *obj, const char *name, double *value);

/* The data identity of obj ("/" for a run file, "/runs/NAME" in a merged one): attributes
 * data_sha256 (*sha256 malloc'd) and data_bytes. 0, or 1 with *sha256 = NULL, *bytes = −1 when
 * it has none (a run without data, a file written before them) or a malformed one. */
int h5io_read_data_identity(h5io_file_t *f, const char *obj, char **sha256, long long *bytes);

/* The /probe group (docs/design.md §6) from p, every axis named by string attributes;
 * site_symbols [Q] (the paper's symbols of the sites) may be NULL. 0 or 1. */
int h5io_write_probe(h5io_file_t *f, const probe_t *p, const char *const *site_symbols);

/* Read the probe group under prefix ("" for a run file, "/runs/NAME" in a merged sweep file)
 * into a new probe_t (caller frees with probe_free). 0 or 1. */
int h5io_read_probe(h5io_file_t *f, const char *prefix, probe_t **p, char *err, size_t errlen);

/* Names of the links in group path (malloc'd array of malloc'd strings, sorted by name; an
 * empty group gives an empty array); *n = 0 and NULL when the group does not exist or is not
 * a group (h5io_error). Free with h5io_free_names. */
char **h5io_list_group(h5io_file_t *f, const char *path, int *n);

/* Free what h5io_list_group returned. */
void h5io_free_names(char **names, int n);

/* What `stability dump --hvp` adds (docs/design.md §10): a direction v and H·v in the
 * parameter buffer's layout, λ_max and λ_min of H on the dump's batch. */
typedef struct {
    const double *v, *Hv;    /* (num_params) */
    double hessian_max, hessian_min;
    double h;                /* the difference step H·v used */
    long kinked;             /* products that crossed a ReLU kink even at the smallest step */
    int iters;               /* Lanczos steps taken (probe.curvature_iters, capped at the parameters) */
    /* the estimators (docs/design.md §10), written when their keys are on */
    int trace_probes;        /* Hutchinson's probes (0: no /hvp/trace) */
    double trace, trace_stderr;
    int density_probes, density_iters;   /* SLQ (0 probes: no density) */
    const double *density_nodes, *density_weights;   /* (probes, iters) */
    const double *density_grid, *density;            /* (density_points) φ broadened by σ */
    int density_points;
    double density_sigma;
    int block_rows;          /* probe.density_blocks: rows of every block's density (0: none) */
    const double *block_density_nodes, *block_density_weights;   /* (block_rows,
                                                 TENSOR_BLOCKS, probes, iters) */
} h5io_hvp_t;

/* docs/design.md §6 dump: /batch/tokens, /batch/targets (int32 [B][T]), /loss, /params/NAME,
 * /grads/NAME, root attributes with the data's identity id (h5io_write_root_attrs; and
 * `precision` when not NULL: the float32 core's values, held exactly in float64); with hvp (may
 * be NULL) /hvp/v/NAME, /hvp/Hv/NAME, /hvp/hessian_max, /hvp/hessian_min (and /hvp/trace,
 * /hvp/trace_stderr, /hvp/density_nodes, /hvp/density_weights, /hvp/density_grid, /hvp/density
 * and /hvp/block_density_nodes, /hvp/block_density_weights when the estimators are on); status "diverged" with diverged_reason when diverged is not
 * NULL, else "done". Returns 0, or 1/2 with err set; nothing left on failure. */
int h5io_write_dump(const char *path, const model_t *m, const char *config_ini,
                    unsigned long seed, const data_identity_t *id, int overwrite,
                    const char *precision, const h5io_hvp_t *hvp, const char *diverged,
                    char *err, size_t errlen);

/* The parameters of the checkpoint of the open training file f into m (built from the
 * file's config: every tensor by name, its shape checked); *step = its update. 0, or 1 with
 * why ("no complete checkpoint", a malformed tensor). */
int h5io_checkpoint_params(h5io_file_t *f, model_t *m, long *step, char *why, size_t len);

/* ---- training files (h5io_train.c): /train and /checkpoint, in place, SWMR -------------- */

typedef struct h5io_train h5io_train_t;

/* What an existing training file says about itself. */
typedef struct {
    char *config;          /* root attribute config (malloc'd), NULL if absent */
    char *status;          /* root attribute status (malloc'd), NULL if absent */
    char kind[16];         /* "train", "probe", "dump", "merged" or "" (h5io_summary_t) */
    long rows;             /* updates logged in /train/step, −1 without */
    long checkpoint_step;  /* the newest usable checkpoint (the file's own, its checksums
                              verified, or its journal's, h5io_journal.c): −1 = none */
    char *data_sha256;     /* the data it was trained on (malloc'd; NULL: none recorded) */
    long long data_bytes;  /* ... and their bytes (−1: none recorded) */
    char why[1700];        /* why there is none */
} h5io_train_info_t;

/* Create path in place (refusing an existing file unless overwrite) with every /train and
 * /checkpoint dataset for t, root attributes with status = running, and start SWMR writing.
 * Returns 0, or 1 (I/O) / 2 (exists) with err set. */
int h5io_train_create(h5io_train_t **w, const char *path, int overwrite, const train_t *t,
                      const char *config_ini, char *err, size_t errlen);

/* What the training file path holds (read through in a child first; caller frees with
 * h5io_train_info_free). Returns 0, or 1 with err set (unreadable, malformed). */
int h5io_train_inspect(const char *path, h5io_train_info_t *info, char *err, size_t errlen);

/* Free the strings of info. */
void h5io_train_info_free(h5io_train_info_t *info);

/* The OpenBLAS kernels a --resume of path must run (its root attribute blas_core, malloc'd;
 * util/blascore.h), or NULL when there is nothing to continue (no file, unreadable, done or
 * diverged) or the file predates the attribute. Read before the file is claimed. */
char *h5io_train_resume_core(const char *path);

/* Load path's newest usable checkpoint (its own or its journal's) into t, rewrite the file with
 * its /train rows up to that step (new file renamed over the old one) and continue writing
 * it; *elapsed = its time at that step. Returns 0, or 1 with err set. */
int h5io_train_resume(h5io_train_t **w, const char *path, train_t *t, const char *config_ini,
                      double *elapsed, char *err, size_t errlen);

/* Buffer update r (its probe row from t->probe when r->probed, its val_loss when evaluated);
 * written when a buffer fills or FLUSH_SECONDS passed. elapsed: seconds since the run began.
 * Returns 0 or 1. */
int h5io_train_append(h5io_train_t *w, const train_t *t, const train_record_t *r, double elapsed);

/* Write the buffered rows and flush the file. Returns 0 or 1. */
int h5io_train_flush(h5io_train_t *w);

/* Flush, then write t's checkpoint: whole into the journal <path>.checkpoint first, then into
 * /checkpoint in place (step −1 while writing, t->step when complete), fsync, and the journal
 * removed; so an interruption at any moment leaves the last good checkpoint (docs/design.md
 * §6). Returns 0 or 1. */
int h5io_train_checkpoint(h5io_train_t *w, const train_t *t);

/* Flush and close, then set the root status (done | diverged | interrupted) and, when
 * diverged_at > 0, /train attributes diverged_at and diverged_reason. Frees w.
 * Returns 0, or 1 with err set. */
int h5io_train_close(h5io_train_t *w, const char *status, long diverged_at, const char *reason,
                     char *err, size_t errlen);

#endif
