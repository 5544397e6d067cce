/* bench.c — `make bench`: how fast is one forward+backward, against the machine's DGEMM rate
 * and against PyTorch on the identical model (formulas in docs/performance.md).
 *
 *   build/bench [--threads N] [--steps S] [--warmup W] [--csv FILE] [--python PATH]
 *               [--no-torch] [--only SUBSTRING[,SUBSTRING...]] [--retries N] [--f32]
 *               [--wait SECONDS]
 *
 * The driver measures DGEMM at 1024³ through the BLAS the model uses, then runs every case in a
 * child process of its own (`bench --run CASE ...`, so each peak RSS is that case's alone) and
 * PyTorch (bench/bench_torch.py, float64 and float32, same thread count) on the same shapes,
 * prints a table and writes the numbers as CSV. Timing lives here only, never in the tests.
 *
 * PyTorch is timed at its fastest setting: every PyTorch case runs twice, with
 * OMP_WAIT_POLICY=PASSIVE and with it unset (libgomp's default: spin, then sleep), and the faster
 * median counts; the table's "policy" column and the CSV's torch64_policy, torch32_policy say
 * which won. Neither is always the faster: here the default once made the OpenMP workers and the
 * OpenBLAS threads Debian's build calls fight for two cores (d = 128 float32: median 150–190 ms,
 * passive 51–62 ms; docs/performance.md), yet an issue saw the default the faster.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_rng.h>
#include "config/config.h"
#include "model/session.h"
#include "model/model.h"
#include "nn/attention.h"
#include "nn/loss.h"
#include "measure/probe.h"
#include "train/optim.h"
#include "train/core_f32.h"
#include "util/blascore.h"
#include "util/threads.h"

/* OpenBLAS's own API, to record which kernels ran. */
char *openblas_get_config(void);
char *openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);

/* DGEMM (SGEMM) 1024^3 products timed for the machine's rate (about 20 ms each on 2 cores). */
#define DGEMM_REPS 25

typedef enum { K_STEP, K_UPDATE, K_PROBE, K_DYN } case_kind_t;

typedef struct {
    const char *name;       /* child's --run argument and CSV key */
    const char *label;      /* table label */
    case_kind_t kind;       /* forward+backward | forward+backward+Adam | a probe */
    int encdec;             /* 0: lm, 1: encoder-decoder (layers-layers, S = T) */
    int layers;
    const char *placement;  /* post | pre */
    int d, vocab, causal;   /* d_model (heads 4, d_ff 2d), vocabulary, causal lm */
} bench_case_t;

/* Issue 15 (small models, many short runs): one update (forward, backward, Adam) at d = 64, 128,
 * 256, lm and encdec 6-6, Post and Pre, n = S = T = 64, B = 8, V = 2000; d = 512 (V = 10000) for
 * the no-regression check; the atlas's run (configs/atlas.ini: d = 64, V = 256) at L = 6, 12, 24.
 * Issue 7: (a) the paper's IWSLT layer, d=512, 4 heads, d_ff=1024, n=64, batch 8, L=6, one
 * forward+backward; (b) the same at L=12 and L=24; (c) a probe of configs/postln_L12.ini. */
static const bench_case_t CASES[] = {
    {"u_lm_post_d64", "lm Post d=64 V=2000", K_UPDATE, 0, 6, "post", 64, 2000, 1},
    {"u_lm_pre_d64", "lm Pre  d=64 V=2000", K_UPDATE, 0, 6, "pre", 64, 2000, 1},
    {"u_ed_post_d64", "ed Post d=64 V=2000", K_UPDATE, 1, 6, "post", 64, 2000, 0},
    {"u_ed_pre_d64", "ed Pre  d=64 V=2000", K_UPDATE, 1, 6, "pre", 64, 2000, 0},
    {"u_lm_post_d128", "lm Post d=128 V=2000", K_UPDATE, 0, 6, "post", 128, 2000, 1},
    {"u_lm_pre_d128", "lm Pre  d=128 V=2000", K_UPDATE, 0, 6, "pre", 128, 2000, 1},
    {"u_ed_post_d128", "ed Post d=128 V=2000", K_UPDATE, 1, 6, "post", 128, 2000, 0},
    {"u_ed_pre_d128", "ed Pre  d=128 V=2000", K_UPDATE, 1, 6, "pre", 128, 2000, 0},
    {"u_lm_post_d256", "lm Post d=256 V=2000", K_UPDATE, 0, 6, "post", 256, 2000, 1},
    {"u_lm_pre_d256", "lm Pre  d=256 V=2000", K_UPDATE, 0, 6, "pre", 256, 2000, 1},
    {"u_ed_post_d256", "ed Post d=256 V=2000", K_UPDATE, 1, 6, "post", 256, 2000, 0},
    {"u_ed_pre_d256", "ed Pre  d=256 V=2000", K_UPDATE, 1, 6, "pre", 256, 2000, 0},
    {"u_lm_post_d512", "lm Post d=512 V=1e4", K_UPDATE, 0, 6, "post", 512, 10000, 1},
    {"u_lm_pre_d512", "lm Pre  d=512 V=1e4", K_UPDATE, 0, 6, "pre", 512, 10000, 1},
    {"u_atlas_L6", "atlas L=6 (d=64)", K_UPDATE, 0, 6, "post", 64, 256, 1},
    {"u_atlas_L12", "atlas L=12 (d=64)", K_UPDATE, 0, 12, "post", 64, 256, 1},
    {"u_atlas_L24", "atlas L=24 (d=64)", K_UPDATE, 0, 24, "post", 64, 256, 1},
    {"a_post_L6", "(a) Post-LN L=6", K_STEP, 0, 6, "post", 512, 1000, 0},
    {"a_pre_L6", "(a) Pre-LN  L=6", K_STEP, 0, 6, "pre", 512, 1000, 0},
    {"b_post_L12", "(b) Post-LN L=12", K_STEP, 0, 12, "post", 512, 1000, 0},
    {"b_pre_L12", "(b) Pre-LN  L=12", K_STEP, 0, 12, "pre", 512, 1000, 0},
    {"b_post_L24", "(b) Post-LN L=24", K_STEP, 0, 24, "post", 512, 1000, 0},
    {"b_pre_L24", "(b) Pre-LN  L=24", K_STEP, 0, 24, "pre", 512, 1000, 0},
    {"c_probe_L12", "(c) probe postln_L12", K_PROBE, 0, 12, "post", 512, 1000, 0},
    {"dyn_atlas", "dynamics: atlas L=6", K_DYN, 0, 6, "post", 64, 256, 1},
    {"dyn_d128", "dynamics: d=128 L=4", K_DYN, 0, 4, "pre", 128, 256, 1},
};
#define NUM_CASES ((int)(sizeof CASES / sizeof CASES[0]))

/* Issue 20: the cost of the dynamics' statistics (attention entropy and max |logit|, log Z) in an
 * update (K_DYN) at the atlas's size (configs/atlas.ini) and at configs/logit_growth.ini's
 * (d = 128, L = 4, d_ff = 512, B = 16, V = 256): the update's time, and the extra time of the
 * kernels with the statistics over the plain ones (nn/attention.h, nn/loss.h), both measured. */

/* The probe case: configs/postln_L12.ini with probe.seeds x probe.batches reduced from 10 x 10. */
#define PROBE_SEEDS "probe.seeds=2"
#define PROBE_BATCHES "probe.batches=5"

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

/* The float32 table's cases: the updates at d ≤ this (issue 24: d = 64, 128, 256). */
#define F32_MAX_D 256

typedef struct {
    int threads, steps, warmup, torch;
    int f32;                /* child: time the float32 core (K_STEP, K_UPDATE) */
    int retries;            /* repeat a run disturbed by other processes at most this often */
    double wait;            /* seconds to wait for an idle machine before each run (0: no) */
    const char *csv, *python, *only;
} bench_opts_t;

/* What one child reports. */
typedef struct {
    double ms_median, ms_min, ms_max;   /* per forward+backward (probe: per batch) */
    double total_s;                     /* probe: wall time of the whole probe */
    long rss_kb;                        /* peak resident set (VmHWM) */
    double params, acts;                /* doubles in the parameter and activation buffers */
    double gflop;                       /* nominal GFLOP per forward+backward */
    double faults;                      /* page faults per timed step */
    int ok;
} result_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorts x). */
static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
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

/* Nominal FLOPs of one forward+backward of model m (docs/performance.md, "FLOP count").
 * GEMMs: forward 2·rows·in·out per product, backward 2× that (dX and dW). Per stack: its
 * self-attentions over its own rows, the decoder's cross-attentions over the source, FFNs,
 * norms; then the logits and the loss. An update adds Adam's ~10 FLOPs per parameter. */
static double step_flops(const model_t *m, int update)
{
    const double B = m->B, C = m->C, F = m->F, V = m->V, H = m->H;
    double total = 0.0;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        const double T = st->kind == STACK_ENC ? m->S : m->T, N = B * T, L = st->L;
        const double self = 3.0 * 2.0 * N * 4.0 * C * C            // Q K V O
                            + 3.0 * 4.0 * B * T * T * C              // q·kᵀ, att·v
                            + (5.0 + 4.0) * B * H * T * T;           // softmax fwd 5, bwd 4
        const double ffn = 3.0 * 2.0 * N * 2.0 * C * F + 2.0 * N * F;   // W1 W2, relu
        double cross = 0.0;
        if (st->kind == STACK_DEC) {
            const double S = m->S, Nk = B * S;
            cross = 3.0 * 2.0 * (N + Nk) * 2.0 * C * C + 3.0 * 4.0 * B * T * S * C +
                    (5.0 + 4.0) * B * H * T * S;
        }
        int norms = 0;
        for (int k = 0; k < st->L * st->nsub; k++) norms += st->subs[k].norm.on;
        norms += st->final.on;
        total += L * (self + ffn + cross) + norms * (8.0 + 14.0) * N * C +
                 L * st->nsub * 2.0 * N * C;                        // residuals
        if (st->kind != STACK_ENC) total += 3.0 * 2.0 * N * C * V + 7.0 * N * V;   // logits, loss
    }
    return total + (update ? 10.0 * (double)m->num_params : 0.0);
}

/* Build the config of case c (0 or 2 on a config error, printed). */
static int case_config(const bench_case_t *c, config_t *cfg)
{
    char err[CONFIG_ERR_MAX], sets[16][64];
    int n = 0;
    snprintf(sets[n++], 64, "model.layers=%d", c->layers);
    snprintf(sets[n++], 64, "model.placement=%s", c->placement);
    snprintf(sets[n++], 64, "model.d_model=%d", c->d);
    snprintf(sets[n++], 64, "model.d_ff=%d", 2 * c->d);
    snprintf(sets[n++], 64, "model.vocab=%d", c->vocab);
    snprintf(sets[n++], 64, "model.heads=4");
    snprintf(sets[n++], 64, "model.seq_len=64");
    snprintf(sets[n++], 64, "data.batch=8");
    snprintf(sets[n++], 64, "data.zipf=1.1");
    snprintf(sets[n++], 64, "model.causal=%s", c->causal ? "true" : "false");
    if (c->encdec) {
        snprintf(sets[n++], 64, "model.arch=encdec");
        snprintf(sets[n++], 64, "model.dec_layers=%d", c->layers);
        snprintf(sets[n++], 64, "model.src_len=64");
    }
    if (c->kind == K_DYN && c->d == 128) {   // configs/logit_growth.ini's shape
        snprintf(sets[n++], 64, "model.d_ff=512");
        snprintf(sets[n++], 64, "data.batch=16");
        snprintf(sets[n++], 64, "model.activation=gelu");
    }
    const char *ptr[16];
    for (int i = 0; i < n; i++) ptr[i] = sets[i];
    const char *probe_sets[] = {PROBE_SEEDS, PROBE_BATCHES};
    int rc;
    if (c->kind == K_PROBE)
        rc = config_load(cfg, "configs/postln_L12.ini", probe_sets, 2, err, sizeof err);
    else
        rc = config_load(cfg, "configs/postln_L6.ini", ptr, n, err, sizeof err);
    if (rc) fprintf(stderr, "bench: %s\n", err);
    return rc;
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
    const double t = now_s();
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
                const attention_opts_t o = {0.0, NULL, NULL, ent, mxl, 0.0};
                double t0 = now_s();
                attention_forward(ctx, att, sl->qa, sl->ka, sl->v, b->B, b->T, b->T, m->C, m->H,
                                  m->causal, NULL);
                const double plain = now_s() - t0;
                t0 = now_s();
                attention_forward_opt(ctx, att, sl->qa, sl->ka, sl->v, b->B, b->T, b->T, m->C,
                                      m->H, m->causal, NULL, &o);
                extra += now_s() - t0 - plain;
            }
            double t0 = now_s();
            loss_forward(probs, losses, &count, m->logits, b->targets, N, V, 0.0);
            const double plain = now_s() - t0;
            t0 = now_s();
            loss_forward_opt(probs, losses, &count, m->logits, b->targets, N, V, 0.0, lse, amx);
            d[r] = 1e3 * (extra + now_s() - t0 - plain);
        }
        total = median(d, reps);
    }
    free(att); free(ctx); free(probs); free(losses); free(lse); free(amx); free(ent); free(mxl);
    free(d);
    return total;
}

static double gemm_rate(int n, int reps, int single, double *best);

/* Child: run case name, print one RESULT line (a float32 child adds the SGEMM 1024^3 rate it
 * measures right after its updates, so that %SGEMM compares two rates of the same minute: this
 * machine's speed drifts up to 2x within minutes). Returns the exit code. */
static int run_case(const char *name, const bench_opts_t *o)
{
    const bench_case_t *c = NULL;
    for (int i = 0; i < NUM_CASES; i++) if (!strcmp(CASES[i].name, name)) c = &CASES[i];
    if (!c) { fprintf(stderr, "bench: unknown case %s\n", name); return 2; }
    config_t cfg;
    if (case_config(c, &cfg)) return 2;
    threads_set(o->threads);
    char err[512];
    result_t r = {0};
    session_t ses;
    const core_t *k = o->f32 ? &CORE32 : &CORE64;
    if (o->f32 && (c->kind == K_PROBE || c->kind == K_DYN)) {
        fprintf(stderr, "bench: %s: float32 times updates only\n", name);
        return 2;
    }
    if (k->open(&ses, &cfg, err, sizeof err)) {
        fprintf(stderr, "bench: %s\n", err);
        return 1;
    }
    model_t *m = ses.model;
    r.params = (double)m->num_params;
    r.acts = (double)m->num_acts;
    r.gflop = 1e-9 * step_flops(m, c->kind == K_UPDATE || c->kind == K_DYN);
    double dyn_ms = NAN;
    if (c->kind == K_PROBE) {
        probe_axes_t ax;
        probe_t *p = probe_axes_from_model(&ax, m) ? NULL : probe_alloc(cfg.probe.seeds, &ax);
        const int nb = cfg.probe.seeds * cfg.probe.batches;
        batch_clock_t bc = {.ms = malloc((size_t)nb * sizeof(double)), .cap = nb};
        if (!p || !bc.ms) return 1;
        probe_axes_free(&ax);
        const double t0 = now_s();
        bc.last = t0;
        if (probe_run(&ses, p, batch_tick, &bc)) {
            fprintf(stderr, "bench: out of memory\n");
            return 1;
        }
        r.total_s = now_s() - t0;
        r.ms_median = median(bc.ms, bc.n);
        r.ms_min = bc.ms[0];
        r.ms_max = bc.ms[bc.n - 1];
        probe_free(p);
        free(bc.ms);
    } else {
        double *ms = malloc((size_t)o->steps * sizeof *ms);
        optim_t opt;
        if (!ms || k->optim_init(&opt, &cfg, m->num_params)) return 1;
        k->init(&ses, cfg.init.seed);
        k->next(&ses);
        struct rusage ru0, ru1;
        for (int s = 0; s < o->warmup + o->steps; s++) {
            if (s == o->warmup) getrusage(RUSAGE_SELF, &ru0);
            const double t0 = now_s();
            k->forward(m, &ses.batch);
            k->zero_grad(m);
            k->backward(m);
            if (c->kind == K_UPDATE || c->kind == K_DYN)
                k->optim_update(&opt, m->params, m->grads, 1e-4);
            if (s >= o->warmup) ms[s - o->warmup] = 1e3 * (now_s() - t0);
        }
        k->optim_free(&opt);
        getrusage(RUSAGE_SELF, &ru1);
        // page faults in the timed steps: 0 when a step allocates (and first touches) nothing
        r.faults = (double)(ru1.ru_minflt - ru0.ru_minflt + ru1.ru_majflt - ru0.ru_majflt) /
                   o->steps;
        r.ms_median = median(ms, o->steps);
        r.ms_min = ms[0];
        r.ms_max = ms[o->steps - 1];
        free(ms);
        if (c->kind == K_DYN) {   // lm only: the model's last forward is on ses.batch
            model_forward(m, &ses.batch);
            dyn_ms = dyn_overhead_ms(m, o->steps);
        }
    }
    k->close(&ses);
    r.rss_kb = peak_rss_kb();   // before the SGEMM's buffers
    double sgemm_best, sgemm = NAN;
    if (o->f32) sgemm = gemm_rate(1024, DGEMM_REPS, 1, &sgemm_best);
    printf("RESULT ms_median=%.4f ms_min=%.4f ms_max=%.4f total_s=%.4f rss_kb=%ld params=%.0f "
           "acts=%.0f gflop=%.6f faults=%.1f dyn_ms=%.4f sgemm=%.2f\n", r.ms_median, r.ms_min,
           r.ms_max, r.total_s, r.rss_kb, r.params, r.acts, r.gflop, r.faults, dyn_ms, sgemm);
    return 0;
}

/* Value of "key=" in a line of key=value pairs, or NAN. */
static double field(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* Run cmd, return the first line starting with tag in line (len), 0 on success. */
static int run_capture(const char *cmd, const char *tag, char *line, size_t len)
{
    FILE *f = popen(cmd, "r");
    int found = 0;
    if (!f) return 1;
    char buf[1024];
    while (fgets(buf, sizeof buf, f)) {
        if (!found && !strncmp(buf, tag, strlen(tag))) {
            snprintf(line, len, " %s", buf + strlen(tag));
            found = 1;
        }
    }
    const int st = pclose(f);
    return !(found && st == 0);
}

/* GEMM rate at n³ through the same BLAS on all the threads (OpenBLAS's own, which threads_set
 * leaves at 1 for nn/gemm.c), in float64 (DGEMM) or, single = 1, float32 (SGEMM: the ceiling of
 * a float32 model): median GFLOP/s of reps products (best in *best). */
static double gemm_rate(int n, int reps, int single, double *best)
{
    openblas_set_num_threads(threads_get());
    const size_t nn = (size_t)n * n, size = single ? sizeof(float) : sizeof(double);
    char *a = malloc(nn * size), *b = malloc(nn * size), *c = malloc(nn * size);
    double rates[DGEMM_REPS];
    if (!a || !b || !c || reps > DGEMM_REPS) { free(a); free(b); free(c); return NAN; }
    for (size_t i = 0; i < nn; i++) {
        const double x = (double)(i % 7) - 3.0, y = (double)(i % 5) * 0.5;
        if (single) {
            ((float *)a)[i] = (float)x;
            ((float *)b)[i] = (float)y;
            ((float *)c)[i] = 0.0f;
        } else {
            ((double *)a)[i] = x;
            ((double *)b)[i] = y;
            ((double *)c)[i] = 0.0;
        }
    }
    for (int r = -1; r < reps; r++) {
        const double t0 = now_s();
        if (single)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, (float *)a, n,
                        (float *)b, n, 0.0f, (float *)c, n);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, (double *)a, n,
                        (double *)b, n, 0.0, (double *)c, n);
        const double dt = now_s() - t0;
        if (r >= 0) rates[r] = 2.0 * n * (double)n * n / dt * 1e-9;
    }
    openblas_set_num_threads(1);
    *best = 0.0;
    for (int r = 0; r < reps; r++) *best = fmax(*best, rates[r]);
    free(a);
    free(b);
    free(c);
    return median(rates, reps);
}

/* Share of the machine's CPU time busy over 0.5 s, after 0.3 s to settle (other processes: the
 * bench itself is idle meanwhile), from /proc/stat; NAN if unreadable. */
static double machine_busy(void)
{
    unsigned long long v[2][8];
    // OpenBLAS's threads, started when the library loads, spin ~0.1 s before they sleep
    const struct timespec settle = {0, 300000000L};
    nanosleep(&settle, NULL);
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen("/proc/stat", "r");
        if (!f) return NAN;
        const int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[k][0], &v[k][1],
                             &v[k][2], &v[k][3], &v[k][4], &v[k][5], &v[k][6], &v[k][7]);
        fclose(f);
        if (n != 8) return NAN;
        if (k == 0) {
            const struct timespec half = {0, 500000000L};
            nanosleep(&half, NULL);
        }
    }
    double busy = 0.0, total = 0.0;
    for (int j = 0; j < 8; j++) {
        const double d = (double)(v[1][j] - v[0][j]);
        total += d;
        if (j != 3 && j != 4) busy += d;   // not idle, not iowait
    }
    return total > 0.0 ? busy / total : NAN;
}

/* CPU accounting of the machine and of this process (with its waited-for children). */
typedef struct {
    double busy, total;   /* machine-wide CPU seconds, busy and all, from /proc/stat */
    double own;           /* CPU seconds of this process and its finished children */
} cpu_mark_t;

static void cpu_mark(cpu_mark_t *m)
{
    unsigned long long v[8] = {0};
    const double hz = (double)sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/stat", "r");
    m->busy = m->total = NAN;
    if (f) {
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) == 8) {
            m->total = m->busy = 0.0;
            for (int j = 0; j < 8; j++) {
                m->total += (double)v[j] / hz;
                if (j != 3 && j != 4) m->busy += (double)v[j] / hz;
            }
        }
        fclose(f);
    }
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    m->own = self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
             kids.ru_stime.tv_sec + 1e-6 * (self.ru_utime.tv_usec + self.ru_stime.tv_usec +
                                            kids.ru_utime.tv_usec + kids.ru_stime.tv_usec);
}

/* Share of the machine's CPU time that other processes used between marks a and b. */
static double cpu_others(const cpu_mark_t *a, const cpu_mark_t *b)
{
    const double total = b->total - a->total;
    if (!(total > 0.0)) return NAN;
    return fmax(0.0, (b->busy - a->busy) - (b->own - a->own)) / total;
}

/* Wait (at most max_s seconds) until other processes leave the machine idle (< 5 % busy). */
static void wait_idle(double max_s)
{
    const double t0 = now_s();
    while (now_s() - t0 < max_s && !(machine_busy() < 0.05)) {
        const struct timespec pause = {2, 0};
        nanosleep(&pause, NULL);
    }
}

/* Run cmd and capture its tag line (run_capture) while no other process disturbs it: when others
 * used more than 5 % of the CPUs, wait for an idle machine (o->wait seconds at most) and repeat,
 * o->retries times at most. Returns run_capture's code; *others = share of the last attempt. */
static int run_measured(const bench_opts_t *o, const char *cmd, const char *tag, char *line,
                        size_t len, double *others)
{
    int rc = 1;
    for (int attempt = 0; attempt <= o->retries; attempt++) {
        if (attempt > 0 || o->wait > 0) wait_idle(o->wait);
        cpu_mark_t a, b;
        cpu_mark(&a);
        rc = run_capture(cmd, tag, line, len);
        cpu_mark(&b);
        *others = cpu_others(&a, &b);
        if (rc || !(*others > 0.05)) break;
        fprintf(stderr, "bench: others used %.0f%% of the CPUs during a run; %s\n", 100 * *others,
                attempt < o->retries ? "repeating it" : "keeping it (flagged !)");
    }
    return rc;
}

/* The DGEMM (single = 1: SGEMM) rate (median GFLOP/s, best in *best), repeated when other
 * processes disturbed it; *others = their CPU share during the last attempt. */
static double measure_gemm(const bench_opts_t *o, int single, double *best, double *others)
{
    double rate = NAN;
    for (int attempt = 0; attempt <= o->retries; attempt++) {
        if (attempt > 0 || o->wait > 0) wait_idle(o->wait);
        cpu_mark_t a, b;
        cpu_mark(&a);
        rate = gemm_rate(1024, DGEMM_REPS, single, best);
        cpu_mark(&b);
        *others = cpu_others(&a, &b);
        if (!(*others > 0.05)) break;
    }
    return rate;
}

/* Child run of case c in the float32 core; one line of the float32 table into out (1), or 0
 * when the child failed. ms64, rss64: the float64 child's; t32, r32: PyTorch float32's; sgemm:
 * the rate at the start, used when the child's own (measured after its updates) is missing. */
static int f32_row(const bench_opts_t *o, const char *self, const bench_case_t *c, double ms64,
                   double rss64, double t32, double r32, double gflop, double sgemm, char *out)
{
    char cmd[2048], line[1024];
    double others;
    snprintf(cmd, sizeof cmd, "'%s' --run %s --threads %d --steps %d --warmup %d --f32", self,
             c->name, o->threads, o->steps, o->warmup);
    if (run_measured(o, cmd, "RESULT", line, sizeof line, &others)) return 0;
    const double ms = field(line, "ms_median"), gflops = gflop / (ms * 1e-3);
    double rate = field(line, "sgemm");
    if (!isfinite(rate)) rate = sgemm;
    snprintf(out, 512, "%-21s %8.1f %8.1f %6.2f %9.1f %6.2f %7.1f %5.0f%% %7.0f %7.0f %7.0f "
             "%5.0f%%%s", c->label, ms64, ms, ms64 / ms, t32, t32 / ms, gflops,
             100.0 * gflops / rate, rss64, field(line, "rss_kb") / 1024.0, r32, 100.0 * others,
             others > 0.05 ? " !" : "");
    return 1;
}

/* The OpenMP wait policies PyTorch is timed under, the faster median counting (neither is always
 * the faster). Every child's command starts with `env -u OMP_WAIT_POLICY`, which drops a value
 * inherited from the user's shell, so "default" runs with it really unset (libgomp's default:
 * spin a while, then sleep); "passive" then sets it again. */
static const char *const TORCH_POLICY[2] = {"passive", "default"};
static const char *const TORCH_ENV[2] = {"OMP_WAIT_POLICY=PASSIVE", ""};

/* PyTorch's times of one case, [0] float64 and [1] float32. */
typedef struct {
    double ms_pol[2][2];   /* [dtype][policy]: median ms per update (NAN: not run or failed) */
    double ms[2], rss[2];  /* the faster policy's median ms and peak RSS MB */
    int won[2];            /* TORCH_POLICY index of the faster, -1 when none ran */
    char tag[8];           /* the table's "policy": float64's/float32's, 3 letters each, or - */
} torch_t;

/* PyTorch (bench/bench_torch.py) on case c's model in float64 and float32, each under both
 * TORCH_POLICY, into *t (nothing run for --no-torch, probes, dynamics); *worst: the largest
 * share of the CPUs other processes took meanwhile. */
static void torch_times(const bench_opts_t *o, const bench_case_t *c, torch_t *t, double *worst)
{
    char cmd[2048], tl[1024];
    double others;
    for (int d = 0; d < 2; d++) {
        t->ms[d] = t->rss[d] = NAN;
        t->won[d] = -1;
        for (int p = 0; p < 2; p++) {
            t->ms_pol[d][p] = NAN;
            if (!o->torch || c->kind == K_PROBE || c->kind == K_DYN) continue;
            snprintf(cmd, sizeof cmd, "env -u OMP_WAIT_POLICY %s OMP_NUM_THREADS=%d "
                     "OPENBLAS_NUM_THREADS=%d '%s' "
                     "bench/bench_torch.py --layers %d --placement %s --dtype %s "
                     "--threads %d --steps %d --warmup %d --arch %s --d-model %d --d-ff %d "
                     "--vocab %d --causal %d --update %d", TORCH_ENV[p], o->threads, o->threads,
                     o->python, c->layers, c->placement, d ? "float32" : "float64", o->threads,
                     o->steps, o->warmup, c->encdec ? "encdec" : "lm", c->d, 2 * c->d,
                     c->vocab, c->causal, c->kind == K_UPDATE);
            if (run_measured(o, cmd, "TORCH", tl, sizeof tl, &others)) continue;
            *worst = fmax(*worst, others);
            const double ms = t->ms_pol[d][p] = field(tl, "ms_median");
            if (t->won[d] < 0 || ms < t->ms[d]) {   // a tie keeps passive
                t->ms[d] = ms;
                t->rss[d] = field(tl, "rss_kb") / 1024.0;
                t->won[d] = p;
            }
        }
    }
    if (t->won[0] < 0 && t->won[1] < 0) snprintf(t->tag, sizeof t->tag, "-");
    else snprintf(t->tag, sizeof t->tag, "%.3s/%.3s", t->won[0] < 0 ? "-" : TORCH_POLICY[t->won[0]],
                  t->won[1] < 0 ? "-" : TORCH_POLICY[t->won[1]]);
}

/* Under a row of the table: PyTorch's median under each policy, the faster marked * (if run). */
static void print_torch(const torch_t *t)
{
    if (t->won[0] < 0 && t->won[1] < 0) return;
    printf("%-21s   (PyTorch ms, float64: %s %.1f%s, %s %.1f%s; float32: %s %.1f%s, %s %.1f%s)\n",
           "", TORCH_POLICY[0], t->ms_pol[0][0], t->won[0] == 0 ? "*" : "", TORCH_POLICY[1],
           t->ms_pol[0][1], t->won[0] == 1 ? "*" : "", TORCH_POLICY[0], t->ms_pol[1][0],
           t->won[1] == 0 ? "*" : "", TORCH_POLICY[1], t->ms_pol[1][1], t->won[1] == 1 ? "*" : "");
}

/* The table's header before case c, when its kind is not the last header's (shown; -1: none
 * yet; a probe stays under forward+backward). Returns the kind whose header is shown now. */
static int print_header(const bench_case_t *c, int shown)
{
    if ((int)c->kind == shown || (c->kind == K_PROBE && shown == K_STEP)) return shown;
    printf("%s%-21s %9s %8s %7s %6s %9s %6s %9s %6s %7s %8s %8s %5s %6s\n", shown < 0 ? "" : "\n",
           c->kind == K_UPDATE || c->kind == K_DYN ? "per update (fwd+bwd+Adam)"
                                                   : "per forward+backward",
           "ms", "ms/layer", "GFLOP/s", "%DGEMM", "torch f64", "x", "torch f32", "x", "policy",
           "RSS MB", "est. MB", "ratio", "other");
    return (int)c->kind;
}

/* The float32 table: the n lines f32_row made, under their header and key. */
static void print_f32_table(char rows32[][512], int n)
{
    printf("\nfloat32 (train.precision = float32), per update (fwd+bwd+Adam)\n%-21s %8s %8s "
           "%6s %9s %6s %7s %6s %7s %7s %7s %6s\n", "", "f64 ms", "f32 ms", "f64/32",
           "torch f32", "x", "GFLOP/s", "%SGEMM", "RSS f64", "RSS f32", "RSS t32", "other");
    for (int i = 0; i < n; i++) printf("%s\n", rows32[i]);
    printf("x = PyTorch float32 time / stability float32 time (> 1: stability faster); "
           "%%SGEMM of the SGEMM 1024^3 rate measured by the case's\nprocess right after its "
           "updates; RSS in MB (peak resident set of the case's process: f64, f32 ours, t32 "
           "PyTorch\nfloat32).\n");
}

/* The CSV of make bench at path: a header, then the n rows, each with the DGEMM rate at the
 * end and the PyTorch policies that won (torch) appended. 0, or 1 (with perror) when the file
 * cannot be written. */
static int write_csv(const char *path, char rows[][1024], const torch_t *torch, int n,
                     double dgemm_end)
{
    FILE *csv = fopen(path, "w");
    if (!csv) { perror(path); return 1; }
    fprintf(csv, "case,layers,placement,threads,steps,ms_median,ms_min,ms_max,ms_per_layer,"
                 "gflop_per_step,gflops,dgemm_gflops,frac_dgemm,torch64_ms,torch32_ms,"
                 "speedup_vs_torch64,speedup_vs_torch32,rss_mb,estimate_mb,rss_over_estimate,"
                 "torch64_rss_mb,torch32_rss_mb,probe_total_s,others_share,faults_per_step,"
                 "arch,d_model,vocab,kind,dgemm_end_gflops,torch64_policy,torch32_policy\n");
    for (int i = 0; i < n; i++)   // the policies empty when PyTorch did not run
        fprintf(csv, "%s,%.3f,%s,%s\n", rows[i], dgemm_end,
                torch[i].won[0] < 0 ? "" : TORCH_POLICY[torch[i].won[0]],
                torch[i].won[1] < 0 ? "" : TORCH_POLICY[torch[i].won[1]]);
    fclose(csv);
    printf("wrote %s\n", path);
    return 0;
}

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
                    "[--python PATH] [--no-torch] [--only SUB[,SUB...]] [--f32]\n"
                    "             [--retries N] [--wait SECONDS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (blascore_pin(argv)) return 2;   // the kernels the program runs (util/blascore.h)
    bench_opts_t o = {.threads = 0, .steps = 10, .warmup = 5, .torch = 1, .csv = NULL,
                      .python = "/usr/bin/python3", .only = NULL, .retries = 2, .wait = 0.0};
    const char *run = NULL;
    for (int i = 1; i < argc; i++) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--threads") && more) o.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && more) o.steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && more) o.warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && more) o.csv = argv[++i];
        else if (!strcmp(argv[i], "--retries") && more) o.retries = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--wait") && more) o.wait = atof(argv[++i]);
        else if (!strcmp(argv[i], "--python") && more) o.python = argv[++i];
        else if (!strcmp(argv[i], "--only") && more) o.only = argv[++i];
        else if (!strcmp(argv[i], "--run") && more) run = argv[++i];
        else if (!strcmp(argv[i], "--no-torch")) o.torch = 0;
        else if (!strcmp(argv[i], "--f32")) o.f32 = 1;
        else return usage();
    }
    if (o.threads < 1) o.threads = threads_from_env();
    if (o.steps < 1 || o.warmup < 0) return usage();
    if (run) return run_case(run, &o);

    threads_set(o.threads);
    char self[1024];
    const ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) return 1;
    self[sl] = '\0';
    // both reach popen's shell inside single quotes: a quote in either would end them
    if (strchr(self, '\'') || strchr(o.python, '\'')) {
        fprintf(stderr, "bench: a path with a single quote cannot be run: %s\n",
                strchr(self, '\'') ? self : o.python);
        return 2;
    }
    const char *wait = getenv("OMP_WAIT_POLICY");
    printf("bench: %d threads (the step's pool; OMP_WAIT_POLICY=%s), %d steps after %d "
           "warm-up\nBLAS: %s, kernels %s\n", o.threads, wait ? wait : "unset", o.steps,
           o.warmup, openblas_get_config(), openblas_get_corename());
    const double busy = machine_busy();
    printf("other load before the start: %.0f%% of the CPUs busy%s\n", 100.0 * busy,
           busy > 0.1 ? "  -- WARNING: the machine is not idle, the times are not reliable" : "");
    double dgemm_best, dgemm_others;
    const double dgemm = measure_gemm(&o, 0, &dgemm_best, &dgemm_others);
    printf("DGEMM 1024^3: %.1f GFLOP/s median of %d (best %.1f)%s\n", dgemm, DGEMM_REPS,
           dgemm_best, dgemm_others > 0.05 ? "  ! disturbed by other processes" : "");
    double sgemm_best, sgemm_others;
    const double sgemm = measure_gemm(&o, 1, &sgemm_best, &sgemm_others);
    printf("SGEMM 1024^3: %.1f GFLOP/s median (best %.1f), %.2f x DGEMM: float32's ceiling%s\n\n",
           sgemm, sgemm_best, sgemm / dgemm,
           sgemm_others > 0.05 ? "  ! disturbed by other processes" : "");
    fflush(stdout);

    static char rows[NUM_CASES][1024];   // CSV rows, written at the end (with the end DGEMM)
    static char rows32[NUM_CASES][512];  // the float32 table's lines
    static torch_t torch[NUM_CASES];     // PyTorch's times of the CSV's rows
    int nrows = 0, nrows32 = 0;
    double max_faults = 0.0;
    int shown = -1;   // the kind whose header was printed last
    for (int i = 0; i < NUM_CASES; i++) {
        const bench_case_t *c = &CASES[i];
        if (o.only && !only_matches(o.only, c->name)) continue;
        shown = print_header(c, shown);
        const int layers = c->layers * (c->encdec ? 2 : 1);
        char cmd[2048], line[1024];
        snprintf(cmd, sizeof cmd, "'%s' --run %s --threads %d --steps %d --warmup %d", self,
                 c->name, o.threads, o.steps, o.warmup);
        double others, worst = 0.0;
        if (run_measured(&o, cmd, "RESULT", line, sizeof line, &others)) {
            printf("%-21s failed\n", c->label);
            continue;
        }
        worst = fmax(worst, others);
        const double ms = field(line, "ms_median"), gflop = field(line, "gflop");
        const double params = field(line, "params"), acts = field(line, "acts");
        const double rss = field(line, "rss_kb") / 1024.0;
        // params + grads + Adam's two moments + saved activations, in MiB
        const double est = (4.0 * params + acts) * sizeof(double) / (1024.0 * 1024.0);
        torch_t *t = &torch[nrows];
        torch_times(&o, c, t, &worst);
        const double gflops = gflop / (ms * 1e-3), t64 = t->ms[0], t32 = t->ms[1];
        printf("%-21s %9.1f %8.2f %7.1f %5.0f%% %9.1f %6.2f %9.1f %6.2f %7s %8.0f %8.0f %5.2f "
               "%5.0f%%%s\n", c->label, ms, ms / layers, gflops, 100.0 * gflops / dgemm, t64,
               t64 / ms, t32, t32 / ms, t->tag, rss, est, rss / est, 100.0 * worst,
               worst > 0.05 ? " !" : "");
        print_torch(t);
        if (c->kind == K_PROBE)
            printf("%-21s   (ms per batch of a %s x %s probe, %.1f s in all)\n", "",
                   PROBE_SEEDS, PROBE_BATCHES, field(line, "total_s"));
        if (c->kind == K_DYN)
            printf("%-21s   (the dynamics' statistics: %.3f ms of the update's %.1f, %.2f %%)\n",
                   "", field(line, "dyn_ms"), ms, 100.0 * field(line, "dyn_ms") / ms);
        fflush(stdout);
        snprintf(rows[nrows++], sizeof rows[0],
                 "%s,%d,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.6f,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,"
                 "%.1f,%.1f,%.4f,%.1f,%.1f,%.4f,%.4f,%.1f,%s,%d,%d,%s", c->name, layers,
                 c->placement, o.threads, o.steps, ms, field(line, "ms_min"), field(line, "ms_max"),
                 ms / layers, gflop, gflops, dgemm, gflops / dgemm, t64, t32, t64 / ms,
                 t32 / ms, rss, est, rss / est, t->rss[0], t->rss[1], field(line, "total_s"), worst,
                 field(line, "faults"), c->encdec ? "encdec" : "lm", c->d, c->vocab,
                 c->kind == K_UPDATE ? "update" : c->kind == K_STEP ? "step" :
                 c->kind == K_DYN ? "dynamics" : "probe");
        if (c->kind != K_PROBE) max_faults = fmax(max_faults, field(line, "faults"));
        if (c->kind == K_UPDATE && c->d <= F32_MAX_D &&
            f32_row(&o, self, c, ms, rss, t32, t->rss[1], gflop, sgemm, rows32[nrows32]))
            printf("  float32: %s\n", rows32[nrows32++] + 21);   // also at the end, as a table
    }
    if (nrows32) print_f32_table(rows32, nrows32);
    double end_best, end_others;
    const double dgemm_end = measure_gemm(&o, 0, &end_best, &end_others);
    printf("\nDGEMM 1024^3 again at the end: %.1f GFLOP/s (start %.1f; the %%DGEMM column uses the "
           "start)%s\n", dgemm_end, dgemm, end_others > 0.05 ? "  ! disturbed" : "");
    printf("x = PyTorch time / stability time (> 1: stability faster); PyTorch's time is the "
           "faster median of\nOMP_WAIT_POLICY=PASSIVE and unset (libgomp's default), policy = "
           "which (float64/float32: pas, def).\nRSS = peak resident set of the case's process; "
           "est. = 8 bytes x (params + grads + 2 x params for Adam\n+ saved activations). other "
           "= largest share of the CPUs other processes used during the case's runs\n(! > 5%%: "
           "disturbed).\n");
    printf("page faults per timed step: %.1f at most (0: a step allocates and first-touches "
           "nothing)\n", max_faults);
    if (o.csv && write_csv(o.csv, rows, torch, nrows, dgemm_end)) return 1;
    return 0;
}
