#!/usr/bin/python3
"""test_proxies_plot.py — the size study's figures (docs/proxies.md; src/study/proxies_*.c),
from the repository root: /usr/bin/python3 tests/test_proxies_plot.py

1. A trial-sized sweep run here (the `tiny` model on the copy task, widths 16, 32, 64 with
   d_head = 8 and d_ff = 4d, x {standard, QK-norm, muP} x lr 1e-3, 1e-2, 1e-1 x seeds 1, 2, 20
   updates: 54 runs in seconds): `stability plot` draws size_lr, size_sensitivity, size_best_lr
   and size_logit as PNG, PDF and SVG; the keys name the widths (size_lr, size_logit) and the
   remedies (size_sensitivity, size_best_lr), the panels the remedies; every LR sensitivity the
   figure draws (mean and 95 % half-width over the seeds) equals the definition recomputed here
   from the files (h5py) within 1e-9, and so do the best lr (geometric mean of the seeds' parabola-refined minima) and
   the peak attention logit (median over the seeds).
2. Constructed files (h5py) whose numbers are known: the sensitivity against its definition
   (mean over lr of min(final, loss_0) - best; diverged = loss_0) and the 95 % half-width of
   Student t with 1 degree of freedom (12.706); a diverged seed excluded from the mean, marked x at
   its lr and keyed, and no mark, key or caption when none diverged; a final loss above the
   initial loss drawn at it and keyed; two blocks at once: *_by_block figures, a row of panels
   per block, QK-norm one arm ("QK-RMSNorm" in today's block's panel titles; with no μP arm the
   remedies alone name the arms); runs of one width draw no size figure.
3. The study's own trial sweep files (experiments/proxies_{2017,llama}_trial.ini, 54 runs each),
   cut to 10 updates of 4 sequences and run in a temporary directory: every sensitivity, best lr
   and peak logit the figures draw equals the definitions recomputed from the files.
In 1 and 3, `stability table proxies --tsv` too: every arm and width's sensitivity, best lr,
failing lr and seeds above the grid equal the definitions recomputed from the files.
Prints "ok - ..." / "FAIL - ..." per check, then "proxies plot: N passed, M failed".
"""
import configparser
import math
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import (BIN, REPO, check, run, blocks, key_titles, panel_titles,  # noqa: E402
                        summary, sweep_in)
T975_1 = 12.706204736174707   # Student t, 0.975 quantile, 1 degree of freedom
FIGS = ("size_lr", "size_sensitivity", "size_best_lr", "size_logit")


def read(path):
    return open(path).read() if os.path.exists(path) else ""


# ---- the oracle: the study's numbers from the definitions, read here with h5py -----------------

def t975(df):
    """Student t's 0.975 quantile in closed form for 1 and 2 degrees of freedom (2 or 3 seeds)."""
    return {1: math.tan(math.pi * 0.475), 2: 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025))}[df]


def mean_ci(v):
    """Mean and 95 % half-width (Student t) of the finite values; (nan, nan) when none."""
    v = [x for x in v if np.isfinite(x)]
    if not v:
        return math.nan, math.nan
    if len(v) < 2:
        return float(v[0]), math.nan
    return float(np.mean(v)), t975(len(v) - 1) * float(np.std(v, ddof=1)) / math.sqrt(len(v))


def oracle_runs(files):
    """{(block, arm): {d: {seed: [(lr, final, loss0, peak logit, diverged)] by lr}}} from the
    files' stored configs and /train: block '2017' or 'today' by the four block keys, arm the
    figures' words (standard, standard + QK-norm / QK-RMSNorm, μP); final the last validation
    loss (NaN when diverged), loss0 the first training loss, the peak the largest finite
    /train/max_attn_logit."""
    out = {}
    for path in files:
        with h5py.File(path, "r") as f:
            for g in f["runs"].values():
                cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
                text = g.attrs["config"]
                cfg.read_string(text.decode() if isinstance(text, bytes) else text)
                t = g["train"]
                status = g.attrs["status"]
                div = (status.decode() if isinstance(status, bytes) else status) == "diverged"
                val, loss = t["val_loss"][:] if "val_loss" in t else [], t["loss"][:]
                final = (math.nan if div else float(val[-1]) if len(val) and np.isfinite(val[-1])
                         else float(np.mean(loss[-max(len(loss) // 10, 1):])))
                logit = t["max_attn_logit"][:]
                logit = logit[np.isfinite(logit)]
                block = "today" if cfg.get("model", "norm", fallback="layernorm") == "rmsnorm" else "2017"
                qk = cfg.get("model", "qk_norm", fallback="off")
                param = cfg.get("init", "parametrization", fallback="standard")
                arm = (("μP" if param.startswith("mup") else "standard")
                       + {"off": "", "rmsnorm": " + QK-RMSNorm"}.get(qk, " + QK-norm"))
                d, seed = int(cfg["model"]["d_model"]), int(cfg.get("init", "seed", fallback="1"))
                out.setdefault((block, arm), {}).setdefault(d, {}).setdefault(seed, []).append(
                    (float(cfg["train"]["lr"]), final, float(t["loss"][0]),
                     float(logit.max()) if len(logit) else math.nan, div))
    for sizes in out.values():
        for seeds in sizes.values():
            for k in seeds:
                seeds[k].sort()
    return out


def oracle_sens(rs):
    """Wortsman et al.'s LR sensitivity (docs/design.md §6c): the mean over the lrs of
    min(final, loss0), a diverged run its loss0, minus the best final loss."""
    capped = [r[2] if not np.isfinite(r[1]) else min(r[1], r[2]) for r in rs]
    fin = [r[1] for r in rs if np.isfinite(r[1])]
    return float(np.mean(capped)) - min(fin) if fin else math.nan


def oracle_best_lr(rs):
    """log10 of the best lr: the grid minimum of the capped losses, refined by the vertex of the
    parabola through it and its neighbours in log10 lr (the grid's point at an edge)."""
    x = [math.log10(r[0]) for r in rs]
    c = [r[2] if not np.isfinite(r[1]) else min(r[1], r[2]) for r in rs]
    b = int(np.argmin(c))
    if b in (0, len(c) - 1):
        return x[b]
    a2, a1, _ = np.polyfit(x[b - 1:b + 2], c[b - 1:b + 2], 2)
    return x[b] if a2 <= 0 else -a1 / (2 * a2)


def compare_with_oracle(tag, files, gp_sens, gp_best, gp_logit):
    """The numbers the figures draw against the oracle's, arm by arm and width by width:
    sensitivity mean and half-width, the best lr's geometric mean, the peak logit's median."""
    runs = oracle_runs(files)
    names = key_titles(gp_sens)
    bs, bb, bl = blocks(gp_sens), blocks(gp_best), blocks(gp_logit)
    blocks_in = sorted({b for b, _ in runs})
    generic = lambda a: a.replace("QK-RMSNorm", "QK-norm")   # one arm in the key
    worst_s = worst_b = worst_l = 0.0
    count = 0
    for (block, arm), sizes in runs.items():
        c = blocks_in.index(block)
        a = names.index(generic(arm)) if generic(arm) in names else names.index(arm)
        rows = {int(r[0]): r for r in bs.get(f"s{c}_{a}", [])}
        brow = {int(r[0]): r for r in bb.get(f"b{c}_{a}", [])}
        widths = sorted({d for sz in runs.values() for d in sz})
        for w, d in enumerate(widths):
            if d not in sizes:
                continue
            m, h = mean_ci([oracle_sens(rs) for rs in sizes[d].values()])
            r = rows.get(d)
            if r is None:
                worst_s = math.inf
                continue
            worst_s = max(worst_s, abs(r[2] - m), abs(r[5] - h) if np.isfinite(h) else 0.0)
            count += 1
            if d in brow:
                g = mean_ci([oracle_best_lr(rs) for rs in sizes[d].values()])[0]
                worst_b = max(worst_b, abs(math.log10(brow[d][2]) - g))
            for row in bl.get(f"v{c}_{a}_{w}", []):
                v = [x[3] for rs in sizes[d].values() for x in rs if x[0] == row[4] and np.isfinite(x[3])]
                worst_l = max(worst_l, abs(row[1] - np.median(v)) / np.median(v))
    check(f"{tag}: every LR sensitivity size_sensitivity draws (mean, 95 % half-width) = the "
          f"definition recomputed from the files ({count} arm × width points)",
          count and worst_s < 1e-9, f"worst difference {worst_s:.2e}")
    check(f"{tag}: size_best_lr's geometric mean of the seeds' best lr = the parabola's vertex "
          "recomputed", worst_b < 1e-9, f"worst |Δ log10| {worst_b:.2e}")
    check(f"{tag}: size_logit's median peak attention logit = the seeds' maxima's median",
          worst_l < 1e-9, f"worst relative difference {worst_l:.2e}")


def oracle_fail(rs, margin=0.2):
    """(log10 lr_fail, above): the lr above the best at which the capped loss first exceeds the
    best by more than margin, linear in log10 lr between the grid's points; above the grid when
    none does (docs/proxies.md)."""
    x = [math.log10(r[0]) for r in rs]
    c = [r[2] if not np.isfinite(r[1]) else min(r[1], r[2]) for r in rs]
    b = int(np.argmin(c))
    for i in range(b + 1, len(c)):
        if c[i] > c[b] + margin:
            return x[i - 1] + (c[b] + margin - c[i - 1]) / (c[i] - c[i - 1]) * (x[i] - x[i - 1]), False
    return x[-1], True


def compare_table_with_oracle(tag, files):
    """`stability table proxies --tsv` of the files against the oracle, arm by arm and width by
    width: sensitivity mean and half-width, the best lr's and the failing lr's geometric means,
    the seeds above the grid; and the Markdown tables print."""
    runs = oracle_runs(files)
    r = run("table", "proxies", *files, "--tsv")
    lines = r.stdout.splitlines()
    cols = lines[0].split("\t") if lines else []
    got = [dict(zip(cols, l.split("\t"))) for l in lines[1:]]
    generic = lambda a: a.replace("QK-RMSNorm", "QK-norm")
    worst, n = 0.0, 0
    for g in got:
        block = ("today" if g["context"].startswith("today") else "2017" if g["context"]
                 else next(iter(runs))[0])   # one block: no context
        sizes = {generic(a): v for (b, a), v in runs.items() if b == block}.get(generic(g["arm"]), {})
        seeds = sizes.get(int(float(g["d"])), {})
        if not seeds:
            worst = math.inf
            continue
        m, h = mean_ci([oracle_sens(rs) for rs in seeds.values()])
        best = mean_ci([oracle_best_lr(rs) for rs in seeds.values()])[0]
        fails = [oracle_fail(rs) for rs in seeds.values()]
        fail = mean_ci([f for f, above in fails if not above])[0]
        above = sum(a for _, a in fails)
        d = [abs(float(g["sens"]) - m), abs(math.log10(float(g["best_lr"])) - best)]
        if np.isfinite(h):
            d.append(abs(float(g["sens_half"]) - h))
        if np.isfinite(fail):
            d.append(abs(math.log10(float(g["fail_lr"])) - fail))
        worst = max(worst, *d, 0.0 if int(float(g["fail_above"])) == above else math.inf)
        n += 1
    want = sum(len(sz) for sz in runs.values())
    check(f"{tag}: table proxies --tsv: every arm and width's sensitivity (mean, half-width), best "
          f"and failing lr and the seeds above the grid = the definitions recomputed ({n} of {want} rows)",
          r.returncode == 0 and n == want == len(got) and worst < 1e-9,
          f"worst {worst:.2e}; {r.stderr.strip()[-300:]}")
    r = run("table", "proxies", *files)
    check(f"{tag}: table proxies prints its Markdown tables", r.returncode == 0
          and all(t in r.stdout for t in ("### LR sensitivity per width", "### Where each width fails",
                                          "### Peak max |attention logit|")), r.stderr.strip()[-300:])


# ---- 1. a trial-sized sweep --------------------------------------------------------------------

SWEEP = """[sweep]
base = configs/tiny.ini
name = d{d_model}_{parametrization}_qk{qk_norm}_lr{lr}_s{seed}
init.seed = 1, 2
zip = model.d_model, model.heads, model.d_ff, init.parametrization, model.qk_norm, init.base_width
model.d_model = 16, 16, 16, 32, 32, 32, 64, 64, 64
model.heads = 2, 2, 2, 4, 4, 4, 8, 8, 8
model.d_ff = 64, 64, 64, 128, 128, 128, 256, 256, 256
init.parametrization = standard, standard, mup_simple, standard, standard, mup_simple, standard, standard, mup_simple
model.qk_norm = off, layernorm, off, off, layernorm, off, off, layernorm, off
init.base_width = 0, 0, 16, 0, 0, 16, 0, 0, 16
train.lr = 1e-3, 1e-2, 1e-1
model.layers = 2
model.placement = pre
data.task = copy
train.optimizer = adamw
train.steps = 20
train.warmup = 5
"""


def test_sweep(tmp):
    name = "proxies_plot_test"
    r, merged = sweep_in(tmp, name, SWEEP)
    check("the 54-run size sweep runs and merges", r.returncode == 0 and os.path.exists(merged),
          r.stderr[-400:])
    if r.returncode:
        return
    pd = os.path.join(tmp, "plots")
    r = run("plot", merged, "--out", pd, "--format", "png,pdf,svg,gp")
    files = {f: [os.path.join(pd, f"{name}-{f}.{x}") for x in ("png", "pdf", "svg")] for f in FIGS}
    svg_ok = all(os.path.exists(p[2]) and ET.parse(p[2]) is not None for p in files.values())
    check("stability plot draws the four size figures as PNG, PDF and SVG (well-formed)",
          r.returncode == 0 and all(os.path.getsize(x) > 0 for p in files.values() for x in p
                                    if os.path.exists(x))
          and all(os.path.exists(x) for p in files.values() for x in p) and svg_ok, r.stderr[-300:])
    gp = {f: read(os.path.join(pd, f"{name}-{f}.gp")) for f in FIGS}
    widths = ["d = 16", "d = 32", "d = 64"]
    arms = ["standard", "standard + QK-norm", "μP"]
    for f in ("size_lr", "size_logit"):
        check(f"{f}: the key names the widths in order, the panels the remedies",
              key_titles(gp[f]) == widths and panel_titles(gp[f]) == arms,
              f"{key_titles(gp[f])} {panel_titles(gp[f])}")
    check("size_sensitivity: the key names the remedies", key_titles(gp["size_sensitivity"]) == arms,
          str(key_titles(gp["size_sensitivity"])))
    check("size_best_lr: standard vs μP (the pair of parametrizations), each seed keyed",
          key_titles(gp["size_best_lr"]) == ["standard", "μP", "one seed"],
          str(key_titles(gp["size_best_lr"])))
    title = re.search(r'set multiplot title "([^"]*)', gp["size_lr"]).group(1)
    check("size_lr's title says what it is and whose figure: Wortsman et al. 2023, Fig. 1",
          "Final loss vs learning rate by width, a panel per remedy (Wortsman et al. 2023, Fig. 1)"
          in title and "mean of 2 seeds, bars: 95 % CI" in title and "diverged" not in title, title)
    check("axes: lr on a log axis, width on a log-2 axis with a tic per width, logit log",
          "set logscale x\n" in gp["size_lr"] and "set logscale x 2" in gp["size_sensitivity"]
          and "set xtics (16, 32, 64)" in gp["size_sensitivity"]
          and "set logscale y" in gp["size_logit"] and "set logscale y" in gp["size_best_lr"])
    compare_with_oracle("trial-sized sweep", [merged], gp["size_sensitivity"], gp["size_best_lr"],
                        gp["size_logit"])
    compare_table_with_oracle("trial-sized sweep", [merged])


# ---- 2. constructed files ----------------------------------------------------------------------

LRS = [1e-3, 1e-2, 1e-1]
LOSS0 = 5.5


def write_study(path, finals, block="2017", logits=None):
    """A merged file of runs {(d, arm, lr, seed): final} (final None: diverged), arm 'standard' or
    'qk'; max_attn_logit of each run [1, peak, NaN] (logits[(d, arm, lr, seed)], default 10)."""
    with h5py.File(path, "w") as f:
        for (d, arm, lr, s), fin in finals.items():
            qk = "off" if arm == "standard" else ("layernorm" if block == "2017" else "rmsnorm")
            extra = ("positions = rope\nactivation = swiglu\nbias = off\nnorm = rmsnorm\n"
                     if block == "today" else "activation = gelu\n")
            g = f.create_group(f"runs/{block}_d{d}_{arm}_lr{lr:g}_s{s}")
            g.attrs["config"] = (f"[model]\nlayers = 2\nd_model = {d}\nheads = {d // 32}\n"
                                 f"d_ff = {4 * d}\nplacement = pre\nqk_norm = {qk}\n{extra}"
                                 f"[init]\nseed = {s}\n[train]\nlr = {lr!r}\nwarmup = 5\n"
                                 f"steps = 3\noptimizer = adamw\n")
            g.attrs["status"] = "diverged" if fin is None else "done"
            t = g.create_group("train")
            t["step"] = np.array([1.0, 2.0, 3.0])
            t["loss"] = np.array([LOSS0, 3.0, np.nan if fin is None else 2.5])
            t["lr"] = np.array([lr, lr, lr])
            t["eval_step"] = np.array([3.0])
            t["val_loss"] = np.array([np.nan if fin is None else fin])
            peak = (logits or {}).get((d, arm, lr, s), 10.0)
            t["max_attn_logit"] = np.array([1.0, peak, np.nan])
            t["min_attn_entropy"] = np.array([2.0, 1.0, np.nan])
            if fin is None:
                t.attrs["diverged_at"] = 3.0


def sens(fins):
    """The definition (docs/design.md §6c): fins over the lr grid, None = diverged."""
    capped = [LOSS0 if x is None else min(x, LOSS0) for x in fins]
    return np.mean(capped) - min(x for x in fins if x is not None)


def plot_gp(tmp, tag, *paths):
    pd = os.path.join(tmp, tag)
    r = run("plot", *paths, "--out", pd, "--format", "gp")
    prefix = os.path.splitext(os.path.basename(paths[0]))[0]
    return r, (lambda fig: read(os.path.join(pd, f"{prefix}-{fig}.gp"))), pd


def constructed_finals():
    fin = {}
    for d in (32, 64):
        for arm in ("standard", "qk"):
            for s in (1, 2):
                base = 2.0 + 0.1 * s + (0.05 if arm == "qk" else 0.0) + (0.02 * d / 32)
                for i, lr in enumerate(LRS):
                    fin[d, arm, lr, s] = base + (0.0, -0.2, 1.0 + 0.3 * s)[i]
    return fin


def test_constructed(tmp):
    fin = constructed_finals()
    fin[64, "standard", 1e-1, 2] = None          # a seed diverges
    logits = {(32, "standard", 1e-1, 1): 400.0, (32, "standard", 1e-1, 2): 100.0}
    path = os.path.join(tmp, "div.h5")
    write_study(path, fin, logits=logits)
    r, gp, _ = plot_gp(tmp, "div", path)
    check("constructed study: plotted, the four size figures", r.returncode == 0
          and all(gp(f) for f in FIGS), r.stderr[-300:])
    b = blocks(gp("size_sensitivity"))
    worst = 0.0
    for a, arm in enumerate(("standard", "qk")):
        rows = {int(x[0]): x for x in b.get(f"s0_{a}", [])}
        for d in (32, 64):
            per = [sens([fin[d, arm, lr, s] for lr in LRS]) for s in (1, 2)]
            m, h = np.mean(per), T975_1 * np.std(per, ddof=1) / math.sqrt(2)
            worst = max(worst, abs(rows[d][2] - m), abs(rows[d][5] - h)) if d in rows else math.inf
    check("size_sensitivity draws the definition's sensitivity and Student t's half-width "
          "(t(0.975, 1) = 12.706)", worst < 1e-9, f"worst {worst:.2e}")
    lr_gp = gp("size_lr")
    v = blocks(lr_gp)
    row = [x for x in v["v0_0_1"] if abs(x[4] - 0.1) < 1e-12]
    x = v.get("x0_0_1", [])
    others = [k for k, rows in v.items() if k.startswith("x") and rows and k != "x0_0_1"]
    check("a diverged seed: left out of the mean (the other seed's loss), marked × at its lr, "
          "keyed and said in the subtitle", row and abs(row[0][1] - fin[64, "standard", 0.1, 1]) < 1e-9
          and len(x) == 1 and abs(math.log10(x[0][0]) + 1) < 0.05 and not others
          and "a seed diverged there" in key_titles(lr_gp) and "×: a seed diverged" in lr_gp,
          f"{row} {x} {others}")
    lg = blocks(gp("size_logit"))
    row = [x for x in lg["v0_0_0"] if abs(x[4] - 0.1) < 1e-12]
    check("size_logit: the median of the seeds' peak max |attention logit| (250 of 400 and 100), "
          "bars their range", row and row[0][1:4] == [250.0, 100.0, 400.0], str(row))
    path = os.path.join(tmp, "clean.h5")
    write_study(path, constructed_finals())
    r, gp, _ = plot_gp(tmp, "clean", path)
    lr_gp = gp("size_lr")
    check("no divergence: no ×, no key entry, no caption for it",
          r.returncode == 0 and lr_gp and "diverged" not in lr_gp and "×" not in lr_gp
          and not any(rows for k, rows in blocks(lr_gp).items() if k.startswith("x")))
    high = constructed_finals()
    high[32, "qk", 1e-1, 1] = high[32, "qk", 1e-1, 2] = 9.0
    path = os.path.join(tmp, "high.h5")
    write_study(path, high)
    r, gp, _ = plot_gp(tmp, "high", path)
    row = [x for x in blocks(gp("size_lr")).get("v0_1_0", []) if abs(x[4] - 0.1) < 1e-12]
    check("a mean above the initial loss: drawn at it (5.5), flagged and keyed",
          row and row[0][1] == LOSS0 and row[0][5] == 1 and "above the initial loss" in
          key_titles(gp("size_lr")), str(row))
    # two blocks at once
    p1, p2 = os.path.join(tmp, "b2017.h5"), os.path.join(tmp, "btoday.h5")
    write_study(p1, constructed_finals())
    write_study(p2, constructed_finals(), block="today")
    r, gp, pd = plot_gp(tmp, "blocks", p1, p2)
    names = sorted(f for f in os.listdir(pd) if f.endswith(".gp"))
    t = panel_titles(gp("size_lr_by_block"))
    check("two blocks: *_by_block figures, a row of panels per block, QK-norm one arm "
          "(QK-RMSNorm in today's block)", r.returncode == 0
          and all(f"b2017-{f}_by_block.gp" in names for f in FIGS)
          and t == ["2017 block\nstandard", "2017 block\nQK-norm", "today's block\nstandard",
                    "today's block\nQK-RMSNorm"]
          and key_titles(gp("size_sensitivity_by_block")) == ["standard", "QK-norm"]
          and panel_titles(gp("size_sensitivity_by_block")) == ["2017 block", "today's block"],
          f"{names} {t}")
    one = {k: v for k, v in constructed_finals().items() if k[0] == 32}
    path = os.path.join(tmp, "one.h5")
    write_study(path, one)
    r, gp, pd = plot_gp(tmp, "one", path)
    check("runs of one width: no size figure", r.returncode == 0
          and not any("-size_" in f for f in os.listdir(pd)), r.stderr[-300:])


# ---- 3. the study's trial files ----------------------------------------------------------------

TRIAL_STEPS = 10   # the trial's 300 updates cut to 10, its batch to 4 sequences of 16: seconds


def test_trials(tmp):
    """The study's own trial sweep files (experiments/proxies_{2017,llama}_trial.ini: its names,
    widths, arms, lrs, seeds, block keys, float32), shortened and run here, each file's figures
    against the definitions recomputed from the files."""
    for b in ("2017", "llama"):
        name = f"proxies_{b}_trial"
        with open(os.path.join(REPO, "experiments", name + ".ini")) as f:
            text = f.read()
        text, n = re.subn(r"^train\.steps *=.*$", f"train.steps = {TRIAL_STEPS}", text, flags=re.M)
        text += "data.batch = 4\nmodel.seq_len = 16\n"
        d = os.path.join(tmp, "trial_" + b)
        r, merged = sweep_in(d, name, text)
        runs = 0
        if r.returncode == 0 and n == 1:
            with h5py.File(merged, "r") as f:
                runs = len(f["runs"])
        check(f"{name}.ini at {TRIAL_STEPS} updates runs and merges its 54 runs", runs == 54,
              f"{runs} runs; {r.stderr[-300:]}")
        if runs != 54:
            continue
        r, gp, _ = plot_gp(d, name, merged)
        compare_with_oracle(name, [merged], gp("size_sensitivity"), gp("size_best_lr"),
                            gp("size_logit"))
        compare_table_with_oracle(name, [merged])


def main():
    if not os.access(BIN, os.X_OK):
        print(f"{BIN}: not built (make stability)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        test_constructed(tmp)
        test_sweep(tmp)
        test_trials(tmp)
    return summary("proxies plot")


if __name__ == "__main__":
    sys.exit(main())
