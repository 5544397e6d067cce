/* test_dynamics.c — the training-dynamics measures and mitigations (docs/design.md §6g):
 * QK-norm, soft-capping and the z-loss against finite differences in lm and encdec under
 * several placements; the attention entropy, max |logit| and log Z the forward keeps against
 * a direct computation from the attention matrix and the logits; the attention's bits with
 * and without the statistics; the config errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests.h"
#include "config/config.h"
#include "model/session.h"
#include "measure/dynamics.h"
#include "measure/gradcheck.h"
#include "measure/diagnose.h"
#include "nn/attention.h"

/* d = 8, 2 heads (d_head 4), d_ff = 12, L = 2, n = 6, vocab 11, batch 3. */
static void small_config(config_t *c, int encdec)
{
    config_defaults(c);
    c->model.layers = 2;
    c->model.d_model = 8;
    c->model.heads = 2;
    c->model.d_ff = 12;
    c->model.seq_len = 6;
    c->model.vocab = 11;
    c->data.batch = 3;
    if (encdec) {   // padded source rows: masked keys and uncounted queries
        c->model.arch = ARCH_ENCDEC;
        c->model.dec_layers = 2;
        c->data.task = TASK_REVERSE;
        c->data.min_len = 2;
    } else {
        c->model.causal = 1;
    }
}

/* Finite differences on every entry of every tensor (γ, β, biases perturbed). */
static double fd_worst(const config_t *c, const char *label)
{
    session_t s;
    char err[256];
    ck_assert_int_eq(session_open(&s, c, err, sizeof err), 0);
    session_init(&s, c->init.seed);
    ck_assert_int_eq(session_next_batch(&s), 0);
    model_perturb(s.model, s.rng_init, 0.3);
    gradcheck_result_t *res = calloc((size_t)s.model->num_tensors, sizeof *res);
    const double worst = gradcheck_run(s.model, &s.batch, (size_t)-1, 1e-5, s.rng_data, res);
    int found_qk = 0;
    for (int k = 0; k < s.model->num_tensors; k++)
        found_qk |= strstr(res[k].tensor->name, "qnorm.gamma") != NULL;
    ck_assert_int_eq(found_qk, c->model.qk_norm != QK_NORM_OFF);   // the tensors exist
    if (!(worst < 1e-6)) fprintf(stderr, "gradcheck %s: worst %.3e\n", label, worst);
    free(res);
    session_close(&s);
    return worst;
}

/* Every mitigation alone and together, lm and encdec, Post-LN, Pre-LN, Peri-LN, NormFormer. */
START_TEST(test_fd_mitigations)
{
    static const placement_t places[] = {PLACEMENT_POST, PLACEMENT_PRE, PLACEMENT_PERI,
                                         PLACEMENT_NORMFORMER};
    static const struct { qk_norm_t qk; double cap, z; } mits[] = {
        {QK_NORM_LAYERNORM, 0, 0}, {QK_NORM_RMSNORM, 0, 0}, {QK_NORM_OFF, 0.7, 0},
        {QK_NORM_OFF, 0, 0.3}, {QK_NORM_LAYERNORM, 0.7, 0.3}, {QK_NORM_RMSNORM, 1.5, 1.0},
    };
    double worst = 0.0;
    int n = 0;
    for (int encdec = 0; encdec < 2; encdec++)
        for (int p = 0; p < 4; p++)
            for (int k = 0; k < 6; k++) {
                config_t c;
                small_config(&c, encdec);
                c.model.placement = places[p];
                c.model.qk_norm = mits[k].qk;
                c.model.attn_softcap = mits[k].cap;
                c.train.z_loss = mits[k].z;
                c.init.std = 0.5;
                char label[96];
                snprintf(label, sizeof label, "%s %s qk %d cap %g z %g", encdec ? "encdec" : "lm",
                         config_placement_name(places[p]), (int)mits[k].qk, mits[k].cap, mits[k].z);
                const double e = fd_worst(&c, label);
                ck_assert_msg(e < 1e-6, "%s: relative error %.3e", label, e);
                if (e > worst) worst = e;
                n++;
            }
    printf("gradcheck mitigations: %d models, worst relative error %.3e\n", n, worst);
}
END_TEST

/* The queries a statistic counts in row b of sub-layer sl (as dynamics.c, from the batch). */
static int queries(const model_t *m, const layer_stack_t *st, int b)
{
    const int32_t *ids = st->kind == STACK_ENC ? m->batch.src : m->batch.tokens;
    const int T = st->kind == STACK_ENC ? m->batch.S : m->batch.T;
    if (m->nstacks == 1) return T;
    int n = 0;
    while (n < T && ids[(size_t)b * T + n] >= 0) n++;
    return n;
}

/* Entropy and max |logit| of head h of sl recomputed from att and from q·kᵀ/√Dh (capped). */
static void direct_head(const model_t *m, const layer_stack_t *st, const sublayer_t *sl, int h,
                        double *ent, double *amax)
{
    const int B = m->batch.B, Tq = st->kind == STACK_ENC ? m->batch.S : m->batch.T;
    const int Tk = sl->rule.kind == SUB_CROSS_ATTN ? m->batch.S : Tq, C = m->C, Dh = m->Dh;
    const double cap = m->shape.softcap;
    double sum = 0.0, n = 0.0, mx = 0.0;
    for (int b = 0; b < B; b++) {
        const int nq = queries(m, st, b);
        const int nkeys = sl->rule.kind == SUB_CROSS_ATTN || st->kind == STACK_ENC
                          ? m->src_len[b] : Tk;
        for (int i = 0; i < nq; i++) {
            const double *p = sl->att + (((size_t)b * m->H + h) * Tq + i) * Tk;
            const int nk = st->kind == STACK_ENC || sl->rule.kind == SUB_CROSS_ATTN ? nkeys : i + 1;
            for (int j = 0; j < nk; j++) {
                if (p[j] > 0) sum -= p[j] * log(p[j]);
                double s = 0.0;
                for (int d = 0; d < Dh; d++)
                    s += sl->qa[((size_t)b * Tq + i) * C + h * Dh + d] *
                         sl->ka[((size_t)b * Tk + j) * C + h * Dh + d];
                s /= sqrt((double)Dh);
                if (cap > 0) s = cap * tanh(s / cap);
                mx = fmax(mx, fabs(s));
            }
            n += 1;
        }
    }
    *ent = sum / n;
    *amax = mx;
}

/* The forward's statistics equal the direct ones: entropies, max |logit|, log Z, z-term. */
START_TEST(test_statistics_direct)
{
    for (int v = 0; v < 4; v++) {
        config_t c;
        small_config(&c, v & 1);
        c.model.attn_softcap = v >= 2 ? 0.9 : 0.0;
        c.model.qk_norm = v >= 2 ? QK_NORM_RMSNORM : QK_NORM_OFF;
        c.train.z_loss = 0.25;
        c.init.std = 0.5;
        c.init.scheme = INIT_NORMAL;
        session_t s;
        char err[256];
        ck_assert_int_eq(session_open(&s, &c, err, sizeof err), 0);
        session_init(&s, 7);
        ck_assert_int_eq(session_next_batch(&s), 0);
        model_t *m = s.model;
        model_forward(m, &s.batch);
        probe_axes_t ax;
        ck_assert_int_eq(probe_axes_from_model(&ax, m), 0);
        double *ent = malloc((size_t)ax.L * ax.nhead * sizeof(double));
        double *amax = malloc((size_t)ax.L * ax.nhead * sizeof(double));
        double *rms = malloc((size_t)ax.L * sizeof(double)), out[3];
        dynamics_layers(&ax, m, ent, amax, rms, out);
        double max_all = 0.0;
        for (int st = 0; st < m->nstacks; st++)
            for (int l = 0; l < m->stack[st].L; l++)
                for (int i = 0; i < m->stack[st].nsub; i++) {
                    const sublayer_t *sl = stack_sublayer(&m->stack[st], l, i);
                    if (sl->rule.kind == SUB_FFN) continue;
                    for (int h = 0; h < m->H; h++) {
                        double e, a;
                        direct_head(m, &m->stack[st], sl, h, &e, &a);
                        const size_t o = (size_t)sl->layer * ax.nhead +
                                         (sl->rule.kind == SUB_CROSS_ATTN ? m->H : 0) + h;
                        ck_assert_msg(fabs(ent[o] - e) <= 1e-12 * e, "entropy %.17g vs %.17g", ent[o], e);
                        ck_assert_msg(fabs(amax[o] - a) <= 1e-12 * a, "max logit %.17g vs %.17g", amax[o], a);
                        ck_assert(e > 0.05 && a > 0.05);   // not trivially zero
                        max_all = fmax(max_all, a);
                    }
                }
        // log Z of every scored position, and the z-term c·mean (log Z)²
        const size_t N = (size_t)s.batch.B * s.batch.T, V = (size_t)m->V;
        double zsum = 0.0, zabs = 0.0, lmax = 0.0;
        int scored = 0;
        for (size_t r = 0; r < N; r++) {
            if (s.batch.targets[r] < 0) continue;
            double z = 0.0;
            for (size_t k = 0; k < V; k++) {
                z += exp(m->logits[r * V + k]);
                lmax = fmax(lmax, fabs(m->logits[r * V + k]));
            }
            zsum += log(z) * log(z);
            zabs += fabs(log(z));
            scored++;
        }
        ck_assert(scored > 0);
        ck_assert_msg(fabs(m->z_term - 0.25 * zsum / scored) <= 1e-12 * m->z_term, "z-term");
        ck_assert(fabs(out[0] - zabs / scored) <= 1e-12 * out[0]);
        ck_assert(fabs(out[2] - lmax) <= 1e-12 * lmax);
        dynamics_scalars_t d;
        dynamics_scalars(m, &d);
        ck_assert(d.max_logit == max_all);
        ck_assert(d.logz_mean_abs == out[0] && d.z_term == m->z_term);
        ck_assert(fabs(model_objective(m) - (m->loss + m->z_term)) == 0.0);
        free(ent); free(amax); free(rms);
        probe_axes_free(&ax);
        session_close(&s);
    }
}
END_TEST

/* The statistics leave the attention's bits alone: att and ctx with and without them. */
START_TEST(test_statistics_keep_bits)
{
    enum { B = 2, T = 9, C = 12, H = 3 };
    double q[B * T * C], k[B * T * C], v[B * T * C];
    double att0[B * H * T * T], att1[B * H * T * T], ctx0[B * T * C], ctx1[B * T * C];
    double ent[B * H], amax[B * H];
    int len[B] = {9, 5};
    srand(3);
    for (int i = 0; i < B * T * C; i++) {
        q[i] = 3.0 * rand() / RAND_MAX - 1.5;
        k[i] = 3.0 * rand() / RAND_MAX - 1.5;
        v[i] = 2.0 * rand() / RAND_MAX - 1.0;
    }
    for (int causal = 0; causal < 2; causal++) {
        attention_forward(ctx0, att0, q, k, v, B, T, T, C, H, causal, len);
        const attention_opts_t o = {0.0, NULL, len, ent, amax, 0.0, NULL};
        attention_forward_opt(ctx1, att1, q, k, v, B, T, T, C, H, causal, len, &o);
        ck_assert(memcmp(att0, att1, sizeof att0) == 0);
        ck_assert(memcmp(ctx0, ctx1, sizeof ctx0) == 0);
        ck_assert(ent[0] > 0.0 && amax[0] > 0.0);
    }
}
END_TEST

/* Bad values: FILE:LINE-style errors naming the key, exit 2. */
START_TEST(test_config_errors)
{
    static const struct { const char *sets[2]; const char *want; } cases[] = {
        {{"train.z_loss=-1e-4", NULL}, "--set train.z_loss:"},
        {{"model.attn_softcap=-3", NULL}, "--set model.attn_softcap:"},
        {{"model.qk_norm=l2", NULL}, "--set model.qk_norm:"},
        {{"model.qk_norm=layernorm", "model.heads=8"}, "--set model.qk_norm: layernorm over d_head = 1"},
        {{"model.heads=8", "model.qk_norm=layernorm"}, "--set model.qk_norm: layernorm over d_head = 1"},
        {{"model.qk_norm=rmsnorm", "init.zero_qk=true"}, "init.zero_qk (q = k = 0) and model.qk_norm"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        config_t c;
        char err[CONFIG_ERR_MAX];
        const char *sets[3] = {"model.d_model=8", cases[i].sets[0], cases[i].sets[1]};
        const int rc = config_load(&c, "configs/good_minimal.ini", sets, cases[i].sets[1] ? 3 : 2, err,
                                   sizeof err);
        ck_assert_int_eq(rc, 2);
        ck_assert_msg(strstr(err, cases[i].want) != NULL, "%s: got %s", cases[i].want, err);
    }
    config_t c;
    char err[CONFIG_ERR_MAX];
    const char *ok[4] = {"model.d_model=8", "model.heads=8", "model.qk_norm=rmsnorm", "train.z_loss=0"};
    ck_assert_int_eq(config_load(&c, "configs/good_minimal.ini", ok, 4, err, sizeof err), 0);
}
END_TEST

/* The diagnosis rules on made-up series: each event at the update the rule names, once. */
START_TEST(test_diagnose_rules)
{
    const unsigned char text[] = "aabbaabb";
    ck_assert(fabs(diagnose_unigram_entropy(text, 8) - log(2.0)) < 1e-15);
    config_t c;
    config_defaults(&c);
    c.model.vocab = 256;   // ln V = 5.55: the losses below stay under the explosion line
    c.train.steps = 300;
    c.data.task = TASK_TEXT;   // a byte LM (the random task's floor would call 2.0 a leak)
    c.model.causal = 1;
    diagnose_t d;
    diagnose_init(&d, &c, 3.0);
    diagnose_axes(&d, 2, NULL, 0, NULL);   // no per-head rows: no event waits for its place
    int seen = 0;
    for (long t = 1; t <= 300; t++) {
        // the loss sits on the plateau (3.05) from update 31 to 200, then falls
        const double loss = t <= 30 ? 5.0 : t <= 200 ? 3.05 : 2.0;
        const double logit = t < 150 ? 2.0 + t * 0.1 : 220.0;   // > 100 × 2.1 (update 1) first at 150
        const double ent = t < 250 ? 1.0 : 0.05;
        const diagnose_update_t u = {.step = t, .loss = loss, .lr = 1e-3, .grad_norm = 1.0,
                                     .max_logit = logit, .min_entropy = ent};
        const int e = diagnose_step(&d, &u);
        ck_assert_int_eq(e & seen, 0);   // never twice
        seen |= e;
        if (e & DIAG_LOGIT_GROWTH) ck_assert_int_eq(t, 150);
        if (e & DIAG_ENTROPY_COLLAPSE) ck_assert_int_eq(t, 250);
        // the 20-update mean first lies within 0.1 of 3.0 at update 50 (31..50 all 3.05):
        // stuck after 100 such updates in a row, at 149, reported as since update 50
        if (e & DIAG_PLATEAU) ck_assert_int_eq(t, 149);
    }
    ck_assert_int_eq(seen, DIAG_PLATEAU | DIAG_LOGIT_GROWTH | DIAG_ENTROPY_COLLAPSE);
    ck_assert_int_eq(d.at[diagnose_index(DIAG_PLATEAU)], 50);
    ck_assert_int_eq(d.plateau_longest, 153);   // 50 … 202: two losses of 2.0 keep the mean at 2.945
    ck_assert_int_eq(diagnose_finish(&d, 1), 0);   // it learned: 5.0 -> 2.0
    // gradient collapse: layer norms 0.001·√2 and 1·√2 → ratio 0.001; NaN columns ignored
    const double g[2][3] = {{0.001, 0.001, NAN}, {1.0, 1.0, NAN}};
    ck_assert(fabs(diagnose_grad_ratio(&g[0][0], 2, 3) - 0.001) < 1e-15);
    diagnose_init(&d, &c, NAN);
    diagnose_axes(&d, 2, NULL, 0, NULL);
    // against the first probe row's ratio (1 here): 0.001 is 1000 x below it
    const double g1[2][3] = {{1.0, 1.0, NAN}, {1.0, 1.0, NAN}};
    diagnose_update_t u = {.step = 1, .loss = 1.0, .lr = 1e-3, .max_logit = NAN,
                           .min_entropy = NAN, .grad = &g1[0][0], .K = 3};
    ck_assert_int_eq(diagnose_step(&d, &u), 0);
    u.step = 7;
    u.grad = &g[0][0];
    ck_assert_int_eq(diagnose_step(&d, &u), DIAG_GRAD_COLLAPSE);
    u.step = 8;
    ck_assert_int_eq(diagnose_step(&d, &u), 0);
    char msg[400];
    diagnose_message(&d, DIAG_GRAD_COLLAPSE, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "update 7") != NULL && strstr(msg, "lowest in layer 1") != NULL, "%s", msg);
}
END_TEST

Suite *dynamics_suite(void)
{
    Suite *s = suite_create("dynamics");
    TCase *tc = tcase_create("dynamics");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_fd_mitigations);
    tcase_add_test(tc, test_statistics_direct);
    tcase_add_test(tc, test_statistics_keep_bits);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_diagnose_rules);
    suite_add_tcase(s, tc);
    return s;
}
