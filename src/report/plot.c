/* plot.c — reading runs for figures, and the gnuplot pipe. The figures themselves are in
 * plot_figs.c and the other plot_*.c here, and each study's in study/; all share
 * plot_internal.h. Which figures are drawn is the table the caller gives plot_draw_all
 * (study/figures.c): nothing here calls a study. */
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

/* The run's identity: its config (parsed), status and data identity. 0, or 1 with err. */
static int load_identity(h5io_file_t *f, const char *prefix, const char *name, plot_run_t *r,
                         char *err, size_t errlen)
{
    const char *obj = prefix[0] ? prefix : "/";
    char *ini = h5io_read_attr_string(f, obj, "config");
    char *status = h5io_read_attr_string(f, obj, "status");
    char *sha = h5io_read_attr_string(f, obj, "data_sha256");   // absent before the identity
    double bytes = NAN;
    if (sha) h5io_read_attr_double(f, obj, "data_bytes", &bytes);
    if (sha) snprintf(r->data_id, sizeof r->data_id, "%.64s:%.0f", sha, bytes);
    free(sha);
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
    return 0;
}

/* The training curve, when the run has /train/loss: loss, step and lr (the rows all three
 * have), /train's attributes diverged_at, epoch_batches, unigram_entropy, and the seconds an
 * update from /train/time. */
static void load_training(h5io_file_t *f, const char *prefix, plot_run_t *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s/train/loss", prefix);
    if (!h5io_exists(f, path)) return;
    size_t dims[8];
    int rank;
    double *step = NULL, *lr = NULL;
    char p2[512];
    if (h5io_read_doubles(f, path, &r->loss, dims, &rank) != 0 || rank != 1) return;
    // a live run's datasets grow one after another: the rows all of them have
    r->nsteps = dims[0];
    snprintf(p2, sizeof p2, "%s/train/step", prefix);
    if (h5io_exists(f, p2) && h5io_read_doubles(f, p2, &step, dims, &rank) == 0 &&
        rank == 1) {
        r->step = step;
        if (dims[0] < r->nsteps) r->nsteps = dims[0];
    } else {   // no update axis: no training curve (the figures read step with loss)
        free(step);
        if (!h5io_error(f))
            fprintf(stderr, "stability: %s: no /train/step: its training curves are left "
                            "out\n", r->origin);
        r->nsteps = 0;
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
    if (h5io_read_attr_double(f, p2, "unigram_entropy", &div) == 0 && isfinite(div))
        r->unigram = div;
    double *t = NULL;   // /train/time: seconds since the run started, a row per logged update
    snprintf(p2, sizeof p2, "%s/train/time", prefix);
    if (r->nsteps && h5io_exists(f, p2) && h5io_read_doubles(f, p2, &t, dims, &rank) == 0 &&
        rank == 1 && dims[0] >= r->nsteps && r->step[r->nsteps - 1] > 0)
        r->sec_per_update = t[r->nsteps - 1] / r->step[r->nsteps - 1];
    free(t);
}

/* Everything the figures read of the run at prefix of file f. 0, or 1 with err. */
static int load_run(h5io_file_t *f, const char *file, const char *prefix, const char *name,
                    plot_run_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    snprintf(r->origin, sizeof r->origin, "%s%s%s", file, prefix[0] ? ":" : "", prefix);
    r->diverged_at = NAN;
    r->epoch_batches = NAN;
    r->unigram = NAN;
    r->sec_per_update = NAN;
    snprintf(r->name, sizeof r->name, "%s", name);
    if (load_identity(f, prefix, name, r, err, errlen)) return 1;
    char path[512], perr[256];
    snprintf(path, sizeof path, "%s/probe", prefix);
    if (h5io_exists(f, path) && h5io_read_probe(f, prefix, &r->probe, perr, sizeof perr)) {
        snprintf(err, errlen, "%s: %s", name, perr);
        return 1;
    }
    load_training(f, prefix, r);
    load_series(f, prefix, "eval_step", "val_loss", &r->nevals, &r->eval_step, &r->val_loss);
    load_series(f, prefix, "update_step", "model_update", &r->nupdates, &r->update_step,
                &r->model_update);
    load_series(f, prefix, "bleu_step", "bleu", &r->nbleu, &r->bleu_step, &r->bleu);
    if (r->loss) plot_dyn_load(f, prefix, r);
    plot_ind_load(f, prefix, r);
    plot_curv_load(f, prefix, r);
    plot_est_load(f, prefix, r);
    plot_prec_load(f, prefix, r);
    if (h5io_error(f)) {   // a malformed dataset or attribute (h5io_read.c)
        snprintf(err, errlen, "%s", h5io_error(f));
        return 1;
    }
    return 0;
}

static void run_free(plot_run_t *r)
{
    probe_free(r->probe);
    free(r->step);
    free(r->loss);
    free(r->lr);
    free(r->eval_step);
    free(r->val_loss);
    free(r->bleu_step);
    free(r->bleu);
    free(r->update_step);
    free(r->model_update);
    plot_dyn_free(r->dyn);
    plot_ind_free(r->ind);
    plot_curv_free(r->curv);
    plot_est_free(r->est);
    plot_prec_free(r->prec);
}

/* One run's identity against another's: config texts (h5io_config_text, seed kept) and data. */
static int same_identity(const plot_run_t *a, const char *ta, const plot_run_t *b, const char *tb)
{
    if (a->data_id[0] && b->data_id[0] && strcmp(a->data_id, b->data_id)) return 0;
    return ta && tb && !strcmp(ta, tb);
}

int plot_same_run(const plot_run_t *a, const plot_run_t *b)
{
    char *x = h5io_config_text(&a->cfg, 0), *y = h5io_config_text(&b->cfg, 0);
    const int same = same_identity(a, x, b, y);
    free(x);
    free(y);
    return same;
}

/* Keep the first of every run given more than once (plot_same_run), in order, and say on one
 * line of stderr which were counted once (docs/design.md §6j). */
static void drop_duplicates(plot_set_t *set)
{
    char **text = calloc((size_t)set->n, sizeof *text);
    if (!text) return;
    for (int i = 0; i < set->n; i++) text[i] = h5io_config_text(&set->runs[i].cfg, 0);
    int kept = 0, dropped = 0;
    sbuf_t note = {0};
    for (int i = 0; i < set->n; i++) {
        int twin = -1;
        for (int k = 0; k < kept && twin < 0; k++)
            if (same_identity(&set->runs[k], text[k], &set->runs[i], text[i])) twin = k;
        if (twin < 0) {
            if (kept != i) {
                set->runs[kept] = set->runs[i];
                free(text[kept]);
                text[kept] = text[i];
                text[i] = NULL;
            }
            kept++;
            continue;
        }
        if (dropped < 3)
            sbuf_printf(&note, "%s%s = %s", dropped ? "; " : "", set->runs[i].origin,
                        set->runs[twin].origin);
        dropped++;
        run_free(&set->runs[i]);
    }
    for (int i = 0; i < set->n; i++) free(text[i]);
    free(text);
    set->n = kept;
    if (dropped)
        fprintf(stderr, "stability: %d run%s given again, counted once (same config, seed and "
                        "data): %s%s\n", dropped, dropped > 1 ? "s" : "",
                note.data ? note.data : "", dropped > 3 ? "; …" : "");
    sbuf_free(&note);
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
        char *title = names ? h5io_read_attr_string(f, "/sweep", "title") : NULL;   // [sweep] title
        if (names) {
            for (int k = 0; k < nnames && !rc; k++) {
                char prefix[300];
                snprintf(prefix, sizeof prefix, "/runs/%s", names[k]);
                rc = load_run(f, files[i], prefix, names[k], &set->runs[set->n], err, errlen);
                if (!rc && title)
                    snprintf(set->runs[set->n].sweep_title, sizeof set->runs[0].sweep_title, "%s",
                             title);
                if (!rc) set->n++;
            }
        } else {
            char name[160];
            snprintf(name, sizeof name, "%s", basename_of(files[i]));
            char *dot = strrchr(name, '.');
            if (dot) *dot = '\0';
            rc = load_run(f, files[i], "", name, &set->runs[set->n], err, errlen);
            if (!rc) set->n++;
        }
        free(title);
        h5io_free_names(names, nnames);
        if (!rc && h5io_error(f)) {   // a malformed /sweep@title
            snprintf(err, errlen, "%s", h5io_error(f));
            rc = 1;
        }
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
    drop_duplicates(set);
    plot_order(set);   // keys and tables in the order of the values, not of names
    return 0;
}

void plot_set_free(plot_set_t *set)
{
    for (int i = 0; i < set->n; i++) run_free(&set->runs[i]);
    free(set->runs);
    memset(set, 0, sizeof *set);
}

/* ------------------------------------------------------------------ gnuplot pipe */

/* The terminals: every one's font 1/60 of its canvas's height (15 px of 900, 7 pt of 5.8 in),
 * so one layout (report/plot_layout.h) fits them all. */
static const char *terminal_for(const char *fmt)
{
    if (!strcmp(fmt, "png") || !strcmp(fmt, "gp"))   // gp: the script itself, for a PNG
        return "pngcairo size 1400,900 enhanced font 'Sans,15' linewidth 2";
    if (!strcmp(fmt, "pdf")) return "pdfcairo size 9in,5.8in enhanced font 'Sans,7' linewidth 1";
    if (!strcmp(fmt, "svg")) return "svg size 1400,900 enhanced font 'Sans,15' linewidth 2";
    return NULL;
}

/* The font-size macros of a terminal (plot_layout.h): @F100 … @F70. */
static void font_macros(sbuf_t *text, const char *term)
{
    const double base = strstr(term, "pdfcairo") ? 7.0 : 15.0;
    static const int PCT[] = {100, 90, 80, 70};
    for (int k = 0; k < 4; k++)
        sbuf_printf(text, "F%d = \"font ',%.3g'\"\n", PCT[k], base * PCT[k] / 100.0);
}

/* Append script to text. For SVG, every escaped '&' of enhanced text (plot_escape_name's \&,
 * or \\& inside a double-quoted title) becomes \&amp;: gnuplot's svg terminal writes an
 * enhanced-text '&' as it is, which is not XML (a run named "a&b" made an SVG no browser
 * shows). Keys are noenhanced text, whose '&' gnuplot escapes itself. Other formats get the
 * script unchanged. */
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
        } else if (c[0] == '\\' && c[1] == '\\' && c[2] == '&') {   // "\\&": inside "…", an
            sbuf_printf(text, "\\\\&amp;");                         // escaped '&' too
            c += 2;
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
static int render_one(const char *term, const char *script, const char *out, int raw, char *err,
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
    font_macros(&text, term);
    append_script(&text, script, strncmp(term, "svg", 3) == 0);
    sbuf_printf(&text, "\n");
    const char *const argv[] = {"gnuplot", NULL};
    int werr = 0;
    const proc_io_t io = {.input = text.data, .out_fd = -1, .copy_fd = fd, .copy_errno = &werr};
    int status = text.failed ? -1 : 0;
    if (!status && !raw) status = proc_run(argv, &io);
    for (size_t done = 0, n = raw && !status ? text.len : 0; done < n && !werr;) {   // the script
        const ssize_t w = write(fd, text.data + done, n - done);
        if (w < 0 && errno != EINTR) werr = errno;
        else if (w > 0) done += (size_t)w;
    }
    sbuf_free(&text);
    struct stat st;
    if (!werr && status == 0 && (fstat(fd, &st) != 0 || st.st_size == 0)) werr = EIO;   // nothing drawn
    if (!werr && status == 0 && fsync(fd) != 0) werr = errno;
    if (close(fd) != 0 && !werr && status == 0) werr = errno;
    int rc = 0;
    if (status != 0) {
        if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
            snprintf(err, errlen, "gnuplot not found (install gnuplot-nox: setup/install-deps.sh)");
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
            snprintf(err, errlen, "--format: unknown format '%s' (png, pdf, svg, gp)", fmt);
            return -2;
        }
        char out[1400];
        if ((size_t)snprintf(out, sizeof out, "%s/%s.%s", dir, name, fmt) >= sizeof out) {
            snprintf(err, errlen, "%.100s...: output path too long", out);
            return -2;
        }
        const int rc = render_one(term, script, out, !strcmp(fmt, "gp"), err, errlen);
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
            snprintf(err, errlen, "--format: not png, pdf or svg (or gp, the script): %s",
                     f[0] ? f : "(empty)");
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

int plot_draw_all(const plot_set_t *set, const plot_figure_t *figs, const char *dir,
                  const char *prefix, const char *formats, int quiet, char *err, size_t errlen)
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
    // (the atlas) would be mixed under two labels: the atlas's own figures draw it.
    const int many = many_schemes(set);
    int drawn = 0, failed = 0;
    for (const plot_figure_t *fig = figs; fig->fn; fig++) {
        if (many && fig->post_pre) continue;
        sbuf_t script = {0};
        char name[256];
        name[0] = '\0';
        const int has = fig->fn(set, &script, name, sizeof name);
        if (script.failed) { sbuf_free(&script); snprintf(err, errlen, "out of memory"); return -1; }
        if (has < 0) {   // the runs have the figure's data, but no finite value of it: a note
            const char *why = strstr(name, ": ");   // "figure: why"
            fprintf(stderr, "stability: %s-%.*s skipped: %s\n", prefix,
                    why ? (int)(why - name) : (int)strlen(name), name,
                    why ? why + 2 : "nothing to draw");
            drawn++;
        }
        if (has > 0) {
            char full[600];
            snprintf(full, sizeof full, "%s-%s", prefix, name);
            char why[512];   // a figure gnuplot refuses: said, and the later ones still drawn
            const int rc = plot_render(script.data, dir, full, formats, quiet, why, sizeof why);
            if (rc == -2) {   // a usage error (an unknown format): every figure would fail so
                sbuf_free(&script);
                snprintf(err, errlen, "%s", why);
                return rc;
            }
            if (rc && !failed) {
                failed = rc;
                snprintf(err, errlen, "%s", why);
            } else if (rc) {
                fprintf(stderr, "stability: %s\n", why);
            }
            drawn += !rc;
        }
        sbuf_free(&script);
    }
    return failed ? failed : drawn;
}
