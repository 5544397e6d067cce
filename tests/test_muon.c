/* test_muon.c — the norm-constrained optimizers of docs/design.md §6h against values worked out
 * by hand: Newton–Schulz on matrices whose SVD is known (the singular vectors kept, each
 * singular value mapped by the scalar quintic, and the band they land in), one Muon update of a
 * rank-1 gradient, Lion's and nsgd's first updates on test_optim.c's 3-vector, the routing of a
 * model's tensors, and the keys (defaults per optimizer, refusals, the stored config). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include "tests.h"
#include "config/config.h"
#include "train/optim.h"
#include "train/qk_clip.h"
#include "train/train.h"

/* A (rows, cols) matrix U·diag(σ)·Vᵀ with U, V the Q factors of Gaussian matrices, r = min. */
static void known_svd(size_t rows, size_t cols, const double *sigma, gsl_rng *rng, double *G,
                      gsl_matrix *U, gsl_matrix *V)
{
    const size_t r = rows < cols ? rows : cols;
    gsl_matrix *Q[2] = {U, V};
    for (int k = 0; k < 2; k++) {
        const size_t n = Q[k]->size1;
        gsl_matrix *A = gsl_matrix_alloc(n, n), *R = gsl_matrix_alloc(n, n);
        gsl_vector *tau = gsl_vector_alloc(n);
        for (size_t i = 0; i < n * n; i++) A->data[i] = gsl_ran_gaussian(rng, 1.0);
        gsl_linalg_QR_decomp(A, tau);
        gsl_linalg_QR_unpack(A, tau, Q[k], R);
        gsl_matrix_free(A);
        gsl_matrix_free(R);
        gsl_vector_free(tau);
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double s = 0;
            for (size_t q = 0; q < r; q++)
                s += gsl_matrix_get(U, i, q) * sigma[q] * gsl_matrix_get(V, j, q);
            G[i * cols + j] = s;
        }
}

/* p applied `steps` times to x: p(x) = ax + bx³ + cx⁵, NS's action on one singular value. */
static double quintic(double x, int steps)
{
    for (int k = 0; k < steps; k++) x = 3.4445 * x - 4.7750 * x * x * x + 2.0315 * pow(x, 5);
    return x;
}

/* NS₅ of G = U diag(σ) Vᵀ is U diag(p⁵(σ/(‖σ‖ + 1e-7))) Vᵀ (each step is a polynomial in XXᵀ
 * times X, so it keeps the singular vectors): to 1e-12, wide and tall (the transpose), and the
 * singular values of σ spread over [0.01, 1]·σ_max land in the band printed here. */
START_TEST(test_ns_known_svd)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    const size_t R = 6, C = 10;
    const double sigma[6] = {3.0, 1.7, 0.9, 0.4, 0.1, 0.03};
    double lo = INFINITY, hi = 0, fro = 0;
    for (int q = 0; q < 6; q++) fro += sigma[q] * sigma[q];
    fro = sqrt(fro);
    for (int tall = 0; tall < 2; tall++) {
        const size_t rows = tall ? C : R, cols = tall ? R : C;
        gsl_matrix *U = gsl_matrix_alloc(rows, rows), *V = gsl_matrix_alloc(cols, cols);
        double G[60], want[60], work[200];
        known_svd(rows, cols, sigma, rng, G, U, V);
        ck_assert(optim_ns_work(rows, cols) <= 200);
        double phi[6];
        for (int q = 0; q < 6; q++) {
            phi[q] = quintic(sigma[q] / (fro + 1e-7), 5);
            lo = fmin(lo, phi[q]);
            hi = fmax(hi, phi[q]);
        }
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++) {
                double s = 0;
                for (size_t q = 0; q < 6; q++)
                    s += gsl_matrix_get(U, i, q) * phi[q] * gsl_matrix_get(V, j, q);
                want[i * cols + j] = s;
            }
        optim_ns(G, rows, cols, 5, 3.4445, -4.7750, 2.0315, work);
        for (size_t i = 0; i < rows * cols; i++)
            ck_assert_msg(fabs(G[i] - want[i]) < 1e-12, "%s [%zu] %.17g want %.17g",
                          tall ? "tall" : "wide", i, G[i], want[i]);
        // GSL's SVD of the result: every singular value in the band of Jordan et al. (2024)
        gsl_matrix *A = gsl_matrix_alloc(C, R), *W = gsl_matrix_alloc(R, R);
        gsl_vector *S = gsl_vector_alloc(R), *w = gsl_vector_alloc(R);
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++)
                gsl_matrix_set(A, tall ? i : j, tall ? j : i, G[i * cols + j]);
        gsl_linalg_SV_decomp(A, W, S, w);
        for (size_t q = 0; q < R; q++)
            ck_assert_msg(S->data[q] > 0.5 && S->data[q] < 1.5, "singular value %g", S->data[q]);
        gsl_matrix_free(A);
        gsl_matrix_free(W);
        gsl_vector_free(S);
        gsl_vector_free(w);
        gsl_matrix_free(U);
        gsl_matrix_free(V);
    }
    // σ/‖σ‖ from 0.0084 to 0.84 comes out in [0.68, 1.13] (measured: printed for the docs)
    printf("muon: NS5 maps sigma/|sigma| in [%.4f, %.4f] to [%.4f, %.4f]\n", sigma[5] / fro,
           sigma[0] / fro, lo, hi);
    ck_assert(lo > 0.6 && hi < 1.2);
    gsl_rng_free(rng);
}
END_TEST

/* An optimizer over one (rows, cols) hidden matrix, as optim_set_tensors makes it for a model. */
static void one_matrix(optim_t *o, const config_t *cfg, size_t rows, size_t cols)
{
    ck_assert_int_eq(optim_init(o, cfg, rows * cols), 0);
    o->seg[0].hidden = 1;
    o->seg[0].rows = rows;
    o->seg[0].cols = cols;
    o->work = malloc((optim_ns_work(rows, cols) + rows * cols) * sizeof(real));
    ck_assert_ptr_nonnull(o->work);
}

/* Muon, one update of g = x·yᵀ·3√5 (x = (1, 2)/√5, y = (1, 2, 2)/3), β = 0.95, λ = 0.1, α = 0.02:
 * m = 0.05g, u = 0.05g + 0.95·m = 0.0975g, X = u/(‖u‖ + 1e-7) = s₀·x·yᵀ with s₀ = ‖u‖/(‖u‖ +
 * 1e-7); one NS step (ns_steps = 1): O = p(s₀)·x·yᵀ, p(s) = 3.4445s − 4.7750s³ + 2.0315s⁵
 * ≈ 0.7010; s = √max(1, 3/2) (original) or 0.2·√3 (match_rms_adamw); θ ← 0.998θ − 0.02·s·O. */
START_TEST(test_muon_rank1)
{
    const double g[6] = {1, 2, 2, 2, 4, 4}, th0[6] = {0.5, -1, 2, 0.25, 0, -0.75};
    for (int k = 0; k < 2; k++) {
        config_t cfg;
        config_defaults(&cfg);
        cfg.train.optimizer = OPT_MUON;
        cfg.train.momentum = 0.95;
        cfg.train.weight_decay = 0.1;
        cfg.train.muon_ns_steps = 1;
        cfg.train.muon_scale = k ? MUON_SCALE_MATCH_RMS_ADAMW : MUON_SCALE_ORIGINAL;
        optim_t o;
        one_matrix(&o, &cfg, 2, 3);
        double th[6];
        memcpy(th, th0, sizeof th);
        optim_update(&o, th, g, 0.02);
        const double nu = 0.0975 * 3 * sqrt(5.0), s0 = nu / (nu + 1e-7);
        const double p = 3.4445 * s0 - 4.7750 * pow(s0, 3) + 2.0315 * pow(s0, 5);
        const double scale = k ? 0.2 * sqrt(3.0) : sqrt(1.5);
        for (int i = 0; i < 6; i++) {
            const double want = th0[i] * (1 - 0.02 * 0.1) - 0.02 * scale * p * g[i] / (3 * sqrt(5.0));
            ck_assert_msg(fabs(th[i] - want) < 1e-15, "[%d] %.17g want %.17g", i, th[i], want);
            ck_assert_msg(fabs(o.m[i] - 0.05 * g[i]) < 1e-15, "m[%d]", i);
        }
        ck_assert_msg(fabs(o.seg[0].sumsq - scale * scale * p * p) < 1e-14, "sumsq %g",
                      o.seg[0].sumsq);   // ‖s·O‖²_F = s²p²
        optim_free(&o);
    }
}
END_TEST

static const double THETA0[3] = {0.5, -1.0, 2.0};
static const double GRADS[2][3] = {{0.1, -0.2, 0.3}, {-0.05, 0.4, 0.1}};

/* Lion, β = (0.9, 0.99), λ = 0.1, α = 0.01: update 1 θ ← θ − α(sign(g₁) + λθ) = (0.4895, −0.989,
 * 1.988); m₁ = 0.01g₁; c₂ = 0.9m₁ + 0.1g₂ = (−0.0041, 0.0382, 0.0127), so θ₂ = (0.4990105,
 * −0.998011, 1.976012). (m updated with β₁ instead would give c₂[0] = +0.004.) */
START_TEST(test_lion)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.optimizer = OPT_LION;
    cfg.train.beta1 = 0.9;
    cfg.train.beta2 = 0.99;
    cfg.train.weight_decay = 0.1;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    ck_assert_ptr_null(o.v);
    double th[3];
    memcpy(th, THETA0, sizeof th);
    optim_update(&o, th, GRADS[0], 0.01);
    const double w1[3] = {0.4895, -0.989, 1.988}, w2[3] = {0.4990105, -0.998011, 1.976012};
    for (int i = 0; i < 3; i++) ck_assert_msg(fabs(th[i] - w1[i]) < 1e-15, "1: [%d] %.17g", i, th[i]);
    ck_assert(fabs(o.seg[0].sumsq - 3.0) < 1e-15);   // sign(c)² summed
    optim_update(&o, th, GRADS[1], 0.01);
    for (int i = 0; i < 3; i++) ck_assert_msg(fabs(th[i] - w2[i]) < 1e-15, "2: [%d] %.17g", i, th[i]);
    optim_free(&o);
}
END_TEST

/* nsgd, μ = 0.9, λ = 0.1, α = 0.01: b₁ = g₁, ‖b₁‖ = √0.14, θ₁ = 0.999θ₀ − 0.01·g₁/(√0.14 + 1e-8);
 * b₂ = 0.9g₁ + g₂ = (0.04, 0.22, 0.37), ‖b₂‖ = √0.1869. */
START_TEST(test_nsgd)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.train.optimizer = OPT_NSGD;
    cfg.train.momentum = 0.9;
    cfg.train.weight_decay = 0.1;
    optim_t o;
    ck_assert_int_eq(optim_init(&o, &cfg, 3), 0);
    double th[3], want[3];
    memcpy(th, THETA0, sizeof th);
    optim_update(&o, th, GRADS[0], 0.01);
    for (int i = 0; i < 3; i++) {
        want[i] = 0.999 * THETA0[i] - 0.01 * GRADS[0][i] / (sqrt(0.14) + 1e-8);
        ck_assert_msg(fabs(th[i] - want[i]) < 1e-15, "1: [%d] %.17g want %.17g", i, th[i], want[i]);
    }
    optim_update(&o, th, GRADS[1], 0.01);
    const double b2[3] = {0.04, 0.22, 0.37};
    for (int i = 0; i < 3; i++) {
        const double w = 0.999 * want[i] - 0.01 * b2[i] / (sqrt(0.1869) + 1e-8);
        ck_assert_msg(fabs(th[i] - w) < 1e-15, "2: [%d] %.17g want %.17g", i, th[i], w);
    }
    optim_free(&o);
}
END_TEST

/* The routing: a model's hidden matrices (wq wk wv wo w1 w2, SwiGLU's w3) are Muon's, every
 * other tensor (tok_embed, biases, norms) AdamW's; the singular values of update 1's O. */
START_TEST(test_routing)
{
    config_t cfg;
    config_defaults(&cfg);
    cfg.model.layers = 2;
    cfg.model.d_model = 16;
    cfg.model.heads = 2;
    cfg.model.d_ff = 24;
    cfg.model.vocab = 13;
    cfg.model.seq_len = 6;
    cfg.model.activation = ACT_SWIGLU;
    cfg.data.task = TASK_COPY;
    cfg.data.batch = 3;
    cfg.train.steps = 2;
    cfg.train.optimizer = OPT_MUON;
    cfg.train.momentum = 0.95;
    cfg.train.warmup = 0;
    cfg.train.lr = 0.01;
    train_t *t;
    char err[256];
    ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
    const model_t *m = t->s.model;
    int hidden = 0;
    for (int i = 0; i < m->num_tensors; i++) {
        const char *k = m->tensors[i].kind;
        const int want = !strcmp(k, "wq") || !strcmp(k, "wk") || !strcmp(k, "wv") ||
                         !strcmp(k, "wo") || !strcmp(k, "w1") || !strcmp(k, "w2") || !strcmp(k, "w3");
        ck_assert_msg(t->opt.seg[i].hidden == want, "%s", m->tensors[i].name);
        hidden += want;
    }
    ck_assert_int_eq(hidden, 14);
    ck_assert_ptr_nonnull(t->opt.v);
    train_record_t r;
    double lo = INFINITY, hi = 0;
    t->opt.want_sv = 1;
    train_step(t, &r);
    for (int i = 0; i < m->num_tensors; i++) {
        const optim_seg_t *s = &t->opt.seg[i];
        if (!s->hidden) { ck_assert(isnan(s->sv_min)); continue; }
        // the largest in Jordan et al.'s band; u's small singular values (x = σ/‖u‖_F below
        // ≈ 3.4445⁻⁵ = 0.002) stay below it: measured, printed for docs/design.md §6h
        ck_assert_msg(s->sv_min > 0 && s->sv_min <= s->sv_max && s->sv_max > 0.7 &&
                      s->sv_max < 1.5, "%s: [%g, %g]", m->tensors[i].name, s->sv_min, s->sv_max);
        lo = fmin(lo, s->sv_min);
        hi = fmax(hi, s->sv_max);
    }
    printf("muon: update 1's O over the hidden matrices: singular values in [%.4f, %.4f]\n", lo, hi);
    train_free(t);
}
END_TEST

/* The keys: muon's momentum defaults to 0.95 and lion's beta2 to 0.99 where unset, kept where
 * set; muon's keys without muon, qk_clip with qk_norm or attn_softcap, muon with μP or the
 * curvature measure are refused (exit 2) naming the key; the stored config writes muon's keys
 * with muon only and qk_clip only when on. */
START_TEST(test_keys)
{
    config_t cfg;
    char err[CONFIG_ERR_MAX], ini[8192];
    const char *muon[] = {"train.optimizer=muon"}, *muon_mom[] = {"train.optimizer=muon",
                                                                   "train.momentum=0.9"};
    const char *lion[] = {"train.optimizer=lion"};
    ck_assert_int_eq(config_load(&cfg, NULL, muon, 1, err, sizeof err), 0);
    ck_assert(cfg.train.momentum == 0.95 && cfg.train.muon_ns_steps == 5);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "muon_ns_a = 3.4445"));
    ck_assert_ptr_nonnull(strstr(ini, "muon_scale = original"));
    ck_assert_ptr_null(strstr(ini, "qk_clip"));
    ck_assert_int_eq(config_load(&cfg, NULL, muon_mom, 2, err, sizeof err), 0);
    ck_assert(cfg.train.momentum == 0.9);
    ck_assert_int_eq(config_load(&cfg, NULL, lion, 1, err, sizeof err), 0);
    ck_assert(cfg.train.beta1 == 0.9 && cfg.train.beta2 == 0.99 && cfg.train.momentum == 0.9);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_null(strstr(ini, "muon_"));
    const struct { const char *set[3]; const char *key; } bad[] = {
        {{"train.muon_ns_steps=3"}, "train.muon_ns_steps"},
        {{"train.optimizer=lion", "train.muon_scale=match_rms_adamw"}, "train.muon_scale"},
        {{"train.optimizer=muon", "train.muon_ns_steps=0"}, "train.muon_ns_steps"},
        {{"train.optimizer=muon", "train.muon_scale=rms"}, "train.muon_scale"},
        {{"train.optimizer=muon", "train.muon_adamw_lr=-1"}, "train.muon_adamw_lr"},
        {{"train.qk_clip=-5"}, "train.qk_clip"},
        {{"train.qk_clip=100", "model.qk_norm=rmsnorm"}, "train.qk_clip"},
        {{"model.attn_softcap=30", "train.qk_clip=50"}, "train.qk_clip"},
        {{"train.optimizer=nsgd", "probe.curvature_every=5"}, "probe.curvature_every"},
        {{"init.base_width=8", "init.parametrization=mup", "train.optimizer=muon"},
         "init.parametrization"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = 0;
        while (n < 3 && bad[i].set[n]) n++;
        ck_assert_int_eq(config_load(&cfg, NULL, bad[i].set, n, err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad[i].key) != NULL, "%zu: %s", i, err);
    }
    const char *on[] = {"train.qk_clip=100"};
    ck_assert_int_eq(config_load(&cfg, NULL, on, 1, err, sizeof err), 0);
    config_to_ini(&cfg, ini, sizeof ini);
    ck_assert_ptr_nonnull(strstr(ini, "qk_clip = 100"));
}
END_TEST

/* The largest |logit| of head h of the attention sub-layer sl over the batch of the last forward. */
static double head_max(const model_t *m, const sublayer_t *sl, int h)
{
    double S = 0;
    for (int b = 0; b < m->batch.B; b++) S = fmax(S, sl->amax[(size_t)b * m->H + h]);
    return S;
}

/* QK-Clip (Kimi K2): qk_clip_apply(τ) counts the heads of both layers with S > τ; after it the
 * same batch's forward has max |logit| = τ in every head of layer 0 whose S exceeded τ (q and k each scaled by √(τ/S), biases too, so the logits by τ/S: to
 * 1e-12 relative) and the same max elsewhere; with rope and with biases off too. */
START_TEST(test_qk_clip)
{
    for (int k = 0; k < 2; k++) {
        config_t cfg;
        config_defaults(&cfg);
        cfg.model.layers = 2;
        cfg.model.d_model = 16;
        cfg.model.heads = 4;
        cfg.model.d_ff = 24;
        cfg.model.vocab = 13;
        cfg.model.seq_len = 6;
        cfg.model.positions = k ? POS_ROPE : POS_SINUSOIDAL;
        cfg.model.bias = !k;
        cfg.init.scheme = INIT_NORMAL;
        cfg.init.std = 0.6;   // large logits: some heads above τ, some below
        cfg.data.task = TASK_COPY;
        cfg.data.batch = 3;
        cfg.train.steps = 1;
        train_t *t;
        char err[256];
        ck_assert_int_eq(train_create(&t, &cfg, err, sizeof err), 0);
        model_t *m = t->s.model;
        ck_assert_int_eq(session_next_batch(&t->s), 0);
        model_forward(m, &t->s.batch);
        const layer_stack_t *st = &m->stack[0];
        double before[2][4], lo = INFINITY, hi = 0;
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 4; h++) {
                before[l][h] = head_max(m, stack_sublayer(st, l, 0), h);
                if (l) continue;   // τ between layer 0's smallest and largest S
                lo = fmin(lo, before[l][h]);
                hi = fmax(hi, before[l][h]);
            }
        const double tau = 0.5 * (lo + hi);
        int want = 0;
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 4; h++) want += before[l][h] > tau;
        ck_assert_msg(want > 0 && want < 8, "S in [%g, %g]", lo, hi);
        ck_assert(before[0][0] > tau || before[0][1] > tau || before[0][2] > tau ||
                  before[0][3] > tau);   // layer 0 has a clipped head to check
        ck_assert_int_eq(qk_clip_apply(m, tau), want);
        model_forward(m, &t->s.batch);
        for (int h = 0; h < 4; h++) {   // layer 0 (layer 1's input moves with layer 0's clip)
            const double a = head_max(m, stack_sublayer(st, 0, 0), h);
            const double w = before[0][h] > tau ? tau : before[0][h];
            ck_assert_msg(fabs(a - w) <= 1e-12 * w, "head %d: %.17g want %.17g", h, a, w);
        }
        train_free(t);
    }
}
END_TEST

/* The resume state (params, m, v, t, both rngs, step, batches) is complete for muon (with
 * QK-Clip), lion and nsgd: copied after 3 updates into a fresh run, updates 4–6 are the same
 * bits. */
START_TEST(test_resume_state)
{
    const optimizer_t kinds[3] = {OPT_MUON, OPT_LION, OPT_NSGD};
    for (int k = 0; k < 3; k++) {
        config_t cfg;
        config_defaults(&cfg);
        cfg.model.layers = 2;
        cfg.model.d_model = 16;
        cfg.model.heads = 2;
        cfg.model.d_ff = 24;
        cfg.model.vocab = 13;
        cfg.model.seq_len = 6;
        cfg.data.task = TASK_COPY;
        cfg.data.batch = 3;
        cfg.train.steps = 6;
        cfg.train.optimizer = kinds[k];
        cfg.train.lr = 0.02;
        cfg.train.warmup = 0;
        cfg.train.weight_decay = 0.1;
        cfg.train.qk_clip = k == 0 ? 1.0 : 0.0;
        cfg.probe.every = 2;
        train_t *a, *b, *c;
        char err[256];
        ck_assert_int_eq(train_create(&a, &cfg, err, sizeof err), 0);
        ck_assert_int_eq(train_create(&b, &cfg, err, sizeof err), 0);
        ck_assert_int_eq(train_create(&c, &cfg, err, sizeof err), 0);
        train_record_t ra[6], r;
        for (int s = 0; s < 6; s++) train_step(a, &ra[s]);
        for (int s = 0; s < 3; s++) train_step(b, &r);
        const size_t n = b->s.model->num_params;
        memcpy(c->s.model->params, b->s.model->params, n * sizeof(double));
        memcpy(c->opt.m, b->opt.m, n * sizeof(double));
        ck_assert((b->opt.v != NULL) == (k == 0));
        if (b->opt.v) memcpy(c->opt.v, b->opt.v, n * sizeof(double));
        c->opt.t = b->opt.t;
        memcpy(gsl_rng_state(c->s.rng_init), gsl_rng_state(b->s.rng_init), gsl_rng_size(b->s.rng_init));
        memcpy(gsl_rng_state(c->s.rng_data), gsl_rng_state(b->s.rng_data), gsl_rng_size(b->s.rng_data));
        c->step = b->step;
        c->batches = b->batches;
        for (int s = 3; s < 6; s++) {
            train_step(c, &r);
            ck_assert_msg(memcmp(&r.loss, &ra[s].loss, sizeof(double)) == 0, "%s step %d",
                          config_optimizer_name(kinds[k]), s + 1);
        }
        ck_assert_int_eq(memcmp(c->s.model->params, a->s.model->params, n * sizeof(double)), 0);
        if (k == 0) ck_assert(ra[0].qk_clipped > 0);   // τ = 1 clips at update 1
        train_free(a);
        train_free(b);
        train_free(c);
    }
}
END_TEST

Suite *muon_suite(void)
{
    Suite *s = suite_create("muon");
    TCase *tc = tcase_create("updates");
    tcase_add_test(tc, test_ns_known_svd);
    tcase_add_test(tc, test_muon_rank1);
    tcase_add_test(tc, test_lion);
    tcase_add_test(tc, test_nsgd);
    tcase_add_test(tc, test_routing);
    tcase_add_test(tc, test_keys);
    tcase_add_test(tc, test_qk_clip);
    tcase_add_test(tc, test_resume_state);
    suite_add_tcase(s, tc);
    return s;
}
