/* plot_label.h — what the runs of a figure share and what tells them apart, read from their
 * resolved configs key by key (docs/design.md §6j). Every figure asks here for its title
 * ("Validation loss by warm-up"), its subtitle (what the runs share: model size, task, data,
 * optimizer, seeds) and each curve's key (only what differs: "Post-LN, lr 0.001, warm-up 500"),
 * so runs that differ in any key never read alike, whatever key it is.
 *
 * Items are config keys ("train.lr") and two of their own: "scheme" (scheme_name: placement,
 * norm and an initialisation that makes a scheme, config/scheme.h) and "data" (the data's
 * identity the file records, data_sha256 and data_bytes, when it does). Text comes plain (UTF-8,
 * for Markdown and for gnuplot's noenhanced keys) or as gnuplot enhanced text for a
 * double-quoted title (plot_layout.h's plot_begin, plot_set: any text from a file or a user
 * escaped, plot_enh). */
#ifndef STABILITY_PLOT_LABEL_H
#define STABILITY_PLOT_LABEL_H

#include <stddef.h>
#include "report/plot.h"

#define PLOT_DIFF_MAX 64

/* Which items a figure compares. */
enum {
    PLOT_DIFF_INIT = 1,   /* a figure at initialisation: the [train] keys changed nothing */
    PLOT_DIFF_SEED = 2,   /* count init.seed (else seeds are one curve's band) */
};

/* The items that differ between a figure's runs, in config order (the scheme first). */
typedef struct {
    int n;                                /* items */
    char item[PLOT_DIFF_MAX][48];
    /* 1: the item co-varies with another (every pair of runs that differ in one differs in the
     * other, e.g. the vocabulary, length and batch that come with a data set): keys and the
     * title name the group once, by its leader, and `covary` (the subtitle's) says the rest */
    int nf;
    char follower[PLOT_DIFF_MAX][48];
    char covary[600];                     /* "En→De corpus (BPE 8000): V = 8000, batch 16; …" */
} plot_diff_t;

/* Fill d with the items whose values differ between the runs m[0..n) (flags PLOT_DIFF_*). A
 * key the scheme explains (placement, norm, final norm, an init that is a scheme's) is not an
 * item of its own when the scheme differs. */
void plot_diff(const plot_set_t *set, const int *m, int n, int flags, plot_diff_t *d);

/* Whether item differs; remove it (a key the figure draws on an axis or by panel). */
int plot_diff_has(const plot_diff_t *d, const char *item);
void plot_diff_drop(plot_diff_t *d, const char *item);

/* Put the runs of set in the order of their values (docs/design.md §6j): by the items that
 * differ across the set, in plot_diff's order (the seed last), an ordered item numerically
 * ("no warm-up", warm-up 6, warm-up 30; lr 1e-4 before 1e-3), any other by its value's first
 * appearance; a stable sort. plot_load calls it. */
void plot_order(plot_set_t *set);

/* Whether an item's values are ordered (lr, warm-up, depth, width, steps: an ordinal colour). */
int plot_item_ordered(const char *item);

/* The numeric value of an ordered item for run r (for sorting and ordinal colours). */
double plot_item_value(const plot_run_t *r, const char *item);

/* One item of run r in words: "lr 0.001", "no warm-up", "Post-LN", "float32", "seed 2". */
void plot_item_text(const plot_run_t *r, const char *item, int enhanced, char *buf, size_t len);

/* Run r's key: the items of d joined by ", " ("Post-LN, lr 0.001, warm-up 500"); the run's
 * name when d is empty. */
void plot_key(const plot_diff_t *d, const plot_run_t *r, int enhanced, char *buf, size_t len);

/* What the runs share, for a subtitle: those of items[] (NULL-terminated) that do not differ
 * in d, as run r has them, joined by ", " (a value at its uninteresting default, float64 or no
 * QK-norm, says nothing). */
void plot_shared(const plot_diff_t *d, const plot_run_t *r, const char *const *items, int enhanced,
                 char *buf, size_t len);

/* The subtitle items of a figure at initialisation and of a training figure. */
extern const char *const PLOT_SHARED_INIT[], *const PLOT_SHARED_TRAIN[];

/* The figure's title (gnuplot enhanced text; measure is enhanced text too): measure, then
 * what varies ("Training loss by scheme and warm-up"), or the sweep file's title when every
 * run has the same one ("Training loss: <title>"); " (Fig. 2)" or another source
 * (" (Liu et al. 2020)") appended when paper is not NULL. */
void plot_title(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                const char *measure, const char *paper, char *buf, size_t len);

/* The figure of Xiong et al. 2020 whose set of runs m[0..n) is, decided from their configs
 * (docs/design.md §6j), for a figure of kind: "Fig. 2", "Fig. 3(a,b)", …, or NULL. */
enum { PLOT_KIND_LAYERS, PLOT_KIND_DEPTH, PLOT_KIND_TRAIN };
const char *plot_paper_figure(const plot_set_t *set, const int *m, int n, const plot_diff_t *d,
                              int kind);

/* in as text inside a single-quoted gnuplot string: ' doubled, control characters as '?';
 * with enhanced, also the enhanced-text operators escaped (report/plot_style.c). */
void plot_quote(const char *in, int enhanced, char *out, size_t len);

#endif
