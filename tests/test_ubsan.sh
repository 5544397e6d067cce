#!/usr/bin/env bash
# test_ubsan.sh — the command line under UndefinedBehaviorSanitizer (`make ubsan-cli` builds
# build-ubsan/stability with -fsanitize=undefined,float-cast-overflow -fno-sanitize-recover=all
# and runs this from the repo root; $STABILITY names another binary). Paths the unit tests do
# not take, each on a tiny model, about a minute in all:
#   - a run at lr 1e20 with curvature rows, whose warm-up estimate (≈ 8e22 updates) does not fit
#     a long: no sanitizer report, exit 0, and the lr advice in its warning and in `info`
#     ("--set train.lr=5 (a warm-up would need about 8e+22 updates"; before the fix the
#     conversion was undefined and the advice was missing);
#   - the same at lr 1e6 (the estimate fits a long: 42311587056 updates, advice train.lr=0.095);
#   - probe with curvature, dump --hvp, gradcheck: exit 0, no sanitizer report.
# Prints "ok - ..." / "not ok - ..." per check, then "ubsan: N passed, M failed"; exit 1 if M > 0.
set -u

cd "$(dirname "$0")/.." || exit 1
BIN=${STABILITY:-build-ubsan/stability}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
notok() { fail=$((fail + 1)); echo "not ok - $*"; }
check() { if eval "$2"; then ok "$1"; else notok "$1"; sed 's/^/    /' "$tmp/stderr" | head -5; fi; }
finish() {
    echo "ubsan: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}

if [ ! -x "$BIN" ]; then
    notok "$BIN exists and is executable (make ubsan-cli builds it)"
    finish
fi
# the build must hold the checks this test relies on, or every check below passes vacuously
if nm "$BIN" 2>/dev/null | grep -q __ubsan_handle_float_cast_overflow; then
    ok "$BIN is built with -fsanitize=float-cast-overflow"
else
    notok "$BIN is built with -fsanitize=float-cast-overflow (nm finds no __ubsan_handle_float_cast_overflow)"
    finish
fi

tmp=$(mktemp -d /tmp/stability_ubsan.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
TINY=(--config tiny --set probe.curvature_every=1 --set probe.curvature_iters=4
      --set probe.curvature_block_iters=0)

# run CMD...: 120 s at most, no stdin; rc, and stdout/stderr in $tmp.
run() {
    timeout 120 "$@" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
    rc=$?
}
clean() { ! grep -q 'runtime error' "$tmp/stderr" "$tmp/stdout"; }

run "$BIN" "${TINY[@]}" --set train.lr=1e20 --set train.steps=5 --out "$tmp/big.h5"
check "lr 1e20: exit 0, no sanitizer report" '[ $rc -eq 0 ] && clean'
check "lr 1e20: the live warning advises train.lr=5 (warm-up of about 8e+22 updates)" \
    'grep -q -- "--set train.lr=5 (a warm-up would need about 8e+22 updates" "$tmp/stderr"'
run "$BIN" info "$tmp/big.h5"
check "info of the lr 1e20 run: exit 0, no sanitizer report" '[ $rc -eq 0 ] && clean'
check "info of the lr 1e20 run: the same advice" \
    'grep -q -- "--set train.lr=5 (a warm-up would need about 8e+22 updates" "$tmp/stdout"'

run "$BIN" "${TINY[@]}" --set train.lr=1e6 --set train.steps=5 --out "$tmp/mid.h5"
check "lr 1e6: exit 0, no sanitizer report, advice train.lr=0.095 (a warm-up of 42311587056)" \
    '[ $rc -eq 0 ] && clean && grep -q -- "--set train.lr=0.095 (a warm-up would need about 42311587056 updates" "$tmp/stderr"'

run "$BIN" probe --config tiny --set probe.seeds=2 --set probe.batches=2 \
    --set probe.curvature_every=1 --set probe.curvature_iters=4 --out "$tmp/probe.h5" --quiet
check "probe with curvature: exit 0, no sanitizer report" '[ $rc -eq 0 ] && clean'
run "$BIN" dump --config tiny --hvp --out "$tmp/dump.h5"
check "dump --hvp: exit 0, no sanitizer report" '[ $rc -eq 0 ] && clean'
run "$BIN" gradcheck --config tiny
check "gradcheck: exit 0, no sanitizer report" '[ $rc -eq 0 ] && clean'
finish
