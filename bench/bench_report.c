/* bench_report.c — `make bench`'s tables and CSV (docs/performance.md, "make bench": how to
 * read both ratios). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "bench.h"

void bench_print_header(case_kind_t kind)
{
    printf("\n%-21s %5s %8s %8s %7s %6s %9s %6s %9s %6s %-21s %7s %7s %6s\n",
           kind == K_UPDATE || kind == K_DYN ? "per update (+Adam)" : "per forward+backward",
           "", "ms", "ms/layer", "GFLOP/s", "%GEMM", "torch ld", "x",
           "torch best", "x", "best setting", "RSS MB", "est. MB", "other");
}

/* Whether two settings ran in one process (the same kernels, policy and capability asked). */
static int same_process(const torch_setting_t *a, const torch_setting_t *b)
{
    return !strcmp(a->kernels, b->kernels) && !strcmp(a->policy, b->policy) &&
           !strcmp(a->cap, b->cap);
}

/* Under a row: PyTorch's median at every setting, one line per process (kernel family, policy
 * and capability). */
static void print_settings(const torch_times_t *t)
{
    for (int i = 0; i < t->n; i++) {
        const torch_setting_t *s = &t->set[i];
        if (i > 0 && same_process(s, &t->set[i - 1])) continue;
        printf("%-26s PyTorch %s%s%s, %s%s%s:", "", s->kernels,
               strcmp(s->kernels, s->core) ? " = " : "", strcmp(s->kernels, s->core) ? s->core : "",
               s->policy, strcmp(s->cap, "loaded") ? ", ATen " : "",
               strcmp(s->cap, "loaded") ? s->cap_ran : "");
        for (int j = i; j < t->n && same_process(&t->set[j], s); j++)
            printf("  b%d t%d %.1f ms%s", t->set[j].blas, t->set[j].intra, t->ms[j],
                   j == t->best ? " *" : j == t->loaded ? " (as loaded)" : "");
        printf("\n");
    }
}

void bench_print_row(const bench_row_t *r)
{
    const bench_case_t *c = r->c;
    const char *line = r->line;
    const int layers = c->layers * (c->encdec ? 2 : 1);
    const double ms = bench_field(line, "ms_median"), gflop = bench_field(line, "gflop");
    const double rss = bench_field(line, "rss_kb") / 1024.0, gflops = gflop / (ms * 1e-3);
    // params + grads + Adam's two moments + saved activations, in MiB
    const double est = (4.0 * bench_field(line, "params") + bench_field(line, "acts")) *
                       (r->f32 ? 4.0 : 8.0) / (1024.0 * 1024.0);
    const torch_times_t *t = &r->torch;
    const double ld = t->loaded >= 0 ? t->ms[t->loaded] : NAN;
    const double best = t->best >= 0 ? t->ms[t->best] : NAN;
    char tag[64] = "-";
    if (t->best >= 0) bench_torch_tag(&t->set[t->best], tag, sizeof tag);
    printf("%-21s %5s %8.1f %8.2f %7.1f %5.0f%% %9.1f %6.2f %9.1f %6.2f %-21s %7.0f %7.0f "
           "%5.0f%%%s\n", c->label, bench_prec_name(r->f32), ms, ms / layers, gflops,
           100.0 * gflops / r->gemm, ld, ld / ms, best, best / ms, tag, rss, est,
           100.0 * r->others, r->others > 0.05 ? " !" : "");
    print_settings(t);
    if (c->kind == K_PROBE)
        printf("%-26s (ms per batch of a %s x %s probe, %.1f s in all)\n", "",
               BENCH_PROBE_SEEDS, BENCH_PROBE_BATCHES, bench_field(line, "total_s"));
    if (c->kind == K_DYN)
        printf("%-26s (the dynamics' statistics: %.3f ms of the update's %.1f, %.2f %%)\n", "",
               bench_field(line, "dyn_ms"), ms, 100.0 * bench_field(line, "dyn_ms") / ms);
    fflush(stdout);
}

void bench_print_notes(void)
{
    printf("\nx = PyTorch time / stability time (> 1: stability faster), each in its own "
           "precision. torch ld: PyTorch as\nloaded (OpenBLAS's own kernels and threads, "
           "torch.set_num_threads(N), OMP_WAIT_POLICY unset); torch best: the\nfastest setting "
           "searched (OpenBLAS kernels x OpenBLAS threads b x torch threads t x OMP_WAIT_POLICY "
           "pas|def\nx ATen's capability where --torch-capabilities asks for one, its name in "
           "the tag), its median at every\nsetting under the row (* won). %%GEMM: f64 rows of the "
           "DGEMM 1024^3 rate at the start,\nf32 rows of the SGEMM 1024^3 rate the float32 "
           "child measures right after its updates. RSS = peak resident set of the\ncase's process; "
           "est. = (params + grads + Adam's 2 moments + saved activations) x the element size.\n"
           "other = largest share of the CPUs other processes used during the case's runs "
           "(! > 5%%: disturbed).\n");
}

static const char *kind_name(case_kind_t k)
{
    return k == K_UPDATE ? "update" : k == K_STEP ? "step" : k == K_DYN ? "dynamics" : "probe";
}

/* Row i's median ms and both ratios (NAN when PyTorch did not run). */
static void ratios(const bench_row_t *r, double *ms, double *x_loaded, double *x_best)
{
    const torch_times_t *t = &r->torch;
    *ms = bench_field(r->line, "ms_median");
    *x_loaded = t->loaded >= 0 ? t->ms[t->loaded] / *ms : NAN;
    *x_best = t->best >= 0 ? t->ms[t->best] / *ms : NAN;
}

void bench_print_summary(const bench_row_t *rows, int n, const char *cpu, const char *ours)
{
    int any = 0;   // a float64 update row: the summary's key
    for (int i = 0; i < n; i++) any |= rows[i].c->kind == K_UPDATE && rows[i].f32 == BENCH_F64;
    if (!any) return;
    printf("\nAgainst PyTorch, per update, each in its own precision (%s; stability's kernels "
           "%s)\n%-21s %8s %7s %7s %6s %-21s %8s %7s %7s %6s %-21s\n", cpu, ours, "",
           "f64 ms", "x ld", "x best", "%DGEMM", "PyTorch f64 best", "f32 ms", "x ld", "x best",
           "%SGEMM", "PyTorch f32 best");
    for (int i = 0; i < n; i++) {
        if (rows[i].c->kind != K_UPDATE || rows[i].f32 != BENCH_F64) continue;
        const bench_row_t *r64 = &rows[i], *r32 = NULL;
        for (int j = i + 1; j < n; j++)
            if (rows[j].c == r64->c && rows[j].f32 == BENCH_F32) r32 = &rows[j];
        double ms[2] = {NAN, NAN}, xl[2] = {NAN, NAN}, xb[2] = {NAN, NAN}, pct[2] = {NAN, NAN};
        char tag[2][64] = {"-", "-"};
        for (int k = 0; k < 2; k++) {
            const bench_row_t *r = k ? r32 : r64;
            if (!r) continue;
            ratios(r, &ms[k], &xl[k], &xb[k]);
            pct[k] = 100.0 * bench_field(r->line, "gflop") / (ms[k] * 1e-3) / r->gemm;
            if (r->torch.best >= 0) bench_torch_tag(&r->torch.set[r->torch.best], tag[k], 64);
        }
        printf("%-21s %8.1f %7.2f %7.2f %5.0f%% %-21s %8.1f %7.2f %7.2f %5.0f%% %-21s\n",
               r64->c->label, ms[0], xl[0], xb[0], pct[0], tag[0], ms[1], xl[1], xb[1], pct[1],
               tag[1]);
    }
}

/* The row of case c in precision prec, or NULL. */
static const bench_row_t *row_of(const bench_row_t *rows, int n, const bench_case_t *c, int prec)
{
    for (int i = 0; i < n; i++)
        if (rows[i].c == c && rows[i].f32 == prec) return &rows[i];
    return NULL;
}

void bench_print_bf16(const bench_row_t *rows, int n, const char *cpu, const char *path,
                      const char *ours)
{
    int any = 0;
    for (int i = 0; i < n; i++) any |= rows[i].f32 >= BENCH_BF16E;
    if (!any) return;
    printf("\nbfloat16 and fp8 against float32, per update (%s; f32, bf16e, fp8: SGEMM on %s, "
           "bf16e and fp8 on rounded operands; bf16o: %s; PyTorch: float32 under "
           "torch.autocast(\"cpu\", torch.bfloat16))\n"
           "%-21s %8s %8s %6s %8s %6s %8s %6s %11s %6s %-21s %11s\n", cpu, ours, path, "",
           "f32 ms", "bf16e ms", "x f32", "bf16o ms", "x f32", "fp8 ms", "x f32", "torch bf16",
           "x", "best setting", "torch f32");
    for (int i = 0; i < n; i++) {   // one line per case: its first low-precision row
        if (rows[i].f32 < BENCH_BF16E) continue;
        const bench_case_t *c = rows[i].c;
        int first = 1;
        for (int j = 0; j < i; j++) first &= !(rows[j].c == c && rows[j].f32 >= BENCH_BF16E);
        if (!first) continue;
        const bench_row_t *r[4] = {row_of(rows, n, c, BENCH_F32), row_of(rows, n, c, BENCH_BF16E),
                                   row_of(rows, n, c, BENCH_BF16O), row_of(rows, n, c, BENCH_FP8)};
        double ms[4];
        for (int k = 0; k < 4; k++) ms[k] = r[k] ? bench_field(r[k]->line, "ms_median") : NAN;
        const torch_times_t *t = r[1] ? &r[1]->torch : NULL, *t32 = r[0] ? &r[0]->torch : NULL;
        const double tb = t && t->best >= 0 ? t->ms[t->best] : NAN;
        const double t32b = t32 && t32->best >= 0 ? t32->ms[t32->best] : NAN;
        const double bf16 = isnan(ms[2]) || ms[1] < ms[2] ? ms[1] : ms[2];
        char tag[64] = "-";
        if (t && t->best >= 0) bench_torch_tag(&t->set[t->best], tag, sizeof tag);
        printf("%-21s %8.1f %8.1f %6.2f %8.1f %6.2f %8.1f %6.2f %11.1f %6.2f %-21s %11.1f\n",
               c->label, ms[0], ms[1], ms[0] / ms[1], ms[2], ms[0] / ms[2], ms[3], ms[0] / ms[3],
               tb, tb / bf16, tag, t32b);
    }
    printf("x f32: float32's time over the row's (> 1: faster than float32); x: PyTorch's bfloat16 "
           "over our faster bfloat16\n");
}

int bench_write_csv(const char *path, const bench_row_t *rows, int n, const bench_opts_t *o,
                    const char *cpu, const char *ours, double dgemm_end)
{
    FILE *csv = fopen(path, "w");
    if (!csv) { perror(path); return 1; }
    fprintf(csv, "case,precision,kind,arch,placement,d_model,vocab,layers,threads,steps,"
                 "ms_median,ms_min,ms_max,ms_per_layer,gflop_per_step,gflops,gemm_gflops,"
                 "frac_gemm,rss_mb,estimate_mb,probe_total_s,others_share,faults_per_step,"
                 "cpu,kernels,torch_loaded_ms,torch_loaded_kernels,speedup_vs_torch_loaded,"
                 "torch_best_ms,speedup_vs_torch_best,torch_best_kernels,torch_best_blas_threads,"
                 "torch_best_torch_threads,torch_best_policy,torch_settings,torch_rss_mb,"
                 "dgemm_end_gflops,forward_ms,zero_grad_ms,backward_ms,optim_ms,"
                 "torch_best_capability\n");
    for (int i = 0; i < n; i++) {
        const bench_row_t *r = &rows[i];
        const bench_case_t *c = r->c;
        const char *l = r->line;
        const int layers = c->layers * (c->encdec ? 2 : 1);
        const double ms = bench_field(l, "ms_median"), gflop = bench_field(l, "gflop");
        const double est = (4.0 * bench_field(l, "params") + bench_field(l, "acts")) *
                           (r->f32 ? 4.0 : 8.0) / (1024.0 * 1024.0);
        const torch_times_t *t = &r->torch;
        const torch_setting_t *b = t->best >= 0 ? &t->set[t->best] : NULL;
        const double ld = t->loaded >= 0 ? t->ms[t->loaded] : NAN;
        const double best = b ? t->ms[t->best] : NAN;
        fprintf(csv, "%s,%s,%s,%s,%s,%d,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%.6f,%.3f,%.3f,%.4f,"
                "%.1f,%.1f,%.4f,%.4f,%.1f,%s,%s,%.4f,%s,%.4f,%.4f,%.4f,%s,%d,%d,%s,%d,%.1f,%.3f,"
                "%.4f,%.4f,%.4f,%.4f,%s\n",
                c->name, bench_prec_csv(r->f32), kind_name(c->kind),
                c->encdec ? "encdec" : "lm", c->placement, c->d, c->vocab, layers,
                o->threads, o->steps, ms, bench_field(l, "ms_min"),
                bench_field(l, "ms_max"), ms / layers, gflop, gflop / (ms * 1e-3), r->gemm,
                gflop / (ms * 1e-3) / r->gemm, bench_field(l, "rss_kb") / 1024.0, est,
                bench_field(l, "total_s"), r->others, bench_field(l, "faults"), cpu, ours, ld,
                t->loaded >= 0 ? t->set[t->loaded].core : "", ld / ms, best, best / ms,
                b ? b->core : "", b ? b->blas : 0, b ? b->intra : 0, b ? b->policy : "", t->n,
                b ? t->rss[t->best] : NAN, dgemm_end, bench_field(l, "forward_ms"),
                bench_field(l, "zero_grad_ms"), bench_field(l, "backward_ms"),
                bench_field(l, "optim_ms"), b ? b->cap_ran : "");
    }
    fclose(csv);
    printf("wrote %s\n", path);
    return 0;
}
