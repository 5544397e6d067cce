/* progress.c — terminal progress bar: "label [#####.....] 42% 12/30  ETA 0:31". */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "util/progress.h"

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
    p->first = 0;
    snprintf(p->label, sizeof p->label, "%s", label);
}

void progress_set_first(progress_t *p, long first)
{
    p->first = first;
}

static void format_duration(char *buf, size_t len, double s)
{
    const long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void progress_update(progress_t *p, long done, long total, const char *extra)
{
    if (!p->enabled || total <= 0) return;
    const double now = progress_now();
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
        format_duration(eta, sizeof eta, elapsed / (double)(done - p->first) * (double)(total - done));
    format_duration(el, sizeof el, elapsed);
    fprintf(stderr, "\r%s [%s] %3.0f%% %ld/%ld  %s ETA %s%s%s\033[K", p->label, bar, 100 * frac,
            done, total, el, eta, extra ? "  " : "", extra ? extra : "");
    fflush(stderr);
}

void progress_end(progress_t *p)
{
    if (p->enabled) fputc('\n', stderr);
}

void progress_callback(void *ctx, long done, long total)
{
    progress_update((progress_t *)ctx, done, total, NULL);
}
