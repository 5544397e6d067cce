/* threads.h — one thread count for the whole process, set programmatically at start-up: the
 * step's own pool (below: GEMMs shared by nn/gemm.c, attention's heads, every pass outside BLAS)
 * and OpenMP's (the probe's one region). OpenBLAS runs on one thread, always.
 *
 * Why (docs/performance.md): OpenBLAS here is the pthread build, with its own thread pool.
 * OpenMP workers that finish a parallel region busy-wait for the next one, and OpenBLAS
 * workers do the same after a GEMM; with both pools the size of the machine they starve each
 * other (measured 4-5x slower). And OpenBLAS's threads change a product's bits with their
 * number (nn/gemm.h). One pool does the work of a step; it waits politely (it yields its core
 * while it polls, then sleeps).
 *
 * The thread count never changes a result: every part of a region computes whole outputs,
 * each exactly as the serial loop does, and no part's work depends on how many parts there
 * are (docs/performance.md, "Same bits at every thread count").
 */
#ifndef STABILITY_THREADS_H
#define STABILITY_THREADS_H

#include <stddef.h>

/* Most threads the pool uses. */
#define THREADS_MAX 64
/* The largest thread count a variable may ask for (STABILITY_THREADS, SLURM_CPUS_PER_TASK, …;
 * main.c refuses larger ones): more than any machine, fewer than an overflow. */
#define THREADS_ENV_MAX 4096

/* The thread count the environment asks for: STABILITY_SWEEP_THREADS (set by `stability
 * sweep --jobs N` for its runs only: its share of the threads, which must win, docs/design.md
 * §3), else STABILITY_THREADS if set (> 0), else SLURM_CPUS_PER_TASK, else the smaller of
 * OMP_NUM_THREADS and OPENBLAS_NUM_THREADS when either is set, else the number of CPUs this
 * process may run on (affinity mask). >= 1. */
int threads_from_env(void);

/* Set the pool and OpenMP thread counts to n (n < 1: threads_from_env()) and OpenBLAS's to 1.
 * Call at start-up, outside any parallel region. */
void threads_set(int n);

/* The count last set by threads_set (the OpenMP maximum before any call). */
int threads_get(void);

/* A part of a parallel region: fn(ctx, t, nt) does part t of nt. */
typedef void (*threads_fn)(void *ctx, int t, int nt);

/* Run fn(ctx, t, nt) for t = 0 .. nt−1 on the pool (part 0 on the caller) and return when every
 * part is done; nt = min(nt, threads_get()). nt <= 1, or a call from inside a part, runs
 * fn(ctx, 0, 1) on the caller. The parts must not depend on each other; for bit-identical
 * results at every thread count a part must compute each output exactly as the whole would
 * (split rows or columns, never one sum), however many parts there are. */
void threads_run(int nt, threads_fn fn, void *ctx);

/* Below this many element operations a pass runs on the caller alone: starting a region costs
 * about a microsecond when the workers are polling, a pass of 16k doubles about ten. */
#define THREADS_MIN_WORK 16384.0

/* The parts for a pass of `work` element operations: threads_get(), or 1 when it is small. */
static inline int threads_for(double work)
{
    return work >= THREADS_MIN_WORK ? threads_get() : 1;
}

/* Start the workers for nt parts (nt <= threads_get()) and return the parts threads_run(nt, ...)
 * will run: nt, or fewer if threads could not be created; 1 inside a part. */
int threads_ready(int nt);

/* 1 on a thread that is running a part (a worker, or the caller inside threads_run). */
int threads_in_part(void);

/* Part t of nt of [0, n) in whole blocks of align: [lo, hi). */
void threads_part(size_t n, int t, int nt, size_t align, size_t *lo, size_t *hi);

#endif
