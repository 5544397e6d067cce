/* probe_curvature.c — the curvature at initialisation, per probe seed (measure/probe.h,
 * measure/curvature.h, docs/design.md §10). Float64 only (the Makefile's CORE_F64_ONLY). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/curvature.h"
#include "measure/probe.h"

int probe_curvature_alloc(probe_t *p, int trace)
{
    double **arrays[5] = {&p->hessian_max, &p->hessian_min, &p->precond_max_active,
                          &p->hessian_trace, &p->hessian_trace_stderr};
    for (int a = 0; a < (trace ? 5 : 3); a++) {
        if (*arrays[a]) continue;
        if (!(*arrays[a] = malloc((size_t)p->S * sizeof(double)))) return 1;
        for (int s = 0; s < p->S; s++) (*arrays[a])[s] = NAN;
    }
    return 0;
}

/* Work of probe_curvature. */
typedef struct {
    batch_t mb;              /* the seed's measurement batch */
    double *P;               /* (n) */
    unsigned char *floored;  /* (n) */
} work_t;

static void work_free(work_t *w)
{
    free(w->mb.src);
    free(w->mb.tokens);
    free(w->mb.targets);
    free(w->P);
    free(w->floored);
}

/* The measurement batch of seed `seed` from its own stream (the data's position kept). */
static void measurement_batch(session_t *s, unsigned long seed, batch_t *mb, gsl_rng *r)
{
    gsl_rng_set(r, seed + CURV_BATCH_OFFSET);
    const long drawn = s->data.drawn;
    data_batch(&s->data, r, mb);
    data_seek(&s->data, drawn);
}

/* Seed k: P from its first batch, then the measure. 0, 1 or 2. */
static int seed_measure(session_t *s, probe_t *p, int k, probe_precond_fn precond, void *ctx,
                        work_t *w, gsl_rng *r, char *err, size_t errlen)
{
    model_t *m = s->model;
    const unsigned long seed = s->cfg.init.seed + (unsigned long)k;
    session_init(s, seed);
    if (session_next_batch(s)) { snprintf(err, errlen, "%s", s->error); return 2; }
    model_forward(m, &s->batch);
    model_zero_grad(m);
    model_backward(m);
    const int has = precond(ctx, m, w->P, w->floored);
    if (has < 0) { snprintf(err, errlen, "out of memory"); return 1; }
    measurement_batch(s, seed, &w->mb, r);
    if (model_check_batch(m, &w->mb, err, errlen)) return 2;
    curv_t *c;
    config_t cfg = s->cfg;
    cfg.probe.curvature_block_iters = 0;   // a probe records no block
    int rc = curv_create(&c, &cfg, &m->caps, &w->mb, err, errlen);
    if (rc) return rc;
    curv_row_t row;
    if (curv_row_alloc(&row, c)) {
        curv_free(c);
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    curv_measure(c, m->params, has ? w->P : NULL, has ? w->floored : NULL,
                 seed + CURV_START_OFFSET, &row);
    p->hessian_max[k] = row.hessian_max;
    p->hessian_min[k] = row.hessian_min;
    p->precond_max_active[k] = row.precond_max_active;
    if (p->hessian_trace) {   // probe.trace_probes (docs/design.md §10): training's update-0 stream
        trace_result_t tr;
        curv_trace(c, m->params, CURV_WHOLE, seed + CURV_ESTIMATE_OFFSET + 1, &tr);
        p->hessian_trace[k] = tr.mean;
        p->hessian_trace_stderr[k] = tr.se;
    }
    curv_row_free(&row);
    curv_free(c);
    return 0;
}

int probe_curvature(session_t *s, probe_t *p, probe_precond_fn precond, void *ctx,
                    probe_progress_fn progress, void *pctx, char *err, size_t errlen)
{
    const model_t *m = s->model;
    work_t w = {.mb = {.tokens = malloc(m->caps.tokens * sizeof(int32_t)),
                       .targets = malloc(m->caps.tokens * sizeof(int32_t)),
                       .src = m->caps.src_tokens ? malloc(m->caps.src_tokens * sizeof(int32_t))
                                                 : NULL},
                .P = malloc(m->num_params * sizeof(double)),
                .floored = malloc(m->num_params ? m->num_params : 1)};
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    int rc = !w.mb.tokens || !w.mb.targets || (m->caps.src_tokens && !w.mb.src) || !w.P ||
             !w.floored || !r || probe_curvature_alloc(p, s->cfg.probe.trace_probes > 0);
    if (rc) snprintf(err, errlen, "out of memory");
    for (int k = 0; k < p->S && !rc; k++) {
        rc = seed_measure(s, p, k, precond, ctx, &w, r, err, errlen);
        if (!rc && progress) progress(pctx, k + 1, p->S);
    }
    if (r) gsl_rng_free(r);
    work_free(&w);
    return rc;
}
