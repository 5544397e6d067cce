/* config_validate.c — config_validate: every value in range, then the rules between keys
 * (docs/design.md §4, §6b, §6c), each error naming the key to change and where it was set. */
#include "config/config_keys.h"

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

/* The schemes' rules (docs/design.md §6c): which need norms, which remove them; cfg_keys that only
 * mean something for one scheme must not be set for another. */
static int validate_scheme(const config_t *cfg, char *err, size_t errlen)
{
    const int placement = cfg_kidx("model", "placement"), norm = cfg_kidx("model", "norm");
    const int scheme = cfg_kidx("init", "scheme"), mix = cfg_kidx("model", "mix_ratio");
    const int dyt = cfg_kidx("model", "dyt_alpha");
    const char *pname = config_placement_name(cfg->model.placement);
    const placement_t pl = cfg->model.placement;
    const int none = cfg->model.norm == NORM_NONE;
    if (pl == PLACEMENT_REZERO && !none)
        return vfail(cfg, blame(cfg, norm, placement), err, errlen,
                     "rezero replaces the norms by a learnable residual scale: needs model.norm = none");
    if (cfg->init.scheme == INIT_TFIXUP && !none)
        return vfail(cfg, blame(cfg, norm, scheme), err, errlen,
                     "tfixup is an initialisation for a model without norms: needs model.norm = none");
    if (cfg->init.scheme == INIT_TFIXUP && pl != PLACEMENT_POST && pl != PLACEMENT_PRE)
        return vfail(cfg, blame(cfg, placement, scheme), err, errlen,
                     "tfixup goes with placement post or pre (the same without norms), not %s", pname);
    if (none && pl != PLACEMENT_POST && pl != PLACEMENT_PRE && pl != PLACEMENT_REZERO)
        return vfail(cfg, blame(cfg, norm, placement), err, errlen,
                     "%s places norms; model.norm = none removes them (use post, pre or rezero)",
                     pname);
    // a resolved configuration writes every key: only a value other than the default is a
    // contradiction
    config_t d;
    config_defaults(&d);
    if (pl != PLACEMENT_MIXLN && cfg->model.mix_ratio != d.model.mix_ratio)
        return vfail(cfg, mix, err, errlen, "only applies to model.placement = mixln (got %s)", pname);
    if (cfg->model.norm != NORM_DYT && cfg->model.dyt_alpha != d.model.dyt_alpha)
        return vfail(cfg, dyt, err, errlen, "only applies to model.norm = dyt (got %s)",
                     config_norm_name(cfg->model.norm));
    return 0;
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
    return 0;
}

int config_validate(const config_t *cfg, char *err, size_t errlen)
{
    char msg[CONFIG_ERR_MAX / 2];
    for (int k = 0; k < cfg_nkeys; k++)
        if (cfg_check_value(cfg, &cfg_keys[k], msg, sizeof msg) != 0) return vfail(cfg, k, err, errlen, "%s", msg);

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
    int rc = validate_arch(cfg, err, errlen);
    if (!rc) rc = validate_scheme(cfg, err, errlen);
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
