/* sweep_reuse.c — a sweep's run taken from another sweep's identical run instead of computed
 * again (docs/design.md §6d, "Reuse"; docs/atlas.md, "Seeds"): `[sweep] reuse = OTHER.ini, ...`
 * names sweep files whose runs may stand for this sweep's. A run is its configuration, its seed,
 * its data and its kernels (docs/design.md §6, §7), so a run file of another sweep is this
 * sweep's run when all four are the same; then it is copied, byte for byte, to this sweep's
 * results/<sweep>/<run>.h5, and the run is complete without running.
 *
 * The merge's rules hold (sweep_merge.c): never a stale run, a partial one or another family's.
 * A source is taken only when
 *   - it is the source sweep's run of the same resolved configuration (h5io_config_text, init.seed
 *     included) and its file is this run's result by sweep_result_state (a training run's or a
 *     probe's file as the run needs, status done or diverged, the same configuration);
 *   - it records the identity of the data it read (data_sha256, data_bytes), and the data read
 *     now are those bytes (data_identity_same = 1: a file without the record, or data that cannot
 *     be read now, are not taken, where the merge leaves them standing);
 *   - it records the kernels (blas_core) this sweep runs (sweep_kernels has made this process run
 *     the sweep's family before);
 *   - it reads through undamaged (h5io_summarize in a child), no writer holds it, and it did not
 *     change while it was copied: the copy is summarized and judged again, and the source's size
 *     and times compared, before the copy is renamed into place under a claim of the path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sweep/sweep.h"
#include "config/config.h"
#include "data/identity.h"
#include "io/h5io.h"
#include "util/blascore.h"
#include "util/fsutil.h"

/* A source sweep's runs and their configuration texts. */
typedef struct {
    sweep_t sweep;
    char **text;   /* [sweep.nruns] h5io_config_text of each run (NULL: its config failed) */
} source_t;

/* The configuration text of run i of s (malloc'd), or NULL. */
static char *run_text(const sweep_t *s, int i)
{
    sweep_sets_t sets;
    sweep_run_sets(s, i, &sets);
    config_t cfg;
    char err[CONFIG_ERR_MAX];
    if (config_load(&cfg, s->base, sets.ptr, sets.n, err, sizeof err)) return NULL;
    return h5io_config_text(&cfg, 0);
}

/* Load the source sweep file path (0, or 1 with why said on stderr). */
static int source_load(source_t *src, const char *path, const sweep_t *s, int quiet)
{
    char err[2600];
    memset(src, 0, sizeof *src);
    if (sweep_load(&src->sweep, path, err, sizeof err)) {
        fprintf(stderr, "stability: sweep.reuse: %s: not used: %s\n", path, err);
        return 1;
    }
    if (!strcmp(src->sweep.results_dir, s->results_dir)) {   // itself: nothing to take
        sweep_free(&src->sweep);
        return 1;
    }
    src->text = calloc((size_t)src->sweep.nruns, sizeof *src->text);
    if (!src->text) { sweep_free(&src->sweep); return 1; }
    for (int j = 0; j < src->sweep.nruns; j++) src->text[j] = run_text(&src->sweep, j);
    (void)quiet;
    return 0;
}

static void source_free(source_t *src)
{
    for (int j = 0; src->text && j < src->sweep.nruns; j++) free(src->text[j]);
    free(src->text);
    sweep_free(&src->sweep);
}

/* Whether the file at path is run i's result in every respect reuse asks for (the header's
 * list); why says what is not. */
static int takeable(const sweep_t *s, int i, const config_t *cfg, const char *path, char *why,
                    size_t len)
{
    h5io_summary_t sum;
    if (h5io_summarize(path, 1, &sum)) {
        snprintf(why, len, "%.300s", sum.damaged[0] ? sum.damaged : "missing");
        h5io_summary_free(&sum);
        return 0;
    }
    int ok = 0;
    if (sum.damaged[0]) snprintf(why, len, "damaged: %.200s", sum.damaged);
    else if (sweep_result_state(s, i, sum.kind, sum.status, sum.config, sum.data_sha256,
                                sum.data_bytes, why, len) != SWEEP_COMPLETE) {
        // why: its status (a partial run), or what differs
    } else if (data_reads_files(cfg) && !sum.data_sha256)
        snprintf(why, len, "it records no data identity");
    else if (data_reads_files(cfg) &&
             data_identity_same(cfg, sum.data_sha256, sum.data_bytes, why, len) != 1) {
        // why: the data differ now, or cannot be read
    } else if (!sum.blas_core || strcmp(sum.blas_core, blascore_name()))
        snprintf(why, len, "it was computed with OpenBLAS's %s kernels, this sweep runs %s",
                 sum.blas_core ? sum.blas_core : "unrecorded", blascore_name());
    else ok = 1;
    h5io_summary_free(&sum);
    return ok;
}

/* Copy the regular file from into the new file to (mode 0644). 0, or −1 with errno. */
static int copy_file(const char *from, const char *to)
{
    const int in = fsutil_open_read(from);
    if (in < 0) return -1;
    const int out = fsutil_open_regular(to, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (out < 0) { close(in); return -1; }
    char buf[1 << 16];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
            const ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0) { rc = -1; break; }
            off += w;
        }
    if (n < 0) rc = -1;
    if (fsync(out) != 0) rc = -1;
    const int e = errno;
    close(in);
    if (close(out) != 0) rc = -1;
    errno = e;
    return rc;
}

/* Whether a and b describe the same unchanged file. */
static int unchanged(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Take the file from as run i's: copied beside the run's path, judged again, renamed into
 * place under a claim of the path, a line in the run's log. 1 taken, 0 not (why says). */
static int take(const sweep_t *s, int i, const config_t *cfg, const char *from, char *why,
                size_t len)
{
    char path[1400], tmp[1500], holder[300], logp[1500];
    struct stat before, after;
    sweep_run_path(s, i, path, sizeof path);
    if (fsutil_is_busy(from)) { snprintf(why, len, "a process is writing it"); return 0; }
    if (fsutil_check_replaceable(path, why, len)) return 0;
    const int claim = fsutil_claim(path, "sweep reuse", holder, sizeof holder);
    if (claim < 0) { snprintf(why, len, "%.300s is held by %.180s", path, holder); return 0; }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int ok = 0;
    if (stat(from, &before) != 0 || copy_file(from, tmp) != 0)
        snprintf(why, len, "cannot copy: %s", strerror(errno));
    else if (stat(from, &after) != 0 || !unchanged(&before, &after))
        snprintf(why, len, "it changed while it was copied");
    else if (takeable(s, i, cfg, tmp, why, len)) {
        if (rename(tmp, path) != 0) snprintf(why, len, "cannot rename: %s", strerror(errno));
        else ok = 1;
    }
    if (!ok) unlink(tmp);
    fsutil_unclaim(path, claim);
    if (!ok) return 0;
    snprintf(logp, sizeof logp, "%.*s.log", (int)(strlen(path) - 3), path);
    FILE *log = fopen(logp, "a");
    if (log) {
        fprintf(log, "stability: reused %s (the same configuration, data and %s kernels)\n",
                from, blascore_name());
        fclose(log);
    }
    return 1;
}

/* Try to take run i from the sources; 1 when taken. */
static int reuse_run(const sweep_t *s, int i, source_t *src, int nsrc, int quiet)
{
    sweep_sets_t sets;
    sweep_run_sets(s, i, &sets);
    config_t cfg;
    char err[CONFIG_ERR_MAX], why[512], from[1400];
    if (config_load(&cfg, s->base, sets.ptr, sets.n, err, sizeof err)) return 0;
    char *text = h5io_config_text(&cfg, 0);
    int taken = 0;
    for (int k = 0; text && k < nsrc && !taken; k++)
        for (int j = 0; j < src[k].sweep.nruns && !taken; j++) {
            if (!src[k].text[j] || strcmp(src[k].text[j], text)) continue;
            sweep_run_path(&src[k].sweep, j, from, sizeof from);
            if (access(from, F_OK) != 0) continue;
            if (takeable(s, i, &cfg, from, why, sizeof why) && take(s, i, &cfg, from, why,
                                                                    sizeof why)) {
                taken = 1;
                if (!quiet) printf("run %d (%s): reused %s\n", i, s->runs[i].name, from);
            } else if (!quiet) {
                printf("run %d (%s): %s not reused: %s\n", i, s->runs[i].name, from, why);
            }
        }
    free(text);
    return taken;
}

int sweep_reuse(const sweep_t *s, int run, int quiet)
{
    if (!s->reuse[0]) return 0;
    source_t src[SWEEP_MAX_REUSE];
    int nsrc = 0, taken = 0;
    char list[sizeof s->reuse];
    snprintf(list, sizeof list, "%s", s->reuse);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && nsrc < SWEEP_MAX_REUSE;
         t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ' || *t == '\t') t++;
        for (char *e = t + strlen(t); e > t && (e[-1] == ' ' || e[-1] == '\t');) *--e = '\0';
        if (*t && !source_load(&src[nsrc], t, s, quiet)) nsrc++;
    }
    if (nsrc && sweep_make_dir(s) == 0)
        for (int i = run < 0 ? 0 : run; i < (run < 0 ? s->nruns : run + 1); i++)
            if (sweep_run_state(s, i, NULL, 0) != SWEEP_COMPLETE)
                taken += reuse_run(s, i, src, nsrc, quiet);
    for (int k = 0; k < nsrc; k++) source_free(&src[k]);
    if (taken && !quiet && run < 0) printf("%d run%s reused from %s\n", taken,
                                           taken == 1 ? "" : "s", s->reuse);
    return taken;
}
