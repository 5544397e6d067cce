/* diagnosis_curv.c — the curvature line of `stability info` and of the run's warnings
 * (report/diagnosis_curv.h; the rules: measure/diagnose_curv.h; docs/design.md §10). */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "io/h5io.h"
#include "model/tensors.h"
#include "config/scheme.h"
#include "measure/diagnose.h"
#include "report/diagnosis_curv.h"

/* Text appended to a fixed buffer. */
typedef struct {
    char *buf;
    size_t len, n;
} text_t;

static void put(text_t *t, const char *fmt, ...)
{
    if (t->n + 1 >= t->len) return;
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(t->buf + t->n, t->len - t->n, fmt, ap);
    va_end(ap);
    if (k > 0) t->n = t->n + (size_t)k < t->len ? t->n + (size_t)k : t->len - 1;
}

/* "layer 3 ffn", "decoder layer 2 attn_qk", "embed (outside the layers)": layers from 1,
 * counted within their stack. */
static void put_block(text_t *t, const diagnose_curv_t *c, const report_curv_axes_t *ax, int l, int k)
{
    const char *kind = ax && ax->kind ? ax->kind[k] : k < TENSOR_BLOCKS ? tensors_block_name(k) : "?";
    const char *s = ax && ax->stack ? ax->stack[l] : (l == c->rows - 1 ? "outside" : "lm");
    if (!strcmp(s, "outside")) { put(t, "%s, outside the layers,", kind); return; }
    int first = ax && ax->stack ? l : 0;
    while (first > 0 && !strcmp(ax->stack[first - 1], s)) first--;
    put(t, "%slayer %d %s", !strcmp(s, "enc") ? "encoder " : !strcmp(s, "dec") ? "decoder " : "",
        l - first + 1, kind);
}

/* The note on update 0 when it is above and its top eigenvector lies mostly on floored
 * coordinates: its full λ_max(P⁻¹H) is the ε-floor's (docs/curvature.md "The floor"). */
static void put_floor_note(text_t *t, const diagnose_curv_t *c)
{
    if (c->first == 0 && diagnose_curv_floor_note(c))
        put(t, "; at update 0 the top eigenvector of P^-1 H lies %.0f %% on floored coordinates "
            "(precond_eps_share): the full lambda_max(P^-1 H) there, %.3g x the threshold, is "
            "the floor's artefact, the ratios here leave those coordinates out",
            100 * c->share0, c->full0);
}

/* The notes on update 0: above there alone, its ratio rests on the first gradient alone; and
 * the floor's note. */
static void put_notes(text_t *t, const diagnose_curv_t *c)
{
    if (c->first == 0 && c->last == 0)
        put(t, "; above only at update 0, where P is that of the first gradient alone "
            "((1-beta1)(|g|+eps) for Adam: a coordinate with a small first gradient weighs "
            "much), and every run without warm-up starts above (docs/curvature.md)");
    put_floor_note(t, c);
}

/* The keys the harness offers: a warm-up of about N updates (or a smaller lr when it would
 * outlast the run), GI-Adam, Pre-LN; each when cfg does not use it. */
static void put_remedies(text_t *t, const diagnose_curv_t *c, const config_t *cfg)
{
    const char *sep = "; try ";
    const long need = diagnose_curv_warmup(c);
    // the diagnosis' one warm-up answer (measure/diagnose.h), at least the curvature's need
    const long n = diagnose_warmup_updates(cfg, (double)need);
    if (need > c->warmup && n <= cfg->train.steps && n > cfg->train.warmup) {
        put(t, "%s--set train.warmup=%ld (", sep, n);
        if (n > need) put(t, "the diagnosis' warm-up, ");
        put(t, "at least the %ld updates under which every measured row above would be below, "
            "set by update %ld's ratio, if the curvature took the same path)", need, c->warmup_step);
        sep = ", ";
    } else if (need == LONG_MAX) {   // beyond any long: said as the number it is
        put(t, "%s--set train.lr=%.2g (a warm-up would need about %.2g updates, more than the "
            "run's %d)", sep, cfg->train.lr / c->peak, c->warmup_need, cfg->train.steps);
        sep = ", ";
    } else if (need > c->warmup && n > cfg->train.warmup) {
        put(t, "%s--set train.lr=%.2g (a warm-up would need about %ld updates, more than the "
            "run's %d)", sep, cfg->train.lr / c->peak, n, cfg->train.steps);
        sep = ", ";
    }
    if (cfg->train.optimizer != OPT_SGD && cfg->train.optimizer != OPT_GI_ADAM) {
        put(t, "%s--set train.optimizer=gi_adam", sep);
        sep = ", ";
    }
    if (scheme_family(cfg) == SCHEME_POST_LIKE) put(t, "%s--set model.placement=pre", sep);
}

void report_curvature_message(const diagnose_curv_t *c, const config_t *cfg,
                              const report_curv_axes_t *ax, int first, char *buf, size_t len)
{
    text_t t = {buf, len, 0};
    buf[0] = '\0';
    if (!c->seen) return;
    const char *opt = config_optimizer_name(cfg->train.optimizer);
    if (!c->measured) {
        put(&t, "curvature: none of the %ld curvature rows has a finite active ratio", c->seen);
        return;
    }
    if (!c->above) {
        put(&t, "curvature: the active preconditioned sharpness stayed below %s's stability "
            "threshold at all %ld measured rows (the largest ratio precond_max_active / "
            "stability_threshold %.3g, at update %ld)", opt, c->measured, c->peak, c->peak_step);
        return;
    }
    put(&t, "curvature: the active preconditioned sharpness crossed %s's stability threshold at "
        "update %ld: precond_max_active / stability_threshold = %.3g", opt, c->first,
        c->first_ratio);
    if (first) {
        if (c->first_block_row >= 0) {
            put(&t, ", the largest block ");
            put_block(&t, c, ax, c->first_block_row, c->first_block_kind);
            put(&t, " %.3g x the threshold", c->first_block_ratio);
        }
        put_floor_note(&t, c);   // "above only at update 0" is not known yet
        put(&t, "; the peak, how long and the remedies when the run ends");
        return;
    }
    put(&t, "; peak %.3g at update %ld", c->peak, c->peak_step);
    if (c->peak_step == 0 && c->peak1_step > 0)
        put(&t, " (after update 0: %.3g at update %ld)", c->peak1, c->peak1_step);
    if (c->last > c->first)
        put(&t, "; above it from update %ld to %ld (%ld update%s; %ld of %ld measured rows above)",
            c->first, c->last, c->last - c->first, c->last - c->first == 1 ? "" : "s", c->above,
            c->measured);
    else
        put(&t, "; above it at update %ld alone (1 of %ld measured rows)", c->first, c->measured);
    if (c->first_fed > 0) put(&t, " (rows from update %ld on: the run resumed there)", c->first_fed);
    if (c->block_row >= 0) {
        put(&t, "; the largest block %s", c->block_step == c->peak_step ? "at the peak: " : "");
        put_block(&t, c, ax, c->block_row, c->block_kind);
        put(&t, " %.3g x the threshold", c->block_ratio);
        if (c->block_step != c->peak_step) put(&t, " at update %ld, the highest row with blocks", c->block_step);
    }
    put_notes(&t, c);
    put_remedies(&t, c, cfg);
}

/* ------------------------------------------------------------------ the file's rows */

static void free_names(char **s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

/* Column name of /train at prefix, n rows of w × v values (NULL when absent or of fewer rows). */
static double *column(struct h5io_file *f, const char *prefix, const char *name, size_t n,
                      size_t *w, size_t *v)
{
    size_t m, w1, v1;
    double *x = h5io_read_train(f, prefix, name, &m, &w1, &v1);
    if (x && m < n) { free(x); x = NULL; }
    if (w) *w = w1;
    if (v) *v = v1;
    return x;
}

int report_curvature_read(struct h5io_file *f, const char *prefix, const config_t *cfg,
                          diagnose_curv_t *c)
{
    size_t n = 0, w, v, rows = 0, kinds = 0;
    double *step = h5io_read_train(f, prefix, "curv_step", &n, &w, &v);
    double *active = column(f, prefix, "precond_max_active", n, NULL, NULL);
    double *thr = column(f, prefix, "stability_threshold", n, NULL, NULL);
    double *full = column(f, prefix, "precond_max", n, NULL, NULL);
    double *share = column(f, prefix, "precond_eps_share", n, NULL, NULL);
    double *block = column(f, prefix, "precond_block_max", n, &rows, &kinds);
    if (!block) rows = kinds = 0;
    diagnose_curv_init(c, cfg, (int)rows, (int)kinds);
    const int ok = step && active && thr && n > 0;
    for (size_t i = 0; ok && i < n; i++) {
        const diagnose_curv_row_t r = {
            .step = (long)step[i], .active = active[i], .threshold = thr[i],
            .full = full ? full[i] : NAN, .eps_share = share ? share[i] : NAN,
            .block = block ? block + i * rows * kinds : NULL};
        diagnose_curv_row(c, &r);
    }
    free(step); free(active); free(thr); free(full); free(share); free(block);
    return !ok;
}

void report_curvature(FILE *out, struct h5io_file *f, const char *prefix, const config_t *cfg)
{
    diagnose_curv_t c;
    if (report_curvature_read(f, prefix, cfg, &c)) return;   // no curvature rows: nothing to say
    char path[600];
    size_t ns = 0, nk = 0;
    snprintf(path, sizeof path, "%s/train/precond_block_max", prefix);
    char **stack = c.rows ? h5io_read_attr_strings(f, path, "stack", &ns) : NULL;
    char **kind = c.rows ? h5io_read_attr_strings(f, path, "kind", &nk) : NULL;
    const report_curv_axes_t ax = {
        .stack = stack && ns == (size_t)c.rows ? (const char *const *)stack : NULL,
        .kind = kind && nk == (size_t)c.kinds ? (const char *const *)kind : NULL};
    char msg[2000];
    report_curvature_message(&c, cfg, &ax, 0, msg, sizeof msg);
    if (msg[0]) fprintf(out, "  %s\n", msg);
    free_names(stack, ns);
    free_names(kind, nk);
}
