/* config_validate.c — config_validate: every value in range, then the rules between keys
 * (docs/design.md §4, §6b, §6c), each error naming the key to change and where it was set. */
#include "config/config_keys.h"

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
static int vfail(const config_t *cfg, int k, char *err, size_t errlen, const char *fmt, ...)
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
static int blame(const config_t *cfg, int a, int b)
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
static int off_default(const config_t *cfg, int k)
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
            return vfail(cfg, blame(cfg, norm, key), err, errlen,
                         "%s %s: needs model.norm = none", s->name, s->why_none);
        if (s->placements && !((s->placements >> cfg->model.placement) & 1u)) {
            placement_list(s->placements, list, sizeof list);
            return vfail(cfg, blame(cfg, cfg_kidx("model", "placement"), key), err, errlen,
                         "%s goes with placement %s, not %s", s->name, list, pl->name);
        }
    }
    if (none && pl->norms == SCHEME_NORMS_PLACED) {
        unsigned allow = 0;   // the placements whose rows allow model.norm = none
        for (int p = 0; p < PLACEMENT_COUNT; p++)
            if (SCHEMES[p].norms != SCHEME_NORMS_PLACED) allow |= 1u << p;
        placement_list(allow, list, sizeof list);
        return vfail(cfg, blame(cfg, norm, cfg_kidx("model", "placement")), err, errlen,
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
        if (off_default(cfg, own))
            return vfail(cfg, own, err, errlen, "only applies to %s (got %s)", cond, got);
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
            return vfail(cfg, rate, err, errlen, "only applies to data.task = mlm");
        return 0;
    }
    const int arch = cfg_kidx("model", "arch"), causal = cfg_kidx("model", "causal");
    const int path = cfg_kidx("data", "path"), vocab = cfg_kidx("model", "vocab");
    if (cfg->model.arch != ARCH_LM)
        return vfail(cfg, blame(cfg, task, arch), err, errlen,
                     "mlm (BERT's masked LM) is one bidirectional stack: model.arch = lm");
    if (cfg->model.causal)
        return vfail(cfg, blame(cfg, causal, task), err, errlen,
                     "must be false for data.task = mlm (BERT's attention is bidirectional)");
    if (!cfg->data.path[0])
        return vfail(cfg, blame(cfg, task, path), err, errlen,
                     "mlm needs data.path (the corpus file, e.g. results/licenses.txt)");
    if (cfg->model.vocab < 257)
        return vfail(cfg, blame(cfg, vocab, task), err, errlen,
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
    if (blame(cfg, causal, task) == causal)
        return vfail(cfg, causal, err, errlen, "must be true for data.task = text (next-token "
                     "prediction, where it is the default): %s", why);
    return vfail(cfg, task, err, errlen, "text (next-token prediction) needs model.causal = true: %s", why);
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
                return vfail(cfg, only[i], err, errlen,
                             "only applies to model.arch = encdec (lm is one stack)");
        if (cfg->data.task == TASK_TRANSLATION)
            return vfail(cfg, blame(cfg, task, arch), err, errlen,
                         "translation needs model.arch = encdec");
    } else {
        if (cfg->model.causal)
            return vfail(cfg, blame(cfg, causal, arch), err, errlen,
                         "model.causal is for arch = lm (the decoder is always causal, the "
                         "encoder never)");
        if (cfg->data.task == TASK_TEXT)
            return vfail(cfg, blame(cfg, task, arch), err, errlen,
                         "text is a byte-level language model: model.arch = lm");
        if ((cfg->data.task == TASK_COPY || cfg->data.task == TASK_REVERSE) &&
            cfg->model.seq_len < S)
            return vfail(cfg, blame(cfg, seq_len, task), err, errlen,
                         "%s: the target is as long as the source, so model.seq_len (%d) must "
                         "be >= model.src_len (%d)", tname, cfg->model.seq_len, S);
        if (cfg->data.min_len > S)
            return vfail(cfg, min_len, err, errlen, "must be <= model.src_len (%d) (got %d)", S,
                         cfg->data.min_len);
    }
    if (cfg->data.task == TASK_TRANSLATION) {
        if (!cfg->data.path[0])
            return vfail(cfg, task, err, errlen,
                         "translation needs data.path (the directory of "
                         "scripts/translation-corpus.sh, e.g. results/translation)");
        if (cfg->model.vocab < 5)
            return vfail(cfg, cfg_kidx("model", "vocab"), err, errlen,
                         "must be >= 5 for translation (4 special ids) (got %d)", cfg->model.vocab);
        const int longest = S > cfg->model.seq_len ? S : cfg->model.seq_len;
        if (cfg->data.max_tokens > 0 && cfg->data.max_tokens < longest)
            return vfail(cfg, max_tokens, err, errlen,
                         "must hold one pair of the longest length (>= %d) (got %d)", longest,
                         cfg->data.max_tokens);
    } else if (cfg->data.max_tokens != 0) {
        return vfail(cfg, max_tokens, err, errlen, "only applies to data.task = translation");
    }
    if (cfg->train.eval_every == 0 && !(cfg->data.task == TASK_TRANSLATION && cfg->data.max_tokens > 0))
        return vfail(cfg, cfg_kidx("train", "eval_every"), err, errlen,
                     "0 (once per epoch) needs epochs: data.task = translation with "
                     "data.max_tokens > 0");
    if (cfg->train.bleu_every != 0 && cfg->data.task != TASK_TRANSLATION)
        return vfail(cfg, cfg_kidx("train", "bleu_every"), err, errlen,
                     "BLEU needs sentences: data.task = translation (got %d)", cfg->train.bleu_every);
    if (cfg->train.bleu_every == -1 && cfg->data.max_tokens <= 0)
        return vfail(cfg, cfg_kidx("train", "bleu_every"), err, errlen,
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
        if (blame(cfg, qk, heads) == qk)
            return vfail(cfg, qk, err, errlen, "layernorm over d_head = %d element is the constant "
                         "beta: needs d_model/heads >= 2 (or qk_norm = rmsnorm)", dh);
        return vfail(cfg, heads, err, errlen, "leaves d_head = %d, too small for model.qk_norm = "
                     "layernorm (needs >= 2)", dh);
    }
    if (cfg->model.qk_norm != QK_NORM_OFF && cfg->init.zero_qk) {
        const int zq = cfg_kidx("init", "zero_qk");
        return vfail(cfg, blame(cfg, qk, zq), err, errlen, "init.zero_qk (q = k = 0) and "
                     "model.qk_norm (which divides q, k by their norm) do not go together");
    }
    return 0;
}

/* μP (docs/design.md §6h): the width its hyper-parameters were tuned at, and an optimizer whose
 * per-tensor rates it defines (Yang et al. 2022, Table 3's Adam column: the Adam family here). */
static int validate_mup(const config_t *cfg, char *err, size_t errlen)
{
    if (cfg->init.parametrization != PARAM_MUP) return 0;
    const int par = cfg_kidx("init", "parametrization"), opt = cfg_kidx("train", "optimizer");
    if (cfg->init.base_width <= 0)
        return vfail(cfg, cfg_kidx("init", "base_width"), err, errlen,
                     "must be > 0 with init.parametrization = mup: the width d whose lr and init "
                     "the others scale from (got %d)", cfg->init.base_width);
    if (cfg->train.optimizer == OPT_SGD)
        return vfail(cfg, blame(cfg, par, opt), err, errlen,
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
        if (blame(cfg, pos, heads) == pos)
            return vfail(cfg, pos, err, errlen, "rope rotates pairs of each head's dimensions: "
                         "needs an even d_head = d_model/heads (got %d)", dh);
        return vfail(cfg, heads, err, errlen, "leaves an odd d_head = %d, which model.positions "
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
        const int who = blame(cfg, k, prec);
        char value[160];
        if (who == k) snprintf(value, sizeof value, "%.12g", x);
        else snprintf(value, sizeof value, "%s.%s = %.12g", cfg_keys[k].section, cfg_keys[k].name, x);
        if (isinf(f) || (x != 0.0 && f == 0.0f))
            return vfail(cfg, who, err, errlen, "%s is %s in float32 (train.precision = %s "
                         "holds magnitudes from %.2g to %.3g, and 0)", value, pname,
                         isinf(f) ? "infinite" : "0", (double)FLT_TRUE_MIN, (double)FLT_MAX);
        if (cfg_check_value(&rounded, &cfg_keys[k], msg, sizeof msg) != 0)
            return vfail(cfg, who, err, errlen, "%s is %.9g in float32 (train.precision = "
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
            return vfail(cfg, blame(cfg, k, prec), err, errlen, "train.%s names a place that rounds "
                         "to bfloat16: needs train.precision = bfloat16, bfloat16_pure or fp8 (got %s)",
                         places[i], config_precision_name(cfg->train.precision));
    }
    static const char *const pure[] = {"rounding", "kahan"};
    for (int i = 0; i < 2; i++) {
        const int k = cfg_kidx("train", pure[i]);
        if (cfg->src_line[k] != 0 && cfg->train.precision != PRECISION_BFLOAT16_PURE)
            return vfail(cfg, blame(cfg, k, prec), err, errlen, "train.%s says how bfloat16 weights "
                         "are stored: needs train.precision = bfloat16_pure (got %s)", pure[i],
                         config_precision_name(cfg->train.precision));
    }
    if (cfg->train.kahan && cfg->train.rounding == ROUNDING_STOCHASTIC)
        return vfail(cfg, cfg_kidx("train", "kahan"), err, errlen, "on and train.rounding = "
                     "stochastic are two cures for the same lost updates: choose one");
    return 0;
}

/* The curvature measure (docs/design.md §10): Lanczos needs two steps for a residual. */
static int validate_curvature(const config_t *cfg, char *err, size_t errlen)
{
    if (cfg->probe.curvature_block_iters == 1)
        return vfail(cfg, cfg_kidx("probe", "curvature_block_iters"), err, errlen,
                     "must be 0 (no blocks) or >= 2 (got 1)");
    // the estimators (docs/design.md §10): a standard error needs two samples; the density's
    // steps and broadening mean nothing without its probes; λ_c is taken at curvature rows
    if (cfg->probe.trace_probes == 1)
        return vfail(cfg, cfg_kidx("probe", "trace_probes"), err, errlen,
                     "must be 0 (off) or >= 2 (a standard error needs two probes; got 1)");
    if (cfg->probe.density_probes == 0 && cfg->probe.density_iters != 16)
        return vfail(cfg, cfg_kidx("probe", "density_iters"), err, errlen,
                     "the spectral density's Lanczos steps: needs probe.density_probes > 0");
    if (cfg->probe.density_probes == 0 && cfg->probe.density_sigma != 0.1)
        return vfail(cfg, cfg_kidx("probe", "density_sigma"), err, errlen,
                     "the spectral density's broadening: needs probe.density_probes > 0");
    if (cfg->probe.critical_sharpness && cfg->probe.curvature_every == 0)
        return vfail(cfg, cfg_kidx("probe", "critical_sharpness"), err, errlen,
                     "measured at the curvature rows: needs probe.curvature_every > 0");
    return 0;
}

/* The optimizers of docs/design.md §6h: muon's keys only with muon; MuonClip scales W_Q, W_K,
 * which neither QK-norm (q, k divided by their norm) nor the soft cap lets bound the logits;
 * μP's rates are defined for the Adam family (validate_mup). */
static int validate_optim(const config_t *cfg, char *err, size_t errlen)
{
    const int opt = cfg_kidx("train", "optimizer");
    static const char *const MUON_KEYS[] = {"muon_ns_steps", "muon_ns_a", "muon_ns_b", "muon_ns_c",
                                            "muon_scale", "muon_adamw_lr"};
    for (size_t i = 0; i < sizeof MUON_KEYS / sizeof MUON_KEYS[0]; i++) {
        const int k = cfg_kidx("train", MUON_KEYS[i]);
        if (cfg->src_line[k] && cfg->train.optimizer != OPT_MUON)
            return vfail(cfg, blame(cfg, k, opt), err, errlen, "train.%s is Muon's: needs "
                         "train.optimizer = muon (got %s)", MUON_KEYS[i],
                         config_optimizer_name(cfg->train.optimizer));
    }
    const int clip = cfg_kidx("train", "qk_clip");
    if (cfg->train.qk_clip > 0 && cfg->model.qk_norm != QK_NORM_OFF)
        return vfail(cfg, blame(cfg, clip, cfg_kidx("model", "qk_norm")), err, errlen,
                     "train.qk_clip (scales W_Q, W_K) and model.qk_norm (divides q, k by their "
                     "norm, so the scale cannot lower the logits) do not go together");
    if (cfg->train.qk_clip > 0 && cfg->model.attn_softcap > 0)
        return vfail(cfg, blame(cfg, clip, cfg_kidx("model", "attn_softcap")), err, errlen,
                     "train.qk_clip and model.attn_softcap do not go together: the capped logit "
                     "is not q.k/sqrt(d_head), which the clip scales");
    if (cfg->init.parametrization == PARAM_MUP &&
        (cfg->train.optimizer == OPT_MUON || cfg->train.optimizer == OPT_LION ||
         cfg->train.optimizer == OPT_NSGD))
        return vfail(cfg, blame(cfg, cfg_kidx("init", "parametrization"), opt), err, errlen,
                     "muP (init.parametrization = mup) is defined here for the Adam family, not "
                     "for train.optimizer = %s", config_optimizer_name(cfg->train.optimizer));
    if (cfg->probe.curvature_every > 0 &&
        (cfg->train.optimizer == OPT_MUON || cfg->train.optimizer == OPT_LION ||
         cfg->train.optimizer == OPT_NSGD))
        return vfail(cfg, blame(cfg, cfg_kidx("probe", "curvature_every"), opt), err, errlen,
                     "the curvature measure knows the preconditioners of sgd and the Adam family "
                     "(docs/design.md section 10), not train.optimizer = %s",
                     config_optimizer_name(cfg->train.optimizer));
    return 0;
}

/* Riabinin et al. 2026's schedule: its keys only with it; it fits its constants to the
 * optimizer's norm (muon, lion, nsgd) and is its own warm-up. */
static int validate_subopt(const config_t *cfg, char *err, size_t errlen)
{
    const int sched = cfg_kidx("train", "schedule"), opt = cfg_kidx("train", "optimizer");
    const optimizer_t o = cfg->train.optimizer;
    if (cfg->train.schedule != SCHED_SUBOPTIMALITY) {
        static const char *const KEYS[] = {"f_star", "lr_div"};
        for (int i = 0; i < 2; i++)
            if (cfg->src_line[cfg_kidx("train", KEYS[i])])
                return vfail(cfg, blame(cfg, cfg_kidx("train", KEYS[i]), sched), err, errlen,
                             "needs train.schedule = suboptimality (got %s)",
                             config_schedule_name(cfg->train.schedule));
        return 0;
    }
    if (o != OPT_MUON && o != OPT_LION && o != OPT_NSGD)
        return vfail(cfg, blame(cfg, sched, opt), err, errlen, "suboptimality fits its constants "
                     "to a norm-constrained optimizer's norm (Riabinin et al. 2026): needs "
                     "train.optimizer = muon, lion or nsgd (got %s)", config_optimizer_name(o));
    if (cfg->train.warmup > 1)
        return vfail(cfg, blame(cfg, cfg_kidx("train", "warmup"), sched), err, errlen,
                     "train.schedule = suboptimality is its own warm-up: train.warmup must be 0 "
                     "(got %d)", cfg->train.warmup);
    return 0;
}

/* The cosine schedule's floor means nothing to the other schedules (suboptimality decays by
 * cosine after its peak): refused, not ignored. */
static int validate_schedule(const config_t *cfg, char *err, size_t errlen)
{
    if (cfg->train.min_lr_ratio == 0 || cfg->train.schedule == SCHED_COSINE ||
        cfg->train.schedule == SCHED_SUBOPTIMALITY)
        return 0;
    const int ratio = cfg_kidx("train", "min_lr_ratio"), sched = cfg_kidx("train", "schedule");
    if (blame(cfg, ratio, sched) == ratio)
        return vfail(cfg, ratio, err, errlen, "the floor of the cosine decay: needs train.schedule "
                     "= cosine (got %s)", config_schedule_name(cfg->train.schedule));
    return vfail(cfg, sched, err, errlen, "train.min_lr_ratio = %g needs cosine (got %s)",
                 cfg->train.min_lr_ratio, config_schedule_name(cfg->train.schedule));
}

/* A remedy key (docs/design.md §6k) set away from its default where nothing reads it. */
static int remedy_unread(const config_t *cfg, const char *name, int unread, const char *needs,
                         char *err, size_t errlen)
{
    if (!unread) return 0;
    return vfail(cfg, cfg_kidx("train", name), err, errlen, "needs %s (got train.lr_control = %s)",
                 needs, config_lr_control_name(cfg->train.lr_control));
}

/* The remedies' keys (docs/design.md §6k): refused where their controller is off; a controller
 * keeps state the checkpoint does not hold, so none resumes. */
static int validate_remedies(const config_t *cfg, char *err, size_t errlen)
{
    const int curv = cfg->train.lr_control == LR_CONTROL_CURVATURE;
    const int cdat = cfg->train.lr_control == LR_CONTROL_CDAT;
    int rc = remedy_unread(cfg, "lr_control_every", !curv && cfg->train.lr_control_every != 5,
                           "train.lr_control = curvature", err, errlen);
    if (!rc) rc = remedy_unread(cfg, "curvature_cap", !curv && cfg->train.curvature_cap != 1.0,
                                "train.lr_control = curvature", err, errlen);
    if (!rc) rc = remedy_unread(cfg, "cdat_sigma", !cdat && cfg->train.cdat_sigma != 2.0,
                                "train.lr_control = cdat", err, errlen);
    if (!rc) rc = remedy_unread(cfg, "cdat_ema", !cdat && cfg->train.cdat_ema != 0.9,
                                "train.lr_control = cdat", err, errlen);
    if (rc) return rc;
    const int catapult = cfg->train.warmup_start == WARMUP_START_CATAPULT;
    const int autowu = cfg->train.schedule == SCHED_AUTOWU;
    if (autowu && catapult)
        return vfail(cfg, cfg_kidx("train", "warmup_start"), err, errlen, "catapult starts a "
                     "linear warm-up: not with train.schedule = autowu (its own warm-up)");
    if (autowu && cfg->train.warmup < 2) {
        const int sc = cfg_kidx("train", "schedule"), w = cfg_kidx("train", "warmup");
        return vfail(cfg, blame(cfg, sc, w), err, errlen, "train.schedule = autowu warms up for "
                     "at most train.warmup updates: needs train.warmup >= 2 (got %d)",
                     cfg->train.warmup);
    }
    if (catapult && cfg->train.warmup < 2) {
        const int ws = cfg_kidx("train", "warmup_start"), w = cfg_kidx("train", "warmup");
        return vfail(cfg, blame(cfg, ws, w), err, errlen, "train.warmup_start = catapult warms "
                     "up from the catapult lr: needs train.warmup >= 2 (got %d)", cfg->train.warmup);
    }
    const int curvature = cfg->probe.curvature_every > 0 || curv;
    if (cfg->train.optimizer == OPT_LAMB && curvature) {
        const int opt = cfg_kidx("train", "optimizer");
        const int k = curv ? cfg_kidx("train", "lr_control") : cfg_kidx("probe", "curvature_every");
        return vfail(cfg, blame(cfg, k, opt), err, errlen, "the curvature measure has no "
                     "preconditioner for train.optimizer = lamb (its per-tensor trust ratio)");
    }
    const optimizer_t o = cfg->train.optimizer;
    if (cfg->train.lr_control != LR_CONTROL_NONE && (o == OPT_MUON || o == OPT_LION || o == OPT_NSGD)) {
        const int opt = cfg_kidx("train", "optimizer"), k = cfg_kidx("train", "lr_control");
        return vfail(cfg, blame(cfg, k, opt), err, errlen, "the lr controllers are defined on sgd "
                     "and the Adam family (the curvature cap's threshold, CDAT's direction), not "
                     "on train.optimizer = %s", config_optimizer_name(o));
    }
    const int any = cfg->train.lr_control != LR_CONTROL_NONE || catapult || autowu ||
                    cfg->train.update_ratio_cap > 0.0 || cfg->train.spectral_bound > 0.0;
    if (any && cfg->train.steps == 0)
        return vfail(cfg, cfg_kidx("train", "steps"), err, errlen, "the remedies (train.lr_control, "
                     "warmup_start, update_ratio_cap, spectral_bound) act on training: needs "
                     "train.steps > 0");
    if ((cfg->train.lr_control != LR_CONTROL_NONE || catapult || autowu) && cfg->train.resume)
        return vfail(cfg, cfg_kidx("train", "resume"), err, errlen, "must be off with "
                     "train.lr_control = %s, train.warmup_start = %s, train.schedule = %s (their "
                     "state is not in the checkpoint)", config_lr_control_name(cfg->train.lr_control),
                     config_warmup_start_name(cfg->train.warmup_start),
                     config_schedule_name(cfg->train.schedule));
    return 0;
}

/* Keys one setting reads and the others would ignore are refused there, set away from their
 * default (as model.mix_ratio and model.dyt_alpha outside their schemes): a value that changes
 * nothing would split one run into several configurations (docs/design.md §4). μP's base width
 * (§6h) needs init.parametrization = mup; the momentum is SGD's, NSGD's and Muon's (Adam's
 * is beta1). */
static int validate_ignored(const config_t *cfg, char *err, size_t errlen)
{
    const int width = cfg_kidx("init", "base_width"), par = cfg_kidx("init", "parametrization");
    const int mom = cfg_kidx("train", "momentum"), opt = cfg_kidx("train", "optimizer");
    if (cfg->init.base_width != 0 && cfg->init.parametrization != PARAM_MUP) {
        if (blame(cfg, width, par) == width)
            return vfail(cfg, width, err, errlen, "only applies to init.parametrization = mup "
                         "(got standard)");
        return vfail(cfg, par, err, errlen, "init.base_width = %d needs mup (got standard)",
                     cfg->init.base_width);
    }
    const optimizer_t o = cfg->train.optimizer;
    if (off_default(cfg, mom) && o != OPT_SGD && o != OPT_NSGD && o != OPT_MUON) {
        if (blame(cfg, mom, opt) == mom)
            return vfail(cfg, mom, err, errlen, "only applies to train.optimizer = sgd, nsgd or "
                         "muon (got %s; Adam's momentum is train.beta1)", config_optimizer_name(o));
        return vfail(cfg, opt, err, errlen, "train.momentum = %g needs sgd, nsgd or muon (got %s)",
                     cfg->train.momentum, config_optimizer_name(o));
    }
    return 0;
}

/* StableAdamW divides by max(v̂, ε²) (train/optim.h): an ε whose square underflows to 0 gives
 * 0/0 on every coordinate without gradient yet, a NaN update ("diverged" at update 2), so it
 * is refused as float32 refuses values it turns into 0. A subnormal ε² is a number like any other. */
static int validate_eps(const config_t *cfg, char *err, size_t errlen)
{
    const double e = cfg->train.eps;
    if (cfg->train.optimizer != OPT_STABLEADAMW || e * e != 0.0) return 0;
    const int eps = cfg_kidx("train", "eps"), opt = cfg_kidx("train", "optimizer");
    if (blame(cfg, eps, opt) == eps)
        return vfail(cfg, eps, err, errlen, "%.12g squared is 0 in float64, and train.optimizer = "
                     "stableadamw divides by max(v, eps^2) (needs eps >= %.3g)", e, sqrt(DBL_TRUE_MIN));
    return vfail(cfg, opt, err, errlen, "stableadamw divides by max(v, eps^2), and train.eps = "
                 "%.12g squared is 0 in float64 (needs eps >= %.3g)", e, sqrt(DBL_TRUE_MIN));
}

/* Every rule; the ignored keys' only for a configuration being written (stored is 0). */
static int validate(const config_t *cfg, int stored, char *err, size_t errlen)
{
    char msg[CONFIG_ERR_MAX / 2];
    for (int k = 0; k < cfg_nkeys; k++)
        if (cfg_check_value(cfg, &cfg_keys[k], msg, sizeof msg) != 0) return vfail(cfg, k, err, errlen, "%s", msg);
    if (validate_float32(cfg, err, errlen)) return 2;

    const int heads = cfg_kidx("model", "heads"), d_model = cfg_kidx("model", "d_model");
    const int vocab = cfg_kidx("model", "vocab"), seq_len = cfg_kidx("model", "seq_len");
    const int task = cfg_kidx("data", "task"), path = cfg_kidx("data", "path");
    const char *tname = config_task_name(cfg->data.task);

    if (cfg->model.d_model % cfg->model.heads != 0) {
        if (blame(cfg, heads, d_model) == heads)
            return vfail(cfg, heads, err, errlen, "must divide model.d_model (%d)", cfg->model.d_model);
        return vfail(cfg, d_model, err, errlen, "must be a multiple of model.heads (%d)", cfg->model.heads);
    }
    if (cfg->data.task == TASK_TEXT) {
        if (!cfg->data.path[0]) {
            if (blame(cfg, task, path) == task)
                return vfail(cfg, task, err, errlen, "text needs data.path (the corpus file)");
            return vfail(cfg, path, err, errlen, "must name the corpus file for data.task = text");
        }
        if (cfg->model.vocab < 256) {
            if (blame(cfg, vocab, task) == vocab)
                return vfail(cfg, vocab, err, errlen, "must be >= 256 for data.task = text (byte-level) (got %d)",
                             cfg->model.vocab);
            return vfail(cfg, task, err, errlen, "text (byte-level) needs model.vocab >= 256 (got %d)",
                         cfg->model.vocab);
        }
    }
    if (cfg->train.steps == 0 && cfg->init.seed > SEED_MAX - (unsigned long)(cfg->probe.seeds - 1)) {
        const int seed = cfg_kidx("init", "seed"), seeds = cfg_kidx("probe", "seeds");
        return vfail(cfg, blame(cfg, seed, seeds), err, errlen, "init.seed + probe.seeds - 1 must be "
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
    if (!rc) rc = validate_schedule(cfg, err, errlen);
    if (!rc) rc = validate_remedies(cfg, err, errlen);
    if (!rc) rc = validate_optim(cfg, err, errlen);
    if (!rc) rc = validate_subopt(cfg, err, errlen);
    if (!rc && !stored) rc = validate_ignored(cfg, err, errlen);
    if (!rc) rc = validate_eps(cfg, err, errlen);
    if (rc) return rc;
    if (cfg->model.arch == ARCH_LM && (cfg->data.task == TASK_COPY || cfg->data.task == TASK_REVERSE)) {
        if (cfg->model.vocab < 3) {
            if (blame(cfg, vocab, task) == vocab)
                return vfail(cfg, vocab, err, errlen,
                             "must be >= 3 for data.task = %s (separator + 2 content tokens) (got %d)", tname,
                             cfg->model.vocab);
            return vfail(cfg, task, err, errlen, "%s needs model.vocab >= 3 (got %d)", tname, cfg->model.vocab);
        }
        if (cfg->model.seq_len < 3) {
            if (blame(cfg, seq_len, task) == seq_len)
                return vfail(cfg, seq_len, err, errlen, "must be >= 3 for data.task = %s (got %d)", tname,
                             cfg->model.seq_len);
            return vfail(cfg, task, err, errlen, "%s needs model.seq_len >= 3 (got %d)", tname,
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
