/* sbuf.h — the one string buffer: printf appends to it, growing on the heap (sbuf_t b = {0},
 * freed by sbuf_free: the gnuplot scripts) or within the caller's array (sbuf_fixed: the INI
 * writer, messages), where it goes on counting the length the whole text needs, as snprintf
 * does, so a caller can size a second try. */
#ifndef STABILITY_SBUF_H
#define STABILITY_SBUF_H

#include <stddef.h>

typedef struct {
    char *data;      /* the text, NUL-terminated (a growing buffer: NULL before the first append) */
    size_t len;      /* length of the text appended (a fixed buffer: what it needs, may be ≥ cap) */
    size_t cap;      /* bytes of data */
    int fixed;       /* data is the caller's array: never grown, text past cap − 1 is cut */
    int failed;      /* a growing buffer ran out of memory: the text is incomplete */
} sbuf_t;

/* A buffer over the caller's array buf[cap] (emptied). */
sbuf_t sbuf_fixed(char *buf, size_t cap);

/* Append printf-formatted text (a growing buffer sets failed on OOM and then ignores appends). */
void sbuf_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Free a growing buffer's text and empty it (nothing for a fixed one's). */
void sbuf_free(sbuf_t *b);

#endif
