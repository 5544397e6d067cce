/* proc.h — child processes without a shell (docs/design.md §3): the arguments go to execvp as
 * they are, so a file name, a run name or a path is never read by a shell. */
#ifndef STABILITY_PROC_H
#define STABILITY_PROC_H

#include <stddef.h>

/* Where a child's standard streams go. */
typedef struct {
    const char *input;   /* written to its stdin, then closed (NULL: stdin is /dev/null) */
    int out_fd;          /* its stdout when >= 0 (e.g. the file a figure goes to) */
    char *out;           /* else, when not NULL: its stdout captured here, NUL-terminated ... */
    size_t outlen;       /* ... up to outlen − 1 bytes (the rest is read and dropped) */
    int quiet;           /* stderr to /dev/null (else inherited) */
} proc_io_t;

/* Run argv[0], looked up in PATH, with the arguments argv (NULL-terminated) and the streams of
 * io (NULL: stdin /dev/null, stdout and stderr inherited); wait for it. Returns its wait status
 * (see waitpid; exit status 127 when it could not be executed), or −1 with errno when no
 * process could be started. */
int proc_run(const char *const argv[], const proc_io_t *io);

#endif
