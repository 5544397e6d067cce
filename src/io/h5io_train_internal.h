/* h5io_train_internal.h — what the training-file writer (h5io_train.c) shares with its resume
 * (h5io_resume.c) and its column table (h5io_train_columns.c): the /train columns and the
 * writer. Not for other modules. */
#ifndef STABILITY_H5IO_TRAIN_INTERNAL_H
#define STABILITY_H5IO_TRAIN_INTERNAL_H

#include "io/h5io_internal.h"

/* Row groups: datasets of one group grow together. */
enum { G_STEP, G_PROBE, G_EVAL, G_UPDATE, G_BLEU, G_CURV, G_COUNT };
extern const int GROUP_CAP[G_COUNT];   /* buffered rows = chunk rows */
extern const char *const GROUP_KEY[G_COUNT];
extern const char *const GROUP_AXIS[G_COUNT];

/* A row after the first (growing) axis: [layer] [one named probe axis] (measure/probe.h).
 * layered = 2: the layer rows and one more, the tensors outside the layers (the curvature's
 * blocks, measure/curvature.h), named by a stack attribute ending in "outside".
 * layered = 3: no layer, the row is the SLQ density's [probe][m] (measure/slq.h).
 * layered = 4: the rows of layered = 2 × kind × the density's [probe][m] (every block's SLQ). */
typedef struct {
    const char *name;
    int group, is_int, layered;
    probe_axis_id_t axis;
    const char *description;
} column_t;

/* The /train datasets, in file order (h5io_train_columns.c). */
extern const column_t COLUMNS[];
#define NCOL 74
/* Columns from this index on came with the dynamics measures (docs/design.md §6g): a file
 * written before them resumes with them NaN. */
#define NCOL_BEFORE_DYNAMICS 20

/* Why a writer stopped writing (h5io_train_close then ends without touching the file). */
enum { WRITER_OK, WRITER_DISK_FULL, WRITER_BROKEN, WRITER_JOURNAL };

struct h5io_train {
    h5io_file_t f;              /* f.id: the open file */
    int lock_fd;                /* holds a shared flock on the file while writing, or −1 */
    probe_axes_t ax;            /* names of the probe rows' axes (a copy of the trainer's) */
    int failed;                 /* WRITER_DISK_FULL: a reservation failed, nothing written since the
                                   last flush; WRITER_BROKEN: an HDF5 write failed;
                                   WRITER_JOURNAL: <file>.checkpoint is not a regular file */
    int err_no;                 /* errno of the failed reservation */
    char why[1400];             /* WRITER_JOURNAL: what is at <file>.checkpoint */
    long last_step, flushed_step, ckpt_step;   /* last update buffered / on disk; checkpoint */
    int ckpt_allocated;         /* the checkpoint's data have their space in the file */
    int journal;                /* checkpoints go through <file>.checkpoint first (h5io_journal.c) */
    char *config;               /* the file's config attribute (the journal carries it) */
    char created[48];           /* ... and its created attribute */
    int text;
    int bleu;                   /* the run measures BLEU (train.bleu_every != 0) */
    int radam;                  /* train.optimizer = radam: /train/radam_rho, radam_rect exist */
    int curv;                   /* the run measures curvature (probe.curvature_every > 0, or
                                   train.lr_control = curvature) */
    int lr_control;             /* train.lr_control != none: attribute lr_held_below at close */
    long lr_held;               /* its value: t->ctl.held of the last update appended */
    int autowu;                 /* train.schedule = autowu: attributes autowu_switch_* at close */
    long wu_step;               /* its last warm-up update (0 while warming up) */
    double wu_lr;               /* and the lr there */
    int qk_clip;                /* train.qk_clip > 0: /train/qk_clip_heads */
    int norm_opt;               /* 1 lion or nsgd, 2 muon: /train/opt_update_rms (and muon's
                                   opt_update_spec, ortho_sv_min, ortho_sv_max) */
    int lowp;                   /* probe.precision_measures (auto: bfloat16*, fp8): /train/weight_spec,
                                   extra_weight_spec, pv_round_bias, channel_amax (swiglu_cos
                                   with swiglu) */
    int swiglu;                 /* model.activation = swiglu */
    int pure;                   /* train.precision = bfloat16_pure: /train/stagnation */
    int critical;               /* and the critical sharpness (probe.critical_sharpness) */
    int trace;                  /* and Hutchinson's trace (probe.trace_probes > 0) */
    int density_probes, density_iters;   /* and the SLQ density's shape (0: none) */
    int density_blocks;         /* and every block's density (probe.density_blocks) */
    hid_t ds[NCOL];             /* open /train datasets (−1 when absent) */
    double *buf[NCOL];          /* (GROUP_CAP, row) pending rows */
    int pending[G_COUNT];
    double last_flush;
};

/* Inner dims of a column's row ([layer] [axis], or the density's); returns their count (0..4). */
int h5io_tw_row_dims(const h5io_train_t *w, const column_t *c, hsize_t *d);

/* Doubles in one row of column c (the product of its inner dims; 1 for a scalar). */
size_t h5io_tw_row_size(const h5io_train_t *w, const column_t *c);

/* Column k exists in w's file (validation columns with validation data, no empty axis). */
int h5io_tw_column_present(const h5io_train_t *w, int k);

/* A file-access property list with the latest format (SWMR needs it); caller closes. */
hid_t h5io_tw_fapl_latest(void);

/* A writer for t's file at path, nothing open yet (NULL: out of memory). */
h5io_train_t *h5io_tw_alloc(const train_t *t, const char *path);

/* Close what w holds (not after a failed write: h5io_train.c) and free it. */
void h5io_tw_free(h5io_train_t *w);

/* Create path (TRUNC when trunc, else EXCL) with its layout and root attributes; records the
 * file's config and created attributes in w. 0 or 1. */
int h5io_tw_create_file(h5io_train_t *w, const char *path, int trunc, const train_t *t,
                        const char *config_ini);

/* Open the /train datasets for appending. 0 or 1. */
int h5io_tw_open_columns(h5io_train_t *w);

/* Append n rows (row-major doubles) to dataset ds. 0 or 1. */
int h5io_tw_append_rows(hid_t ds, const double *rows, hsize_t n);

/* Index of the column named name (the table is fixed: a miss aborts). */
int h5io_tw_col(const char *name);

/* Create every present column's /train dataset with its attributes axes, description and its
 * axis names (before SWMR writing). 0; 1 when an attribute failed; −1 when a dataset failed. */
int h5io_tw_create_columns(h5io_train_t *w);

#endif
