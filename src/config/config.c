/* config.c — INI file (+ --set overrides) -> config_t (validated by config_validate.c).
 *
 * The INI syntax is libinih's (ini_parse_stream). Debian builds libinih without
 * INI_HANDLER_LINENO, so we read the file into memory and hand inih one line per call of
 * our own reader: when inih calls the key handler, the reader's line count is that key's
 * line. Every key lives in one table (cfg_keys, config_keys.c) that drives parsing, range
 * checks, provenance (config_t.src_line) and the INI writer, so they cannot disagree.
 *
 * Error formats (err is filled, nothing is printed):
 *   FILE:LINE: section.key: message   a key of the file (bad value, unknown, duplicate, ...)
 *   FILE:LINE: section: message       an unknown [section]
 *   FILE:LINE: syntax: message        a line inih cannot parse (no '=', unclosed '[', too long)
 *   FILE: cannot open: strerror       the file (also tried configs/NAME[.ini])
 *   --set section.key: message        a --set override
 *   WHERE: section.key: message       config_validate; WHERE = FILE:LINE, --set, or FILE/"defaults"
 *                                     for a key left at its default.
 */
#include "config/config_keys.h"
#include "util/args.h"
#include "util/lines.h"

#include <ini.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- messages */

/* Message for a key that is not in [section] (section known). */
static void unknown_key_msg(const char *section, const char *name, char *msg, size_t mlen)
{
    for (int i = 0; i < cfg_nkeys; i++)
        if (strcmp(cfg_keys[i].name, name) == 0) {
            snprintf(msg, mlen, "unknown key (%s belongs in [%s])", name, cfg_keys[i].section);
            return;
        }
    int best = -1, bestd = 3;
    for (int i = 0; i < cfg_nkeys; i++) {
        if (strcmp(cfg_keys[i].section, section) != 0) continue;
        int dist = args_edit_distance(name, cfg_keys[i].name);
        if (dist < bestd) { bestd = dist; best = i; }
    }
    if (best >= 0) {
        snprintf(msg, mlen, "unknown key (did you mean %s.%s?)", section, cfg_keys[best].name);
        return;
    }
    sbuf_t b = sbuf_fixed(msg, mlen);
    sbuf_printf(&b, "unknown key (cfg_keys of [%s]:", section);
    const char *sep = " ";
    for (int i = 0; i < cfg_nkeys; i++)
        if (strcmp(cfg_keys[i].section, section) == 0) { sbuf_printf(&b, "%s%s", sep, cfg_keys[i].name); sep = ", "; }
    sbuf_printf(&b, ")");
}

static void unknown_section_msg(const char *section, char *msg, size_t mlen)
{
    for (int i = 0; cfg_sections[i]; i++)
        if (args_edit_distance(section, cfg_sections[i]) <= 2) {
            snprintf(msg, mlen, "unknown section [%s] (did you mean [%s]?)", section, cfg_sections[i]);
            return;
        }
    snprintf(msg, mlen, "unknown section [%s] (cfg_sections: model, init, data, train, probe, output)", section);
}

/* ---------------------------------------------------------------- INI parsing */

typedef struct {
    /* the file, in memory */
    const char *file;           /* name used in messages */
    const char *buf;
    size_t len, pos;
    int line;                   /* lines handed to inih so far = line of the current key */
    const char *cur;            /* raw text of the current line */
    size_t curlen;
    /* results */
    config_t *cfg;
    int err_line;               /* line of the first error we found (0 = none) */
    char *err;
    size_t errlen;
    /* previous key (to recognise inih's continuation lines) */
    char prev_section[64], prev_name[64];
} parse_t;

static void perr(parse_t *p, int line, const char *key, const char *msg)
{
    if (p->err_line) return;    /* keep the first */
    p->err_line = line;
    cfg_set_err(p->err, p->errlen, "%s:%d: %s: %s", p->file, line, key, msg);
}

/* Raw line text without a UTF-8 BOM (line 1) — for our checks on what inih saw. */
static const char *raw_start(const parse_t *p, const char *s, int line)
{
    if (line == 1 && p->len >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        return s + 3;
    return s;
}

/* The reader inih calls instead of fgets: one whole line of the buffer per call. */
static char *mem_reader(char *str, int num, void *stream)
{
    parse_t *p = stream;
    if (p->pos >= p->len || num < 3) return NULL;
    const char *s = p->buf + p->pos;
    const char *nl = memchr(s, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - s) + 1 : p->len - p->pos;
    p->pos += n;
    p->line++;
    p->cur = s;
    p->curlen = n;

    /* inih gets the text without "\r\n" plus "\n": text + 2 bytes must fit in num. */
    size_t text = n - (nl ? 1 : 0);
    if (text > 0 && s[text - 1] == '\r') text--;
    size_t max = (size_t)num - 2;
    if (memchr(s, '\0', n)) {
        perr(p, p->line, "syntax", "line contains a NUL byte");
        text = 0;
    } else if (text > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "line longer than %zu characters (libinih's limit)", max);
        perr(p, p->line, "syntax", msg);
        text = max;                          /* inih sees a truncated line; the error is ours */
    }
    memcpy(str, s, text);
    str[text] = '\n';
    str[text + 1] = '\0';

    /* What inih would drop silently (text after a ']', a CR inside a line) is an error. */
    const char *r = raw_start(p, s, p->line);
    char why[96];
    if (lines_check(r, text - (size_t)(r - s), why, sizeof why)) perr(p, p->line, "syntax", why);
    /* An unknown [section] is an error even when no key follows it (inih calls the handler
     * only for cfg_keys). Same rule as inih: the name runs from '[' to the first ']'. */
    while (r < s + text && isspace((unsigned char)*r)) r++;
    if (r < s + text && *r == '[') {
        const char *close = memchr(r, ']', (size_t)(s + text - r));
        if (close) {
            char name[64];
            size_t m = (size_t)(close - r - 1);
            if (m >= sizeof name) m = sizeof name - 1;
            memcpy(name, r + 1, m);
            name[m] = '\0';
            if (!cfg_known_section(name)) {
                char msg[160];
                unknown_section_msg(name, msg, sizeof msg);
                perr(p, p->line, name, msg);
            }
        }
        p->prev_name[0] = '\0';
    }
    return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    parse_t *p = user;
    int line = p->line;
    char msg[CONFIG_ERR_MAX / 2], key[160];

    if (p->err_line) return 1;   /* report only the first error */

    snprintf(key, sizeof key, "%s%s%s", section, *section ? "." : "", name);

    /* inih's multi-line values: an indented line after a key is passed as another value of
     * that key. Not supported: say so instead of calling it a duplicate. */
    const char *r = raw_start(p, p->cur, line);
    if (isspace((unsigned char)*r) && *r != '\n' && *r != '\r' && strcmp(section, p->prev_section) == 0 &&
        strcmp(name, p->prev_name) == 0) {
        snprintf(msg, sizeof msg,
                 "indented line continues the value of %s (continuation lines are not supported; "
                 "remove the leading whitespace)", key);
        perr(p, line, key, msg);
        return 0;
    }
    snprintf(p->prev_section, sizeof p->prev_section, "%s", section);
    snprintf(p->prev_name, sizeof p->prev_name, "%s", name);

    if (!*section) {
        int k = -1;
        for (int i = 0; i < cfg_nkeys && k < 0; i++)
            if (strcmp(cfg_keys[i].name, name) == 0) k = i;
        if (k >= 0)
            snprintf(msg, sizeof msg, "key outside any section (it belongs in [%s])", cfg_keys[k].section);
        else
            snprintf(msg, sizeof msg, "key outside any section");
        perr(p, line, key, msg);
        return 0;
    }
    if (!cfg_known_section(section)) {
        unknown_section_msg(section, msg, sizeof msg);
        perr(p, line, section, msg);
        return 0;
    }
    int k = cfg_find_key(section, name);
    if (k < 0) {
        unknown_key_msg(section, name, msg, sizeof msg);
        perr(p, line, key, msg);
        return 0;
    }
    if (p->cfg->src_line[k] > 0) {
        snprintf(msg, sizeof msg, "duplicate key (first set on line %d)", p->cfg->src_line[k]);
        perr(p, line, key, msg);
        return 0;
    }
    if (cfg_parse_value(p->cfg, &cfg_keys[k], value, msg, sizeof msg) != 0) {
        perr(p, line, key, msg);
        return 0;
    }
    p->cfg->src_line[k] = line;
    return 1;
}

/* Text of line n of buf (1-based), stripped, for messages. */
static void line_text(const char *buf, size_t len, int n, char *out, size_t outlen)
{
    size_t i = 0;
    for (int l = 1; l < n && i < len; i++)
        if (buf[i] == '\n') l++;
    size_t j = i;
    while (j < len && buf[j] != '\n') j++;
    while (i < j && isspace((unsigned char)buf[i])) i++;
    while (j > i && isspace((unsigned char)buf[j - 1])) j--;
    size_t m = j - i;
    if (m > 60) m = 60;
    snprintf(out, outlen, "%.*s%s", (int)m, buf + i, j - i > 60 ? "..." : "");
}

/* Parse INI text (file = name for messages) into cfg. Returns 0 or 2. */
static int parse_text(config_t *cfg, const char *file, const char *buf, size_t len, char *err, size_t errlen)
{
    parse_t p;
    memset(&p, 0, sizeof p);
    p.file = file;
    p.buf = buf;
    p.len = len;
    p.cfg = cfg;
    p.err = err;
    p.errlen = errlen;
    int r = ini_parse_stream(mem_reader, &p, on_key, &p);
    if (p.err_line && (r <= 0 || r >= p.err_line)) return 2;
    if (r > 0) {
        char text[80];
        line_text(buf, len, r, text, sizeof text);
        if (text[0] == '[')
            cfg_set_err(err, errlen, "%s:%d: syntax: section header without closing ']': '%s'", file, r, text);
        else
            cfg_set_err(err, errlen, "%s:%d: syntax: expected 'key = value' or '[section]', got '%s'", file, r,
                    text);
        return 2;
    }
    if (r < 0) {
        cfg_set_err(err, errlen, "%s: cannot parse (libinih error %d)", file, r);
        return 2;
    }
    return 0;
}

/* ---------------------------------------------------------------- files */

/* Read a whole regular file (util/lines.h: a FIFO or a device is refused, never waited for).
 * Returns a malloc'd NUL-terminated buffer, or NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
    return lines_read_file(path, len);
}

/* Why a file cannot be read, for "cannot open: ..." (EINVAL: a FIFO, a device, a directory). */
static const char *open_error(int e)
{
    return e == EINVAL ? "not a regular file" : strerror(e);
}

/* Open path, or configs/path, configs/path.ini for a name without '/' that does not exist.
 * Returns the buffer and the path used in resolved, or NULL with err filled. */
static char *load_file(const char *path, char *resolved, size_t rlen, size_t *len, char *err, size_t errlen)
{
    if (strlen(path) >= rlen - 16) {
        cfg_set_err(err, errlen, "%s: cannot open: path too long", path);
        return NULL;
    }
    snprintf(resolved, rlen, "%s", path);
    char *buf = read_file(resolved, len);
    if (buf) return buf;
    int e = errno;
    if (e == ENOENT && !strchr(path, '/')) {
        size_t plen = strlen(path);
        int has_ini = plen >= 4 && strcmp(path + plen - 4, ".ini") == 0;
        snprintf(resolved, rlen, "configs/%s", path);
        buf = read_file(resolved, len);
        if (buf) return buf;
        if (errno != ENOENT) {
            cfg_set_err(err, errlen, "%s: cannot open: %s", resolved, open_error(errno));
            return NULL;
        }
        if (!has_ini) {
            snprintf(resolved, rlen, "configs/%s.ini", path);
            buf = read_file(resolved, len);
            if (buf) return buf;
            if (errno != ENOENT) {
                cfg_set_err(err, errlen, "%s: cannot open: %s", resolved, open_error(errno));
                return NULL;
            }
            cfg_set_err(err, errlen, "%s: cannot open: %s (also tried configs/%s, configs/%s.ini)", path,
                    open_error(e), path, path);
        } else {
            cfg_set_err(err, errlen, "%s: cannot open: %s (also tried configs/%s)", path, open_error(e), path);
        }
        return NULL;
    }
    cfg_set_err(err, errlen, "%s: cannot open: %s", path, open_error(e));
    return NULL;
}

int config_load(config_t *cfg, const char *path, const char *const *sets, int nsets, char *err, size_t errlen)
{
    config_defaults(cfg);
    if (err && errlen) err[0] = '\0';
    if (path && *path) {
        size_t len = 0;
        char *buf = load_file(path, cfg->path, sizeof cfg->path, &len, err, errlen);
        if (!buf) {
            cfg->path[0] = '\0';
            return 2;
        }
        const char *base = strrchr(cfg->path, '/');
        base = base ? base + 1 : cfg->path;
        size_t n = strlen(base);
        if (n >= 4 && strcmp(base + n - 4, ".ini") == 0) n -= 4;
        if (n >= sizeof cfg->name) n = sizeof cfg->name - 1;
        memcpy(cfg->name, base, n);
        cfg->name[n] = '\0';
        int rc = parse_text(cfg, cfg->path, buf, len, err, errlen);
        free(buf);
        if (rc) return rc;
    }
    for (int i = 0; i < nsets; i++)
        if (config_set(cfg, sets[i], err, errlen)) return 2;
    config_task_defaults(cfg);
    cfg_optimizer_defaults(cfg);
    const int rc = config_validate(cfg, err, errlen);
    return rc ? rc : config_refuse_leak(cfg, err, errlen);
}

int config_parse_string(config_t *cfg, const char *text, const char *name, char *err, size_t errlen)
{
    config_defaults(cfg);
    if (err && errlen) err[0] = '\0';
    snprintf(cfg->path, sizeof cfg->path, "%s", name);
    snprintf(cfg->name, sizeof cfg->name, "%s", name);
    cfg->stored = 1;   // a stored `mup` is μParam (simple), as it was written (§6h)
    const int rc = parse_text(cfg, name, text, strlen(text), err, errlen);
    if (!rc) cfg_optimizer_defaults(cfg);
    return rc ? rc : config_validate_stored(cfg, err, errlen);
}

/* ---------------------------------------------------------------- --set */

static char *strip(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

int config_set(config_t *cfg, const char *assignment, char *err, size_t errlen)
{
    size_t n = strlen(assignment);
    char *copy = malloc(n + 1);
    if (!copy) {
        cfg_set_err(err, errlen, "--set %s: out of memory", assignment);
        return 2;
    }
    memcpy(copy, assignment, n + 1);
    char msg[CONFIG_ERR_MAX / 2];
    int rc = 2;
    char *eq = strchr(copy, '=');
    if (!eq) {
        cfg_set_err(err, errlen, "--set %s: expected section.key=value (no '=')", strip(copy));
        goto out;
    }
    *eq = '\0';
    char *key = strip(copy), *value = strip(eq + 1);
    char *dot = strchr(key, '.');
    if (!dot) {
        int k = -1;
        for (int i = 0; i < cfg_nkeys && k < 0; i++)
            if (strcmp(cfg_keys[i].name, key) == 0) k = i;
        if (k >= 0)
            cfg_set_err(err, errlen, "--set %s: expected section.key=value (did you mean %s.%s?)", key,
                    cfg_keys[k].section, key);
        else
            cfg_set_err(err, errlen, "--set %s: expected section.key=value", key);
        goto out;
    }
    *dot = '\0';
    const char *section = key, *name = dot + 1;
    if (!cfg_known_section(section)) {
        unknown_section_msg(section, msg, sizeof msg);
        cfg_set_err(err, errlen, "--set %s.%s: %s", section, name, msg);
        goto out;
    }
    int k = cfg_find_key(section, name);
    if (k < 0) {
        unknown_key_msg(section, name, msg, sizeof msg);
        cfg_set_err(err, errlen, "--set %s.%s: %s", section, name, msg);
        goto out;
    }
    if (cfg_parse_value(cfg, &cfg_keys[k], value, msg, sizeof msg) != 0) {
        cfg_set_err(err, errlen, "--set %s.%s: %s", section, name, msg);
        goto out;
    }
    cfg->src_line[k] = -1;
    rc = 0;
out:
    free(copy);
    return rc;
}
