#!/usr/bin/python3
"""test_dynamics_plot.py — the training-dynamics figures of a sweep (docs/dynamics.md, "Figures
of any run or sweep"), from the repository root: /usr/bin/python3 tests/test_dynamics_plot.py

A tiny sweep (the `tiny` model with 4 heads' worth of width, a copy task; Pre-LN and Post-LN x
lr 1e-3 and 3e-2 x QK-norm off and layernorm, 30 updates, a probe every 5) is run and drawn as
SVG, then:
  - the heat maps (dyn_grad, dyn_update, dyn_entropy, dyn_logit) are drawn only for six runs or
    fewer: for this 8-run sweep they are absent, and for a 4-run sub-sweep present, one panel a
    run, with the layers on the y axis and a log colour scale;
  - dyn_lines: one key entry per style — each learning rate, each mitigation, each placement
    once — and a curve per run (8 paths besides the key's);
  - dyn_lr: final loss vs lr per placement and mitigation, its key naming all four pairs.
Prints "ok - ..." / "FAIL - ..." per check, then "dynamics plot: N passed, M failed".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, "stability")
passed = failed = 0

SWEEP = """[sweep]
base = configs/tiny.ini
name = {placement}_{qk_norm}_lr{lr}
model.placement = pre, post
train.lr = 1e-3, 3e-2
model.qk_norm = off, layernorm
model.d_model = 16
model.heads = 4
model.d_ff = 24
data.task = copy
train.steps = 30
train.warmup = 5
train.eval_every = 10
probe.every = 5
"""


def check(desc, ok, detail=""):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print(("ok - " if ok else "FAIL - ") + desc + (f": {detail}" if detail and not ok else ""))


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, STABILITY_THREADS="1"))


def text(path):
    return open(path).read() if os.path.exists(path) else ""


def key_titles(svg):
    """The key's entries: gnuplot writes each as a <title> of its group."""
    return re.findall(r"<title>([^<]*)</title>", svg)


def main():
    name = "dynamics_plot_test"
    with tempfile.TemporaryDirectory(prefix="stability_dynplot_") as tmp:
        ini = os.path.join(tmp, name + ".ini")
        with open(ini, "w") as f:
            f.write(SWEEP)
        shutil.rmtree(os.path.join(REPO, "results", name), ignore_errors=True)
        r = run("sweep", ini, "--jobs", "2", "--quiet")
        merged = os.path.join(REPO, "results", name + ".h5")
        check("the 8-run sweep runs and merges", r.returncode == 0 and os.path.exists(merged),
              r.stderr[-400:])
        if r.returncode:
            return 1
        pd = os.path.join(tmp, "plots")
        r = run("plot", merged, "--out", pd, "--format", "svg")
        check("stability plot draws the sweep", r.returncode == 0, r.stderr[-400:])
        heat = ["dyn_grad", "dyn_update", "dyn_entropy", "dyn_logit"]
        check("8 runs: no heat maps (more panels than a figure can show)",
              not any(os.path.exists(f"{pd}/{name}-{h}.svg") for h in heat))

        lines = text(f"{pd}/{name}-dyn_lines.svg")
        titles = key_titles(lines)
        want = ["lr 0.001", "lr 0.03", "none", "QK-norm", "pre", "post"]
        check("dyn_lines: one key entry per lr, mitigation and placement",
              all(titles.count(w) == 1 for w in want), str(titles))
        check("dyn_lines: no entry per run", not any(", lr " in t for t in titles), str(titles))

        lr = text(f"{pd}/{name}-dyn_lr.svg")
        titles = key_titles(lr)
        pairs = ["pre, none", "pre, QK-norm", "post, none", "post, QK-norm"]
        check("dyn_lr: a line per placement and mitigation", all(p in titles for p in pairs),
              str(titles))
        # four runs drawn together get the heat maps
        four = [os.path.join(REPO, "results", name, f"pre_{q}_lr{x}.h5")
                for q in ("off", "layernorm") for x in ("1e-3", "3e-2")]
        pd4 = os.path.join(tmp, "plots4")
        r = run("plot", *four, "--out", pd4, "--format", "svg")
        got = sorted(os.listdir(pd4)) if os.path.isdir(pd4) else []
        for h in heat:
            svgs = [g for g in got if g.endswith(f"-{h}.svg")]
            s = text(os.path.join(pd4, svgs[0])) if svgs else ""
            check(f"4 runs: {h} drawn, a panel a run with the layers on the y axis, log colours",
                  r.returncode == 0 and len(svgs) == 1 and
                  s.count(">layer (1 = input side)<") == 4 and
                  all(f"({n})" in s for n in ("pre_off_lr1e-3", "pre_layernorm_lr3e-2")) and
                  ("log scale" in s or h == "dyn_entropy"), f"{svgs} {r.stderr[-300:]}")
        shutil.rmtree(os.path.join(REPO, "results", name), ignore_errors=True)
        os.remove(merged)
    print(f"dynamics plot: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
