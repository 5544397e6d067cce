/* bench_proc.c — `make bench`'s child processes and the machine: running a child and watching
 * what else ran meanwhile, the GEMM rate, the CPU's name (docs/performance.md, "make bench"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>
#include <gsl/gsl_cblas.h>
#include "bench.h"
#include "util/threads.h"

/* OpenBLAS's own API. */
void openblas_set_num_threads(int num_threads);

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double bench_field(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

void bench_field_str(const char *line, const char *key, char *buf, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    size_t n = 0;
    if (p)
        for (p += strlen(pat); p[n] && p[n] != ' ' && p[n] != '\n' && n + 1 < len; n++)
            buf[n] = p[n];
    if (len) buf[n] = '\0';
}

/* Run cmd; the lines starting with tag into lines (at most max, each len bytes). Returns how
 * many, 0 when none or the command failed. */
static int run_capture(const char *cmd, const char *tag, char *lines, int max, size_t len)
{
    FILE *f = popen(cmd, "r");
    int found = 0;
    if (!f) return 0;
    char buf[1024];
    while (fgets(buf, sizeof buf, f))
        if (found < max && !strncmp(buf, tag, strlen(tag)))
            snprintf(lines + (size_t)found++ * len, len, " %s", buf + strlen(tag));
    return pclose(f) == 0 ? found : 0;
}

/* The machine-wide CPU seconds busy and in all (/proc/stat) into busy, total (NAN if
 * unreadable). */
static void proc_stat(double *busy, double *total)
{
    unsigned long long v[8];
    const double hz = (double)sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/stat", "r");
    *busy = *total = NAN;
    if (!f) return;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) == 8) {
        *total = *busy = 0.0;
        for (int j = 0; j < 8; j++) {
            *total += (double)v[j] / hz;
            if (j != 3 && j != 4) *busy += (double)v[j] / hz;   // not idle, not iowait
        }
    }
    fclose(f);
}

double bench_machine_busy(void)
{
    double b0, t0, b1, t1;
    // OpenBLAS's threads, started when the library loads, spin ~0.1 s before they sleep
    const struct timespec settle = {0, 300000000L}, half = {0, 500000000L};
    nanosleep(&settle, NULL);
    proc_stat(&b0, &t0);
    nanosleep(&half, NULL);
    proc_stat(&b1, &t1);
    return t1 - t0 > 0.0 ? (b1 - b0) / (t1 - t0) : NAN;
}

/* CPU accounting of the machine and of this process (with its waited-for children). */
typedef struct {
    double busy, total;   /* machine-wide CPU seconds, busy and all */
    double own;           /* CPU seconds of this process and its finished children */
} cpu_mark_t;

static void cpu_mark(cpu_mark_t *m)
{
    proc_stat(&m->busy, &m->total);
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    m->own = self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
             kids.ru_stime.tv_sec + 1e-6 * (self.ru_utime.tv_usec + self.ru_stime.tv_usec +
                                            kids.ru_utime.tv_usec + kids.ru_stime.tv_usec);
}

/* Share of the machine's CPU time that other processes used between marks a and b. */
static double cpu_others(const cpu_mark_t *a, const cpu_mark_t *b)
{
    const double total = b->total - a->total;
    if (!(total > 0.0)) return NAN;
    return fmax(0.0, (b->busy - a->busy) - (b->own - a->own)) / total;
}

/* Wait (at most max_s seconds) until other processes leave the machine idle (< 5 % busy). */
static void wait_idle(double max_s)
{
    const double t0 = bench_now();
    while (bench_now() - t0 < max_s && !(bench_machine_busy() < 0.05)) {
        const struct timespec pause = {2, 0};
        nanosleep(&pause, NULL);
    }
}

int bench_run_measured(const bench_opts_t *o, const char *cmd, const char *tag, char *lines,
                       int max, size_t len, double *others)
{
    int n = 0;
    for (int attempt = 0; attempt <= o->retries; attempt++) {
        if (attempt > 0 || o->wait > 0) wait_idle(o->wait);
        cpu_mark_t a, b;
        cpu_mark(&a);
        n = run_capture(cmd, tag, lines, max, len);
        cpu_mark(&b);
        *others = cpu_others(&a, &b);
        if (!n || !(*others > 0.05)) break;
        fprintf(stderr, "bench: others used %.0f%% of the CPUs during a run; %s\n", 100 * *others,
                attempt < o->retries ? "repeating it" : "keeping it (flagged !)");
    }
    return n;
}

/* OpenBLAS's own threads (which threads_set leaves at 1 for nn/gemm.c) set to all of them. */
double bench_gemm_rate(int n, int reps, int single, double *best)
{
    openblas_set_num_threads(threads_get());
    const size_t nn = (size_t)n * n, size = single ? sizeof(float) : sizeof(double);
    char *a = malloc(nn * size), *b = malloc(nn * size), *c = malloc(nn * size);
    double rates[BENCH_GEMM_REPS];
    if (!a || !b || !c || reps > BENCH_GEMM_REPS) { free(a); free(b); free(c); return NAN; }
    for (size_t i = 0; i < nn; i++) {
        const double x = (double)(i % 7) - 3.0, y = (double)(i % 5) * 0.5;
        if (single) {
            ((float *)a)[i] = (float)x;
            ((float *)b)[i] = (float)y;
            ((float *)c)[i] = 0.0f;
        } else {
            ((double *)a)[i] = x;
            ((double *)b)[i] = y;
            ((double *)c)[i] = 0.0;
        }
    }
    for (int r = -1; r < reps; r++) {
        const double t0 = bench_now();
        if (single)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, (float *)a, n,
                        (float *)b, n, 0.0f, (float *)c, n);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, (double *)a, n,
                        (double *)b, n, 0.0, (double *)c, n);
        const double dt = bench_now() - t0;
        if (r >= 0) rates[r] = 2.0 * n * (double)n * n / dt * 1e-9;
    }
    openblas_set_num_threads(1);
    *best = 0.0;
    for (int r = 0; r < reps; r++) *best = fmax(*best, rates[r]);
    free(a);
    free(b);
    free(c);
    return bench_median(rates, reps);
}

double bench_measure_gemm(const bench_opts_t *o, int single, double *best, double *others)
{
    double rate = NAN;
    for (int attempt = 0; attempt <= o->retries; attempt++) {
        if (attempt > 0 || o->wait > 0) wait_idle(o->wait);
        cpu_mark_t a, b;
        cpu_mark(&a);
        rate = bench_gemm_rate(1024, BENCH_GEMM_REPS, single, best);
        cpu_mark(&b);
        *others = cpu_others(&a, &b);
        if (!(*others > 0.05)) break;
    }
    return rate;
}

void bench_cpu_model(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(buf, len, "unknown");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *p = strchr(line, ':');
        if (!p) break;
        for (p++; *p == ' ' || *p == '\t'; p++) {}
        snprintf(buf, len, "%s", p);
        buf[strcspn(buf, "\n")] = '\0';
        for (char *q = buf; *q; q++) if (*q == ',') *q = ' ';   // a CSV field
        break;
    }
    fclose(f);
}
