/* h5io_resume.c — reading a training file back (docs/design.md §6): what it holds (inspect),
 * and --resume: the newest usable checkpoint (the file's own, its checksums verified, or its
 * journal's, h5io_journal.c) and the /train rows up to it, rewritten into a new file renamed
 * over the old one; and whether a file's config is of this run (--resume, a sweep's stale
 * runs). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/h5io.h"
#include "io/h5io_train_internal.h"
#include "util/fsutil.h"
#include "util/tmpfiles.h"

char *h5io_config_text(const config_t *cfg, int any_seed)
{
    config_t c = *cfg;
    c.train.resume = 0;
    c.output.file[0] = '\0';
    c.output.overwrite = 0;
    c.output.plots = 0;
    c.output.log_every = 100;   // how often a run logs is not what it computes
    if (any_seed) c.init.seed = 0;
    const size_t len = config_to_ini(&c, NULL, 0) + 1;
    char *ini = malloc(len);
    if (ini) config_to_ini(&c, ini, len);
    return ini;
}

int h5io_config_same(const config_t *cfg, const char *stored, char *diff, size_t len)
{
    config_t old;
    char err[CONFIG_ERR_MAX];
    snprintf(diff, len, "its config attribute is unreadable");
    if (!stored || config_parse_string(&old, stored, "file", err, sizeof err)) return 0;
    if (old.train.precision != cfg->train.precision) {   // a float64 file has no such line
        snprintf(diff, len, "it was trained with train.precision = %s, not %s",
                 config_precision_name(old.train.precision),
                 config_precision_name(cfg->train.precision));
        return 0;
    }
    char *a = h5io_config_text(&old, 0), *b = h5io_config_text(cfg, 0);
    const int same = a && b && !strcmp(a, b);
    if (a && b && !same) {
        // the first differing line, as the file has it
        const char *p = a, *q = b;
        while (*p && *p == *q) p++, q++;
        while (p > a && p[-1] != '\n') p--;
        const char *e = strchr(p, '\n');
        snprintf(diff, len, "it has '%.*s'", (int)(e ? e - p : (long)strlen(p)), p);
    }
    free(a);
    free(b);
    return same;
}

/* The rows of the 1-D dataset path of f (validated), or −1 when it is missing or malformed. */
static long dataset_rows(h5io_file_t *f, const char *path)
{
    if (!h5io_exists(f, path)) return -1;
    hid_t ds = H5Dopen2(f->id, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t space = H5Dget_space(ds);
    hsize_t d[1] = {0};
    const int ok = H5Sget_simple_extent_ndims(space) == 1 && H5Sget_simple_extent_dims(space, d, NULL) == 1;
    H5Sclose(space);
    H5Dclose(ds);
    if (!ok) h5io_bad(f, path, "not a list of updates (rank 1)");
    return ok ? (long)d[0] : -1;
}

/* The newest usable checkpoint of the (verified, open) file f at path: its own (when its data
 * read through, checksums and all) or its journal's; *from_journal says which. −1 with why. */
static long usable_checkpoint(h5io_file_t *f, const char *path, const char *config,
                              const char *created, int *from_journal, char *why, size_t len)
{
    char own[800] = "", jwhy[800];
    long step = -1;
    if (h5io_verify(path, H5IO_VERIFY_CHECKPOINT, own, sizeof own) == 0) {
        step = h5io_checkpoint_step(f);
        if (step < 0) snprintf(own, sizeof own, "%s", h5io_error(f) ? h5io_error(f) : "none complete");
    }
    const long jstep = h5io_journal_step(path, config, created, jwhy, sizeof jwhy);
    *from_journal = jstep > step;
    if (jstep > step) step = jstep;
    if (step < 0) snprintf(why, len, "its checkpoint: %s; its journal: %s", own, jwhy);
    return step;
}

int h5io_train_inspect(const char *path, h5io_train_info_t *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof *info);
    info->checkpoint_step = -1;
    h5io_file_t *f;
    if (h5io_open_read(&f, path, err, errlen)) return 1;
    info->config = h5io_read_attr_string(f, "/", "config");
    info->status = h5io_read_attr_string(f, "/", "status");
    char *created = h5io_read_attr_string(f, "/", "created");
    snprintf(info->kind, sizeof info->kind, "%s", h5io_kind(f));
    info->rows = dataset_rows(f, "/train/step");
    h5io_read_data_identity(f, "/", &info->data_sha256, &info->data_bytes);
    int journal;
    if (!strcmp(info->kind, "train") && !h5io_error(f))
        info->checkpoint_step = usable_checkpoint(f, path, info->config, created, &journal,
                                                  info->why, sizeof info->why);
    free(created);
    const int bad = h5io_error(f) != NULL;
    if (bad) snprintf(err, errlen, "%s", h5io_error(f));
    h5io_close(f);
    if (bad) h5io_train_info_free(info);
    return bad;
}

char *h5io_train_resume_core(const char *path)
{
    h5io_file_t *f;
    char err[1400];
    if (access(path, F_OK) != 0 || h5io_open_read(&f, path, err, sizeof err)) return NULL;
    char *status = h5io_read_attr_string(f, "/", "status");
    char *core = NULL;
    if (!status || (strcmp(status, "done") && strcmp(status, "diverged")))
        core = h5io_read_attr_string(f, "/", "blas_core");
    free(status);
    h5io_close(f);
    return core;
}

void h5io_train_info_free(h5io_train_info_t *info)
{
    free(info->config);
    free(info->status);
    free(info->data_sha256);
    info->config = info->status = info->data_sha256 = NULL;
}

/* Read the whole column k of f (rows × row_size doubles, malloc'd) if its row shape is right. */
static double *read_column(h5io_file_t *f, const h5io_train_t *w, int k, hsize_t *rows)
{
    char path[64];
    double *x;
    size_t dims[8];
    hsize_t want[4];
    int r;
    snprintf(path, sizeof path, "/train/%s", COLUMNS[k].name);
    if (h5io_read_doubles(f, path, &x, dims, &r)) return NULL;
    const int wr = h5io_tw_row_dims(w, &COLUMNS[k], want);
    int ok = r == 1 + wr;
    for (int i = 0; ok && i < wr; i++) ok = dims[i + 1] == want[i];
    if (!ok) { free(x); return NULL; }
    *rows = dims[0];
    return x;
}

/* A column the file predates (docs/design.md §6g): as many NaN rows as its group's key column
 * (read before it), or NULL when the file has the column. */
static double *nan_column(h5io_file_t *f, const h5io_train_t *w, int k, double *const *data,
                          const hsize_t *n, hsize_t *rows)
{
    char path[64];
    snprintf(path, sizeof path, "/train/%s", COLUMNS[k].name);
    const int key = h5io_tw_col(GROUP_KEY[COLUMNS[k].group]);
    if (h5io_exists(f, path) || !data[key]) return NULL;
    hsize_t d[4];
    size_t per = 1;
    for (int i = 0, r = h5io_tw_row_dims(w, &COLUMNS[k], d); i < r; i++) per *= (size_t)d[i];
    double *x = malloc(((size_t)n[key] * per + 1) * sizeof(double));
    for (size_t i = 0; x && i < (size_t)n[key] * per; i++) x[i] = NAN;
    *rows = n[key];
    return x;
}

/* The /train rows of the open file up to update t->step: data[k] and rows kept per group. */
static int load_rows(h5io_file_t *f, const h5io_train_t *w, long step, double **data, hsize_t *keep,
                     double *elapsed, char *why, size_t len)
{
    hsize_t n[NCOL] = {0}, shortest[G_COUNT];
    for (int g = 0; g < G_COUNT; g++) shortest[g] = (hsize_t)-1;
    for (int k = 0; k < NCOL; k++) {
        if (!h5io_tw_column_present(w, k)) continue;
        if (k >= NCOL_BEFORE_DYNAMICS && !data[k] && (data[k] = nan_column(f, w, k, data, n, &n[k])))
            continue;   // a file from before the dynamics measures: NaN rows
        if (!(data[k] = read_column(f, w, k, &n[k]))) {
            snprintf(why, len, "/train/%s missing or of another shape", COLUMNS[k].name);
            return 1;
        }
        const int g = COLUMNS[k].group;
        if (n[k] < shortest[g]) shortest[g] = n[k];   // a kill may leave one group ragged
    }
    for (int g = 0; g < G_COUNT; g++) {
        keep[g] = 0;
        if (shortest[g] == (hsize_t)-1) continue;
        const double *key = data[h5io_tw_col(GROUP_KEY[g])];
        while (keep[g] < shortest[g] && key[keep[g]] <= (double)step) keep[g]++;
    }
    const double *s = data[h5io_tw_col("step")];
    for (hsize_t i = 0; i < keep[G_STEP]; i++)
        if (s[i] != (double)(i + 1)) { snprintf(why, len, "/train/step is not 1, 2, ..."); return 1; }
    if (keep[G_STEP] != (hsize_t)step) {
        snprintf(why, len, "/train has %llu steps, the checkpoint is at %ld",
                 (unsigned long long)keep[G_STEP], step);
        return 1;
    }
    *elapsed = step > 0 ? data[h5io_tw_col("time")][step - 1] : 0.0;
    return 0;
}

/* Load the newest usable checkpoint of the open file old (path) into t: its own, or its
 * journal's. 0, or 1 with why. */
static int load_checkpoint(h5io_file_t *old, const char *path, train_t *t, char *why, size_t len)
{
    char *config = h5io_read_attr_string(old, "/", "config");
    char *created = h5io_read_attr_string(old, "/", "created");
    int journal = 0, rc = 1;
    if (usable_checkpoint(old, path, config, created, &journal, why, len) < 0)
        rc = 1;
    else if (journal)
        rc = h5io_journal_load(path, t, why, len);
    else
        rc = h5io_checkpoint_load(old, t, why, len);
    free(config);
    free(created);
    return rc;
}

int h5io_train_resume(h5io_train_t **out, const char *path, train_t *t, const char *config_ini,
                      double *elapsed, char *err, size_t errlen)
{
    *out = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (h5io_in_use(path)) {
        snprintf(err, errlen, "%s: cannot resume: in use by another process (a running training "
                 "run, an open reader?)", path);
        return 1;
    }
    const int journal = h5io_journal_check(path, err, errlen);   // not found out mid-run
    if (journal) return journal;
    h5io_file_t *old;
    if (h5io_open_read(&old, path, err, errlen)) return 1;
    h5io_train_t *w = h5io_tw_alloc(t, path);
    double *data[NCOL] = {NULL};
    hsize_t keep[G_COUNT];
    char why[1400] = "out of memory", tmp[sizeof w->f.path + 32];
    char *created = h5io_read_attr_string(old, "/", "created");
    int rc = !w || load_checkpoint(old, path, t, why, sizeof why) ||
             load_rows(old, w, t->step, data, keep, elapsed, why, sizeof why);
    h5io_close(old);
    // the suboptimality schedule's fit and switch: replayed from the losses (train/subopt.h)
    if (!rc && t->s.cfg.train.schedule == SCHED_SUBOPTIMALITY)
        subopt_replay(&t->subopt, &t->s.cfg, data[h5io_tw_col("loss")], (long)keep[G_STEP]);
    if (!rc) {
        // rewrite: the rows up to the checkpoint and the checkpoint into a new file, then
        // rename it over the old one (atomic: a kill leaves either file complete)
        snprintf(tmp, sizeof tmp, "%s.resume.%ld", path, (long)getpid());
        tmpfiles_add(tmp);   // removed if a signal ends the process meanwhile
        rc = h5io_create_empty(tmp, why, sizeof why) || h5io_tw_create_file(w, tmp, 1, t, config_ini) ||
             h5io_tw_open_columns(w);
        if (!rc) tmpfiles_test_hook();
        if (!rc && created) {
            rc = h5io_write_attr_string(&w->f, "/", "created", created);
            snprintf(w->created, sizeof w->created, "%s", created);
        }
        for (int k = 0; k < NCOL && !rc; k++)
            if (w->ds[k] >= 0) rc = h5io_tw_append_rows(w->ds[k], data[k], keep[COLUMNS[k].group]);
        w->last_step = w->flushed_step = t->step;
        rc = rc || h5io_train_checkpoint(w, t);   // no journal: the old file holds this state
        for (int k = 0; k < NCOL; k++) {
            if (w->ds[k] >= 0) H5Dclose(w->ds[k]);
            w->ds[k] = -1;
        }
        if (w->f.id >= 0 && H5Fclose(w->f.id) < 0) rc = 1;
        w->f.id = -1;
        if (rc) {
            if (!strncmp(why, "out of memory", 13))
                snprintf(why, sizeof why, "cannot write %s (disk full?); the file is unchanged", tmp);
            fsutil_unlink_regular(tmp);
        } else if (fsutil_check_replaceable(path, why, sizeof why)) {
            fsutil_unlink_regular(tmp);
            rc = 1;
        } else if (rename(tmp, path) != 0) {
            snprintf(why, sizeof why, "cannot rename %s: %s", tmp, strerror(errno));
            fsutil_unlink_regular(tmp);
            rc = 1;
        }
        tmpfiles_forget(tmp);
        if (!rc) h5io_journal_remove(path);   // the new file holds the journal's state
    }
    if (!rc) {
        hid_t fapl = h5io_tw_fapl_latest();
        w->f.id = H5Fopen(path, H5F_ACC_RDWR, fapl);
        H5Pclose(fapl);
        rc = w->f.id < 0 || h5io_tw_open_columns(w) || H5Fstart_swmr_write(w->f.id) < 0;
        if (rc) snprintf(why, sizeof why, "cannot reopen for writing");
        else w->lock_fd = h5io_lock_hold(path);
        w->journal = 1;
    }
    for (int k = 0; k < NCOL; k++) free(data[k]);
    free(created);
    if (rc) {
        snprintf(err, errlen, "%s: cannot resume: %s", path, why);
        if (w) h5io_tw_free(w);
        return 1;
    }
    *out = w;
    return 0;
}
