#!/usr/bin/python3
"""test_warmup_seeds.py — the warm-up study on seeded runs (docs/curvature.md "The experiment";
src/study/warmup_explained.c, warmup_auc.c) through `stability table warmup-cells |
warmup-explained | warmup-depth`, against oracles written from the definitions and h5py reads:

- a tiny seeded grid run in a temporary directory (tests/harness.py): outcome runs (Post-LN and
  Pre-LN, L = 2 and 3, three lrs — two where the seeds' outcomes differ —, seeds 1 and 2,
  warm-up 1 and 30), the indicators' runs of the
  same cells and seeds with the critical sharpness on, and in a third file runs that must be
  ignored (a relative-update cap, LAMB) at the same cells;
- every unit (scheme, L, lr, seed) paired with the outcome runs of its own seed, by config:
  outcome and needs warm-up by the definition (design §6d) from the runs' datasets; xiong, eos
  and eos_c (max over updates 1–20 of critical_sharpness·lr/2: 2/η with η the constant lr)
  from the indicators' run of that seed;
- the AUC table: fails vs trains pooled and within lr (Σ wins / Σ pairs over lr strata),
  recomputed from the units; the lr within lr is ½ with the interval [½, ½];
- the per-depth table: fails vs trains among each depth's units;
- the ignored runs change nothing; eos_c is a column only where runs have it.
Prints "ok - ..." / "FAIL - ..." per check, then "warmup seeds: N passed, M failed".
"""
import configparser
import math
import os
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, check, run, summary  # noqa: E402
from harness import repo_like  # noqa: E402
from test_warmup_explained import auc, outcome_of, read_tsv  # noqa: E402

GRID = """base = configs/tiny.ini
zip = model.placement, model.norm, init.scheme
model.placement = post, pre
model.norm = layernorm, layernorm
init.scheme = xavier_normal, xavier_normal
model.layers = 2, 3
model.vocab = 40
model.seq_len = 8
data.task = copy
data.batch = 8
train.schedule = constant
train.lr = 1e-2, 2e-2, 2e-1
init.seed = 1, 2
"""
OUTCOMES = "[sweep]\nname = {placement}_L{layers}_lr{lr}_w{warmup}_s{seed}\n" + GRID + """\
train.optimizer = adam
train.warmup = 1, 30
train.steps = 200
"""
INDICATORS = "[sweep]\nname = {placement}_L{layers}_lr{lr}_s{seed}\n" + GRID + """\
train.optimizer = adam
train.warmup = 1
train.steps = 20
probe.model_update = on
probe.curvature_every = 2
probe.curvature_until = 20
probe.curvature_active_only = on
probe.curvature_iters = 4
probe.curvature_block_iters = 0
probe.critical_sharpness = on
"""
OTHERS = "[sweep]\nname = {placement}_L{layers}_lr{lr}_{optimizer}_r{update_ratio_cap}_s{seed}\n" \
    + GRID.replace("init.scheme\n", "init.scheme | train.optimizer, train.update_ratio_cap\n", 1) \
    + """\
train.optimizer = adam, lamb
train.update_ratio_cap = 0.01, 0
train.warmup = 1
train.steps = 200
"""


def sweep(d, name, text):
    """Run a sweep in d (repo_like: its results/ its own); the merged file, or None."""
    with open(os.path.join(d, name + ".ini"), "w") as f:
        f.write(text)
    r = run("sweep", name + ".ini", "--jobs", "2", "--quiet", cwd=d)
    merged = os.path.join(d, "results", name + ".h5")
    check(f"the {name} sweep runs and merges", r.returncode == 0 and os.path.exists(merged),
          r.stderr[-400:])
    return merged if r.returncode == 0 and os.path.exists(merged) else None


def runs_of(path):
    """{(scheme, L, lr, seed, warm-up > 1): run group name} of a merged file, from configs."""
    out = {}
    with h5py.File(path) as f:
        for name, g in f["runs"].items():
            cfg = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
            text = g.attrs["config"]
            cfg.read_string(text.decode() if isinstance(text, bytes) else text)
            m, i, t = cfg["model"], cfg["init"], cfg["train"]
            key = (f"{m['placement']}-{m['norm']}-{i['scheme']}", int(m["layers"]),
                   float(t["lr"]), int(i["seed"]), int(t["warmup"]) > 1)
            out[key] = name
    return out


def unit_key(c):
    return (c["scheme"], int(c["L"]), float(c["lr"]), int(c["seed"]))


def peak(t, col, div):
    """max over curvature rows 1 ≤ update ≤ 20 of t[col]/div (finite), NaN when none."""
    s = t["curv_step"][()]
    q = t[col][()] / div
    sel = (s >= 1) & (s <= 20) & np.isfinite(q)
    return float(q[sel].max()) if sel.any() else math.nan


def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def check_units(cells, outcomes, indicators):
    """Every unit's outcome, needs warm-up and indicators from the runs of its own seed."""
    orun, irun = runs_of(outcomes), runs_of(indicators)
    with h5py.File(outcomes) as f:
        out = {k: outcome_of(f["runs"][n]) for k, n in orun.items()}
    bad, seeds = [], set()
    for c in cells:
        k = unit_key(c)
        seeds.add(k[3])
        want = out.get(k + (False,))
        needs = want != "trains" and out.get(k + (True,)) == "trains"
        if (c["outcome"], c["needs_warmup"]) != (want, str(int(needs))):
            bad.append(f"{k}: {c['outcome']}/{c['needs_warmup']}, its seed's runs say "
                       f"{want}/{int(needs)}")
    check(f"every unit's outcome and needs warm-up are its own seed's runs' ({len(cells)} units, "
          f"seeds {sorted(seeds)})", not bad and len(cells) == 24 and seeds == {1, 2},
          "; ".join(bad[:4]))
    differ = sum(1 for c in cells if c["seed"] == "1" and any(
        d["outcome"] != c["outcome"] for d in cells
        if unit_key(d)[:3] == unit_key(c)[:3] and d["seed"] == "2"))
    check(f"the seeds' outcomes differ in some cell ({differ}): pairing by seed matters",
          differ >= 1)
    bad, n = [], 0
    with h5py.File(indicators) as f:
        for c in cells:
            k = unit_key(c)
            t = f["runs"][irun[k + (False,)]]["train"]
            names = [x.decode() if isinstance(x, bytes) else x
                     for x in t["grad_fro"].attrs["param"]]
            xiong = float(t["grad_fro"][0, k[1] - 1, names.index("w2")])
            eos = peak(t, "precond_max_active", t["stability_threshold"][()])
            eos_c = peak(t, "critical_sharpness", 2.0 / k[2])   # λ_c over 2/η, η = lr
            got = (float(c["xiong"]), float(c["eos"]), float(c["eos_c"]))
            n += math.isfinite(eos_c)
            if not (got[0] == xiong and same(got[1], eos) and
                    (same(got[2], eos_c) or abs(got[2] - eos_c) <= 1e-12 * abs(eos_c))):
                bad.append(f"{k}: {got} vs {(xiong, eos, eos_c)}")
    check(f"every unit's xiong, eos and eos_c (max critical_sharpness·lr/2, updates 1–20) are "
          f"its seed's run's ({n} finite eos_c)", not bad and n >= 12, "; ".join(bad[:4]))


def within(fail, ok):
    """The AUC within strata: Σ wins / Σ pairs over pairs of one stratum; fail, ok (v, s)."""
    w = p = 0.0
    for f, s in fail:
        for o, t in ok:
            if s == t:
                p += 1
                w += 1.0 if f > o else 0.5 if f == o else 0.0
    return w / p if p else math.nan


def check_table(cells, table):
    """fails vs trains and within lr for every indicator, from the units."""
    worst, n, bad = 0.0, 0, []
    for row in table:
        k = row["indicator"]
        fin = [c for c in cells if math.isfinite(float(c[k]))]
        fail = [c for c in fin if c["outcome"] in ("stuck", "diverged")]
        ok = [c for c in fin if c["outcome"] == "trains"]
        want = (auc([float(c[k]) for c in fail], [float(c[k]) for c in ok]),
                within([(float(c[k]), c["lr"]) for c in fail],
                       [(float(c[k]), c["lr"]) for c in ok]))
        got = (float(row["fails_vs_trains"]), float(row["within_lr"]))
        for g, w in zip(got, want):
            if math.isnan(g) != math.isnan(w):
                bad.append(f"{k}: {got} vs {want}")
            elif not math.isnan(w):
                worst, n = max(worst, abs(g - w)), n + 1
        lo, hi = float(row["within_lr_lo"]), float(row["within_lr_hi"])
        if math.isfinite(got[1]) and not lo - 1e-12 <= got[1] <= hi + 1e-12:
            bad.append(f"{k}: within {got[1]} outside [{lo}, {hi}]")
    check(f"fails vs trains and within lr are the pair counts on the units ({n} AUCs, worst "
          f"{worst:.1e})", not bad and n >= 16 and worst <= 1e-12, "; ".join(bad[:4]))
    lr = next((r for r in table if r["indicator"] == "lr"), {})
    check(f"the lr ranks no units of one lr: within lr {lr.get('within_lr')} "
          f"[{lr.get('within_lr_lo')}, {lr.get('within_lr_hi')}]",
          (lr.get("within_lr"), lr.get("within_lr_lo"), lr.get("within_lr_hi")) == ("0.5",) * 3)
    check("eos_c is a row of the table (the runs have critical-sharpness rows)",
          any(r["indicator"] == "eos_c" for r in table))


def check_depth(cells, depth):
    """Each depth's AUC of fails vs trains among that depth's units."""
    bad, n = [], 0
    for row in depth:
        k = row["indicator"]
        for L in (2, 3):
            fin = [c for c in cells if int(c["L"]) == L and math.isfinite(float(c[k]))]
            want = auc([float(c[k]) for c in fin if c["outcome"] in ("stuck", "diverged")],
                       [float(c[k]) for c in fin if c["outcome"] == "trains"])
            got = float(row.get(f"L{L}", "nan"))
            if not same(got, want) and not abs(got - want) <= 1e-12:
                bad.append(f"{k} L {L}: {got} vs {want}")
            n += math.isfinite(want)
    check(f"the per-depth table: fails vs trains among each depth's units ({n} AUCs)",
          not bad and len(depth) >= 10 and n >= 8, "; ".join(bad[:4]))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = repo_like(os.path.join(tmp, "work"))
        outcomes = sweep(d, "outcomes", OUTCOMES)
        indicators = sweep(d, "indicators", INDICATORS)
        others = sweep(d, "others", OTHERS)
        if not (outcomes and indicators and others):
            sys.exit(summary("warmup seeds"))
        r = run("table", "warmup-cells", outcomes, indicators, "--tsv")
        check("table warmup-cells on a seeded grid (exit 0: every seed used, none refused)",
              r.returncode == 0, r.stderr[-300:])
        cells = read_tsv(r.stdout) if r.returncode == 0 else []
        if cells:
            check_units(cells, outcomes, indicators)
        r2 = run("table", "warmup-cells", outcomes, indicators, others, "--tsv")
        check("runs of a remedy (a ratio cap) or another optimizer (LAMB) in the set are ignored: "
              "the same units to the last bit", r2.returncode == 0 and r2.stdout == r.stdout,
              r2.stderr[-300:])
        t = run("table", "warmup-explained", outcomes, indicators, "--tsv")
        check("table warmup-explained on the seeded grid (exit 0)", t.returncode == 0,
              t.stderr[-300:])
        if cells and t.returncode == 0:
            check_table(cells, read_tsv(t.stdout))
        p = run("table", "warmup-depth", outcomes, indicators, "--tsv")
        if cells and p.returncode == 0:
            check_depth(cells, read_tsv(p.stdout))
        m = run("table", "warmup-explained", outcomes, indicators)
        check("the Markdown table names units and cells and carries the per-depth table",
              m.returncode == 0 and m.stdout.startswith("24 units (cell × seed) in 12 cells")
              and "| L = 2 (12) | L = 3 (12) |" in m.stdout, m.stdout[:300])
        with h5py.File(os.path.join(tmp, "old.h5"), "w") as f, h5py.File(indicators) as g:
            rg = f.require_group("runs")
            for name in g["runs"]:   # the indicators' runs as an old sweep wrote them
                g.copy(g["runs"][name], rg, name)
                del f["runs"][name]["train"]["critical_sharpness"]
        o = run("table", "warmup-explained", outcomes, os.path.join(tmp, "old.h5"), "--tsv")
        c = run("table", "warmup-cells", outcomes, os.path.join(tmp, "old.h5"), "--tsv")
        check("without critical-sharpness rows no eos_c row or column",
              o.returncode == 0 and "eos_c" not in o.stdout and c.returncode == 0
              and "eos_c" not in c.stdout, o.stderr[-300:])
    sys.exit(summary("warmup seeds"))


if __name__ == "__main__":
    main()
