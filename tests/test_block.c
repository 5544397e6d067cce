/* test_block.c — today's block (docs/design.md §6i): rotary positions, SwiGLU and bias-free
 * linears. Every parameter of tiny lm, encdec and mlm models with the block's parts alone and
 * together, with every scheme of the table and with QK-norm, soft-capping and the z-loss,
 * against finite differences; the rotary kernel against its defining properties; decoding at
 * the right positions; the registry's names; the schemes' gains on W³; the config's rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "tests.h"
#include "config/config.h"
#include "measure/gradcheck.h"
#include "measure/probe.h"
#include "model/model.h"
#include "model/session.h"
#include "nn/rope.h"
#include "util/threads.h"

/* d = 8, 2 heads (d_head 4), d_ff = 12, 3 layers (encdec 2 + 2, padded sources), n = 6,
 * vocab 11, batch 2; GELU (smooth: no finite difference straddles a kink). */
static void block_config(config_t *c, int encdec, int seed)
{
    config_defaults(c);
    c->model.layers = encdec ? 2 : 3;
    c->model.d_model = 8;
    c->model.heads = 2;
    c->model.d_ff = 12;
    c->model.seq_len = 6;
    c->model.vocab = 11;
    c->model.activation = ACT_GELU;
    c->data.batch = 2;
    c->init.seed = (unsigned long)seed;
    if (encdec) {
        c->model.arch = ARCH_ENCDEC;
        c->model.src_len = 5;
        c->data.min_len = 2;
    } else {
        c->model.causal = 1;
    }
}

/* The LLaMA block on c: rope, SwiGLU, no biases. */
static void llama(config_t *c)
{
    c->model.positions = POS_ROPE;
    c->model.activation = ACT_SWIGLU;
    c->model.bias = 0;
}

/* Finite differences (5-point, h = 1e-5) on every entry of every tensor, 1-D tensors perturbed
 * by N(0, 0.3²) off their initial 0 and 1; the worst relative error (gradcheck's scale). */
static double fd_worst(const config_t *c, const char *label)
{
    session_t s;
    char err[256];
    ck_assert_msg(session_open(&s, c, err, sizeof err) == 0, "%s: %s", label, err);
    session_init(&s, c->init.seed);
    ck_assert_int_eq(session_next_batch(&s), 0);
    model_perturb(s.model, s.rng_init, 0.3);
    gradcheck_result_t *res = calloc((size_t)s.model->num_tensors, sizeof *res);
    const double worst = gradcheck_run(s.model, &s.batch, (size_t)-1, 1e-5, s.rng_data, res);
    int k_worst = 0;
    for (int k = 0; k < s.model->num_tensors; k++) {
        ck_assert_uint_eq(res[k].checked, model_tensor_size(res[k].tensor));
        if (res[k].rel_err > res[k_worst].rel_err) k_worst = k;
    }
    if (!(worst < 1e-6))
        fprintf(stderr, "gradcheck %s: %s rel.err %.3e\n", label, res[k_worst].tensor->name, worst);
    free(res);
    session_close(&s);
    return worst;
}

static void fd_case(const config_t *c, const char *label, double *worst, int *n)
{
    const double e = fd_worst(c, label);
    ck_assert_msg(e < 1e-6, "%s: worst relative error %.3e", label, e);
    if (e > *worst) *worst = e;
    (*n)++;
}

/* Each part alone and together: positions × activation × bias, Post-LN and Pre-LN, lm (causal
 * and bidirectional) and encdec. */
START_TEST(test_fd_parts)
{
    static const positions_t P[] = {POS_SINUSOIDAL, POS_ROPE, POS_NONE};
    static const activation_t A[] = {ACT_GELU, ACT_SWIGLU};
    double worst = 0.0;
    int n = 0, seed = 900;
    for (int arch = 0; arch < 2; arch++)
        for (int p = 0; p < 3; p++)
            for (int a = 0; a < 2; a++)
                for (int bias = 0; bias < 2; bias++) {
                    if (P[p] == POS_SINUSOIDAL && A[a] == ACT_GELU && bias) continue;   // test_model.c's
                    config_t c;
                    block_config(&c, arch, seed++);
                    c.model.positions = P[p];
                    c.model.activation = A[a];
                    c.model.bias = bias;
                    c.model.placement = n % 2 ? PLACEMENT_PRE : PLACEMENT_POST;
                    c.model.norm = n % 3 ? NORM_RMSNORM : NORM_LAYERNORM;
                    if (!arch) c.model.causal = (n / 2) % 2;
                    char label[128];
                    snprintf(label, sizeof label, "%s %s/%s/bias=%d/%s/%s/causal=%d",
                             arch ? "encdec" : "lm", config_positions_name(P[p]),
                             config_activation_name(A[a]), bias,
                             config_placement_name(c.model.placement),
                             config_norm_name(c.model.norm), c.model.causal);
                    fd_case(&c, label, &worst, &n);
                }
    printf("gradcheck block parts: %d models, worst relative error %.3e\n", n, worst);
}
END_TEST

/* Every scheme of the table (config/scheme.c) with the LLaMA block in lm and encdec: each
 * placement with RMSNorm (none for a scheme without norms), the variants (DyT, T-Fixup) on a
 * placement they go with; every other model with QK-norm, and soft-capping, the z-loss,
 * untied output and dropout spread over them. A new row is covered without an edit. */
START_TEST(test_fd_schemes)
{
    double worst = 0.0;
    int n = 0, seed = 950;
    for (int arch = 0; arch < 2; arch++)
        for (int i = 0; i < SCHEME_COUNT; i++) {
            const scheme_t *s = &SCHEMES[i];
            int p = i < PLACEMENT_COUNT ? i : 0;
            while (i >= PLACEMENT_COUNT && s->placements && !((s->placements >> p) & 1u)) p++;
            if (i >= PLACEMENT_COUNT && s->by == SCHEME_BY_NORM) p = PLACEMENT_PRE;
            config_t c;
            block_config(&c, arch, seed++);
            llama(&c);
            c.model.placement = (placement_t)p;
            c.model.norm = s->norms == SCHEME_NORMS_NONE ? NORM_NONE : NORM_RMSNORM;
            if (s->by == SCHEME_BY_NORM) c.model.norm = (norm_kind_t)s->value;
            if (s->by == SCHEME_BY_INIT) {
                c.init.scheme = (init_scheme_t)s->value;
                c.model.norm = NORM_NONE;
            }
            if (p == PLACEMENT_MIXLN) c.model.mix_ratio = 0.5;
            if (n % 2) c.model.qk_norm = n % 4 == 1 ? QK_NORM_RMSNORM : QK_NORM_LAYERNORM;
            if (n % 3 == 0) c.model.attn_softcap = 1.5;
            if (n % 5 == 0) c.train.z_loss = 0.2;
            if (n % 7 == 3) c.model.tie_embeddings = 0;
            if (n % 6 == 4) c.model.dropout = 0.2;
            char label[128];
            snprintf(label, sizeof label, "%s %s/%s llama qk=%d cap=%g z=%g", arch ? "encdec" : "lm",
                     s->name, config_norm_name(c.model.norm), c.model.qk_norm,
                     c.model.attn_softcap, c.train.z_loss);
            fd_case(&c, label, &worst, &n);
        }
    printf("gradcheck block schemes: %d models, worst relative error %.3e\n", n, worst);
}
END_TEST

/* data.task = mlm with the block: bidirectional rope, the loss over the masked positions. */
START_TEST(test_fd_mlm)
{
    char path[] = "/tmp/stability-fdblock-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    char text[2000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)(' ' + (i * 37 + i / 5) % 90);
    ck_assert_int_eq(write(fd, text, sizeof text), (int)sizeof text);
    close(fd);
    double worst = 0.0;
    int n = 0;
    for (int v = 0; v < 3; v++) {
        config_t c;
        block_config(&c, 0, 980 + v);
        llama(&c);
        c.model.causal = 0;
        c.data.task = TASK_MLM;
        c.data.mask_rate = 0.4;
        c.model.vocab = 257;
        c.model.placement = v == 1 ? PLACEMENT_POST : PLACEMENT_PRE;
        c.model.norm = NORM_RMSNORM;
        if (v == 2) { c.model.qk_norm = QK_NORM_RMSNORM; c.model.bias = 1; }
        snprintf(c.data.path, sizeof c.data.path, "%s", path);
        fd_case(&c, v == 2 ? "mlm pre llama+bias+qk" : v ? "mlm post llama" : "mlm pre llama",
                &worst, &n);
    }
    unlink(path);
    printf("gradcheck block mlm: %d models, worst relative error %.3e\n", n, worst);
}
END_TEST

/* The kernel against its definition (nn/rope.h): the formula at a drawn angle; the rotation keeps
 * each head's norm; q·k after rotation at positions t, s equals that at t + δ, s + δ (it depends
 * on t − s only, RoFormer eq. 16); the backward is the transpose, ⟨R x, y⟩ = ⟨x, Rᵀ y⟩; and in
 * place equals out of place. */
START_TEST(test_rope_kernel)
{
    enum { T = 9, C = 12, H = 2, Dh = C / H, B = 1 };
    double cs[T * Dh / 2], sn[T * Dh / 2], x[T * C], y[T * C], r[T * C], ry[T * C], tmp[T * C];
    rope_tables(cs, sn, T, Dh, 10000.0);
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 5);
    for (int i = 0; i < T * C; i++) { x[i] = gsl_ran_gaussian(g, 1.0); y[i] = gsl_ran_gaussian(g, 1.0); }
    rope_forward(r, x, cs, sn, B, T, C, H);
    // the formula: position 5, head 1, pair i = 1 (columns Dh + 2, Dh + 3)
    const double th = 5.0 * pow(10000.0, -2.0 / Dh), x0 = x[5 * C + Dh + 2], x1 = x[5 * C + Dh + 3];
    ck_assert_double_eq_tol(r[5 * C + Dh + 2], x0 * cos(th) - x1 * sin(th), 1e-15);
    ck_assert_double_eq_tol(r[5 * C + Dh + 3], x0 * sin(th) + x1 * cos(th), 1e-15);
    ck_assert(r[0] == x[0] && r[1] == x[1]);   // position 0: the identity
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            double a = 0.0, b = 0.0;
            for (int j = 0; j < Dh; j++) {
                a += x[t * C + h * Dh + j] * x[t * C + h * Dh + j];
                b += r[t * C + h * Dh + j] * r[t * C + h * Dh + j];
            }
            ck_assert_double_eq_tol(a, b, 1e-13 * a);
        }
    // relative positions: the same two vectors placed at (t, s) and (t + 3, s + 3)
    double q[T * C] = {0}, k[T * C] = {0}, qr[T * C], kr[T * C];
    for (int j = 0; j < C; j++) { q[1 * C + j] = q[4 * C + j] = x[j]; k[2 * C + j] = k[5 * C + j] = y[j]; }
    rope_forward(qr, q, cs, sn, B, T, C, H);
    rope_forward(kr, k, cs, sn, B, T, C, H);
    for (int h = 0; h < H; h++) {
        double d1 = 0.0, d2 = 0.0;
        for (int j = h * Dh; j < (h + 1) * Dh; j++) {
            d1 += qr[1 * C + j] * kr[2 * C + j];
            d2 += qr[4 * C + j] * kr[5 * C + j];
        }
        ck_assert_double_eq_tol(d1, d2, 1e-13 * (fabs(d1) + 1.0));
    }
    // the transpose: ⟨R x, y⟩ = ⟨x, Rᵀ y⟩, and the backward undoes the forward
    rope_backward(ry, y, cs, sn, B, T, C, H);
    double lhs = 0.0, rhs = 0.0;
    for (int i = 0; i < T * C; i++) { lhs += r[i] * y[i]; rhs += x[i] * ry[i]; }
    ck_assert_double_eq_tol(lhs, rhs, 1e-12 * fabs(lhs));
    rope_backward(tmp, r, cs, sn, B, T, C, H);
    for (int i = 0; i < T * C; i++) ck_assert_double_eq_tol(tmp[i], x[i], 1e-14);
    memcpy(tmp, x, sizeof tmp);
    rope_forward(tmp, tmp, cs, sn, B, T, C, H);
    ck_assert_int_eq(memcmp(tmp, r, sizeof tmp), 0);
    gsl_rng_free(g);
}
END_TEST

/* The registry (docs/design.md §5): with the block, w3 (C,F) follows w2 and no bias tensor
 * exists anywhere (self-, cross-attention, FFN) — absent, not zero; SwiGLU with biases has b3
 * (F); the parameter count is the sum of the parts. */
START_TEST(test_tensors)
{
    config_t c;
    block_config(&c, 1, 1);
    llama(&c);
    c.model.norm = NORM_RMSNORM;
    model_t *m = model_create(&c, NULL);
    ck_assert_ptr_nonnull(m);
    static const char *const gone[] = {"enc/00/bq", "enc/01/bo", "dec/00/bk", "dec/01/cbq",
                                       "dec/00/cbv", "dec/01/cbo", "enc/00/b1", "dec/01/b2",
                                       "dec/00/b3"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        ck_assert_msg(model_find_tensor(m, gone[i]) == NULL, "%s exists", gone[i]);
    const tensor_info_t *w3 = model_find_tensor(m, "dec/01/w3");
    ck_assert_ptr_nonnull(w3);
    ck_assert(w3->rows == 8 && w3->cols == 12 && w3->init == TENSOR_MATRIX);
    ck_assert_int_eq(w3 - model_find_tensor(m, "dec/01/w2"), 1);   // right after W²
    // tok_embed; 2 encoder layers: 4 C² + 3 C·F and an RMSNorm γ (C) per sub-layer (2);
    // 2 decoder layers: 8 C² + 3 C·F and 3 γ; no final norms (Post-LN)
    const size_t C = 8, F = 12, V = 11;
    ck_assert_uint_eq(m->num_params, V * C + 2 * (4 * C * C + 3 * C * F + 2 * C) +
                                         2 * (8 * C * C + 3 * C * F + 3 * C));
    model_free(m);
    c.model.bias = 1;
    m = model_create(&c, NULL);
    const tensor_info_t *b3 = model_find_tensor(m, "enc/00/b3");
    ck_assert(b3 && b3->rows == 1 && b3->cols == 12 && b3->init == TENSOR_CONST);
    ck_assert_ptr_nonnull(model_find_tensor(m, "dec/00/cbk"));
    model_free(m);
}
END_TEST

/* The probes' "param" axis (docs/design.md §6): a single stack's 16 columns as ever, and with
 * SwiGLU w3 (b3 with biases) right after b2; without biases the bias columns stay (NaN). */
START_TEST(test_probe_columns)
{
    static const char *const base[16] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1",
                                         "b1", "w2", "b2", "norm1.gamma", "norm1.beta",
                                         "norm2.gamma", "norm2.beta"};
    for (int v = 0; v < 4; v++) {
        config_t c;
        block_config(&c, 0, 3);
        c.model.activation = v >= 2 ? ACT_SWIGLU : ACT_GELU;
        c.model.bias = v % 2 == 0;
        c.model.positions = v ? POS_ROPE : POS_SINUSOIDAL;
        model_t *m = model_create(&c, NULL);
        probe_axes_t a;
        ck_assert_int_eq(probe_axes_from_model(&a, m), 0);
        const int extra = v == 2 ? 2 : v == 3 ? 1 : 0;
        ck_assert_int_eq(a.nparam, 16 + extra);
        for (int i = 0, j = 0; i < a.nparam; i++) {
            if (i >= 12 && i < 12 + extra) {
                ck_assert_str_eq(a.param[i], i == 12 ? "w3" : "b3");
                continue;
            }
            ck_assert_str_eq(a.param[i], base[j++]);
        }
        probe_axes_free(&a);
        model_free(m);
    }
}
END_TEST

/* Biases are constants at initialisation, not draws: for the same seed a model without them has
 * every other tensor's initial values, and (its biases being 0) the same loss, bit for bit —
 * lm with SwiGLU (b3) and encdec (cross-attention's cb*). */
START_TEST(test_bias_off_same_start)
{
    for (int arch = 0; arch < 2; arch++) {
        config_t a, b;
        block_config(&a, arch, 61);
        a.model.activation = ACT_SWIGLU;
        a.model.positions = POS_ROPE;
        b = a;
        b.model.bias = 0;
        session_t sa, sb;
        char err[256];
        ck_assert_int_eq(session_open(&sa, &a, err, sizeof err), 0);
        ck_assert_int_eq(session_open(&sb, &b, err, sizeof err), 0);
        session_init(&sa, 61);
        session_init(&sb, 61);
        ck_assert_int_eq(session_next_batch(&sa), 0);
        ck_assert_int_eq(session_next_batch(&sb), 0);
        ck_assert_int_lt(sb.model->num_tensors, sa.model->num_tensors);
        for (int k = 0; k < sb.model->num_tensors; k++) {
            const tensor_info_t *t = &sb.model->tensors[k], *u = model_find_tensor(sa.model, t->name);
            ck_assert_ptr_nonnull(u);
            ck_assert_int_eq(memcmp(sb.model->params + t->offset, sa.model->params + u->offset,
                                    model_tensor_size(t) * sizeof(double)), 0);
        }
        const double la = model_forward(sa.model, &sa.batch), lb = model_forward(sb.model, &sb.batch);
        ck_assert_msg(la == lb, "%s: loss %.17g with zero biases, %.17g without", arch ? "encdec" : "lm",
                      la, lb);
        session_close(&sa);
        session_close(&sb);
    }
}
END_TEST

/* The block's passes (rope, SwiGLU's product) split rows or elements among the pool with the
 * serial bits: loss and every gradient of a LLaMA lm and encdec (QK-norm, dropout) are the same
 * bytes at 1, 2, 3 and 16 threads; B·T = 256 rows at d = 64, large enough to be split. */
START_TEST(test_same_bits_any_threads)
{
    const int saved = threads_get(), counts[] = {1, 2, 3, 16};
    for (int arch = 0; arch < 2; arch++) {
        config_t c;
        block_config(&c, arch, 71);
        llama(&c);
        c.model.layers = 2;
        c.model.d_model = 64;
        c.model.heads = 4;
        c.model.d_ff = 176;
        c.model.seq_len = 32;
        c.model.vocab = 61;
        c.model.dropout = 0.1;
        c.model.qk_norm = QK_NORM_RMSNORM;
        c.model.placement = PLACEMENT_PRE;
        c.model.norm = NORM_RMSNORM;
        c.data.batch = 8;
        if (arch) { c.model.src_len = 32; c.data.min_len = 20; }
        double *first = NULL, loss0 = 0.0;
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
            threads_set(counts[k]);
            session_t s;
            char err[256];
            ck_assert_int_eq(session_open(&s, &c, err, sizeof err), 0);
            session_init(&s, 71);
            ck_assert_int_eq(session_next_batch(&s), 0);
            const size_t P = s.model->num_params;
            const double loss = model_forward(s.model, &s.batch);
            model_zero_grad(s.model);
            model_backward(s.model);
            if (!first) {
                first = malloc(P * sizeof(double));
                memcpy(first, s.model->grads, P * sizeof(double));
                loss0 = loss;
            } else {
                ck_assert_msg(memcmp(&loss, &loss0, sizeof loss) == 0 &&
                              memcmp(first, s.model->grads, P * sizeof(double)) == 0,
                              "%s at %d threads: not the bits of one thread",
                              arch ? "encdec" : "lm", counts[k]);
            }
            session_close(&s);
        }
        free(first);
    }
    threads_set(saved);
}
END_TEST

/* Sample standard deviation of tensor name of m. */
static double tensor_sd(const model_t *m, const char *name)
{
    const tensor_info_t *t = model_find_tensor(m, name);
    ck_assert_msg(t != NULL, "%s missing", name);
    double s = 0.0;
    for (size_t i = 0; i < model_tensor_size(t); i++) s += m->params[t->offset + i] * m->params[t->offset + i];
    return sqrt(s / (double)model_tensor_size(t));
}

/* W³ gets the gain of W¹ wherever a scheme scales it (DeepNorm β, Sub-LN γ, B2T L^−½, T-Fixup;
 * docs/design.md §6i), and Xavier's plain sd elsewhere: d = d_ff = 64, within 5 %. */
START_TEST(test_w3_gains)
{
    struct { placement_t p; norm_kind_t n; init_scheme_t init; double gain; } cases[] = {
        {PLACEMENT_PRE, NORM_RMSNORM, INIT_XAVIER_NORMAL, 1.0},
        {PLACEMENT_DEEPNORM, NORM_RMSNORM, INIT_XAVIER_NORMAL, 0.3799178428},   // (8·6)^−¼
        {PLACEMENT_SUBLN, NORM_RMSNORM, INIT_XAVIER_NORMAL, 1.5763586},         // √ln 12
        {PLACEMENT_B2T, NORM_RMSNORM, INIT_XAVIER_NORMAL, 0.4082482905},        // 6^−½
        {PLACEMENT_PRE, NORM_NONE, INIT_TFIXUP, 0.3688939},                     // (9·6)^−¼
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        config_t c;
        config_defaults(&c);
        llama(&c);
        c.model.layers = 6;
        c.model.d_model = c.model.d_ff = 64;
        c.model.vocab = 50;
        c.model.seq_len = 4;
        c.data.batch = 1;
        c.model.placement = cases[k].p;
        c.model.norm = cases[k].n;
        c.init.scheme = cases[k].init;
        model_t *m = model_create(&c, NULL);
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(r, 11 + k);
        model_init(m, &c, r);
        const double want = cases[k].gain * sqrt(2.0 / 128.0);
        for (int l = 0; l < 6; l += 5) {
            char w1[32], w3[32];
            snprintf(w1, sizeof w1, "layers/%02d/w1", l);
            snprintf(w3, sizeof w3, "layers/%02d/w3", l);
            ck_assert_msg(fabs(tensor_sd(m, w3) / want - 1.0) < 0.05, "%s %s: sd %g, want %g",
                          config_placement_name(cases[k].p), w3, tensor_sd(m, w3), want);
            ck_assert_msg(fabs(tensor_sd(m, w1) / want - 1.0) < 0.05, "%s", w1);
        }
        gsl_rng_free(r);
        model_free(m);
    }
}
END_TEST

/* Decoding (model_decode_last, `stability translate`) rotates at the right positions: for a
 * rope encoder–decoder the logits of a prefix of t + 1 tokens at its last position equal the full
 * forward's logits at position t (the decoder is causal), for every t: the prefix's queries and
 * keys sit at the positions the training forward gave them. */
START_TEST(test_decode_positions)
{
    config_t c;
    block_config(&c, 1, 31);
    llama(&c);
    c.model.placement = PLACEMENT_PRE;
    c.model.norm = NORM_RMSNORM;
    c.data.min_len = 5;   // no padding: every row is a full prefix
    session_t s;
    char err[256];
    ck_assert_int_eq(session_open(&s, &c, err, sizeof err), 0);
    session_init(&s, 31);
    ck_assert_int_eq(session_next_batch(&s), 0);
    model_t *m = s.model;
    const batch_t *b = &s.batch;
    const int B = b->B, T = b->T, V = m->V, C = m->C;
    for (int i = 0; i < B * T; i++) ck_assert_int_ge(b->tokens[i], 0);   // full rows
    model_forward(m, b);
    double *full = malloc((size_t)B * T * V * sizeof(double)), last[2 * 8], logits[2 * 11];
    memcpy(full, m->logits, (size_t)B * T * V * sizeof(double));
    ck_assert(B == 2 && C == 8 && V == 11);
    int32_t tok[2 * 6];
    model_encode(m, b);
    double moved = 0.0;
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < B; r++) memcpy(tok + r * (t + 1), b->tokens + r * T, (size_t)(t + 1) * sizeof(int32_t));
        const batch_t pre = {B, b->S, t + 1, b->src, tok, NULL};
        model_decode_last(m, &pre, last, logits);
        for (int r = 0; r < B; r++)
            for (int v = 0; v < V; v++) {
                const double want = full[((size_t)r * T + t) * V + v];
                ck_assert_msg(fabs(logits[r * V + v] - want) <= 1e-12 * (1.0 + fabs(want)),
                              "row %d position %d: decode %.17g, forward %.17g", r, t,
                              logits[r * V + v], want);
                if (t > 0) moved = fmax(moved, fabs(want - full[((size_t)r * T + t - 1) * V + v]));
            }
    }
    ck_assert(moved > 1e-3);   // the positions differ: the comparison is not vacuous
    free(full);
    session_close(&s);
}
END_TEST

/* Without sinusoidal positions the input is tok_embed·√d alone; with rope it is also what the
 * first sub-layer reads, and the positions act on q and k only. */
START_TEST(test_no_added_positions)
{
    for (int pos = POS_ROPE; pos <= POS_NONE; pos++) {
        config_t c;
        block_config(&c, 0, 41);
        c.model.positions = (positions_t)pos;
        session_t s;
        char err[256];
        ck_assert_int_eq(session_open(&s, &c, err, sizeof err), 0);
        session_init(&s, 41);
        ck_assert_int_eq(session_next_batch(&s), 0);
        model_forward(s.model, &s.batch);
        const model_t *m = s.model;
        ck_assert_ptr_null(m->pe);
        ck_assert((pos == POS_ROPE) == (m->rope_cos != NULL));
        for (int i = 0; i < s.batch.B * s.batch.T; i++)
            for (int j = 0; j < m->C; j++)
                ck_assert(m->stack[0].embed[i * m->C + j] ==
                          m->tok_embed[s.batch.tokens[i] * m->C + j] * sqrt((double)m->C));
        session_close(&s);
    }
}
END_TEST

/* Keys (docs/manual.md): the defaults write no new line (old files' configs unchanged), set ones
 * do and read back; rope with an odd d_head is an error naming the key. */
START_TEST(test_config_keys)
{
    config_t c, back;
    char ini[8192], err[CONFIG_ERR_MAX];
    config_defaults(&c);
    config_to_ini(&c, ini, sizeof ini);
    ck_assert_ptr_null(strstr(ini, "positions"));
    ck_assert_ptr_null(strstr(ini, "bias"));
    llama(&c);
    config_to_ini(&c, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "\npositions = rope\n"));
    ck_assert_ptr_nonnull(strstr(ini, "\nbias = off\n"));
    ck_assert_ptr_nonnull(strstr(ini, "\nactivation = swiglu\n"));
    ck_assert_int_eq(config_parse_string(&back, ini, "ini", err, sizeof err), 0);
    ck_assert(back.model.positions == POS_ROPE && back.model.bias == 0 &&
              back.model.activation == ACT_SWIGLU);
    static const struct { const char *sets[2]; const char *want; } bad[] = {
        {{"model.heads=8", "model.positions=rope"}, "--set model.positions: rope rotates pairs"},
        {{"model.positions=alibi", NULL}, "--set model.positions: must be sinusoidal, rope or none"},
        {{"model.bias=maybe", NULL}, "--set model.bias: must be on or off"},
        {{"model.activation=geglu", NULL}, "--set model.activation: must be relu, gelu or swiglu"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *sets[3] = {"model.d_model=8", bad[i].sets[0], bad[i].sets[1]};
        ck_assert_int_eq(config_load(&c, "configs/good_minimal.ini", sets, bad[i].sets[1] ? 3 : 2,
                                     err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad[i].want) != NULL, "%s: got %s", bad[i].want, err);
    }
    const char *ok[3] = {"model.d_model=12", "model.heads=3", "model.positions=rope"};   // d_head 4
    ck_assert_int_eq(config_load(&c, "configs/good_minimal.ini", ok, 3, err, sizeof err), 0);
}
END_TEST

Suite *block_suite(void)
{
    Suite *s = suite_create("block");
    TCase *tc = tcase_create("gradients");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, test_fd_parts);
    tcase_add_test(tc, test_fd_schemes);
    tcase_add_test(tc, test_fd_mlm);
    suite_add_tcase(s, tc);
    TCase *tc2 = tcase_create("parts");
    tcase_add_test(tc2, test_rope_kernel);
    tcase_add_test(tc2, test_tensors);
    tcase_add_test(tc2, test_bias_off_same_start);
    tcase_add_test(tc2, test_probe_columns);
    tcase_add_test(tc2, test_same_bits_any_threads);
    tcase_add_test(tc2, test_w3_gains);
    tcase_add_test(tc2, test_decode_positions);
    tcase_add_test(tc2, test_no_added_positions);
    tcase_add_test(tc2, test_config_keys);
    suite_add_tcase(s, tc2);
    return s;
}
