/* config_validate.c — config_validate: every value in range, then the rules between keys
 * (docs/design.md §4, §6b, §6c), each error naming the key to change and where it was set. */
#include "config/config_keys.h"
#include "config/config_validate_internal.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- validation */

void config_where(const config_t *cfg, int k, char *buf, size_t len)
{
    const int src = cfg->src_line[k];
    const char *file = cfg->path[0] ? cfg->path : src > 0 ? "config" : "defaults";
    if (src > 0) snprintf(buf, len, "%s:%d: %s.%s", file, src, cfg_keys[k].section, cfg_keys[k].name);
    else if (src < 0) snprintf(buf, len, "--set %s.%s", cfg_keys[k].section, cfg_keys[k].name);
    else snprintf(buf, len, "%s: %s.%s", file, cfg_keys[k].section, cfg_keys[k].name);
}

/* Report key k of cfg as the offender: "WHERE: section.key: message". */
int cfg_vfail(const config_t *cfg, int k, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[CONFIG_ERR_MAX / 2], where[CONFIG_PATH_MAX + 80];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    config_where(cfg, k, where, sizeof where);
    cfg_set_err(err, errlen, "%s: %s", where, msg);
    return 2;
}

/* Which of two cfg_keys in a contradiction to name: a, unless a was left at its default and b
 * was not, or b came from --set (the latest change) and a did not. */
int cfg_blame(const config_t *cfg, int a, int b)
{
    int sa = cfg->src_line[a], sb = cfg->src_line[b];
    if ((sa == 0 && sb != 0) || (sb < 0 && sa >= 0)) return b;
    return a;
}

/* The key that selects row s, its text ("model.norm = dyt") and cfg's value of that key. */
static int selecting_key(const config_t *cfg, const scheme_t *s, char *cond, size_t len,
                         const char **got)
{
    if (s->by == SCHEME_BY_INIT) {
        snprintf(cond, len, "init.scheme = %s", config_init_name((init_scheme_t)s->value));
        *got = config_init_name(cfg->init.scheme);
        return cfg_kidx("init", "scheme");
    }
    if (s->by == SCHEME_BY_NORM) {
        snprintf(cond, len, "model.norm = %s", config_norm_name((norm_kind_t)s->value));
        *got = config_norm_name(cfg->model.norm);
        return cfg_kidx("model", "norm");
    }
    snprintf(cond, len, "model.placement = %s", s->name);
    *got = config_placement_name(cfg->model.placement);
    return cfg_kidx("model", "placement");
}

/* Key k of cfg differs from its default (a resolved configuration writes every key: only a
 * value other than the default can contradict a scheme). */
int cfg_off_default(const config_t *cfg, int k)
{
    config_t d;
    config_defaults(&d);
    const cfg_key_t *key = &cfg_keys[k];
    if (key->type == K_DBL) return *(const double *)cfg_cfield(cfg, key) != *(const double *)cfg_cfield(&d, key);
    return *(const int *)cfg_cfield(cfg, key) != *(const int *)cfg_cfield(&d, key);
}

/* "post, pre or rezero": the names of the placements in mask (bit p = placement p). */
static void placement_list(unsigned mask, char *buf, size_t len)
{
    int n = 0, k = 0;
    for (int p = 0; p < PLACEMENT_COUNT; p++) n += (mask >> p) & 1u;
    buf[0] = '\0';
    for (int p = 0; p < PLACEMENT_COUNT; p++) {
        if (!((mask >> p) & 1u)) continue;
        const size_t used = strlen(buf);
        k++;
        snprintf(buf + used, len - used, "%s%s", SCHEMES[p].name,
                 k == n ? "" : k == n - 1 ? " or " : ", ");
    }
}

/* The rules of the scheme table (config/scheme.c; docs/design.md §6c): which schemes need norms,
 * which remove them, which placements a variant goes with, and the keys that only mean
 * something for one scheme. */
static int validate_scheme(const config_t *cfg, char *err, size_t errlen)
{
    const int norm = cfg_kidx("model", "norm"), none = cfg->model.norm == NORM_NONE;
    const scheme_t *pl = scheme_of_placement((int)cfg->model.placement);   // in range: checked
    char cond[64], list[128];
    const char *got;
    for (int i = 0; i < SCHEME_COUNT; i++) {   // the placement's row, then the variants'
        const scheme_t *s = &SCHEMES[i];
        if (!scheme_selects(s, cfg)) continue;
        const int key = selecting_key(cfg, s, cond, sizeof cond, &got);
        if (s->norms == SCHEME_NORMS_NONE && !none)
            return cfg_vfail(cfg, cfg_blame(cfg, norm, key), err, errlen,
                         "%s %s: needs model.norm = none", s->name, s->why_none);
        if (s->placements && !((s->placements >> cfg->model.placement) & 1u)) {
            placement_list(s->placements, list, sizeof list);
            return cfg_vfail(cfg, cfg_blame(cfg, cfg_kidx("model", "placement"), key), err, errlen,
                         "%s goes with placement %s, not %s", s->name, list, pl->name);
        }
    }
    if (none && pl->norms == SCHEME_NORMS_PLACED) {
        unsigned allow = 0;   // the placements whose rows allow model.norm = none
        for (int p = 0; p < PLACEMENT_COUNT; p++)
            if (SCHEMES[p].norms != SCHEME_NORMS_PLACED) allow |= 1u << p;
        placement_list(allow, list, sizeof list);
        return cfg_vfail(cfg, cfg_blame(cfg, norm, cfg_kidx("model", "placement")), err, errlen,
                     "%s places norms; model.norm = none removes them (use %s)", pl->name, list);
    }
    for (int i = 0; i < SCHEME_COUNT; i++) {
        const scheme_t *s = &SCHEMES[i];
        if (!s->own_key || scheme_selects(s, cfg)) continue;
        char section[16];
        const char *dot = strchr(s->own_key, '.');
        snprintf(section, sizeof section, "%.*s", (int)(dot - s->own_key), s->own_key);
        const int own = cfg_kidx(section, dot + 1);
        selecting_key(cfg, s, cond, sizeof cond, &got);
        if (cfg_off_default(cfg, own))
            return cfg_vfail(cfg, own, err, errlen, "only applies to %s (got %s)", cond, got);
    }
    return 0;
}

/* data.task = mlm, BERT's masked LM on the byte corpus (docs/design.md §6f): one bidirectional
 * stack, a corpus file, the 256 bytes and [MASK] = 256 in the vocabulary; data.mask_rate is
 * its key alone. The rate's range (0, 1) is the key table's. */
static int validate_mlm(const config_t *cfg, char *err, size_t errlen)
{
    const int task = cfg_kidx("data", "task"), rate = cfg_kidx("data", "mask_rate");
    if (cfg->data.task != TASK_MLM) {
        if (cfg->src_line[rate] != 0)
            return cfg_vfail(cfg, rate, err, errlen, "only applies to data.task = mlm");
        return 0;
    }
    const int arch = cfg_kidx("model", "arch"), causal = cfg_kidx("model", "causal");
    const int path = cfg_kidx("data", "path"), vocab = cfg_kidx("model", "vocab");
    if (cfg->model.arch != ARCH_LM)
        return cfg_vfail(cfg, cfg_blame(cfg, task, arch), err, errlen,
                     "mlm (BERT's masked LM) is one bidirectional stack: model.arch = lm");
    if (cfg->model.causal)
        return cfg_vfail(cfg, cfg_blame(cfg, causal, task), err, errlen,
                     "must be false for data.task = mlm (BERT's attention is bidirectional)");
    if (!cfg->data.path[0])
        return cfg_vfail(cfg, cfg_blame(cfg, task, path), err, errlen,
                     "mlm needs data.path (the corpus file, e.g. results/licenses.txt)");
    if (cfg->model.vocab < 257)
        return cfg_vfail(cfg, cfg_blame(cfg, vocab, task), err, errlen,
                     "must be >= 257 for data.task = mlm (the bytes 0-255 and [MASK] = 256) "
                     "(got %d)", cfg->model.vocab);
    return 0;
}

void config_task_defaults(config_t *cfg)
{
    const int causal = cfg_kidx("model", "causal"), vocab = cfg_kidx("model", "vocab");
    if (cfg->model.arch != ARCH_LM) return;
    if (cfg->data.task == TASK_TEXT && cfg->src_line[causal] == 0) cfg->model.causal = 1;
    if (cfg->src_line[vocab] == 0 && (cfg->data.task == TASK_TEXT || cfg->data.task == TASK_MLM))
        cfg->model.vocab = cfg->data.task == TASK_TEXT ? 256 : 257;
}

int config_refuse_leak(const config_t *cfg, char *err, size_t errlen)
{
    if (cfg->model.arch != ARCH_LM || cfg->data.task != TASK_TEXT || cfg->model.causal) return 0;
    const int causal = cfg_kidx("model", "causal"), task = cfg_kidx("data", "task");
    const char *why = "a non-causal model attends to the byte it must predict (its targets leak "
                      "into its input); a bidirectional model is data.task = mlm";
    if (cfg_blame(cfg, causal, task) == causal)
        return cfg_vfail(cfg, causal, err, errlen, "must be true for data.task = text (next-token "
                     "prediction, where it is the default): %s", why);
    return cfg_vfail(cfg, task, err, errlen, "text (next-token prediction) needs model.causal = true: %s", why);
}

/* The rules of the two architectures and their tasks (docs/design.md §4, §6b). */
static int validate_arch(const config_t *cfg, char *err, size_t errlen)
{
    const int arch = cfg_kidx("model", "arch"), task = cfg_kidx("data", "task");
    const int dec = cfg_kidx("model", "dec_layers"), src = cfg_kidx("model", "src_len");
    const int min_len = cfg_kidx("data", "min_len"), max_tokens = cfg_kidx("data", "max_tokens");
    const int causal = cfg_kidx("model", "causal"), seq_len = cfg_kidx("model", "seq_len");
    const char *tname = config_task_name(cfg->data.task);
    const int encdec = cfg->model.arch == ARCH_ENCDEC, S = config_src_len(cfg);
    if (!encdec) {
        const int only[3] = {dec, src, min_len};
        for (int i = 0; i < 3; i++)
            if (*(const int *)cfg_cfield(cfg, &cfg_keys[only[i]]) != 0)
                return cfg_vfail(cfg, only[i], err, errlen,
                             "only applies to model.arch = encdec (lm is one stack)");
        if (cfg->data.task == TASK_TRANSLATION)
            return cfg_vfail(cfg, cfg_blame(cfg, task, arch), err, errlen,
                         "translation needs model.arch = encdec");
    } else {
        if (cfg->model.causal)
            return cfg_vfail(cfg, cfg_blame(cfg, causal, arch), err, errlen,
                         "model.causal is for arch = lm (the decoder is always causal, the "
                         "encoder never)");
        if (cfg->data.task == TASK_TEXT)
            return cfg_vfail(cfg, cfg_blame(cfg, task, arch), err, errlen,
                         "text is a byte-level language model: model.arch = lm");
        if ((cfg->data.task == TASK_COPY || cfg->data.task == TASK_REVERSE) &&
            cfg->model.seq_len < S)
            return cfg_vfail(cfg, cfg_blame(cfg, seq_len, task), err, errlen,
                         "%s: the target is as long as the source, so model.seq_len (%d) must "
                         "be >= model.src_len (%d)", tname, cfg->model.seq_len, S);
        if (cfg->data.min_len > S)
            return cfg_vfail(cfg, min_len, err, errlen, "must be <= model.src_len (%d) (got %d)", S,
                         cfg->data.min_len);
    }
    if (cfg->data.task == TASK_TRANSLATION) {
        if (!cfg->data.path[0])
            return cfg_vfail(cfg, task, err, errlen,
                         "translation needs data.path (the directory of "
                         "setup/translation-corpus.sh, e.g. results/translation)");
        if (cfg->model.vocab < 5)
            return cfg_vfail(cfg, cfg_kidx("model", "vocab"), err, errlen,
                         "must be >= 5 for translation (4 special ids) (got %d)", cfg->model.vocab);
        const int longest = S > cfg->model.seq_len ? S : cfg->model.seq_len;
        if (cfg->data.max_tokens > 0 && cfg->data.max_tokens < longest)
            return cfg_vfail(cfg, max_tokens, err, errlen,
                         "must hold one pair of the longest length (>= %d) (got %d)", longest,
                         cfg->data.max_tokens);
    } else if (cfg->data.max_tokens != 0) {
        return cfg_vfail(cfg, max_tokens, err, errlen, "only applies to data.task = translation");
    }
    if (cfg->train.eval_every == 0 && !(cfg->data.task == TASK_TRANSLATION && cfg->data.max_tokens > 0))
        return cfg_vfail(cfg, cfg_kidx("train", "eval_every"), err, errlen,
                     "0 (once per epoch) needs epochs: data.task = translation with "
                     "data.max_tokens > 0");
    if (cfg->train.bleu_every != 0 && cfg->data.task != TASK_TRANSLATION)
        return cfg_vfail(cfg, cfg_kidx("train", "bleu_every"), err, errlen,
                     "BLEU needs sentences: data.task = translation (got %d)", cfg->train.bleu_every);
    if (cfg->train.bleu_every == -1 && cfg->data.max_tokens <= 0)
        return cfg_vfail(cfg, cfg_kidx("train", "bleu_every"), err, errlen,
                     "-1 (once per epoch) needs epochs: data.max_tokens > 0");
    return 0;
}

/* QK-norm (docs/design.md §6g): a LayerNorm over one element is β whatever q is; the theory's
 * W_Q = W_K = 0 gives q = k = 0, which the norm would divide by √ε. */
static int validate_mitigations(const config_t *cfg, char *err, size_t errlen)
{
    const int qk = cfg_kidx("model", "qk_norm"), heads = cfg_kidx("model", "heads");
    const int dh = cfg->model.d_model / cfg->model.heads;
    if (cfg->model.qk_norm == QK_NORM_LAYERNORM && dh < 2) {
        if (cfg_blame(cfg, qk, heads) == qk)
            return cfg_vfail(cfg, qk, err, errlen, "layernorm over d_head = %d element is the constant "
                         "beta: needs d_model/heads >= 2 (or qk_norm = rmsnorm)", dh);
        return cfg_vfail(cfg, heads, err, errlen, "leaves d_head = %d, too small for model.qk_norm = "
                     "layernorm (needs >= 2)", dh);
    }
    if (cfg->model.qk_norm != QK_NORM_OFF && cfg->init.zero_qk) {
        const int zq = cfg_kidx("init", "zero_qk");
        return cfg_vfail(cfg, cfg_blame(cfg, qk, zq), err, errlen, "init.zero_qk (q = k = 0) and "
                     "model.qk_norm (which divides q, k by their norm) do not go together");
    }
    return 0;
}

/* μP (docs/design.md §6h): the width its hyper-parameters were tuned at, and an optimizer whose
 * per-tensor rates it defines (Yang et al. 2022, Table 3's Adam column: the Adam family here). */
static int validate_mup(const config_t *cfg, char *err, size_t errlen)
{
    if (!config_is_mup(cfg)) return 0;
    const int par = cfg_kidx("init", "parametrization"), opt = cfg_kidx("train", "optimizer");
    if (cfg->init.base_width <= 0)
        return cfg_vfail(cfg, cfg_kidx("init", "base_width"), err, errlen,
                     "must be > 0 with init.parametrization = mup: the width d whose lr and init "
                     "the others scale from (got %d)", cfg->init.base_width);
    if (cfg->train.optimizer == OPT_SGD)
        return cfg_vfail(cfg, cfg_blame(cfg, par, opt), err, errlen,
                     "muP (init.parametrization = mup) is defined here for the Adam family "
                     "(Yang et al. 2022, Table 3, Adam column), not for train.optimizer = sgd");
    return 0;
}

/* Today's block (docs/design.md §6i): rotary positions turn pairs of each head's dimensions,
 * so d_head must be even. SwiGLU, model.bias and model.positions = none go with every scheme,
 * mitigation and task. */
static int validate_block(const config_t *cfg, char *err, size_t errlen)
{
    const int pos = cfg_kidx("model", "positions"), heads = cfg_kidx("model", "heads");
    const int dh = cfg->model.d_model / cfg->model.heads;
    if (cfg->model.positions == POS_ROPE && dh % 2 != 0) {
        if (cfg_blame(cfg, pos, heads) == pos)
            return cfg_vfail(cfg, pos, err, errlen, "rope rotates pairs of each head's dimensions: "
                         "needs an even d_head = d_model/heads (got %d)", dh);
        return cfg_vfail(cfg, heads, err, errlen, "leaves an odd d_head = %d, which model.positions "
                     "= rope cannot split into pairs", dh);
    }
    return 0;
}

/* train.precision = float32 (docs/design.md §2): the core holds every value in a float, so each
 * real value must still be itself there: not 0 (1e-300, 1e-46 underflow), not infinite (1e39),
 * and in its key's range once rounded (beta2 = 1 - 1e-10 rounds to 1). A subnormal float
 * (1e-40) is a number like any other. */
static int validate_float32(const config_t *cfg, char *err, size_t errlen)
{
    if (!config_core_float(cfg)) return 0;
    const char *pname = config_precision_name(cfg->train.precision);
    const int prec = cfg_kidx("train", "precision");
    for (int k = 0; k < cfg_nkeys; k++) {
        if (cfg_keys[k].type != K_DBL) continue;
        const double x = *(const double *)cfg_cfield(cfg, &cfg_keys[k]);
        const float f = (float)x;
        char msg[CONFIG_ERR_MAX / 2];
        config_t rounded = *cfg;
        *(double *)cfg_field(&rounded, &cfg_keys[k]) = (double)f;
        // named by the key set last: the value, or train.precision (then the value is named too)
        const int who = cfg_blame(cfg, k, prec);
        char value[160];
        if (who == k) snprintf(value, sizeof value, "%.12g", x);
        else snprintf(value, sizeof value, "%s.%s = %.12g", cfg_keys[k].section, cfg_keys[k].name, x);
        if (isinf(f) || (x != 0.0 && f == 0.0f))
            return cfg_vfail(cfg, who, err, errlen, "%s is %s in float32 (train.precision = %s "
                         "holds magnitudes from %.2g to %.3g, and 0)", value, pname,
                         isinf(f) ? "infinite" : "0", (double)FLT_TRUE_MIN, (double)FLT_MAX);
        if (cfg_check_value(&rounded, &cfg_keys[k], msg, sizeof msg) != 0)
            return cfg_vfail(cfg, who, err, errlen, "%s is %.9g in float32 (train.precision = "
                         "%s): %s", value, (double)f, pname, msg);
    }
    return 0;
}

/* The low-precision keys (docs/design.md, "Low precision, emulated") act only under their
 * precisions: a key set elsewhere is refused rather than ignored. */
static int validate_lowp(const config_t *cfg, char *err, size_t errlen)
{
    const int prec = cfg_kidx("train", "precision");
    static const char *const places[] = {"round_gemm", "round_attn_probs", "round_residual",
                                         "round_norm_stats"};
    for (int i = 0; i < 4; i++) {
        const int k = cfg_kidx("train", places[i]);
        if (cfg->src_line[k] != 0 && !config_lowp(cfg))
            return cfg_vfail(cfg, cfg_blame(cfg, k, prec), err, errlen, "train.%s names a place that rounds "
                         "to bfloat16: needs train.precision = bfloat16, bfloat16_pure or fp8 (got %s)",
                         places[i], config_precision_name(cfg->train.precision));
    }
    static const char *const pure[] = {"rounding", "kahan"};
    for (int i = 0; i < 2; i++) {
        const int k = cfg_kidx("train", pure[i]);
        if (cfg->src_line[k] != 0 && cfg->train.precision != PRECISION_BFLOAT16_PURE)
            return cfg_vfail(cfg, cfg_blame(cfg, k, prec), err, errlen, "train.%s says how bfloat16 weights "
                         "are stored: needs train.precision = bfloat16_pure (got %s)", pure[i],
                         config_precision_name(cfg->train.precision));
    }
    // the path of bfloat16's products (docs/design.md, "The fast bfloat16 path"): it computes
    // products of bfloat16 operands, so only where round_gemm rounds them to bfloat16
    const int gp = cfg_kidx("train", "gemm_path");
    if (cfg->src_line[gp] != 0 && cfg->train.precision != PRECISION_BFLOAT16 &&
        cfg->train.precision != PRECISION_BFLOAT16_PURE)
        return cfg_vfail(cfg, cfg_blame(cfg, gp, prec), err, errlen, "train.gemm_path says what "
                     "computes bfloat16 products: needs train.precision = bfloat16 or "
                     "bfloat16_pure (got %s)", config_precision_name(cfg->train.precision));
    if (cfg->train.gemm_path == GEMM_PATH_ONEDNN && !cfg->train.round_gemm)
        return cfg_vfail(cfg, cfg_blame(cfg, gp, cfg_kidx("train", "round_gemm")), err, errlen,
                     "train.gemm_path = onednn computes products of bfloat16 operands: needs "
                     "train.round_gemm = on");
    // Qiu & Yao 2025's fix changes how the probabilities are rounded: only where they are
    const int fix = cfg_kidx("train", "attn_round_fix");
    if (cfg->train.attn_round_fix && (!config_lowp(cfg) || !cfg->train.round_attn_probs))
        return cfg_vfail(cfg, config_lowp(cfg) ? cfg_blame(cfg, fix, cfg_kidx("train", "round_attn_probs"))
                                               : cfg_blame(cfg, fix, prec), err, errlen,
                         "train.attn_round_fix changes how attention probabilities round to "
                         "bfloat16: needs train.precision = bfloat16, bfloat16_pure or fp8 with "
                         "train.round_attn_probs = on (got %s, round_attn_probs %s)",
                         config_precision_name(cfg->train.precision),
                         cfg->train.round_attn_probs ? "on" : "off");
    if (cfg->train.kahan && cfg->train.rounding == ROUNDING_STOCHASTIC)
        return cfg_vfail(cfg, cfg_kidx("train", "kahan"), err, errlen, "on and train.rounding = "
                     "stochastic are two cures for the same lost updates: choose one");
    return 0;
}

/* The curvature measure (docs/design.md §10): Lanczos needs two steps for a residual. */
static int validate_curvature(const config_t *cfg, char *err, size_t errlen)
{
    if (cfg->probe.curvature_block_iters == 1)
        return cfg_vfail(cfg, cfg_kidx("probe", "curvature_block_iters"), err, errlen,
                     "must be 0 (no blocks) or >= 2 (got 1)");
    // the estimators (docs/design.md §10): a standard error needs two samples; the density's
    // steps and broadening mean nothing without its probes; λ_c is taken at curvature rows
    if (cfg->probe.trace_probes == 1)
        return cfg_vfail(cfg, cfg_kidx("probe", "trace_probes"), err, errlen,
                     "must be 0 (off) or >= 2 (a standard error needs two probes; got 1)");
    if (cfg->probe.density_probes == 0 && cfg->probe.density_iters != 16)
        return cfg_vfail(cfg, cfg_kidx("probe", "density_iters"), err, errlen,
                     "the spectral density's Lanczos steps: needs probe.density_probes > 0");
    if (cfg->probe.density_probes == 0 && cfg->probe.density_sigma != 0.1)
        return cfg_vfail(cfg, cfg_kidx("probe", "density_sigma"), err, errlen,
                     "the spectral density's broadening: needs probe.density_probes > 0");
    if (cfg->probe.density_probes == 0 && cfg->probe.density_blocks)
        return cfg_vfail(cfg, cfg_kidx("probe", "density_blocks"), err, errlen,
                     "the spectral density of each block: needs probe.density_probes > 0");
    if (cfg->probe.critical_sharpness && cfg->probe.curvature_every == 0)
        return cfg_vfail(cfg, cfg_kidx("probe", "critical_sharpness"), err, errlen,
                     "measured at the curvature rows: needs probe.curvature_every > 0");
    return 0;
}

/* Every rule; the ignored keys' only for a configuration being written (stored is 0). */
static int validate(const config_t *cfg, int stored, char *err, size_t errlen)
{
    char msg[CONFIG_ERR_MAX / 2];
    for (int k = 0; k < cfg_nkeys; k++)
        if (cfg_check_value(cfg, &cfg_keys[k], msg, sizeof msg) != 0) return cfg_vfail(cfg, k, err, errlen, "%s", msg);
    if (validate_float32(cfg, err, errlen)) return 2;

    const int heads = cfg_kidx("model", "heads"), d_model = cfg_kidx("model", "d_model");
    const int vocab = cfg_kidx("model", "vocab"), seq_len = cfg_kidx("model", "seq_len");
    const int task = cfg_kidx("data", "task"), path = cfg_kidx("data", "path");
    const char *tname = config_task_name(cfg->data.task);

    if (cfg->model.d_model % cfg->model.heads != 0) {
        if (cfg_blame(cfg, heads, d_model) == heads)
            return cfg_vfail(cfg, heads, err, errlen, "must divide model.d_model (%d)", cfg->model.d_model);
        return cfg_vfail(cfg, d_model, err, errlen, "must be a multiple of model.heads (%d)", cfg->model.heads);
    }
    if (cfg->data.task == TASK_TEXT) {
        if (!cfg->data.path[0]) {
            if (cfg_blame(cfg, task, path) == task)
                return cfg_vfail(cfg, task, err, errlen, "text needs data.path (the corpus file)");
            return cfg_vfail(cfg, path, err, errlen, "must name the corpus file for data.task = text");
        }
        if (cfg->model.vocab < 256) {
            if (cfg_blame(cfg, vocab, task) == vocab)
                return cfg_vfail(cfg, vocab, err, errlen, "must be >= 256 for data.task = text (byte-level) (got %d)",
                             cfg->model.vocab);
            return cfg_vfail(cfg, task, err, errlen, "text (byte-level) needs model.vocab >= 256 (got %d)",
                         cfg->model.vocab);
        }
    }
    if (cfg->train.steps == 0 && cfg->init.seed > SEED_MAX - (unsigned long)(cfg->probe.seeds - 1)) {
        const int seed = cfg_kidx("init", "seed"), seeds = cfg_kidx("probe", "seeds");
        return cfg_vfail(cfg, cfg_blame(cfg, seed, seeds), err, errlen, "init.seed + probe.seeds - 1 must be "
                     "<= %lu (seed s of a probe is init.seed + s) (got %lu + %d - 1)", SEED_MAX,
                     cfg->init.seed, cfg->probe.seeds);
    }
    int rc = validate_mlm(cfg, err, errlen);
    if (!rc) rc = validate_arch(cfg, err, errlen);
    if (!rc) rc = validate_scheme(cfg, err, errlen);
    if (!rc) rc = validate_mitigations(cfg, err, errlen);
    if (!rc) rc = validate_mup(cfg, err, errlen);
    if (!rc) rc = validate_block(cfg, err, errlen);
    if (!rc) rc = validate_curvature(cfg, err, errlen);
    if (!rc) rc = validate_lowp(cfg, err, errlen);
    if (!rc) rc = cfg_validate_train(cfg, stored, err, errlen);
    if (rc) return rc;
    if (cfg->model.arch == ARCH_LM && (cfg->data.task == TASK_COPY || cfg->data.task == TASK_REVERSE)) {
        if (cfg->model.vocab < 3) {
            if (cfg_blame(cfg, vocab, task) == vocab)
                return cfg_vfail(cfg, vocab, err, errlen,
                             "must be >= 3 for data.task = %s (separator + 2 content tokens) (got %d)", tname,
                             cfg->model.vocab);
            return cfg_vfail(cfg, task, err, errlen, "%s needs model.vocab >= 3 (got %d)", tname, cfg->model.vocab);
        }
        if (cfg->model.seq_len < 3) {
            if (cfg_blame(cfg, seq_len, task) == seq_len)
                return cfg_vfail(cfg, seq_len, err, errlen, "must be >= 3 for data.task = %s (got %d)", tname,
                             cfg->model.seq_len);
            return cfg_vfail(cfg, task, err, errlen, "%s needs model.seq_len >= 3 (got %d)", tname,
                         cfg->model.seq_len);
        }
    }
    if (err && errlen) err[0] = '\0';
    return 0;
}

int config_validate(const config_t *cfg, char *err, size_t errlen)
{
    return validate(cfg, 0, err, errlen);
}

int config_validate_stored(const config_t *cfg, char *err, size_t errlen)
{
    return validate(cfg, 1, err, errlen);
}
