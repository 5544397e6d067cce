/* config_validate_train.c — the rules of the [train] keys (docs/design.md §4, §6h, §6k):
 * the schedules, the remedies, the norm-constrained optimizers, keys a run would ignore and
 * StableAdamW's ε; part of config_validate (config_validate.c). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "config/config_keys.h"
#include "config/config_validate_internal.h"

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
            return cfg_vfail(cfg, cfg_blame(cfg, k, opt), err, errlen, "train.%s is Muon's: needs "
                         "train.optimizer = muon (got %s)", MUON_KEYS[i],
                         config_optimizer_name(cfg->train.optimizer));
    }
    const int clip = cfg_kidx("train", "qk_clip");
    if (cfg->train.qk_clip > 0 && cfg->model.qk_norm != QK_NORM_OFF)
        return cfg_vfail(cfg, cfg_blame(cfg, clip, cfg_kidx("model", "qk_norm")), err, errlen,
                     "train.qk_clip (scales W_Q, W_K) and model.qk_norm (divides q, k by their "
                     "norm, so the scale cannot lower the logits) do not go together");
    if (cfg->train.qk_clip > 0 && cfg->model.attn_softcap > 0)
        return cfg_vfail(cfg, cfg_blame(cfg, clip, cfg_kidx("model", "attn_softcap")), err, errlen,
                     "train.qk_clip and model.attn_softcap do not go together: the capped logit "
                     "is not q.k/sqrt(d_head), which the clip scales");
    if (config_is_mup(cfg) &&
        (cfg->train.optimizer == OPT_MUON || cfg->train.optimizer == OPT_LION ||
         cfg->train.optimizer == OPT_NSGD))
        return cfg_vfail(cfg, cfg_blame(cfg, cfg_kidx("init", "parametrization"), opt), err, errlen,
                     "muP (init.parametrization = mup) is defined here for the Adam family, not "
                     "for train.optimizer = %s", config_optimizer_name(cfg->train.optimizer));
    if (cfg->probe.curvature_every > 0 &&
        (cfg->train.optimizer == OPT_MUON || cfg->train.optimizer == OPT_LION ||
         cfg->train.optimizer == OPT_NSGD))
        return cfg_vfail(cfg, cfg_blame(cfg, cfg_kidx("probe", "curvature_every"), opt), err, errlen,
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
                return cfg_vfail(cfg, cfg_blame(cfg, cfg_kidx("train", KEYS[i]), sched), err, errlen,
                             "needs train.schedule = suboptimality (got %s)",
                             config_schedule_name(cfg->train.schedule));
        return 0;
    }
    if (o != OPT_MUON && o != OPT_LION && o != OPT_NSGD)
        return cfg_vfail(cfg, cfg_blame(cfg, sched, opt), err, errlen, "suboptimality fits its constants "
                     "to a norm-constrained optimizer's norm (Riabinin et al. 2026): needs "
                     "train.optimizer = muon, lion or nsgd (got %s)", config_optimizer_name(o));
    if (cfg->train.warmup > 1)
        return cfg_vfail(cfg, cfg_blame(cfg, cfg_kidx("train", "warmup"), sched), err, errlen,
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
    if (cfg_blame(cfg, ratio, sched) == ratio)
        return cfg_vfail(cfg, ratio, err, errlen, "the floor of the cosine decay: needs train.schedule "
                     "= cosine (got %s)", config_schedule_name(cfg->train.schedule));
    return cfg_vfail(cfg, sched, err, errlen, "train.min_lr_ratio = %g needs cosine (got %s)",
                 cfg->train.min_lr_ratio, config_schedule_name(cfg->train.schedule));
}

/* A remedy key (docs/design.md §6k) set away from its default where nothing reads it. */
static int remedy_unread(const config_t *cfg, const char *name, int unread, const char *needs,
                         char *err, size_t errlen)
{
    if (!unread) return 0;
    return cfg_vfail(cfg, cfg_kidx("train", name), err, errlen, "needs %s (got train.lr_control = %s)",
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
        return cfg_vfail(cfg, cfg_kidx("train", "warmup_start"), err, errlen, "catapult starts a "
                     "linear warm-up: not with train.schedule = autowu (its own warm-up)");
    if (autowu && cfg->train.warmup < 2) {
        const int sc = cfg_kidx("train", "schedule"), w = cfg_kidx("train", "warmup");
        return cfg_vfail(cfg, cfg_blame(cfg, sc, w), err, errlen, "train.schedule = autowu warms up for "
                     "at most train.warmup updates: needs train.warmup >= 2 (got %d)",
                     cfg->train.warmup);
    }
    if (catapult && cfg->train.warmup < 2) {
        const int ws = cfg_kidx("train", "warmup_start"), w = cfg_kidx("train", "warmup");
        return cfg_vfail(cfg, cfg_blame(cfg, ws, w), err, errlen, "train.warmup_start = catapult warms "
                     "up from the catapult lr: needs train.warmup >= 2 (got %d)", cfg->train.warmup);
    }
    const int curvature = cfg->probe.curvature_every > 0 || curv;
    if (cfg->train.optimizer == OPT_LAMB && curvature) {
        const int opt = cfg_kidx("train", "optimizer");
        const int k = curv ? cfg_kidx("train", "lr_control") : cfg_kidx("probe", "curvature_every");
        return cfg_vfail(cfg, cfg_blame(cfg, k, opt), err, errlen, "the curvature measure has no "
                     "preconditioner for train.optimizer = lamb (its per-tensor trust ratio)");
    }
    const optimizer_t o = cfg->train.optimizer;
    if (cfg->train.lr_control != LR_CONTROL_NONE && (o == OPT_MUON || o == OPT_LION || o == OPT_NSGD)) {
        const int opt = cfg_kidx("train", "optimizer"), k = cfg_kidx("train", "lr_control");
        return cfg_vfail(cfg, cfg_blame(cfg, k, opt), err, errlen, "the lr controllers are defined on sgd "
                     "and the Adam family (the curvature cap's threshold, CDAT's direction), not "
                     "on train.optimizer = %s", config_optimizer_name(o));
    }
    const int any = cfg->train.lr_control != LR_CONTROL_NONE || catapult || autowu ||
                    cfg->train.update_ratio_cap > 0.0 || cfg->train.spectral_bound > 0.0;
    if (any && cfg->train.steps == 0)
        return cfg_vfail(cfg, cfg_kidx("train", "steps"), err, errlen, "the remedies (train.lr_control, "
                     "warmup_start, update_ratio_cap, spectral_bound) act on training: needs "
                     "train.steps > 0");
    if ((cfg->train.lr_control != LR_CONTROL_NONE || catapult || autowu) && cfg->train.resume)
        return cfg_vfail(cfg, cfg_kidx("train", "resume"), err, errlen, "must be off with "
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
    if (cfg->init.base_width != 0 && !config_is_mup(cfg)) {
        if (cfg_blame(cfg, width, par) == width)
            return cfg_vfail(cfg, width, err, errlen, "only applies to init.parametrization = mup "
                         "(got standard)");
        return cfg_vfail(cfg, par, err, errlen, "init.base_width = %d needs mup (got standard)",
                     cfg->init.base_width);
    }
    const optimizer_t o = cfg->train.optimizer;
    if (cfg_off_default(cfg, mom) && o != OPT_SGD && o != OPT_NSGD && o != OPT_MUON) {
        if (cfg_blame(cfg, mom, opt) == mom)
            return cfg_vfail(cfg, mom, err, errlen, "only applies to train.optimizer = sgd, nsgd or "
                         "muon (got %s; Adam's momentum is train.beta1)", config_optimizer_name(o));
        return cfg_vfail(cfg, opt, err, errlen, "train.momentum = %g needs sgd, nsgd or muon (got %s)",
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
    if (cfg_blame(cfg, eps, opt) == eps)
        return cfg_vfail(cfg, eps, err, errlen, "%.12g squared is 0 in float64, and train.optimizer = "
                     "stableadamw divides by max(v, eps^2) (needs eps >= %.3g)", e, sqrt(DBL_TRUE_MIN));
    return cfg_vfail(cfg, opt, err, errlen, "stableadamw divides by max(v, eps^2), and train.eps = "
                 "%.12g squared is 0 in float64 (needs eps >= %.3g)", e, sqrt(DBL_TRUE_MIN));
}

int cfg_validate_train(const config_t *cfg, int stored, char *err, size_t errlen)
{
    int rc = validate_schedule(cfg, err, errlen);
    if (!rc) rc = validate_remedies(cfg, err, errlen);
    if (!rc) rc = validate_optim(cfg, err, errlen);
    if (!rc) rc = validate_subopt(cfg, err, errlen);
    if (!rc && !stored) rc = validate_ignored(cfg, err, errlen);
    if (!rc) rc = validate_eps(cfg, err, errlen);
    return rc;
}
