#!/usr/bin/env bash
# test_faults.sh — what the program promises under faults (docs/faults.md), run from the repo
# root as tests/test_faults.sh against ./stability (or $STABILITY). Its sections:
#   devices    only regular files are ever replaced: a FIFO, a character device, a symbolic
#              link and a directory at an output path (and at OUT.checkpoint, the checkpoint
#              journal) are refused with exit 2, left as they were; --out DIR/ makes nothing;
#   disk       a full disk (a small tmpfs): training ends with exit 1 and a message, the file
#              reads up to its last flush, --resume finishes it bit-identically once there is
#              space; a probe, a dump leave nothing behind; a read-only file system is said
#              as such by every writer (not "disk full?");
#   names      hostile names reach neither gnuplot nor a shell (file names, --out, run names,
#              the Slurm script and sbatch): no command runs;
#   sweeps     signals to a local sweep reach its runs, which checkpoint, and are counted as
#              stopped; kill -9 of a sweep or SIGINT of --task leaves no process behind;
#              SIGTERM to --task outside Slurm is exit 143; a second sweep of a file refuses;
#   temporaries  removed on SIGINT, SIGTERM, SIGHUP, SIGUSR1 and the other stop signals, and a
#              killed probe's by the next writer of its path;
#   reads      a FIFO as --config, sweep file, base, data.path or ids file, a device as
#              data.path: refused at once (exit 1 or 2), never waited for or read to the end;
#              a sweep whose run is stopped (SIGSTOP) still ends on SIGTERM;
#   links      --force, figures and job.sbatch replace by rename: a hard-linked snapshot keeps
#              what it held;
#   figures    a full disk, a failing gnuplot: exit 1, the old figure kept; a live run plots;
#              a write error on standard output is exit 1;
#   apt        setup/install-deps.sh waits for apt's locks, by the clock and for at most
#              STABILITY_APT_LOCK_WAIT seconds; a wait or retry that is not a number is exit 2.
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
check() { local desc=$1; shift; if "$@"; then ok "$desc"; else notok "$desc${rc:+ (exit $rc)}"; fi; }
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
PIDS=()   # every process this script started in the background, ended by PID at the end
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
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

# ================================================================== devices: only regular files
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
# the checkpoint journal OUT.checkpoint (issue 34): a FIFO, device, link or directory there is
# said as what it is before the run starts (it was "cannot write ... free space" at the first
# checkpoint), exit 2, no OUT made, the victim as it was
for n in $KINDS; do
    out="$V/j_$n.h5"
    mv "$V/$n" "$out.checkpoint"
    run "$BIN" --config "$TINY" --set train.steps=30 --set train.checkpoint_every=10 --out "$out" --quiet
    why=""
    [ "$rc" -eq 2 ] || why="exit code $rc, want 2;"
    grep -q "$out.checkpoint: is a" "$tmp/err" || why="$why stderr '$(first_err)' does not say what $out.checkpoint is;"
    ! grep -qi "free space\|disk" "$tmp/err" || why="$why it says disk;"
    [ ! -e "$out" ] || why="$why $out was made;"
    mv "$out.checkpoint" "$V/$n"
    intact "$V" "$n" || why="$why the $n was changed;"
    if [ -z "$why" ]; then ok "training with a $n at OUT.checkpoint: exit 2 before it starts, named as a $n"
    else notok "training with a $n at OUT.checkpoint: $why"; fi
done
# --out DIR/ (issue 34): refused before any directory is made (they were, then the file refused)
for verb in probe dump train; do
    case $verb in
        probe) args=(--config "$TINY" "${PROBE_SETS[@]}" --quiet) ;;
        dump) args=(dump --config "$TINY") ;;
        train) args=(--config "$TINY" "${TRAIN_SETS[@]}" --quiet) ;;
    esac
    run "$BIN" "${args[@]}" --out "$tmp/newdir_$verb/sub/x.h5/"
    check "$verb --out NEW/DIR/x.h5/: exit 2, 'names a directory', nothing made" \
        eval '[ "$rc" -eq 2 ] && grep -q "names a directory" "$tmp/err" && [ ! -e "$tmp/newdir_$verb" ]'
done
# a figure's file: gnuplot's output is opened by us, never followed or replaced
"$BIN" --config "$TINY" "${PROBE_SETS[@]}" --out "$V/p.h5" --quiet
mkdir -p "$V/plots"
mkfifo "$V/plots/p-grad_vs_layer.png"
run "$BIN" plot "$V/p.h5" --out "$V/plots" --format png --quiet
check "plot onto a FIFO: exit 2, the FIFO left as it was" test "$rc" -eq 2 -a -p "$V/plots/p-grad_vs_layer.png"
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

# ================================================================== disk: a full disk
# tmpfs DIR SIZE: a small file system of its own (root only).
tmpfs() {
    mkdir -p "$1" && mount -t tmpfs -o "size=$2" tmpfs "$1" && MOUNTS+=("$1")
}
# leftovers DIR: temporaries (.tmp.PID, .resume.PID) left in DIR
leftovers() { ls -A "$1" | grep -E '\.(tmp|resume)\.[0-9]+$'; }
# train_rows FILE: "rows checkpoint consecutive finite" of a training file, read with h5py
# (swmr=True); the checkpoint is the newer of the file's own and its journal's (FILE.checkpoint)
train_rows() {
    $PY - "$1" <<'EOF2' 2>&1
import os, sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r", swmr=True) as f:
    s = f["train/step"][:]
    ck = int(f["checkpoint/step"][()])
    if os.path.exists(sys.argv[1] + ".checkpoint"):
        with h5py.File(sys.argv[1] + ".checkpoint", "r") as j:
            ck = max(ck, int(j["checkpoint/step"][()]))
    print(len(s), ck, bool((s == np.arange(1, len(s) + 1)).all()),
          bool(np.isfinite(f["train/loss"][:]).all()))
EOF2
}
# same_train A B: the /train datasets (all but the wall-clock time) of A and B are byte-identical
same_train() {
    $PY - "$1" "$2" <<'EOF2'
import sys, h5py
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    assert a.attrs["status"] == "done", a.attrs["status"]
    names = sorted(set(a["train"]) | set(b["train"]))
    bad = [n for n in names if n != "time" and a["train"][n][...].tobytes() != b["train"][n][...].tobytes()]
    assert not bad, bad
EOF2
}
DF_SETS=(--config "$TINY" --quiet --set train.steps=2000 --set model.d_model=32 --set model.d_ff=64
         --set model.seq_len=16 --set data.task=copy --set probe.every=1 --set train.warmup=100
         --set train.lr=1e-3 --set train.checkpoint_every=200)
export OMP_WAIT_POLICY=passive   # no OpenMP spinning on small machines
if [ $IS_ROOT = 0 ]; then
    skipped "a full disk (mounting a tmpfs needs root)"
else
    D="$tmp/full"
    # room for the first checkpoints but not for 2000 updates of per-layer rows (probe.every = 1)
    tmpfs "$D" 8m
    dd if=/dev/zero of="$D/filler" bs=1k count=5500 2>/dev/null   # ~2.6 MB left
    run "$BIN" "${DF_SETS[@]}" --out "$D/run.h5"
    msg=$(first_err)
    if [ "$rc" -eq 1 ] && grep -q "No space left on device" "$tmp/err" && grep -q -- "--resume" "$tmp/err"; then
        ok "training on a full disk: exit 1, '$(echo "$msg" | cut -c1-100)...'"
    else
        notok "training on a full disk: exit code $rc (want 1, no crash), stderr: $(cat "$tmp/err")"
    fi
    read -r rows ckpt consecutive finite <<< "$(train_rows "$D/run.h5" | tail -1)"
    if [ "$consecutive" = True ] && [ "$finite" = True ] && [ "${rows:-0}" -gt 0 ] 2>/dev/null \
        && [ "$ckpt" -gt 0 ] && [ "$ckpt" -le "$rows" ]; then
        ok "the file reads with h5py: updates 1-$rows, all finite, checkpoint of update $ckpt (file or journal)"
    else
        notok "the file after a full disk: $(train_rows "$D/run.h5")"
    fi
    check "no temporary left on the full disk" test -z "$(leftovers "$D")"
    rm -f "$D/filler"
    run "$BIN" "${DF_SETS[@]}" --out "$D/run.h5" --resume
    run2=$rc
    run "$BIN" "${DF_SETS[@]}" --out "$tmp/straight.h5"
    if [ "$run2" -eq 0 ] && same_train "$D/run.h5" "$tmp/straight.h5" 2>"$tmp/err"; then
        ok "space freed: --resume finishes it, /train byte-identical to an uninterrupted run"
    else
        notok "--resume after a full disk: exit $run2, $(tail -1 "$tmp/err")"
    fi
    # the disk full at the first checkpoint, while the journal is written: HDF5 can lose raw
    # data there without an error, so the journal's bytes are reserved first; --resume then
    # refuses (no usable checkpoint) or continues byte-identically, never from a short journal
    D3="$tmp/full3"
    tmpfs "$D3" 4m
    dd if=/dev/zero of="$D3/filler" bs=1k count=2600 2>/dev/null
    run "$BIN" "${DF_SETS[@]}" --out "$D3/run.h5"
    rm -f "$D3/filler"
    run "$BIN" "${DF_SETS[@]}" --out "$D3/run.h5" --resume
    if [ "$rc" -eq 2 ] || { [ "$rc" -eq 0 ] && same_train "$D3/run.h5" "$tmp/straight.h5" 2>"$tmp/err"; }; then
        ok "a full disk during the first checkpoint: --resume refuses (exit 2) or continues byte-identically (exit $rc)"
    else
        notok "a full disk during the first checkpoint: --resume exit $rc, not byte-identical: $(tail -1 "$tmp/err")"
    fi
    # a probe and a dump on a full disk: exit 1, a message, no crash, nothing left behind
    D2="$tmp/full2"
    tmpfs "$D2" 64k
    run "$BIN" --config "$TINY" --set probe.seeds=300 --set probe.batches=1 --out "$D2/probe.h5" --quiet
    check "probe on a full disk: exit 1 (no crash), message, no file, no .tmp.PID" \
        test "$rc" -eq 1 -a -s "$tmp/err" -a ! -e "$D2/probe.h5" -a -z "$(leftovers "$D2")"
    dd if=/dev/zero of="$D2/filler" bs=1k count=64 2>/dev/null
    run "$BIN" dump --config "$TINY" --out "$D2/dump.h5"
    check "dump on a full disk: exit 1 (no crash), no file, no .tmp.PID" \
        test "$rc" -eq 1 -a ! -e "$D2/dump.h5" -a -z "$(leftovers "$D2")"
    run "$BIN" "${DF_SETS[@]}" --out "$D2/train.h5"
    check "training that cannot even create its file: exit 1 (no crash), nothing left" \
        test "$rc" -eq 1 -a ! -e "$D2/train.h5" -a -z "$(leftovers "$D2")"
    # a read-only file system is said as such, never as "disk full?" (every writer)
    D3="$tmp/ro"
    tmpfs "$D3" 8m
    "$BIN" --config "$TINY" --set probe.seeds=2 --set probe.batches=1 --out "$D3/p.h5" --quiet
    timeout -s TERM 1.5 "$BIN" "${DF_SETS[@]}" --set train.steps=200000 --out "$D3/t.h5" 2>/dev/null
    mount -o remount,ro "$D3"
    ro_ok() { [ "$rc" -eq 1 ] && grep -q "Read-only file system" "$tmp/err" && ! grep -q "disk full" "$tmp/err"; }
    while IFS='|' read -r what args; do
        # shellcheck disable=SC2086
        (cd "$D3" && timeout 60 "$BIN" $args >"$tmp/out" 2>"$tmp/err" </dev/null)
        rc=$?
        check "read-only file system, $what: exit 1, 'Read-only file system', no 'disk full?'" ro_ok
    done <<EOF2
a training run|--config $TINY --set train.steps=5 --out new.h5 --quiet
a probe|--config $TINY --out probe.h5 --quiet
a dump|dump --config $TINY --out dump.h5
--force over a file|--config $TINY --set probe.seeds=2 --set probe.batches=1 --out p.h5 --force --quiet
--resume|${DF_SETS[*]} --set train.steps=200000 --out t.h5 --resume
a figure|plot p.h5 --out figs
EOF2
fi

# ================================================================== names: hostile names
# in_dir DIR CMD...: run CMD in DIR (at most 60 s); sets rc, stdout/stderr in $tmp/out, $tmp/err
in_dir() {
    local d=$1
    shift
    (cd "$d" && timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null)
    rc=$?
}
H="$tmp/hostile"
mkdir -p "$H/bin"
# pwned GLOB: a file the command of that check would have made, anywhere under $H
pwned() { find "$H" -name "pwned$1" 2>/dev/null | head -1; }
"$BIN" --config "$TINY" --set probe.seeds=2 --set probe.batches=1 --out "$H/base.h5" --quiet
evil="x'; system(\"touch pwned1\") #"
cp "$H/base.h5" "$H/$evil.h5"
in_dir "$H" "$BIN" plot "$evil.h5" --out plots --format png --quiet
check "plot of a file named $evil.h5: exit 0, figures drawn, no command ran" \
    test "$rc" -eq 0 -a -z "$(pwned 1)" -a -s "$H/plots/$evil-grad_vs_layer.png"
outdir="o'; system(\"touch pwned2\") #"
in_dir "$H" "$BIN" plot base.h5 --out "$outdir" --format png --quiet
check "plot --out '$outdir': exit 0, figures in that directory, no command ran" \
    test "$rc" -eq 0 -a -z "$(pwned 2)" -a -s "$H/$outdir/base-grad_vs_layer.png"
# run names inside a merged file: a quote, and a newline followed by a command
$PY - "$H/base.h5" "$H/merged.h5" <<'EOF2'
import sys, h5py
names = ["a' . system(\"touch pwned3\") . '", "b'\nsystem(\"touch pwned4\")\n'"]
with h5py.File(sys.argv[1], "r") as src, h5py.File(sys.argv[2], "w") as dst:
    for n in names:
        g = dst.create_group("runs/" + n)
        src.copy(src["probe"], g, "probe")
        for k, v in src.attrs.items():
            g.attrs[k] = v
EOF2
in_dir "$H" "$BIN" plot merged.h5 --out plots3 --format png --quiet
check "plot of runs named with a quote and with a newline + command: exit 0, no command ran" \
    test "$rc" -eq 0 -a -z "$(pwned '[34]')" -a -s "$H/plots3/merged-grad_vs_layer.png"

# the Slurm script: a working directory and a sweep file named with a quote and a command
cwd="$H/c'; touch pwned5; '"
mkdir -p "$cwd"
sweep="s'; touch pwned6; '"
sweep8="s'; touch pwned8; '"
printf '[sweep]\nbase = %s\nprobe.seeds = 1\nprobe.batches = 1\n' "$TINY" > "$cwd/$sweep.ini"
in_dir "$cwd" "$BIN" sweep "$sweep.ini" --slurm --quiet
if [ "$rc" -eq 0 ] && [ -s "$cwd/results/$sweep/job.sbatch" ]; then
    (cd "$H" && SLURM_ARRAY_TASK_ID=0 timeout 60 bash "$cwd/results/$sweep/job.sbatch" >/dev/null 2>&1)
    check "job.sbatch of a sweep named \"$sweep\" run from \"c'; touch pwned5; '\": its task ran, no command" \
        test -z "$(pwned '[56]')" -a -s "$cwd/results/$sweep/run.h5"
else
    notok "sweep --slurm with a quote in the names: exit $rc, $(first_err)"
fi
# a newline in the sweep file's name would end a comment line of the script: refused
nl=$'n\ntouch pwned7\n'
printf '[sweep]\nbase = %s\nprobe.seeds = 1\n' "$TINY" > "$H/$nl.ini"
in_dir "$H" "$BIN" sweep "$nl.ini" --slurm --quiet
[ -s "$H/results/$nl/job.sbatch" ] && (cd "$H" && SLURM_ARRAY_TASK_ID=0 timeout 60 bash "$H/results/$nl/job.sbatch" >/dev/null 2>&1)
check "sweep --slurm of a file whose name holds a newline: exit 2, no script, no command" \
    test "$rc" -eq 2 -a ! -e "$H/results/$nl/job.sbatch" -a -z "$(pwned 7)"
# --submit runs sbatch without a shell: a stand-in sbatch records its arguments
cat > "$H/bin/sbatch" <<'EOF2'
#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "$SBATCH_ARGS"
echo 4242
EOF2
printf '#!/bin/sh\necho "MaxArraySize = 1001"\n' > "$H/bin/scontrol"
chmod +x "$H/bin/sbatch" "$H/bin/scontrol"
cp "$cwd/$sweep.ini" "$H/$sweep8.ini"
(cd "$H" && PATH="$H/bin:$PATH" SBATCH_ARGS="$H/sbatch.args" timeout 60 "$BIN" sweep "$sweep8.ini" \
    --slurm --submit --quiet >"$tmp/out" 2>"$tmp/err" </dev/null)
rc=$?
check "--submit of a sweep named \"$sweep8\": sbatch gets the script as one argument, no command" \
    test "$rc" -eq 0 -a -z "$(pwned 8)" -a "$(tail -1 "$H/sbatch.args" 2>/dev/null)" = "results/$sweep8/job.sbatch"

# ================================================================== sweeps: signals, orphans, locks
# children PID: kids = the processes whose parent is PID (remembered for the clean-up)
children() {
    local i
    for i in $(seq 100); do   # up to 10 s: a loaded machine starts the run late
        kids=$(ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' | tr '\n' ' ')
        [ -n "$kids" ] && break
        sleep 0.1
    done
    local p
    for p in $kids; do PIDS+=("$p"); done
}
# gone PIDS... within 30 s: every one has ended
gone() {
    local i p alive
    for i in $(seq 300); do
        alive=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && return 0
        sleep 0.1
    done
    return 1
}
# wait_rc PID: its exit status once it ended (within 30 s), else 255 after killing it
wait_rc() {
    if gone "$1"; then wait "$1" 2>/dev/null; else kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 255; fi
}
# states FILE...: "status:checkpoint" of each training file
states() {
    $PY - "$@" <<'EOF2' 2>/dev/null
import sys, h5py
out = []
for p in sys.argv[1:]:
    try:
        with h5py.File(p, "r", swmr=True) as f:
            out.append(f"{f.attrs['status']}:{int(f['checkpoint/step'][()])}")
    except (OSError, KeyError):
        out.append("unreadable")
print(" ".join(out))
EOF2
}
# interrupted FILE...: every file says interrupted, with a checkpoint
interrupted() { [ -z "$(states "$@" | tr ' ' '\n' | grep -v '^interrupted:[1-9]')" ]; }
# running_for FILE... : until every file exists, then one more second
running_for() {
    local f i
    for f in "$@"; do
        for i in $(seq 200); do [ -s "$f" ] && break; sleep 0.05; done
    done
    sleep 1
}
S="$tmp/sweeps"
mkdir -p "$S"
printf '[sweep]\nbase = %s\nname = r{layers}\nmodel.layers = 1, 2\ntrain.steps = 200000\n%s' "$TINY" \
    'data.task = copy
model.d_model = 32
model.d_ff = 64
model.seq_len = 16
' > "$S/sig.ini"
R1="$S/results/sig/r1.h5"
R2="$S/results/sig/r2.h5"
(cd "$S" && exec "$BIN" sweep sig.ini --jobs 2 --quiet >"$tmp/sweep.out" 2>"$tmp/sweep.err" </dev/null) &
sweep=$!
PIDS+=("$sweep")
running_for "$R1" "$R2"
children "$sweep"
# a second sweep of the same file, meanwhile: refused at once
in_dir "$S" "$BIN" sweep sig.ini --jobs 2 --quiet
check "a second sweep of the same file while one runs: exit 1, 'another ... is running'" \
    test "$rc" -eq 1 -a -n "$(grep 'another .stability sweep' "$tmp/err")"
kill -TERM "$sweep"
wait_rc "$sweep"
rc=$?
# shellcheck disable=SC2086
if [ "$rc" -eq 143 ] && gone $kids && interrupted "$R1" "$R2"; then
    ok "SIGTERM to a sweep: passed on, both runs checkpointed ($(states "$R1" "$R2")), exit 143"
else
    notok "SIGTERM to a sweep: exit $rc, runs $(states "$R1" "$R2"), children left: $kids"
fi
check "SIGTERM to a sweep: it says '2 runs stopped' (it said 0: a checkpointed run exits 0)" \
    grep -q ': 2 runs stopped (training runs checkpointed), 0 not started' "$tmp/sweep.err"
# kill -9 of the sweep: its runs get SIGTERM (PR_SET_PDEATHSIG), checkpoint and end
(cd "$S" && exec "$BIN" sweep sig.ini --jobs 2 --quiet >/dev/null 2>&1 </dev/null) &
sweep=$!
PIDS+=("$sweep")
sleep 1.5
children "$sweep"
kill -9 "$sweep"
{ wait "$sweep"; } 2>/dev/null
# shellcheck disable=SC2086
if [ -n "$kids" ] && gone $kids && interrupted "$R1" "$R2"; then
    ok "kill -9 of a sweep: no run outlives it, both checkpointed ($(states "$R1" "$R2"))"
else
    notok "kill -9 of a sweep: runs left: $kids, $(states "$R1" "$R2")"
fi
# --task: SIGTERM outside Slurm (no requeue) passes USR1 on; the run checkpoints, and the task
# did not finish it: exit 143, never 0
(cd "$S" && exec "$BIN" sweep sig.ini --task 1 --quiet >/dev/null 2>"$tmp/task.err" </dev/null) &
task=$!
PIDS+=("$task")
sleep 1.5
kill -TERM "$task"
wait_rc "$task"
rc=$?
check "SIGTERM to --task outside Slurm: its run checkpointed ($(states "$R2")), exit 143 (not 0)" \
    eval '[ "$rc" -eq 143 ] && interrupted "$R2" && grep -q "run the task again" "$tmp/task.err"'
# --task: SIGINT ends the task and its run (checkpointed); a duplicate task that fails at
# once appends to the run's log and never erases it
(cd "$S" && exec env --default-signal=INT "$BIN" sweep sig.ini --task 0 --quiet >/dev/null 2>&1 </dev/null) &
task=$!
PIDS+=("$task")
sleep 1.5
children "$task"
echo "marker: written while the run was going" >> "$S/results/sig/r1.log"
in_dir "$S" "$BIN" sweep sig.ini --task 0 --quiet
check "a duplicate --task of a live run fails, and the run's log keeps what it held" \
    test "$rc" -ne 0 -a -n "$(grep 'marker: written' "$S/results/sig/r1.log")"
kill -INT "$task"
wait_rc "$task"
rc=$?
# shellcheck disable=SC2086
if [ "$rc" -eq 130 ] && [ -n "$kids" ] && gone $kids && interrupted "$R1"; then
    ok "SIGINT to --task: its run checkpointed ($(states "$R1")) and ended, exit 130"
else
    notok "SIGINT to --task: exit $rc, run $(states "$R1"), left: $kids"
fi

# ================================================================== temporaries on signals
# wait_for_glob PATTERN SECONDS: until a file matches
wait_for_glob() {
    local i
    for i in $(seq $(($2 * 20))); do
        compgen -G "$1" >/dev/null && return 0
        sleep 0.05
    done
    return 1
}
T="$tmp/signals"
mkdir -p "$T"
for sig in INT TERM HUP USR1 USR2 ALRM XCPU VTALRM; do
    num=$(kill -l "$sig")
    # a probe long enough to be caught with its temporary open (Post-LN L=6, d = 512); a
    # background job of a script starts with SIGINT ignored, and a harness under nohup with
    # SIGHUP ignored (the program keeps an inherited SIG_IGN): give both their default
    env --default-signal=INT --default-signal=HUP "$BIN" --config "$ROOT/configs/postln_L6.ini" --set probe.seeds=2 --out "$T/p_$sig.h5" --quiet \
        >/dev/null 2>&1 </dev/null &
    pid=$!
    if wait_for_glob "$T/p_$sig.h5.tmp.*" 20; then
        sleep 0.2
        kill -s "$sig" "$pid"
    fi
    wait "$pid" 2>/dev/null
    rc=$?
    check "probe + SIG$sig: the .tmp.PID is removed, no file, the process ends by the signal (exit $rc)" \
        test -z "$(compgen -G "$T/p_$sig.h5*")" -a "$rc" -eq $((128 + num))
done
# `ulimit -f`: the write fails (EFBIG), the probe says so (exit 1) and leaves nothing
(ulimit -f 4; exec "$BIN" --config "$TINY" --set probe.seeds=1 --set probe.batches=1 \
    --out "$T/p_xfsz.h5" --quiet >"$tmp/out" 2>"$tmp/err" </dev/null)
rc=$?
check "probe past ulimit -f 4: exit 1 (not SIGXFSZ), 'File too large', no file, no .tmp.PID" \
    test "$rc" -eq 1 -a -n "$(grep 'File too large' "$tmp/err")" -a -z "$(compgen -G "$T/p_xfsz.h5*")"
# kill -9 leaves the .tmp.PID; the next writer of that path removes it (its process is gone)
"$BIN" --config "$ROOT/configs/postln_L6.ini" --set probe.seeds=2 --out "$T/p_kill.h5" --quiet \
    >/dev/null 2>&1 </dev/null &
pid=$!
wait_for_glob "$T/p_kill.h5.tmp.*" 20 && sleep 0.2
kill -9 "$pid"
wait "$pid" 2>/dev/null
left=$(compgen -G "$T/p_kill.h5.tmp.*")
run "$BIN" --config "$TINY" --set probe.seeds=1 --set probe.batches=1 --out "$T/p_kill.h5" --quiet
check "kill -9 of a probe leaves $(basename "${left:-nothing}"); the next probe of that path removes it and says so" \
    test -n "$left" -a "$rc" -eq 0 -a ! -e "$left" -a -n "$(grep "removed $left (left by process $pid" "$tmp/err")"
# a merge and a resume: the test hook raises the signal once their temporary exists
printf '[sweep]\nbase = %s\nmodel.layers = 1\nprobe.seeds = 1\nprobe.batches = 1\n' "$TINY" > "$T/msig.ini"
(cd "$T" && timeout 60 "$BIN" sweep msig.ini --quiet >/dev/null 2>&1)
rm -f "$T/results/msig.h5"
{ (cd "$T" && STABILITY_SIGNAL_WITH_TMP=TERM timeout 60 "$BIN" sweep msig.ini --merge --quiet >/dev/null 2>&1); } 2>/dev/null
rc=$?
check "sweep --merge + SIGTERM: no results/msig.h5.tmp.PID, no merged file (exit $rc)" \
    test -z "$(compgen -G "$T/results/msig.h5*")" -a "$rc" -eq 143
RS=(--config "$TINY" --quiet --set train.steps=300 --set data.task=copy)
STABILITY_SIGNAL_AT_STEP=100 "$BIN" "${RS[@]}" --out "$T/r.h5" >/dev/null 2>&1
{ (STABILITY_SIGNAL_WITH_TMP=HUP env --default-signal=HUP "$BIN" "${RS[@]}" --out "$T/r.h5" --resume \
    >/dev/null 2>&1); } 2>/dev/null
rc=$?
check "--resume + SIGHUP while rewriting: no .resume.PID left, the file still resumable (exit $rc)" \
    test -z "$(compgen -G "$T/r.h5.*")" -a "$rc" -eq 129
run "$BIN" "${RS[@]}" --out "$T/r.h5" --resume
check "... and --resume then finishes it" test "$rc" -eq 0

# ================================================================== reads: no hangs, bounded
RD="$tmp/reads"
mkdir -p "$RD/corpus"
mkfifo "$RD/fifo.ini" "$RD/corpus/train.en.ids"
: > "$RD/corpus/train.de.ids"
printf '[sweep]\nbase = %s\nmodel.layers = 1, 2\n' "$RD/fifo.ini" > "$RD/fbase.ini"
# refused_read DESC CMD...: exit 1 or 2 within 10 s (no hang), 'not a regular file'
refused_read() {
    local desc=$1
    shift
    (ulimit -v 4000000; timeout 10 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null)
    rc=$?
    check "$desc: exit 1 or 2 at once, 'not a regular file' (exit $rc)" \
        eval '[ "$rc" -eq 1 -o "$rc" -eq 2 ] && grep -q "not a regular file" "$tmp/err"'
}
refused_read "a FIFO as --config" "$BIN" --config "$RD/fifo.ini" --out "$RD/x.h5"
refused_read "a FIFO as the sweep file" "$BIN" sweep "$RD/fifo.ini" --dry-run
refused_read "a FIFO as a sweep's base" "$BIN" sweep "$RD/fbase.ini" --dry-run
refused_read "a FIFO as data.path" "$BIN" --config "$TINY" --set data.task=text --set model.vocab=256 \
    --set train.steps=5 --set data.path="$RD/fifo.ini" --out "$RD/x.h5" --quiet
refused_read "a character device (/dev/zero) as data.path, memory limited to 4 GB" "$BIN" --config "$TINY" \
    --set data.task=text --set model.vocab=256 --set train.steps=5 --set data.path=/dev/zero --out "$RD/x.h5" --quiet
refused_read "a FIFO as the corpus' train.en.ids" "$BIN" --config "$TINY" --set model.arch=encdec \
    --set data.task=translation --set data.path="$RD/corpus" --set model.vocab=100 --set train.steps=5 \
    --out "$RD/x.h5" --quiet
# a stopped run (SIGSTOP, ^Z) still hears the sweep's SIGTERM: it is sent SIGCONT after it
(cd "$S" && rm -rf results && exec "$BIN" sweep sig.ini --jobs 2 --quiet >/dev/null 2>&1 </dev/null) &
sweep=$!
PIDS+=("$sweep")
running_for "$R1" "$R2"
children "$sweep"
first=${kids%% *}
kill -STOP "$first"
sleep 0.5
kill -TERM "$sweep"
wait_rc "$sweep"
rc=$?
# shellcheck disable=SC2086
if [ "$rc" -eq 143 ] && gone $kids && interrupted "$R1" "$R2"; then
    ok "SIGTERM to a sweep with a stopped run: both runs checkpointed ($(states "$R1" "$R2")), exit 143"
else
    kill -CONT "$first" 2>/dev/null
    notok "SIGTERM to a sweep with a stopped run: exit $rc, runs $(states "$R1" "$R2"), left: $kids"
fi

# ================================================================== links: replaced, never truncated
L="$tmp/links"
mkdir -p "$L/snap"
# snapshot NAME...: hard links in $L/snap (as `cp -al` makes) and their checksums
snapshot() { local f; for f in "$@"; do ln -f "$L/$f" "$L/snap/$f"; done; (cd "$L/snap" && sha256sum "$@" > "$L/sums"); }
intact_snap() { (cd "$L/snap" && sha256sum --quiet -c "$L/sums" >/dev/null 2>&1); }
"$BIN" --config "$TINY" --set train.steps=20 --out "$L/t.h5" --quiet
"$BIN" --config "$TINY" --set probe.seeds=1 --set probe.batches=1 --out "$L/p.h5" --quiet
snapshot t.h5 p.h5
"$BIN" --config "$TINY" --set train.steps=30 --out "$L/t.h5" --quiet --force
"$BIN" --config "$TINY" --set probe.seeds=2 --set probe.batches=1 --out "$L/p.h5" --quiet --force
check "--force of a training run and of a probe: a hard-linked snapshot keeps the old files" \
    intact_snap
"$BIN" plot "$L/p.h5" --out "$L" --format png --quiet
snapshot p-grad_vs_layer.png
"$BIN" --config "$TINY" --set probe.seeds=3 --set probe.batches=1 --out "$L/p.h5" --quiet --force
"$BIN" plot "$L/p.h5" --out "$L" --format png --quiet
check "plot over a hard-linked figure: the snapshot keeps the old figure, the new one differs" \
    eval 'intact_snap && ! cmp -s "$L/p-grad_vs_layer.png" "$L/snap/p-grad_vs_layer.png"'
printf '[sweep]\nbase = %s\nmodel.layers = 1, 2\n[slurm]\ntime = 1:00:00\n' "$TINY" > "$L/ln.ini"
(cd "$L" && "$BIN" sweep ln.ini --slurm --quiet && ln -f results/ln/job.sbatch snap/job.sbatch \
    && sha256sum snap/job.sbatch > sums2 && "$BIN" sweep ln.ini --slurm --set slurm.time=2:00:00 --quiet)
check "job.sbatch rewritten: a hard link to the old script keeps it" \
    eval '(cd "$L" && sha256sum --quiet -c sums2) && grep -q "time=2:00:00" "$L/results/ln/job.sbatch"'

# ================================================================== figures: failures are said
F="$tmp/figs"
mkdir -p "$F/bin" "$F/plots"
"$BIN" --config "$TINY" --set probe.seeds=2 --set probe.batches=1 --out "$F/p.h5" --quiet
"$BIN" plot "$F/p.h5" --out "$F/plots" --format png --quiet
sha256sum "$F/plots/"*.png > "$F/sums"
# a gnuplot that fails after writing half a figure
printf '#!/bin/sh\ncat >/dev/null\nprintf "\\211PNG half"\nexit 1\n' > "$F/bin/gnuplot"
chmod +x "$F/bin/gnuplot"
PATH="$F/bin:$PATH" run "$BIN" plot "$F/p.h5" --out "$F/plots" --format png
check "gnuplot failing: exit 1, 'kept as it was', every old figure intact, no temporary" \
    eval '[ "$rc" -eq 1 ] && grep -q "kept as it was" "$tmp/err" && sha256sum --quiet -c "$F/sums" \
          && [ -z "$(ls "$F/plots" | grep "\.tmp\.")" ]'
if [ $IS_ROOT = 1 ]; then
    FD="$F/full"
    tmpfs "$FD" 256k
    cp "$F/plots/"*.png "$FD/" 2>/dev/null
    (cd "$FD" && sha256sum ./*.png > "$F/sums_full")
    dd if=/dev/zero of="$FD/filler" bs=1k count=1000 2>/dev/null   # fills it
    run "$BIN" plot "$F/p.h5" --out "$FD" --format png,pdf
    check "plot on a full disk: exit 1, 'No space left on device', no 'wrote' for a failed figure, the old figures intact" \
        eval '[ "$rc" -eq 1 ] && grep -q "No space left on device" "$tmp/err" && ! grep -q wrote "$tmp/out" \
              && (cd "$FD" && sha256sum --quiet -c "$F/sums_full") && [ -z "$(ls "$FD" | grep "\.tmp\.")" ]'
else
    skipped "plot on a full disk (mounting a tmpfs needs root)"
fi
run "$BIN" info "$F/p.h5"
run sh -c "\"$BIN\" info \"$F/p.h5\" > /dev/full"
check "info > /dev/full: exit 1, 'standard output: No space left on device'" \
    eval '[ "$rc" -eq 1 ] && grep -q "standard output: No space left on device" "$tmp/err"'
# a live training run: every plot reads a consistent prefix of its rows
LV=(--config "$TINY" --quiet --set train.steps=20000000 --set data.task=copy --set probe.every=10)
"$BIN" "${LV[@]}" --out "$F/live.h5" >/dev/null 2>&1 </dev/null &
live=$!
PIDS+=("$live")
running_for "$F/live.h5"
fails=""
for i in $(seq 30); do   # a build reading whole datasets failed 5 of 30 (lr a row short)
    run "$BIN" plot "$F/live.h5" --out "$F/liveplots" --format png --quiet
    [ "$rc" -eq 0 ] && [ -s "$F/liveplots/live-loss.png" ] || fails="$fails $i:$rc"
done
kill -TERM "$live"
wait "$live" 2>/dev/null
check "plot of a live training run, 30 times: each exit 0 with its loss figure" test -z "$fails"

# ================================================================== apt: install-deps.sh and apt's locks
# Stand-ins on PATH: dpkg-query says every package is missing until "apt-get install" ran;
# apt-get records its arguments and fails 'update' twice with apt's lock error, as while
# unattended upgrades run.
A="$tmp/apt"
mkdir -p "$A/bin"
cat > "$A/bin/dpkg-query" <<'EOF2'
#!/bin/sh
[ -e "$APT_STATE/installed" ] && printf 'install ok installed' || printf 'unknown ok not-installed'
EOF2
cat > "$A/bin/apt-get" <<'EOF2'
#!/bin/sh
echo "$*" >> "$APT_STATE/calls"
case " $* " in
*" update "*)
    n=$(cat "$APT_STATE/locked" 2>/dev/null || echo 0)
    if [ -n "${APT_LOCKED:-}" ] || [ "$n" -lt 2 ]; then
        echo $((n + 1)) > "$APT_STATE/locked"
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
        exit 100
    fi ;;
*" install "*) touch "$APT_STATE/installed" ;;
esac
exit 0
EOF2
printf '#!/bin/sh\nexec "$@"\n' > "$A/bin/sudo"
chmod +x "$A/bin/"*
PATH="$A/bin:$PATH" APT_STATE="$A" STABILITY_APT_RETRY=0 timeout 60 "$ROOT/setup/install-deps.sh" \
    >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
updates=$(grep -cw 'update' "$A/calls" 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$updates" = 3 ] && grep -q -- '-o DPkg::Lock::Timeout=600 install -y' "$A/calls"; then
    ok "install-deps.sh: 'apt-get update' waits out apt's lock (3 tries), install with DPkg::Lock::Timeout=600"
else
    notok "install-deps.sh under apt's lock: exit $rc, $updates updates, calls: $(tr '\n' '|' < "$A/calls" 2>/dev/null)"
fi
# a lock held for good: the wait ends after STABILITY_APT_LOCK_WAIT seconds by the clock, even
# with a retry of 0 s (it summed the retries: 0 + 0 + ... never reached the limit); a wait that
# is not a number is exit 2 before apt runs (it made the check an error: wait forever)
rm -f "$A/installed" "$A/calls" "$A/locked"
t0=$SECONDS
PATH="$A/bin:$PATH" APT_STATE="$A" APT_LOCKED=1 STABILITY_APT_RETRY=0 STABILITY_APT_LOCK_WAIT=2 \
    timeout 20 "$ROOT/setup/install-deps.sh" >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
check "install-deps.sh, apt locked for good, STABILITY_APT_RETRY=0: gives up after 2 s, exit 1 ($((SECONDS - t0)) s)" \
    eval '[ "$rc" -eq 1 ] && grep -q "held for more than 2 s" "$tmp/err"'
for v in STABILITY_APT_LOCK_WAIT=abc STABILITY_APT_RETRY=-1 STABILITY_APT_RETRY=1e3; do
    rm -f "$A/calls"
    env PATH="$A/bin:$PATH" APT_STATE="$A" APT_LOCKED=1 "$v" \
        timeout 20 "$ROOT/setup/install-deps.sh" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    check "install-deps.sh, $v: exit 2 naming it, apt never run" \
        eval '[ "$rc" -eq 2 ] && grep -q "${v%%=*}: not a whole number" "$tmp/err" && [ ! -e "$A/calls" ]'
done

finish
