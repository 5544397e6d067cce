/* h5io_guard.c — what keeps a training file whole (docs/design.md §6): the lock its writer
 * holds, which every other writer respects, and disk space reserved before its writes.
 *
 * Locks. HDF5 drops its own file lock when SWMR writing starts, so the training writer holds a
 * shared flock on its file (readers, HDF5 and h5py, take flock locks too) and a shared
 * open-file-description fcntl lock, which readers never take: resume and overwrite refuse a
 * file with either (a live run or an open reader), while probe, dump and merge (h5io_create,
 * h5io_commit) refuse only a live writer's file and may replace a file someone reads.
 *
 * Space. A write that fails half-way through an HDF5 flush can leave metadata that points at
 * data never written (rows of zeros, a checkpoint marked complete over a torn state); a
 * reservation that fails leaves the file exactly as at its last flush, and the run ends there
 * cleanly. Where the file system cannot reserve (no fallocate), writes go ahead unreserved. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/h5io_internal.h"
#include "util/fsutil.h"

int h5io_in_use(const char *path)
{
    const int fd = fsutil_open_regular(path, O_RDONLY, 0);
    if (fd < 0) return 0;
    const int busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return busy || fsutil_is_busy(path);
}

int h5io_lock_hold(const char *path)
{
    const int fd = fsutil_open_regular(path, O_RDONLY, 0);
    if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0) {
        close(fd);
        return -1;
    }
    if (fd >= 0) fsutil_mark_busy(fd);
    return fd;
}

int h5io_same_file(int fd, const char *path)
{
    struct stat a, b;
    if (fd < 0) return 1;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int h5io_space_reserve(hid_t file, size_t bytes)
{
    int *handle = NULL;
    hsize_t size = 0;
    struct stat st;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&handle) < 0 || !handle ||
        H5Fget_filesize(file, &size) < 0 || fstat(*handle, &st) != 0) {
        errno = EIO;
        return -1;
    }
    // from the end of what is on disk to past the end of what HDF5 has allocated (its EOA)
    const off_t from = st.st_size;
    const off_t to = ((off_t)size > from ? (off_t)size : from) + (off_t)bytes;
    // `ulimit -f`: fallocate does not check it; the write past it would fail half-way (EFBIG)
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && (rlim_t)to > lim.rlim_cur) {
        errno = EFBIG;
        return -1;
    }
    return fsutil_reserve(*handle, from, to - from);
}

void h5io_space_release(const char *path)
{
    const int fd = fsutil_open_regular(path, O_WRONLY, 0);
    if (fd < 0) return;
    fsutil_release(fd);
    close(fd);
}

int h5io_sync(hid_t file)
{
    int *handle = NULL;
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 ||
        H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&handle) < 0 || !handle)
        return -1;
    return fsync(*handle);
}

int h5io_create_empty(const char *path, char *err, size_t errlen)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 && close(fd) == 0) return 0;
    snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    if (fd >= 0) unlink(path);
    return 1;
}

int h5io_claim(const char *path, const char *what, char *err, size_t errlen)
{
    char holder[600];
    if (h5io_make_parent_dirs(path) != 0) {
        snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
        return -1;
    }
    const int fd = fsutil_claim(path, what, holder, sizeof holder);
    if (fd < 0) {
        if (holder[0]) snprintf(err, errlen, "%s: in use by %s", path, holder);
        else snprintf(err, errlen, "%s: cannot create %s.lock: %s", path, path, strerror(errno));
        return -1;
    }
    if (fsutil_is_busy(path)) {   // a live training run of a build before claims
        snprintf(err, errlen, "%s: in use by a running training run", path);
        fsutil_unclaim(path, fd);
        return -1;
    }
    fsutil_remove_stale(path, 0);   // what killed processes left beside it
    return fd;
}

void h5io_unclaim(const char *path, int fd)
{
    if (fd > 0) fsutil_unclaim(path, fd);
}
