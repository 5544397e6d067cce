/* sweep_merge.c — the merge of a sweep's finished runs into one HDF5 file, results/<sweep>.h5
 * (/runs/NAME/... and the /sweep table; docs/design.md §3). A merge never loses a result: a run
 * the merged file holds is kept from it when its run file is gone or unfinished (and the copy
 * is still a result of the run the sweep asks for), and a merged file holding runs that the
 * new one would not hold is not replaced unless forced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sweep/sweep.h"
#include "io/h5io.h"

/* Where run i's result in the new merged file comes from. */
typedef enum { FROM_NONE, FROM_RUN_FILE, FROM_MERGED } source_t;

/* A run's status in the merged file's /sweep/status: as long as its reason (why, 256). */
enum { STATUS_MAX = 256 };

/* What the merged file being replaced holds, group by group (a group is current when it is a
 * result of the sweep's run of its name now, sweep_result_state): a run whose run file is not
 * complete and whose group is current gets from[i] = FROM_MERGED and its status; *fresh counts
 * the complete run files that the merged file lacks or holds only stale; the groups a merge
 * would lose (no run has the name, or the group is stale and its run file not complete) are
 * named in lost (*nlost). No merged file (sweep_merged_ours has refused a damaged one): none. */
static void merged_holdings(const sweep_t *s, source_t *from, char (*status)[STATUS_MAX],
                            int *fresh, char *lost, size_t lostlen, int *nlost)
{
    char err[1200];
    h5io_file_t *f = NULL;
    int n = 0;
    char **names = NULL;
    *nlost = 0;
    lost[0] = '\0';
    *fresh = 0;
    for (int i = 0; i < s->nruns; i++) *fresh += from[i] == FROM_RUN_FILE;
    if (h5io_open_read(&f, s->merged_path, err, sizeof err)) return;
    names = h5io_list_group(f, "/runs", &n);
    for (int k = 0; k < n; k++) {
        int i = 0;
        while (i < s->nruns && strcmp(s->runs[i].name, names[k])) i++;
        char group[300], sub[340], why[256] = "not a run of the sweep now", *st = NULL;
        snprintf(group, sizeof group, "/runs/%s", names[k]);
        int current = 0;
        if (i < s->nruns) {
            st = h5io_read_attr_string(f, group, "status");
            char *config = h5io_read_attr_string(f, group, "config"), *sha = NULL;
            long long bytes = -1;
            h5io_read_data_identity(f, group, &sha, &bytes);
            snprintf(sub, sizeof sub, "%s/train", group);
            const char *kind = h5io_exists(f, sub) ? "train" : "probe";
            snprintf(sub, sizeof sub, "%s/probe", group);
            if (strcmp(kind, "train") && !h5io_exists(f, sub)) kind = "";
            current = sweep_result_state(s, i, kind, st, config, sha, bytes, why, sizeof why) ==
                      SWEEP_COMPLETE;
            free(config);
            free(sha);
        }
        if (i < s->nruns && from[i] == FROM_RUN_FILE) {
            *fresh -= current;   // the run file's result is already there
        } else if (current) {
            from[i] = FROM_MERGED;
            snprintf(status[i], sizeof status[i], "%s", st ? st : "?");
        } else {
            const size_t used = strlen(lost);
            snprintf(lost + used, lostlen - used, "%s%s (%.120s)", *nlost ? ", " : "", names[k], why);
            (*nlost)++;
        }
        free(st);
    }
    h5io_free_names(names, n);
    h5io_close(f);
}

/* The task ids of the runs whose run files are missing or incomplete on stderr (what
 * --only-missing resubmits). */
static void report_missing(const sweep_t *s, const sweep_state_t *state, int missing)
{
    if (!missing) return;
    fprintf(stderr, "%d runs missing or incomplete; task ids:", missing);
    for (int i = 0; i < s->nruns; i++)
        if (state[i] != SWEEP_COMPLETE) fprintf(stderr, " %d", i);
    fprintf(stderr, "\n");
}

/* Write the merged file of the runs with a result (from: their run files, or the groups of the
 * merged file it replaces) with the /sweep table. 0, 1 or 2. */
static int merge_write(const sweep_t *s, const source_t *from, char (*status)[STATUS_MAX], int missing)
{
    char err[1024];
    h5io_file_t *f;
    int rc = h5io_create(&f, s->merged_path, 1, "a sweep merge", err, sizeof err);
    if (rc) {
        fprintf(stderr, "stability: %s\n", err);
        return rc;
    }
    const size_t R = (size_t)s->nruns, K = (size_t)s->naxes;
    const char **names = calloc(R, sizeof *names), **stat = calloc(R, sizeof *stat);
    const char **values = calloc(R * (K ? K : 1), sizeof *values);
    const char **keys = calloc(K ? K : 1, sizeof *keys);
    int merged = 0;
    rc = !names || !stat || !values || !keys;
    for (size_t a = 0; a < K && !rc; a++) keys[a] = s->axes[a].key;
    for (size_t i = 0; i < R && !rc; i++) {
        names[i] = s->runs[i].name;
        stat[i] = status[i];
        for (size_t a = 0; a < K; a++) values[i * K + a] = s->axes[a].values[s->runs[i].index[a]];
        if (from[i] == FROM_NONE) continue;
        char path[1400], group[256];
        sweep_run_path(s, (int)i, path, sizeof path);
        snprintf(group, sizeof group, "/runs/%s", s->runs[i].name);
        if (from[i] == FROM_RUN_FILE ? h5io_copy_file_into(f, group, path, err, sizeof err)
                                     : h5io_copy_group_from(f, group, s->merged_path, group, err,
                                                            sizeof err)) {
            fprintf(stderr, "stability: %s\n", err);
            rc = 1;
        }
        merged++;
    }
    if (!rc) {
        const size_t dims[2] = {R, K};
        rc |= h5io_write_strings(f, "/sweep/names", names, 1, dims);
        rc |= h5io_write_strings(f, "/sweep/status", stat, 1, dims);
        if (K) {
            rc |= h5io_write_strings(f, "/sweep/keys", keys, 1, &dims[1]);
            rc |= h5io_write_strings(f, "/sweep/values", values, 2, dims);
        }
        rc |= h5io_write_attr_string(f, "/sweep", "base", s->base);
        rc |= h5io_write_attr_string(f, "/sweep", "file", s->path);
        if (s->title[0]) rc |= h5io_write_attr_string(f, "/sweep", "title", s->title);
        rc |= h5io_write_attr_string(f, "/", "status", missing ? "partial" : "done");
        rc |= h5io_write_attr_int(f, "/", "runs", merged);
    }
    free(names); free(stat); free(values); free(keys);
    if (rc) {
        h5io_abort(f);
        fprintf(stderr, "stability: %s: merge failed\n", s->merged_path);
        return 1;
    }
    if ((rc = h5io_commit(f, err, sizeof err))) fprintf(stderr, "stability: %s\n", err);
    return rc;
}

int sweep_merge(const sweep_t *s, int force, int quiet)
{
    source_t *from = calloc((size_t)s->nruns, sizeof *from);
    char (*status)[STATUS_MAX] = calloc((size_t)s->nruns, sizeof *status);
    char (*why)[256] = calloc((size_t)s->nruns, sizeof *why);
    char *lost = malloc(8192);
    sweep_state_t *state = calloc((size_t)s->nruns, sizeof *state);
    if (!from || !status || !why || !lost || !state) {
        free(from); free(status); free(why); free(lost); free(state);
        fprintf(stderr, "stability: out of memory\n");
        return 1;
    }
    int missing = 0;
    for (int i = 0; i < s->nruns; i++) {
        state[i] = sweep_run_state(s, i, why[i], sizeof why[i]);
        snprintf(status[i], sizeof status[i], "%s", state[i] == SWEEP_STALE ? "stale" : why[i]);
        if (state[i] == SWEEP_COMPLETE) from[i] = FROM_RUN_FILE;
        else missing++;   // its run file: what --only-missing resubmits
    }
    // the merged file being replaced keeps what the run files no longer give (--force: the
    // run files alone)
    int nlost = 0, fresh = 0, kept = 0;
    lost[0] = '\0';
    if (!force) merged_holdings(s, from, status, &fresh, lost, 8192, &nlost);
    for (int i = 0; i < s->nruns; i++) {
        if (from[i] == FROM_RUN_FILE) continue;
        if (from[i] == FROM_MERGED) kept++;
        fprintf(stderr, "run %d (%s): %s%s%s%s%s\n", i, s->runs[i].name, status[i],
                state[i] == SWEEP_STALE ? ": written with another configuration, " : "",
                state[i] == SWEEP_STALE ? why[i] : "",
                from[i] == FROM_MERGED ? "; its result is kept from " : "",
                from[i] == FROM_MERGED ? s->merged_path : "");
    }
    int rc = 0;
    if (nlost > 0) {   // never replace a merged file with one that lacks some of its runs
        fprintf(stderr, "stability: %s holds %d run%s that the run files do not give now: %s; "
                "kept (rerun them, or --merge --force to replace it without them)\n",
                s->merged_path, nlost, nlost == 1 ? "" : "s", lost);
        rc = 1;
    } else if (kept > 0 && fresh == 0) {   // nothing to add to what it holds
        fprintf(stderr, "stability: %s already holds every result the run files give, and %d "
                "they do not: kept\n", s->merged_path, kept);
    } else {
        rc = merge_write(s, from, status, missing - kept);
        if (!rc && !quiet)
            printf("merged %d of %d runs into %s", s->nruns - missing + kept, s->nruns,
                   s->merged_path);
        if (!rc && !quiet && kept) printf(" (%d kept from the file it replaces)", kept);
        if (!rc && !quiet) printf("\n");
    }
    report_missing(s, state, missing);
    free(from); free(status); free(why); free(lost); free(state);
    return rc > 1 ? rc : missing ? 3 : rc;
}
