/* table_apart.h — what tells a table's runs apart beyond the columns it shows (docs/design.md
 * §6j: no two rows read alike), for the tables of single runs (study/warmup.c,
 * study/curvature_anchor.c). */
#ifndef STABILITY_STUDY_TABLE_APART_H
#define STABILITY_STUDY_TABLE_APART_H

#include "report/plot_label.h"

/* The items of plot_diff (seeds not counted) over the runs m[0..n) of set into d, without the
 * config keys of shown (NULL-terminated) and without the scheme when runs of one placement
 * share it (a shown placement says it). plot_key(d, run) then names a run's other items. */
void table_apart(const plot_set_t *set, const int *m, int n, const char *const *shown,
                 plot_diff_t *d);

#endif
