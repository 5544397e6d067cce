/* plot_precision.c — a run's precision measures (docs/design.md, "Low precision, emulated"),
 * read with the set by report/plot.c's loader into plot_run_t's prec (plot_internal.h): the
 * largest weight spectral norm and the mean |softmax·V rounding bias| at each probe, and the
 * stagnation of each update. Reading only: the precision study's statistics and figures are
 * in study/precision*.c. */
#include <math.h>
#include <stdlib.h>
#include "io/h5io.h"
#include "report/plot_internal.h"

/* Per row of x (rows, w): the max (mean = 0) or the mean of |x| (mean = 1) of its finite
 * entries, into y[r] (NaN when none). */
static void row_reduce(const double *x, size_t rows, size_t w, int mean, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        double acc = mean ? 0.0 : -INFINITY;
        size_t n = 0;
        for (size_t c = 0; c < w; c++) {
            const double v = x[r * w + c];
            if (isnan(v)) continue;
            acc = mean ? acc + fabs(v) : fmax(acc, v);
            n++;
        }
        y[r] = !n ? NAN : mean ? acc / (double)n : acc;
    }
}

void plot_prec_load(struct h5io_file *f, const char *prefix, plot_run_t *r)
{
    size_t n = 0, d1, d2, rows = 0, w1, w2, ns = 0;
    double *step = h5io_read_train(f, prefix, "probe_step", &n, &d1, &d2);
    double *ws = h5io_read_train(f, prefix, "weight_spec", &rows, &w1, &w2);
    double *stag = h5io_read_train(f, prefix, "stagnation", &ns, &d1, &d2);
    plot_prec_t *p = calloc(1, sizeof *p);
    if (!p || ((!step || !ws || rows < n) && !stag)) { free(step); free(ws); free(stag); free(p); return; }
    p->stagnation = stag;
    p->nstag = stag ? ns : 0;
    if (step && ws && rows >= n) {
        p->nprobe = n;
        p->probe_step = step;
        p->spec_max = malloc((n + 1) * sizeof(double));
        p->pv_bias = malloc((n + 1) * sizeof(double));
        if (p->spec_max) row_reduce(ws, n, w1 * w2, 0, p->spec_max);
        double *ex = h5io_read_train(f, prefix, "extra_weight_spec", &rows, &w1, &w2), tmp;
        for (size_t i = 0; ex && p->spec_max && rows >= n && i < n; i++) {   // the other matrices
            row_reduce(ex + i * w1 * w2, 1, w1 * w2, 0, &tmp);
            if (isfinite(tmp) && !(tmp <= p->spec_max[i])) p->spec_max[i] = tmp;
        }
        free(ex);
        double *pv = h5io_read_train(f, prefix, "pv_round_bias", &rows, &w1, &w2);
        for (size_t i = 0; p->pv_bias && i < n; i++) p->pv_bias[i] = NAN;
        if (pv && p->pv_bias && rows >= n) row_reduce(pv, n, w1 * w2, 1, p->pv_bias);
        free(pv);
    } else free(step);
    free(ws);
    r->prec = p;
}

void plot_prec_free(plot_prec_t *p)
{
    if (!p) return;
    free(p->probe_step); free(p->spec_max); free(p->pv_bias); free(p->stagnation);
    free(p);
}
