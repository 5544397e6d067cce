/* fsutil.c — file-system guards (fsutil.h). */
#define _GNU_SOURCE   /* fallocate, FALLOC_FL_* */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/fsutil.h"
#include "util/tmpfiles.h"

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

int fsutil_open_read(const char *path)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   // a FIFO: no waiting
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int dir = S_ISDIR(st.st_mode);
        close(fd);
        errno = dir ? EISDIR : EINVAL;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
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

/* "<path>.lock" into buf; −1 when it does not fit. */
static int lock_name(const char *path, char *buf, size_t len)
{
    const int n = snprintf(buf, len, "%s.lock", path);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int fsutil_claim(const char *path, const char *what, char *holder, size_t len)
{
    char lp[1200];
    holder[0] = '\0';
    if (lock_name(path, lp, sizeof lp)) { errno = ENAMETOOLONG; return -1; }
    for (int attempt = 0; attempt < 100; attempt++) {
        const int fd = fsutil_open_regular(lp, O_RDWR | O_CREAT, 0666);
        if (fd < 0) return -1;
        struct flock l = whole_file(F_WRLCK);
        if (fcntl(fd, F_OFD_SETLK, &l) != 0) {
            const int e = errno;
            // the holder writes who it is right after it locks: a claim that lost a race by
            // microseconds waits for that line (up to 1 s) rather than name no one
            ssize_t n = 0;
            for (int wait = 0; wait < 100; wait++) {
                n = pread(fd, holder, len > 1 ? len - 1 : 0, 0);
                if (n != 0) break;
                nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 10000000}, NULL);
            }
            close(fd);
            if (n > 0) {
                holder[n] = '\0';
                holder[strcspn(holder, "\n")] = '\0';
            } else {
                snprintf(holder, len, "another process (%s)", strerror(e));
            }
            errno = EWOULDBLOCK;
            return -1;
        }
        // the lock file may have been removed (by its last holder) between our open and our
        // lock: then the lock is on a file no one else sees; try again on the current one
        struct stat a, b;
        if (fstat(fd, &a) == 0 && lstat(lp, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            char host[256] = "?", text[600], when[32];
            gethostname(host, sizeof host - 1);
            const time_t now = time(NULL);
            struct tm tm;
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
            const int n = snprintf(text, sizeof text, "process %ld on %s (%s, since %s)\n",
                                   (long)getpid(), host, what, when);
            if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
                /* the claim holds without its description: the holder is then unnamed */
            }
            tmpfiles_add(lp);   // a signal that ends the process removes it too
            return fd;
        }
        close(fd);
    }
    errno = EAGAIN;
    return -1;
}

void fsutil_unclaim(const char *path, int fd)
{
    if (fd < 0) return;
    char lp[1200];
    struct stat a, b;
    // removed while held, and only if it is still ours (nobody can have claimed it meanwhile)
    if (!lock_name(path, lp, sizeof lp) && fstat(fd, &a) == 0 && lstat(lp, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlink(lp);
    tmpfiles_forget(lp);
    close(fd);
}

/* 1 when the regular file at p is a leftover we may remove: ours, empty or HDF5, unlocked. */
static int removable(const char *p)
{
    const int check_content = 1;
    struct stat st;
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) return 0;
    const int fd = fsutil_open_regular(p, O_RDONLY, 0);
    if (fd < 0) return 0;
    char sig[8] = {0};
    const ssize_t n = check_content ? pread(fd, sig, sizeof sig, 0) : 0;
    // a live writer holds it: HDF5 takes flock, our writers an fcntl lock
    int ok = !check_content || n == 0 || (n == 8 && !memcmp(sig, "\211HDF\r\n\032\n", 8));
    struct flock l = whole_file(F_WRLCK);
    if (ok && (fcntl(fd, F_OFD_GETLK, &l) != 0 || l.l_type != F_UNLCK)) ok = 0;
    if (ok && flock(fd, LOCK_EX | LOCK_NB) != 0) ok = 0;
    close(fd);
    return ok;
}

int fsutil_remove_stale(const char *path, int quiet)
{
    char dir[1200];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) + (slash == path), path);
    else snprintf(dir, sizeof dir, ".");
    const size_t blen = strlen(base);
    int removed = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    static const char *const KINDS[] = {".tmp.", ".resume.", ".checkpoint.tmp."};
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, base, blen)) continue;
        const char *rest = e->d_name + blen, *pid = NULL;
        for (int k = 0; k < 3 && !pid; k++)
            if (!strncmp(rest, KINDS[k], strlen(KINDS[k]))) pid = rest + strlen(KINDS[k]);
        char *end;
        const long p = pid ? strtol(pid, &end, 10) : 0;
        if (!pid || !*pid || *end || p <= 0 || p == (long)getpid()) continue;
        if (kill((pid_t)p, 0) == 0 || errno == EPERM) continue;   // its process is alive
        char full[2400];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (!removable(full) || unlink(full) != 0) continue;
        removed++;
        if (!quiet) fprintf(stderr, "stability: removed %s (left by process %ld, which is gone)\n", full, p);
    }
    closedir(d);
    return removed;
}
