/* diagnose.c — the rules of measure/diagnose.h (docs/design.md §6g). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "measure/diagnose.h"

void diagnose_init(diagnose_t *d, double unigram)
{
    memset(d, 0, sizeof *d);
    d->unigram = unigram;
    d->logit1 = NAN;
}

double diagnose_unigram_entropy(const unsigned char *text, size_t n)
{
    if (!n) return NAN;
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++) count[text[i]]++;
    double h = 0.0;
    for (int b = 0; b < 256; b++)
        if (count[b]) {
            const double p = (double)count[b] / (double)n;
            h -= p * log(p);
        }
    return h;
}

int diagnose_index(int e)
{
    int i = 0;
    while (e > 1) { e >>= 1; i++; }
    return i;
}

/* Record event e at step with value v; returns e when it is new. */
static int happen(diagnose_t *d, int e, long step, double v)
{
    if (d->events & e) return 0;
    d->events |= e;
    d->at[diagnose_index(e)] = step;
    d->value[diagnose_index(e)] = v;
    return e;
}

/* The plateau: the mean of the last DIAG_PLATEAU_WINDOW losses within the band. */
static int plateau(diagnose_t *d, long step, double loss)
{
    d->window[d->seen % DIAG_PLATEAU_WINDOW] = loss;
    if (isnan(d->unigram) || d->seen + 1 < DIAG_PLATEAU_WINDOW) return 0;
    double mean = 0.0;
    for (int i = 0; i < DIAG_PLATEAU_WINDOW; i++) mean += d->window[i] / DIAG_PLATEAU_WINDOW;
    if (!(fabs(mean - d->unigram) < DIAG_PLATEAU_BAND)) { d->plateau_run = 0; return 0; }
    if (d->plateau_run++ == 0) d->plateau_from = step;
    d->plateau_total++;
    d->plateau_last = step;
    if (d->plateau_run > d->plateau_longest) d->plateau_longest = d->plateau_run;
    if (d->plateau_run < DIAG_PLATEAU_STUCK) return 0;
    return happen(d, DIAG_PLATEAU, d->plateau_from, mean);
}

int diagnose_step(diagnose_t *d, long step, double loss, double max_logit, double min_entropy)
{
    int e = 0;
    if (isnan(d->logit1) && isfinite(max_logit) && max_logit > 0) d->logit1 = max_logit;
    e |= plateau(d, step, loss);
    d->seen++;
    if (isfinite(d->logit1) && max_logit > DIAG_LOGIT_FACTOR * d->logit1)
        e |= happen(d, DIAG_LOGIT_GROWTH, step, max_logit);
    if (min_entropy < DIAG_ENTROPY_MIN) e |= happen(d, DIAG_ENTROPY_COLLAPSE, step, min_entropy);
    return e;
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

int diagnose_probe(diagnose_t *d, long step, const double *grad, int L, int K)
{
    const double r = diagnose_grad_ratio(grad, L, K);
    return r < DIAG_GRAD_RATIO ? happen(d, DIAG_GRAD_COLLAPSE, step, r) : 0;
}

void diagnose_message(const diagnose_t *d, int e, char *buf, size_t len)
{
    const int i = diagnose_index(e);
    switch (e) {
    case DIAG_PLATEAU:
        snprintf(buf, len, "stuck on the unigram plateau since update %ld: the mean loss of %d "
                 "updates is %.3f, within %.2f nats of the training text's unigram entropy %.3f",
                 d->at[i], DIAG_PLATEAU_WINDOW, d->value[i], DIAG_PLATEAU_BAND, d->unigram);
        break;
    case DIAG_LOGIT_GROWTH:
        snprintf(buf, len, "attention-logit growth at update %ld: max |logit| %.4g, over %g x its "
                 "value at update 1 (%.4g)", d->at[i], d->value[i], DIAG_LOGIT_FACTOR, d->logit1);
        break;
    case DIAG_ENTROPY_COLLAPSE:
        snprintf(buf, len, "attention entropy collapse at update %ld: the lowest layer-mean "
                 "entropy is %.3g nats (< %g)", d->at[i], d->value[i], DIAG_ENTROPY_MIN);
        break;
    default:
        snprintf(buf, len, "lower layers' gradient collapse at update %ld: lowest / highest "
                 "layer gradient %.3g (< %g)", d->at[i], d->value[i], DIAG_GRAD_RATIO);
    }
}
