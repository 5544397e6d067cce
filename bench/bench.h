/* bench.h — `make bench`'s parts (docs/performance.md, "make bench"): the cases
 * (bench_cases.c), the child that times one case (bench_child.c), running and watching child
 * processes (bench_proc.c), PyTorch's search for its fastest setting (bench_torch.c), the
 * tables and the CSV (bench_report.c), and the driver (bench.c). Timing lives here only, never
 * in the tests. */
#ifndef STABILITY_BENCH_H
#define STABILITY_BENCH_H

#include <stddef.h>
#include "config/config.h"
#include "model/model.h"

/* DGEMM (SGEMM) 1024^3 products timed for the machine's rate (about 20 ms each on 2 cores). */
#define BENCH_GEMM_REPS 25

/* ---- cases (bench_cases.c) ---- */

typedef enum { K_STEP, K_UPDATE, K_PROBE, K_DYN } case_kind_t;

typedef struct {
    const char *name;       /* child's --run argument and CSV key */
    const char *label;      /* table label */
    case_kind_t kind;       /* forward+backward | forward+backward+Adam | a probe | dynamics */
    int encdec;             /* 0: lm, 1: encoder-decoder (layers-layers, S = T) */
    int layers;
    const char *placement;  /* post | pre */
    int d, vocab, causal;   /* d_model (heads 4, d_ff 2d), vocabulary, causal lm */
} bench_case_t;

extern const bench_case_t BENCH_CASES[];
extern const int BENCH_NUM_CASES;

/* The probe case's reductions of configs/postln_L12.ini's probe.seeds x probe.batches. */
#define BENCH_PROBE_SEEDS "probe.seeds=2"
#define BENCH_PROBE_BATCHES "probe.batches=5"

/* The case called name, or NULL. */
const bench_case_t *bench_case_find(const char *name);

/* Whether case c also runs in the float32 core (the updates, every d). */
int bench_case_f32(const bench_case_t *c);

/* The precisions a row runs in (the child's --f32, --bf16 and --fp8): float64, the float32
 * core, train.precision = bfloat16 with the emulated products or oneDNN's (train.gemm_path),
 * train.precision = fp8 (emulated E4M3/E5M2 operands into SGEMM). */
enum { BENCH_F64 = 0, BENCH_F32 = 1, BENCH_BF16E = 2, BENCH_BF16O = 3, BENCH_FP8 = 4 };

/* Whether case c also runs in bfloat16 and fp8 (the updates at d ≥ 128). */
int bench_case_bf16(const bench_case_t *c);

/* A precision's short name in the tables ("f64", "f32", "bf16e", "bf16o", "fp8"), and in the
 * CSV ("float64", "float32", "bfloat16", "bfloat16_onednn", "fp8"). */
const char *bench_prec_name(int prec);
const char *bench_prec_csv(int prec);

/* The config of case c into cfg: 0, or 2 on a config error (printed). */
int bench_case_config(const bench_case_t *c, config_t *cfg);

/* Nominal FLOPs of one forward+backward of m (+ Adam when update; docs/performance.md). */
double bench_step_flops(const model_t *m, int update);

/* ---- options ---- */

typedef struct {
    int threads, steps, warmup, torch;
    int f32;                    /* child: BENCH_F64, or the float32 core in BENCH_F32, BENCH_BF16E,
                                   BENCH_BF16O, BENCH_FP8 (K_STEP, K_UPDATE; bf16, fp8: K_UPDATE) */
    int retries;                /* repeat a run disturbed by other processes at most this often */
    double wait;                /* seconds to wait for an idle machine before each run (0: no) */
    const char *csv, *python, *only;
    const char *torch_kernels;  /* PyTorch's OpenBLAS families searched ("loaded,Haswell,...") */
    const char *torch_policies; /* OMP_WAIT_POLICY values searched ("passive,default") */
    const char *torch_caps;     /* ATen's CPU capabilities searched ("loaded,avx512") */
    int torch_search;           /* 0: PyTorch only as loaded (--torch-loaded) */
    int torch_steps;            /* PyTorch's timed updates per setting (--torch-steps) */
} bench_opts_t;

/* ---- child processes and rates (bench_proc.c) ---- */

double bench_now(void);

/* Median of n values (sorts x). */
double bench_median(double *x, int n);

/* Value of "key=" in a line of key=value pairs (a leading space before the first), or NAN. */
double bench_field(const char *line, const char *key);

/* The string value of "key=" in line into buf (up to a space), "" when absent. */
void bench_field_str(const char *line, const char *key, char *buf, size_t len);

/* Run cmd and capture up to max lines starting with tag (tag dropped, a space kept in front)
 * into lines[i] (each len bytes) while no other process disturbs it: when others used more
 * than 5 % of the CPUs, wait for an idle machine (o->wait seconds at most) and repeat,
 * o->retries times at most. Returns the number of lines (0: failed); *others = the share of
 * the machine other processes used during the last attempt. */
int bench_run_measured(const bench_opts_t *o, const char *cmd, const char *tag, char *lines,
                       int max, size_t len, double *others);

/* Share of the machine's CPU time busy over 0.5 s (others: the bench is idle), or NAN. */
double bench_machine_busy(void);

/* GEMM rate at n³ through the program's BLAS on all the threads, float64 (DGEMM) or single = 1
 * float32 (SGEMM): median GFLOP/s of reps products (best in *best). */
double bench_gemm_rate(int n, int reps, int single, double *best);

/* bench_gemm_rate at 1024³ repeated when other processes disturbed it (*others: their share). */
double bench_measure_gemm(const bench_opts_t *o, int single, double *best, double *others);

/* This machine's CPU model ("model name" of /proc/cpuinfo) into buf, "unknown" if unreadable. */
void bench_cpu_model(char *buf, size_t len);

/* ---- the child (bench_child.c) ---- */

/* `bench --run NAME`: time case name (o->f32: in the float32 core) and print one RESULT line.
 * Returns the exit code. */
int bench_child(const char *name, const bench_opts_t *o);

/* ---- PyTorch (bench_torch.c) ---- */

/* One setting of PyTorch: its OpenBLAS kernels ("loaded": OpenBLAS's own choice), OpenBLAS's
 * threads, torch.set_num_threads, OMP_WAIT_POLICY ("passive" or "default": unset), and the
 * vector width of its own kernels (ATEN_CPU_CAPABILITY; "loaded": PyTorch's own choice). */
typedef struct {
    char kernels[24];   /* as asked: "loaded" or OPENBLAS_CORETYPE's name */
    char core[24];      /* what OpenBLAS ran (openblas_get_corename) */
    int blas, intra;
    char policy[12];
    char cap[12];       /* as asked: "loaded" or ATEN_CPU_CAPABILITY's value */
    char cap_ran[12];   /* what ATen ran ("AVX2", "AVX512") */
} torch_setting_t;

#define TORCH_MAX_SETTINGS 48

/* PyTorch's times of one case in one precision. */
typedef struct {
    int n;                                  /* settings timed */
    torch_setting_t set[TORCH_MAX_SETTINGS];
    double ms[TORCH_MAX_SETTINGS];          /* median ms per update (NAN: failed) */
    double rss[TORCH_MAX_SETTINGS];         /* peak RSS MB of the setting's process */
    int loaded, best;                       /* indices of "as loaded" and the fastest, or -1 */
} torch_times_t;

/* PyTorch on case c's model in float64 (f32 = BENCH_F64), float32 (BENCH_F32) or float32 under
 * CPU autocast to bfloat16 (the bfloat16 rows), as loaded and at every setting of
 * the search (o->torch_kernels × OpenBLAS threads {1, N} × torch threads {1, N}, both ≤ N and
 * one = N, × o->torch_policies × o->torch_caps; hint != NULL: only "as loaded" and that
 * setting) into *t; *worst = the largest share of the CPUs other processes took meanwhile. */
void bench_torch(const bench_opts_t *o, const bench_case_t *c, int f32,
                 const torch_setting_t *hint, torch_times_t *t, double *worst);

/* The setting as a short tag: "SkylakeX b1 t2 pas" (kernels, OpenBLAS threads, torch threads,
 * policy: pas or def). */
void bench_torch_tag(const torch_setting_t *s, char *buf, size_t len);

/* ---- tables and CSV (bench_report.c) ---- */

/* One measured row: a case in one precision, ours against PyTorch's. */
typedef struct {
    const bench_case_t *c;
    int f32;
    char line[1024];        /* the child's RESULT line */
    double gemm;            /* the GEMM rate it is compared with (DGEMM, or SGEMM of the child) */
    double others;          /* the largest share of the CPUs others took during its runs */
    torch_times_t torch;
} bench_row_t;

/* The header of a table of rows of kind `kind` (both precisions). */
void bench_print_header(case_kind_t kind);

/* One row of the table (and the lines under it: PyTorch's winner, a probe's or the dynamics'
 * extras). */
void bench_print_row(const bench_row_t *r);

/* The notes under the tables. */
void bench_print_notes(void);

/* The summary table: every update case's time and both ratios, float64 and float32 side by
 * side, with the CPU, our kernels and PyTorch's winning settings. */
void bench_print_summary(const bench_row_t *rows, int n, const char *cpu, const char *ours);

/* The low-precision table: each update case with bfloat16 or fp8 rows, float32 against
 * bfloat16 emulated and through oneDNN (path: what oneDNN runs, e.g. "onednn 2.6.3
 * avx512_core_bf16"), fp8 emulated, and PyTorch's bfloat16 autocast at its fastest (PyTorch 1.13
 * has no fp8); ours: the SGEMM kernels the emulated rows run. */
void bench_print_bf16(const bench_row_t *rows, int n, const char *cpu, const char *path,
                      const char *ours);

/* The CSV at path (a header, one line per row), with the machine's cpu and our kernels.
 * 0, or 1 (with perror) when the file cannot be written. */
int bench_write_csv(const char *path, const bench_row_t *rows, int n, const bench_opts_t *o,
                    const char *cpu, const char *ours, double dgemm_end);

#endif
