/* config_validate_internal.h — what the rules of config_validate.c and
 * config_validate_train.c share: the one error path and the choice of the key to blame. */
#ifndef STABILITY_CONFIG_VALIDATE_INTERNAL_H
#define STABILITY_CONFIG_VALIDATE_INTERNAL_H

#include <stddef.h>
#include "config/config.h"

/* Report key k of cfg as the offender: "WHERE: section.key: message" into err. Returns 2. */
int cfg_vfail(const config_t *cfg, int k, char *err, size_t errlen, const char *fmt, ...);

/* Which of two keys in a contradiction to name: a, unless a was left at its default and b
 * was not, or b came from --set (the latest change) and a did not. */
int cfg_blame(const config_t *cfg, int a, int b);

/* 1 when key k of cfg differs from its default (a stored config writes every key). */
int cfg_off_default(const config_t *cfg, int k);

/* The training keys' rules (config_validate_train.c: the schedule, the remedies, the
 * optimizers, keys a run ignores — not for a stored config —, StableAdamW's ε). 0 or 2. */
int cfg_validate_train(const config_t *cfg, int stored, char *err, size_t errlen);

#endif
