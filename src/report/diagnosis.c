/* diagnosis.c — `stability info` on a training run: what went wrong and since when
 * (measure/diagnose.h; docs/design.md §6g), from the file's /train rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "data/data.h"
#include "io/h5io.h"
#include "measure/diagnose.h"
#include "report/report.h"

/* The plateau of a text run whose file predates the attribute: from its corpus, if readable. */
static double unigram_of(const config_t *cfg)
{
    data_t data;
    char err[512];
    if (cfg->data.task != TASK_TEXT || data_open(&data, cfg, err, sizeof err)) return NAN;
    const double h = diagnose_unigram_entropy(data.text, data.n_train);
    data_close(&data);
    return h;
}

void report_diagnosis(FILE *out, h5io_file_t *f, const char *prefix, const config_t *cfg)
{
    char tr[512];
    snprintf(tr, sizeof tr, "%s/train", prefix);
    size_t n, nl, nm, ne, np, ng, w, v, L, K;
    double *step = h5io_read_train(f, prefix, "step", &n, &w, &v);
    double *loss = h5io_read_train(f, prefix, "loss", &nl, &w, &v);
    if (!step || !loss) { free(step); free(loss); return; }   // not a training run
    double *mx = h5io_read_train(f, prefix, "max_attn_logit", &nm, &w, &v);
    double *ent = h5io_read_train(f, prefix, "min_attn_entropy", &ne, &w, &v);
    double *pstep = h5io_read_train(f, prefix, "probe_step", &np, &w, &v);
    double *grad = h5io_read_train(f, prefix, "grad_fro", &ng, &L, &K);   // (P, layer, param)
    double unigram = NAN, div = NAN;
    if (h5io_read_attr_double(f, tr, "unigram_entropy", &unigram) != 0) unigram = unigram_of(cfg);
    diagnose_t d;
    diagnose_init(&d, unigram);
    const size_t T = n < nl ? n : nl;
    size_t p = 0;
    for (size_t t = 0; t < T; t++) {
        diagnose_step(&d, (long)step[t], loss[t], mx && t < nm ? mx[t] : NAN,
                      ent && t < ne ? ent[t] : NAN);
        for (; grad && pstep && p < np && p < ng && pstep[p] <= step[t]; p++)
            if (pstep[p] == step[t])
                diagnose_probe(&d, (long)step[t], grad + p * L * K, (int)L, (int)K);
    }
    fprintf(out, "diagnosis over %zu updates:\n", T);
    if (h5io_read_attr_double(f, tr, "diverged_at", &div) == 0 && div > 0) {
        char *why = h5io_read_attr_string(f, tr, "diverged_reason");
        fprintf(out, "  diverged at update %.0f (%s); the last finite loss before it %.4g\n", div,
                why ? why : "?", T >= 2 ? loss[T - 2] : NAN);
        free(why);
    }
    for (int e = 1; e <= DIAG_GRAD_COLLAPSE; e <<= 1) {
        char msg[400];
        if (!(d.events & e)) continue;
        diagnose_message(&d, e, msg, sizeof msg);
        fprintf(out, "  %s\n", msg);
    }
    if (d.events & DIAG_PLATEAU)
        fprintf(out, "  on the plateau %ld updates in all (the longest stretch %ld, the last at "
                "update %ld)\n", d.plateau_total, d.plateau_longest, d.plateau_last);
    if (isnan(unigram)) fprintf(out, "  (no unigram plateau test: not a text run)\n");
    else fprintf(out, "  the unigram plateau: %.3f nats (the byte entropy of the training split)\n",
                 unigram);
    if (!mx) fprintf(out, "  (no attention logits or entropies: a file from before them)\n");
    if (!d.events && !(div > 0)) fprintf(out, "  nothing went wrong by these measures\n");
    free(step); free(loss); free(mx); free(ent); free(pstep); free(grad);
}
