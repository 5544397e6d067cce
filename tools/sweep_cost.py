#!/usr/bin/python3
"""sweep_cost.py experiments/A.ini [B.ini ...] — what a sweep will cost, measured here.

Lists each sweep's runs (`stability sweep FILE --dry-run`), groups them into classes that cost
the same per update (every override but the learning rate, the seed, the warm-up,
the parametrization and the z-loss, which change no work per update), and times one run of each
class three times, short: s1 updates with one evaluation, s2 updates with one, s2 updates with
an evaluation every s1 (defaults 10 and 40). The CPU time (user + system of the run's process,
from wait4: on a shared machine wall time says more about the neighbours than about the run)
gives each class a fixed cost, a cost per update and one per evaluation, and each run its
predicted cost at its own train.steps and train.eval_every. Printed: per class and in all, the
CPU time and the wall time on --jobs cores (the sweep's one run per core, one thread each:
the larger of the total over the cores and the longest run).

A run that diverges stops early, so at high learning rates the prediction is an upper bound.
The timing runs use STABILITY_THREADS=1 and write into a temporary folder.
"""
import argparse
import configparser
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IGNORE = ("train.lr", "init.seed", "train.warmup", "init.parametrization", "init.base_width",
          "train.z_loss")


def dry_run(stability, path):
    """(base config path, [(run name, [(key, value), ...]), ...]) from `sweep --dry-run`."""
    r = subprocess.run([stability, "sweep", path, "--dry-run"], capture_output=True, text=True,
                       cwd=ROOT)
    if r.returncode != 0:
        sys.exit(f"{path}: {r.stderr.strip()}")
    lines = r.stdout.splitlines()
    m = re.match(r"sweep \S+: base (.+), \d+ runs? -> ", lines[0])
    if not m:
        sys.exit(f"{path}: unexpected --dry-run header: {lines[0]}")
    runs = []
    for line in lines[1:]:
        f = line.split()
        runs.append((f[1], [tuple(x.split("=", 1)) for x in f[2:] if "=" in x]))   # not "[complete]"
    return m.group(1), runs


def base_value(base, key, fallback):
    cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
    cfg.read(os.path.join(ROOT, base))
    sec, k = key.split(".", 1)
    return cfg.get(sec, k, fallback=fallback)


def cpu_seconds(cmd, env):
    """CPU time (user + system) of one child process, from wait4; exits on failure."""
    p = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    p.stderr.close()
    if p.returncode != 0:
        sys.exit(f"timing run failed ({p.returncode}): {' '.join(cmd)}\n{err}")
    return ru.ru_utime + ru.ru_stime


def time_class(stability, base, overrides, s1, s2, tmp):
    """(fixed, per update, per evaluation) CPU seconds of one class."""
    env = dict(os.environ, STABILITY_THREADS="1")
    env.pop("STABILITY_SWEEP_THREADS", None)
    sets = [a for k, v in overrides if k not in ("train.steps", "train.eval_every")
            for a in ("--set", f"{k}={v}")]
    out = os.path.join(tmp, "t.h5")

    def one(steps, every):
        return cpu_seconds([stability, "--config", base, *sets, "--set", f"train.steps={steps}",
                            "--set", f"train.eval_every={every}", "--out", out, "--force",
                            "--quiet"], env)
    a, b, c = one(s1, s1), one(s2, s2), one(s2, s1)
    per_update = (b - a) / (s2 - s1)
    per_eval = (c - b) / (s2 // s1 - 1)
    return max(a - s1 * per_update - per_eval, 0.0), per_update, per_eval


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--jobs", type=int, default=2, help="cores the sweep runs on (default 2)")
    ap.add_argument("--short", type=int, default=10, help="s1 (default 10)")
    ap.add_argument("--long", type=int, default=40, help="s2, a multiple of s1 (default 40)")
    ap.add_argument("--stability", default=os.path.join(ROOT, "stability"))
    a = ap.parse_args()
    if a.long <= a.short or a.long % a.short:
        sys.exit("--long must be a multiple of --short and larger")
    print("| sweep | class (what changes the work) | runs | steps | fixed s | s/update | s/eval "
          "| CPU-min |")
    print("|---|---|---|---|---|---|---|---|")
    grand = 0.0
    longest = 0.0
    with tempfile.TemporaryDirectory(prefix="sweep_cost.") as tmp:
        for path in a.files:
            base, runs = dry_run(a.stability, path)
            classes = {}
            for name, ov in runs:
                key = tuple((k, v) for k, v in ov if k not in IGNORE)
                classes.setdefault(key, []).append(ov)
            total = 0.0
            for key, members in classes.items():
                ov = dict(members[0])
                lrs = sorted(float(dict(m).get("train.lr", "nan")) for m in members)
                if math.isfinite(lrs[0]):   # time the smallest lr: it does not diverge early
                    ov["train.lr"] = next(dict(m)["train.lr"] for m in members
                                          if float(dict(m)["train.lr"]) == lrs[0])
                fixed, pu, pe = time_class(a.stability, base, list(ov.items()), a.short, a.long, tmp)
                cost = 0.0
                for m in members:
                    m = dict(m)
                    steps = int(m.get("train.steps", base_value(base, "train.steps", "0")))
                    every = int(m.get("train.eval_every", base_value(base, "train.eval_every", "0")))
                    run = fixed + steps * pu + (steps // every if every > 0 else 0) * pe
                    cost += run
                    longest = max(longest, run)
                total += cost
                label = " ".join(f"{k.split('.')[-1]}={v}" for k, v in key
                                 if k not in ("train.steps", "train.precision", "probe.model_update"))
                steps = dict(key).get("train.steps", base_value(base, "train.steps", "0"))
                print(f"| {os.path.basename(path)} | {label or '(all runs)'} | {len(members)} | {steps} | "
                      f"{fixed:.2f} | {pu:.4f} | {pe:.3f} | {cost / 60:.1f} |")
            print(f"| {os.path.basename(path)} | **all {len(runs)} runs** | | | | | | **{total / 60:.1f}** |")
            grand += total
    print(f"\nIn all {grand / 60:.1f} CPU-minutes: about {max(grand / a.jobs, longest) / 60:.0f} minutes "
          f"on {a.jobs} idle cores, one run per core (the longest run: {longest / 60:.1f} min). "
          f"Measured with {a.short}/{a.long}-update runs, STABILITY_THREADS=1; load average "
          f"{os.getloadavg()[0]:.1f} at the end.")


if __name__ == "__main__":
    main()
