#!/usr/bin/python3
"""test_proxies_muon.py — the size study's Muon arm (docs/proxies.md, "Muon across widths";
study/proxies_grid.c), from the repository root: /usr/bin/python3 tests/test_proxies_muon.py

Three tiny sweeps in a temporary directory (configs/tiny.ini as a Pre-LN copy-task model of
widths 8 and 16, heads d/8, 40 updates, seeds 1 and 2): Adam with the standard parametrization
and Adam under μP (Table 3, base width 8) at lr 0.1, 1, 10; Muon (its other tensors by AdamW at
3e-3) on its own grid 1, 10, 100. `stability table proxies` over the three files must read Muon
as an arm of its own (not a context) and print, per arm and width, the numbers recomputed here
from the files read with h5py, from the definitions (docs/proxies.md):
- a run's final loss: its last validation loss, else the mean of the last tenth of its training
  losses (none when diverged); capped: min(final,
  loss_0), a diverged run loss_0; LR sensitivity: the mean over the lrs of the capped losses
  minus the best final loss; the mean and 95 % half-width over 2 seeds (Student t, 1 degree of
  freedom: 12.7062047361747);
- the best lr per seed: the grid's lowest capped loss refined by the vertex of the parabola
  through it and its neighbours in log10 lr (the grid's lr at an edge); geometric mean and
  interval; its spread (max − min of log10 lr* over the widths) and exponent (slope of log10 lr*
  against log10 d) per seed, mean ± half-width;
- the failing lr: linear in log10 lr where the capped loss first exceeds the best by 0.2.
The Adam arm's rows are the same with the Muon file and without it, and the best-lr figure
(`stability plot --format gp`) draws the Muon arm beside standard vs μP with these numbers.
Prints "ok - ..." / "FAIL - ..." per check, then "proxies_muon: N passed, M failed".
"""
import configparser
import math
import os
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, blocks, check, key_titles, run, summary  # noqa: E402

T975_1 = 12.706204736174707   # Student t, 0.975 quantile, 1 degree of freedom
MARGIN = 0.2                  # PROXIES_FAIL_MARGIN
SWEEP = """[sweep]
base = {base}
name = {prefix}d{{d_model}}_lr{{lr}}_s{{seed}}
init.seed = 1, 2
zip = model.d_model, model.heads, model.d_ff
model.d_model = 8, 16
model.heads = 1, 2
model.d_ff = 32, 64
model.placement = pre
model.layers = 2
model.vocab = 32
model.seq_len = 8
data.task = copy
data.batch = 16
train.steps = 40
{extra}"""
ARMS = {"adam": ("", "train.lr = 1e-1, 1, 10\n"),
        "mup": ("mup_", "train.lr = 1e-1, 1, 10\ninit.parametrization = mup\ninit.base_width = 8\n"),
        "muon": ("muon_", "train.lr = 1, 10, 100\ntrain.optimizer = muon\ntrain.muon_adamw_lr = 3e-3\n")}
NAME = {"adam": "standard", "mup": "μP Table 3", "muon": "standard + Muon"}


def read_runs(path, arm):
    """{(d, seed): [(lr, final, loss0, diverged)] ascending in lr} of one merged file."""
    out = {}
    with h5py.File(path, "r") as h:
        for g in h["runs"].values():
            cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
            cfg.read_string(g.attrs["config"])
            t = g["train"]
            status = g.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            div = status == "diverged" or ("diverged_at" in t.attrs and t.attrs["diverged_at"] >= 0)
            loss = [float(x) for x in t["loss"][:]]
            val = [float(x) for x in t["val_loss"][:]] if "val_loss" in t else []
            n = max(len(loss) // 10, 1)   # no validation: the mean of the last tenth
            final = math.nan if div else val[-1] if val and math.isfinite(val[-1]) else sum(loss[-n:]) / n
            key = (int(cfg["model"]["d_model"]), int(cfg["init"]["seed"]))
            out.setdefault(key, []).append((float(cfg["train"]["lr"]), final, float(t["loss"][0]), div))
            if arm == "muon":
                assert cfg["train"]["optimizer"] == "muon"
    return {k: sorted(v) for k, v in out.items()}


def capped(runs):
    return [l0 if div or not math.isfinite(f) else min(f, l0) for _, f, l0, div in runs]


def sensitivity(runs):
    best = min(f for _, f, _, _ in runs if math.isfinite(f))
    return sum(c - best for c in capped(runs)) / len(runs)


def best_lr(runs):
    x, y = [math.log10(r[0]) for r in runs], capped(runs)
    b = min(range(len(y)), key=lambda i: (y[i], i))
    if b in (0, len(y) - 1):
        return 10 ** x[b], 1
    # the vertex of the parabola through the three points (Lagrange form, solved by hand)
    d1, d2 = (y[b] - y[b - 1]) / (x[b] - x[b - 1]), (y[b + 1] - y[b]) / (x[b + 1] - x[b])
    a2 = (d2 - d1) / (x[b + 1] - x[b - 1])
    return 10 ** (0.5 * (x[b - 1] + x[b]) - d1 / (2 * a2)), 0


def fail_lr(runs):
    x, y = [math.log10(r[0]) for r in runs], capped(runs)
    b = min(range(len(y)), key=lambda i: (y[i], i))
    for i in range(b + 1, len(y)):
        if y[i] > y[b] + MARGIN:
            return 10 ** (x[i - 1] + (y[b] + MARGIN - y[i - 1]) / (y[i] - y[i - 1]) * (x[i] - x[i - 1])), 0
    return math.nan, 1


def mean_half(v):
    v = [a for a in v if math.isfinite(a)]
    m = sum(v) / len(v)
    if len(v) < 2:
        return m, math.nan
    sd = math.sqrt(sum((a - m) ** 2 for a in v) / (len(v) - 1))
    return m, T975_1 * sd / math.sqrt(len(v))


def expected(runs):
    """{d: {column: value}} of one arm, the TSV's columns."""
    widths, seeds = sorted({d for d, _ in runs}), sorted({s for _, s in runs})
    out = {}
    lstar = {(d, s): math.log10(best_lr(runs[d, s])[0]) for d in widths for s in seeds}
    spread = [max(lstar[d, s] for d in widths) - min(lstar[d, s] for d in widths) for s in seeds]
    k = [(lstar[widths[1], s] - lstar[widths[0], s]) / (math.log10(widths[1]) - math.log10(widths[0]))
         for s in seeds]
    for d in widths:
        e = {}
        e["sens"], e["sens_half"] = mean_half([sensitivity(runs[d, s]) for s in seeds])
        m, h = mean_half([lstar[d, s] for s in seeds])
        e["best_lr"], e["best_lr_lo"], e["best_lr_hi"] = 10 ** m, 10 ** (m - h), 10 ** (m + h)
        e["best_edge"] = float(any(best_lr(runs[d, s])[1] for s in seeds))
        fl = [fail_lr(runs[d, s]) for s in seeds]
        e["fail_above"] = float(sum(a for _, a in fl))
        finite = [math.log10(f) for f, a in fl if not a]
        e["fail_lr"] = 10 ** mean_half(finite)[0] if finite else math.nan
        e["spread"], e["spread_half"] = mean_half(spread)
        e["k"], e["k_half"] = mean_half(k)
        out[d] = e
    return out


def tsv(*paths):
    s = run("table", "proxies", *paths, "--tsv")
    lines = s.stdout.splitlines()
    head = lines[0].split("\t") if lines else []
    rows = [dict(zip(head, line.split("\t"))) for line in lines[1:]]
    return s, {(r["arm"], int(float(r["d"]))): r for r in rows}, rows


def close(a, b, tol=1e-9):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def test_table(paths, runs):
    s, rows, raw = tsv(*paths.values())
    want = {(NAME[a], d) for a in ARMS for d in (8, 16)}
    check("table proxies: Muon an arm of its own beside standard and μP, one context",
          s.returncode == 0 and set(rows) == want and all(r["context"] == "" for r in raw),
          (s.returncode, s.stderr[-300:], sorted(rows)))
    if set(rows) != want:
        return
    check("the arms in order: Adam's first (standard, μP), Muon after them",
          [r["arm"] for r in raw] == [NAME[a] for a in ("adam", "adam", "mup", "mup", "muon", "muon")],
          [r["arm"] for r in raw])
    bad = [f"{a} d={d} {col}: {rows[NAME[a], d][col]} vs {v}" for a in ARMS
           for d, e in expected(runs[a]).items() for col, v in e.items()
           if not close(float(rows[NAME[a], d][col]), v)]
    check("per arm and width: LR sensitivity, best lr and its interval, edge, failing lr, spread "
          "and exponent across widths = the definitions on the h5py reads (to 1e-9)", not bad, bad[:3])
    mu = expected(runs["muon"])
    print(f"#   Muon: best lr {mu[8]['best_lr']:.4g} (d 8), {mu[16]['best_lr']:.4g} (d 16); "
          f"spread {mu[8]['spread']:.4f} ± {mu[8]['spread_half']:.4f} decades, k {mu[8]['k']:.4f}; "
          f"sensitivity {mu[8]['sens']:.4f}, {mu[16]['sens']:.4f}")
    check("Muon's best lr is inside its own grid at both widths (the parabola, not the edge)",
          mu[8]["best_edge"] == 0 and mu[16]["best_edge"] == 0 and 1 < mu[8]["best_lr"] < 100)
    s2, alone, _ = tsv(paths["adam"], paths["mup"])
    check("the Adam arms' rows are the same with the Muon file and without it",
          all(alone[k] == rows[k] for k in alone) and len(alone) == 4, s2.stderr[-300:])
    md = run("table", "proxies", *paths.values()).stdout
    check("the Markdown tables name the Muon arm", md.count("| standard + Muon |") >= 4, md[:400])


def test_figure(tmp, paths, runs):
    pd = os.path.join(tmp, "plots")
    s = run("plot", *paths.values(), "--out", pd, "--format", "gp")
    gp = os.path.join(pd, "adam-size_best_lr.gp")
    check("stability plot draws the best-lr figure", s.returncode == 0 and os.path.exists(gp),
          s.stderr[-400:])
    if not os.path.exists(gp):
        return
    text = open(gp).read()
    b = blocks(text)
    check("its title and key: standard vs μP vs Muon",
          "standard vs μP vs Muon" in text and "standard + Muon" in key_titles(text), key_titles(text))
    e = expected(runs["muon"])
    got = b.get("b0_2", [])
    check("the Muon arm's line: per width the geometric mean of the seeds' best lrs and its interval",
          len(got) == 2 and all(close(r[0], d) and close(r[2], e[d]["best_lr"], 1e-8) and
                                close(r[3], e[d]["best_lr_lo"], 1e-8) and close(r[4], e[d]["best_lr_hi"], 1e-8)
                                for r, d in zip(got, (8, 16))), got)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        paths, runs = {}, {}
        for a, (prefix, extra) in ARMS.items():
            ini = os.path.join(tmp, f"{a}.ini")
            with open(ini, "w") as f:
                f.write(SWEEP.format(base=os.path.join(REPO, "configs", "tiny.ini"), prefix=prefix, extra=extra))
            s = run("sweep", ini, "--jobs", "1", "--quiet", cwd=tmp)
            check(f"the tiny {a} sweep runs", s.returncode == 0, s.stderr[-400:])
            paths[a] = os.path.join(tmp, "results", f"{a}.h5")
            runs[a] = read_runs(paths[a], a)
        test_table(paths, runs)
        test_figure(tmp, paths, runs)
    return summary("proxies_muon")


if __name__ == "__main__":
    sys.exit(main())
