/* plot_internal.h — shared between plot.c (loading, gnuplot pipe) and the figures. Every figure
 * takes its title, subtitle and keys from report/plot_label.h, its colours from
 * report/plot_palette.h and its layout and ranges from report/plot_layout.h (docs/design.md
 * §6j); the helpers here put them together. */
#ifndef STABILITY_PLOT_INTERNAL_H
#define STABILITY_PLOT_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include "report/plot.h"
#include "report/plot_label.h"
#include "report/plot_layout.h"
#include "report/plot_palette.h"
#include "util/sbuf.h"
#include "io/h5io.h"

#define PLOT_MAX_SERIES 16
#define PLOT_ATLAS_MAX 32   /* schemes, depths, learning rates of the atlas's figures */

/* ---- plot_label.c and plot_words.c: between the two halves of report/plot_label.h ---- */

/* The raw value of config key item for run r into buf: as its stored config writes it, or for
 * a key written only away from its default, the default ("standard"); "" for no key. */
void plot_item_raw(const plot_run_t *r, const char *item, char *buf, size_t len);
/* Item's words for run r, plain ("warm-up 500"); quiet: "" when the value says nothing in a
 * subtitle. */
void plot_item_plain(const plot_run_t *r, const char *item, int quiet, char *buf, size_t len);
/* 1 when key is in the NULL-terminated list. */
int plot_listed(const char *const *list, const char *key);
/* 1 when item follows another in d (co-varies with it, which names the group). */
int plot_diff_follows(const plot_diff_t *d, const char *item);

/* ---- plot_style.c: shared by the figures ---- */

/* The line of Xiong et al. 2020 stated for the run's scheme (scheme_theory_t: Post-LN's,
 * Pre-LN's or none): the lemmas' and Theorem 1's figures draw only runs with one. */
int plot_theory(const plot_run_t *r);

/* Column of a layer tensor ("w2") / a hidden-state site ("resid1") in a probe, or −1. */
int plot_param_col(const plot_run_t *r, const char *name);
int plot_site_col(const probe_t *p, const char *name);

/* in as literal gnuplot enhanced text (its operators _ ^ { } @ & ~ \ escaped, control
 * characters as '?'), for a double-quoted title (plot_begin, plot_set). */
void plot_enh(const char *in, char *out, size_t len);

/* in as literal text inside a single-quoted gnuplot string in enhanced mode. */
void plot_escape_name(const char *in, char *out, size_t len);

/* "Zipf(1.1) tokens", "text task", … (+ ", untied output"). */
void plot_data_text(const config_t *c, char *buf, size_t len);

/* An optimizer as a key names it: "Adam", "SGD". */
const char *plot_optimizer_label(optimizer_t o);

/* Probe runs of arch with the most common (d, L) into members; returns the count. */
int plot_pick_layer_group(const plot_set_t *set, arch_t arch, int *members);

/* How a curve is drawn and keyed. */
typedef struct {
    char color[8];
    int dt, pt;             /* dash type, point type */
    double lw;
    char key[300];          /* plain text (plot_label.h) */
} plot_style_t;

/* The item of d an ordinal colour shows: lr, warm-up, depth, width first, then any other
 * ordered item, a seed last; −1 when none is ordered. */
int plot_colour_item(const plot_diff_t *d);

/* The styles of n curves, curve i standing for run rep[i], from what differs between them (d):
 * one ordered item (lr, warm-up, depth, …) → ordinal colours by its value; each curve its own
 * scheme → the scheme's colour and marker; else up to PLOT_QUAL_COUNT curves → Okabe–Ito by
 * curve, more → ordinal colour by the ordered item plot_colour_item picks and a dash per value
 * of the rest. Keys: plot_key. Returns 0 when two curves would look alike (more
 * configurations than colours and dashes tell apart, two schemes of one colour). */
int plot_styles(const plot_set_t *set, const int *rep, int n, const plot_diff_t *d,
                plot_style_t *st);

/* plot_styles, and where it returns 0 the fallback (docs/design.md §6j): a colour per curve
 * (Okabe–Ito, past eight viridis by curve with dashes), keys as plot_key, so a figure never
 * refuses the runs a user gives it. Returns plot_styles' answer. */
int plot_styles_apart(const plot_set_t *set, const int *rep, int n, const plot_diff_t *d,
                      plot_style_t *st);

/* A figure of more curves than PLOT_MAX_SERIES (a key and the styles hold that many): its
 * note, and −1 (plot_figure_fn). Fewer curves are always drawn (plot_styles_apart). */
#define PLOT_TOO_MANY(name, len, fig, n) \
    (snprintf(name, len, "%s: more curves than one figure draws (%d runs; the atlas's " \
              "figures draw such sets)", fig, n), -1)

/* Group runs m[0..n) by their key over d (plot_key: equal keys, one group): of[i] the group
 * of run i (−1 past max groups), rep[g] the index (into m) of group g's first run. Returns the
 * number of groups. */
int plot_group_by(const plot_set_t *set, const int *m, int n, const plot_diff_t *d, int *of,
                  int *rep, int max);

/* Append to keys the key entry of st drawn as with ("lines", "linespoints", "points"). */
void plot_keyentry(sbuf_t *keys, const plot_style_t *st, const char *with);

/* The key of curves st[0..n) (runs rep[0..n)) that plot_styles coloured by one ordered item
 * of d and dashed by the rest, factored: a solid line per colour ("lr 0.001") and a black one
 * per dash ("L = 12", with its first curve's marker) instead of an entry per curve. Appends them to keys and returns their
 * number; 0, nothing appended, when the styles are not of that form or it saves no entry. */
int plot_keys_factored(const plot_set_t *set, const int *rep, int n, const plot_diff_t *d,
                       const plot_style_t *st, sbuf_t *keys);

/* Append a key entry of fixed text (plain) in colour color drawn as with (a style clause). */
void plot_keyentry_text(sbuf_t *keys, const char *with, const char *text);

/* The subtitle's seed part: "10 seeds × 5 batches" (probe) or "mean of 3 seeds, band: 95 % CI"
 * (groups of seeds); "" for one seed of training. */
void plot_probe_seeds(const plot_run_t *r, char *buf, size_t len);

/* The longest key text of st[0..n), in bytes as gnuplot counts them (for plot_key_rows). */
int plot_styles_longest(const plot_style_t *st, int n);

/* Index of name in names[*n], appended when absent; -1 when PLOT_ATLAS_MAX are taken. */
int plot_intern_name(char names[][32], int *n, const char *name);

/* Index of v in vals[*n], appended when absent (callers sort after); -1 when full. */
int plot_intern_value(double *vals, int *n, double v);

/* qsort's comparison of two doubles (of rows whose first column is a double). */
int plot_cmp_double(const void *a, const void *b);

/* Sort names[0..n) (and m with them, unless NULL) into the atlas's order (scheme_rank: the
 * scheme table's rows, names of no row after them): a stable insertion sort, n is a dozen. */
void plot_sort_schemes(char names[][32], int *m, int n);

/* Data block $name: rows "l+1 mean lo hi" over L layer rows of column k of width K (over S
 * seeds): the mean and its 95 % interval, never below 0 (a norm); the values' range into rg,
 * unless NULL. */
void plot_block_per_layer(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                          int k, double scale, plot_range_t *rg);

/* The same with an empty line before row split (> 0): gnuplot does not join the two parts
 * (an encoder's last layer and a decoder's first). */
void plot_block_split(sbuf_t *s, const char *name, const double *data, int S, int L, int K,
                      int k, double scale, int split, plot_range_t *rg);

/* The layer axis 1 … L (x): a tic per layer up to 16; past that the odd layers, or layer 1 and
 * every 4, 5, 10, … layers (at most 9 labels); margins of half a layer. */
void plot_layer_axis(sbuf_t *s, int L);
/* A heat map's cells: "plot $BLOCK" of rows (x y xlo xhi ylo yhi value), each cell drawn 1/400
 * of the axis span (xspan, yspan) past its right and top edges, under the next cell, so that
 * antialiasing leaves no light seam between neighbours; the data keep their true spans. */
void plot_heat_cells(sbuf_t *s, const char *block, double xspan, double yspan);

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
int plot_fig_mlm(const plot_set_t *set, sbuf_t *s, char *name, size_t len);   /* plot_mlm.c */

/* ---- plot_columns.c: a run's columns beyond its training curve (plot.c's loader calls them) */

/* Read the dynamics of the run at prefix of f into r->dyn (left NULL when out of memory). */
void plot_dyn_load(struct h5io_file *f, const char *prefix, plot_run_t *r);

/* Free r->dyn's arrays and itself. */
void plot_dyn_free(plot_dyn_t *d);

/* A run's indicators of warm-up's explanations (docs/curvature.md "Indicators"; the cells and
 * their statistics: study/warmup_explained.h). */
typedef struct plot_ind {
    double xiong;            /* ‖∂L/∂W²‖_F of the last layer at update 1 */
    double eos, eos0;        /* peak active η·λ_max(P⁻¹H) / threshold at updates 1…20, at 0 */
    double eos_c;            /* peak λ_c·η/2 at updates 1…20 (critical sharpness over 2/η) */
    int critical;            /* the run has /train/critical_sharpness */
    double kosson;           /* max ‖ΔW‖_F/‖W‖_F over updates ≤ 20, layers, matrices */
    double update_rms;       /* max RMS of m̂/(√v̂ + ε) over updates 2…20 and layers */
    double deepnet;          /* ‖F(x, θ_1) − F(x, θ_0)‖ */
} plot_ind_t;

/* The indicators of the run at prefix of f into r->ind, when it has curvature rows
 * (/train/curv_step: experiments/warmup_explained.ini's runs); else NULL. */
void plot_ind_load(struct h5io_file *f, const char *prefix, plot_run_t *r);

void plot_ind_free(plot_ind_t *d);

/* ---- plot_curvature.c: a run's curvature rows (docs/design.md §10) ---- */

typedef struct plot_curv {
    size_t n;                     /* curvature rows every column below has */
    double *step;                 /* (n) curv_step: the updates before the row */
    double *hessian_max, *active, *threshold;   /* (n) hessian_max, precond_max_active,
                                                   stability_threshold (NaN: not measured) */
    int rows, kinds;              /* the block axis: layer rows + "outside", block kinds */
    double *hblock, *pblock;      /* (n,rows,kinds) hessian_block_max, precond_block_max, or NULL */
} plot_curv_t;

/* Read the curvature rows of the run at prefix of f into r->curv (left NULL without
 * /train/curv_step or out of memory). */
void plot_curv_load(struct h5io_file *f, const char *prefix, plot_run_t *r);

/* Free c's arrays and itself. */
void plot_curv_free(plot_curv_t *c);

/* The curvature's figures (plot_curvature.c; docs/curvature.md): the active ratio to the
 * threshold against the update, λ_max(H) at initialisation against depth, the per-block
 * sharpness as a layer × update heat map. */
int plot_fig_curv_lens(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_curv_init_depth(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_curv_blocks(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* ---- plot_columns.c: the estimators beside the exact curvature (docs/estimators.md; their
 * figures and table: study/estimators_figure.c, estimators_table.c) ---- */

typedef struct plot_est {
    size_t n;                     /* curvature rows every column below has */
    double *step;                 /* (n) curv_step */
    double *hmax, *pmax, *active, *threshold, *passes;   /* (n) hessian_max, precond_max,
                                     precond_max_active, stability_threshold, curv_passes */
    double *crit, *quad, *ucurv, *bai, *cpasses;   /* (n) critical_sharpness,
                                     critical_quadratic, update_curvature,
                                     grad_precond_curvature, critical_passes; NULL without */
    double *trace;                /* (n) hessian_trace, NULL without */
    double *btrace;               /* (n, blocks) hessian_block_trace, NULL without */
    size_t blocks;
    int probes, iters;            /* the densities' [probe][m], 0 without */
    double *nodes, *weights, *pnodes, *pweights;   /* (n, probes, iters) of H, active P⁻¹H */
} plot_est_t;

/* Read the estimators' columns of the run at prefix of f into r->est (left NULL without
 * /train/curv_step, without any estimator column, or out of memory). */
void plot_est_load(struct h5io_file *f, const char *prefix, plot_run_t *r);

/* Free e's arrays and itself. */
void plot_est_free(plot_est_t *e);

/* ---- plot_precision.c: the precision measures (docs/design.md, "Low precision, emulated";
 * the precision study's statistics and figures: study/precision*.c) ---- */

typedef struct plot_prec {
    size_t nprobe;                /* probe rows (0: no weight_spec) */
    double *probe_step;           /* (nprobe) */
    double *spec_max;             /* (nprobe) the largest ‖W‖₂ of weight_spec, extra_weight_spec */
    double *pv_bias;              /* (nprobe) mean |pv_round_bias| over layers and heads (NaN:
                                     the probabilities were not rounded) */
    size_t nstag;                 /* stagnation rows (0: not bfloat16_pure) */
    double *stagnation;           /* (nstag) /train/stagnation, one per update */
} plot_prec_t;

/* Read the precision measures of the run at prefix of f into r->prec (left NULL without
 * /train/weight_spec and /train/stagnation, or out of memory). */
void plot_prec_load(struct h5io_file *f, const char *prefix, plot_run_t *r);

/* Free p's arrays and itself. */
void plot_prec_free(plot_prec_t *p);

/* Send script to gnuplot once per format into dir/name.<fmt> (gnuplot writes to its standard
 * output, which is the file). 0, or −1 (gnuplot failed) / −2 (an output that is not a regular
 * file, an unknown format) with err set. */
int plot_render(const char *script, const char *dir, const char *name, const char *formats,
                int quiet, char *err, size_t errlen);

/* x for a printed "%.2f": 0 when it would print as -0.00 (a fitted exponent of -0.001). */
static inline double plot_nz(double x) { return fabs(x) < 0.005 ? 0.0 : x; }

#endif
