#!/usr/bin/python3
"""warmup_explained.py — which published explanation of warm-up predicts which failure
(docs/curvature.md "The experiment").

Reads the atlas's outcomes (results/atlas.h5, experiments/atlas.ini: every scheme × depth × lr,
300 updates, warm-up 1 or 100), the indicators' runs (results/warmup_explained.h5,
experiments/warmup_explained.ini: the same cells without warm-up, 20 updates, measured) and,
when given, the atlas at initialisation (results/atlas_init.h5: Admin's output change), and
prints a Markdown table: per indicator the ROC AUC of "the cell fails without warm-up" with a
bootstrap 95 % interval, and per failure kind where both kinds have cells.

A cell is a (scheme, depth, lr) without warm-up; its outcome, by scripts/atlas_table.py's rule
(a run trains when its final validation loss is below --trains, 3.2 nats): `trains`; `diverged`
(the run stopped on a non-finite or exploded loss); `stuck` (finished, final loss ≥ --trains).
A failure is stuck or diverged; `needs warm-up` counts the failures whose warm-up run of the
same lr trains. The indicators (higher = predicts failure), each from the run's first updates:

  lr        the learning rate itself: the baseline every indicator must beat
  xiong     ‖∂L/∂W²‖_F of the last layer's FFN at update 1 (θ_0; Xiong et al. 2020, Thm. 1)
  xiong_ratio  the same over Pre-LN's at the same depth and lr (Theorem 1's ratio, O(√L))
  admin     E_token ‖F(x, W) − F(x, W*)‖ at initialisation (Liu et al. 2020b; atlas_init's
            /probe/output_change, mean over its seeds); absent without --init
  eos       max over the curvature rows at updates 1…20 of η·λ_max(P⁻¹H)_active / (2(1+β₁)/(1−β₁))
            (Cohen et al. 2022; Kalra & Barkeshli 2024; docs/design.md §10)
  eos0      the same at update 0 alone (θ_0 with the first update's P)
  radam     1 − rₜ at t = 5 from β₂ (Liu et al. 2020a: ρₜ, rₜ depend on β₂ and t only): the
            same number for every cell, so its AUC is 0.5 by construction
  kosson    max over updates 1…20, layers and weight matrices of ‖W_t − W_{t−1}‖_F/‖W_{t−1}‖_F
            (Kosson et al. 2024)
  update_rms  max over updates 2…20 and layers of the RMS of m̂/(√v̂ + ε) (Wortsman et al.
            2023b); update 1 is left out: there m̂/(√v̂ + ε) = g/(|g| + ε) ≈ ±1, RMS ≈ 1 in
            every run by construction
  deepnet   ‖F(x, θ_1) − F(x, θ_0)‖ after the first update (Wang et al. 2022's model update)

AUC = P(indicator of a failing cell > that of a training cell) + ½ P(equal) (Mann–Whitney);
the interval: percentiles 2.5 and 97.5 of B stratified bootstrap replicates (failing and
training cells resampled separately, numpy's default_rng(--seed)). A cell whose indicator is
not finite (a run that diverged before its first row) is left out of that indicator's row and
counted in its n.

    scripts/warmup_explained.py results/atlas.h5 results/warmup_explained.h5 \\
        --init results/atlas_init.h5 [--cells cells.tsv]
"""
import argparse
import configparser
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_inputs   # noqa: E402  (one line and exit 2 for a wrong input)

MATRICES = ("wq", "wk", "wv", "wo", "w1", "w2")
INDICATORS = ("lr", "xiong", "xiong_ratio", "admin", "eos", "eos0", "radam", "kosson",
              "update_rms", "deepnet")
PRE_LN = "pre-layernorm-xavier_normal"


# ------------------------------------------------------------------------------ statistics

def auc(fail, ok):
    """Mann–Whitney's AUC: P(f > o) + ½ P(f = o) over every pair (f in fail, o in ok), from
    average ranks. NaN when either group is empty."""
    fail, ok = np.asarray(fail, float), np.asarray(ok, float)
    nf, no = len(fail), len(ok)
    if nf == 0 or no == 0:
        return math.nan
    x = np.concatenate([fail, ok])
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    xs = x[order]
    i = 0
    while i < len(xs):   # average ranks over ties (1-based)
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[i]:
            j += 1
        ranks[order[i:j + 1]] = 0.5 * (i + j) + 1.0
        i = j + 1
    return float((ranks[:nf].sum() - nf * (nf + 1) / 2.0) / (nf * no))


def bootstrap_auc(fail, ok, B=2000, seed=1):
    """The B stratified bootstrap replicates of auc (each group resampled with replacement at
    its own size), numpy default_rng(seed)."""
    fail, ok = np.asarray(fail, float), np.asarray(ok, float)
    rng = np.random.default_rng(seed)
    out = np.empty(B)
    for b in range(B):
        out[b] = auc(fail[rng.integers(0, len(fail), len(fail))],
                     ok[rng.integers(0, len(ok), len(ok))])
    return out


def auc_ci(fail, ok, B=2000, seed=1):
    """(AUC, 2.5 %, 97.5 %) of the finite values."""
    fail = [x for x in fail if np.isfinite(x)]
    ok = [x for x in ok if np.isfinite(x)]
    if not fail or not ok:
        return math.nan, math.nan, math.nan
    reps = bootstrap_auc(fail, ok, B, seed)
    return auc(fail, ok), float(np.percentile(reps, 2.5)), float(np.percentile(reps, 97.5))


def radam_rect(beta2, t):
    """RAdam's rₜ (Liu et al. 2020a, Alg. 2); NaN while ρₜ ≤ 4."""
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    b2t = beta2 ** t
    rho = rho_inf - 2.0 * t * b2t / (1.0 - b2t)
    if rho <= 4.0:
        return math.nan
    return math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))


# ------------------------------------------------------------------------------ reading

def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def config_of(g):
    cfg = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
    cfg.read_string(text(g.attrs["config"]))
    return cfg


def cell_key(name, cfg=None):
    """(scheme, L, lr) from a run name {placement}-{norm}-{init.scheme}_L{layers}_lr{lr}[_w…];
    a name of another form (Fig. 2's runs) is its own scheme, L and lr from its config."""
    if "_L" not in name and cfg is not None:
        return name, int(cfg["model"]["layers"]), float(cfg["train"]["lr"])
    scheme, rest = name.split("_L", 1)
    L, rest = rest.split("_lr", 1)
    return scheme, int(L), float(rest.split("_w", 1)[0])


def outcome(status, final, trains):
    """trains | stuck | diverged, scripts/atlas_table.py's rule."""
    if status == "diverged":
        return "diverged"
    return "trains" if np.isfinite(final) and final < trains else "stuck"


def final_loss(t):
    """The last validation loss, else the mean of the last tenth of training losses (as
    scripts/atlas_table.py and `stability plot` take it)."""
    val = t["val_loss"][:] if "val_loss" in t else np.array([])
    if len(val) and np.isfinite(val[-1]):
        return float(val[-1])
    loss = t["loss"][:]
    return float(np.mean(loss[-max(len(loss) // 10, 1):]))


def read_outcomes(path, trains):
    """{(scheme, L, lr): {'outcome', 'needs_warmup'}} of the runs without warm-up."""
    runs = {}
    with h5py.File(path, "r") as f:
        for name, g in f["runs"].items():
            if "train" not in g:
                continue
            cfg = config_of(g)
            warm = int(cfg["train"]["warmup"]) > 1
            runs[cell_key(name), warm] = outcome(text(g.attrs["status"]), final_loss(g["train"]),
                                                 trains)
    cells = {}
    for (key, warm), out in runs.items():
        if warm:
            continue
        cells[key] = {"outcome": out,
                      "needs_warmup": out != "trains" and runs.get((key, True)) == "trains"}
    return cells


def param_index(ds, name):
    names = [text(x) for x in ds.attrs["param"]]
    return names.index(name) if name in names else None


def eos_peak(steps, active, threshold, lo, hi):
    """max over rows with lo ≤ step ≤ hi of active/threshold (finite rows; NaN if none)."""
    steps, r = np.asarray(steps), np.asarray(active, float) / np.asarray(threshold, float)
    sel = (steps >= lo) & (steps <= hi) & np.isfinite(r)
    return float(r[sel].max()) if sel.any() else math.nan


def finite_max(a):
    a = np.asarray(a, float)
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else math.nan


def read_indicators(path, upto=20):
    """{(scheme, L, lr): {indicator: value}} from the indicators' runs."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, g in f["runs"].items():
            if "train" not in g:
                continue
            t, cfg = g["train"], config_of(g)
            key = cell_key(name, cfg)
            L = key[1]
            ind = {"lr": key[2]}
            w2 = param_index(t["grad_fro"], "w2") if "grad_fro" in t else None
            ind["xiong"] = float(t["grad_fro"][0, L - 1, w2]) if w2 is not None else math.nan
            if "curv_step" in t:
                cs = t["curv_step"][:]
                ind["eos"] = eos_peak(cs, t["precond_max_active"][:], t["stability_threshold"][:],
                                      1, upto)
                ind["eos0"] = eos_peak(cs, t["precond_max_active"][:],
                                       t["stability_threshold"][:], 0, 0)
            beta2 = float(cfg["train"]["beta2"])
            r5 = radam_rect(beta2, 5)
            ind["radam"] = 1.0 - r5 if np.isfinite(r5) else 1.0   # un-adapted at t = 5: 1
            if "update_rel" in t:
                us = t["update_step"][:]
                sel = us <= upto
                cols = [i for i in (param_index(t["update_rel"], m) for m in MATRICES) if i is not None]
                ind["kosson"] = finite_max(t["update_rel"][:][sel][:, :, cols])
                mu = t["model_update"][:]
                ind["deepnet"] = float(mu[0]) if len(mu) and us[0] == 1 else math.nan
            if "update_rms" in t:
                steps = t["step"][:]
                ind["update_rms"] = finite_max(t["update_rms"][:][(steps >= 2) & (steps <= upto)])
            out[key] = ind
    # Theorem 1's ratio: against Pre-LN at the same depth and lr
    for (s, L, lr), ind in out.items():
        ref = out.get((PRE_LN, L, lr), {}).get("xiong", math.nan)
        ind["xiong_ratio"] = ind["xiong"] / ref if ref and np.isfinite(ref) else math.nan
    return out


def read_admin(path):
    """{(scheme, L): mean output change over the probe seeds} of atlas_init's probes."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, g in f["runs"].items():
            if "probe" not in g or "output_change" not in g["probe"]:
                continue
            scheme, L = name.split("_L", 1)
            out[scheme, int(L.split("_", 1)[0])] = float(np.nanmean(g["probe"]["output_change"][:]))
    return out


# ------------------------------------------------------------------------------ the table

def paired_diff_ci(fa, oa, fb, ob, B=2000, seed=1):
    """AUC(a) − AUC(b) over the same cells, with the 2.5 % and 97.5 % points of B stratified
    bootstrap replicates that resample the cells once for both (so the two indicators' shared
    noise cancels); fa/oa and fb/ob are the failing/training cells' values in one order. Cells
    where either value is not finite are left out."""
    f = [(x, y) for x, y in zip(fa, fb) if np.isfinite(x) and np.isfinite(y)]
    o = [(x, y) for x, y in zip(oa, ob) if np.isfinite(x) and np.isfinite(y)]
    if not f or not o:
        return math.nan, math.nan, math.nan
    f, o = np.asarray(f), np.asarray(o)
    d = auc(f[:, 0], o[:, 0]) - auc(f[:, 1], o[:, 1])
    rng = np.random.default_rng(seed)
    reps = np.empty(B)
    for b in range(B):
        i, j = rng.integers(0, len(f), len(f)), rng.integers(0, len(o), len(o))
        reps[b] = auc(f[i, 0], o[j, 0]) - auc(f[i, 1], o[j, 1])
    return d, float(np.percentile(reps, 2.5)), float(np.percentile(reps, 97.5))


def rows(cells, inds, admin, B, seed):
    """Per indicator: (name, n, AUC fail-vs-trains (lo, hi), its difference to lr's (paired),
    needs-warm-up-vs-trains, stuck-vs-trains, diverged-vs-trains, diverged-vs-stuck)."""
    keys = sorted(set(cells) & set(inds))
    lr = {k: inds[k].get("lr", math.nan) for k in keys}
    table = []
    for name in INDICATORS:
        val = {}
        for k in keys:
            v = admin.get(k[:2], math.nan) if name == "admin" else inds[k].get(name, math.nan)
            val[k] = v
        if name == "admin" and not admin:
            continue
        grp = lambda o: [val[k] for k in keys if cells[k]["outcome"] in o]
        n = sum(np.isfinite(v) for v in val.values())
        fails = [k for k in keys if cells[k]["outcome"] in ("stuck", "diverged")]
        trains = [k for k in keys if cells[k]["outcome"] == "trains"]
        needs = [val[k] for k in keys if cells[k]["needs_warmup"]]
        table.append((name, n,
                      auc_ci(grp(("stuck", "diverged")), grp(("trains",)), B, seed),
                      paired_diff_ci([val[k] for k in fails], [val[k] for k in trains],
                                     [lr[k] for k in fails], [lr[k] for k in trains], B, seed),
                      auc_ci(needs, grp(("trains",)), B, seed),
                      auc_ci(grp(("stuck",)), grp(("trains",)), B, seed),
                      auc_ci(grp(("diverged",)), grp(("trains",)), B, seed),
                      auc_ci(grp(("diverged",)), grp(("stuck",)), B, seed)))
    return keys, table


def fmt(a):
    return "–" if not np.isfinite(a[0]) else f"{a[0]:.2f} [{a[1]:.2f}, {a[2]:.2f}]"


def fmt_diff(a):
    return "–" if not np.isfinite(a[0]) else f"{a[0]:+.2f} [{a[1]:+.2f}, {a[2]:+.2f}]"


def warm_runs(path):
    """How many runs of the merged file path have a warm-up (> 1 update)."""
    with h5py.File(path, "r") as f:
        return sum(int(config_of(g)["train"].get("warmup", "1")) > 1
                   for g in f["runs"].values() if "train" in g and "config" in g.attrs)


def check_inputs(a):
    """One line and exit 2 for a wrong input (scripts/script_inputs.py): the options' ranges,
    files given twice, files that are not merged sweep files, and the two merged files swapped
    (the atlas has warm-up runs, the indicators' runs have none)."""
    script_inputs.positive("--trains", a.trains)
    script_inputs.bootstrap("--bootstrap", a.bootstrap)
    files = [x for x in (a.atlas, a.indicators, a.init, a.fig2) if x]
    script_inputs.distinct(files)
    for x in files:
        script_inputs.merged(x, "probe" if x == a.init else "train")
    if not warm_runs(a.atlas):
        script_inputs.fail(f"{a.atlas}: no run with warm-up: not the atlas's outcomes "
                           f"(results/atlas.h5); the two files swapped?")
    if warm_runs(a.indicators):
        script_inputs.fail(f"{a.indicators}: runs with warm-up: the atlas's outcomes, not the "
                           f"indicators' runs (results/warmup_explained.h5); the two files swapped?")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("atlas", help="the atlas's merged file (outcomes)")
    ap.add_argument("indicators", help="experiments/warmup_explained.ini's merged file")
    ap.add_argument("--init", help="atlas_init's merged file (Admin's output change)")
    ap.add_argument("--trains", type=float, default=3.2,
                    help="a run trains when its final loss is below this (atlas_table.py's rule)")
    ap.add_argument("--bootstrap", type=int, default=2000, help="bootstrap replicates B")
    ap.add_argument("--seed", type=int, default=1, help="the bootstrap's generator seed")
    ap.add_argument("--cells", help="also write every cell's outcome and indicators (TSV)")
    ap.add_argument("--fig2", help="also print the indicators of Fig. 2's runs "
                    "(experiments/warmup_explained_fig2.ini's merged file)")
    a = ap.parse_args()
    check_inputs(a)
    cells = read_outcomes(a.atlas, a.trains)
    inds = read_indicators(a.indicators)
    admin = read_admin(a.init) if a.init else {}
    keys, table = rows(cells, inds, admin, a.bootstrap, a.seed)
    if not keys:
        sys.exit(f"{a.atlas}, {a.indicators}: no cell in both")
    count = lambda o: sum(cells[k]["outcome"] == o for k in keys)
    needs = sum(cells[k]["needs_warmup"] for k in keys)
    print(f"{len(keys)} cells without warm-up: {count('trains')} train, {count('stuck')} stuck, "
          f"{count('diverged')} diverged ({needs} of the failures train with warm-up); AUC with "
          f"bootstrap 95 % intervals (B = {a.bootstrap}, seed {a.seed}, stratified).\n")
    print("| indicator | n | fails vs trains | minus lr's (paired) | needs warm-up vs trains | "
          "stuck vs trains | diverged vs trains | diverged vs stuck |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, *aucs in table:
        print(f"| {name} | {n} | " + " | ".join(fmt(x) if i != 1 else fmt_diff(x)
                                               for i, x in enumerate(aucs)) + " |")
    if a.fig2:   # three or four runs: their values, no AUC
        runs = read_indicators(a.fig2)
        names = [n for n in INDICATORS if n not in ("admin", "xiong_ratio")]
        print("\nFig. 2's runs (outcomes: Fig. 2 itself, docs/warmup.md):\n")
        print("| run | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for k in sorted(runs):
            print(f"| {k[0]} | " + " | ".join(f"{runs[k].get(n, math.nan):.3g}" for n in names) + " |")
    if a.cells:
        with open(a.cells, "w") as f:
            f.write("scheme\tL\tlr\toutcome\tneeds_warmup\t" + "\t".join(INDICATORS) + "\n")
            for k in keys:
                v = [admin.get(k[:2], math.nan) if n == "admin" else inds[k].get(n, math.nan)
                     for n in INDICATORS]
                # every value to the last bit (repr: the shortest string that reads back the
                # same double): tests/test_indicators_plot.py holds the figure to it
                f.write(f"{k[0]}\t{k[1]}\t{k[2]:g}\t{cells[k]['outcome']}\t"
                        f"{int(cells[k]['needs_warmup'])}\t" + "\t".join(repr(float(x)) for x in v)
                        + "\n")


if __name__ == "__main__":
    main()
