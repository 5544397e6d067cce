#!/bin/bash
# Cluster runs on a real single-node Slurm cluster, started on loopback by
# setup/slurm-local-start.sh and torn down by PID at the end, whatever happened.
#  1. a small sweep submitted with --slurm --submit runs as one job array; every task
#     COMPLETED; --merge gives a file whose runs equal a local run of the same sweep; with
#     two run files lost, --merge names their task ids and --slurm --submit --only-missing
#     reruns just those two;
#  2. a training task sent SIGUSR1 mid-run (scancel --signal=USR1) checkpoints, requeues
#     itself, resumes and finishes with the same losses as an uninterrupted local run.
# Skipped, with a message, when not root (a local cluster needs root).
set -u
cd "$(dirname "$0")/.."
STABILITY=${STABILITY:-./stability}
PY=/usr/bin/python3
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $1"; fail=$((fail + 1)); }
finish() { echo "slurm: $pass passed, $fail failed"; [ "$fail" = 0 ]; exit $?; }

if [ "$(id -u)" != 0 ]; then
    echo "slurm: skipped: starting a local Slurm cluster needs root"
    exit 0
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "slurm: skipped: slurmctld/munge not installed (setup/install-deps.sh --test installs them)"
    exit 0
fi

DIR=$(mktemp -d /tmp/stability-slurm.XXXXXX)
NAME=slurmtest_$$
cleanup() {
    setup/slurm-local-stop.sh "$DIR" >/dev/null
    rm -rf "$DIR" "results/$NAME" "results/$NAME.h5" "results/${NAME}_local" "results/${NAME}_local.h5" \
           "results/${NAME}_usr1" "results/${NAME}_usr1.h5" "results/${NAME}_straight.h5"
}
trap cleanup EXIT
# MaxArraySize = 3: the 4-run sweep must be split into two arrays (indices 0-2, then 0 + offset 3)
if ! STABILITY_SLURM_MAX_ARRAY=3 setup/slurm-local-start.sh "$DIR" > "$DIR/start.log" 2>&1; then
    cat "$DIR/start.log"
    not_ok "local Slurm cluster starts"
    finish
fi
ok "local Slurm cluster starts ($(cat "$DIR/start.log" | tail -1 | cut -c1-60))"
export SLURM_CONF="$DIR/slurm.conf"

# wait_job JOBID SECONDS: until the job has left the queue
wait_job() {
    local id=$1 limit=$2 t=0
    while [ -n "$(squeue -h -j "$id" 2>/dev/null)" ]; do
        sleep 0.5
        t=$((t + 1))
        [ $t -ge $((limit * 2)) ] && return 1
    done
    return 0
}

# ---------------------------------------------------------------- 1. array, merge, compare
for n in "$NAME" "${NAME}_local"; do
    cat > "$DIR/$n.ini" <<EOF
[sweep]
base = configs/tiny.ini
name = {placement}_L{layers}
model.placement = post, pre
model.layers = 2, 3
probe.seeds = 3
probe.batches = 2
[slurm]
time = 5
array_parallelism = 2
EOF
done
JOBS=$($STABILITY sweep "$DIR/$NAME.ini" --slurm --submit --quiet | tr '\n' ' ')
echo "  submitted job ids: $JOBS"
if [[ "$JOBS" =~ ^[0-9]+\ [0-9]+\ $ ]]; then ok "4 runs > MaxArraySize 3: two arrays submitted"; else not_ok "job ids: '$JOBS'"; finish; fi
[ -s "results/$NAME/job.sbatch" ] && grep -q -- '--array=0-3%2' "results/$NAME/job.sbatch" \
    && grep -q 'HDF5_USE_FILE_LOCKING=FALSE' "results/$NAME/job.sbatch" \
    && ok "job.sbatch: one array 0-3%2, HDF5 locking off" || not_ok "job.sbatch content"
done_all=1
for j in $JOBS; do wait_job "$j" 120 || done_all=0; done
[ $done_all = 1 ] && ok "arrays finished" || { not_ok "arrays did not finish in 120 s"; squeue; }
states=$(for j in $JOBS; do scontrol -o show job "$j"; done | sed -n 's/^JobId=[0-9]* ArrayJobId=\([0-9]*\) ArrayTaskId=\([0-9]*\) .*JobState=\([A-Z]*\).*/\1_\2:\3/p' | sort | tr '\n' ' ')
echo "  array task states: $states"
[ "$(echo "$states" | grep -o COMPLETED | wc -l)" = 4 ] && ok "4 tasks COMPLETED" || not_ok "task states: $states"
$STABILITY sweep "$DIR/$NAME.ini" --merge --quiet && ok "--merge: every run complete" || not_ok "--merge exit $?"
$STABILITY sweep "$DIR/${NAME}_local.ini" --jobs 2 --quiet && ok "the same sweep locally" || not_ok "local sweep"
# same_as_local: the merged Slurm file's runs equal the local sweep's, dataset by dataset
same_as_local() {
    $PY - "results/$NAME.h5" "results/${NAME}_local.h5" <<'EOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
assert sorted(a["runs"]) == sorted(b["runs"]), (list(a["runs"]), list(b["runs"]))
n = 0
def compare(name, obj):
    global n
    if isinstance(obj, h5py.Dataset):
        x, y = obj[...], b["runs"][name][...]
        assert np.array_equal(x, y, equal_nan=True), name
        n += 1
a["runs"].visititems(compare)
assert list(a["sweep/values"][...].ravel()) == list(b["sweep/values"][...].ravel())
print(f"  {n} datasets identical")
EOF
}
if same_as_local; then ok "Slurm merge == local run (bit for bit)"; else not_ok "Slurm merge differs from the local run"; fi

# two runs lost (one in each array piece): --merge names their task ids, --only-missing
# resubmits just those, and the merge is complete and identical again
rm -f "results/$NAME/post_L3.h5" "results/$NAME/pre_L3.h5"
missing=$($STABILITY sweep "$DIR/$NAME.ini" --merge --quiet 2>&1); rc=$?
echo "  --merge after losing two runs: exit $rc: $(echo "$missing" | tail -1)"
[ $rc != 0 ] && echo "$missing" | grep -q 'task ids: *1 3' && ok "--merge lists the missing task ids 1 3" \
    || not_ok "--merge with two runs missing (exit $rc): $missing"
JOBS2=$($STABILITY sweep "$DIR/$NAME.ini" --slurm --submit --only-missing --quiet | tr '\n' ' ')
echo "  resubmitted job ids: $JOBS2"
done_all=1
for j in $JOBS2; do wait_job "$j" 120 || done_all=0; done
tasks=$(for j in $JOBS2; do scontrol -o show job "$j"; done | grep -c 'JobState=COMPLETED')
[ $done_all = 1 ] && [ "$tasks" = 2 ] && ok "--only-missing: exactly 2 tasks ran, COMPLETED" \
    || { not_ok "--only-missing: $tasks tasks completed (jobs '$JOBS2')"; squeue; }
$STABILITY sweep "$DIR/$NAME.ini" --merge --quiet && same_as_local \
    && ok "merge complete again and == local run" || not_ok "merge after --only-missing"

# ---------------------------------------------------------------- 2. USR1: checkpoint, requeue, resume
TRAIN_SETS="train.steps = 2000
data.task = copy
data.batch = 4
model.placement = pre
model.d_model = 64
model.heads = 4
model.d_ff = 128
model.seq_len = 32
model.vocab = 16
train.warmup = 100
train.lr = 1e-3
train.checkpoint_every = 0"
{ printf '[sweep]\nbase = configs/tiny.ini\n%s\n[slurm]\ntime = 5\n' "$TRAIN_SETS"; } > "$DIR/${NAME}_usr1.ini"
JOB=$($STABILITY sweep "$DIR/${NAME}_usr1.ini" --slurm --submit --quiet)
echo "  training job id: $JOB"
RUNFILE="results/${NAME}_usr1/run.h5"
# wait until the run is well under way (its file exists and the task runs), then pre-empt it
for _ in $(seq 120); do
    [ -s "$RUNFILE" ] && [ "$(squeue -h -j "$JOB" -o %T 2>/dev/null | head -1)" = RUNNING ] && break
    sleep 0.25
done
sleep 1.5
scancel --batch --signal=USR1 "${JOB}_0" && ok "scancel --batch --signal=USR1 ${JOB}_0" || not_ok "scancel USR1"
# Slurm holds a requeued batch job for ~2 minutes before it is eligible again. Once ours shows
# Restarts >= 1, is pending, and the old run has fully left the node (node idle, no job
# completing), make it eligible now (test speed only: the requeue itself is what the task did).
# Pulling the start time forward while the old run is still completing lets the old run's end
# be booked against the new one (seen: JobState=FAILED, RunTime 0); without the update the
# task simply starts when Slurm's hold ends.
for _ in $(seq 240); do
    line=$(scontrol -o show job "$JOB" 2>/dev/null)
    if [[ "$line" =~ JobState=PENDING ]] && [[ "$line" =~ Restarts=[1-9] ]] \
        && [ "$(sinfo -h -N -o %T 2>/dev/null)" = idle ] && [ -z "$(squeue -h -t CG 2>/dev/null)" ]; then
        sleep 1
        echo "  requeued: $(echo "$line" | grep -o 'EligibleTime=[^ ]*')"
        scontrol update JobId="$JOB" StartTime=now >/dev/null 2>&1 || true
        break
    fi
    sleep 0.25
done
wait_job "$JOB" 300 && ok "the pre-empted task finished" || { not_ok "task did not finish"; squeue; }
info=$(scontrol -o show job "$JOB")
restarts=$(echo "$info" | sed -n 's/.* Restarts=\([0-9]*\) .*/\1/p')
state=$(echo "$info" | sed -n 's/.* JobState=\([A-Z]*\) .*/\1/p')
echo "  task ${JOB}_0: JobState=$state Restarts=$restarts"
[ "$state" = COMPLETED ] && [ "${restarts:-0}" -ge 1 ] && ok "requeued (Restarts=$restarts) and COMPLETED" \
    || { not_ok "state $state, restarts '$restarts'"; echo "$info"; cat results/${NAME}_usr1/slurm-*.out results/${NAME}_usr1/*.log 2>/dev/null
         grep -E "JobId=$JOB[ _]|job $JOB|JOB $JOB" "$DIR/slurmctld.log" | tail -20; }
grep -q "checkpointed; scontrol requeue" results/${NAME}_usr1/slurm-*.out && ok "the task checkpointed and requeued itself" \
    || { not_ok "no requeue in the task's output"; cat results/${NAME}_usr1/slurm-*.out; }
# the same training without interruption, locally
SETS=()
while IFS= read -r line; do SETS+=(--set "${line// = /=}"); done <<< "$TRAIN_SETS"
$STABILITY --config configs/tiny.ini "${SETS[@]}" --out "results/${NAME}_straight.h5" --force --quiet \
    && ok "the same run without interruption" || not_ok "straight run"
if $PY - "$RUNFILE" "results/${NAME}_straight.h5" <<'EOF2'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
assert a.attrs["status"] == "done", a.attrs["status"]
la, lb = a["train/loss"][...], b["train/loss"][...]
assert la.shape == lb.shape == (2000,), (la.shape, lb.shape)
assert la.tobytes() == lb.tobytes(), "losses differ"
print(f"  2000 losses byte-identical; final loss {la[-1]:.4f}")
EOF2
then ok "resumed run == uninterrupted run (/train/loss byte-identical)"; else not_ok "resumed run differs"; fi

finish
