/* bench_cases.c — `make bench`'s cases: which models are timed, their configs and their nominal
 * FLOPs (docs/performance.md, "make bench" and "FLOP count"). */
#include <stdio.h>
#include <string.h>
#include "bench.h"

/* Issue 15 (small models, many short runs) and issue 35 (against PyTorch at its fastest): one
 * update (forward, backward, Adam) at d = 64, 128, 256, 512, lm and encdec 6-6, Post and Pre,
 * n = S = T = 64, B = 8, V = 2000 (d = 512: V = 10000), each in float64 and float32; the atlas's
 * run (configs/atlas.ini: d = 64, V = 256) at L = 6, 12, 24. Issue 7: (a) the paper's IWSLT
 * layer, d=512, 4 heads, d_ff=1024, n=64, batch 8, L=6, one forward+backward; (b) the same at
 * L=12 and L=24; (c) a probe of configs/postln_L12.ini. Issue 20: the dynamics' statistics. */
const bench_case_t BENCH_CASES[] = {
    {"u_lm_post_d64", "lm Post d=64 V=2000", K_UPDATE, 0, 6, "post", 64, 2000, 1},
    {"u_lm_pre_d64", "lm Pre  d=64 V=2000", K_UPDATE, 0, 6, "pre", 64, 2000, 1},
    {"u_ed_post_d64", "ed Post d=64 V=2000", K_UPDATE, 1, 6, "post", 64, 2000, 0},
    {"u_ed_pre_d64", "ed Pre  d=64 V=2000", K_UPDATE, 1, 6, "pre", 64, 2000, 0},
    {"u_lm_post_d128", "lm Post d=128 V=2000", K_UPDATE, 0, 6, "post", 128, 2000, 1},
    {"u_lm_pre_d128", "lm Pre  d=128 V=2000", K_UPDATE, 0, 6, "pre", 128, 2000, 1},
    {"u_ed_post_d128", "ed Post d=128 V=2000", K_UPDATE, 1, 6, "post", 128, 2000, 0},
    {"u_ed_pre_d128", "ed Pre  d=128 V=2000", K_UPDATE, 1, 6, "pre", 128, 2000, 0},
    {"u_lm_post_d256", "lm Post d=256 V=2000", K_UPDATE, 0, 6, "post", 256, 2000, 1},
    {"u_lm_pre_d256", "lm Pre  d=256 V=2000", K_UPDATE, 0, 6, "pre", 256, 2000, 1},
    {"u_ed_post_d256", "ed Post d=256 V=2000", K_UPDATE, 1, 6, "post", 256, 2000, 0},
    {"u_ed_pre_d256", "ed Pre  d=256 V=2000", K_UPDATE, 1, 6, "pre", 256, 2000, 0},
    {"u_lm_post_d512", "lm Post d=512 V=1e4", K_UPDATE, 0, 6, "post", 512, 10000, 1},
    {"u_lm_pre_d512", "lm Pre  d=512 V=1e4", K_UPDATE, 0, 6, "pre", 512, 10000, 1},
    {"u_ed_post_d512", "ed Post d=512 V=1e4", K_UPDATE, 1, 6, "post", 512, 10000, 0},
    {"u_ed_pre_d512", "ed Pre  d=512 V=1e4", K_UPDATE, 1, 6, "pre", 512, 10000, 0},
    {"u_atlas_L6", "atlas L=6 (d=64)", K_UPDATE, 0, 6, "post", 64, 256, 1},
    {"u_atlas_L12", "atlas L=12 (d=64)", K_UPDATE, 0, 12, "post", 64, 256, 1},
    {"u_atlas_L24", "atlas L=24 (d=64)", K_UPDATE, 0, 24, "post", 64, 256, 1},
    {"a_post_L6", "(a) Post-LN L=6", K_STEP, 0, 6, "post", 512, 1000, 0},
    {"a_pre_L6", "(a) Pre-LN  L=6", K_STEP, 0, 6, "pre", 512, 1000, 0},
    {"b_post_L12", "(b) Post-LN L=12", K_STEP, 0, 12, "post", 512, 1000, 0},
    {"b_pre_L12", "(b) Pre-LN  L=12", K_STEP, 0, 12, "pre", 512, 1000, 0},
    {"b_post_L24", "(b) Post-LN L=24", K_STEP, 0, 24, "post", 512, 1000, 0},
    {"b_pre_L24", "(b) Pre-LN  L=24", K_STEP, 0, 24, "pre", 512, 1000, 0},
    {"c_probe_L12", "(c) probe postln_L12", K_PROBE, 0, 12, "post", 512, 1000, 0},
    {"dyn_atlas", "dynamics: atlas L=6", K_DYN, 0, 6, "post", 64, 256, 1},
    {"dyn_d128", "dynamics: d=128 L=4", K_DYN, 0, 4, "pre", 128, 256, 1},
};
const int BENCH_NUM_CASES = (int)(sizeof BENCH_CASES / sizeof BENCH_CASES[0]);

const bench_case_t *bench_case_find(const char *name)
{
    for (int i = 0; i < BENCH_NUM_CASES; i++)
        if (!strcmp(BENCH_CASES[i].name, name)) return &BENCH_CASES[i];
    return NULL;
}

int bench_case_f32(const bench_case_t *c)
{
    return c->kind == K_UPDATE;
}

int bench_case_bf16(const bench_case_t *c)
{
    return c->kind == K_UPDATE && c->d >= 128;
}

const char *bench_prec_name(int prec)
{
    static const char *const names[] = {"f64", "f32", "bf16e", "bf16o", "fp8"};
    return prec >= 0 && prec < 5 ? names[prec] : "?";
}

const char *bench_prec_csv(int prec)
{
    static const char *const names[] = {"float64", "float32", "bfloat16", "bfloat16_onednn",
                                        "fp8"};
    return prec >= 0 && prec < 5 ? names[prec] : "?";
}

int bench_case_config(const bench_case_t *c, config_t *cfg)
{
    char err[CONFIG_ERR_MAX], sets[16][64];
    int n = 0;
    snprintf(sets[n++], 64, "model.layers=%d", c->layers);
    snprintf(sets[n++], 64, "model.placement=%s", c->placement);
    snprintf(sets[n++], 64, "model.d_model=%d", c->d);
    snprintf(sets[n++], 64, "model.d_ff=%d", 2 * c->d);
    snprintf(sets[n++], 64, "model.vocab=%d", c->vocab);
    snprintf(sets[n++], 64, "model.heads=4");
    snprintf(sets[n++], 64, "model.seq_len=64");
    snprintf(sets[n++], 64, "data.batch=8");
    snprintf(sets[n++], 64, "data.zipf=1.1");
    snprintf(sets[n++], 64, "model.causal=%s", c->causal ? "true" : "false");
    if (c->encdec) {
        snprintf(sets[n++], 64, "model.arch=encdec");
        snprintf(sets[n++], 64, "model.dec_layers=%d", c->layers);
        snprintf(sets[n++], 64, "model.src_len=64");
    }
    if (c->kind == K_DYN && c->d == 128) {   // configs/logit_growth.ini's shape
        snprintf(sets[n++], 64, "model.d_ff=512");
        snprintf(sets[n++], 64, "data.batch=16");
        snprintf(sets[n++], 64, "model.activation=gelu");
    }
    const char *ptr[16];
    for (int i = 0; i < n; i++) ptr[i] = sets[i];
    const char *probe_sets[] = {BENCH_PROBE_SEEDS, BENCH_PROBE_BATCHES};
    int rc;
    if (c->kind == K_PROBE)
        rc = config_load(cfg, "configs/postln_L12.ini", probe_sets, 2, err, sizeof err);
    else
        rc = config_load(cfg, "configs/postln_L6.ini", ptr, n, err, sizeof err);
    if (rc) fprintf(stderr, "bench: %s\n", err);
    return rc;
}

/* GEMMs: forward 2·rows·in·out per product, backward 2× that (dX and dW). Per stack: its
 * self-attentions over its own rows, the decoder's cross-attentions over the source, FFNs,
 * norms; then the logits and the loss. An update adds Adam's ~10 FLOPs per parameter. */
double bench_step_flops(const model_t *m, int update)
{
    const double B = m->B, C = m->C, F = m->F, V = m->V, H = m->H;
    double total = 0.0;
    for (int s = 0; s < m->nstacks; s++) {
        const layer_stack_t *st = &m->stack[s];
        const double T = st->kind == STACK_ENC ? m->S : m->T, N = B * T, L = st->L;
        const double self = 3.0 * 2.0 * N * 4.0 * C * C            // Q K V O
                            + 3.0 * 4.0 * B * T * T * C              // q·kᵀ, att·v
                            + (5.0 + 4.0) * B * H * T * T;           // softmax fwd 5, bwd 4
        const double ffn = 3.0 * 2.0 * N * 2.0 * C * F + 2.0 * N * F;   // W1 W2, relu
        double cross = 0.0;
        if (st->kind == STACK_DEC) {
            const double S = m->S, Nk = B * S;
            cross = 3.0 * 2.0 * (N + Nk) * 2.0 * C * C + 3.0 * 4.0 * B * T * S * C +
                    (5.0 + 4.0) * B * H * T * S;
        }
        int norms = 0;
        for (int k = 0; k < st->L * st->nsub; k++) norms += st->subs[k].norm.on;
        norms += st->final.on;
        total += L * (self + ffn + cross) + norms * (8.0 + 14.0) * N * C +
                 L * st->nsub * 2.0 * N * C;                        // residuals
        if (st->kind != STACK_ENC) total += 3.0 * 2.0 * N * C * V + 7.0 * N * V;   // logits, loss
    }
    return total + (update ? 10.0 * (double)m->num_params : 0.0);
}
