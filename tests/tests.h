/* tests.h — the Check suites; tests/check_main.c runs them all. */
#ifndef STABILITY_TESTS_H
#define STABILITY_TESTS_H

#include <check.h>

Suite *config_suite(void);   /* tests/test_config.c: INI parsing, --set, every bad-input case */
Suite *gemm_suite(void);     /* tests/test_gemm.c: GEMMs shared among threads give one call's bytes */
Suite *norm_suite(void);     /* tests/test_norm.c: norm backward vs FD and the path form, Jacobian norms vs GSL SVD */
Suite *model_suite(void);    /* tests/test_model.c: whole-model gradients vs finite differences */
Suite *data_suite(void);     /* tests/test_data.c: task batches */
Suite *probe_suite(void);    /* tests/test_probe.c: Lemma 2/3 on the probe, expected-gradient bookkeeping */
Suite *optim_suite(void);    /* tests/test_optim.c: optimizer updates and schedules vs hand-computed values,
                                GI-Adam, StableAdamW, per-tensor rates, update RMS, RAdam's ρ */
Suite *muon_suite(void);     /* tests/test_muon.c: Newton–Schulz on a known SVD, Muon, Lion, nsgd by hand, routing, keys */
Suite *train_suite(void);    /* tests/test_train.c: text task split, loop determinism, resume state, divergence */
Suite *corpus_suite(void);   /* tests/test_corpus.c: the translation corpus reader and its batches */
Suite *schemes_suite(void);  /* tests/test_schemes.c: every scheme vs finite differences, constants, identities */
Suite *util_suite(void);     /* tests/test_util.c: file-system guards, thread counts, line reader, GSL errors */
Suite *sweep_suite(void);    /* tests/test_sweep.c: the Slurm array specification */
Suite *report_suite(void);   /* tests/test_report.c: seed groups, mean and 95 % band, reaching a loss */
Suite *figures_suite(void);  /* tests/test_figures.c: keys and titles from the configs, palette, cells, ranges */
Suite *real_suite(void);     /* tests/test_real.c: the float32 core's layout, loss and gradients vs float64, every scheme */
Suite *block_suite(void);    /* tests/test_block.c: rope, SwiGLU, bias-free linears vs FD; the kernel, names, decoding */
Suite *dynamics_suite(void); /* tests/test_dynamics.c: QK-norm, soft-capping, z-loss vs FD; entropy, logits, log Z */
Suite *mup_suite(void);      /* tests/test_mup.c: μP's rates, d = base_width, draws, FD; init.embed, parametrization keys */
Suite *mup_coord_suite(void);   /* tests/test_mup_coord.c: μP Table 3: coordinate check, embedding lr, readout variance */
Suite *curvature_suite(void);/* tests/test_curvature.c: HVP, Lanczos, P^-1 H, blocks vs explicit matrices; float32 route */
Suite *curv_step_suite(void);/* tests/test_curv_step.c: c·P^-1(H + λI) of the step taken (clip, L2) vs explicit */
Suite *lowp_suite(void);     /* tests/test_lowp.c: bf16 rounding vs PyTorch bit for bit, fp8 vs the OCP tables, stochastic rounding's mean */
Suite *precision_suite(void);/* tests/test_precision.c: bf16 GEMM within float32 accumulation's bound, pure bf16 stagnation vs stochastic/Kahan, spectral norm, keys */
Suite *attn_fix_suite(void); /* tests/test_attn_fix.c: train.attn_round_fix (Qiu & Yao 2025): the bias it removes by hand, its backward's convention, its key */
Suite *onednn_suite(void);   /* tests/test_onednn.c: oneDNN bf16 GEMM against the emulation (bound), same bits at 1 and 2 threads, a bf16 training run on either path, train.gemm_path */
Suite *estimators_suite(void);/* tests/test_estimators.c: SLQ, Hutchinson, top-k, critical sharpness vs exact values */
Suite *diagnose_suite(void); /* tests/test_diagnose.c: each diagnosis rule on made-up series, its place and remedies */
Suite *atlas_suite(void);    /* tests/test_atlas.c: the atlas's sensitivity, best lr, largest lr that trains, warm-up verdict over seeds */
Suite *proxies_suite(void);  /* tests/test_proxies.c: the size study's failing lr, best-lr exponent, paired differences, failing-lr line */
Suite *runs_suite(void);     /* tests/test_runs.c: the table of runs' outcome columns, the grid's means and t half-widths */
Suite *warmup_suite(void);   /* tests/test_warmup.c: the warm-up study: AUC by pairs, bootstrap intervals in closed form, a table row, cells of a made-up set */
Suite *study_suite(void);    /* tests/test_study.c: the Clopper–Pearson interval against its closed forms and R */
Suite *memory_suite(void);   /* tests/test_memory.c: the memory estimate, arithmetic at any depth */

Suite *remedies_suite(void); /* tests/test_remedies.c: curvature cap, CDAT, catapult, update cap vs hand values and explicit H */
Suite *remedies_study_suite(void); /* tests/test_remedies_study.c: Clopper–Pearson ends, η_max of one method's runs */

#endif
