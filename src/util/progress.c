/* progress.c — terminal progress bar "label [#####.....] 42% 12/30  ETA 0:31", and the channel
 * to a parent sweep (progress.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/progress.h"
#include "util/threads.h"

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void progress_start(progress_t *p, const char *label, int quiet)
{
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->start = progress_now();
    p->last = 0.0;
    p->sent = 0.0;
    p->first = 0;
    snprintf(p->label, sizeof p->label, "%s", label);
}

void progress_set_first(progress_t *p, long first)
{
    p->first = first;
}

void progress_duration(char *buf, unsigned long len, double s)
{
    const long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void progress_update(progress_t *p, long done, long total, const char *extra)
{
    progress_update_units(p, done, total, done, total, extra);
}

void progress_update_units(progress_t *p, long done, long total, long units_done,
                           long units_total, const char *extra)
{
    if (total <= 0) return;
    const double now = progress_now();
    if (progress_channel_active() && (done >= total || now - p->sent >= 0.25)) {
        char line[64];
        snprintf(line, sizeof line, "%ld %ld", units_done, units_total);
        progress_channel_send('P', line);
        p->sent = now;
    }
    if (!p->enabled) return;
    if (done < total && now - p->last < 0.1) return;
    p->last = now;
    const int width = 30;
    const double frac = (double)done / total;
    const int filled = (int)(frac * width);
    char bar[64], eta[32] = "--:--", el[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    const double elapsed = now - p->start;
    if (done > p->first)
        progress_duration(eta, sizeof eta, elapsed / (double)(done - p->first) * (double)(total - done));
    progress_duration(el, sizeof el, elapsed);
    fprintf(stderr, "\r%s [%s] %3.0f%% %ld/%ld  %s ETA %s%s%s\033[K", p->label, bar, 100 * frac,
            done, total, el, eta, extra ? "  " : "", extra ? extra : "");
    fflush(stderr);
}

void progress_end(progress_t *p)
{
    if (p->enabled) fputc('\n', stderr);
}

void progress_clear(progress_t *p)
{
    if (p->enabled) fputs("\r\033[K", stderr);
}

void progress_callback(void *ctx, long done, long total)
{
    progress_update((progress_t *)ctx, done, total, NULL);
}

/* ---------------------------------------------------------------- the channel to a sweep */

static int channel = -1;           /* the socket, or −1 */
static double channel_polled;      /* last read of the socket */

void progress_channel_open(void)
{
    const char *s = getenv("STABILITY_SWEEP_FD");
    if (!s) return;
    char *end;
    const long fd = strtol(s, &end, 10);
    struct stat st;
    int type = 0;
    socklen_t len = sizeof type;
    const int ok = *s && !*end && fd > 2 && fd < 1024 && fstat((int)fd, &st) == 0 &&
                   S_ISSOCK(st.st_mode) && getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
                   type == SOCK_SEQPACKET;
    unsetenv("STABILITY_SWEEP_FD");   // the run's own children (gnuplot, the BLEU scorer) are not runs
    if (!ok) return;
    channel = (int)fd;
    fcntl(channel, F_SETFD, FD_CLOEXEC);
}

int progress_channel_active(void)
{
    return channel >= 0;
}

void progress_channel_send(char kind, const char *text)
{
    if (channel < 0) return;
    char line[PROGRESS_LINE_MAX];
    const int n = snprintf(line, sizeof line, "%c %s", kind, text);
    const size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
    // a packet socket: each line is one record, sent whole or (buffer full, sweep gone) not at all
    (void)send(channel, line, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int progress_channel_threads(void)
{
    if (channel < 0) return 0;
    const double now = progress_now();
    if (now - channel_polled < 0.05) return 0;
    channel_polled = now;
    int threads = 0;
    char msg[64];
    ssize_t n;
    while ((n = recv(channel, msg, sizeof msg - 1, MSG_DONTWAIT)) > 0) {
        msg[n] = '\0';
        char *end;
        const long t = msg[0] == 'T' && msg[1] == ' ' ? strtol(msg + 2, &end, 10) : 0;
        if (t >= 1 && t <= THREADS_ENV_MAX) threads = (int)t;   // the last one counts
    }
    return threads;
}
