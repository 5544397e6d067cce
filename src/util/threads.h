/* threads.h — one thread count for the whole process: OpenBLAS's threads (the GEMMs) and
 * OpenMP's (the loops outside BLAS) are set together, programmatically, at start-up.
 *
 * Why (docs/performance.md): OpenBLAS here is the pthread build, with its own thread pool.
 * OpenMP workers that finish a parallel region busy-wait for the next one, and OpenBLAS
 * workers do the same after a GEMM; with both pools the size of the machine they starve each
 * other (measured 4-5x slower). The numerics therefore keep OpenMP regions rare and large
 * (see docs/performance.md), and this module is the one place that sets the counts.
 */
#ifndef STABILITY_THREADS_H
#define STABILITY_THREADS_H

/* The thread count the environment asks for: STABILITY_SWEEP_THREADS (set by `stability
 * sweep --jobs N` for its runs only: its share of the threads, which must win, docs/design.md
 * §3), else STABILITY_THREADS if set (> 0), else SLURM_CPUS_PER_TASK, else the smaller of
 * OMP_NUM_THREADS and OPENBLAS_NUM_THREADS when either is set, else the number of CPUs this
 * process may run on (affinity mask). >= 1. */
int threads_from_env(void);

/* Set the OpenBLAS and the OpenMP thread counts to n (n < 1: threads_from_env()).
 * Call at start-up, outside any parallel region. */
void threads_set(int n);

/* The count last set by threads_set (the OpenMP maximum before any call). */
int threads_get(void);

#endif
