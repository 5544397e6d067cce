#!/usr/bin/python3
"""warmup_table.py FILE.h5... — the Markdown table of docs/warmup.md from training files.

Per run: placement, lr, warm-up (from the stored config), status, final training loss (mean
of the last 100 updates), best training loss (lowest 50-update moving average), the update at
which that moving average first falls below 2.5 nats, final and best validation loss, the
ratio of layer 1's to layer L's ||grad W2||_F at update 100 (the Post-LN collapse; the decoder's
layers for an encoder-decoder), wall time.
Reads files with h5py only (swmr=True, so a running or killed run can be listed too).
Runs follow scripts/run_identity.py's rule (docs/design.md §6j): a run given twice (the same
file twice) is one row, and runs that differ in a key besides the placement, lr and warm-up
get a column that names it, so no two rows read alike.
"""
import configparser
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_identity   # noqa: E402  (the rule of which runs are one, and what tells runs apart)
import script_inputs   # noqa: E402  (one line and exit 2 for a wrong input)

SHOWN = ("model.placement", "train.lr", "train.warmup", "init.seed")   # the table's own columns


def row(path):
    with h5py.File(path, "r", swmr=True) as f:
        cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
        text = f.attrs["config"]
        cfg.read_string(text.decode() if isinstance(text, bytes) else text)
        t = f["train"]
        loss, val = t["loss"][:], t["val_loss"][:] if "val_loss" in t else np.array([np.nan])
        status = f.attrs["status"]
        status = status.decode() if isinstance(status, bytes) else status
        ma = np.convolve(loss, np.ones(50) / 50, mode="valid") if len(loss) >= 50 else loss
        below = np.nonzero(ma < 2.5)[0]
        ps = list(t["probe_step"][:])
        ratio = np.nan
        if 100 in ps:
            gf = t["grad_fro"]
            names = [n.decode() if isinstance(n, bytes) else n for n in gf.attrs["param"]]
            g = gf[ps.index(100), :, names.index("w2")]   # (layer): ||grad W2||_F
            if "stack" in gf.attrs:   # an encoder-decoder: the decoder's layers (next to the loss)
                st = [x.decode() if isinstance(x, bytes) else x for x in gf.attrs["stack"]]
                g = g[[i for i, x in enumerate(st) if x == st[-1]]]
            ratio = g[0] / g[-1]
        return {
            "identity": run_identity.identity(f.attrs), "path": path,
            "run": path.rsplit("/", 1)[-1].removesuffix(".h5"),
            "placement": cfg["model"]["placement"], "lr": cfg["train"]["lr"],
            "warmup": cfg["train"]["warmup"], "status": status, "steps": len(loss),
            "final": loss[-100:].mean(), "best": ma.min(),
            "to25": int(below[0]) + 50 if len(below) else None,
            "val_final": val[-1], "val_best": np.nanmin(val), "ratio": ratio,
            "time": t["time"][-1] if len(loss) else 0.0,
        }


def main(paths):
    for p in paths:
        script_inputs.run_file(p)
    rows = run_identity.unique([row(p) for p in paths], where=lambda r: r["path"])
    items = [dict(r["identity"][0]) for r in rows]
    schemes = [f"{it.get('model.placement')}+{it.get('model.norm')}" for it in items]
    other = [k for k in run_identity.differing(items, schemes) if k not in SHOWN]
    more = " also differ |" if other else ""
    print("| run | LN | lr | warm-up | status | updates | final loss | best loss | updates to < 2.5 "
          f"| final val | best val | ‖∇W²‖ layer 1 / layer L at 100 | wall (s) |{more}")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if other else ""))
    for r, it in zip(rows, items):
        to25 = str(r["to25"]) if r["to25"] is not None else "never"
        extra = (" " + ", ".join(run_identity.words(k, it.get(k)) for k in other) + " |"
                 if other else "")
        print(f"| {r['run']} | {r['placement']} | {r['lr']} | {r['warmup']} | {r['status']} | "
              f"{r['steps']} | {r['final']:.3f} | {r['best']:.3f} | {to25} | {r['val_final']:.3f} | "
              f"{r['val_best']:.3f} | {r['ratio']:.3g} | {r['time']:.0f} |{extra}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
