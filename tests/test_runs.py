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
           "precision block parametrization task steps loss_init final_loss plateau diverged "
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
                    "warmup": "5", "seed": "3", "optimizer": "sgd", "schedule": "linear",
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


def main():
    with tempfile.TemporaryDirectory(prefix="stability_runs_") as tmp:
        test_runs(tmp)
    return summary("runs")


if __name__ == "__main__":
    sys.exit(main())
