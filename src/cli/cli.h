/* cli.h — the verbs of the command line that parse their own arguments, one file each
 * (docs/design.md §3); main.c keeps the verb table and the options of the config verbs. Each
 * takes main's argc and argv (argv[1] the verb) and returns the exit code: 0 success, 1 a
 * runtime failure, 2 bad usage. */
#ifndef STABILITY_CLI_H
#define STABILITY_CLI_H

/* Print "stability: msg: arg" and the --help hint on stderr; returns 2 (bad usage). */
int cli_usage_error(const char *msg, const char *arg);

/* 0 when path can be an output file name (not empty, shorter than 1024: nothing truncated
 * it); else a usage error (2) naming opt. */
int cli_check_out(const char *opt, const char *path);

/* Check sets[nsets], the value of a --set (next: the word after it, or NULL): a usage error (2)
 * when it has no '=' (with the hint --set KEY=NEXT); when it sets a key one of sets[0..nsets)
 * already set, a line on stderr says that the later replaces the earlier (it does: config_load
 * applies them in order); else 0. */
int cli_check_set(const char *const *sets, int nsets, const char *next);

/* stability info FILE.h5... [--all] [--schemes] [--train] (cli_info.c). */
int cli_info(int argc, char **argv);

/* stability plot FILE.h5... [--out DIR] [--format LIST] [--quiet] (cli_plot.c). */
int cli_plot(int argc, char **argv);

/* stability table STUDY FILE.h5... [--tsv] (cli_table.c). */
int cli_table(int argc, char **argv);

/* stability sweep FILE [--jobs N] [--dry-run] [--task I] [--merge] [--slurm ...] (cli_sweep.c). */
int cli_sweep(int argc, char **argv);

#endif
