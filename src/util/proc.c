/* proc.c — child processes without a shell (proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/proc.h"

/* In the child: stdin, stdout and stderr as io says, then exec; never returns. */
static void child(const char *const argv[], const proc_io_t *io, const int in[2], const int out[2])
{
    const int null = open("/dev/null", O_RDWR);
    if (io && io->input) dup2(in[0], STDIN_FILENO);
    else if (null >= 0) dup2(null, STDIN_FILENO);
    if (io && io->out_fd >= 0) dup2(io->out_fd, STDOUT_FILENO);
    else if (io && io->out) dup2(out[1], STDOUT_FILENO);
    if (io && io->quiet && null >= 0) dup2(null, STDERR_FILENO);
    for (int k = 0; k < 2; k++) {
        if (in[k] >= 0) close(in[k]);
        if (out[k] >= 0) close(out[k]);
    }
    if (null > STDERR_FILENO) close(null);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* Write all of text to fd (EPIPE when the child has exited: it reports its own error). */
static void write_all(int fd, const char *text)
{
    size_t left = strlen(text);
    while (left > 0) {
        const ssize_t n = write(fd, text, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        left -= (size_t)n;
    }
}

/* Read fd to its end into out (outlen − 1 bytes kept). */
static void read_all(int fd, char *out, size_t outlen)
{
    size_t used = 0;
    char drop[512];
    for (;;) {
        char *dst = used + 1 < outlen ? out + used : drop;
        const size_t room = used + 1 < outlen ? outlen - 1 - used : sizeof drop;
        const ssize_t n = read(fd, dst, room);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (dst != drop) used += (size_t)n;
    }
    if (outlen) out[used] = '\0';
}

int proc_run(const char *const argv[], const proc_io_t *io)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if ((io && io->input && pipe(in) != 0) || (io && io->out_fd < 0 && io->out && pipe(out) != 0)) {
        const int e = errno;
        for (int k = 0; k < 2; k++) {
            if (in[k] >= 0) close(in[k]);
            if (out[k] >= 0) close(out[k]);
        }
        errno = e;
        return -1;
    }
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) child(argv, io, in, out);
    const int e = errno;
    if (in[0] >= 0) close(in[0]);
    if (out[1] >= 0) close(out[1]);
    if (pid > 0 && in[1] >= 0) {
        // a child that exits early must not kill us with SIGPIPE
        struct sigaction ign, old;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ign, &old);
        write_all(in[1], io->input);
        sigaction(SIGPIPE, &old, NULL);
    }
    if (in[1] >= 0) close(in[1]);
    if (pid > 0 && out[0] >= 0) read_all(out[0], io->out, io->outlen);
    if (out[0] >= 0) close(out[0]);
    if (pid < 0) {
        errno = e;
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

/* In an isolated child: every caught signal back to its default action (the parent's handlers
 * would remove the parent's temporaries or count its stops), and death with the parent. */
static void isolate_child_signals(void)
{
    for (int sig = 1; sig < 32; sig++) {
        struct sigaction old;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &old) != 0) continue;
        if (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL) signal(sig, SIG_DFL);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Why a child ended by signal sig: a crash, or a stop from outside. */
static void signal_why(int sig, char *why, size_t whylen)
{
    const int crash = sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGFPE ||
                      sig == SIGILL || sig == SIGTRAP || sig == SIGSYS;
    snprintf(why, whylen, "%s (%s)", crash ? "crashed" : "interrupted", strsignal(sig));
}

int proc_isolate(int (*fn)(void *arg, int fd), void *arg, double timeout, char *out,
                 size_t outlen, char *why, size_t whylen)
{
    int fds[2];
    if (outlen) out[0] = '\0';
    if (pipe(fds) != 0) { snprintf(why, whylen, "cannot start a process: %s", strerror(errno)); return -1; }
    fflush(NULL);
    const pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "cannot start a process: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        isolate_child_signals();
        if (getppid() != parent) _exit(125);
        _exit(fn(arg, fds[1]) & 0x7f);   // _exit: no atexit handler, no stdio flush of the parent's
    }
    close(fds[1]);
    // read the answer until the child closes the pipe or the time is up
    const double deadline = monotonic() + timeout;
    size_t used = 0;
    int timed_out = 0;
    for (;;) {
        const double left = deadline - monotonic();
        if (left <= 0) { timed_out = 1; break; }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        const int r = poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        char drop[4096];
        char *dst = used + 1 < outlen ? out + used : drop;
        const size_t room = used + 1 < outlen ? outlen - 1 - used : sizeof drop;
        const ssize_t n = read(fds[0], dst, room);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (dst != drop) used += (size_t)n;
    }
    close(fds[0]);
    if (outlen) out[used] = '\0';
    int status = 0;
    if (timed_out) kill(pid, SIGKILL);
    // the pipe closed: the child is ending; a child that closed it early gets the rest of the time
    while (!timed_out) {
        const pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) { status = 0; break; }
        if (monotonic() >= deadline) { timed_out = 1; kill(pid, SIGKILL); break; }
        const struct timespec nap = {0, 2 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (timed_out) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        snprintf(why, whylen, "did not finish within %.0f s", timeout);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        signal_why(WTERMSIG(status), why, whylen);
        return -1;
    }
    return WEXITSTATUS(status);
}
