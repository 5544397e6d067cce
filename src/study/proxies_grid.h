/* proxies_grid.h — the size study of Wortsman et al. 2023, "Small-scale proxies for large-scale
 * Transformer training instabilities" (docs/proxies.md): training runs of several widths at
 * several learning rates, read into one grid by what their configs say, and the study's numbers,
 * computed once here for its four figures (study/proxies_figure.c) and its tables (study/proxies.c;
 * tests/test_proxies_plot.py recomputes them from the files).
 *
 * The grid's axes: a *context* (what sets a row of panels apart: the block, the depth, any other
 * key that differs and is no remedy; one empty context when nothing does), an *arm* (the remedy:
 * the parametrization, an optimizer other than Adam (Muon), QK-norm, the z-loss, the soft-cap),
 * the width d (with the keys that follow
 * it: heads, d_ff), the learning rate and the seed. */
#ifndef STABILITY_STUDY_PROXIES_GRID_H
#define STABILITY_STUDY_PROXIES_GRID_H

#include "report/plot_internal.h"

#define SIZE_CTX 4      /* contexts (rows of panels) */
#define SIZE_ARMS 8     /* arms (remedies) */
#define SIZE_WIDTHS 8
#define SIZE_LRS 16
#define SIZE_SEEDS 16

typedef struct {
    int nc, na, nw, nl, nk;
    char ctx[SIZE_CTX][200];    /* the context in words ("today's block"; "" when one) */
    char arm[SIZE_ARMS][120];   /* the arm in words, the same in every context ("standard + QK-norm") */
    char rem[SIZE_ARMS][120];   /* its remedies without the parametrization ("" for none) */
    int mup[SIZE_ARMS];         /* the arm is μP */
    int opt[SIZE_ARMS];         /* the arm's optimizer is no Adam (Muon, Lion …): its own arm */
    int partner[SIZE_ARMS];     /* the arm of the other parametrization with the same remedies, or −1 */
    int rep[SIZE_CTX][SIZE_ARMS];   /* a run of the panel (index into the set), or −1 */
    int block;                  /* the contexts differ by the block (positions, activation, bias, norm) */
    char by[48];                /* what the contexts differ by, for a file name: "block", "layers" */
    int scheme_by_block;        /* the scheme differs only by the blocks' norms (one placement) */
    int qk_generic;             /* QK-norm of the blocks' own norms is one arm ("QK-norm") */
    double width[SIZE_WIDTHS], lr[SIZE_LRS], seed[SIZE_SEEDS];   /* ascending */
    double plateau[SIZE_CTX];   /* the unigram entropy the context's text runs record, or NaN */
    plot_diff_t all;            /* every item that differs between the study's runs */
    int first;                  /* a run of the study (for what they share) */
    int *m, n;                  /* the study's runs */
    int *ctx_of;                /* (n) each run's context */
    double *final;              /* [c][a][w][l][k] the last validation loss (NaN: diverged, none) */
    double *loss0;              /* the loss at update 1 */
    double *logit;              /* the peak max |attention logit| over the updates (NaN: none) */
    char *diverged, *ran;
} size_study_t;

#define SIZE_IX(s, c, a, w, l, k) \
    (((((size_t)(c) * (s)->na + (a)) * (s)->nw + (w)) * (s)->nl + (l)) * (s)->nk + (k))

/* Read the training runs of set into st: 1 when they form a size study (several widths, each at
 * several learning rates, in some arm), 0 when not, −1 with why (for a note) when they do but
 * cannot be drawn (two runs in one cell, more contexts or arms than the figures hold). */
int size_study_read(const plot_set_t *set, size_study_t *st, char *why, size_t len);

void size_study_free(size_study_t *st);

/* One seed's LR sensitivity at one width (plot_lr_sensitivity over the lrs it ran; NaN when
 * it finished at none). */
double size_sensitivity(const size_study_t *st, int c, int a, int w, int k);

/* The seeds' LR sensitivities at one width: their mean, its 95 % half-width (Student t; NaN with
 * one seed) and how many. */
void size_sensitivity_ci(const size_study_t *st, int c, int a, int w, double *mean, double *half,
                         size_t *n);

/* One seed's best learning rate at one width: the grid's minimum of min(final, initial loss)
 * (a diverged run its initial loss) refined by the vertex of the parabola through it and its two
 * neighbours in log10 lr; *edge when the minimum is the grid's first or last lr run (then that
 * lr). NaN when the seed ran at no lr. */
double size_best_lr(const size_study_t *st, int c, int a, int w, int k, int *edge);

/* One seed's spread of the best lr over the arm's widths (max − min of log10 lr*, decades); NaN
 * when the seed misses a width. */
double size_best_lr_seed_spread(const size_study_t *st, int c, int a, int k);

/* Per seed, the spread of the best lr over the widths (max − min of log10 lr*, decades; seeds
 * that ran at every width): its mean and 95 % half-width over the seeds, and how many. */
void size_best_lr_spread(const size_study_t *st, int c, int a, double *mean, double *half,
                         size_t *n);

/* The final losses of the seeds that finished at one (width, lr): their mean and 95 %
 * half-width; *div: some seed diverged there; *ran: how many seeds ran. */
double size_final_ci(const size_study_t *st, int c, int a, int w, int l, double *half, int *div,
                     int *ran);

/* The seeds' peak attention logits at one (width, lr): their median, and their least and most. */
double size_logit_median(const size_study_t *st, int c, int a, int w, int l, double *lo,
                         double *hi);

/* What the study's runs share, for a subtitle (gnuplot enhanced text): the words of
 * PLOT_SHARED_TRAIN that do not vary; on a line of its own the block and its d_ff (each
 * context's when the blocks differ), the widths' d_head, μP's base width; then extra (plain text,
 * '\n' a line break: what the figure draws). */
void size_subtitle(const plot_set_t *set, const size_study_t *st, const char *bars, char *buf,
                   size_t len);

/* A panel's title of context c and arm a (plain text): the context on a line of its own when
 * several ("today's block\nstandard + QK-norm"), then the arm in its own runs' words (QK-RMSNorm
 * where its QK-norm is RMSNorm). */
void size_panel_title(const plot_set_t *set, const size_study_t *st, int c, int a, char *buf,
                      size_t len);

/* Append plain text to buf as gnuplot enhanced text (plot_enh), its '\n' kept as line breaks. */
void size_enh_lines(const char *plain, char *buf, size_t len);

#endif
