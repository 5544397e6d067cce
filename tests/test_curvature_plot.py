#!/usr/bin/python3
"""test_curvature_plot.py — the curvature's figures (docs/curvature.md "Figures";
src/report/plot_curvature.c), from the repository root: /usr/bin/python3 tests/test_curvature_plot.py

Tiny runs made here (the `tiny` model, a curvature row every 2 updates, 8 Lanczos steps, 3 per
block), drawn by `stability plot --format gp` (the gnuplot script, its data inline) and read back:

1. curv_lens, on Fig. 2's set (Post-LN without and with warm-up, Pre-LN, Post-LN with GI-Adam):
   every point drawn is /train/precond_max_active / stability_threshold of its run at its
   curv_step (read with h5py, within 1e-9 relative), the key names what differs (scheme, warm-up,
   optimizer) and nothing else, the title says Fig. 2, the y axis is logarithmic, the line at 1 is
   drawn and keyed "stability threshold".
2. curv_init_depth, on Post-LN and Pre-LN at L = 2, 3 and two learning rates: a line per scheme,
   a point per depth whose value is /train/hessian_max[0] of its runs; the two learning rates'
   runs give the same λ_max(H) at θ_0 bit for bit (it does not depend on the lr), drawn as one
   point and said so in the subtitle. Probe files (train.steps = 0, two seeds): the point is the
   mean of /probe/hessian_max over the seeds, with the seeds' range as bars.
3. curv_blocks: every cell is the max over kinds of /train/hessian_block_max (first panel row)
   and precond_block_max (second) at its row and layer; the layer axis has an "outside" row.
4. No figure without its data: runs without curvature draw no curv_*; with
   probe.curvature_block_iters = 0 no curv_blocks; runs of one depth no curv_init_depth; one
   curvature row (update 0 only) no curv_lens.
5. The PNGs render (gnuplot exits 0, files non-empty).
6. curv_lens of 18 runs (two schemes × three depths × three learning rates): a panel per scheme,
   the key a colour per lr and a marker per depth (plot_keys_factored), every curve drawn in its
   lr's colour and its depth's marker (matched to its run by its points).
Prints "ok - ..." / "FAIL - ..." per check, then "curvature plot: N passed, M failed".
"""
import math
import os
import re
import shutil
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import BIN, check, run, blocks, key_titles, summary  # noqa: E402
CURV = {"train.steps": 6, "probe.curvature_every": 2, "probe.curvature_iters": 8,
        "probe.curvature_block_iters": 3, "train.schedule": "constant", "train.lr": 1e-2}


def train(path, **keys):
    sets = []
    for k, v in keys.items():
        sets += ["--set", f"{k.replace('__', '.')}={v}"]
    r = run("--config", "tiny", *sets, "--out", path, "--quiet")
    if r.returncode:
        raise SystemExit(f"stability failed on {path}: {r.stderr}")
    return path


def plot(files, out, fmt="gp"):
    r = run("plot", *files, "--out", out, "--format", fmt, "--quiet")
    return r


def figure(out, name):
    hits = [f for f in os.listdir(out) if f.endswith(f"-{name}.gp")] if os.path.isdir(out) else []
    return open(os.path.join(out, hits[0])).read() if hits else ""


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def lens(tmp):
    d = os.path.join(tmp, "fig2")
    os.makedirs(d)
    runs = {"Post-LN, Adam, no warm-up": dict(model__placement="post", train__warmup=1),
            "Post-LN, Adam, warm-up 4": dict(model__placement="post", train__warmup=4),
            "Pre-LN, Adam, no warm-up": dict(model__placement="pre", train__warmup=1),
            "Post-LN, GI-Adam, no warm-up": dict(model__placement="post", train__warmup=1,
                                                 train__optimizer="gi_adam")}
    files = {}
    for i, (key, keys) in enumerate(runs.items()):
        files[key] = train(os.path.join(d, f"r{i}.h5"), **{k.replace(".", "__"): v
                                                        for k, v in CURV.items()}, **keys)
    out = os.path.join(d, "out")
    r = plot(list(files.values()), out)
    check("plot exits 0 on Fig. 2's set", r.returncode == 0, r.stderr)
    gp = figure(out, "curv_lens")
    check("curv_lens drawn", bool(gp))
    keys = key_titles(gp)
    check("curv_lens: a key per run naming what differs, and the threshold's",
          sorted(keys) == sorted(list(runs) + ["stability threshold (ratio 1)"]), keys)
    data = blocks(gp)
    worst, rows = 0.0, 0
    for k, key in enumerate(keys[:-1]):   # key k is block $c<k> (one run a key)
        with h5py.File(files[key], "r") as f:
            t = f["train"]
            ratio = t["precond_max_active"][:] / t["stability_threshold"][:]
            want = [(float(s), float(v)) for s, v in zip(t["curv_step"][:], ratio)
                    if np.isfinite(v) and v > 0]
        got = data.get(f"c{k}", [])
        if len(got) != len(want) or any(g[0] != w[0] for g, w in zip(got, want)):
            worst = math.inf
            continue
        for g, w in zip(got, want):
            worst = max(worst, rel(g[1], w[1]))
            rows += 1
    check(f"curv_lens: every point = precond_max_active / stability_threshold at curv_step "
          f"({rows} points, worst relative {worst:.1e} ≤ 1e-9)", rows >= 12 and worst <= 1e-9)
    above = any(r[1] > 1 for b in data.values() for r in b)
    check("curv_lens: some run above the threshold at update 0 (lr 1e-2, no warm-up)", above)
    check("curv_lens: Fig. 2's set named in the title", "Fig. 2 through the curvature lens" in gp)
    check("curv_lens: log y and the line at 1", "set logscale y" in gp and
          re.search(r"^plot 1 with lines", gp, re.M) and "'stability threshold'" in gp)
    blocks_figure(out, files)
    return d, files


def blocks_figure(out, files):
    gp = figure(out, "curv_blocks")
    check("curv_blocks drawn for four runs with block rows", bool(gp))
    data = blocks(gp)
    titles = re.findall(r'^set title "((?:[^"\\]|\\.)*)"', gp, re.M)
    worst, cells, bad = 0.0, 0, []
    for i in range(4):   # column i: the run its top panel's title names
        t = titles[i]
        path = files.get(t)
        if not path:
            bad.append(t)
            continue
        with h5py.File(path, "r") as f:
            steps = f["train/curv_step"][:]
            for p, name in enumerate(("hessian_block_max", "precond_block_max")):
                x = f["train"][name][:]
                for row in data.get(f"b{p}_{i}", []):
                    k = int(np.where(steps == row[3])[0][0])   # the column ends at its update
                    v = x[k, int(row[1]) - 1]
                    want = np.nanmax(np.where(np.isfinite(v), v, -np.inf))
                    worst = max(worst, rel(row[6], want))
                    cells += 1
                n_want = sum(np.nanmax(np.where(np.isfinite(x[k, l]), x[k, l], -np.inf)) > 0
                             for k in range(len(steps)) for l in range(x.shape[1]))
                if len(data.get(f"b{p}_{i}", [])) != n_want:
                    bad.append(f"{t} {name}: {len(data.get(f'b{p}_{i}', []))} cells, want {n_want}")
    check(f"curv_blocks: every cell = max over kinds of hessian_block_max / precond_block_max "
          f"({cells} cells, worst relative {worst:.1e} ≤ 1e-9)", cells > 0 and worst <= 1e-9 and
          not bad, bad)
    cb = re.findall(r"^set cblabel '([^']*)'", gp, re.M)
    check("curv_blocks: a panel row per quantity (H, then the active P^-1 H), each its labelled "
          "colour bar; a column per run; the layer axis has 'outside'",
          len(cb) == 2 and cb[0].startswith("λ_{max}(H_{bb})") and "(P^{−1}H)" in cb[1] and
          "active" in cb[1] and len(titles) == 4 and "'outside'" in gp, f"{cb} {titles}")


def init_depth(tmp):
    d = os.path.join(tmp, "depth")
    os.makedirs(d)
    files = []
    for pl in ("post", "pre"):
        for L in (2, 3):
            for lr in (1e-3, 1e-2):
                files.append(train(os.path.join(d, f"{pl}_{L}_{lr}.h5"), model__placement=pl,
                                   model__layers=L, train__lr=lr, train__steps=1,
                                   probe__curvature_every=1, probe__curvature_iters=8,
                                   probe__curvature_block_iters=0))
    out = os.path.join(d, "out")
    r = plot(files, out)
    gp = figure(out, "curv_init_depth")
    check("curv_init_depth drawn (two depths, update-0 rows)", r.returncode == 0 and bool(gp), r.stderr)
    keys = key_titles(gp)
    check("curv_init_depth: a line per scheme, keyed by it", keys == ["Post-LN", "Pre-LN"], keys)
    want = {}
    for p in files:
        with h5py.File(p, "r") as f:
            cfg = f.attrs["config"]
            cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
            pl = "Post-LN" if "placement = post" in cfg else "Pre-LN"
            L = int(re.search(r"^layers = (\d+)", cfg, re.M).group(1))
            want.setdefault((pl, L), []).append(float(f["train/hessian_max"][0]))
    same = all(len(set(v)) == 1 for v in want.values())
    check("λ_max(H) at θ_0: the two learning rates' runs agree bit for bit", same, want)
    data = blocks(gp)
    bad = []
    for j, key in enumerate(keys):
        got = {int(r[0]): r for r in data.get(f"i{j}", [])}
        for L in (2, 3):
            w = want[(key, L)]
            g = got.get(L)
            if not g or rel(g[1], np.mean(w)) > 1e-9 or g[4] != len(w):
                bad.append((key, L, g, w))
    check("curv_init_depth: each point = /train/hessian_max[0] of its runs (1e-9), 2 runs each",
          not bad, bad)
    check("curv_init_depth: the subtitle says the lrs' runs agree (one point), no bars",
          "equal to the last bit" in gp and "yerrorlines" not in gp and "differ in lr" in gp)
    # probe files: two seeds each, the point is their mean, bars their range
    probes = [train(os.path.join(d, f"probe_{pl}_{L}.h5"), model__placement=pl, model__layers=L,
                    train__steps=0, probe__seeds=2, probe__batches=1, probe__curvature_every=1,
                    probe__curvature_iters=8, probe__curvature_block_iters=0)
              for pl in ("post", "pre") for L in (2, 3)]
    out2 = os.path.join(d, "out_probe")
    r = plot(probes, out2)
    gp = figure(out2, "curv_init_depth")
    data = blocks(gp)
    bad = []
    for j, key in enumerate(key_titles(gp)):
        for row in data.get(f"i{j}", []):
            p = probes[("Post-LN", "Pre-LN").index(key) * 2 + (int(row[0]) - 2)]
            with h5py.File(p, "r") as f:
                h = f["probe/hessian_max"][:]
            if (max(rel(row[1], h.mean()), rel(row[2], h.min()), rel(row[3], h.max())) > 1e-9
                    or row[4] != 2):
                bad.append((key, row, list(h)))
    check("curv_init_depth from /probe: the mean of the seeds' hessian_max, bars their range "
          "(1e-9)",
          bool(gp) and not bad and "yerrorlines" in gp and len(data) == 2, bad or r.stderr)


def absent(tmp):
    d = os.path.join(tmp, "absent")
    os.makedirs(d)
    base = dict(train__steps=4, model__layers=2)
    cases = {
        "no curvature": ([dict(model__placement=pl, **base) for pl in ("post", "pre")], ()),
        "no blocks": ([dict(model__placement=pl, probe__curvature_every=2,
                            probe__curvature_iters=8, probe__curvature_block_iters=0,
                            model__layers=L, train__steps=4) for pl in ("post",) for L in (2, 3)],
                      ("curv_lens", "curv_init_depth")),
        "one row": ([dict(model__placement=pl, probe__curvature_every=9, probe__curvature_iters=8,
                          probe__curvature_block_iters=2, **base) for pl in ("post", "pre")],
                    ("curv_blocks",)),
    }
    for name, (runs, drawn) in cases.items():
        files = [train(os.path.join(d, f"{name.replace(' ', '_')}{i}.h5"), **k)
                 for i, k in enumerate(runs)]
        out = os.path.join(d, name.replace(" ", "_"))
        r = plot(files, out)
        got = sorted(f.split("-")[-1][:-3] for f in os.listdir(out)
                     if f.endswith(".gp") and "-curv_" in f) if os.path.isdir(out) else []
        check(f"{name}: curvature figures drawn = {sorted(drawn)}", r.returncode == 0 and
              got == sorted(drawn), f"{got} {r.stderr}")


KEYENTRY = re.compile(r"keyentry with (\w+) lc rgb '([^']+)' dt (\d+)(?: pt (\d+))? lw \S+ "
                      r"title '([^']*)'")
CURVE = re.compile(r"\$c(\d+) using 1:2 with linespoints lc rgb '(#\w+)' dt (\d+) lw \S+ pt (\d+)")


def panels(tmp):
    """18 runs (2 schemes × 3 depths × 3 lrs): a panel per scheme, the key factored into a colour
    per lr and a marker (and dash) per depth, and every curve drawn in its lr's colour and its
    depth's marker."""
    d = os.path.join(tmp, "panels")
    os.makedirs(d)
    files = {}
    for pl in ("post", "pre"):
        for L in (2, 3, 4):
            for lr in ("1e-3", "3e-3", "1e-2"):
                files[(pl, L, float(lr))] = train(
                    os.path.join(d, f"{pl}_L{L}_lr{lr}.h5"), model__placement=pl, model__layers=L,
                    train__lr=lr, train__steps=4, train__schedule="constant",
                    probe__curvature_every=2, probe__curvature_iters=8,
                    probe__curvature_block_iters=0)
    out = os.path.join(d, "out")
    r = plot(list(files.values()), out)
    gp = figure(out, "curv_lens")
    titles = re.findall(r'^set title "((?:[^"\\]|\\.)*)"', gp, re.M)
    check("curv_lens of 18 runs: a panel per scheme", r.returncode == 0 and
          sorted(titles) == ["Post-LN", "Pre-LN"], f"{titles} {r.stderr}")
    entries = {t: (c, int(pt) if pt else None) for _, c, _, pt, t in KEYENTRY.findall(gp)}
    want = ["lr 0.001", "lr 0.003", "lr 0.01", "L = 2", "L = 3", "L = 4",
            "stability threshold (ratio 1)"]
    check("curv_lens of 18 runs: the key is a colour per lr and a marker per depth (7 entries, "
          "not 9)", sorted(entries) == sorted(want), list(entries))
    ratio = {}
    for key, path in files.items():
        with h5py.File(path, "r") as f:
            t = f["train"]
            ratio[key] = t["precond_max_active"][:] / t["stability_threshold"][:]
    data, bad, seen = blocks(gp), [], set()
    for i, colour, _, pt in CURVE.findall(gp):
        got = [row[1] for row in data.get(f"c{i}", [])]
        run = [k for k, v in ratio.items() if len(v) == len(got) and
               all(rel(g, w) <= 1e-9 for g, w in zip(got, v))]
        if len(run) != 1:
            bad.append((i, "no single run", run))
            continue
        pl, L, lr = run[0]
        seen.add(run[0])
        lr_key = entries.get(f"lr {lr:g}", (None, None))
        depth_key = entries.get(f"L = {L}", (None, None))
        if colour != lr_key[0] or int(pt) != depth_key[1]:
            bad.append((run[0], colour, pt, lr_key, depth_key))
    check("curv_lens of 18 runs: every curve in its lr's colour and its depth's marker",
          not bad and len(seen) == 18, bad or len(seen))


def png(d):
    out = os.path.join(d, "png")
    r = plot([os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".h5")], out, "png")
    pngs = [f for f in os.listdir(out) if "-curv_" in f] if os.path.isdir(out) else []
    check("the PNGs render (curv_lens, curv_blocks)", r.returncode == 0 and len(pngs) == 2 and
          all(os.path.getsize(os.path.join(out, f)) > 10000 for f in pngs), f"{pngs} {r.stderr}")


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL - no ./stability (make stability)")
        return 1
    if not shutil.which("gnuplot"):
        print("FAIL - gnuplot not installed")
        return 1
    tmp = tempfile.mkdtemp(prefix="curvplot.")
    try:
        d, _ = lens(tmp)
        png(d)
        init_depth(tmp)
        panels(tmp)
        absent(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary("curvature plot")


if __name__ == "__main__":
    sys.exit(main())
