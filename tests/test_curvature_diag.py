#!/usr/bin/python3
"""The curvature diagnosis (issue 32 item 4; measure/diagnose_curv.h): what `stability info` and
the live warnings say about the active preconditioned sharpness against the optimizer's
threshold, checked against the file's rows read here with h5py.

Run from the repository root (make test does): /usr/bin/python3 tests/test_curvature_diag.py
1. A tiny Post-LN copy-task run at lr 3e-2 without warm-up, probe.curvature_every = 1: from
   /train/precond_max_active / stability_threshold this script finds the first row above 1, the
   peak, the last row above, how many rows are above, the largest block of precond_block_max at
   the peak (named from its stack and kind attributes, layers from 1) and the warm-up estimate
   ⌊max over rows above of (t + 1)·ratio⌋ + 1; `info` must print each of them, the remedies
   (GI-Adam, Pre-LN), and the run's stderr must carry the warning at the first crossing and the
   same summary line as info.
2. A tiny Pre-LN run at lr 3e-3 with a 10-update warm-up: every row below 1 (checked here), and
   info says so and reports no crossing; no curvature warning.
3. A run without curvature rows: info says nothing about curvature.
Prints "ok"/"not ok" per check, then "curvature_diag: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
ENV = dict(os.environ, OMP_WAIT_POLICY="passive", STABILITY_THREADS="1")
TINY = ["--config", "tiny", "--set", "data.task=copy", "--set", "model.causal=true", "--set",
        "train.steps=30"]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def train(out, *sets):
    args = [STABILITY, "train", *TINY, "--out", out, "--force"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, env=ENV, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"stability train failed: {p.stderr}")
    return p.stderr


def info_line(path):
    out = subprocess.run([STABILITY, "info", path], env=ENV, capture_output=True, text=True,
                         check=True).stdout
    lines = [l.strip() for l in out.splitlines() if l.strip().startswith("curvature:")]
    return lines, out


def g(x):
    """C's %.3g."""
    return "%.3g" % x


def block_name(stack, kind, l, k):
    if stack[l] == "outside":
        return f"{kind[k]}, outside the layers,"
    first = l
    while first > 0 and stack[first - 1] == stack[l]:
        first -= 1
    prefix = {"enc": "encoder ", "dec": "decoder "}.get(stack[l], "")
    return f"{prefix}layer {l - first + 1} {kind[k]}"


def crossing(tmp):
    path = os.path.join(tmp, "post.h5")
    err = train(path, "model.placement=post", "train.lr=3e-2", "train.warmup=1",
                "probe.curvature_every=1", "train.beta2=0.9")   # the one answer 2/(1 - 0.9) = 20 fits 30
    with h5py.File(path, "r") as f:
        t = f["train"]
        step = t["curv_step"][:]
        thr = t["stability_threshold"][:]
        ratio = t["precond_max_active"][:] / thr
        blocks = t["precond_block_max"][:]
        attrs = t["precond_block_max"].attrs
        stack = [s.decode() if isinstance(s, bytes) else s for s in attrs["stack"]]
        kind = [s.decode() if isinstance(s, bytes) else s for s in attrs["kind"]]
    fin = np.isfinite(ratio)
    above = np.where(fin & (ratio > 1))[0]
    check("the Post-LN run crosses the threshold (precondition)", len(above) > 0,
          f"ratios {ratio}")
    if not len(above):
        return
    first, last = int(step[above[0]]), int(step[above[-1]])
    p = int(np.nanargmax(np.where(fin, ratio, -np.inf)))
    peak, peak_step = ratio[p], int(step[p])
    l, k = np.unravel_index(np.nanargmax(blocks[p]), blocks[p].shape)
    block = block_name(stack, kind, l, k)
    block_ratio = blocks[p][l, k] / thr[p]
    need = max((step[i] + 1) * ratio[i] for i in above)   # train.warmup = 1
    N_curv = int(math.floor(need)) + 1
    N = max(N_curv, 20)   # the diagnosis' one warm-up (measure/diagnose.h), at least the curvature's
    lines, out = info_line(path)
    line = lines[0] if lines else ""
    check("info: one curvature line", len(lines) == 1, out)
    check("info: the first crossing and its ratio",
          f"at update {first}: precond_max_active / stability_threshold = {g(ratio[above[0]])}" in line,
          line)
    check("info: the peak", f"peak {g(peak)} at update {peak_step}" in line, line)
    if last > first:
        check("info: how long", f"from update {first} to {last} ({last - first} update"
              in line and f"{len(above)} of {int(fin.sum())} measured rows above" in line, line)
    else:
        check("info: how long", f"at update {first} alone (1 of {int(fin.sum())} measured rows)"
              in line, line)
    check("info: the block at the peak",
          f"the largest block at the peak: {block} {g(block_ratio)} x the threshold" in line, line)
    want = (f"--set train.warmup={N} (" + ("the diagnosis' warm-up, " if N > N_curv else "") +
            f"at least the {N_curv} updates") if N <= 30 else "--set train.lr="
    check("info: the warm-up estimate", want in line, f"N = {N}, N_curv = {N_curv}: {line}")
    check("info: GI-Adam and Pre-LN offered",
          "--set train.optimizer=gi_adam" in line and "--set model.placement=pre" in line, line)
    warns = [l.split("warning: ", 1)[1] for l in err.splitlines() if "warning: curvature:" in l]
    check("run: a warning at the first crossing and the summary at the end",
          len(warns) == 2 and f"at update {first}:" in warns[0] and warns[1] == line,
          "\n".join(warns))


def below(tmp):
    path = os.path.join(tmp, "pre.h5")
    err = train(path, "model.placement=pre", "train.lr=3e-3", "train.warmup=10",
                "probe.curvature_every=1")
    with h5py.File(path, "r") as f:
        t = f["train"]
        ratio = t["precond_max_active"][:] / t["stability_threshold"][:]
        step = t["curv_step"][:]
    fin = np.isfinite(ratio)
    check("the Pre-LN warm-up run stays below (precondition)", not np.any(ratio[fin] > 1),
          f"ratios {ratio}")
    p = int(np.nanargmax(np.where(fin, ratio, -np.inf)))
    lines, out = info_line(path)
    line = lines[0] if lines else ""
    check("info: below the threshold, no crossing",
          len(lines) == 1 and "crossed" not in line and
          f"stayed below adam's stability threshold at all {int(fin.sum())} measured rows" in line
          and f"{g(ratio[p])}, at update {int(step[p])}" in line and "--set" not in line, out)
    check("run: no curvature warning", "curvature" not in err, err)


def none(tmp):
    path = os.path.join(tmp, "plain.h5")
    train(path, "train.steps=5")
    _, out = info_line(path)
    check("info: no curvature rows, no word on curvature", "curvature" not in out, out)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        crossing(tmp)
        below(tmp)
        none(tmp)
    bad = results.count(False)
    print(f"curvature_diag: {len(results) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
