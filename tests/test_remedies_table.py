#!/usr/bin/python3
"""test_remedies_table.py — `stability table remedies` (study/remedies.c; docs/design.md §6k, "The
remedies study"), from the repository root: /usr/bin/python3 tests/test_remedies_table.py

A tiny failure-boundary sweep in a temporary directory (configs/tiny.ini widened to d 16 on the
copy task with 32 symbols, so a run starts above the 3.2-nat threshold: Post-LN and Pre-LN × L 2
× lr ∈ {1e-2, 3e-2} × two seeds × five methods: Adam without warm-up, Adam with a linear warm-up
of 20, the catapult start with that warm-up, LAMB, a relative-update cap r = 0.01; 30 updates,
seconds). The oracle is written here from
the definitions, from the files read with h5py, not from the program's code:
- a run's final loss: its last validation loss, else the mean of the last tenth of its training
  losses; none when it diverged; it trains below 3.2 nats;
- a (cell, seed) needs warm-up when Adam without warm-up fails and Adam with warm-up trains; a
  method's fraction of those it trains, and the Clopper–Pearson interval from its definition
  (the p where the binomial tails P(X ≥ k) and P(X ≤ k) are 2.5 %, by bisection on exact sums);
- η_max: the largest lr whose mean final loss over the seeds trains (an lr where a seed
  diverged: none), the seeds alone agreeing, the ratio to linear warm-up's;
- the best lr's mean and 95 % half-width over 2 seeds (Student t at 1 degree of freedom is
  Cauchy: t = tan(0.475 π)), and the seconds an update (/train/time's last over its step).
Prints "ok - ..." / "FAIL - ..." per check, then "remedies_table: N passed, M failed".
"""
import configparser
import math
import os
import statistics
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, blocks, check, run, summary  # noqa: E402

TRAINS = 3.2
SWEEP = """[sweep]
base = {base}
name = {{placement}}_lr{{lr}}_{{optimizer}}_w{{warmup}}_{{warmup_start}}_r{{update_ratio_cap}}_s{{seed}}
init.seed = 1, 2
zip = train.optimizer, train.warmup, train.warmup_start, train.update_ratio_cap
model.placement = post, pre
model.layers = 2
model.d_model = 16
model.d_ff = 32
model.vocab = 32
model.seq_len = 8
data.task = copy
data.batch = 16
train.lr = 1e-2, 3e-2
train.optimizer = adam, adam, lamb, adam, adam
train.warmup = 1, 20, 1, 1, 20
train.warmup_start = zero, zero, zero, zero, catapult
train.update_ratio_cap = 0, 0, 0, 0.01, 0
train.steps = 30
"""
OTHER = """[sweep]
base = {base}
name = post_lr1e-2_d24
model.placement = post
model.layers = 2
model.d_model = 16
model.d_ff = 24
model.vocab = 32
model.seq_len = 8
data.task = copy
data.batch = 16
train.lr = 1e-2
train.optimizer = adam
train.warmup = 1
train.steps = 30
"""
LABEL = {("adam", 1, "zero", 0.0): "Adam, no warm-up", ("adam", 20, "zero", 0.0): "Adam, linear warm-up 20",
         ("lamb", 1, "zero", 0.0): "LAMB", ("adam", 1, "zero", 0.01): "relative-update cap r = 0.01",
         ("adam", 20, "catapult", 0.0): "catapult η_init + warm-up 20"}


def read_runs(path):
    """Every run of a merged file: its cell, seed, method label, final loss, s / update."""
    out = []
    with h5py.File(path, "r") as h:
        for name, g in h["runs"].items():
            cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
            cfg.read_string(g.attrs["config"])
            t = g["train"]
            loss = [float(x) for x in t["loss"][:]]
            val = [float(x) for x in t["val_loss"][:]] if "val_loss" in t else []
            status = g.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            div = status == "diverged" or ("diverged_at" in t.attrs and t.attrs["diverged_at"] >= 0)
            n = max(len(loss) // 10, 1)
            final = val[-1] if val and math.isfinite(val[-1]) else sum(loss[-n:]) / n
            tr = cfg["train"]
            method = (tr["optimizer"], max(int(tr["warmup"]), 1), tr.get("warmup_start", "zero"),
                      float(tr.get("update_ratio_cap", "0")))
            out.append({"scheme": cfg["model"]["placement"], "L": int(cfg["model"]["layers"]),
                        "lr": float(tr["lr"]), "seed": int(cfg["init"].get("seed", "1")),
                        "method": LABEL[method], "final": math.nan if div else final,
                        "sec": float(t["time"][-1]) / float(t["step"][-1])})
    return out


def binom_cdf(k, n, p):
    """P(X ≤ k), X ~ Binomial(n, p), by the exact sum."""
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(0, k + 1))


def bisect(f, lo=0.0, hi=1.0):
    """The root of f, increasing on [lo, hi], to 1e-13."""
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def clopper_pearson(k, n):
    """The 95 % interval by its definition: lower p with P(X ≥ k) = 2.5 %, upper with P(X ≤ k)."""
    lo = 0.0 if k == 0 else bisect(lambda p: (1 - binom_cdf(k - 1, n, p)) - 0.025)
    hi = 1.0 if k == n else bisect(lambda p: 0.025 - binom_cdf(k, n, p))
    return lo, hi


def tsv_blocks(text):
    """The three TSV blocks as lists of dicts."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        head = lines[0].split("\t")
        out.append([dict(zip(head, line.split("\t"))) for line in lines[1:]])
    return out


def close(a, b, tol=1e-9):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def boundary(runs, scheme, L, method):
    """η_max, agreeing seeds, best mean, its lr and half-width of one line, by the definitions."""
    mine = [r for r in runs if (r["scheme"], r["L"], r["method"]) == (scheme, L, method)]
    lrs, seeds = sorted({r["lr"] for r in mine}), sorted({r["seed"] for r in mine})
    mean = {lr: statistics.fmean([r["final"] for r in mine if r["lr"] == lr]) for lr in lrs}
    top = max([lr for lr in lrs if mean[lr] < TRAINS], default=0.0)
    agree = sum(max([r["lr"] for r in mine if r["seed"] == k and r["final"] < TRAINS], default=0.0) == top
                for k in seeds)
    done = [lr for lr in lrs if math.isfinite(mean[lr])]
    best_lr = min(done, key=lambda lr: (mean[lr], lr))
    f = [r["final"] for r in mine if r["lr"] == best_lr]
    half = math.tan(0.475 * math.pi) * statistics.stdev(f) / math.sqrt(len(f))   # t(0.975, 1)
    return top, agree, mean[best_lr], best_lr, half, statistics.fmean(r["sec"] for r in mine)


def test_tables(path):
    s = run("table", "remedies", path, "--tsv")
    check("table remedies --tsv exits 0", s.returncode == 0, s.stderr[-400:])
    causal, bound, cost = tsv_blocks(s.stdout)
    runs = read_runs(path)
    at = {(r["scheme"], r["L"], r["lr"], r["seed"], r["method"]): r for r in runs}
    cells = sorted({k[:4] for k in at})
    needs = [c for c in cells if not at[c + ("Adam, no warm-up",)]["final"] < TRAINS
             and at[c + ("Adam, linear warm-up 20",)]["final"] < TRAINS]
    cold = [c for c in cells if at[c + ("Adam, no warm-up",)]["final"] < TRAINS]
    check(f"the sweep has (cell, seed)s that need warm-up ({len(needs)}) and that train without "
          f"({len(cold)}): the test sees both", needs and cold, (needs, cold))
    fixed = [m for m in LABEL.values() if any(at[c + (m,)]["final"] < TRAINS for c in needs)]
    check(f"a method trains a needs-warm-up (cell, seed) ({fixed}): a lower interval end above 0",
          "catapult η_init + warm-up 20" in fixed, fixed)
    check("the causal test has a row per method but the baselines, in the study's order",
          [r["method"] for r in causal] == ["catapult η_init + warm-up 20", "relative-update cap r = 0.01",
                                            "LAMB"], causal)
    for row in causal:
        m = row["method"]
        k = sum(at[c + (m,)]["final"] < TRAINS for c in needs)
        lo, hi = clopper_pearson(k, len(needs))
        broke = sum(not at[c + (m,)]["final"] < TRAINS for c in cold)
        got = (int(row["needs_trained"]), int(row["needs_run"]), float(row["fraction"]),
               float(row["ci_lo"]), float(row["ci_hi"]), int(row["breaks"]), int(row["cold_trains_run"]))
        check(f"{m}: trains {k} of {len(needs)} that need warm-up, [{lo:.4f}, {hi:.4f}], breaks "
              f"{broke} of {len(cold)}",
              got[:2] == (k, len(needs)) and close(got[2], k / len(needs)) and close(got[3], lo, 1e-8)
              and close(got[4], hi, 1e-8) and got[5:] == (broke, len(cold)), got)
    tops = {}
    for row in bound:
        key = (row["scheme"], int(row["L"]), row["method"])
        top, agree, *_ = boundary(runs, *key)
        tops[key] = top
        check(f"{key}: η_max {top:g}, {agree} seeds agree",
              close(float(row["eta_max"]), top) and int(row["agree"]) == agree
              and int(row["seeds"]) == 2 and int(row["lrs"]) == 2, row)
    check("a line per scheme × depth × method (2 × 1 × 5)", len(bound) == 10 and len(cost) == 10, len(bound))
    for row in bound:
        w = tops[(row["scheme"], int(row["L"]), "Adam, linear warm-up 20")]
        mine = tops[(row["scheme"], int(row["L"]), row["method"])]
        want = mine / w if mine > 0 and w > 0 else math.nan
        check(f"{row['scheme']} {row['method']}: η_max / warm-up's {want:g}",
              close(float(row["ratio_to_linear_warmup"]), want), row)
    for row in cost:
        key = (row["scheme"], int(row["L"]), row["method"])
        _, _, best, best_lr, half, sec = boundary(runs, *key)
        wbest = boundary(runs, key[0], key[1], "Adam, linear warm-up 20")[2]
        csec = boundary(runs, key[0], key[1], "Adam, no warm-up")[5]
        check(f"{key}: best {best:.6f} ± {half:.6f} at {best_lr:g}, − warm-up's {best - wbest:+.6f}, "
              f"{sec / csec:.3f} × the seconds an update",
              close(float(row["best_loss"]), best) and close(float(row["best_half"]), half)
              and close(float(row["best_lr"]), best_lr) and close(float(row["minus_linear_warmup"]), best - wbest)
              and close(float(row["sec_ratio_to_no_warmup"]), sec / csec), row)
    s = run("table", "remedies", path)
    check("the Markdown table says the needs-warm-up count",
          f"Adam, linear warm-up 20 trains: {len(needs)} here" in s.stdout, s.stdout[:300])


def test_figure(tmp, path):
    """remedies_boundary's cells: log2 of η_max over linear warm-up's, labelled with η_max."""
    pd = os.path.join(tmp, "plots")
    s = run("plot", path, "--out", pd, "--format", "gp")
    gp = os.path.join(pd, "rem-remedies_boundary.gp")
    check("stability plot draws remedies_boundary", s.returncode == 0 and os.path.exists(gp), s.stderr[-400:])
    if not os.path.exists(gp):
        return
    cells = blocks(open(gp).read(), str)["h"]
    runs = read_runs(path)
    methods = list(LABEL.values())
    methods = [methods[k] for k in (0, 1, 4, 3, 2)]   # the study's order: catapult, cap, LAMB
    want = []
    for sc, scheme in enumerate(("post", "pre")):
        w = boundary(runs, scheme, 2, "Adam, linear warm-up 20")[0]
        for mi, m in enumerate(methods):
            top = boundary(runs, scheme, 2, m)[0]
            v = math.log2(top / w) if top > 0 and w > 0 else math.nan
            want.append((sc, len(methods) - 1 - mi, v, f'"{top:.2g}"' if top > 0 else '"none"'))
    got = sorted((int(c[0]), int(c[1]), float(c[2]), c[3]) for c in cells)
    check("a cell per method and scheme: log2(η_max / warm-up's) and the η_max label",
          len(got) == len(want) and all(g[:2] == x[:2] and close(g[2], x[2], 1e-5) and g[3] == x[3]
                                        for g, x in zip(got, sorted(want))), (got, sorted(want)))


def test_refusals(tmp, path):
    other = os.path.join(tmp, "other.ini")
    with open(other, "w") as f:   # Adam without warm-up only, at another d_ff: cells of the first
        f.write(OTHER.format(base=os.path.join(REPO, "configs", "tiny.ini")))
    s = run("sweep", other, "--jobs", "1", "--quiet", cwd=tmp)
    check("the second sweep runs", s.returncode == 0, s.stderr[-400:])
    o = os.path.join(tmp, "results", "other.h5")
    s = run("table", "remedies", o)
    check("a set without Adam with linear warm-up is refused in words (exit 1)",
          s.returncode == 1 and "no Adam run with a linear warm-up" in s.stderr, (s.returncode, s.stderr))
    s = run("table", "remedies", path, o)
    check("a cell twice at one seed is refused in words (exit 1)",
          s.returncode == 1 and "one seed" in s.stderr and "d_ff" not in s.stdout, (s.returncode, s.stderr))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ini = os.path.join(tmp, "rem.ini")
        with open(ini, "w") as f:
            f.write(SWEEP.format(base=os.path.join(REPO, "configs", "tiny.ini")))
        s = run("sweep", ini, "--jobs", "1", "--quiet", cwd=tmp)
        check("the tiny remedies sweep runs", s.returncode == 0, s.stderr[-400:])
        path = os.path.join(tmp, "results", "rem.h5")
        test_tables(path)
        test_figure(tmp, path)
        test_refusals(tmp, path)
    return summary("remedies_table")


if __name__ == "__main__":
    sys.exit(main())
