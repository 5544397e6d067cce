/* fsutil.c — file-system guards (fsutil.h). */
#define _GNU_SOURCE   /* fallocate, FALLOC_FL_* */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/fsutil.h"

static const char *mode_kind(mode_t m)
{
    if (S_ISREG(m)) return "regular file";
    if (S_ISLNK(m)) return "symbolic link";
    if (S_ISDIR(m)) return "directory";
    if (S_ISFIFO(m)) return "FIFO";
    if (S_ISCHR(m)) return "character device";
    if (S_ISBLK(m)) return "block device";
    if (S_ISSOCK(m)) return "socket";
    return "special file";
}

const char *fsutil_kind(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return "missing";
    return mode_kind(st.st_mode);
}

int fsutil_check_replaceable(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return 1;
    }
    if (S_ISREG(st.st_mode)) return 0;
    snprintf(err, errlen, "%s: is a %s; only a regular file may be replaced", path,
             mode_kind(st.st_mode));
    return 2;
}

int fsutil_is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int fsutil_open_regular(const char *path, int flags, mode_t mode)
{
    // O_NONBLOCK: opening a FIFO must not wait for its other end; cleared again below
    const int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int fsutil_unlink_regular(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    if (!S_ISREG(st.st_mode)) {
        errno = EPERM;
        return -1;
    }
    return unlink(path);
}

/* An fcntl lock over the whole file. */
static struct flock whole_file(short type)
{
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = type;
    l.l_whence = SEEK_SET;
    return l;   // l_start = l_len = 0: every byte, also those appended later
}

int fsutil_mark_busy(int fd)
{
    struct flock l = whole_file(F_RDLCK);
    return fcntl(fd, F_OFD_SETLK, &l);
}

int fsutil_is_busy(const char *path)
{
    const int fd = fsutil_open_regular(path, O_RDONLY, 0);
    if (fd < 0) return 0;
    struct flock l = whole_file(F_WRLCK);
    const int busy = fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
    close(fd);
    return busy;
}

int fsutil_lock_exclusive(const char *path, int *fd)
{
    *fd = fsutil_open_regular(path, O_RDWR, 0);
    if (*fd < 0) return fsutil_is_busy(path) ? -1 : 0;   // missing, or read-only: look only
    struct flock l = whole_file(F_WRLCK);
    if (fcntl(*fd, F_OFD_SETLK, &l) == 0) return 0;
    close(*fd);
    *fd = -1;
    return -1;
}

int fsutil_reserve(int fd, off_t offset, off_t len)
{
    if (len <= 0) return 0;
    if (fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, len) == 0) return 0;
    // file systems without fallocate (some network and FUSE ones): nothing to reserve with
    if (errno == EOPNOTSUPP || errno == ENOSYS) return 0;
    return -1;
}

void fsutil_release(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    // blocks past the end of the file (what FALLOC_FL_KEEP_SIZE reserved and nothing used):
    // truncating to the same size frees them on ext4 and tmpfs, punching a hole elsewhere
    if (ftruncate(fd, st.st_size) != 0) { /* nothing more to do: the blocks stay reserved */ }
    (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size, (off_t)1 << 40);
}
