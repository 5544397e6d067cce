/* config_keys.c — the one table of keys that drives parsing, range checks, provenance and the
 * INI writer (so they cannot disagree); the defaults (the paper's, docs/design.md §4); the enum
 * names; config_to_ini. A value's parsing and checks against its key: config_value.c. */
#include "config/config_keys.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/text.h"

/* ---------------------------------------------------------------- the key table */


static const char *const arch_names[] = {"lm", "encdec", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", "none", "dyt", NULL};
static const char *const activation_names[] = {"relu", "gelu", "swiglu", NULL};
static const char *const positions_names[] = {"sinusoidal", "rope", "none", NULL};
static const char *const final_norm_names[] = {"auto", "on", "off", NULL};
static const char *const init_names[] = {"xavier_normal", "xavier_uniform", "normal", "tfixup",
                                         NULL};
static const char *const task_names[] = {"random", "copy", "reverse", "text", "translation", "mlm",
                                         NULL};
static const char *const optimizer_names[] = {"adam", "adamw", "sgd", "radam", "gi_adam",
                                              "stableadamw", "lamb", "muon", "lion", "nsgd", NULL};
static const char *const muon_scale_names[] = {"original", "match_rms_adamw", NULL};
static const char *const embed_names[] = {"normal", "xavier_uniform", NULL};
/* as written in a stored config (index = value): μParam (simple) keeps the name `mup` its
 * results were written with; a user's `mup` is read as mup_table3 (config_value.c) */
static const char *const parametrization_names[] = {"standard", "mup", "mup_table3", NULL};
static const char *const schedule_names[] = {"inverse_sqrt", "linear", "constant", "cosine",
                                             "autowu", "suboptimality", NULL};
static const char *const qk_norm_names[] = {"off", "layernorm", "rmsnorm", NULL};
static const char *const resume_names[] = {"off", "auto", NULL};   /* value 0 = off, 1 = auto */
static const char *const precision_names[] = {"float64", "float32", "bfloat16", "bfloat16_pure",
                                              "fp8", NULL};
static const char *const rounding_names[] = {"nearest", "stochastic", NULL};
static const char *const gemm_path_names[] = {"auto", "emulated", "onednn", NULL};
static const char *const measures_names[] = {"auto", "on", "off", NULL};   /* 0 = auto */
static const char *const lr_control_names[] = {"none", "curvature", "cdat", NULL};
static const char *const warmup_start_names[] = {"zero", "catapult", NULL};

#define OFF(s, n) offsetof(config_t, s.n)
#define KI(s, n, lo) {#s, #n, K_INT, OFF(s, n), (lo), INT_MAX, 0, 0, NULL, NULL}
#define KD(s, n, lo, lo_open, hi, hi_open) {#s, #n, K_DBL, OFF(s, n), (lo), (hi), (lo_open), (hi_open), NULL, NULL}
#define KB(s, n) {#s, #n, K_BOOL, OFF(s, n), 0, 0, 0, 0, NULL, NULL}
#define KO(s, n) {#s, #n, K_ONOFF, OFF(s, n), 0, 0, 0, 0, NULL, NULL}
#define KE(s, n, names) {#s, #n, K_ENUM, OFF(s, n), 0, 0, 0, 0, (names), NULL}
#define KEF(s, n, name_of) {#s, #n, K_ENUM, OFF(s, n), 0, 0, 0, 0, NULL, (name_of)}
#define KS(s, n) {#s, #n, K_STR, OFF(s, n), 0, 0, 0, 0, NULL, NULL}
#define KSEED(s, n) {#s, #n, K_SEED, OFF(s, n), 0, 0, 0, 0, NULL, NULL}

/* model.placement's values: the placement rows of the scheme table (config/scheme.c). */
static const char *placement_name_of(int v)
{
    const scheme_t *s = scheme_of_placement(v);
    return s ? s->name : NULL;
}

/* Order = order of config_to_ini = index of config_t.src_line. */
const cfg_key_t cfg_keys[] = {
    KE(model, arch, arch_names),
    KI(model, layers, 1),
    KI(model, dec_layers, 0),
    KI(model, d_model, 2),
    KI(model, heads, 1),
    KI(model, d_ff, 1),
    KI(model, vocab, 2),
    KI(model, seq_len, 1),
    KI(model, src_len, 0),
    KEF(model, placement, placement_name_of),
    KD(model, mix_ratio, 0, 0, 1, 0),
    KE(model, norm, norm_names),
    KD(model, norm_eps, 0, 1, INFINITY, 0),
    KD(model, dyt_alpha, 0, 1, INFINITY, 0),
    KE(model, activation, activation_names),
    KB(model, causal),
    KB(model, tie_embeddings),
    KE(model, final_norm, final_norm_names),
    KD(model, dropout, 0, 0, 1, 1),
    KE(model, qk_norm, qk_norm_names),
    KD(model, attn_softcap, 0, 0, INFINITY, 0),
    KE(model, positions, positions_names),
    KO(model, bias),

    KE(init, scheme, init_names),
    KD(init, std, 0, 1, INFINITY, 0),
    KB(init, zero_qk),
    KSEED(init, seed),
    KE(init, embed, embed_names),
    KE(init, parametrization, parametrization_names),
    KI(init, base_width, 0),

    KE(data, task, task_names),
    KS(data, path),
    KI(data, batch, 1),
    KD(data, label_smoothing, 0, 0, 1, 1),
    KD(data, zipf, 0, 0, INFINITY, 0),
    KI(data, max_tokens, 0),
    KI(data, min_len, 0),
    KD(data, mask_rate, 0, 1, 1, 1),

    KI(train, steps, 0),
    KE(train, optimizer, optimizer_names),
    KD(train, lr, 0, 1, INFINITY, 0),
    KI(train, warmup, 0),
    KE(train, schedule, schedule_names),
    KD(train, min_lr_ratio, 0, 0, 1, 1),
    KD(train, beta1, 0, 0, 1, 1),
    KD(train, beta2, 0, 0, 1, 1),
    KD(train, eps, 0, 1, INFINITY, 0),
    KD(train, weight_decay, 0, 0, INFINITY, 0),
    KD(train, clip, 0, 0, INFINITY, 0),
    KD(train, momentum, 0, 0, 1, 1),
    KI(train, muon_ns_steps, 1),
    KD(train, muon_ns_a, -INFINITY, 1, INFINITY, 1),
    KD(train, muon_ns_b, -INFINITY, 1, INFINITY, 1),
    KD(train, muon_ns_c, -INFINITY, 1, INFINITY, 1),
    KE(train, muon_scale, muon_scale_names),
    KD(train, muon_adamw_lr, 0, 0, INFINITY, 0),
    KD(train, qk_clip, 0, 0, INFINITY, 0),
    KD(train, f_star, -INFINITY, 1, INFINITY, 1),
    KD(train, lr_div, 1, 1, INFINITY, 1),
    KI(train, checkpoint_every, 0),
    KI(train, eval_every, 0),
    KI(train, bleu_every, -1),
    KE(train, resume, resume_names),
    KD(train, z_loss, 0, 0, INFINITY, 0),
    KE(train, precision, precision_names),
    KE(train, lr_control, lr_control_names),
    KI(train, lr_control_every, 1),
    KD(train, curvature_cap, 0, 1, INFINITY, 0),
    KD(train, cdat_sigma, 0, 1, INFINITY, 0),
    KD(train, cdat_ema, 0, 0, 1, 1),
    KE(train, warmup_start, warmup_start_names),
    KD(train, update_ratio_cap, 0, 0, INFINITY, 0),
    KD(train, spectral_bound, 0, 0, INFINITY, 0),
    KE(train, rounding, rounding_names),
    KO(train, kahan),
    KO(train, round_gemm),
    KO(train, round_attn_probs),
    KO(train, round_residual),
    KO(train, round_norm_stats),
    KO(train, attn_round_fix),
    KE(train, gemm_path, gemm_path_names),

    KI(probe, seeds, 1),
    KI(probe, batches, 1),
    KI(probe, every, 1),
    KO(probe, jacobian),
    KO(probe, model_update),
    KI(probe, curvature_every, 0),
    KI(probe, curvature_iters, 2),
    KI(probe, curvature_block_iters, 0),
    KD(probe, curvature_floor, 0, 0, 1, 1),
    KI(probe, curvature_until, 0),
    KO(probe, curvature_active_only),
    KE(probe, precision_measures, measures_names),
    KI(probe, density_probes, 0),
    KI(probe, density_iters, 2),
    KD(probe, density_sigma, 0, 1, INFINITY, 0),
    KI(probe, trace_probes, 0),
    KO(probe, critical_sharpness),
    KO(probe, density_blocks),

    KS(output, file),
    KB(output, plots),
    KB(output, overwrite),
    KI(output, log_every, 0),
};
const int cfg_nkeys = (int)(sizeof cfg_keys / sizeof cfg_keys[0]);
_Static_assert(sizeof cfg_keys / sizeof cfg_keys[0] <= CONFIG_MAX_KEYS, "raise CONFIG_MAX_KEYS in config.h");

const char *const cfg_sections[] = {"model", "init", "data", "train", "probe", "output", NULL};


/* ---------------------------------------------------------------- small helpers */


int cfg_find_key(const char *section, const char *name)
{
    for (int i = 0; i < cfg_nkeys; i++)
        if (strcmp(cfg_keys[i].section, section) == 0 && strcmp(cfg_keys[i].name, name) == 0)
            return i;
    return -1;
}

const char *config_key_section(const char *name)
{
    char n[64];
    size_t k = 0;
    for (; name[k] && k + 1 < sizeof n; k++) n[k] = name[k] == '-' ? '_' : name[k];
    n[k] = '\0';
    for (int i = 0; i < cfg_nkeys; i++)
        if (strcmp(cfg_keys[i].name, n) == 0) return cfg_keys[i].section;
    return NULL;
}

int config_key_index(const char *section, const char *name)
{
    return cfg_find_key(section, name);
}

int cfg_kidx(const char *section, const char *name)
{
    int i = cfg_find_key(section, name);
    return i < 0 ? 0 : i;   /* only called with names from the table */
}

int cfg_known_section(const char *s)
{
    for (int i = 0; cfg_sections[i]; i++)
        if (strcmp(cfg_sections[i], s) == 0) return 1;
    return 0;
}

int cfg_name_count(const char *const *names)
{
    int n = 0;
    while (names[n]) n++;
    return n;
}

const char *cfg_enum_name(const cfg_key_t *k, int v)
{
    if (v < 0) return NULL;
    if (k->name_of) return k->name_of(v);
    return v < cfg_name_count(k->names) ? k->names[v] : NULL;
}


void cfg_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    text_mask_controls(err);   // a value echoed back never drives the terminal
}

/* ---------------------------------------------------------------- defaults, names */

void config_defaults(config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->model.arch = ARCH_LM;
    cfg->model.layers = 6;
    cfg->model.dec_layers = 0;
    cfg->model.d_model = 512;
    cfg->model.heads = 4;
    cfg->model.d_ff = 1024;
    cfg->model.vocab = 1000;
    cfg->model.seq_len = 64;
    cfg->model.src_len = 0;
    cfg->model.placement = PLACEMENT_POST;
    cfg->model.norm = NORM_LAYERNORM;
    cfg->model.norm_eps = 1e-5;
    cfg->model.mix_ratio = 0.25;
    cfg->model.dyt_alpha = 0.5;
    cfg->model.activation = ACT_RELU;
    cfg->model.causal = 0;
    cfg->model.tie_embeddings = 1;
    cfg->model.final_norm = FINAL_NORM_AUTO;
    cfg->model.dropout = 0.0;
    cfg->model.qk_norm = QK_NORM_OFF;
    cfg->model.attn_softcap = 0.0;
    cfg->model.positions = POS_SINUSOIDAL;
    cfg->model.bias = 1;

    cfg->init.scheme = INIT_XAVIER_NORMAL;
    cfg->init.std = 0.02;
    cfg->init.zero_qk = 0;
    cfg->init.seed = 1;
    cfg->init.embed = EMBED_NORMAL;
    cfg->init.parametrization = PARAM_STANDARD;
    cfg->init.base_width = 0;   // unset: μP requires it

    cfg->data.task = TASK_RANDOM;
    cfg->data.path[0] = '\0';
    cfg->data.batch = 8;
    cfg->data.label_smoothing = 0.0;
    cfg->data.zipf = 0.0;
    cfg->data.max_tokens = 0;
    cfg->data.min_len = 0;
    cfg->data.mask_rate = 0.15;   // BERT (Devlin et al. 2019): 15 % of the positions

    cfg->train.steps = 0;
    cfg->train.optimizer = OPT_ADAM;
    cfg->train.lr = 5e-4;
    cfg->train.warmup = 4000;
    cfg->train.schedule = SCHED_INVERSE_SQRT;
    cfg->train.min_lr_ratio = 0.0;   // Loshchilov & Hutter 2017: η_min = 0
    cfg->train.beta1 = 0.9;
    cfg->train.beta2 = 0.98;
    cfg->train.eps = 1e-8;
    cfg->train.weight_decay = 0.0;
    cfg->train.clip = 0.0;
    cfg->train.momentum = 0.9;
    cfg->train.muon_ns_steps = 5;        // Jordan et al. 2024: NS₅ with the tuned quintic
    cfg->train.muon_ns_a = 3.4445;
    cfg->train.muon_ns_b = -4.7750;
    cfg->train.muon_ns_c = 2.0315;
    cfg->train.muon_scale = MUON_SCALE_ORIGINAL;
    cfg->train.muon_adamw_lr = 0.0;      // 0: train.lr
    cfg->train.qk_clip = 0.0;            // off
    cfg->train.f_star = 0.0;             // cross-entropy ≥ 0 (docs/design.md §6h)
    cfg->train.lr_div = 100.0;           // Riabinin et al. 2026's code: div_factor 1e2
    cfg->train.checkpoint_every = 0;
    cfg->train.eval_every = 100;
    cfg->train.resume = 0;
    cfg->train.z_loss = 0.0;
    cfg->train.precision = PRECISION_FLOAT64;
    cfg->train.lr_control = LR_CONTROL_NONE;
    cfg->train.lr_control_every = 5;
    cfg->train.curvature_cap = 1.0;
    cfg->train.cdat_sigma = 2.0;      // Roulet et al. 2024: σ = 2, "on the edge"
    cfg->train.cdat_ema = 0.9;
    cfg->train.warmup_start = WARMUP_START_ZERO;
    cfg->train.update_ratio_cap = 0.0;
    cfg->train.spectral_bound = 0.0;
    cfg->train.rounding = ROUNDING_NEAREST;
    cfg->train.kahan = 0;
    cfg->train.gemm_path = GEMM_PATH_EMULATED;   // the exact, portable default: a file's bits
                                                 // never depend on which CPU ran it
    cfg->train.round_gemm = 1;         // bfloat16 mixed precision's usual recipe (docs/design.md,
    cfg->train.round_attn_probs = 1;   // "Low precision, emulated"): every operand of a product,
    cfg->train.round_residual = 0;     // activations stored between products in float32,
    cfg->train.round_norm_stats = 0;   // norms in float32 (as autocast runs them)
    cfg->train.attn_round_fix = 0;

    cfg->probe.seeds = 10;
    cfg->probe.batches = 10;
    cfg->probe.every = 100;
    cfg->probe.jacobian = 1;
    cfg->probe.model_update = 1;
    cfg->probe.curvature_every = 0;         // off (docs/design.md §10)
    cfg->probe.curvature_iters = 20;
    cfg->probe.curvature_block_iters = 10;
    cfg->probe.curvature_floor = 1e-2;      // τ of the floor (docs/design.md §10)
    cfg->probe.curvature_until = 0;         // every row to the end
    cfg->probe.curvature_active_only = 0;
    cfg->probe.precision_measures = 0;      // auto: with the low precisions
    cfg->probe.density_probes = 0;          // the estimators (docs/design.md §10): off
    cfg->probe.density_iters = 16;
    cfg->probe.density_sigma = 0.1;
    cfg->probe.trace_probes = 0;
    cfg->probe.critical_sharpness = 0;
    cfg->probe.density_blocks = 0;

    cfg->output.file[0] = '\0';
    cfg->output.plots = 0;
    cfg->output.overwrite = 0;
    cfg->output.log_every = 100;

    cfg->path[0] = '\0';
    snprintf(cfg->name, sizeof cfg->name, "default");
}

void cfg_optimizer_defaults(config_t *cfg)
{
    // docs/design.md §6h: Muon's β = 0.95 (Jordan et al. 2024); Lion's (β₁, β₂) = (0.9, 0.99)
    // (Chen et al. 2023) — each only where the key was left at its default
    if (cfg->train.optimizer == OPT_MUON && !cfg->src_line[cfg_kidx("train", "momentum")])
        cfg->train.momentum = 0.95;
    if (cfg->train.optimizer == OPT_LION && !cfg->src_line[cfg_kidx("train", "beta2")])
        cfg->train.beta2 = 0.99;
    // the suboptimality schedule is its own warm-up (Riabinin et al. 2026)
    if (cfg->train.schedule == SCHED_SUBOPTIMALITY && !cfg->src_line[cfg_kidx("train", "warmup")])
        cfg->train.warmup = 0;
}

static const char *enum_name(const char *const *names, int v)
{
    return v >= 0 && v < cfg_name_count(names) ? names[v] : "?";
}

const char *config_arch_name(arch_t a) { return enum_name(arch_names, (int)a); }
const char *config_placement_name(placement_t p)
{
    const char *name = placement_name_of((int)p);
    return name ? name : "?";
}
const char *config_norm_name(norm_kind_t n) { return enum_name(norm_names, (int)n); }
const char *config_activation_name(activation_t a) { return enum_name(activation_names, (int)a); }
const char *config_positions_name(positions_t p) { return enum_name(positions_names, (int)p); }
const char *config_task_name(task_t t) { return enum_name(task_names, (int)t); }
const char *config_optimizer_name(optimizer_t o) { return enum_name(optimizer_names, (int)o); }
const char *config_schedule_name(schedule_t s) { return enum_name(schedule_names, (int)s); }
const char *config_precision_name(precision_t p) { return enum_name(precision_names, (int)p); }
const char *config_lr_control_name(lr_control_t c) { return enum_name(lr_control_names, (int)c); }
int config_is_mup(const config_t *cfg)
{
    return cfg->init.parametrization == PARAM_MUP_SIMPLE ||
           cfg->init.parametrization == PARAM_MUP_TABLE3;
}

const char *config_warmup_start_name(warmup_start_t w)
{
    return enum_name(warmup_start_names, (int)w);
}

const char *config_rounding_name(rounding_t r) { return enum_name(rounding_names, (int)r); }
const char *config_gemm_path_name(gemm_path_t g) { return enum_name(gemm_path_names, (int)g); }
int config_core_float(const config_t *cfg) { return cfg->train.precision != PRECISION_FLOAT64; }
int config_precision_measures(const config_t *cfg)
{
    return cfg->probe.precision_measures == 1 || (cfg->probe.precision_measures == 0 && config_lowp(cfg));
}

int config_lowp(const config_t *cfg)
{
    return cfg->train.precision == PRECISION_BFLOAT16 ||
           cfg->train.precision == PRECISION_BFLOAT16_PURE || cfg->train.precision == PRECISION_FP8;
}
const char *config_init_name(init_scheme_t s) { return enum_name(init_names, (int)s); }

int config_dec_layers(const config_t *cfg)
{
    if (cfg->model.arch != ARCH_ENCDEC) return 0;
    return cfg->model.dec_layers > 0 ? cfg->model.dec_layers : cfg->model.layers;
}

int config_src_len(const config_t *cfg)
{
    if (cfg->model.arch != ARCH_ENCDEC) return 0;
    return cfg->model.src_len > 0 ? cfg->model.src_len : cfg->model.seq_len;
}

int config_has_final_norm(const config_t *cfg)
{
    if (cfg->model.norm == NORM_NONE) return 0;
    if (cfg->model.final_norm == FINAL_NORM_ON) return 1;
    if (cfg->model.final_norm == FINAL_NORM_OFF) return 0;
    // auto: the schemes that leave the residual stream unnormalised end with a norm
    const scheme_t *s = scheme_of_placement((int)cfg->model.placement);
    return s && s->final_norm;
}

/* ---------------------------------------------------------------- INI writer */

/* A remedy key (docs/design.md §6k) left out of the resolved config: at its default, or one
 * its controller does not read. */
static int remedy_key_silent(const config_t *cfg, size_t off)
{
    const lr_control_t c = cfg->train.lr_control;
    if (off == offsetof(config_t, train.lr_control)) return c == LR_CONTROL_NONE;
    if (off == offsetof(config_t, train.lr_control_every) ||
        off == offsetof(config_t, train.curvature_cap))
        return c != LR_CONTROL_CURVATURE;
    if (off == offsetof(config_t, train.cdat_sigma) || off == offsetof(config_t, train.cdat_ema))
        return c != LR_CONTROL_CDAT;
    if (off == offsetof(config_t, train.warmup_start))
        return cfg->train.warmup_start == WARMUP_START_ZERO;
    if (off == offsetof(config_t, train.update_ratio_cap)) return cfg->train.update_ratio_cap == 0.0;
    if (off == offsetof(config_t, train.spectral_bound)) return cfg->train.spectral_bound == 0.0;
    return 0;
}

int config_key_applies(const config_t *cfg, const cfg_key_t *k)
{
    const size_t muon_first = offsetof(config_t, train.muon_ns_steps);
    if (k->off >= muon_first && k->off <= offsetof(config_t, train.muon_adamw_lr))
        return cfg->train.optimizer == OPT_MUON;
    if (k->off == offsetof(config_t, train.qk_clip)) return cfg->train.qk_clip > 0.0;
    if (k->off == offsetof(config_t, train.f_star) || k->off == offsetof(config_t, train.lr_div))
        return cfg->train.schedule == SCHED_SUBOPTIMALITY;
    return 1;
}

/* Shortest of %.15g, %.16g, %.17g that reads back to the same double (%.17g always does). */
static void format_double(double x, char *buf, size_t n)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        double y = strtod(buf, NULL);
        if (memcmp(&x, &y, sizeof x) == 0) return;
    }
}

/* Key k's value in cfg as config_to_ini writes it, appended to b. */
static void key_value(sbuf_t *b, const config_t *cfg, const cfg_key_t *k)
{
    const void *f = cfg_cfield(cfg, k);
    char num[40];
    switch (k->type) {
    case K_INT:
        if (k->off == offsetof(config_t, model.dec_layers))
            sbuf_printf(b, "%d\n", config_dec_layers(cfg));
        else if (k->off == offsetof(config_t, model.src_len))
            sbuf_printf(b, "%d\n", config_src_len(cfg));
        else
            sbuf_printf(b, "%d\n", *(const int *)f);
        break;
    case K_DBL:
        format_double(*(const double *)f, num, sizeof num);
        sbuf_printf(b, "%s\n", num);
        break;
    case K_BOOL: sbuf_printf(b, "%s\n", *(const int *)f ? "true" : "false"); break;
    case K_ONOFF: sbuf_printf(b, "%s\n", *(const int *)f ? "on" : "off"); break;
    case K_SEED: sbuf_printf(b, "%lu\n", *(const unsigned long *)f); break;
    case K_STR: sbuf_printf(b, "%.*s\n", CONFIG_PATH_MAX - 1, (const char *)f); break;
    case K_ENUM:
        if (k->off == offsetof(config_t, model.final_norm))
            sbuf_printf(b, "%s\n", config_has_final_norm(cfg) ? "on" : "off");
        else if (cfg_enum_name(k, *(const int *)f))
            sbuf_printf(b, "%s\n", cfg_enum_name(k, *(const int *)f));
        else
            sbuf_printf(b, "?\n");
        break;
    }
}

/* The low-precision keys are written only where they act (docs/design.md, "Low precision,
 * emulated"): the rounding places under bfloat16* and fp8, rounding and kahan under
 * bfloat16_pure, probe.precision_measures when not auto, attn_round_fix when on, gemm_path when not emulated (the default: a file
 * keeps the config text it had before the key; auto and onednn are written, so a run of either
 * is another configuration). 1 for such a key that does not act
 * under cfg. */
static int lowp_key_idle(const config_t *cfg, const cfg_key_t *k)
{
    const size_t places[] = {offsetof(config_t, train.round_gemm),
                             offsetof(config_t, train.round_attn_probs),
                             offsetof(config_t, train.round_residual),
                             offsetof(config_t, train.round_norm_stats)};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
        if (k->off == places[i]) return !config_lowp(cfg);
    if (k->off == offsetof(config_t, train.rounding) || k->off == offsetof(config_t, train.kahan))
        return cfg->train.precision != PRECISION_BFLOAT16_PURE;
    if (k->off == offsetof(config_t, train.gemm_path)) return cfg->train.gemm_path == GEMM_PATH_EMULATED;
    if (k->off == offsetof(config_t, train.attn_round_fix)) return !cfg->train.attn_round_fix;
    return k->off == offsetof(config_t, probe.precision_measures) && cfg->probe.precision_measures == 0;
}

size_t config_to_ini(const config_t *cfg, char *buf, size_t len)
{
    sbuf_t b = sbuf_fixed(buf, len);
    sbuf_printf(&b, "; resolved configuration: every key explicit, final_norm, dec_layers and src_len resolved\n");
    const char *section = "";
    for (int i = 0; i < cfg_nkeys; i++) {
        const cfg_key_t *k = &cfg_keys[i];
        if (strcmp(k->section, section) != 0) {
            section = k->section;
            sbuf_printf(&b, "\n[%s]\n", section);
        }
        // a key added after results were written appears only when set, so that the config
        // attribute of every run that does not use it stays what it was
        if (k->off == offsetof(config_t, train.bleu_every) && cfg->train.bleu_every == 0) continue;
        // read by the mlm task only, and written only there: every other run's stored
        // config keeps the text it had before the key existed (docs/design.md §6f)
        if (k->off == offsetof(config_t, data.mask_rate) && cfg->data.task != TASK_MLM) continue;
        // written for float32 runs only: a float64 run's config is the text it always was
        if (k->off == offsetof(config_t, train.precision) &&
            cfg->train.precision == PRECISION_FLOAT64)
            continue;
        if (lowp_key_idle(cfg, k)) continue;
        // the embedding's draw (docs/design.md §5) and μP: written only when set
        if ((k->off == offsetof(config_t, init.embed) && cfg->init.embed == EMBED_NORMAL) ||
            (k->off == offsetof(config_t, init.parametrization) &&
             cfg->init.parametrization == PARAM_STANDARD) ||
            (k->off == offsetof(config_t, init.base_width) && cfg->init.base_width == 0))
            continue;
        // today's block (docs/design.md §6i): written only away from the 2017 block's defaults
        if (k->off == offsetof(config_t, model.positions) && cfg->model.positions == POS_SINUSOIDAL)
            continue;
        if (k->off == offsetof(config_t, model.bias) && cfg->model.bias) continue;
        // the curvature keys (docs/design.md §10) only when set away from their defaults
        if (k->off == offsetof(config_t, probe.curvature_every) && cfg->probe.curvature_every == 0)
            continue;
        if (k->off == offsetof(config_t, probe.curvature_iters) && cfg->probe.curvature_iters == 20)
            continue;
        if (k->off == offsetof(config_t, probe.curvature_block_iters) &&
            cfg->probe.curvature_block_iters == 10)
            continue;
        // keys added after results were written: only when set away from their default
        if (k->off == offsetof(config_t, train.min_lr_ratio) && cfg->train.min_lr_ratio == 0.0) continue;
        if (k->off == offsetof(config_t, output.log_every) && cfg->output.log_every == 100) continue;
        if ((k->off == offsetof(config_t, probe.curvature_until) && cfg->probe.curvature_until == 0) ||
            (k->off == offsetof(config_t, probe.curvature_floor) &&
             cfg->probe.curvature_floor == 1e-2) ||
            (k->off == offsetof(config_t, probe.curvature_active_only) &&
             !cfg->probe.curvature_active_only))
            continue;
        // the remedies (docs/design.md §6k): each only where it matters
        if (remedy_key_silent(cfg, k->off)) continue;
        // the optimizers of docs/design.md §6h: their keys only where they apply
        if (!config_key_applies(cfg, k)) continue;
        // the estimators (docs/design.md §10): only when set away from their defaults
        if ((k->off == offsetof(config_t, probe.density_probes) && cfg->probe.density_probes == 0) ||
            (k->off == offsetof(config_t, probe.density_iters) && cfg->probe.density_iters == 16) ||
            (k->off == offsetof(config_t, probe.density_sigma) && cfg->probe.density_sigma == 0.1) ||
            (k->off == offsetof(config_t, probe.trace_probes) && cfg->probe.trace_probes == 0) ||
            (k->off == offsetof(config_t, probe.critical_sharpness) &&
             !cfg->probe.critical_sharpness) ||
            (k->off == offsetof(config_t, probe.density_blocks) && !cfg->probe.density_blocks))
            continue;
        sbuf_printf(&b, "%s = ", k->name);
        key_value(&b, cfg, k);
    }
    return b.len;
}

int config_value_text(const config_t *cfg, const char *item, char *buf, size_t len)
{
    const char *dot = strchr(item, '.');
    char section[32];
    if (!dot || (size_t)(dot - item) >= sizeof section || !len) return -1;
    snprintf(section, sizeof section, "%.*s", (int)(dot - item), item);
    const int k = cfg_find_key(section, dot + 1);
    if (k < 0) return -1;
    sbuf_t b = sbuf_fixed(buf, len);
    key_value(&b, cfg, &cfg_keys[k]);
    buf[strcspn(buf, "\n")] = '\0';   // the value without config_to_ini's line end
    return 0;
}
