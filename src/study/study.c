/* study.c — the table of studies `stability table` knows (study.h). A study adds its row here
 * and its analysis in study/<name>.c. */
#include <math.h>
#include <string.h>
#include <gsl/gsl_cdf.h>
#include "study/study.h"
#include "study/advise.h"
#include "study/atlas.h"
#include "study/curvature_anchor.h"
#include "study/estimators.h"
#include "study/precision.h"
#include "study/optimizers.h"
#include "study/proxies.h"
#include "study/remedies.h"
#include "study/warmup.h"
#include "study/warmup_explained.h"

static const study_t STUDIES[] = {
    {"atlas", "the stability atlas: LR sensitivity, best lr, needs warm-up (docs/atlas.md)",
     study_atlas_table, NULL, NULL},
    {"atlas-compare", "two atlases cell by cell: final losses, verdicts that move, Spearman's ρ",
     NULL, study_atlas_compare, NULL},
    {"warmup-explained", "which explanation of warm-up predicts which failure: AUCs "
     "(docs/curvature.md)", study_warmup_explained_table, NULL, NULL},
    {"warmup-depth", "the warm-up study's AUC of fails vs trains per depth (docs/curvature.md)",
     study_warmup_depth_table, NULL, NULL},
    {"warmup-cells", "the warm-up study's cells: outcome and indicators (docs/curvature.md)",
     study_warmup_cells_table, NULL, NULL},
    {"warmup-runs", "the warm-up study's indicators of each run by name (Fig. 2's runs)",
     study_warmup_runs_table, NULL, NULL},
    {"warmup", "Fig. 2's training runs: final and best loss, updates to < 2.5, ‖∇W²‖ ratio "
     "(docs/warmup.md)", study_warmup_table, NULL, NULL},
    {"curvature-anchor", "the anchor's runs: λ_max(H), the active ratio by update, final loss "
     "(docs/curvature.md)", study_curvature_anchor_table, NULL, NULL},
    {"estimators", "the curvature estimators against the exact values: error, cost, verdicts "
     "(docs/estimators.md)", study_estimators_table, NULL, NULL},
    {"proxies", "the size study: LR sensitivity, best and failing lr against width, peak logits "
     "(docs/proxies.md)", study_proxies_table, NULL, NULL},
    {"advise", "stability advise against outcome runs it was not built on: right / wrong, "
     "accuracy with its interval (docs/design.md, the advisor)", NULL, NULL, study_advise_files},
    {"remedies", "warm-up's remedies on the failure boundary: the causal test, η_max, the cost "
     "(docs/remedies.md)", study_remedies_table, NULL, NULL},
    {"precision", "bfloat16, fp8 and pure bfloat16 against float32: outcomes, final loss and its "
     "paired difference, spikes, logits, stagnation, spectral norms, softmax·V's bias (docs/precision.md)",
     study_precision_table, NULL, NULL},
    {"optimizers", "Muon, Lion and Adam: warm-up needed or hurting, η_max, the best loss seed by "
     "seed, adaptive vs fixed warm-up, the peak logit (docs/optimizers.md)", study_optimizers_table,
     NULL, NULL},
    {0},
};

const study_t *study_list(void) { return STUDIES; }

const study_t *study_find(const char *name)
{
    for (int k = 0; STUDIES[k].name; k++)
        if (!strcmp(STUDIES[k].name, name)) return &STUDIES[k];
    return NULL;
}

void study_clopper_pearson(int k, int n, double alpha, double *lo, double *hi)
{
    if (n <= 0 || k < 0 || k > n) { *lo = *hi = NAN; return; }
    *lo = k == 0 ? 0.0 : gsl_cdf_beta_Pinv(alpha / 2, k, n - k + 1);
    *hi = k == n ? 1.0 : gsl_cdf_beta_Pinv(1 - alpha / 2, k + 1, n - k);
}
