/* session.c — data + model + random streams + one batch (model/session.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/session.h"
#include "nn/gemm_dnnl.h"
#include "nn/round.h"

double session_memory_bytes(const config_t *cfg)
{
    return model_memory_doubles(cfg, NULL) * sizeof(real);
}

double session_physical_bytes(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

/* Refuse a model larger than this machine's memory, with the estimate (before allocating). */
static int check_memory(const config_t *cfg, const batch_caps_t *caps, char *err, size_t errlen)
{
    const double need = model_memory_doubles(cfg, caps) * sizeof(real);
    const double have = session_physical_bytes();
    if (have > 0.0 && need > have) {
        snprintf(err, errlen, "model: needs about %.1f GiB for parameters, gradients and "
                 "activations, this machine has %.1f GiB (reduce model.layers, d_model, "
                 "seq_len, vocab or data.batch)", need / 1073741824.0, have / 1073741824.0);
        return 2;
    }
    return 0;
}

int session_gemm_onednn(const config_t *cfg)
{
    if ((cfg->train.precision != PRECISION_BFLOAT16 &&
         cfg->train.precision != PRECISION_BFLOAT16_PURE) || !cfg->train.round_gemm)
        return 0;
    // auto: AMX's bf16 tiles run 3.7-5.4x sgemm; with AVX512-BF16 alone oneDNN runs at about
    // sgemm's rate and a bf16 update is no faster than float32's, so the exact emulation stays
    // there (docs/performance.md, "bfloat16")
    return cfg->train.gemm_path == GEMM_PATH_ONEDNN ||
           (cfg->train.gemm_path == GEMM_PATH_AUTO && gemm_dnnl_amx());
}

int session_open(session_t *s, const config_t *cfg, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    if (cfg->train.gemm_path == GEMM_PATH_ONEDNN && !gemm_dnnl_available()) {
        snprintf(err, errlen, "train.gemm_path = onednn: %s (this build has no oneDNN, or it "
                 "cannot run a bfloat16 matmul on this CPU)", gemm_dnnl_name());
        return 1;
    }
    int rc = data_open(&s->data, &s->cfg, err, errlen);
    if (rc) return rc;
    batch_caps_t caps;
    data_caps(&s->data, &caps);
    if ((rc = check_memory(cfg, &caps, err, errlen))) {
        data_close(&s->data);
        return rc;
    }
    s->model = model_create(&s->cfg, &caps);
    s->rng_init = gsl_rng_alloc(gsl_rng_mt19937);
    s->rng_data = gsl_rng_alloc(gsl_rng_mt19937);
    const model_t *m = s->model;
    if (m) {
        s->batch.tokens = malloc(m->caps.tokens * sizeof(int32_t));
        s->batch.targets = malloc(m->caps.tokens * sizeof(int32_t));
        if (m->caps.src_tokens) s->batch.src = malloc(m->caps.src_tokens * sizeof(int32_t));
    }
    if (!m || !s->rng_init || !s->rng_data || !s->batch.tokens || !s->batch.targets ||
        (m->caps.src_tokens && !s->batch.src)) {
        snprintf(err, errlen, "out of memory");
        session_close(s);
        return 1;
    }
#if REAL_IS_FLOAT
    // bfloat16*, emulated (docs/design.md, "Low precision, emulated"): the places that round
    if (config_lowp(cfg)) {
        const round_policy_t p = {cfg->train.round_gemm, cfg->train.round_attn_probs,
                                  cfg->train.round_residual, cfg->train.round_norm_stats,
                                  cfg->train.precision == PRECISION_FP8,
                                  session_gemm_onednn(cfg), cfg->train.attn_round_fix};
        round_policy_set(&p);
    }
#endif
    return 0;
}

void session_close(session_t *s)
{
#if REAL_IS_FLOAT
    if (config_lowp(&s->cfg)) round_policy_set(NULL);
#endif
    model_free(s->model);
    data_close(&s->data);
    if (s->rng_init) gsl_rng_free(s->rng_init);
    if (s->rng_data) gsl_rng_free(s->rng_data);
    free(s->batch.src);
    free(s->batch.tokens);
    free(s->batch.targets);
    memset(s, 0, sizeof *s);
}

/* Admin's profiling pass on a batch (and dropout masks) of its own stream seed +
 * SESSION_PROFILE_OFFSET, so the run's batches are the same with and without it. */
static void admin_profile(session_t *s, unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) return;   // keeps ω = 1 (the model still runs); cannot happen but for OOM
    gsl_rng_set(r, seed + SESSION_PROFILE_OFFSET);
    const long drawn = s->data.drawn;
    data_batch(&s->data, r, &s->batch);
    data_seek(&s->data, drawn);
    model_draw_dropout(s->model, &s->batch, r);
    model_admin_profile(s->model, &s->batch);
    gsl_rng_free(r);
}

void session_init(session_t *s, unsigned long seed)
{
    gsl_rng_set(s->rng_init, seed);
    gsl_rng_set(s->rng_data, seed + DATA_SEED_OFFSET);
    model_init(s->model, &s->cfg, s->rng_init);
    // bfloat16_pure: the weights themselves bfloat16 from the start (nearest-even)
    if (REAL_IS_FLOAT && s->cfg.train.precision == PRECISION_BFLOAT16_PURE)
        round_bf16(s->model->params, s->model->num_params);
    if (model_has_admin(s->model)) admin_profile(s, seed);
}

int session_next_batch(session_t *s)
{
    data_batch(&s->data, s->rng_data, &s->batch);
    if (model_check_batch(s->model, &s->batch, s->error, sizeof s->error)) return 2;
    model_draw_dropout(s->model, &s->batch, s->rng_data);
    return 0;
}
