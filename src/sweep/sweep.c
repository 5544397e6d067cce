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
#include "util/fsutil.h"
#include "util/lines.h"
#include "util/progress.h"

/* ------------------------------------------------------------------ parsing */

/* Keys seen so far (every key of a sweep file may appear once, as in configs). */
#define MAX_SEEN (2 * SWEEP_MAX_KEYS + SWEEP_MAX_SLURM + 8)

typedef struct {
    sweep_t *s;
    lines_t lines;             /* the line reader configs use (util/lines.h) */
    char *err;
    size_t errlen;
    int failed, fail_line;
    int zip_line, name_line;
    char zip[512];
    int nseen;
    char seen[MAX_SEEN][80];   /* "section.key" */
    int seen_line[MAX_SEEN];
    char prev[80];             /* the previous key (inih's continuation lines repeat it) */
} parse_t;

static void fail(parse_t *p, int line, const char *key, const char *fmt, ...)
{
    if (p->failed) return;
    p->failed = 1;
    p->fail_line = line;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%d: %s: %s", p->s->path, line, key, msg);
}

/* 0 the first time key appears; else 1 after failing as configs do (a duplicate, or an
 * indented line that inih reads as a continuation of the key before). */
static int seen_before(parse_t *p, const char *key)
{
    const int line = p->lines.line;
    const char *raw = p->lines.cur;
    if (raw && (*raw == ' ' || *raw == '\t') && !strcmp(key, p->prev)) {
        fail(p, line, key, "indented line continues the value of %s (continuation lines are not "
             "supported; remove the leading whitespace)", key);
        return 1;
    }
    snprintf(p->prev, sizeof p->prev, "%s", key);
    for (int k = 0; k < p->nseen; k++)
        if (!strcmp(p->seen[k], key)) {
            fail(p, line, key, "duplicate key (first set on line %d)", p->seen_line[k]);
            return 1;
        }
    if (p->nseen == MAX_SEEN) { fail(p, line, key, "too many keys"); return 1; }
    snprintf(p->seen[p->nseen], sizeof p->seen[0], "%s", key);
    p->seen_line[p->nseen++] = line;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* Split "a, b, c" into values: the count, or −1 with why (an empty item such as in "1,,2" or
 * "1, 2,", too many items, an item of 128 characters or more). */
static int split_list(const char *text, char out[][128], int max, char *why, size_t len)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", text);
    int n = 0;
    for (char *tok = buf, *comma; tok; tok = comma ? comma + 1 : NULL) {
        if ((comma = strchr(tok, ','))) *comma = '\0';
        const char *v = trim(tok);
        if (!*v) { snprintf(why, len, "empty item in the list '%.100s'", text); return -1; }
        if (n == max) { snprintf(why, len, "more than %d items", max); return -1; }
        const size_t vlen = strlen(v);
        if (vlen >= 128) { snprintf(why, len, "an item of 128 characters or more"); return -1; }
        memcpy(out[n++], v, vlen + 1);
    }
    return n;
}

/* A swept (list) or fixed (one value) section.key of [sweep]. */
static void on_run_key(parse_t *p, const char *key, const char *value, int line)
{
    sweep_t *s = p->s;
    char vals[SWEEP_MAX_VALUES][128], why[160];
    const int n = split_list(value, vals, SWEEP_MAX_VALUES, why, sizeof why);
    if (n < 0) { fail(p, line, key, "%s", why); return; }
    if (n == 1) {
        if (s->nfixed == SWEEP_MAX_KEYS) { fail(p, line, key, "too many keys"); return; }
        s->fixed_line[s->nfixed] = line;
        snprintf(s->fixed[s->nfixed++], sizeof s->fixed[0], "%s=%s", key, vals[0]);
        return;
    }
    if (s->naxes == SWEEP_MAX_KEYS) { fail(p, line, key, "too many swept keys"); return; }
    sweep_axis_t *ax = &s->axes[s->naxes++];
    snprintf(ax->key, sizeof ax->key, "%s", key);
    ax->nvalues = n;
    memcpy(ax->values, vals, sizeof vals);
    ax->line = line;
}

/* [sweep] reuse: a list of sweep files, each a readable regular file. */
static void on_reuse(parse_t *p, const char *value, int line)
{
    char vals[SWEEP_MAX_VALUES][128], why[160];
    const int n = split_list(value, vals, SWEEP_MAX_VALUES, why, sizeof why);
    if (n < 0) { fail(p, line, "sweep.reuse", "%s", why); return; }
    if (n > SWEEP_MAX_REUSE || strlen(value) >= sizeof p->s->reuse) {
        fail(p, line, "sweep.reuse", "more than %d sweep files", SWEEP_MAX_REUSE);
        return;
    }
    for (int k = 0; k < n; k++)
        if (!fsutil_is_regular(vals[k]) || access(vals[k], R_OK) != 0) {
            fail(p, line, "sweep.reuse", "%s: not a readable sweep file", vals[k]);
            return;
        }
    snprintf(p->s->reuse, sizeof p->s->reuse, "%s", value);
}

static int on_entry(void *user, const char *section, const char *key, const char *value)
{
    parse_t *p = user;
    sweep_t *s = p->s;
    const int line = p->lines.line;
    char full[80];   // as messages name it: model.layers, sweep.base, slurm.time
    if (!strcmp(section, "sweep") && strchr(key, '.')) snprintf(full, sizeof full, "%s", key);
    else snprintf(full, sizeof full, "%s.%s", section, key);
    if (p->failed || seen_before(p, full)) return 1;
    if (!strcmp(section, "slurm")) {
        if (s->nslurm == SWEEP_MAX_SLURM) { fail(p, line, "slurm", "too many keys"); return 1; }
        snprintf(s->slurm_key[s->nslurm], sizeof s->slurm_key[0], "%s", key);
        snprintf(s->slurm_value[s->nslurm], sizeof s->slurm_value[0], "%s", value);
        s->slurm_line[s->nslurm++] = line;
        return 1;
    }
    if (strcmp(section, "sweep")) {
        fail(p, line, section, "unknown section (expected [sweep] or [slurm])");
        return 1;
    }
    if (!strcmp(key, "base")) {
        snprintf(s->base, sizeof s->base, "%s", value);
    } else if (!strcmp(key, "name")) {
        snprintf(s->pattern, sizeof s->pattern, "%s", value);
        p->name_line = line;
    } else if (!strcmp(key, "title")) {   // the figures' title (report/plot_label.h)
        if (strlen(value) >= sizeof s->title) fail(p, line, "sweep.title", "longer than 255 bytes");
        else snprintf(s->title, sizeof s->title, "%s", value);
    } else if (!strcmp(key, "reuse")) {   // sweeps whose identical runs are taken (sweep_reuse.c)
        on_reuse(p, value, line);
    } else if (!strcmp(key, "zip")) {
        snprintf(p->zip, sizeof p->zip, "%s", value);
        p->zip_line = line;
    } else if (strchr(key, '.')) {
        on_run_key(p, key, value, line);
    } else {
        fail(p, line, key, "unknown key in [sweep] (base, name, title, zip, reuse, or "
                           "section.key = values)");
    }
    return 1;
}

/* The zip groups of `zip = a, b | c, d`: each '|'-separated list is one group of swept keys
 * paired with each other (equal lengths), the groups crossed with each other and with the other
 * lists; axes[a].zipped is the group's number from 1 (0: not zipped). */
static int parse_zip(parse_t *p)
{
    sweep_t *s = p->s;
    char buf[sizeof p->zip];
    snprintf(buf, sizeof buf, "%s", p->zip);
    int group = 0;
    for (char *tok = buf, *bar; tok; tok = bar ? bar + 1 : NULL) {
        if ((bar = strchr(tok, '|'))) *bar = '\0';
        char names[SWEEP_MAX_KEYS][128], why[160];
        const int n = split_list(tok, names, SWEEP_MAX_KEYS, why, sizeof why);
        if (n < 0) { fail(p, p->zip_line, "sweep.zip", "%s", why); return 2; }
        group++;
        for (int z = 0; z < n; z++) {
            int found = 0;
            for (int a = 0; a < s->naxes; a++) {
                if (strcmp(s->axes[a].key, names[z])) continue;
                if (s->axes[a].zipped) {
                    fail(p, p->zip_line, "sweep.zip", "%s is in two zip groups", names[z]);
                    return 2;
                }
                s->axes[a].zipped = group;
                found = 1;
            }
            if (!found) { fail(p, p->zip_line, "sweep.zip", "%s is not a swept list", names[z]); return 2; }
        }
    }
    return 0;
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
    // the name becomes results/<sweep>/<name>.h5 and an HDF5 group: a real, visible file name
    int control = 0;
    for (const char *c = buf; *c; c++) control |= (unsigned char)*c < 0x20 || *c == 0x7f;
    if (!buf[0] || buf[0] == '.' || control) {
        snprintf(bad, badlen, "run name '%.60s' is not a usable file name (empty, starting with "
                 "'.', or with a control character)", buf);
        return 2;
    }
    memcpy(out, buf, strlen(buf) + 1);
    return 0;
}

/* Cartesian product over the non-zipped axes and the zip groups (each one axis, at its first
 * member's place; the last axis varies fastest). */
static int expand(sweep_t *s, parse_t *p)
{
    int group_len[SWEEP_MAX_KEYS + 1], first[SWEEP_MAX_KEYS + 1];
    for (int g = 0; g <= SWEEP_MAX_KEYS; g++) group_len[g] = -1, first[g] = -1;
    for (int a = 0; a < s->naxes; a++) {
        const int g = s->axes[a].zipped;
        if (!g) continue;
        if (group_len[g] >= 0 && s->axes[a].nvalues != group_len[g]) {
            fail(p, s->axes[a].line, s->axes[a].key, "zipped lists must have equal lengths (%d vs %d)",
                 s->axes[a].nvalues, group_len[g]);
            return 2;
        }
        group_len[g] = s->axes[a].nvalues;
        if (first[g] < 0) first[g] = a;
    }
    long total = 1;
    for (int a = 0; a < s->naxes; a++) {
        const int g = s->axes[a].zipped;
        if (!g || first[g] == a) total *= s->axes[a].nvalues;
        if (total > SWEEP_MAX_RUNS) break;
    }
    if (total > SWEEP_MAX_RUNS) {
        fail(p, 1, "sweep", "%ld runs or more (at most %d)", total, SWEEP_MAX_RUNS);
        return 2;
    }
    s->runs = calloc((size_t)total, sizeof *s->runs);
    if (!s->runs) { fail(p, 1, "sweep", "out of memory"); return 1; }
    s->nruns = (int)total;
    int idx[SWEEP_MAX_KEYS] = {0};   // per axis; a group's index lives at its first member
    for (long r = 0; r < total; r++) {
        sweep_run_t *run = &s->runs[r];
        for (int a = 0; a < s->naxes; a++) {
            const int g = s->axes[a].zipped;
            run->index[a] = g ? idx[first[g]] : idx[a];
        }
        char bad[256];
        if (format_name(s, run->index, run->name, sizeof run->name, bad, sizeof bad)) {
            fail(p, p->name_line ? p->name_line : 1, "sweep.name", "%s", bad);
            return 2;
        }
        // odometer over the axes that count: the non-zipped ones and each group's first member
        for (int a = s->naxes - 1; a >= 0; a--) {
            const int g = s->axes[a].zipped;
            if (g && first[g] != a) continue;
            if (++idx[a] < s->axes[a].nvalues) break;
            idx[a] = 0;
        }
    }
    for (int i = 0; i < s->nruns; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(s->runs[i].name, s->runs[j].name)) {
                fail(p, p->name_line ? p->name_line : 1, "sweep.name", "runs %d and %d are both "
                     "named '%s' (use {key} for every swept key)", j, i, s->runs[i].name);
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

static int parse_text(parse_t *p);
static int validate_runs(sweep_t *s, char *err, size_t errlen);

int sweep_load(sweep_t *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(s->name, sizeof s->name, "%.*s", (int)(strlen(b) > 4 && !strcmp(b + strlen(b) - 4, ".ini")
                                                     ? strlen(b) - 4 : strlen(b)), b);
    if (strlen(path) >= sizeof s->path || strlen(b) >= sizeof s->name + 4 || !s->name[0]) {
        snprintf(err, errlen, "%.100s: %s", path, s->name[0] ? "path too long" : "no sweep name");
        return 2;
    }
    // the name becomes results/<name>/ and results/<name>.h5: "..ini" would make it results/..
    int control = 0;
    for (const char *c = s->name; *c; c++) control |= (unsigned char)*c < 0x20 || *c == 0x7f;
    if (s->name[0] == '.' || control) {
        snprintf(err, errlen, "%.200s: the sweep's name '%.100s' (its file name without .ini) is "
                 "not usable as results/<name>/ (it starts with '.' or holds a control "
                 "character); rename the file", path, s->name);
        return 2;
    }
    size_t len;
    char *text = lines_read_file(path, &len);
    if (!text) {
        snprintf(err, errlen, "%s: cannot open: %s", path,
                 errno == EINVAL ? "not a regular file" : strerror(errno));
        return 2;
    }
    parse_t *p = calloc(1, sizeof *p);
    if (!p) { free(text); snprintf(err, errlen, "%s: out of memory", path); return 1; }
    p->s = s;
    p->err = err;
    p->errlen = errlen;
    lines_init(&p->lines, text, len);
    const int rc = parse_text(p);
    free(text);
    free(p);
    return rc;
}

/* The parse of sweep_load, after the file is in memory. Returns 0 or 2. */
static int parse_text(parse_t *p)
{
    sweep_t *s = p->s;
    const int rc = ini_parse_stream(lines_reader, &p->lines, on_entry, p);
    // the first error by line: a line too long for libinih (or with a NUL), or a key's
    if (p->lines.err_line && (!p->failed || p->lines.err_line <= p->fail_line)) {
        p->failed = 0;
        fail(p, p->lines.err_line, "syntax", "%s", p->lines.err);
    }
    if (p->failed) return 2;
    if (rc > 0) { fail(p, rc, "syntax", "expected 'key = value' or '[section]'"); return 2; }
    if (!s->base[0]) { fail(p, 1, "sweep.base", "missing (the config every run starts from)"); return 2; }
    if (p->zip[0] && parse_zip(p)) return 2;
    if (expand(s, p)) return 2;
    return validate_runs(s, p->err, p->errlen);
}

/* A run's resolved configuration as a run is identified by (h5io_config_text: every key that
 * changes its result, the seed included), and its index: sorted, equal texts are one run. */
typedef struct { char *text; int run; } run_text_t;

static int by_text(const void *a, const void *b)
{
    const run_text_t *x = a, *y = b;
    const int c = strcmp(x->text, y->text);
    return c ? c : x->run - y->run;
}

/* Runs t[0..n) (n >= 2) resolve to one configuration: "FILE:LINE: KEY: 'a', 'b' and 'c' are one
 * value: ..." at the first swept key whose values differ between them. Returns 2. */
static int duplicate_runs(const sweep_t *s, const run_text_t *t, int n, char *err, size_t errlen)
{
    int a = 0;
    while (a < s->naxes && s->runs[t[0].run].index[a] == s->runs[t[1].run].index[a]) a++;
    char values[1024] = "", names[1024] = "";
    for (int k = 0; k < n; k++) {
        const char *sep = k == 0 ? "" : k == n - 1 ? " and " : ", ";
        size_t u = strlen(values);
        snprintf(values + u, sizeof values - u, "%s'%s'", sep, s->axes[a].values[s->runs[t[k].run].index[a]]);
        u = strlen(names);
        snprintf(names + u, sizeof names - u, "%s%s", sep, s->runs[t[k].run].name);
    }
    snprintf(err, errlen, "%s:%d: %s: %s are one value: runs %s would be the same run (one "
             "result counted %d times); give each value once", s->path, s->axes[a].line,
             s->axes[a].key, values, names, n);
    return 2;
}

/* Every run's config must load: errors point at the sweep line of the offending key; and no
 * two runs may be the same run (values spelt two ways: 1e-3, 0.001). 0, 1 (OOM) or 2. */
static int validate_runs(sweep_t *s, char *err, size_t errlen)
{
    snprintf(s->results_dir, sizeof s->results_dir, "results/%s", s->name);
    snprintf(s->merged_path, sizeof s->merged_path, "results/%s.h5", s->name);
    run_text_t *t = calloc((size_t)s->nruns + 1, sizeof *t);
    int rc = t ? 0 : 1;
    if (rc) snprintf(err, errlen, "%s: out of memory", s->path);
    for (int i = 0; i < s->nruns && !rc; i++) {
        sweep_sets_t sets;
        sweep_run_sets(s, i, &sets);
        config_t cfg;
        char cerr[CONFIG_ERR_MAX];
        if (config_load(&cfg, s->base, sets.ptr, sets.n, cerr, sizeof cerr) == 0) {
            t[i] = (run_text_t){h5io_config_text(&cfg, 0), i};
            if (!t[i].text) { snprintf(err, errlen, "%s: out of memory", s->path); rc = 1; }
            continue;
        }
        if (!strncmp(cerr, "--set ", 6)) {
            char key[64];
            sscanf(cerr + 6, "%63[^:]", key);
            snprintf(err, errlen, "%s:%d: %s (run %s)", s->path, key_line(s, key), cerr + 6, s->runs[i].name);
        } else {
            snprintf(err, errlen, "%s: base: %s", s->path, cerr);
        }
        rc = 2;
    }
    if (!rc) qsort(t, (size_t)s->nruns, sizeof *t, by_text);
    for (int i = 0; !rc && i + 1 < s->nruns; i++) {
        int n = 1;
        while (i + n < s->nruns && !strcmp(t[i].text, t[i + n].text)) n++;
        if (n > 1) rc = duplicate_runs(s, t + i, n, err, errlen);
    }
    for (int i = 0; t && i < s->nruns; i++) free(t[i].text);
    free(t);
    return rc;
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

sweep_state_t sweep_result_state(const sweep_t *s, int i, const char *kind, const char *status,
                                 const char *config, const char *data_sha256, long long data_bytes,
                                 char *why, size_t len)
{
    snprintf(why, len, "%s", status ? status : "no status");
    if (!status || (strcmp(status, "done") && strcmp(status, "diverged"))) return SWEEP_INCOMPLETE;
    // a result only if it is of the run the sweep asks for now (as --resume checks): the same
    // configuration and data, and a run's file (a dump of that config is not its result)
    sweep_sets_t sets;
    sweep_run_sets(s, i, &sets);
    config_t cfg;
    char cerr[CONFIG_ERR_MAX];
    if (config_load(&cfg, s->base, sets.ptr, sets.n, cerr, sizeof cerr)) return SWEEP_STALE;
    const char *want = cfg.train.steps > 0 ? "train" : "probe";
    if (strcmp(kind, want)) {
        snprintf(why, len, "it is a %s file, not a %s", kind[0] ? kind : "foreign",
                 cfg.train.steps > 0 ? "training run's" : "probe's");
        return SWEEP_STALE;
    }
    // data that cannot be read now cannot be compared, and leave a finished result standing
    if (!h5io_config_same(&cfg, config, why, len) ||
        !data_identity_same(&cfg, data_sha256, data_bytes, why, len))
        return SWEEP_STALE;
    snprintf(why, len, "%s", status);
    return SWEEP_COMPLETE;
}

sweep_state_t sweep_run_state(const sweep_t *s, int i, char *why, size_t len)
{
    char path[1400], buf[256];
    if (!why) {
        why = buf;
        len = sizeof buf;
    }
    snprintf(why, len, "missing");
    sweep_run_path(s, i, path, sizeof path);
    // read in a child process: a damaged file must not crash or hang the sweep (h5io_verify.c)
    h5io_summary_t sum;
    const int unreadable = h5io_summarize(path, 1, &sum);
    if (sum.damaged[0]) {
        snprintf(why, len, "damaged: %.200s", sum.damaged);
        h5io_summary_free(&sum);
        return SWEEP_DAMAGED;
    }
    if (unreadable) return SWEEP_MISSING;
    const sweep_state_t st = sweep_result_state(s, i, sum.kind, sum.status, sum.config,
                                                sum.data_sha256, sum.data_bytes, why, len);
    h5io_summary_free(&sum);
    return st;
}

int sweep_run_complete(const sweep_t *s, int i)
{
    return sweep_run_state(s, i, NULL, 0) == SWEEP_COMPLETE;
}
