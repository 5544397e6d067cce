/* sweep_run.c — executing a sweep: child processes (local, N at a time, watched through their
 * channels, sweep_watch.h; or one Slurm array task) and the merge of the finished runs into one
 * HDF5 file. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "sweep/sweep.h"
#include "io/h5io.h"
#include <omp.h>
#include "util/args.h"
#include "util/fsutil.h"
#include "util/proc.h"
#include "util/progress.h"
#include "util/threads.h"
#include "sweep/sweep_watch.h"

/* The last stop signal (SIGINT, SIGTERM, SIGHUP; SIGUSR1 for a task) and how many came. */
static volatile sig_atomic_t stop_signal = 0, stop_count = 0;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
    stop_count++;
}

/* Catch each of sigs[0..n) with on_stop_signal; the old actions into old. */
static void stop_signals_install(const int *sigs, int n, struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = stop_count = 0;
    for (int k = 0; k < n; k++) sigaction(sigs[k], &sa, &old[k]);
}

static void stop_signals_restore(const int *sigs, int n, const struct sigaction *old)
{
    for (int k = 0; k < n; k++) sigaction(sigs[k], &old[k], NULL);
}

int sweep_stop_signal(void)
{
    return stop_signal;
}

/* A short sleep between polls of the children (a signal is noticed within it). */
static void nap(void)
{
    const struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Start run i as `exe --config BASE --set ... --out results/<sweep>/<run>.h5 --force --resume`,
 * with stdout and stderr in <run>.log (its log lines, warnings and summary: the log is not a
 * terminal) and threads BLAS/OpenMP threads: a share of a local sweep (> 0: it wins over the
 * environment), or −threads for a Slurm task (the run's own STABILITY_THREADS or
 * SLURM_CPUS_PER_TASK win, as for any run). chan (NULL: none): the sweep's end of the run's
 * channel (util/progress.h), −1 when it could not be made. Returns the pid or −1. */
static pid_t spawn_run(const sweep_t *s, const char *exe, int i, int threads, int *chan)
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
    argv[argc] = NULL;
    int sv[2] = {-1, -1};
    if (chan && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) sv[0] = sv[1] = -1;
    fflush(NULL);
    const pid_t parent = getpid(), pid = fork();
    if (pid != 0) {
        if (sv[1] >= 0) close(sv[1]);
        if (pid < 0 && sv[0] >= 0) close(sv[0]);
        if (chan) *chan = pid > 0 ? sv[0] : -1;
        return pid;
    }
    if (sv[1] >= 0) {   // the run's end of its channel survives the exec; the sweep's does not
        char fd[16];
        fcntl(sv[1], F_SETFD, 0);
        snprintf(fd, sizeof fd, "%d", sv[1]);
        setenv("STABILITY_SWEEP_FD", fd, 1);
    }
    // child: a SIGTERM when the sweep dies (even by kill -9), so no run outlives it: a training
    // run checkpoints, a probe ends (docs/design.md §3)
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);   // the sweep died before prctl
    // the log: a regular file (or new), never a link, FIFO or device; appended to, so that a
    // run started again (or a duplicate that fails at once) never erases what a run wrote
    const int fd = fsutil_open_regular(log, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (fd < 0) {
        fprintf(stderr, "stability: %s: cannot write the log: %s\n", log,
                errno == ELOOP || errno == EINVAL ? "not a regular file" : strerror(errno));
        _exit(2);
    }
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    snprintf(nthreads, sizeof nthreads, "%d", threads > 0 ? threads : -threads);
    setenv("OMP_NUM_THREADS", nthreads, 1);
    setenv("OPENBLAS_NUM_THREADS", nthreads, 1);
    // a local sweep's split wins over STABILITY_THREADS and SLURM_CPUS_PER_TASK (util/threads.h)
    if (threads > 0) setenv("STABILITY_SWEEP_THREADS", nthreads, 1);
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

/* Say that run i is redone: its file holds a result of another configuration, or is damaged. */
static void report_redo(const sweep_t *s, int i, sweep_state_t st, const char *why)
{
    if (st == SWEEP_STALE && !strncmp(why, "it is a ", 8))   // a dump of the run's config
        fprintf(stderr, "run %d (%s): stale: its file is not this run's result (%s); redoing it\n",
                i, s->runs[i].name, why);
    else if (st == SWEEP_STALE)
        fprintf(stderr, "run %d (%s): stale: its file was written with another configuration (%s); "
                "redoing it\n", i, s->runs[i].name, why);
    else if (st == SWEEP_DAMAGED)
        fprintf(stderr, "run %d (%s): its file is %s; redoing it\n", i, s->runs[i].name, why);
}

static int cpus_available(void);

/* The threads a sweep divides among its runs: STABILITY_THREADS, else SLURM_CPUS_PER_TASK,
 * else the CPUs it may run on (main.c has refused values that are not counts). */
static int cores_available(void)
{
    static const char *const VARS[2] = {"STABILITY_THREADS", "SLURM_CPUS_PER_TASK"};
    for (int k = 0; k < 2; k++) {
        long n;
        char err[128];
        if (args_env_count(VARS[k], THREADS_ENV_MAX, &n, err, sizeof err) == 1) return (int)n;
    }
    return cpus_available();
}

/* The CPUs this process may run on (its affinity mask: taskset, cgroup cpusets), >= 1. */
static int cpus_available(void)
{
    const int n = omp_get_num_procs();
    return n > 0 ? n : 1;
}

/* The runs a local sweep has going: slot k holds run slot_run[k] as process pids[k] (0: free). */
typedef struct {
    pid_t *pids;
    int *slot_run;
    int *failed_run;     /* [nruns] the exit code (128 + signal) of a run that failed here, else 0 */
    int jobs, running, done, failed, stopped;
    sweep_watch_t watch; /* progress, warnings and threads of the runs (sweep_watch.h) */
} pool_t;

/* A child that ended: counted as done, stopped (by the sweep's stop) or failed (reported). */
static void pool_reap(const sweep_t *s, pool_t *p, pid_t pid, int status)
{
    for (int k = 0; k < p->jobs; k++) {
        if (p->pids[k] != pid) continue;
        p->pids[k] = 0;
        p->running--;
        p->done++;
        const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
        // after our stop, a run that ended without its result was stopped: a training run
        // checkpoints and exits 0 (status interrupted), a probe dies by the signal
        if (stop_signal && (sig == SIGTERM || sig == SIGINT || code == 130 || code == 143 ||
                            (!sig && !code && !sweep_run_complete(s, p->slot_run[k])))) {
            p->stopped++;
            sweep_watch_ended(&p->watch, k, 0);
            return;
        }
        sweep_watch_ended(&p->watch, k, !sig && !code);
        if (!sig && !code) return;
        p->failed++;
        p->failed_run[p->slot_run[k]] = code ? code : 128 + sig;
        if (p->watch.bar.enabled) fputc('\n', stderr);
        report_failure(s, p->slot_run[k], status);
    }
}

/* Run todo[0..ntodo) p->jobs at a time until done or stopped; every stop signal is forwarded
 * to the running children as SIGTERM (the first makes a training run checkpoint and end; a
 * second kills). The cores of a run that ends go to the runs still going. Returns the number
 * not started, or −1 if a process could not be started. */
static int pool_run(const sweep_t *s, const char *exe, pool_t *p, const int *todo, int ntodo)
{
    int next = 0, forwarded = 0, rc = 0;
    while ((next < ntodo && !stop_signal) || p->running > 0) {
        int changed = 0;
        while (p->running < p->jobs && next < ntodo && !stop_signal) {
            int slot = 0, chan;
            while (p->pids[slot]) slot++;
            const int threads = sweep_watch_share(&p->watch, ntodo - next);
            const pid_t pid = spawn_run(s, exe, todo[next], threads, &chan);
            if (pid < 0) { rc = -1; stop_signal = SIGTERM; break; }
            p->pids[slot] = pid;
            p->slot_run[slot] = todo[next++];
            p->running++;
            sweep_watch_started(&p->watch, slot, p->slot_run[slot], chan, threads);
            changed = 1;
        }
        // and SIGCONT after it, as Slurm does: a stopped run (SIGSTOP, ^Z) would never see it
        for (; forwarded < stop_count; forwarded++)
            for (int k = 0; k < p->jobs; k++)
                if (p->pids[k]) {
                    kill(p->pids[k], SIGTERM);
                    kill(p->pids[k], SIGCONT);
                }
        int status;
        const pid_t pid = waitpid(-1, &status, WNOHANG);   // polled: no signal is missed
        if (pid > 0) { pool_reap(s, p, pid, status); changed = 1; }
        if (changed && !stop_signal) sweep_watch_rebalance(&p->watch);
        sweep_watch_bar(&p->watch, p->running, p->failed);
        if (pid == 0) sweep_watch_poll(&p->watch, 50);   // messages, or a short nap
        else if (pid < 0 && errno != EINTR) break;
    }
    sweep_watch_bar(&p->watch, p->running, p->failed);
    return rc < 0 ? rc : ntodo - next;
}

int sweep_run_local(const sweep_t *s, const char *exe, int jobs, int quiet)
{
    if (sweep_make_dir(s) != 0) {
        fprintf(stderr, "stability: %s: cannot create: %s\n", s->results_dir, strerror(errno));
        return -1;
    }
    const int cores = cores_available();
    // one run per CPU at most unless asked (--jobs): STABILITY_THREADS=1000 on 2 CPUs is not
    // 1000 processes at once
    if (jobs <= 0) jobs = cores < cpus_available() ? cores : cpus_available();
    const int threads = cores / jobs > 0 ? cores / jobs : 1;
    int *todo = malloc((size_t)s->nruns * sizeof(int));
    pool_t p = {.pids = calloc((size_t)jobs, sizeof(pid_t)), .slot_run = calloc((size_t)jobs, sizeof(int)),
                .failed_run = calloc((size_t)s->nruns, sizeof(int)), .jobs = jobs};
    if (!todo || !p.pids || !p.slot_run || !p.failed_run) {
        free(todo); free(p.pids); free(p.slot_run); free(p.failed_run);
        return -1;
    }
    int ntodo = 0, skipped = 0;
    for (int i = 0; i < s->nruns; i++) {
        char why[256];
        const sweep_state_t st = sweep_run_state(s, i, why, sizeof why);
        if (st == SWEEP_COMPLETE) skipped++;
        else todo[ntodo++] = i;
        report_redo(s, i, st, why);
    }
    if (!quiet)
        printf("sweep %s: %d runs, %d complete, %d to run, %d at a time x %d threads\n", s->name,
               s->nruns, skipped, ntodo, jobs, threads);
    static const int SIGS[3] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction old[3];
    stop_signals_install(SIGS, 3, old);
    int left = -1;
    if (!sweep_watch_init(&p.watch, s, todo, ntodo, jobs, cores, quiet)) {
        left = pool_run(s, exe, &p, todo, ntodo);
        progress_end(&p.watch.bar);
        sweep_watch_free(&p.watch);
    }
    stop_signals_restore(SIGS, 3, old);
    if (left >= 0) sweep_summary(s, p.failed_run, quiet);   // every run: status, losses, diagnosis
    if (stop_signal)
        fprintf(stderr, "sweep %s: stopped by %s: %d runs stopped (training runs checkpointed), %d "
                "not started; run the sweep again to resume\n", s->name, strsignal(stop_signal),
                p.stopped, left > 0 ? left : 0);
    free(todo);
    free(p.pids);
    free(p.slot_run);
    free(p.failed_run);
    return left < 0 ? left : p.failed + (stop_signal ? p.stopped + left : 0);
}

int sweep_execute(const sweep_t *s, const char *exe, long task, int jobs, int merge_only, int force,
                  int quiet)
{
    const int lock = sweep_lock(s, task < 0 && !merge_only);
    if (lock < 0) return lock == -2 ? 2 : 1;
    char err[2600];
    // its runs continue with the kernels the sweep started with: re-executes with them before
    // a run starts (the lock is O_CLOEXEC), or refuses (docs/design.md §7)
    const int krc = merge_only ? 0 : sweep_kernels(s, err, sizeof err);
    if (krc) {
        fprintf(stderr, "%s\n", err);
        close(lock);
        return krc;
    }
    // results/<sweep>.h5 that is not this sweep's merged file (a config's default output of the
    // same name, another sweep's): refused before any run starts, unless --force
    if (task < 0 && !force && sweep_merged_ours(s, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        close(lock);
        return 2;
    }
    int rc;
    // runs of other sweeps that are these runs, bit for bit, are taken instead of computed
    if (!merge_only) sweep_reuse(s, task >= 0 ? (int)task : -1, quiet);
    if (task >= 0) {
        rc = sweep_run_task(s, exe, (int)task, quiet);
    } else if (merge_only) {
        rc = sweep_merge(s, force, quiet);
    } else {
        const int failed = sweep_run_local(s, exe, jobs, quiet);
        if (sweep_stop_signal()) {   // stopped: the runs have checkpointed; no merge now
            rc = 128 + sweep_stop_signal();
        } else {
            const int mrc = sweep_merge(s, force, quiet);
            rc = failed != 0 ? 1 : (mrc == 3 ? 1 : mrc);
        }
    }
    close(lock);
    return rc;
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
    if (sweep_make_dir(s) != 0) {
        fprintf(stderr, "stability: %s: cannot create: %s\n", s->results_dir, strerror(errno));
        return 1;
    }
    char why[256];
    const sweep_state_t state = sweep_run_state(s, i, why, sizeof why);
    if (state == SWEEP_COMPLETE) {
        if (!quiet) printf("run %d (%s) is complete; nothing to do\n", i, s->runs[i].name);
        return 0;
    }
    report_redo(s, i, state, why);
    // Slurm's pre-emption signals (USR1, TERM) are forwarded as USR1: the run checkpoints and
    // the task requeues itself; INT and HUP as TERM: it checkpoints, and the task ends
    static const int SIGS[4] = {SIGUSR1, SIGTERM, SIGINT, SIGHUP};
    struct sigaction old[4];
    stop_signals_install(SIGS, 4, old);
    const pid_t pid = spawn_run(s, exe, i, -cores_available(), NULL);
    if (pid < 0) {
        stop_signals_restore(SIGS, 4, old);
        return 1;
    }
    int status, forwarded = 0;
    for (;;) {
        for (; forwarded < stop_count; forwarded++) {
            kill(pid, stop_signal == SIGUSR1 || stop_signal == SIGTERM ? SIGUSR1 : SIGTERM);
            kill(pid, SIGCONT);   // a stopped run would never see it
        }
        const pid_t w = waitpid(pid, &status, WNOHANG);   // polled: no signal is missed
        if (w == pid) break;
        if (w == 0) nap();
        else if (errno != EINTR) { status = 1 << 8; break; }
    }
    stop_signals_restore(SIGS, 4, old);
    if (stop_signal == SIGINT || stop_signal == SIGHUP) {
        fprintf(stderr, "run %d (%s): stopped by %s; run the task again to resume\n", i,
                s->runs[i].name, strsignal(stop_signal));
        return 128 + stop_signal;
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
        if (!job || !task) {   // no requeue outside Slurm: the task did not finish its run
            fprintf(stderr, "run %d (%s) interrupted and checkpointed; run the task again to resume\n",
                    i, s->runs[i].name);
            return stop_signal ? 128 + stop_signal : 1;
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
