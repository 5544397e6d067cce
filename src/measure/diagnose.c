/* diagnose.c — the rules of measure/diagnose.h (docs/design.md §6g) and their messages. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data/data.h"
#include "measure/diagnose.h"

#define W DIAG_PLATEAU_WINDOW

/* Events whose place (layer, head) is read from a probe row at or after them. */
#define NEED_WHERE (DIAG_LOGIT_GROWTH | DIAG_ENTROPY_COLLAPSE)

static const diagnose_where_t NOWHERE = {-1, -1, 0, NAN};

void diagnose_init(diagnose_t *d, const config_t *cfg, double unigram)
{
    memset(d, 0, sizeof *d);
    d->cfg = cfg;
    d->unigram = unigram;
    d->lnV = log((double)cfg->model.vocab);
    d->floor = data_token_entropy(cfg);
    d->logit1 = d->loss1 = d->grad_ratio1 = NAN;
    d->start_mean = d->end_mean = NAN;
    d->last_logit = d->last_entropy = d->last_grad_hi = d->last_grad_lo = NOWHERE;
    for (int i = 0; i < DIAG_NEVENTS; i++) d->where[i] = NOWHERE;
}

void diagnose_axes(diagnose_t *d, int L, const char *const *stack, int H, const char *const *head)
{
    d->L = L;
    d->H = H;
    d->stack = stack;
    d->head = head;
}

/* −Σ p ln p of the histogram count[k] (p = count / its sum); NaN for an empty one. */
static double entropy_of_counts(const size_t *count, size_t k)
{
    size_t n = 0;
    for (size_t i = 0; i < k; i++) n += count[i];
    if (!n) return NAN;
    double h = 0.0;
    for (size_t i = 0; i < k; i++)
        if (count[i]) {
            const double p = (double)count[i] / (double)n;
            h -= p * log(p);
        }
    return h;
}

double diagnose_unigram_entropy(const unsigned char *text, size_t n)
{
    if (!n) return NAN;
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++) count[text[i]]++;
    return entropy_of_counts(count, 256);
}

double diagnose_target_entropy(const corpus_t *c, double eps)
{
    const corpus_split_t *sp = &c->split[CORPUS_TRAIN];
    size_t *count = calloc((size_t)c->vocab, sizeof *count);   // (V)
    if (!count) return NAN;
    for (long i = 0; i < sp->n; i++) {
        const int32_t *t = sp->pool + sp->at[i] + sp->src_len[i];   // its target follows
        for (int j = 0; j < sp->tgt_len[i]; j++) count[t[j]]++;
        count[CORPUS_EOS]++;   // targets = t + [EOS] (corpus.h)
    }
    size_t n = 0;
    for (int v = 0; v < c->vocab; v++) n += count[v];
    double h = n ? 0.0 : NAN;
    if (!(eps > 0)) h = entropy_of_counts(count, (size_t)c->vocab);
    else   // min over q of E_y[−Σ_v t_v(y) ln q_v] is at q = E_y[t(y)]: its entropy
        for (int v = 0; n && v < c->vocab; v++) {
            const double t = (1 - eps) * (double)count[v] / (double)n + eps / c->vocab;
            h -= t * log(t);
        }
    free(count);
    return h;
}

long diagnose_warmup_updates(const config_t *cfg, double need)
{
    const double steps = cfg->train.steps;
    double n = cfg->train.optimizer == OPT_SGD ? floor(steps / 10)
                                               : ceil(2.0 / (1.0 - cfg->train.beta2) * (1 - 1e-12));
    // (1 − 1e-12: 2/(1 − 0.9) is 20.000000000000004 in binary; the rule means 20)
    if (need > n) n = ceil(need);
    if (!(n >= 2)) n = 2;
    return n < 9.2e18 ? (long)n : LONG_MAX;   // no overflow at absurd lrs or β₂ → 1
}

long diagnose_warmup_answer(const diagnose_t *d)
{
    return diagnose_warmup_updates(d->cfg, d->warmup_need);
}

int diagnose_index(int e)
{
    int i = 0;
    while (e > 1) { e >>= 1; i++; }
    return i;
}

/* Record event e at step with value v (once). */
static void happen(diagnose_t *d, int e, long step, double v)
{
    if (d->events & e) return;
    d->events |= e;
    d->at[diagnose_index(e)] = step;
    d->value[diagnose_index(e)] = v;
}

/* The events to report now: new ones, but those still waiting for their place. */
static int ready(diagnose_t *d, int all)
{
    int r = d->events & ~d->told;
    if (!all && d->H > 0)   // no per-head rows will come: nothing to wait for
        for (int e = 1; e <= NEED_WHERE; e <<= 1)
            if ((r & e & NEED_WHERE) && d->where[diagnose_index(e)].probe == 0) r &= ~e;
    d->told |= r;
    return r;
}

int diagnose_next_token(const config_t *cfg)
{
    const task_t k = cfg->data.task;
    return cfg->model.arch == ARCH_LM &&
           (k == TASK_TEXT || k == TASK_RANDOM || k == TASK_COPY || k == TASK_REVERSE);
}

int diagnose_start(diagnose_t *d)
{
    const config_t *c = d->cfg;
    if (c->train.steps > 0 && c->train.warmup > c->train.steps)
        happen(d, DIAG_WARMUP_LONG, 0, c->train.lr * c->train.steps / c->train.warmup);
    if (c->train.steps > 0 && diagnose_next_token(c) && !c->model.causal) happen(d, DIAG_LEAK, 0, NAN);
    return ready(d, 0);
}

/* The mean of the last n (≤ W) losses fed. */
static double last_mean(const diagnose_t *d, long n)
{
    double s = 0.0;
    for (long k = 0; k < n; k++) s += d->window[(d->seen - 1 - k) % W];
    return s / (double)n;
}

/* The plateau: the mean of the last W losses within the band, DIAG_PLATEAU_STUCK in a row. */
static void plateau(diagnose_t *d, long step, double mean)
{
    if (isnan(d->unigram) || d->seen < W) return;
    if (!(fabs(mean - d->unigram) < DIAG_PLATEAU_BAND)) { d->plateau_run = 0; return; }
    if (d->plateau_run++ == 0) d->plateau_from = step;
    d->plateau_total++;
    d->plateau_last = step;
    if (d->plateau_run > d->plateau_longest) d->plateau_longest = d->plateau_run;
    if (d->plateau_run >= DIAG_PLATEAU_STUCK) happen(d, DIAG_PLATEAU, d->plateau_from, mean);
}

/* The explosion line: DIAG_EXPLODE_FACTOR × the larger of ln V and the loss at update 1. */
static double explode_line(const diagnose_t *d)
{
    return DIAG_EXPLODE_FACTOR * (isnan(d->loss1) || d->loss1 < d->lnV ? d->lnV : d->loss1);
}

/* The window's mean above the explosion line: exploded since the first update above it there. */
static void explosion(diagnose_t *d, double mean, long n)
{
    const double line = explode_line(d);
    d->exploded_now = mean > line;
    if (!d->exploded_now || (d->events & DIAG_EXPLODED)) return;
    long from = d->last_step;
    for (long k = n - 1; k >= 0; k--) {   // oldest first
        const long i = (d->seen - 1 - k) % W;
        if (d->window[i] > line) { from = d->wstep[i]; break; }
    }
    happen(d, DIAG_EXPLODED, from, mean);
}

/* The place of the largest (sign +1) or smallest (−1) finite entry of a (L, H) row. */
static diagnose_where_t extreme(const double *x, int L, int H, int sign, long step)
{
    diagnose_where_t w = NOWHERE;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            const double v = x[(size_t)l * H + h];
            if (isfinite(v) && (w.layer < 0 || sign * v > sign * w.value))
                w = (diagnose_where_t){l, h, step, v};
        }
    return w;
}

double diagnose_grad_ratio(const double *grad, int L, int K)
{
    double lo = INFINITY, hi = 0.0;
    int n = 0;
    for (int l = 0; l < L; l++) {
        double s = 0.0;
        int any = 0;
        for (int k = 0; k < K; k++)
            if (!isnan(grad[(size_t)l * K + k])) { s += grad[(size_t)l * K + k] * grad[(size_t)l * K + k]; any = 1; }
        if (!any) continue;
        lo = fmin(lo, sqrt(s));
        hi = fmax(hi, sqrt(s));
        n++;
    }
    return n >= 2 && hi > 0 ? lo / hi : NAN;
}

/* A probe row: where its extremes are, the gradient collapse, and the place of the events that
 * waited for a row. */
static void probe_row(diagnose_t *d, const diagnose_update_t *u)
{
    if (u->grad && d->L > 0) {
        double norm[256];
        const int L = d->L < 256 ? d->L : 256;
        for (int l = 0; l < L; l++) {
            double s = 0.0;
            int any = 0;
            for (int k = 0; k < u->K; k++) {
                const double g = u->grad[(size_t)l * u->K + k];
                if (!isnan(g)) { s += g * g; any = 1; }
            }
            norm[l] = any ? sqrt(s) : NAN;
        }
        d->last_grad_hi = extreme(norm, L, 1, 1, u->step);
        d->last_grad_lo = extreme(norm, L, 1, -1, u->step);
        const double r = diagnose_grad_ratio(u->grad, d->L, u->K);
        if (isnan(d->grad_ratio1) && isfinite(r) && r > 0) {
            d->grad_ratio1 = r;
            d->grad_ratio1_step = u->step;
        }
        if (r < DIAG_GRAD_DROP * d->grad_ratio1 && !(d->events & DIAG_GRAD_COLLAPSE)) {
            happen(d, DIAG_GRAD_COLLAPSE, u->step, r);
            d->where[diagnose_index(DIAG_GRAD_COLLAPSE)] = d->last_grad_lo;
        }
    }
    if (u->head_logit && d->H > 0) d->last_logit = extreme(u->head_logit, d->L, d->H, 1, u->step);
    if (u->head_entropy && d->H > 0) d->last_entropy = extreme(u->head_entropy, d->L, d->H, -1, u->step);
    const int waiting[2] = {DIAG_LOGIT_GROWTH, DIAG_ENTROPY_COLLAPSE};
    const diagnose_where_t *from[2] = {&d->last_logit, &d->last_entropy};
    for (int k = 0; k < 2; k++) {
        diagnose_where_t *w = &d->where[diagnose_index(waiting[k])];
        if ((d->events & waiting[k]) && w->probe == 0 && from[k]->probe == u->step && from[k]->layer >= 0)
            *w = *from[k];
    }
}

int diagnose_step(diagnose_t *d, const diagnose_update_t *u)
{
    if (d->seen == 0) {
        d->first_step = u->step;
        if (u->step == 1) d->loss1 = u->loss;
    }
    if (isnan(d->logit1) && isfinite(u->max_logit) && u->max_logit > 0) d->logit1 = u->max_logit;
    d->window[d->seen % W] = u->loss;
    d->wstep[d->seen % W] = u->step;
    if (d->seen < W) d->first[d->seen] = u->loss;
    d->seen++;
    d->last_step = u->step;
    d->lr_sum += u->lr;
    d->lr_last = u->lr;
    d->lr_max = fmax(d->lr_max, u->lr);
    if (isfinite(u->grad_norm)) d->move_sum += u->lr * u->grad_norm;
    const long n = d->seen < W ? d->seen : W;
    const double mean = last_mean(d, n);
    plateau(d, u->step, mean);
    if (d->seen >= W && mean < DIAG_LEAK_FRACTION * d->floor) happen(d, DIAG_LEAK, u->step, mean);
    if (isfinite(u->loss) && d->seen >= W) explosion(d, mean, n);
    if (isfinite(d->logit1) && u->max_logit > DIAG_LOGIT_FACTOR * d->logit1 &&
        u->max_logit > DIAG_LOGIT_FLOOR)
        happen(d, DIAG_LOGIT_GROWTH, u->step, u->max_logit);
    if (u->min_entropy < DIAG_ENTROPY_MIN) happen(d, DIAG_ENTROPY_COLLAPSE, u->step, u->min_entropy);
    if (u->grad || u->head_logit || u->head_entropy) probe_row(d, u);
    return ready(d, 0);
}

int diagnose_diverged(diagnose_t *d, long step, const char *reason)
{
    // a loss that jumps past the explosion line at the diverged update itself is the divergence
    if ((d->events & DIAG_EXPLODED) && d->at[diagnose_index(DIAG_EXPLODED)] >= step) {
        d->events &= ~DIAG_EXPLODED;
        d->told &= ~DIAG_EXPLODED;
    }
    d->exploded_now = 0;
    happen(d, DIAG_DIVERGED, step, NAN);
    snprintf(d->reason, sizeof d->reason, "%s", reason ? reason : "?");
    d->where[diagnose_index(DIAG_DIVERGED)] = d->last_logit;
    return ready(d, 1);
}

int diagnose_finish(diagnose_t *d, int ended)
{
    const long n = d->seen / 2 < W ? d->seen / 2 : W;   // two disjoint windows
    if (n > 0) {
        double first = 0.0;
        for (long k = 0; k < n; k++) first += d->first[k];
        d->start_mean = first / (double)n;
        d->end_mean = last_mean(d, n);
        if (!(d->events & (DIAG_EXPLODED | DIAG_DIVERGED)) && d->seen < W && isfinite(d->end_mean))
            explosion(d, d->end_mean, n);
    }
    const config_t *c = d->cfg;
    if (ended && d->first_step == 1 && 2 * n >= DIAG_JUDGE_MIN && !(d->events & (DIAG_DIVERGED | DIAG_EXPLODED)) &&
        !(d->end_mean < (1.0 - DIAG_LEARN_FRACTION) * d->start_mean)) {
        happen(d, DIAG_NOT_LEARNING, d->first_step, d->end_mean);
        if (c->train.warmup > 1 && d->last_step < c->train.warmup) d->why |= DIAG_WHY_WARMUP;
        // Adam's step is at most about lr per weight; SGD's θ moves by lr·‖g‖/(1 − μ) at most
        const double moved = c->train.optimizer == OPT_SGD
                                 ? d->move_sum / (1.0 - c->train.momentum) : d->lr_sum;
        if (moved < DIAG_LR_SUM_TINY) d->why |= DIAG_WHY_LR_TINY;
        if (c->data.task == TASK_RANDOM) d->why |= c->data.zipf > 0 ? DIAG_WHY_FREQS : DIAG_WHY_NOTHING;
    }
    return ready(d, 1);
}

/* ---------------------------------------------------------------- messages */

/* Text appended to a fixed buffer. */
typedef struct {
    char *buf;
    size_t len, n;
} text_t;

static void put(text_t *t, const char *fmt, ...)
{
    if (t->n >= t->len) return;
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(t->buf + t->n, t->len - t->n, fmt, ap);
    va_end(ap);
    if (k > 0) t->n = t->n + (size_t)k < t->len ? t->n + (size_t)k : t->len - 1;
}

/* "layer 3" (lm, 1-based), "decoder layer 2" (encdec: counted within its stack). */
static void put_layer(text_t *t, const diagnose_t *d, int l)
{
    if (!d->stack || !strcmp(d->stack[l], "lm")) { put(t, "layer %d", l + 1); return; }
    int first = l;
    while (first > 0 && !strcmp(d->stack[first - 1], d->stack[l])) first--;
    put(t, "%s layer %d", !strcmp(d->stack[l], "enc") ? "encoder" : "decoder", l - first + 1);
}

/* "layer 3, self-attention head 2" (heads counted from 1, as layers). */
static void put_head(text_t *t, const diagnose_t *d, const diagnose_where_t *w)
{
    put_layer(t, d, w->layer);
    if (w->head < 0) return;
    const char *name = d->head ? d->head[w->head] : NULL;
    const char *h = name ? strstr(name, ".h") : NULL;
    if (h) put(t, ", %s-attention head %d", !strncmp(name, "cross", 5) ? "cross" : "self",
               atoi(h + 2) + 1);
    else put(t, ", head %d", w->head + 1);
}

/* The remedies the harness offers against event e that cfg does not use yet. */
enum { R_LR_DOWN = 1, R_WARMUP = 2, R_PRE = 4, R_QKNORM = 8, R_SOFTCAP = 16, R_CLIP = 32,
       R_SHORT_WARMUP = 64, R_LR_UP = 128, R_TASK = 256 };

/* "--set train.warmup=N (why)" for the one warm-up answer N (diagnose_warmup_updates), with
 * more updates when the run is too short to hold it; nothing when the run already warms up
 * at least that long (never advice that repeats the config). */
static void put_warmup(text_t *t, const diagnose_t *d, const char **sep)
{
    const config_t *c = d->cfg;
    const long steps = c->train.steps, w = c->train.warmup, n = diagnose_warmup_answer(d);
    if (w >= n) {
        if (4 * w <= steps) { put(t, "%s--set train.warmup=%ld", *sep, 2 * w); *sep = ", "; }
        return;
    }
    if (n > LONG_MAX / 3) {   // the curvature rows' need at an absurd lr: no count, no overflow
        put(t, "%sa warm-up longer than any run (the curvature rows' need; a lower train.lr "
            "instead)", *sep);
        *sep = ", ";
        return;
    }
    put(t, "%s--set train.warmup=%ld (", *sep, n);
    if (n > diagnose_warmup_updates(c, 0))   // raised by the curvature rows
        put(t, "the curvature rows' need: every measured row above the threshold would be below");
    else if (c->train.optimizer == OPT_SGD) put(t, "a tenth of the run: SGD has no untuned rule");
    else put(t, "2/(1 - beta2) for beta2 = %g, Ma & Yarats 2021", c->train.beta2);
    if (n > steps / 2)
        put(t, "; with train.steps >= %ld, as a warm-up is a small part of a run", 3 * n);
    put(t, ")");
    *sep = ", ";
}

static void put_remedies(text_t *t, const diagnose_t *d, unsigned r)
{
    const config_t *c = d->cfg;
    const long steps = c->train.steps, w = c->train.warmup;
    const char *sep = "; try ";
    if (r & R_SHORT_WARMUP) {   // the run ends inside its warm-up: a shorter one, or a longer run
        const long n = diagnose_warmup_answer(d);
        const long m = w > n ? w : n;
        if (n <= steps / 2 && n != w) put(t, "%s--set train.warmup=%ld or more train.steps", sep, n);
        else if (m <= LONG_MAX / 3)
            put(t, "%s--set train.steps=%ld (three times the warm-up)", sep, 3 * m);
        else put(t, "%sa lower train.lr (the warm-up it needs outgrows any run)", sep);
        sep = ", ";
    }
    if (r & R_LR_UP) { put(t, "%s--set train.lr=%g", sep, c->train.lr * 10); sep = ", "; }
    if (r & R_TASK) { put(t, "%s--set data.task=copy (or text)", sep); sep = ", "; }
    if (r & R_LR_DOWN) { put(t, "%s--set train.lr=%g", sep, c->train.lr / 10); sep = ", "; }
    if (r & R_WARMUP) put_warmup(t, d, &sep);
    if ((r & R_PRE) && scheme_family(c) == SCHEME_POST_LIKE) { put(t, "%s--set model.placement=pre", sep); sep = ", "; }
    if ((r & R_QKNORM) && c->model.qk_norm == QK_NORM_OFF) { put(t, "%s--set model.qk_norm=layernorm", sep); sep = ", "; }
    if ((r & R_SOFTCAP) && c->model.attn_softcap == 0) { put(t, "%s--set model.attn_softcap=50", sep); sep = ", "; }
    if ((r & R_CLIP) && c->train.clip == 0) { put(t, "%s--set train.clip=1", sep); sep = ", "; }
}

/* "at the probe of update 100: layer 2, self-attention head 1 (412)", or nothing. */
static void put_where(text_t *t, const diagnose_t *d, const diagnose_where_t *w, const char *what)
{
    if (w->layer < 0) return;
    put(t, "; %s ", what);
    put_head(t, d, w);
    put(t, " (%.4g at the probe of update %ld)", w->value, w->probe);
}

static void message_not_learning(text_t *t, const diagnose_t *d)
{
    const config_t *c = d->cfg;
    put(t, "not learning: the mean loss of the last %d updates, %.4f, is less than %.0f %% below "
        "that of the first, %.4f", (int)(d->seen / 2 < W ? d->seen / 2 : W), d->end_mean,
        100 * DIAG_LEARN_FRACTION, d->start_mean);
    unsigned r = 0;
    if (d->why & DIAG_WHY_WARMUP) {
        put(t, "; the run ended in its warm-up (train.warmup = %d of train.steps = %d): the lr "
            "reached %.3g, %.0f %% of train.lr = %g", c->train.warmup, c->train.steps, d->lr_max,
            100 * d->lr_max / c->train.lr, c->train.lr);
        r |= R_SHORT_WARMUP;
    }
    if (d->why & DIAG_WHY_LR_TINY) {
        if (c->train.optimizer == OPT_SGD)
            put(t, "; the lr is tiny: SGD moved the weights by at most %.3g in all", d->move_sum / (1 - c->train.momentum));
        else
            put(t, "; the lr is tiny: summed over the run it is %.3g, and %s moves a weight by at "
                "most about the lr per update", d->lr_sum, config_optimizer_name(c->train.optimizer));
        r |= (d->why & DIAG_WHY_WARMUP) ? 0 : R_LR_UP;
    }
    if (d->why & DIAG_WHY_NOTHING) {
        put(t, "; data.task = random with zipf = 0 draws uniform, independent tokens: there is "
            "nothing to learn, the loss stays at ln V = %.3f", d->lnV);
        r |= R_TASK;
    }
    if (d->why & DIAG_WHY_FREQS) {
        put(t, "; data.task = random draws independent tokens: only their frequencies can be learned");
        r |= R_TASK;
    }
    if (!d->why) {
        put(t, "; no known reason (the lr reached %.3g)", d->lr_max);
        r |= R_LR_UP | R_WARMUP | R_PRE;
    }
    put_remedies(t, d, r);
}

void diagnose_message(const diagnose_t *d, int e, char *buf, size_t len)
{
    const int i = diagnose_index(e);
    const config_t *c = d->cfg;
    text_t t = {buf, len, 0};
    buf[0] = '\0';
    switch (e) {
    case DIAG_WARMUP_LONG:
        put(&t, "warm-up longer than the run: train.warmup = %d > train.steps = %d, so the lr never "
            "reaches train.lr = %g; it ends at %.3g", c->train.warmup, c->train.steps, c->train.lr,
            d->value[i]);
        put_remedies(&t, d, R_SHORT_WARMUP);
        break;
    case DIAG_NOT_LEARNING:
        message_not_learning(&t, d);
        break;
    case DIAG_LEAK:
        if (!c->model.causal && diagnose_next_token(c))
            put(&t, "the targets leak into the input: data.task = %s predicts the next token and "
                "model.causal = false lets position t attend to token t+1, its own target, so the "
                "loss measures copying, not prediction", config_task_name(c->data.task));
        else
            put(&t, "the targets leak into the input");
        if (d->at[i] > 0)
            put(&t, "%sthe mean loss of %d updates fell to %.4g at update %ld, below %g x the "
                "entropy of the task's independent tokens, %.4g, which no model beats without "
                "seeing them", !c->model.causal ? "; " : ": ", W, d->value[i], d->at[i],
                DIAG_LEAK_FRACTION, d->floor);
        if (!c->model.causal) put(&t, "; try --set model.causal=true");
        break;
    case DIAG_EXPLODED:
        put(&t, "the loss exploded from update %ld (finite): the mean of %d updates reached %.4g "
            "nats, over %g x max(ln V = %.3f, the loss at update 1)", d->at[i], W, d->value[i],
            DIAG_EXPLODE_FACTOR, d->lnV);
        if (!isnan(d->end_mean))
            put(&t, d->exploded_now ? "; it ends exploded (%.4g)" : "; it came back down (%.4g at the end)",
                d->end_mean);
        put_remedies(&t, d, R_LR_DOWN | R_WARMUP | R_CLIP | R_QKNORM);
        break;
    case DIAG_DIVERGED:
        put(&t, "diverged at update %ld (%s)", d->at[i], d->reason);
        if (d->events & DIAG_EXPLODED)
            put(&t, "; the loss had exploded since update %ld", d->at[diagnose_index(DIAG_EXPLODED)]);
        put_where(&t, d, &d->where[i], "the largest attention logit was");
        if (d->last_grad_hi.layer >= 0) {
            put(&t, "; the largest gradient ");
            put_layer(&t, d, d->last_grad_hi.layer);
            put(&t, "'s (%.4g)", d->last_grad_hi.value);
        }
        put_remedies(&t, d, R_LR_DOWN | R_WARMUP | R_CLIP | R_QKNORM);
        break;
    case DIAG_PLATEAU:
        put(&t, "stuck on the unigram plateau since update %ld: the mean loss of %d updates is %.3f, "
            "within %.2f nats of the training %s unigram entropy %.3f", d->at[i], W,
            d->value[i], DIAG_PLATEAU_BAND,
            d->cfg->data.task == TASK_TRANSLATION ? "targets'" : "text's", d->unigram);
        put_remedies(&t, d, R_WARMUP | R_PRE | R_LR_DOWN);
        break;
    case DIAG_LOGIT_GROWTH:
        put(&t, "attention-logit growth at update %ld: max |logit| %.4g, over %g x its value at "
            "update 1 (%.4g)", d->at[i], d->value[i], DIAG_LOGIT_FACTOR, d->logit1);
        put_where(&t, d, &d->where[i], "largest in");
        put_remedies(&t, d, R_QKNORM | R_SOFTCAP | R_LR_DOWN);
        break;
    case DIAG_ENTROPY_COLLAPSE:
        put(&t, "attention entropy collapse at update %ld: the lowest layer-mean entropy is %.3g "
            "nats (< %g)", d->at[i], d->value[i], DIAG_ENTROPY_MIN);
        put_where(&t, d, &d->where[i], "lowest in");
        put_remedies(&t, d, R_QKNORM | R_SOFTCAP | R_LR_DOWN);
        break;
    default:
        put(&t, "lower layers' gradient collapse at update %ld: lowest / highest layer gradient "
            "%.3g, %.0f x below its %.3g at update %ld (the rule: %.0f x)", d->at[i], d->value[i],
            d->grad_ratio1 / d->value[i], d->grad_ratio1, d->grad_ratio1_step, 1 / DIAG_GRAD_DROP);
        if (d->where[i].layer >= 0) {
            put(&t, ", lowest in ");
            put_layer(&t, d, d->where[i].layer);
        }
        put_remedies(&t, d, R_WARMUP | R_PRE);
    }
}

void diagnose_flags(const diagnose_t *d, char *buf, size_t len)
{
    static const char *const NAMES[DIAG_NEVENTS] = {"plateau", "logit-growth", "entropy-collapse",
        "grad-collapse", "warmup>steps", "exploded", "not-learning", "diverged", "leak"};
    static const int ORDER[DIAG_NEVENTS] = {8, 7, 5, 6, 4, 0, 1, 2, 3};   // the worst first
    text_t t = {buf, len, 0};
    buf[0] = '\0';
    for (int k = 0; k < DIAG_NEVENTS; k++) {
        const int i = ORDER[k];
        if (!(d->events & (1 << i))) continue;
        put(&t, "%s%s", t.n ? "," : "", NAMES[i]);
        if (d->at[i] > 0 && (1 << i) != DIAG_NOT_LEARNING) put(&t, "@%ld", d->at[i]);
    }
    if (!t.n) put(&t, d->seen < DIAG_JUDGE_MIN ? "too-short" : "healthy");
}

void diagnose_healthy(const diagnose_t *d, char *buf, size_t len)
{
    text_t t = {buf, len, 0};
    if (d->seen == 0 || isnan(d->start_mean)) {
        put(&t, "no update to judge");
        return;
    }
    const long n = d->seen / 2 < W ? d->seen / 2 : W;
    if (d->seen < DIAG_JUDGE_MIN) {   // a rising loss over 6 updates is no verdict either way
        put(&t, "too short to judge: %ld updates (the rules read two windows of at least %d); the "
            "loss went from %.4f to %.4f", d->seen, DIAG_JUDGE_MIN / 2, d->start_mean, d->end_mean);
        return;
    }
    put(&t, "healthy: the loss went from %.4f to %.4f (means of the first and last %ld updates%s)",
        d->start_mean, d->end_mean, n, d->first_step > 1 ? " since the resume" : "");
}
