/* cli_table.c — `stability table STUDY FILE.h5... [--tsv]`: a study's tables, computed by its
 * analysis (study/study.h) from the runs of the files — the numbers the docs show. */
#include <stdio.h>
#include <string.h>
#include "study/study.h"
#include "cli/cli.h"

static void help_table(FILE *f)
{
    fputs("usage: stability table STUDY FILE.h5... [--tsv] [--common]\n"
          "\n"
          "Prints a study's tables (Markdown; --tsv: tab-separated, NaN as nan) from its runs (run\n"
          "files or merged sweep files; a run given twice counts once). A study that compares\n"
          "two sets (atlas-compare) takes two files, A.h5 B.h5, each read apart; --common: the\n"
          "runs both hold only, else files of other runs are refused. Studies:\n", f);
    for (const study_t *s = study_list(); s->name; s++) fprintf(f, "  %-18s %s\n", s->name, s->about);
}

int cli_table(int argc, char **argv)
{
    const char *files[256], *name = NULL;
    int nfiles = 0;
    study_format_t fmt = STUDY_MARKDOWN;
    int common = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help_table(stdout); return 0; }
        else if (!strcmp(a, "--tsv")) fmt = STUDY_TSV;
        else if (!strcmp(a, "--common")) common = 1;
        else if (a[0] == '-') return cli_usage_error("unknown option", a);
        else if (!name) name = a;
        else if (nfiles == 256) return cli_usage_error("table: more than 256 files", a);
        else files[nfiles++] = a;
    }
    if (!name) return cli_usage_error("table: missing STUDY (stability table --help lists them)", NULL);
    const study_t *s = study_find(name);
    if (!s) return cli_usage_error("table: no such study (stability table --help lists them)", name);
    if (!nfiles) return cli_usage_error("table: missing FILE.h5", NULL);
    if (s->compare && nfiles != 2)
        return cli_usage_error("table: this study compares two files: A.h5 B.h5", name);
    if (common && !s->compare)
        return cli_usage_error("table: --common is for a study that compares two files", name);
    char err[1024];
    if (s->files) {   // a study that reads its files itself (advise: advice files and runs)
        err[0] = '\0';
        const int rc = s->files(files, nfiles, fmt, stdout, err, sizeof err);
        if (rc) fprintf(stderr, "stability: table %s: %s\n", name, err[0] ? err : "failed");
        return rc;
    }
    plot_set_t set[2];
    const int nsets = s->compare ? 2 : 1;   // a comparison reads each file apart
    for (int k = 0; k < nsets; k++)
        if (plot_load(&set[k], s->compare ? files + k : files, s->compare ? 1 : nfiles, err,
                      sizeof err)) {
            fprintf(stderr, "stability: %s\n", err);
            if (k) plot_set_free(&set[0]);
            return 1;
        }
    err[0] = '\0';
    const int rc = s->compare ? s->compare(&set[0], &set[1], common, fmt, stdout, err, sizeof err)
                              : s->table(&set[0], fmt, stdout, err, sizeof err);
    for (int k = 0; k < nsets; k++) plot_set_free(&set[k]);
    if (rc) fprintf(stderr, "stability: table %s: %s\n", name, err[0] ? err : "failed");
    return rc;
}
