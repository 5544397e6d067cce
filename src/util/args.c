/* args.c — command-line numbers (args.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    // ERANGE with a nonzero result is a subnormal number, which is a double like any other
    if (*end || (errno == ERANGE && v == 0) || !isfinite(v) || (lo_open ? !(v > lo) : !(v >= lo)) ||
        !(v <= hi))
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

int args_edit_distance(const char *a, const char *b)
{
    const size_t la = strlen(a), lb = strlen(b);
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
