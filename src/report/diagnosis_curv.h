/* diagnosis_curv.h — the text of measure/diagnose_curv.h's finding: when a run's active
 * preconditioned sharpness crossed the optimizer's stability threshold, by how much, for how
 * long, in which block, and the keys the harness offers against it (docs/design.md §10,
 * docs/curvature.md). `stability info` prints it from the file's rows; the run (run/run.c)
 * warns with it as the rows come. */
#ifndef STABILITY_DIAGNOSIS_CURV_H
#define STABILITY_DIAGNOSIS_CURV_H

#include <stdio.h>
#include "config/config.h"
#include "measure/diagnose_curv.h"

/* The names of the block axes: stack[rows] ("lm", "enc", "dec", "outside"; NULL: layers
 * counted from 1 and the last row outside) and kind[kinds] (NULL: tensors_block_name). */
typedef struct {
    const char *const *stack;
    const char *const *kind;
} report_curv_axes_t;

/* The finding c of cfg's run as one line. first: the live warning at the first crossing (the
 * crossing, its block, the update-0 notes); else the whole: the crossing, the peak (and the
 * peak after update 0 when the peak is there), how long it stayed above, the block, the notes,
 * and the remedies as --set KEY=VALUE (a warm-up of diagnose_curv_warmup's N, train.optimizer
 * = gi_adam, model.placement = pre, each when cfg does not use it); or, with no row above, one
 * line saying it stayed below. Nothing ("") when no row was fed. */
void report_curvature_message(const diagnose_curv_t *c, const config_t *cfg,
                              const report_curv_axes_t *ax, int first, char *buf, size_t len);

/* The curvature rows of the training run at prefix of f (/train/curv_step, precond_max_active,
 * stability_threshold, precond_max, precond_eps_share, precond_block_max) fed into c in order.
 * 0, or 1 when the run has no curvature rows (c then holds no row). */
struct h5io_file;
int report_curvature_read(struct h5io_file *f, const char *prefix, const config_t *cfg,
                          diagnose_curv_t *c);

/* `stability info`'s line on the curvature of the run at prefix ("  curvature: …"); nothing
 * when it has no curvature rows. */
void report_curvature(FILE *out, struct h5io_file *f, const char *prefix, const config_t *cfg);

#endif
