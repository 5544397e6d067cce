/* sweep_summary.c — the table a local sweep ends with (sweep_watch.h): each run's status,
 * losses and diagnosis, printed and kept beside the runs as results/<sweep>/summary.txt. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/h5io.h"
#include "util/text.h"
#include "report/report.h"
#include "sweep/sweep_watch.h"
#include "util/fsutil.h"
#include "util/sbuf.h"

/* One row of the table. */
typedef struct {
    char status[48], updates[24], loss[24], val[24], flags[300];
} row_t;

/* The last value of /train/name of f, or NaN. */
static double last_of(h5io_file_t *f, const char *name)
{
    size_t n, w, v;
    double *x = h5io_read_train(f, "", name, &n, &w, &v);
    const double r = x && n ? x[n - 1] : NAN;
    free(x);
    return r;
}

/* The mean loss at initialisation over the probe's seeds, or NaN. */
static double probe_loss(h5io_file_t *f)
{
    double *x;
    size_t dims[8];
    int rank;
    if (h5io_read_doubles(f, "/probe/loss", &x, dims, &rank) || rank != 1 || !dims[0]) return NAN;
    double s = 0;
    for (size_t i = 0; i < dims[0]; i++) s += x[i];
    free(x);
    return s / (double)dims[0];
}

/* Fill r from the file of run i, whose status is status (done, diverged or interrupted). */
static void row_from_file(const sweep_t *s, int i, const char *path, const char *status, row_t *r)
{
    char err[1200], diff[256];
    h5io_file_t *f;
    snprintf(r->status, sizeof r->status, "%s", status);
    if (h5io_open_read(&f, path, err, sizeof err)) { snprintf(r->status, sizeof r->status, "unreadable"); return; }
    char *ini = h5io_read_attr_string(f, "/", "config");
    config_t cfg, want;
    sweep_sets_t sets;
    sweep_run_sets(s, i, &sets);
    if (!ini || config_parse_string(&cfg, ini, s->runs[i].name, err, sizeof err)) {
        snprintf(r->status, sizeof r->status, "no valid config");
    } else if (config_load(&want, s->base, sets.ptr, sets.n, err, sizeof err) == 0 &&
               !h5io_config_same(&want, ini, diff, sizeof diff)) {
        snprintf(r->status, sizeof r->status, "stale (%s)", status);   // another configuration's
    } else if (cfg.train.steps == 0) {
        snprintf(r->updates, sizeof r->updates, "probe");
        snprintf(r->loss, sizeof r->loss, "%.4f", probe_loss(f));   // at initialisation
    } else {
        diagnose_t d;
        if (report_diagnose_run(f, "", &cfg, &d) == 0) {
            snprintf(r->updates, sizeof r->updates, "%ld", d.last_step);
            const double fin = report_final_loss(f, "");
            if (!isnan(fin)) snprintf(r->loss, sizeof r->loss, "%.4f", fin);
            diagnose_flags(&d, r->flags, sizeof r->flags);
        }
        const double v = last_of(f, "val_loss");
        if (!isnan(v)) snprintf(r->val, sizeof r->val, "%.4f", v);
    }
    free(ini);
    h5io_close(f);
}

/* The row of run i. */
static void row_of(const sweep_t *s, int i, const int *failed, row_t *r)
{
    char path[1400];
    memset(r, 0, sizeof *r);
    sweep_run_path(s, i, path, sizeof path);
    char *status = h5io_file_status(path);   // read in a child: a damaged file cannot hurt
    if (status && (!strcmp(status, "done") || !strcmp(status, "diverged") ||
                   !strcmp(status, "interrupted")))
        row_from_file(s, i, path, status, r);
    else if (failed && failed[i])
        snprintf(r->status, sizeof r->status, "failed (exit %d)", failed[i]);
    else
        snprintf(r->status, sizeof r->status, "%s", status ? status : "missing");
    free(status);
}

/* The table as text into b. */
static void table(const sweep_t *s, const row_t *rows, sbuf_t *b)
{
    int w[5] = {3, 6, 7, 10, 8};   // the headers' widths, in columns (a name may be UTF-8)
    for (int i = 0; i < s->nruns; i++) {
        const int n[5] = {text_width(s->runs[i].name), (int)strlen(rows[i].status),
                          (int)strlen(rows[i].updates), (int)strlen(rows[i].loss), (int)strlen(rows[i].val)};
        for (int k = 0; k < 5; k++) if (n[k] > w[k]) w[k] = n[k];
    }
    sbuf_printf(b, "%-*s  %-*s  %*s  %*s  %*s  %s\n", w[0], "run", w[1], "status", w[2], "updates",
                w[3], "final loss", w[4], "val loss", "diagnosis");
    for (int i = 0; i < s->nruns; i++) {
        const row_t *r = &rows[i];
        sbuf_printf(b, "%s%*s  %-*s  %*s  %*s  %*s  %s\n", s->runs[i].name,
                    w[0] - text_width(s->runs[i].name), "", w[1], r->status,
                    w[2], r->updates[0] ? r->updates : "-", w[3], r->loss[0] ? r->loss : "-",
                    w[4], r->val[0] ? r->val : "-", r->flags[0] ? r->flags : "-");
    }
    sbuf_printf(b, "final loss: the last validation loss, else the mean training loss of the "
                "last tenth of the updates, none when diverged (a probe: the loss at "
                "initialisation); val loss: the last validation loss; diagnosis: stability info "
                "RUN.h5\n");
}

/* Write text to path whole: a temporary beside it, renamed over it (only a regular file is
 * replaced). 0 or 1 (err). */
static int write_whole(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    if (fsutil_check_replaceable(path, err, errlen)) return 1;
    char tmp[1500];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    const int fd = fsutil_open_regular(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) { snprintf(err, errlen, "%s: cannot create", tmp); return 1; }
    size_t off = 0;
    while (off < len) {
        const ssize_t n = write(fd, text + off, len - off);
        if (n <= 0) break;
        off += (size_t)n;
    }
    const int bad = off < len || close(fd) != 0;
    if (bad || rename(tmp, path) != 0) {
        fsutil_unlink_regular(tmp);
        snprintf(err, errlen, "%s: cannot write", path);
        return 1;
    }
    return 0;
}

int sweep_summary(const sweep_t *s, const int *failed, int quiet)
{
    row_t *rows = calloc((size_t)s->nruns, sizeof *rows);
    if (!rows) return 1;
    for (int i = 0; i < s->nruns; i++) row_of(s, i, failed, &rows[i]);
    sbuf_t b = {0};
    table(s, rows, &b);
    free(rows);
    if (b.failed || !b.data) { sbuf_free(&b); return 1; }
    if (!quiet) {
        printf("\n%s", b.data);
        fflush(stdout);
    }
    char path[1200], err[1600];
    snprintf(path, sizeof path, "%s/summary.txt", s->results_dir);
    const int rc = write_whole(path, b.data, b.len, err, sizeof err);
    if (rc) fprintf(stderr, "stability: %s\n", err);
    else if (!quiet) printf("(this table: %s)\n", path);
    sbuf_free(&b);
    return rc;
}
