#!/usr/bin/python3
"""`stability table advise` (docs/design.md, "The advisor", its validation) on a tiny grid: the
advisor's answers against outcome runs, every number recomputed here from the files (h5py) and
no project code. About 5 s on 2 cores (tiny copy-task models, 100 updates).

Run from the repository root (make test does): /usr/bin/python3 tests/test_advise_table.py
1. The grid: configs/tiny.ini on the copy task, Post-LN, lr 0.01 (seeds 1, 2, 3), 1 and 10 (seed 1)
   without warm-up and with 20 updates of it (seed 1); beside them a remedy's run (update_ratio_cap)
   and a Pre-LN run, which are other cells; advice at lr 0.01, 1, 10 and 0.1 (no outcome runs).
2. Per advice (--tsv): the runs without / with warm-up and how many train (final loss: the last
   validation loss, else the mean of the last tenth of the training losses; trains below the first
   loss by 0.1 nats, not diverged), right = needs_warmup == !(most runs without warm-up train),
   the measured largest lr (the largest grid lr whose runs without warm-up train) and the grid
   steps to the advised one rounded down to the grid.
3. The accuracy rows: right and n of all / needs / does not need, the η_max row, and the 95 %
   Clopper–Pearson ends computed here by bisection on binomial tails (to 1e-9).
4. The Markdown table says right / **wrong** per cell and the caption names the 3.2-nat rule;
   advice files alone: exit 1, "no outcome runs".
5. `stability sweep FILE --configs DIR`: one DIR/<run>.ini per run, the swept value in it, and
   `advise --config` reads it.
6. One warm-up answer: three runs of advise's own measurement (lr 1, no warm-up, constant, 6
   updates, curvature rows at 0, 2, 4, 6, active only, K = 10) at seeds 1, 2, 3: every warm-up
   number `info` says of a run (the explosion's "--set train.warmup=N" and the curvature line's
   "about N updates") is one number, max(the seed's /advise/warmup_need, 2/(1 - 0.98) = 100),
   and advise's warmup_updates is the largest of the three.
Prints "ok"/"not ok" per check, then "advise_table: N passed, M failed"; exit 1 if M > 0.
"""
import configparser
import math
import re
import os
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import chdir_repo_like  # noqa: E402

ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
BASE = ["--set", "data.task=copy", "--set", "train.steps=100"]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(args):
    p = subprocess.run(["./stability", *args], capture_output=True, text=True, env=ENV,
                       timeout=600)
    if p.returncode != 0:
        print(f"# {' '.join(args)}: exit {p.returncode}: {p.stderr[-400:]}")
    return p


def text(a):
    return a.decode() if isinstance(a, bytes) else str(a)


def config_of(f):
    c = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
    c.read_string(text(f.attrs["config"]))
    return c


def outcome(path):
    """(lr, warmup, placement, remedy, trains) of a run file, by the rule of docstring 2."""
    with h5py.File(path, "r") as f:
        c = config_of(f)
        t = f["train"]
        loss = t["loss"][:]
        diverged = text(f.attrs["status"]) == "diverged" or "diverged_at" in t.attrs
        if "val_loss" in t and len(t["val_loss"]) and math.isfinite(t["val_loss"][-1]):
            final = float(t["val_loss"][-1])
        else:
            n = max(len(loss) // 10, 1)
            final = float(loss[-n:].mean())
        trains = not diverged and final < float(loss[0]) - 0.1
        remedy = float(c["train"].get("update_ratio_cap", "0")) > 0
        return (float(c["train"]["lr"]), int(c["train"]["warmup"]), c["model"]["placement"],
                remedy, trains)


def binom_tail_ge(k, n, x):
    return sum(math.comb(n, j) * x ** j * (1 - x) ** (n - j) for j in range(k, n + 1))


def bisect(f, target, increasing):
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if (f(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(k, n, alpha=0.05):
    """The exact interval: P(Bin(n, lo) ≥ k) = α/2, P(Bin(n, hi) ≤ k) = α/2."""
    if n == 0:
        return math.nan, math.nan
    lo = 0.0 if k == 0 else bisect(lambda x: binom_tail_ge(k, n, x), alpha / 2, True)
    hi = 1.0 if k == n else bisect(lambda x: 1 - binom_tail_ge(k + 1, n, x), alpha / 2, False)
    return lo, hi


def make_grid():
    runs = []
    for lr, seeds in [("0.01", [1, 2, 3]), ("1", [1]), ("10", [1])]:
        for w, ss in [(1, seeds), (20, [1])]:
            for s in ss:
                out = f"run_{lr}_w{w}_s{s}.h5"
                run(["train", "configs/tiny.ini", *BASE, "--set", f"train.lr={lr}",
                     "--set", f"train.warmup={w}", "--set", f"init.seed={s}", "--out", out,
                     "--quiet"])
                runs.append(out)
    other = [("remedy.h5", ["--set", "train.lr=1", "--set", "train.update_ratio_cap=0.01"]),
             ("pre.h5", ["--set", "train.lr=0.01", "--set", "model.placement=pre"])]
    for out, sets in other:
        run(["train", "configs/tiny.ini", *BASE, *sets, "--out", out, "--quiet"])
        runs.append(out)
    advice = []
    for lr in ["0.01", "1", "10", "0.1"]:
        out = f"advice_{lr}.h5"
        run(["advise", "--config", "configs/tiny.ini", "--set", "data.task=copy",
             "--set", f"train.lr={lr}", "--out", out, "--quiet"])
        advice.append(out)
    return runs, advice


def expected(runs, advice):
    """Per advice file: the row the table must print, recomputed from the files."""
    outs = [outcome(r) for r in runs]
    cell = [o for o in outs if o[2] == "post" and not o[3]]
    grid = sorted({o[0] for o in cell if o[1] == 1})

    def cold_trains(lr):
        c = [o[4] for o in cell if o[0] == lr and o[1] == 1]
        return 2 * sum(c) > len(c)

    m = max([k for k, g in enumerate(grid) if cold_trains(g)], default=-1)
    rows = {}
    for a in advice:
        with h5py.File(a, "r") as f:
            lr = float(config_of(f)["train"]["lr"])
            needs, max_lr = int(f.attrs["needs_warmup"]), float(f.attrs["max_lr_without_warmup"])
        cold = [o[4] for o in cell if o[0] == lr and o[1] == 1]
        warm = [o[4] for o in cell if o[0] == lr and o[1] > 1]
        pos = max([k for k, g in enumerate(grid) if g <= max_lr * (1 + 1e-9)], default=-1)
        truth = (2 * sum(cold) > len(cold)) if cold else None
        measured = grid[m] if m >= 0 else 0.0
        # a diverged advice says "below lr" (NaN): within when the measured one is below lr
        below = math.isnan(max_lr)
        rows[a] = dict(needs=needs, cold=len(cold), cold_ok=sum(cold), warm=len(warm),
                       warm_ok=sum(warm),
                       right=None if truth is None else int(needs == (not truth)),
                       measured=measured, steps="nan" if below else abs(pos - m),
                       within=int(measured < lr) if below else int(abs(pos - m) <= 1),
                       below=below, lr=lr)
    return rows


def check_tsv(out, rows):
    cells, summary = out.strip().split("\n\n")
    lines = cells.splitlines()
    head = lines[0].split("\t")
    got = {r["file"]: r for r in (dict(zip(head, ln.split("\t"))) for ln in lines[1:])}
    check("a row per advice", sorted(got) == sorted(rows), str(sorted(got)))
    for a, e in rows.items():
        g = got.get(a, {})
        for key, col in [("needs", "needs_warmup"), ("cold", "runs_without"),
                         ("cold_ok", "train_without"), ("warm", "runs_with"),
                         ("warm_ok", "train_with"), ("steps", "grid_steps"),
                         ("within", "max_lr_within")]:
            check(f"{a}: {col} = {e[key]}", g.get(col) == str(e[key]), str(g.get(col)))
        check(f"{a}: measured_max_lr = {e['measured']}",
              float(g.get("measured_max_lr", "nan")) == e["measured"], str(g))
        want = "nan" if e["right"] is None else str(e["right"])
        check(f"{a}: right = {want}", g.get("right") == want, str(g.get("right")))
    judged = [e for e in rows.values() if e["right"] is not None]
    check("the grid has a right and a wrong advice",
          {e["right"] for e in judged} == {0, 1}, str(rows))
    groups = {"all": judged, "needs": [e for e in judged if e["needs"]],
              "does not need": [e for e in judged if not e["needs"]]}
    slines = summary.splitlines()
    sh = slines[0].split("\t")
    srows = {r["group"]: r for r in (dict(zip(sh, ln.split("\t"))) for ln in slines[1:])}
    counts = {g: (sum(e["right"] for e in es), len(es)) for g, es in groups.items()}
    counts["max_lr_within_one_step"] = (sum(e["within"] for e in rows.values()), len(rows))
    below = [a for a, e in rows.items() if e["below"]]
    check("a diverged advice (lr 10) says below lr", below == ["advice_10.h5"], str(below))
    for g, (k, n) in counts.items():
        s = srows.get(g, {})
        check(f"{g}: {k} right of {n}", (s.get("right"), s.get("n")) == (str(k), str(n)), str(s))
        lo, hi = clopper_pearson(k, n)
        ok = (abs(float(s.get("lo", "nan")) - lo) < 1e-9
              and abs(float(s.get("hi", "nan")) - hi) < 1e-9)
        check(f"{g}: Clopper–Pearson [{lo:.6f}, {hi:.6f}]", ok, str(s))
        print(f"#   {g}: {k}/{n}, [{lo:.4f}, {hi:.4f}]")


def check_configs(tmp):
    sweep = os.path.join(tmp, "cells.ini")
    with open(sweep, "w") as f:
        f.write("[sweep]\nbase = configs/tiny.ini\nname = lr{lr}\ntrain.lr = 0.01, 0.3\n"
                "data.task = copy\n")
    p = run(["sweep", sweep, "--configs", "cells"])
    files = sorted(os.listdir("cells")) if os.path.isdir("cells") else []
    check("sweep --configs: one .ini per run",
          p.returncode == 0 and files == ["lr0.01.ini", "lr0.3.ini"], str(files))
    if "lr0.3.ini" in files:
        c = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
        c.read("cells/lr0.3.ini")
        check("sweep --configs: the swept value", float(c["train"]["lr"]) == 0.3)
        p = run(["advise", "--config", "cells/lr0.3.ini", "--quiet"])
        check("sweep --configs: advise reads it", p.returncode == 0 and "at lr 0.3" in p.stdout,
              p.stdout + p.stderr)
    p = run(["sweep", sweep, "--configs", "cells", "--dry-run"])
    check("sweep --configs with --dry-run: exit 2", p.returncode == 2)


def check_one_answer():
    a = "advice_1.h5"
    with h5py.File(a, "r") as f:
        need = [int(x) for x in f["advise/warmup_need"][:]]
        seeds = [int(x) for x in f["advise/seed"][:]]
        answer = int(f.attrs["warmup_updates"])
    said = []
    for s, n in zip(seeds, need):
        out = f"same_s{s}.h5"
        run(["train", "configs/tiny.ini", "--set", "data.task=copy", "--set", "train.lr=1",
             "--set", "train.warmup=1", "--set", "train.schedule=constant", "--set",
             f"init.seed={s}", "--set", "train.steps=6", "--set", "probe.curvature_every=2",
             "--set", "probe.curvature_until=6", "--set", "probe.curvature_active_only=on",
             "--set", "probe.curvature_iters=10", "--out", out, "--quiet"])
        info = run(["info", out]).stdout
        nums = [int(x) for x in re.findall(r"train\.warmup=(\d+)", info)]
        nums += [int(x) for x in re.findall(r"would need about (\d+) updates", info)]
        want = max(n, 100)
        check(f"seed {s}: info's warm-up numbers {nums} are one, max(need {n}, 100) = {want}",
              len(nums) >= 2 and set(nums) == {want}, info)
        said.append(want)
    check(f"advise's warmup_updates {answer} = the largest of info's {said}",
          answer == max(said) and max(said) > 100)


def main():
    with tempfile.TemporaryDirectory() as tmp, chdir_repo_like(tmp):
        runs, advice = make_grid()
        rows = expected(runs, advice)
        p = run(["table", "advise", *advice, *runs, "--tsv"])
        check("table advise --tsv: exit 0", p.returncode == 0, p.stderr)
        if p.returncode == 0:
            check_tsv(p.stdout, rows)
        p = run(["table", "advise", *runs, *advice])
        check("Markdown: right and **wrong** cells",
              "| right |" in p.stdout and "| **wrong** |" in p.stdout, p.stdout)
        check("Markdown: the caption names the 3.2-nat rule", "3.2 nats" in p.stdout, p.stdout)
        row10 = [ln for ln in p.stdout.splitlines() if ln.startswith("| copy | post | 3 | 10 |")]
        check("Markdown: the diverged advice's warm-up is unknown and its η_max below lr",
              len(row10) == 1 and "| needs | unknown (diverged) | below 10 |" in row10[0],
              str(row10))
        p = run(["table", "advise", *advice])
        check("advice alone: exit 1, no outcome runs",
              p.returncode == 1 and "no outcome runs" in p.stderr, p.stderr)
        check_configs(tmp)
        check_one_answer()
    passed = sum(results)
    print(f"advise_table: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
