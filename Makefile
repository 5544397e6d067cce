# stability — build, test, run.  `make` builds ./stability; `make run` and `make test` also
# install missing Debian packages first (setup/install-deps.sh).

# Builds run in parallel on every CPU (make JOBS=1 for one at a time). Only the build: the
# targets named on the command line run one after another (two studies at once would race for
# the cores and each rebuild ./stability beside the other).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

CC       ?= cc
CFLAGS   ?= -O2
override CFLAGS += -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -fopenmp -g
# Dependencies (docs/cluster.md): GSL's headers and BLAS API with OpenBLAS as the CBLAS behind
# it (never -lgslcblas: 25-45x slower), HDF5, inih, OpenSSL's libcrypto (SHA-256 of the data a
# run reads); Check for the unit tests. Each is found by
# pkg-config, else plain -lNAME (a module's CPATH / LIBRARY_PATH), and every variable below can
# be set on the command line instead, e.g. make HDF5_CFLAGS=-I$$HDF5_DIR/include
# HDF5_LIBS="-L$$HDF5_DIR/lib -lhdf5". PREFIX=DIR: a user prefix (DIR/include, DIR/lib and its
# pkgconfig, as ./configure --prefix, Spack views and conda environments lay them out), searched
# before the system. Libraries outside /usr and /lib are found at run time through an rpath.
PKG_CONFIG ?= pkg-config
ifdef PREFIX
PKG_CONFIG_ENV := PKG_CONFIG_PATH='$(PREFIX)/lib/pkgconfig:$(PREFIX)/lib64/pkgconfig:$(PREFIX)/share/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))'
PREFIX_CFLAGS := -I$(PREFIX)/include
PREFIX_LIBS   := -L$(PREFIX)/lib
endif
pkg = $(shell $(PKG_CONFIG_ENV) $(PKG_CONFIG) $(2) $(1) 2>/dev/null)
, := ,
GSL_CFLAGS   ?= $(call pkg,gsl,--cflags)
GSL_LIBS     ?= $(call pkg,gsl,--libs-only-L) -lgsl
HDF5_CFLAGS  ?= $(call pkg,hdf5,--cflags)
HDF5_LIBS    ?= $(or $(call pkg,hdf5,--libs),-lhdf5)
INIH_CFLAGS  ?= $(call pkg,inih,--cflags)
INIH_LIBS    ?= $(or $(call pkg,inih,--libs),-linih)
BLAS_LIBS    ?= $(call pkg,openblas,--libs-only-L) -lopenblas
CRYPTO_CFLAGS ?= $(call pkg,libcrypto,--cflags)
CRYPTO_LIBS  ?= $(or $(call pkg,libcrypto,--libs),-lcrypto)
# oneDNN (Debian: libdnnl-dev), the fast bfloat16 path's matmul (src/nn/gemm_dnnl.c): linked when
# its header compiles and is oneDNN 2.x (3.x removed the operation descriptors gemm_dnnl.c uses),
# else the build runs the emulation only (DNNL_LIBS= leaves it out).
ifeq ($(origin DNNL_LIBS),undefined)
DNNL_LIBS    := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\n\043if DNNL_VERSION_MAJOR != 2\n\043error not 2.x\n\043endif\n' | $(CC) $(PREFIX_CFLAGS) -E -x c - >/dev/null 2>&1 && echo -ldnnl)
endif
DNNL_CFLAGS  := $(if $(strip $(DNNL_LIBS)),-DSTAB_DNNL)
CHECK_CFLAGS ?= $(call pkg,check,--cflags)
CHECK_LIBS   ?= $(or $(call pkg,check,--libs),-lcheck -lsubunit -lrt -lm -pthread)
# evaluated once (pkg-config runs once per make, not once per file)
PKG_CFLAGS   := $(PREFIX_CFLAGS) $(DNNL_CFLAGS) $(HDF5_CFLAGS) $(GSL_CFLAGS) $(INIH_CFLAGS) $(CRYPTO_CFLAGS)
LIB_DIRS     := $(PREFIX_LIBS) $(filter -L%,$(HDF5_LIBS) $(INIH_LIBS) $(GSL_LIBS) $(BLAS_LIBS) $(CRYPTO_LIBS) $(CHECK_LIBS))
# DT_RPATH, not RUNPATH: it also finds the libraries' own dependencies in the prefix (libgsl's
# libgslcblas, libhdf5's libsz), where RUNPATH serves the program's direct ones only
RPATH_DIRS   := $(sort $(filter-out /usr/% /lib/% /lib64/%,$(patsubst -L%,%,$(LIB_DIRS))))
RPATH        := $(if $(RPATH_DIRS),-Wl$(,)--disable-new-dtags $(foreach d,$(RPATH_DIRS),-Wl$(,)-rpath$(,)$(d)))
PKG_LIBS     := $(PREFIX_LIBS) $(HDF5_LIBS) $(INIH_LIBS) $(GSL_LIBS) $(BLAS_LIBS) $(DNNL_LIBS) $(CRYPTO_LIBS) -lm $(RPATH)
CHECK_CFLAGS := $(CHECK_CFLAGS)
CHECK_LIBS   := $(CHECK_LIBS)

# src/<layer>/<concept>.c; a lower folder never includes a higher one (docs/design.md §2):
# util < nn < config < data < model < measure < train < io < report < study < run < sweep < cli
SRC      := $(wildcard src/*/*.c)
LIB_SRC  := $(filter-out src/cli/%,$(SRC))
HEADERS  := $(wildcard src/*/*.h)
TEST_SRC := $(wildcard tests/test_*.c) tests/check_main.c
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

BUILD    ?= build
# The numerical core (docs/design.md §2, "One core, two precisions"): compiled as written
# (float64) and again with -DSTAB_REAL_FLOAT (float32), its public names renamed NAME_f32 by
# $(BUILD)/f32/names.h, which `nm` makes from the float64 objects. One binary holds both.
# The curvature measure (docs/design.md §10) is float64 only, whatever the run's precision: its
# files are compiled once, and the float32 core calls them by their own names with float64 arrays.
CORE_F64_ONLY := src/measure/hvp.c src/measure/lanczos.c src/measure/curvature.c \
                 src/measure/slq.c src/measure/trace.c src/measure/critical.c \
                 src/measure/directional.c src/measure/estimate.c \
                 src/measure/probe_curvature.c src/measure/outcome.c
CORE_SRC := $(filter-out $(CORE_F64_ONLY),$(wildcard src/nn/*.c src/model/*.c src/measure/*.c src/train/*.c))
CORE_F32 := $(CORE_SRC:src/%.c=$(BUILD)/f32/%.o)
OBJ      := $(LIB_SRC:src/%.c=$(BUILD)/%.o) $(CORE_F32)
TEST_OBJ := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%.o)

RUN_SWEEP ?= experiments/fig3ab_grad_vs_layer.ini
# make figures: the paper's figures on its own 6-6 model, and the lemmas (under 20 minutes on
# 2 cores). make figures-single: the single-stack studies the enc-dec figures supersede (Fig. 3
# and Fig. 2 on one stack, the tied-output and width studies; `make run` is
# fig3ab_grad_vs_layer). make atlas: the atlas (~70 min here); make atlas PRECISION=float32: its
# training half in float32 (experiments/atlas_f32.ini), set beside the float64 atlas if there;
# SEEDS=3: three seeds a cell (experiments/atlas_seeds.ini, atlas_f32_seeds.ini), CIs in the
# table and figures.
FIGURE_EXPERIMENTS := fig3ab_encdec fig3cd_encdec fig2_encdec lemma_norms
SINGLE_EXPERIMENTS := fig3ab_grad_vs_layer fig3cd_grad_vs_depth fig3cd_untied width_scaling \
                      fig2_warmup
PRECISION ?= float64
SEEDS ?= 1
ATLAS := $(if $(filter float32,$(PRECISION)),atlas_f32,atlas)$(if $(filter 3,$(SEEDS)),_seeds)
ATLAS_F64 := $(subst atlas_f32,atlas,$(ATLAS))
# SEEDS=3: the single-seed atlas first, whose runs are seed 1's: the seeds sweep takes them
# ([sweep] reuse; docs/atlas.md, "Seeds") and computes seeds 2 and 3 only
ATLAS_EXPERIMENTS := atlas_init $(if $(filter 3,$(SEEDS)),$(subst _seeds,,$(ATLAS))) $(ATLAS) model_update

.PHONY: all deps test-deps run figures figures-single atlas dynamics check test unit asan-unit ubsan-cli bench clean
all:
	$(MAKE) -j$(JOBS) stability

CLI_OBJ  := $(patsubst src/%.c,$(BUILD)/%.o,$(filter src/cli/%,$(SRC)))
stability: $(OBJ) $(CLI_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS)

# main.c (--version) and h5io.c (the files' version attribute) carry the git version.
$(BUILD)/cli/main.o $(BUILD)/io/h5io.o: $(BUILD)/%.o: src/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc -DSTABILITY_VERSION='"$(VERSION)"' -c -o $@ $<

$(BUILD)/%.o: src/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc -c -o $@ $<

# every global symbol the float64 core defines, as `#define NAME NAME_f32` (C identifiers only:
# AddressSanitizer adds symbols such as __odr_asan.NAME, which are no names in the source)
$(BUILD)/f32/names.h: $(CORE_SRC:src/%.c=$(BUILD)/%.o)
	@mkdir -p $(dir $@)
	nm -g --defined-only $^ | awk 'NF == 3 && $$3 ~ /^[A-Za-z_][A-Za-z0-9_]*$$/ { print "#define " $$3 " " $$3 "_f32" }' | sort -u > $@.tmp
	mv $@.tmp $@

$(BUILD)/f32/%.o: src/%.c $(HEADERS) $(BUILD)/f32/names.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc -DSTAB_REAL_FLOAT -include $(BUILD)/f32/names.h -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.c $(HEADERS) tests/tests.h | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(CHECK_CFLAGS) -Isrc -c -o $@ $<

$(BUILD)/test_runner: $(OBJ) $(TEST_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS) $(CHECK_LIBS)

$(BUILD)/bench/%.o: bench/%.c $(HEADERS) bench/bench.h | $(BUILD)/bench
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc -c -o $@ $<

BENCH_OBJ = $(addprefix $(BUILD)/bench/,bench.o bench_cases.o bench_child.o bench_proc.o \
	bench_torch.o bench_report.o)
$(BUILD)/bench/bench: $(OBJ) $(BENCH_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS)

# OpenBLAS's kernel families at the model's GEMM shapes (bench/families.py; docs/performance.md)
$(BUILD)/bench/families: $(BUILD)/bench/families.o
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD):
	mkdir -p $(BUILD)/tests

$(BUILD)/bench:
	mkdir -p $(BUILD)/bench

deps:
	setup/install-deps.sh

test-deps:
	setup/install-deps.sh --test

# The main job: install what is missing, build, measure Fig. 3(a,b) (Post-LN vs Pre-LN at the
# paper's size) and draw it into plots/.
run: deps
	$(MAKE) -j$(JOBS) stability
	./stability sweep $(RUN_SWEEP)
	./stability plot results/$(basename $(notdir $(RUN_SWEEP))).h5

# The figure experiments, then their figures; those the docs show are copied to docs/figures/.
DOC_FIGURES := fig3ab_encdec-grad_vs_layer fig3ab_encdec-subout_grad fig3cd_encdec-grad_vs_depth \
               fig2_encdec-val_loss fig2_encdec-loss fig3cd_grad_vs_depth-grad_vs_depth \
               fig3cd_untied-grad_vs_depth fig3cd_untied-grad_ratio fig3cd_encdec-grad_ratio \
               width_scaling-grad_vs_width fig3cd_grad_vs_depth-grad_ratio width_scaling-grad_ratio \
               lemma_norms-hidden_norms lemma_norms-jacobian \
               fig3ab_grad_vs_layer-grad_vs_layer fig2_warmup-loss
figures: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/translation/manifest.txt ] || setup/translation-corpus.sh   # Fig. 3, Fig. 2
	@set -e; for f in $(FIGURE_EXPERIMENTS); do ./stability sweep experiments/$$f.ini; done
	@set -e; for f in $(FIGURE_EXPERIMENTS); do ./stability plot results/$$f.h5; done
	@mkdir -p docs/figures; for f in $(DOC_FIGURES); do \
	  if [ -f plots/$$f.png ]; then cp plots/$$f.png docs/figures/; fi; done

figures-single: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # fig2_warmup's text
	@set -e; for f in $(SINGLE_EXPERIMENTS); do ./stability sweep experiments/$$f.ini; done
	@set -e; for f in $(SINGLE_EXPERIMENTS); do ./stability plot results/$$f.h5; done
	@mkdir -p docs/figures; for f in $(DOC_FIGURES); do \
	  if [ -f plots/$$f.png ]; then cp plots/$$f.png docs/figures/; fi; done

# The stability atlas (docs/design.md §6d): every scheme at initialisation and in short
# training runs; figures into plots/atlas-*, the LR-sensitivity table on stdout.
# Named after the atlas drawn (plots/$(ATLAS)-*): a float32 or seeded run copies its own two
# figures, never a float64 atlas's left in plots/; the initialisation figures (atlas_init is
# float64 in every variant) are docs' under the float64 atlas's name only.
ATLAS_FIGURES := $(ATLAS)-atlas_lr $(ATLAS)-atlas_sensitivity \
                 $(if $(filter atlas,$(ATLAS)),atlas-atlas_grad atlas-output_change) \
                 model_update-model_update
atlas: deps
	@case "$(PRECISION)" in float64|float32) ;; \
	  *) echo "make atlas: PRECISION must be float64 or float32, not '$(PRECISION)'" >&2; exit 2;; esac
	@case "$(SEEDS)" in 1|3) ;; \
	  *) echo "make atlas: SEEDS must be 1 or 3 (experiments/atlas_seeds.ini's init.seed), not '$(SEEDS)'" >&2; \
	     exit 2;; esac
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the atlas trains on
	@set -e; for f in $(ATLAS_EXPERIMENTS); do ./stability sweep experiments/$$f.ini; done
	./stability plot results/$(ATLAS).h5 results/atlas_init.h5
	./stability plot results/model_update.h5
	./stability table atlas results/$(ATLAS).h5
	@if [ $(ATLAS) != $(ATLAS_F64) ] && [ -f results/$(ATLAS_F64).h5 ]; then \
	  ./stability table atlas-compare results/$(ATLAS_F64).h5 results/$(ATLAS).h5; fi
	@mkdir -p docs/figures; for f in $(ATLAS_FIGURES); do \
	  if [ -f plots/$$f.png ]; then cp plots/$$f.png docs/figures/; fi; done

# Fig. 2 and Fig. 4 of the paper on translation, with BLEU (docs/paper_training.md): the
# reduced sets that fit 2 cores (experiments/fig2_bleu_short.ini, fig4_bleu_short.ini; the full
# sets for a cluster are fig2_bleu.ini and fig4_bleu.ini), their validation loss and BLEU
# against epochs. make figures-train runs them beside the BERT figure.
BLEU_EXPERIMENTS := fig2_bleu_short fig4_bleu_short
BLEU_FIGURES := fig2_bleu_short-val_loss fig2_bleu_short-bleu fig4_bleu_short-val_loss \
                fig4_bleu_short-bleu
# Which published explanation of warm-up predicts which failure (docs/curvature.md): the
# indicators' sweeps (every atlas cell without warm-up, 20 measured updates; Fig. 2's runs
# through the curvature lens; the per-block heat map's runs), then the table of ROC AUCs
# against the atlas's outcomes (make atlas first: results/atlas.h5, results/atlas_init.h5) —
# `stability table warmup-explained`, -runs (Fig. 2's runs) and -cells (every cell, TSV).
WARMUP_EXPLAINED := warmup_explained warmup_explained_fig2 warmup_explained_blocks
WARMUP_FIGURES := warmup_explained_fig2-curv_lens warmup_explained-curv_init_depth \
                  warmup_explained-curv_lens warmup_explained_blocks-curv_blocks
# The outcomes: the atlas of PRECISION (float64: results/atlas.h5; make warmup-explained
# PRECISION=float32 takes results/atlas_f32.h5, the same run names).
.PHONY: warmup-explained
warmup-explained: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text every run trains on
	@set -e; for f in $(WARMUP_EXPLAINED); do ./stability sweep experiments/$$f.ini; done
	@[ -f results/$(ATLAS).h5 ] || { echo "make warmup-explained: results/$(ATLAS).h5 is missing: make atlas$(if $(filter float32,$(PRECISION)), PRECISION=float32) gives the outcomes" >&2; exit 2; }
	./stability table warmup-explained results/$(ATLAS).h5 results/warmup_explained.h5 \
	  $$([ -f results/atlas_init.h5 ] && echo results/atlas_init.h5) > results/warmup_explained.md.tmp
	@echo >> results/warmup_explained.md.tmp
	./stability table warmup-runs results/warmup_explained_fig2.h5 >> results/warmup_explained.md.tmp
	mv results/warmup_explained.md.tmp results/warmup_explained.md   # whole, or the old one kept
	./stability table warmup-cells results/$(ATLAS).h5 results/warmup_explained.h5 \
	  $$([ -f results/atlas_init.h5 ] && echo results/atlas_init.h5) --tsv > results/warmup_explained_cells.tsv.tmp
	mv results/warmup_explained_cells.tsv.tmp results/warmup_explained_cells.tsv
	@set -e; for f in $(WARMUP_EXPLAINED); do ./stability plot results/$$f.h5; done   # curv_* (docs/curvature.md#figures)
	./stability plot results/warmup_explained.h5 results/$(ATLAS).h5 \
	  $$([ -f results/atlas_init.h5 ] && echo results/atlas_init.h5) --out plots/indicators   # warmup_indicators (Admin's panel from atlas_init)
	@mkdir -p docs/figures; for f in $(WARMUP_FIGURES); do \
	  if [ -f plots/$$f.png ]; then cp plots/$$f.png docs/figures/; fi; done
	@cp plots/indicators/warmup_explained-warmup_indicators.png docs/figures/ 2>/dev/null || true
	@cat results/warmup_explained.md

.PHONY: figures-bleu figures-train
figures-bleu: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/translation/manifest.txt ] || setup/translation-corpus.sh
	@set -e; for f in $(BLEU_EXPERIMENTS); do ./stability sweep experiments/$$f.ini; done
	@set -e; for f in $(BLEU_EXPERIMENTS); do ./stability plot results/$$f.h5; done
	@mkdir -p docs/figures; for f in $(BLEU_FIGURES); do \
	  if [ -f plots/$$f.png ]; then cp plots/$$f.png docs/figures/; fi; done
figures-train: figures-bleu
# Fig. 5 of the paper (BERT's masked LM, docs/paper_training.md): the reduced set that fits 2
# cores (experiments/fig5_mlm_short.ini; the full set for a cluster is experiments/fig5_mlm.ini),
# its figure and its table of seeds (update reaching a loss, mean ± 95 % CI). make figures-train
# runs it beside the translation figures.
MLM_EXPERIMENTS := fig5_mlm_short
MLM_FIGURES := fig5_mlm_short-mlm_val_loss
.PHONY: figures-mlm figures-train
figures-mlm: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the masked LM trains on
	@set -e; for f in $(MLM_EXPERIMENTS); do ./stability sweep experiments/$$f.ini; done
	@set -e; for f in $(MLM_EXPERIMENTS); do ./stability plot results/$$f.h5; \
	  ./stability info results/$$f.h5 --train; done
	@mkdir -p docs/figures; for f in $(MLM_FIGURES); do \
	  if [ -f plots/$$f.png ]; then cp plots/$$f.png docs/figures/; fi; done
figures-train: figures-mlm

# The curvature estimators against the exact values at the atlas's size (docs/estimators.md):
# experiments/estimators.ini (Post-LN and Pre-LN x lr 1e-3, 3e-3, 40 updates, a curvature row
# every 5 with every estimator), one run at a time (27 min of wall time here on a busy machine),
# the table (`stability table estimators`) into results/estimators.md and on stdout, the figures.
ESTIMATOR_FIGURES := estimators-est_density estimators-est_critical
.PHONY: estimators
estimators: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the runs train on
	./stability sweep experiments/estimators.ini --jobs 1
	./stability plot results/estimators.h5
	./stability table estimators results/estimators.h5 > results/estimators.md.tmp
	mv results/estimators.md.tmp results/estimators.md   # whole, or the old one kept
	@mkdir -p docs/figures; for f in $(ESTIMATOR_FIGURES); do \
	  if [ -f plots/$$f.png ]; then cp plots/$$f.png docs/figures/; fi; done
	@cat results/estimators.md

# The remedies of warm-up on the failure boundary (docs/remedies.md, docs/design.md §6k, issue 46):
# the reduced sweeps (experiments/remedies_reduced.ini, remedies_reduced_cap.ini: L = 6, four
# schemes, six lrs, twelve methods, two seeds, 576 runs; and remedies_indicators.ini, the
# warm-up study's indicators on the same cells and seeds, 48 short runs), the tables (`stability
# table remedies`; the indicators scored against the remedies' Adam runs by `stability table
# warmup-explained`) into results/remedies.md, whole or not at all, and the figure
# remedies_boundary. About 70 min on 2 cores shared with other work (2026-11-28).
REMEDIES_FILES := results/remedies_reduced.h5 results/remedies_reduced_cap.h5
.PHONY: remedies
remedies: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the runs train on
	./stability sweep experiments/remedies_indicators.ini --jobs $(JOBS)
	./stability sweep experiments/remedies_reduced_cap.ini --jobs $(JOBS)
	./stability sweep experiments/remedies_reduced.ini --jobs $(JOBS)
	./stability plot $(REMEDIES_FILES)
	{ ./stability table remedies $(REMEDIES_FILES) && echo && \
	  ./stability table warmup-explained results/remedies_indicators.h5 results/remedies_reduced.h5; \
	} > results/remedies.md.tmp
	mv results/remedies.md.tmp results/remedies.md   # whole, or the old one kept
	@cat results/remedies.md

# Today's optimizers (docs/optimizers.md, docs/design.md §6h): do Muon and Lion need warm-up where
# Adam does, does Post-LN's failure at L = 12 survive them, QK-Clip, Riabinin et al.'s adaptive
# schedule. The reduced sweeps (about 75 min on 2 shared cores); the table into
# results/optimizers.md, the figure optimizers_boundary into plots/.
OPTIMIZERS_SWEEPS := optimizers_reduced_muon optimizers_reduced_lion optimizers_reduced_adam \
                     optimizers_reduced_muonclip optimizers_reduced_muon_fstar optimizers_reduced_lion_fstar
OPTIMIZERS_FILES := $(OPTIMIZERS_SWEEPS:%=results/%.h5)
.PHONY: optimizers
optimizers: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the runs train on
	for s in $(OPTIMIZERS_SWEEPS); do ./stability sweep experiments/$$s.ini --jobs $(JOBS) || exit 1; done
	./stability plot $(OPTIMIZERS_FILES)
	./stability table optimizers $(OPTIMIZERS_FILES) > results/optimizers.md.tmp
	mv results/optimizers.md.tmp results/optimizers.md   # whole, or the old one kept
	@cat results/optimizers.md

# Precision (docs/precision.md, docs/design.md "Low precision, emulated"): bfloat16, fp8, pure
# bfloat16 stores and Qiu & Yao's softmax fix against float32 on the dynamics' reference, three
# seeds, and the size axis (today's block at d = 32, 64, 128; about 40 min in all on 2 shared
# cores); the tables into results/precision.md, precision_lines and precision_lr into plots/.
PRECISION_SWEEPS := precision_reduced precision_reduced_fix precision_reduced_pure
PRECISION_WIDTHS := 32 64 128   # the size axis: a file per width (the table compares one size)
PRECISION_FILES := $(PRECISION_SWEEPS:%=results/%.h5)
.PHONY: precision
precision: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the runs train on
	for s in $(PRECISION_SWEEPS) $(PRECISION_WIDTHS:%=precision_width_d%); do \
	  ./stability sweep experiments/$$s.ini --jobs $(JOBS) || exit 1; done
	./stability plot $(PRECISION_FILES)
	./stability plot results/precision_width_d128.h5
	{ ./stability table precision $(PRECISION_FILES) && for d in $(PRECISION_WIDTHS); do echo; \
	  ./stability table precision results/precision_width_d$$d.h5 || exit 1; done; } > results/precision.md.tmp
	mv results/precision.md.tmp results/precision.md   # whole, or the old one kept
	@cat results/precision.md

# Training dynamics (docs/dynamics.md, docs/design.md §6g): attention-logit growth, entropy
# collapse, QK-norm and the z-loss over the learning rate; figures into plots/logit_growth*-dyn_*.
# The reduced grid by default (about 30 min on 2 idle cores); DYNAMICS_SWEEP=logit_growth for
# the full 80-run grid (a cluster's job: ./stability sweep experiments/logit_growth.ini --slurm).
DYNAMICS_SWEEP ?= logit_growth_quick
DYNAMICS_FIGURES := dyn_lr dyn_lines
dynamics: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the runs train on
	./stability sweep experiments/$(DYNAMICS_SWEEP).ini
	./stability plot results/$(DYNAMICS_SWEEP).h5
	@mkdir -p docs/figures; for f in $(DYNAMICS_FIGURES); do \
	  if [ -f plots/$(DYNAMICS_SWEEP)-$$f.png ]; then cp plots/$(DYNAMICS_SWEEP)-$$f.png docs/figures/; fi; done

# The size axis (docs/proxies.md; Wortsman et al. 2023): final loss against lr for widths 32, 64,
# 128, with and without QK-norm and the z-loss, standard and muP, on the 2017 block and today's
# (experiments/proxies_2017.ini, proxies_llama.ini: 432 runs, float32, about 40 min on 2 idle
# cores), its figures and the table of numbers (stability table proxies). PROXIES=trial: a 108-run
# part of it that checks the pipeline (*_trial.ini); PROXIES=full: the full grid (*_full.ini, 2688
# runs: a cluster's job, ./stability sweep experiments/proxies_2017_full.ini --slurm --submit).
# Figures (docs/proxies.md#figures): each block's into plots/proxies_<block>-size_*.png, both blocks
# at once into plots/proxies_2017-size_*_by_block.png; those docs/proxies.md shows are copied to
# docs/figures/proxies-size_*_by_block.png, but never a trial's (PROXIES=trial draws them only).
PROXIES ?= reduced
PROXIES_SUFFIX := $(if $(filter trial,$(PROXIES)),_trial,$(if $(filter full,$(PROXIES)),_full,))
PROXIES_SWEEPS := proxies_2017$(PROXIES_SUFFIX) proxies_llama$(PROXIES_SUFFIX)
PROXIES_FIGURES := size_lr_by_block size_sensitivity_by_block size_best_lr_by_block \
                   size_logit_by_block
.PHONY: proxies atlas-llama
proxies: deps
	@case "$(PROXIES)" in reduced|trial|full) ;; \
	  *) echo "make proxies: PROXIES must be reduced, trial or full, not '$(PROXIES)'" >&2; exit 2;; esac
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the runs train on
	@set -e; for f in $(PROXIES_SWEEPS); do ./stability sweep experiments/$$f.ini; done
	@set -e; for f in $(PROXIES_SWEEPS); do ./stability plot results/$$f.h5; done
	./stability plot $(PROXIES_SWEEPS:%=results/%.h5)
	./stability table proxies $(PROXIES_SWEEPS:%=results/%.h5)
	@if [ "$(PROXIES)" != trial ]; then mkdir -p docs/figures; for f in $(PROXIES_FIGURES); do \
	  if [ -f plots/$(firstword $(PROXIES_SWEEPS))-$$f.png ]; then \
	    cp plots/$(firstword $(PROXIES_SWEEPS))-$$f.png docs/figures/proxies-$$f.png; fi; done; fi

# The atlas on today's block (docs/atlas.md, docs/proxies.md): experiments/atlas_llama.ini, the
# atlas's 288 training runs with rope, SwiGLU, no biases and RMSNorm, in float32; its table, and
# the 2017 block's float32 atlas (make atlas PRECISION=float32) beside it when it is there.
atlas-llama: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh
	./stability sweep experiments/atlas_llama.ini
	./stability plot results/atlas_llama.h5
	./stability table atlas results/atlas_llama.h5
	@if [ -f results/atlas_f32.h5 ]; then \
	  ./stability table atlas-compare results/atlas_f32.h5 results/atlas_llama.h5; fi

# The advisor's held-out accuracy (docs/design.md, "The advisor"): the outcome sweep
# experiments/advise_llama.ini (today's block at L = 6, 96 runs, ~5 min on 2 cores), then
# `stability advise` on each of its warm-up-1 cells (48 cells, each cell's resolved config from
# `stability sweep --configs`; ~30 s a cell, ~25 min on 2 cores), and on Fig. 2's two cells
# (configs/warmup_6-6.ini at lr 3e-3, Post-LN and Pre-LN; ~2 min each) against
# experiments/fig2_bleu_short.ini's runs (the sweep of make figures-bleu: ~1 h when not yet
# run), then `stability table advise` into results/advise.md.
ADVICE_CELLS := results/advice_cells
.PHONY: advise-validation
advise-validation: deps
	$(MAKE) -j$(JOBS) stability
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the atlas trains on
	@[ -s results/translation/manifest.txt ] || setup/translation-corpus.sh   # Fig. 2's
	./stability sweep experiments/advise_llama.ini
	./stability sweep experiments/fig2_bleu_short.ini
	./stability sweep experiments/advise_llama.ini --configs $(ADVICE_CELLS)
	@mkdir -p results/advice
	@set -e; for f in $(ADVICE_CELLS)/*_w1.ini; do \
	  n=$$(basename "$$f" .ini); \
	  [ -f "results/advice/$$n.h5" ] || ./stability advise --config "$$f" --quiet \
	    --out "results/advice/$$n.h5"; done   # the runs without warm-up: the name's _w1
	@set -e; for p in post pre; do [ -f results/advice/fig2_$${p}_adam.h5 ] || \
	  ./stability advise --config configs/warmup_6-6.ini --set train.lr=3e-3 \
	    --set model.placement=$$p --quiet --out results/advice/fig2_$${p}_adam.h5; done
	./stability table advise results/advice/*.h5 results/advise_llama.h5 \
	  results/fig2_bleu_short.h5 > results/advise.md.tmp
	mv results/advise.md.tmp results/advise.md   # whole, or the old one kept
	@cat results/advise.md

# The tests, by kind (docs/testing.md). CHECK_* are the fast tier, `make check` (at most 3 minutes
# on 2 cores: the C unit tests, the documents' links, the command line, the corpus and a quick
# Python test of each module); `make test` runs it and then the rest, so it is still every test.
# Against PyTorch float64 / float32 (tests/torch_ref.py; each also runs its planted-fault self-test):
CHECK_TORCH := test_torch test_torch_mlm test_torch_float32 test_torch_optim
TORCH := test_torch_encdec test_torch_schemes test_translate test_torch_dynamics test_torch_muon \
         test_torch_llama test_torch_hvp test_torch_remedies
# Numbers against definitions, hand values or GSL, on constructed or tiny real runs:
CHECK_NUMBERS := test_subopt test_curvature test_remedies test_curvature_diag test_advise_table \
                 test_probe test_proxies test_precision test_runs test_est_table \
                 test_translation_plateau test_run_tables
NUMBERS := test_advise test_curv_signal test_estimators test_curvature_anchor \
           test_train test_watch test_warmup_answer test_threads test_float32 \
           test_warmup_explained test_warmup_seeds test_atlas_table test_remedies_table \
           test_precision_table test_optimizers_table test_proxies_muon
# Figures (tests/plot_check.py: the numbers, keys and titles of `plot --format gp`):
CHECK_FIGURES := test_dynamics_plot test_curvature_plot test_plot_keys test_plot_overlay
FIGURES_TESTS := test_proxies_plot
# Sweeps, files and faults:
CHECK_FILES := test_sweep_reuse
FILES_TESTS := test_sweep test_hostile test_harden_misc
# The layout (docs/design.md §2): no folder includes or calls a higher one (after the build):
CHECK_LAYOUT := test_layers
CHECK_PY := $(CHECK_TORCH) $(CHECK_NUMBERS) $(CHECK_FIGURES) $(CHECK_FILES) $(CHECK_LAYOUT)
REST_PY := $(TORCH) $(NUMBERS) $(FIGURES_TESTS) $(FILES_TESTS)

check:
	$(MAKE) -j$(JOBS) stability $(BUILD)/test_runner
	@[ -s results/licenses.txt ] || setup/corpus.sh   # the text the training tests run on
	$(MAKE) unit
	/usr/bin/python3 tools/check_docs.py
	tests/test_cli.sh
	tests/test_corpus.sh
	@set -e; for t in $(CHECK_PY); do echo "== tests/$$t.py"; /usr/bin/python3 tests/$$t.py; done

# Every test: the fast tier (above), then the rest: PyTorch cross-checks of every scheme, enc-dec,
# translation, dynamics, muon, today's block, H·v and remedies; training runs (resume, signals,
# kill -9, divergence), the same bits at 1, 2, 3 and 16 threads (tests/test_threads.py), training
# in float32 (tests/test_float32.py), the figures of the warm-up and size studies, sweeps,
# faults (devices, full disk, hostile names, signals, locks; tests/test_faults.sh), a real local
# Slurm cluster (root only; skipped otherwise), the build without root against unpacked .deb files
# (tests/test_cluster_build.sh, docs/cluster.md; root only), the command line under
# UndefinedBehaviorSanitizer (tests/test_ubsan.sh), then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
test: test-deps
	$(MAKE) check
	@set -e; for t in $(REST_PY); do echo "== tests/$$t.py"; /usr/bin/python3 tests/$$t.py; done
	tests/test_faults.sh
	tests/test_slurm.sh
	tests/test_cluster_build.sh
	$(MAKE) ubsan-cli
	$(MAKE) asan-unit

unit:
	$(MAKE) -j$(JOBS) $(BUILD)/test_runner
	cd tests && CK_DEFAULT_TIMEOUT=600 ../$(BUILD)/test_runner

# The command line under UndefinedBehaviorSanitizer, with float-cast-overflow (which GCC's
# -fsanitize=undefined leaves out: a double too large for a long was issue 44's curvature advice
# at lr 1e20), on paths the unit tests do not take (tests/test_ubsan.sh, about a minute).
UBSAN_CFLAGS := -O1 -fsanitize=undefined,float-cast-overflow -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
ubsan-cli:
	$(MAKE) -j$(JOBS) BUILD=build-ubsan CFLAGS="$(UBSAN_CFLAGS)" build-ubsan/stability
	STABILITY=build-ubsan/stability tests/test_ubsan.sh

$(BUILD)/stability: $(OBJ) $(CLI_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS)

asan-unit:
	$(MAKE) -j$(JOBS) BUILD=build-asan CFLAGS="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" build-asan/test_runner
	cd tests && CK_FORK=no CK_DEFAULT_TIMEOUT=1200 ASAN_OPTIONS=detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ../build-asan/test_runner

# Speed (issue 7, docs/performance.md): ms per forward+backward, GFLOP/s against DGEMM at 1024^3,
# PyTorch float64/float32 on the same model and threads, peak RSS; table + results/bench.csv;
# the updates at d = 64, 128, 256 again in the float32 core (train.precision = float32).
# PyTorch as loaded and at its fastest (a search over OpenBLAS kernels x threads x OMP wait
# policy; bench/bench_torch.c). Never part of `make test`. BENCH_ARGS narrows it, e.g.
# "--only u_lm --precision f64 --torch-kernels loaded,SkylakeX". Then the sweep's split, the
# update time before/after GEMM bits were made independent of the thread count
# (bench/split_cost.sh; builds that commit's benchmark once, in build/before-*), one curvature
# measurement at the anchor's size (bench/curvature_cost.py) and the log line's cost per update
# (tools/bench_log.py).
BENCH_ARGS ?=
bench:
	$(MAKE) -j$(JOBS) $(BUILD)/bench/bench stability
	mkdir -p results
	$(BUILD)/bench/bench --csv results/bench.csv $(BENCH_ARGS)
	bench/sweep_split.sh
	bench/split_cost.sh
	/usr/bin/python3 bench/curvature_cost.py ./stability
	/usr/bin/python3 tools/bench_log.py ./stability

clean:
	rm -rf build build-asan build-ubsan stability
