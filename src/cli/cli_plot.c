/* cli_plot.c — `stability plot`: every figure the result files support, drawn by gnuplot
 * (report/plot.h; the table of figures: study/figures.h; docs/design.md §3). */
#include <stdio.h>
#include <string.h>
#include "report/plot.h"
#include "study/figures.h"
#include "cli/cli.h"

static const char *HELP_PLOT =
    "usage: stability plot FILE.h5... [--out DIR] [--format png,pdf,svg,gp] [--seed-lines]\n"
    "                            [--quiet]\n"
    "\n"
    "Draws, with gnuplot, every figure the files support (run files or merged sweep files):\n"
    "gradient vs layer (Fig. 3a,b), gradient vs depth with fitted exponents and theory\n"
    "(Fig. 3c,d), gradient vs width with Theorem 1's curves, Jacobian norms (Lemma 3),\n"
    "hidden-state norms (Lemma 2), training and validation loss, BLEU, the masked-LM loss;\n"
    "the gradient at every sub-layer's output (Liu et al.), per stack for an encoder-decoder;\n"
    "the output change vs depth and DeepNet's model update; the training dynamics' heat maps\n"
    "and lines; the atlas's final loss vs lr, LR sensitivity and every scheme's gradient.\n"
    "Titles, subtitles and keys say what the runs share and what tells them apart, from their\n"
    "configs (a sweep file's [sweep] title = ... titles its figures). A run given twice (the\n"
    "same file twice, a merged file with its run files) counts once. A figure with nothing\n"
    "finite to draw is skipped with a note.\n"
    "Files: DIR/<first file's name>-<figure>.<format>.\n"
    "  --out DIR       output directory (default plots/)\n"
    "  --format LIST   comma-separated: png, pdf, svg, gp (the gnuplot script, data inline)\n"
    "                  (default png,pdf)\n"
    "  --seed-lines    a thin line per seed under the mean at any number of seeds (default:\n"
    "                  up to 3 seeds; more get a 95% band)\n";

int cli_plot(int argc, char **argv)
{
    const char *dir = "plots", *formats = "png,pdf";
    const char *files[256];
    int nfiles = 0, quiet = 0, seed_lines = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(HELP_PLOT, stdout); return 0; }
        else if (!strcmp(a, "--out") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(a, "--format") && i + 1 < argc) formats = argv[++i];
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = 1;
        else if (!strcmp(a, "--seed-lines")) seed_lines = 1;
        else if (a[0] == '-') return cli_usage_error("unknown option", a);
        else if (nfiles == 256) return cli_usage_error("plot: more than 256 files", a);
        else files[nfiles++] = a;
    }
    if (!nfiles) return cli_usage_error("plot: missing FILE.h5", NULL);
    char ferr[160];
    if (cli_check_out("--out", dir)) return 2;
    if (plot_check_formats(formats, ferr, sizeof ferr)) return cli_usage_error(ferr, NULL);
    plot_set_t set;
    char err[1024], prefix[256];
    if (plot_load(&set, files, nfiles, err, sizeof err)) {
        fprintf(stderr, "stability: %s\n", err);
        return 1;
    }
    set.seed_lines = seed_lines;
    const char *b = strrchr(files[0], '/');
    snprintf(prefix, sizeof prefix, "%s", b ? b + 1 : files[0]);
    char *dot = strrchr(prefix, '.');
    if (dot) *dot = '\0';
    const int n = plot_draw_all(&set, study_figures(), dir, prefix, formats, quiet, err, sizeof err);
    plot_set_free(&set);
    if (n < 0) {
        fprintf(stderr, "stability: %s\n", err);
        return n == -2 ? 2 : 1;
    }
    if (n == 0) {
        fprintf(stderr, "stability: nothing to plot in these files\n");
        return 1;
    }
    return 0;
}

