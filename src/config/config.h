/* config.h — a run's configuration: INI file (+ --set overrides) -> validated struct.
 *
 * Every key is optional; the defaults are the paper's (docs/design.md §4). Any error
 * (malformed line, unknown section/key, bad value, contradiction) is reported as
 * "FILE:LINE: key: message" (or "--set key: message") and is a usage error (exit 2).
 */
#ifndef STABILITY_CONFIG_H
#define STABILITY_CONFIG_H

#include <stddef.h>
#include "config/scheme.h"   /* placement_t and the table of schemes */
#include "util/kinds.h"      /* norm_kind_t, activation_t */

#define CONFIG_PATH_MAX 1024
#define CONFIG_ERR_MAX 1536

typedef enum { ARCH_LM = 0, ARCH_ENCDEC = 1 } arch_t;
typedef enum { FINAL_NORM_AUTO = 0, FINAL_NORM_ON = 1, FINAL_NORM_OFF = 2 } final_norm_t;
typedef enum { INIT_XAVIER_NORMAL = 0, INIT_XAVIER_UNIFORM = 1, INIT_NORMAL = 2, INIT_TFIXUP = 3 } init_scheme_t;
typedef enum { TASK_RANDOM = 0, TASK_COPY = 1, TASK_REVERSE = 2, TASK_TEXT = 3,
               TASK_TRANSLATION = 4, TASK_MLM = 5 } task_t;
typedef enum { OPT_ADAM = 0, OPT_ADAMW = 1, OPT_SGD = 2, OPT_RADAM = 3, OPT_GI_ADAM = 4,
               OPT_STABLEADAMW = 5, OPT_LAMB = 6, OPT_MUON = 7, OPT_LION = 8,
               OPT_NSGD = 9 } optimizer_t;
/* Muon's step scale s (docs/design.md §6h): Jordan's √max(1, fan_out/fan_in) or Moonlight's
 * 0.2·√max(fan_in, fan_out). */
typedef enum { MUON_SCALE_ORIGINAL = 0, MUON_SCALE_MATCH_RMS_ADAMW = 1 } muon_scale_t;
/* How tok_embed (and an untied lm_head) are drawn (docs/design.md §5). */
typedef enum { EMBED_NORMAL = 0, EMBED_XAVIER_UNIFORM = 1 } embed_init_t;
/* The parametrization (docs/design.md §6h): standard; μParam (simple), the rules of the results
 * written before Table 3 was built (a user's `mup_simple`, stored as `mup`); or μP as Yang et al.
 * 2022, Table 3 (a user's `mup`, stored as `mup_table3`). */
typedef enum { PARAM_STANDARD = 0, PARAM_MUP_SIMPLE = 1, PARAM_MUP_TABLE3 = 2 } parametrization_t;
typedef enum { QK_NORM_OFF = 0, QK_NORM_LAYERNORM = 1, QK_NORM_RMSNORM = 2 } qk_norm_t;
/* How a token's position reaches the model (model.positions; docs/design.md §6i): sinusoidal
 * vectors added to the input, rotary positions on q and k of self-attention, or none. */
typedef enum { POS_SINUSOIDAL = 0, POS_ROPE = 1, POS_NONE = 2 } positions_t;
typedef enum { SCHED_INVERSE_SQRT = 0, SCHED_LINEAR = 1, SCHED_CONSTANT = 2, SCHED_COSINE = 3,
               SCHED_AUTOWU = 4, SCHED_SUBOPTIMALITY = 5 } schedule_t;
/* The lr controllers of the remedies (docs/design.md §6k). */
typedef enum { LR_CONTROL_NONE = 0, LR_CONTROL_CURVATURE = 1, LR_CONTROL_CDAT = 2 } lr_control_t;
typedef enum { WARMUP_START_ZERO = 0, WARMUP_START_CATAPULT = 1 } warmup_start_t;
/* The element type of a training run's tensors (docs/design.md §2, "One core, two precisions"),
 * and the emulated low precisions on the float32 core (docs/design.md, "Low precision,
 * emulated"): bfloat16 (mixed: rounded operands, float32 master weights), bfloat16_pure (the
 * weights themselves bfloat16), fp8 (GEMM operands E4M3, gradients E5M2, per-tensor scales;
 * the other places bfloat16). */
typedef enum { PRECISION_FLOAT64 = 0, PRECISION_FLOAT32 = 1, PRECISION_BFLOAT16 = 2,
               PRECISION_BFLOAT16_PURE = 3, PRECISION_FP8 = 4 } precision_t;
/* How bfloat16_pure stores an updated weight (train.rounding). */
typedef enum { ROUNDING_NEAREST = 0, ROUNDING_STOCHASTIC = 1 } rounding_t;
/* What computes bfloat16's products (train.gemm_path; docs/design.md, "The fast bfloat16 path"):
 * auto (oneDNN where the CPU has AMX, else the emulation), the emulation, oneDNN. */
typedef enum { GEMM_PATH_AUTO = 0, GEMM_PATH_EMULATED = 1, GEMM_PATH_ONEDNN = 2 } gemm_path_t;

typedef struct config {
    struct {
        arch_t arch;         /* lm (one stack) | encdec          default lm  */
        int layers;          /* L (encdec: encoder layers), >= 1 default 6   */
        int dec_layers;      /* encdec: decoder layers, 0 = layers  default 0 */
        int d_model;         /* d, >= 2                          default 512 */
        int heads;           /* divides d_model                  default 4   */
        int d_ff;            /* >= 1                             default 1024 */
        int vocab;           /* >= 2                             default 1000 */
        int seq_len;         /* n (encdec: max target length), >= 1  default 64 */
        int src_len;         /* encdec: max source length, 0 = seq_len   default 0 */
        placement_t placement;   /* a row of config/scheme.c     default post */
        double mix_ratio;        /* mixln: the first ⌊mix_ratio·L⌋ layers Post-LN, default 0.25 */
        norm_kind_t norm;        /* layernorm | rmsnorm | none | dyt  default layernorm */
        double norm_eps;         /* > 0                          default 1e-5 */
        double dyt_alpha;        /* DyT's α at initialisation, > 0   default 0.5 */
        activation_t activation; /* relu | gelu | swiglu         default relu */
        int causal;              /* bool                         default false */
        int tie_embeddings;      /* bool                         default true */
        final_norm_t final_norm; /* auto (the scheme's default) | on | off */
        double dropout;          /* [0, 1)                       default 0 */
        qk_norm_t qk_norm;       /* off | layernorm | rmsnorm: q, k of each head normalised
                                    over d_head (docs/design.md §6g)  default off */
        double attn_softcap;     /* c > 0: logits c·tanh(s/c) (Gemma 2); 0 = off  default 0 */
        positions_t positions;   /* sinusoidal | rope | none (docs/design.md §6i)  default
                                    sinusoidal */
        int bias;                /* on: every linear map has its bias; off: none exists  default on */
    } model;
    struct {
        init_scheme_t scheme;    /* xavier_normal | xavier_uniform | normal | tfixup */
        double std;              /* for scheme = normal, > 0     default 0.02 */
        int zero_qk;             /* W_Q = W_K = 0                default false */
        unsigned long seed;      /* default 1 */
        embed_init_t embed;      /* normal (N(0, 1/d)) | xavier_uniform   default normal */
        parametrization_t parametrization;   /* standard | mup | mup_simple  default standard */
        int base_width;          /* μP: the width d its lr was tuned at, > 0; 0 = unset */
    } init;
    struct {
        task_t task;             /* default random */
        char path[CONFIG_PATH_MAX]; /* text corpus, required for task = text */
        int batch;               /* B, >= 1                      default 8 */
        double label_smoothing;  /* [0, 1)                       default 0 */
        double zipf;             /* random task: exponent, 0 = uniform, >= 0 */
        int max_tokens;          /* translation: tokens per batch (fairseq), 0 = batch pairs */
        int min_len;             /* encdec synthetic tasks: shortest row, 0 = all full length */
        double mask_rate;        /* mlm: share of positions chosen, in (0, 1)  default 0.15 */
    } data;
    struct {
        int steps;               /* 0 = measure at initialisation only (default) */
        optimizer_t optimizer;   /* adam | adamw | sgd | radam | gi_adam | stableadamw | lamb |
                                    muon | lion | nsgd, default adam */
        double lr;               /* peak lr, > 0                 default 5e-4 */
        int warmup;              /* steps of linear warm-up, 0 or 1 = none; default 4000 */
        schedule_t schedule;     /* default inverse_sqrt */
        double min_lr_ratio;     /* cosine: the floor it decays to, × lr, in [0, 1)  default 0 */
        double beta1, beta2, eps;/* defaults 0.9, 0.98, 1e-8 */
        double weight_decay;     /* >= 0                         default 0 */
        double clip;             /* global-norm clip, 0 = off    default 0 */
        double momentum;         /* sgd, nsgd momentum in [0,1)  default 0.9; muon's β 0.95 */
        int muon_ns_steps;       /* muon: Newton–Schulz iterations, >= 1   default 5 */
        double muon_ns_a, muon_ns_b, muon_ns_c;  /* their (a, b, c)  default 3.4445, −4.7750, 2.0315 */
        muon_scale_t muon_scale; /* original | match_rms_adamw     default original */
        double muon_adamw_lr;    /* muon: peak lr of the AdamW tensors, 0 = train.lr  default 0 */
        double qk_clip;          /* MuonClip's τ > 0, 0 = off (docs/design.md §6h)  default 0 */
        double f_star;           /* suboptimality: the loss floor f* of Δ = loss − f*  default 0 */
        double lr_div;           /* suboptimality: the lr at Δ₀ is lr/lr_div, > 1  default 100 */
        int checkpoint_every;    /* steps, 0 = only on signals   default 0 */
        int eval_every;          /* validation every N steps (text task), default 100 */
        int bleu_every;          /* BLEU every N updates, −1 every epoch, 0 off; default 0 */
        int resume;              /* resume = auto (1) | off (0)  default off */
        double z_loss;           /* c ≥ 0: loss + c·mean (log Z)² (PaLM: 1e-4); 0 = off */
        precision_t precision;   /* float64 (default) | float32 | bfloat16 | bfloat16_pure | fp8 */
        rounding_t rounding;     /* bfloat16_pure's weights: nearest (default) | stochastic */
        int kahan;               /* bfloat16_pure: Kahan-compensated update, on | off (default) */
        int round_gemm;          /* bfloat16*: GEMM operands rounded, on (default) | off */
        int round_attn_probs;    /* bfloat16*: attention probabilities rounded before ·V, on | off */
        int round_residual;      /* bfloat16*: the residual stream rounded after each add, on | off */
        int round_norm_stats;    /* bfloat16*: norm means and 1/√(σ²+ε) rounded, on | off */
        int attn_round_fix;      /* round_attn_probs: Qiu & Yao 2025's max, flash form; off (default) */
        gemm_path_t gemm_path;   /* bfloat16*: auto (default) | emulated | onednn */
        /* the remedies (docs/design.md §6k) */
        lr_control_t lr_control; /* none (default) | curvature | cdat */
        int lr_control_every;    /* curvature: updates between measurements k, default 5 */
        double curvature_cap;    /* curvature: c of η ≤ c·2(1+β₁)/((1−β₁)λ), default 1 */
        double cdat_sigma;       /* cdat: σ, default 2 ("on the edge") */
        double cdat_ema;         /* cdat: EMA factor of numerator and denominator, default 0.9 */
        warmup_start_t warmup_start; /* zero (default) | catapult: the warm-up's first lr */
        double update_ratio_cap; /* r: per tensor ‖ΔW‖_F/‖W‖_F ≤ r, 0 = off (default) */
        double spectral_bound;   /* τ: per matrix σ₁(ΔW) ≤ τ·σ₁(W) (AdamW²), 0 = off (default) */
    } train;
    struct {
        int seeds;               /* random initialisations, >= 1  default 10 */
        int batches;             /* mini-batches averaged per seed, >= 1 default 10 */
        int every;               /* steps between measurements while training, default 100 */
        int jacobian;            /* on | off                     default on */
        int model_update;        /* DeepNet's model update while training, on | off  default on */
        int curvature_every;     /* curvature (docs/design.md §10): 0 = off; N: at update 0 and
                                    every N updates, per probe seed at initialisation */
        int curvature_iters;     /* Lanczos steps K, >= 2      default 20 */
        int curvature_block_iters; /* Lanczos steps per diagonal block, 0 (none) or >= 2; default 10 */
        double curvature_floor;  /* the relative floor τ of the active value, 0 = ε only;
                                    default 1e-2 (docs/design.md §10) */
        int curvature_until;     /* no curvature row after this update, 0 = none     default 0 */
        int precision_measures;  /* weight_spec, pv_round_bias, channel_amax, swiglu_cos while
                                    training: auto (0: on under bfloat16*, fp8) | on (1) | off (2) */
        int curvature_active_only; /* on: rows after update 0 measure only precond_max_active
                                    (docs/design.md §10)   default off */
        int density_probes;      /* SLQ spectral density (docs/design.md §10): probes n_v, 0 = off */
        int density_iters;       /* its Lanczos steps m per probe, >= 2       default 16 */
        double density_sigma;    /* its Gaussian broadening σ (eigenvalue units) > 0; default 0.1 */
        int trace_probes;        /* Hutchinson's trace: Rademacher probes, 0 = off, else >= 2 */
        int critical_sharpness;  /* on: 2/η_c along the next update at every curvature row
                                    (Kalra et al. 2026; docs/design.md §10)  default off */
        int density_blocks;      /* on: the SLQ density of each diagonal block of H too, at
                                    every curvature row (docs/design.md §10)  default off */
    } probe;
    struct {
        char file[CONFIG_PATH_MAX]; /* "" = results/<name>.h5 */
        int plots;               /* bool                         default false */
        int overwrite;           /* bool                         default false */
        int log_every;           /* a log line every N updates when stderr is not a
                                    terminal, 0 = none            default 100 */
    } output;

    /* Provenance (not keys). */
    char path[CONFIG_PATH_MAX];  /* the file it was read from */
    char name[256];              /* basename without .ini, e.g. "postln_L12" */
    int stored;                  /* read from a run's stored text (config_parse_string): there
                                    `init.parametrization = mup` is μParam (simple), §6h */
    /* Where each key's value came from, indexed in the order config_to_ini writes the keys
     * (model.layers = 0 ... output.overwrite = last; config.c's key table):
     * 0 = default, > 0 = line in path, -1 = a --set override. Used by config_validate to
     * name the offending key's line; not part of the configuration itself. */
#define CONFIG_MAX_KEYS 112
    int src_line[CONFIG_MAX_KEYS];
} config_t;

/* Index of section.key in src_line (the order config_to_ini writes), or −1. */
int config_key_index(const char *section, const char *name);

/* The section of the key called name (e.g. "train" for "steps"; matched with '-' as '_'), or NULL
 * when no section has it: for "--steps is a config key: --set train.steps=N". */
const char *config_key_section(const char *name);

/* Fill cfg with the defaults of docs/design.md §4 (name "default", path ""). */
void config_defaults(config_t *cfg);

/* Read path (a name without '/' that does not exist is looked up in configs/),
 * apply the nsets "section.key=value" overrides in order, validate.
 * Returns 0, or 2 with err holding "FILE:LINE: key: message" / "--set key: message". */
int config_load(config_t *cfg, const char *path, const char *const *sets, int nsets,
                char *err, size_t errlen);

/* Parse INI text (e.g. the resolved config stored in an HDF5 file; name labels messages and
 * becomes cfg->name) and validate it as a stored run's (config_validate_stored). Returns 0 or
 * 2 with err set. */
int config_parse_string(config_t *cfg, const char *text, const char *name, char *err,
                        size_t errlen);

/* Apply one "section.key=value" to cfg (no validation of cross-key contradictions).
 * Returns 0, or 2 with err holding "--set key: message". */
int config_set(config_t *cfg, const char *assignment, char *err, size_t errlen);

/* Where key k (config_key_index) of cfg was set, for a message: "FILE:LINE: section.key",
 * "--set section.key", or "FILE: section.key" when left at its default. */
void config_where(const config_t *cfg, int k, char *buf, size_t len);

/* What the task implies, for keys the user left unset (docs/design.md §4): a next-token byte LM
 * (data.task = text) is causal with V = 256; the masked LM has V = 257 (the bytes and [MASK]).
 * Called on a user's config (config_load), never on a stored one, whose keys are all set. */
void config_task_defaults(config_t *cfg);

/* A user's config that would train on its own targets: data.task = text (next-token
 * prediction) with model.causal = false attends to the byte it must predict. Returns 0, or 2
 * with err "WHERE: model.causal: message". (A stored config is read as it was, and `info`
 * flags it: measure/diagnose.h.) */
int config_refuse_leak(const config_t *cfg, char *err, size_t errlen);

/* Check ranges and contradictions (e.g. heads not dividing d_model).
 * Returns 0, or 2 with err holding "WHERE: key: message" (WHERE = file[:line] or --set). */
int config_validate(const config_t *cfg, char *err, size_t errlen);

/* config_validate for a run already written: a key the run ignored (init.base_width under the
 * standard parametrization, train.momentum under Adam) is accepted, as files written before
 * such keys were refused hold them. */
int config_validate_stored(const config_t *cfg, char *err, size_t errlen);

/* Write the fully resolved configuration as INI text (every key, explicit values,
 * final_norm resolved) into buf. Returns the length it needs (like snprintf). */
size_t config_to_ini(const config_t *cfg, char *buf, size_t len);

/* The value of item ("init.parametrization") in cfg as config_to_ini writes it, also for a key
 * it leaves out at its default ("standard"): into buf. 0, or −1 when item is no key. */
int config_value_text(const config_t *cfg, const char *item, char *buf, size_t len);

/* True when the stack ends with a final norm (final_norm = on, or auto and a scheme whose row
 * says so; never with norm = none). */
int config_has_final_norm(const config_t *cfg);

/* Decoder layers of an encdec model (dec_layers, or layers when 0); 0 for lm. */
int config_dec_layers(const config_t *cfg);

/* Longest source sequence (src_len, or seq_len when 0); 0 for lm. */
int config_src_len(const config_t *cfg);

/* Enum <-> string for printing and for the INI writer. */
const char *config_arch_name(arch_t a);
const char *config_placement_name(placement_t p);
const char *config_norm_name(norm_kind_t n);
const char *config_activation_name(activation_t a);
const char *config_positions_name(positions_t p);
const char *config_task_name(task_t t);
const char *config_optimizer_name(optimizer_t o);
const char *config_schedule_name(schedule_t s);
const char *config_precision_name(precision_t p);
const char *config_lr_control_name(lr_control_t c);
const char *config_warmup_start_name(warmup_start_t w);

/* 1 under either μP (mup_simple or mup, docs/design.md §6h), 0 under the standard
 * parametrization. */
int config_is_mup(const config_t *cfg);
const char *config_rounding_name(rounding_t r);
const char *config_gemm_path_name(gemm_path_t g);

/* 1 when train.precision runs on the float32 core (float32 and the emulated bfloat16s). */
int config_core_float(const config_t *cfg);

/* 1 when a training run of cfg records the precision measures (probe.precision_measures). */
int config_precision_measures(const config_t *cfg);

/* 1 when train.precision is one of the emulated low precisions (bfloat16*, fp8). */
int config_lowp(const config_t *cfg);
const char *config_init_name(init_scheme_t s);

#endif
