#!/usr/bin/python3
"""test_runs.py — `stability info --runs` (report/runs.c; docs/design.md §6d), from the
repository root: /usr/bin/python3 tests/test_runs.py

A tiny two-run sweep in a temporary directory (Pre-LN, 2 layers, d 16, d_ff 24, 2 heads, SGD
with a linear schedule, warm-up 5, seed 3, 30 updates; lr 1e-3, which trains, and lr 1e2,
which diverges). Its rows are checked against the file read independently with h5py:
- the header is the documented column list, one row per run, NaN spelled "nan";
- the identity columns equal the keys the sweep set and the resolved config's text;
- loss_init is /train/loss[0]; final_loss the mean of the last tenth of /train/loss computed
  here (nan for the run that diverged, /train@diverged_at); diverged, stuck and trains follow
  the rule of docs/design.md §6d (below loss_init − 0.1 nats without a unigram plateau).
The warm-up study keys its cells by the config (study/warmup_explained.c): an atlas and an
indicators' sweep whose run names follow no pattern still give warmup_indicators, its cells
"{placement}-{norm}-{init}" with Theorem 1's ratio over Pre-LN's found by config (1 for Pre-LN
itself); the same atlas at seeds 1 and 2 with seed 1's indicators gives seed 1's cells, not a
refusal (a unit pairs the runs of one seed).
Prints "ok - ..." / "FAIL - ..." per check, then "runs: N passed, M failed".
"""
import configparser
import math
import os
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import check, run, summary  # noqa: E402

COLUMNS = ("run origin scheme L dec_L d_model d_ff heads lr warmup seed optimizer schedule "
           "remedy precision block parametrization task steps loss_init final_loss plateau diverged "
           "stuck trains").split()

BASE = """[model]
placement = pre
layers = 2
d_model = 16
d_ff = 24
heads = 2
vocab = 11
seq_len = 5
[data]
batch = 2
[init]
seed = 3
[train]
steps = 30
warmup = 5
optimizer = sgd
schedule = linear
[probe]
every = 10
"""

SWEEP = """[sweep]
base = {base}
name = r_lr{{lr}}
train.lr = 1e-3, 1e2
"""


def read_rows(text):
    """The TSV's header and rows as dicts."""
    lines = text.splitlines()
    if not lines:
        return [], []
    head = lines[0].split("\t")
    return head, [dict(zip(head, line.split("\t"))) for line in lines[1:]]


def last_tenth(loss):
    """The mean of the last tenth of the training losses (at least the last one)."""
    n = max(len(loss) // 10, 1)
    return sum(loss[-n:]) / n


def close(a, b):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(b))


def test_runs(tmp):
    base = os.path.join(tmp, "base.ini")
    with open(base, "w") as f:
        f.write(BASE)
    sweep = os.path.join(tmp, "r.ini")
    with open(sweep, "w") as f:
        f.write(SWEEP.format(base=base))
    s = run("sweep", sweep, "--jobs", "1", cwd=tmp)
    check("the tiny sweep runs", s.returncode == 0, s.stderr[-400:])
    merged = os.path.join(tmp, "results", "r.h5")
    s = run("info", "--runs", merged, cwd=tmp)
    check("info --runs exits 0", s.returncode == 0, s.stderr[-400:])
    head, rows = read_rows(s.stdout)
    check("the header is the documented columns", head == COLUMNS, head)
    check("one row per run", len(rows) == 2, len(rows))
    with h5py.File(merged, "r") as h:
        for row in rows:
            g = h["runs"][row["run"]]
            cfg = configparser.ConfigParser()
            cfg.read_string(g.attrs["config"])
            loss = list(g["train"]["loss"][:])
            div = "diverged_at" in g["train"].attrs and g["train"].attrs["diverged_at"] >= 0
            want = {"scheme": "pre", "L": "2", "d_model": "16", "d_ff": "24", "heads": "2",
                    "warmup": "5", "seed": "3", "optimizer": "sgd", "schedule": "linear", "remedy": "none",
                    "steps": "30", "task": cfg["data"]["task"],
                    "precision": cfg["train"].get("precision", "float64"), "block": "2017",
                    "parametrization": "standard", "dec_L": "0"}
            got = {k: row[k] for k in want}
            check(f"{row['run']}: identity columns are the config's", got == want,
                  f"{got} != {want}")
            check(f"{row['run']}: lr is train.lr",
                  float(row["lr"]) == float(cfg["train"]["lr"]), row["lr"])
            check(f"{row['run']}: loss_init is /train/loss[0]",
                  close(float(row["loss_init"]), loss[0]), row["loss_init"])
            fin = math.nan if div else last_tenth(loss)
            check(f"{row['run']}: final_loss is the mean of the last tenth "
                  f"({fin:.6g}; nan when diverged)", close(float(row["final_loss"]), fin),
                  row["final_loss"])
            trains = not div and fin < loss[0] - 0.1
            want_out = {"diverged": str(int(div)), "trains": str(int(trains)),
                        "stuck": str(int(not div and not trains)), "plateau": "nan"}
            got_out = {k: row[k] for k in want_out}
            check(f"{row['run']}: outcome {got_out}", got_out == want_out, want_out)
    lrs = sorted(float(r["lr"]) for r in rows)
    check("the sweep's two rates, 1e-3 and 1e2", lrs == [1e-3, 1e2], lrs)
    outcome = {float(r["lr"]): (r["trains"], r["diverged"]) for r in rows}
    check("lr 1e-3 trains and lr 1e2 diverges", outcome == {1e-3: ("1", "0"), 1e2: ("0", "1")},
          outcome)
    s = run("info", "--runs", "--train", merged, cwd=tmp)
    check("--runs with another output is a usage error (exit 2)", s.returncode == 2, s.returncode)


CELLS = """base = {base}
zip = model.placement, model.norm, init.scheme
model.placement = post, pre
model.norm = layernorm, layernorm
init.scheme = xavier_normal, xavier_normal
model.vocab = 40
model.seq_len = 8
data.task = copy
data.batch = 8
train.optimizer = adam
train.schedule = constant
train.lr = 1e-3, 100
"""
ATLAS = CELLS + "name = a{lr}_{placement}_{warmup}\ntrain.warmup = 1, 30\ntrain.steps = 60\n"
INDICATORS = CELLS + """name = i{lr}_{placement}
train.warmup = 1
train.steps = 20
probe.curvature_every = 2
probe.curvature_until = 20
probe.curvature_active_only = on
probe.curvature_iters = 4
probe.curvature_block_iters = 0
"""


def cells_block(gp):
    """The rows of the figure's $cells block: (k, L, lr, scheme)."""
    body = gp.split("$cells << EOD\n", 1)[1].split("EOD", 1)[0]
    return [line.split() for line in body.splitlines() if line.strip()]


def ratio_block(gp):
    """{k: value} of the xiong_ratio panel's block."""
    if "$ind_xiong_ratio << EOD" not in gp:
        return {}
    body = gp.split("$ind_xiong_ratio << EOD\n", 1)[1].split("EOD", 1)[0]
    return {int(r.split()[0]): float(r.split()[3]) for r in body.splitlines() if r.strip()}


def test_warmup_cells(tmp):
    tiny = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "configs", "tiny.ini")
    merged = {}
    for name, text in (("atl", ATLAS), ("ind", INDICATORS),
                       ("atls", ATLAS.replace("{warmup}\n", "{warmup}_s{seed}\ninit.seed = 1, 2\n"))):
        with open(os.path.join(tmp, name + ".ini"), "w") as f:
            f.write("[sweep]\n" + text.replace("{base}", tiny))
        s = run("sweep", name + ".ini", "--jobs", "1", "--quiet", cwd=tmp)
        check(f"the {name} sweep runs", s.returncode == 0, s.stderr[-400:])
        merged[name] = os.path.join(tmp, "results", name + ".h5")
    pd = os.path.join(tmp, "plots")
    s = run("plot", merged["atl"], merged["ind"], "--out", pd, "--format", "gp", cwd=tmp)
    gp_path = os.path.join(pd, "atl-warmup_indicators.gp")
    check("names of no pattern: warmup_indicators is drawn", os.path.exists(gp_path), s.stderr[-400:])
    want = sorted([str(L), f"{lr:g}", sch] for L in (3,) for lr in (1e-3, 100)
                  for sch in ("post-layernorm-xavier_normal", "pre-layernorm-xavier_normal"))
    if os.path.exists(gp_path):
        gp = open(gp_path).read()
        cells = cells_block(gp)
        got = sorted([c[1], f"{float(c[2]):g}", c[3]] for c in cells)
        check("its cells are the config's (placement-norm-init, L, lr)", got == want, got)
        ratio = ratio_block(gp)
        pre = [int(c[0]) for c in cells if c[3].startswith("pre-")]
        check("Theorem 1's ratio of Pre-LN over itself is 1 (its reference found by config)",
              pre and all(abs(ratio.get(k, math.nan) - 1.0) < 1e-12 for k in pre), ratio)
    pd2 = os.path.join(tmp, "plots_seeded")
    s = run("plot", merged["atls"], merged["ind"], "--out", pd2, "--format", "gp", cwd=tmp)
    gp2 = os.path.join(pd2, "atls-warmup_indicators.gp")
    got = sorted([c[1], f"{float(c[2]):g}", c[3]] for c in cells_block(open(gp2).read())) \
        if os.path.exists(gp2) else None
    check("a seeded atlas with seed 1's indicators: warmup_indicators drawn, not refused, its "
          "units seed 1's cells (seed 2's outcome runs have no indicators' run to pair with)",
          s.returncode == 0 and got == want and "seeded" not in s.stderr, f"{got} {s.stderr[-600:]}")


def main():
    with tempfile.TemporaryDirectory(prefix="stability_runs_") as tmp:
        test_runs(tmp)
    with tempfile.TemporaryDirectory(prefix="stability_runs_") as tmp:
        test_warmup_cells(tmp)
    return summary("runs")


if __name__ == "__main__":
    sys.exit(main())
