#!/usr/bin/python3
"""test_atlas_table.py — `stability table atlas` and `atlas-compare` (study/atlas.c,
study/atlas_compare.c; docs/design.md §6d), from the repository root:
/usr/bin/python3 tests/test_atlas_table.py

A tiny atlas in a temporary directory (configs/tiny.ini on the copy task: Post-LN, Pre-LN and
ReZero × L ∈ {2, 3} × lr ∈ {3e-3, 3e-2, 0.3, 100} × warm-up 1 or 30, 40 Adam updates; lr 100
diverges), and the same grid on RMSNorm in float32 with Adam's β₂ = 0.9 under other run names (the program names its
schemes "post+rmsnorm": the comparison takes them as Post-LN's cells, as for today's block). The oracle is written here from the definitions
(docs/design.md §6d), from the files read with h5py, not from the program's code:
- a run's final loss: its last validation loss, else the mean of the last tenth of its training
  losses; none when it diverged (status "diverged" or /train@diverged_at);
- per scheme, depth and warm-up: Wortsman et al.'s LR sensitivity (the mean over the rates of
  min(final, loss_0), loss_0 for a diverged run, minus the best final loss), the best loss and
  its rate, the largest rate whose final loss is below 3.2 nats, the diverged count, and "needs
  warm-up" (a larger such rate with warm-up; "trains at no lr" when none either way);
- the comparison pairs the two files' runs by scheme, depth, lr, warm-up and seed (the names
  differ) and reports the median and largest |Δ final loss| of the runs finished in both, how
  many lines' verdicts move (needs warm-up, largest lr that trains, diverged, best lr), and per
  depth and warm-up Spearman's ρ of the sensitivities (mean ranks, computed here).
Prints "ok - ..." / "FAIL - ..." per check, then "atlas_table: N passed, M failed".
"""
import configparser
import math
import os
import statistics
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, check, run, summary  # noqa: E402

TRAINS = 3.2
SWEEP = """[sweep]
base = {base}
name = {prefix}{{placement}}_L{{layers}}_lr{{lr}}_w{{warmup}}
zip = model.placement, model.norm, init.scheme
model.placement = post, pre, rezero
model.norm = {norm}, {norm}, none
init.scheme = xavier_normal, xavier_normal, xavier_normal
model.layers = 2, 3
model.vocab = 12
model.seq_len = 6
data.task = copy
data.batch = 8
train.optimizer = adam
train.lr = 3e-3, 3e-2, 0.3, 100
train.warmup = 1, 30
train.steps = 40
"""


def read_runs(path):
    """Every run of a merged file: scheme, L, lr, warm-up, seed, final loss, loss_0, diverged."""
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
            out.append({"name": name, "scheme": cfg["model"]["placement"],
                        "L": int(cfg["model"]["layers"]), "lr": float(cfg["train"]["lr"]),
                        "warmup": int(cfg["train"]["warmup"]),
                        "seed": int(cfg["init"].get("seed", "1")), "diverged": div,
                        "final": math.nan if div else final, "loss0": loss[0]})
    return out


def half(runs):
    """The definitions of one half (one seed)."""
    done = [r for r in runs if math.isfinite(r["final"])]
    best = min(done, key=lambda r: (r["final"], r["lr"])) if done else None
    sens = math.nan
    if best:
        sens = sum(min(r["final"], r["loss0"]) if math.isfinite(r["final"]) else r["loss0"]
                   for r in runs) / len(runs) - best["final"]
    return {"sens": sens, "best": best["final"] if best else math.nan,
            "best_lr": best["lr"] if best else math.nan,
            "top": max([r["lr"] for r in done if r["final"] < TRAINS], default=0.0),
            "div": sum(r["diverged"] for r in runs)}


def lines(runs):
    """{(scheme, L): (with warm-up, without)} of the definitions."""
    out = {}
    for s, L in sorted({(r["scheme"], r["L"]) for r in runs}):
        mine = [x for x in runs if x["scheme"] == s and x["L"] == L]
        out[s, L] = (half([x for x in mine if x["warmup"] > 1]),
                     half([x for x in mine if x["warmup"] <= 1]))
    return out


def needs(w, c):
    return ("trains at no lr" if not w["top"] and not c["top"]
            else "yes" if w["top"] > c["top"] else "no")


def mean_ranks(v):
    """Ranks 1..n of v, ties sharing their mean rank, NaN above every number."""
    key = [math.inf if math.isnan(x) else x for x in v]
    return [sum(k < x for k in key) + (sum(k == x for k in key) + 1) / 2 for x in key]


def spearman(x, y):
    """Pearson's correlation of the mean ranks."""
    rx, ry = mean_ranks(x), mean_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else math.nan


def close(a, b):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9 * max(1.0, abs(b))


def sweep(tmp, prefix, norm, extra=""):
    path = os.path.join(tmp, prefix + ".ini")
    with open(path, "w") as f:
        f.write(SWEEP.format(base=os.path.join(REPO, "configs", "tiny.ini"), prefix=prefix,
                             norm=norm) + extra)
    s = run("sweep", path, "--jobs", "1", "--quiet", cwd=tmp)
    check(f"the {prefix} sweep runs", s.returncode == 0, s.stderr[-400:])
    return os.path.join(tmp, "results", prefix + ".h5")


def test_table(a):
    s = run("table", "atlas", a, "--tsv")
    check("table atlas --tsv exits 0", s.returncode == 0, s.stderr[-400:])
    lines = s.stdout.splitlines()
    head = lines[0].split("\t") if lines else []
    rows = [dict(zip(head, line.split("\t"))) for line in lines[1:]]
    check("a line per scheme and depth (3 × 2), in the atlas's order",
          [(r["scheme"], r["L"]) for r in rows] == [(s, L) for s in ("post", "pre", "rezero")
                                                     for L in ("2", "3")],
          [(r.get("scheme"), r.get("L")) for r in rows])
    runs = read_runs(a)
    verdicts = set()
    for r in rows:
        mine = [x for x in runs if x["scheme"] == r["scheme"] and x["L"] == int(r["L"])]
        w, c = half([x for x in mine if x["warmup"] > 1]), half([x for x in mine if x["warmup"] <= 1])
        for h, tag in ((w, "warmup"), (c, "none")):
            got = {k: float(r[f"{k}_{tag}"]) for k in ("sens", "best")}
            got.update(best_lr=float(r[f"best_lr_{tag}"]), top=float(r[f"top_lr_{tag}"]),
                       div=int(r[f"diverged_{tag}"]))
            check(f"{r['scheme']} L {r['L']} {tag}: sensitivity {h['sens']:.6f}, best "
                  f"{h['best']:.6f} at {h['best_lr']:g}, top {h['top']:g}, {h['div']} diverged",
                  all(close(got[k], h[k]) for k in ("sens", "best", "best_lr", "top"))
                  and got["div"] == h["div"], got)
        needs = ("trains at no lr" if not w["top"] and not c["top"]
                 else "yes" if w["top"] > c["top"] else "no")
        verdicts.add(needs)
        check(f"{r['scheme']} L {r['L']}: needs warm-up '{needs}'", r["needs_warmup"] == needs,
              r["needs_warmup"])
    check("some run diverged and some trains (the test sees both rules)",
          any(x["diverged"] for x in runs) and any(x["final"] < TRAINS for x in runs),
          verdicts)
    s = run("table", "atlas", a)
    check("the Markdown table has a row per line", s.stdout.count(" | 2 | ") + s.stdout.count(" | 3 | ") == 6,
          s.stdout[:400])


def test_compare(a, b):
    s = run("table", "atlas-compare", a, b)
    check("table atlas-compare exits 0 on runs of other names", s.returncode == 0,
          s.stderr[-400:])
    ra, rb = read_runs(a), read_runs(b)
    cell = lambda r: (r["scheme"], r["L"], r["lr"], r["warmup"], r["seed"])
    byb = {cell(r): r for r in rb}
    pairs = [(r, byb[cell(r)]) for r in ra if cell(r) in byb]
    check("every run pairs by its cell", len(pairs) == len(ra) == len(rb), len(pairs))
    d = [abs(y["final"] - x["final"]) for x, y in pairs
         if math.isfinite(x["final"]) and math.isfinite(y["final"])]
    want = (f"{len(ra)} in each; {len(d)} finished in both. Final loss B - A over those: "
            f"median |Δ| {statistics.median(d):.2e}, largest {max(d):.2e}")
    check(f"the runs' line: {want}", want in s.stdout, s.stdout[:300])
    flips = sum(x["diverged"] != y["diverged"] for x, y in pairs)
    check(f"status differs in {flips} runs", f"**Status differs** in {flips} runs" in s.stdout,
          s.stdout[:600])
    # the lines (today's block's "post+rmsnorm" is the line of "post"): what moves, and ρ
    la = lines(ra)
    lb = lines([dict(r, scheme=r["scheme"]) for r in rb])
    moved = 0
    for k, (w, c) in la.items():
        x, y = (w, c), lb[k]
        moved += (needs(*x) != needs(*y)) or any(
            p["top"] != q["top"] or p["div"] != q["div"]
            or (p["best_lr"] != q["best_lr"] and not (math.isnan(p["best_lr"]) and math.isnan(q["best_lr"])))
            for p, q in zip(x, y))
    check(f"{moved} of {len(la)} cells move", f"\n{moved} of {len(la)} cells move." in s.stdout,
          s.stdout[-900:])
    t = run("table", "atlas-compare", a, b, "--tsv")
    got = {(r.split("\t")[0], r.split("\t")[1]): float(r.split("\t")[3])
           for r in t.stdout.splitlines()[1:]}
    for L in (2, 3):
        for wi, tag in ((0, "yes"), (1, "no")):
            keys = [k for k in la if k[1] == L]
            rho = spearman([la[k][wi]["sens"] for k in keys], [lb[k][wi]["sens"] for k in keys])
            check(f"L {L}, warm-up {tag}: Spearman ρ {rho:.6f} (mean ranks, by hand)",
                  close(got.get((str(L), tag), math.nan), rho), got)
    s = run("table", "atlas-compare", a)
    check("atlas-compare with one file: a usage error (exit 2)", s.returncode == 2, s.returncode)


def main():
    with tempfile.TemporaryDirectory(prefix="stability_atlas_") as tmp:
        a = sweep(tmp, "a", "layernorm")
        b = sweep(tmp, "b", "rmsnorm", "train.precision = float32\ntrain.beta2 = 0.9\n")
        if os.path.exists(a):
            test_table(a)
        if os.path.exists(a) and os.path.exists(b):
            test_compare(a, b)
    return summary("atlas_table")


if __name__ == "__main__":
    sys.exit(main())
