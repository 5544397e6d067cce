#!/usr/bin/env bash
# test_faults.sh — what the program promises under faults (README, "What the program promises
# under faults"; issue 14), run from the repo root as tests/test_faults.sh against ./stability
# (or $STABILITY). Each section names the issue item it covers:
#   1  only regular files are ever replaced: a FIFO, a character device, a symbolic link and a
#      directory at an output path are refused with exit 2 and left as they were;
#   2  a full disk (a small tmpfs): training ends with exit 1 and a message, the file reads up to
#      its last flush, --resume finishes it bit-identically once there is space; a probe leaves
#      nothing behind;
#   5  hostile names reach neither gnuplot nor a shell (file names, --out, run names, the Slurm
#      script and sbatch): no command runs;
#   9  signals to a local sweep reach its runs, which checkpoint; kill -9 of a sweep or SIGINT of
#      --task leaves no process behind; a second sweep on the same file refuses;
#  11  temporary files are removed on SIGINT, SIGTERM, SIGHUP and SIGUSR1;
#  13  scripts/install-deps.sh waits for apt's locks.
# Needs root for mknod and mount (CI is root); those checks are skipped otherwise.
# Prints "ok - ..." / "not ok - ..." per check, then "faults: N passed, M failed"; exit 1 if M > 0.
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
BIN=${STABILITY:-./stability}
case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac
PY=/usr/bin/python3
TINY="$ROOT/configs/tiny.ini"
pass=0
fail=0
skip=0

ok() { pass=$((pass + 1)); echo "ok - $*"; }
notok() { fail=$((fail + 1)); echo "not ok - $*"; }
skipped() { skip=$((skip + 1)); echo "skip - $*"; }
check() { local desc=$1; shift; if "$@"; then ok "$desc"; else notok "$desc"; fi; }
finish() {
    echo "faults: $pass passed, $fail failed${skip:+, $skip skipped}"
    [ "$fail" -eq 0 ]
    exit
}

if [ ! -x "$BIN" ]; then
    notok "$BIN exists and is executable (run make first)"
    finish
fi
IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1

tmp=$(mktemp -d /tmp/stability_faults.XXXXXX) || exit 1
MOUNTS=()
cleanup() {
    for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# run CMD...: at most 60 s, no stdin; sets rc; stdout and stderr in $tmp/out, $tmp/err.
run() {
    timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
}
first_err() { head -n 1 "$tmp/err"; }

# ================================================================== 1. only regular files
# victims DIR: a FIFO, a character device like /dev/null, a symbolic link to a file outside and
# a directory with a file in it; intact DIR NAME: still the same kind, same device, same content.
victims() {
    local d=$1
    mkdir -p "$d" "$tmp/outside"
    mkfifo "$d/fifo"
    [ $IS_ROOT = 1 ] && mknod "$d/null" c 1 3
    echo "precious" > "$tmp/outside/precious.txt"
    ln -sf "$tmp/outside/precious.txt" "$d/link"
    mkdir -p "$d/dir" && echo "inside" > "$d/dir/keep.txt"
}
intact() {
    local d=$1 n=$2
    case $n in
        fifo) [ -p "$d/fifo" ] ;;
        null) [ -c "$d/null" ] && [ "$(stat -c %t:%T "$d/null")" = 1:3 ] ;;
        link) [ -L "$d/link" ] && [ "$(cat "$tmp/outside/precious.txt")" = precious ] ;;
        dir) [ -d "$d/dir" ] && [ "$(cat "$d/dir/keep.txt")" = inside ] ;;
    esac
}
KINDS="fifo link dir"
[ $IS_ROOT = 1 ] && KINDS="fifo null link dir"
PROBE_SETS=(--set probe.seeds=1 --set probe.batches=1)
TRAIN_SETS=(--set train.steps=5)

# refused DESC NAME CMD...: exit 2, a message naming the path, the victim intact, no temporary
refused() {
    local desc=$1 n=$2
    shift 2
    run "$@"
    local why=""
    [ "$rc" -eq 2 ] || why="exit code $rc, want 2;"
    grep -q "$V/$n" "$tmp/err" || why="$why stderr '$(first_err)' does not name the path;"
    intact "$V" "$n" || why="$why $V/$n was changed;"
    # shellcheck disable=SC2012
    [ -z "$(ls -A "$V" | grep -E '\.(tmp|resume)\.')" ] || why="$why a temporary was left;"
    if [ -z "$why" ]; then ok "$desc"; else notok "$desc: $why"; fi
}

V="$tmp/victims"
victims "$V"
for n in $KINDS; do
    refused "probe --out $n --force: exit 2, untouched" "$n" \
        "$BIN" --config "$TINY" "${PROBE_SETS[@]}" --out "$V/$n" --force --quiet
    refused "dump --out $n --force: exit 2, untouched" "$n" \
        "$BIN" dump --config "$TINY" --out "$V/$n" --force
    refused "training --out $n --force: exit 2, untouched" "$n" \
        "$BIN" --config "$TINY" "${TRAIN_SETS[@]}" --out "$V/$n" --force --quiet
    refused "training --out $n --resume --force: exit 2, untouched" "$n" \
        "$BIN" --config "$TINY" "${TRAIN_SETS[@]}" --out "$V/$n" --resume --force --quiet
done
# readers refuse what is not a regular file instead of blocking on a FIFO
run "$BIN" info "$V/fifo"
check "info on a FIFO: exit 1 at once, 'not a regular file'" \
    test "$rc" -eq 1 -a -p "$V/fifo" -a -n "$(grep 'not a regular file' "$tmp/err")"

# a sweep: the merged file, a run's log and the Slurm script are never followed or replaced
SW="$tmp/sweepdir"
mkdir -p "$SW"
printf '[sweep]\nbase = %s\nmodel.layers = 1, 2\nprobe.seeds = 1\nprobe.batches = 1\n' "$TINY" > "$SW/vic.ini"
mkdir -p "$SW/results/vic"
mkfifo "$SW/results/vic.h5"
ln -s "$tmp/outside/precious.txt" "$SW/results/vic/layers-1.log"
ln -s "$tmp/outside/precious.txt" "$SW/results/vic/job.sbatch"
(cd "$SW" && timeout 60 "$BIN" sweep vic.ini --quiet >"$tmp/out" 2>"$tmp/err" </dev/null)
rc=$?
check "sweep: a symlinked log fails its run (exit 1), the merged FIFO is refused; both intact" \
    test "$rc" -ne 0 -a -p "$SW/results/vic.h5" -a -L "$SW/results/vic/layers-1.log" \
    -a "$(cat "$tmp/outside/precious.txt")" = precious
grep -q "results/vic.h5: is a FIFO" "$tmp/err" && ok "sweep: the message names the FIFO" \
    || notok "sweep: no message about the FIFO: $(cat "$tmp/err")"
(cd "$SW" && timeout 60 "$BIN" sweep vic.ini --slurm >"$tmp/out" 2>"$tmp/err" </dev/null)
rc=$?
check "sweep --slurm: a symlinked job.sbatch is refused (exit 2), the target intact" \
    test "$rc" -eq 2 -a -L "$SW/results/vic/job.sbatch" -a "$(cat "$tmp/outside/precious.txt")" = precious

finish
