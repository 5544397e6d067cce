/* plot_dynamics.c — the training dynamics' figures (docs/design.md §6g): layer × update heat
 * maps of the gradient, the update ratio, the attention entropy and its largest logit; the
 * largest attention logit, the lowest entropy and the loss against the update for a set of runs
 * (colour = learning rate, dash = mitigation); the final loss against the learning rate per
 * mitigation (Wortsman et al. 2023, Fig. 1). The data come from /train (files written before
 * a column existed draw without it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/h5io.h"
#include "report/plot_internal.h"

#define DYN_MAX_HEAT 6      /* runs side by side in a heat map */
#define DYN_MAX_LINES 48    /* runs in the line plots */
#define DYN_MAX_COLUMNS 300 /* update columns of a heat map */

/* /train/<name> of the run at prefix as rows × width (the axes after the first together). */
static double *read_rows(h5io_file_t *f, const char *prefix, const char *name, size_t *rows,
                         size_t *width)
{
    size_t d1, d2;
    double *x = h5io_read_train(f, prefix, name, rows, &d1, &d2);
    *width = d1 * d2;
    return x;
}

/* Per row and layer: sqrt(Σ_c x²) over the columns (norm = 1), mean over the columns
 * picked by use (norm = 0; use NULL: all), or the max (norm = 2); NaN entries skipped. */
static double *per_layer(const double *x, size_t rows, int L, int K, const int *use, int norm)
{
    double *y = malloc((rows * (size_t)L + 1) * sizeof(double));
    for (size_t i = 0; y && i < rows * (size_t)L; i++) {
        double acc = 0.0;
        int n = 0;
        for (int c = 0; c < K; c++) {
            const double v = x[i * K + c];
            if (isnan(v) || (use && !use[c])) continue;
            acc = norm == 1 ? acc + v * v : norm == 2 ? fmax(acc, v) : acc + v;
            n++;
        }
        y[i] = !n ? NAN : norm == 1 ? sqrt(acc) : norm == 2 ? acc : acc / n;
    }
    return y;
}

/* Which names of attribute `label` of /train/<name> start with one of the prefixes. */
static int *pick_names(h5io_file_t *f, const char *prefix, const char *name, const char *label,
                       const char *const *starts, int K)
{
    char path[512];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/train/%s", prefix, name);
    char **names = h5io_read_attr_strings(f, path, label, &n);
    int *use = calloc((size_t)K + 1, sizeof(int));
    for (size_t c = 0; use && names && c < n && (int)c < K; c++)
        for (int s = 0; starts[s]; s++)
            use[c] |= !strncmp(names[c], starts[s], strlen(starts[s]));
    h5io_free_names(names, (int)n);
    return use;
}

void plot_dyn_load(h5io_file_t *f, const char *prefix, plot_run_t *r)
{
    plot_dyn_t *d = calloc(1, sizeof *d);
    if (!d) return;
    r->dyn = d;
    size_t w, n2;
    d->max_logit = read_rows(f, prefix, "max_attn_logit", &d->nsteps, &w);
    d->min_entropy = read_rows(f, prefix, "min_attn_entropy", &n2, &w);
    if (!d->max_logit || !d->min_entropy || n2 < d->nsteps) d->nsteps = d->max_logit ? n2 : 0;
    d->probe_step = read_rows(f, prefix, "probe_step", &d->nprobe, &w);
    d->update_step = read_rows(f, prefix, "update_step", &d->nupdate, &w);
    d->L = r->probe ? r->probe->ax.L : r->cfg.model.layers + config_dec_layers(&r->cfg) *
                                            (r->cfg.model.arch == ARCH_ENCDEC);
    const int L = d->L;
    double *x;
    size_t rows;
    static const char *const WEIGHTS[] = {"w", "cw", NULL}, *const SELF[] = {"self", NULL};
    if (d->probe_step && (x = read_rows(f, prefix, "grad_fro", &rows, &w)) && rows >= d->nprobe) {
        d->grad = per_layer(x, d->nprobe, L, (int)(w / L), NULL, 1);   // ‖∇(layer)‖_F
        free(x);
    }
    if (d->probe_step && (x = read_rows(f, prefix, "attn_entropy", &rows, &w)) && rows >= d->nprobe) {
        int *use = pick_names(f, prefix, "attn_entropy", "head", SELF, (int)(w / L));
        d->entropy = per_layer(x, d->nprobe, L, (int)(w / L), use, 0);  // mean over self heads
        d->logit = NULL;
        free(use);
        free(x);
        if ((x = read_rows(f, prefix, "attn_max_logit", &rows, &w)) && rows >= d->nprobe)
            d->logit = per_layer(x, d->nprobe, L, (int)(w / L), NULL, 2);
        free(x);
    }
    if (d->update_step && (x = read_rows(f, prefix, "update_rel", &rows, &w)) && rows >= d->nupdate) {
        int *use = pick_names(f, prefix, "update_rel", "param", WEIGHTS, (int)(w / L));
        d->update = per_layer(x, d->nupdate, L, (int)(w / L), use, 0);   // mean over matrices
        free(use);
        free(x);
    }
}

void plot_dyn_free(plot_dyn_t *d)
{
    if (!d) return;
    free(d->max_logit); free(d->min_entropy); free(d->probe_step); free(d->update_step);
    free(d->grad); free(d->update); free(d->entropy); free(d->logit);
    free(d);
}

static int mitigation(const config_t *c, char *buf, size_t len);

/* ------------------------------------------------------------------------- heat maps */

typedef struct {
    const char *name, *title, *cb;
    int log;                                  /* log colour scale */
    size_t field, steps, count;               /* offsetof(plot_dyn_t, …): values, x, rows */
} heat_t;

#define DF(x) offsetof(plot_dyn_t, x)
static const heat_t HEATS[] = {
    {"dyn_grad", "Gradient per layer during training", "‖∇W‖_F of the layer", 1, DF(grad),
     DF(probe_step), DF(nprobe)},
    {"dyn_update", "Relative update per layer (DeepNet's update ratio)",
     "mean ‖ΔW‖_F/‖W‖_F of its matrices", 1, DF(update), DF(update_step), DF(nupdate)},
    {"dyn_entropy", "Attention entropy per layer", "mean entropy of its self-attention heads (nats)",
     0, DF(entropy), DF(probe_step), DF(nprobe)},
    {"dyn_logit", "Largest attention logit per layer", "max |s| over its heads", 1, DF(logit),
     DF(probe_step), DF(nprobe)},
};

#define AT(d, off, type) (*(type *)((char *)(d) + (off)))

/* One run's cells: x from midpoint to midpoint of the measured updates, y = layer ± ½; at most
 * DYN_MAX_COLUMNS columns (every stride-th row and the last: a long run stays quick to draw). */
static void heat_block(sbuf_t *s, int i, const plot_dyn_t *d, const heat_t *h)
{
    const double *v = AT(d, h->field, double *), *x = AT(d, h->steps, double *);
    const size_t n = AT(d, h->count, size_t);
    const size_t stride = n > DYN_MAX_COLUMNS ? (n + DYN_MAX_COLUMNS - 1) / DYN_MAX_COLUMNS : 1;
    sbuf_printf(s, "$h%d << EOD\n", i);
    size_t prev = 0;
    for (size_t k = 0; k < n;) {
        const size_t next = k + stride < n ? k + stride : k + 1 < n ? n - 1 : n;   // n: the end
        const double lo = k ? 0.5 * (x[prev] + x[k]) : x[k] - 0.5;
        const double hi = next < n ? 0.5 * (x[k] + x[next]) : x[k] + 0.5;
        for (int l = 0; l < d->L; l++) {
            const double y = v[k * d->L + l];
            if (isfinite(y) && (!h->log || y > 0))
                sbuf_printf(s, "%.10g %d %.10g %.10g %g %g %.6g\n", x[k], l + 1, lo, hi, l + 0.5,
                            l + 1.5, y);
        }
        prev = k;
        k = next;
    }
    sbuf_printf(s, "EOD\n");
}

/* Heat map h of up to DYN_MAX_HEAT runs, a panel each with the run's label. */
static int fig_heat(const plot_set_t *set, sbuf_t *s, char *name, size_t len, const heat_t *h)
{
    int m[DYN_MAX_HEAT], n = 0;
    for (int i = 0; i < set->n; i++) {
        const plot_dyn_t *d = set->runs[i].dyn;
        if (!d || !AT(d, h->field, double *) || AT(d, h->count, size_t) < 2) continue;
        if (n == DYN_MAX_HEAT) return 0;   // a sweep's worth: the line plots tell them apart
        m[n++] = i;
    }
    if (!n) return 0;
    snprintf(name, len, "%s", h->name);
    double lo = INFINITY, hi = -INFINITY;   // one colour scale for every panel
    for (int i = 0; i < n; i++) {
        const plot_dyn_t *d = set->runs[m[i]].dyn;
        const double *v = AT(d, h->field, double *);
        for (size_t k = 0; k < AT(d, h->count, size_t) * (size_t)d->L; k++)
            if (isfinite(v[k]) && (!h->log || v[k] > 0)) { lo = fmin(lo, v[k]); hi = fmax(hi, v[k]); }
        heat_block(s, i, d, h);
    }
    if (!(lo <= hi)) return 0;
    if (hi == lo) hi = lo * 1.01 + 1e-12;
    const config_t *c = &set->runs[m[0]].cfg;
    char data[64];
    plot_data_text(c, data, sizeof data);
    sbuf_printf(s, "set multiplot layout 1,%d title \"%s\\n{/*0.8 colour: %s%s; "
                   "d = %d, %s}\"\n", n, h->title, h->cb, h->log ? " (log scale)" : "",
                c->model.d_model, data);
    sbuf_printf(s, "set palette rgbformulae 33,13,10\nset cbrange [%.6g:%.6g]\n%s"
                   "set xlabel 'update t'\nset ylabel 'layer (1 = input side)'\nset ytics 1\nset autoscale xfix\n",
                lo, hi, h->log ? "set logscale cb\nset format cb '%.2g'\n" : "");
    for (int i = 0; i < n; i++) {
        char label[256], mit[64];
        plot_train_label(set, m, n, i, label, sizeof label);
        if (mitigation(&set->runs[m[i]].cfg, mit, sizeof mit) > 1) {   // QK-norm, z-loss, cap
            const size_t used = strlen(label);
            snprintf(label + used, sizeof label - used, ", %s", mit);
        }
        const plot_dyn_t *d = set->runs[m[i]].dyn;
        sbuf_printf(s, "set title '%s'\nset yrange [0.5:%g]\n%s", label, d->L + 0.5,
                    i + 1 < n ? "unset colorbox\n" : "set colorbox\n");
        sbuf_printf(s, "plot $h%d using 1:2:3:4:5:6:7 with boxxy fs solid noborder lc palette "
                       "notitle\n", i);
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

int plot_fig_dyn_grad(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[0]);
}

int plot_fig_dyn_update(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[1]);
}

int plot_fig_dyn_entropy(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[2]);
}

int plot_fig_dyn_logit(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    return fig_heat(set, s, name, len, &HEATS[3]);
}

/* ------------------------------------------------------------------- lines and lr scans */

/* The mitigations of a run as a dash type (1 none, 2 QK-norm, 3 z-loss, 4 both, 5 + cap) and
 * its name. */
static int mitigation(const config_t *c, char *buf, size_t len)
{
    const int qk = c->model.qk_norm != QK_NORM_OFF, z = c->train.z_loss > 0;
    const int cap = c->model.attn_softcap > 0;
    snprintf(buf, len, "%s%s%s%s%s", qk ? "QK-norm" : "", qk && z ? " + " : "",
             z ? "z-loss" : "", (qk || z) && cap ? " + " : "", cap ? "soft-cap" : "");
    if (!qk && !z && !cap) snprintf(buf, len, "none");
    return cap ? 5 : 1 + qk + 2 * z;
}

/* The distinct learning rates of runs m[0..n), ascending, into lr; returns their count. */
static int distinct_lrs(const plot_set_t *set, const int *m, int n, double *lr)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        const double x = set->runs[m[i]].cfg.train.lr;
        int j = 0;
        while (j < k && lr[j] != x) j++;
        if (j < k) continue;
        for (j = k++; j > 0 && lr[j - 1] > x; j--) lr[j] = lr[j - 1];
        lr[j] = x;
    }
    return k;
}

static int lr_rank(const double *lr, int k, double x)
{
    for (int j = 0; j < k; j++)
        if (lr[j] == x) return j;
    return 0;
}

/* The style of run i: colour by lr, dash by mitigation, width by placement (Post-LN thick). */
static void line_style(const plot_set_t *set, int i, const double *lrs, int k, char *label,
                       size_t len, const char **color, int *dt, double *lw)
{
    const config_t *c = &set->runs[i].cfg;
    char mit[64];
    *dt = mitigation(c, mit, sizeof mit);
    *color = PLOT_COLORS[lr_rank(lrs, k, c->train.lr) % PLOT_NCOLORS];
    *lw = c->model.placement == PLACEMENT_POST ? 2.5 : 1.2;
    snprintf(label, len, "%s, lr %g, %s", config_placement_name(c->model.placement), c->train.lr,
             mit);
}

/* The key of the line plots, one entry per style rather than per run (a grid of 18 runs
 * would need 18): a colour per learning rate, a dash per mitigation, a width per placement. */
static void lines_key(const plot_set_t *set, const int *m, int n, const double *lrs, int k,
                      sbuf_t *s)
{
    for (int j = 0; j < k; j++)
        sbuf_printf(s, ", keyentry with lines lc rgb '%s' lw 2 title 'lr %g'",
                    PLOT_COLORS[j % PLOT_NCOLORS], lrs[j]);
    int dts[DYN_MAX_LINES], nd = 0, pass, j;
    double lws[DYN_MAX_LINES];
    for (pass = 0; pass < 2; pass++)   // the mitigations, then the placements
        for (int i = 0, nl = 0; i < n; i++) {
            char label[160], mit[64];
            const char *col;
            int dt;
            double lw;
            line_style(set, m[i], lrs, k, label, sizeof label, &col, &dt, &lw);
            if (pass == 0) {
                for (j = 0; j < nd && dts[j] != dt; j++) {}
                if (j < nd) continue;
                dts[nd++] = dt;
                mitigation(&set->runs[m[i]].cfg, mit, sizeof mit);
                sbuf_printf(s, ", keyentry with lines lc rgb 'black' dt %d lw 1.2 title '%s'", dt,
                            mit);
            } else {
                for (j = 0; j < nl && lws[j] != lw; j++) {}
                if (j < nl) continue;
                lws[nl++] = lw;
                sbuf_printf(s, ", keyentry with lines lc rgb 'black' lw %g title '%s'", lw,
                            config_placement_name(set->runs[m[i]].cfg.model.placement));
            }
        }
}

int plot_fig_dyn_lines(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[DYN_MAX_LINES], n = 0;
    for (int i = 0; i < set->n && n < DYN_MAX_LINES; i++)
        if (set->runs[i].dyn && set->runs[i].dyn->nsteps > 0 && set->runs[i].nsteps > 0) m[n++] = i;
    if (!n) return 0;
    snprintf(name, len, "dyn_lines");
    double lrs[DYN_MAX_LINES];
    const int k = distinct_lrs(set, m, n, lrs);
    for (int i = 0; i < n; i++) {
        const plot_run_t *r = &set->runs[m[i]];
        const plot_dyn_t *d = r->dyn;
        const size_t T = d->nsteps < r->nsteps ? d->nsteps : r->nsteps, every = T > 500 ? T / 500 : 1;
        sbuf_printf(s, "$d%d << EOD\n", i);
        for (size_t t = 0; t < T; t++)
            if (t % every == 0 || t + 1 == T)
                sbuf_printf(s, "%.10g %.8g %.8g %.8g\n", r->step[t], d->max_logit[t],
                            d->min_entropy[t], r->loss[t]);
        sbuf_printf(s, "EOD\n");
    }
    const config_t *c = &set->runs[m[0]].cfg;
    char data[64];
    plot_data_text(c, data, sizeof data);
    sbuf_printf(s, "set multiplot layout 3,1 title \"Attention-logit growth and entropy collapse"
                   "\\n{/*0.8 d = %d, L = %d, %s, %s; colour = lr, dash = mitigation, thick = "
                   "Post-LN}\"\nset grid\nset key outside right top font ',10'\n"
                   "set lmargin 10\nset rmargin 20\n",
                c->model.d_model, c->model.layers, data, config_optimizer_name(c->train.optimizer));
    static const char *const PANEL[3][2] = {
        {"max |attention logit|", "set logscale y\n"},
        {"lowest layer-mean entropy (nats)", "unset logscale y\n"},
        {"training loss (nats)", "set logscale y\n"},   // a spike of 10x stays readable
    };
    for (int p = 0; p < 3; p++) {
        sbuf_printf(s, "%sset ylabel '%s'\n%s", PANEL[p][1], PANEL[p][0],
                    p == 2 ? "set xlabel 'update t'\n" : "unset xlabel\n");
        sbuf_printf(s, "plot ");
        for (int i = 0; i < n; i++) {
            char label[160];
            const char *col;
            int dt;
            double lw;
            line_style(set, m[i], lrs, k, label, sizeof label, &col, &dt, &lw);
            sbuf_printf(s, "%s$d%d using 1:%d with lines lc rgb '%s' dt %d lw %g notitle",
                        i ? ", " : "", i, p + 2, col, dt, lw);
        }
        if (p == 0) lines_key(set, m, n, lrs, k, s);
        sbuf_printf(s, "\n");
    }
    sbuf_printf(s, "unset multiplot\n");
    return 1;
}

/* A run's final loss: its last validation loss, else the mean of its last 10 training losses;
 * a diverged run counts as its first loss (Wortsman et al. 2023); *div says which. */
static double final_loss(const plot_run_t *r, int *div)
{
    *div = !isnan(r->diverged_at) || !strcmp(r->status, "diverged");
    if (*div) return r->nsteps ? r->loss[0] : NAN;
    if (r->nevals && isfinite(r->val_loss[r->nevals - 1])) return r->val_loss[r->nevals - 1];
    double sum = 0.0;
    int n = 0;
    for (size_t t = r->nsteps > 10 ? r->nsteps - 10 : 0; t < r->nsteps; t++)
        if (isfinite(r->loss[t])) { sum += r->loss[t]; n++; }
    return n ? sum / n : NAN;
}

int plot_fig_dyn_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len)
{
    int m[DYN_MAX_LINES * 4], n = 0;
    for (int i = 0; i < set->n && n < DYN_MAX_LINES * 4; i++)
        if (set->runs[i].dyn && set->runs[i].dyn->nsteps > 0 && set->runs[i].nsteps > 0) m[n++] = i;
    double lrs[DYN_MAX_LINES * 4];
    if (n < 2 || distinct_lrs(set, m, n, lrs) < 2) return 0;
    snprintf(name, len, "dyn_lr");
    // one series per (placement, mitigation): mean over seeds per lr, × where any diverged
    int key[DYN_MAX_LINES], nk = 0;
    for (int i = 0; i < n && nk < DYN_MAX_LINES; i++) {
        const config_t *c = &set->runs[m[i]].cfg;
        char a[64], b[64];
        const int dt = mitigation(c, a, sizeof a);
        int j = 0;
        for (; j < nk; j++) {
            const config_t *e = &set->runs[key[j]].cfg;
            if (e->model.placement == c->model.placement && mitigation(e, b, sizeof b) == dt &&
                !strcmp(a, b))
                break;
        }
        if (j == nk) key[nk++] = m[i];
    }
    const int k = distinct_lrs(set, m, n, lrs);
    for (int j = 0; j < nk; j++) {
        const config_t *e = &set->runs[key[j]].cfg;
        char a[64], b[64];
        mitigation(e, a, sizeof a);
        sbuf_printf(s, "$f%d << EOD\n", j);
        for (int q = 0; q < k; q++) {
            double sum = 0.0;
            int cnt = 0, anydiv = 0;
            for (int i = 0; i < n; i++) {
                const plot_run_t *r = &set->runs[m[i]];
                mitigation(&r->cfg, b, sizeof b);
                if (r->cfg.model.placement != e->model.placement || strcmp(a, b) ||
                    r->cfg.train.lr != lrs[q])
                    continue;
                int div;
                const double f = final_loss(r, &div);
                if (isfinite(f)) { sum += f; cnt++; }
                anydiv |= div;
            }
            if (cnt) sbuf_printf(s, "%.10g %.8g %d\n", lrs[q], sum / cnt, anydiv);
        }
        sbuf_printf(s, "EOD\n");
    }
    const config_t *c = &set->runs[m[0]].cfg;
    sbuf_printf(s, "set title \"Final loss vs learning rate per mitigation (Wortsman et al. 2023, "
                   "Fig. 1)\\n{/*0.8 d = %d, L = %d, %d updates; mean over seeds; × = a run "
                   "diverged (counted at its initial loss)}\"\n", c->model.d_model,
                c->model.layers, c->train.steps);
    sbuf_printf(s, "set grid\nset logscale x\nset xlabel 'learning rate'\nset ylabel 'final loss "
                   "(nats)'\nset key outside right top\nplot ");
    for (int j = 0; j < nk; j++) {
        const config_t *e = &set->runs[key[j]].cfg;
        char a[64];
        const int dt = mitigation(e, a, sizeof a);
        const int post = e->model.placement == PLACEMENT_POST;
        const char *col = PLOT_COLORS[(dt - 1 + 4 * post) % PLOT_NCOLORS];
        sbuf_printf(s, "%s$f%d using 1:2 with linespoints lc rgb '%s' dt %d lw %g pt 7 title "
                       "'%s, %s', $f%d using 1:($3 != 0 ? $2 : 1/0) with points pt 2 ps 2.5 lw 2 "
                       "lc rgb '%s' notitle", j ? ", " : "", j, col, dt, post ? 2.5 : 1.5,
                    config_placement_name(e->model.placement), a, j, col);
    }
    sbuf_printf(s, "\n");
    return 1;
}
