#!/usr/bin/python3
"""test_indicators_plot.py — the figure of each warm-up indicator against the atlas's outcome
(docs/curvature.md "The experiment"; src/report/plot_indicators.c), from the repository root:
/usr/bin/python3 tests/test_indicators_plot.py

A trial-sized pair of sweeps run here, named as the real ones are: an atlas-like sweep
(`tiny`-sized Post-LN and Pre-LN on the copy task with 40 symbols, L = 2 and 3, lr 1e-3, 3e-2, 3,
warm-up 1 and 30, 60 updates) and the indicators' sweep of the same cells without warm-up
(20 updates, curvature rows at 0, 2, …, 20 as experiments/warmup_explained.ini measures them).
Then scripts/warmup_explained.py --cells writes every cell's outcome and indicators, and
`stability plot ATLAS INDICATORS --format gp` draws warmup_indicators; checked:

- the figure's cells are the table's, and for every cell and indicator the point drawn is the
  table's: its outcome column (trains 0, needs warm-up 1, stuck 2, diverged 3: a failure whose
  warm-up run trains is "needs warm-up"), x within ±0.3 of it, y equal within 1e-9 relative; a
  value the table has as NaN is not drawn;
- each panel's AUC (fails vs trains) is the script's table's to its two decimals;
- the outcomes cover trains and at least one failure (else the comparison says little);
- the PNG is drawn; with the indicators' file alone there is no such figure and no error.
Prints "ok - ..." / "FAIL - ..." per check, then "indicators plot: N passed, M failed".
KEEP=1 keeps the temporary folder (its sw_*/results/indicators_plot_{atlas,ind}.h5) to look at.
"""
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, check, run, blocks, summary, sweep_in  # noqa: E402
SCRIPT = os.path.join(REPO, "scripts", "warmup_explained.py")
OUT = {"trains": 0, "needs warm-up": 1, "stuck": 2, "diverged": 3}


COMMON = """base = configs/tiny.ini
zip = model.placement, model.norm, init.scheme
model.placement = post, pre
model.norm = layernorm, layernorm
init.scheme = xavier_normal, xavier_normal
model.layers = 2, 3
model.vocab = 40
model.seq_len = 8
data.task = copy
data.batch = 8
train.optimizer = adam
train.schedule = constant
train.lr = 1e-3, 3e-2, 2e-1, 100
"""
ATLAS = "[sweep]\nname = {placement}-{norm}-{init.scheme}_L{layers}_lr{lr}_w{warmup}\n" + COMMON + """\
train.warmup = 1, 30
train.steps = 200
"""
INDICATORS = "[sweep]\nname = {placement}-{norm}-{init.scheme}_L{layers}_lr{lr}\n" + COMMON + """\
train.warmup = 1
train.steps = 20
probe.model_update = on
probe.curvature_every = 2
probe.curvature_until = 20
probe.curvature_active_only = on
probe.curvature_iters = 4
probe.curvature_block_iters = 0
"""


def sweep(tmp, name, text):
    """The sweep run in its own folder of tmp (never the repository's results/)."""
    r, merged = sweep_in(os.path.join(tmp, "sw_" + name), name, text)
    check(f"the {name} sweep runs and merges", r.returncode == 0 and os.path.exists(merged),
          r.stderr[-400:])
    return merged if r.returncode == 0 else None


def read_cells(path):
    """The script's --cells table: {(scheme, L): [row dicts]} and the indicator names."""
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
    return rows, head[5:]


def script_aucs(table):
    """{indicator: 'fails vs trains' AUC text} of the script's Markdown table."""
    out = {}
    for line in table.splitlines():
        m = re.match(r"\| (\w+) \| \d+ \| ([^|]+) \|", line)
        if m:
            out[m.group(1)] = m.group(2).split(" ")[0].strip()
    return out


def compare(gp, rows, names):
    b = blocks(gp, str)
    fig_cells = {int(r[0]): (r[3], int(r[1]), float(r[2])) for r in b.get("cells", [])}
    want = {}
    for r in rows:
        cat = "needs warm-up" if r["needs_warmup"] == "1" else r["outcome"]
        want[r["scheme"], int(r["L"]), float(r["lr"])] = (OUT[cat], r)
    # the TSV's lr column is %g: match the figure's cells by it at 6 digits
    key_of = {k: (s, L, float(f"{lr:g}")) for k, (s, L, lr) in fig_cells.items()}
    check(f"the figure's cells are the table's ({len(want)} cells)",
          sorted(key_of.values()) == sorted(want) and len(want) > 0,
          f"{sorted(key_of.values())} vs {sorted(want)}")
    worst, points, bad = 0.0, 0, []
    for name in names:
        if name == "admin" and all(not math.isfinite(float(r["admin"])) for r in rows):
            check("no admin panel without atlas_init's runs", f"ind_{name}" not in b)
            continue
        drawn = {int(r[0]): r for r in b.get(f"ind_{name}", [])}
        for k, key in key_of.items():
            cat, r = want.get(key, (None, None))
            if r is None:
                continue
            v = float(r[name])
            p = drawn.get(k)
            if not math.isfinite(v):
                if p is not None:
                    bad.append(f"{name} {key}: drawn, the table has NaN")
                continue
            if p is None:
                bad.append(f"{name} {key}: not drawn")
                continue
            points += 1
            if int(p[1]) != cat or abs(float(p[2]) - cat) > 0.3 + 1e-9:
                bad.append(f"{name} {key}: outcome {p[1]} at x {p[2]}, the table's {cat}")
            worst = max(worst, abs(float(p[3]) - v) / max(abs(v), 1e-300))
    check(f"every point drawn is the table's (outcome, value): {points} points, worst relative "
          f"difference {worst:.1e} <= 1e-9", not bad and worst <= 1e-9 and points > 0,
          "; ".join(bad[:5]))


def test_pair(tmp):
    atlas = sweep(tmp, "indicators_plot_atlas", ATLAS)
    ind = sweep(tmp, "indicators_plot_ind", INDICATORS)
    if not atlas or not ind:
        return
    tsv = os.path.join(tmp, "cells.tsv")
    s = subprocess.run(["/usr/bin/python3", SCRIPT, atlas, ind, "--cells", tsv,
                        "--bootstrap", "200"], capture_output=True, text=True, cwd=REPO)
    check("scripts/warmup_explained.py --cells runs", s.returncode == 0, s.stderr[-400:])
    if s.returncode:
        return
    rows, names = read_cells(tsv)
    outs = {("needs warm-up" if r["needs_warmup"] == "1" else r["outcome"]) for r in rows}
    check(f"the trial's outcomes cover trains and a failure ({sorted(outs)})",
          "trains" in outs and len(outs) >= 2)
    pd = os.path.join(tmp, "plots")
    r = run("plot", atlas, ind, "--out", pd, "--format", "gp,png")
    fig = "indicators_plot_atlas-warmup_indicators"   # the first file's name, the figure's
    gpf, png = os.path.join(pd, fig + ".gp"), os.path.join(pd, fig + ".png")
    check("stability plot ATLAS INDICATORS draws warmup_indicators (gp and PNG)",
          r.returncode == 0 and os.path.exists(gpf) and os.path.exists(png)
          and os.path.getsize(png) > 0, r.stderr[-400:])
    if not os.path.exists(gpf):
        return
    gp = open(gpf).read()
    compare(gp, rows, names)
    aucs = script_aucs(s.stdout)
    titles = dict(re.findall(r'^set title "(\w+(?:\\\\_\w+)?): AUC ([0-9.]+|–)\\n', gp, re.M))
    titles = {k.replace("\\\\_", "_"): v for k, v in titles.items()}
    same = {k: (titles.get(k), aucs[k]) for k in aucs}
    check("each panel's AUC is the script's table's (fails vs trains, two decimals)",
          len(titles) >= 8 and all(t == a for t, a in same.values()), str(same))
    pd2 = os.path.join(tmp, "alone")
    r = run("plot", ind, "--out", pd2, "--format", "gp")
    drawn = os.listdir(pd2) if os.path.isdir(pd2) else []
    check("the indicators' runs without the atlas's: no such figure (the others drawn), no error",
          r.returncode == 0 and drawn and not any("warmup_indicators" in f for f in drawn),
          f"{drawn} {r.stderr[-300:]}")


def main():
    if os.environ.get("KEEP"):
        tmp = tempfile.mkdtemp(prefix="stability-indicators-plot.")
        print(f"KEEP: the sweeps stay in {tmp}")
        test_pair(tmp)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            test_pair(tmp)
    sys.exit(summary("indicators plot"))


if __name__ == "__main__":
    main()
