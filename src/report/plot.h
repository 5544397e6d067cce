/* plot.h — the paper's figures from result files, drawn by gnuplot through a pipe.
 *
 * Figures are chosen from what the files hold (docs/design.md §1):
 *   grad_vs_layer  Fig. 3(a,b)  ‖E_batch ∇W¹‖, ‖E_batch ∇W²‖ per layer, Post- vs Pre-LN
 *   grad_vs_depth  Fig. 3(c,d)  last layer's gradient vs L, log-log, fitted exponent + theory
 *   grad_vs_width  Theorem 1    gradient vs d with d·√(ln d) (Post) and d·√(ln d/L) (Pre)
 *   jacobian       Lemma 3      ‖J‖₂ per layer beside √d/‖x−μ‖
 *   hidden_norms   Lemma 2      E‖x‖²/d per layer beside the lemma's value and bounds
 *   loss           Fig. 2       training loss vs update per configuration, diverged runs marked,
 *                               lr panel
 *   grad_vs_layer_encdec, subout, val_loss   the encoder–decoder's (docs/design.md §6b)
 *   bleu           Fig. 2, 4    BLEU vs epochs, seeds as bands, the epoch reaching a BLEU (§6e)
 *   atlas_*, model_update        the schemes' measures and the atlas (§6c, §6d)
 *   mlm_val_loss   Fig. 5       validation masked-LM loss vs updates, seeds as bands (§6e, §6f)
 *   est_density, est_critical    the SLQ density of H by update, the critical sharpness against
 *                               the exact curvature over training (study/estimators_figure.c;
 *                               docs/estimators.md)
 *   warmup_indicators            each explanation of warm-up's indicator against the atlas's
 *                               outcome (docs/curvature.md; study/warmup_figure.c)
 * The data reach gnuplot as inline data blocks; nothing is left on disk but the figures.
 * Titles, subtitles and keys say what the runs share and what tells them apart, from their
 * configs (report/plot_label.h); colours and layout: plot_palette.h, plot_layout.h
 * (docs/design.md §6j).
 */
#ifndef STABILITY_PLOT_H
#define STABILITY_PLOT_H

#include <stddef.h>
#include "config/config.h"
#include "measure/probe.h"
#include "util/sbuf.h"

/* The training dynamics of a run (report/plot_columns.c; docs/design.md §6g): NULL arrays
 * where the file predates a column. */
typedef struct plot_dyn {
    size_t nsteps;           /* rows of the per-update columns */
    double *max_logit, *min_entropy;   /* (nsteps) max |attention logit|, lowest entropy */
    int L;                   /* layer rows */
    size_t nprobe, nupdate;  /* probe rows, model-update rows */
    double *probe_step, *update_step;  /* (nprobe), (nupdate) */
    double *grad;            /* (nprobe,L) ‖∇‖_F of each layer's tensors together */
    double *entropy;         /* (nprobe,L) mean self-attention entropy over heads */
    double *logit;           /* (nprobe,L) max |attention logit| over heads */
    double *update;          /* (nupdate,L) mean ‖ΔW‖/‖W‖ over the layer's matrices */
    double *grad_w2;         /* (nprobe,L) ‖∂L/∂W²‖_F of each layer's FFN (Fig. 3's quantity) */
    double wall;             /* /train/time's last row: seconds the run took, NaN without */
} plot_dyn_t;

/* One run as read from a file (a single-run file, or /runs/NAME of a merged sweep). */
typedef struct {
    char name[160];          /* run name, or the file's basename */
    char origin[400];        /* where it was read: "FILE" or "FILE:/runs/NAME" */
    config_t cfg;            /* from the run's resolved `config` attribute */
    char data_id[100];       /* the data's identity, "SHA256:BYTES" (root attributes data_sha256,
                                data_bytes), or "" in a file that predates them */
    char sweep_title[256];   /* the sweep file's [sweep] title (/sweep@title of a merged file) */
    char status[32];
    probe_t *probe;          /* NULL without /probe */
    size_t nsteps;           /* training log length (0 without /train) */
    double *step, *loss, *lr;/* (nsteps) */
    size_t nevals;           /* validation rows (0 without /train/val_loss) */
    double *eval_step, *val_loss;   /* (nevals) */
    size_t nupdates;         /* model-update rows (0 without /train/model_update) */
    double *update_step, *model_update;  /* (nupdates) DeepNet's ‖F(x,θ_t) − F(x,θ_0)‖ */
    size_t nbleu;            /* BLEU rows (0 without /train/bleu) */
    double *bleu_step, *bleu;/* (nbleu) train.bleu_every's BLEU */
    double epoch_batches;    /* updates per epoch (translation by length), or NaN */
    double diverged_at;      /* step, or NaN */
    double unigram;          /* /train@unigram_entropy: a text run's plateau (nats), or NaN */
    double sec_per_update;   /* /train/time's last row over its step (wall seconds an update,
                                every measurement of the run included), or NaN without it */
    plot_dyn_t *dyn;         /* the training dynamics, or NULL without /train */
    struct plot_ind *ind;    /* warm-up's indicators of a run with curvature rows
                                (report/plot_columns.c), or NULL */
    struct plot_curv *curv;  /* the curvature rows (report/plot_curvature.c), or NULL */
    struct plot_est *est;    /* the estimators' columns (report/plot_columns.c), or NULL */
    struct plot_prec *prec;  /* the precision measures (report/plot_precision.c), or NULL */
} plot_run_t;

typedef struct {
    plot_run_t *runs;
    int n;
    int seed_lines;          /* 1: a line per seed at any number of seeds (plot --seed-lines);
                                0: at up to PLOT_SEED_LINES (report/plot_band.h) */
} plot_set_t;

/* Read every run of every file. A run is identified by its resolved config without the output
 * keys, its seed and its data (plot_same_run): one given twice (the same file twice, a merged
 * file with its own run files) is read once, and one line on stderr says so. A run without
 * /train/step keeps no training curve (a note on stderr). Returns 0, or 1 with err set
 * (unreadable file, no runs). */
int plot_load(plot_set_t *set, const char *const *files, int nfiles, char *err, size_t errlen);

/* Whether a and b are one run: the same resolved config (output keys and train.resume aside,
 * init.seed and train.precision included) and, where both files record it, the same data. */
int plot_same_run(const plot_run_t *a, const plot_run_t *b);

/* Free what plot_load allocated. */
void plot_set_free(plot_set_t *set);

/* 0 when formats is a comma-separated list of png, pdf, svg and gp (the gnuplot script itself,
 * its data inline: `gnuplot F.gp > F.png` draws the PNG), with no empty item ('' would draw
 * nothing and succeed); else 2 with err. */
int plot_check_formats(const char *formats, char *err, size_t errlen);

/* Write one figure's script: returns 1 and fills name when the runs support the figure, 0
 * when they do not; −1 when they do but it would have nothing to draw (no finite value: a run
 * that diverged at once, every max logit 0), name then "figure: why" (plot_draw_all notes it
 * on stderr and goes on: never an error). */
typedef int (*plot_figure_fn)(const plot_set_t *set, sbuf_t *script, char *name, size_t len);

/* A row of a table of figures: post_pre 1 for a figure comparing Post-LN with Pre-LN, which a
 * set of three or more schemes (an atlas) does not get. The table is given to plot_draw_all by
 * the layer above (study/figures.h), so the machinery here knows no study (docs/design.md §2). */
typedef struct {
    plot_figure_fn fn;   /* NULL ends the table */
    int post_pre;
} plot_figure_t;

/* Draw every figure of the table figs (in its order) the runs support into
 * dir/<prefix>-<figure>.<fmt> for each format of the comma-separated list formats (png, pdf,
 * svg, gp). Prints each file written unless quiet; a figure whose data hold no finite value (a
 * run that diverged at once) is skipped with a note on stderr, never an error; one gnuplot
 * fails on is said and the later ones still drawn. Returns the number of figures the runs
 * support (drawn or skipped so), or −1 with err set (gnuplot missing or failing on a figure:
 * the first one's error), or −2 (dir not a directory, an output path that is not a regular
 * file: a usage error). */
int plot_draw_all(const plot_set_t *set, const plot_figure_t *figs, const char *dir,
                  const char *prefix, const char *formats, int quiet, char *err, size_t errlen);

#endif
