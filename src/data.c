/* data.c — synthetic task batches from the run's gsl_rng (the text task comes with training). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "data.h"

int data_open(data_t *d, const config_t *cfg, char *err, size_t errlen)
{
    d->task = cfg->data.task;
    d->B = cfg->data.batch;
    d->T = cfg->model.seq_len;
    d->V = cfg->model.vocab;
    d->zipf = cfg->data.zipf;
    d->zipf_table = NULL;
    if (d->task == TASK_TEXT) {
        snprintf(err, errlen, "data.task: text is not available yet (random, copy, reverse)");
        return 2;
    }
    if ((d->task == TASK_COPY || d->task == TASK_REVERSE) && (d->V < 3 || d->T < 3)) {
        snprintf(err, errlen, "data.task: %s needs model.vocab >= 3 and model.seq_len >= 3",
                 config_task_name(d->task));
        return 2;
    }
    if (d->task == TASK_RANDOM && d->zipf > 0.0) {
        // Zipf's law over token ids: p(k) ∝ (k+1)^(−s), sampled by GSL's Walker alias table.
        double *w = malloc((size_t)d->V * sizeof *w);
        if (!w) { snprintf(err, errlen, "data.zipf: out of memory"); return 1; }
        for (int k = 0; k < d->V; k++) w[k] = pow(k + 1.0, -d->zipf);
        d->zipf_table = gsl_ran_discrete_preproc((size_t)d->V, w);
        free(w);
        if (!d->zipf_table) { snprintf(err, errlen, "data.zipf: cannot build table"); return 1; }
    }
    return 0;
}

void data_close(data_t *d)
{
    if (d->zipf_table) gsl_ran_discrete_free(d->zipf_table);
    d->zipf_table = NULL;
}

static int32_t draw_token(const data_t *d, gsl_rng *rng)
{
    if (d->zipf_table) return (int32_t)gsl_ran_discrete(rng, d->zipf_table);
    return (int32_t)gsl_rng_uniform_int(rng, (unsigned long)d->V);
}

void data_batch(data_t *d, gsl_rng *rng, int32_t *tokens, int32_t *targets)
{
    const int T = d->T;
    for (int b = 0; b < d->B; b++) {
        int32_t *tok = tokens + (size_t)b * T;   // (T)
        int32_t *tgt = targets + (size_t)b * T;  // (T)
        if (d->task == TASK_RANDOM) {
            // x_0..x_T i.i.d.; predict the next token
            tok[0] = draw_token(d, rng);
            for (int t = 0; t < T; t++) {
                tgt[t] = draw_token(d, rng);
                if (t + 1 < T) tok[t + 1] = tgt[t];
            }
            continue;
        }
        // copy / reverse: m content tokens in [1,V), separator 0, then the answer
        const int m = (T + 1) / 2;
        for (int i = 0; i < m; i++) {
            tok[i] = 1 + (int32_t)gsl_rng_uniform_int(rng, (unsigned long)(d->V - 1));
            tgt[i] = -1;
        }
        // tokens = a_0..a_{m−1}, 0, answer…;  targets = −1 ×m, answer (shifted by one)
        for (int j = 0; m + j < T; j++) {
            const int32_t ans = d->task == TASK_COPY ? tok[j] : tok[m - 1 - j];
            tgt[m + j] = ans;
            if (m + j + 1 < T) tok[m + j + 1] = ans;
        }
        tok[m] = 0;
    }
}
