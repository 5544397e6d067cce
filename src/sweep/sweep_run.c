/* sweep_run.c — executing a sweep: child processes (local, N at a time, or one Slurm array
 * task) and the merge of the finished runs into one HDF5 file. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sweep/sweep.h"
#include "io/h5io.h"
#include "util/fsutil.h"
#include "util/proc.h"
#include "util/progress.h"

static volatile sig_atomic_t stop_requested = 0;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* mkdir -p results/<sweep>. */
static int make_results_dir(const sweep_t *s)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s->results_dir);
    for (char *p = buf + 1;; p++) {
        const char c = *p;
        if (c == '/' || c == '\0') {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            if (c == '\0') return 0;
            *p = '/';
        }
    }
}

/* Start run i as `exe --config BASE --set ... --out results/<sweep>/<run>.h5 --force --resume
 * --quiet`, with stdout and stderr in <run>.log and threads BLAS/OpenMP threads.
 * Returns the pid or −1. */
static pid_t spawn_run(const sweep_t *s, const char *exe, int i, int threads)
{
    char out[1400], log[1400], nthreads[16];
    sweep_run_path(s, i, out, sizeof out);
    snprintf(log, sizeof log, "%s/%s.log", s->results_dir, s->runs[i].name);
    sweep_sets_t sets;
    sweep_run_sets(s, i, &sets);
    const char *argv[8 + 4 * SWEEP_MAX_KEYS];
    int argc = 0;
    argv[argc++] = exe;
    argv[argc++] = "--config";
    argv[argc++] = s->base;
    for (int k = 0; k < sets.n; k++) {
        argv[argc++] = "--set";
        argv[argc++] = sets.ptr[k];
    }
    argv[argc++] = "--out";
    argv[argc++] = out;
    argv[argc++] = "--force";   // a file here is incomplete (complete runs are never started)
    argv[argc++] = "--resume";  // ... but a pre-empted training run continues from its checkpoint
    argv[argc++] = "--quiet";
    argv[argc] = NULL;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid != 0) return pid;
    // child: the log must be a regular file (or new), never a link, FIFO or device
    const int fd = fsutil_open_regular(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        fprintf(stderr, "stability: %s: cannot write the log: %s\n", log,
                errno == ELOOP || errno == EINVAL ? "not a regular file" : strerror(errno));
        _exit(2);
    }
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    snprintf(nthreads, sizeof nthreads, "%d", threads);
    setenv("OMP_NUM_THREADS", nthreads, 1);
    setenv("OPENBLAS_NUM_THREADS", nthreads, 1);
    execv(exe, (char *const *)argv);
    fprintf(stderr, "stability: cannot run %s: %s\n", exe, strerror(errno));
    _exit(127);
}

/* Print the last lines of run i's log to stderr. */
static void report_failure(const sweep_t *s, int i, int status)
{
    char log[1400];
    snprintf(log, sizeof log, "%s/%s.log", s->results_dir, s->runs[i].name);
    if (WIFSIGNALED(status))
        fprintf(stderr, "run %d (%s) killed by signal %d; log %s\n", i, s->runs[i].name,
                WTERMSIG(status), log);
    else
        fprintf(stderr, "run %d (%s) failed with exit code %d; log %s\n", i, s->runs[i].name,
                WEXITSTATUS(status), log);
    const int fd = fsutil_open_regular(log, O_RDONLY, 0);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
    if (!f) {
        if (fd >= 0) close(fd);
        return;
    }
    char lines[5][512];
    int n = 0;
    while (fgets(lines[n % 5], sizeof lines[0], f)) n++;
    fclose(f);
    for (int k = n > 5 ? n - 5 : 0; k < n; k++) fprintf(stderr, "  | %s", lines[k % 5]);
}

/* Say that run i is redone: its file holds a result of another configuration. */
static void report_stale(const sweep_t *s, int i, const char *why)
{
    fprintf(stderr, "run %d (%s): stale: its file was written with another configuration (%s); "
            "redoing it\n", i, s->runs[i].name, why);
}

static int cores_available(void)
{
    const char *slurm = getenv("SLURM_CPUS_PER_TASK");
    if (slurm && atoi(slurm) > 0) return atoi(slurm);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int sweep_run_local(const sweep_t *s, const char *exe, int jobs, int quiet)
{
    if (make_results_dir(s) != 0) {
        fprintf(stderr, "stability: %s: cannot create: %s\n", s->results_dir, strerror(errno));
        return -1;
    }
    const int cores = cores_available();
    if (jobs <= 0) jobs = cores;
    const int threads = cores / jobs > 0 ? cores / jobs : 1;
    int *todo = malloc((size_t)s->nruns * sizeof(int));
    pid_t *pids = calloc((size_t)jobs, sizeof(pid_t));
    int *slot_run = calloc((size_t)jobs, sizeof(int));
    if (!todo || !pids || !slot_run) { free(todo); free(pids); free(slot_run); return -1; }
    int ntodo = 0, skipped = 0;
    for (int i = 0; i < s->nruns; i++) {
        char why[256];
        const sweep_state_t st = sweep_run_state(s, i, why, sizeof why);
        if (st == SWEEP_COMPLETE) skipped++;
        else todo[ntodo++] = i;
        if (st == SWEEP_STALE) report_stale(s, i, why);
    }
    if (!quiet)
        printf("sweep %s: %d runs, %d complete, %d to run, %d at a time x %d threads\n", s->name,
               s->nruns, skipped, ntodo, jobs, threads);
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    progress_t bar;
    char label[160], extra[64];
    snprintf(label, sizeof label, "sweep %.100s", s->name);
    progress_start(&bar, label, quiet);
    int next = 0, running = 0, done = 0, failed = 0, rc = 0;
    while ((next < ntodo && !stop_requested) || running > 0) {
        while (running < jobs && next < ntodo && !stop_requested) {
            int slot = 0;
            while (pids[slot]) slot++;
            const pid_t pid = spawn_run(s, exe, todo[next], threads);
            if (pid < 0) { rc = -1; stop_requested = 1; break; }
            pids[slot] = pid;
            slot_run[slot] = todo[next++];
            running++;
        }
        snprintf(extra, sizeof extra, "%d running, %d failed", running, failed);
        progress_update(&bar, done, ntodo, extra);
        int status;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < jobs; k++) {
            if (pids[k] != pid) continue;
            pids[k] = 0;
            running--;
            done++;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                failed++;
                if (bar.enabled) fputc('\n', stderr);
                report_failure(s, slot_run[k], status);
            }
        }
    }
    snprintf(extra, sizeof extra, "%d failed", failed);
    progress_update(&bar, done, ntodo, extra);
    progress_end(&bar);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (stop_requested && next < ntodo)
        fprintf(stderr, "sweep %s: stopped; %d runs not started (run the sweep again to resume)\n",
                s->name, ntodo - next);
    free(todo);
    free(pids);
    free(slot_run);
    return rc < 0 ? rc : failed + (stop_requested && next < ntodo ? ntodo - next : 0);
}

/* The signal that ended a command, from its wait status: its own, or the one a shell in
 * between would report as exit status 128 + signal; 0 when none did. */
static int killing_signal(int status)
{
    if (status == -1) return 0;
    if (WIFSIGNALED(status)) return WTERMSIG(status);
    if (WIFEXITED(status) && WEXITSTATUS(status) > 128) return WEXITSTATUS(status) - 128;
    return 0;
}

int sweep_run_task(const sweep_t *s, const char *exe, int i, int quiet)
{
    if (make_results_dir(s) != 0) {
        fprintf(stderr, "stability: %s: cannot create: %s\n", s->results_dir, strerror(errno));
        return 1;
    }
    char why[256];
    const sweep_state_t state = sweep_run_state(s, i, why, sizeof why);
    if (state == SWEEP_COMPLETE) {
        if (!quiet) printf("run %d (%s) is complete; nothing to do\n", i, s->runs[i].name);
        return 0;
    }
    if (state == SWEEP_STALE) report_stale(s, i, why);
    const pid_t pid = spawn_run(s, exe, i, cores_available());
    if (pid < 0) return 1;
    // forward Slurm's pre-emption signals to the run, which checkpoints and exits
    struct sigaction sa = {0};
    sa.sa_handler = on_stop_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int status;
    for (;;) {
        const pid_t w = waitpid(pid, &status, 0);
        if (w == pid) break;
        if (w < 0 && errno == EINTR && stop_requested) {
            kill(pid, SIGUSR1);
            stop_requested = 0;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        report_failure(s, i, status);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    // A training run stopped by USR1/TERM has checkpointed (status interrupted). Under Slurm
    // the task requeues itself, and its next start resumes from the checkpoint.
    char path[1400];
    sweep_run_path(s, i, path, sizeof path);
    char *st = h5io_file_status(path);
    const int interrupted = st && !strcmp(st, "interrupted");
    free(st);
    if (interrupted) {
        const char *job = getenv("SLURM_ARRAY_JOB_ID"), *task = getenv("SLURM_ARRAY_TASK_ID");
        if (!job || !task) {
            fprintf(stderr, "run %d (%s) interrupted and checkpointed; run the task again to resume\n",
                    i, s->runs[i].name);
            return 0;
        }
        char id[128];
        snprintf(id, sizeof id, "%s_%s", job, task);
        printf("run %d (%s) checkpointed; scontrol requeue %s\n", i, s->runs[i].name, id);
        fflush(stdout);
        // The requeue ends this job: Slurm signals every process of it, scontrol included,
        // sometimes before scontrol has exited. A scontrol killed by SIGTERM/SIGKILL therefore
        // means the requeue is under way, not that it failed; exit 0 so the old run is not
        // recorded as FAILED. No shell: the ids come from the environment.
        const char *const argv[] = {"scontrol", "requeue", id, NULL};
        const int rc = proc_run(argv, NULL);
        const int sig = killing_signal(rc);
        if (rc != 0 && sig != SIGTERM && sig != SIGKILL) {
            fprintf(stderr, "stability: 'scontrol requeue %s' failed (status %d)\n", id, rc);
            return 1;
        }
        return 0;
    }
    if (!quiet) printf("run %d (%s) finished\n", i, s->runs[i].name);
    return 0;
}

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
    int rc = h5io_create(&f, s->merged_path, 1, err, sizeof err);
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
