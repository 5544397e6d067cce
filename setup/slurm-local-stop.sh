#!/bin/bash
# Stop what setup/slurm-local-start.sh started, by the PIDs in its pid files (never by name).
DIR=${1:-/tmp/stability-slurm}
for f in slurmd slurmctld munged; do
    [ -s "$DIR/$f.pid" ] || continue
    pid=$(cat "$DIR/$f.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$DIR/$f.pid"
done
echo "slurm-local: stopped"
