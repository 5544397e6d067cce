/* estimators.h — the curvature estimators' study (docs/estimators.md): the table of
 * study/estimators_table.h (each estimator's error against the exact value, its cost, the
 * verdicts on 2/η, whether λ_c tracks λ_max) as `stability table estimators`. */
#ifndef STABILITY_STUDY_ESTIMATORS_H
#define STABILITY_STUDY_ESTIMATORS_H

#include "study/study.h"

/* The estimators' tables of the runs of set with estimator columns; 1 with err when none has
 * them. */
int study_estimators_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                           size_t errlen);

#endif
