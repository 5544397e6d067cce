/* config_keys.h — the key table and the helpers the config module's files share (private to
 * src/config: config.c parses, config_validate.c checks, config_keys.c holds the table, the
 * defaults and the INI writer, config_value.c a value's parsing and range checks). */
#ifndef STABILITY_CONFIG_KEYS_H
#define STABILITY_CONFIG_KEYS_H

#include <stddef.h>
#include "config/config.h"
#include "util/sbuf.h"

enum ktype { K_INT, K_DBL, K_BOOL, K_ONOFF, K_ENUM, K_SEED, K_STR };

typedef struct {
    const char *section, *name;
    enum ktype type;
    size_t off;                 /* offsetof(config_t, section.name) */
    double lo, hi;              /* K_INT, K_DBL: allowed range */
    int lo_open, hi_open;       /* K_DBL: exclusive bounds */
    const char *const *names;   /* K_ENUM: names indexed by value, NULL-terminated, */
    const char *(*name_of)(int);   /* or a function of the value (NULL past the last) */
} cfg_key_t;

/* Every key, in the order of config_to_ini (= the index of config_t.src_line). */
extern const cfg_key_t cfg_keys[];
extern const int cfg_nkeys;
/* The section names, NULL-terminated. */
extern const char *const cfg_sections[];

/* libinih (Debian: INI_MAX_LINE 200, on the stack) reads at most 198 characters plus the
 * newline per line; longer lines are errors (mem_reader). String values are limited so
 * that config_to_ini's "path = VALUE" line can always be read back. */
#define STR_VALUE_MAX 190

/* gsl_rng_mt19937 uses the low 32 bits of a seed: seeds above this would silently alias. */
#define SEED_MAX 4294967295UL

/* The field of key k inside cfg. */
static inline void *cfg_field(config_t *cfg, const cfg_key_t *k) { return (char *)cfg + k->off; }
static inline const void *cfg_cfield(const config_t *cfg, const cfg_key_t *k)
{
    return (const char *)cfg + k->off;
}

/* Index of section.name in cfg_keys, or −1. */
int cfg_find_key(const char *section, const char *name);
/* Index of a key known to be in the table (0 if it were not). */
int cfg_kidx(const char *section, const char *name);
/* 1 if s names a section. */
int cfg_known_section(const char *s);
/* Entries of a NULL-terminated name list. */
int cfg_name_count(const char *const *names);
/* Name of value v of enum key k, or NULL when v is not one of its values. */
const char *cfg_enum_name(const cfg_key_t *k, int v);

/* The optimizer's own defaults where the key was left unset (docs/design.md §6h): muon's
 * momentum 0.95, lion's beta2 0.99, warmup 0 with the suboptimality schedule. Called once the file and --set are read, before validation. */
void cfg_optimizer_defaults(config_t *cfg);
/* 0 when key k does not apply to cfg and config_to_ini leaves it out (muon's keys without muon,
 * qk_clip when off, f_star and lr_div without the suboptimality schedule); 1 otherwise. */
int config_key_applies(const config_t *cfg, const cfg_key_t *k);

/* Format into err (nothing when err is NULL or errlen 0). */
void cfg_set_err(char *err, size_t errlen, const char *fmt, ...);

/* Parse text v (already stripped) into key k of cfg (config_value.c). Returns 0, or −1 with
 * msg. */
int cfg_parse_value(config_t *cfg, const cfg_key_t *k, const char *v, char *msg, size_t mlen);
/* Range/enum check of the value stored in cfg for key k. 0, or −1 with msg. */
int cfg_check_value(const config_t *cfg, const cfg_key_t *k, char *msg, size_t mlen);

#endif
