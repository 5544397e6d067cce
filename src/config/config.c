/* config.c — INI file (+ --set overrides) -> validated config_t, and back to INI text.
 *
 * The INI syntax is libinih's (ini_parse_stream). Debian builds libinih without
 * INI_HANDLER_LINENO, so we read the file into memory and hand inih one line per call of
 * our own reader: when inih calls the key handler, the reader's line count is that key's
 * line. Every key lives in one table (keys[] below) that drives parsing, range checks,
 * provenance (config_t.src_line) and the INI writer, so they cannot disagree.
 *
 * Error formats (err is filled, nothing is printed):
 *   FILE:LINE: section.key: message   a key of the file (bad value, unknown, duplicate, ...)
 *   FILE:LINE: section: message       an unknown [section]
 *   FILE:LINE: syntax: message        a line inih cannot parse (no '=', unclosed '[', too long)
 *   FILE: cannot open: strerror       the file (also tried configs/NAME[.ini])
 *   --set section.key: message        a --set override
 *   WHERE: section.key: message       config_validate; WHERE = FILE:LINE, --set, or FILE/"defaults"
 *                                     for a key left at its default.
 */
#include "config/config.h"

#include <ini.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- the key table */

enum ktype { K_INT, K_DBL, K_BOOL, K_ONOFF, K_ENUM, K_SEED, K_STR };

typedef struct {
    const char *section, *name;
    enum ktype type;
    size_t off;                 /* offsetof(config_t, section.name) */
    double lo, hi;              /* K_INT, K_DBL: allowed range */
    int lo_open, hi_open;       /* K_DBL: exclusive bounds */
    const char *const *names;   /* K_ENUM: names indexed by value, NULL-terminated */
} cfg_key_t;

static const char *const arch_names[] = {"lm", "encdec", NULL};
static const char *const placement_names[] = {"post", "pre", "peri", "deepnorm", "admin",
                                               "rezero", "subln", "mixln", "b2t", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", "none", "dyt", NULL};
static const char *const activation_names[] = {"relu", "gelu", NULL};
static const char *const final_norm_names[] = {"auto", "on", "off", NULL};
static const char *const init_names[] = {"xavier_normal", "xavier_uniform", "normal", "tfixup",
                                         NULL};
static const char *const task_names[] = {"random", "copy", "reverse", "text", "translation", NULL};
static const char *const optimizer_names[] = {"adam", "adamw", "sgd", "radam", NULL};
static const char *const schedule_names[] = {"inverse_sqrt", "linear", "constant", NULL};
static const char *const resume_names[] = {"off", "auto", NULL};   /* value 0 = off, 1 = auto */

#define OFF(s, n) offsetof(config_t, s.n)
#define KI(s, n, lo) {#s, #n, K_INT, OFF(s, n), (lo), INT_MAX, 0, 0, NULL}
#define KD(s, n, lo, lo_open, hi, hi_open) {#s, #n, K_DBL, OFF(s, n), (lo), (hi), (lo_open), (hi_open), NULL}
#define KB(s, n) {#s, #n, K_BOOL, OFF(s, n), 0, 0, 0, 0, NULL}
#define KO(s, n) {#s, #n, K_ONOFF, OFF(s, n), 0, 0, 0, 0, NULL}
#define KE(s, n, names) {#s, #n, K_ENUM, OFF(s, n), 0, 0, 0, 0, (names)}
#define KS(s, n) {#s, #n, K_STR, OFF(s, n), 0, 0, 0, 0, NULL}
#define KSEED(s, n) {#s, #n, K_SEED, OFF(s, n), 0, 0, 0, 0, NULL}

/* Order = order of config_to_ini = index of config_t.src_line. */
static const cfg_key_t keys[] = {
    KE(model, arch, arch_names),
    KI(model, layers, 1),
    KI(model, dec_layers, 0),
    KI(model, d_model, 2),
    KI(model, heads, 1),
    KI(model, d_ff, 1),
    KI(model, vocab, 2),
    KI(model, seq_len, 1),
    KI(model, src_len, 0),
    KE(model, placement, placement_names),
    KD(model, mix_ratio, 0, 0, 1, 0),
    KE(model, norm, norm_names),
    KD(model, norm_eps, 0, 1, INFINITY, 0),
    KD(model, dyt_alpha, 0, 1, INFINITY, 0),
    KE(model, activation, activation_names),
    KB(model, causal),
    KB(model, tie_embeddings),
    KE(model, final_norm, final_norm_names),
    KD(model, dropout, 0, 0, 1, 1),

    KE(init, scheme, init_names),
    KD(init, std, 0, 1, INFINITY, 0),
    KB(init, zero_qk),
    KSEED(init, seed),

    KE(data, task, task_names),
    KS(data, path),
    KI(data, batch, 1),
    KD(data, label_smoothing, 0, 0, 1, 1),
    KD(data, zipf, 0, 0, INFINITY, 0),
    KI(data, max_tokens, 0),
    KI(data, min_len, 0),

    KI(train, steps, 0),
    KE(train, optimizer, optimizer_names),
    KD(train, lr, 0, 1, INFINITY, 0),
    KI(train, warmup, 0),
    KE(train, schedule, schedule_names),
    KD(train, beta1, 0, 0, 1, 1),
    KD(train, beta2, 0, 0, 1, 1),
    KD(train, eps, 0, 1, INFINITY, 0),
    KD(train, weight_decay, 0, 0, INFINITY, 0),
    KD(train, clip, 0, 0, INFINITY, 0),
    KD(train, momentum, 0, 0, 1, 1),
    KI(train, checkpoint_every, 0),
    KI(train, eval_every, 0),
    KE(train, resume, resume_names),

    KI(probe, seeds, 1),
    KI(probe, batches, 1),
    KI(probe, every, 1),
    KO(probe, jacobian),
    KO(probe, model_update),

    KS(output, file),
    KB(output, plots),
    KB(output, overwrite),
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(sizeof keys / sizeof keys[0] <= CONFIG_MAX_KEYS, "raise CONFIG_MAX_KEYS in config.h");

static const char *const sections[] = {"model", "init", "data", "train", "probe", "output", NULL};

/* libinih (Debian: INI_MAX_LINE 200, on the stack) reads at most 198 characters plus the
 * newline per line; longer lines are errors (mem_reader). String values are limited so
 * that config_to_ini's "path = VALUE" line can always be read back. */
#define STR_VALUE_MAX 190

/* gsl_rng_mt19937 uses the low 32 bits of a seed: seeds above this would silently alias. */
#define SEED_MAX 4294967295UL

/* ---------------------------------------------------------------- small helpers */

static void *field(config_t *cfg, const cfg_key_t *k) { return (char *)cfg + k->off; }
static const void *cfield(const config_t *cfg, const cfg_key_t *k) { return (const char *)cfg + k->off; }

static int find_key(const char *section, const char *name)
{
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
            return i;
    return -1;
}

int config_key_index(const char *section, const char *name)
{
    return find_key(section, name);
}

static int kidx(const char *section, const char *name)
{
    int i = find_key(section, name);
    return i < 0 ? 0 : i;   /* only called with names from the table */
}

static int known_section(const char *s)
{
    for (int i = 0; sections[i]; i++)
        if (strcmp(sections[i], s) == 0) return 1;
    return 0;
}

static int name_count(const char *const *names)
{
    int n = 0;
    while (names[n]) n++;
    return n;
}

/* Append to a bounded buffer, remembering the length it would need (snprintf-like). */
typedef struct { char *buf; size_t len, need; } sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = b->need < b->len ? b->buf + b->need : NULL;
    size_t room = b->need < b->len ? b->len - b->need : 0;
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0) b->need += (size_t)n;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Edit distance, for "did you mean" (short strings only). */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

/* Message for a key that is not in [section] (section known). */
static void unknown_key_msg(const char *section, const char *name, char *msg, size_t mlen)
{
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0) {
            snprintf(msg, mlen, "unknown key (%s belongs in [%s])", name, keys[i].section);
            return;
        }
    int best = -1, bestd = 3;
    for (int i = 0; i < NKEYS; i++) {
        if (strcmp(keys[i].section, section) != 0) continue;
        int dist = edit_distance(name, keys[i].name);
        if (dist < bestd) { bestd = dist; best = i; }
    }
    if (best >= 0) {
        snprintf(msg, mlen, "unknown key (did you mean %s.%s?)", section, keys[best].name);
        return;
    }
    sbuf_t b = {msg, mlen, 0};
    sb_printf(&b, "unknown key (keys of [%s]:", section);
    const char *sep = " ";
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0) { sb_printf(&b, "%s%s", sep, keys[i].name); sep = ", "; }
    sb_printf(&b, ")");
}

static void unknown_section_msg(const char *section, char *msg, size_t mlen)
{
    for (int i = 0; sections[i]; i++)
        if (edit_distance(section, sections[i]) <= 2) {
            snprintf(msg, mlen, "unknown section [%s] (did you mean [%s]?)", section, sections[i]);
            return;
        }
    snprintf(msg, mlen, "unknown section [%s] (sections: model, init, data, train, probe, output)", section);
}

/* ---------------------------------------------------------------- values */

/* Text of the allowed range of a numeric key, e.g. ">= 1", "> 0", "in [0, 1)". */
static void range_text(const cfg_key_t *k, char *buf, size_t n)
{
    if (k->type == K_INT) {
        snprintf(buf, n, "an integer >= %.0f", k->lo);
    } else if (isinf(k->hi)) {
        snprintf(buf, n, "%s %g", k->lo_open ? ">" : ">=", k->lo);
    } else {
        snprintf(buf, n, "in %c%g, %g%c", k->lo_open ? '(' : '[', k->lo, k->hi, k->hi_open ? ')' : ']');
    }
}

static int in_range(const cfg_key_t *k, double v)
{
    if (k->lo_open ? !(v > k->lo) : !(v >= k->lo)) return 0;
    if (k->hi_open ? !(v < k->hi) : !(v <= k->hi)) return 0;
    return 1;
}

static const char *comment_hint(const char *v)
{
    return strchr(v, '#') ? " (comments after a value start with ' ;', '#' only at line start)" : "";
}

/* Parse text v (already stripped) into key k of cfg. Returns 0, or -1 with msg. */
static int parse_value(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
    char range[64];
    switch (k->type) {
    case K_INT: {
        if (!*v) { snprintf(msg, mlen, "empty value (expected an integer)"); return -1; }
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || isspace((unsigned char)*v)) {
            snprintf(msg, mlen, "not an integer: '%s'%s", v, comment_hint(v));
            return -1;
        }
        range_text(k, range, sizeof range);
        if (errno == ERANGE || x > INT_MAX) {
            snprintf(msg, mlen, "must be %s and <= %d (got %s)", range, INT_MAX, v);
            return -1;
        }
        if (!in_range(k, (double)x)) { snprintf(msg, mlen, "must be %s (got %s)", range, v); return -1; }
        *(int *)field(cfg, k) = (int)x;
        return 0;
    }
    case K_DBL: {
        if (!*v) { snprintf(msg, mlen, "empty value (expected a number)"); return -1; }
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (end == v || *end || isspace((unsigned char)*v)) {
            snprintf(msg, mlen, "not a number: '%s'%s", v, comment_hint(v));
            return -1;
        }
        if (!isfinite(x)) { snprintf(msg, mlen, "must be finite (got %s)", v); return -1; }
        if (errno == ERANGE) {
            snprintf(msg, mlen, "out of the range of a double (got %s)", v);
            return -1;
        }
        range_text(k, range, sizeof range);
        if (!in_range(k, x)) { snprintf(msg, mlen, "must be %s (got %s)", range, v); return -1; }
        *(double *)field(cfg, k) = x;
        return 0;
    }
    case K_BOOL:
    case K_ONOFF: {
        static const char *const t[] = {"true", "on", "yes", "1"}, *const f[] = {"false", "off", "no", "0"};
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(v, t[i]) == 0) { *(int *)field(cfg, k) = 1; return 0; }
            if (strcasecmp(v, f[i]) == 0) { *(int *)field(cfg, k) = 0; return 0; }
        }
        snprintf(msg, mlen, "must be %s (got '%s')",
                 k->type == K_ONOFF ? "on or off" : "true/false (or on/off, yes/no, 1/0)", v);
        return -1;
    }
    case K_ENUM: {
        for (int i = 0; k->names[i]; i++)
            if (strcmp(v, k->names[i]) == 0) { *(int *)field(cfg, k) = i; return 0; }
        sbuf_t b = {msg, mlen, 0};
        sb_printf(&b, "must be ");
        int n = name_count(k->names);
        for (int i = 0; i < n; i++)
            sb_printf(&b, "%s%s", k->names[i], i == n - 1 ? "" : i == n - 2 ? " or " : ", ");
        sb_printf(&b, " (got '%s')", v);
        return -1;
    }
    case K_SEED: {
        int digits = *v != 0;
        for (const char *p = v; *p; p++)
            if (!isdigit((unsigned char)*p)) digits = 0;
        if (!digits) { snprintf(msg, mlen, "must be a non-negative integer (got '%s')", v); return -1; }
        errno = 0;
        unsigned long long x = strtoull(v, NULL, 10);
        int too_big = errno == ERANGE;
#if ULLONG_MAX > ULONG_MAX
        if (x > ULONG_MAX) too_big = 1;
#endif
        if (too_big || x > SEED_MAX) {   // mt19937 takes 32 bits: larger seeds would alias
            snprintf(msg, mlen, "must be <= %lu (the generator takes 32-bit seeds) (got %s)", SEED_MAX, v);
            return -1;
        }
        *(unsigned long *)field(cfg, k) = (unsigned long)x;
        return 0;
    }
    case K_STR: {
        size_t n = strlen(v);
        if (n > STR_VALUE_MAX) {
            snprintf(msg, mlen, "longer than %d characters (the INI line limit)", STR_VALUE_MAX);
            return -1;
        }
        for (const char *p = v; *p; p++) {
            if (*p == '\n' || *p == '\r') { snprintf(msg, mlen, "contains a line break"); return -1; }
            if (*p == ';' && p > v && isspace((unsigned char)p[-1])) {
                snprintf(msg, mlen, "contains ' ;', which INI reads as a comment");
                return -1;
            }
        }
        memcpy(field(cfg, k), v, n + 1);
        return 0;
    }
    }
    snprintf(msg, mlen, "internal error: bad key type");
    return -1;
}

/* Range/enum check of the value stored in cfg (for config_validate). */
static int check_value(const config_t *cfg, const cfg_key_t *k, char *msg, size_t mlen)
{
    char range[64];
    switch (k->type) {
    case K_INT: {
        int x = *(const int *)cfield(cfg, k);
        if (in_range(k, x)) return 0;
        range_text(k, range, sizeof range);
        snprintf(msg, mlen, "must be %s (got %d)", range, x);
        return -1;
    }
    case K_DBL: {
        double x = *(const double *)cfield(cfg, k);
        if (isfinite(x) && in_range(k, x)) return 0;
        range_text(k, range, sizeof range);
        snprintf(msg, mlen, "must be %s (got %.17g)", range, x);
        return -1;
    }
    case K_BOOL:
    case K_ONOFF: {
        int x = *(const int *)cfield(cfg, k);
        if (x == 0 || x == 1) return 0;
        snprintf(msg, mlen, "must be 0 or 1 (got %d)", x);
        return -1;
    }
    case K_ENUM: {
        int x = *(const int *)cfield(cfg, k);
        if (x >= 0 && x < name_count(k->names)) return 0;
        snprintf(msg, mlen, "invalid value %d", x);
        return -1;
    }
    case K_SEED: {
        const unsigned long x = *(const unsigned long *)cfield(cfg, k);
        if (x <= SEED_MAX) return 0;
        snprintf(msg, mlen, "must be <= %lu (the generator takes 32-bit seeds) (got %lu)", SEED_MAX, x);
        return -1;
    }
    case K_STR: {
        const char *s = (const char *)cfield(cfg, k);
        size_t n = strnlen(s, CONFIG_PATH_MAX);
        if (n > STR_VALUE_MAX) {
            snprintf(msg, mlen, "longer than %d characters (the INI line limit)", STR_VALUE_MAX);
            return -1;
        }
        return 0;
    }
    }
    return 0;
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

    cfg->init.scheme = INIT_XAVIER_NORMAL;
    cfg->init.std = 0.02;
    cfg->init.zero_qk = 0;
    cfg->init.seed = 1;

    cfg->data.task = TASK_RANDOM;
    cfg->data.path[0] = '\0';
    cfg->data.batch = 8;
    cfg->data.label_smoothing = 0.0;
    cfg->data.zipf = 0.0;
    cfg->data.max_tokens = 0;
    cfg->data.min_len = 0;

    cfg->train.steps = 0;
    cfg->train.optimizer = OPT_ADAM;
    cfg->train.lr = 5e-4;
    cfg->train.warmup = 4000;
    cfg->train.schedule = SCHED_INVERSE_SQRT;
    cfg->train.beta1 = 0.9;
    cfg->train.beta2 = 0.98;
    cfg->train.eps = 1e-8;
    cfg->train.weight_decay = 0.0;
    cfg->train.clip = 0.0;
    cfg->train.momentum = 0.9;
    cfg->train.checkpoint_every = 0;
    cfg->train.eval_every = 100;
    cfg->train.resume = 0;

    cfg->probe.seeds = 10;
    cfg->probe.batches = 10;
    cfg->probe.every = 100;
    cfg->probe.jacobian = 1;
    cfg->probe.model_update = 1;

    cfg->output.file[0] = '\0';
    cfg->output.plots = 0;
    cfg->output.overwrite = 0;

    cfg->path[0] = '\0';
    snprintf(cfg->name, sizeof cfg->name, "default");
}

static const char *enum_name(const char *const *names, int v)
{
    return v >= 0 && v < name_count(names) ? names[v] : "?";
}

const char *config_arch_name(arch_t a) { return enum_name(arch_names, (int)a); }
const char *config_placement_name(placement_t p) { return enum_name(placement_names, (int)p); }
const char *config_norm_name(norm_kind_t n) { return enum_name(norm_names, (int)n); }
const char *config_activation_name(activation_t a) { return enum_name(activation_names, (int)a); }
const char *config_task_name(task_t t) { return enum_name(task_names, (int)t); }
const char *config_optimizer_name(optimizer_t o) { return enum_name(optimizer_names, (int)o); }
const char *config_schedule_name(schedule_t s) { return enum_name(schedule_names, (int)s); }
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
    // auto: the placements that leave the residual stream unnormalised end with a norm
    switch (cfg->model.placement) {
    case PLACEMENT_PRE: case PLACEMENT_PERI: case PLACEMENT_SUBLN: case PLACEMENT_MIXLN:
        return 1;
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------- INI parsing */

typedef struct {
    /* the file, in memory */
    const char *file;           /* name used in messages */
    const char *buf;
    size_t len, pos;
    int line;                   /* lines handed to inih so far = line of the current key */
    const char *cur;            /* raw text of the current line */
    size_t curlen;
    /* results */
    config_t *cfg;
    int err_line;               /* line of the first error we found (0 = none) */
    char *err;
    size_t errlen;
    /* previous key (to recognise inih's continuation lines) */
    char prev_section[64], prev_name[64];
} parse_t;

static void perr(parse_t *p, int line, const char *key, const char *msg)
{
    if (p->err_line) return;    /* keep the first */
    p->err_line = line;
    set_err(p->err, p->errlen, "%s:%d: %s: %s", p->file, line, key, msg);
}

/* Raw line text without a UTF-8 BOM (line 1) — for our checks on what inih saw. */
static const char *raw_start(const parse_t *p, const char *s, int line)
{
    if (line == 1 && p->len >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        return s + 3;
    return s;
}

/* The reader inih calls instead of fgets: one whole line of the buffer per call. */
static char *mem_reader(char *str, int num, void *stream)
{
    parse_t *p = stream;
    if (p->pos >= p->len || num < 3) return NULL;
    const char *s = p->buf + p->pos;
    const char *nl = memchr(s, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - s) + 1 : p->len - p->pos;
    p->pos += n;
    p->line++;
    p->cur = s;
    p->curlen = n;

    /* inih gets the text without "\r\n" plus "\n": text + 2 bytes must fit in num. */
    size_t text = n - (nl ? 1 : 0);
    if (text > 0 && s[text - 1] == '\r') text--;
    size_t max = (size_t)num - 2;
    if (memchr(s, '\0', n)) {
        perr(p, p->line, "syntax", "line contains a NUL byte");
        text = 0;
    } else if (text > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "line longer than %zu characters (libinih's limit)", max);
        perr(p, p->line, "syntax", msg);
        text = max;                          /* inih sees a truncated line; the error is ours */
    }
    memcpy(str, s, text);
    str[text] = '\n';
    str[text + 1] = '\0';

    /* An unknown [section] is an error even when no key follows it (inih calls the handler
     * only for keys). Same rule as inih: the name runs from '[' to the first ']'. */
    const char *r = raw_start(p, s, p->line);
    while (r < s + text && isspace((unsigned char)*r)) r++;
    if (r < s + text && *r == '[') {
        const char *close = memchr(r, ']', (size_t)(s + text - r));
        if (close) {
            char name[64];
            size_t m = (size_t)(close - r - 1);
            if (m >= sizeof name) m = sizeof name - 1;
            memcpy(name, r + 1, m);
            name[m] = '\0';
            if (!known_section(name)) {
                char msg[160];
                unknown_section_msg(name, msg, sizeof msg);
                perr(p, p->line, name, msg);
            }
        }
        p->prev_name[0] = '\0';
    }
    return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    parse_t *p = user;
    int line = p->line;
    char msg[CONFIG_ERR_MAX / 2], key[160];

    if (p->err_line) return 1;   /* report only the first error */

    snprintf(key, sizeof key, "%s%s%s", section, *section ? "." : "", name);

    /* inih's multi-line values: an indented line after a key is passed as another value of
     * that key. Not supported: say so instead of calling it a duplicate. */
    const char *r = raw_start(p, p->cur, line);
    if (isspace((unsigned char)*r) && *r != '\n' && *r != '\r' && strcmp(section, p->prev_section) == 0 &&
        strcmp(name, p->prev_name) == 0) {
        snprintf(msg, sizeof msg,
                 "indented line continues the value of %s (continuation lines are not supported; "
                 "remove the leading whitespace)", key);
        perr(p, line, key, msg);
        return 0;
    }
    snprintf(p->prev_section, sizeof p->prev_section, "%s", section);
    snprintf(p->prev_name, sizeof p->prev_name, "%s", name);

    if (!*section) {
        int k = -1;
        for (int i = 0; i < NKEYS && k < 0; i++)
            if (strcmp(keys[i].name, name) == 0) k = i;
        if (k >= 0)
            snprintf(msg, sizeof msg, "key outside any section (it belongs in [%s])", keys[k].section);
        else
            snprintf(msg, sizeof msg, "key outside any section");
        perr(p, line, key, msg);
        return 0;
    }
    if (!known_section(section)) {
        unknown_section_msg(section, msg, sizeof msg);
        perr(p, line, section, msg);
        return 0;
    }
    int k = find_key(section, name);
    if (k < 0) {
        unknown_key_msg(section, name, msg, sizeof msg);
        perr(p, line, key, msg);
        return 0;
    }
    if (p->cfg->src_line[k] > 0) {
        snprintf(msg, sizeof msg, "duplicate key (first set on line %d)", p->cfg->src_line[k]);
        perr(p, line, key, msg);
        return 0;
    }
    if (parse_value(p->cfg, &keys[k], value, msg, sizeof msg) != 0) {
        perr(p, line, key, msg);
        return 0;
    }
    p->cfg->src_line[k] = line;
    return 1;
}

/* Text of line n of buf (1-based), stripped, for messages. */
static void line_text(const char *buf, size_t len, int n, char *out, size_t outlen)
{
    size_t i = 0;
    for (int l = 1; l < n && i < len; i++)
        if (buf[i] == '\n') l++;
    size_t j = i;
    while (j < len && buf[j] != '\n') j++;
    while (i < j && isspace((unsigned char)buf[i])) i++;
    while (j > i && isspace((unsigned char)buf[j - 1])) j--;
    size_t m = j - i;
    if (m > 60) m = 60;
    snprintf(out, outlen, "%.*s%s", (int)m, buf + i, j - i > 60 ? "..." : "");
}

/* Parse INI text (file = name for messages) into cfg. Returns 0 or 2. */
static int parse_text(config_t *cfg, const char *file, const char *buf, size_t len, char *err, size_t errlen)
{
    parse_t p;
    memset(&p, 0, sizeof p);
    p.file = file;
    p.buf = buf;
    p.len = len;
    p.cfg = cfg;
    p.err = err;
    p.errlen = errlen;
    int r = ini_parse_stream(mem_reader, &p, on_key, &p);
    if (p.err_line && (r <= 0 || r >= p.err_line)) return 2;
    if (r > 0) {
        char text[80];
        line_text(buf, len, r, text, sizeof text);
        if (text[0] == '[')
            set_err(err, errlen, "%s:%d: syntax: section header without closing ']': '%s'", file, r, text);
        else
            set_err(err, errlen, "%s:%d: syntax: expected 'key = value' or '[section]', got '%s'", file, r,
                    text);
        return 2;
    }
    if (r < 0) {
        set_err(err, errlen, "%s: cannot parse (libinih error %d)", file, r);
        return 2;
    }
    return 0;
}

/* ---------------------------------------------------------------- files */

/* Read a whole file. Returns a malloc'd NUL-terminated buffer, or NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) { fclose(f); errno = ENOMEM; return NULL; }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= (size_t)16 << 20) { free(buf); fclose(f); errno = EFBIG; return NULL; }
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); fclose(f); errno = ENOMEM; return NULL; }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno ? errno : EIO;
        free(buf);
        fclose(f);
        errno = e;
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Open path, or configs/path, configs/path.ini for a name without '/' that does not exist.
 * Returns the buffer and the path used in resolved, or NULL with err filled. */
static char *load_file(const char *path, char *resolved, size_t rlen, size_t *len, char *err, size_t errlen)
{
    if (strlen(path) >= rlen - 16) {
        set_err(err, errlen, "%s: cannot open: path too long", path);
        return NULL;
    }
    snprintf(resolved, rlen, "%s", path);
    char *buf = read_file(resolved, len);
    if (buf) return buf;
    int e = errno;
    if (e == ENOENT && !strchr(path, '/')) {
        size_t plen = strlen(path);
        int has_ini = plen >= 4 && strcmp(path + plen - 4, ".ini") == 0;
        snprintf(resolved, rlen, "configs/%s", path);
        buf = read_file(resolved, len);
        if (buf) return buf;
        if (errno != ENOENT) {
            set_err(err, errlen, "%s: cannot open: %s", resolved, strerror(errno));
            return NULL;
        }
        if (!has_ini) {
            snprintf(resolved, rlen, "configs/%s.ini", path);
            buf = read_file(resolved, len);
            if (buf) return buf;
            if (errno != ENOENT) {
                set_err(err, errlen, "%s: cannot open: %s", resolved, strerror(errno));
                return NULL;
            }
            set_err(err, errlen, "%s: cannot open: %s (also tried configs/%s, configs/%s.ini)", path,
                    strerror(e), path, path);
        } else {
            set_err(err, errlen, "%s: cannot open: %s (also tried configs/%s)", path, strerror(e), path);
        }
        return NULL;
    }
    set_err(err, errlen, "%s: cannot open: %s", path, strerror(e));
    return NULL;
}

int config_load(config_t *cfg, const char *path, const char *const *sets, int nsets, char *err, size_t errlen)
{
    config_defaults(cfg);
    if (err && errlen) err[0] = '\0';
    if (path && *path) {
        size_t len = 0;
        char *buf = load_file(path, cfg->path, sizeof cfg->path, &len, err, errlen);
        if (!buf) {
            cfg->path[0] = '\0';
            return 2;
        }
        const char *base = strrchr(cfg->path, '/');
        base = base ? base + 1 : cfg->path;
        size_t n = strlen(base);
        if (n >= 4 && strcmp(base + n - 4, ".ini") == 0) n -= 4;
        if (n >= sizeof cfg->name) n = sizeof cfg->name - 1;
        memcpy(cfg->name, base, n);
        cfg->name[n] = '\0';
        int rc = parse_text(cfg, cfg->path, buf, len, err, errlen);
        free(buf);
        if (rc) return rc;
    }
    for (int i = 0; i < nsets; i++)
        if (config_set(cfg, sets[i], err, errlen)) return 2;
    return config_validate(cfg, err, errlen);
}

int config_parse_string(config_t *cfg, const char *text, const char *name, char *err, size_t errlen)
{
    config_defaults(cfg);
    if (err && errlen) err[0] = '\0';
    snprintf(cfg->path, sizeof cfg->path, "%s", name);
    snprintf(cfg->name, sizeof cfg->name, "%s", name);
    const int rc = parse_text(cfg, name, text, strlen(text), err, errlen);
    return rc ? rc : config_validate(cfg, err, errlen);
}

/* ---------------------------------------------------------------- --set */

static char *strip(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

int config_set(config_t *cfg, const char *assignment, char *err, size_t errlen)
{
    size_t n = strlen(assignment);
    char *copy = malloc(n + 1);
    if (!copy) {
        set_err(err, errlen, "--set %s: out of memory", assignment);
        return 2;
    }
    memcpy(copy, assignment, n + 1);
    char msg[CONFIG_ERR_MAX / 2];
    int rc = 2;
    char *eq = strchr(copy, '=');
    if (!eq) {
        set_err(err, errlen, "--set %s: expected section.key=value (no '=')", strip(copy));
        goto out;
    }
    *eq = '\0';
    char *key = strip(copy), *value = strip(eq + 1);
    char *dot = strchr(key, '.');
    if (!dot) {
        int k = -1;
        for (int i = 0; i < NKEYS && k < 0; i++)
            if (strcmp(keys[i].name, key) == 0) k = i;
        if (k >= 0)
            set_err(err, errlen, "--set %s: expected section.key=value (did you mean %s.%s?)", key,
                    keys[k].section, key);
        else
            set_err(err, errlen, "--set %s: expected section.key=value", key);
        goto out;
    }
    *dot = '\0';
    const char *section = key, *name = dot + 1;
    if (!known_section(section)) {
        unknown_section_msg(section, msg, sizeof msg);
        set_err(err, errlen, "--set %s.%s: %s", section, name, msg);
        goto out;
    }
    int k = find_key(section, name);
    if (k < 0) {
        unknown_key_msg(section, name, msg, sizeof msg);
        set_err(err, errlen, "--set %s.%s: %s", section, name, msg);
        goto out;
    }
    if (parse_value(cfg, &keys[k], value, msg, sizeof msg) != 0) {
        set_err(err, errlen, "--set %s.%s: %s", section, name, msg);
        goto out;
    }
    cfg->src_line[k] = -1;
    rc = 0;
out:
    free(copy);
    return rc;
}

/* ---------------------------------------------------------------- validation */

void config_where(const config_t *cfg, int k, char *buf, size_t len)
{
    const int src = cfg->src_line[k];
    const char *file = cfg->path[0] ? cfg->path : src > 0 ? "config" : "defaults";
    if (src > 0) snprintf(buf, len, "%s:%d: %s.%s", file, src, keys[k].section, keys[k].name);
    else if (src < 0) snprintf(buf, len, "--set %s.%s", keys[k].section, keys[k].name);
    else snprintf(buf, len, "%s: %s.%s", file, keys[k].section, keys[k].name);
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
    set_err(err, errlen, "%s: %s", where, msg);
    return 2;
}

/* Which of two keys in a contradiction to name: a, unless a was left at its default and b
 * was not, or b came from --set (the latest change) and a did not. */
static int blame(const config_t *cfg, int a, int b)
{
    int sa = cfg->src_line[a], sb = cfg->src_line[b];
    if ((sa == 0 && sb != 0) || (sb < 0 && sa >= 0)) return b;
    return a;
}

/* The schemes' rules (docs/design.md §6c): which need norms, which remove them; keys that only
 * mean something for one scheme must not be set for another. */
static int validate_scheme(const config_t *cfg, char *err, size_t errlen)
{
    const int placement = kidx("model", "placement"), norm = kidx("model", "norm");
    const int scheme = kidx("init", "scheme"), mix = kidx("model", "mix_ratio");
    const int dyt = kidx("model", "dyt_alpha");
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
    const int arch = kidx("model", "arch"), task = kidx("data", "task");
    const int dec = kidx("model", "dec_layers"), src = kidx("model", "src_len");
    const int min_len = kidx("data", "min_len"), max_tokens = kidx("data", "max_tokens");
    const int causal = kidx("model", "causal"), seq_len = kidx("model", "seq_len");
    const char *tname = config_task_name(cfg->data.task);
    const int encdec = cfg->model.arch == ARCH_ENCDEC, S = config_src_len(cfg);
    if (!encdec) {
        const int only[3] = {dec, src, min_len};
        for (int i = 0; i < 3; i++)
            if (*(const int *)cfield(cfg, &keys[only[i]]) != 0)
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
            return vfail(cfg, kidx("model", "vocab"), err, errlen,
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
        return vfail(cfg, kidx("train", "eval_every"), err, errlen,
                     "0 (once per epoch) needs epochs: data.task = translation with "
                     "data.max_tokens > 0");
    return 0;
}

int config_validate(const config_t *cfg, char *err, size_t errlen)
{
    char msg[CONFIG_ERR_MAX / 2];
    for (int k = 0; k < NKEYS; k++)
        if (check_value(cfg, &keys[k], msg, sizeof msg) != 0) return vfail(cfg, k, err, errlen, "%s", msg);

    const int heads = kidx("model", "heads"), d_model = kidx("model", "d_model");
    const int vocab = kidx("model", "vocab"), seq_len = kidx("model", "seq_len");
    const int task = kidx("data", "task"), path = kidx("data", "path");
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
        const int seed = kidx("init", "seed"), seeds = kidx("probe", "seeds");
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

/* ---------------------------------------------------------------- INI writer */

/* Shortest of %.15g, %.16g, %.17g that reads back to the same double (%.17g always does). */
static void format_double(double x, char *buf, size_t n)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        double y = strtod(buf, NULL);
        if (memcmp(&x, &y, sizeof x) == 0) return;
    }
}

size_t config_to_ini(const config_t *cfg, char *buf, size_t len)
{
    sbuf_t b = {buf, len, 0};
    if (buf && len) buf[0] = '\0';
    sb_printf(&b, "; resolved configuration: every key explicit, final_norm, dec_layers and src_len resolved\n");
    const char *section = "";
    for (int i = 0; i < NKEYS; i++) {
        const cfg_key_t *k = &keys[i];
        if (strcmp(k->section, section) != 0) {
            section = k->section;
            sb_printf(&b, "\n[%s]\n", section);
        }
        sb_printf(&b, "%s = ", k->name);
        const void *f = cfield(cfg, k);
        char num[40];
        switch (k->type) {
        case K_INT:
            if (k->off == offsetof(config_t, model.dec_layers))
                sb_printf(&b, "%d\n", config_dec_layers(cfg));
            else if (k->off == offsetof(config_t, model.src_len))
                sb_printf(&b, "%d\n", config_src_len(cfg));
            else
                sb_printf(&b, "%d\n", *(const int *)f);
            break;
        case K_DBL:
            format_double(*(const double *)f, num, sizeof num);
            sb_printf(&b, "%s\n", num);
            break;
        case K_BOOL: sb_printf(&b, "%s\n", *(const int *)f ? "true" : "false"); break;
        case K_ONOFF: sb_printf(&b, "%s\n", *(const int *)f ? "on" : "off"); break;
        case K_SEED: sb_printf(&b, "%lu\n", *(const unsigned long *)f); break;
        case K_STR: sb_printf(&b, "%.*s\n", CONFIG_PATH_MAX - 1, (const char *)f); break;
        case K_ENUM:
            if (k->off == offsetof(config_t, model.final_norm))
                sb_printf(&b, "%s\n", config_has_final_norm(cfg) ? "on" : "off");
            else
                sb_printf(&b, "%s\n", enum_name(k->names, *(const int *)f));
            break;
        }
    }
    return b.need;
}
