/* check_main.c — runs every Check suite; exit status 1 if any test failed. */
#include <stdlib.h>
#include <gsl/gsl_errno.h>
#include "tests.h"
#include "util/blascore.h"

int main(int argc, char **argv)
{
    (void)argc;
    // the kernels `stability` runs (util/blascore.h): the same bits as it gives
    if (blascore_pin(argv)) return EXIT_FAILURE;
    // as in `stability`'s main: GSL errors are return codes, handled where they occur, never
    // an abort() of the whole runner (CK_FORK=no runs every suite in this one process)
    gsl_set_error_handler_off();
    SRunner *sr = srunner_create(config_suite());
    srunner_add_suite(sr, gemm_suite());
    srunner_add_suite(sr, norm_suite());
    srunner_add_suite(sr, model_suite());
    srunner_add_suite(sr, data_suite());
    srunner_add_suite(sr, probe_suite());
    srunner_add_suite(sr, optim_suite());
    srunner_add_suite(sr, mup_suite());
    srunner_add_suite(sr, mup_coord_suite());
    srunner_add_suite(sr, muon_suite());
    srunner_add_suite(sr, train_suite());
    srunner_add_suite(sr, corpus_suite());
    srunner_add_suite(sr, schemes_suite());
    srunner_add_suite(sr, util_suite());
    srunner_add_suite(sr, sweep_suite());
    srunner_add_suite(sr, report_suite());
    srunner_add_suite(sr, runs_suite());
    srunner_add_suite(sr, atlas_suite());
    srunner_add_suite(sr, proxies_suite());
    srunner_add_suite(sr, warmup_suite());
    srunner_add_suite(sr, study_suite());
    srunner_add_suite(sr, figures_suite());
    srunner_add_suite(sr, dynamics_suite());
    srunner_add_suite(sr, real_suite());
    srunner_add_suite(sr, block_suite());
    srunner_add_suite(sr, curvature_suite());
    srunner_add_suite(sr, curv_step_suite());
    srunner_add_suite(sr, estimators_suite());
    srunner_add_suite(sr, diagnose_suite());
    srunner_add_suite(sr, remedies_suite());
    srunner_add_suite(sr, remedies_study_suite());
    srunner_add_suite(sr, memory_suite());
    srunner_add_suite(sr, lowp_suite());
    srunner_add_suite(sr, precision_suite());
    srunner_add_suite(sr, attn_fix_suite());
    srunner_add_suite(sr, onednn_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
