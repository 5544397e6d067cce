#!/usr/bin/python3
"""curvature_cost.py — `make bench`, part 4: what one curvature measurement costs (docs/design.md
§10, "Cost"; docs/performance.md, "make bench").

    /usr/bin/python3 bench/curvature_cost.py [BINARY] [--rounds R] [--updates U]

At the anchor's size (configs/atlas.ini with model.d_ff=256 data.batch=16: d = 64, L = 6, n = 64,
B = 16; random tokens, so that no corpus is needed) three runs, alternately, R times (default 3):
  row     train.steps=1 probe.curvature_every=2: one update and the measurement at update 0;
  plain   train.steps=1: the same without it;
  longer  train.steps=1+U (default U = 20): U more updates, for the time of one update.
Prints the row's forward+backward passes (/train/curv_passes), its cost in seconds (the median
over rounds of row − plain, wall clock and CPU time of the process: on a loaded machine the CPU
time is the steadier), per pass, and in updates (the median of (longer − plain) / U). Threads:
STABILITY_THREADS (default 2).
"""
import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time

import h5py

ANCHOR = ["--config", "configs/atlas.ini", "--set", "model.d_ff=256", "--set", "data.batch=16",
          "--set", "data.task=random", "--set", "probe.model_update=off", "--force", "--quiet"]


def timed(cmd, env):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", nargs="?", default="./stability")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--updates", type=int, default=20)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="curvature_cost.")
    env = dict(os.environ, STABILITY_THREADS=os.environ.get("STABILITY_THREADS", "2"))
    out = {k: os.path.join(tmp, k + ".h5") for k in ("row", "plain", "longer")}
    steps = {"row": 1, "plain": 1, "longer": 1 + a.updates}
    cmds = {k: [a.binary, *ANCHOR, "--set", f"train.steps={steps[k]}", "--set",
                f"train.eval_every={steps[k]}", "--set", f"probe.every={10 * steps[k]}",
                "--out", out[k]] for k in out}
    cmds["row"] += ["--set", "probe.curvature_every=2"]
    t = {k: [] for k in out}
    for _ in range(a.rounds):
        for k in out:
            t[k].append(timed(cmds[k], env))
    with h5py.File(out["row"], "r") as f:
        passes = int(f["train/curv_passes"][0])
    for i, what in enumerate(("wall", "CPU")):
        row = statistics.median(r[i] - p[i] for r, p in zip(t["row"], t["plain"]))
        upd = statistics.median((l[i] - p[i]) / a.updates for l, p in zip(t["longer"], t["plain"]))
        print(f"curvature row at the anchor's size ({what} time, {env['STABILITY_THREADS']} "
              f"threads): {passes} passes, {row:.2f} s = {1e3 * row / passes:.2f} ms a pass; "
              f"one update {1e3 * upd:.1f} ms: a row costs {row / upd:.0f} updates")
    for k in out:
        os.unlink(out[k])
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
