/* translation.c — the translation task over the corpus of setup/translation-corpus.sh
 * (docs/design.md §6b): batches of data.batch random pairs, or with data.max_tokens the
 * training split cut by length as fairseq's batch_by_size, a new batch order every epoch. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "data/data.h"
#include "util/fsutil.h"

/* Epoch e's order comes from its own stream, so a resumed run finds it from the count of
 * batches drawn alone (data_seek) and the training rng is not touched. */
static unsigned long epoch_seed(unsigned long seed, long e)
{
    return seed * 1000003UL + 0x5851F42DUL + (unsigned long)e;
}

/* train.bleu_every: the references DIR/valid.de and the vocabulary DIR/spm.model, which
 * runtime/bleu.py reads at every BLEU, are regular files (a FIFO would block the run at its
 * first BLEU, hours in). 0, or 2 with err. */
static int references_regular(const char *dir, char *err, size_t errlen)
{
    static const char *const NAME[2] = {"valid.de", "spm.model"};
    for (int k = 0; k < 2; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, NAME[k]);
        const int fd = fsutil_open_read(path);
        if (fd >= 0) { close(fd); continue; }
        snprintf(err, errlen, "data.path: %s: cannot open: %s (train.bleu_every reads it)", path,
                 errno == EINVAL ? "not a regular file" : strerror(errno));
        return 2;
    }
    return 0;
}

int translation_open(data_t *d, const config_t *cfg, char *err, size_t errlen)
{
    const int S = config_src_len(cfg), T = cfg->model.seq_len;
    d->max_tokens = cfg->data.max_tokens;
    d->seed = cfg->init.seed;
    d->epoch = -1;
    int rc = corpus_open(&d->corpus, cfg->data.path, d->V, S, T, err, errlen);
    if (rc) {   // named as the text task names its file: the key to change first
        char why[1400];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "data.path: %s", why);
        return rc;
    }
    d->id = d->corpus.id;
    if (cfg->train.bleu_every && (rc = references_regular(cfg->data.path, err, errlen))) return rc;
    if (d->corpus.split[CORPUS_TRAIN].n == 0 || d->corpus.split[CORPUS_VALID].n == 0) {
        snprintf(err, errlen, "data.path: %s: no sentence pair fits model.src_len = %d and "
                 "model.seq_len = %d", cfg->data.path, S, T);
        return 2;
    }
    // validation in a fixed order, batches of at most data.batch rows' worth of tokens
    const int vtok = d->max_tokens > 0 ? d->max_tokens : d->B * (S > T ? S : T);
    d->epoch_rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!d->epoch_rng) { snprintf(err, errlen, "out of memory"); return 1; }
    if ((rc = corpus_plan(&d->vplan, &d->corpus, CORPUS_VALID, vtok, NULL, err, errlen))) return rc;
    d->val_batches = (int)d->vplan.n_batches;
    if (d->max_tokens > 0) {
        gsl_rng_set(d->epoch_rng, epoch_seed(d->seed, -1));   // the length ties, once
        rc = corpus_plan(&d->plan, &d->corpus, CORPUS_TRAIN, d->max_tokens, d->epoch_rng, err,
                         errlen);
    }
    return rc;
}

void translation_batch(data_t *d, gsl_rng *rng, batch_t *b)
{
    if (d->max_tokens <= 0) {
        corpus_sample(&d->corpus, CORPUS_TRAIN, rng, d->B, b);
        return;
    }
    const long n = d->plan.n_batches, e = d->drawn / n, i = d->drawn % n;
    if (e != d->epoch) {
        gsl_rng_set(d->epoch_rng, epoch_seed(d->seed, e));
        corpus_plan_shuffle(&d->plan, d->epoch_rng);
        d->epoch = e;
    }
    corpus_plan_fill(&d->plan, &d->corpus, i, b);
    d->drawn++;
}

void translation_close(data_t *d)
{
    corpus_plan_free(&d->plan);
    corpus_plan_free(&d->vplan);
    corpus_close(&d->corpus);
    if (d->epoch_rng) gsl_rng_free(d->epoch_rng);
    d->epoch_rng = NULL;
}
