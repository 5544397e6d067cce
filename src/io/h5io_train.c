/* h5io_train.c — a training run's file (docs/design.md §6): /train extendible chunked datasets,
 * written in place under HDF5 1.10 SWMR so that a killed run leaves a file that readers open
 * (SWMR read, as h5io_open_read does) up to its last flush. /checkpoint: h5io_checkpoint.c.
 *
 * Its datasets, their shapes and descriptions: the column table (h5io_train_columns.c). The
 * /train group has attributes description, steps, and diverged_at + diverged_reason once
 * diverged.
 *
 * SWMR writing may extend and overwrite datasets but not create objects or attributes, so
 * every dataset exists before H5Fstart_swmr_write, and h5io_train_close sets the final status
 * after reopening the file normally. The writer's locks and the disk space reserved before
 * every flush and checkpoint are h5io_guard.c's: a full disk ends the run with the file as at
 * its last flush and its last complete checkpoint intact (docs/design.md §6).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "io/h5io.h"
#include "model/session.h"
#include "nn/gemm_dnnl.h"
#include "util/fsutil.h"
#include "util/tmpfiles.h"
#include "io/h5io_train_internal.h"

/* Rows are written at least this often (seconds), and when a buffer is full. */
#define FLUSH_SECONDS 2.0

/* Disk reserved before each flush beyond two new chunks per column (h5io_space.c): room for
 * HDF5's metadata (chunk index blocks, object headers), which it allocates in small blocks. */
#define METADATA_SLACK ((size_t)256 << 10)

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

hid_t h5io_tw_fapl_latest(void)
{
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(p, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);   // required by SWMR
    return p;
}

/* Every group, dataset and attribute of a training file (before SWMR writing starts). */
static int create_layout(h5io_train_t *w, const train_t *t)
{
    hid_t g = H5Gcreate2(w->f.id, "/train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return 1;
    H5Gclose(g);
    int rc = h5io_tw_create_columns(w);
    if (rc < 0) return 1;
    rc |= h5io_write_attr_string(&w->f, "/train", "description",
                                 "per update: step lr loss grad_norm time; per probe row (update 1 "
                                 "and every probe.every): probe_step and per-layer norms; with "
                                 "validation data: eval_step val_loss; updates 1..100 and every "
                                 "probe.every: update_step model_update update_rel. Groups grow "
                                 "together.");
    rc |= h5io_write_attr_int(&w->f, "/train", "steps", t->s.cfg.train.steps);
    if (isfinite(t->unigram))   // the plateau of `stability info` (docs/design.md §6g)
        rc |= h5io_write_attr_double(&w->f, "/train", "unigram_entropy", t->unigram);
    if (t->admin_omega) {   // Admin's profiled ω (the parameters then train)
        const size_t dims[2] = {(size_t)t->ax.L, (size_t)t->ax.nsub};
        rc |= h5io_write_doubles(&w->f, "/train/admin_omega", t->admin_omega, 2, dims);
        rc |= h5io_write_attr_strings(&w->f, "/train/admin_omega", "sub",
                                      (const char *const *)t->ax.sub, (size_t)t->ax.nsub);
        rc |= h5io_write_attr_string(&w->f, "/train/admin_omega", "description",
                                     "Admin's omega of every sub-layer as profiled at initialisation");
    }
    if (t->s.cfg.train.warmup_start == WARMUP_START_CATAPULT)   // η_c (design §6k)
        rc |= h5io_write_attr_double(&w->f, "/train", "catapult_lr", t->ctl.catapult_lr);
    if (data_epoch_batches(&t->s.data) > 0)   // updates per epoch (translation by length)
        rc |= h5io_write_attr_int(&w->f, "/train", "epoch_batches", data_epoch_batches(&t->s.data));
    rc |= h5io_checkpoint_create(&w->f, t);
    return rc;
}

void h5io_tw_free(h5io_train_t *w)
{
    for (int k = 0; k < NCOL; k++) {
        // after a failed HDF5 write the handles are left open: closing would flush the half-
        // written state; HDF5's exit-time clean-up is off (h5io_init), so it stays as a kill -9
        // leaves it: readable up to the last flush (SWMR)
        if (w->ds[k] >= 0 && w->failed != WRITER_BROKEN) H5Dclose(w->ds[k]);
        free(w->buf[k]);
    }
    if (w->f.id >= 0 && w->failed != WRITER_BROKEN) H5Fclose(w->f.id);
    if (w->lock_fd >= 0) close(w->lock_fd);   // releases the flock
    probe_axes_free(&w->ax);
    free(w->config);
    free(w);
}

/* Record that writing stopped (kind WRITER_DISK_FULL or WRITER_BROKEN). Returns 1. */
static int writer_failed(h5io_train_t *w, int kind)
{
    if (!w->failed) {
        w->failed = kind;
        w->err_no = errno;
    }
    return 1;
}

/* The message of a writer that stopped: what the file holds and how to continue. */
static void failure_message(const h5io_train_t *w, char *err, size_t errlen)
{
    char ck[64], rows[48];
    if (w->ckpt_step >= 0) snprintf(ck, sizeof ck, "the checkpoint of update %ld", w->ckpt_step);
    else snprintf(ck, sizeof ck, "no checkpoint (--resume --force starts over)");
    if (w->flushed_step > 0) snprintf(rows, sizeof rows, "updates 1-%ld", w->flushed_step);
    else snprintf(rows, sizeof rows, "no updates");
    if (w->failed == WRITER_JOURNAL)
        snprintf(err, errlen, "%s (after update %ld). The file %s holds %s and %s; move it away, "
                 "then continue with --resume", w->why, w->last_step, w->f.path, rows, ck);
    else if (w->failed == WRITER_DISK_FULL)
        snprintf(err, errlen, "%s: cannot write: %s (after update %ld). The file holds %s and "
                 "%s; free space, then continue with --resume", w->f.path, strerror(w->err_no),
                 w->last_step, rows, ck);
    else
        snprintf(err, errlen, "%s: cannot write (HDF5 error; disk full?) after update %ld. The file "
                 "reads up to its last flush (h5py: swmr=True), %s, with %s; continue with "
                 "--resume", w->f.path, w->last_step, rows, ck);
}

/* Disk one flush may allocate: two new chunks of every column, and metadata. */
static size_t flush_bytes(const h5io_train_t *w)
{
    size_t n = METADATA_SLACK;
    for (int k = 0; k < NCOL; k++)
        if (w->ds[k] >= 0)
            n += 2 * (size_t)GROUP_CAP[COLUMNS[k].group] * h5io_tw_row_size(w, &COLUMNS[k]) *
                 sizeof(double);
    return n;
}

h5io_train_t *h5io_tw_alloc(const train_t *t, const char *path)
{
    h5io_train_t *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->f.id = -1;
    w->lock_fd = -1;
    w->ckpt_step = -1;
    snprintf(w->f.path, sizeof w->f.path, "%s", path);
    w->text = t->s.data.val_batches > 0;
    w->bleu = t->s.cfg.train.bleu_every != 0;
    w->radam = t->s.cfg.train.optimizer == OPT_RADAM;
    w->curv = t->s.cfg.probe.curvature_every > 0 ||
              t->s.cfg.train.lr_control == LR_CONTROL_CURVATURE;
    w->lr_control = t->s.cfg.train.lr_control != LR_CONTROL_NONE;
    w->autowu = t->ctl.wu != NULL;
    w->qk_clip = t->s.cfg.train.qk_clip > 0;
    w->norm_opt = t->s.cfg.train.optimizer == OPT_MUON ? 2
                  : t->s.cfg.train.optimizer == OPT_LION || t->s.cfg.train.optimizer == OPT_NSGD;
    w->lowp = config_precision_measures(&t->s.cfg);
    w->swiglu = t->s.cfg.model.activation == ACT_SWIGLU;
    w->pure = t->s.cfg.train.precision == PRECISION_BFLOAT16_PURE;
    const int rows = t->s.cfg.probe.curvature_every > 0;   // the estimators' rows (design §10)
    w->critical = rows && t->s.cfg.probe.critical_sharpness;
    w->trace = rows && t->s.cfg.probe.trace_probes > 0;
    w->density_iters = rows && t->curv ? curv_density_iters(t->curv) : 0;
    w->density_probes = w->density_iters > 0 ? t->s.cfg.probe.density_probes : 0;
    w->density_blocks = w->density_probes > 0 && t->s.cfg.probe.density_blocks;
    for (int k = 0; k < NCOL; k++) w->ds[k] = -1;
    if (probe_axes_copy(&w->ax, &t->ax)) { free(w); return NULL; }
    for (int k = 0; k < NCOL; k++) {
        const size_t n = (size_t)GROUP_CAP[COLUMNS[k].group] * h5io_tw_row_size(w, &COLUMNS[k]);
        w->buf[k] = malloc((n + 1) * sizeof(double));
        if (!w->buf[k]) { h5io_tw_free(w); return NULL; }
    }
    w->last_flush = now_seconds();
    return w;
}

/* Open the /train datasets for appending. */
int h5io_tw_open_columns(h5io_train_t *w)
{
    for (int k = 0; k < NCOL; k++) {
        if (!h5io_tw_column_present(w, k)) continue;
        char path[64];
        snprintf(path, sizeof path, "/train/%s", COLUMNS[k].name);
        if ((w->ds[k] = H5Dopen2(w->f.id, path, H5P_DEFAULT)) < 0) return 1;
    }
    return 0;
}

/* Append n rows (row-major doubles) to dataset ds. */
int h5io_tw_append_rows(hid_t ds, const double *rows, hsize_t n)
{
    if (n == 0) return 0;
    hid_t space = H5Dget_space(ds);
    hsize_t dims[5], start[5] = {0}, count[5];
    const int r = H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    if (r < 1) return 1;
    start[0] = dims[0];
    dims[0] += n;
    for (int i = 0; i < r; i++) count[i] = i ? dims[i] : n;
    if (H5Dset_extent(ds, dims) < 0) return 1;
    space = H5Dget_space(ds);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mem = H5Screate_simple(r, count, NULL);
    herr_t st = H5Dwrite(ds, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, rows);
    H5Sclose(mem);
    H5Sclose(space);
    return st < 0;
}

int h5io_train_flush(h5io_train_t *w)
{
    if (w->failed) return 1;   // the file stays as at its last flush
    if (h5io_space_reserve(w->f.id, flush_bytes(w)) != 0) return writer_failed(w, WRITER_DISK_FULL);
    int rc = 0;
    for (int k = 0; k < NCOL; k++)
        if (w->ds[k] >= 0) rc |= h5io_tw_append_rows(w->ds[k], w->buf[k], (hsize_t)w->pending[COLUMNS[k].group]);
    for (int g = 0; g < G_COUNT; g++) w->pending[g] = 0;
    if (H5Fflush(w->f.id, H5F_SCOPE_GLOBAL) < 0) rc = 1;
    w->last_flush = now_seconds();
    if (rc) return writer_failed(w, WRITER_BROKEN);
    w->flushed_step = w->last_step;
    return 0;
}

/* Copy one row into column k's buffer. */
static void push(h5io_train_t *w, int k, const double *row)
{
    const size_t n = h5io_tw_row_size(w, &COLUMNS[k]);
    memcpy(w->buf[k] + (size_t)w->pending[COLUMNS[k].group] * n, row, n * sizeof(double));
}

/* One curvature row (measure/curvature.h); flushes when its group's buffer is full, since an
 * update may bring two (update 0's with update 1's). 0 or 1. */
static int push_curv(h5io_train_t *w, const curv_row_t *c)
{
    const double step = (double)c->step, kinked = (double)c->kinked;
    push(w, h5io_tw_col("curv_step"), &step);
    push(w, h5io_tw_col("hessian_max"), &c->hessian_max);
    push(w, h5io_tw_col("hessian_min"), &c->hessian_min);
    push(w, h5io_tw_col("precond_max"), &c->precond_max);
    push(w, h5io_tw_col("precond_max_active"), &c->precond_max_active);
    push(w, h5io_tw_col("precond_eps_share"), &c->precond_eps_share);
    push(w, h5io_tw_col("stability_threshold"), &c->threshold);
    push(w, h5io_tw_col("hessian_max_residual"), &c->hessian_max_res);
    push(w, h5io_tw_col("hessian_min_residual"), &c->hessian_min_res);
    push(w, h5io_tw_col("precond_max_residual"), &c->precond_max_res);
    push(w, h5io_tw_col("precond_max_active_residual"), &c->precond_active_res);
    push(w, h5io_tw_col("curv_h"), &c->h);
    push(w, h5io_tw_col("curv_kinked"), &kinked);
    push(w, h5io_tw_col("curv_passes"), &c->passes);
    push(w, h5io_tw_col("hessian_block_max"), c->hessian_block_max);
    push(w, h5io_tw_col("precond_block_max"), c->precond_block_max);
    if (w->trace) {
        push(w, h5io_tw_col("hessian_trace"), &c->trace);
        push(w, h5io_tw_col("hessian_trace_stderr"), &c->trace_stderr);
        push(w, h5io_tw_col("hessian_block_trace"), c->block_trace);
    }
    if (w->density_probes > 0) {
        push(w, h5io_tw_col("density_nodes"), c->density_nodes);
        push(w, h5io_tw_col("density_weights"), c->density_weights);
        push(w, h5io_tw_col("precond_density_nodes"), c->precond_density_nodes);
        push(w, h5io_tw_col("precond_density_weights"), c->precond_density_weights);
    }
    if (w->density_blocks) {
        push(w, h5io_tw_col("block_density_nodes"), c->block_density_nodes);
        push(w, h5io_tw_col("block_density_weights"), c->block_density_weights);
    }
    if (w->critical) {
        push(w, h5io_tw_col("critical_sharpness"), &c->critical_sharpness);
        push(w, h5io_tw_col("update_curvature"), &c->update_curvature);
        push(w, h5io_tw_col("critical_quadratic"), &c->critical_quadratic);
        push(w, h5io_tw_col("grad_precond_curvature"), &c->grad_precond_curvature);
        push(w, h5io_tw_col("critical_passes"), &c->critical_passes);
    }
    return ++w->pending[G_CURV] == GROUP_CAP[G_CURV] ? h5io_train_flush(w) : 0;
}

int h5io_train_append(h5io_train_t *w, const train_t *t, const train_record_t *r, double elapsed)
{
    if (w->failed) return 1;
    const double step = (double)r->step;
    w->last_step = r->step;
    w->lr_held = t->ctl.held;
    if (t->ctl.wu) {
        w->wu_step = t->ctl.wu->switch_step;
        w->wu_lr = t->ctl.wu->switch_lr;
    }
    push(w, h5io_tw_col("step"), &step);
    push(w, h5io_tw_col("lr"), &r->lr);
    push(w, h5io_tw_col("loss"), &r->loss);
    push(w, h5io_tw_col("grad_norm"), &r->grad_norm);
    push(w, h5io_tw_col("time"), &elapsed);
    push(w, h5io_tw_col("max_attn_logit"), &r->dyn.max_logit);
    push(w, h5io_tw_col("min_attn_entropy"), &r->dyn.min_entropy);
    push(w, h5io_tw_col("logz_mean_abs"), &r->dyn.logz_mean_abs);
    push(w, h5io_tw_col("z_loss"), &r->dyn.z_term);
    push(w, h5io_tw_col("update_rms"), t->update_rms);
    push(w, h5io_tw_col("update_rms_extra"), t->update_rms_extra);
    push(w, h5io_tw_col("radam_rho"), &r->radam_rho);
    push(w, h5io_tw_col("radam_rect"), &r->radam_rect);
    push(w, h5io_tw_col("qk_clip_heads"), &r->qk_clipped);
    push(w, h5io_tw_col("stagnation"), &r->stagnation);
    w->pending[G_STEP]++;
    if (r->probed) {
        const train_probe_t *p = &t->probe;
        push(w, h5io_tw_col("probe_step"), &step);
        push(w, h5io_tw_col("grad_fro"), p->grad_fro);
        push(w, h5io_tw_col("extra_grad_fro"), p->extra_grad_fro);
        push(w, h5io_tw_col("hidden_sqnorm"), p->hidden_sqnorm);
        push(w, h5io_tw_col("final_sqnorm"), &p->final_sqnorm);
        push(w, h5io_tw_col("jacobian_spec"), p->jacobian_spec);
        push(w, h5io_tw_col("final_jacobian_spec"), &p->final_jacobian_spec);
        push(w, h5io_tw_col("subout_grad"), p->subout_grad);
        push(w, h5io_tw_col("attn_entropy"), p->attn_entropy);
        push(w, h5io_tw_col("attn_max_logit"), p->attn_max_logit);
        push(w, h5io_tw_col("resid_rms"), p->resid_rms);
        push(w, h5io_tw_col("logz_max_abs"), &p->out[1]);
        push(w, h5io_tw_col("logit_max"), &p->out[2]);
        if (w->norm_opt) {   // after the update (train/qk_clip.h)
            push(w, h5io_tw_col("opt_update_rms"), t->opt_rms);
            push(w, h5io_tw_col("opt_update_spec"), t->opt_spec);
            push(w, h5io_tw_col("ortho_sv_min"), t->opt_sv_min);
            push(w, h5io_tw_col("ortho_sv_max"), t->opt_sv_max);
        }
        push(w, h5io_tw_col("weight_spec"), p->weight_spec);
        push(w, h5io_tw_col("extra_weight_spec"), p->extra_weight_spec);
        push(w, h5io_tw_col("pv_round_bias"), p->pv_round_bias);
        push(w, h5io_tw_col("channel_amax"), p->channel_amax);
        push(w, h5io_tw_col("swiglu_cos"), p->swiglu_cos);
        w->pending[G_PROBE]++;
    }
    if (r->updated) {
        push(w, h5io_tw_col("update_step"), &step);
        push(w, h5io_tw_col("model_update"), &t->model_update);
        push(w, h5io_tw_col("update_rel"), t->update_rel);
        w->pending[G_UPDATE]++;
    }
    if (w->text && !isnan(r->val_loss)) {
        push(w, h5io_tw_col("eval_step"), &step);
        push(w, h5io_tw_col("val_loss"), &r->val_loss);
        w->pending[G_EVAL]++;
    }
    if (w->curv && (r->curv & 1) && push_curv(w, &t->curv_row[0])) return 1;
    if (w->curv && (r->curv & 2) && push_curv(w, &t->curv_row[1])) return 1;
    if (w->bleu && !isnan(r->bleu)) {
        push(w, h5io_tw_col("bleu_step"), &step);
        push(w, h5io_tw_col("bleu"), &r->bleu);
        w->pending[G_BLEU]++;
    }
    int full = 0;
    for (int g = 0; g < G_COUNT; g++) full |= w->pending[g] == GROUP_CAP[g];
    if (full || now_seconds() - w->last_flush >= FLUSH_SECONDS) return h5io_train_flush(w);
    return 0;
}

int h5io_train_checkpoint(h5io_train_t *w, const train_t *t)
{
    // rows first; when they cannot be written, the last complete checkpoint stays untouched
    if (h5io_train_flush(w)) return 1;
    // the journal next, whole and on disk: from now on a kill at any moment leaves one
    // complete checkpoint, the file's or the journal's (h5io_journal.c)
    if (w->journal) {
        const int rc = h5io_journal_write(w->f.path, w->config, w->created, t, w->why, sizeof w->why);
        if (rc) return writer_failed(w, rc == 2 ? WRITER_JOURNAL : WRITER_DISK_FULL);
        w->ckpt_step = t->step;
    }
    const size_t need = METADATA_SLACK + (w->ckpt_allocated ? 0 : h5io_checkpoint_bytes(t));
    if (h5io_space_reserve(w->f.id, need) != 0) return writer_failed(w, WRITER_DISK_FULL);
    if (h5io_checkpoint_write(&w->f, t)) return writer_failed(w, WRITER_BROKEN);
    if (w->journal) {
        if (h5io_sync(w->f.id) != 0) return writer_failed(w, WRITER_BROKEN);
        h5io_journal_remove(w->f.path);   // the file's own checkpoint is complete, on disk
    }
    w->ckpt_allocated = 1;
    w->ckpt_step = t->step;
    return 0;
}

/* Create the file at path (EXCL, or TRUNC when overwrite) with its layout and root attributes. */
int h5io_tw_create_file(h5io_train_t *w, const char *path, int trunc, const train_t *t,
                       const char *config_ini)
{
    hid_t fapl = h5io_tw_fapl_latest();
    w->f.id = H5Fcreate(path, trunc ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (w->f.id < 0) return 1;
    int rc = create_layout(w, t);
    rc |= h5io_write_root_attrs(&w->f, config_ini, t->s.cfg.init.seed, "running", &t->s.data.id);
    // the training core's type (docs/design.md §2); absent: float64, as in every file before it
    if (t->s.cfg.train.precision != PRECISION_FLOAT64)
        rc |= h5io_write_attr_string(&w->f, "/", "precision",
                                     config_precision_name(t->s.cfg.train.precision));
    // which code computed the bfloat16 products (docs/design.md, "Low precision, emulated")
    if (config_lowp(&t->s.cfg)) {
        const char *path = session_gemm_onednn(&t->s.cfg) ? gemm_dnnl_name() : "emulated";
        rc |= h5io_write_attr_string(&w->f, "/", "gemm_path", path);
        rc |= h5io_write_attr_string(&w->f, "/train", "gemm_path", path);
    }
    char *created = h5io_read_attr_string(&w->f, "/", "created");
    snprintf(w->created, sizeof w->created, "%s", created ? created : "");
    free(created);
    free(w->config);
    if (!(w->config = strdup(config_ini))) rc = 1;
    return rc;
}

int h5io_train_create(h5io_train_t **out, const char *path, int overwrite, const train_t *t,
                      const char *config_ini, char *err, size_t errlen)
{
    *out = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct stat st;
    if (!overwrite && lstat(path, &st) == 0) {
        snprintf(err, errlen, "%s: exists (use --force to replace it, --resume to continue it)", path);
        return 2;
    }
    int rc = h5io_check_target(path, 1, err, errlen);
    if (!rc) rc = h5io_journal_check(path, err, errlen);
    if (rc) return rc;
    if (h5io_in_use(path)) {
        snprintf(err, errlen, "%s: in use by another process (a running training run, an open reader?)", path);
        return 1;
    }
    if (h5io_make_parent_dirs(path) != 0) {
        snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
        return 1;
    }
    h5io_train_t *w = h5io_tw_alloc(t, path);
    if (!w) { snprintf(err, errlen, "%s: out of memory", path); return 1; }
    // made whole under a temporary name, then put in place by rename (never truncated in place:
    // a hard link to the old file, a snapshot, keeps what it held; docs/design.md §6)
    char tmp[sizeof w->f.path + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    tmpfiles_add(tmp);
    err[0] = '\0';
    rc = h5io_create_empty(tmp, err, errlen) || h5io_tw_create_file(w, tmp, 1, t, config_ini) ||
         h5io_tw_open_columns(w) || H5Fstart_swmr_write(w->f.id) < 0;
    if (!rc && fsutil_check_replaceable(path, err, errlen)) rc = 1;
    else if (!rc && overwrite && rename(tmp, path) != 0) rc = 1;
    else if (!rc && !overwrite && (link(tmp, path) != 0 || unlink(tmp) != 0)) rc = 1;
    if (rc) {
        if (!err[0] && errno == EEXIST)
            snprintf(err, errlen, "%s: exists (use --force to replace it, --resume to continue it)", path);
        else if (!err[0])
            snprintf(err, errlen, "%s: cannot create the HDF5 file: %s", path, strerror(errno));
        h5io_tw_free(w);
        fsutil_unlink_regular(tmp);
        tmpfiles_forget(tmp);
        return 1;
    }
    tmpfiles_forget(tmp);
    h5io_journal_remove(path);   // a journal a killed run of this path left is not this run's
    w->journal = 1;
    w->lock_fd = h5io_lock_hold(path);
    *out = w;
    return 0;
}

int h5io_train_close(h5io_train_t *w, const char *status, long diverged_at, const char *reason,
                     char *err, size_t errlen)
{
    char path[sizeof w->f.path];
    snprintf(path, sizeof path, "%s", w->f.path);
    int rc = h5io_train_flush(w);
    const int ours = h5io_same_file(w->lock_fd, w->f.path), failed = w->failed;
    const int lr_control = w->lr_control, autowu = w->autowu;
    const long lr_held = w->lr_held, wu_step = w->wu_step;
    const double wu_lr = w->wu_lr;
    if (failed) failure_message(w, err, errlen);
    h5io_tw_free(w);
    if (failed) {   // status stays running, as after kill -9: --resume continues the file
        if (failed == WRITER_DISK_FULL) h5io_space_release(path);
        return 1;
    }
    if (!ours) {   // never write our status into another process's file
        snprintf(err, errlen, "%s: replaced by another process while training; not changed", path);
        return 1;
    }
    // SWMR writing cannot change attributes: set the final status in a normal session, without
    // HDF5's file lock, which any reader still holding the file open (h5py) would block. Its
    // space is reserved first: a status that cannot be written leaves the file as it was.
    h5io_space_release(path);
    const int fd = fsutil_open_regular(path, O_WRONLY, 0);
    const int room = fd >= 0 && fsutil_reserve(fd, lseek(fd, 0, SEEK_END), METADATA_SLACK) == 0;
    if (fd >= 0) close(fd);
    if (!room) {
        snprintf(err, errlen, "%s: cannot set its status to %s: %s; it stays 'running' "
                 "(--resume continues it)", path, status, strerror(errno));
        return 1;
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, 0, 1);
    h5io_file_t f = {.id = H5Fopen(path, H5F_ACC_RDWR, fapl)};
    H5Pclose(fapl);
    if (f.id < 0) rc = 1;
    else {
        rc |= h5io_write_attr_string(&f, "/", "status", status);
        if (diverged_at > 0) {
            rc |= h5io_write_attr_int(&f, "/train", "diverged_at", diverged_at);
            rc |= h5io_write_attr_string(&f, "/train", "diverged_reason", reason);
        }
        if (lr_control)   // how often the controller held the lr below the schedule (§6k)
            rc |= h5io_write_attr_int(&f, "/train", "lr_held_below", lr_held);
        if (autowu && wu_step > 0) {   // AutoWU's last warm-up update and its lr (§6k)
            rc |= h5io_write_attr_int(&f, "/train", "autowu_switch_step", wu_step);
            rc |= h5io_write_attr_double(&f, "/train", "autowu_switch_lr", wu_lr);
        }
        rc |= H5Fclose(f.id) < 0;
    }
    h5io_space_release(path);
    if (rc) snprintf(err, errlen, "%s: cannot finish the HDF5 file", path);
    return rc;
}

