/* test_memory.c — the memory estimate checked before a run (model_memory_doubles): arithmetic
 * beyond 64 layers, equal to what model_create lays out, and instant at any depth. */
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include "tests.h"
#include "config/config.h"
#include "model/model.h"

/* d = 8, 2 heads, d_ff = 12, n = 5, vocab = 11, batch 2; sinusoidal positions. */
static void small_config(config_t *cfg, int arch, int placement, int L, int M)
{
    config_defaults(cfg);
    cfg->model.arch = arch;
    cfg->model.placement = placement;
    cfg->model.layers = L;
    cfg->model.dec_layers = M;
    cfg->model.d_model = 8;
    cfg->model.heads = 2;
    cfg->model.d_ff = 12;
    cfg->model.seq_len = 5;
    cfg->model.src_len = 7;
    cfg->model.vocab = 11;
    cfg->data.batch = 2;
}

/* What model_create allocates: parameters and gradients, activations, their gradients, the
 * sinusoidal table of max(T, S) positions (model.c). */
static double laid_out(const config_t *cfg)
{
    model_t *m = model_create(cfg, NULL);
    ck_assert_ptr_nonnull(m);
    const int P = m->T > m->S ? m->T : m->S;
    const double n = 2.0 * (double)m->num_params + (double)m->num_acts + (double)m->num_dacts +
                     (double)P * m->C;
    model_free(m);
    return n;
}

/* Beyond 64 layers the estimate is arithmetic; it equals the model's own layout, for every
 * kind of layer (MixLN's two kinds at ratio 0.3: 21 Post-LN layers of 70, 20 of 67), either
 * stack, dropout's masks and B2T's extra stream included. */
START_TEST(test_memory_arithmetic_is_exact)
{
    const int placements[] = {PLACEMENT_POST, PLACEMENT_PRE, PLACEMENT_MIXLN, PLACEMENT_B2T,
                              PLACEMENT_NORMFORMER, PLACEMENT_PERI};
    for (int arch = 0; arch < 2; arch++)
        for (size_t k = 0; k < sizeof placements / sizeof placements[0]; k++) {
            config_t cfg;
            small_config(&cfg, arch, placements[k], 70, 67);
            cfg.model.mix_ratio = 0.3;
            cfg.model.dropout = k == 1 ? 0.1 : 0.0;
            const double want = laid_out(&cfg), got = model_memory_doubles(&cfg, NULL);
            ck_assert_msg(got == want, "arch %d placement %d: %.0f, laid out %.0f", arch,
                          placements[k], got, want);
        }
}
END_TEST

/* 10⁹ layers: counted in well under a second (it built a registry of 3.4 KB per layer, and
 * 10⁷ layers grew to 23 GiB), affine in the depth: 10⁹ layers cost 10⁹/10⁶ times the layers
 * of 10⁶ on top of the fixed part. */
START_TEST(test_memory_deep_is_instant)
{
    config_t cfg;
    small_config(&cfg, ARCH_LM, PLACEMENT_PRE, 1000000000, 0);
    const clock_t t0 = clock();
    const double deep = model_memory_doubles(&cfg, NULL);
    ck_assert(((double)(clock() - t0)) / CLOCKS_PER_SEC < 0.5);
    cfg.model.layers = 1000000;
    const double mid = model_memory_doubles(&cfg, NULL);
    cfg.model.layers = 100;
    const double shallow = model_memory_doubles(&cfg, NULL);
    const double per_layer = (mid - shallow) / (1000000 - 100);
    ck_assert(per_layer > 0 && per_layer == floor(per_layer));
    ck_assert(deep == shallow + (1000000000.0 - 100) * per_layer);
}
END_TEST

Suite *memory_suite(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("estimate");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_memory_arithmetic_is_exact);
    tcase_add_test(tc, test_memory_deep_is_instant);
    suite_add_tcase(s, tc);
    return s;
}
