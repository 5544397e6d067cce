/* lines.h — a text in memory handed to libinih one whole line at a time (docs/design.md §4):
 * the reader behind config files (config.c's mem_reader) and sweep files, so both count lines
 * the same way and refuse the same lines. libinih's own fgets reader splits a line longer
 * than its buffer and parses the tail as a line of its own (the end of a long comment became
 * a key); here such a line is an error naming its line number, as is a NUL byte.
 */
#ifndef STABILITY_LINES_H
#define STABILITY_LINES_H

#include <stddef.h>

typedef struct {
    const char *buf;       /* the text (need not be NUL-terminated) */
    size_t len, pos;
    int line;              /* lines handed out so far: the line of the key being handled */
    const char *cur;       /* raw text of that line (with its newline), curlen bytes */
    size_t curlen;
    int err_line;          /* first line that is too long or holds a NUL byte (0: none) */
    char err[96];          /* what is wrong with it */
} lines_t;

/* Start reading buf[0..len). */
void lines_init(lines_t *r, const char *buf, size_t len);

/* ini_parse_stream's reader (stream: a lines_t *): the next whole line into str (num bytes),
 * "\r\n" as "\n"; NULL at the end. A line longer than num − 2 characters is truncated and
 * recorded as an error (err_line, err), and so is a NUL byte (the line is then empty). */
char *lines_reader(char *str, int num, void *stream);

/* What libinih would silently drop from one line's text s[0..n) (without its "\n" or
 * "\r\n"): a carriage return inside it (CR-only line endings make a file one line), or text
 * after a section's ']' other than a comment ("[model] junk", "[model]layers=2"). NULL when
 * every byte is used, else the message (in why, len bytes) — docs/design.md §4. */
const char *lines_check(const char *s, size_t n, char *why, size_t len);

/* The whole file at path, NUL-terminated (*len without the NUL), malloc'd; NULL with errno
 * (EFBIG above 16 MiB, EINVAL when it is not a regular file: a FIFO is never waited for). */
char *lines_read_file(const char *path, size_t *len);

#endif
