/* study.h — the studies' analyses: each study (docs/design.md §6d, "A study is a unit") reads
 * the table of runs of its sweep (report/runs.h), computes its statistics once, in C, and prints
 * its tables; its figures are drawn from the same statistics. `stability table STUDY FILE.h5...`
 * prints a study's tables (cli/cli_table.c); the docs' numbers are its output. */
#ifndef STABILITY_STUDY_H
#define STABILITY_STUDY_H

#include <stdio.h>
#include "report/plot.h"

/* How a table is printed: Markdown for the docs, or TSV (a header line, one row per line, NaN
 * as "nan") for other tools. */
typedef enum { STUDY_MARKDOWN, STUDY_TSV } study_format_t;

typedef struct {
    const char *name;    /* the verb's STUDY, e.g. "atlas" */
    const char *about;   /* one line for `stability table --help` */
    /* Print the study's tables of the runs in set to out. Returns 0, 1 with err set when the
     * runs are not the study's (a missing cell, a run it cannot place), 2 with err for a bad
     * option value. */
    int (*table)(const plot_set_t *set, study_format_t fmt, FILE *out, char *err, size_t errlen);
    /* Or, for a study of two sets (table NULL): print how b differs from a, each set read from
     * one file apart (a run in both is in each); common: the runs both hold only (--common),
     * else sets of other runs are refused. Returns as table. */
    int (*compare)(const plot_set_t *a, const plot_set_t *b, int common, study_format_t fmt,
                   FILE *out, char *err, size_t errlen);
    /* Or, for a study whose inputs are not all runs (table and compare NULL): print its tables
     * of the files themselves (advise: advice files beside outcome runs). Returns as table. */
    int (*files)(const char *const *files, int nfiles, study_format_t fmt, FILE *out, char *err,
                 size_t errlen);
} study_t;

/* The study called name, or NULL. */
const study_t *study_find(const char *name);

/* Every study, ending with an entry whose name is NULL. */
const study_t *study_list(void);

/* The exact (Clopper–Pearson) 1 − alpha interval of a binomial proportion k of n into *lo, *hi
 * (Clopper & Pearson 1934: the Beta(k, n − k + 1) and Beta(k + 1, n − k) quantiles; 0 at k = 0,
 * 1 at k = n); NaN both when n = 0. */
void study_clopper_pearson(int k, int n, double alpha, double *lo, double *hi);

#endif
