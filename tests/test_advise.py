#!/usr/bin/python3
"""`stability advise` (docs/design.md §6g, "The advisor"), its files read with h5py and no project
code. Needs results/licenses.txt (setup/corpus.sh); about 90 s on 2 cores.

Run from the repository root (make test does): /usr/bin/python3 tests/test_advise.py
1. The anchors: the atlas config (d = 64, L = 6, Adam (0.9, 0.98)) at lr 3e-3 — Post-LN needs
   warm-up (root attributes needs_warmup = 1, warmup_updates = 100 = 2/(1 - 0.98), the
   diagnosis' one answer), Pre-LN does not (0, 0); the words on stdout say the same.
2. The attributes against the per-seed datasets: seeds_above = the seeds whose peak_ratio > 1,
   max_lr_without_warmup = lr / max(peak_ratio) (to 1e-12 relative; < lr for Post-LN, > lr for
   Pre-LN), indicator names what it used, the config attribute is the run's (placement, lr).
3. --out over an existing file without --force: exit 2 before measuring, the file unchanged.
4. Bad input: a missing config, an unknown key, train.lr_control = curvature: exit 2, no file.
5. The edges (docs/design.md, "The advisor"): a config whose measured seeds diverge (configs/tiny.ini
   on the copy task at lr 10: all 3; T-Fixup on today's block at lr 1e-2, the case that printed a
   warm-up of 127710667673152 updates and an lr of 0) says "needs", how many seeds diverged within
   6 updates (diverged_seeds = the sum of /advise/diverged = the words' count), no warm-up count
   (warmup_updates 0, warmup "unknown: diverged", no digit run of 4 or more in the words) and
   max_lr_without_warmup NaN, "below <lr>" in words. tiny at lr 1 with train.steps = 100, whose
   rule asks for 679 updates: warmup "longer than the run", warmup_updates = 100, the words say
   "longer than the run's 100 updates" and not 679; without train.steps the same config still
   says 679 (warmup "linear").
Prints "ok"/"not ok" per check, then "advise: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import re
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STABILITY = os.environ.get("STABILITY", "./stability")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def advise(args):
    return subprocess.run([STABILITY, "advise", *args], capture_output=True, text=True, env=ENV,
                          timeout=600)


def anchor(tmp, placement, needs):
    out = os.path.join(tmp, placement + ".h5")
    p = advise(["--config", "configs/atlas.ini", "--set", "train.lr=3e-3",
                "--set", f"model.placement={placement}", "--out", out])
    check(f"{placement}: exit 0", p.returncode == 0, p.stderr[-500:])
    if p.returncode != 0:
        return
    words = "needs warm-up" if needs else "does not need warm-up"
    check(f"{placement}: stdout says '{words}'", p.stdout.startswith(words), p.stdout)
    check(f"{placement}: a progress line per seed",
          sum(line.startswith("advise: seed ") for line in p.stderr.splitlines()) == 3, p.stderr)
    with h5py.File(out, "r") as f:
        a = f.attrs
        peak = f["advise/peak_ratio"][:]
        check(f"{placement}: seeds 1, 2, 3", list(f["advise/seed"][:]) == [1, 2, 3])
        check(f"{placement}: needs_warmup = {int(needs)}", int(a["needs_warmup"]) == int(needs),
              str(a["needs_warmup"]))
        want = 100 if needs else 0
        check(f"{placement}: warmup_updates = {want}", int(a["warmup_updates"]) == want,
              str(a["warmup_updates"]))
        check(f"{placement}: seeds_above = count(peak_ratio > 1)",
              int(a["seeds_above"]) == int(np.sum(peak > 1)), f"{a['seeds_above']} {peak}")
        check(f"{placement}: the verdict is the seeds' majority",
              int(a["needs_warmup"]) == int(2 * np.sum(peak > 1) > 3), str(peak))
        m = float(a["max_lr_without_warmup"])
        check(f"{placement}: max_lr_without_warmup = lr / max(peak_ratio)",
              abs(m - 3e-3 / peak.max()) <= 1e-12 * m, f"{m} {peak}")
        check(f"{placement}: max_lr_without_warmup {'<' if needs else '>'} lr",
              (m < 3e-3) if needs else (m > 3e-3), str(m))
        ind = a["indicator"]
        ind = ind.decode() if isinstance(ind, bytes) else ind
        check(f"{placement}: indicator names the sharpness", "sharpness" in ind, ind)
        cfg = a["config"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
        check(f"{placement}: the config attribute is the run's",
              f"placement = {placement}" in cfg and "lr = 0.003" in cfg, cfg[:300])
        print(f"#   {placement}: peak ratios {np.round(peak, 3).tolist()}, max lr {m:.3g}")


def refusals(tmp):
    out = os.path.join(tmp, "pre.h5")
    if os.path.exists(out):
        before = open(out, "rb").read()
        p = advise(["--config", "configs/atlas.ini", "--out", out])
        check("existing --out without --force: exit 2", p.returncode == 2, p.stderr)
        check("existing --out without --force: before measuring",
              "advise: seed" not in p.stderr, p.stderr)
        check("existing --out without --force: file unchanged", open(out, "rb").read() == before)
    bad = os.path.join(tmp, "bad.h5")
    for name, args in [("missing config", ["--config", os.path.join(tmp, "none.ini")]),
                       ("unknown key", ["--config", "configs/atlas.ini", "--set", "train.bogus=1"]),
                       ("lr_control", ["--config", "configs/atlas.ini",
                                       "--set", "train.lr_control=curvature"])]:
        p = advise([*args, "--out", bad])
        check(f"{name}: exit 2", p.returncode == 2, f"{p.returncode} {p.stderr}")
        check(f"{name}: nothing written", not os.path.exists(bad))
    p = advise(["--config", "configs/atlas.ini", "--set", "train.lr_control=curvature"])
    check("lr_control: the message names the key", "train.lr_control" in p.stderr, p.stderr)


def attrs(path):
    with h5py.File(path, "r") as f:
        a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        return a, f["advise/diverged"][:].tolist() if "advise/diverged" in f else None


def diverged_case(tmp, name, sets):
    out = os.path.join(tmp, name + ".h5")
    p = advise([*sets, "--out", out])
    check(f"{name}: exit 0", p.returncode == 0, p.stderr[-500:])
    if p.returncode != 0:
        return
    a, div = attrs(out)
    n = int(a.get("diverged_seeds", -1))
    print(f"#   {name}: {p.stdout.strip()}")
    check(f"{name}: diverged_seeds = sum(/advise/diverged) > 0",
          div is not None and n == sum(div) and n > 0, f"{n} {div}")
    check(f"{name}: the words say the run diverged in {n} of 3 seeds within 6 updates",
          p.stdout.startswith("needs warm-up") and f"diverged within 6 updates in {n} of 3 seeds"
          in p.stdout, p.stdout)
    check(f"{name}: needs_warmup 1, warmup_updates 0, warmup 'unknown: diverged'",
          (int(a["needs_warmup"]), int(a["warmup_updates"]), a.get("warmup")) ==
          (1, 0, "unknown: diverged"), str(a))
    check(f"{name}: max_lr_without_warmup NaN", math.isnan(float(a["max_lr_without_warmup"])),
          str(a["max_lr_without_warmup"]))
    lr = re.search(r"at lr (\S+):", p.stdout)
    check(f"{name}: the words say 'below' the lr and no count",
          lr is not None and f"below {lr.group(1)}" in p.stdout and
          not re.search(r"\d{4,}", p.stdout) and "train.warmup=" not in p.stdout, p.stdout)


def edges(tmp):
    tiny = ["--config", "configs/tiny.ini", "--set", "data.task=copy"]
    diverged_case(tmp, "tiny-lr10", [*tiny, "--set", "train.lr=10"])
    diverged_case(tmp, "tfixup", [
        "--config", "configs/atlas.ini", "--set", "model.placement=post",
        "--set", "model.norm=none", "--set", "init.scheme=tfixup", "--set", "train.lr=1e-2",
        "--set", "model.positions=rope", "--set", "model.activation=swiglu",
        "--set", "model.bias=off", "--set", "model.d_ff=88", "--set", "train.precision=float32"])
    for steps, kind, count in [("100", "longer than the run", 100), (None, "linear", 679)]:
        out = os.path.join(tmp, f"tiny-lr1-{steps}.h5")
        sets = ["--set", f"train.steps={steps}"] if steps else []
        p = advise([*tiny, "--set", "train.lr=1", *sets, "--out", out])
        a, _ = attrs(out) if p.returncode == 0 else ({}, None)
        check(f"tiny lr 1, steps {steps}: warmup '{kind}', warmup_updates {count}",
              (a.get("warmup"), int(a.get("warmup_updates", -1))) == (kind, count), str(a))
        words = ("longer than the run's 100 updates" if steps else
                 "a linear warm-up of 679 updates (train.warmup=679)")
        check(f"tiny lr 1, steps {steps}: the words say '{words}'" +
              (" and not 679" if steps else ""),
              words in p.stdout and (not steps or "679" not in p.stdout), p.stdout)


def main():
    if not os.path.exists("results/licenses.txt"):
        print("not ok results/licenses.txt missing (setup/corpus.sh)")
        print("advise: 0 passed, 1 failed")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        anchor(tmp, "post", True)
        anchor(tmp, "pre", False)
        refusals(tmp)
        edges(tmp)
    passed = sum(results)
    print(f"advise: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
