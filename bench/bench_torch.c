/* bench_torch.c — PyTorch at its fastest on this machine (issue 35; docs/performance.md,
 * "PyTorch at its fastest"): Debian's PyTorch does its matmuls in the same OpenBLAS as the
 * program, and as loaded it runs the kernels OpenBLAS detects (generic ones on a CPU it does not
 * know), at OpenBLAS's thread count, under libgomp's default wait policy. The search times it
 * under every OpenBLAS family asked for (OPENBLAS_CORETYPE) × OMP_WAIT_POLICY × ATen's CPU
 * capability (ATEN_CPU_CAPABILITY: the vector width of PyTorch's own kernels), one process each
 * (all three are read when the libraries load), and in each process under every split of the N
 * threads between OpenBLAS and torch.set_num_threads (bench/bench_torch.py, alternately). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "bench.h"
#include "util/blascore.h"

#define MAX_LIST 16

/* Split the comma-separated list s into at most MAX_LIST names of up to 23 characters. */
static int split_list(const char *s, char out[][24])
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < MAX_LIST;
         t = strtok_r(NULL, ",", &save))
        snprintf(out[n++], 24, "%.23s", t);
    return n;
}

/* Whether name is a plain word (it reaches a shell); if not, said on stderr (option: where
 * it came from). */
static int plain(const char *name, const char *option)
{
    int ok = *name != '\0';
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') ok = 0;
    if (!ok) fprintf(stderr, "bench: %s: '%s' is not a plain name: not timed\n", option, name);
    return ok;
}

/* Whether this CPU can run the kernels of family (1), or not (0, said on stderr once). */
static int runs_here(const char *family)
{
    static char said[MAX_LIST][24];
    static int nsaid = 0;
    char miss[128];
    if (!strcmp(family, "loaded")) return 1;
    if (blascore_missing(family, blascore_cpu(), miss, sizeof miss) <= 0) return 1;
    for (int i = 0; i < nsaid; i++) if (!strcmp(said[i], family)) return 0;
    if (nsaid < MAX_LIST) snprintf(said[nsaid++], 24, "%.23s", family);
    fprintf(stderr, "bench: PyTorch not timed under %s: this CPU lacks %s\n", family, miss);
    return 0;
}

/* Whether the variable var's value asked ("loaded": none) is what ran; if not, said on stderr
 * (once a process: say). */
static int ran_as_asked(const char *var, const char *asked, const char *ran, int say)
{
    if (!strcmp(asked, "loaded") || !strcasecmp(asked, ran)) return 1;
    if (say) fprintf(stderr, "bench: %s=%s ran %s: not counted\n", var, asked, ran);
    return 0;
}

/* One PyTorch process: the kernels, policy and capability asked, and the thread splits pairs
 * ("1:2,2:2"); its TORCH lines appended to t. */
static void torch_process(const bench_opts_t *o, const bench_case_t *c, int f32,
                          const torch_setting_t *asked, const char *pairs, torch_times_t *t,
                          double *worst)
{
    const char *kernels = asked->kernels, *policy = asked->policy, *cap = asked->cap;
    char cmd[2048], lines[8][1024], coretype[48] = "", aten[48] = "";
    double others;
    if (strcmp(kernels, "loaded")) snprintf(coretype, sizeof coretype, "OPENBLAS_CORETYPE=%s",
                                            kernels);
    if (strcmp(cap, "loaded")) snprintf(aten, sizeof aten, "ATEN_CPU_CAPABILITY=%s", cap);
    snprintf(cmd, sizeof cmd, "env -u OMP_WAIT_POLICY -u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY "
             "%s %s %s OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d '%s' bench/bench_torch.py "
             "--layers %d "
             "--placement %s --dtype %s --threads %d --steps %d --warmup %d --arch %s "
             "--d-model %d --d-ff %d --vocab %d --causal %d --update %d --settings %s",
             strcmp(policy, "passive") ? "" : "OMP_WAIT_POLICY=PASSIVE", coretype, aten, o->threads,
             o->threads, o->python, c->layers, c->placement,
             f32 >= BENCH_BF16E ? "bfloat16" : f32 ? "float32" : "float64",
             o->threads, o->torch_steps, o->warmup, c->encdec ? "encdec" : "lm", c->d, 2 * c->d,
             c->vocab, c->causal, c->kind == K_UPDATE, pairs);
    const int n = bench_run_measured(o, cmd, "TORCH", &lines[0][0], 8, sizeof lines[0], &others);
    if (!n) {
        fprintf(stderr, "bench: PyTorch failed under %s, %s, %s\n", kernels, policy, cap);
        return;
    }
    *worst = fmax(*worst, others);
    for (int i = 0; i < n && t->n < TORCH_MAX_SETTINGS; i++) {
        torch_setting_t *s = &t->set[t->n];
        *s = *asked;
        bench_field_str(lines[i], "core", s->core, sizeof s->core);
        bench_field_str(lines[i], "cap", s->cap_ran, sizeof s->cap_ran);
        // a library that fell back to other kernels than asked: not that setting
        if (!ran_as_asked("OPENBLAS_CORETYPE", kernels, s->core, i == 0) ||
            !ran_as_asked("ATEN_CPU_CAPABILITY", cap, s->cap_ran, i == 0))
            continue;
        s->blas = (int)bench_field(lines[i], "blas");
        s->intra = (int)bench_field(lines[i], "intra");
        t->ms[t->n] = bench_field(lines[i], "ms_median");
        t->rss[t->n] = bench_field(lines[i], "rss_kb") / 1024.0;
        t->n++;
    }
}

/* A setting as asked: kernels, policy, capability (the threads come with the pairs). */
static torch_setting_t asked_setting(const char *kernels, const char *policy, const char *cap)
{
    torch_setting_t s = {0};
    snprintf(s.kernels, sizeof s.kernels, "%s", kernels);
    snprintf(s.policy, sizeof s.policy, "%s", policy);
    snprintf(s.cap, sizeof s.cap, "%s", cap);
    return s;
}

void bench_torch(const bench_opts_t *o, const bench_case_t *c, int f32,
                 const torch_setting_t *hint, torch_times_t *t, double *worst)
{
    char kernels[MAX_LIST + 1][24], policies[MAX_LIST + 1][24], caps[MAX_LIST + 1][24];
    char pairs[64], loaded_pair[16];
    const int N = o->threads;
    t->n = 0;
    t->loaded = t->best = -1;
    if (!o->torch || c->kind == K_PROBE || c->kind == K_DYN) return;
    snprintf(loaded_pair, sizeof loaded_pair, "%d:%d", N, N);
    if (N > 1) snprintf(pairs, sizeof pairs, "%d:%d,1:%d,%d:1", N, N, N, N);
    else snprintf(pairs, sizeof pairs, "1:1");
    const torch_setting_t loaded = asked_setting("loaded", "default", "loaded");
    if (hint) {   // as loaded, and the setting that won a larger case
        torch_process(o, c, f32, &loaded, loaded_pair, t, worst);
        char hp[16];
        snprintf(hp, sizeof hp, "%d:%d", hint->blas, hint->intra);
        if (strcmp(hint->kernels, "loaded") || strcmp(hint->policy, "default") ||
            strcmp(hint->cap, "loaded") || strcmp(hp, loaded_pair))
            torch_process(o, c, f32, hint, hp, t, worst);
    } else {
        // "loaded" and "default" first, whether listed or not: "as loaded" is always timed
        int nk = 1, np = 1, nc = 1;
        snprintf(kernels[0], 24, "loaded");
        snprintf(policies[0], 24, "default");
        snprintf(caps[0], 24, "loaded");
        char list[MAX_LIST][24];
        const int lk = o->torch_search ? split_list(o->torch_kernels, list) : 0;
        for (int i = 0; i < lk; i++)
            if (strcmp(list[i], "loaded") && plain(list[i], "--torch-kernels") &&
                runs_here(list[i]))
                snprintf(kernels[nk++], 24, "%.23s", list[i]);
        const int lp = o->torch_search ? split_list(o->torch_policies, list) : 0;
        for (int i = 0; i < lp; i++)
            if (!strcmp(list[i], "passive")) snprintf(policies[np++], 24, "passive");
        const int lc = o->torch_search ? split_list(o->torch_caps, list) : 0;
        for (int i = 0; i < lc; i++)
            if (strcmp(list[i], "loaded") && plain(list[i], "--torch-capabilities"))
                snprintf(caps[nc++], 24, "%.11s", list[i]);
        for (int a = 0; a < nc; a++)
            for (int k = 0; k < nk; k++)
                for (int p = 0; p < np; p++) {
                    const torch_setting_t s = asked_setting(kernels[k], policies[p], caps[a]);
                    torch_process(o, c, f32, &s, o->torch_search ? pairs : loaded_pair, t, worst);
                }
    }
    for (int i = 0; i < t->n; i++) {
        if (!isfinite(t->ms[i])) continue;
        const torch_setting_t *s = &t->set[i];
        if (t->loaded < 0 && !strcmp(s->kernels, "loaded") && !strcmp(s->policy, "default") &&
            !strcmp(s->cap, "loaded") && s->blas == N && s->intra == N)
            t->loaded = i;
        if (t->best < 0 || t->ms[i] < t->ms[t->best]) t->best = i;   // a tie keeps the first
    }
}

void bench_torch_tag(const torch_setting_t *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s b%d t%d %.3s%s%s", s->core, s->blas, s->intra, s->policy,
             strcmp(s->cap, "loaded") ? " " : "", strcmp(s->cap, "loaded") ? s->cap_ran : "");
}
