#!/usr/bin/env bash
# test_cli.sh — the command line's contract (docs/design.md §3, §4), run from the repo root as
# tests/test_cli.sh against ./stability (or the binary named by $STABILITY):
#   - every bad config (tests/configs/bad_*.ini) and every bad --set exits 2, the first line of
#     stderr is "FILE:LINE: key: ..." / "--set key: ...", and nothing is written;
#   - --help, VERB --help and --version exit 0; an unknown verb or option exits 2.
# Each bad fixture names its expected error in a comment "; expect: LINE KEY".
# Prints "ok - ..." / "not ok - ..." per check, then "cli: N passed, M failed"; exit 1 if M > 0.
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
BIN=${STABILITY:-./stability}
case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac
FIX=tests/configs
GOOD=$FIX/good_minimal.ini
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok - $*"; }
notok() { fail=$((fail + 1)); echo "not ok - $*"; }
finish() {
    echo "cli: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}

if [ ! -x "$BIN" ]; then
    notok "$BIN exists and is executable (run make first)"
    finish
fi

tmp=$(mktemp -d /tmp/stability_cli.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

# run CMD...: runs it (60 s at most, no stdin); sets rc, and stdout/stderr in $tmp.
run() {
    timeout 60 "$@" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
    rc=$?
}

# expect_error DESC PREFIX OUTFILE CMD...: exit code 2, first stderr line starts with PREFIX
# (literally), OUTFILE (if not "") not created, no results/NAME.h5 for the fixture either.
expect_error() {
    local desc=$1 prefix=$2 out=$3
    shift 3
    [ -n "$out" ] && rm -f "$out"
    run "$@"
    local first why=""
    first=$(head -n 1 "$tmp/stderr")
    [ "$rc" -eq 2 ] || why="exit code $rc, want 2;"
    [[ "$first" == "$prefix"* ]] || why="$why stderr '$first', want prefix '$prefix';"
    if [ -n "$out" ] && [ -e "$out" ]; then why="$why $out was created;"; fi
    if [ -z "$why" ]; then ok "$desc"; else notok "$desc: $why"; fi
}

# expect_rc DESC WANT CMD...: exit code only.
expect_rc() {
    local desc=$1 want=$2
    shift 2
    run "$@"
    if [ "$rc" -eq "$want" ]; then ok "$desc"; else notok "$desc: exit code $rc, want $want"; fi
}

# expect_usage DESC CMD...: exit 0 and a usage text on stdout.
expect_usage() {
    local desc=$1
    shift
    run "$@"
    if [ "$rc" -eq 0 ] && grep -qi 'usage' "$tmp/stdout"; then
        ok "$desc"
    else
        notok "$desc: exit code $rc, stdout: $(head -c 200 "$tmp/stdout")"
    fi
}

# ------------------------------------------------------------------ bad config files
nbad=0
for f in "$FIX"/bad_*.ini; do
    [ -e "$f" ] || continue
    nbad=$((nbad + 1))
    exp=$(sed -n 's/^; expect: \([0-9][0-9]*\) \([^ ]*\).*$/\1: \2: /p' "$f" | head -n 1)
    if [ -z "$exp" ]; then
        notok "$f has a '; expect: LINE KEY' comment"
        continue
    fi
    prefix="$f:$exp"
    name=$(basename "$f" .ini)
    had_default=0
    [ -e "results/$name.h5" ] && had_default=1
    expect_error "run $f: $prefix" "$prefix" "$tmp/run.h5" "$BIN" --config "$f" --out "$tmp/run.h5" --quiet
    expect_error "dump $f" "$prefix" "$tmp/dump.h5" "$BIN" dump --config "$f" --out "$tmp/dump.h5"
    expect_error "gradcheck $f" "$prefix" "" "$BIN" gradcheck --config "$f"
    if [ "$had_default" -eq 0 ] && [ -e "results/$name.h5" ]; then
        notok "$f: results/$name.h5 was created"
        rm -f "results/$name.h5"
    fi
done
if [ "$nbad" -ge 20 ]; then ok "found $nbad bad fixtures"; else notok "found only $nbad bad fixtures in $FIX"; fi

# ------------------------------------------------------------------ bad --set
while IFS='|' read -r set prefix; do
    expect_error "run --set '$set': $prefix" "$prefix" "$tmp/run.h5" \
        "$BIN" --config "$GOOD" --set "$set" --out "$tmp/run.h5" --quiet
    expect_error "dump --set '$set'" "$prefix" "$tmp/dump.h5" \
        "$BIN" dump --config "$GOOD" --set "$set" --out "$tmp/dump.h5"
done <<'EOF'
model.heads=3|--set model.heads: must divide model.d_model (8)
model.d_model=9|--set model.d_model: must be a multiple of model.heads (2)
model.nope=1|--set model.nope: unknown key
modle.heads=2|--set modle.heads: unknown section
model.heads|--set model.heads: expected section.key=value
heads=2|--set heads: expected section.key=value
model.layers=abc|--set model.layers: not an integer: 'abc'
model.layers=0|--set model.layers: must be
train.lr=inf|--set train.lr: must be finite
model.placement=Pre|--set model.placement: must be post, pre, peri
data.task=text|--set data.task: text needs data.path
data.mask_rate=1.5|--set data.mask_rate: must be in (0, 1)
data.mask_rate=-0.1|--set data.mask_rate: must be in (0, 1)
EOF

# A file error is reported before any --set error.
expect_error "file error before --set error" "$FIX/bad_duplicate.ini:6: model.heads: " "$tmp/run.h5" \
    "$BIN" --config "$FIX/bad_duplicate.ini" --set model.nope=1 --out "$tmp/run.h5" --quiet

# ------------------------------------------------------------------ missing config
expect_error "missing config file" "$FIX/does_not_exist.ini: cannot open: " "$tmp/run.h5" \
    "$BIN" --config "$FIX/does_not_exist.ini" --out "$tmp/run.h5" --quiet
expect_error "missing config name (configs/ lookup)" "no_such_config_xyz: cannot open: " "$tmp/dump.h5" \
    "$BIN" dump --config no_such_config_xyz --out "$tmp/dump.h5"

# ------------------------------------------------------------------ help, version, usage errors
expect_usage "--help" "$BIN" --help
for verb in sweep plot info dump gradcheck train probe translate advise; do
    expect_usage "$verb --help" "$BIN" "$verb" --help
done
# --help names every verb, option and exit code (issue 33): each of these words in the text
run "$BIN" --help
missing=""
for w in "train CONFIG" "probe CONFIG" "info FILE.h5... --train" "--schemes" "--perturb S" \
         "--entries N" "--tol X" "--jobs N" "--dry-run" "--task I" "--merge" "--only-missing" \
         "--submit" "--format" "--beam K" "--lenpen A" "--max-len-a" "--input FILE" "--ids" \
         "--resume" "--force" "--quiet" "2 bad usage" "3 sweep --merge" "130 a run stopped by SIGINT" \
         "128 + the signal" "output.log_every" "advise --config" "--configs DIR"; do
    grep -qF -- "$w" "$tmp/stdout" || missing="$missing '$w'"
done
if [ -z "$missing" ]; then ok "--help names every verb, option and exit code"; else notok "--help lacks$missing"; fi
run "$BIN" --version
if [ "$rc" -eq 0 ] && [ -s "$tmp/stdout" ]; then ok "--version"; else notok "--version: exit code $rc"; fi

expect_rc "no arguments" 2 "$BIN"
expect_rc "unknown verb" 2 "$BIN" frobnicate
expect_rc "unknown option" 2 "$BIN" --frobnicate
expect_rc "unknown option after --config" 2 "$BIN" --config "$GOOD" --frobnicate --out "$tmp/run.h5"
[ -e "$tmp/run.h5" ] && notok "unknown option: $tmp/run.h5 was created" && rm -f "$tmp/run.h5"
expect_error "a mistyped verb: did you mean" "stability: unknown verb: trian (did you mean train?)" "" "$BIN" trian
expect_error "a config key given as an option: the --set hint" \
    "stability: unknown option: --steps (train.steps is a config key: --set train.steps=VALUE)" "" \
    "$BIN" train "$GOOD" --steps 100
expect_error "--lr=1e-3: the --set hint" \
    "stability: unknown option: --lr=1e-3 (train.lr is a config key: --set train.lr=VALUE)" "" \
    "$BIN" train "$GOOD" --lr=1e-3
expect_error "train without its CONFIG says the usage it has" "stability: train: missing CONFIG (usage: stability train CONFIG" \
    "" "$BIN" train
run "$BIN" train --help; cp "$tmp/stdout" "$tmp/train_help"
run "$BIN" probe --help
if ! cmp -s "$tmp/stdout" "$tmp/train_help" && grep -q "^train (train.steps > 0): trains" "$tmp/train_help" &&
   grep -q "^probe (train.steps = 0): measures at initialisation" "$tmp/stdout" &&
   ! grep -q -- "--resume" "$tmp/stdout"; then
    ok "train --help and probe --help each say what their verb does"
else
    notok "train --help and probe --help: the same text, or not saying what each does"
fi
expect_rc "unknown option of dump" 2 "$BIN" dump --config "$GOOD" --out "$tmp/dump.h5" --frobnicate
expect_rc "--config without a value" 2 "$BIN" --config
expect_rc "--set without a value" 2 "$BIN" --config "$GOOD" --set
expect_rc "dump without --out" 2 "$BIN" dump --config "$GOOD"

# ------------------------------------------------------------------ nothing silent (docs/faults.md)
# Each of these used to run, or do something else than asked, with exit 0: now exit 2, a message
# naming the option, and nothing written.
printf '[sweep]\nbase = %s\nmodel.layers = 1, 2\nprobe.seeds = 1\nprobe.batches = 1\n' "$GOOD" > "$tmp/s.ini"
long=$(printf "$tmp/%01100d.h5" 0)
expect_error "--config '': not the default config" "stability: --config: empty file name" "$tmp/run.h5" \
    "$BIN" --config '' --out "$tmp/run.h5" --quiet
expect_error "--out of 1100 characters: not truncated" "stability: --out: path longer than 1023" "" \
    "$BIN" --config "$GOOD" --out "$long" --quiet
expect_error "dump --out of 1100 characters" "stability: --out: path longer than 1023" "" \
    "$BIN" dump --config "$GOOD" --out "$long"
expect_error "--out ''" "stability: --out: empty file name" "" "$BIN" --config "$GOOD" --out '' --quiet
expect_error "sweep --task '': not task 0" "stability: --task: not a run index" "" "$BIN" sweep "$tmp/s.ini" --task ''
expect_error "sweep --jobs 4294967297: not 1" "stability: --jobs: not an integer in 1..8192" "" \
    "$BIN" sweep "$tmp/s.ini" --jobs 4294967297
expect_error "dump --perturb '': not 0" "stability: --perturb: not a finite number >= 0" "$tmp/dump.h5" \
    "$BIN" dump --config "$GOOD" --perturb '' --out "$tmp/dump.h5"
expect_error "gradcheck --tol inf: not a tolerance" "stability: --tol: not a finite number > 0" "" \
    "$BIN" gradcheck --config "$GOOD" --tol inf
expect_error "gradcheck --tol nan" "stability: --tol: not a finite number > 0" "" "$BIN" gradcheck --config "$GOOD" --tol nan
expect_error "gradcheck --entries ''" "stability: --entries: not a positive integer" "" \
    "$BIN" gradcheck --config "$GOOD" --entries ''
expect_error "the run verb refuses --perturb (it would ignore it)" "stability: not an option of this verb" \
    "$tmp/run.h5" "$BIN" --config "$GOOD" --perturb 0.3 --out "$tmp/run.h5" --quiet
expect_error "dump refuses --tol" "stability: not an option of this verb" "$tmp/dump.h5" \
    "$BIN" dump --config "$GOOD" --tol 1e-3 --out "$tmp/dump.h5"
expect_error "dump refuses --entries" "stability: not an option of this verb" "$tmp/dump.h5" \
    "$BIN" dump --config "$GOOD" --entries 3 --out "$tmp/dump.h5"
expect_error "gradcheck refuses --resume" "stability: not an option of this verb" "" \
    "$BIN" gradcheck --config "$GOOD" --resume
expect_error "--set init.seed=4294967296: seeds are 32-bit (it would alias seed 0)" \
    "--set init.seed: must be <= 4294967295" "$tmp/run.h5" \
    "$BIN" --config "$GOOD" --set init.seed=4294967296 --out "$tmp/run.h5" --quiet
expect_error "a probe's last seed past 2^32 - 1" "--set init.seed: init.seed + probe.seeds - 1 must be" \
    "$tmp/run.h5" "$BIN" --config "$GOOD" --set init.seed=4294967295 --set probe.seeds=2 --out "$tmp/run.h5" --quiet
# out of memory: refused before allocating, with the estimate, the key and exit 2 (no crash, no .tmp)
expect_error "probe.seeds too many for this machine: refused with the estimate" \
    "--set probe.seeds: 2000000000 seeds need about" "$tmp/run.h5" \
    "$BIN" --config "$GOOD" --set probe.seeds=2000000000 --out "$tmp/run.h5" --quiet
if ls "$tmp"/run.h5.tmp.* >/dev/null 2>&1; then notok "... and a .tmp file was left"
else ok "... and no .tmp file was left"; fi
expect_error "model.layers too many for this machine: refused with the estimate" \
    "$GOOD: model: needs about" "$tmp/run.h5" \
    "$BIN" --config "$GOOD" --set model.layers=100000 --set model.d_model=1024 --set model.heads=4 \
    --set model.d_ff=4096 --out "$tmp/run.h5" --quiet
# plot: an empty --format, an empty item, and --out naming a file
run "$BIN" dump --config "$GOOD" --out "$tmp/pl.h5" --quiet
run "$BIN" --config "$GOOD" --set probe.seeds=2 --set probe.batches=1 --out "$tmp/pl.h5" --force --quiet
expect_error "plot --format '': not 'nothing drawn, exit 0'" "stability: --format: not png, pdf or svg" "" \
    "$BIN" plot "$tmp/pl.h5" --out "$tmp/plots" --format ''
expect_error "plot --format png,,pdf" "stability: --format: not png, pdf or svg" "" \
    "$BIN" plot "$tmp/pl.h5" --out "$tmp/plots" --format png,,pdf
echo "a file" > "$tmp/notadir"
expect_error "plot --out FILE: exit 2" "stability: --out $tmp/notadir: not a directory" "" \
    "$BIN" plot "$tmp/pl.h5" --out "$tmp/notadir" --format png
if [ ! -s "$tmp/stdout" ] && [ "$(cat "$tmp/notadir")" = "a file" ]; then ok "... and no PNG on stdout, the file untouched"
else notok "plot --out FILE wrote $(wc -c < "$tmp/stdout") bytes to stdout"; fi
# [output] plots = true draws a training run's figures too
mkdir -p "$tmp/pt"
(cd "$tmp/pt" && timeout 60 "$BIN" --config "$ROOT/$GOOD" --set train.steps=20 --set output.plots=true \
    --out t.h5 --quiet >"$tmp/stdout" 2>"$tmp/stderr" </dev/null)
rc=$?
if [ "$rc" -eq 0 ] && [ -s "$tmp/pt/plots/t-loss.png" ]; then ok "[output] plots = true: a training run draws plots/t-loss.png"
else notok "[output] plots = true for training: exit $rc, $(ls "$tmp/pt/plots" 2>&1 | head -1)"; fi
# a probe whose values overflow is recorded (status diverged, its reason) and said, exit 0
run "$BIN" --config "$GOOD" --set init.scheme=normal --set init.std=1e100 --set probe.seeds=2 \
    --set probe.batches=1 --out "$tmp/ov.h5" --quiet
info=$("$BIN" info "$tmp/ov.h5" 2>/dev/null | head -1)
if [ "$rc" -eq 0 ] && grep -q "warning: .*overflowed" "$tmp/stderr" && [[ "$info" == *"status diverged"* ]]; then
    ok "a probe that overflows: warned, recorded as diverged, exit 0"
else
    notok "a probe that overflows: exit $rc, '$(head -1 "$tmp/stderr")', info '$info'"
fi

# ------------------------------------------------------------------ train and probe, --set's '=', options that would be ignored
# (issue 33: `stability train` / `probe` as verbs; issue 34 (c): no option silently ignored)
expect_error "--set KEY VALUE: hints at '='" "--set train.lr: expected section.key=value (did you mean --set train.lr=1e-3?)" \
    "$tmp/run.h5" "$BIN" --config "$GOOD" --set train.lr 1e-3 --out "$tmp/run.h5"
run "$BIN" probe "$GOOD" --set probe.seeds=1 --set probe.batches=1 --set probe.seeds=2 --out "$tmp/rep.h5" --quiet
seeds=$(/usr/bin/python3 -c "import h5py,sys; print(h5py.File(sys.argv[1])['probe/loss'].shape[0])" "$tmp/rep.h5" 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$seeds" = 2 ] && grep -q "probe.seeds given twice: the later, probe.seeds=2, replaces probe.seeds=1" "$tmp/stderr"; then
    ok "a repeated --set: the later wins, and says so"
else
    notok "a repeated --set: exit $rc, $seeds seeds, '$(head -1 "$tmp/stderr")'"
fi
expect_error "train CONFIG with train.steps = 0: refused, names probe" "stability: train: " "$tmp/run.h5" \
    "$BIN" train "$GOOD" --out "$tmp/run.h5"
expect_error "probe CONFIG that trains: refused, names train" "stability: probe: " "$tmp/run.h5" \
    "$BIN" probe "$GOOD" --set train.steps=5 --out "$tmp/run.h5"
run "$BIN" train "$GOOD" --set train.steps=3 --set train.warmup=0 --out "$tmp/tr.h5" --quiet
if [ "$rc" -eq 0 ] && [ -s "$tmp/tr.h5" ]; then ok "train CONFIG trains"; else notok "train CONFIG: exit $rc, $(head -1 "$tmp/stderr")"; fi
run "$BIN" probe "$GOOD" --set probe.seeds=1 --set probe.batches=1 --out "$tmp/pr.h5" --quiet
if [ "$rc" -eq 0 ] && [ -s "$tmp/pr.h5" ]; then ok "probe CONFIG probes"; else notok "probe CONFIG: exit $rc, $(head -1 "$tmp/stderr")"; fi
expect_rc "probe refuses --resume" 2 "$BIN" probe "$GOOD" --resume --out "$tmp/run.h5"
expect_rc "train with two configs" 2 "$BIN" train "$GOOD" "$GOOD" --out "$tmp/run.h5"
expect_rc "gradcheck refuses --out (it writes no file)" 2 "$BIN" gradcheck --config "$GOOD" --out "$tmp/g.h5"
expect_rc "gradcheck refuses --force" 2 "$BIN" gradcheck --config "$GOOD" --force
expect_error "info --train --all" "stability: info: --all, --schemes and --train are different outputs" "" \
    "$BIN" info "$tmp/tr.h5" --train --all
expect_error "info --train --schemes" "stability: info: --all, --schemes and --train are different outputs" "" \
    "$BIN" info "$tmp/tr.h5" --train --schemes
expect_error "info --all --schemes" "stability: info: --all, --schemes and --train are different outputs" "" \
    "$BIN" info "$tmp/tr.h5" --all --schemes
expect_error "info --estimators (a study's table now)" "stability: unknown option: --estimators" "" \
    "$BIN" info "$tmp/tr.h5" --estimators
expect_error "table without a study" "stability: table: missing STUDY" "" "$BIN" table
expect_error "table of an unknown study" "stability: table: no such study" "" "$BIN" table atlass "$tmp/tr.h5"
run "$BIN" table estimators "$tmp/tr.h5"   # runs that are not the study's: a failure (1), not usage
if [ "$rc" -eq 1 ] && grep -q "^stability: table estimators: no run with curvature rows" "$tmp/stderr"; then
    ok "table estimators of a run without estimator columns: exit 1, saying so"
else notok "table estimators without estimator columns: exit $rc, $(head -1 "$tmp/stderr")"; fi
expect_error "sweep --slurm --only-missing without --submit" "stability: --only-missing goes with --slurm --submit" "" \
    "$BIN" sweep "$tmp/s.ini" --slurm --only-missing
expect_error "sweep --set without --slurm" "stability: --set takes slurm.KEY=VALUE for --slurm" "" \
    "$BIN" sweep "$tmp/s.ini" --set slurm.time=1:00:00
expect_error "sweep --jobs with --merge" "stability: --jobs goes with a local sweep" "" \
    "$BIN" sweep "$tmp/s.ini" --merge --jobs 2
expect_error "sweep --dry-run --merge" "stability: sweep: --slurm, --dry-run, --configs, --task and --merge are" "" \
    "$BIN" sweep "$tmp/s.ini" --dry-run --merge
expect_error "sweep --slurm --force" "stability: --force goes with a local sweep or --merge" "" \
    "$BIN" sweep "$tmp/s.ini" --slurm --force
expect_error "train.min_lr_ratio without cosine" "--set train.min_lr_ratio: the floor of the cosine decay" "$tmp/run.h5" \
    "$BIN" train "$GOOD" --set train.steps=3 --set train.min_lr_ratio=0.1 --out "$tmp/run.h5"
run "$BIN" train "$GOOD" --set train.steps=10 --set train.warmup=2 --set train.schedule=cosine \
    --set train.min_lr_ratio=0.1 --set train.lr=1e-3 --out "$tmp/cos.h5" --quiet
lrs=$(/usr/bin/python3 -c "import h5py,sys; print(' '.join('%.6g' % x for x in h5py.File(sys.argv[1])['train/lr'][:]))" "$tmp/cos.h5" 2>/dev/null)
# warm-up 5e-4, 1e-3; then 1e-4 + 9e-4·(1 + cos(π(t−2)/8))/2 for t = 3..10
want=$(/usr/bin/python3 -c "import math; print(' '.join('%.6g' % (1e-3*t/2 if t <= 2 else 1e-4 + 9e-4*(1 + math.cos(math.pi*(t-2)/8))/2) for t in range(1, 11)))")
if [ "$rc" -eq 0 ] && [ "$lrs" = "$want" ]; then ok "train.schedule = cosine to min_lr_ratio: /train/lr as Loshchilov & Hutter"; else notok "cosine: exit $rc, lr '$lrs', want '$want'"; fi

# ------------------------------------------------------------------ a good config by name
# "tiny" has no slash and does not exist here: it is looked up as configs/tiny.ini.
rm -f "$tmp/tiny.h5"
run "$BIN" dump --config tiny --out "$tmp/tiny.h5"
if [ "$rc" -eq 0 ] && [ -s "$tmp/tiny.h5" ]; then
    ok "dump --config tiny (found in configs/) writes its file"
else
    notok "dump --config tiny: exit code $rc, $(head -n 1 "$tmp/stderr")"
fi

finish
