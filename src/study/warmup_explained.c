/* warmup_explained.c — the warm-up study's units (warmup_explained.h; docs/curvature.md
 * "The experiment"): their outcomes and indicators; the AUCs are study/warmup_auc.c's.
 *
 * The unit of a run is read from its config, never its name (docs/design.md §6d): the atlas's
 * zip of placement, norm and init, the depth, the lr and the seed; warm-up apart. Only runs of
 * remedy none (report/runs.h's runs_remedy) and optimizer adam take part: a remedies sweep's
 * other runs in the same files are ignored. The outcome is the table of runs' at the
 * published 3.2 nats. The per-run indicators are read with the set (report/plot_columns.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/plot_internal.h"
#include "report/runs.h"
#include "train/optim.h"
#include "study/warmup_explained.h"

const struct warmup_indicator WARMUP_IND[WARMUP_N] = {
    {"lr", "the learning rate: the baseline"},
    {"xiong", "‖∂L/∂W²‖ of the last layer, update 1"},
    {"xiong_ratio", "xiong over Pre-LN's (Theorem 1)"},
    {"admin", "output change at initialisation"},
    {"eos", "peak active ratio, upd. 1–20"},
    {"eos0", "active ratio at update 0"},
    {"radam", "1 − r₅ (RAdam's rectifier)"},
    {"kosson", "max ‖ΔW‖/‖W‖, updates 1–20"},
    {"update_rms", "max update RMS, updates 2–20"},
    {"deepnet", "‖F(x, θ₁) − F(x, θ₀)‖"},
    {"eos_c", "peak λ_c·η/2, upd. 1–20"},
};

/* ------------------------------------------------------------------ the cell of a run */

/* The unit of a run from its resolved config: the scheme as the atlas's zip sets it, the
 * depth, the learning rate and the seed; warm-up is the caller's. */
static void key_of_run(const plot_run_t *r, warmup_key_t *k)
{
    const config_t *c = &r->cfg;
    snprintf(k->scheme, sizeof k->scheme, "%s-%s-%s", config_placement_name(c->model.placement),
             config_norm_name(c->model.norm), config_init_name(c->init.scheme));
    k->L = c->model.layers;
    k->lr = c->train.lr;
    k->seed = c->init.seed;
}

/* Whether run r takes part in the study: remedy none and optimizer adam (docs/design.md §6d,
 * "The warm-up study"). */
static int plain_adam(const plot_run_t *r)
{
    char remedy[96];
    runs_remedy(&r->cfg, remedy, sizeof remedy);
    return r->cfg.train.optimizer == OPT_ADAM && !strcmp(remedy, "none");
}

/* Whether run r is Theorem 1's reference scheme: Pre-LN with LayerNorm, Xavier-normal. */
static int is_pre_ln(const plot_run_t *r)
{
    return r->cfg.model.placement == PLACEMENT_PRE && r->cfg.model.norm == NORM_LAYERNORM &&
           r->cfg.init.scheme == INIT_XAVIER_NORMAL;
}

static int key_cmp(const warmup_key_t *a, const warmup_key_t *b)
{
    const int s = strcmp(a->scheme, b->scheme);
    if (s) return s;
    if (a->L != b->L) return a->L < b->L ? -1 : 1;
    if (a->lr != b->lr) return a->lr < b->lr ? -1 : 1;
    return a->seed < b->seed ? -1 : a->seed > b->seed;
}

/* trains | stuck | diverged: the table of runs' outcome at the published WARMUP_TRAINS. */
static int outcome(const plot_set_t *set, int i)
{
    runs_row_t row;
    runs_row(set, i, &row);
    runs_outcome(&row, WARMUP_TRAINS);
    return row.diverged ? WARMUP_DIVERGED : row.trains ? WARMUP_TRAINS_OUT : WARMUP_STUCK;
}

/* The outcome run of unit k (its seed's) with warm-up (warm) or without: its index, or −1;
 * −2 with why when there are two (two atlases in one set). */
static int outcome_run(const plot_set_t *set, const warmup_key_t *k, int warm, char *why,
                       size_t len)
{
    int found = -1;
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        warmup_key_t x;
        if (r->ind || !r->loss || (r->cfg.train.warmup > 1) != warm || !plain_adam(r))
            continue;
        key_of_run(r, &x);
        if (key_cmp(&x, k)) continue;
        if (found >= 0) {
            snprintf(why, len, "two outcome runs of one cell and seed (%s, %s): give one atlas",
                     set->runs[found].origin, r->origin);
            return -2;
        }
        found = i;
    }
    return found;
}

/* Admin's output change of (scheme, L) (Liu et al. 2020b): the mean over its seeds of the first
 * atlas_init run of that scheme and depth; NaN when the set has none. */
static double admin_of(const plot_set_t *set, const warmup_key_t *k, int *any)
{
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->probe || !r->probe->output_change) continue;
        *any = 1;
        warmup_key_t x;
        key_of_run(r, &x);
        if (strcmp(x.scheme, k->scheme) || x.L != k->L) continue;
        double s = 0.0;
        int n = 0;
        for (int j = 0; j < r->probe->S; j++)
            if (!isnan(r->probe->output_change[j])) { s += r->probe->output_change[j]; n++; }
        return n ? s / n : NAN;
    }
    return NAN;
}

void warmup_run_values(const plot_run_t *r, double v[WARMUP_N])
{
    const plot_ind_t *d = r->ind;
    double rho;
    const double r5 = optim_radam_rect(r->cfg.train.beta2, 5, &rho);   // the optimizer's rₜ
    v[WARMUP_LR] = r->cfg.train.lr;
    v[WARMUP_XIONG] = d ? d->xiong : NAN;
    v[WARMUP_RATIO] = NAN;
    v[WARMUP_ADMIN] = NAN;
    v[WARMUP_EOS] = d ? d->eos : NAN;
    v[WARMUP_EOS0] = d ? d->eos0 : NAN;
    v[WARMUP_RADAM] = isfinite(r5) ? 1.0 - r5 : 1.0;   // un-adapted at t = 5: 1
    v[WARMUP_KOSSON] = d ? d->kosson : NAN;
    v[WARMUP_RMS] = d ? d->update_rms : NAN;
    v[WARMUP_DEEPNET] = d ? d->deepnet : NAN;
    v[WARMUP_EOSC] = d ? d->eos_c : NAN;
}

int warmup_run_critical(const plot_run_t *r) { return r->ind && r->ind->critical; }

static int cell_cmp(const void *a, const void *b)
{
    return key_cmp(&((const warmup_cell_t *)a)->key, &((const warmup_cell_t *)b)->key);
}

/* Theorem 1's ratio of unit c (Xiong et al. 2020): its xiong over Pre-LN's at the same depth,
 * lr and seed. */
static void xiong_ratio(const plot_set_t *set, warmup_cell_t *c)
{
    for (int i = 0; i < set->n; i++) {
        const plot_run_t *r = &set->runs[i];
        if (!r->ind || !is_pre_ln(r) || !plain_adam(r) || r->cfg.model.layers != c->key.L ||
            r->cfg.train.lr != c->key.lr || r->cfg.init.seed != c->key.seed)
            continue;
        const double ref = r->ind->xiong;
        if (ref != 0 && isfinite(ref)) c->v[WARMUP_RATIO] = c->v[WARMUP_XIONG] / ref;
    }
}

int warmup_cells(const plot_set_t *set, warmup_cell_t *cells, int *admin, char *why, size_t len)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) {
        if (!set->runs[i].ind || !plain_adam(&set->runs[i])) continue;
        warmup_cell_t c = {.ind = i, .critical = set->runs[i].ind->critical};
        key_of_run(&set->runs[i], &c.key);
        for (int j = 0; j < n; j++)
            if (!key_cmp(&cells[j].key, &c.key)) {
                snprintf(why, len, "two indicator runs of one cell and seed (%s, %s)",
                         set->runs[cells[j].ind].origin, set->runs[i].origin);
                return -1;
            }
        const int cold = outcome_run(set, &c.key, 0, why, len);
        const int warm = cold == -2 ? -2 : outcome_run(set, &c.key, 1, why, len);
        if (cold == -2 || warm == -2) return -1;
        if (cold < 0) continue;
        c.out = outcome(set, cold);
        c.needs = c.out != WARMUP_TRAINS_OUT && warm >= 0 &&
                  outcome(set, warm) == WARMUP_TRAINS_OUT;
        warmup_run_values(&set->runs[i], c.v);
        c.v[WARMUP_ADMIN] = admin_of(set, &c.key, admin);
        cells[n++] = c;
    }
    qsort(cells, (size_t)n, sizeof *cells, cell_cmp);
    for (int j = 0; j < n; j++) xiong_ratio(set, &cells[j]);
    return n;
}

int warmup_shown(const warmup_cell_t *c, int n, int k, int admin)
{
    if (k == WARMUP_ADMIN) return admin;
    if (k != WARMUP_EOSC) return 1;
    for (int i = 0; i < n; i++)
        if (c[i].critical) return 1;
    return 0;
}

int warmup_seeded(const warmup_cell_t *c, int n)
{
    for (int i = 1; i < n; i++)
        if (c[i].key.seed != c[0].key.seed) return 1;
    return 0;
}
