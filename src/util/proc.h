/* proc.h — child processes without a shell (docs/design.md §3): the arguments go to execvp as
 * they are, so a file name, a run name or a path is never read by a shell. */
#ifndef STABILITY_PROC_H
#define STABILITY_PROC_H

#include <stddef.h>

/* Where a child's standard streams go. */
typedef struct {
    const char *input;   /* written to its stdin, then closed (NULL: stdin is /dev/null) */
    int out_fd;          /* its stdout when >= 0 (e.g. a file; the child's write errors unseen) */
    int copy_fd;         /* else, when > 0: its stdout through a pipe, copied here by the
                            caller's process, every write checked (a figure: docs/design.md §6) */
    int *copy_errno;     /* ... the errno of the first failed copy write (0: none); may be NULL */
    char *out;           /* else, when not NULL: its stdout captured here, NUL-terminated ... */
    size_t outlen;       /* ... up to outlen − 1 bytes (the rest is read and dropped) */
    int quiet;           /* stderr to /dev/null (else inherited) */
} proc_io_t;

/* Run argv[0], looked up in PATH, with the arguments argv (NULL-terminated) and the streams of
 * io (NULL: stdin /dev/null, stdout and stderr inherited; out_fd −1 when unused); wait for it. Returns its wait status
 * (see waitpid; exit status 127 when it could not be executed), or −1 with errno when no
 * process could be started. */
int proc_run(const char *const argv[], const proc_io_t *io);

/* Run fn(arg, fd) in a child process (a fork, no exec) that writes its answer to fd and
 * returns its exit code; wait at most timeout seconds (> 0). The child's signal handlers are
 * reset to their defaults and it dies with this process. What a reader of an untrusted file
 * uses, so that a crash or a hang inside a library cannot take the caller with it (docs/design.md
 * §6). Returns the child's exit code (>= 0) with its answer in out (NUL-terminated, at most
 * outlen − 1 bytes kept), or −1 with why: "crashed (Segmentation fault)", "did not finish
 * within N s" (then it was killed), "interrupted (Interrupt)" or "cannot start a process". */
int proc_isolate(int (*fn)(void *arg, int fd), void *arg, double timeout, char *out,
                 size_t outlen, char *why, size_t whylen);

#endif
