/* test_model.c — whole-model gradients against finite differences, determinism, causality,
 * the placement equations and the batch checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_rng.h>
#include "tests.h"
#include "config/config.h"
#include "model/session.h"
#include "measure/gradcheck.h"
#include "model/model.h"
#include "nn/gemm.h"
#include "util/threads.h"

/* The tiny model of the issue: d=8, 2 heads, d_ff=12, L=3, n=5, vocab=11, batch 2. */
static void tiny_config(config_t *cfg)
{
    config_defaults(cfg);
    cfg->model.layers = 3;
    cfg->model.d_model = 8;
    cfg->model.heads = 2;
    cfg->model.d_ff = 12;
    cfg->model.seq_len = 5;
    cfg->model.vocab = 11;
    cfg->data.batch = 2;
    cfg->data.task = TASK_RANDOM;
    cfg->data.zipf = 0.0;
}

typedef struct {
    session_t s;
    model_t *m;          /* s.model */
    batch_t *b;          /* &s.batch */
    gsl_rng *rng;        /* s.rng_init */
} tiny_t;

/* The session of cfg: model initialised from init.seed, one batch and its dropout masks. */
static void tiny_open(tiny_t *t, const config_t *cfg)
{
    char err[256];
    ck_assert_int_eq(session_open(&t->s, cfg, err, sizeof err), 0);
    session_init(&t->s, cfg->init.seed);
    ck_assert_int_eq(session_next_batch(&t->s), 0);
    t->m = t->s.model;
    t->b = &t->s.batch;
    t->rng = t->s.rng_init;
}

static void tiny_close(tiny_t *t)
{
    session_close(&t->s);
}

/* Finite differences on every entry of every tensor; returns the worst relative error. */
static double check_all(const config_t *cfg, const char *label)
{
    tiny_t t;
    tiny_open(&t, cfg);
    model_perturb(t.m, t.rng, 0.3);   // biases, γ, β away from 0 and 1
    gradcheck_result_t *res = calloc((size_t)t.m->num_tensors, sizeof *res);
    const double worst = gradcheck_run(t.m, t.b, (size_t)-1, 1e-5, t.rng, res);
    int worst_k = 0;
    for (int k = 0; k < t.m->num_tensors; k++) {
        ck_assert_uint_eq(res[k].checked, model_tensor_size(res[k].tensor));
        if (res[k].rel_err > res[worst_k].rel_err) worst_k = k;
    }
    if (!(worst < 1e-6))
        fprintf(stderr, "gradcheck %s: %s rel.err %.3e\n", label, res[worst_k].tensor->name,
                worst);
    free(res);
    tiny_close(&t);
    return worst;
}

/* every placement × norm × activation × causal × tied, every parameter (biases,
 * γ, β perturbed by N(0, 0.3²) away from their initial 0 and 1), relative error < 1e-6 (5-point central differences, h = 1e-5, double precision). */
START_TEST(test_fd_all_combinations)
{
    static const placement_t places[] = {PLACEMENT_POST, PLACEMENT_PRE};
    static const norm_kind_t norms[] = {NORM_LAYERNORM, NORM_RMSNORM, NORM_NONE};
    static const activation_t acts[] = {ACT_RELU, ACT_GELU};
    double worst = 0.0;
    int n = 0;
    for (int p = 0; p < 2; p++)
        for (int nk = 0; nk < 3; nk++)
            for (int a = 0; a < 2; a++)
                for (int causal = 0; causal < 2; causal++)
                    for (int tied = 0; tied < 2; tied++) {
                        config_t cfg;
                        char label[128];
                        tiny_config(&cfg);
                        cfg.model.placement = places[p];
                        cfg.model.norm = norms[nk];
                        cfg.model.activation = acts[a];
                        cfg.model.causal = causal;
                        cfg.model.tie_embeddings = tied;
                        cfg.init.seed = 100 + n;
                        snprintf(label, sizeof label, "%s/%s/%s/causal=%d/tied=%d",
                                 config_placement_name(places[p]), config_norm_name(norms[nk]),
                                 config_activation_name(acts[a]), causal, tied);
                        const double e = check_all(&cfg, label);
                        ck_assert_msg(e < 1e-6, "%s: worst relative error %.3e", label, e);
                        if (e > worst) worst = e;
                        n++;
                    }
    printf("gradcheck: %d combinations, worst relative error %.3e\n", n, worst);
}
END_TEST

/* data.task = mlm (docs/design.md §6f): the whole step on a masked batch — bidirectional, the
 * loss over the chosen positions, [MASK] = 256 in a vocabulary of 257 — against finite
 * differences, Post-LN and Pre-LN. */
START_TEST(test_fd_mlm)
{
    char path[] = "/tmp/stability-fdmlm-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    char text[2000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)(' ' + (i * 31 + i / 3) % 90);
    ck_assert_int_eq(write(fd, text, sizeof text), (int)sizeof text);
    close(fd);
    static const placement_t places[] = {PLACEMENT_POST, PLACEMENT_PRE};
    for (int p = 0; p < 2; p++) {
        config_t cfg;
        tiny_config(&cfg);
        cfg.data.task = TASK_MLM;
        cfg.data.mask_rate = 0.4;
        cfg.model.vocab = 257;
        cfg.model.seq_len = 6;
        cfg.model.placement = places[p];
        cfg.init.seed = 71 + p;
        snprintf(cfg.data.path, sizeof cfg.data.path, "%s", path);
        const double e = check_all(&cfg, config_placement_name(places[p]));
        ck_assert_msg(e < 1e-6, "mlm %s: worst relative error %.3e", config_placement_name(places[p]), e);
    }
    unlink(path);
}
END_TEST

/* The switches not in the product above: dropout (fixed masks), label smoothing, W_Q=W_K=0,
 * ignored targets (copy/reverse), final norm on Post-LN / off on Pre-LN, xavier_uniform. */
START_TEST(test_fd_variants)
{
    for (int v = 0; v < 8; v++) {
        config_t cfg;
        tiny_config(&cfg);
        cfg.init.seed = 7 + v;
        const char *label = "";
        switch (v) {
        case 0: cfg.model.dropout = 0.3; label = "dropout"; break;
        case 1: cfg.data.label_smoothing = 0.1; label = "label_smoothing"; break;
        case 2: cfg.init.zero_qk = 1; label = "zero_qk"; break;
        case 3: cfg.data.task = TASK_COPY; label = "copy"; break;
        case 4: cfg.data.task = TASK_REVERSE; cfg.model.placement = PLACEMENT_PRE;
                label = "reverse/pre"; break;
        case 5: cfg.model.final_norm = FINAL_NORM_ON; label = "post+final_norm"; break;
        case 6: cfg.model.placement = PLACEMENT_PRE; cfg.model.final_norm = FINAL_NORM_OFF;
                label = "pre-final_norm"; break;
        case 7: cfg.init.scheme = INIT_XAVIER_UNIFORM; cfg.model.dropout = 0.1;
                cfg.model.placement = PLACEMENT_PRE; cfg.model.norm = NORM_RMSNORM;
                label = "uniform/dropout/pre/rms"; break;
        }
        const double e = check_all(&cfg, label);
        ck_assert_msg(e < 1e-6, "%s: worst relative error %.3e", label, e);
    }
}
END_TEST

/* The encoder–decoder of docs/design.md §6b: every parameter of a tiny 2-3 model (d = 8,
 * S = 5, T = 6, source rows of 2..5 tokens so every batch is padded) for post/pre ×
 * layernorm/rmsnorm × relu/gelu, plus dropout, label smoothing, untied output, norm = none and
 * final norms on Post-LN; relative error < 1e-6 as above. */
START_TEST(test_fd_encdec)
{
    static const placement_t places[] = {PLACEMENT_POST, PLACEMENT_PRE};
    static const norm_kind_t norms[] = {NORM_LAYERNORM, NORM_RMSNORM};
    double worst = 0.0;
    int n = 0;
    for (int v = 0; v < 13; v++) {
        config_t cfg;
        char label[128];
        tiny_config(&cfg);
        cfg.model.arch = ARCH_ENCDEC;
        cfg.model.layers = 2;
        cfg.model.dec_layers = 3;
        cfg.model.src_len = 5;
        cfg.model.seq_len = 6;
        cfg.data.task = TASK_RANDOM;
        cfg.data.min_len = 2;
        cfg.init.seed = 300 + v;
        if (v < 8) {
            cfg.model.placement = places[v / 4];
            cfg.model.norm = norms[(v / 2) % 2];
            cfg.model.activation = v % 2 ? ACT_GELU : ACT_RELU;
        }
        switch (v) {
        case 8: cfg.model.dropout = 0.25; cfg.model.placement = PLACEMENT_PRE; break;
        case 9: cfg.data.label_smoothing = 0.1; cfg.data.task = TASK_REVERSE; break;
        case 10: cfg.model.tie_embeddings = 0; cfg.data.task = TASK_COPY; break;
        case 11: cfg.model.norm = NORM_NONE; cfg.model.dropout = 0.1; break;
        case 12: cfg.model.final_norm = FINAL_NORM_ON; break;
        }
        snprintf(label, sizeof label, "encdec %s/%s/%s/dropout=%g/ls=%g/tied=%d/%s",
                 config_placement_name(cfg.model.placement), config_norm_name(cfg.model.norm),
                 config_activation_name(cfg.model.activation), cfg.model.dropout,
                 cfg.data.label_smoothing, cfg.model.tie_embeddings,
                 config_task_name(cfg.data.task));
        const double e = check_all(&cfg, label);
        ck_assert_msg(e < 1e-6, "%s: worst relative error %.3e", label, e);
        if (e > worst) worst = e;
        n++;
    }
    printf("gradcheck encdec: %d models, worst relative error %.3e\n", n, worst);
}
END_TEST

/* Padding never reaches the loss: every row's per-token losses in a padded batch equal those of
 * the row alone, unpadded (S = its own length), to rounding. */
START_TEST(test_encdec_padding_is_inert)
{
    config_t cfg;
    tiny_config(&cfg);
    cfg.model.arch = ARCH_ENCDEC;
    cfg.model.src_len = 6;
    cfg.model.seq_len = 6;
    cfg.data.task = TASK_RANDOM;
    cfg.data.batch = 3;
    cfg.data.min_len = 1;
    tiny_t t;
    tiny_open(&t, &cfg);
    const batch_t *b = t.b;
    const int T = b->T, S = b->S;
    model_forward(t.m, b);
    double full[64];
    memcpy(full, t.m->losses, (size_t)b->B * T * sizeof(double));
    int padded = 0;
    for (int r = 0; r < b->B; r++) {
        int len = 0;
        while (len < S && b->src[r * S + len] >= 0) len++;
        padded += len < S;
        int32_t src[8], tok[8], tgt[8];
        memcpy(src, b->src + r * S, (size_t)len * sizeof(int32_t));
        memcpy(tok, b->tokens + r * T, (size_t)T * sizeof(int32_t));
        memcpy(tgt, b->targets + r * T, (size_t)T * sizeof(int32_t));
        const batch_t one = {1, len, T, src, tok, tgt};
        model_forward(t.m, &one);
        for (int i = 0; i < T; i++)
            ck_assert_msg(fabs(t.m->losses[i] - full[r * T + i]) <= 1e-12 * fabs(full[r * T + i]),
                          "row %d position %d: %.17g alone, %.17g in the padded batch", r, i,
                          t.m->losses[i], full[r * T + i]);
    }
    ck_assert_int_gt(padded, 0);   // the batch did have padded rows
    tiny_close(&t);
}
END_TEST

/* The same config gives the same bytes (parameters, loss, gradients). */
/* docs/design.md §5: ids index the embedding, so every batch is checked on entry (as llm.c
 * asserts): an id ≥ vocab or < −1 (−1 is padding) in the tokens, targets or source is refused
 * with exit 2 and names the offender; a data task drawing outside the vocabulary is caught by
 * session_next_batch before any forward pass. */
START_TEST(test_batch_ids_checked)
{
    config_t cfg;
    tiny_config(&cfg);
    tiny_t t;
    tiny_open(&t, &cfg);
    char err[256];
    const size_t n = (size_t)t.b->B * t.b->T;
    ck_assert_int_eq(model_check_batch(t.m, t.b, err, sizeof err), 0);
    const int32_t keep = t.b->tokens[3];
    t.b->tokens[3] = cfg.model.vocab;
    ck_assert_int_eq(model_check_batch(t.m, t.b, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "token 3 of the batch is 11"));
    t.b->tokens[3] = -2;
    ck_assert_int_eq(model_check_batch(t.m, t.b, err, sizeof err), 2);
    t.b->tokens[3] = -1;   // padding
    ck_assert_int_eq(model_check_batch(t.m, t.b, err, sizeof err), 0);
    t.b->tokens[3] = keep;
    t.b->targets[n - 1] = cfg.model.vocab + 5;
    ck_assert_int_eq(model_check_batch(t.m, t.b, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "target"));
    // a task that draws ids from a vocabulary larger than the model's
    t.s.data.V = 4 * cfg.model.vocab;
    int rc = 0;
    for (int i = 0; i < 20 && !rc; i++) rc = session_next_batch(&t.s);
    ck_assert_int_eq(rc, 2);
    ck_assert_ptr_nonnull(strstr(t.s.error, "outside [-1, model.vocab = 11)"));
    tiny_close(&t);

    tiny_config(&cfg);
    cfg.model.arch = ARCH_ENCDEC;
    cfg.model.dec_layers = 1;
    cfg.model.src_len = 4;
    tiny_open(&t, &cfg);
    ck_assert_int_eq(model_check_batch(t.m, t.b, err, sizeof err), 0);
    t.b->src[1] = cfg.model.vocab;
    ck_assert_int_eq(model_check_batch(t.m, t.b, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "source token 1"));
    tiny_close(&t);
}
END_TEST

START_TEST(test_deterministic)
{
    config_t cfg;
    tiny_config(&cfg);
    cfg.model.dropout = 0.2;
    tiny_t a, b;
    tiny_open(&a, &cfg);
    tiny_open(&b, &cfg);
    ck_assert_uint_eq(a.m->num_params, b.m->num_params);
    ck_assert_int_eq(memcmp(a.m->params, b.m->params, a.m->num_params * sizeof(double)), 0);
    const double la = model_forward(a.m, a.b);
    const double lb = model_forward(b.m, b.b);
    model_zero_grad(a.m); model_backward(a.m);
    model_zero_grad(b.m); model_backward(b.m);
    ck_assert(memcmp(&la, &lb, sizeof la) == 0);
    ck_assert_int_eq(memcmp(a.m->grads, b.m->grads, a.m->num_params * sizeof(double)), 0);
    tiny_close(&a);
    tiny_close(&b);
}
END_TEST

/* A model big enough for OpenBLAS to use its threads (d=64, B·T=128, L=4, so the gradient arena's
 * two buffer sets are reused with stale values): repeated forward+backward steps give
 * bit-identical losses and gradients under 2 threads (sums in a fixed order, accumulators zeroed). */
START_TEST(test_deterministic_threaded)
{
    config_t cfg;
    tiny_config(&cfg);
    cfg.model.layers = 4;
    cfg.model.d_model = 64;
    cfg.model.heads = 4;
    cfg.model.d_ff = 128;
    cfg.model.seq_len = 16;
    cfg.model.vocab = 50;
    cfg.data.batch = 4;
    const int saved = threads_get();
    threads_set(2);
    ck_assert_int_eq(threads_get(), 2);
    for (int placement = 0; placement < 2; placement++) {
        cfg.model.placement = placement ? PLACEMENT_PRE : PLACEMENT_POST;
        tiny_t t;
        tiny_open(&t, &cfg);
        const size_t P = t.m->num_params;
        double *first = malloc(P * sizeof(double)), loss[3];
        for (int rep = 0; rep < 3; rep++) {
            loss[rep] = model_forward(t.m, t.b);
            model_zero_grad(t.m);
            model_backward(t.m);
            if (rep == 0) memcpy(first, t.m->grads, P * sizeof(double));
            else ck_assert_int_eq(memcmp(first, t.m->grads, P * sizeof(double)), 0);
        }
        ck_assert(memcmp(&loss[0], &loss[1], sizeof(double)) == 0);
        ck_assert(memcmp(&loss[0], &loss[2], sizeof(double)) == 0);
        free(first);
        tiny_close(&t);
    }
    threads_set(saved);
}
END_TEST

/* The same bits at 1, 2, 3 and 16 threads (docs/performance.md): loss and every gradient of an
 * enc-dec Post-LN and an lm Pre-LN model with dropout, big enough that the projections are
 * shared among the pool (B·T = 512 rows at d = 64, beyond the SkylakeX kernels' small-matrix
 * size in halves too, nn/gemm.c) and attention's pairs too. */
START_TEST(test_same_bits_any_threads)
{
    config_t cfg;
    tiny_config(&cfg);
    cfg.model.layers = 2;
    cfg.model.d_model = 64;
    cfg.model.heads = 4;
    cfg.model.d_ff = 96;
    cfg.model.seq_len = 32;
    cfg.model.vocab = 61;
    cfg.model.dropout = 0.1;
    cfg.data.batch = 16;
    const int saved = threads_get(), counts[] = {1, 2, 3, 16};
    threads_set(2);
    ck_assert_int_ge(gemm_blocks(0, 0, 512, 64, 64), 2);   // the projections are shared
    for (int v = 0; v < 2; v++) {
        cfg.model.arch = v ? ARCH_ENCDEC : ARCH_LM;
        cfg.model.placement = v ? PLACEMENT_POST : PLACEMENT_PRE;
        cfg.data.task = v ? TASK_REVERSE : TASK_RANDOM;
        cfg.data.min_len = v ? 20 : 0;   // padded sources: masked keys
        double *first = NULL, loss0 = 0.0;
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
            threads_set(counts[k]);
            tiny_t t;
            tiny_open(&t, &cfg);
            const size_t P = t.m->num_params;
            const double loss = model_forward(t.m, t.b);
            model_zero_grad(t.m);
            model_backward(t.m);
            if (!first) {
                first = malloc(P * sizeof(double));
                memcpy(first, t.m->grads, P * sizeof(double));
                loss0 = loss;
            } else {
                ck_assert_msg(memcmp(&loss, &loss0, sizeof loss) == 0 &&
                              memcmp(first, t.m->grads, P * sizeof(double)) == 0,
                              "%s at %d threads: not the bits of one thread",
                              v ? "encdec" : "lm", counts[k]);
            }
            tiny_close(&t);
        }
        free(first);
    }
    threads_set(saved);
}
END_TEST

/* causal = true: changing the last token leaves every earlier position's logits unchanged;
 * bidirectional: it changes them. */
START_TEST(test_causal_mask)
{
    for (int causal = 0; causal < 2; causal++) {
        config_t cfg;
        tiny_config(&cfg);
        cfg.model.causal = causal;
        tiny_t t;
        tiny_open(&t, &cfg);
        model_t *m = t.m;
        const size_t T = (size_t)m->T, V = (size_t)m->V;
        model_forward(m, t.b);
        double *before = malloc(T * V * sizeof(double));
        memcpy(before, m->logits, T * V * sizeof(double));   // batch row 0
        t.b->tokens[T - 1] = (t.b->tokens[T - 1] + 1) % m->V;
        model_forward(m, t.b);
        double maxdiff = 0.0;
        for (size_t i = 0; i < (T - 1) * V; i++)
            maxdiff = fmax(maxdiff, fabs(before[i] - m->logits[i]));
        if (causal) ck_assert_double_eq(maxdiff, 0.0);
        else ck_assert_double_gt(maxdiff, 1e-6);
        free(before);
        tiny_close(&t);
    }
}
END_TEST

/* Post-LN: every layer output is LN(x⁵), so each row has mean 0 and variance σ²/(σ²+ε)≈1 at
 * γ=1, β=0. Pre-LN: x_{l+1} − x³ equals FFN(LN(x³)) as stored. */
START_TEST(test_placement_equations)
{
    config_t cfg;
    tiny_config(&cfg);
    cfg.model.d_model = 16;
    cfg.model.heads = 4;
    tiny_t t;
    tiny_open(&t, &cfg);
    model_forward(t.m, t.b);
    const size_t N = (size_t)t.m->B * t.m->T, C = (size_t)t.m->C;
    for (int l = 0; l < t.m->L; l++) {
        const double *x = stack_sublayer(&t.m->stack[0], l, 1)->out;   // the layer's output
        for (size_t i = 0; i < N; i++) {
            double mu = 0.0, var = 0.0;
            for (size_t c = 0; c < C; c++) mu += x[i * C + c];
            mu /= C;
            for (size_t c = 0; c < C; c++) var += (x[i * C + c] - mu) * (x[i * C + c] - mu);
            var /= C;
            ck_assert_double_eq_tol(mu, 0.0, 1e-12);
            ck_assert_double_eq_tol(var, 1.0, 1e-3);   // ε/σ² ≲ 1e-3 here
        }
    }
    tiny_close(&t);

    cfg.model.placement = PLACEMENT_PRE;
    tiny_open(&t, &cfg);
    model_forward(t.m, t.b);
    for (int l = 0; l < t.m->L; l++) {
        const sublayer_t *attn = stack_sublayer(&t.m->stack[0], l, 0);
        const sublayer_t *ffn = stack_sublayer(&t.m->stack[0], l, 1);
        for (size_t i = 0; i < N * C; i++) {
            ck_assert_double_eq_tol(ffn->out[i] - attn->r[i], ffn->f[i], 1e-12);
            ck_assert_double_eq_tol(attn->r[i] - attn->x[i], attn->f[i], 1e-12);
        }
    }
    // the Pre-LN stack ends with a final norm by default, the Post-LN one does not
    ck_assert_ptr_nonnull(model_find_tensor(t.m, "final_norm.gamma"));
    tiny_close(&t);
}
END_TEST

/* Parameter names and shapes of docs/design.md §5 (W stored [in][out]). */
START_TEST(test_tensor_names)
{
    config_t cfg;
    tiny_config(&cfg);
    cfg.model.norm = NORM_RMSNORM;
    cfg.model.tie_embeddings = 0;
    model_t *m = model_create(&cfg, NULL);
    const tensor_info_t *t = model_find_tensor(m, "layers/02/w1");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->rows, 8);
    ck_assert_uint_eq(t->cols, 12);
    t = model_find_tensor(m, "layers/00/w2");
    ck_assert_uint_eq(t->rows, 12);
    ck_assert_uint_eq(t->cols, 8);
    ck_assert_ptr_nonnull(model_find_tensor(m, "lm_head"));
    ck_assert_ptr_nonnull(model_find_tensor(m, "layers/01/norm2.gamma"));
    ck_assert_ptr_null(model_find_tensor(m, "layers/01/norm2.beta"));   // RMSNorm: no β
    ck_assert_ptr_null(model_find_tensor(m, "final_norm.gamma"));       // Post-LN default
    size_t total = 0;
    for (int k = 0; k < m->num_tensors; k++) total += model_tensor_size(&m->tensors[k]);
    ck_assert_uint_eq(total, m->num_params);
    model_free(m);
}
END_TEST

/* Xavier normal: the sample variance of a d×d matrix is 2/(2d) = 1/d within 5 standard errors;
 * tok_embed ~ N(0, 1/d). */
START_TEST(test_init_statistics)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.model.layers = 1;
    cfg.model.d_model = 128;
    cfg.model.d_ff = 256;
    cfg.model.vocab = 200;
    cfg.model.seq_len = 4;
    cfg.data.batch = 1;
    model_t *m = model_create(&cfg, NULL);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    model_init(m, &cfg, rng);
    struct { const char *name; double var; } cases[] = {
        {"layers/00/wq", 1.0 / 128}, {"layers/00/w1", 2.0 / (128 + 256)},
        {"tok_embed", 1.0 / 128},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const tensor_info_t *t = model_find_tensor(m, cases[c].name);
        const size_t n = model_tensor_size(t);
        double s = 0.0;
        for (size_t i = 0; i < n; i++) s += m->params[t->offset + i] * m->params[t->offset + i];
        const double var = s / n, se = cases[c].var * sqrt(2.0 / n);   // sd of a χ² mean
        ck_assert_msg(fabs(var - cases[c].var) < 5 * se, "%s: var %g vs %g", cases[c].name, var,
                      cases[c].var);
    }
    const tensor_info_t *g = model_find_tensor(m, "layers/00/norm1.gamma");
    ck_assert_double_eq(m->params[g->offset], 1.0);
    gsl_rng_free(rng);
    model_free(m);
}
END_TEST

Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("gradients");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, test_fd_all_combinations);
    tcase_add_test(tc, test_fd_variants);
    tcase_add_test(tc, test_fd_encdec);
    tcase_add_test(tc, test_fd_mlm);
    suite_add_tcase(s, tc);
    TCase *tc2 = tcase_create("structure");
    tcase_add_test(tc2, test_deterministic);
    tcase_add_test(tc2, test_deterministic_threaded);
    tcase_add_test(tc2, test_same_bits_any_threads);
    tcase_add_test(tc2, test_causal_mask);
    tcase_add_test(tc2, test_placement_equations);
    tcase_add_test(tc2, test_tensor_names);
    tcase_add_test(tc2, test_init_statistics);
    tcase_add_test(tc2, test_encdec_padding_is_inert);
    tcase_add_test(tc2, test_batch_ids_checked);
    suite_add_tcase(s, tc2);
    return s;
}
