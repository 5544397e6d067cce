/* advise.h — the advisor's validation (docs/design.md "The advisor", its validation): `stability
 * table advise` pairs each advice file (`stability advise --out`, run/run_advise.c) with the
 * outcome runs of its cell, read from its config (report/runs.h rows: the same scheme, block,
 * depth, width, lr, optimizer and task; warm-up 1 the outcome without warm-up, more with it;
 * any seeds), and says whether the advice was right, with the accuracy's exact interval. */
#ifndef STABILITY_STUDY_ADVISE_H
#define STABILITY_STUDY_ADVISE_H

#include <stdio.h>
#include "study/study.h"

/* `stability table advise FILE.h5...`: the files are advice files (root attribute needs_warmup)
 * and outcome runs (run files or merged sweeps) in any order. Prints every advice's cell (the
 * advice, the outcomes without and with warm-up, right or wrong), the accuracy with its 95 %
 * Clopper–Pearson interval, also by "needs" and "does not need", and how often the advised
 * largest lr without warm-up is within one grid step of the measured one (study.h). */
int study_advise_files(const char *const *files, int nfiles, study_format_t fmt, FILE *out,
                       char *err, size_t errlen);

#endif
