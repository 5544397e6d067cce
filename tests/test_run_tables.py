#!/usr/bin/python3
"""test_run_tables.py — `stability table warmup` and `stability table curvature-anchor`
(study/warmup.c, study/curvature_anchor.c; docs/warmup.md, docs/curvature.md "The anchor") on a
tiny sweep of four training runs (Post-LN seeds 1 and 2, Post-LN with 30 warm-up updates,
Pre-LN; 120 updates, probes at 1, 50, 100, curvature rows at 0, 5, 10), against every value
recomputed here from the files with h5py and numpy, from the definitions:

  final loss   the last validation loss when finite, else the mean of the last tenth of the
               training losses, NaN when diverged (measure/outcome.h); one run gets validation
               rows [3.0, nan, 2.5, 2.7] written by hand (final 2.7, best 2.5), one is marked
               diverged (final NaN, "– (diverged)" in the anchor's table)
  best loss    the lowest 50-update moving average; "to < 2.5" the update its first value below
               2.5 ends at
  ratio        /train/grad_fro[probe_step == 100, layer 0, w2] / [.., layer L−1, w2]
  wall         /train/time's last row
  anchor       hessian_max[0]; precond_max_active / stability_threshold at each curv_step; the
               seeds' min and max of each per (embedding, setting)

    /usr/bin/python3 tests/test_run_tables.py

Prints "ok"/"not ok" per check, then "run_tables: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, chdir_repo_like   # noqa: E402

STABILITY = os.path.abspath(os.environ.get("STABILITY", os.path.join(REPO, "stability")))
RUNS = {"post_s1": ("post", 1, 1), "post_s2": ("post", 2, 1), "post_w30": ("post", 1, 30),
        "pre_s1": ("pre", 1, 1)}
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(*args):
    return subprocess.run([STABILITY, *args], capture_output=True, text=True, timeout=300)


def close(a, b):
    """Equal to 1e-12 relative, NaN equal to NaN."""
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(b))


def make(d):
    files = {}
    for name, (placement, seed, warm) in RUNS.items():
        path = os.path.join(d, name + ".h5")
        r = run("--config", os.path.join(REPO, "configs/tiny.ini"), "--quiet", "--out", path,
                *sum((["--set", kv] for kv in (
                    f"model.placement={placement}", f"init.seed={seed}", f"train.warmup={warm}",
                    "train.steps=120", "train.lr=3e-3", "train.schedule=constant",
                    "probe.every=50", "probe.curvature_every=5", "probe.curvature_until=10",
                    "probe.seeds=1", "probe.batches=1")), []))
        check(f"training run {name}", r.returncode == 0, r.stderr[-300:])
        files[name] = path
    with h5py.File(files["post_w30"], "r+") as f:   # validation rows by hand
        f["train/eval_step"] = np.array([30.0, 60.0, 90.0, 120.0])
        f["train/val_loss"] = np.array([3.0, np.nan, 2.5, 2.7])
    with h5py.File(files["pre_s1"], "r+") as f:
        f.attrs["status"] = "diverged"
    return files


def expected_warmup(path):
    with h5py.File(path, "r") as f:
        t = f["train"]
        loss = t["loss"][:]
        status = f.attrs["status"]
        status = status.decode() if isinstance(status, bytes) else status
        val = t["val_loss"][:] if "val_loss" in t else np.array([])
        if status == "diverged":
            final = math.nan
        elif len(val) and np.isfinite(val[-1]):
            final = val[-1]
        else:
            final = loss[-max(1, len(loss) // 10):].mean()
        ma = np.array([loss[i:i + 50].sum() / 50 for i in range(len(loss) - 49)])
        below = np.nonzero(ma < 2.5)[0]
        ps = list(t["probe_step"][:])
        names = [n.decode() if isinstance(n, bytes) else n for n in t["grad_fro"].attrs["param"]]
        g = t["grad_fro"][ps.index(100), :, names.index("w2")]
        return {"updates": len(loss), "final_loss": final, "best_loss": ma.min(),
                "to_below": below[0] + 50 if len(below) else math.nan,
                "val_final": val[-1] if len(val) else math.nan,
                "val_best": np.nanmin(val) if len(val) else math.nan,
                "grad_ratio": g[0] / g[-1], "wall": t["time"][-1], "status": status}


def test_warmup(files):
    r = run("table", "warmup", "--tsv", *files.values())
    check("table warmup --tsv: exit 0", r.returncode == 0, r.stderr)
    lines = r.stdout.strip().splitlines() or [""]
    head = lines[0].split("\t")
    rows = {l.split("\t")[0]: dict(zip(head, l.split("\t"))) for l in lines[1:]}
    check("table warmup: a row per run, by name", list(rows) == sorted(RUNS), list(rows))
    for name, path in files.items():
        want, got = expected_warmup(path), rows.get(name, {})
        for col, v in want.items():
            ok = got.get(col) == v if col == "status" else close(got.get(col, "x"), v)
            check(f"table warmup: {name} {col} = {v}", ok, f"got {got.get(col)}")
    check("table warmup: the hand-made validation rows: final 2.7, best 2.5",
          close(rows.get("post_w30", {}).get("final_loss"), 2.7)
          and close(rows.get("post_w30", {}).get("val_best"), 2.5), rows.get("post_w30"))
    md = run("table", "warmup", *files.values()).stdout
    check("table warmup (Markdown): the columns of docs/warmup.md",
          md.startswith("| run | LN | lr | warm-up | status | updates | final loss | best loss | "
                        "updates to < 2.5 | final val | best val | ‖∇W²‖ layer 1 / layer L at "
                        "100 | wall (s) |\n") and "also differ" not in md, md[:300])


def test_anchor(files):
    r = run("table", "curvature-anchor", "--tsv", *files.values())
    check("table curvature-anchor --tsv: exit 0", r.returncode == 0, r.stderr)
    per_run, _, across = r.stdout.strip().partition("\n\n")
    lines = per_run.splitlines() or [""]
    head = lines[0].split("\t")
    check("table curvature-anchor: columns update 0, 5, 10",
          head[4:7] == ["update_0", "update_5", "update_10"], head)
    got = [dict(zip(head, l.split("\t"))) for l in lines[1:]]
    want = {}
    for name, path in files.items():
        placement, seed, warm = RUNS[name]
        setting = f"{placement} lr 0.003 warm-up {warm if warm > 1 else 'none'} adam"
        with h5py.File(path, "r") as f:
            t = f["train"]
            ratio = t["precond_max_active"][:] / t["stability_threshold"][:]
            e = {"hessian_max_init": t["hessian_max"][0],
                 "final_loss": expected_warmup(path)["final_loss"]}
            for s, q in zip(t["curv_step"][:], ratio):
                e[f"update_{s}"] = q
        want[(setting, seed)] = e
    check("table curvature-anchor: a row per run, sorted by setting and seed",
          [(g["setting"], int(g["seed"])) for g in got] == sorted(want),
          [g["setting"] for g in got])
    for g in got:
        e = want.get((g["setting"], int(g["seed"])), {})
        for col, v in e.items():
            check(f"table curvature-anchor: {g['setting']} seed {g['seed']} {col} = {v:.6g}",
                  close(g[col], v), f"got {g[col]}")
    cols = (across.splitlines() or [""])[0].split("\t")
    check("table curvature-anchor: across seeds, a lo and a hi column each",
          cols == ["setting", "embedding", "seeds"] + sum(([c + "_lo", c + "_hi"]
                                                           for c in head[3:]), []), cols)
    rows = [dict(zip(cols, l.split("\t"))) for l in across.splitlines()[1:]]
    two = [x for x in rows if x["seeds"] == "2"]
    check("table curvature-anchor: the seeds of Post-LN without warm-up one row of 2",
          len(rows) == 3 and len(two) == 1, across)
    if two:
        a, b = want[(two[0]["setting"], 1)], want[(two[0]["setting"], 2)]
        for col in head[3:]:
            check(f"table curvature-anchor: across seeds {col} = min, max",
                  close(two[0][col + "_lo"], min(a[col], b[col])) and
                  close(two[0][col + "_hi"], max(a[col], b[col])), two[0])
    md = run("table", "curvature-anchor", *files.values()).stdout
    check("table curvature-anchor (Markdown): the diverged run's final loss '– (diverged)'",
          "| – (diverged) |" in md and "Across seeds (min – max):" in md, md)


def main():
    with tempfile.TemporaryDirectory(prefix="run_tables.") as tmp:
        with chdir_repo_like(tmp) as d:
            files = make(d)
            test_warmup(files)
            test_anchor(files)
    failed = results.count(False)
    print(f"run_tables: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
