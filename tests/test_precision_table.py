#!/usr/bin/python3
"""test_precision_table.py — `stability table precision` (study/precision.c; issue 49, docs/design.md,
"Low precision, emulated"), from the repository root: /usr/bin/python3 tests/test_precision_table.py

A tiny precision sweep in a temporary directory (configs/tiny.ini widened to d 32, one head, on the copy task,
Pre-LN, L 2: float32 against pure bfloat16 with nearest rounding, lr 1 — spikes and logit growth
— seeds 1 and 2, 150 updates, the precision measures every 10: seconds). The oracle is written here from the
definitions, from the files read with h5py, not from the program's code:
- a run's final loss: its last validation loss, else the mean of the last tenth of its training
  losses; none when it diverged; it trains below its first loss by 0.1 nats (DIAG_PLATEAU_BAND,
  a task without a unigram plateau); the Clopper–Pearson interval from its definition;
- mean and 95 % half-width over 2 seeds (Student t at 1 degree of freedom: tan(0.475 π));
- the paired difference to float32's final loss at the same seed;
- spikes: after update 50 the loss more than 0.5 nats above its running minimum, one per entry;
- the peak of /train/max_attn_logit and the first update past 10 × its value at update 1;
- the mean of /train/stagnation; the largest of weight_spec and extra_weight_spec at the last probe
  over the first; the mean over probes of the mean |pv_round_bias| over layers and heads.
Then the refusals: a float32 run alone, runs of another model size, two runs of one arm, lr and
seed (exit 1, one line).
Prints "ok - ..." / "FAIL - ..." per check, then "precision_table: N passed, M failed".
"""
import configparser
import math
import os
import statistics
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, blocks, check, run, summary, sweep_in  # noqa: E402

SWEEP = """[sweep]
base = configs/tiny.ini
name = {precision}_s{seed}
init.seed = 1, 2
train.precision = float32, bfloat16_pure
model.placement = pre
model.layers = 2
model.d_model = 32
model.heads = 1
model.d_ff = 32
model.vocab = 32
model.seq_len = 8
data.task = copy
data.batch = 16
train.lr = 1
train.steps = 150
probe.every = 10
probe.precision_measures = on
"""
TINY = ["--set", "model.placement=pre", "--set", "model.layers=2", "--set", "model.d_model=16",
        "--set", "model.vocab=32", "--set", "model.seq_len=8", "--set", "data.task=copy",
        "--set", "data.batch=16", "--set", "train.lr=3e-2", "--set", "train.steps=8", "--quiet"]
T1 = math.tan(0.475 * math.pi)   # t(0.975, 1 dof)


def binom_cdf(k, n, p):
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(0, k + 1))


def bisect(f, lo=0.0, hi=1.0):
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def clopper_pearson(k, n):
    """The 95 % interval by its definition: lower p with P(X ≥ k) = 2.5 %, upper with P(X ≤ k)."""
    lo = 0.0 if k == 0 else bisect(lambda p: (1 - binom_cdf(k - 1, n, p)) - 0.025)
    hi = 1.0 if k == n else bisect(lambda p: 0.025 - binom_cdf(k, n, p))
    return lo, hi


def finite(xs):
    return [float(x) for x in xs if math.isfinite(x)]


def mean_half(xs):
    xs = finite(xs)
    if not xs:
        return math.nan, math.nan
    if len(xs) < 2:
        return xs[0], math.nan
    assert len(xs) == 2
    return statistics.fmean(xs), T1 * statistics.stdev(xs) / math.sqrt(2)


def spikes(step, loss):
    lo, n, above = math.inf, 0, False
    for s, x in zip(step, loss):
        if not math.isfinite(x):
            break
        if s > 50 and math.isfinite(lo):
            up = x > lo + 0.5
            n += up and not above
            above = up
        lo = min(lo, x)
    return n


def read_runs(path):
    out = []
    with h5py.File(path, "r") as h:
        for name, g in h["runs"].items():
            cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
            cfg.read_string(g.attrs["config"])
            t = g["train"]
            loss = [float(x) for x in t["loss"][:]]
            step = [float(x) for x in t["step"][:]]
            val = [float(x) for x in t["val_loss"][:]] if "val_loss" in t else []
            status = g.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            div = status == "diverged" or ("diverged_at" in t.attrs and t.attrs["diverged_at"] >= 0)
            n = max(len(loss) // 10, 1)
            final = math.nan if div else val[-1] if val and math.isfinite(val[-1]) else sum(loss[-n:]) / n
            ml = [float(x) for x in t["max_attn_logit"][:]]
            past = [s for s, m in zip(step, ml) if m > 10 * ml[0]]
            ws, ex = t["weight_spec"][:], t["extra_weight_spec"][:]
            spec = [max(finite(list(ws[i].ravel()) + list(ex[i].ravel()))) for i in range(ws.shape[0])]
            pv = [statistics.fmean(abs(x) for x in finite(t["pv_round_bias"][i].ravel()))
                  if finite(t["pv_round_bias"][i].ravel()) else math.nan for i in range(ws.shape[0])]
            prec = cfg["train"]["precision"]
            out.append({"arm": "float32" if prec == "float32" else "bfloat16_pure, nearest",
                        "seed": int(cfg["init"]["seed"]), "final": final, "div": div,
                        "trains": not div and final < loss[0] - 0.1,
                        "spikes": spikes(step, loss), "peak": max(finite(ml)),
                        "past": past[0] if past else math.nan,
                        "stag": statistics.fmean(finite(t["stagnation"][:])) if "stagnation" in t else math.nan,
                        "growth": spec[-1] / spec[0], "pv": statistics.fmean(finite(pv)) if finite(pv) else math.nan})
    return out


def close(a, b, tol=1e-9):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def test_table(path):
    s = run("table", "precision", path, "--tsv")
    check("table precision --tsv exits 0", s.returncode == 0, s.stderr[-400:])
    lines = s.stdout.strip().splitlines()
    head = lines[0].split("\t")
    rows = {r["arm"]: r for r in (dict(zip(head, x.split("\t"))) for x in lines[1:])}
    runs = read_runs(path)
    check("a row per arm, float32 first", [x.split("\t")[0] for x in lines[1:]] ==
          ["float32", "bfloat16_pure, nearest"], lines)
    ref = {r["seed"]: r for r in runs if r["arm"] == "float32"}
    pure = [r for r in runs if r["arm"] != "float32"]
    check("pure bfloat16 records stagnation and a softmax·V bias, float32 neither",
          all(math.isfinite(r["stag"]) and math.isfinite(r["pv"]) for r in pure)
          and all(math.isnan(r["stag"]) and math.isnan(r["pv"]) for r in ref.values()), runs)
    for arm, row in rows.items():
        mine = [r for r in runs if r["arm"] == arm]
        k, n, d = sum(r["trains"] for r in mine), len(mine), sum(r["div"] for r in mine)
        lo, hi = clopper_pearson(k, n)
        dlo, dhi = clopper_pearson(d, n)
        check(f"{arm}: trains {k}/{n} [{lo:.4f}, {hi:.4f}], diverged {d}",
              (int(row["runs"]), int(row["trains"]), int(row["diverged"])) == (n, k, d)
              and close(float(row["trains_lo"]), lo, 1e-8) and close(float(row["trains_hi"]), hi, 1e-8)
              and close(float(row["diverged_lo"]), dlo, 1e-8) and close(float(row["diverged_hi"]), dhi, 1e-8), row)
        want = {"final_loss": [r["final"] for r in mine], "spikes": [r["spikes"] for r in mine],
                "peak_max_logit": [r["peak"] for r in mine], "first_update_logit_grown": [r["past"] for r in mine],
                "stagnation": [r["stag"] for r in mine], "weight_spec_growth": [r["growth"] for r in mine],
                "pv_round_bias_abs": [r["pv"] for r in mine],
                "dloss_float32": [] if arm == "float32" else
                [r["final"] - ref[r["seed"]]["final"] for r in mine]}
        for col, xs in want.items():
            m, h = mean_half(xs)
            check(f"{arm}: {col} {m:.6g} ± {h:.6g} over {len(finite(xs))} seeds",
                  close(float(row[col]), m) and close(float(row[col + "_half"]), h)
                  and int(row[col + "_n"]) == len(finite(xs)), (row[col], row[col + "_half"], row[col + "_n"]))
    s = run("table", "precision", path)
    check("the Markdown table has a row per arm and says the spike rule",
          s.returncode == 0 and "| bfloat16_pure, nearest | 1 |" in s.stdout
          and "0.5 nats above its running minimum after update 50" in s.stdout, s.stdout[:600])


def test_figure(tmp, path):
    """precision_lines: each arm's mean and range over the seeds of the loss and the largest ‖W‖₂."""
    pd = os.path.join(tmp, "plots")
    s = run("plot", path, "--out", pd, "--format", "gp")
    gp = os.path.join(pd, "prec-precision_lines.gp")
    lr = os.path.join(pd, "prec-precision_lr.gp")
    check("stability plot draws precision_lines", s.returncode == 0 and os.path.exists(gp), s.stderr[-400:])
    if not os.path.exists(gp):
        return
    b = blocks(open(gp).read())
    b.update(blocks(open(lr).read()) if os.path.exists(lr) else {})
    with h5py.File(path, "r") as h:
        runs = {n: g["train"] for n, g in h["runs"].items()}
        for a, arm in enumerate(("float32", "bfloat16_pure")):
            loss = [[float(x) for x in runs[f"{arm}_s{k}"]["loss"][:]] for k in (1, 2)]
            want = [(i + 1, statistics.fmean(x), min(x), max(x)) for i, x in enumerate(zip(*loss))]
            got = [tuple(r) for r in b[f"c{a}_0_3"]]
            check(f"{arm}: the loss line is the seeds' mean, its band their range ({len(want)} updates)",
                  len(got) == len(want) and all(all(close(g, w, 1e-6) for g, w in zip(gr, wr))
                                                for gr, wr in zip(got, want)), (got[:2], want[:2]))
            spec = []
            for k in (1, 2):
                t = runs[f"{arm}_s{k}"]
                ws, ex = t["weight_spec"][:], t["extra_weight_spec"][:]
                spec.append([max(finite(list(ws[i].ravel()) + list(ex[i].ravel()))) for i in range(ws.shape[0])])
            steps = [float(x) for x in runs[f"{arm}_s1"]["probe_step"][:]]
            want = [(st, statistics.fmean(x), min(x), max(x)) for st, x in zip(steps, zip(*spec))]
            got = [tuple(r) for r in b[f"c{a}_0_1"]]
            check(f"{arm}: the ‖W‖₂ line is the seeds' mean of the largest norm at each probe",
                  len(got) == len(want) and all(all(close(g, w, 1e-6) for g, w in zip(gr, wr))
                                                for gr, wr in zip(got, want)), (got[:2], want[:2]))
    check("stagnation is drawn for pure bfloat16 only", "c1_0_2" in b and "c0_0_2" not in b, sorted(b))
    runs = read_runs(path)
    for a, arm in enumerate(("float32", "bfloat16_pure, nearest")):
        m, h = mean_half([r["final"] for r in runs if r["arm"] == arm])
        got = b.get(f"l{a}", [[]])[0]
        check(f"precision_lr: {arm} at lr 1, {m:.6f} ± {h:.6f}",
              len(got) == 6 and close(got[0], 1.0) and close(got[1], m, 1e-8)
              and close(got[2], m - h, 1e-8) and close(got[3], m + h, 1e-8), got)


def test_refusals(tmp, path):
    one = os.path.join(tmp, "f32.h5")
    s = run("train", "configs/tiny.ini", *TINY, "--set", "train.precision=float32", "--out", one)
    check("a float32 run trains", s.returncode == 0, s.stderr[-300:])
    s = run("table", "precision", one)
    check("a set without bfloat16 or fp8 runs is refused in one line (exit 1)",
          s.returncode == 1 and "no bfloat16, bfloat16_pure or fp8 run" in s.stderr
          and len(s.stderr.strip().splitlines()) == 1, (s.returncode, s.stderr))
    other = os.path.join(tmp, "wide.h5")
    run("train", "configs/tiny.ini", *TINY, "--set", "train.precision=bfloat16", "--set",
        "model.d_ff=24", "--out", other)
    s = run("table", "precision", path, other)
    check("runs of another model size are refused in one line (exit 1)",
          s.returncode == 1 and "differ in model size" in s.stderr
          and len(s.stderr.strip().splitlines()) == 1, (s.returncode, s.stderr))
    twin = os.path.join(tmp, "twin.h5")
    run("train", "configs/tiny.ini", *TINY, "--set", "train.precision=bfloat16", "--set",
        "model.d_ff=24", "--set", "train.clip=1", "--out", twin)
    s = run("table", "precision", other, twin)
    check("two runs of one arm, lr and seed are refused in one line (exit 1)",
          s.returncode == 1 and "another key tells them apart" in s.stderr
          and len(s.stderr.strip().splitlines()) == 1, (s.returncode, s.stderr))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        s, path = sweep_in(tmp, "prec", SWEEP)
        check("the tiny precision sweep runs", s.returncode == 0 and os.path.exists(path), s.stderr[-400:])
        if os.path.exists(path):
            test_table(path)
            test_figure(tmp, path)
            test_refusals(tmp, path)
    return summary("precision_table")


if __name__ == "__main__":
    sys.exit(main())
