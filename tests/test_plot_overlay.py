#!/usr/bin/python3
"""test_plot_overlay.py — `stability plot` overlays any runs a user gives it (docs/design.md §6j),
from the repository root: /usr/bin/python3 tests/test_plot_overlay.py

Tiny runs (configs/tiny.ini, a few updates) are trained into a temporary directory and drawn
with `stability plot --format gp`; the gnuplot scripts are read back:

1. runs that differ in norm and bias (2 runs, Pre-LN; 3 runs, Post-LN too) and the 2017 block against the LLaMA
   block draw a loss figure: before, the scheme table gave Pre-LN and Pre-LN (RMSNorm) one colour
   and marker and the figure was refused ("more curves than colours and dashes tell apart");
   now every curve has a colour of its own and a key entry.
Prints "ok - ..." / "FAIL - ..." per check, then "plot overlay: N passed, M failed".
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, check, run, key_titles, summary  # noqa: E402

TINY = os.path.join(REPO, "configs", "tiny.ini")
PRE = "model.placement=pre train.steps=6"
LLAMA = "model.norm=rmsnorm model.activation=swiglu model.positions=rope model.bias=off"


def train(tmp, name, spec):
    """A tiny run with the --set items of spec (space-separated) into tmp/name.h5."""
    args = ["--config", TINY]
    for kv in spec.split():
        args += ["--set", kv]
    path = os.path.join(tmp, name + ".h5")
    r = run(*args, "--out", path, "--quiet")
    if r.returncode:
        raise SystemExit(f"stability failed: {r.stderr}")
    return path


def plot(tmp, out, files):
    """`stability plot --format gp` of files into tmp/out: (exit status, stderr, out dir)."""
    d = os.path.join(tmp, out)
    r = run("plot", *files, "--out", d, "--format", "gp", "--quiet")
    return r.returncode, r.stderr, d


def figure(d, fig):
    """The script of figure fig in d (the first file named *-fig.gp), or None."""
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if f.endswith("-" + fig + ".gp"):
            return open(os.path.join(d, f)).read()
    return None


def key_colours(gp):
    """The colours of the key entries of a script, in order."""
    return re.findall(r"keyentry with [^,]*?lc rgb '(#[0-9a-f]{6})'", gp)


def check_overlay(tmp):
    """Norm and bias, 2 and 3 runs; the 2017 block against LLaMA's: a loss figure each."""
    a = train(tmp, "ln", PRE)
    b = train(tmp, "rms_nobias", PRE + " model.norm=rmsnorm model.bias=off")
    c = train(tmp, "post_nobias", "train.steps=6 model.bias=off")
    llama = train(tmp, "llama", PRE + " " + LLAMA)
    for label, files, n in (("2 runs (norm, bias)", [a, b], 2),
                            ("3 runs (norm, bias)", [a, b, c], 3),
                            ("2017 block vs LLaMA block", [a, llama], 2)):
        rc, err, d = plot(tmp, "ov%d_%s" % (n, os.path.basename(files[-1])[:-3]), files)
        gp = figure(d, "loss")
        check(f"{label}: exit 0 and a loss figure", rc == 0 and gp is not None, err)
        if gp is None:
            continue
        cols = key_colours(gp)
        check(f"{label}: {n} key entries of {n} colours", len(cols) == n and len(set(cols)) == n,
              f"{key_titles(gp)} {cols}")
        check(f"{label}: no refusal on stderr", "tell apart" not in err, err)


def main():
    tmp = tempfile.mkdtemp(prefix="plot_overlay_")
    try:
        check_overlay(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary("plot overlay")


if __name__ == "__main__":
    sys.exit(main())
