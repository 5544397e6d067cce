#!/bin/bash
# sweep_split.sh — `make bench`, part 2: sweep throughput at the atlas's run size (docs/performance.md).
#
#   bench/sweep_split.sh [RUNS] [STEPS]
#
# Runs the same small sweep (RUNS runs of configs/atlas.ini at L = 6, STEPS updates each, random
# tokens so that no corpus is needed) twice through `stability sweep`: --jobs = cores (one thread
# per run, the default) and --jobs 1 (every core in one run), and prints runs per hour for each.
# The sweep's default split (sweep/sweep_run.c: one run per core) should be the faster one;
# docs/performance.md has the numbers. Writes only results/bench-split-*/ and removes them.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-8}
steps=${2:-150}
cores=$(nproc)
[ -x ./stability ] || { echo "sweep_split.sh: ./stability is not built (make stability)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/stability-split.XXXXXX)
trap 'rm -rf "$tmp" results/bench-split-*' EXIT

lrs=$(seq -s, 1 "$runs" | sed 's/\([0-9]*\)/\1e-4/g')   # RUNS distinct learning rates
for jobs in "$cores" 1; do
  name="bench-split-j$jobs"
  cat > "$tmp/$name.ini" <<EOF
[sweep]
base = configs/atlas.ini
name = r_lr{lr}
data.task = random
train.steps = $steps
train.eval_every = $steps
train.lr = $lrs
EOF
  # the sweep's name is the file's stem
  rm -rf "results/$name" "results/$name.h5"
  t0=$(date +%s.%N)
  STABILITY_THREADS=$cores ./stability sweep "$tmp/$name.ini" --jobs "$jobs" --quiet >/dev/null
  t1=$(date +%s.%N)
  threads=$(( cores / jobs ))
  awk -v j="$jobs" -v th="$threads" -v n="$runs" -v s="$steps" -v a="$t0" -v b="$t1" 'BEGIN {
        t = b - a;
        printf "sweep split %d job(s) x %d thread(s): %d runs of %d updates (atlas size, L = 6) in %.1f s = %.0f runs/hour\n",
               j, th, n, s, t, n * 3600 / t }'
done
