/* study.c — the table of studies `stability table` knows (study.h). A study adds its row here
 * and its analysis in study/<name>.c. */
#include <string.h>
#include "study/study.h"
#include "study/atlas.h"
#include "study/estimators.h"
#include "study/proxies.h"
#include "study/warmup_explained.h"

static const study_t STUDIES[] = {
    {"atlas", "the stability atlas: LR sensitivity, best lr, needs warm-up (docs/atlas.md)",
     study_atlas_table, NULL},
    {"atlas-compare", "two atlases cell by cell: final losses, verdicts that move, Spearman's ρ",
     NULL, study_atlas_compare},
    {"warmup-explained", "which explanation of warm-up predicts which failure: AUCs "
     "(docs/curvature.md)", study_warmup_explained_table, NULL},
    {"warmup-depth", "the warm-up study's AUC of fails vs trains per depth (docs/curvature.md)",
     study_warmup_depth_table, NULL},
    {"warmup-cells", "the warm-up study's cells: outcome and indicators (docs/curvature.md)",
     study_warmup_cells_table, NULL},
    {"warmup-runs", "the warm-up study's indicators of each run by name (Fig. 2's runs)",
     study_warmup_runs_table, NULL},
    {"estimators", "the curvature estimators against the exact values: error, cost, verdicts "
     "(docs/estimators.md)", study_estimators_table, NULL},
    {"proxies", "the size study: LR sensitivity, best and failing lr against width, peak logits "
     "(docs/proxies.md)", study_proxies_table, NULL},
    {0},
};

const study_t *study_list(void) { return STUDIES; }

const study_t *study_find(const char *name)
{
    for (int k = 0; STUDIES[k].name; k++)
        if (!strcmp(STUDIES[k].name, name)) return &STUDIES[k];
    return NULL;
}
