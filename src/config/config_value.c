/* config_value.c — one key's value (config/config_keys.h): text parsed into it, with the message
 * a user reads when it is not a value of its type and range (docs/manual.md), and a stored
 * value checked against its key's range (config_validate.c). The keys: config_keys.c. */
#include "config/config_keys.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* K_INT: a decimal integer within INT_MAX and the key's range. */
static int parse_int(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
    char range[64];
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
    *(int *)cfg_field(cfg, k) = (int)x;
    return 0;
}

/* K_DBL: a finite double (no underflow to 0) within the key's range. */
static int parse_double(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
    char range[64];
    if (!*v) { snprintf(msg, mlen, "empty value (expected a number)"); return -1; }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || isspace((unsigned char)*v)) {
        snprintf(msg, mlen, "not a number: '%s'%s", v, comment_hint(v));
        return -1;
    }
    if (!isfinite(x)) { snprintf(msg, mlen, "must be finite (got %s)", v); return -1; }
    if (errno == ERANGE && x == 0) {   // a subnormal (1e-320) is a double; 1e-400 is not
        snprintf(msg, mlen, "out of the range of a double (got %s)", v);
        return -1;
    }
    if (x == 0.0) x = 0.0;   // -0 is 0: one value, one configuration text, one run
    range_text(k, range, sizeof range);
    if (!in_range(k, x)) { snprintf(msg, mlen, "must be %s (got %s)", range, v); return -1; }
    *(double *)cfg_field(cfg, k) = x;
    return 0;
}

/* K_BOOL, K_ONOFF: true/on/yes/1 or false/off/no/0, in any case. */
static int parse_flag(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
    static const char *const t[] = {"true", "on", "yes", "1"}, *const f[] = {"false", "off", "no", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, t[i]) == 0) { *(int *)cfg_field(cfg, k) = 1; return 0; }
        if (strcasecmp(v, f[i]) == 0) { *(int *)cfg_field(cfg, k) = 0; return 0; }
    }
    snprintf(msg, mlen, "must be %s (got '%s')",
             k->type == K_ONOFF ? "on or off" : "true/false (or on/off, yes/no, 1/0)", v);
    return -1;
}

/* init.parametrization (docs/design.md §6h): a user's `mup` is Table 3 and `mup_simple` the
 * simple rules; a stored config's `mup` is the simple rules it was written with, and Table 3 is
 * stored as `mup_table3` (read as such from either). */
static int parse_parametrization(config_t *cfg, const char *v, char *msg, size_t mlen)
{
    int *x = (int *)&cfg->init.parametrization;
    if (!strcmp(v, "standard")) *x = PARAM_STANDARD;
    else if (!strcmp(v, "mup")) *x = cfg->stored ? PARAM_MUP_SIMPLE : PARAM_MUP_TABLE3;
    else if (!strcmp(v, "mup_simple")) *x = PARAM_MUP_SIMPLE;
    else if (!strcmp(v, "mup_table3")) *x = PARAM_MUP_TABLE3;
    else {
        snprintf(msg, mlen, "must be standard, mup (Table 3), mup_simple or mup_table3 (got '%s')",
                 v);
        return -1;
    }
    return 0;
}

/* K_ENUM: one of the key's names (the message lists them all). */
static int parse_enum(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
    if (k->off == offsetof(config_t, init.parametrization))
        return parse_parametrization(cfg, v, msg, mlen);
    int n = 0;
    for (; cfg_enum_name(k, n); n++)
        if (strcmp(v, cfg_enum_name(k, n)) == 0) { *(int *)cfg_field(cfg, k) = n; return 0; }
    sbuf_t b = sbuf_fixed(msg, mlen);
    sbuf_printf(&b, "must be ");
    for (int i = 0; i < n; i++)
        sbuf_printf(&b, "%s%s", cfg_enum_name(k, i), i == n - 1 ? "" : i == n - 2 ? " or " : ", ");
    sbuf_printf(&b, " (got '%s')", v);
    return -1;
}

/* K_SEED: decimal digits only, at most SEED_MAX (the generator's 32 bits). */
static int parse_seed(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
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
    *(unsigned long *)cfg_field(cfg, k) = (unsigned long)x;
    return 0;
}

/* K_STR: text that config_to_ini can write back on one INI line (no line break, no " ;"). */
static int parse_string(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
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
    memcpy(cfg_field(cfg, k), v, n + 1);
    return 0;
}

/* Parse text v (already stripped) into key k of cfg. Returns 0, or -1 with msg. */
int cfg_parse_value(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen)
{
    switch (k->type) {
    case K_INT: return parse_int(cfg, k, v, msg, mlen);
    case K_DBL: return parse_double(cfg, k, v, msg, mlen);
    case K_BOOL:
    case K_ONOFF: return parse_flag(cfg, k, v, msg, mlen);
    case K_ENUM: return parse_enum(cfg, k, v, msg, mlen);
    case K_SEED: return parse_seed(cfg, k, v, msg, mlen);
    case K_STR: return parse_string(cfg, k, v, msg, mlen);
    }
    snprintf(msg, mlen, "internal error: bad key type");
    return -1;
}

/* Range/enum check of the value stored in cfg (for config_validate). */
int cfg_check_value(const config_t *cfg, const cfg_key_t *k, char *msg, size_t mlen)
{
    char range[64];
    switch (k->type) {
    case K_INT: {
        int x = *(const int *)cfg_cfield(cfg, k);
        if (in_range(k, x)) return 0;
        range_text(k, range, sizeof range);
        snprintf(msg, mlen, "must be %s (got %d)", range, x);
        return -1;
    }
    case K_DBL: {
        double x = *(const double *)cfg_cfield(cfg, k);
        if (isfinite(x) && in_range(k, x)) return 0;
        range_text(k, range, sizeof range);
        snprintf(msg, mlen, "must be %s (got %.17g)", range, x);
        return -1;
    }
    case K_BOOL:
    case K_ONOFF: {
        int x = *(const int *)cfg_cfield(cfg, k);
        if (x == 0 || x == 1) return 0;
        snprintf(msg, mlen, "must be 0 or 1 (got %d)", x);
        return -1;
    }
    case K_ENUM: {
        int x = *(const int *)cfg_cfield(cfg, k);
        if (cfg_enum_name(k, x)) return 0;
        snprintf(msg, mlen, "invalid value %d", x);
        return -1;
    }
    case K_SEED: {
        const unsigned long x = *(const unsigned long *)cfg_cfield(cfg, k);
        if (x <= SEED_MAX) return 0;
        snprintf(msg, mlen, "must be <= %lu (the generator takes 32-bit seeds) (got %lu)", SEED_MAX, x);
        return -1;
    }
    case K_STR: {
        const char *s = (const char *)cfg_cfield(cfg, k);
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
