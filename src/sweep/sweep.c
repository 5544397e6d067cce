/* sweep.c — sweep files: parse (inih), expand (product and zip), run locally in parallel,
 * run one task, merge. Runs are child processes of the same binary, so a sweep point is
 * exactly `stability --config BASE --set ... --out results/<sweep>/<run>.h5`. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ini.h>
#include "sweep/sweep.h"
#include "config/config.h"
#include "io/h5io.h"
#include "util/progress.h"

/* ------------------------------------------------------------------ parsing */

typedef struct {
    sweep_t *s;
    FILE *fp;
    int line;
    char *err;
    size_t errlen;
    int failed;
    int zip_line;
    char zip[512];
} parse_t;

static void fail(parse_t *p, int line, const char *key, const char *fmt, ...)
{
    if (p->failed) return;
    p->failed = 1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%d: %s: %s", p->s->path, line, key, msg);
}

/* inih reader that counts lines, so the handler knows each key's line. */
static char *line_reader(char *str, int num, void *stream)
{
    parse_t *p = stream;
    char *r = fgets(str, num, p->fp);
    if (r) p->line++;
    return r;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* Split "a, b, c" into values; returns the count or −1 if too many / empty item. */
static int split_list(const char *text, char out[][128], int max)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", text);
    int n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *v = trim(tok);
        if (!*v || n == max || strlen(v) >= 128) return -1;
        snprintf(out[n++], 128, "%s", v);
    }
    return n;
}

static int on_entry(void *user, const char *section, const char *key, const char *value)
{
    parse_t *p = user;
    sweep_t *s = p->s;
    if (p->failed) return 1;
    if (!strcmp(section, "slurm")) {
        if (s->nslurm == SWEEP_MAX_SLURM) { fail(p, p->line, "slurm", "too many keys"); return 1; }
        snprintf(s->slurm_key[s->nslurm], sizeof s->slurm_key[0], "%s", key);
        snprintf(s->slurm_value[s->nslurm], sizeof s->slurm_value[0], "%s", value);
        s->slurm_line[s->nslurm++] = p->line;
        return 1;
    }
    if (strcmp(section, "sweep")) {
        fail(p, p->line, section, "unknown section (expected [sweep] or [slurm])");
        return 1;
    }
    if (!strcmp(key, "base")) {
        snprintf(s->base, sizeof s->base, "%s", value);
    } else if (!strcmp(key, "name")) {
        snprintf(s->pattern, sizeof s->pattern, "%s", value);
    } else if (!strcmp(key, "zip")) {
        snprintf(p->zip, sizeof p->zip, "%s", value);
        p->zip_line = p->line;
    } else if (strchr(key, '.')) {
        char vals[SWEEP_MAX_VALUES][128];
        const int n = split_list(value, vals, SWEEP_MAX_VALUES);
        if (n <= 0) { fail(p, p->line, key, "expected a value or a comma-separated list"); return 1; }
        for (int a = 0; a < s->naxes; a++)
            if (!strcmp(s->axes[a].key, key)) { fail(p, p->line, key, "given twice"); return 1; }
        if (n == 1) {
            if (s->nfixed == SWEEP_MAX_KEYS) { fail(p, p->line, key, "too many keys"); return 1; }
            s->fixed_line[s->nfixed] = p->line;
            snprintf(s->fixed[s->nfixed++], sizeof s->fixed[0], "%s=%s", key, vals[0]);
            return 1;
        }
        if (s->naxes == SWEEP_MAX_KEYS) { fail(p, p->line, key, "too many swept keys"); return 1; }
        sweep_axis_t *ax = &s->axes[s->naxes++];
        snprintf(ax->key, sizeof ax->key, "%s", key);
        ax->nvalues = n;
        memcpy(ax->values, vals, sizeof vals);
        ax->line = p->line;
    } else {
        fail(p, p->line, key, "unknown key in [sweep] (base, name, zip, or section.key = values)");
    }
    return 1;
}

/* Short name of a key: the part after the dot. */
static const char *short_key(const char *key)
{
    const char *d = strrchr(key, '.');
    return d ? d + 1 : key;
}

/* Expand the run-name pattern for one point; '/' and spaces become '-'. */
static int format_name(const sweep_t *s, const int *index, char *out, size_t len, char *bad,
                       size_t badlen)
{
    char buf[512] = "";
    size_t n = 0;
    if (!s->pattern[0]) {
        for (int a = 0; a < s->naxes; a++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s-%s", a ? "_" : "",
                                  short_key(s->axes[a].key), s->axes[a].values[index[a]]);
        if (!s->naxes) snprintf(buf, sizeof buf, "run");
    } else {
        for (const char *c = s->pattern; *c && n < sizeof buf - 1;) {
            if (*c != '{') { buf[n++] = *c++; continue; }
            const char *end = strchr(c, '}');
            if (!end) { snprintf(bad, badlen, "unclosed '{'"); return 2; }
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)(end - c - 1), c + 1);
            int found = -1;
            for (int a = 0; a < s->naxes && found < 0; a++)
                if (!strcmp(s->axes[a].key, key) || !strcmp(short_key(s->axes[a].key), key))
                    found = a;
            if (found < 0) { snprintf(bad, badlen, "{%s} is not a swept key", key); return 2; }
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", s->axes[found].values[index[found]]);
            c = end + 1;
        }
        buf[n < sizeof buf ? n : sizeof buf - 1] = '\0';
    }
    for (char *c = buf; *c; c++)
        if (*c == '/' || isspace((unsigned char)*c)) *c = '-';
    if (strlen(buf) >= len) {
        snprintf(bad, badlen, "run name longer than %zu characters", len - 1);
        return 2;
    }
    memcpy(out, buf, strlen(buf) + 1);
    return 0;
}

/* Cartesian product over the non-zipped axes and the zip group (one axis). */
static int expand(sweep_t *s, parse_t *p)
{
    int group_len = -1;
    for (int a = 0; a < s->naxes; a++) {
        if (!s->axes[a].zipped) continue;
        if (group_len >= 0 && s->axes[a].nvalues != group_len) {
            fail(p, s->axes[a].line, s->axes[a].key, "zipped lists must have equal lengths (%d vs %d)",
                 s->axes[a].nvalues, group_len);
            return 2;
        }
        group_len = s->axes[a].nvalues;
    }
    long total = group_len > 0 ? group_len : 1;
    for (int a = 0; a < s->naxes; a++)
        if (!s->axes[a].zipped) total *= s->axes[a].nvalues;
    if (total > SWEEP_MAX_RUNS) {
        fail(p, 1, "sweep", "%ld runs (at most %d)", total, SWEEP_MAX_RUNS);
        return 2;
    }
    s->runs = calloc((size_t)total, sizeof *s->runs);
    if (!s->runs) { fail(p, 1, "sweep", "out of memory"); return 1; }
    s->nruns = (int)total;
    int idx[SWEEP_MAX_KEYS] = {0}, zipi = 0;
    for (long r = 0; r < total; r++) {
        sweep_run_t *run = &s->runs[r];
        for (int a = 0; a < s->naxes; a++) run->index[a] = s->axes[a].zipped ? zipi : idx[a];
        char bad[128];
        if (format_name(s, run->index, run->name, sizeof run->name, bad, sizeof bad)) {
            fail(p, 1, "sweep.name", "%s", bad);
            return 2;
        }
        // odometer: the last axis varies fastest; the zip group counts as one axis at its first member
        int first_zip = -1;
        for (int a = 0; a < s->naxes; a++) if (s->axes[a].zipped) { first_zip = a; break; }
        for (int a = s->naxes - 1; a >= 0; a--) {
            if (s->axes[a].zipped && a != first_zip) continue;
            if (s->axes[a].zipped) {
                if (++zipi < group_len) break;
                zipi = 0;
            } else {
                if (++idx[a] < s->axes[a].nvalues) break;
                idx[a] = 0;
            }
        }
    }
    for (int i = 0; i < s->nruns; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(s->runs[i].name, s->runs[j].name)) {
                fail(p, 1, "sweep.name", "runs %d and %d are both named '%s' (use {key} for every swept key)",
                     j, i, s->runs[i].name);
                return 2;
            }
    return 0;
}

void sweep_run_sets(const sweep_t *s, int i, sweep_sets_t *out)
{
    out->n = 0;
    for (int k = 0; k < s->nfixed; k++) snprintf(out->text[out->n++], 256, "%s", s->fixed[k]);
    for (int a = 0; a < s->naxes; a++)
        snprintf(out->text[out->n++], 256, "%s=%s", s->axes[a].key,
                 s->axes[a].values[s->runs[i].index[a]]);
    for (int k = 0; k < out->n; k++) out->ptr[k] = out->text[k];
}

/* Line of key in the sweep file (swept or fixed), or 1. */
static int key_line(const sweep_t *s, const char *key)
{
    for (int a = 0; a < s->naxes; a++) if (!strcmp(s->axes[a].key, key)) return s->axes[a].line;
    for (int k = 0; k < s->nfixed; k++)
        if (!strncmp(s->fixed[k], key, strlen(key)) && s->fixed[k][strlen(key)] == '=')
            return s->fixed_line[k];
    return 1;
}

int sweep_load(sweep_t *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(s->name, sizeof s->name, "%.*s", (int)(strlen(b) > 4 && !strcmp(b + strlen(b) - 4, ".ini")
                                                     ? strlen(b) - 4 : strlen(b)), b);
    parse_t p = {.s = s, .err = err, .errlen = errlen};
    p.fp = fopen(path, "r");
    if (!p.fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return 2;
    }
    const int rc = ini_parse_stream(line_reader, &p, on_entry, &p);
    fclose(p.fp);
    if (p.failed) return 2;
    if (rc > 0) { fail(&p, rc, "syntax", "expected 'key = value' or '[section]'"); return 2; }
    if (!s->base[0]) { fail(&p, 1, "sweep.base", "missing (the config every run starts from)"); return 2; }
    if (p.zip[0]) {
        char names[SWEEP_MAX_KEYS][128];
        const int n = split_list(p.zip, names, SWEEP_MAX_KEYS);
        for (int z = 0; z < n; z++) {
            int found = 0;
            for (int a = 0; a < s->naxes; a++)
                if (!strcmp(s->axes[a].key, names[z])) { s->axes[a].zipped = 1; found = 1; }
            if (!found) { fail(&p, p.zip_line, "sweep.zip", "%s is not a swept list", names[z]); return 2; }
        }
    }
    if (expand(s, &p)) return 2;
    snprintf(s->results_dir, sizeof s->results_dir, "results/%s", s->name);
    snprintf(s->merged_path, sizeof s->merged_path, "results/%s.h5", s->name);
    // every run's config must load: errors point at the sweep line of the offending key
    for (int i = 0; i < s->nruns; i++) {
        sweep_sets_t sets;
        sweep_run_sets(s, i, &sets);
        config_t cfg;
        char cerr[CONFIG_ERR_MAX];
        if (config_load(&cfg, s->base, sets.ptr, sets.n, cerr, sizeof cerr) == 0) continue;
        if (!strncmp(cerr, "--set ", 6)) {
            char key[64];
            sscanf(cerr + 6, "%63[^:]", key);
            snprintf(err, errlen, "%s:%d: %s (run %s)", s->path, key_line(s, key), cerr + 6, s->runs[i].name);
        } else {
            snprintf(err, errlen, "%s: base: %s", s->path, cerr);
        }
        return 2;
    }
    return 0;
}

void sweep_free(sweep_t *s)
{
    free(s->runs);
    s->runs = NULL;
}

void sweep_run_path(const sweep_t *s, int i, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s.h5", s->results_dir, s->runs[i].name);
}

int sweep_run_complete(const sweep_t *s, int i)
{
    char path[1400];
    sweep_run_path(s, i, path, sizeof path);
    char *status = h5io_file_status(path);
    const int done = status && (!strcmp(status, "done") || !strcmp(status, "diverged"));
    free(status);
    return done;
}
