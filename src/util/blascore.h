/* blascore.h — one family of OpenBLAS kernels per class of CPU, so the same bits on every
 * machine of a class (docs/design.md §7; docs/performance.md, "Same bits on every machine").
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH: when it loads it picks its GEMM kernels by the
 * CPU it detects, and two kernel families add in different orders, so one product gives other
 * bits under another family. The program pins the fastest family of the CPU's class through
 * OPENBLAS_CORETYPE, which OpenBLAS reads only when it loads, before main: so main
 * re-executes itself once with it set.
 *   - AVX-512 with F, CD, BW, DQ and VL (Skylake-SP's set, which OpenBLAS compiles its SkylakeX
 *     kernels for; Intel since 2017, AMD since Zen 4): "SkylakeX";
 *   - else AVX2 and FMA (Intel since 2013, AMD since 2015): "Haswell", the portable family;
 *   - else OpenBLAS's own choice.
 * STABILITY_KERNELS=portable pins Haswell on every AVX2+FMA CPU, AVX-512 or not: the bits every
 * such machine computes. A user's own OPENBLAS_CORETYPE wins over both. The family a file's
 * numbers came from is its root attribute `blas_core`; a continuation of a run (--resume, a
 * sweep's later tasks) takes the run's family (blascore_require).
 */
#ifndef STABILITY_BLASCORE_H
#define STABILITY_BLASCORE_H

#include <stddef.h>

/* The families the program pins (OPENBLAS_CORETYPE's spelling). */
#define BLASCORE_AVX512 "SkylakeX"
#define BLASCORE_PORTABLE "Haswell"

/* CPU features the families need, as bits of a set (blascore_cpu). */
enum {
    BLASCORE_SSE3 = 1 << 0, BLASCORE_SSSE3 = 1 << 1, BLASCORE_SSE42 = 1 << 2,
    BLASCORE_AVX = 1 << 3, BLASCORE_AVX2 = 1 << 4, BLASCORE_FMA = 1 << 5,
    BLASCORE_AVX512F = 1 << 6, BLASCORE_AVX512CD = 1 << 7, BLASCORE_AVX512BW = 1 << 8,
    BLASCORE_AVX512DQ = 1 << 9, BLASCORE_AVX512VL = 1 << 10, BLASCORE_AVX512BF16 = 1 << 11
};

/* Call first in main (argv is kept for blascore_require). When OPENBLAS_CORETYPE is unset and
 * OpenBLAS runs another family than the one of the CPU's class (blascore_class; portable under
 * STABILITY_KERNELS=portable), re-executes /proc/self/exe with argv and OPENBLAS_CORETYPE set
 * (does not return); otherwise, or if that fails, returns 0 and nothing changes. A family a
 * parent stability process set (a sweep's, for its runs) is kept while this CPU runs it.
 * Returns 2 after printing why when STABILITY_KERNELS is neither unset, "fast" nor
 * "portable". */
int blascore_pin(char **argv);

/* Child processes started from now on choose their kernels as a new program does: removes
 * OPENBLAS_CORETYPE from the environment when the program set it (before sbatch: a Slurm
 * task pins the family of its own node's class). */
void blascore_unpin_children(void);

/* The kernels OpenBLAS runs ("SkylakeX", "Haswell", "Prescott", ...). */
const char *blascore_name(void);

/* A continuation of a run computed with `family` (its blas_core, a sweep's record): 0 when
 * OpenBLAS runs it (or family is NULL or ""). Otherwise, when this CPU runs it and neither
 * STABILITY_KERNELS nor the user's OPENBLAS_CORETYPE asks for another family, re-executes the
 * program as blascore_pin does, with OPENBLAS_CORETYPE = family (does not return: call it
 * before anything is written); else returns 2 with err saying why and what would continue
 * ("this CPU lacks AVX512BW, which they need (continue on a CPU that has them)",
 * "STABILITY_KERNELS=portable asks for Haswell (unset it to continue with SkylakeX)", ...). */
int blascore_require(const char *family, char *err, size_t errlen);

/* This CPU's features (BLASCORE_* bits; 0 off x86-64). */
unsigned blascore_cpu(void);

/* The family the program pins on a CPU with features `have` (portable: STABILITY_KERNELS =
 * portable), or NULL for OpenBLAS's own choice. */
const char *blascore_class(unsigned have, int portable);

/* The features `family` needs that `have` lacks, as names ("AVX512BW AVX512DQ") into buf:
 * returns how many (0: a CPU with `have` runs it), or −1 for a family whose needs the program
 * does not know. */
int blascore_missing(const char *family, unsigned have, char *buf, size_t len);

#endif
