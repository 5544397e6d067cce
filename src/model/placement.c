/* placement.c — the placement table: one row of sub-layer flags per scheme, with the
 * schemes' constants (docs/design.md §1 Post-LN / Pre-LN, §6c the others; the reference code
 * each follows is named beside its row). */
#include <math.h>
#include "model/placement.h"

int placement_sublayers(stack_kind_t stack)
{
    return stack == STACK_DEC ? 3 : 2;
}

int placement_depth(const config_t *cfg, stack_kind_t stack)
{
    return stack == STACK_DEC ? config_dec_layers(cfg) : cfg->model.layers;
}

int placement_final_norm(const config_t *cfg, stack_kind_t stack)
{
    (void)stack;
    return config_has_final_norm(cfg);
}

int placement_mix_post_layers(const config_t *cfg, stack_kind_t stack)
{
    // Li et al. 2025: the first ⌊α·L⌋ layers Post-LN (MixLN's POST_NUM; 0.25·L in its scripts)
    return (int)floor(cfg->model.mix_ratio * placement_depth(cfg, stack) + 1e-9);
}

void placement_deepnorm(const config_t *cfg, stack_kind_t stack, double *alpha, double *beta)
{
    const double N = cfg->model.layers, M = config_dec_layers(cfg);
    if (cfg->model.arch == ARCH_LM) {            // decoder-only: α = (2L)^¼, β = (8L)^−¼
        *alpha = pow(2.0 * N, 0.25);
        *beta = pow(8.0 * N, -0.25);
    } else if (stack == STACK_ENC) {             // α = 0.81(N⁴M)^1/16, β = 0.87(N⁴M)^−1/16
        *alpha = 0.81 * pow(pow(N, 4.0) * M, 1.0 / 16.0);
        *beta = 0.87 * pow(pow(N, 4.0) * M, -1.0 / 16.0);
    } else {                                     // α = (3M)^¼, β = (12M)^−¼
        *alpha = pow(3.0 * M, 0.25);
        *beta = pow(12.0 * M, -0.25);
    }
}

double placement_subln_gain(const config_t *cfg, stack_kind_t stack)
{
    const double N = cfg->model.layers, M = config_dec_layers(cfg);
    if (cfg->model.arch == ARCH_LM) return sqrt(log(2.0 * N));                 // torchscale decoder.py
    if (stack == STACK_ENC) return sqrt(log(3.0 * M) * log(2.0 * N) / 3.0);   // encoder.py
    return sqrt(log(3.0 * M));                                                 // decoder.py
}

double placement_tfixup_scale(const config_t *cfg, stack_kind_t stack)
{
    // T-Fixup (layer6ai-labs/T-Fixup transformer_layer.py): encoder 0.67·N^−¼, decoder (9M)^−¼;
    // a single stack (no reference) takes the decoder's rule with M = L
    if (stack == STACK_ENC) return 0.67 * pow(cfg->model.layers, -0.25);
    return pow(9.0 * placement_depth(cfg, stack), -0.25);
}

double placement_embed_scale(const config_t *cfg)
{
    // T-Fixup scales the (shared) embedding table by (9N)^−¼, N = encoder (or lm) layers
    if (cfg->init.scheme != INIT_TFIXUP) return 1.0;
    return pow(9.0 * cfg->model.layers, -0.25);
}

/* Gains of the matrices that carry a scheme's init scale: W_V, W_O, W¹, W² (of the
 * cross-attention too unless own_only); SwiGLU's W³ as W¹, the other matrix that reads the
 * branch input (docs/design.md §6i). */
static void scale_vo_ffn(sublayer_rule_t *r, double g, int own_only)
{
    if (own_only && r->kind == SUB_CROSS_ATTN) return;
    if (r->kind == SUB_FFN) { r->gain[GAIN_W1] = r->gain[GAIN_W3] = g; r->gain[GAIN_W2] = g; }
    else { r->gain[GAIN_V] = g; r->gain[GAIN_O] = g; }
}

/* One sub-layer's row of the table. */
static void rule_of(const config_t *cfg, stack_kind_t stack, int l, sublayer_rule_t *r)
{
    switch (cfg->model.placement) {
    case PLACEMENT_POST:       // x ← Norm(x + F(x))
        r->norm_after = 1;
        break;
    case PLACEMENT_PRE:        // x ← x + F(Norm(x))
        r->norm_in = 1;
        break;
    case PLACEMENT_PERI:       // x ← x + Norm_out(F(Norm_in(x)))  (Gemma 2's decoder layer)
        r->norm_in = r->norm_out = 1;
        break;
    case PLACEMENT_DEEPNORM: { // x ← Norm(α·x + F(x)); W_V, W_O, W¹, W² gain β (Clinic layer init)
        double alpha, beta;
        placement_deepnorm(cfg, stack, &alpha, &beta);
        r->norm_after = 1;
        r->skip = alpha;
        scale_vo_ffn(r, beta, 0);
        break;
    }
    case PLACEMENT_ADMIN:      // x ← Norm(x ⊙ ω + F(x)), ω profiled at init (Clinic layer.py)
        r->norm_after = 1;
        r->skip_param = 1;
        break;
    case PLACEMENT_REZERO:     // x ← x + α_l·F(x)  (rezero rztx.py; no norm)
        r->gate_param = 1;
        break;
    case PLACEMENT_SUBLN:      // Pre-LN + a norm before W_O and W² (torchscale subln); not on
        r->norm_in = 1;        // the cross-attention, whose matrices keep gain 1
        r->norm_inner = r->kind != SUB_CROSS_ATTN;
        scale_vo_ffn(r, placement_subln_gain(cfg, stack), 1);
        break;
    case PLACEMENT_MIXLN:      // the first ⌊mix_ratio·L⌋ layers Post-LN, the rest Pre-LN
        if (l < placement_mix_post_layers(cfg, stack)) r->norm_after = 1;
        else r->norm_in = 1;
        break;
    case PLACEMENT_B2T: {      // Post-LN; the last sub-layer's residual also adds the layer's
        r->norm_after = 1;     // input; every weight matrix × L^−½ (b2t_connection rescaling_init)
        r->b2t = r->kind == SUB_FFN;
        const double g = 1.0 / sqrt((double)placement_depth(cfg, stack));
        for (int k = 0; k < GAIN_COUNT; k++) r->gain[k] = g;
        break;
    }
    case PLACEMENT_NORMFORMER: // Pre-LN; in a decoder's (and an lm's) layers the self-attention's
        r->norm_in = 1;        // output scaled per head then normed, and a norm after the FFN's
        if (stack != STACK_ENC) {   // activation (fairseq transformer_layer.py: c_attn,
            r->head_scale = r->norm_out = r->kind == SUB_SELF_ATTN;   // attn_ln, ffn_layernorm)
            r->norm_inner = r->kind == SUB_FFN;
        }
        break;
    case PLACEMENT_COUNT:      // not a placement (config_validate refuses it)
        break;
    }
    if (cfg->init.scheme == INIT_TFIXUP) scale_vo_ffn(r, placement_tfixup_scale(cfg, stack), 0);
}

void placement_layer(const config_t *cfg, stack_kind_t stack, int l, sublayer_rule_t *rules)
{
    const int n = placement_sublayers(stack);
    static const sublayer_kind_t ENC[2] = {SUB_SELF_ATTN, SUB_FFN};
    static const sublayer_kind_t DEC[3] = {SUB_SELF_ATTN, SUB_CROSS_ATTN, SUB_FFN};
    for (int i = 0; i < n; i++) {
        sublayer_rule_t *r = &rules[i];
        *r = (sublayer_rule_t){.kind = stack == STACK_DEC ? DEC[i] : ENC[i], .skip = 1.0};
        for (int k = 0; k < GAIN_COUNT; k++) r->gain[k] = 1.0;
        rule_of(cfg, stack, l, r);
    }
}
