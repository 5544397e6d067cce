#!/usr/bin/python3
"""test_warmup_explained.py — the warm-up study (docs/curvature.md "The experiment";
src/study/warmup_explained.c) through `stability table warmup-explained | warmup-cells |
warmup-runs` and the figure warmup_indicators, against oracles written from the definitions:

- reading: synthetic merged files (h5py) with one cell per outcome, whose outcomes, needs
  warm-up, EoS peak (updates 1–20, not 25), eos0, Theorem 1's w2 of the last layer and its
  ratio to Pre-LN, Kosson (matrices only, updates ≤ 20), update RMS (updates 2–20), DeepNet's
  model update at update 1 and RAdam's 1 − r₅ (Liu et al. 2020a, Alg. 2 evaluated here) are
  known by construction; the AUC table of those cells worked by hand;
- RAdam: the program's rₜ (train/optim.c's, which the study's `radam` uses), read from a tiny
  radam run's /train/radam_rect, against torch.optim.RAdam's step on a constant gradient
  wherever PyTorch rectifies (ρₜ > 5; the paper's threshold is 4);
- a trial-sized pair of sweeps run in a temporary directory (an atlas-like sweep, Post-LN and
  Pre-LN, L = 2 and 3, four lrs, warm-up 1 and 30; the indicators' sweep of the same cells):
  every cell's outcome against the definition (design §6d: diverged as the run says, else
  trains when the last validation loss, or the mean of the last tenth of training losses, is
  below 3.2) and its xiong and eos against the run's datasets; every AUC of the table
  against a Mann–Whitney count pair by pair on the cells the program reports (scipy is not
  installed here); intervals around their AUC; the figure's points and panel AUCs the
  table's.
Prints "ok - ..." / "FAIL - ..." per check, then "warmup explained: N passed, M failed".
"""
import math
import os
import re
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, check, run, blocks, summary  # noqa: E402

INDICATORS = ("lr", "xiong", "xiong_ratio", "admin", "eos", "eos0", "radam", "kosson",
              "update_rms", "deepnet")
OUT = {"trains": 0, "needs warm-up": 1, "stuck": 2, "diverged": 3}
# r₅ at β₂ = 0.98 (Liu et al. 2020a, Alg. 2) by hand: ρ_∞ = 2/(1 − β₂) − 1 = 99,
# ρ₅ = ρ_∞ − 2·5·β₂⁵/(1 − β₂⁵), r₅ = √((ρ₅ − 4)(ρ₅ − 2)ρ_∞ / ((ρ_∞ − 4)(ρ_∞ − 2)ρ₅))
RHO5 = 99.0 - 10.0 * 0.98 ** 5 / (1.0 - 0.98 ** 5)                          # 4.9192…
R5 = math.sqrt((RHO5 - 4.0) * (RHO5 - 2.0) * 99.0 / (95.0 * 97.0 * RHO5))   # 0.0766…


def auc(fail, ok):
    """Mann–Whitney's AUC from its definition: P(f > o) + ½ P(f = o) over every pair."""
    if not fail or not ok:
        return math.nan
    return sum(1.0 if f > o else 0.5 if f == o else 0.0 for f in fail for o in ok) / (
        len(fail) * len(ok))


def read_tsv(text):
    """[{column: text}] of a TSV with a header line."""
    lines = [x for x in text.splitlines() if x.strip()]
    head = lines[0].split("\t")
    return [dict(zip(head, x.split("\t"))) for x in lines[1:]]


# ------------------------------------------------------------------ synthetic files

PARAMS = np.array([b"wq", b"bq", b"wk", b"bk", b"wv", b"bv", b"wo", b"bo", b"w1", b"b1", b"w2",
                   b"b2"], dtype=object)


def config_of(name, L, warmup, steps):
    """The resolved config of a run named {placement}-{norm}-{init}_L{L}_lr{lr}[…]: the study
    reads the cell from the config, so the fixture writes it there (steps tell an atlas run
    from the indicators' run of its cell: the same config would be one run given twice)."""
    scheme, rest = name.split("_L", 1)
    placement, norm, init = scheme.split("-", 2)
    lr = rest.split("_lr", 1)[1].split("_", 1)[0]
    return (f"[model]\nplacement = {placement}\nnorm = {norm}\nlayers = {L}\n[init]\n"
            f"scheme = {init}\n[train]\nlr = {lr}\nwarmup = {warmup}\nbeta2 = 0.98\nsteps = {steps}\n")


def atlas_run(f, name, warm, status, val):
    """An outcome run of the atlas: 3 updates, the last validation loss val."""
    g = f.create_group(f"runs/{name}")
    g.attrs["config"] = config_of(name, 2, 100 if warm else 1, 3)
    g.attrs["status"] = status
    t = g.create_group("train")
    t["step"] = np.arange(1, 4)
    t["loss"] = np.array([5.5, 4.0, val])
    t["eval_step"] = np.array([3])
    t["val_loss"] = np.array([val])


def indicator_run(f, name, grad_w2, peaks, rel, rms):
    """An indicators' run, L = 2: xiong grad_w2, active ratios peaks at updates 5, 10, 20 (50 at
    update 0, 1e4 at 25: out), Kosson rel (w1, update 4), update RMS rms (layer 2, update 3)."""
    g = f.create_group(f"runs/{name}")
    g.attrs["config"] = config_of(name, 2, 1, 21)
    g.attrs["status"] = "done"
    t = g.create_group("train")
    t["loss"] = np.linspace(5.5, 5.0, 21)
    gf = np.zeros((1, 2, len(PARAMS)))
    gf[0, 1, 10] = grad_w2                     # the last layer's w2
    gf[0, 0, 10] = 99.0                        # the first layer's: not Theorem 1's
    t["grad_fro"] = gf
    t["grad_fro"].attrs["param"] = PARAMS
    t["curv_step"] = np.array([0, 5, 10, 20, 25])
    t["stability_threshold"] = np.full(5, 100.0)
    t["precond_max_active"] = np.array([5000.0] + [100.0 * x for x in peaks] + [1e6])
    t["update_step"] = np.arange(1, 22)
    u = np.zeros((21, 2, len(PARAMS)))
    u[3, 1, 8] = rel                           # w1 at update 4
    u[0, 0, 1] = 1e9                           # a bias (from 0): not a matrix
    u[20, 0, 0] = 1e9                          # update 21: not counted
    t["update_rel"] = u
    t["update_rel"].attrs["param"] = PARAMS
    t["model_update"] = np.linspace(0.1, 2.1, 21)
    t["step"] = np.arange(1, 22)
    r = np.full((21, 2), 0.5)
    r[2, 1] = rms
    r[20, 0] = 50.0                            # update 21: not counted
    r[0, 0] = 9.0                              # update 1 (≈ 1 by construction): not counted
    t["update_rms"] = r


def test_reading(tmp):
    atlas, ind = os.path.join(tmp, "a.h5"), os.path.join(tmp, "i.h5")
    post, pre = "post-layernorm-xavier_normal", "pre-layernorm-xavier_normal"
    with h5py.File(atlas, "w") as f:
        atlas_run(f, f"{post}_L2_lr1e-3_w1", False, "done", 3.5)      # stuck, needs warm-up
        atlas_run(f, f"{post}_L2_lr1e-3_w100", True, "done", 2.5)
        atlas_run(f, f"{post}_L2_lr1e-2_w1", False, "diverged", 3.0)  # diverged
        atlas_run(f, f"{post}_L2_lr1e-2_w100", True, "done", 3.6)
        atlas_run(f, f"{pre}_L2_lr1e-3_w1", False, "done", 2.0)       # trains
    with h5py.File(ind, "w") as f:
        indicator_run(f, f"{post}_L2_lr1e-3", 4.0, (1.0, 7.0, 2.0), 0.3, 3.0)
        indicator_run(f, f"{post}_L2_lr1e-2", 8.0, (0.5, 0.25, 0.1), 0.2, 2.0)
        indicator_run(f, f"{pre}_L2_lr1e-3", 2.0, (0.5, 0.25, 0.1), 0.1, 1.0)
    r = run("table", "warmup-cells", atlas, ind, "--tsv")
    check("table warmup-cells on synthetic files (exit 0)", r.returncode == 0, r.stderr[-300:])
    cells = {(c["scheme"], c["lr"]): c for c in read_tsv(r.stdout)} if r.returncode == 0 else {}
    a, b, c = cells.get((post, "0.001"), {}), cells.get((post, "0.01"), {}), cells.get((pre, "0.001"), {})
    check(f"outcomes and needs warm-up by the rule ({len(cells)} cells)",
          len(cells) == 3 and (a.get("outcome"), a.get("needs_warmup")) == ("stuck", "1")
          and (b.get("outcome"), b.get("needs_warmup")) == ("diverged", "0")
          and (c.get("outcome"), c.get("needs_warmup")) == ("trains", "0"), str(cells))
    v = {k: float(x) for k, x in a.items() if k in INDICATORS}
    check(f"EoS peak over updates 1–20 and at update 0 ({v.get('eos')}, {v.get('eos0')})",
          v.get("eos") == 7.0 and v.get("eos0") == 50.0)
    check(f"Theorem 1: the last layer's w2 and its ratio to Pre-LN ({v.get('xiong')}, "
          f"{v.get('xiong_ratio')}); none at lr 1e-2 ({b.get('xiong_ratio')})",
          v.get("xiong") == 4.0 and v.get("xiong_ratio") == 2.0 and b.get("xiong_ratio") == "nan")
    check(f"Kosson over matrices and updates ≤ 20, update RMS over 2–20, model update at 1 "
          f"({v.get('kosson')}, {v.get('update_rms')}, {v.get('deepnet')})",
          v.get("kosson") == 0.3 and v.get("update_rms") == 3.0
          and abs(v.get("deepnet", 0) - 0.1) < 1e-15)
    check(f"RAdam's term 1 − r₅ at β₂ = 0.98 ({v.get('radam')} against {1 - R5:.15f} by hand; "
          f"r₅ ≈ 0.077 as Liu et al.)", abs(v.get("radam", 0) - (1 - R5)) < 1e-12
          and abs(R5 - 0.077) < 5e-4)
    r = run("table", "warmup-explained", atlas, ind, "--tsv")
    rows = {x["indicator"]: x for x in read_tsv(r.stdout)} if r.returncode == 0 else {}
    # xiong: fails {4, 8} vs trains {2}: 1; eos: fails {7, 0.5} vs {0.5}: (1 + ½)/2 = ¾;
    # stuck {7} vs diverged {0.5}: diverged vs stuck 0; lr: {1e-3, 1e-2} vs {1e-3}: ¾
    got = {k: float(rows.get(k, {}).get(c, "nan")) for k, c in (
        ("xiong", "fails_vs_trains"), ("eos", "fails_vs_trains"), ("lr", "fails_vs_trains"))}
    got["eos-lr"] = float(rows.get("eos", {}).get("minus_lr", "nan"))
    got["eos div/stuck"] = float(rows.get("eos", {}).get("diverged_vs_stuck", "nan"))
    want = {"xiong": 1.0, "eos": 0.75, "lr": 0.75, "eos-lr": 0.0, "eos div/stuck": 0.0}
    check(f"table warmup-explained: the AUCs of the three cells by hand ({got})",
          r.returncode == 0 and got == want and "admin" not in rows, r.stderr[-300:])
    r = run("table", "warmup-runs", ind)
    check("table warmup-runs: a row per indicators' run, by name",
          r.returncode == 0 and r.stdout.count(f"| {post}_L2_lr") == 2 and "| 0.3 |" in r.stdout,
          r.stdout[-400:] + r.stderr[-300:])
    r = run("table", "warmup-explained", atlas)
    check("table warmup-explained without the indicators' runs: exit 1, said",
          r.returncode == 1 and "no cell" in r.stderr, r.stderr[-300:])


# ------------------------------------------------------------------ RAdam against PyTorch

def torch_radam_steps(beta2, T):
    """The steps torch.optim.RAdam (torch 1.13, an implementation apart from the program's)
    takes on a constant gradient 1 with lr 1 and eps 0: m̂ₜ = v̂ₜ = 1, so step t is rₜ once
    rectified (ρₜ > 5 in PyTorch's code) and 1 before."""
    import torch
    p = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.RAdam([p], lr=1.0, betas=(0.9, beta2), eps=0.0)
    steps, prev = [], 0.0
    for _ in range(T):
        p.grad = torch.ones(1, dtype=torch.float64)
        opt.step()
        steps.append(prev - float(p))
        prev = float(p)
    return steps


def test_radam(tmp):
    worst, n, bad = 0.0, 0, []
    for beta2 in (0.98, 0.999):
        out = os.path.join(tmp, f"radam_{beta2}.h5")
        r = run("train", "tiny", "--out", out, "--quiet", "--set", "train.optimizer=radam",
                "--set", f"train.beta2={beta2}", "--set", "train.steps=40")
        if r.returncode:
            bad.append(r.stderr[-300:])
            continue
        with h5py.File(out) as f:
            rect = f["train/radam_rect"][()]
        steps = torch_radam_steps(beta2, 40)
        for t in range(1, 41):
            rho = 2.0 / (1.0 - beta2) - 1.0 - 2.0 * t * beta2 ** t / (1.0 - beta2 ** t)
            if rho > 5.0:
                worst, n = max(worst, abs(rect[t - 1] - steps[t - 1])), n + 1
    check(f"the program's rₜ (/train/radam_rect) = torch.optim.RAdam's step on a constant "
          f"gradient, {n} (β₂, t) pairs, worst {worst:.1e}", not bad and n >= 60 and worst < 1e-12,
          "; ".join(bad))


# ------------------------------------------------------------------ a trial-sized study

COMMON = """base = {repo}/configs/tiny.ini
zip = model.placement, model.norm, init.scheme
model.placement = post, pre
model.norm = layernorm, layernorm
init.scheme = xavier_normal, xavier_normal
model.layers = 2, 3
model.vocab = 40
model.seq_len = 8
data.task = copy
data.batch = 8
train.optimizer = adam
train.schedule = constant
train.lr = 1e-3, 3e-2, 2e-1, 100
"""
ATLAS = "[sweep]\nname = {placement}-{norm}-{init.scheme}_L{layers}_lr{lr}_w{warmup}\n" + COMMON + """\
train.warmup = 1, 30
train.steps = 200
"""
IND = "[sweep]\nname = {placement}-{norm}-{init.scheme}_L{layers}_lr{lr}\n" + COMMON + """\
train.warmup = 1
train.steps = 20
probe.model_update = on
probe.curvature_every = 2
probe.curvature_until = 20
probe.curvature_active_only = on
probe.curvature_iters = 4
probe.curvature_block_iters = 0
"""


def sweep(tmp, name, text):
    """Run a sweep in tmp (its results/ there, not the repository's); the merged file."""
    ini = os.path.join(tmp, name + ".ini")
    with open(ini, "w") as f:
        f.write(text.replace("{repo}", REPO))
    os.makedirs(os.path.join(tmp, "results"), exist_ok=True)
    r = run("sweep", ini, "--jobs", "2", "--quiet", cwd=tmp)
    merged = os.path.join(tmp, "results", name + ".h5")
    check(f"the {name} sweep runs and merges", r.returncode == 0 and os.path.exists(merged),
          r.stderr[-400:])
    return merged if r.returncode == 0 else None


def outcome_of(g, trains=3.2):
    """A run's outcome by the definition (docs/design.md §6d), from its datasets."""
    if g.attrs["status"] in ("diverged", b"diverged"):
        return "diverged"
    t = g["train"]
    val = t["val_loss"][()] if "val_loss" in t else []
    if len(val) and np.isfinite(val[-1]):
        final = float(val[-1])
    else:
        loss = t["loss"][()]
        final = float(np.mean(loss[-max(len(loss) // 10, 1):]))
    return "trains" if np.isfinite(final) and final < trains else "stuck"


def runs_by_cell(path):
    """{(scheme, L, lr, warm-up > 1): run group name} of a merged file, from each run's config."""
    import configparser
    out = {}
    with h5py.File(path) as f:
        for name, g in f["runs"].items():
            cfg = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
            text = g.attrs["config"]
            cfg.read_string(text.decode() if isinstance(text, bytes) else text)
            m, i, t = cfg["model"], cfg["init"], cfg["train"]
            key = (f"{m['placement']}-{m['norm']}-{i['scheme']}", int(m["layers"]),
                   float(t["lr"]), int(t["warmup"]) > 1)
            out[key] = name
    return out


def check_cells(cells, atlas, ind):
    """Each cell's outcome, needs warm-up, xiong and eos against the runs' datasets."""
    arun, irun = runs_by_cell(atlas), runs_by_cell(ind)
    with h5py.File(atlas) as f:
        out = {k: outcome_of(f["runs"][name]) for k, name in arun.items()}
    bad = []
    for c in cells:
        key = (c["scheme"], int(c["L"]), float(c["lr"]))
        want = out.get(key + (False,))
        needs = want != "trains" and out.get(key + (True,)) == "trains"
        if (c["outcome"], c["needs_warmup"]) != (want, str(int(needs))):
            bad.append(f"{key}: {c['outcome']}/{c['needs_warmup']}, runs say {want}/{int(needs)}")
    check(f"every cell's outcome and needs warm-up by the definition ({len(cells)} cells)",
          not bad and len(cells) == 16, "; ".join(bad[:4]))
    bad = []
    with h5py.File(ind) as f:
        for c in cells:
            key = (c["scheme"], int(c["L"]), float(c["lr"]), False)
            t = f["runs"][irun[key]]["train"]
            names = [x.decode() if isinstance(x, bytes) else x for x in t["grad_fro"].attrs["param"]]
            xiong = float(t["grad_fro"][0, int(c["L"]) - 1, names.index("w2")])
            q = t["precond_max_active"][()] / t["stability_threshold"][()]
            s = t["curv_step"][()]
            sel = (s >= 1) & (s <= 20) & np.isfinite(q)
            eos = float(q[sel].max()) if sel.any() else math.nan
            if float(c["xiong"]) != xiong or not (float(c["eos"]) == eos or
                                                   (math.isnan(eos) and c["eos"] == "nan")):
                bad.append(f"{key}: xiong {c['xiong']} vs {xiong}, eos {c['eos']} vs {eos}")
    check("every cell's xiong (grad_fro[0, L−1, w2]) and eos (max active/threshold, updates "
          "1–20) are its run's", not bad, "; ".join(bad[:4]))


def check_aucs(cells, table):
    """Every AUC of the table against the pair count on the cells the program reports."""
    fails = [c for c in cells if c["outcome"] in ("stuck", "diverged")]
    groups = {"fails_vs_trains": (("stuck", "diverged"), ("trains",)),
              "stuck_vs_trains": (("stuck",), ("trains",)),
              "diverged_vs_trains": (("diverged",), ("trains",)),
              "diverged_vs_stuck": (("diverged",), ("stuck",))}
    worst, n, bad = 0.0, 0, []
    for row in table:
        k = row["indicator"]
        val = lambda c: float(c[k])
        fin = [c for c in cells if math.isfinite(val(c))]
        for col, (a, b) in groups.items():
            want = auc([val(c) for c in fin if c["outcome"] in a],
                       [val(c) for c in fin if c["outcome"] in b])
            got = float(row[col])
            if math.isnan(want) != math.isnan(got):
                bad.append(f"{k} {col}: {got} vs {want}")
            elif not math.isnan(want):
                worst, n = max(worst, abs(got - want)), n + 1
                lo, hi = float(row[col + "_lo"]), float(row[col + "_hi"])
                if not lo - 1e-12 <= got <= hi + 1e-12:
                    bad.append(f"{k} {col}: {got} outside [{lo}, {hi}]")
        needs = [val(c) for c in fin if c["needs_warmup"] == "1"]
        want = auc(needs, [val(c) for c in fin if c["outcome"] == "trains"])
        if not (math.isnan(want) and row["needs_vs_trains"] == "nan"):
            worst, n = max(worst, abs(float(row["needs_vs_trains"]) - want)), n + 1
        pf = [c for c in fin if c in fails]
        pt = [c for c in fin if c["outcome"] == "trains"]
        want = (auc([val(c) for c in pf], [val(c) for c in pt])
                - auc([float(c["lr"]) for c in pf], [float(c["lr"]) for c in pt]))
        worst, n = max(worst, abs(float(row["minus_lr"]) - want)), n + 1
    check(f"every AUC of the table is the pair count on its cells ({n} AUCs, worst "
          f"{worst:.1e} ≤ 1e-12; intervals around them)", not bad and n >= 40 and worst <= 1e-12,
          "; ".join(bad[:4]))


def check_figure(gp, cells, table):
    """The figure's points are the cells table's (outcome column, value), its panel AUCs the
    table's to two decimals."""
    b = blocks(gp, str)
    fig = {int(r[0]): (r[3], int(r[1]), float(r[2])) for r in b.get("cells", [])}
    want = {(c["scheme"], int(c["L"]), float(c["lr"])): c for c in cells}
    check(f"the figure's cells are the table's ({len(want)})",
          sorted((s, L, float(f"{lr:g}")) for s, L, lr in fig.values()) == sorted(want))
    bad, points = [], 0
    for name in INDICATORS:
        drawn = {int(r[0]): r for r in b.get(f"ind_{name}", [])}
        for i, (s, L, lr) in fig.items():
            c = want.get((s, L, float(f"{lr:g}")))
            if c is None:
                continue
            v, p = float(c[name]), drawn.get(i)
            cat = OUT["needs warm-up" if c["needs_warmup"] == "1" else c["outcome"]]
            if not math.isfinite(v):
                if p is not None:
                    bad.append(f"{name} {s} {L} {lr}: drawn, the table has NaN")
                continue
            points += 1
            if p is None or int(p[1]) != cat or abs(float(p[2]) - cat) > 0.3 + 1e-9 \
                    or float(p[3]) != v:
                bad.append(f"{name} {s} {L} {lr}: {p} vs {cat}, {v}")
    check(f"every point drawn is the table's, to the last bit ({points} points)",
          not bad and points > 0, "; ".join(bad[:4]))
    titles = dict(re.findall(r'^set title "(\w+(?:\\\\_\w+)?): AUC ([0-9.]+|–)\\n', gp, re.M))
    titles = {k.replace("\\\\_", "_"): v for k, v in titles.items()}
    same = {r["indicator"]: (titles.get(r["indicator"]), f"{float(r['fails_vs_trains']):.2f}")
            for r in table}
    check("each panel's AUC is the table's (fails vs trains, two decimals)",
          len(titles) >= 8 and all(t == a for t, a in same.values()), str(same))


def test_trial(tmp):
    atlas = sweep(tmp, "atlas", ATLAS)
    ind = sweep(tmp, "ind", IND)
    if not atlas or not ind:
        return
    r = run("table", "warmup-cells", atlas, ind, "--tsv")
    t = run("table", "warmup-explained", atlas, ind, "--tsv")
    m = run("table", "warmup-explained", atlas, ind)
    check("table warmup-cells and warmup-explained on the trial (exit 0)",
          r.returncode == 0 and t.returncode == 0 and m.returncode == 0, r.stderr + t.stderr)
    if r.returncode or t.returncode:
        return
    cells, table = read_tsv(r.stdout), read_tsv(t.stdout)
    outs = {("needs warm-up" if c["needs_warmup"] == "1" else c["outcome"]) for c in cells}
    check(f"the trial's outcomes cover trains and failures ({sorted(outs)})",
          "trains" in outs and len(outs) >= 3)
    check_cells(cells, atlas, ind)
    check_aucs(cells, table)
    first = m.stdout.split("\nPer depth:")[0]   # the AUC table; the per-depth one follows
    lines = [x for x in first.splitlines() if x.startswith("| ")]
    check("the Markdown table: a header and a row per indicator but admin (no atlas_init)",
          len(lines) == 1 + len(INDICATORS) - 1 and m.stdout.startswith("16 cells without warm-up")
          and "\nPer depth:" in m.stdout, m.stdout[:300])
    pd = os.path.join(tmp, "plots")
    p = run("plot", atlas, ind, "--out", pd, "--format", "gp,png")
    gpf = os.path.join(pd, "atlas-warmup_indicators.gp")
    check("stability plot ATLAS INDICATORS draws warmup_indicators (gp and PNG)",
          p.returncode == 0 and os.path.exists(gpf)
          and os.path.getsize(gpf[:-3] + ".png") > 0, p.stderr[-300:])
    if os.path.exists(gpf):
        check_figure(open(gpf).read(), cells, table)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_reading(tmp)
        test_radam(tmp)
        test_trial(tmp)
    sys.exit(summary("warmup explained"))


if __name__ == "__main__":
    main()
