/* runs.c — the definitions of report/runs.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/scheme.h"
#include "measure/diagnose.h"
#include "measure/fit.h"
#include "measure/outcome.h"
#include "report/runs.h"

int runs_block_kind(const config_t *c)
{
    if (c->model.positions == POS_SINUSOIDAL && c->model.activation != ACT_SWIGLU &&
        c->model.bias && c->model.norm == NORM_LAYERNORM)
        return 0;
    if (c->model.positions == POS_ROPE && c->model.activation == ACT_SWIGLU && !c->model.bias &&
        c->model.norm == NORM_RMSNORM)
        return 1;
    return 2;
}

void runs_outcome(runs_row_t *row, double threshold)
{
    // docs/design.md §6d: one rule; the default is relative to the run's own plateau
    const double base = isfinite(row->plateau) ? row->plateau : row->loss_init;
    const double below = isnan(threshold) ? base - DIAG_PLATEAU_BAND : threshold;
    row->trains = !row->diverged && isfinite(row->final_loss) && row->final_loss < below;
    row->stuck = !row->diverged && !row->trains && isfinite(row->final_loss);
}

void runs_remedy(const config_t *cfg, char *buf, size_t len)
{
    char part[8][48];
    int n = 0;
    if (cfg->train.lr_control == LR_CONTROL_CURVATURE)
        snprintf(part[n++], sizeof part[0], "curvature_cap %g", cfg->train.curvature_cap);
    if (cfg->train.lr_control == LR_CONTROL_CDAT) snprintf(part[n++], sizeof part[0], "cdat %g", cfg->train.cdat_sigma);
    if (cfg->train.warmup_start == WARMUP_START_CATAPULT) snprintf(part[n++], sizeof part[0], "catapult");
    if (cfg->train.update_ratio_cap > 0)
        snprintf(part[n++], sizeof part[0], "ratio_cap %g", cfg->train.update_ratio_cap);
    if (cfg->train.spectral_bound > 0)
        snprintf(part[n++], sizeof part[0], "spectral_bound %g", cfg->train.spectral_bound);
    if (cfg->train.schedule == SCHED_AUTOWU) snprintf(part[n++], sizeof part[0], "autowu");
    if (cfg->train.schedule == SCHED_SUBOPTIMALITY)   // its fit's two choices tell its arms apart
        snprintf(part[n++], sizeof part[0], "suboptimality %g/%g", cfg->train.f_star, cfg->train.lr_div);
    if (cfg->train.qk_clip > 0) snprintf(part[n++], sizeof part[0], "qk_clip %g", cfg->train.qk_clip);
    snprintf(buf, len, "%s", n ? part[0] : "none");
    for (int k = 1; k < n; k++) {
        const size_t used = strlen(buf);
        snprintf(buf + used, len - used, "+%s", part[k]);
    }
}

void runs_row(const plot_set_t *set, int i, runs_row_t *row)
{
    static const char *const BLOCK[] = {"2017", "today", "other"};
    const plot_run_t *r = &set->runs[i];
    const config_t *c = &r->cfg;
    memset(row, 0, sizeof *row);
    row->run = r;
    row->index = i;
    scheme_name(c, row->scheme, sizeof row->scheme);
    row->L = c->model.layers;
    row->dec_L = config_dec_layers(c);
    row->d_model = c->model.d_model;
    row->d_ff = c->model.d_ff;
    row->heads = c->model.heads;
    row->lr = c->train.lr;
    row->warmup = c->train.warmup;
    row->seed = c->init.seed;
    row->optimizer = config_optimizer_name(c->train.optimizer);
    row->schedule = config_schedule_name(c->train.schedule);
    row->precision = config_precision_name(c->train.precision);
    row->task = config_task_name(c->data.task);
    row->block = BLOCK[runs_block_kind(c)];
    runs_remedy(c, row->remedy, sizeof row->remedy);
    if (config_value_text(c, "init.parametrization", row->parametrization,
                          sizeof row->parametrization))
        snprintf(row->parametrization, sizeof row->parametrization, "?");
    row->steps = c->train.steps;
    row->diverged = !isnan(r->diverged_at) || !strcmp(r->status, "diverged");
    row->loss_init = r->nsteps ? r->loss[0] : NAN;
    row->final_loss = outcome_final_loss(r->loss, r->nsteps, r->val_loss, r->nevals, row->diverged);
    row->plateau = r->unigram;
    row->sec_per_update = r->sec_per_update;
    runs_outcome(row, RUNS_BELOW_PLATEAU);
}

int runs_build(runs_table_t *t, const plot_set_t *set)
{
    t->n = 0;
    t->rows = malloc((size_t)(set->n ? set->n : 1) * sizeof *t->rows);
    if (!t->rows) return 1;
    for (int i = 0; i < set->n; i++) runs_row(set, i, &t->rows[t->n++]);
    return 0;
}

void runs_free(runs_table_t *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

const char *const RUNS_COLUMNS[] = {
    "run", "origin", "scheme", "L", "dec_L", "d_model", "d_ff", "heads", "lr", "warmup", "seed",
    "optimizer", "schedule", "remedy", "precision", "block", "parametrization", "task", "steps",
    "loss_init", "final_loss", "plateau", "diverged", "stuck", "trains", NULL};

/* The text columns' values of row, in RUNS_COLUMNS's order up to "task"; NULL for a number. */
static const char *text_of(const runs_row_t *row, const char *col)
{
    if (!strcmp(col, "run")) return row->run->name;
    if (!strcmp(col, "origin")) return row->run->origin;
    if (!strcmp(col, "scheme")) return row->scheme;
    if (!strcmp(col, "optimizer")) return row->optimizer;
    if (!strcmp(col, "schedule")) return row->schedule;
    if (!strcmp(col, "remedy")) return row->remedy;
    if (!strcmp(col, "precision")) return row->precision;
    if (!strcmp(col, "block")) return row->block;
    if (!strcmp(col, "parametrization")) return row->parametrization;
    if (!strcmp(col, "task")) return row->task;
    return NULL;
}

double runs_value(const runs_row_t *row, const char *col)
{
    const struct { const char *name; double v; } NUM[] = {
        {"L", row->L}, {"dec_L", row->dec_L}, {"d_model", row->d_model}, {"d_ff", row->d_ff},
        {"heads", row->heads}, {"lr", row->lr}, {"warmup", row->warmup},
        {"seed", (double)row->seed}, {"steps", row->steps}, {"loss_init", row->loss_init},
        {"final_loss", row->final_loss}, {"plateau", row->plateau},
        {"diverged", row->diverged}, {"stuck", row->stuck}, {"trains", row->trains}};
    for (size_t k = 0; k < sizeof NUM / sizeof NUM[0]; k++)
        if (!strcmp(NUM[k].name, col)) return NUM[k].v;
    return NAN;
}

int runs_text(const runs_row_t *row, const char *col, char *buf, size_t len)
{
    const char *s = text_of(row, col);
    if (s) { snprintf(buf, len, "%s", s); return 0; }
    int known = 0;
    for (int k = 0; RUNS_COLUMNS[k]; k++) known |= !strcmp(RUNS_COLUMNS[k], col);
    if (!known) return -1;
    const double v = runs_value(row, col);
    if (isnan(v)) snprintf(buf, len, "nan");
    else if (!strcmp(col, "seed")) snprintf(buf, len, "%lu", row->seed);
    else if (v == floor(v) && fabs(v) < 1e15 && strcmp(col, "lr")) snprintf(buf, len, "%.0f", v);
    else snprintf(buf, len, "%.17g", v);
    return 0;
}

void runs_print(FILE *out, const runs_table_t *t)
{
    for (int k = 0; RUNS_COLUMNS[k]; k++) fprintf(out, "%s%s", k ? "\t" : "", RUNS_COLUMNS[k]);
    fprintf(out, "\n");
    for (int i = 0; i < t->n; i++) {
        for (int k = 0; RUNS_COLUMNS[k]; k++) {
            char v[512];
            runs_text(&t->rows[i], RUNS_COLUMNS[k], v, sizeof v);
            for (char *p = v; *p; p++)
                if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';   // one field, one line
            fprintf(out, "%s%s", k ? "\t" : "", v);
        }
        fprintf(out, "\n");
    }
}

/* Whether rows a and b agree in every axis (their text). */
static int same_cell(const runs_row_t *a, const runs_row_t *b, const char *const *axes, int naxes)
{
    for (int k = 0; k < naxes; k++) {
        char x[512], y[512];
        runs_text(a, axes[k], x, sizeof x);
        runs_text(b, axes[k], y, sizeof y);
        if (strcmp(x, y)) return 0;
    }
    return 1;
}

/* Add row i of t to the cell it belongs in (a new one when none); 0, or 1 with why. */
static int grid_add(const runs_table_t *t, int i, const char *const *axes, int naxes,
                    runs_grid_t *g, char *why, size_t len)
{
    const runs_row_t *r = &t->rows[i];
    int c = 0;
    while (c < g->n && !same_cell(&t->rows[g->cells[c].rows[0]], r, axes, naxes)) c++;
    if (c == g->n) g->cells[g->n++] = (runs_cell_t){.rows = malloc((size_t)t->n * sizeof(int))};
    runs_cell_t *cell = &g->cells[c];
    if (!cell->rows) { snprintf(why, len, "out of memory"); return 1; }
    for (int j = 0; j < cell->n; j++)
        if (t->rows[cell->rows[j]].seed == r->seed) {
            snprintf(why, len, "%s and %s are one cell at one seed (%lu): another key tells them "
                     "apart", t->rows[cell->rows[j]].run->origin, r->run->origin, r->seed);
            return 1;
        }
    cell->rows[cell->n++] = i;
    return 0;
}

int runs_grid(const runs_table_t *t, const char *const *axes, int naxes, const char *value,
              runs_grid_t *g, char *why, size_t len)
{
    g->n = 0;
    g->cells = calloc((size_t)(t->n ? t->n : 1), sizeof *g->cells);
    if (!g->cells) { snprintf(why, len, "out of memory"); return 1; }
    for (int k = 0; k < naxes; k++) {
        char b[8];
        if (t->n && runs_text(&t->rows[0], axes[k], b, sizeof b) < 0) {
            snprintf(why, len, "no column '%s'", axes[k]);
            return 1;
        }
    }
    for (int i = 0; i < t->n; i++)
        if (grid_add(t, i, axes, naxes, g, why, len)) return 1;
    double *v = malloc((size_t)(t->n ? t->n : 1) * sizeof *v);
    if (!v) { snprintf(why, len, "out of memory"); return 1; }
    for (int c = 0; c < g->n; c++) {
        runs_cell_t *cell = &g->cells[c];
        for (int j = 0; j < cell->n; j++) {
            const double x = runs_value(&t->rows[cell->rows[j]], value);
            v[j] = isfinite(x) ? x : NAN;   // fit_mean_ci skips NaN
        }
        size_t m;
        fit_mean_ci(v, 1, (size_t)cell->n, &cell->mean, &cell->half, &m);   // GSL: mean, sd, t
        cell->finite = (int)m;
    }
    free(v);
    return 0;
}

void runs_grid_free(runs_grid_t *g)
{
    for (int c = 0; g->cells && c < g->n; c++) free(g->cells[c].rows);
    free(g->cells);
    g->cells = NULL;
    g->n = 0;
}
