/* fsutil.h — file-system guards shared by every writer (docs/design.md §6): only a regular file
 * (or nothing) may ever be replaced, truncated or unlinked, and a reader never opens a FIFO or a
 * device (it would block or consume it). Also disk-space reservation, so that a full disk is
 * seen before a write starts instead of half-way through one.
 */
#ifndef STABILITY_FSUTIL_H
#define STABILITY_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when path does not exist or is a regular file (lstat: a symbolic link is not one); 2 with
 * err "PATH: is a KIND; only a regular file may be replaced" otherwise; 1 if lstat fails. */
int fsutil_check_replaceable(const char *path, char *err, size_t errlen);

/* What path is, for messages: "symbolic link", "directory", "FIFO", "character device", ...,
 * "regular file", or "missing". Does not follow a final symbolic link. */
const char *fsutil_kind(const char *path);

/* 1 when path (following links) is a regular file, 0 otherwise (missing, FIFO, device, ...). */
int fsutil_is_regular(const char *path);

/* open(2) with O_NOFOLLOW and O_CLOEXEC that returns only a regular file: −1 with errno ELOOP
 * for a symbolic link and EINVAL for anything else that is not a regular file (a FIFO is never
 * waited for). flags as for open(2); mode for O_CREAT. */
int fsutil_open_regular(const char *path, int flags, mode_t mode);

/* Open path for reading only if it is a regular file, following symbolic links (a reader may
 * read through a link): a FIFO is never waited for and a device never consumed (docs/design.md
 * §6). The fd (O_CLOEXEC), or −1 with errno (EISDIR: a directory, EINVAL: a FIFO, a device,
 * a socket: "not a regular file"). */
int fsutil_open_read(const char *path);

/* Unlink path if it is a regular file (never a link, FIFO, device or directory). 0 or −1. */
int fsutil_unlink_regular(const char *path);

/* The lock a live writer holds on its file (docs/design.md §6): a shared open-file-description
 * lock (fcntl F_OFD_SETLK) on fd, which readers (HDF5 takes flock locks) never hold, so a writer
 * can be told from a reader. Returns 0 or −1 with errno. */
int fsutil_mark_busy(int fd);

/* 1 when some process holds the lock of fsutil_mark_busy (or any fcntl lock) on path. */
int fsutil_is_busy(const char *path);

/* Take an exclusive fcntl lock on the regular file path (held until *fd is closed), so that no
 * writer can mark it busy meanwhile. Returns 0 (*fd = −1 when path is missing or cannot be
 * opened for writing), or −1 when a writer holds it (*fd = −1). */
int fsutil_lock_exclusive(const char *path, int *fd);

/* Claim path for writing before anything is created or replaced (docs/design.md §6): an
 * exclusive lock on "<path>.lock" (made if missing; never a link, FIFO or device), which then
 * names the holder: "process PID on HOST (WHAT, since TIME)". Another claim of path fails at
 * once. Returns the fd of the claim (hold it open until the file is complete), or −1 with
 * holder set to the holder's description ("" when the lock file could not be made: errno). */
int fsutil_claim(const char *path, const char *what, char *holder, size_t len);

/* Give up the claim of path (removes "<path>.lock" while still holding it). fd < 0: nothing. */
void fsutil_unclaim(const char *path, int fd);

/* Remove leftovers of processes that are gone from beside path: "<path>.tmp.PID",
 * "<path>.resume.PID", "<path>.checkpoint.tmp.PID" (only this user's regular files, empty or
 * HDF5, whose PID is not alive and which no process holds locked). Says what it removed on
 * stderr unless quiet. Returns how many. */
int fsutil_remove_stale(const char *path, int quiet);

/* Reserve the disk blocks of [offset, offset + len) of fd without changing its size (Linux
 * fallocate, FALLOC_FL_KEEP_SIZE). Returns 0 (also where the file system cannot reserve), or
 * −1 with errno (ENOSPC: the disk is full). */
int fsutil_reserve(int fd, off_t offset, off_t len);

/* Give back the blocks fsutil_reserve kept beyond the end of fd's file. */
void fsutil_release(int fd);

#endif
