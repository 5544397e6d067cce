/* cli_sweep.c — `stability sweep`: a sweep file's runs, locally, as one run of it (--task,
 * a Slurm array task) or as a Slurm job array, and their merge (sweep/sweep.h;
 * docs/design.md §3). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config/config.h"
#include "util/args.h"
#include "sweep/sweep.h"
#include "cli/cli.h"

static const char *HELP_SWEEP =
    "usage: stability sweep FILE [--jobs N] [--dry-run] [--quiet]\n"
    "       stability sweep FILE --slurm [--submit [--only-missing]] [--set slurm.KEY=VALUE]...\n"
    "       stability sweep FILE --task I\n"
    "       stability sweep FILE --merge [--force]\n"
    "       stability sweep FILE --configs DIR\n"
    "\n"
    "Runs every point of a sweep file (experiments/*.ini: a base config, lists of values to\n"
    "cross or zip, a run-name pattern) as its own process, N at a time (default: one per\n"
    "core; the threads, STABILITY_THREADS else SLURM_CPUS_PER_TASK else the CPUs, divided\n"
    "between them and set as STABILITY_SWEEP_THREADS, which wins in the runs), skipping runs\n"
    "whose file is complete (status done or diverged, written with the configuration the\n"
    "sweep now asks for; a stale one is redone), so an interrupted sweep resumes. Runs write\n"
    "results/<sweep>/<run>.h5 and <run>.log (its log lines, warnings and summary); when runs\n"
    "end, their threads go to the runs still going. One bar counts the updates of all runs\n"
    "with an ETA (a log instead: a line per run that ends and every minute); each run's\n"
    "warnings come as one line naming the run; the sweep ends with a table of every run\n"
    "(status, updates, final and validation loss, diagnosis), also written to\n"
    "results/<sweep>/summary.txt. Then all complete runs are merged into results/<sweep>.h5\n"
    "(/runs/NAME/... and the /sweep table of swept values).\n"
    "  --jobs N     runs at a time\n"
    "  --dry-run    list the runs and their overrides, run nothing\n"
    "  --configs DIR  write each run's resolved config to DIR/<run>.ini (DIR made if\n"
    "               missing, files replaced), run nothing: one run's config for another verb\n"
    "               (make advise-validation gives each cell to stability advise)\n"
    "  --task I     run only run I (0-based; what a Slurm array task does)\n"
    "  --merge      only merge what is complete; list what is missing (exit 3 if any). A\n"
    "               merged file holding more complete runs than the run files now give is\n"
    "               kept (run files lost or stale)\n"
    "  --force      replace it anyway\n"
    "  --slurm      write results/<sweep>/job.sbatch: one job array, task i = --task i,\n"
    "               resources from the [slurm] section (partition, time, cpus_per_task, mem,\n"
    "               array_parallelism, account, extra) or --set slurm.KEY=VALUE\n"
    "  --submit     also submit it (sbatch --parsable) and print the job id\n"
    "  --only-missing  with --submit: submit only the runs that are not complete\n"
    "  --set slurm.KEY=VALUE   with --slurm: a [slurm] setting (a run's keys go in the file)\n"
    "  --quiet      no bar, no warnings, no table (summary.txt is still written)\n"
    "One of --slurm, --dry-run, --configs, --task, --merge at a time; an option the action\n"
    "would not use is refused.\n"
    "SIGINT, SIGTERM, SIGHUP: passed on to the runs (training runs checkpoint), then exit\n"
    "128 + the signal; run the sweep again to resume. A second sweep of the same file at the\n"
    "same time refuses (results/<sweep>/.lock).\n"
    "Exit: 0 all runs done, 1 some run failed (its log is shown), 2 bad sweep file or usage,\n"
    "3 --merge found runs missing.\n";

/* Path of this executable (children of a sweep run the same binary): 0, or −1 when it does
 * not fit buf (never a truncated path). */
static int self_path(const char *argv0, char *buf, size_t len)
{
    const ssize_t n = readlink("/proc/self/exe", buf, len);
    if (n > 0 && (size_t)n < len) {
        buf[n] = '\0';
        return 0;
    }
    return n > 0 || (size_t)snprintf(buf, len, "%s", argv0) >= len ? -1 : 0;
}

/* Every option does what it says or is refused (never ignored): one of --slurm, --dry-run,
 * --task, --merge (or none: run locally); the options of the others with it are errors. */
static int check_modes(int slurm, int dry, int task, int merge, int jobs, int submit,
                       int only_missing, int nsets, int force)
{
    if (slurm + dry + task + merge > 1)
        return cli_usage_error("sweep: --slurm, --dry-run, --configs, --task and --merge are "
                               "different actions; give one", NULL);
    if (submit && !slurm) return cli_usage_error("--submit goes with --slurm", NULL);
    if (only_missing && !submit)
        return cli_usage_error("--only-missing goes with --slurm --submit (it chooses what is "
                               "submitted)", NULL);
    if (nsets && !slurm)
        return cli_usage_error("--set takes slurm.KEY=VALUE for --slurm (a run's keys go in the "
                               "sweep file)", NULL);
    if (jobs && (slurm || dry || task || merge))
        return cli_usage_error("--jobs goes with a local sweep (no --slurm, --dry-run, --configs, "
                               "--task, --merge)", NULL);
    if (force && (slurm || dry || task))
        return cli_usage_error("--force goes with a local sweep or --merge", NULL);
    return 0;
}

/* What the command line asks (defaults: a local sweep, a job per core). */
typedef struct {
    const char *file;
    int jobs, dry, merge_only, quiet, slurm, submit, only_missing, force;
    long task;                  /* −1: none */
    const char *sets[64];       /* --set slurm.KEY=VALUE */
    const char *configs;        /* --configs DIR, or NULL */
    int nsets;
} sweep_opts_t;

/* Parse argv[2..] into o. −1 to go on; else the exit code (0 after --help, 2 bad usage). */
static int parse_options(int argc, char **argv, sweep_opts_t *o)
{
    *o = (sweep_opts_t){.task = -1};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(HELP_SWEEP, stdout); return 0; }
        else if (!strcmp(a, "--jobs") && i + 1 < argc) {
            long v;
            if (args_parse_long(argv[++i], 1, SWEEP_MAX_RUNS, &v)) {
                char msg[64];
                snprintf(msg, sizeof msg, "--jobs: not an integer in 1..%d", SWEEP_MAX_RUNS);
                return cli_usage_error(msg, argv[i]);
            }
            o->jobs = (int)v;
        } else if (!strcmp(a, "--task") && i + 1 < argc) {
            if (args_parse_long(argv[++i], 0, SWEEP_MAX_RUNS - 1, &o->task))
                return cli_usage_error("--task: not a run index (0, 1, ...)", argv[i]);
        } else if (!strcmp(a, "--set") && i + 1 < argc) {
            if (o->nsets == 64) return cli_usage_error("too many --set options", NULL);
            o->sets[o->nsets] = argv[++i];
            if (cli_check_set(o->sets, o->nsets, i + 1 < argc ? argv[i + 1] : NULL)) return 2;
            o->nsets++;
        } else if (!strcmp(a, "--configs") && i + 1 < argc) {
            o->configs = argv[++i];
        } else if (!strcmp(a, "--dry-run")) o->dry = 1;
        else if (!strcmp(a, "--slurm")) o->slurm = 1;
        else if (!strcmp(a, "--submit")) o->submit = 1;
        else if (!strcmp(a, "--only-missing")) o->only_missing = 1;
        else if (!strcmp(a, "--merge")) o->merge_only = 1;
        else if (!strcmp(a, "--force")) o->force = 1;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) o->quiet = 1;
        else if (a[0] == '-') return cli_usage_error("unknown option", a);
        else if (!o->file) o->file = a;
        else return cli_usage_error("sweep: more than one FILE", a);
    }
    if (!o->file) return cli_usage_error("sweep: missing FILE", NULL);
    const int rc = check_modes(o->slurm, o->dry + (o->configs != NULL), o->task >= 0,
                               o->merge_only, o->jobs > 0, o->submit, o->only_missing, o->nsets,
                               o->force);
    return rc ? rc : -1;
}

/* --dry-run: every run with its state and overrides. */
static void list_runs(const sweep_t *s)
{
    printf("sweep %s: base %s, %d runs -> %s/\n", s->name, s->base, s->nruns, s->results_dir);
    for (int i = 0; i < s->nruns; i++) {
        sweep_sets_t sets;
        sweep_run_sets(s, i, &sets);
        const sweep_state_t st = sweep_run_state(s, i, NULL, 0);
        printf("%4d %-32s %s", i, s->runs[i].name, st == SWEEP_COMPLETE ? "[complete]"
                                                   : st == SWEEP_STALE ? "[stale]" : "");
        for (int k = 0; k < sets.n; k++) printf(" %s", sets.ptr[k]);
        printf("\n");
    }
}

/* --configs DIR: each run's resolved config (config_to_ini of the base with the run's
 * overrides, as the run itself resolves it) into DIR/<run>.ini. The exit code. */
static int write_configs(const sweep_t *s, const char *dir)
{
    if (mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "stability: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    for (int i = 0; i < s->nruns; i++) {
        sweep_sets_t sets;
        sweep_run_sets(s, i, &sets);
        config_t cfg;
        char err[CONFIG_ERR_MAX], path[4096];
        if (config_load(&cfg, s->base, sets.ptr, sets.n, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 2;
        }
        const size_t len = config_to_ini(&cfg, NULL, 0) + 1;
        char *ini = malloc(len);
        snprintf(path, sizeof path, "%s/%s.ini", dir, s->runs[i].name);
        FILE *f = ini ? fopen(path, "w") : NULL;
        if (f) config_to_ini(&cfg, ini, len);
        const int bad = !f || fputs(ini, f) == EOF || fclose(f);
        free(ini);
        if (bad) { fprintf(stderr, "stability: %s: cannot write\n", path); return 1; }
    }
    return 0;
}

/* --slurm: the job script, and with --submit its submission. The exit code. */
static int slurm_job(sweep_t *s, const sweep_opts_t *o, const char *exe)
{
    char script[1200], err[2048];
    int rc = sweep_slurm_write(s, exe, script, sizeof script, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    else if (!o->submit && !o->quiet)
        printf("wrote %s (submit with: sbatch %s, or add --submit)\n", script, script);
    if (!rc && o->submit) rc = sweep_slurm_submit(s, script, o->only_missing, o->quiet);
    return rc;
}

int cli_sweep(int argc, char **argv)
{
    sweep_opts_t o;
    const int rc_opts = parse_options(argc, argv, &o);
    if (rc_opts >= 0) return rc_opts;
    sweep_t s;
    char err[2048], exe[4096];
    if (sweep_load(&s, o.file, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        sweep_free(&s);
        return 2;
    }
    if (self_path(argv[0], exe, sizeof exe)) {
        sweep_free(&s);
        return cli_usage_error("sweep: the path of this program is too long", NULL);
    }
    for (int k = 0; k < o.nsets; k++) {
        if (sweep_set_slurm(&s, o.sets[k], err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            sweep_free(&s);
            return 2;
        }
    }
    int rc = 0;
    if (o.slurm) {
        rc = slurm_job(&s, &o, exe);
    } else if (o.configs) {
        rc = write_configs(&s, o.configs);
    } else if (o.dry) {
        list_runs(&s);
    } else if (o.task >= s.nruns) {
        fprintf(stderr, "stability: --task %ld: the sweep has %d runs (0..%d)\n", o.task, s.nruns,
                s.nruns - 1);
        rc = 2;
    } else {
        rc = sweep_execute(&s, exe, o.task, o.jobs, o.merge_only, o.force, o.quiet);
    }
    sweep_free(&s);
    return rc;
}
