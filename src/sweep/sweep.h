/* sweep.h — a sweep file (experiments/NAME.ini) expanded into runs; the local parallel runner,
 * single-task execution (Slurm array tasks) and the merge of the runs into one file.
 *
 * Sweep file (INI):
 *   [sweep]
 *   base = configs/postln_L6.ini          ; the config every run starts from
 *   name = {placement}_L{layers}          ; run-name pattern: {key} or {section.key}
 *   model.placement = post, pre           ; a list: swept (Cartesian product)
 *   model.layers = 6, 8, 10, 12, 14
 *   probe.seeds = 10                      ; one value: set for every run
 *   zip = model.d_model, model.d_ff       ; these lists are paired (zipped), not crossed;
 *                                         ; 'a, b | c, d': two groups, crossed with each other
 *   title = Depth scan of the paper's LM   ; optional: the figures' title (/sweep@title)
 *   reuse = experiments/other.ini         ; optional: sweeps whose identical runs are taken
 *   [slurm]                               ; job-array resources
 *   partition = ...
 * Runs go to results/<sweep>/<run>.h5 (log beside it), the merge to results/<sweep>.h5.
 */
#ifndef STABILITY_SWEEP_H
#define STABILITY_SWEEP_H

#include <stddef.h>

#define SWEEP_MAX_KEYS 32
#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_RUNS 8192
#define SWEEP_MAX_SLURM 32
#define SWEEP_MAX_REUSE 8

typedef struct {
    char key[64];                        /* section.key */
    int nvalues;
    char values[SWEEP_MAX_VALUES][128];
    int zipped;                          /* its zip group's number from 1; 0: not zipped */
    int line;                            /* line in the sweep file */
} sweep_axis_t;

typedef struct {
    char name[128];                      /* from the pattern */
    int index[SWEEP_MAX_KEYS];           /* value index per axis */
} sweep_run_t;

typedef struct {
    char path[4096];                     /* the sweep file (PATH_MAX: a task gets it absolute) */
    char name[128];                      /* basename without .ini */
    char base[1024];                     /* base config */
    char pattern[256];                   /* run-name pattern ("" = automatic) */
    char title[256];                     /* [sweep] title: the figures' ("" = none) */
    char reuse[1024];                    /* [sweep] reuse: sweep files, comma-separated ("") */
    int naxes;
    sweep_axis_t axes[SWEEP_MAX_KEYS];   /* swept keys, in file order */
    int nfixed;
    char fixed[SWEEP_MAX_KEYS][256];     /* "section.key=value" applied to every run */
    int fixed_line[SWEEP_MAX_KEYS];
    int nslurm;
    char slurm_key[SWEEP_MAX_SLURM][64]; /* [slurm] entries, raw (validated by the Slurm writer) */
    char slurm_value[SWEEP_MAX_SLURM][256];
    int slurm_line[SWEEP_MAX_SLURM];
    int nruns;
    sweep_run_t *runs;                   /* [nruns] */
    char results_dir[1024];              /* results/<name> */
    char merged_path[1100];              /* results/<name>.h5 */
} sweep_t;

/* Parse and expand a sweep file; every run's config is loaded and validated (so a bad value
 * fails before anything runs), and no two runs may resolve to one configuration (a value spelt
 * twice, train.lr = 1e-3, 0.001: one run counted as two). Returns 0, or 2 with err
 * "FILE:LINE: key: message" (1: out of memory). */
int sweep_load(sweep_t *s, const char *path, char *err, size_t errlen);

/* Free what sweep_load allocated. */
void sweep_free(sweep_t *s);

/* The "section.key=value" overrides of one run: fixed ones first, then the swept values. */
typedef struct {
    int n;
    char text[2 * SWEEP_MAX_KEYS][256];
    const char *ptr[2 * SWEEP_MAX_KEYS];   /* ptr[k] = text[k], for config_load */
} sweep_sets_t;

/* Fill out with the overrides of run i. */
void sweep_run_sets(const sweep_t *s, int i, sweep_sets_t *out);

/* Output file of run i: results/<sweep>/<run>.h5. */
void sweep_run_path(const sweep_t *s, int i, char *buf, size_t len);

/* What run i's file (results/<sweep>/<run>.h5) holds. */
typedef enum { SWEEP_MISSING, SWEEP_INCOMPLETE, SWEEP_STALE, SWEEP_DAMAGED, SWEEP_COMPLETE } sweep_state_t;

/* The state of run i, its file read in a child process (io/h5io.h's h5io_summarize): damaged
 * when it cannot be read, else sweep_result_state's (stale and damaged runs are redone). why
 * (may be NULL) gets the status, or what is wrong. */
sweep_state_t sweep_run_state(const sweep_t *s, int i, char *why, size_t len);

/* Whether a result (a run file's, or a merged file's /runs/NAME) with this kind ("train",
 * "probe", ...), root attributes status and config, and data identity (data/identity.h; NULL
 * when it records none) is run i's: complete when it is the run's kind of file (a probe's or a
 * training run's, not a dump), has status done or diverged, and was written with the
 * configuration the sweep now asks for (h5io_config_same) from the same data (data read now,
 * data_identity_same; a file that records none, or data that cannot be read now, are not held
 * against it); stale when it is done or diverged with another configuration or other data, or
 * of another kind; else incomplete. why gets the status, or what differs. */
sweep_state_t sweep_result_state(const sweep_t *s, int i, const char *kind, const char *status,
                                 const char *config, const char *data_sha256, long long data_bytes,
                                 char *why, size_t len);

/* True when run i is complete (sweep_run_state; a result, never redone). */
int sweep_run_complete(const sweep_t *s, int i);

/* mkdir -p results/<sweep>. 0, or −1 with errno. */
int sweep_make_dir(const sweep_t *s);

/* Make results/<sweep>/ this sweep file's (its .sweep names the file): 0; 2 with err when
 * another sweep file of the same name, which still exists, owns it; 1 on I/O failure. */
int sweep_own_dir(const sweep_t *s, char *err, size_t errlen);

/* The sweep's OpenBLAS kernel family, results/<sweep>/.blas_core (written by its first run or
 * task, the family that process runs; util/blascore.h): 0 when this process runs it; else
 * re-executes the program with it (does not return), or returns 2 with err when it cannot
 * (this CPU lacks what they need, a setting asks for others), 1 on I/O failure. */
int sweep_kernels(const sweep_t *s, char *err, size_t errlen);

/* 0 when results/<sweep>.h5 is missing or this sweep's merged file; else 1 with err (a
 * training run's file of the same name, another sweep's merged file, a damaged file). */
int sweep_merged_ours(const sweep_t *s, char *err, size_t errlen);

/* Own (sweep_own_dir) and lock results/<sweep>/.lock for as long as the returned fd is open:
 * a local sweep exclusively (its PID written in), a Slurm task or a merge shared, so that two
 * sweeps of one file never run at once (docs/design.md §3). Returns the fd, or after printing
 * why −1 (another holds it, I/O) or −2 (another sweep file owns the folder). */
int sweep_lock(const sweep_t *s, int exclusive);

/* Run every incomplete run locally, jobs at a time, as child processes of exe (threads per
 * child = cores/jobs); one progress line unless quiet. SIGINT, SIGTERM and SIGHUP are passed
 * on to the runs as SIGTERM (a training run checkpoints), no run is started after them, and
 * the function returns once the runs have ended; every run dies with the sweep (even by
 * kill -9: PR_SET_PDEATHSIG). Logs are appended to. Returns the number of failed (and, after a
 * stop, stopped or unstarted) runs, each failure reported with the tail of its log, or −1 if
 * a process could not be started. */
int sweep_run_local(const sweep_t *s, const char *exe, int jobs, int quiet);

/* The signal that stopped the last sweep_run_local or sweep_run_task, or 0. */
int sweep_stop_signal(void);

/* Run only run i as a child of this process (what a Slurm array task does): SIGUSR1 and SIGTERM
 * are passed on as SIGUSR1 (the run checkpoints, the task requeues itself under Slurm), SIGINT
 * and SIGHUP as SIGTERM (the run checkpoints; returns 128 + the signal). Returns the exit code
 * of the run. */
int sweep_run_task(const sweep_t *s, const char *exe, int i, int quiet);

/* What `stability sweep FILE` does without --slurm or --dry-run, under sweep_lock (a second
 * sweep of the same file refuses): run task (>= 0) only, or merge only, or run every
 * incomplete run locally (jobs at a time) and merge them (force: replace a merged file that
 * holds more complete runs). Returns the exit code (128 + the signal when one stopped it). */
int sweep_execute(const sweep_t *s, const char *exe, long task, int jobs, int merge_only, int force,
                  int quiet);

/* Take every incomplete run (run < 0), or run `run` only, from the sweeps [sweep] reuse names
 * where one of their run files is this run's in configuration, seed, data and kernels
 * (sweep_reuse.c: complete, identity recorded and equal to the data now, blas_core = the
 * family this process runs, undamaged, unchanged while copied): copied byte for byte to
 * results/<sweep>/<run>.h5, a line in its log. Call after sweep_kernels. Says each run taken
 * or passed over (and why) unless quiet. Returns how many were taken. */
int sweep_reuse(const sweep_t *s, int run, int quiet);

/* Merge every complete run into results/<sweep>.h5 (/runs/NAME/... and the /sweep table);
 * lists missing, stale and failed runs on stderr with their indices. A merge never drops a
 * run the merged file holds (sweep_merge.c): a run whose run file is missing or unfinished
 * keeps its group from the merged file while that is the run's result (sweep_result_state);
 * a merged file with a group the new one would lose (a run no longer in the sweep, or stale
 * with no run file) is kept, and so is one that the run files add nothing to; force merges
 * the run files alone. Returns 0 if all runs' run files were merged, 3 if some run files are
 * missing (the file holds the others, or was kept), 1 on I/O failure or when a merged file
 * was kept, 2 when the merged path is not a regular file. */
int sweep_merge(const sweep_t *s, int force, int quiet);

/* Apply one "slurm.key=value" override (command line) to the [slurm] settings.
 * Returns 0, or 2 with err "--set slurm.key: message". */
int sweep_set_slurm(sweep_t *s, const char *assignment, char *err, size_t errlen);

/* Write results/<sweep>/job.sbatch: one array job whose task i runs `exe sweep FILE --task i`,
 * resources from [slurm] (partition, time, cpus_per_task, mem, array_parallelism, account,
 * extra = "--opt; --opt"), USR1 120 s before the limit, requeue, HDF5 locking off.
 * Returns 0, or 2 with err "FILE:LINE: slurm.key: message". */
int sweep_slurm_write(const sweep_t *s, const char *exe, char *script, size_t len, char *err,
                      size_t errlen);

/* Longest --array specification one sbatch is given (more go to further arrays). */
#define SWEEP_SPEC_MAX 4096

/* The next --array specification of the ascending task indices ids[0..n) from ids[*pos] on:
 * runs of consecutive indices as ranges ("0-5,7,9-12"), as many as fit in len − 1 characters;
 * *pos advances past them. Returns how many indices it holds (0 only when *pos == n). */
int sweep_array_spec_next(const int *ids, int n, int *pos, char *spec, size_t len);

/* Submit script with sbatch --parsable: all runs, or only the incomplete ones; arrays larger
 * than the cluster's MaxArraySize are split (an index offset is exported to the tasks), and
 * index lists longer than SWEEP_SPEC_MAX go out as several arrays. Prints each job id. Returns
 * 0, or 1 if sbatch failed (or not every run went out). */
int sweep_slurm_submit(const sweep_t *s, const char *script, int only_missing, int quiet);

#endif
