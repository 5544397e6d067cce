/* estimators.c — `stability table estimators` (estimators.h): the statistics are
 * study/estimators_table.c's, shared with the figures est_density and est_critical. */
#include "study/estimators_table.h"
#include "study/estimators.h"

int study_estimators_table(const plot_set_t *set, study_format_t fmt, FILE *out, char *err,
                           size_t errlen)
{
    if (est_table_print(set, fmt == STUDY_TSV, out)) return 0;
    snprintf(err, errlen, "no run with curvature rows and estimator columns "
                          "(probe.density_probes, trace_probes, critical_sharpness)");
    return 1;
}
