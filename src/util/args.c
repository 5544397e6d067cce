/* args.c — command-line numbers (args.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "util/args.h"

int args_parse_long(const char *text, long lo, long hi, long *out)
{
    if (!text[0] || isspace((unsigned char)text[0]) || text[0] == '+') return -1;
    char *end;
    errno = 0;
    const long v = strtol(text, &end, 10);
    if (*end || errno == ERANGE || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int args_parse_double(const char *text, double lo, int lo_open, double hi, double *out)
{
    if (!text[0] || isspace((unsigned char)text[0])) return -1;
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (*end || errno == ERANGE || !isfinite(v) || (lo_open ? !(v > lo) : !(v >= lo)) || !(v <= hi))
        return -1;
    *out = v;
    return 0;
}

int args_env_count(const char *name, long hi, long *out, char *err, size_t errlen)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    if (args_parse_long(v, 1, hi, out) == 0) return 1;
    snprintf(err, errlen, "%s='%.40s': not an integer in 1..%ld", name, v, hi);
    return -1;
}
