#!/usr/bin/python3
"""test_estimators.py — what `stability dump --hvp` adds with the estimators' keys (docs/design.md
§10): /hvp/trace, /hvp/trace_stderr (Hutchinson), /hvp/density_nodes, /hvp/density_weights
([probe][m], SLQ) and the broadened /hvp/density on /hvp/density_grid, read with h5py and
checked against the eigenvalues of the explicit Hessian that PyTorch builds in float64 from the
dump's parameters and batch (tests/test_torch_hvp.py's reference, no project code):

  - every probe's weights sum to 1 (1e-12) and its nodes lie in [λ_min − r, λ_max + r]
    (r = 1e-6 of the spectral radius: Ritz values of H);
  - the probes' mean of Σ τ²θ^p is within 4 standard errors of tr(H^p)/n, p = 1, 2, 3;
  - the trace within 4·trace_stderr of Σλ, and trace_stderr > 0;
  - the density integrates to 1 over its grid (1e-3);
  - without the keys the dump has none of these datasets.
Training with probe.critical_sharpness = on (docs/design.md §10):
  - every /train dataset of the run without it is byte-identical (the measure changes no bit;
    /train/time, the wall clock, aside);
  - /train/critical_sharpness, update_curvature, critical_quadratic, grad_precond_curvature,
    critical_passes have one finite row per curvature row (the passes whole, ≥ 3); the stored
    config names the key only when on;
  - with plain SGD the update is the gradient, so uᵀHu/gᵀu = uᵀHu/uᵀu and Bai et al.'s
    quantity (D = 1) is the same number (1e-9), and each is at most λ_max (Ritz, K = n);
  - bad values exit 2 naming the key, nothing written: critical_sharpness without
    curvature_every or in a probe, trace_probes = 1, density_iters or density_sigma without
    density_probes, the density or the trace in a training run without curvature_every or in
    a probe.
With probe.trace_probes and probe.density_probes, training's curvature rows (K = n on a tiny
model): every other /train dataset byte-identical (curv_passes and time aside),
/train/hessian_trace, hessian_trace_stderr, hessian_block_trace, density_nodes,
density_weights, precond_density_nodes, precond_density_weights of the documented shapes,
every probe's weights summing to 1, the nodes inside each row's [λ_min, λ_max], curv_passes
counting the estimators' products; with probe.density_blocks = on also
/train/block_density_nodes, _weights [curv][layer][kind][probe][m] (NaN exactly where the
block trace is, weights summing to 1, every other dataset byte-identical, the same after a
SIGTERM and --resume) and
/hvp/block_density_* in the dump; a probe's /probe/hessian_trace [seed], seed 0's equal to
training's update-0 value bit for bit.

    /usr/bin/python3 tests/test_estimators.py [--binary ./stability]

The last line is `estimators: N passed, M failed`; exit status 1 if any failed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import test_torch_hvp as th  # noqa: E402  (the reference objective and its explicit Hessian)

TINY = {"model.layers": 1, "model.d_model": 4, "model.heads": 2, "model.d_ff": 6,
        "model.vocab": 7, "model.seq_len": 4, "data.batch": 2, "data.task": "random",
        "model.activation": "gelu"}
KEYS = {"probe.density_probes": 24, "probe.density_iters": 8, "probe.density_sigma": 0.05,
        "probe.trace_probes": 40}
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def dump(binary, settings, out):
    args = [binary, "dump", "--config", "tiny", "--out", out, "--perturb", "0.3", "--hvp",
            "--force"]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    p = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
    return p.returncode, (p.stdout + p.stderr).strip()


def case(binary, tmp, name, settings):
    out = os.path.join(tmp, name + ".h5")
    rc, msg = dump(binary, {**TINY, **settings, **KEYS}, out)
    check(f"{name}: dump --hvp with the estimators exits 0", rc == 0, msg)
    if rc:
        return
    m, params, _, _, batch, lam, _ = th.read_dump(out)
    eig = th.torch_spectrum(params, m, batch)
    n, r = eig.size, 1e-6 * max(abs(eig[0]), abs(eig[-1]))
    with h5py.File(out, "r") as f:
        nodes, w = f["hvp/density_nodes"][()], f["hvp/density_weights"][()]
        trace, se = float(f["hvp/trace"][()]), float(f["hvp/trace_stderr"][()])
        grid, phi = f["hvp/density_grid"][()], f["hvp/density"][()]
    P, M = KEYS["probe.density_probes"], KEYS["probe.density_iters"]
    check(f"{name}: density datasets [probe][m] = [{P}][{M}]", nodes.shape == (P, M) == w.shape,
          f"{nodes.shape}")
    sums = w.sum(axis=1)
    check(f"{name}: each probe's weights sum to 1", np.all(np.abs(sums - 1) <= 1e-12),
          f"{sums.min()!r} .. {sums.max()!r}")
    ok = np.isfinite(nodes) | (w == 0)
    inside = np.all(ok) and np.all((nodes[w > 0] >= eig[0] - r) & (nodes[w > 0] <= eig[-1] + r))
    check(f"{name}: nodes inside the spectrum [{eig[0]:.6g}, {eig[-1]:.6g}]", inside,
          f"{np.nanmin(nodes):.10g} .. {np.nanmax(nodes):.10g}")
    for p in (1, 2, 3):
        mom = np.nansum(w * np.where(w > 0, nodes, 0.0) ** p, axis=1)
        mean, sem = mom.mean(), mom.std(ddof=1) / np.sqrt(P)
        exact = float(np.mean(eig ** p))
        print(f"        {name}: degree {p}: SLQ {mean:.8g} +- {sem:.3g}, tr(H^{p})/n {exact:.8g}")
        check(f"{name}: degree {p} moment within 4 standard errors of tr(H^p)/n",
              abs(mean - exact) <= 4 * sem, f"{mean} vs {exact}, se {sem}")
    print(f"        {name}: Hutchinson {trace:.8g} +- {se:.3g}, tr(H) {eig.sum():.8g} (n = {n})")
    check(f"{name}: trace within 4 standard errors of tr(H)",
          se > 0 and abs(trace - eig.sum()) <= 4 * se, f"{trace} vs {eig.sum()}, se {se}")
    integral = float(np.sum(0.5 * (phi[1:] + phi[:-1]) * np.diff(grid)))
    check(f"{name}: the density integrates to 1", abs(integral - 1) <= 1e-3, f"{integral}")


LM = {"model.layers": 2, "model.d_model": 8, "model.heads": 2, "model.d_ff": 12,
      "model.vocab": 11, "model.seq_len": 5, "data.batch": 3, "train.steps": 9,
      "train.warmup": 1, "train.lr": 3e-3, "train.schedule": "constant",
      "probe.curvature_every": 3, "probe.curvature_iters": 8, "probe.curvature_block_iters": 3}
CRIT = ["critical_sharpness", "update_curvature", "critical_quadratic", "grad_precond_curvature",
        "critical_passes"]


def train(binary, settings, out):
    args = [binary, "--config", "tiny", "--out", out, "--quiet", "--force"]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)


def training(binary, tmp):
    a, b = os.path.join(tmp, "off.h5"), os.path.join(tmp, "on.h5")
    ra, rb = train(binary, LM, a), train(binary, {**LM, "probe.critical_sharpness": "on"}, b)
    check("training with and without probe.critical_sharpness exits 0",
          ra.returncode == rb.returncode == 0, ra.stderr + rb.stderr)
    if ra.returncode or rb.returncode:
        return
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ta, tb = fa["train"], fb["train"]
        keys = [k for k in ta if k != "time"]   # wall-clock seconds
        same = all(ta[k][()].tobytes() == tb[k][()].tobytes() for k in keys)
        check("every /train dataset of the run without it is byte-identical (but time)", same)
        check("without the key: no critical sharpness column", not any(k in ta for k in CRIT))
        rows = len(tb["curv_step"])
        ok = all(k in tb and tb[k].shape == (rows,) and np.all(np.isfinite(tb[k][()])) for k in CRIT)
        check(f"with it: {', '.join(CRIT)} finite, one per curvature row ({rows})", ok)
        cp = tb["critical_passes"][()]   # the loss at θ, ≥ 1 doubling, then bisections
        check("critical_passes: whole numbers, at least 3", np.all(cp == np.round(cp)) and
              np.all(cp >= 3), f"{cp}")
        cfg_a, cfg_b = ref_text(fa.attrs["config"]), ref_text(fb.attrs["config"])
        check("the stored config names probe.critical_sharpness only when on",
              "critical_sharpness" not in cfg_a and "critical_sharpness = on" in cfg_b)
    c = os.path.join(tmp, "sgd.h5")
    r = train(binary, {**LM, "train.optimizer": "sgd", "train.momentum": 0, "train.lr": 0.05,
                       "train.weight_decay": 0, "probe.critical_sharpness": "on",
                       "probe.curvature_iters": 400}, c)
    check("plain sgd with the critical sharpness exits 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        with h5py.File(c, "r") as f:
            t = {k: f["train"][k][()] for k in CRIT + ["hessian_max"]}
        u, q, b = t["update_curvature"], t["critical_quadratic"], t["grad_precond_curvature"]
        print(f"        sgd: critical_sharpness {t['critical_sharpness']}, u^T H u/u^T u {u}, "
              f"lambda_max {t['hessian_max']}")
        check("sgd: u^T H u/g^T u = u^T H u/u^T u = Bai's quantity (1e-9)",
              np.allclose(q, u, rtol=1e-9, atol=0) and np.allclose(b, u, rtol=1e-9, atol=0),
              f"{q} {u} {b}")
        check("sgd: the curvature along the update is at most lambda_max",
              np.all(u <= t["hessian_max"] * (1 + 1e-9)))
    for bad, key in (({"probe.critical_sharpness": "on", "probe.curvature_every": 0},
                      "probe.critical_sharpness"),
                     ({"probe.trace_probes": 1}, "probe.trace_probes"),
                     ({"probe.density_iters": 8}, "probe.density_iters"),
                     ({"probe.density_sigma": 0.5}, "probe.density_sigma"),
                     ({"probe.trace_probes": 4, "probe.curvature_every": 0},
                      "probe.trace_probes"),                   # rows need curvature_every
                     ({"train.steps": 0, "probe.density_probes": 4},
                      "probe.density_probes"),                 # not in a probe
                     ({"train.steps": 0, "probe.critical_sharpness": "on"},   # training's only
                      "probe.critical_sharpness"),
                     ({"probe.density_blocks": "on"}, "probe.density_blocks")):   # no probes
        out = os.path.join(tmp, "bad.h5")
        r = train(binary, {**LM, **bad}, out)
        check(f"bad value exits 2 naming {key}", r.returncode == 2 and key in r.stderr
              and not os.path.exists(out), r.stderr.strip())


def training_estimators(binary, tmp):
    """The trace and the density at curvature rows, on the tiny model with K = n (exact
    extremes): every other dataset byte-identical, shapes, weights, nodes inside the spectrum."""
    base = {**TINY, "model.activation": "gelu", "train.steps": 4, "train.warmup": 1,
            "train.lr": 3e-3, "train.schedule": "constant", "probe.curvature_every": 2,
            "probe.curvature_iters": 400, "probe.curvature_block_iters": 0}
    keys = {"probe.trace_probes": 12, "probe.density_probes": 5, "probe.density_iters": 7}
    a, b = os.path.join(tmp, "est_off.h5"), os.path.join(tmp, "est_on.h5")
    ra, rb = train(binary, base, a), train(binary, {**base, **keys}, b)
    check("training with the trace and the density exits 0", ra.returncode == rb.returncode == 0,
          ra.stderr + rb.stderr)
    if ra.returncode or rb.returncode:
        return
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ta, tb = fa["train"], fb["train"]
        same = all(ta[k][()].tobytes() == tb[k][()].tobytes() for k in ta
                   if k not in ("time", "curv_passes"))
        check("with them every other /train dataset is byte-identical (but time, curv_passes)",
              same)
        rows = len(tb["curv_step"])
        P, M = keys["probe.density_probes"], keys["probe.density_iters"]
        shapes = (tb["hessian_trace"].shape == tb["hessian_trace_stderr"].shape == (rows,) and
                  tb["density_nodes"].shape == tb["precond_density_weights"].shape == (rows, P, M)
                  and tb["hessian_block_trace"].shape[0] == rows)
        check(f"trace [{rows}], block trace [curv][layer][kind], densities [{rows}][{P}][{M}]",
              shapes)
        w, pw = tb["density_weights"][()], tb["precond_density_weights"][()]
        check("every row's and probe's weights sum to 1 (H and the active P^-1 H)",
              np.all(np.abs(w.sum(axis=2) - 1) <= 1e-12) and np.all(np.abs(pw.sum(axis=2) - 1) <= 1e-12))
        lo, hi = tb["hessian_min"][()], tb["hessian_max"][()]
        nodes = tb["density_nodes"][()]
        r = 1e-6 * np.maximum(np.abs(lo), np.abs(hi))
        inside = all(np.all((nodes[i] >= lo[i] - r[i]) & (nodes[i] <= hi[i] + r[i]))
                     for i in range(rows))
        check("the nodes lie in [lambda_min, lambda_max] of each row (K = n: exact)", inside)
        tr, se = tb["hessian_trace"][()], tb["hessian_trace_stderr"][()]
        check("the trace and its standard error are finite, se > 0",
              np.all(np.isfinite(tr)) and np.all(se > 0))
        passes = tb["curv_passes"][()] - ta["curv_passes"][()]
        want = 2 * (keys["probe.trace_probes"] * (1 + int(np.sum(np.isfinite(
            tb["hessian_block_trace"][0])))) + 2 * P * M)
        check(f"curv_passes counts the estimators' products ({want:.0f} more a row)",
              np.all(passes >= want), f"{passes} vs {want}")
    ia = subprocess.run([binary, "info", a], capture_output=True, text=True).stdout
    ib = subprocess.run([binary, "info", b], capture_output=True, text=True).stdout
    check("info names the estimators' keys by value, only when set",
          "estimators at update" not in ia and "trace_probes = 12, density_probes = 5, density_iters = 7"
          in ib and "density_blocks" not in ib, ib)
    block_densities(binary, tmp, base, keys, b)


def block_densities(binary, tmp, base, keys, b):
    """probe.density_blocks = on on the run of training_estimators: every other dataset
    byte-identical, [curv][layer][kind][probe][m] NaN exactly where the block trace is."""
    c = os.path.join(tmp, "est_blocks.h5")
    r = train(binary, {**base, **keys, "probe.density_blocks": "on"}, c)
    check("training with probe.density_blocks = on exits 0", r.returncode == 0, r.stderr)
    if r.returncode:
        return
    names = ("block_density_nodes", "block_density_weights")
    with h5py.File(b, "r") as fb, h5py.File(c, "r") as fc:
        tb, tc = fb["train"], fc["train"]
        check("without the key: no block density dataset", not any(k in tb for k in names))
        same = all(tb[k][()].tobytes() == tc[k][()].tobytes() for k in tb
                   if k not in ("time", "curv_passes"))
        check("with it every other /train dataset is byte-identical (but time, curv_passes)", same)
        bt = tc["hessian_block_trace"][()]   # (rows, L + 1, 6)
        P, M = keys["probe.density_probes"], keys["probe.density_iters"]
        nodes, w = tc["block_density_nodes"][()], tc["block_density_weights"][()]
        check(f"block densities [curv][layer][kind][probe][m] = {bt.shape + (P, M)}",
              nodes.shape == w.shape == bt.shape + (P, M), f"{nodes.shape}")
        if nodes.shape != bt.shape + (P, M):
            return
        empty = np.all(np.isnan(w), axis=(3, 4))
        check("a block's density is NaN exactly where its trace is (a kind the layer lacks)",
              np.array_equal(empty, np.isnan(bt)) and np.any(empty) and not np.all(empty))
        sums = w[~empty].sum(axis=-1)
        check("every measured block's probes' weights sum to 1", np.all(np.abs(sums - 1) <= 1e-12),
              f"{sums.min()!r} .. {sums.max()!r}")
        check("the axes attribute names them", list(map(ref_text, tc["block_density_nodes"].attrs[
            "axes"])) == ["curv", "layer", "kind", "probe", "node"])
        check("the stored config names probe.density_blocks only when on",
              "density_blocks" not in ref_text(fb.attrs["config"]) and
              "density_blocks = on" in ref_text(fc.attrs["config"]))
    ic = subprocess.run([binary, "info", c], capture_output=True, text=True).stdout
    check("info shows density_blocks = on", "density_blocks = on" in ic, ic)
    # a SIGTERM after update 2 (test_train.py's hook), then --resume: the same block densities
    h = os.path.join(tmp, "est_blocks_resumed.h5")
    args = [binary, "--config", "tiny", "--out", h, "--quiet", "--force"]
    for k, v in {**base, **keys, "probe.density_blocks": "on", "train.checkpoint_every": 2}.items():
        args += ["--set", f"{k}={v}"]
    r1 = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600,
                        env={**os.environ, "STABILITY_SIGNAL_AT_STEP": "2"})
    r2 = subprocess.run([a for a in args if a != "--force"] + ["--resume"], cwd=REPO,
                        capture_output=True, text=True, timeout=600)
    if r1.returncode == r2.returncode == 0:
        with h5py.File(c, "r") as fc, h5py.File(h, "r") as fh:
            same = all(np.array_equal(fc["train"][k][()], fh["train"][k][()], equal_nan=True)
                       for k in names + ("curv_step",))
    check("interrupted after update 2 and resumed: the same block densities",
          r1.returncode == r2.returncode == 0 and same, r1.stderr + r2.stderr)
    d0, d1 = os.path.join(tmp, "dump_nob.h5"), os.path.join(tmp, "dump_blocks.h5")
    r0, _ = dump(binary, {**TINY, **KEYS}, d0)
    r1, msg = dump(binary, {**TINY, **KEYS, "probe.density_blocks": "on"}, d1)
    check("dump --hvp with probe.density_blocks = on exits 0", r0 == r1 == 0, msg)
    if r0 or r1:
        return
    with h5py.File(d0, "r") as f0, h5py.File(d1, "r") as f1:
        check("the dump without it has no /hvp/block_density_*",
              not any(k in f0["hvp"] for k in names))
        same = all(f0["hvp"][k][()].tobytes() == f1["hvp"][k][()].tobytes()
                   for k in ("density_nodes", "density_weights", "trace"))
        check("the whole density and the trace are byte-identical with it", same)
        n, w = f1["hvp/block_density_nodes"][()], f1["hvp/block_density_weights"][()]
        P, M = KEYS["probe.density_probes"], KEYS["probe.density_iters"]
        ok = n.shape == w.shape and n.shape[1:] == (6, P, M)
        measured = ~np.all(np.isnan(w), axis=(2, 3)) if ok else None
        check("dump: /hvp/block_density_* [layer][kind][probe][m], the measured blocks' "
              "weights summing to 1", ok and np.any(measured) and
              np.all(np.abs(w[measured].sum(axis=-1) - 1) <= 1e-12), f"{n.shape}")


def probe_trace(binary, tmp):
    """A probe's /probe/hessian_trace [seed]: seed 0 is training's update-0 value, bit for bit
    (the same batch, θ and probes)."""
    base = {**LM, "probe.curvature_block_iters": 0, "probe.trace_probes": 6}
    pp, tp = os.path.join(tmp, "probe_tr.h5"), os.path.join(tmp, "train_tr.h5")
    r1 = train(binary, {**base, "train.steps": 0, "probe.seeds": 2, "probe.batches": 2}, pp)
    r2 = train(binary, {**base, "train.steps": 1}, tp)
    check("probe and training with probe.trace_probes exit 0", r1.returncode == r2.returncode == 0,
          r1.stderr + r2.stderr)
    if r1.returncode or r2.returncode:
        return
    with h5py.File(pp, "r") as p, h5py.File(tp, "r") as t:
        got = [p["probe"][k][()] for k in ("hessian_trace", "hessian_trace_stderr")]
        want = [t["train"][k][0] for k in ("hessian_trace", "hessian_trace_stderr")]
        check("probe: /probe/hessian_trace, hessian_trace_stderr one value per seed",
              all(g.shape == (2,) for g in got))
        check("probe seed 0's trace = training's update-0 trace, bit for bit",
              all(g[0] == w for g, w in zip(got, want)), f"{[g[0] for g in got]} vs {want}")


def ref_text(a):
    return a.decode() if isinstance(a, bytes) else str(a)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="./stability")
    a = ap.parse_args()
    binary = a.binary if os.path.isabs(a.binary) else os.path.join(REPO, a.binary)
    with tempfile.TemporaryDirectory(prefix="stability-estimators-") as tmp:
        case(binary, tmp, "tiny-post-gelu", {"init.seed": 4101})
        case(binary, tmp, "tiny-pre-gelu", {"init.seed": 4102, "model.placement": "pre"})
        out = os.path.join(tmp, "plain.h5")
        rc, msg = dump(binary, TINY, out)
        with h5py.File(out, "r") as f:
            none = not any(k in f["hvp"] for k in ("trace", "trace_stderr", "density_nodes",
                                                   "density_weights", "density"))
        check("without the keys: no estimator dataset", rc == 0 and none, msg)
        training(binary, tmp)
        training_estimators(binary, tmp)
        probe_trace(binary, tmp)
    failed = results.count(False)
    print(f"estimators: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
