/* sweep_merge.c — the merge of a sweep's finished runs into one HDF5 file, results/<sweep>.h5
 * (/runs/NAME/... and the /sweep table; docs/design.md §3). */
#include <stdio.h>
#include <stdlib.h>
#include "sweep/sweep.h"
#include "io/h5io.h"

/* Complete runs in the merged file at path (its /runs groups), or −1 when there is none. */
static int merged_runs_in(const char *path)
{
    char err[1200];
    h5io_file_t *f;
    if (h5io_open_read(&f, path, err, sizeof err)) return -1;
    int n = 0;
    char **names = h5io_list_group(f, "/runs", &n);
    h5io_free_names(names, n);
    h5io_close(f);
    return n;
}

/* The missing runs' task ids on stderr (what --only-missing resubmits). */
static void report_missing(const sweep_t *s, const sweep_state_t *state, int missing)
{
    if (!missing) return;
    fprintf(stderr, "%d runs missing or incomplete; task ids:", missing);
    for (int i = 0; i < s->nruns; i++)
        if (state[i] != SWEEP_COMPLETE) fprintf(stderr, " %d", i);
    fprintf(stderr, "\n");
}

/* Write the merged file of the complete runs (state) with the /sweep table. 0, 1 or 2. */
static int merge_write(const sweep_t *s, const sweep_state_t *state, char (*status)[32], int missing)
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
        if (state[i] != SWEEP_COMPLETE) continue;
        char path[1400], group[256];
        sweep_run_path(s, (int)i, path, sizeof path);
        snprintf(group, sizeof group, "/runs/%s", s->runs[i].name);
        if (h5io_copy_file_into(f, group, path, err, sizeof err)) {
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
    sweep_state_t *state = calloc((size_t)s->nruns, sizeof *state);
    char (*status)[32] = calloc((size_t)s->nruns, sizeof *status);
    if (!state || !status) {
        free(state);
        free(status);
        fprintf(stderr, "stability: out of memory\n");
        return 1;
    }
    int missing = 0, complete = 0;
    for (int i = 0; i < s->nruns; i++) {
        char why[256];
        state[i] = sweep_run_state(s, i, why, sizeof why);
        snprintf(status[i], sizeof status[i], "%.31s", state[i] == SWEEP_STALE ? "stale" : why);
        if (state[i] == SWEEP_COMPLETE) {
            complete++;
            continue;
        }
        missing++;   // a stale run is not merged as if it were current
        fprintf(stderr, "run %d (%s): %s%s%s\n", i, s->runs[i].name, status[i],
                state[i] == SWEEP_STALE ? ": written with another configuration, " : "",
                state[i] == SWEEP_STALE ? why : "");
    }
    // never replace a merged file with a poorer one (run files lost or stale) unless forced
    const int before = force ? -1 : merged_runs_in(s->merged_path);
    int rc = 0;
    if (before > complete) {
        fprintf(stderr, "stability: %s holds %d complete runs, the run files now give %d: kept "
                "(rerun the missing runs, or --merge --force to replace it)\n", s->merged_path,
                before, complete);
        rc = 1;
    } else {
        rc = merge_write(s, state, status, missing);
        if (!rc && !quiet) printf("merged %d of %d runs into %s\n", complete, s->nruns, s->merged_path);
    }
    report_missing(s, state, missing);
    free(state);
    free(status);
    return rc > 1 ? rc : missing ? 3 : rc;
}
