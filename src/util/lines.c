/* lines.c — whole lines for libinih (lines.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/fsutil.h"
#include "util/lines.h"

void lines_init(lines_t *r, const char *buf, size_t len)
{
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->len = len;
}

char *lines_reader(char *str, int num, void *stream)
{
    lines_t *r = stream;
    if (r->pos >= r->len || num < 3) return NULL;
    const char *s = r->buf + r->pos;
    const char *nl = memchr(s, '\n', r->len - r->pos);
    const size_t n = nl ? (size_t)(nl - s) + 1 : r->len - r->pos;
    r->pos += n;
    r->line++;
    r->cur = s;
    r->curlen = n;
    // inih gets the text without "\r\n", plus "\n": text + 2 bytes must fit in num
    size_t text = n - (nl ? 1 : 0);
    if (text > 0 && s[text - 1] == '\r') text--;
    const size_t max = (size_t)num - 2;
    if (memchr(s, '\0', n)) {
        if (!r->err_line) {
            r->err_line = r->line;
            snprintf(r->err, sizeof r->err, "line contains a NUL byte");
        }
        text = 0;
    } else if (text > max) {
        if (!r->err_line) {
            r->err_line = r->line;
            snprintf(r->err, sizeof r->err, "line longer than %zu characters (libinih's limit)", max);
        }
        text = max;   // inih sees a truncated line; the error is ours
    }
    char why[96];
    // a UTF-8 BOM opens the file (inih skips it)
    const size_t bom = r->line == 1 && text >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3) ? 3 : 0;
    if (!r->err_line && lines_check(s + bom, text - bom, why, sizeof why)) {
        r->err_line = r->line;
        snprintf(r->err, sizeof r->err, "%s", why);
    }
    memcpy(str, s, text);
    str[text] = '\n';
    str[text + 1] = '\0';
    return str;
}

const char *lines_check(const char *s, size_t n, char *why, size_t len)
{
    if (memchr(s, '\r', n)) {
        snprintf(why, len, "carriage return inside a line (CR line endings? end lines with \\n)");
        return why;
    }
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    const char *close = i < n && s[i] == '[' ? memchr(s + i, ']', n - i) : NULL;
    if (!close) return NULL;   // not a section (or unclosed: inih says so)
    for (const char *c = close + 1; c < s + n; c++) {
        if (*c == ';' || *c == '#') break;   // a comment
        if (!isspace((unsigned char)*c)) {
            snprintf(why, len, "text after the section's ']': '%.*s'",
                     (int)(s + n - c < 40 ? s + n - c : 40), c);
            return why;
        }
    }
    return NULL;
}

char *lines_read_file(const char *path, size_t *len)
{
    // only a regular file: a FIFO would block, a device never end (docs/design.md §6)
    const int fd = fsutil_open_read(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        const int e = errno;
        if (fd >= 0) close(fd);
        errno = e;
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int e = ENOMEM;
    while (buf) {
        if (n + 1 >= cap) {
            char *grown = cap >= (size_t)16 << 20 ? NULL : realloc(buf, cap * 2);
            if (!grown) {
                e = cap >= (size_t)16 << 20 ? EFBIG : ENOMEM;
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        const size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (buf && ferror(f)) {
        e = errno ? errno : EIO;
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) {
        errno = e;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
