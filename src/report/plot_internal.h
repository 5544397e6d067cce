/* plot_internal.h — shared between plot.c (loading, gnuplot pipe) and plot_figs.c (figures). */
#ifndef STABILITY_PLOT_INTERNAL_H
#define STABILITY_PLOT_INTERNAL_H

#include <stddef.h>
#include "report/plot.h"
#include "util/sbuf.h"
#include "io/h5io.h"

/* The gnuplot script with its inline data blocks: a growing sbuf_t (util/sbuf.h). */
/* ---- plot_style.c: shared by the figures ---- */

#define PLOT_MAX_SERIES 16
#define PLOT_NCOLORS 8
#define PLOT_ATLAS_MAX 32   /* schemes, depths, learning rates of the atlas's figures */
extern const char *const PLOT_COLORS[PLOT_NCOLORS];

/* The line of Xiong et al. 2020 stated for the run's scheme (scheme_theory_t: Post-LN's,
 * Pre-LN's or none): the lemmas' and Theorem 1's figures draw only runs with one. */
int plot_theory(const plot_run_t *r);

/* The point type of the run's family (config/scheme.h): Post-LN-like circles, Pre-LN-like
 * squares, norm-free triangles, mixed diamonds. */
int plot_point_type(const plot_run_t *r);

/* Column of a layer tensor ("w2") / a hidden-state site ("resid1") in a probe, or −1. */
int plot_param_col(const plot_run_t *r, const char *name);
int plot_site_col(const probe_t *p, const char *name);

/* The run's colour: its family's shade number rank_in_family (Post-LN-like warm from Post-LN's
 * red, Pre-LN-like cold from Pre-LN's blue, norm-free and mixed their own). */
const char *plot_run_color(const plot_run_t *r, int rank_in_family);

/* in as literal text inside a single-quoted gnuplot string in enhanced mode. */
void plot_escape_name(const char *in, char *out, size_t len);

/* "Post-LN (RMSNorm)", "deepnorm", or "Post-LN: name" (with_name) for a legend. */
void plot_run_label(const plot_run_t *r, int with_name, char *buf, size_t len);

/* What the n configurations (first runs m[]) of a training figure ask, for its title after
 * "Validation loss": warm-up within one scheme is Fig. 2's question (" with and without
 * warm-up (Fig. 2)"); warm-up only between schemes, Post-LN with and Pre-LN without, is §4.1's
 * (": each scheme with or without warm-up (Fig. 4)"); else "". */
const char *plot_warmup_question(const plot_set_t *set, const int *m, int n);

/* Index of name in names[*n], appended when absent; -1 when PLOT_ATLAS_MAX are taken. */
int plot_intern_name(char names[][32], int *n, const char *name);

/* Index of v in vals[*n], appended when absent (callers sort after); -1 when full. */
int plot_intern_value(double *vals, int *n, double v);

/* qsort's comparison of two doubles (of rows whose first column is a double). */
int plot_cmp_double(const void *a, const void *b);

/* Sort names[0..n) (and m with them, unless NULL) into the atlas's order (scheme_rank: the
 * scheme table's rows, names of no row after them): a stable insertion sort, n is a dozen. */
void plot_sort_schemes(char names[][32], int *m, int n);

/* A scheme's colour, the same in every figure: its row's (config/scheme.c); a name of no row
 * takes the rows' colours in turn by its index i in the figure. */
const char *plot_scheme_color(const char *name, int i);

/* Whether the runs m[0..n) share one optimizer (else each curve's key names its own: Fig. 2(b),
 * SGD beside Adam). */
int plot_same_optimizer(const plot_set_t *set, const int *m, int n);

/* An optimizer as a legend names it: "Adam", "SGD". */
const char *plot_optimizer_label(optimizer_t o);

/* A training run's legend from what tells it apart from the others (m[0..n)): "Post-LN, no
 * warm-up", "deepnorm, warm-up 100, lr 0.003" (lr only when the runs' differ), "Post-LN, SGD,
 * no warm-up" (the optimizer only when the runs' differ), the run's name when two runs agree
 * in all of these. */
void plot_train_label(const plot_set_t *set, const int *m, int n, int i, char *buf, size_t len);

/* "; not drawn: deepnorm, admin (WHAT is stated for Post-LN and Pre-LN)" for the members
 * m[0..n) whose scheme has no line of the paper; "" when every member has one. */
void plot_skipped_note(const plot_set_t *set, const int *m, int n, const char *what, char *buf,
                       size_t len);

/* "Zipf(1.1) tokens", "translation task", … (+ ", untied output"). */
void plot_data_text(const config_t *c, char *buf, size_t len);

/* Probe runs of arch with the most common (d, L) into members; returns the count. */
int plot_pick_layer_group(const plot_set_t *set, arch_t arch, int *members);

/* Rank of member k among those of its family (for colours); whether two members' legends
 * would read the same (then they need run names). */
int plot_family_rank(const plot_set_t *set, const int *members, int n, int k);
int plot_labels_need_names(const plot_set_t *set, const int *members, int n);

/* Data block $name: rows "l+1 mean ci" over L layer rows of column k of width K (over S seeds). */
void plot_block_per_layer(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                          int k, double scale);

/* The same with an empty line before row split (> 0): gnuplot does not join the two parts
 * (an encoder's last layer and a decoder's first). */
void plot_block_split(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                      int k, double scale, int split);

/* "d = …, d_ff = …, L = … (or N-M encoder–decoder), data, seeds × batches, bars: 95% CI". */
void plot_subtitle(const plot_run_t *r, char *buf, size_t len);

/* Write one figure's script: returns 1 and fills name when the runs support the figure,
 * 0 otherwise. */
typedef int (*plot_figure_fn)(const plot_set_t *set, sbuf_t *script, char *name, size_t len);

int plot_fig_grad_vs_layer(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_grad_vs_depth(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_grad_vs_width(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_grad_ratio(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_jacobian(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_hidden_norms(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_loss(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_grad_vs_layer_encdec(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_subout(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_val_loss(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* BLEU against epochs of the runs that logged /train/bleu (plot_bleu.c). */
int plot_fig_bleu(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_atlas_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_atlas_sensitivity(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
/* Every scheme side by side (plot_schemes.c): gradient per layer at initialisation, output
 * change vs depth, DeepNet's model update. */
int plot_fig_atlas_grad(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_output_change(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_model_update(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_mlm(const plot_set_t *set, sbuf_t *s, char *name, size_t len);   /* plot_mlm.c */
int plot_fig_dyn_grad(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_update(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_entropy(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_logit(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_lines(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* ---- plot_dynamics.c: reading a run's dynamics (plot.c's loader calls them) ---- */

/* Read the dynamics of the run at prefix of f into r->dyn (left NULL when out of memory). */
void plot_dyn_load(struct h5io_file *f, const char *prefix, plot_run_t *r);

/* Free r->dyn's arrays and itself. */
void plot_dyn_free(plot_dyn_t *d);

/* ---- plot_atlas.c: the stability atlas ---- */

/* Wortsman et al.'s LR sensitivity of n runs over a learning-rate grid: mean of
 * min(final, loss0) − min final (a diverged run, final NaN, counts as loss0). */
double plot_lr_sensitivity(const double *final, const double *loss0, int n);

/* Send script to gnuplot once per format into dir/name.<fmt> (gnuplot writes to its standard
 * output, which is the file). 0, or −1 (gnuplot failed) / −2 (an output that is not a regular
 * file, an unknown format) with err set. */
int plot_render(const char *script, const char *dir, const char *name, const char *formats,
                int quiet, char *err, size_t errlen);

#endif
