/* curvature_anchor.h — the curvature anchor's table (docs/curvature.md "The anchor",
 * experiments/curvature_anchor.ini): per run with curvature rows, λ_max(H) at initialisation,
 * the active λ_max(P⁻¹H) over Adam's threshold at every measured update and the final loss
 * (report/runs.h), then each setting's range over seeds, as `stability table curvature-anchor`. */
#ifndef STABILITY_STUDY_CURVATURE_ANCHOR_H
#define STABILITY_STUDY_CURVATURE_ANCHOR_H

#include "study/study.h"

/* The anchor's two tables of the runs of set with curvature rows (others left out); 1 with err
 * when none has them. */
int study_curvature_anchor_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                                 size_t errlen);

#endif
