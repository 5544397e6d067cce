#!/usr/bin/python3
"""test_est_table.py — `stability table estimators FILE` and the estimators' figures
(study/estimators_table.h, study/estimators_figure.c; docs/estimators.md) on a hand-made file: a tiny
training run with every estimator key (3 curvature rows), whose curvature columns are then
overwritten with h5py by values whose table is computed by hand (Adam, β₁ = 0.9: Ĥ's scale
1/19, 2/η = stability_threshold/19):

  hessian_max         10, 20, 40      SLQ top node 11, 20, 30    → 0.1, 0, 0.25: median 0.1, max 0.25
  precond_max_active  100, 200, 40000 (threshold 38000: only row 3 above, exact verdict)
  SLQ top node (P⁻¹H) 100, 220, 40000                            → 0, 0.1, 0: median 0, max 0.1
  hessian_trace       5, 12, 30 against the blocks' sums 10, 10, 20 → 0.5, 0.2, 0.5: median 0.5
  critical_sharpness  3000, 10, 10; critical_quadratic 1500, 20, 5 → 1, 0.5, 1: median 1, max 1
      against λ_max(Ĥ) = active/19: 569, 0.05, 0.995 → median 0.995, max 569; against
      λ_max(H): 299, 0.5, 0.75 → median 0.75, max 299 (each to the 3 digits printed)
      verdicts on 2/η = 2000: λ_c above in row 1 only → 1 of 3 above, 1 row agrees (row 2)
  grad_precond_curvature 1, 1, 3000 against λ_max(Ĥ): 0.81, 0.905, 0.425 → median 0.81,
      max 0.905; above 2/η in row 3 only → 1 above, 3 agree
  critical_passes     10, 12, 14 → "10–14 forward passes (median 12)"
  tracking: λ_c's ranks 3, 1.5, 1.5 against λ_max(H)'s (and λ_max(Ĥ)'s) 1, 2, 3: Spearman
      ρ = −1.5/√3 = −0.87 both; λ_c/λ_max(H) = 300, 0.5, 0.25 → "0.25–300"
and every figure the file supports is drawn (est_density, est_critical); a file without the
estimator keys makes `table estimators` exit 1 with a message.

    /usr/bin/python3 tests/test_est_table.py [--binary ./stability]

The last line is `est_table: N passed, M failed`; exit status 1 if any failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import h5py
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = {"train.steps": 4, "train.warmup": 1, "train.lr": 1e-3, "train.schedule": "constant",
       "train.optimizer": "adam", "train.beta1": 0.9, "probe.curvature_every": 2,
       "probe.curvature_iters": 8, "probe.curvature_block_iters": 0,
       "probe.critical_sharpness": "on", "probe.density_probes": 2, "probe.density_iters": 3,
       "probe.trace_probes": 2}
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(binary, args):
    return subprocess.run([binary] + args, cwd=REPO, capture_output=True, text=True, timeout=600)


def handmade(path):
    """Overwrite the run's curvature columns with the values of the docstring."""
    with h5py.File(path, "r+") as f:
        t = f["train"]
        t["hessian_max"][...] = [10, 20, 40]
        t["precond_max_active"][...] = [100, 200, 40000]
        t["stability_threshold"][...] = [38000] * 3
        for name, tops in (("density", [11, 20, 30]), ("precond_density", [100, 220, 40000])):
            nodes = np.full(t[name + "_nodes"].shape, -1.0)   # [row][probe][m]
            w = np.full(nodes.shape, 1.0 / nodes.shape[2])
            nodes[:, 0, 1] = tops
            w[:, 1, 2] = 0.0
            nodes[:, 1, 2] = 1e9   # weight 0: not a node
            t[name + "_nodes"][...] = nodes
            t[name + "_weights"][...] = w
        t["hessian_trace"][...] = [5, 12, 30]
        b = np.full(t["hessian_block_trace"].shape, np.nan)
        b[:, 0, 0], b[:, 0, 1] = [4, 6, 15], [6, 4, 5]   # sums 10, 10, 20
        t["hessian_block_trace"][...] = b
        t["critical_sharpness"][...] = [3000, 10, 10]
        t["critical_quadratic"][...] = [1500, 20, 5]
        t["grad_precond_curvature"][...] = [1, 1, 3000]
        t["critical_passes"][...] = [10, 12, 14]


def row(text, estimator, reference):
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] == estimator and cells[1].startswith(reference):
            return cells
    return None


def close(cell, want):
    return abs(float(cell) - want) <= 5e-3 * max(abs(want), 1e-12)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="./stability")
    a = ap.parse_args()
    binary = a.binary if os.path.isabs(a.binary) else os.path.join(REPO, a.binary)
    with tempfile.TemporaryDirectory(prefix="stability-est-table-") as tmp:
        out = os.path.join(tmp, "est.h5")
        args = ["--config", "tiny", "--out", out, "--quiet", "--force"]
        for k, v in RUN.items():
            args += ["--set", f"{k}={v}"]
        r = run(binary, args)
        check("the tiny run with every estimator key exits 0", r.returncode == 0, r.stderr)
        if r.returncode:
            return 1
        handmade(out)
        r = run(binary, ["table", "estimators", out])
        check("table estimators exits 0", r.returncode == 0, r.stderr)
        text = r.stdout
        print(text)
        want = [("SLQ: largest node, H", "λ_max(H)", 0.1, 0.25),
                ("SLQ: largest node, active P⁻¹H", "λ_max(P⁻¹H)", 0.0, 0.1),
                ("Hutchinson tr(H)", "Σ of the blocks", 0.5, 0.5),
                ("critical sharpness λ_c", "uᵀHu/gᵀu", 1.0, 1.0),
                ("critical sharpness λ_c", "λ_max(Ĥ)", 1 - 10 / (40000 / 19),
                 (3000 - 100 / 19) / (100 / 19)),
                ("critical sharpness λ_c", "λ_max(H)", 0.75, 299.0),
                ("Bai et al.'s λ_grad(Ĥ)", "λ_max(Ĥ)", (100 / 19 - 1) / (100 / 19),
                 (200 / 19 - 1) / (200 / 19))]
        for est, ref, med, mx in want:
            c = row(text, est, ref)
            check(f"{est} against {ref}: median {med:.4g}, max {mx:.4g}, 3 rows",
                  c is not None and close(c[3], med) and close(c[4], mx) and c[5] == "3", c)
        c = row(text, "critical sharpness λ_c", "λ_max(H)")
        check("λ_c's cost: 10–14 forward passes (median 12)",
              c is not None and "10–14 forward passes (median 12)" in c[2], c)
        verdict = {m.group(1).strip(): m.groups()[1:] for m in
                   re.finditer(r"^\| ([^|]+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M)}
        check("verdicts on 2/η: exact 1 of 3 above; λ_c 1 above, 1 agrees; λ_grad 1 above, "
              "3 agree", verdict.get("λ_max(Ĥ) active > 2/η (exact)") == ("1", "3", "3")
              and verdict.get("λ_c > 2/η") == ("1", "3", "1")
              and verdict.get("λ_grad(Ĥ) > 2/η") == ("1", "3", "3"), verdict)
        track = re.search(r"^\| est \| 3 \| (\S+) \| (\S+) \| (\S+) \|$", text, re.M)
        check("tracking: Spearman ρ(λ_c, λ_max(H)) = ρ(λ_c, λ_max(Ĥ)) = −0.87, λ_c/λ_max(H) "
              "0.25–300", track is not None and track.groups() == ("-0.87", "-0.87", "0.25–300"),
              track.groups() if track else text)
        figs = os.path.join(tmp, "figs")
        r = run(binary, ["plot", out, "--out", figs, "--format", "png"])
        drawn = sorted(os.listdir(figs)) if os.path.isdir(figs) else []
        check("plot draws est_density and est_critical",
              r.returncode == 0 and any(f.endswith("-est_density.png") for f in drawn)
              and any(f.endswith("-est_critical.png") for f in drawn), r.stderr + str(drawn))
        plain = os.path.join(tmp, "plain.h5")
        r = run(binary, ["--config", "tiny", "--out", plain, "--quiet", "--force",
                         "--set", "train.steps=2", "--set", "probe.curvature_every=2"])
        r2 = run(binary, ["table", "estimators", plain])
        check("a file without the estimators' keys: table estimators exits 1 saying so",
              r.returncode == 0 and r2.returncode == 1 and "estimator" in r2.stderr,
              r.stderr + r2.stderr)
        r3 = run(binary, ["table", "estimators", out, "--tsv"])
        tsv = r3.stdout.split("\n\n")[0].splitlines()
        head = tsv[0].split("\t") if tsv else []
        check("table estimators --tsv: a header and a row per estimator, the Markdown's numbers in full",
              r3.returncode == 0 and head[:2] == ["estimator", "reference"] and len(tsv) >= 2
              and all(len(l.split("\t")) == len(head) for l in tsv), r3.stdout[:300])
    failed = results.count(False)
    print(f"est_table: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
