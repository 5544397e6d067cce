/* run_advise.c — `stability advise`: whether a config needs warm-up at its lr, how long a linear
 * warm-up would do, and the largest lr expected to train without one (docs/design.md §6g, "The
 * advisor"), from a few measured updates at the config's lr without warm-up at ADVISE_SEEDS
 * seeds (init.seed, +1, +2).
 *
 * Each seed trains ADVISE_UPDATES updates (train.warmup = 1, constant schedule) with a curvature
 * row (measure/curvature.h, active value only, K = ADVISE_ITERS) at updates 0, 2, 4, 6; the rows'
 * ratios η·λ_max(P⁻¹H)_active / (2(1 + β₁)/(1 − β₁)) go through measure/diagnose_curv.h as a
 * run's do. The rule (docs/curvature.md: every run without warm-up is above the threshold at
 * update 0 and 1 — Post-LN and Pre-LN alike at the atlas's size — so those rows say nothing;
 * what tells the atlas's failing Post-LN from Pre-LN is the first few updates after them):
 *   peak  = the largest ratio of the rows at update ≥ ADVISE_FROM (2)
 *   a seed needs warm-up when peak > 1 (or it diverged); the config does when most of the
 *   seeds measured do (a seed whose rows after update 1 all crossed a kink is not measured)
 *   warmup_updates = diagnose_warmup_updates(cfg, need) with need the largest of the seeds'
 *                    diagnose_curv_warmup (what `stability info` says), 0 when not needed;
 *                    train.steps when that is longer than the run (said in words, not as a
 *                    count)
 *   max_lr_without_warmup = lr / (largest peak over seeds) — the ratio is η·λ, so at that lr the
 *                    worst seed's peak sits at the threshold (the path held fixed) — at most
 *                    ADVISE_LR_BOUND × lr: further than that the path it was measured on says
 *                    little.
 * A seed that diverged has no path to read either number off (its rows blow up with it): when
 * any did, the warm-up's length is unknown (warmup_updates 0, `warmup` "unknown: diverged") and
 * the largest lr without warm-up is below lr by an unknown amount (NaN) — docs/design.md, "The
 * advisor", the diverged case.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config.h"
#include "io/h5io.h"
#include "measure/curvature.h"
#include "measure/diagnose.h"
#include "measure/diagnose_curv.h"
#include "train/train.h"
#include "util/progress.h"
#include "run/run.h"

#define ADVISE_SEEDS 3        /* init.seed, +1, +2 */
#define ADVISE_UPDATES 6      /* measured updates per seed */
#define ADVISE_EVERY 2        /* a curvature row every this many updates (and at update 0) */
#define ADVISE_ITERS 10       /* Lanczos steps K (docs/curvature.md's indicator sweep: 10) */
#define ADVISE_FROM 2         /* rows before this update are above 1 in every run: not read */
#define ADVISE_LR_BOUND 10.0  /* max_lr_without_warmup at most this × lr */

/* One seed's measurement. */
typedef struct {
    double peak;      /* the largest ratio of the rows at update ≥ ADVISE_FROM (NaN: none) */
    long peak_step;
    double ratio0;    /* the update-0 row's ratio */
    double need;      /* diagnose_curv_warmup of its rows */
    int status;       /* train_status_t */
} advise_seed_t;

typedef struct {
    diagnose_curv_t dc;
    advise_seed_t *out;
} advise_ctx_t;

/* Feed the curvature rows of update r to the finding and the seed's peak. */
static int advise_step(void *ctx, const train_t *t, const train_record_t *r)
{
    advise_ctx_t *c = ctx;
    for (int k = 0; t->curv && k < 2; k++) {
        if (!(r->curv & (1 << k))) continue;
        const curv_row_t *m = &t->curv_row[k];
        const diagnose_curv_row_t row = {.step = m->step, .active = m->precond_max_active,
                                         .threshold = m->threshold, .full = NAN,
                                         .eps_share = NAN, .block = NULL};
        diagnose_curv_row(&c->dc, &row);
        const double q = diagnose_curv_ratio(&row);
        if (m->step == 0) c->out->ratio0 = q;
        if (m->step >= ADVISE_FROM && isfinite(q) && !(q <= c->out->peak)) {
            c->out->peak = q;
            c->out->peak_step = m->step;
        }
    }
    return 0;
}

/* The measured run of cfg at seed offset s: the config's lr from update 1, curvature rows. */
static config_t advise_config(const config_t *cfg, int s)
{
    config_t m = *cfg;
    m.init.seed = cfg->init.seed + (unsigned long)s;
    m.train.steps = ADVISE_UPDATES;
    m.train.warmup = 1;
    m.train.schedule = SCHED_CONSTANT;
    m.train.warmup_start = WARMUP_START_ZERO;
    m.train.eval_every = ADVISE_UPDATES;
    m.train.checkpoint_every = 0;
    m.probe.every = ADVISE_UPDATES;
    m.probe.jacobian = 0;
    m.probe.model_update = 0;
    m.probe.curvature_every = ADVISE_EVERY;
    m.probe.curvature_until = ADVISE_UPDATES;
    m.probe.curvature_active_only = 1;
    m.probe.curvature_iters = ADVISE_ITERS;
    m.probe.curvature_block_iters = 0;
    return m;
}

/* Measure seed s into *a. 0, or the exit code with the error printed. */
static int advise_seed(const config_t *cfg, int s, advise_seed_t *a)
{
    const config_t m = advise_config(cfg, s);
    char err[CONFIG_ERR_MAX];
    train_t *t;
    const int f32 = m.train.precision == PRECISION_FLOAT32;
    int rc = f32 ? train_create_f32(&t, &m, err, sizeof err) : train_create(&t, &m, err, sizeof err);
    if (rc) { fprintf(stderr, "stability: advise: %s\n", err); return rc; }
    *a = (advise_seed_t){.peak = NAN, .peak_step = -1, .ratio0 = NAN};
    advise_ctx_t c = {.out = a};
    diagnose_curv_init(&c.dc, &m, 0, 0);
    const train_callbacks_t cb = {.ctx = &c, .step = advise_step};
    static const volatile sig_atomic_t never = 0;
    a->status = f32 ? train_run_f32(t, &cb, &never) : train_run(t, &cb, &never);
    a->need = (double)diagnose_curv_warmup(&c.dc);
    if (f32) train_free_f32(t); else train_free(t);
    if (a->status == TRAIN_FAILED || a->status == TRAIN_BAD_BATCH) {
        fprintf(stderr, "stability: advise: the measured run of seed %lu failed\n", m.init.seed);
        return 1;
    }
    return 0;
}

/* How the warm-up's length is known (the file's `warmup` attribute, WARMUP_KIND's words). */
typedef enum { ADVISE_NONE, ADVISE_LINEAR, ADVISE_LONGER, ADVISE_UNKNOWN } advise_kind_t;
static const char *const WARMUP_KIND[] = {"none", "linear", "longer than the run",
                                          "unknown: diverged"};

/* The answer over the seeds. */
typedef struct {
    int measured;           /* seeds with a finite peak or that diverged */
    int above;              /* ... whose peak is above 1 or that diverged */
    int diverged;           /* ... that diverged */
    int needs_warmup;
    advise_kind_t kind;
    long warmup_updates;    /* ADVISE_LINEAR: the rule's count; LONGER: train.steps; else 0 */
    double max_lr, worst;   /* max_lr_without_warmup (NaN: below lr); the largest finite peak */
} advise_answer_t;

static advise_answer_t advise_answer(const config_t *cfg, const advise_seed_t *a, int n)
{
    advise_answer_t r = {.worst = 0};
    double need = 0;
    for (int s = 0; s < n; s++) {
        const int diverged = a[s].status == TRAIN_DIVERGED;
        r.measured += diverged || isfinite(a[s].peak);
        r.above += diverged || a[s].peak > 1;
        r.diverged += diverged;
        if (diverged) continue;   // its path says nothing of the length or the lr
        if (a[s].peak > r.worst) r.worst = a[s].peak;
        if (a[s].need > need) need = a[s].need;
    }
    r.needs_warmup = 2 * r.above > r.measured;
    const long steps = cfg->train.steps;
    if (!r.needs_warmup) r.kind = ADVISE_NONE;
    else if (r.diverged) r.kind = ADVISE_UNKNOWN;
    else {
        r.warmup_updates = diagnose_warmup_updates(cfg, need);
        r.kind = steps > 0 && r.warmup_updates > steps ? ADVISE_LONGER : ADVISE_LINEAR;
        if (r.kind == ADVISE_LONGER) r.warmup_updates = steps;
    }
    const double lr = cfg->train.lr;
    if (r.diverged) r.max_lr = NAN;
    else r.max_lr = r.worst > 1 / ADVISE_LR_BOUND ? lr / r.worst : ADVISE_LR_BOUND * lr;
    return r;
}

/* The per-seed values and the answer into path (through io/h5io.h, as every verb). */
static int advise_write(const config_t *cfg, const char *path, int force, const advise_seed_t *a,
                        int n, const advise_answer_t *r)
{
    char err[1024];
    h5io_file_t *f;
    int rc = h5io_create(&f, path, force, "an advice", err, sizeof err);
    if (rc) { fprintf(stderr, "stability: %s\n", err); return rc; }
    double peak[ADVISE_SEEDS], r0[ADVISE_SEEDS], need[ADVISE_SEEDS];
    int32_t seed[ADVISE_SEEDS], step[ADVISE_SEEDS], div[ADVISE_SEEDS];
    for (int s = 0; s < n; s++) {
        peak[s] = a[s].peak; r0[s] = a[s].ratio0; need[s] = a[s].need;
        seed[s] = (int32_t)(cfg->init.seed + (unsigned long)s);
        step[s] = (int32_t)a[s].peak_step;
        div[s] = a[s].status == TRAIN_DIVERGED;
    }
    const size_t dims[1] = {(size_t)n};
    const size_t len = config_to_ini(cfg, NULL, 0) + 1;
    char *ini = malloc(len);
    if (ini) config_to_ini(cfg, ini, len);
    rc = !ini || h5io_write_root_attrs(f, ini, cfg->init.seed, "done", NULL) ||
         h5io_write_attr_int(f, "/", "needs_warmup", r->needs_warmup) ||
         h5io_write_attr_int(f, "/", "warmup_updates", r->warmup_updates) ||
         h5io_write_attr_double(f, "/", "max_lr_without_warmup", r->max_lr) ||
         h5io_write_attr_string(f, "/", "indicator",
                                "peak active preconditioned sharpness ratio "
                                "eta*lambda_max(P^-1 H)_active/(2(1+beta1)/(1-beta1)) "
                                "at updates >= 2 of 6 without warm-up") ||
         h5io_write_attr_int(f, "/", "seeds_above", r->above) ||
         h5io_write_attr_int(f, "/", "diverged_seeds", r->diverged) ||
         h5io_write_attr_string(f, "/", "warmup", WARMUP_KIND[r->kind]) ||
         h5io_write_ints(f, "/advise/seed", seed, 1, dims) ||
         h5io_write_doubles(f, "/advise/peak_ratio", peak, 1, dims) ||
         h5io_write_ints(f, "/advise/peak_step", step, 1, dims) ||
         h5io_write_ints(f, "/advise/diverged", div, 1, dims) ||
         h5io_write_doubles(f, "/advise/ratio0", r0, 1, dims) ||
         h5io_write_doubles(f, "/advise/warmup_need", need, 1, dims);
    free(ini);
    if (rc) { fprintf(stderr, "stability: %s: cannot write the advice\n", path); h5io_abort(f); return 1; }
    if ((rc = h5io_commit(f, err, sizeof err))) fprintf(stderr, "stability: %s\n", err);
    return rc;
}

/* The answer in words on stdout: every number one a reader can act on (none read off a
 * diverged path, no warm-up count longer than the run). */
static void advise_print(const config_t *cfg, const advise_answer_t *r)
{
    const double lr = cfg->train.lr;
    if (!r->needs_warmup) {
        printf("does not need warm-up at lr %g: the active preconditioned sharpness is below "
               "the optimizer's threshold after update 1 in %d of %d seeds (peak ratio %.3g)",
               lr, r->measured - r->above, r->measured, r->worst);
        if (r->diverged)
            printf(", but the run diverged within %d updates in %d of %d seeds; the largest lr "
                   "expected to train without warm-up in every seed is below %g\n",
                   ADVISE_UPDATES, r->diverged, r->measured, lr);
        else printf("; the largest lr expected to train without warm-up: %.2g\n", r->max_lr);
        return;
    }
    if (r->kind == ADVISE_UNKNOWN) {
        printf("needs warm-up at lr %g: the run diverged within %d updates in %d of %d seeds "
               "(above the optimizer's threshold after update 1 in %d of %d); how long a warm-up "
               "would make it train cannot be read off a diverged path; the largest lr expected "
               "to train without one is below %g (how far is unknown: run advise at a lower "
               "train.lr)\n", lr, ADVISE_UPDATES, r->diverged, r->measured, r->above,
               r->measured, lr);
        return;
    }
    printf("needs warm-up at lr %g: the active preconditioned sharpness stays above the "
           "optimizer's threshold after update 1 in %d of %d seeds (peak ratio %.3g); ", lr,
           r->above, r->measured, r->worst);
    if (r->kind == ADVISE_LONGER)
        printf("a linear warm-up longer than the run's %ld updates (no train.warmup within "
               "train.steps will do: lower the lr or lengthen the run)", r->warmup_updates);
    else printf("a linear warm-up of %ld updates (train.warmup=%ld)", r->warmup_updates,
                r->warmup_updates);
    printf("; the largest lr expected to train without one: %.2g\n", r->max_lr);
}

int run_advise(const config_t *cfg, const char *path, const run_options_t *o)
{
    if (cfg->train.lr_control != LR_CONTROL_NONE) {
        char where[512];
        config_where(cfg, config_key_index("train", "lr_control"), where, sizeof where);
        fprintf(stderr, "%s: advise measures the config's lr itself, and lr_control = %s sets "
                "another: give --set train.lr_control=none\n", where,
                config_lr_control_name(cfg->train.lr_control));
        return 2;
    }
    char err[1024];
    int rc;
    if (path && (rc = h5io_check_target(path, o->force, err, sizeof err))) {
        fprintf(stderr, "stability: %s\n", err);
        return rc;
    }
    advise_seed_t a[ADVISE_SEEDS];
    for (int s = 0; s < ADVISE_SEEDS; s++) {
        const double t0 = progress_now();
        if ((rc = advise_seed(cfg, s, &a[s]))) return rc;
        if (!o->quiet)
            fprintf(stderr, "advise: seed %lu: peak ratio %.3g at update %ld (update 0: %.3g)%s "
                    "in %.1f s\n", cfg->init.seed + (unsigned long)s, a[s].peak, a[s].peak_step,
                    a[s].ratio0, a[s].status == TRAIN_DIVERGED ? ", diverged" : "",
                    progress_now() - t0);
    }
    const advise_answer_t r = advise_answer(cfg, a, ADVISE_SEEDS);
    if (r.measured == 0) {   // every row after update 1 crossed a kink (curvature.h): no answer
        fprintf(stderr, "stability: advise: no seed's sharpness after update 1 could be measured "
                "(the curvature rows are not finite)\n");
        return 1;
    }
    advise_print(cfg, &r);
    return path ? advise_write(cfg, path, o->force, a, ADVISE_SEEDS, &r) : 0;
}
