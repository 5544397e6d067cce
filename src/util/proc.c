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
    else if (io && (io->out || io->copy_fd > 0)) dup2(out[1], STDOUT_FILENO);
    if (io && io->quiet && null >= 0) dup2(null, STDERR_FILENO);
    for (int k = 0; k < 2; k++) {
        if (in[k] >= 0) close(in[k]);
        if (out[k] >= 0) close(out[k]);
    }
    if (null > STDERR_FILENO) close(null);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* Feed input to in_fd (closed here when done) while draining out_fd: into out (outlen − 1
 * bytes kept, the rest dropped) or, when copy_fd > 0, into that file with every write checked
 * (*err: the first failure's errno; the rest is drained). Both at once, so that neither the
 * child nor we can block the other on a full pipe. */
static void pump(int in_fd, const char *input, int out_fd, char *out, size_t outlen, int copy_fd,
                 int *err)
{
    size_t left = input ? strlen(input) : 0, used = 0;
    if (in_fd >= 0) fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);
    if (in_fd >= 0 && left == 0) { close(in_fd); in_fd = -1; }
    while (in_fd >= 0 || out_fd >= 0) {
        struct pollfd p[2];
        int n = 0, pin = -1, pout = -1;
        if (in_fd >= 0) { p[n].fd = in_fd; p[n].events = POLLOUT; pin = n++; }
        if (out_fd >= 0) { p[n].fd = out_fd; p[n].events = POLLIN; pout = n++; }
        if (poll(p, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (pin >= 0 && p[pin].revents) {
            const ssize_t w = write(in_fd, input, left);
            if (w > 0) { input += w; left -= (size_t)w; }
            // done, or the child stopped reading (EPIPE: it reports its own error)
            if (left == 0 || (w < 0 && errno != EINTR && errno != EAGAIN)) { close(in_fd); in_fd = -1; }
        }
        if (pout >= 0 && p[pout].revents) {
            char buf[65536];
            const ssize_t r = read(out_fd, buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { out_fd = -1; continue; }
            for (ssize_t done = 0; copy_fd > 0 && !*err && done < r;) {
                const ssize_t w = write(copy_fd, buf + done, (size_t)(r - done));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) { *err = w < 0 ? errno : EIO; break; }
                done += w;
            }
            if (copy_fd <= 0 && out && used + 1 < outlen) {
                const size_t k = (size_t)r < outlen - 1 - used ? (size_t)r : outlen - 1 - used;
                memcpy(out + used, buf, k);
                used += k;
            }
        }
    }
    if (in_fd >= 0) close(in_fd);
    if (out && outlen) out[used] = '\0';
}

int proc_run(const char *const argv[], const proc_io_t *io)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, copy_err = 0;
    const int piped = io && io->out_fd < 0 && (io->out || io->copy_fd > 0);
    if ((io && io->input && pipe(in) != 0) || (piped && pipe(out) != 0)) {
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
    if (pid > 0 && (in[1] >= 0 || out[0] >= 0)) {
        // a child that exits early must not kill us with SIGPIPE
        struct sigaction ign, old;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ign, &old);
        pump(in[1], io->input, out[0], io->out, io->outlen, io->copy_fd, &copy_err);
        in[1] = -1;   // closed by pump
        sigaction(SIGPIPE, &old, NULL);
    }
    if (in[1] >= 0) close(in[1]);
    if (io && io->copy_errno) *io->copy_errno = copy_err;
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
