#!/usr/bin/python3
"""bench_log.py — what watching a run costs per update (issue 33; for `make bench`).

    /usr/bin/python3 tools/bench_log.py [BINARY] [--base OLD_BINARY] [--reps N] [--steps S]

Trains configs/tiny.ini on the copy task (d = 8: about 30 µs an update, where a fixed cost per
update shows most; probes and the model update off) with stderr to a file, so that the run logs,
at output.log_every = 0 (no line), 100 (the default) and 1 (a line every update), alternated
N times (default 7); with --base, the same run with OLD_BINARY (a build before the log line,
which takes no log_every). Prints each one's least CPU time (user + sys: the least disturbed by
other processes on a shared machine) per update, and the differences.
"""
import argparse
import os
import resource
import subprocess
import tempfile


def cpu_of(cmd, env, err):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(err, "w") as fh:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=fh, env=env, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", nargs="?", default="./stability")
    ap.add_argument("--base", default="")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20000)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_log.")
    sets = ["--set", "data.task=copy", "--set", f"train.steps={a.steps}", "--set", "train.warmup=20",
            "--set", f"probe.every={10 * a.steps}", "--set", "probe.model_update=off",
            "--out", os.path.join(tmp, "run.h5"), "--force"]
    env = dict(os.environ, STABILITY_THREADS="1", OMP_WAIT_POLICY="passive")
    env.pop("STABILITY_SWEEP_THREADS", None)
    cases = {f"log_every {k}": [a.binary, "--config", "configs/tiny.ini", *sets, "--set",
                                f"output.log_every={k}"] for k in (0, 100, 1)}
    if a.base:
        cases["base"] = [a.base, "--config", "configs/tiny.ini", *sets]
    best = {}
    for _ in range(a.reps):
        for name, cmd in cases.items():
            best[name] = min(best.get(name, 1e9), cpu_of(cmd, env, os.path.join(tmp, "err")))
    us = {k: 1e6 * v / a.steps for k, v in best.items()}
    for k, v in us.items():
        print(f"{k:>14}: {v:7.2f} us/update (least CPU time of {a.reps})")
    print(f"a line every update: {us['log_every 1'] - us['log_every 0']:+.2f} us/update; "
          f"the default (100): {us['log_every 100'] - us['log_every 0']:+.2f} us/update")
    if a.base:
        print(f"this build at the default against the base: {us['log_every 100'] - us['base']:+.2f} us/update")


if __name__ == "__main__":
    main()
