/* diagnose_curv.c — the rules of measure/diagnose_curv.h (docs/design.md §10). */
#include <limits.h>
#include <math.h>
#include <string.h>
#include "measure/diagnose_curv.h"

void diagnose_curv_init(diagnose_curv_t *c, const config_t *cfg, int rows, int kinds)
{
    memset(c, 0, sizeof *c);
    c->rows = rows > 0 && kinds > 0 ? rows : 0;
    c->kinds = rows > 0 && kinds > 0 ? kinds : 0;
    c->warmup = cfg->train.warmup > 1 ? cfg->train.warmup : 1;
    c->steps = cfg->train.steps;
    c->first_fed = c->last_fed = c->first = c->last = -1;
    c->peak_step = c->peak1_step = c->block_step = c->warmup_step = -1;
    c->first_ratio = c->peak = c->peak1 = c->block_ratio = c->block_row_ratio = NAN;
    c->block_row = c->block_kind = c->first_block_row = c->first_block_kind = -1;
    c->first_block_ratio = NAN;
    c->ratio0 = c->full0 = c->share0 = NAN;
}

double diagnose_curv_ratio(const diagnose_curv_row_t *r)
{
    const double x = r->active / r->threshold;   // threshold +∞ (lr 0): ratio 0
    return isfinite(x) ? x : NAN;
}

double diagnose_curv_block_max(const double *block, int rows, int kinds, int *row, int *kind)
{
    double best = NAN;
    *row = *kind = -1;
    for (int l = 0; block && l < rows; l++)
        for (int k = 0; k < kinds; k++) {
            const double v = block[(size_t)l * kinds + k];
            if (isfinite(v) && (*row < 0 || v > best)) { best = v; *row = l; *kind = k; }
        }
    return best;
}

/* The block of a row above 1: kept when the row has blocks and a larger ratio than the row
 * kept so far (so the peak's, when the peak row measured blocks). */
static void keep_block(diagnose_curv_t *c, const diagnose_curv_row_t *r, double ratio)
{
    int l, k;
    const double v = diagnose_curv_block_max(r->block, c->rows, c->kinds, &l, &k);
    if (l < 0 || (c->block_row >= 0 && !(ratio > c->block_row_ratio))) return;
    c->block_row = l;
    c->block_kind = k;
    c->block_step = r->step;
    c->block_ratio = v / r->threshold;
    c->block_row_ratio = ratio;
}

int diagnose_curv_row(diagnose_curv_t *c, const diagnose_curv_row_t *r)
{
    if (c->seen++ == 0) c->first_fed = r->step;
    c->last_fed = r->step;
    const double ratio = diagnose_curv_ratio(r);
    if (r->step == 0) {
        c->has0 = 1;
        c->ratio0 = ratio;
        c->full0 = isfinite(r->full / r->threshold) ? r->full / r->threshold : NAN;
        c->share0 = r->eps_share;
    }
    if (isnan(ratio)) return 0;
    c->measured++;
    if (c->peak_step < 0 || ratio > c->peak) { c->peak = ratio; c->peak_step = r->step; }
    if (r->step > 0 && (c->peak1_step < 0 || ratio > c->peak1)) { c->peak1 = ratio; c->peak1_step = r->step; }
    if (!(ratio > 1.0)) return 0;
    c->above++;
    c->last = r->step;
    // a warm-up of N scales this row's lr by (t + 1)/N, the run's own by min(1, (t + 1)/W)
    const double t1 = (double)(r->step + 1);
    const double need = (t1 > (double)c->warmup ? t1 : (double)c->warmup) * ratio;
    if (need > c->warmup_need) { c->warmup_need = need; c->warmup_step = r->step; }
    keep_block(c, r, ratio);
    if (c->first >= 0) return 0;
    c->first = r->step;
    c->first_ratio = ratio;
    const double v = diagnose_curv_block_max(r->block, c->rows, c->kinds, &c->first_block_row,
                                             &c->first_block_kind);
    c->first_block_ratio = v / r->threshold;
    return 1;
}

long diagnose_curv_warmup(const diagnose_curv_t *c)
{
    if (c->above == 0) return 0;
    // a need of 2^63 or more has no long (converting it is undefined behaviour, C11 6.3.1.4)
    if (!(c->warmup_need < (double)LONG_MAX)) return LONG_MAX;
    return (long)floor(c->warmup_need) + 1;
}

int diagnose_curv_floor_note(const diagnose_curv_t *c)
{
    return c->has0 && c->share0 >= DIAG_CURV_EPS_SHARE;
}
