# stability — build, test, run.  `make` builds ./stability; `make run` and `make test` also
# install missing Debian packages first (scripts/install-deps.sh).

CC       ?= cc
CFLAGS   ?= -O2
CFLAGS   += -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -fopenmp -g
# GSL's headers and BLAS API, OpenBLAS as the CBLAS behind it (never -lgslcblas: 25-45x slower).
PKG_CFLAGS = $(shell pkg-config --cflags gsl hdf5 inih)
PKG_LIBS   = $(shell pkg-config --libs-only-L hdf5) -lhdf5 -linih -lgsl -lopenblas -lm
CHECK_CFLAGS = $(shell pkg-config --cflags check)
CHECK_LIBS   = $(shell pkg-config --libs check)

SRC      := $(filter-out src/main.c,$(wildcard src/*.c))
TEST_SRC := $(wildcard tests/test_*.c) tests/check_main.c
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

BUILD    ?= build
OBJ      := $(SRC:src/%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%.o)

RUN_CONFIG ?= configs/postln_L6.ini

.PHONY: all deps test-deps run test unit asan-unit bench clean
all: stability

stability: $(OBJ) $(BUILD)/main.o
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/main.o: src/main.c $(wildcard src/*.h) | $(BUILD)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DSTABILITY_VERSION='"$(VERSION)"' -c -o $@ $<

$(BUILD)/%.o: src/%.c $(wildcard src/*.h) | $(BUILD)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.c $(wildcard src/*.h) tests/tests.h | $(BUILD)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(CHECK_CFLAGS) -Isrc -c -o $@ $<

$(BUILD)/test_runner: $(OBJ) $(TEST_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS) $(CHECK_LIBS)

$(BUILD)/bench/%.o: bench/%.c $(wildcard src/*.h) | $(BUILD)/bench
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc -c -o $@ $<

$(BUILD)/bench/bench: $(OBJ) $(BUILD)/bench/bench.o
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD):
	mkdir -p $(BUILD)/tests

$(BUILD)/bench:
	mkdir -p $(BUILD)/bench

deps:
	scripts/install-deps.sh

test-deps:
	scripts/install-deps.sh --test

# The main job: install what is missing, build, run the default config.
run: deps
	$(MAKE) stability
	./stability --config $(RUN_CONFIG)

# Every test: C unit tests (Check), the command line, PyTorch cross-check, probe files,
# then the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
test: test-deps
	$(MAKE) stability $(BUILD)/test_runner
	$(MAKE) unit
	tests/test_cli.sh
	/usr/bin/python3 tests/test_torch.py
	/usr/bin/python3 tests/test_probe.py
	$(MAKE) asan-unit

unit: $(BUILD)/test_runner
	cd tests && CK_DEFAULT_TIMEOUT=600 ../$(BUILD)/test_runner

asan-unit:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" build-asan/test_runner
	cd tests && CK_FORK=no CK_DEFAULT_TIMEOUT=1200 ASAN_OPTIONS=detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ../build-asan/test_runner

# Speed (issue 7, docs/performance.md): ms per forward+backward, GFLOP/s against DGEMM at 1024^3,
# PyTorch float64/float32 on the same model and threads, peak RSS; table + results/bench.csv.
# Never part of `make test`. BENCH_ARGS e.g. "--threads 1 --steps 20 --only a_".
BENCH_ARGS ?=
bench: $(BUILD)/bench/bench
	mkdir -p results
	$(BUILD)/bench/bench --csv results/bench.csv $(BENCH_ARGS)

clean:
	rm -rf build build-asan stability
