/* args.h — command-line numbers, whole or not at all (docs/design.md §3): "" is not 0,
 * "4294967297" is not 1, "inf" is not a tolerance. */
#ifndef STABILITY_ARGS_H
#define STABILITY_ARGS_H

#include <stddef.h>

/* text as a decimal integer in [lo, hi]: no empty text, sign only '-', nothing after the
 * digits, no overflow. Returns 0 with *out set, or −1. */
int args_parse_long(const char *text, long lo, long hi, long *out);

/* text as a finite number in [lo, hi] (lo_open: > lo), wholly consumed. 0 with *out, or −1. */
int args_parse_double(const char *text, double lo, int lo_open, double hi, double *out);

/* The environment variable name as a count in [1, hi] (a thread count): 0 when it is unset
 * or empty, 1 with *out when it is a whole decimal integer in range, −1 with err "NAME='TEXT':
 * not an integer in 1..HI" otherwise ("3junk" is not 3, "99999999999" not 1215752191). */
int args_env_count(const char *name, long hi, long *out, char *err, size_t errlen);

/* Levenshtein distance of a and b, letters compared without case, for "did you mean";
 * 99 when either is longer than 63 bytes (only short names are compared). */
int args_edit_distance(const char *a, const char *b);

#endif
