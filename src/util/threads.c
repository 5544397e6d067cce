/* threads.c — set the OpenBLAS and OpenMP thread counts together (threads.h). */
#include <stdlib.h>
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
    if (end == s || (*end && *end != ',') || v < 1 || v > 4096) return 0;
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
    openblas_set_num_threads(n);
    omp_set_num_threads(n);
    current = n;
}

int threads_get(void)
{
    return current ? current : omp_get_max_threads();
}
