/* h5io_journal.c — the checkpoint journal: <file>.checkpoint, so that the last good checkpoint
 * survives any interruption of the next one (docs/design.md §6). A training file's /checkpoint
 * is overwritten in place (SWMR writing cannot create objects), and a second Ctrl-C or a SIGKILL
 * after SIGTERM (the OOM killer, Slurm's KillWait) could stop that write half-way. So a
 * checkpoint is first written whole to <file>.checkpoint.tmp.<pid>, flushed to disk and renamed
 * to <file>.checkpoint; then the file's own /checkpoint is rewritten, flushed, and the journal
 * removed. At every moment one of the two is complete, and --resume takes the newer complete
 * one (a write-ahead journal, as databases keep). The journal names its file by the file's
 * root attributes config and created, so a journal left by another run is never taken. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/h5io_internal.h"
#include "util/fsutil.h"
#include "util/tmpfiles.h"

#define JOURNAL_SLACK ((size_t)256 << 10)   /* HDF5's metadata beside the state */

void h5io_journal_path(const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "%s.checkpoint", path);
}

void h5io_test_hook(const char *where)
{
    // STABILITY_KILL_IN=WHERE:N: SIGKILL at the N-th time the program passes WHERE (tests)
    static int count = 0;
    const char *want = getenv("STABILITY_KILL_IN");
    const size_t n = strlen(where);
    if (!want || strncmp(want, where, n) || want[n] != ':') return;
    if (++count == atoi(want + n + 1)) raise(SIGKILL);
}

/* fsync the regular file at path: its data reach the disk before the rename that publishes it. */
static int sync_file(const char *path)
{
    const int fd = fsutil_open_regular(path, O_RDONLY, 0);
    if (fd < 0) return -1;
    const int rc = fsync(fd);
    close(fd);
    return rc;
}

int h5io_journal_write(const char *path, const char *config, const char *created,
                       const train_t *t, char *why, size_t len)
{
    char jp[H5IO_PATH_MAX + 16], tmp[H5IO_PATH_MAX + 48];
    h5io_journal_path(path, jp, sizeof jp);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", jp, (long)getpid());
    // a link, FIFO or directory there is not a full disk: 2, said as what it is
    int rc = fsutil_check_replaceable(jp, why, len);
    if (!rc) rc = fsutil_check_replaceable(tmp, why, len);
    if (rc) return rc;
    tmpfiles_add(tmp);   // removed if a signal ends the process meanwhile
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);   // checksummed headers
    h5io_file_t f = {.id = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)};
    H5Pclose(fapl);
    snprintf(f.path, sizeof f.path, "%.*s", (int)sizeof f.path - 1, tmp);
    // the journal's bytes reserved before they are written: on a full disk HDF5 can lose a
    // chunk of raw data without an error (it then reads back as zeros, checksum and all), so
    // a journal that would not fit is refused whole instead of written short
    rc = f.id < 0 || h5io_space_reserve(f.id, JOURNAL_SLACK + h5io_checkpoint_bytes(t)) ||
             h5io_checkpoint_create(&f, t) ||
             h5io_write_attr_string(&f, "/", "config", config) ||
             h5io_write_attr_string(&f, "/", "created", created) ||
             h5io_write_attr_string(&f, "/", "description", "the checkpoint journal of the "
                                    "training file beside it (docs/design.md §6)") ||
             h5io_checkpoint_write(&f, t);
    if (f.id >= 0 && H5Fclose(f.id) < 0) rc = 1;
    const int e = errno;
    if (!rc) h5io_space_release(tmp);   // what the reservation left past the end
    if (!rc && (sync_file(tmp) != 0 || rename(tmp, jp) != 0)) rc = 1;
    if (rc) {
        snprintf(why, len, "%s: cannot write the checkpoint journal: %s", tmp, strerror(e ? e : errno));
        fsutil_unlink_regular(tmp);
    }
    tmpfiles_forget(tmp);
    return rc;
}

int h5io_journal_check(const char *path, char *err, size_t errlen)
{
    char jp[H5IO_PATH_MAX + 16];
    h5io_journal_path(path, jp, sizeof jp);
    return fsutil_check_replaceable(jp, err, errlen);
}

void h5io_journal_remove(const char *path)
{
    char jp[H5IO_PATH_MAX + 16];
    h5io_journal_path(path, jp, sizeof jp);
    fsutil_unlink_regular(jp);
}

long h5io_journal_step(const char *path, const char *config, const char *created, char *why,
                       size_t len)
{
    char jp[H5IO_PATH_MAX + 16], err[800];
    h5io_journal_path(path, jp, sizeof jp);
    snprintf(why, len, "none");
    if (access(jp, F_OK) != 0) return -1;
    h5io_file_t *f;
    if (h5io_open_verified(&f, jp, H5IO_VERIFY_CHECKPOINT, err, sizeof err)) {
        snprintf(why, len, "%s", err);
        return -1;
    }
    char *c = h5io_read_attr_string(f, "/", "config"), *at = h5io_read_attr_string(f, "/", "created");
    long step = -1;
    if (!c || !at || !config || !created || strcmp(c, config) || strcmp(at, created))
        snprintf(why, len, "%s: the journal of another run (ignored)", jp);
    else if ((step = h5io_checkpoint_step(f)) < 0)
        snprintf(why, len, "%s", h5io_error(f) ? h5io_error(f) : "no complete checkpoint in the journal");
    free(c);
    free(at);
    h5io_close(f);
    return step;
}

int h5io_journal_load(const char *path, train_t *t, char *why, size_t len)
{
    char jp[H5IO_PATH_MAX + 16];
    h5io_journal_path(path, jp, sizeof jp);
    h5io_file_t *f;
    if (h5io_open_verified(&f, jp, H5IO_VERIFY_CHECKPOINT, why, len)) return 1;
    const int rc = h5io_checkpoint_load(f, t, why, len);
    h5io_close(f);
    return rc;
}
