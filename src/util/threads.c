/* threads.c — one thread count for the step's pool, OpenMP and OpenBLAS (threads.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
#include "util/threads.h"

/* OpenBLAS's own API (not in GSL's CBLAS header); we link -lopenblas. */
void openblas_set_num_threads(int num_threads);

/* A positive integer from the environment variable name, or 0 when unset or malformed. */
static int env_count(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    const long v = strtol(s, &end, 10);
    // OMP_NUM_THREADS may be a list ("4,2"): its first entry is the outer level
    if (end == s || (*end && *end != ',') || v < 1 || v > THREADS_ENV_MAX) return 0;
    return (int)v;
}

int threads_from_env(void)
{
    // a sweep's share for each of its runs wins over what the sweep itself was given
    int n = env_count("STABILITY_SWEEP_THREADS");
    if (n) return n;
    n = env_count("STABILITY_THREADS");
    if (n) return n;
    n = env_count("SLURM_CPUS_PER_TASK");
    if (n) return n;
    const int omp = env_count("OMP_NUM_THREADS"), blas = env_count("OPENBLAS_NUM_THREADS");
    if (omp && blas) return omp < blas ? omp : blas;
    if (omp || blas) return omp ? omp : blas;
    n = omp_get_num_procs();   // CPUs in the affinity mask (taskset, cgroup cpusets)
    return n > 0 ? n : 1;
}

static int current = 0;

void threads_set(int n)
{
    if (n < 1) n = threads_from_env();
    if (n > THREADS_MAX) n = THREADS_MAX;
    // OpenBLAS runs on one thread: its threads would change bits with their number (nn/gemm.h)
    openblas_set_num_threads(1);
    omp_set_num_threads(n);
    current = n;
}

int threads_get(void)
{
    return current ? current : omp_get_max_threads();
}

/* ------------------------------------------------------------------------------------------
 * The pool. Workers 1..n−1 wait for a new generation of the job; the caller is part 0.
 *
 * Waiting: a worker first polls for POLL_NS with sched_yield() between polls (so it gives its
 * core to any other runnable thread — OpenBLAS's workers, which poll the same way after a GEMM,
 * or another process — instead of spinning on it as libgomp's workers do), then sleeps on a
 * condition variable. Inside a step the gaps between regions are a few GEMMs long, so workers
 * are usually still polling when the next region starts (about a microsecond to start it).
 */

#define POLL_NS 200000L   /* 0.2 ms */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;          /* a new generation (for sleeping workers) */
    atomic_uint gen;              /* job generation */
    atomic_int pending;           /* parts of the current job not yet finished */
    atomic_int sleepers;          /* workers asleep on wake */
    threads_fn fn;
    void *ctx;
    int nt;                       /* parts of the current job */
    int started;                  /* workers running (ids 1..started) */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, NULL, 0, 0};

static _Thread_local int in_region = 0;
static unsigned start_gen[THREADS_MAX];   /* the generation before worker i's first job */

static long elapsed_ns(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

static void *worker(void *arg)
{
    const int id = (int)(intptr_t)arg;
    unsigned seen = start_gen[id];   // not the current gen: the first job may already be out
    in_region = 1;   // a worker's own calls into the pool run inline
    for (;;) {
        unsigned g = atomic_load_explicit(&pool.gen, memory_order_acquire);
        if (g == seen) {
            struct timespec t0;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            while ((g = atomic_load_explicit(&pool.gen, memory_order_acquire)) == seen &&
                   elapsed_ns(&t0) < POLL_NS)
                sched_yield();
            if (g == seen) {
                pthread_mutex_lock(&pool.lock);
                atomic_fetch_add(&pool.sleepers, 1);
                while ((g = atomic_load_explicit(&pool.gen, memory_order_acquire)) == seen)
                    pthread_cond_wait(&pool.wake, &pool.lock);
                atomic_fetch_sub(&pool.sleepers, 1);
                pthread_mutex_unlock(&pool.lock);
            }
        }
        seen = g;
        // every started worker acknowledges every generation (so none lags behind a job), and
        // the first nt − 1 of them do a part of it
        if (id < pool.nt) pool.fn(pool.ctx, id, pool.nt);
        atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel);
    }
    return NULL;
}

/* Start workers up to id n−1; returns the parts available (n, or fewer if a thread could not
 * be created). */
static int ensure_workers(int n)
{
    while (pool.started < n - 1) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        start_gen[pool.started + 1] = atomic_load(&pool.gen);
        const int rc = pthread_create(&t, &attr, worker, (void *)(intptr_t)(pool.started + 1));
        pthread_attr_destroy(&attr);
        if (rc) break;
        pool.started++;
    }
    return pool.started + 1 < n ? pool.started + 1 : n;
}

int threads_ready(int nt)
{
    const int max = threads_get();
    if (nt > max) nt = max;
    if (nt > THREADS_MAX) nt = THREADS_MAX;
    if (nt <= 1 || in_region) return 1;
    return ensure_workers(nt);
}

int threads_in_part(void)
{
    return in_region;
}

void threads_run(int nt, threads_fn fn, void *ctx)
{
    const int max = threads_get();
    if (nt > max) nt = max;
    if (nt > THREADS_MAX) nt = THREADS_MAX;
    if (nt > 1 && !in_region) nt = ensure_workers(nt);
    if (nt <= 1 || in_region) {
        fn(ctx, 0, 1);
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.nt = nt;
    atomic_store_explicit(&pool.pending, pool.started, memory_order_relaxed);
    atomic_fetch_add(&pool.gen, 1);   // publishes the job (seq_cst: against the sleepers count)
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    in_region = 1;
    fn(ctx, 0, nt);
    in_region = 0;
    while (atomic_load_explicit(&pool.pending, memory_order_acquire) > 0) sched_yield();
}

void threads_part(size_t n, int t, int nt, size_t align, size_t *lo, size_t *hi)
{
    if (align < 1) align = 1;
    const size_t blocks = (n + align - 1) / align;
    const size_t b0 = blocks * (size_t)t / (size_t)nt, b1 = blocks * (size_t)(t + 1) / (size_t)nt;
    *lo = b0 * align < n ? b0 * align : n;
    *hi = b1 * align < n ? b1 * align : n;
}
