/* mlm.c — BERT's masked-LM corruption of one row (Devlin et al. 2019, §3.1 "Masked LM";
 * docs/design.md §6f): each position is chosen with probability data.mask_rate; a chosen
 * position's input becomes [MASK] (80 %), a random byte (10 %) or stays (10 %), and only the
 * chosen positions are scored (targets = the original byte, −1 elsewhere). */
#include "data/data.h"

void mlm_mask_row(gsl_rng *rng, double rate, int32_t *tok, int32_t *tgt, int T)
{
    int chosen = 0;
    for (int t = 0; t < T; t++) {   // tok (T) holds the clean bytes on entry
        tgt[t] = -1;
        if (gsl_rng_uniform(rng) < rate) {
            tgt[t] = tok[t];
            chosen++;
        }
    }
    if (!chosen) {   // BERT predicts at least one position per sequence
        const int t = (int)gsl_rng_uniform_int(rng, (unsigned long)T);
        tgt[t] = tok[t];
    }
    for (int t = 0; t < T; t++) {
        if (tgt[t] < 0) continue;
        const double u = gsl_rng_uniform(rng);
        if (u < 0.8) tok[t] = DATA_MASK_ID;
        else if (u < 0.9) tok[t] = (int32_t)gsl_rng_uniform_int(rng, DATA_MLM_BYTES);
        // else: the input keeps its byte
    }
}
