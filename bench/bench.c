/* bench.c — `make bench`: how fast is one update, against the machine's GEMM rate and against
 * PyTorch at its fastest on the identical model (docs/performance.md, "make bench").
 *
 *   build/bench/bench [--threads N] [--steps S] [--warmup W] [--csv FILE] [--python PATH]
 *                     [--only SUB[,SUB...]] [--precision P[,P...]] [--no-torch]
 *                     [--torch-kernels LIST] [--torch-policies LIST] [--torch-loaded]
 *                     [--torch-steps S]
 *                     [--retries N] [--wait SECONDS]
 *
 * The driver measures DGEMM and SGEMM at 1024³ through the BLAS the model uses, then runs every
 * case in a child process of its own (`bench --run CASE [--f32]`, bench_child.c: each peak RSS
 * is that case's alone), the update cases in float64 and in float32 (and at d ≥ 256 in bfloat16,
 * its products emulated and through oneDNN: `--bf16 emulated|onednn`), and PyTorch
 * (bench/bench_torch.py) on the same model, threads and precision, as loaded and at every
 * setting of the search (bench_torch.c); prints a table per kind of case, a summary of both
 * ratios, and writes one CSV line per case and precision. The forward+backward cases at d = 512
 * time PyTorch as loaded and at the setting that won the update case of their placement at
 * d = 512 (a full search there would take as long as the rest together); run without those
 * updates, they search in full.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"
#include "nn/gemm_dnnl.h"
#include "util/blascore.h"
#include "util/threads.h"

/* OpenBLAS's own API, to record which kernels run. */
char *openblas_get_config(void);

/* Whether name contains one of the comma-separated substrings of only. */
static int only_matches(const char *only, const char *name)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", only);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (strstr(name, t)) return 1;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench [--threads N] [--steps S] [--warmup W] [--csv FILE] "
                    "[--python PATH] [--only SUB[,SUB...]]\n"
                    "             [--precision f64|f32|bf16|fp8|both|all[,...]] [--no-torch] [--torch-kernels "
                    "LIST] [--torch-policies LIST]\n"
                    "             [--torch-capabilities LIST] [--torch-loaded] [--torch-steps S] "
                    "[--retries N] [--wait SECONDS]\n");
    return 2;
}

/* Parse argv into o (run: the child's case, precision: bits 1 f64, 2 f32, 4 bf16, 8 fp8); 0 or
 * usage's 2. */
static int parse(int argc, char **argv, bench_opts_t *o, const char **run, int *precision)
{
    for (int i = 1; i < argc; i++) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--threads") && more) o->threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && more) o->steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && more) o->warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && more) o->csv = argv[++i];
        else if (!strcmp(argv[i], "--retries") && more) o->retries = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--wait") && more) o->wait = atof(argv[++i]);
        else if (!strcmp(argv[i], "--python") && more) o->python = argv[++i];
        else if (!strcmp(argv[i], "--only") && more) o->only = argv[++i];
        else if (!strcmp(argv[i], "--run") && more) *run = argv[++i];
        else if (!strcmp(argv[i], "--torch-kernels") && more) o->torch_kernels = argv[++i];
        else if (!strcmp(argv[i], "--torch-policies") && more) o->torch_policies = argv[++i];
        else if (!strcmp(argv[i], "--torch-capabilities") && more) o->torch_caps = argv[++i];
        else if (!strcmp(argv[i], "--torch-loaded")) o->torch_search = 0;
        else if (!strcmp(argv[i], "--torch-steps") && more) o->torch_steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-torch")) o->torch = 0;
        else if (!strcmp(argv[i], "--f32")) o->f32 = o->f32 ? o->f32 : BENCH_F32;
        else if (!strcmp(argv[i], "--bf16") && more) {
            const char *p = argv[++i];
            o->f32 = !strcmp(p, "emulated") ? BENCH_BF16E : !strcmp(p, "onednn") ? BENCH_BF16O : -1;
            if (o->f32 < 0) return usage();
        } else if (!strcmp(argv[i], "--fp8")) o->f32 = BENCH_FP8;
        else if (!strcmp(argv[i], "--precision") && more) {   // a comma-separated list
            char buf[64];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            *precision = 0;
            for (char *save = NULL, *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                const int bits = !strcmp(p, "f64") ? 1 : !strcmp(p, "f32") ? 2 : !strcmp(p, "both") ? 3
                               : !strcmp(p, "bf16") ? 4 : !strcmp(p, "fp8") ? 8
                               : !strcmp(p, "all") ? 15 : 0;
                if (!bits) return usage();
                *precision |= bits;
            }
            if (!*precision) return usage();
        } else return usage();
    }
    if (o->threads < 1) o->threads = threads_from_env();
    if (o->torch_steps < 1) o->torch_steps = o->steps;
    return o->steps < 1 || o->warmup < 0 ? usage() : 0;
}

/* Case c in precision f32 (a BENCH_*; ours, then PyTorch's) into *r; hint: PyTorch's setting
 * to time besides as loaded (NULL: search); torch: PyTorch's times already measured for this
 * case and precision (the oneDNN row takes the emulated row's: PyTorch has one bfloat16), or
 * NULL. 0, or 1 when our child failed. */
static int measure(const bench_opts_t *o, const char *self, const bench_case_t *c, int f32,
                   double dgemm, const torch_setting_t *hint, const torch_times_t *torch,
                   bench_row_t *r)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' --run %s --threads %d --steps %d --warmup %d%s%s", self,
             c->name, o->threads, o->steps, o->warmup, f32 ? " --f32" : "",
             f32 == BENCH_BF16E ? " --bf16 emulated" : f32 == BENCH_BF16O ? " --bf16 onednn"
             : f32 == BENCH_FP8 ? " --fp8" : "");
    r->c = c;
    r->f32 = f32;
    r->others = 0.0;
    if (!bench_run_measured(o, cmd, "RESULT", r->line, 1, sizeof r->line, &r->others)) {
        printf("%-21s %5s failed\n", c->label, bench_prec_name(f32));
        return 1;
    }
    // a float32 child measures SGEMM right after its updates: this machine's speed drifts
    r->gemm = f32 ? bench_field(r->line, "sgemm") : dgemm;
    static const torch_times_t none = {.loaded = -1, .best = -1};   // PyTorch 1.13 has no fp8
    if (torch || f32 == BENCH_FP8) r->torch = torch ? *torch : none;
    else bench_torch(o, c, f32, hint, &r->torch, &r->others);
    bench_print_row(r);
    return 0;
}

/* This program's path into self (len bytes), for its children: 0; 1 when it cannot be read; 2
 * when it or the Python path holds a single quote (both reach popen's shell inside single
 * quotes: a quote in either would end them). */
static int self_path(const bench_opts_t *o, char *self, size_t len)
{
    const ssize_t sl = readlink("/proc/self/exe", self, len - 1);
    if (sl <= 0) return 1;
    self[sl] = '\0';
    if (strchr(self, '\'') || strchr(o->python, '\'')) {
        fprintf(stderr, "bench: a path with a single quote cannot be run: %s\n",
                strchr(self, '\'') ? self : o->python);
        return 2;
    }
    return 0;
}

/* The header: CPU, BLAS and kernels, PyTorch's search, the machine's other load, then DGEMM and
 * SGEMM at 1024³. Returns the DGEMM rate (the reference of %DGEMM). */
static double print_machine(const bench_opts_t *o, const char *cpu)
{
    printf("bench: %s, %d threads, %d steps after %d warm-up (PyTorch: %d a setting)\nBLAS: %s, "
           "stability's kernels %s\nPyTorch searched over kernels {%s} x OMP_WAIT_POLICY {%s} x "
           "ATen capability {%s} x threads split\n", cpu, o->threads, o->steps, o->warmup,
           o->torch_steps, openblas_get_config(), blascore_name(),
           o->torch_search ? o->torch_kernels : "loaded",
           o->torch_search ? o->torch_policies : "default",
           o->torch_search ? o->torch_caps : "loaded");
    const double busy = bench_machine_busy();
    printf("other load before the start: %.0f%% of the CPUs busy%s\n", 100.0 * busy,
           busy > 0.1 ? "  -- WARNING: the machine is not idle, the times are not reliable" : "");
    double dgemm_best, dgemm_others, sgemm_best, sgemm_others;
    const double dgemm = bench_measure_gemm(o, 0, &dgemm_best, &dgemm_others);
    printf("DGEMM 1024^3: %.1f GFLOP/s median of %d (best %.1f)%s\n", dgemm, BENCH_GEMM_REPS,
           dgemm_best, dgemm_others > 0.05 ? "  ! disturbed by other processes" : "");
    const double sgemm = bench_measure_gemm(o, 1, &sgemm_best, &sgemm_others);
    printf("SGEMM 1024^3: %.1f GFLOP/s median (best %.1f), %.2f x DGEMM: float32's ceiling%s\n",
           sgemm, sgemm_best, sgemm / dgemm,
           sgemm_others > 0.05 ? "  ! disturbed by other processes" : "");
    printf("bfloat16 products: emulated (rounded operands, SGEMM) and %s; train.gemm_path = "
           "auto runs %s here (%s)\n", gemm_dnnl_name(), gemm_dnnl_amx() ? "oneDNN" : "the emulation",
           gemm_dnnl_amx() ? "AMX" : "no AMX");
    fflush(stdout);
    return dgemm;
}

/* Every case --only picks, in each precision asked (bits 1 f64, 2 f32, 4 bf16, 8 fp8), a row
 * each into rows (room for cap); the forward+backward cases time PyTorch at the setting that won the
 * float64 d = 512 update of their placement. Returns the rows. */
static int run_cases(const bench_opts_t *o, const char *self, int precision, double dgemm,
                     bench_row_t *rows, int cap)
{
    torch_setting_t won512[2];   // PyTorch's float64 winner of the d = 512 updates, post/pre
    int have512[2] = {0, 0}, nrows = 0, shown = -1;
    for (int i = 0; i < BENCH_NUM_CASES && nrows + 5 <= cap; i++) {
        const bench_case_t *c = &BENCH_CASES[i];
        if (o->only && !only_matches(o->only, c->name)) continue;
        const int pre = !strcmp(c->placement, "pre");
        const torch_setting_t *hint = c->kind == K_STEP && have512[pre] ? &won512[pre] : NULL;
        const torch_times_t *bf16_torch = NULL;   // the emulated bfloat16 row's PyTorch
        for (int f32 = BENCH_F64; f32 <= BENCH_FP8; f32++) {
            const int bf16 = f32 >= BENCH_BF16E;   // bfloat16 or fp8: the same cases
            const int bit = f32 == BENCH_FP8 ? 8 : bf16 ? 4 : 1 << f32;
            if (!(precision & bit) || (f32 == BENCH_F32 && !bench_case_f32(c)) ||
                (bf16 && (!bench_case_bf16(c) || (f32 == BENCH_BF16O && !gemm_dnnl_available()))))
                continue;
            if (shown != (int)c->kind) bench_print_header(c->kind);
            shown = (int)c->kind;
            bench_row_t *r = &rows[nrows];
            if (measure(o, self, c, f32, dgemm, hint, f32 == BENCH_BF16O ? bf16_torch : NULL, r))
                continue;
            if (f32 == BENCH_BF16E) bf16_torch = &r->torch;
            nrows++;
            if (c->kind == K_UPDATE && c->d == 512 && !f32 && r->torch.best >= 0) {
                won512[pre] = r->torch.set[r->torch.best];
                have512[pre] = 1;
            }
        }
    }
    return nrows;
}

/* The closing lines: DGEMM again (the machine's drift), the most page faults of a timed step,
 * the time taken since t_start. Returns DGEMM's rate at the end (the CSV's). */
static double print_end(const bench_opts_t *o, const bench_row_t *rows, int nrows, double dgemm,
                        double t_start)
{
    double end_best, end_others, max_faults = 0.0;
    const double dgemm_end = bench_measure_gemm(o, 0, &end_best, &end_others);
    printf("DGEMM 1024^3 again at the end: %.1f GFLOP/s (start %.1f; %%DGEMM uses the start)%s\n",
           dgemm_end, dgemm, end_others > 0.05 ? "  ! disturbed" : "");
    for (int i = 0; i < nrows; i++)
        if (rows[i].c->kind != K_PROBE)
            max_faults = fmax(max_faults, bench_field(rows[i].line, "faults"));
    printf("page faults per timed step: %.1f at most (0: a step allocates and first-touches "
           "nothing)\nbench took %.0f s\n", max_faults, bench_now() - t_start);
    return dgemm_end;
}

int main(int argc, char **argv)
{
    if (blascore_pin(argv)) return 2;   // the kernels the program runs (util/blascore.h)
    bench_opts_t o = {.threads = 0, .steps = 10, .warmup = 5, .torch = 1, .csv = NULL,
                      .python = "/usr/bin/python3", .only = NULL, .retries = 2, .wait = 0.0,
                      .torch_kernels = "loaded,Haswell,SkylakeX",
                      .torch_policies = "passive,default", .torch_caps = "loaded",
                      .torch_search = 1,
                      .torch_steps = 6};
    const char *run = NULL;
    int precision = 15;
    if (parse(argc, argv, &o, &run, &precision)) return 2;
    if (run) return bench_child(run, &o);

    threads_set(o.threads);
    char self[1024], cpu[256];
    const int bad_path = self_path(&o, self, sizeof self);
    if (bad_path) return bad_path;
    bench_cpu_model(cpu, sizeof cpu);
    const double t_start = bench_now();
    const double dgemm = print_machine(&o, cpu);
    static bench_row_t rows[5 * 64];
    const int nrows = run_cases(&o, self, precision, dgemm, rows,
                                (int)(sizeof rows / sizeof rows[0]));
    bench_print_summary(rows, nrows, cpu, blascore_name());
    bench_print_bf16(rows, nrows, cpu, gemm_dnnl_name(), blascore_name());
    bench_print_notes();
    const double dgemm_end = print_end(&o, rows, nrows, dgemm, t_start);
    if (o.csv && bench_write_csv(o.csv, rows, nrows, &o, cpu, blascore_name(), dgemm_end))
        return 1;
    return 0;
}
