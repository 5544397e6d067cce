/* blascore.h — the same OpenBLAS kernels on every machine (docs/performance.md, "Same bits on
 * every machine").
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH: when it loads it picks its GEMM kernels by the
 * CPU it detects, and the kernels differ in the order of their additions, so one product gives
 * other bits on another CPU (0.3.21 runs its slow SSE3 "Prescott" kernels on a CPU model it does
 * not know, "Haswell" ones on AMD EPYC, "SkylakeX" ones on Intel Xeon SP). The program pins one
 * set, Haswell's (AVX2 + FMA: every x86-64 CPU since 2013–2015), through OPENBLAS_CORETYPE,
 * which OpenBLAS reads only when it loads, before main: so main re-executes itself once with it
 * set. A user's own OPENBLAS_CORETYPE wins; a CPU without AVX2 and FMA keeps what OpenBLAS
 * chose. The kernels a file's numbers came from are its root attribute `blas_core`.
 */
#ifndef STABILITY_BLASCORE_H
#define STABILITY_BLASCORE_H

/* The kernels the program pins (OPENBLAS_CORETYPE's spelling). */
#define BLASCORE_PINNED "Haswell"

/* Call first in main. When OPENBLAS_CORETYPE is unset, the CPU has AVX2 and FMA and OpenBLAS
 * picked other kernels, re-executes /proc/self/exe with argv and OPENBLAS_CORETYPE=Haswell
 * (does not return); otherwise, or if that fails, returns and nothing changes. */
void blascore_pin(char **argv);

/* The kernels OpenBLAS runs ("Haswell", "Prescott", ...). */
const char *blascore_name(void);

#endif
