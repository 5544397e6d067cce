/* blascore.c — pin OpenBLAS's kernels (blascore.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "util/blascore.h"

/* OpenBLAS's own API (not in GSL's CBLAS header); we link -lopenblas. */
char *openblas_get_corename(void);

const char *blascore_name(void)
{
    const char *s = openblas_get_corename();
    return s && *s ? s : "unknown";
}

void blascore_pin(char **argv)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (getenv("OPENBLAS_CORETYPE")) return;   // the user's choice (or already pinned)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    // the kernels OpenBLAS already runs may be the pinned ones (Intel Haswell to Comet Lake)
    if (!strcasecmp(blascore_name(), BLASCORE_PINNED)) return;
    if (setenv("OPENBLAS_CORETYPE", BLASCORE_PINNED, 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE");   // no /proc: run on as loaded (blas_core says which)
#else
    (void)argv;
#endif
}
