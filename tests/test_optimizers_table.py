#!/usr/bin/python3
"""test_optimizers_table.py — `stability table optimizers` and its figure optimizers_boundary
(study/optimizers.c; docs/design.md §6h, "The optimizers study"), from the repository root:
/usr/bin/python3 tests/test_optimizers_table.py

Two tiny sweeps in a temporary directory (configs/tiny.ini widened to d 16 on the copy task with
32 symbols, so a run starts above the 3.2-nat threshold; Post-LN and Pre-LN, L 2, 30 updates,
two seeds): Muon at lr 2e-2 and 1e-1 with warm-up 1, 20 and the suboptimality schedule; Adam at
lr 1e-2 and 3e-2 with warm-up 1 and 20 — 40 runs, seconds. (Not 20 updates and warm-up 100: a
warm-up that never ends trains nowhere no warm-up does, and the test must see an (lr, seed)
that needs warm-up, one it hurts and one where both train.) Their merged files go to the verb
together, as the study's three files do. The oracle is written here from the definitions, from
the files read with h5py, not from the program's code:
- a run's final loss: its last validation loss, else the mean of the last tenth of its training
  losses; none when it diverged; it trains below 3.2 nats;
- per optimizer × scheme × depth × arm (none: warm-up 1; linear 20; suboptimality: the schedule)
  the runs that train of those run, with the Clopper–Pearson interval from its definition (the p
  where the binomial tails P(X ≥ k) and P(X ≤ k) are 2.5 %, by bisection on exact sums); η_max,
  the largest lr whose mean final loss over the seeds trains (an lr where a seed diverged: none),
  and each seed's own;
- the (lr, seed)s where no warm-up fails and linear 20 trains, and the reverse;
- each seed's lowest final loss over every lr and arm, and whether any of its runs trains;
- each arm's best lr (lowest mean over the seeds), its mean and 95 % half-width over 2 seeds
  (Student t at 1 degree of freedom is Cauchy: t = tan(0.475 π)), and the suboptimality arm minus
  the best fixed arm, seed by seed at each arm's best lr, mean and half-width;
- the largest /train/max_attn_logit of a run, the median over the seeds;
- the figure's cells: the share of seeds that train per lr × arm, labelled k/n.
And the refusals (exit 1, one line): a set without a linear warm-up, a cell twice at one seed.
Prints "ok - ..." / "FAIL - ..." per check, then "optimizers_table: N passed, M failed".
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

TRAINS = 3.2
T1 = math.tan(0.475 * math.pi)   # Student t(0.975) at 1 degree of freedom
COMMON = """[sweep]
base = {base}
init.seed = 1, 2
model.placement = post, pre
model.layers = 2
model.d_model = 16
model.d_ff = {d_ff}
model.vocab = 32
model.seq_len = 8
data.task = copy
data.batch = 16
train.steps = 30
"""
MUON = COMMON + """name = {{placement}}_muon_lr{{lr}}_w{{warmup}}-{{schedule}}_s{{seed}}
zip = train.warmup, train.schedule
train.optimizer = muon
train.lr = 2e-2, 1e-1
train.warmup = 1, 20, 1
train.schedule = constant, constant, suboptimality
"""
ADAM = COMMON + """name = {name}
train.optimizer = adam
train.lr = {lrs}
train.warmup = {warmups}
"""
EXTRA = COMMON + """name = {{placement}}_muon_{tag}_s{{seed}}
train.optimizer = muon
train.lr = 1e-1
{keys}
"""
LABEL = {"adam": "Adam", "muon": "Muon"}


def read_runs(*paths):
    """Every run of merged files: its cell, arm, lr, seed, final loss and peak max logit."""
    out = []
    for path in paths:
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
                w = max(int(tr["warmup"]), 1)
                # the suboptimality schedule's arm is named by its fit's f_star / lr_div (runs_remedy)
                fit = "%g/%g" % (float(tr.get("f_star", 0)), float(tr.get("lr_div", 100)))
                arm = (f"suboptimality {fit}" if tr.get("schedule", "") == "suboptimality"
                       else f"linear {w}" if w > 1 else "none")
                logit = [float(x) for x in t["max_attn_logit"][:] if math.isfinite(x)]
                out.append({"opt": tr["optimizer"], "scheme": cfg["model"]["placement"],
                            "L": int(cfg["model"]["layers"]), "arm": arm, "lr": float(tr["lr"]),
                            "seed": int(cfg["init"].get("seed", "1")),
                            "final": math.nan if div else final, "logit": max(logit, default=math.nan)})
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
    """The TSV blocks as lists of dicts."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        head = lines[0].split("\t")
        out.append([dict(zip(head, line.split("\t"))) for line in lines[1:]])
    return out


def close(a, b, tol=1e-9):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def trains(r):
    return r["final"] < TRAINS


def line(runs, key):
    """Of one optimizer × scheme × depth × arm: its runs, η_max (means), each seed's η_max, the
    best lr, the mean there and its half-width."""
    mine = [r for r in runs if (r["opt"], r["scheme"], r["L"], r["arm"]) == key]
    lrs, seeds = sorted({r["lr"] for r in mine}), sorted({r["seed"] for r in mine})
    mean = {lr: statistics.fmean([r["final"] for r in mine if r["lr"] == lr]) for lr in lrs}
    top = max([lr for lr in lrs if mean[lr] < TRAINS], default=0.0)
    tops = [max([r["lr"] for r in mine if r["seed"] == k and trains(r)], default=0.0) for k in seeds]
    done = [lr for lr in lrs if math.isfinite(mean[lr])]
    best_lr = min(done, key=lambda lr: (mean[lr], lr)) if done else math.nan
    f = [r["final"] for r in mine if r["lr"] == best_lr]
    half = T1 * statistics.stdev(f) / math.sqrt(len(f)) if len(f) == 2 else math.nan
    return mine, top, tops, best_lr, mean.get(best_lr, math.nan), half


def test_trains_and_needs(runs, b_trains, b_needs):
    keys = sorted({(r["opt"], r["scheme"], r["L"], r["arm"]) for r in runs})
    check("a line per optimizer × scheme × depth × arm (2 × 2 × 3 + 2 × 2 × 2 = 10)",
          len(b_trains) == len(keys) == 10, (len(b_trains), len(keys)))
    for row in b_trains:
        key = (row["optimizer"], row["scheme"], int(row["L"]), row["arm"])
        mine, top, tops, *_ = line(runs, key)
        k = sum(trains(r) for r in mine)
        lo, hi = clopper_pearson(k, len(mine))
        got_tops = [float(row["eta_max_seed1"]), float(row["eta_max_seed2"])]
        check(f"{key}: trains {k} of {len(mine)} [{lo:.4f}, {hi:.4f}], η_max {top:g}, per seed {tops}",
              (int(row["trains"]), int(row["runs"])) == (k, len(mine)) and close(float(row["ci_lo"]), lo, 1e-8)
              and close(float(row["ci_hi"]), hi, 1e-8) and close(float(row["eta_max"]), top)
              and all(close(g, w) for g, w in zip(got_tops, tops)), row)
    total = {"needs": 0, "hurts": 0, "both": 0}
    for row in b_needs:
        cell = (row["optimizer"], row["scheme"], int(row["L"]))
        at = {(r["arm"], r["lr"], r["seed"]): r for r in runs if (r["opt"], r["scheme"], r["L"]) == cell}
        pairs = [(lr, k) for (a, lr, k) in at if a == "none" and ("linear 20", lr, k) in at]
        needs = sum(not trains(at[("none",) + p]) and trains(at[("linear 20",) + p]) for p in pairs)
        hurts = sum(trains(at[("none",) + p]) and not trains(at[("linear 20",) + p]) for p in pairs)
        total["needs"] += needs
        total["hurts"] += hurts
        total["both"] += sum(trains(at[("none",) + p]) and trains(at[("linear 20",) + p]) for p in pairs)
        nl, nh = clopper_pearson(needs, len(pairs)), clopper_pearson(hurts, len(pairs))
        check(f"{cell}: needs warm-up {needs} of {len(pairs)} {nl[0]:.4f}…{nl[1]:.4f}, hurts {hurts}",
              (int(row["needs"]), int(row["pairs"]), int(row["hurts"]), int(row["hurts_pairs"]))
              == (needs, len(pairs), hurts, len(pairs))
              and close(float(row["needs_lo"]), nl[0], 1e-8) and close(float(row["needs_hi"]), nl[1], 1e-8)
              and close(float(row["hurts_lo"]), nh[0], 1e-8) and close(float(row["hurts_hi"]), nh[1], 1e-8), row)
    check(f"the sweep has (lr, seed)s that need warm-up ({total['needs']}), that it hurts "
          f"({total['hurts']}) and where both arms train ({total['both']}): the test tells the "
          f"counts apart", total["needs"] > 0 and total["hurts"] > 0 and total["both"] > 0, total)


def test_best_and_adaptive(runs, b_best, b_adapt):
    for row in b_best:
        cell = (row["optimizer"], row["scheme"], int(row["L"]))
        mine = [r for r in runs if (r["opt"], r["scheme"], r["L"]) == cell and r["seed"] == int(row["seed"])]
        fin = [r for r in mine if math.isfinite(r["final"])]
        b = min(fin, key=lambda r: r["final"])
        tr = int(any(trains(r) for r in mine))
        check(f"{cell} seed {row['seed']}: best {b['final']:.6f} at {b['lr']:g}, {b['arm']}, trains {tr}",
              close(float(row["best_loss"]), b["final"]) and close(float(row["best_lr"]), b["lr"])
              and row["best_arm"] == b["arm"] and int(row["trains"]) == tr and int(row["runs"]) == len(mine), row)
    for row in b_adapt:
        key = (row["optimizer"], row["scheme"], int(row["L"]), row["arm"])
        _, _, _, best_lr, best, half = line(runs, key)
        ok = close(float(row["best_loss"]), best) and close(float(row["best_half"]), half) \
            and close(float(row["best_lr"]), best_lr)
        want = math.nan
        if key[3].startswith("suboptimality"):
            fixed = [(line(runs, key[:3] + (a,)), a) for a in ("none", "linear 20")]
            (_, _, _, f_lr, f_best, _), f_arm = min(((x, a) for x, a in fixed if math.isfinite(x[4])),
                                                    key=lambda p: p[0][4])
            d = []
            for k in (1, 2):
                s = [r for r in runs if (r["opt"], r["scheme"], r["L"], r["arm"], r["lr"], r["seed"])
                     == key + (best_lr, k)][0]
                f = [r for r in runs if (r["opt"], r["scheme"], r["L"], r["arm"], r["lr"], r["seed"])
                     == key[:3] + (f_arm, f_lr, k)][0]
                d.append(s["final"] - f["final"])
            want = statistics.fmean(d)
            ok = ok and row["best_fixed_arm"] == f_arm and close(float(row["minus_best_fixed"]), want) \
                and close(float(row["minus_half"]), T1 * statistics.stdev(d) / math.sqrt(2))
        check(f"{key}: best {best:.6f} ± {half:.6f} at {best_lr:g}; suboptimality − best fixed {want:+.6f}",
              ok, row)


def test_logit(runs, b_logit):
    check("a logit row per optimizer × scheme × depth × arm × lr (20)", len(b_logit) == 20, len(b_logit))
    for row in b_logit:
        key = (row["optimizer"], row["scheme"], int(row["L"]), row["arm"], float(row["lr"]))
        v = [r["logit"] for r in runs if (r["opt"], r["scheme"], r["L"], r["arm"], r["lr"]) == key]
        want = statistics.median(v)
        check(f"{key}: median peak max |logit| {want:.6f} of {len(v)} seeds",
              close(float(row["max_logit_median"]), want) and int(row["seeds"]) == len(v)
              and want > 0, row)


def test_figure(tmp, paths, runs):
    """optimizers_boundary's cells: per panel, arm and lr, the share of seeds that train."""
    pd = os.path.join(tmp, "plots")
    s = run("plot", *paths, "--out", pd, "--format", "gp")
    gp = [f for f in os.listdir(pd) if f.endswith("-optimizers_boundary.gp")] if os.path.isdir(pd) else []
    check("stability plot draws optimizers_boundary", s.returncode == 0 and len(gp) == 1, s.stderr[-400:])
    if len(gp) != 1:
        return
    text = open(os.path.join(pd, gp[0])).read()
    got = blocks(text, str)
    arms = ["none", "linear 20", "suboptimality 0/100"]
    want = {}
    for o, opt in enumerate(("adam", "muon")):   # panels: optimizer × depth rows, scheme columns
        for sc, scheme in enumerate(("post", "pre")):
            mine = [r for r in runs if (r["opt"], r["scheme"]) == (opt, scheme)]
            lrs = sorted({r["lr"] for r in mine})
            cells = []
            for a, arm in enumerate(arms):
                for j, lr in enumerate(lrs):
                    x = [r for r in mine if (r["arm"], r["lr"]) == (arm, lr)]
                    k = sum(trains(r) for r in x)
                    cells.append((a, j, k / len(x) if x else math.nan, f'"{k}/{len(x)}"' if x else '"–"'))
            want[f"p{o * 2 + sc}"] = cells
    ok = sorted(got) == sorted(want)
    for name, cells in want.items():
        g = [(int(c[0]), int(c[1]), float(c[2]), c[3]) for c in got.get(name, [])]
        ok = ok and len(g) == len(cells) and all(
            x[:2] == y[:2] and close(x[2], y[2], 1e-5) and x[3] == y[3] for x, y in zip(g, cells))
    check("a panel per optimizer and scheme, a cell per arm × lr: the share of seeds that train, "
          "labelled k/n", ok, (got, want))
    check("the figure names the arms and the rule", "sub 0/100" in text and "suboptimality schedule" in text and "below 3.2 nats" in text, "")


def test_refusals(tmp, paths):
    base = os.path.join(REPO, "configs", "tiny.ini")
    s, cold = sweep_in(os.path.join(tmp, "c"), "cold", ADAM.format(base=base, d_ff=32, lrs="3e-2", warmups="1", name="{placement}_s{seed}"))
    check("the cold-only sweep runs", s.returncode == 0, s.stderr[-400:])
    s = run("table", "optimizers", cold)
    check("a set without a linear warm-up is refused in one line (exit 1)",
          s.returncode == 1 and "no run with a linear warm-up" in s.stderr and s.stderr.count("\n") == 1
          and not s.stdout, (s.returncode, s.stderr))
    s, other = sweep_in(os.path.join(tmp, "o"), "other", ADAM.format(base=base, d_ff=24, lrs="3e-2", warmups="1", name="{placement}_s{seed}"))
    s = run("table", "optimizers", *paths, other)
    check("a cell twice at one seed (another d_ff) is refused in one line (exit 1)",
          s.returncode == 1 and "one seed" in s.stderr and s.stderr.count("\n") == 1 and not s.stdout,
          (s.returncode, s.stderr))


def test_extra_arms(tmp, base, paths, b_needs):
    """QK-Clip's runs and a second fit of the suboptimality schedule are arms of their own: the
    set is not refused as one cell twice, the baselines' needs / hurts do not move, and the
    adaptive column takes the better of the schedule's two fits."""
    s1, clip = sweep_in(os.path.join(tmp, "x"), "clip", EXTRA.format(
        base=base, d_ff=32, tag="clip", keys="train.qk_clip = 1\ntrain.warmup = 1"))
    s2, fit = sweep_in(os.path.join(tmp, "f"), "fit", EXTRA.format(
        base=base, d_ff=32, tag="fit", keys="train.schedule = suboptimality\ntrain.f_star = 0.5\ntrain.lr_div = 5"))
    check("the tiny QK-Clip and second-fit sweeps run", s1.returncode == 0 and s2.returncode == 0,
          (s1.stderr[-300:], s2.stderr[-300:]))
    s = run("table", "optimizers", *paths, clip, fit, "--tsv")
    check("QK-Clip and a second fit are arms, not one cell twice", s.returncode == 0, s.stderr[-300:])
    if s.returncode != 0:
        return
    b_trains, b_needs2, _, b_adapt, _ = tsv_blocks(s.stdout)
    arms = {r["arm"]: int(r["runs"]) for r in b_trains if r["optimizer"] == "muon" and r["scheme"] == "post"}
    check("the arms none + qk_clip 1 and suboptimality 0.5/5 hold their 2 runs each",
          arms.get("none + qk_clip 1") == 2 and arms.get("suboptimality 0.5/5") == 2
          and arms.get("suboptimality 0/100") == 4, arms)
    check("needs / hurts compare the plain baselines only: unchanged by the extra arms",
          b_needs2 == b_needs, (b_needs2, b_needs))
    pd = os.path.join(tmp, "plots_extra")
    s = run("plot", *paths, clip, fit, "--out", pd, "--format", "gp")
    names = os.listdir(pd) if os.path.isdir(pd) else []
    check("remedy arms of Muon draw optimizers_boundary, not remedies_boundary (Muon's lrs are "
          "not in Adam's units)", s.returncode == 0 and any(n.endswith("-optimizers_boundary.gp") for n in names)
          and not any("remedies_boundary" in n for n in names), (s.returncode, names))
    runs = read_runs(*paths, clip, fit)
    for scheme in ("post", "pre"):
        lines = {a: line(runs, ("muon", scheme, 2, a)) for a in ("suboptimality 0/100", "suboptimality 0.5/5")}
        best = min(lines, key=lambda a: lines[a][4])
        rows = {r["arm"]: r for r in b_adapt if (r["optimizer"], r["scheme"]) == ("muon", scheme)}
        check(f"muon {scheme}: the adaptive column is the better fit's ({best})",
              rows[best]["minus_best_fixed"] != "nan" and all(
                  rows[a]["minus_best_fixed"] == "nan" for a in rows if a != best), rows)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(REPO, "configs", "tiny.ini")
        s1, muon = sweep_in(os.path.join(tmp, "m"), "muon", MUON.format(base=base, d_ff=32))
        s2, adam = sweep_in(os.path.join(tmp, "a"), "adam", ADAM.format(
            base=base, d_ff=32, lrs="1e-2, 3e-2", warmups="1, 20", name="{placement}_lr{lr}_w{warmup}_s{seed}"))
        check("the tiny Muon and Adam sweeps run", s1.returncode == 0 and s2.returncode == 0,
              (s1.stderr[-400:], s2.stderr[-400:]))
        paths = [muon, adam]
        runs = read_runs(*paths)
        s = run("table", "optimizers", *paths, "--tsv")
        check("table optimizers --tsv exits 0 with five blocks", s.returncode == 0
              and len(tsv_blocks(s.stdout)) == 5, s.stderr[-400:])
        if s.returncode == 0 and len(tsv_blocks(s.stdout)) == 5:
            b_trains, b_needs, b_best, b_adapt, b_logit = tsv_blocks(s.stdout)
            test_trains_and_needs(runs, b_trains, b_needs)
            test_best_and_adaptive(runs, b_best, b_adapt)
            test_logit(runs, b_logit)
            test_extra_arms(tmp, base, paths, b_needs)
        s = run("table", "optimizers", *paths)
        check("the Markdown tables name the study's arms and sections",
              s.returncode == 0 and "40 runs: Adam, Muon" in s.stdout and "| Muon | post | 2 | suboptimality 0/100 |"
              in s.stdout and "### Peak max |attention logit|" in s.stdout, s.stdout[:400])
        test_figure(tmp, paths, runs)
        test_refusals(tmp, paths)
    return summary("optimizers_table")


if __name__ == "__main__":
    sys.exit(main())
