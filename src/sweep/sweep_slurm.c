/* sweep_slurm.c — a sweep as one Slurm job array: the sbatch script and its submission.
 * Slurm schedules; stability only writes the script, submits it, and (in sweep_run.c) makes a
 * task checkpoint and requeue itself on USR1/TERM. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sweep/sweep.h"
#include "util/blascore.h"
#include "util/fsutil.h"
#include "util/proc.h"

static const char *const SLURM_KEYS[] = {"partition", "time", "cpus_per_task", "mem",
                                         "array_parallelism", "account", "extra", NULL};

static int known_slurm_key(const char *key)
{
    for (int k = 0; SLURM_KEYS[k]; k++)
        if (!strcmp(SLURM_KEYS[k], key)) return 1;
    return 0;
}

/* Value of a [slurm] key, or def. */
static const char *slurm_get(const sweep_t *s, const char *key, const char *def)
{
    for (int k = s->nslurm - 1; k >= 0; k--)
        if (!strcmp(s->slurm_key[k], key)) return s->slurm_value[k];
    return def;
}

int sweep_set_slurm(sweep_t *s, const char *assignment, char *err, size_t errlen)
{
    const char *eq = strchr(assignment, '=');
    if (strncmp(assignment, "slurm.", 6) || !eq) {
        snprintf(err, errlen, "--set %s: expected slurm.key=value", assignment);
        return 2;
    }
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(eq - assignment - 6), assignment + 6);
    if (!known_slurm_key(key)) {
        snprintf(err, errlen, "--set slurm.%s: unknown key (partition, time, cpus_per_task, mem, "
                              "array_parallelism, account, extra)", key);
        return 2;
    }
    if (s->nslurm == SWEEP_MAX_SLURM) {
        snprintf(err, errlen, "--set slurm.%s: too many [slurm] settings", key);
        return 2;
    }
    snprintf(s->slurm_key[s->nslurm], sizeof s->slurm_key[0], "%s", key);
    snprintf(s->slurm_value[s->nslurm], sizeof s->slurm_value[0], "%s", eq + 1);
    s->slurm_line[s->nslurm++] = -1;   // from --set
    return 0;
}

/* 1 when v is a Slurm time: M, M:S, H:M:S, D-H, D-H:M or D-H:M:S, every field digits. */
static int slurm_time(const char *v)
{
    const char *dash = strchr(v, '-'), *p = v;
    int fields = 0;
    if (dash) {   // days first
        if (dash == v) return 0;
        for (; p < dash; p++) if (!isdigit((unsigned char)*p)) return 0;
        p++;
    }
    for (;;) {
        const char *start = p;
        while (isdigit((unsigned char)*p)) p++;
        if (p == start) return 0;   // an empty field: "", ":30", "1::2", "1-"
        fields++;
        if (*p != ':') break;
        p++;
    }
    return !*p && fields <= 3;
}

/* Check one value; message into msg. An empty value is no value: the line is an error, as in
 * configs ("slurm.time =" wrote "#SBATCH --time=", which sbatch refuses). */
static int check_slurm_value(const char *key, const char *v, char *msg, size_t len)
{
    if (!*v) {
        snprintf(msg, len, "empty value (remove the line for Slurm's default)");
        return 2;
    }
    if (!strcmp(key, "cpus_per_task") || !strcmp(key, "array_parallelism")) {
        char *end;
        const long n = strtol(v, &end, 10);
        if (*end || n < 1) { snprintf(msg, len, "must be an integer >= 1 (got '%s')", v); return 2; }
    } else if (!strcmp(key, "time")) {
        if (!slurm_time(v)) {
            snprintf(msg, len, "not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
                     "D-HH:MM:SS): '%s'", v);
            return 2;
        }
    } else if (!strcmp(key, "mem")) {
        char *end;
        strtol(v, &end, 10);
        if (end == v || (*end && strcmp(end, "K") && strcmp(end, "M") && strcmp(end, "G") && strcmp(end, "T"))) {
            snprintf(msg, len, "not a Slurm memory size (e.g. 4G, 500M): '%s'", v);
            return 2;
        }
    } else if (!strcmp(key, "partition") || !strcmp(key, "account")) {
        // one word of an #SBATCH line: sbatch splits the line at blanks, so "gpu --output=/x"
        // added an option (options of one's own go in slurm.extra); partitions: a list by ','
        const int list = !strcmp(key, "partition");
        const char *c = v;
        while (*c && (isalnum((unsigned char)*c) || strchr("._-", *c) || (list && *c == ',')))
            c++;
        if (!*v || *c) {
            snprintf(msg, len, "not a Slurm %s name (letters, digits, '.', '_', '-'%s): '%s'; "
                     "further sbatch options go in slurm.extra", key, list ? ", ','" : "", v);
            return 2;
        }
    }
    for (const char *c = v; *c; c++)
        if (*c == '\n' || *c == '`' || *c == '$') {
            snprintf(msg, len, "must not contain newlines, '`' or '$'");
            return 2;
        }
    return 0;
}

/* Write s as one word of sh: in single quotes, each ' as '\'' (docs/design.md §3). */
static void put_sh(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

/* Write s, then tail as it is, as one value of an #SBATCH line: sbatch's own parser takes
 * "..." with \\ escapes; in a file-name pattern (pattern = 1) a literal % of s is %%. */
static void put_sbatch(FILE *f, const char *s, int pattern, const char *tail)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if (pattern && *s == '%') fputc('%', f);
        fputc(*s, f);
    }
    fprintf(f, "%s\"\n", tail);
}

/* 0 when text can go into the script (no control character: a newline would end a comment
 * or an #SBATCH line and start a command); else 2 with err naming what. A backslash would
 * switch off Slurm's %A/%a in the output file name. */
static int script_safe(const char *what, const char *text, int pattern, char *err, size_t errlen)
{
    for (const char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || (pattern && *c == '\\')) {
            snprintf(err, errlen, "stability: %s '%.200s' cannot be written into a Slurm script "
                     "(it contains a %s)", what, text, *c == '\\' ? "backslash" : "control character");
            return 2;
        }
    return 0;
}

/* path made absolute against cwd (malloc'd), or NULL (out of memory). */
static char *absolute(const char *path, const char *cwd)
{
    char *out = malloc(strlen(cwd) + strlen(path) + 2);
    if (out && path[0] == '/') strcpy(out, path);
    else if (out) sprintf(out, "%s/%s", cwd, path);
    return out;
}

static int write_script(const sweep_t *s, const char *exe, const char *cwd, const char *sweep_file,
                        const char *results, char *script, size_t len, char *err, size_t errlen);

int sweep_slurm_write(const sweep_t *s, const char *exe, char *script, size_t len, char *err,
                      size_t errlen)
{
    for (int k = 0; k < s->nslurm; k++) {
        char msg[256];
        const int line = s->slurm_line[k];
        char where[4200];
        if (line > 0) snprintf(where, sizeof where, "%s:%d", s->path, line);
        else snprintf(where, sizeof where, "--set");
        if (!known_slurm_key(s->slurm_key[k])) {
            snprintf(err, errlen, "%s: slurm.%s: unknown key (partition, time, cpus_per_task, mem, "
                                  "array_parallelism, account, extra)", where, s->slurm_key[k]);
            return 2;
        }
        if (check_slurm_value(s->slurm_key[k], s->slurm_value[k], msg, sizeof msg)) {
            snprintf(err, errlen, "%s: slurm.%s: %s", where, s->slurm_key[k], msg);
            return 2;
        }
    }
    // every string the script carries: checked, then quoted for sh or for sbatch; the working
    // directory at any length (a 1 KB buffer made it '.' past 1023 characters)
    char *cwd = getcwd(NULL, 0);
    if (!cwd) {
        snprintf(err, errlen, "stability: cannot tell the working directory for the Slurm "
                 "script: %s", strerror(errno));
        return 1;
    }
    char *sweep_file = absolute(s->path, cwd), *results = absolute(s->results_dir, cwd);
    int rc = !sweep_file || !results;
    if (rc) snprintf(err, errlen, "stability: out of memory");
    else if (script_safe("the directory", cwd, 0, err, errlen) ||
             script_safe("the program", exe, 0, err, errlen) ||
             script_safe("the sweep file", sweep_file, 0, err, errlen) ||
             script_safe("the results directory", results, 1, err, errlen))
        rc = 2;
    if (!rc) rc = write_script(s, exe, cwd, sweep_file, results, script, len, err, errlen);
    free(cwd);
    free(sweep_file);
    free(results);
    return rc;
}

/* sweep_slurm_write once its strings are checked. 0, or 1 / 2 with err. */
static int write_script(const sweep_t *s, const char *exe, const char *cwd, const char *sweep_file,
                        const char *results, char *script, size_t len, char *err, size_t errlen)
{
    const int own = sweep_own_dir(s, err, errlen);   // results/<sweep>/ is this sweep's
    if (own) return own;
    snprintf(script, len, "%s/job.sbatch", s->results_dir);
    const int rc = fsutil_check_replaceable(script, err, errlen);   // never a link, FIFO, device
    if (rc) return rc;
    // written whole under a temporary name, then renamed: never truncated in place (a hard
    // link to the old script keeps it), never half-written
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", script, (long)getpid());
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        goto io;
    }
    const char *par = slurm_get(s, "array_parallelism", NULL);
    char job[160];
    snprintf(job, sizeof job, "stability-%s", s->name);
    fprintf(f, "#!/bin/bash\n");
    fprintf(f, "# Slurm job array for sweep %s (%d runs), written by `stability sweep %s --slurm`.\n",
            s->name, s->nruns, s->path);
    fprintf(f, "# Task i runs run i of the sweep; a complete run is never redone.\n");
    fprintf(f, "#SBATCH --job-name=");
    put_sbatch(f, job, 0, "");
    fprintf(f, "#SBATCH --array=0-%d%s%s\n", s->nruns - 1, par ? "%" : "", par ? par : "");
    fprintf(f, "#SBATCH --output=");
    put_sbatch(f, results, 1, "/slurm-%A_%a.out");
    fprintf(f, "#SBATCH --open-mode=append\n");
    fprintf(f, "#SBATCH --cpus-per-task=%s\n", slurm_get(s, "cpus_per_task", "1"));
    const char *opt;
    if ((opt = slurm_get(s, "time", NULL))) fprintf(f, "#SBATCH --time=%s\n", opt);
    if ((opt = slurm_get(s, "mem", NULL))) fprintf(f, "#SBATCH --mem=%s\n", opt);
    if ((opt = slurm_get(s, "partition", NULL))) fprintf(f, "#SBATCH --partition=%s\n", opt);
    if ((opt = slurm_get(s, "account", NULL))) fprintf(f, "#SBATCH --account=%s\n", opt);
    fprintf(f, "# USR1 to the task 120 s before the time limit (or on pre-emption notice): it\n"
               "# checkpoints and requeues itself; --requeue lets Slurm run it again.\n");
    fprintf(f, "#SBATCH --signal=B:USR1@120\n#SBATCH --requeue\n");
    if ((opt = slurm_get(s, "extra", NULL))) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", opt);
        for (char *save = NULL, *e = strtok_r(buf, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
            while (isspace((unsigned char)*e)) e++;
            if (*e) fprintf(f, "#SBATCH %s\n", e);
        }
    }
    fprintf(f, "\n# HDF5's file locking fails on many shared file systems (NFS, Lustre); each run\n"
               "# writes its own file, so locking is not needed.\n"
               "export HDF5_USE_FILE_LOCKING=FALSE\n");
    fprintf(f, "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}\n"
               "export OPENBLAS_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}\n");
    fprintf(f, "cd ");
    put_sh(f, cwd);
    fprintf(f, "\n# arrays larger than MaxArraySize are submitted in pieces with an index offset\n");
    fprintf(f, "exec ");
    put_sh(f, exe);
    fprintf(f, " sweep ");
    put_sh(f, sweep_file);
    fprintf(f, " --task $(( SLURM_ARRAY_TASK_ID + ${STABILITY_TASK_OFFSET:-0} ))\n");
    if (fclose(f) != 0 || fsutil_check_replaceable(script, err, errlen) || rename(tmp, script) != 0) {
        const int e = errno;
        unlink(tmp);
        errno = e;
        goto io;
    }
    return 0;
io:
    snprintf(err, errlen, "%s: cannot write the job script: %s", s->results_dir, strerror(errno));
    return 1;
}

/* MaxArraySize of the cluster (scontrol show config), or Slurm's default 1001. */
static int max_array_size(void)
{
    char out[65536];
    const char *const argv[] = {"scontrol", "show", "config", NULL};
    const proc_io_t io = {.out_fd = -1, .out = out, .outlen = sizeof out, .quiet = 1};
    int max = 1001;
    if (proc_run(argv, &io) == -1) return max;
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int v;
        if (sscanf(line, "MaxArraySize = %d", &v) == 1 && v > 1) max = v;
    }
    return max;
}

/* sbatch --parsable --array=SPEC --export=ALL,STABILITY_TASK_OFFSET=OFF script, without a shell
 * (the script's path holds the sweep's name, which may hold any character). */
static int submit_one(const char *script, const char *spec, int offset, int quiet)
{
    char array[SWEEP_SPEC_MAX + 16], export[64], out[256] = "";
    snprintf(array, sizeof array, "--array=%s", spec);
    snprintf(export, sizeof export, "--export=ALL,STABILITY_TASK_OFFSET=%d", offset);
    const char *const argv[] = {"sbatch", "--parsable", array, export, script, NULL};
    const proc_io_t io = {.out_fd = -1, .out = out, .outlen = sizeof out};
    const int status = proc_run(argv, &io);
    if (status == -1) { fprintf(stderr, "stability: cannot run sbatch: %s\n", strerror(errno)); return 1; }
    out[strcspn(out, ";\n")] = '\0';
    if (status != 0 || !out[0]) {
        fprintf(stderr, "stability: sbatch failed (status %d)%s\n", status,
                status == 127 << 8 ? ": sbatch not found (is this a Slurm login node?)" : "");
        return 1;
    }
    if (quiet) printf("%s\n", out);
    else printf("submitted job %s (array %s, index offset %d)\n", out, spec, offset);
    return 0;
}

int sweep_array_spec_next(const int *ids, int n, int *pos, char *spec, size_t len)
{
    size_t used = 0;
    int count = 0;
    spec[0] = '\0';
    while (*pos < n) {
        int end = *pos;   // ids[*pos..end] consecutive
        while (end + 1 < n && ids[end + 1] == ids[end] + 1) end++;
        char range[40];
        const int m = end > *pos ? snprintf(range, sizeof range, "%s%d-%d", used ? "," : "", ids[*pos], ids[end])
                                 : snprintf(range, sizeof range, "%s%d", used ? "," : "", ids[*pos]);
        if (used + (size_t)m + 1 > len) break;   // the next spec takes it
        memcpy(spec + used, range, (size_t)m + 1);
        used += (size_t)m;
        count += end - *pos + 1;
        *pos = end + 1;
    }
    return count;
}

int sweep_slurm_submit(const sweep_t *s, const char *script, int only_missing, int quiet)
{
    blascore_unpin_children();   // each task pins its own node's kernels; the first records them
    const int max = max_array_size();   // indices must be < max
    const char *par = slurm_get(s, "array_parallelism", NULL);
    int *ids = malloc((size_t)s->nruns * sizeof *ids);
    if (!ids) { fprintf(stderr, "stability: out of memory\n"); return 1; }
    int rc = 0, submitted = 0, wanted = 0;
    // chunk c holds runs [c·max, (c+1)·max); inside a chunk, array index = run − offset; the
    // indices of a chunk go out as ranges, in as many arrays as their specification needs:
    // never one dropped (docs/design.md §3)
    for (int offset = 0; offset < s->nruns && !rc; offset += max) {
        const int end = offset + max < s->nruns ? offset + max : s->nruns;
        int n = 0;
        for (int i = offset; i < end; i++)
            if (!only_missing || !sweep_run_complete(s, i)) ids[n++] = i - offset;
        wanted += n;
        for (int pos = 0; pos < n && !rc;) {
            char spec[SWEEP_SPEC_MAX];
            const int count = sweep_array_spec_next(ids, n, &pos, spec, sizeof spec - 16);
            if (count == 0) { rc = 1; break; }   // cannot happen: one range always fits
            if (par) snprintf(spec + strlen(spec), 16, "%%%s", par);
            rc = submit_one(script, spec, offset, quiet);
            if (!rc) submitted += count;
        }
    }
    free(ids);
    if (!rc && submitted != wanted) {
        fprintf(stderr, "stability: submitted %d of %d runs\n", submitted, wanted);
        rc = 1;
    }
    if (!rc && !submitted && !quiet) printf("nothing to submit: every run is complete\n");
    return rc;
}
