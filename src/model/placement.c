/* placement.c — the placement table: one row of sub-layer flags per scheme
 * (docs/design.md §1 Post-LN / Pre-LN). */
#include "model/placement.h"

int placement_sublayers(stack_kind_t stack)
{
    return stack == STACK_DEC ? 3 : 2;
}

int placement_final_norm(const config_t *cfg, stack_kind_t stack)
{
    (void)stack;
    return config_has_final_norm(cfg);
}

void placement_layer(const config_t *cfg, stack_kind_t stack, int l, sublayer_rule_t *rules)
{
    (void)l;
    const int n = placement_sublayers(stack);
    static const sublayer_kind_t ENC[2] = {SUB_SELF_ATTN, SUB_FFN};
    static const sublayer_kind_t DEC[3] = {SUB_SELF_ATTN, SUB_CROSS_ATTN, SUB_FFN};
    for (int i = 0; i < n; i++) {
        sublayer_rule_t *r = &rules[i];
        *r = (sublayer_rule_t){
            .kind = stack == STACK_DEC ? DEC[i] : ENC[i],
            .skip = 1.0, .gain_v = 1.0, .gain_o = 1.0, .gain_w1 = 1.0, .gain_w2 = 1.0,
        };
        switch (cfg->model.placement) {
        case PLACEMENT_POST:   // x_{i+1} = Norm(x_i + F(x_i))
            r->norm_after = 1;
            break;
        case PLACEMENT_PRE:    // x_{i+1} = x_i + F(Norm(x_i))
            r->norm_in = 1;
            break;
        }
    }
}
