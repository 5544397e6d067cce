/* args.h — command-line numbers, whole or not at all (docs/design.md §3): "" is not 0,
 * "4294967297" is not 1, "inf" is not a tolerance. */
#ifndef STABILITY_ARGS_H
#define STABILITY_ARGS_H

/* text as a decimal integer in [lo, hi]: no empty text, sign only '-', nothing after the
 * digits, no overflow. Returns 0 with *out set, or −1. */
int args_parse_long(const char *text, long lo, long hi, long *out);

/* text as a finite number in [lo, hi] (lo_open: > lo), wholly consumed. 0 with *out, or −1. */
int args_parse_double(const char *text, double lo, int lo_open, double hi, double *out);

#endif
