/* proxies_grid.c — the size study's grid and numbers (study/proxies_grid.h; docs/proxies.md;
 * Wortsman et al. 2023). Every axis comes from the runs' configs through the labelling module
 * (plot_diff, plot_item_text): the width is model.d_model, the remedies the keys of REMEDY that
 * differ, the context every other key that differs; the words the labelling module has no entry
 * for (the parametrization, the block's positions, activation and biases) are the few lines of
 * block_text and arm_words. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "study/proxies_grid.h"
#include "report/runs.h"
#include "measure/fit.h"

/* The remedies an arm is made of (docs/design.md §6g, §6h), in the order its words list them;
 * the optimizer makes an arm when it is no Adam (Muon: docs/proxies.md, "Muon across widths"). */
static const char *const REMEDY[] = {"init.parametrization", "train.optimizer", "model.qk_norm",
                                     "train.z_loss", "model.attn_softcap", NULL};
/* The keys that make a block (docs/design.md §6i). */
static const char *const BLOCK_KEYS[] = {"model.positions", "model.activation", "model.bias",
                                         "model.norm", NULL};
/* The keys that may follow the width (heads = d/32, d_ff = 4d in the study's files). */
static const char *const FOLLOW[] = {"model.heads", "model.d_ff", NULL};

static int listed(const char *const *list, const char *item)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], item)) return 1;
    return 0;
}

/* Whether cfg's optimizer is no Adam (Adam, AdamW: the study's own): an arm of its own. */
static int other_optimizer(const config_t *cfg)
{
    return cfg->train.optimizer != OPT_ADAM && cfg->train.optimizer != OPT_ADAMW;
}

/* Whether item is one of an optimizer's own keys (docs/design.md §6h: Muon's momentum, its
 * Newton–Schulz steps and scale, the AdamW lr of the tensors it does not own): recorded only for
 * that optimizer, so it goes with the optimizer's arm and makes no context. */
static int optimizer_key(const char *item)
{
    return !strcmp(item, "train.momentum") || !strncmp(item, "train.muon_", 11);
}

/* ------------------------------------------------------------------------- words */

/* The block of run r in words (plain): "2017 block", "today's block", else its parts; detail 1:
 * the parts in brackets after the name; 2: the parts alone. */
static void block_text(const plot_run_t *r, int detail, char *buf, size_t len)
{
    const config_t *c = &r->cfg;
    static const char *const POS[] = {"sinusoidal positions", "rotary positions", "no positions"};
    static const char *const ACT[] = {"ReLU", "GELU", "SwiGLU"};
    char norm[64], parts[200];
    plot_item_text(r, "model.norm", 0, norm, sizeof norm);
    snprintf(parts, sizeof parts, "%s, %s, %s, %s", POS[c->model.positions % 3],
             ACT[c->model.activation % 3], c->model.bias ? "biases" : "no biases", norm);
    const int k = runs_block_kind(c);
    if (k == 2 || detail == 2) snprintf(buf, len, "%s", parts);
    else snprintf(buf, len, "%s%s%s%s", k ? "today's block" : "2017 block", detail ? " (" : "",
                  detail ? parts : "", detail ? ")" : "");
}

/* Whether run r's value of item says something (not off, 0 or its default: plot_shared's quiet
 * rule). */
static int item_on(const plot_run_t *r, const char *item)
{
    const plot_diff_t none = {0};
    const char *const list[] = {item, NULL};
    char w[160];
    plot_shared(&none, r, list, 0, w, sizeof w);
    return w[0] != '\0';
}

/* Run r's remedies of items (those on, in REMEDY's order, " + " between; QK-norm of any kind as
 * "QK-norm" when generic) into rem, and the arm into full: the parametrization ("standard", "μP")
 * when it differs or no remedy is on, then rem. */
static void arm_words(const plot_run_t *r, const plot_diff_t *items, int generic, char *rem,
                      size_t rlen, char *full, size_t flen)
{
    size_t used = 0;
    rem[0] = '\0';
    for (int k = 1; REMEDY[k]; k++) {
        if (!plot_diff_has(items, REMEDY[k]) || !item_on(r, REMEDY[k])) continue;
        if (!strcmp(REMEDY[k], "train.optimizer") && !other_optimizer(&r->cfg)) continue;
        char w[160];
        if (generic && !strcmp(REMEDY[k], "model.qk_norm")) snprintf(w, sizeof w, "QK-norm");
        else plot_item_text(r, REMEDY[k], 0, w, sizeof w);
        if (used < rlen) used += (size_t)snprintf(rem + used, rlen - used, "%s%s", used ? " + " : "", w);
    }
    const parametrization_t pz = r->cfg.init.parametrization;
    const char *param = pz == PARAM_MUP_SIMPLE   ? "μP"
                        : pz == PARAM_MUP_TABLE3 ? "μP Table 3"
                                                 : "standard";
    if (plot_diff_has(items, "init.parametrization") || !rem[0])
        snprintf(full, flen, "%s%s%s", param, rem[0] ? " + " : "", rem);
    else snprintf(full, flen, "%s", rem);
}

/* ------------------------------------------------------------------------- the grid's axes */

/* Whether item of d follows the width: runs of one width that agree on every other item of d
 * (the lr and the other FOLLOW keys aside) agree on it. */
static int follows_width(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                         const char *item)
{
    plot_diff_t rest = *d, one = {.n = 1};
    for (int k = 0; FOLLOW[k]; k++) plot_diff_drop(&rest, FOLLOW[k]);
    plot_diff_drop(&rest, "train.lr");
    snprintf(one.item[0], sizeof one.item[0], "%s", item);
    char (*key)[400] = malloc((size_t)n * sizeof *key), (*val)[160] = malloc((size_t)n * sizeof *val);
    int ok = key && val;
    for (int i = 0; ok && i < n; i++) {
        plot_key(&rest, &set->runs[m[i]], 0, key[i], sizeof key[i]);
        plot_key(&one, &set->runs[m[i]], 0, val[i], sizeof val[i]);
    }
    for (int i = 0; ok && i < n; i++)
        for (int j = 0; j < i && ok; j++)
            ok = strcmp(key[i], key[j]) || !strcmp(val[i], val[j]);
    free(key);
    free(val);
    return ok;
}

/* Index of text in the n rows of width w at list (appended when absent; −1 when max are taken). */
static int intern_row(char *list, size_t w, int *n, int max, const char *text)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(list + (size_t)i * w, text)) return i;
    if (*n == max) return -1;
    snprintf(list + (size_t)*n * w, w, "%s", text);
    return (*n)++;
}

static int find_row(const char *list, size_t w, int n, const char *text)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(list + (size_t)i * w, text)) return i;
    return -1;
}

static int intern_num(double *vals, int *n, int max, double v)
{
    for (int i = 0; i < *n; i++)
        if (vals[i] == v) return i;
    if (*n == max) return -1;
    vals[*n] = v;
    return (*n)++;
}

/* Each run's context and arm in words (ctx[i], arm[i]; rem[i] the arm's remedies), from the items
 * of st->all that are neither the width, its followers, the lr nor a remedy (context) and those
 * that are remedies (arm). Across contexts, QK-norm of any kind is one arm when each context
 * uses one kind (the block's norm: LayerNorm in the 2017 block, RMSNorm in today's); the panels'
 * titles say which (size_panel_title). */
static void run_words(const plot_set_t *set, size_study_t *st, char (*ctx)[200], char (*arm)[120],
                      char (*rem)[120])
{
    plot_diff_t cx = {0}, ar = {0};
    int block = 0, placements = 1;
    for (int k = 0; k < st->all.n; k++) {
        const char *it = st->all.item[k];
        if (!strcmp(it, "model.d_model") || !strcmp(it, "train.lr")) continue;
        if (listed(FOLLOW, it) && follows_width(set, st->m, st->n, &st->all, it)) continue;
        if (optimizer_key(it) && plot_diff_has(&st->all, "train.optimizer")) continue;
        plot_diff_t *to = listed(REMEDY, it) ? &ar : &cx;
        snprintf(to->item[to->n++], sizeof to->item[0], "%s", it);
        block |= listed(BLOCK_KEYS, it);
    }
    for (int i = 1; i < st->n; i++) {
        const config_t *a = &set->runs[st->m[i]].cfg, *b = &set->runs[st->m[0]].cfg;
        placements &= a->model.placement == b->model.placement && a->init.scheme == b->init.scheme;
    }
    st->block = block;
    const char *dot = cx.n ? strrchr(cx.item[0], '.') : NULL;
    snprintf(st->by, sizeof st->by, "%s", block ? "block" : dot ? dot + 1 : cx.n ? cx.item[0] : "");
    for (int i = 0; i < st->n; i++) {   // the context: the block, then the other items' words
        const plot_run_t *r = &set->runs[st->m[i]];
        size_t used = 0;
        ctx[i][0] = '\0';
        if (block) block_text(r, 0, ctx[i], sizeof ctx[i]);
        used = strlen(ctx[i]);
        for (int k = 0; k < cx.n; k++) {
            if (listed(BLOCK_KEYS, cx.item[k]) || (block && placements && !strcmp(cx.item[k], "scheme")))
                continue;   // the block says it (Pre-LN with LayerNorm or RMSNorm)
            char w[160];
            plot_item_text(r, cx.item[k], 0, w, sizeof w);
            if (used < sizeof ctx[i])
                used += (size_t)snprintf(ctx[i] + used, sizeof ctx[i] - used, "%s%s", used ? ", " : "", w);
        }
    }
    int generic = 0;   // several contexts, one kind of QK-norm in each
    for (int i = 1; i < st->n && !generic; i++) generic = strcmp(ctx[i], ctx[0]) != 0;
    for (int i = 0; i < st->n && generic; i++)
        for (int j = 0; j < i && generic; j++) {
            const config_t *a = &set->runs[st->m[i]].cfg, *b = &set->runs[st->m[j]].cfg;
            generic = strcmp(ctx[i], ctx[j]) || a->model.qk_norm == QK_NORM_OFF ||
                      b->model.qk_norm == QK_NORM_OFF || a->model.qk_norm == b->model.qk_norm;
        }
    for (int i = 0; i < st->n; i++)
        arm_words(&set->runs[st->m[i]], &ar, generic, rem[i], sizeof rem[i], arm[i], sizeof arm[i]);
    st->scheme_by_block = block && placements && plot_diff_has(&st->all, "scheme");
    for (int i = 0; generic && !st->qk_generic && i < st->n; i++)
        st->qk_generic = set->runs[st->m[i]].cfg.model.qk_norm != QK_NORM_OFF;
}

/* The order of contexts: the 2017 block before today's, then by the first ordered item's value
 * (L = 2 before L = 4), else as met. */
static double ctx_order(const plot_set_t *set, const size_study_t *st, int run)
{
    const plot_run_t *r = &set->runs[run];
    double v = 0.0;
    for (int k = 0; k < st->all.n; k++)
        if (plot_item_ordered(st->all.item[k]) && strcmp(st->all.item[k], "model.d_model") &&
            strcmp(st->all.item[k], "train.lr") && !listed(FOLLOW, st->all.item[k]) &&
            !listed(REMEDY, st->all.item[k])) {
            v = plot_item_value(r, st->all.item[k]);
            break;
        }
    return runs_block_kind(&r->cfg) * 1e12 + (isfinite(v) ? v : 0.0);
}

/* Sort the contexts (ctx_order; cfirst[c]: a run of each, moved with it) and the arms (Adam's
 * before another optimizer's, standard before μP, fewer remedies first, then by name). */
static void sort_axes(const plot_set_t *set, size_study_t *st, int *cfirst)
{
    for (int x = 1; x < st->nc; x++)
        for (int y = x; y > 0 && ctx_order(set, st, cfirst[y]) < ctx_order(set, st, cfirst[y - 1]); y--) {
            char t[200];
            memcpy(t, st->ctx[y], sizeof t);
            memcpy(st->ctx[y], st->ctx[y - 1], sizeof t);
            memcpy(st->ctx[y - 1], t, sizeof t);
            const int f = cfirst[y]; cfirst[y] = cfirst[y - 1]; cfirst[y - 1] = f;
        }
    double key[SIZE_ARMS];
    for (int a = 0; a < st->na; a++) {
        int n = st->rem[a][0] != '\0';
        for (const char *p = st->rem[a]; (p = strstr(p, " + ")); p += 3) n++;
        key[a] = st->opt[a] * 1000 + st->mup[a] * 100 + n;
    }
    for (int x = 1; x < st->na; x++)
        for (int y = x; y > 0 && (key[y] < key[y - 1] ||
                                  (key[y] == key[y - 1] && strcmp(st->rem[y], st->rem[y - 1]) < 0)); y--) {
            char t[120];
            memcpy(t, st->arm[y], sizeof t); memcpy(st->arm[y], st->arm[y - 1], sizeof t);
            memcpy(st->arm[y - 1], t, sizeof t);
            memcpy(t, st->rem[y], sizeof t); memcpy(st->rem[y], st->rem[y - 1], sizeof t);
            memcpy(st->rem[y - 1], t, sizeof t);
            const double k = key[y]; key[y] = key[y - 1]; key[y - 1] = k;
            const int mu = st->mup[y]; st->mup[y] = st->mup[y - 1]; st->mup[y - 1] = mu;
            const int op = st->opt[y]; st->opt[y] = st->opt[y - 1]; st->opt[y - 1] = op;
        }
    qsort(st->width, (size_t)st->nw, sizeof(double), plot_cmp_double);
    qsort(st->lr, (size_t)st->nl, sizeof(double), plot_cmp_double);
    qsort(st->seed, (size_t)st->nk, sizeof(double), plot_cmp_double);
}

/* The axes of the grid from the runs' words; 0 with why when they do not fit. */
static int study_axes(const plot_set_t *set, size_study_t *st, char (*ctx)[200], char (*arm)[120],
                      char (*rem)[120], char *why, size_t len)
{
    int cfirst[SIZE_CTX];
    for (int i = 0; i < st->n; i++) {
        const plot_run_t *r = &set->runs[st->m[i]];
        const int nc = st->nc, na = st->na;
        const int c = intern_row(st->ctx[0], sizeof st->ctx[0], &st->nc, SIZE_CTX, ctx[i]);
        const int a = intern_row(st->arm[0], sizeof st->arm[0], &st->na, SIZE_ARMS, arm[i]);
        if (c < 0 || a < 0) {
            snprintf(why, len, "more than %d %s", c < 0 ? SIZE_CTX : SIZE_ARMS,
                     c < 0 ? "groups of runs besides width, remedy, lr and seed" : "remedies");
            return 0;
        }
        if (st->nc > nc) cfirst[c] = st->m[i];
        if (st->na > na) {
            snprintf(st->rem[a], sizeof st->rem[0], "%s", rem[i]);
            st->mup[a] = config_is_mup(&r->cfg);
            st->opt[a] = other_optimizer(&r->cfg);
        }
        if (intern_num(st->width, &st->nw, SIZE_WIDTHS, r->cfg.model.d_model) < 0 ||
            intern_num(st->lr, &st->nl, SIZE_LRS, r->cfg.train.lr) < 0 ||
            intern_num(st->seed, &st->nk, SIZE_SEEDS, (double)r->cfg.init.seed) < 0) {
            snprintf(why, len, "more than %d widths, %d learning rates or %d seeds", SIZE_WIDTHS,
                     SIZE_LRS, SIZE_SEEDS);
            return 0;
        }
    }
    sort_axes(set, st, cfirst);
    for (int a = 0; a < st->na; a++) {
        st->partner[a] = -1;
        for (int b = 0; b < st->na; b++)
            if (st->mup[b] != st->mup[a] && !strcmp(st->rem[a], st->rem[b])) st->partner[a] = b;
    }
    return 1;
}

/* ------------------------------------------------------------------------- reading */

/* The largest finite max |attention logit| of any update, or NaN. */
static double peak_logit(const plot_run_t *r)
{
    double p = NAN;
    for (size_t t = 0; r->dyn && r->dyn->max_logit && t < r->dyn->nsteps; t++)
        if (isfinite(r->dyn->max_logit[t]) && !(r->dyn->max_logit[t] <= p)) p = r->dyn->max_logit[t];
    return p;
}

static int find_num(const double *v, int n, double x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return i;
    return -1;
}

/* Every run into its slot; 0 with why when two fall in one. */
static int study_fill(const plot_set_t *set, size_study_t *st, char (*ctx)[200], char (*arm)[120],
                      char *why, size_t len)
{
    const size_t N = (size_t)st->nc * st->na * st->nw * st->nl * st->nk;
    st->final = malloc(N * sizeof(double));
    st->loss0 = malloc(N * sizeof(double));
    st->logit = malloc(N * sizeof(double));
    st->diverged = calloc(N, 1);
    st->ran = calloc(N, 1);
    st->ctx_of = malloc((size_t)st->n * sizeof *st->ctx_of);
    if (!st->final || !st->loss0 || !st->logit || !st->diverged || !st->ran || !st->ctx_of) return 0;
    for (size_t i = 0; i < N; i++) st->final[i] = st->loss0[i] = st->logit[i] = NAN;
    for (int c = 0; c < st->nc; c++) {
        st->plateau[c] = NAN;
        for (int a = 0; a < st->na; a++) st->rep[c][a] = -1;
    }
    for (int i = 0; i < st->n; i++) {
        const plot_run_t *r = &set->runs[st->m[i]];
        const int a = find_row(st->arm[0], sizeof st->arm[0], st->na, arm[i]);
        const int c = find_row(st->ctx[0], sizeof st->ctx[0], st->nc, ctx[i]);
        const int w = find_num(st->width, st->nw, r->cfg.model.d_model);
        const int l = find_num(st->lr, st->nl, r->cfg.train.lr);
        const int k = find_num(st->seed, st->nk, (double)r->cfg.init.seed);
        const size_t x = SIZE_IX(st, c, a, w, l, k);
        st->ctx_of[i] = c;
        if (st->ran[x]) {
            snprintf(why, len, "two runs in one cell (%s and another)", r->name);
            return 0;
        }
        runs_row_t row;   // the outcome, defined once (report/runs.h)
        runs_row(set, st->m[i], &row);
        st->final[x] = row.final_loss;
        st->loss0[x] = row.loss_init;
        st->logit[x] = peak_logit(r);
        st->diverged[x] = (char)row.diverged;
        st->ran[x] = 1;
        if (st->rep[c][a] < 0) st->rep[c][a] = st->m[i];
        if (isnan(st->plateau[c]) && isfinite(row.plateau)) st->plateau[c] = row.plateau;
    }
    return 1;
}

/* Whether some arm of some context ran two widths or more at two lrs or more each. */
static int is_study(const size_study_t *st)
{
    for (int c = 0; c < st->nc; c++)
        for (int a = 0; a < st->na; a++) {
            int widths = 0;
            for (int w = 0; w < st->nw; w++) {
                int lrs = 0;
                for (int l = 0; l < st->nl; l++) {
                    int any = 0;
                    for (int k = 0; k < st->nk; k++) any |= st->ran[SIZE_IX(st, c, a, w, l, k)];
                    lrs += any;
                }
                widths += lrs >= 2;
            }
            if (widths >= 2) return 1;
        }
    return 0;
}

int size_study_read(const plot_set_t *set, size_study_t *st, char *why, size_t len)
{
    memset(st, 0, sizeof *st);
    st->m = malloc((size_t)(set->n ? set->n : 1) * sizeof *st->m);
    for (int i = 0; st->m && i < set->n; i++)
        if (set->runs[i].nsteps > 0 && set->runs[i].loss) st->m[st->n++] = i;
    if (st->n < 4) return 0;
    plot_diff(set, st->m, st->n, 0, &st->all);
    st->all.covary[0] = '\0';   // the block's and arm's words say what varies with them
    if (!plot_diff_has(&st->all, "model.d_model") || !plot_diff_has(&st->all, "train.lr")) return 0;
    st->first = st->m[0];
    char (*ctx)[200] = malloc((size_t)st->n * sizeof *ctx);
    char (*arm)[120] = malloc((size_t)st->n * sizeof *arm), (*rem)[120] = malloc((size_t)st->n * sizeof *rem);
    int rc = ctx && arm && rem;
    if (rc) run_words(set, st, ctx, arm, rem);
    if (rc && !study_axes(set, st, ctx, arm, rem, why, len)) rc = -1;
    if (rc == 1 && (st->nw < 2 || st->nl < 2)) rc = 0;
    if (rc == 1 && !study_fill(set, st, ctx, arm, why, len)) rc = why[0] ? -1 : 0;
    if (rc == 1 && !is_study(st)) rc = 0;
    free(ctx);
    free(arm);
    free(rem);
    return rc;
}

void size_study_free(size_study_t *st)
{
    free(st->m);
    free(st->final);
    free(st->loss0);
    free(st->logit);
    free(st->diverged);
    free(st->ran);
    free(st->ctx_of);
    memset(st, 0, sizeof *st);
}

/* The widths' d_ff in the runs of context c (every run when c < 0) in words: "d_ff = 4d" when
 * d_ff/d is one ratio, else its value at each width ("d_ff = 88, 176, 344"). */
static void dff_text(const plot_set_t *set, const size_study_t *st, int c, char *buf, size_t len)
{
    double ratio = NAN, dff[SIZE_WIDTHS];
    int same = 1;
    for (int w = 0; w < st->nw; w++) dff[w] = NAN;
    for (int i = 0; i < st->n; i++) {
        const config_t *x = &set->runs[st->m[i]].cfg;
        if (c >= 0 && st->ctx_of[i] != c) continue;
        const double r = (double)x->model.d_ff / x->model.d_model;
        same &= isnan(ratio) || r == ratio;
        ratio = r;
        for (int w = 0; w < st->nw; w++)
            if (st->width[w] == x->model.d_model) dff[w] = x->model.d_ff;
    }
    if (same) { snprintf(buf, len, "d_ff = %gd", ratio); return; }
    size_t used = (size_t)snprintf(buf, len, "d_ff =");
    for (int w = 0; w < st->nw && used < len; w++)
        if (isfinite(dff[w])) used += (size_t)snprintf(buf + used, len - used, "%s %g", used > 6 ? "," : "", dff[w]);
}

void size_enh_lines(const char *plain, char *buf, size_t len)
{
    while (*plain) {
        const size_t n = strcspn(plain, "\n"), used = strlen(buf);
        char line[600], esc[1000];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), plain);
        plot_enh(line, esc, sizeof esc);
        if (used < len) snprintf(buf + used, len - used, "%s%s", esc, plain[n] ? "\n" : "");
        plain += n + (plain[n] != '\0');
    }
}

void size_subtitle(const plot_set_t *set, const size_study_t *st, const char *extra, char *buf,
                   size_t len)
{
    const plot_run_t *r = &set->runs[st->first];
    char plain[1600], t[300];
    size_t used = 0;
    buf[0] = '\0';
    if (st->scheme_by_block) {
        scheme_label(&r->cfg, t, sizeof t);   // one placement: the blocks' norms are the rest
        snprintf(buf, len, "%s, ", t);
    }
    const size_t pre = strlen(buf);
    plot_shared(&st->all, r, PLOT_SHARED_TRAIN, 1, buf + pre, len - pre);   // enhanced already
    if (!st->block) {   // the block and its d_ff
        block_text(r, 1, t, sizeof t);
        used += (size_t)snprintf(plain, sizeof plain, "\n%s, ", t);
        dff_text(set, st, -1, plain + used, sizeof plain - used);
    } else {            // each context's block and d_ff
        for (int c = 0; c < st->nc && used < sizeof plain; c++) {
            int run = -1;
            for (int a = 0; a < st->na && run < 0; a++) run = st->rep[c][a];
            block_text(&set->runs[run], 2, t, sizeof t);
            used += (size_t)snprintf(plain + used, sizeof plain - used, "%s%s: %s, ", c ? "; " : "\n",
                                     st->ctx[c], t);
            if (used < sizeof plain) dff_text(set, st, c, plain + used, sizeof plain - used);
            used = strlen(plain);
        }

    }
    used = strlen(plain);
    double h = NAN;
    int heads = 1;
    for (int i = 0; i < st->n; i++) {
        const config_t *x = &set->runs[st->m[i]].cfg;
        heads &= isnan(h) || (double)x->model.d_model / x->model.heads == h;
        h = (double)x->model.d_model / x->model.heads;
    }
    const char *sep = st->block ? "\n" : "; ";
    if (heads && used < sizeof plain) {
        used += (size_t)snprintf(plain + used, sizeof plain - used, "%sd_head = %g at every width", sep, h);
        sep = "; ";
    }
    if (st->qk_generic && used < sizeof plain) {
        used += (size_t)snprintf(plain + used, sizeof plain - used, "%sQK-norm: the block's norm", sep);
        sep = "; ";
    }
    int mup = -1;   // a μP run (its base width; a standard run records none)
    for (int i = 0; i < st->n && mup < 0; i++)
        if (config_is_mup(&set->runs[st->m[i]].cfg)) mup = st->m[i];
    if (mup >= 0 && used < sizeof plain)
        used += (size_t)snprintf(plain + used, sizeof plain - used, "%sμP's base width %d", sep,
                                 set->runs[mup].cfg.init.base_width);
    for (int i = 0; i < st->n && used < sizeof plain; i++) {   // Muon's other tensors (§6h)
        const config_t *x = &set->runs[st->m[i]].cfg;
        if (x->train.optimizer != OPT_MUON) continue;
        if (x->train.muon_adamw_lr > 0)
            used += (size_t)snprintf(plain + used, sizeof plain - used, "\nMuon on the layers' "
                                     "matrices, AdamW at lr %g on the rest", x->train.muon_adamw_lr);
        else
            used += (size_t)snprintf(plain + used, sizeof plain - used, "\nMuon on the layers' "
                                     "matrices, AdamW at Muon's lr on the rest");
        break;
    }
    if (extra && extra[0] && used < sizeof plain)
        snprintf(plain + used, sizeof plain - used, "\n%s", extra);
    size_enh_lines(plain, buf, len);
}

void size_panel_title(const plot_set_t *set, const size_study_t *st, int c, int a, char *buf,
                      size_t len)
{
    char rem[120], full[120];
    if (st->rep[c][a] >= 0) {
        plot_diff_t items = {0};   // the remedies that differ: the arm's words, its own QK-norm
        for (int k = 0; REMEDY[k]; k++)
            if (plot_diff_has(&st->all, REMEDY[k]))
                snprintf(items.item[items.n++], sizeof items.item[0], "%s", REMEDY[k]);
        arm_words(&set->runs[st->rep[c][a]], &items, 0, rem, sizeof rem, full, sizeof full);
    } else {
        snprintf(full, sizeof full, "%s", st->arm[a]);
    }
    snprintf(buf, len, "%s%s%s", st->nc > 1 ? st->ctx[c] : "", st->nc > 1 ? "\n" : "", full);
}
