/* sweep_dir.c — where a sweep writes (docs/design.md §3): results/<sweep>/ is made, belongs to
 * one sweep file (its .sweep names it: a sweep of the same name elsewhere refuses instead of
 * calling the other's runs stale and redoing them) and to one family of OpenBLAS kernels (its
 * .blas_core, docs/design.md §7), and is locked while a sweep works in it; results/<sweep>.h5
 * is replaced only when it is this sweep's merged file. */
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "sweep/sweep.h"
#include "io/h5io.h"
#include "util/blascore.h"
#include "util/fsutil.h"

int sweep_make_dir(const sweep_t *s)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s->results_dir);
    for (char *p = buf + 1;; p++) {
        const char c = *p;
        if (c == '/' || c == '\0') {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            if (c == '\0') return 0;
            *p = '/';
        }
    }
}

/* 1 when paths a and b name the same existing file. */
static int same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The part of path after root + "/" (the sweep file's place in its project), or NULL when
 * path is not inside root. */
static const char *under(const char *path, const char *root)
{
    const size_t n = strlen(root);
    return root[0] && !strncmp(path, root, n) && path[n] == '/' ? path + n + 1 : NULL;
}

/* Whether the owner recorded in .sweep (text: its sweep file, then the project folder that held
 * results/ then) is the sweep file mine of the project here: the project moved or copied whole
 * (a copy's .sweep still names the original, which exists; it refused). */
static int same_in_project(const char *text, const char *mine)
{
    char here[PATH_MAX];
    const char *nl = strchr(text, '\n');
    if (!nl || !realpath(".", here)) return 0;   // a .sweep of one line: a build before this
    char root[PATH_MAX + 2];
    snprintf(root, sizeof root, "%s", nl + 1);
    root[strcspn(root, "\n")] = '\0';
    char theirs[PATH_MAX + 2];
    snprintf(theirs, sizeof theirs, "%.*s", (int)(nl - text), text);
    const char *a = under(theirs, root), *b = under(mine, here);
    return a && b && !strcmp(a, b);
}

int sweep_own_dir(const sweep_t *s, char *err, size_t errlen)
{
    char owner[1100], mine[PATH_MAX], theirs[2 * PATH_MAX + 4] = "", here[PATH_MAX] = "";
    snprintf(owner, sizeof owner, "%s/.sweep", s->results_dir);
    if (!realpath(s->path, mine) || !realpath(".", here)) {
        snprintf(err, errlen, "stability: %s: %s", s->path, strerror(errno));
        return 2;
    }
    if (sweep_make_dir(s) != 0) {
        snprintf(err, errlen, "stability: %s: cannot create: %s", s->results_dir, strerror(errno));
        return 1;
    }
    const int fd = fsutil_open_regular(owner, O_RDONLY, 0);
    if (fd >= 0) {
        const ssize_t n = read(fd, theirs, sizeof theirs - 1);
        close(fd);
        theirs[n > 0 ? n : 0] = '\0';
        const int moved = same_in_project(theirs, mine);
        theirs[strcspn(theirs, "\n")] = '\0';
        if (!strcmp(theirs, mine)) return 0;
        // another sweep file of the same name that still exists: its runs are not ours to redo
        if (theirs[0] && !moved && !same_file(theirs, mine) && access(theirs, F_OK) == 0) {
            snprintf(err, errlen, "stability: %s/ holds the runs of the sweep %s; this sweep file "
                     "(%s) has the same name: rename one of them (or remove %s to hand the folder "
                     "over)", s->results_dir, theirs, mine, owner);
            return 2;
        }
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "stability: %s: not a regular file", owner);
        return 2;
    }
    // ours from now on (a folder of a build before this, or its sweep file moved): write, rename
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", owner, (long)getpid());
    FILE *f = fopen(tmp, "wx");
    const int ok = f && fprintf(f, "%s\n%s\n", mine, here) > 0;   // the file, its project
    if ((f && fclose(f) != 0) || !ok || rename(tmp, owner) != 0) {
        snprintf(err, errlen, "stability: %s: cannot write: %s", owner, strerror(errno));
        unlink(tmp);
        return 1;
    }
    return 0;
}

int sweep_merged_ours(const sweep_t *s, char *err, size_t errlen)
{
    char why[1200];
    if (fsutil_check_replaceable(s->merged_path, why, sizeof why)) {   // a FIFO, a link, ...
        snprintf(err, errlen, "stability: %s", why);
        return 1;
    }
    h5io_summary_t sum;
    if (h5io_summarize(s->merged_path, 0, &sum)) {
        if (access(s->merged_path, F_OK) != 0) return 0;   // none yet
        snprintf(err, errlen, "stability: %s: %s; not replaced (move it away, or --force)",
                 s->merged_path, sum.damaged[0] ? sum.damaged : "unreadable");
        return 1;
    }
    int rc = 0;
    if (strcmp(sum.kind, "merged")) {
        snprintf(err, errlen, "stability: %s is %s%s file (status %s), not a merged sweep file: "
                 "not replaced (move it away, or --force)", s->merged_path,
                 sum.kind[0] ? "a " : "another ", sum.kind[0] ? sum.kind : "program's",
                 sum.status ? sum.status : "?");
        rc = 1;
    } else if (sum.sweep_file && access(sum.sweep_file, F_OK) == 0 &&
               !same_file(sum.sweep_file, s->path)) {
        snprintf(err, errlen, "stability: %s is the merged file of the sweep %s, not of %s: not "
                 "replaced (rename one of the sweeps, or --force)", s->merged_path, sum.sweep_file,
                 s->path);
        rc = 1;
    }
    h5io_summary_free(&sum);
    return rc;
}

/* The family name in path (one line of letters and digits) into buf: 0, −1 with errno when
 * it cannot be read (ENOENT: none yet), −2 when it holds something else. */
static int read_family(const char *path, char *buf, size_t len)
{
    const int fd = fsutil_open_regular(path, O_RDONLY, 0);
    if (fd < 0) return -1;
    const ssize_t n = read(fd, buf, len - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (!buf[0]) return -2;
    for (const char *p = buf; *p; p++)
        if (!(*p >= 'A' && *p <= 'Z') && !(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9'))
            return -2;
    return 0;
}

int sweep_kernels(const sweep_t *s, char *err, size_t errlen)
{
    char path[1100], family[64], why[400];
    snprintf(path, sizeof path, "%s/.blas_core", s->results_dir);
    int got = read_family(path, family, sizeof family);
    if (got == -1 && errno == ENOENT) {   // the sweep's first run: its kernels are the sweep's
        char tmp[1200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "wx");
        const int ok = f && fprintf(f, "%s\n", blascore_name()) > 0;
        // link: of two first tasks at once, one record wins and the other follows it
        if ((f && fclose(f) != 0) || !ok ||
            (link(tmp, path) != 0 && errno != EEXIST && rename(tmp, path) != 0)) {
            snprintf(err, errlen, "stability: %s: cannot write: %s", path, strerror(errno));
            unlink(tmp);
            return 1;
        }
        unlink(tmp);
        got = read_family(path, family, sizeof family);
    }
    if (got) {
        snprintf(err, errlen, "stability: %s: %s", path, got == -2 ? "not the name of a kernel "
                 "family (move it away to record this machine's)" : strerror(errno));
        return got == -2 ? 2 : 1;
    }
    if (blascore_require(family, why, sizeof why) == 0) return 0;
    snprintf(err, errlen, "stability: %s/ was started with OpenBLAS's %s kernels (%s), and only "
             "they continue its runs bit for bit: %s; or move %s/ away to start the sweep over "
             "with this machine's (%s)", s->results_dir, family, path, why, s->results_dir,
             blascore_name());
    return 2;
}

int sweep_lock(const sweep_t *s, int exclusive)
{
    char path[1100], err[2600];
    snprintf(path, sizeof path, "%s/.lock", s->results_dir);
    const int own = sweep_own_dir(s, err, sizeof err);
    if (own) {
        fprintf(stderr, "%s\n", err);
        return own == 2 ? -2 : -1;
    }
    const int fd = fsutil_open_regular(path, O_RDWR | O_CREAT, 0666);   // O_CLOEXEC: not the runs'
    if (fd < 0) {
        fprintf(stderr, "stability: %s: %s\n", path, errno == ELOOP || errno == EINVAL
                ? "not a regular file" : strerror(errno));
        return -1;
    }
    if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        // a local sweep wrote "PID HOST TIME" when it took the lock: name it if it is alive
        char who[300] = "", host[256] = "?", mine[256] = "";
        long pid = 0;
        const ssize_t n = pread(fd, who, sizeof who - 1, 0);
        who[n > 0 ? n : 0] = '\0';
        gethostname(mine, sizeof mine - 1);
        char named[400] = "";
        if (sscanf(who, "%ld %255s", &pid, host) == 2 && pid > 0 &&
            (strcmp(host, mine) || kill((pid_t)pid, 0) == 0))
            snprintf(named, sizeof named, " (process %ld on %s)", pid, host);
        fprintf(stderr, "stability: %s: another `stability sweep %s`%s is running here (%s is "
                "locked); wait for it, or stop it\n", s->results_dir, s->path, named, path);
        close(fd);
        return -1;
    }
    if (exclusive) {
        char text[400], host[256] = "?";
        gethostname(host, sizeof host - 1);
        const int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
        if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) { /* unnamed then */ }
    }
    return fd;
}
