/* run_init.c — the verbs that run the model at initialisation: the probe (Xiong et al. 2020
 * §3.4), a dump of one batch, and the finite-difference check (docs/design.md §3, §8). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "train/core_f32.h"
#include "train/optim.h"
#include "measure/curvature.h"
#include "measure/slq.h"
#include "model/session.h"
#include "io/h5io.h"
#include "measure/gradcheck.h"
#include "measure/probe.h"
#include "report/report.h"
#include "run/run.h"
#include "util/progress.h"

/* Resolved INI text of cfg (malloc'd). */
static char *config_text(const config_t *cfg)
{
    const size_t len = config_to_ini(cfg, NULL, 0) + 1;
    char *ini = malloc(len);
    if (ini) config_to_ini(cfg, ini, len);
    return ini;
}

/* Open cfg's session; prints why not. Returns 0, 1 or 2. */
static int open_session(session_t *s, const config_t *cfg)
{
    char err[1024];
    const int rc = session_open(s, cfg, err, sizeof err);
    if (rc == 2) fprintf(stderr, "%s: %s\n", cfg->path[0] ? cfg->path : "config", err);
    else if (rc) fprintf(stderr, "stability: %s\n", err);
    return rc;
}

/* The session of cfg, initialised (and perturbed), with its first batch and dropout masks:
 * what dump and gradcheck see (and training's update 1). */
static int first_batch(session_t *s, const config_t *cfg, double perturb)
{
    const int rc = open_session(s, cfg);
    if (rc) return rc;
    session_init(s, cfg->init.seed);
    if (perturb > 0) model_perturb(s->model, s->rng_init, perturb);
    if (session_next_batch(s)) {
        fprintf(stderr, "stability: %s\n", s->error);
        session_close(s);
        return 2;
    }
    return 0;
}

/* A probe's work in units of one seed-batch (a forward+backward pass): its seeds × batches,
 * then per seed a curvature row of `row` passes (docs/design.md §10, "Cost"), so a sweep's
 * progress and ETA count the rows. */
typedef struct {
    progress_t bar;
    long batches;   /* probe.seeds × probe.batches */
    double row;     /* a seed's curvature passes (0: none) */
    int seeds;
} probe_work_t;

static long probe_units(const probe_work_t *w, long batches, long rows)
{
    return (long)fmin((double)batches + w->row * (double)rows, 1e15);   // a long's range
}

/* The probe's bar: seed-batches done. */
static void probe_batch_progress(void *ctx, long done, long total)
{
    probe_work_t *w = ctx;
    progress_update_units(&w->bar, done, total, probe_units(w, done, 0),
                          probe_units(w, w->batches, w->seeds), NULL);
}

/* The curvature's bar: seeds measured. */
static void probe_curv_progress(void *ctx, long done, long total)
{
    probe_work_t *w = ctx;
    progress_update_units(&w->bar, done, total, probe_units(w, w->batches, done),
                          probe_units(w, w->batches, w->seeds), NULL);
}

/* The work of s's probe (w->row from the measure's K capped at the parameters, no blocks). */
static void probe_work(probe_work_t *w, const session_t *s)
{
    const config_t *c = &s->cfg;
    const double n = (double)s->model->num_params;
    w->batches = (long)c->probe.seeds * c->probe.batches;
    w->seeds = c->probe.seeds;
    w->row = c->probe.curvature_every > 0
                 ? curv_cost_passes(fmin(c->probe.curvature_iters, n), 0.0, 0,
                                    (double)(s->model->caps.tokens + s->model->caps.src_tokens),
                                    c->train.optimizer != OPT_SGD, 0)
                 : 0.0;
}

/* Measure into p with a progress bar; prints the time. */
static int measure(session_t *s, probe_t *p, const run_options_t *o)
{
    probe_work_t w;
    probe_work(&w, s);
    char label[80];
    snprintf(label, sizeof label, "probe %.40s", s->cfg.name);
    progress_start(&w.bar, label, o->quiet);
    const double t0 = progress_now();
    const int rc = probe_run(s, p, probe_batch_progress, &w);
    progress_end(&w.bar);
    if (rc) fprintf(stderr, "stability: %s\n", rc == 2 ? s->error : "out of memory");
    else if (!o->quiet)
        printf("%d seeds x %d batches in %.1f s\n", s->cfg.probe.seeds, s->cfg.probe.batches,
               progress_now() - t0);
    return rc;
}

/* The preconditioner the first update of cfg's optimizer would take from m's gradient, clipped
 * as training clips it and divided by the clip factor (the step taken, docs/design.md §10), over
 * the model's tensors as training's (probe_precond_fn; train/optim.h). */
static int first_precond(void *ctx, const model_t *m, double *P, unsigned char *floored)
{
    const config_t *cfg = ctx;
    optim_t opt;
    real *g = malloc(m->num_params * sizeof(real));
    // the model's tensors: μP's rates and the floor per tensor (docs/design.md §10)
    if (!g || optim_init(&opt, cfg, m->num_params)) { free(g); return -1; }
    if (optim_set_tensors(&opt, m)) { optim_free(&opt); free(g); return -1; }
    memcpy(g, m->grads, m->num_params * sizeof(real));
    const double norm = optim_clip(g, m->num_params, cfg->train.clip);
    optim_precond(&opt, m->params, g, P, floored);
    optim_precond_clip(P, m->num_params, optim_clip_factor(norm, cfg->train.clip));
    const int has = opt.kind != OPT_SGD;
    optim_free(&opt);
    free(g);
    return has;
}

/* probe.curvature_every > 0: the curvature of every seed, with a progress bar. 0, 1 or 2. */
static int measure_curvature(session_t *s, probe_t *p, const run_options_t *o)
{
    probe_work_t w;
    probe_work(&w, s);
    char label[80], err[1400];
    const config_t *c = &s->cfg;
    const size_t n = s->model->num_params;
    const int K = (size_t)c->probe.curvature_iters < n ? c->probe.curvature_iters : (int)n;
    if (K >= RUN_CURV_LONG_ITERS || c->probe.curvature_iters > K) {   // a long row: its cost
        snprintf(err, sizeof err, "probe.curvature_iters = %d: %d Lanczos steps a row (at most "
                 "the %zu parameters); a seed's row costs about %.3g forward+backward passes of "
                 "a batch (the re-orthogonalisation grows as K^2), the %d seeds' about %.3g",
                 c->probe.curvature_iters, K, n, w.row, c->probe.seeds, w.row * c->probe.seeds);
        progress_channel_send('W', err);
        if (!o->quiet) fprintf(stderr, "stability: warning: %s\n", err);
    }
    snprintf(label, sizeof label, "curvature %.40s", s->cfg.name);
    progress_start(&w.bar, label, o->quiet);
    const double t0 = progress_now();
    const int rc = probe_curvature(s, p, first_precond, &s->cfg, probe_curv_progress, &w, err,
                                   sizeof err);
    progress_end(&w.bar);
    if (rc == 2) fprintf(stderr, "%s: %s\n", s->cfg.path[0] ? s->cfg.path : "config", err);
    else if (rc) fprintf(stderr, "stability: %s\n", err);
    else if (!o->quiet)
        printf("curvature of %d seeds in %.1f s\n", s->cfg.probe.seeds, progress_now() - t0);
    return rc;
}

int run_check_estimators(const config_t *cfg, int probe)
{
    const char *key = cfg->probe.density_probes > 0 ? "density_probes"
                    : cfg->probe.trace_probes > 0 ? "trace_probes" : NULL;
    const char *why = NULL;
    if (probe && cfg->probe.density_probes > 0)
        why = "measured at training's curvature rows and by `stability dump --hvp`, not by a probe";
    else if (key && cfg->probe.curvature_every == 0)
        why = "measured at the curvature rows: needs probe.curvature_every > 0 (or `stability "
              "dump --hvp`)";
    else if (probe && cfg->probe.critical_sharpness) {
        key = "critical_sharpness";
        why = "measured at training's curvature rows (train.steps > 0), not by a probe";
    }
    if (!why) return 0;
    char where[1200];
    config_where(cfg, config_key_index("probe", key), where, sizeof where);
    fprintf(stderr, "%s: %s\n", where, why);
    return 2;
}

int run_probe(const config_t *cfg, const char *path, const run_options_t *o)
{
    if (run_check_estimators(cfg, 1)) return 2;
    char err[1024];
    const int overwrite = o->force || cfg->output.overwrite;
    // refuse early (before minutes of work) when the file exists or the place is not writable
    h5io_file_t *f;
    int rc = h5io_create(&f, path, overwrite, "a probe", err, sizeof err);
    if (rc) { fprintf(stderr, "stability: %s\n", err); return rc; }
    session_t s;
    if ((rc = open_session(&s, cfg))) { h5io_abort(f); return rc; }
    probe_axes_t ax;
    const int axes = !probe_axes_from_model(&ax, s.model);
    // refuse with the estimate before allocating (docs/design.md §6: what a probe holds)
    const double need = axes ? probe_memory_bytes(cfg->probe.seeds, &ax) : 0.0;
    const double have = session_physical_bytes();
    if (have > 0.0 && need + session_memory_bytes(cfg) > have) {
        char where[1200];
        config_where(cfg, config_key_index("probe", "seeds"), where, sizeof where);
        fprintf(stderr, "%s: %d seeds need about %.1f GiB for their measurements besides the "
                "model's %.1f GiB; this machine has %.1f GiB (reduce probe.seeds)\n",
                where, cfg->probe.seeds, need / 1073741824.0,
                session_memory_bytes(cfg) / 1073741824.0, have / 1073741824.0);
        probe_axes_free(&ax);
        session_close(&s);
        h5io_abort(f);
        return 2;
    }
    if (cfg->probe.curvature_every > 0 &&   // before minutes of probing
        (rc = curv_check_memory(cfg, &s.model->caps, s.model->num_params, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", cfg->path[0] ? cfg->path : "config", err);
        if (axes) probe_axes_free(&ax);
        session_close(&s);
        h5io_abort(f);
        return rc;
    }
    probe_t *p = axes ? probe_alloc(cfg->probe.seeds, &ax) : NULL;
    if (axes) probe_axes_free(&ax);
    char *ini = config_text(cfg);
    if (!p || !ini) {
        fprintf(stderr, "stability: out of memory\n");
        rc = 1;
    } else {
        if (!o->quiet) report_config(stdout, cfg);
        rc = measure(&s, p, o);
        if (!rc && cfg->probe.curvature_every > 0) rc = measure_curvature(&s, p, o);
    }
    char why[200];   // an overflow is a result, recorded and said (as a diverged training run)
    const int overflow = !rc && probe_overflow(p, why, sizeof why);
    if (overflow)
        fprintf(stderr, "stability: warning: %s: the probe overflowed (%s); recorded with status "
                "diverged\n", path, why);
    if (!rc && (h5io_write_probe(f, p, probe_site_symbols(cfg)) ||
                h5io_write_root_attrs(f, ini, cfg->init.seed, overflow ? "diverged" : "done",
                                      &s.data.id) ||
                (overflow && h5io_write_attr_string(f, "/", "diverged_reason", why)))) {
        fprintf(stderr, "stability: %s: cannot write the probe\n", path);
        rc = 1;
    }
    if (rc) h5io_abort(f);
    else if ((rc = h5io_commit(f, err, sizeof err))) fprintf(stderr, "stability: %s\n", err);
    else {
        if (!o->quiet) {
            report_probe(stdout, cfg, p, 0);
            printf("\nwrote %s\n", path);
        }
        if (cfg->output.plots) rc = run_plot(path, o->quiet);
    }
    probe_free(p);
    free(ini);
    session_close(&s);
    return rc;
}

/* train.precision = float32: the float32 core's loss and gradients on s's parameters rounded to
 * float and s's batch (drawn again from the same stream), widened into s's model (exactly). */
static int forward_backward_f32(session_t *s)
{
    session_t f;
    char err[512];
    int rc = session_open_f32(&f, &s->cfg, err, sizeof err);
    if (rc) { fprintf(stderr, "stability: %s\n", err); return rc; }
    session_init_f32(&f, s->cfg.init.seed);
    model_t *m = s->model, *mf = f.model;
    float *pf = (float *)(void *)mf->params;
    for (size_t i = 0; i < m->num_params; i++) m->params[i] = pf[i] = (float)m->params[i];
    if (session_next_batch_f32(&f)) {
        fprintf(stderr, "stability: %s\n", f.error);
        session_close_f32(&f);
        return 2;
    }
    model_forward_f32(mf, &f.batch);
    model_zero_grad_f32(mf);
    model_backward_f32(mf);
    const float *gf = (const float *)(const void *)mf->grads;
    for (size_t i = 0; i < m->num_params; i++) m->grads[i] = gf[i];
    m->loss = mf->loss;
    m->batch = s->batch;
    session_close_f32(&f);
    return 0;
}

/* The density's grid: DUMP_DENSITY_POINTS points from the smallest node − 4σ to the largest + 4σ. */
#define DUMP_DENSITY_POINTS 512

/* dump --hvp's estimators (docs/design.md §10), when their keys are on: Hutchinson's trace of H
 * (probes from init.seed + CURV_ESTIMATE_OFFSET + 1), the SLQ nodes and weights (from init.seed +
 * CURV_ESTIMATE_OFFSET) and the broadened density on a grid, and with probe.density_blocks every
 * block's nodes and weights (block b from that seed + 2 + b, as at training's rows), its arrays
 * in *buf (the caller frees it). 0 or 1. */
static int dump_estimators(curv_t *c, const config_t *cfg, const double *theta, h5io_hvp_t *out,
                           double **buf)
{
    const unsigned long seed = cfg->init.seed + CURV_ESTIMATE_OFFSET;
    if (cfg->probe.trace_probes > 0) {
        trace_result_t tr;
        out->kinked += curv_trace(c, theta, CURV_WHOLE, seed + 1, &tr);
        out->trace_probes = tr.probes;
        out->trace = tr.mean;
        out->trace_stderr = tr.se;
    }
    const int P = cfg->probe.density_probes, m = curv_density_iters(c);
    if (P < 1) return 0;
    const size_t nw = (size_t)P * m, nb = cfg->probe.density_blocks
                                           ? (size_t)curv_rows(c) * TENSOR_BLOCKS * nw : 0;
    *buf = malloc((2 * nw + 2 * DUMP_DENSITY_POINTS + 2 * nb) * sizeof(double));
    if (!*buf) return 1;
    double *nodes = *buf, *weights = *buf + nw, *grid = *buf + 2 * nw, *phi = grid + DUMP_DENSITY_POINTS;
    double *bnodes = phi + DUMP_DENSITY_POINTS, *bweights = bnodes + nb;
    const long k = curv_density(c, theta, NULL, NULL, CURV_WHOLE, seed, nodes, weights);
    if (k > 0) out->kinked += k;
    if (nb) out->kinked += curv_block_densities(c, theta, seed, bnodes, bweights);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < nw; i++)
        if (isfinite(nodes[i])) { lo = fmin(lo, nodes[i]); hi = fmax(hi, nodes[i]); }
    const double sigma = cfg->probe.density_sigma;
    for (int i = 0; i < DUMP_DENSITY_POINTS; i++)
        grid[i] = isfinite(lo) ? lo - 4 * sigma + (hi - lo + 8 * sigma) * i / (DUMP_DENSITY_POINTS - 1)
                               : NAN;
    slq_density(nodes, weights, P, m, sigma, grid, DUMP_DENSITY_POINTS, phi);
    *out = (h5io_hvp_t){.v = out->v, .Hv = out->Hv, .iters = out->iters, .hessian_max =
                        out->hessian_max, .hessian_min = out->hessian_min, .h = out->h, .kinked =
                        out->kinked, .trace_probes = out->trace_probes, .trace = out->trace,
                        .trace_stderr = out->trace_stderr, .density_probes = P, .density_iters = m,
                        .density_nodes = nodes, .density_weights = weights, .density_grid = grid,
                        .density = phi, .density_points = DUMP_DENSITY_POINTS,
                        .density_sigma = sigma, .block_rows = nb ? curv_rows(c) : 0,
                        .block_density_nodes = bnodes, .block_density_weights = bweights};
    return 0;
}

/* dump --hvp (docs/design.md §10): a unit Gaussian direction v from the stream init.seed +
 * CURV_DIRECTION_OFFSET, H·v and λ_max, λ_min of H on the dump's batch (dropout off), from
 * the float64 parameters the dump writes. v and Hv (num_params) are the caller's. 0, 1 or 2. */
static int dump_hvp(session_t *s, double *v, double *Hv, h5io_hvp_t *out, double **buf)
{
    const model_t *m = s->model;
    const config_t *cfg = &s->cfg;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) return 1;
    gsl_rng_set(r, cfg->init.seed + CURV_DIRECTION_OFFSET);
    double norm = 0.0;
    for (size_t i = 0; i < m->num_params; i++) {
        v[i] = gsl_ran_gaussian(r, 1.0);
        norm += v[i] * v[i];
    }
    gsl_rng_free(r);
    for (size_t i = 0; i < m->num_params; i++) v[i] /= sqrt(norm);
    char err[1400];
    curv_t *c;
    const int rc = curv_create(&c, cfg, &m->caps, &s->batch, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", rc == 2 && cfg->path[0] ? cfg->path : "stability", err);
        return rc;
    }
    *out = (h5io_hvp_t){.v = v, .Hv = Hv};
    out->kinked = curv_hvp_dump(c, m->params, v, Hv, cfg->init.seed + CURV_START_OFFSET,
                                &out->hessian_max, &out->hessian_min, &out->h, &out->iters);
    const int erc = dump_estimators(c, cfg, m->params, out, buf);
    curv_free(c);
    return erc;
}

/* Why the dump of m (and hvp, may be NULL) is not a finite result, into why; 0 when it is.
 * A dump whose loss, gradient or Hessian overflowed is recorded as diverged, as a probe is. */
static int dump_overflow(const model_t *m, const h5io_hvp_t *hvp, char *why, size_t len)
{
    if (!isfinite(m->loss)) {
        snprintf(why, len, "the loss is not finite at the dump's parameters");
        return 1;
    }
    for (size_t i = 0; i < m->num_params; i++)
        if (!isfinite(m->grads[i])) {
            snprintf(why, len, "gradient entry %zu is not finite", i);
            return 1;
        }
    if (hvp && !hvp->kinked && !(isfinite(hvp->hessian_max) && isfinite(hvp->hessian_min))) {
        snprintf(why, len, "the Hessian's extreme eigenvalues are not finite");
        return 1;
    }
    return 0;
}

int run_dump(const config_t *cfg, const char *path, const run_options_t *o)
{
    session_t s;
    int rc = first_batch(&s, cfg, o->perturb);
    if (rc) return rc;
    const int f32 = config_core_float(cfg);
    if (f32 && (rc = forward_backward_f32(&s))) { session_close(&s); return rc; }
    if (!f32) {
        model_forward(s.model, &s.batch);
        model_zero_grad(s.model);
        model_backward(s.model);
    }
    h5io_hvp_t hvp;
    double *est = NULL;   // the estimators' arrays (dump_estimators)
    double *v = o->hvp ? malloc(s.model->num_params * sizeof(double)) : NULL;
    double *Hv = o->hvp ? malloc(s.model->num_params * sizeof(double)) : NULL;
    if (o->hvp && (!v || !Hv)) rc = 1;
    else if (o->hvp) rc = dump_hvp(&s, v, Hv, &hvp, &est);
    char *ini = config_text(cfg), err[1024];
    if (rc || !ini) {
        if (!ini || rc == 1) fprintf(stderr, "stability: out of memory\n");
        free(ini); free(v); free(Hv); free(est);
        session_close(&s);
        return rc ? rc : 1;
    }
    char why[200];
    const int overflow = dump_overflow(s.model, o->hvp ? &hvp : NULL, why, sizeof why);
    rc = h5io_write_dump(path, s.model, ini, cfg->init.seed, &s.data.id,
                         o->force || cfg->output.overwrite,
                         f32 ? config_precision_name(cfg->train.precision) : NULL,
                         o->hvp ? &hvp : NULL, overflow ? why : NULL, err, sizeof err);
    if (!rc && overflow)
        fprintf(stderr, "stability: warning: %s: the dump overflowed (%s); recorded with status "
                "diverged\n", path, why);
    if (rc) fprintf(stderr, "stability: %s\n", err);
    else if (!o->quiet) printf("wrote %s (loss %.10g, %zu parameters)\n", path, s.model->loss,
                               s.model->num_params);
    free(ini);
    free(v);
    free(Hv);
    free(est);
    session_close(&s);
    return rc;
}

int run_gradcheck(const config_t *cfg, const run_options_t *o)
{
    session_t s;
    int rc = first_batch(&s, cfg, o->perturb);
    if (rc) return rc;
    model_t *m = s.model;
    gradcheck_result_t *res = calloc((size_t)m->num_tensors, sizeof *res);
    if (!res) { session_close(&s); return 1; }
    const double worst = gradcheck_run(m, &s.batch, (size_t)o->entries, 1e-5, s.rng_data, res);
    if (!o->quiet) {
        report_config(stdout, cfg);
        printf("%-22s %8s %12s %12s %12s\n", "tensor", "checked", "max|fd-an|", "scale",
               "rel.error");
        for (int k = 0; k < m->num_tensors; k++)
            printf("%-22s %8zu %12.3e %12.3e %12.3e%s\n", res[k].tensor->name, res[k].checked,
                   res[k].max_abs_err, res[k].scale, res[k].rel_err,
                   res[k].rel_err <= o->tol ? "" : "  FAIL");
    }
    const int ok = worst <= o->tol;
    printf("worst relative error %.3e (tolerance %.1e): %s\n", worst, o->tol, ok ? "ok" : "FAIL");
    free(res);
    session_close(&s);
    return ok ? 0 : 1;
}
