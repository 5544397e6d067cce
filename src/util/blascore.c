/* blascore.c — pin OpenBLAS's kernels by class of CPU, and keep a run's family when it
 * continues (blascore.h; docs/design.md §7). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "util/blascore.h"

/* OpenBLAS's own API (not in GSL's CBLAS header); we link -lopenblas. */
char *openblas_get_corename(void);

/* Set beside OPENBLAS_CORETYPE when the program set it (a pin, a run's family): the value is
 * then the program's, not the user's, and a continuation may replace it. Children inherit both. */
#define PINNED_BY_US "STABILITY_PINNED_CORETYPE"

static char **saved_argv;

/* The families whose needs are known: what OpenBLAS compiles their kernels for (its
 * kernel/Makefile: SkylakeX with -march=skylake-avx512, Cooperlake with -march=cooperlake,
 * Haswell and Zen with AVX2 and FMA). Cooperlake's DGEMM is SkylakeX's, its SGEMM blocks K
 * otherwise (docs/performance.md, "Kernel families"). */
static const struct {
    const char *name;
    unsigned needs;
} FAMILIES[] = {
#define SKX (BLASCORE_AVX2 | BLASCORE_FMA | BLASCORE_AVX512F | BLASCORE_AVX512CD | \
             BLASCORE_AVX512BW | BLASCORE_AVX512DQ | BLASCORE_AVX512VL)
    {"SkylakeX", SKX},
    {"Cooperlake", SKX | BLASCORE_AVX512BF16},
    {"Haswell", BLASCORE_AVX2 | BLASCORE_FMA},
    {"Zen", BLASCORE_AVX2 | BLASCORE_FMA},
    {"Sandybridge", BLASCORE_AVX},
    {"Nehalem", BLASCORE_SSE42},
    {"Core2", BLASCORE_SSSE3},
    {"Prescott", BLASCORE_SSE3},
};

static const char *const FEATURE_NAMES[] = {
    "SSE3", "SSSE3", "SSE4.2", "AVX", "AVX2", "FMA", "AVX512F", "AVX512CD", "AVX512BW",
    "AVX512DQ", "AVX512VL", "AVX512_BF16"};

const char *blascore_name(void)
{
    const char *s = openblas_get_corename();
    return s && *s ? s : "unknown";
}

unsigned blascore_cpu(void)
{
    unsigned have = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    // libgcc also asks the OS (XGETBV) whether it saves the AVX and AVX-512 registers
    __builtin_cpu_init();
    have |= __builtin_cpu_supports("sse3") ? BLASCORE_SSE3 : 0;
    have |= __builtin_cpu_supports("ssse3") ? BLASCORE_SSSE3 : 0;
    have |= __builtin_cpu_supports("sse4.2") ? BLASCORE_SSE42 : 0;
    have |= __builtin_cpu_supports("avx") ? BLASCORE_AVX : 0;
    have |= __builtin_cpu_supports("avx2") ? BLASCORE_AVX2 : 0;
    have |= __builtin_cpu_supports("fma") ? BLASCORE_FMA : 0;
    have |= __builtin_cpu_supports("avx512f") ? BLASCORE_AVX512F : 0;
    have |= __builtin_cpu_supports("avx512cd") ? BLASCORE_AVX512CD : 0;
    have |= __builtin_cpu_supports("avx512bw") ? BLASCORE_AVX512BW : 0;
    have |= __builtin_cpu_supports("avx512dq") ? BLASCORE_AVX512DQ : 0;
    have |= __builtin_cpu_supports("avx512vl") ? BLASCORE_AVX512VL : 0;
    have |= __builtin_cpu_supports("avx512bf16") ? BLASCORE_AVX512BF16 : 0;
#endif
    return have;
}

int blascore_missing(const char *family, unsigned have, char *buf, size_t len)
{
    if (len) buf[0] = '\0';
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
        if (strcasecmp(family, FAMILIES[i].name)) continue;
        const unsigned lack = FAMILIES[i].needs & ~have;
        int n = 0;
        size_t at = 0;
        for (size_t b = 0; b < sizeof FEATURE_NAMES / sizeof FEATURE_NAMES[0]; b++) {
            if (!(lack >> b & 1)) continue;
            if (at < len) at += (size_t)snprintf(buf + at, len - at, "%s%s", n ? " " : "",
                                                 FEATURE_NAMES[b]);
            n++;
        }
        return n;
    }
    return -1;
}

const char *blascore_class(unsigned have, int portable)
{
    char lack[8];
    if (!portable && blascore_missing(BLASCORE_AVX512, have, lack, sizeof lack) == 0)
        return BLASCORE_AVX512;
    if (blascore_missing(BLASCORE_PORTABLE, have, lack, sizeof lack) == 0) return BLASCORE_PORTABLE;
    return NULL;
}

/* STABILITY_KERNELS: 0 unset or empty, 1 "fast", 2 "portable", −1 anything else. */
static int kernels_setting(void)
{
    const char *v = getenv("STABILITY_KERNELS");
    if (!v || !*v) return 0;
    return !strcmp(v, "fast") ? 1 : !strcmp(v, "portable") ? 2 : -1;
}

/* Re-execute the program with OpenBLAS's kernels `family` (NULL: OpenBLAS's own choice);
 * returns only when that fails. */
static void exec_with(const char *family)
{
    if (!saved_argv) {   // blascore_pin was not called
        errno = EINVAL;
        return;
    }
    if (family ? setenv("OPENBLAS_CORETYPE", family, 1) || setenv(PINNED_BY_US, family, 1)
               : unsetenv("OPENBLAS_CORETYPE") || unsetenv(PINNED_BY_US))
        return;
    fflush(NULL);   // nothing printed is lost or printed twice
    execv("/proc/self/exe", saved_argv);
    const int e = errno;
    unsetenv("OPENBLAS_CORETYPE");   // no /proc: run on as loaded (blas_core says which)
    unsetenv(PINNED_BY_US);
    errno = e;
}

/* 1 when OPENBLAS_CORETYPE was set by the program (this process's pin, or a parent's: a sweep's
 * runs inherit the sweep's family), not by the user. */
static int pinned_by_us(void)
{
    const char *ct = getenv("OPENBLAS_CORETYPE"), *ours = getenv(PINNED_BY_US);
    return ct && ours && !strcmp(ct, ours);
}

int blascore_pin(char **argv)
{
    saved_argv = argv;
    const int setting = kernels_setting();
    if (setting < 0) {
        fprintf(stderr, "stability: STABILITY_KERNELS='%s': not 'fast' (the default) or "
                "'portable'\n", getenv("STABILITY_KERNELS"));
        return 2;
    }
    const char *ct = getenv("OPENBLAS_CORETYPE");
    const unsigned cpu = blascore_cpu();
    char lack[128];
    if (ct && !pinned_by_us()) return 0;   // the user's choice
    // a parent's pin (a sweep's family) holds while this CPU runs it; a Slurm task on a node
    // that cannot falls back to its own class (and the sweep's record then refuses, sweep_dir.c)
    if (ct && blascore_missing(ct, cpu, lack, sizeof lack) <= 0) return 0;
    const char *want = blascore_class(cpu, setting == 2);
    // the kernels OpenBLAS already runs may be the pinned ones (Intel Haswell to Comet Lake,
    // Skylake-SP to Ice Lake)
    if (!ct && (!want || !strcasecmp(blascore_name(), want))) return 0;
    exec_with(want);
    return 0;
}

void blascore_unpin_children(void)
{
    if (pinned_by_us()) {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv(PINNED_BY_US);
    }
}

int blascore_require(const char *family, char *err, size_t errlen)
{
    const char *now = blascore_name();
    if (!family || !*family || !strcasecmp(family, now)) return 0;
    const char *ct = getenv("OPENBLAS_CORETYPE");
    const int setting = kernels_setting();
    const char *asked = setting > 0 ? blascore_class(blascore_cpu(), setting == 2) : NULL;
    char lack[128];
    const int nlack = blascore_missing(family, blascore_cpu(), lack, sizeof lack);
    if (nlack > 0)   // first: no setting would help
        snprintf(err, errlen, "this CPU lacks %s, which they need (continue on a CPU that has "
                 "them)", lack);
    else if (nlack < 0)
        snprintf(err, errlen, "the program does not know which CPU features they need "
                 "(OPENBLAS_CORETYPE=%s tries them)", family);
    else if (ct && !pinned_by_us())
        snprintf(err, errlen, "OPENBLAS_CORETYPE=%s asks for %s (unset it to continue with %s)",
                 ct, now, family);
    else if (asked && strcasecmp(asked, family))
        snprintf(err, errlen, "STABILITY_KERNELS=%s asks for %s (unset it to continue with %s)",
                 getenv("STABILITY_KERNELS"), asked, family);
    else if (ct && !strcasecmp(ct, family))   // re-executed for them already
        snprintf(err, errlen, "this OpenBLAS does not load them: told OPENBLAS_CORETYPE=%s, it "
                 "runs %s", family, now);
    else {
        exec_with(family);
        snprintf(err, errlen, "cannot re-execute the program with them: %s", strerror(errno));
    }
    return 2;
}
