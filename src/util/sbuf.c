/* sbuf.c — the string buffer (util/sbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/sbuf.h"

sbuf_t sbuf_fixed(char *buf, size_t cap)
{
    if (buf && cap) buf[0] = '\0';
    return (sbuf_t){.data = buf, .cap = buf ? cap : 0, .fixed = 1};
}

void sbuf_printf(sbuf_t *b, const char *fmt, ...)
{
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const size_t room = b->data && b->len < b->cap ? b->cap - b->len : 0;
        const int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (b->fixed) {   // what fits is written; the length counts all of it
            if (n > 0) b->len += (size_t)n;
            return;
        }
        if (n >= 0 && (size_t)n < room) { b->len += (size_t)n; return; }
        const size_t cap = b->cap ? 2 * b->cap + (n > 0 ? (size_t)n : 0) : 4096;
        char *grown = realloc(b->data, cap);
        if (!grown) { b->failed = 1; return; }
        b->data = grown;
        b->cap = cap;
    }
}

void sbuf_free(sbuf_t *b)
{
    if (!b->fixed) free(b->data);
    memset(b, 0, sizeof *b);
}
