/* atlas.h — the stability atlas's statistics (docs/design.md §6d), computed once from the table
 * of runs (report/runs.h): per scheme, depth and variant, with warm-up and without, Wortsman et
 * al. 2023's LR sensitivity, the best final loss and its lr, the runs that diverged, the largest
 * lr that trains, and whether the scheme needs warm-up there. `stability table atlas` prints
 * them; the atlas's figures (study/atlas_figure.c) draw the same sensitivity. */
#ifndef STABILITY_STUDY_ATLAS_H
#define STABILITY_STUDY_ATLAS_H

#include <stdio.h>
#include "report/runs.h"
#include "study/study.h"

/* The atlas's "trains" threshold in nats, passed to runs_outcome (the one rule): the published
 * tables' 3.2 (the byte-level LM sits on its unigram plateau at about 3.5). */
#define ATLAS_TRAINS 3.2

/* Wortsman et al. 2023's LR sensitivity of n runs over a learning-rate grid: the mean of
 * min(final, loss0) − min final (a diverged run, final NaN, counts as loss0); NaN when none
 * finished. The atlas's, the size study's and their figures' one definition (§6c). */
double plot_lr_sensitivity(const double *final, const double *loss0, int n);

/* One half of a row (the runs with warm-up, or those without). */
typedef struct {
    int runs;             /* runs in the half, every seed */
    double sens, half;    /* LR sensitivity (the seeds' mean), its 95 % half-width (NaN: 1 seed) */
    double best, best_lr; /* the best final loss (of the lrs' means over seeds) and its lr; NaN */
    double top;           /* the largest lr that trains (of the means); 0 when none */
    int diverged;         /* runs that diverged, every seed */
} atlas_half_t;

/* One line of the table: a scheme, a depth and a variant (the keys that differ besides the
 * atlas's axes, and the warm-ups when there are several), its two halves and the verdict. */
typedef struct {
    char scheme[32];
    int L;
    char label[240];      /* "" for the standard atlas, else "warm-up 20", "float32" … */
    atlas_half_t warm, cold;
    const char *needs;    /* "yes", "no", "trains at no lr", or "—" when a half was not run */
    int seeds, agree;     /* seeds in the row; how many reach `needs` alone */
} atlas_row_t;

typedef struct {
    atlas_row_t *rows;
    int n, seeds;         /* rows; the most seeds of a row */
} atlas_table_t;

/* One seed's half from its runs r[0..n) (any order; each row's trains by runs_outcome): LR
 * sensitivity (plot_lr_sensitivity over the lrs), best final loss and lr, diverged, top. */
void atlas_half_one(const runs_row_t *const *r, int n, atlas_half_t *h);

/* A line's seeds one by one (a line: one cell and arm's runs r[0..n), every lr and seed): each
 * seed's own η_max (atlas_half_one on its runs) into tops[k] for seeds[k] (NaN where it ran
 * nothing), and into *half the 95 % Student-t half-width over the seeds of the final loss at
 * best_lr (fit_mean_ci; NaN unless a seed ran it). 0; 1 out of memory. */
int atlas_seed_tops(const runs_row_t *const *r, int n, const unsigned long *seeds, int nk,
                    double best_lr, double *tops, double *half);

/* Whether a scheme needs warm-up (Xiong et al. 2020, §3): it trains at a larger lr with it
 * than without; "trains at no lr" when it trains at none either way. */
const char *atlas_needs(const atlas_half_t *warm, const atlas_half_t *cold);

/* The statistics of one line from its runs with warm-up w[0..nw) and without c[0..nc), over
 * every seed among them: one seed, atlas_half_one of each half; several, the sensitivity is the
 * seeds' mean ± 95 % half-width (fit_mean_ci) and best, top and the verdict come from each lr's
 * mean over the seeds (runs_grid; NaN when a seed diverged there). 0, or 1 with why (two runs
 * of one lr at one seed). */
int atlas_row_stats(const runs_row_t *const *w, int nw, const runs_row_t *const *c, int nc,
                    atlas_row_t *row, char *why, size_t len);

/* The atlas's lines from the training runs of set, in the table's order (schemes by the scheme
 * table, depths up, variants as met; the longest warm-up first). 0; 1 with why. */
int atlas_build(const plot_set_t *set, atlas_table_t *a, char *why, size_t len);

/* Free what atlas_build allocated. */
void atlas_free_table(atlas_table_t *a);

/* Print a as Markdown (the docs' table and its seeds note) or TSV (a row per line). */
void atlas_print(const atlas_table_t *a, study_format_t fmt, FILE *out);

/* The study's entry in study.c: `stability table atlas FILE.h5...`. */
int study_atlas_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                      size_t errlen);

/* `stability table atlas-compare A.h5 B.h5 [--common]` (study/atlas_compare.c): the runs paired
 * by their cell from the config (scheme without today's block's norm, depth, lr, warm-up, seed);
 * the final losses' median and largest |B − A|, the runs that diverged in one only, the lines
 * whose verdict moves, and per depth and warm-up Spearman's ρ of the schemes' order by LR
 * sensitivity (TSV: that last table only). 1 with err when the files do not hold the same
 * cells; with common, the cells both hold are compared (1 when none). */
int study_atlas_compare(const plot_set_t *a, const plot_set_t *b, int common, study_format_t fmt,
                        FILE *out, char *err, size_t errlen);

#endif
