#!/usr/bin/python3
"""test_dynamics_plot.py — figures of any run or sweep say what was run (docs/design.md §6g,
§6j; docs/dynamics.md), from the repository root: /usr/bin/python3 tests/test_dynamics_plot.py

1. A tiny dynamics sweep (the `tiny` model with 4 heads' worth of width, a copy task; Pre-LN and
   Post-LN x lr 1e-3 and 3e-2 x QK-norm off and layernorm, 30 updates, a probe every 5):
   - the heat maps are drawn only for six runs or fewer, one panel a run titled by what tells it
     apart, the layers on the y axis, viridis with a labelled colour bar;
   - dyn_lines: small multiples, a panel per placement and mitigation, a colour per learning
     rate (one key entry each), a curve per run;
   - dyn_lr: final loss vs lr, a line per placement and mitigation.
2. Runs that differ only in warm-up are never drawn alike: dyn_lines keys each warm-up, dyn_lr
   draws a line per warm-up and says no "mean over seeds" of one seed; model_update keys them.
3. A run given twice counts once (`info --train F F F`, a merged file with its own run files),
   with one line on stderr.
4. Legitimate runs plot with exit 0: a file without /train/step (was a SIGSEGV), a run with
   W_Q = W_K = 0 (every max logit 0), a run that diverged at update 1; a figure with nothing
   to draw is skipped with a note; `output.plots = true` on such a run exits 0.
5. A sweep file's `title` titles its figures (kept as /sweep@title of the merged file).
6. `info --train` prints plain text: names and values with ' _ & as they are.
7. An atlas with warm-up 20 and 50: two cells in the figures and two rows in
   `stability table atlas`, neither hiding the other.
Prints "ok - ..." / "FAIL - ..." per check, then "dynamics plot: N passed, M failed".
"""
import glob
import os
import re
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, check, run, key_titles, svg_text, summary, sweep_in  # noqa: E402

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


def text(path):
    return open(path).read() if os.path.exists(path) else ""


def sweep(tmp, name, body):
    """The sweep run in its own folder of tmp (never the repository's results/)."""
    return sweep_in(os.path.join(tmp, "sw_" + name), name, body)


def results_of(tmp, name):
    """The folder of the sweep's run files."""
    return os.path.join(tmp, "sw_" + name, "results", name)


def test_dynamics(tmp):
    name = "dynamics_plot_test"
    r, merged = sweep(tmp, name, SWEEP)
    check("the 8-run sweep runs and merges", r.returncode == 0 and os.path.exists(merged),
          r.stderr[-400:])
    if r.returncode:
        return
    pd = os.path.join(tmp, "plots")
    r = run("plot", merged, "--out", pd, "--format", "svg,gp")
    check("stability plot draws the sweep", r.returncode == 0, r.stderr[-400:])
    heat = ["dyn_grad", "dyn_update", "dyn_entropy", "dyn_logit"]
    check("8 runs: no heat maps (more panels than a figure can show)",
          not any(os.path.exists(f"{pd}/{name}-{h}.svg") for h in heat))
    lines = text(f"{pd}/{name}-dyn_lines.gp")
    titles = key_titles(lines)
    check("dyn_lines: a key entry per learning rate, and only those", sorted(titles) ==
          ["lr 0.001", "lr 0.03"], str(titles))
    panels = re.findall(r'set title "([^"]*)"', lines)
    want = {"Pre-LN\\nno QK-norm", "Pre-LN\\nQK-norm", "Post-LN\\nno QK-norm", "Post-LN\\nQK-norm"}
    check("dyn_lines: small multiples, a panel per placement and mitigation",
          want == set(panels), str(panels))
    check("dyn_lines: a curve per run (8), each in its lr's colour",
          len(re.findall(r"\$d\d+ using 1:2 with lines", lines)) == 8)
    titles = key_titles(text(f"{pd}/{name}-dyn_lr.gp"))
    pairs = {"Pre-LN, no QK-norm", "Pre-LN, QK-norm", "Post-LN, no QK-norm", "Post-LN, QK-norm"}
    check("dyn_lr: a line per placement and mitigation", set(titles) == pairs, str(titles))
    four = [os.path.join(results_of(tmp, name), f"pre_{q}_lr{x}.h5")
            for q in ("off", "layernorm") for x in ("1e-3", "3e-2")]
    pd4 = os.path.join(tmp, "plots4")
    r = run("plot", *four, "--out", pd4, "--format", "svg,gp")
    for h in heat:
        svg = glob.glob(os.path.join(pd4, f"*-{h}.svg"))
        gp = text(svg[0][:-3] + "gp") if svg else ""
        s = svg_text(svg[0]) if svg else ""
        check(f"4 runs: {h} drawn, a panel a run titled by its keys, layers on the y axis, viridis "
              f"with a labelled colour bar", r.returncode == 0 and len(svg) == 1
              and s.count("layer (1 = input side)") == 4
              and all(k in s for k in ("no QK-norm, lr 0.001", "QK-norm, lr 0.03"))
              and "set palette defined (0 '#440154'" in gp and "set cblabel '" in gp
              and "rgbformulae" not in gp, f"{svg} {r.stderr[-300:]}")


def test_warmup_apart(tmp):
    name = "warmup_apart_test"
    r, merged = sweep(tmp, name, "[sweep]\nbase = configs/tiny.ini\nname = w{warmup}_lr{lr}\n"
                                 "train.warmup = 1, 5\ntrain.lr = 1e-3, 1e-2\ntrain.steps = 12\n"
                                 "probe.every = 6\ndata.task = copy\n")
    check("a sweep of warm-up x lr runs", r.returncode == 0, r.stderr[-300:])
    pd = os.path.join(tmp, "wplots")
    r = run("plot", merged, "--out", pd, "--format", "gp")
    lines = text(f"{pd}/{name}-dyn_lines.gp")
    check("dyn_lines: runs that differ only in warm-up are drawn apart (a panel each)",
          {"no warm-up", "warm-up 5"} <= set(re.findall(r'set title "([^"]*)"', lines)), lines[-600:])
    lr = text(f"{pd}/{name}-dyn_lr.gp")
    check("dyn_lr: a line per warm-up, and no 'mean over seeds' of one seed",
          sorted(key_titles(lr)) == ["no warm-up", "warm-up 5"] and "seed" not in lr,
          str(key_titles(lr)))
    mu = key_titles(text(f"{pd}/{name}-model_update.gp"))
    check("model_update: every run its own key", len(set(mu)) == 4 and
          {"lr 0.001, no warm-up", "lr 0.01, warm-up 5"} <= set(mu), str(mu))
    loss = text(f"{pd}/{name}-loss.gp")
    check("loss: no '× = diverged' when nothing diverged; 'update' on the x axis",
          "diverged" not in loss and "'step'" not in loss and "set xlabel 'update'" in loss)

    # a run given twice counts once
    one = os.path.join(results_of(tmp, name), "w5_lr1e-3.h5")
    r = run("info", one, one, one, "--train")
    rows = [l for l in r.stdout.splitlines() if l.startswith("| ") and "seeds" not in l]
    check("info --train F F F: one run, one seed, and one line on stderr", r.returncode == 0
          and len(rows) == 1 and rows[0].split("|")[2].strip() == "1"
          and r.stderr.count("given again, counted once") == 1, r.stdout + r.stderr)
    r = run("plot", merged, one, "--out", os.path.join(tmp, "dup"), "--format", "gp")
    check("plot MERGED RUNFILE: the run file's run counted once", r.returncode == 0 and
          "1 run given again, counted once" in r.stderr and f"{one} = {merged}:/runs/w5_lr1e-3"
          in r.stderr, r.stderr)


def test_legitimate_runs(tmp):
    base = ["--config", "configs/tiny.ini", "--set", "data.task=copy", "--set", "probe.every=4",
            "--set", "train.warmup=1", "--quiet"]
    zq, d1, ns = (os.path.join(tmp, n) for n in ("zero_qk.h5", "div1.h5", "nostep.h5"))
    r = run(*base, "--set", "train.steps=8", "--set", "init.zero_qk=true", "--out", zq)
    check("a run with W_Q = W_K = 0", r.returncode == 0, r.stderr)
    r = run("plot", zq, "--out", os.path.join(tmp, "zq"), "--format", "png")
    check("plot of W_Q = W_K = 0 (every max logit 0): exit 0, the empty heat map skipped with a "
          "note", r.returncode == 0 and "zero_qk-dyn_logit skipped" in r.stderr, r.stderr[-400:])
    r = run(*base, "--set", "train.steps=8", "--set", "init.scheme=normal", "--set",
            "init.std=1e200", "--out", d1)
    r = run("plot", d1, "--out", os.path.join(tmp, "d1"), "--format", "png")
    check("plot of a run that diverged at update 1: exit 0, the loss skipped with a note",
          r.returncode == 0 and "div1-loss skipped: no finite training loss" in r.stderr,
          r.stderr[-400:])
    os.makedirs(os.path.join(tmp, "op"), exist_ok=True)
    r = run(*[os.path.abspath(os.path.join(REPO, a)) if a.startswith("configs/") else a for a in base],
            "--set", "train.steps=8", "--set", "init.zero_qk=true", "--set", "output.plots=true",
            "--out", "op.h5", cwd=os.path.join(tmp, "op"))
    check("output.plots = true on such a run: exit 0, its figures drawn", r.returncode == 0
          and os.path.exists(os.path.join(tmp, "op", "plots", "op-loss.png")), r.stderr[-400:])
    shutil.copy(zq, ns)
    with h5py.File(ns, "a") as f:
        del f["train/step"]
    r = run("plot", ns, "--out", os.path.join(tmp, "ns"), "--format", "png")
    check("plot of a file without /train/step: exit 0 (was SIGSEGV), its curves left out with "
          "a note", r.returncode == 0 and "no /train/step" in r.stderr
          and not os.path.exists(os.path.join(tmp, "ns", "nostep-loss.png")), r.stderr[-400:])


def test_title_and_text(tmp):
    name = "titled_test"
    corpus = os.path.join(REPO, "results", "licenses.txt")
    paths = [os.path.join(tmp, n) for n in ("a'b_c.txt", "k&l.txt")]
    for p in paths:
        shutil.copy(corpus, p) if os.path.exists(corpus) else open(p, "w").write("abc " * 4000)
    body = ("[sweep]\nbase = configs/tiny.ini\nname = {placement}\ntitle = Post & Pre, \"tiny\"\n"
            "model.placement = post, pre\ntrain.steps = 6\ndata.task = copy\n")
    r, merged = sweep(tmp, name, body)
    with h5py.File(merged) as f:
        t = f["sweep"].attrs.get("title")
    check("[sweep] title is kept as /sweep@title", r.returncode == 0 and t is not None and
          (t.decode() if isinstance(t, bytes) else t) == 'Post & Pre, "tiny"', f"{t} {r.stderr}")
    pd = os.path.join(tmp, "tplots")
    r = run("plot", merged, "--out", pd, "--format", "svg")
    s = svg_text(os.path.join(pd, f"{name}-loss.svg")) if r.returncode == 0 else ""
    check("the sweep's title titles its figures, as written", 'Training loss: Post & Pre, "tiny"'
          in s, r.stderr[-300:] + s[:300])
    files = []
    for n, p in zip(("a'b", "post_lr"), paths):
        out = os.path.join(tmp, n + ".h5")
        run("--config", "configs/tiny.ini", "--set", "data.task=text", "--set", f"data.path={p}",
            "--set", "model.vocab=256", "--set", "train.steps=6", "--set", "train.eval_every=3",
            "--out", out, "--quiet")
        files.append(out)
    r = run("info", *files, "--train")
    check("info --train: plain text, no gnuplot escapes", r.returncode == 0 and
          "path " + paths[0] in r.stdout and "path " + paths[1] in r.stdout and "''" not in r.stdout
          and "\\_" not in r.stdout and "&amp;" not in r.stdout, r.stdout + r.stderr)
    r = run("plot", *files, "--out", os.path.join(tmp, "ep"), "--format", "svg")
    svg = glob.glob(os.path.join(tmp, "ep", "*-loss.svg"))
    titles = [t.text for t in ET.parse(svg[0]).getroot().iter() if t.tag.endswith("title")] if svg else []
    check("SVG keys: the text as it is (also in the hover titles)", "path " + paths[1] in titles
          and "path " + paths[0] in titles, str(titles))


def test_atlas_warmups(tmp):
    name = "atlas_warmups_test"
    r, merged = sweep(tmp, name, "[sweep]\nbase = configs/tiny.ini\nname = {placement}_lr{lr}_w{warmup}\n"
                                 "model.placement = post, pre\ntrain.lr = 1e-3, 1e-2\n"
                                 "train.warmup = 20, 50\ntrain.steps = 12\ntrain.eval_every = 12\n"
                                 "probe.every = 12\nprobe.model_update = off\n")
    check("an atlas of warm-up 20 and 50", r.returncode == 0, r.stderr[-300:])
    pd = os.path.join(tmp, "aplots")
    r = run("plot", merged, "--out", pd, "--format", "gp")
    lr = text(f"{pd}/{name}-atlas_lr.gp")
    check("atlas_lr: warm-up 20 and 50 are two panels, each with every scheme's line",
          'L = 3, warm-up 20"' in lr and 'L = 3, warm-up 50"' in lr
          and len(re.findall(r"\$f\d_0_\d using", lr)) == 4, r.stderr[-300:])
    h = text(f"{pd}/{name}-atlas_sensitivity.gp").split("$h << EOD\n")[-1].split("EOD")[0]
    check("atlas_sensitivity: a cell per scheme and warm-up (4)", len(h.strip().splitlines()) == 4, h)
    t = run("table", "atlas", merged)
    rows = [l.split("|")[1].strip() for l in t.stdout.splitlines()[2:] if l.startswith("| ")]
    check("table atlas: a row per scheme and warm-up", t.returncode == 0 and sorted(rows) ==
          ["post (warm-up 20)", "post (warm-up 50)", "pre (warm-up 20)", "pre (warm-up 50)"],
          t.stdout + t.stderr)


def main():
    with tempfile.TemporaryDirectory(prefix="stability_dynplot_") as tmp:
        test_dynamics(tmp)
        test_warmup_apart(tmp)
        test_legitimate_runs(tmp)
        test_title_and_text(tmp)
        test_atlas_warmups(tmp)
    return summary("dynamics plot")


if __name__ == "__main__":
    sys.exit(main())
