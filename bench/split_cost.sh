#!/bin/bash
# split_cost.sh — `make bench`, part 3: what bits independent of the thread count cost
# (docs/performance.md, "Same bits at every thread count").
#
#   bench/split_cost.sh [BEFORE_COMMIT] [ROUNDS]
#
# Builds the benchmark of BEFORE_COMMIT (default 89ac947, the last commit whose GEMMs kept
# OpenBLAS's n-thread bits) into build/before-COMMIT/ from `git archive` (once; reused after),
# then times one update (forward, backward, Adam) with that benchmark and with this tree's
# build/bench/bench, alternately, ROUNDS times (default 3) per case: lm Pre-LN at d = 64, 128,
# 256 and the atlas's run (L = 6, d = 64), at STABILITY_THREADS threads (default 2). Prints
# the median over rounds of each side's per-update median, and after / before. Needs git and
# the repository's history; says so and stops (exit 0) without them.
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:-89ac947}
rounds=${2:-3}
threads=${STABILITY_THREADS:-2}
cases="u_lm_pre_d64 u_lm_pre_d128 u_lm_pre_d256 u_atlas_L6"
after=build/bench/bench
[ -x "$after" ] || { echo "split_cost.sh: $after is not built (make build/bench/bench)" >&2; exit 2; }
if ! commit=$(git rev-parse --short "$before^{commit}" 2>/dev/null); then
  echo "split cost: skipped (no git history with commit $before here)"
  exit 0
fi
dir=build/before-$commit
old=$dir/build/bench/bench
if [ ! -x "$old" ]; then
  echo "split cost: building the benchmark of $commit in $dir (once)"
  rm -rf "$dir" && mkdir -p "$dir"
  git archive "$commit" | tar -x -C "$dir"
  nice make -s -C "$dir" build/bench/bench >/dev/null
fi

# "median,fastest" ms per update of one child run of benchmark $1 on case $2; each key read
# wherever it stands in the RESULT line (a later child added cpu_ms between them), and a line
# without both stops the script rather than print a 0
one() {
  local line med min
  line=" $("$1" --run "$2" --threads "$threads" --steps 10 --warmup 5 | grep '^RESULT ')"
  med=$(sed -n 's/.* ms_median=\([0-9.]*\).*/\1/p' <<<"$line")
  min=$(sed -n 's/.* ms_min=\([0-9.]*\).*/\1/p' <<<"$line")
  if [ -z "$med" ] || [ -z "$min" ]; then
    echo "split_cost.sh: $1 --run $2 printed no ms_median and ms_min in its RESULT line" >&2
    exit 1
  fi
  echo "$med,$min"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "split cost: ms per update at $threads threads (before = $commit, after = this tree):" \
     "median over $rounds alternating rounds of each run's median and of its fastest update"
printf '%-14s %25s   %25s\n' "" "------ median ------" "------ fastest -----"
printf '%-14s %8s %8s %7s   %8s %8s %7s\n' case before after ratio before after ratio
for c in $cases; do
  bm="" am="" bf="" af=""
  for i in $(seq 1 "$rounds"); do
    if [ $((i % 2)) -eq 1 ]; then x=$(one "$old" "$c"); y=$(one "$after" "$c")
    else y=$(one "$after" "$c"); x=$(one "$old" "$c"); fi
    bm="$bm ${x%,*}" am="$am ${y%,*}" bf="$bf ${x#*,}" af="$af ${y#*,}"
  done
  awk -v c="$c" -v bm="$(echo "$bm" | median)" -v am="$(echo "$am" | median)" \
      -v bf="$(echo "$bf" | median)" -v af="$(echo "$af" | median)" \
    'BEGIN { printf "%-14s %8.1f %8.1f %7.3f   %8.1f %8.1f %7.3f\n", c, bm, am, am / bm, bf, af, af / bf }'
done
