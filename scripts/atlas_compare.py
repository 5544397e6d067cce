#!/usr/bin/python3
"""atlas_compare.py A.h5 B.h5 — two stability atlases cell by cell (docs/atlas.md, "In float32").

A and B are merged sweep files of the same runs (experiments/atlas.ini and atlas_f32.ini: the
same names, float64 and float32). Prints, as Markdown: how far the final losses of the runs
that trained in both lie apart; the runs whose status differs (diverged in one only); every cell
of scripts/atlas_table.py's table whose verdict moves (needs warm-up, the largest lr that trains,
the diverged count, the best lr); and per depth and warm-up the order of the schemes by LR
sensitivity in A and B with Spearman's rank correlation and the pairs that swap. Exit 1 when the
two files do not hold the same runs. Runs and cells follow scripts/run_identity.py's rule
(docs/design.md §6j): a run given twice counts once, a cell is keyed by every key that differs.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atlas_table   # noqa: E402  (read_runs, atlas_cells: the table's own definitions)
import script_inputs   # noqa: E402  (one line and exit 2 for a wrong input)


def load(stability, path):
    """The training runs of one merged atlas file, by name."""
    runs = atlas_table.read_runs(path, atlas_table.schemes_of(stability, path))
    return {r["name"]: r for r in runs}


def ranks(values):
    """Ranks 0..n-1 of values (NaN last)."""
    v = np.where(np.isfinite(values), values, np.inf)
    r = np.empty(len(v))
    r[np.argsort(v, kind="stable")] = np.arange(len(v))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="the reference atlas (float64)")
    ap.add_argument("b", help="the atlas set beside it (float32)")
    ap.add_argument("--trains", type=float, default=3.2, help="as scripts/atlas_table.py's")
    ap.add_argument("--common", action="store_true",
                    help="compare the runs both files hold (say how many) instead of refusing "
                         "files whose runs differ, e.g. an atlas rerun at some depths only")
    ap.add_argument("--stability", default=os.path.join(atlas_table.ROOT, "stability"),
                    help="the program whose table of schemes names the rows")
    a = ap.parse_args()
    script_inputs.positive("--trains", a.trains)
    script_inputs.merged(a.a, None)   # runs without /train: "not the same runs", exit 1
    script_inputs.merged(a.b, None)
    if not os.access(a.stability, os.X_OK):
        sys.exit(f"{a.stability}: not found (build it with make, or pass --stability)")
    ra, rb = load(a.stability, a.a), load(a.stability, a.b)
    if a.common and set(ra) != set(rb):
        keep = set(ra) & set(rb)
        print(f"**Common runs only:** {len(keep)} of {len(ra)} in A and {len(rb)} in B.\n")
        ra = {n: r for n, r in ra.items() if n in keep}
        rb = {n: r for n, r in rb.items() if n in keep}
    schemes, depths, ca = atlas_table.atlas_cells(list(ra.values()), a.trains)
    _, _, cb = atlas_table.atlas_cells(list(rb.values()), a.trains)
    if set(ra) != set(rb) or not ra:
        only = sorted(set(ra) ^ set(rb))
        print(f"{a.a} and {a.b} do not hold the same runs: {len(only)} in one only"
              + (f", e.g. {only[0]}" if only else ", none in both") + " (--common: compare "
              "the runs both hold)", file=sys.stderr)
        return 1
    both = [n for n in ra if np.isfinite(ra[n]["final"]) and np.isfinite(rb[n]["final"])]
    d = np.abs([rb[n]["final"] - ra[n]["final"] for n in both])
    print(f"**Runs.** {len(ra)} in each; {len(both)} finished in both" + (
          f". Final loss B - A over those: median |Δ| {np.median(d):.2e}, largest {np.max(d):.2e} "
          f"({both[int(np.argmax(d))]}); {int(np.sum(d == 0))} equal.\n" if both else ".\n"))
    flip = [n for n in sorted(ra) if ra[n]["diverged"] != rb[n]["diverged"]]
    print(f"**Status differs** in {len(flip)} runs" + (":" if flip else "."))
    for n in flip:
        print(f"- {n}: {'diverged' if ra[n]['diverged'] else 'finished'} in A, "
              f"{'diverged' if rb[n]['diverged'] else 'finished'} in B")
    print("\n**Cells whose verdict moves** (scheme, L: what, A → B)\n")
    moved = 0
    top = lambda t: f"{t:g}" if t > 0 else "none"
    for key in [k for k in ca if k in cb]:
        (s, L, label), x, y = key, ca[key], cb[key]
        what = []
        if x["needs"] != y["needs"]:
            what.append(f"needs warm-up {x['needs']} → {y['needs']}")
        for w, half in ((True, "warm-up"), (False, "none")):
            if x[w]["top"] != y[w]["top"]:
                what.append(f"largest lr that trains, {half}, {top(x[w]['top'])} → "
                            f"{top(y[w]['top'])}")
            if x[w]["div"] != y[w]["div"]:
                what.append(f"diverged, {half}, {x[w]['div']} → {y[w]['div']}")
            bx, by = x[w]["best"], y[w]["best"]   # (nan, nan): no run of the cell finished
            if bx[1] != by[1] and (np.isfinite(bx[1]) or np.isfinite(by[1])):
                what.append(f"best lr, {half}, {bx[1]:g} → {by[1]:g} "
                            f"(loss {bx[0]:.3f} → {by[0]:.3f})")
        if what:
            moved += 1
            print(f"- {s}{f' ({label})' if label else ''}, {L}: " + "; ".join(what))
    print(f"\n{moved} of {len(ca)} cells move.\n")
    print("**Order of the schemes by LR sensitivity** (least sensitive first)\n")
    print("| L | warm-up | Spearman ρ | pairs that swap (A's order) |")
    print("|---|---|---|---|")
    rows = [k for k in ca if k in cb]
    for L in depths:
        for w, label in ((True, "yes"), (False, "no")):
            keys = [k for k in rows if k[1] == L]   # every scheme and variant at this depth
            names = [k[0] + (f" ({k[2]})" if k[2] else "") for k in keys]
            sa = np.array([ca[k][w]["sens"] for k in keys])
            sb = np.array([cb[k][w]["sens"] for k in keys])
            qa, qb = ranks(sa), ranks(sb)   # a scheme with no finished run ranks last
            rho = float(np.corrcoef(qa, qb)[0, 1])
            swaps = [f"{names[i]} / {names[j]} ({sa[i]:.3f} / {sa[j]:.3f} → "
                     f"{sb[i]:.3f} / {sb[j]:.3f})"
                     for i in range(len(keys)) for j in range(len(keys))
                     if qa[i] < qa[j] and qb[i] > qb[j]]
            print(f"| {L} | {label} | {rho:.3f} | {'; '.join(swaps) or '—'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
