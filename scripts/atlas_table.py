#!/usr/bin/python3
"""atlas_table.py results/atlas.h5 — the stability atlas as Markdown tables (docs/design.md §6d).

From the merged sweep file of experiments/atlas.ini (h5py only): per scheme and depth, the
LR sensitivity of Wortsman et al. 2023 with and without warm-up (mean over the learning-rate
grid of min(final loss, initial loss) - the best final loss; a diverged run counts as its initial
loss), the best final validation loss and its learning rate, the number of diverged runs, and
whether the scheme needs warm-up there: the largest learning rate at which it trains (final loss
below --trains, default 3.2 nats) is larger with warm-up than without.

With several seeds a cell (experiments/atlas_seeds.ini, `init.seed` swept), the LR sensitivity
is the seeds' mean ± 95 % half-width and the verdicts come from each lr's mean final loss, with
how many seeds alone agree (atlas_cells).

A cell is keyed by every config key that differs between the runs (scripts/run_identity.py,
docs/design.md §6j): a row is a scheme, a depth and the other keys that differ (precision, a
mitigation), and when several warm-ups were run, a row per warm-up against each without one
("post (warm-up 20)"); a run given twice counts once. The standard atlas has neither: its
table is as it always was.

Each run's scheme and the atlas's order of schemes come from the program's own table of schemes
(src/config/scheme.c), through `stability info FILE --schemes`: this script keeps no list.
"""
import argparse
import configparser
import ctypes
import ctypes.util
import functools
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_identity   # noqa: E402  (the rule of which runs are one, and what tells runs apart)
import script_inputs   # noqa: E402  (one line and exit 2 for a wrong input)

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
            ident = run_identity.identity(g.attrs)
            runs.append({
                "name": name, "scheme": schemes[name][0], "rank": schemes[name][1],
                "L": int(cfg["model"]["layers"]),
                "seed": int(cfg["init"]["seed"]) if cfg.has_option("init", "seed") else 1,
                "lr": float(cfg["train"]["lr"]), "warmup": int(cfg["train"]["warmup"]),
                "final": np.nan if status == "diverged" else final,
                "loss0": float(loss[0]), "diverged": status == "diverged",
                "identity": ident, "items": dict(ident[0]),
            })
    return run_identity.unique(runs)


# The atlas's axes: not keys of a row of their own (the scheme's keys, the depth, the rate, the
# seed), and the warm-up, which pairs a row's two halves.
AXES = ("model.layers", "model.dec_layers", "train.lr", "init.seed", "train.warmup")


def rows_of(runs):
    """The table's rows: [(scheme, L, label, with-warm-up runs, without runs)], label "" for
    the standard atlas (one warm-up and none), else what tells the row apart ("warm-up 20",
    "precision float32")."""
    rank = {r["scheme"]: r["rank"] for r in runs}   # the table's order; others after, as met
    schemes = sorted(dict.fromkeys(r["scheme"] for r in runs), key=lambda x: rank[x])
    depths = sorted({r["L"] for r in runs})
    other = run_identity.differing([r["items"] for r in runs], [r["scheme"] for r in runs],
                                   skip=AXES)
    for r in runs:
        r["other"] = tuple(run_identity.words(k, r["items"].get(k)) for k in other)
    warm = sorted({r["warmup"] for r in runs if r["warmup"] > 1}, reverse=True) or [None]
    cold = sorted({r["warmup"] for r in runs if r["warmup"] <= 1}) or [None]
    rows = []
    for s in schemes:
        for L in depths:
            mine = [r for r in runs if r["scheme"] == s and r["L"] == L]
            for o in dict.fromkeys(r["other"] for r in mine):
                for w in warm:
                    for c in cold:
                        label = list(o)
                        if len(warm) > 1: label.append(run_identity.words("train.warmup", w))
                        if len(cold) > 1: label.append(run_identity.words("train.warmup", c))
                        rows.append((s, L, ", ".join(label),
                                     [r for r in mine if r["other"] == o and r["warmup"] == w],
                                     [r for r in mine if r["other"] == o and r["warmup"] == c]))
    return schemes, depths, rows


def sensitivity(final, loss0):
    finite = [f for f in final if np.isfinite(f)]
    if not finite:
        return np.nan
    best = min(finite)
    return float(np.mean([min(f, z) if np.isfinite(f) else z for f, z in zip(final, loss0)]) - best)


@functools.lru_cache(maxsize=None)
def gsl_tdist_pinv():
    """GSL's gsl_cdf_tdist_Pinv (the library the program computes its own intervals with),
    through ctypes, loaded once."""
    f = ctypes.CDLL(ctypes.util.find_library("gsl") or "libgsl.so.27").gsl_cdf_tdist_Pinv
    f.restype = ctypes.c_double
    f.argtypes = [ctypes.c_double, ctypes.c_double]
    return f


def t_quantile(p, df):
    """Student t's p-quantile with df degrees of freedom, from GSL."""
    return gsl_tdist_pinv()(p, df)


def mean_ci(values):
    """Mean and 95 % half-width (Student t over the finite values; NaN half-width with fewer
    than two) of values, as `stability info --train` and the figures' bands compute it."""
    v = np.array([x for x in values if np.isfinite(x)])
    if len(v) == 0:
        return np.nan, np.nan
    if len(v) == 1:
        return float(v[0]), np.nan
    return float(v.mean()), float(t_quantile(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def one_row(rs, trains):
    """One scheme, depth and warm-up of one seed (rs sorted by lr): LR sensitivity 'sens', best
    (final loss, lr) 'best', diverged runs 'div', the largest lr whose final loss is below
    `trains` 'top' (0: none)."""
    fin = [r["final"] for r in rs]
    done = [(f, r["lr"]) for f, r in zip(fin, rs) if np.isfinite(f)]
    return {
        "sens": sensitivity(fin, [r["loss0"] for r in rs]),
        "best": min(done) if done else (np.nan, np.nan),
        "div": sum(r["diverged"] for r in rs),
        "top": max((lr for f, lr in done if f < trains), default=0.0),
    }


def needs(w, n):
    """Whether a scheme needs warm-up: it trains at a larger lr with it than without."""
    return ("trains at no lr" if not w["top"] and not n["top"]   # e.g. deep Post-LN
            else "yes" if w["top"] > n["top"] else "no")


def atlas_cells(runs, trains):
    """(schemes in the table's order, depths, {(scheme, L, label): cell} in the table's order);
    a cell holds, for warm-up True and False, the LR sensitivity 'sens', the best (final loss,
    lr) 'best', the number of diverged runs 'div' and the largest lr whose final loss is below
    `trains` 'top' (0: none), and 'needs': whether the scheme needs warm-up there. label is ""
    for the standard atlas, else what tells the row apart (rows_of).

    With several seeds (init.seed swept), each lr's final loss is the mean over the seeds (NaN
    when a seed diverged there) and 'best', 'top' and 'needs' are read from those means; 'sens'
    is the mean of the seeds' own sensitivities with its 95 % half-width 'sens_ci', 'div'
    counts every seed's runs, and 'seeds' / 'agree' say how many seeds there are and how many
    reach the same 'needs' on their own. One seed: exactly the single-seed table."""
    schemes, depths, rows = rows_of(runs)
    cells = {}
    for s, L, label, with_w, without in rows:
        half = {True: with_w, False: without}
        seeds = sorted({r["seed"] for r in with_w + without})
        per = {k: {w: one_row(sorted((r for r in half[w] if r["seed"] == k), key=lambda r: r["lr"]),
                              trains) for w in (True, False)} for k in seeds}
        cell = {}
        for w in (True, False):
            if len(seeds) == 1:
                cell[w] = dict(per[seeds[0]][w], sens_ci=np.nan)
                continue
            rs = half[w]
            lrs = sorted({r["lr"] for r in rs})
            means = [{"lr": lr, "loss0": float(np.mean([r["loss0"] for r in rs if r["lr"] == lr])),
                      "final": (np.nan if any(r["diverged"] for r in rs if r["lr"] == lr) else
                                float(np.mean([r["final"] for r in rs if r["lr"] == lr]))),
                      "diverged": False} for lr in lrs]
            cell[w] = one_row(means, trains)
            cell[w]["div"] = sum(r["diverged"] for r in rs)
            cell[w]["sens"], cell[w]["sens_ci"] = mean_ci([per[k][w]["sens"] for k in seeds])
        # one half not run (every run with warm-up, or none): nothing to compare
        cell["needs"] = needs(cell[True], cell[False]) if with_w and without else "—"
        cell["seeds"] = len(seeds)
        cell["agree"] = (sum(needs(per[k][True], per[k][False]) == cell["needs"] for k in seeds)
                         if with_w and without else len(seeds))
        cells[s, L, label] = cell
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
    script_inputs.positive("--trains", a.trains)
    script_inputs.merged(a.file)
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
    sens = lambda x: f"{x['sens']:.3f}" + (f" ± {x['sens_ci']:.3f}" if np.isfinite(x["sens_ci"]) else "")
    for (s, L, label), c in cells.items():
        w, n = c[True], c[False]
        agree = f" ({c['agree']} of {c['seeds']} seeds)" if c["seeds"] > 1 else ""
        name = f"{s} ({label})" if label else s
        print(f"| {name} | {L} | {sens(w)} | {sens(n)} | {fmt(w['best'])} | "
              f"{fmt(n['best'])} | {top(w['top'])} / {top(n['top'])} | {w['div']} / {n['div']} | "
              f"{c['needs']}{agree} |")
    seeds = max(c["seeds"] for c in cells.values())
    if seeds > 1:
        print(f"\n{seeds} seeds a cell: LR sensitivity as mean ± 95 % half-width over the seeds "
              f"(Student t); best loss, largest lr that trains and needs warm-up from each lr's "
              f"mean final loss over the seeds (an lr where a seed diverged counts as diverged); "
              f"diverged counts every seed's runs; (k of n seeds): how many seeds alone give the "
              f"same verdict.")


if __name__ == "__main__":
    main()
