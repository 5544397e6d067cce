#!/usr/bin/python3
"""curvature_anchor_table.py results/curvature_anchor.h5 — the anchor's table from the program
(experiments/curvature_anchor.ini; docs/curvature.md "The anchor"). A directory
(results/curvature_anchor/) reads its finished run files instead, while the sweep runs.

Per run (setting, embedding, seed): λ_max(H) at initialisation, the active λ_max(P⁻¹H) over
Adam's threshold at every measured update, and the final validation loss; then per setting and
embedding the seeds' range (min – max) of each column. h5py only.
"""
import argparse
import configparser
import glob
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_identity    # noqa: E402  (the rule of which runs are one, and what tells runs apart)
import script_inputs   # noqa: E402  (one line and exit 2 for a wrong input)

# The keys the setting names itself (besides the seed and the embedding, columns of their own).
SETTING = ("model.placement", "train.lr", "train.warmup", "train.optimizer", "init.seed",
           "init.embed")


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def groups_of(path):
    """(name, group) of every finished run: /runs/NAME of a merged file, or the root of each
    run file of a sweep's directory."""
    if not os.path.isdir(path):
        with h5py.File(path, "r") as f:
            for name, g in f["runs"].items():
                yield name, g
        return
    for fn in sorted(glob.glob(os.path.join(path, "*.h5"))):
        try:
            f = h5py.File(fn, "r")
        except OSError:   # still being written
            continue
        with f:
            if text(f.attrs.get("status", "")) in ("done", "diverged"):
                yield os.path.basename(fn)[:-3], f


def read(path):
    runs = []
    for name, g in groups_of(path):
        if "train" not in g or "curv_step" not in g["train"]:
            continue
        cfg = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
        cfg.read_string(text(g.attrs["config"]))
        t = g["train"]
        val = t["val_loss"][:] if "val_loss" in t else np.array([np.nan])
        embed = cfg["init"].get("embed", "normal").split()[0]
        warm = int(cfg["train"]["warmup"])
        runs.append({
            "setting": (f"{cfg['model']['placement']} lr {float(cfg['train']['lr']):g} "
                        f"warm-up {warm if warm > 1 else 'none'} {cfg['train']['optimizer']}"),
            "embed": embed, "seed": int(cfg["init"]["seed"]),
            "steps": [int(s) for s in t["curv_step"][:]],
            "ratio": t["precond_max_active"][:] / t["stability_threshold"][:],
            "h0": float(t["hessian_max"][0]), "final": float(val[-1]),
            "status": text(g.attrs["status"]), "name": name,
            "identity": run_identity.identity(g.attrs)})
    # a copied run counts once (never as a second seed); any other key that differs between
    # the runs (L = 1 and L = 2) is part of the setting (docs/design.md §6j)
    runs = run_identity.unique(runs)
    items = [dict(r["identity"][0]) for r in runs]
    other = [k for k in run_identity.differing(items) if k not in SETTING]
    for r, it in zip(runs, items):
        r["setting"] += "".join(", " + run_identity.words(k, it.get(k)) for k in other)
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    a = ap.parse_args()
    if not os.path.isdir(a.file):
        script_inputs.merged(a.file)
    runs = read(a.file)
    if not runs:
        sys.exit(f"{a.file}: no run with curvature rows")
    steps = sorted({s for r in runs for s in r["steps"]})
    head = " | ".join(f"update {s}" for s in steps)
    print(f"| setting | embedding | seed | λ_max(H) at init | {head} | final loss |")
    print("|---|---|---|---|" + "---|" * len(steps) + "---|")
    key = lambda r: (r["embed"], r["setting"], r["seed"])
    for r in sorted(runs, key=key):
        cols = [f"{r['ratio'][r['steps'].index(s)]:.3g}" if s in r["steps"] else "–" for s in steps]
        fin = f"{r['final']:.2f}" + (" (diverged)" if r["status"] == "diverged" else "")
        print(f"| {r['setting']} | {r['embed']} | {r['seed']} | {r['h0']:.1f} | "
              + " | ".join(cols) + f" | {fin} |")
    print("\nAcross seeds (min – max):\n")
    print(f"| setting | embedding | seeds | λ_max(H) at init | {head} | final loss |")
    print("|---|---|---|---|" + "---|" * len(steps) + "---|")
    groups = {}
    for r in runs:
        groups.setdefault((r["embed"], r["setting"]), []).append(r)
    rng = lambda v: "–" if not v else f"{min(v):.3g} – {max(v):.3g}" if len(v) > 1 else f"{v[0]:.3g}"
    for (embed, setting), rs in sorted(groups.items()):
        cols = [rng([float(r["ratio"][r["steps"].index(s)]) for r in rs if s in r["steps"]])
                for s in steps]
        print(f"| {setting} | {embed} | {len(rs)} | {rng([r['h0'] for r in rs])} | "
              + " | ".join(cols) + f" | {rng([r['final'] for r in rs])} |")


if __name__ == "__main__":
    main()
