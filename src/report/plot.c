/* plot.c — reading runs for figures, and the gnuplot pipe. The figures themselves are in
 * plot_figs.c; both share plot_internal.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "report/plot.h"
#include "report/plot_internal.h"
#include "io/h5io.h"
#include "util/fsutil.h"
#include "util/proc.h"
#include "util/tmpfiles.h"

/* ------------------------------------------------------------------ loading */

/* /train/<xname> and /train/<yname> into *x, *y (n rows), when both are there and 1-D; of a
 * live run (written meanwhile) the rows both have: a consistent prefix. Else nothing. */
static void load_series(h5io_file_t *f, const char *prefix, const char *xname, const char *yname,
                        size_t *n, double **x, double **y)
{
    char p1[512], p2[512];
    size_t d1[8], d2[8];
    int r1, r2;
    double *a = NULL, *b = NULL;
    snprintf(p1, sizeof p1, "%s/train/%s", prefix, xname);
    snprintf(p2, sizeof p2, "%s/train/%s", prefix, yname);
    if (!h5io_exists(f, p1) || !h5io_exists(f, p2) || h5io_read_doubles(f, p1, &a, d1, &r1) ||
        h5io_read_doubles(f, p2, &b, d2, &r2) || r1 != 1 || r2 != 1) {
        free(a);
        free(b);
        return;
    }
    *n = d1[0] < d2[0] ? d1[0] : d2[0];
    *x = a;
    *y = b;
}

static int load_run(h5io_file_t *f, const char *prefix, const char *name, plot_run_t *r,
                    char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->diverged_at = NAN;
    r->epoch_batches = NAN;
    snprintf(r->name, sizeof r->name, "%s", name);
    char *ini = h5io_read_attr_string(f, prefix[0] ? prefix : "/", "config");
    char *status = h5io_read_attr_string(f, prefix[0] ? prefix : "/", "status");
    char cerr[CONFIG_ERR_MAX];
    const int bad = !ini || config_parse_string(&r->cfg, ini, name, cerr, sizeof cerr);
    snprintf(r->status, sizeof r->status, "%s", status ? status : "?");
    free(ini);
    free(status);
    if (h5io_error(f)) {
        snprintf(err, errlen, "%s", h5io_error(f));
        return 1;
    }
    if (bad) {
        snprintf(err, errlen, "%s: no valid config attribute", name);
        return 1;
    }
    char path[512], perr[256];
    snprintf(path, sizeof path, "%s/probe", prefix);
    if (h5io_exists(f, path) && h5io_read_probe(f, prefix, &r->probe, perr, sizeof perr)) {
        snprintf(err, errlen, "%s: %s", name, perr);
        return 1;
    }
    snprintf(path, sizeof path, "%s/train/loss", prefix);
    if (h5io_exists(f, path)) {
        size_t dims[8];
        int rank;
        double *step = NULL, *lr = NULL;
        char p2[512];
        if (h5io_read_doubles(f, path, &r->loss, dims, &rank) == 0 && rank == 1) {
            // a live run's datasets grow one after another: the rows all of them have
            r->nsteps = dims[0];
            snprintf(p2, sizeof p2, "%s/train/step", prefix);
            if (h5io_read_doubles(f, p2, &step, dims, &rank) == 0 && rank == 1) {
                r->step = step;
                if (dims[0] < r->nsteps) r->nsteps = dims[0];
            } else {
                free(step);
            }
            snprintf(p2, sizeof p2, "%s/train/lr", prefix);
            if (h5io_read_doubles(f, p2, &lr, dims, &rank) == 0 && rank == 1) {
                r->lr = lr;
                if (dims[0] < r->nsteps) r->nsteps = dims[0];
            } else {
                free(lr);
            }
            snprintf(p2, sizeof p2, "%s/train", prefix);
            double div;
            if (h5io_read_attr_double(f, p2, "diverged_at", &div) == 0 && div >= 0)
                r->diverged_at = div;
            if (h5io_read_attr_double(f, p2, "epoch_batches", &div) == 0 && div > 0)
                r->epoch_batches = div;
        }
    }
    load_series(f, prefix, "eval_step", "val_loss", &r->nevals, &r->eval_step, &r->val_loss);
    load_series(f, prefix, "update_step", "model_update", &r->nupdates, &r->update_step,
                &r->model_update);
    load_series(f, prefix, "bleu_step", "bleu", &r->nbleu, &r->bleu_step, &r->bleu);
    if (r->nsteps) plot_dyn_load(f, prefix, r);
    if (h5io_error(f)) {   // a malformed dataset or attribute (h5io_read.c)
        snprintf(err, errlen, "%s", h5io_error(f));
        return 1;
    }
    return 0;
}

static const char *basename_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

int plot_load(plot_set_t *set, const char *const *files, int nfiles, char *err, size_t errlen)
{
    memset(set, 0, sizeof *set);
    for (int i = 0; i < nfiles; i++) {
        h5io_file_t *f;
        if (h5io_open_read(&f, files[i], err, errlen)) { plot_set_free(set); return 1; }
        int nnames = 0;
        char **names = h5io_list_group(f, "/runs", &nnames);
        if (h5io_error(f)) {
            snprintf(err, errlen, "%s", h5io_error(f));
            h5io_close(f);
            plot_set_free(set);
            return 1;
        }
        const int count = names ? nnames : 1;
        plot_run_t *grown = realloc(set->runs, (size_t)(set->n + count) * sizeof *grown);
        if (!grown) { h5io_close(f); h5io_free_names(names, nnames); plot_set_free(set); return 1; }
        set->runs = grown;
        int rc = 0;
        if (names) {
            for (int k = 0; k < nnames && !rc; k++) {
                char prefix[300];
                snprintf(prefix, sizeof prefix, "/runs/%s", names[k]);
                rc = load_run(f, prefix, names[k], &set->runs[set->n], err, errlen);
                if (!rc) set->n++;
            }
        } else {
            char name[160];
            snprintf(name, sizeof name, "%s", basename_of(files[i]));
            char *dot = strrchr(name, '.');
            if (dot) *dot = '\0';
            rc = load_run(f, "", name, &set->runs[set->n], err, errlen);
            if (!rc) set->n++;
        }
        h5io_free_names(names, nnames);
        h5io_close(f);
        if (rc) {
            char tmp[1200];
            if (strncmp(err, files[i], strlen(files[i]))) {   // h5io_error names the file itself
                snprintf(tmp, sizeof tmp, "%s: %s", files[i], err);
                snprintf(err, errlen, "%s", tmp);
            }
            plot_set_free(set);
            return 1;
        }
    }
    if (set->n == 0) {
        snprintf(err, errlen, "no runs in the given files");
        return 1;
    }
    return 0;
}

void plot_set_free(plot_set_t *set)
{
    for (int i = 0; i < set->n; i++) {
        probe_free(set->runs[i].probe);
        free(set->runs[i].step);
        free(set->runs[i].loss);
        free(set->runs[i].lr);
        free(set->runs[i].eval_step);
        free(set->runs[i].val_loss);
        free(set->runs[i].bleu_step);
        free(set->runs[i].bleu);
        free(set->runs[i].update_step);
        free(set->runs[i].model_update);
        plot_dyn_free(set->runs[i].dyn);
    }
    free(set->runs);
    memset(set, 0, sizeof *set);
}

/* ------------------------------------------------------------------ gnuplot pipe */

static const char *terminal_for(const char *fmt)
{
    if (!strcmp(fmt, "png")) return "pngcairo size 1400,900 enhanced font 'Sans,15' linewidth 2";
    if (!strcmp(fmt, "pdf")) return "pdfcairo size 9in,5.8in enhanced font 'Sans,11' linewidth 1.5";
    if (!strcmp(fmt, "svg")) return "svg size 1400,900 enhanced font 'Sans,15' linewidth 2";
    return NULL;
}

/* Append script to text. For SVG, every escaped '&' of a name (plot_escape_name's \&) becomes
 * \&amp;: gnuplot's svg terminal writes an enhanced-text '&' as it is, which is not XML (a
 * run named "a&b" made an SVG no browser shows); other formats get the script unchanged. */
static void append_script(sbuf_t *text, const char *script, int svg)
{
    if (!svg || !strstr(script, "\\&")) {
        sbuf_printf(text, "%s", script);
        return;
    }
    for (const char *c = script; *c; c++) {
        if (c[0] == '\\' && c[1] == '&') {
            sbuf_printf(text, "\\&amp;");
            c++;
        } else if (c[0] == '\\' && c[1]) {   // another escape pair (\\ of a name's backslash) as it is
            sbuf_printf(text, "%c%c", c[0], c[1]);
            c++;
        } else {
            sbuf_printf(text, "%c", c[0]);
        }
    }
}

/* Run gnuplot on "set terminal TERM" + script, its standard output copied by us into
 * OUT.tmp.PID with every write checked, then renamed to out: the path never appears in the
 * script, so no file or directory name can end gnuplot's quoting (docs/design.md §3); a figure
 * is replaced by rename (a hard link to the old one keeps it), and when gnuplot or a write
 * fails (a full disk) the old figure stays as it was. Returns 0, −1 (failed), −2 (out refused). */
static int render_one(const char *term, const char *script, const char *out, char *err,
                      size_t errlen)
{
    if (fsutil_check_replaceable(out, err, errlen)) return -2;   // never a link, FIFO, device
    char tmp[1500];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        return -1;
    }
    tmpfiles_add(tmp);   // removed if a signal ends the process meanwhile
    sbuf_t text = {0};
    sbuf_printf(&text, "set terminal %s\n", term);
    append_script(&text, script, strncmp(term, "svg", 3) == 0);
    sbuf_printf(&text, "\n");
    const char *const argv[] = {"gnuplot", NULL};
    int werr = 0;
    const proc_io_t io = {.input = text.data, .out_fd = -1, .copy_fd = fd, .copy_errno = &werr};
    const int status = text.failed ? -1 : proc_run(argv, &io);
    sbuf_free(&text);
    struct stat st;
    if (!werr && status == 0 && (fstat(fd, &st) != 0 || st.st_size == 0)) werr = EIO;   // nothing drawn
    if (!werr && status == 0 && fsync(fd) != 0) werr = errno;
    if (close(fd) != 0 && !werr && status == 0) werr = errno;
    int rc = 0;
    if (status != 0) {
        if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
            snprintf(err, errlen, "gnuplot not found (install gnuplot-nox: scripts/install-deps.sh)");
        else
            snprintf(err, errlen, "gnuplot failed on %s (status %d); %s kept as it was", out,
                     status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
        rc = -1;
    } else if (werr) {
        snprintf(err, errlen, "%s: cannot write: %s; %s kept as it was", tmp, strerror(werr), out);
        rc = -1;
    } else if (fsutil_check_replaceable(out, err, errlen)) {   // checked again, as files are
        rc = -2;
    } else if (rename(tmp, out) != 0) {
        snprintf(err, errlen, "%s: cannot rename from %s: %s", out, tmp, strerror(errno));
        rc = -1;
    }
    if (rc) fsutil_unlink_regular(tmp);
    tmpfiles_forget(tmp);
    return rc;
}

int plot_render(const char *script, const char *dir, const char *name, const char *formats,
                int quiet, char *err, size_t errlen)
{
    char list[64];
    snprintf(list, sizeof list, "%s", formats);
    for (char *save = NULL, *fmt = strtok_r(list, ",", &save); fmt; fmt = strtok_r(NULL, ",", &save)) {
        const char *term = terminal_for(fmt);
        if (!term) {
            snprintf(err, errlen, "--format: unknown format '%s' (png, pdf, svg)", fmt);
            return -2;
        }
        char out[1400];
        if ((size_t)snprintf(out, sizeof out, "%s/%s.%s", dir, name, fmt) >= sizeof out) {
            snprintf(err, errlen, "%.100s...: output path too long", out);
            return -2;
        }
        const int rc = render_one(term, script, out, err, errlen);
        if (rc) return rc;
        if (!quiet) printf("wrote %s\n", out);
    }
    return 0;
}

int plot_check_formats(const char *formats, char *err, size_t errlen)
{
    char list[64];
    if (strlen(formats) >= sizeof list) {
        snprintf(err, errlen, "--format: list too long");
        return 2;
    }
    snprintf(list, sizeof list, "%s", formats);
    for (char *f = list, *comma; f; f = comma ? comma + 1 : NULL) {
        if ((comma = strchr(f, ','))) *comma = '\0';
        if (!terminal_for(f)) {
            snprintf(err, errlen, "--format: not png, pdf or svg: %s", f[0] ? f : "(empty)");
            return 2;
        }
    }
    return 0;
}

/* Whether the runs of set use three or more schemes (Post-LN and Pre-LN with any norm count
 * as two; each later scheme by its name): an atlas, not a comparison of two. */
static int many_schemes(const plot_set_t *set)
{
    char seen[3][32];   // the schemes seen so far
    int n = 0;
    for (int i = 0; i < set->n && n < 3; i++) {
        const plot_run_t *r = &set->runs[i];
        char key[32];
        if (plot_theory(r) == SCHEME_THEORY_NONE) scheme_name(&r->cfg, key, sizeof key);
        else snprintf(key, sizeof key, "%s", scheme_of(&r->cfg)->name);   // any norm
        int found = 0;
        for (int k = 0; k < n && !found; k++) found = !strcmp(seen[k], key);
        if (!found) snprintf(seen[n++], sizeof seen[0], "%s", key);
    }
    return n >= 3;
}

int plot_draw_all(const plot_set_t *set, const char *dir, const char *prefix,
                  const char *formats, int quiet, char *err, size_t errlen)
{
    struct stat st;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {   // else gnuplot wrote to stdout
        snprintf(err, errlen, "--out %s: not a directory", dir);
        return -2;
    }
    // The Post-LN/Pre-LN figures (post_pre = 1) compare two placements; a set of many schemes
    // (the atlas) would be mixed under two labels: its own figures (plot_atlas.c) draw it.
    static const struct { plot_figure_fn fn; int post_pre; } figures[] = {
        {plot_fig_grad_vs_layer, 1}, {plot_fig_grad_vs_depth, 1}, {plot_fig_grad_vs_width, 1},
        {plot_fig_grad_ratio, 1},
        {plot_fig_jacobian, 1}, {plot_fig_hidden_norms, 1}, {plot_fig_loss, 0},
        {plot_fig_grad_vs_layer_encdec, 0}, {plot_fig_subout, 1}, {plot_fig_val_loss, 0}, {plot_fig_bleu, 0},
        {plot_fig_atlas_lr, 0}, {plot_fig_atlas_sensitivity, 0}, {plot_fig_atlas_grad, 0},
        {plot_fig_output_change, 0}, {plot_fig_model_update, 0}, {plot_fig_mlm, 0},
        {plot_fig_dyn_grad, 0}, {plot_fig_dyn_update, 0}, {plot_fig_dyn_entropy, 0},
        {plot_fig_dyn_logit, 0}, {plot_fig_dyn_lines, 0}, {plot_fig_dyn_lr, 0},
    };
    const int many = many_schemes(set);
    int drawn = 0;
    for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++) {
        if (many && figures[k].post_pre) continue;
        sbuf_t script = {0};
        char name[256];
        const int has = figures[k].fn(set, &script, name, sizeof name);
        if (script.failed) { sbuf_free(&script); snprintf(err, errlen, "out of memory"); return -1; }
        if (has) {
            char full[600];
            snprintf(full, sizeof full, "%s-%s", prefix, name);
            const int rc = plot_render(script.data, dir, full, formats, quiet, err, errlen);
            if (rc) {
                sbuf_free(&script);
                return rc;
            }
            drawn++;
        }
        sbuf_free(&script);
    }
    return drawn;
}
