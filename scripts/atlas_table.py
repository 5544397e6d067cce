#!/usr/bin/python3
"""atlas_table.py results/atlas.h5 — the stability atlas as Markdown tables (docs/design.md §6d).

From the merged sweep file of experiments/atlas.ini (h5py only): per scheme and depth, the
LR sensitivity of Wortsman et al. 2023 with and without warm-up (mean over the learning-rate
grid of min(final loss, initial loss) - the best final loss; a diverged run counts as its initial
loss), the best final validation loss and its learning rate, the number of diverged runs, and
whether the scheme needs warm-up there: the largest learning rate at which it trains (final loss
below --trains, default 3.2 nats) is larger with warm-up than without.

Each run's scheme and the atlas's order of schemes come from the program's own table of schemes
(src/config/scheme.c), through `stability info FILE --schemes`: this script keeps no list.
"""
import argparse
import configparser
import os
import subprocess
import sys

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def schemes_of(stability, path):
    """{run name: (scheme, atlas rank)} as the program names them (stability info --schemes)."""
    r = subprocess.run([stability, "info", path, "--schemes"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{stability} info {path} --schemes: {r.stderr.strip() or 'failed'}")
    out = {}
    for line in r.stdout.splitlines():
        run, scheme, rank = line.split("\t")[:3]
        out[run] = (scheme, int(rank))
    return out


def read_runs(path, schemes):
    runs = []
    with h5py.File(path, "r") as f:
        for name, g in f["runs"].items():
            text = g.attrs["config"]
            cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
            cfg.read_string(text.decode() if isinstance(text, bytes) else text)
            if "train" not in g:
                continue
            t = g["train"]
            status = g.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            loss = t["loss"][:]
            val = t["val_loss"][:] if "val_loss" in t else np.array([])
            # the final loss as `stability plot` takes it: the last validation loss, else
            # (a task without a held-out split) the mean of the last tenth of training losses
            final = (float(val[-1]) if len(val) and np.isfinite(val[-1])
                     else float(np.mean(loss[-max(len(loss) // 10, 1):])))
            runs.append({
                "name": name, "scheme": schemes[name][0], "rank": schemes[name][1],
                "L": int(cfg["model"]["layers"]),
                "lr": float(cfg["train"]["lr"]), "warm": int(cfg["train"]["warmup"]) > 1,
                "final": np.nan if status == "diverged" else final,
                "loss0": float(loss[0]), "diverged": status == "diverged",
            })
    return runs


def sensitivity(final, loss0):
    finite = [f for f in final if np.isfinite(f)]
    if not finite:
        return np.nan
    best = min(finite)
    return float(np.mean([min(f, z) if np.isfinite(f) else z for f, z in zip(final, loss0)]) - best)


def atlas_cells(runs, trains):
    """(schemes in the table's order, depths, {(scheme, L): cell}); a cell holds, for warm-up
    True and False, the LR sensitivity 'sens', the best (final loss, lr) 'best', the number of
    diverged runs 'div' and the largest lr whose final loss is below `trains` 'top' (0: none),
    and 'needs': whether the scheme needs warm-up there."""
    rank = {r["scheme"]: r["rank"] for r in runs}   # the table's order; others after, as met
    schemes = sorted(dict.fromkeys(r["scheme"] for r in runs), key=lambda x: rank[x])
    depths = sorted({r["L"] for r in runs})
    cells = {}
    for s in schemes:
        for L in depths:
            cell = {}
            for w in (True, False):
                rs = sorted((r for r in runs if r["scheme"] == s and r["L"] == L and r["warm"] == w),
                            key=lambda r: r["lr"])
                fin = [r["final"] for r in rs]
                done = [(f, r["lr"]) for f, r in zip(fin, rs) if np.isfinite(f)]
                cell[w] = {
                    "sens": sensitivity(fin, [r["loss0"] for r in rs]),
                    "best": min(done) if done else (np.nan, np.nan),
                    "div": sum(r["diverged"] for r in rs),
                    "top": max((lr for f, lr in done if f < trains), default=0.0),
                }
            w, n = cell[True], cell[False]
            cell["needs"] = ("trains at no lr" if not w["top"] and not n["top"]   # e.g. deep Post-LN
                             else "yes" if w["top"] > n["top"] else "no")   # warm-up: a larger lr
            cells[s, L] = cell
    return schemes, depths, cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--trains", type=float, default=3.2,
                    help="a run trains when its final loss is below this (nats; default 3.2: the "
                         "atlas's byte-level LM sits on its unigram plateau at about 3.5)")
    ap.add_argument("--stability", default=os.path.join(ROOT, "stability"),
                    help="the program whose table of schemes names and orders the rows "
                         "(default: the repository's ./stability; `make` builds it)")
    a = ap.parse_args()
    if not os.access(a.stability, os.X_OK):
        sys.exit(f"{a.stability}: not found (build it with make, or pass --stability)")
    runs = read_runs(a.file, schemes_of(a.stability, a.file))
    if not runs:
        sys.exit(f"{a.file}: no training runs under /runs")
    schemes, depths, cells = atlas_cells(runs, a.trains)
    print("| scheme | L | LR sensitivity, warm-up | none | best loss, warm-up (lr) | none (lr) "
          "| largest lr that trains, warm-up / none | diverged, warm-up / none | needs warm-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    fmt = lambda b: "-" if not np.isfinite(b[0]) else f"{b[0]:.3f} ({b[1]:g})"
    top = lambda t: f"{t:g}" if t > 0 else "none"
    for s in schemes:
        for L in depths:
            c = cells[s, L]
            w, n = c[True], c[False]
            print(f"| {s} | {L} | {w['sens']:.3f} | {n['sens']:.3f} | {fmt(w['best'])} | "
                  f"{fmt(n['best'])} | {top(w['top'])} / {top(n['top'])} | {w['div']} / {n['div']} | "
                  f"{c['needs']} |")


if __name__ == "__main__":
    main()
