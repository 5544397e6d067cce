/* decode.c — greedy and beam search over the encoder–decoder, fairseq's rules (decode.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "data/corpus.h"
#include "model/decode.h"

decode_opts_t decode_defaults(void)
{
    return (decode_opts_t){.beam = 1, .lenpen = 1.0, .max_len_a = 1.2, .max_len_b = 10};
}

int decode_rows(const model_t *m, int K, int S, int B_max)
{
    const batch_caps_t *c = &m->caps;
    int B = c->B / K;
    if ((size_t)B * K * m->T > c->tokens) B = (int)(c->tokens / ((size_t)K * m->T));
    if (S > 0 && (size_t)B * K * S > c->src_tokens) B = (int)(c->src_tokens / ((size_t)K * S));
    if (S > c->S) B = 0;
    return B < B_max ? B : B_max;
}

void decode_free(decode_t *d)
{
    free(d->in.src);
    free(d->in.tokens);
    free(d->pre);
    free(d->next);
    free(d->done);
    free(d->last);
    free(d->lp);
    free(d->score);
    free(d->cand);
    free(d->cand_beam);
    free(d->cand_tok);
    free(d->fin);
    free(d->fin_len);
    free(d->fin_n);
    free(d->fin_score);
    memset(d, 0, sizeof *d);
}

int decode_create(decode_t *d, const model_t *m, int B, int K)
{
    memset(d, 0, sizeof *d);
    *d = (decode_t){.B = B, .K = K, .T = m->T, .S = m->S, .C = m->C, .V = m->V};
    const size_t R = (size_t)B * K, T = (size_t)m->T;
    d->in.src = malloc(R * m->S * sizeof(int32_t));
    d->in.tokens = malloc(R * T * sizeof(int32_t));
    d->pre = malloc(R * T * sizeof(int32_t));
    d->next = malloc(R * T * sizeof(int32_t));
    d->done = malloc((size_t)B);
    d->last = malloc(R * m->C * sizeof(real));
    d->lp = malloc(R * m->V * sizeof(real));
    d->score = malloc(R * sizeof(real));
    d->cand = malloc(2 * (size_t)K * sizeof(real));
    d->cand_beam = malloc(2 * (size_t)K * sizeof(int));
    d->cand_tok = malloc(2 * (size_t)K * sizeof(int));
    d->fin = malloc(R * T * sizeof(int32_t));
    d->fin_len = malloc(R * sizeof(int));
    d->fin_n = malloc((size_t)B * sizeof(int));
    d->fin_score = malloc(R * sizeof(real));
    if (!d->in.src || !d->in.tokens || !d->pre || !d->next || !d->done || !d->last || !d->lp || !d->score || !d->cand ||
        !d->cand_beam || !d->cand_tok || !d->fin || !d->fin_len || !d->fin_n || !d->fin_score) {
        decode_free(d);
        return 1;
    }
    return 0;
}

/* lp (V) ← log_softmax(lp) with fairseq's masks: pad never; EOS not at step 0; only EOS at
 * step max_len. */
static void log_probs(real *lp, int V, int step, int max_len)
{
    double mx = -INFINITY, sum = 0.0;
    for (int v = 0; v < V; v++) mx = lp[v] > mx ? lp[v] : mx;
    for (int v = 0; v < V; v++) sum += exp(lp[v] - mx);
    const double lse = mx + log(sum);
    for (int v = 0; v < V; v++) lp[v] -= lse;
    lp[CORPUS_PAD] = -INFINITY;
    if (step == 0) lp[CORPUS_EOS] = -INFINITY;
    if (step >= max_len)
        for (int v = 0; v < V; v++)
            if (v != CORPUS_EOS) lp[v] = -INFINITY;
}

/* The top n = 2K candidates (score, beam, token) of sentence i, best first; ties by the lower
 * (beam, token). Step 0 looks at the first beam only. Returns how many were found. */
static int top_candidates(decode_t *d, int i, int step)
{
    const int K = d->K, V = d->V, n = 2 * K, beams = step == 0 ? 1 : K;
    int have = 0;
    for (int k = 0; k < beams; k++) {
        const size_t r = (size_t)i * K + k;
        const real *lp = d->lp + r * V;
        for (int v = 0; v < V; v++) {
            const double s = d->score[r] + lp[v];
            if (s == -INFINITY || (have == n && s <= d->cand[n - 1])) continue;
            int j = have < n ? have++ : n - 1;   // insert, keeping the order (ties: earlier first)
            while (j > 0 && d->cand[j - 1] < s) {
                d->cand[j] = d->cand[j - 1];
                d->cand_beam[j] = d->cand_beam[j - 1];
                d->cand_tok[j] = d->cand_tok[j - 1];
                j--;
            }
            d->cand[j] = s;
            d->cand_beam[j] = k;
            d->cand_tok[j] = v;
        }
    }
    return have;
}

/* Sentence i at step: end the EOS candidates among the top K, then the first K others become
 * the beams (prefixes into d->next). Returns 1 when the sentence is done. */
static int advance(decode_t *d, int i, int step, const decode_opts_t *o)
{
    const int K = d->K, T = d->T, n = top_candidates(d, i, step);
    int kept = 0;
    for (int j = 0; j < n && kept < K; j++) {
        const size_t from = (size_t)i * K + d->cand_beam[j];
        if (d->cand_tok[j] == CORPUS_EOS) {
            if (j >= K || d->fin_n[i] >= K) continue;
            const int f = d->fin_n[i]++;
            int32_t *h = d->fin + ((size_t)i * K + f) * T;
            memcpy(h, d->pre + from * T + 1, (size_t)step * sizeof(int32_t));
            d->fin_len[(size_t)i * K + f] = step;
            d->fin_score[(size_t)i * K + f] = d->cand[j] / pow(step + 1.0, o->lenpen);
            continue;
        }
        const size_t to = (size_t)i * K + kept++;
        memcpy(d->next + to * T, d->pre + from * T, (size_t)(step + 1) * sizeof(int32_t));
        d->next[to * T + step + 1] = d->cand_tok[j];
        d->score[to] = d->cand[j];   // the candidates are computed: the old scores are spent
    }
    for (int k = kept; k < K; k++) {   // no candidate left: a dead beam, of valid ids
        const size_t to = (size_t)i * K + k;
        d->score[to] = -INFINITY;
        for (int j = 0; j <= step + 1; j++) d->next[to * T + j] = j ? CORPUS_EOS : CORPUS_BOS;
    }
    return d->fin_n[i] >= K || kept == 0;
}

/* The best ended hypothesis of sentence i (the first of equal scores) into out. */
static void best(const decode_t *d, int i, int32_t *out, int *len, real *score)
{
    const int K = d->K, T = d->T;
    int b = -1;
    for (int f = 0; f < d->fin_n[i]; f++)
        if (b < 0 || d->fin_score[(size_t)i * K + f] > d->fin_score[(size_t)i * K + b]) b = f;
    const int n = b < 0 ? 0 : d->fin_len[(size_t)i * K + b];
    for (int j = 0; j < T; j++) out[j] = j < n ? d->fin[((size_t)i * K + b) * T + j] : -1;
    *len = n;
    if (score) *score = b < 0 ? -INFINITY : d->fin_score[(size_t)i * K + b];
}

void decode_batch(decode_t *d, model_t *m, const int32_t *src, int B, int S,
                  const decode_opts_t *o, int32_t *out, int *len, real *score)
{
    const int K = d->K, T = d->T, R = B * K;
    int max_len = (int)floor(o->max_len_a * S) + o->max_len_b;
    if (max_len > T - 1) max_len = T - 1;
    // rows i·K + k: sentence i's source for every beam k
    for (int r = 0; r < R; r++)
        memcpy(d->in.src + (size_t)r * S, src + (size_t)(r / K) * S, (size_t)S * sizeof(int32_t));
    d->in.B = R;
    d->in.S = S;
    d->in.targets = NULL;
    model_encode(m, &d->in);
    // every prefix position holds a valid id: a finished sentence's rows still run (EOS after)
    for (size_t j = 0; j < (size_t)R * T; j++) d->pre[j] = d->next[j] = CORPUS_EOS;
    for (int r = 0; r < R; r++) {
        d->pre[(size_t)r * T] = CORPUS_BOS;
        d->score[r] = 0.0;
    }
    for (int i = 0; i < B; i++) d->fin_n[i] = d->done[i] = 0;
    int live = B;
    for (int step = 0; step <= max_len && live > 0; step++) {
        // the model's input: every beam's prefix [BOS, y_1 .. y_step], packed (R, step + 1)
        d->in.T = step + 1;
        for (int r = 0; r < R; r++)
            memcpy(d->in.tokens + (size_t)r * (step + 1), d->pre + (size_t)r * T,
                   (size_t)(step + 1) * sizeof(int32_t));
        model_decode_last(m, &d->in, d->last, d->lp);
        for (int r = 0; r < R; r++) log_probs(d->lp + (size_t)r * d->V, d->V, step, max_len);
        for (int i = 0; i < B; i++)
            if (!d->done[i] && advance(d, i, step, o)) { d->done[i] = 1; live--; }
        for (int i = 0; i < B; i++)   // the new prefixes of the sentences still searching
            if (!d->done[i])
                memcpy(d->pre + (size_t)i * K * T, d->next + (size_t)i * K * T,
                       (size_t)K * T * sizeof(int32_t));
    }
    for (int i = 0; i < B; i++)
        best(d, i, out + (size_t)i * T, &len[i], score ? &score[i] : NULL);
}
