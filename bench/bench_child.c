/* bench_child.c — `bench --run CASE`: one case timed in a process of its own, so that its peak
 * RSS is its own (docs/performance.md, "make bench"). Prints one RESULT line of key=value pairs
 * for the driver (bench.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "bench.h"
#include "config/config.h"
#include "model/session.h"
#include "model/model.h"
#include "nn/attention.h"
#include "nn/loss.h"
#include "measure/probe.h"
#include "train/optim.h"
#include "train/core_f32.h"
#include "util/threads.h"

/* The core a child times (train.precision; docs/design.md §2): float64, or the same functions
 * compiled with real = float (train/core_f32.h). */
typedef struct {
    int (*open)(session_t *s, const config_t *cfg, char *err, size_t errlen);
    void (*close)(session_t *s);
    void (*init)(session_t *s, unsigned long seed);
    int (*next)(session_t *s);
    double (*forward)(model_t *m, const batch_t *b);
    void (*zero_grad)(model_t *m);
    void (*backward)(model_t *m);
    int (*optim_init)(optim_t *o, const config_t *cfg, size_t n);
    void (*optim_update)(optim_t *o, double *params, const double *grads, double lr);
    void (*optim_free)(optim_t *o);
} core_t;

static const core_t CORE64 = {session_open, session_close, session_init, session_next_batch,
                              model_forward, model_zero_grad, model_backward, optim_init,
                              optim_update, optim_free};
static const core_t CORE32 = {session_open_f32, session_close_f32, session_init_f32,
                              session_next_batch_f32, model_forward_f32, model_zero_grad_f32,
                              model_backward_f32, optim_init_f32, optim_update_f32,
                              optim_free_f32};

/* What one child reports. */
typedef struct {
    double ms_median, ms_min, ms_max;   /* per forward+backward (probe: per batch) */
    double cpu_ms;                      /* median CPU time of the process per step (all threads) */
    double total_s;                     /* probe: wall time of the whole probe */
    long rss_kb;                        /* peak resident set (VmHWM) */
    double params, acts;                /* doubles in the parameter and activation buffers */
    double gflop;                       /* nominal GFLOP per forward+backward */
    double faults;                      /* page faults per timed step */
    double phase_ms[4];                 /* medians of the step's phases (PHASES) */
} result_t;

/* The phases of a step, in order: forward, zeroing the gradients, backward, optimizer. */
enum { PH_FORWARD, PH_ZERO, PH_BACKWARD, PH_OPTIM, PHASES };

/* CPU seconds of this process, all its threads (CLOCK_PROCESS_CPUTIME_ID): on a machine others
 * load, the steadier measure of a change (an A/B at one thread). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Peak resident set size of this process in KiB (VmHWM), or -1. */
static long peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* Probe progress: the time of every batch. */
typedef struct {
    double last;
    double *ms;
    int n, cap;
} batch_clock_t;

static void batch_tick(void *ctx, long done, long total)
{
    batch_clock_t *bc = ctx;
    const double t = bench_now();
    if (bc->n < bc->cap) bc->ms[bc->n++] = 1e3 * (t - bc->last);
    bc->last = t;
    (void)done;
    (void)total;
}

/* Median ms of the statistics' extra cost in one forward of m on its last batch: every attention
 * with and without them, the loss with and without log Z and max |logit|, reps times each. */
static double dyn_overhead_ms(model_t *m, int reps)
{
    const batch_t *b = &m->batch;
    const size_t N = (size_t)b->B * b->T, V = (size_t)m->V;
    double *att = malloc((size_t)m->H * N * b->T * sizeof(double));   // (B,H,T,T)
    double *ctx = malloc(N * m->C * sizeof(double)), *probs = malloc(N * V * sizeof(double));
    double *losses = malloc(N * sizeof(double)), *lse = malloc(N * sizeof(double));
    double *amx = malloc(N * sizeof(double)), *ent = malloc((size_t)b->B * m->H * sizeof(double));
    double *mxl = malloc((size_t)b->B * m->H * sizeof(double));
    double *d = malloc((size_t)reps * sizeof(double));
    double total = NAN;
    if (att && ctx && probs && losses && lse && amx && ent && mxl && d) {
        for (int r = 0; r < reps; r++) {
            double extra = 0.0;
            int count;
            for (int k = 0; k < m->stack[0].L * m->stack[0].nsub; k++) {
                const sublayer_t *sl = &m->stack[0].subs[k];
                if (sl->rule.kind == SUB_FFN) continue;
                const attention_opts_t o = {0.0, NULL, NULL, ent, mxl, 0.0, NULL};
                double t0 = bench_now();
                attention_forward(ctx, att, sl->qa, sl->ka, sl->v, b->B, b->T, b->T, m->C, m->H,
                                  m->causal, NULL);
                const double plain = bench_now() - t0;
                t0 = bench_now();
                attention_forward_opt(ctx, att, sl->qa, sl->ka, sl->v, b->B, b->T, b->T, m->C,
                                      m->H, m->causal, NULL, &o);
                extra += bench_now() - t0 - plain;
            }
            double t0 = bench_now();
            loss_forward(probs, losses, &count, m->logits, b->targets, N, V, 0.0);
            const double plain = bench_now() - t0;
            t0 = bench_now();
            loss_forward_opt(probs, losses, &count, m->logits, b->targets, N, V, 0.0, lse, amx);
            d[r] = 1e3 * (extra + bench_now() - t0 - plain);
        }
        total = bench_median(d, reps);
    }
    free(att); free(ctx); free(probs); free(losses); free(lse); free(amx); free(ent); free(mxl);
    free(d);
    return total;
}

/* The probe case: its batches' times into *r (0, or 1 out of memory). */
static int time_probe(session_t *ses, const config_t *cfg, result_t *r)
{
    model_t *m = ses->model;
    probe_axes_t ax;
    probe_t *p = probe_axes_from_model(&ax, m) ? NULL : probe_alloc(cfg->probe.seeds, &ax);
    const int nb = cfg->probe.seeds * cfg->probe.batches;
    batch_clock_t bc = {.ms = malloc((size_t)nb * sizeof(double)), .cap = nb};
    if (!p || !bc.ms) return 1;
    probe_axes_free(&ax);
    const double t0 = bench_now();
    bc.last = t0;
    if (probe_run(ses, p, batch_tick, &bc)) {
        fprintf(stderr, "bench: out of memory\n");
        return 1;
    }
    r->total_s = bench_now() - t0;
    r->ms_median = bench_median(bc.ms, bc.n);
    r->ms_min = bc.ms[0];
    r->ms_max = bc.ms[bc.n - 1];
    probe_free(p);
    free(bc.ms);
    return 0;
}

/* o->warmup then o->steps forward+backward passes (+ Adam for an update) in core k: their
 * median wall and CPU times and page faults into *r (0, or 1 out of memory). */
static int time_steps(const bench_opts_t *o, const bench_case_t *c, const core_t *k,
                      session_t *ses, const config_t *cfg, result_t *r)
{
    model_t *m = ses->model;
    double *ms = malloc((size_t)o->steps * sizeof *ms);
    double *cpu = malloc((size_t)o->steps * sizeof *cpu);
    double *ph = malloc((size_t)o->steps * PHASES * sizeof *ph);   // (steps, PHASES)
    optim_t opt;
    if (!ms || !cpu || !ph || k->optim_init(&opt, cfg, m->num_params)) return 1;
    k->init(ses, cfg->init.seed);
    k->next(ses);
    struct rusage ru0, ru1;
    for (int s = 0; s < o->warmup + o->steps; s++) {
        if (s == o->warmup) getrusage(RUSAGE_SELF, &ru0);
        double t[PHASES + 1];
        const double c0 = cpu_now();
        t[0] = bench_now();
        k->forward(m, &ses->batch);
        t[1] = bench_now();
        k->zero_grad(m);
        t[2] = bench_now();
        k->backward(m);
        t[3] = bench_now();
        if (c->kind == K_UPDATE || c->kind == K_DYN)
            k->optim_update(&opt, m->params, m->grads, 1e-4);
        t[4] = bench_now();
        if (s >= o->warmup) {
            const int i = s - o->warmup;
            ms[i] = 1e3 * (t[PHASES] - t[0]);
            cpu[i] = 1e3 * (cpu_now() - c0);
            for (int p = 0; p < PHASES; p++) ph[p * o->steps + i] = 1e3 * (t[p + 1] - t[p]);
        }
    }
    for (int p = 0; p < PHASES; p++) r->phase_ms[p] = bench_median(ph + p * o->steps, o->steps);
    free(ph);
    k->optim_free(&opt);
    getrusage(RUSAGE_SELF, &ru1);
    // page faults in the timed steps: 0 when a step allocates (and first touches) nothing
    r->faults = (double)(ru1.ru_minflt - ru0.ru_minflt + ru1.ru_majflt - ru0.ru_majflt) /
                o->steps;
    r->ms_median = bench_median(ms, o->steps);
    r->cpu_ms = bench_median(cpu, o->steps);
    free(cpu);
    r->ms_min = ms[0];
    r->ms_max = ms[o->steps - 1];
    free(ms);
    return 0;
}

/* Child: run case name, print one RESULT line (a float32 child adds the SGEMM 1024^3 rate it
 * measures right after its updates, so that %SGEMM compares two rates of the same minute: this
 * machine's speed drifts up to 2x within minutes). Returns the exit code. */
int bench_child(const char *name, const bench_opts_t *o)
{
    const bench_case_t *c = bench_case_find(name);
    if (!c) { fprintf(stderr, "bench: unknown case %s\n", name); return 2; }
    config_t cfg;
    if (bench_case_config(c, &cfg)) return 2;
    threads_set(o->threads);
    char err[512];
    result_t r = {0};
    session_t ses;
    const core_t *k = o->f32 ? &CORE32 : &CORE64;
    if (o->f32 && (c->kind == K_PROBE || c->kind == K_DYN)) {
        fprintf(stderr, "bench: %s: float32 times updates only\n", name);
        return 2;
    }
    if (o->f32 == BENCH_BF16E || o->f32 == BENCH_BF16O) {   // bfloat16, products by either path
        cfg.train.precision = PRECISION_BFLOAT16;
        cfg.train.gemm_path = o->f32 == BENCH_BF16O ? GEMM_PATH_ONEDNN : GEMM_PATH_EMULATED;
    }
    if (o->f32 == BENCH_FP8) cfg.train.precision = PRECISION_FP8;
    if (k->open(&ses, &cfg, err, sizeof err)) {
        fprintf(stderr, "bench: %s\n", err);
        return 1;
    }
    model_t *m = ses.model;
    r.params = (double)m->num_params;
    r.acts = (double)m->num_acts;
    r.gflop = 1e-9 * bench_step_flops(m, c->kind == K_UPDATE || c->kind == K_DYN);
    double dyn_ms = NAN;
    for (int p = 0; p < PHASES; p++) r.phase_ms[p] = NAN;   // a probe has no phases
    const int rc = c->kind == K_PROBE ? time_probe(&ses, &cfg, &r)
                                      : time_steps(o, c, k, &ses, &cfg, &r);
    if (rc) return rc;
    if (c->kind == K_DYN) {   // lm only: the model's last forward is on ses.batch
        model_forward(m, &ses.batch);
        dyn_ms = dyn_overhead_ms(m, o->steps);
    }
    k->close(&ses);
    r.rss_kb = peak_rss_kb();   // before the SGEMM's buffers
    double sgemm_best, sgemm = NAN;
    if (o->f32 && !getenv("BENCH_NO_GEMM"))   // BENCH_NO_GEMM: a profile of the updates alone
        sgemm = bench_gemm_rate(1024, BENCH_GEMM_REPS, 1, &sgemm_best);
    printf("RESULT ms_median=%.4f cpu_ms=%.4f ms_min=%.4f ms_max=%.4f total_s=%.4f rss_kb=%ld "
           "params=%.0f acts=%.0f gflop=%.6f faults=%.1f dyn_ms=%.4f sgemm=%.2f forward_ms=%.4f "
           "zero_grad_ms=%.4f backward_ms=%.4f optim_ms=%.4f\n", r.ms_median, r.cpu_ms, r.ms_min,
           r.ms_max, r.total_s, r.rss_kb, r.params, r.acts, r.gflop, r.faults, dyn_ms, sgemm,
           r.phase_ms[PH_FORWARD], r.phase_ms[PH_ZERO], r.phase_ms[PH_BACKWARD],
           r.phase_ms[PH_OPTIM]);
    return 0;
}

