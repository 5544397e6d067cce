#!/usr/bin/python3
"""The curvature measure end to end (docs/design.md §10), files read with h5py and no project code.

Run from the repository root (make test does): /usr/bin/python3 tests/test_curvature.py
1. Measuring changes no bit of the training: with probe.curvature_every on and off, every /train
   dataset both files have and /checkpoint are byte-identical (float64 and float32, dropout on).
2. The rows: /train/curv_step 0, N, 2N, ..., every curvature dataset one row each, the block
   datasets [curv][layer + 1][kind] with the attributes kind and stack (encdec: enc, dec,
   outside), λ_min ≤ λ_max, thresholds 38/lr, the stored config naming only the keys set.
3. Resume: SIGTERM after update 3 and --resume give the curvature rows of an uninterrupted run,
   byte for byte.
4. A probe's seed 0 measures what training's update 0 does (the same batch, P and start vectors),
   unclipped and with train.clip = 0.01, whose active value is the unclipped one within 1e-3.
5. Bad values: probe.curvature_iters = 1, probe.curvature_block_iters = 1, a measure larger than
   this machine's memory, probe.curvature_until < 0, probe.curvature_floor outside [0, 1):
   exit 2 naming the key, nothing written.
7. probe.curvature_until stops the rows after that update; probe.curvature_active_only leaves
   update 0 complete and gives the later rows the active value alone (the very value of a full
   row: the same operator, support and start), every other value NaN, in K products (2K
   passes) each; probe.curvature_floor = 0 (ε alone) floors fewer coordinates, so its active
   value is at least the default's; each key appears in the stored config only when set. Files without the keys carry
   no curvature dataset and no curvature line in their config.
6. dump --hvp of a float32 config: a unit direction, finite values, the precision attribute.
Prints "ok"/"not ok" per check, then "curvature: N passed, M failed"; exit 1 if M > 0.
"""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STABILITY = os.environ.get("STABILITY", "./stability")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
CURV = ["curv_step", "hessian_max", "hessian_min", "precond_max", "precond_max_active",
        "precond_eps_share", "stability_threshold", "hessian_max_residual",
        "hessian_min_residual", "precond_max_residual", "precond_max_active_residual", "curv_h",
        "curv_kinked", "curv_passes", "hessian_block_max", "precond_block_max"]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(args, env=None, timeout=600):
    return subprocess.run([STABILITY, *args], capture_output=True, text=True,
                          env=dict(ENV, **(env or {})), timeout=timeout)


def sets(d):
    out = []
    for k, v in d.items():
        out += ["--set", f"{k}={v}"]
    return out


LM = {"model.layers": 2, "model.d_model": 8, "model.heads": 2, "model.d_ff": 12,
      "model.vocab": 11, "model.seq_len": 5, "data.batch": 3, "model.dropout": 0.1,
      "train.steps": 7, "train.warmup": 1, "train.lr": 1e-3, "train.schedule": "constant",
      "probe.every": 2}
KEYS = {"probe.curvature_iters": 8, "probe.curvature_block_iters": 3}   # with the measure
ED = {**LM, "model.arch": "encdec", "model.dec_layers": 2, "model.src_len": 6,
      "model.seq_len": 6, "data.task": "reverse", "data.min_len": 3}


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def datasets(f, group):
    out = {}
    f[group].visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out


def unchanged(tmp):
    for prec in ("float64", "float32"):
        paths = []
        for every in (0, 2):
            p = os.path.join(tmp, f"same-{prec}-{every}.h5")
            keys = {**KEYS, "probe.curvature_every": every} if every else {}
            r = run(["--config", "tiny", *sets({**LM, "train.precision": prec, **keys}),
                     "--out", p, "--quiet"])
            check(f"{prec}: a run with curvature_every = {every} exits 0", r.returncode == 0, r.stderr)
            paths.append(p)
        with h5py.File(paths[0], "r") as a, h5py.File(paths[1], "r") as b:
            ta, tb = datasets(a, "train"), datasets(b, "train")
            common = [k for k in ta if k != "time"]
            diff = [k for k in common if k not in tb or not same(ta[k], tb[k])]
            check(f"{prec}: every /train dataset (but time) byte-identical with the measure on",
                  not diff and len(common) > 10, f"differ: {diff}")
            ca, cb = datasets(a, "checkpoint"), datasets(b, "checkpoint")
            diff = [k for k in ca if not same(ca[k], cb.get(k))]
            check(f"{prec}: /checkpoint byte-identical", not diff, f"differ: {diff}")
            check(f"{prec}: no curvature dataset and no curvature key without the measure",
                  not any(k in ta for k in CURV) and "curvature" not in a.attrs["config"])
            check(f"{prec}: the stored config names curvature_every and the keys set away "
                  "from their defaults", "curvature_every = 2" in b.attrs["config"] and
                  "curvature_iters = 8" in b.attrs["config"])
            rows(b, f"{prec} lm", steps=7, every=2, layers=2, stack=["lm", "lm", "outside"])


def rows(f, what, steps, every, layers, stack):
    want = [0] + list(range(every, steps + 1, every))
    t = f["train"]
    check(f"{what}: curv_step = {want}", list(t["curv_step"][()]) == want,
          str(t["curv_step"][()]))
    n = len(want)
    check(f"{what}: one row per measurement in every curvature dataset",
          all(t[k].shape[0] == n for k in CURV))
    hb = t["hessian_block_max"]
    check(f"{what}: blocks [curv][layer + 1][kind] named by kind and stack",
          hb.shape == (n, layers + 1, 6) and
          [x.decode() if isinstance(x, bytes) else x for x in hb.attrs["kind"]] ==
          ["embed", "attn_qk", "attn_vo", "ffn", "norm", "gain"] and
          [x.decode() if isinstance(x, bytes) else x for x in hb.attrs["stack"]] == stack,
          f"{hb.shape} {hb.attrs.get('stack')}")
    hmax, hmin = t["hessian_max"][()], t["hessian_min"][()]
    check(f"{what}: finite, lambda_min <= lambda_max", np.all(np.isfinite(hmax)) and
          np.all(np.isfinite(t["precond_max_active"][()])) and np.all(hmin <= hmax))
    lr = 1e-3   # constant schedule
    check(f"{what}: stability_threshold = 38/lr (Adam, beta1 = 0.9)",
          np.allclose(t["stability_threshold"][()], 38 / lr, rtol=1e-12))
    check(f"{what}: no ReLU kink crossed at the smallest step", np.all(t["curv_kinked"][()] == 0))


def encdec(tmp):
    p = os.path.join(tmp, "encdec.h5")
    r = run(["--config", "tiny", *sets({**ED, **KEYS, "probe.curvature_every": 3}), "--out", p,
             "--quiet"])
    check("encdec run with the measure exits 0", r.returncode == 0, r.stderr)
    with h5py.File(p, "r") as f:
        rows(f, "encdec", steps=7, every=3, layers=4,
             stack=["enc", "enc", "dec", "dec", "outside"])


def resume(tmp):
    cfg = sets({**LM, **KEYS, "probe.curvature_every": 2, "train.checkpoint_every": 2})
    full, cut = os.path.join(tmp, "full.h5"), os.path.join(tmp, "cut.h5")
    r1 = run(["--config", "tiny", *cfg, "--out", full, "--quiet"])
    r2 = run(["--config", "tiny", *cfg, "--out", cut, "--quiet"], env={"STABILITY_SIGNAL_AT_STEP": "3"})
    r3 = run(["--config", "tiny", *cfg, "--out", cut, "--quiet", "--resume"])
    check("resume: the runs exit 0", r1.returncode == r2.returncode == r3.returncode == 0,
          r1.stderr + r2.stderr + r3.stderr)
    with h5py.File(full, "r") as a, h5py.File(cut, "r") as b:
        diff = [k for k in CURV if not same(a["train"][k][()], b["train"][k][()])]
        check("resume: the curvature rows of an interrupted and resumed run are the "
              "uninterrupted run's, byte for byte", not diff, f"differ: {diff}")


def probe_vs_update0(tmp):
    active = {}
    for clip in (0, 0.01):   # clipped: the probe measures the step taken too (c·P⁻¹H)
        base = {**LM, **KEYS, "model.dropout": 0, "probe.curvature_every": 1, "train.clip": clip}
        pp, tp = os.path.join(tmp, f"probe{clip}.h5"), os.path.join(tmp, f"train1_{clip}.h5")
        r1 = run(["--config", "tiny", *sets({**base, "train.steps": 0, "probe.seeds": 2,
                                               "probe.batches": 2}), "--out", pp, "--quiet"])
        r2 = run(["--config", "tiny", *sets({**base, "train.steps": 1}), "--out", tp, "--quiet"])
        check(f"clip {clip}: probe and training with the measure exit 0",
              r1.returncode == r2.returncode == 0, r1.stderr + r2.stderr)
        with h5py.File(pp, "r") as p, h5py.File(tp, "r") as t:
            got = [p["probe"][k][()] for k in ("hessian_max", "hessian_min", "precond_max_active")]
            want = [t["train"][k][0] for k in ("hessian_max", "hessian_min", "precond_max_active")]
            check(f"clip {clip}: probe: /probe/hessian_max, hessian_min, precond_max_active have "
                  "one value per seed", all(g.shape == (2,) for g in got))
            check(f"clip {clip}: probe seed 0 = training update 0 (the same batch, P and Lanczos "
                  "start)", all(g[0] == w for g, w in zip(got, want)),
                  f"{[g[0] for g in got]} vs {want}")
            check(f"clip {clip}: probe seeds differ", got[0][0] != got[0][1])
            active[clip] = got[2][0]
    check("probe seed 0's active lambda_max(P^-1 H) clipped at 0.01 is the unclipped one within "
          "1e-3 (the step taken, c·P^-1 H; it was ||g||/0.01 times larger)",
          abs(active[0.01] - active[0]) <= 1e-3 * active[0], f"{active}")


def errors(tmp):
    out = os.path.join(tmp, "bad.h5")
    cases = [("probe.curvature_iters", {"probe.curvature_every": 1, "probe.curvature_iters": 1}),
             ("probe.curvature_block_iters", {"probe.curvature_every": 1,
                                              "probe.curvature_block_iters": 1}),
             ("probe.curvature_iters", {"probe.curvature_every": 1,
                                        "probe.curvature_iters": 100000000,
                                        "model.d_model": 256, "model.d_ff": 512,
                                        "model.vocab": 256}),
             ("probe.curvature_until", {"probe.curvature_every": 1, "probe.curvature_until": -1}),
             ("probe.curvature_floor", {"probe.curvature_every": 1, "probe.curvature_floor": 1})]
    for key, d in cases:
        for steps in (0, 3):
            r = run(["--config", "tiny", *sets({**LM, **d, "train.steps": steps}), "--out", out])
            check(f"{key} = {d.get(key)} (steps {steps}): exit 2 naming the key, nothing written",
                  r.returncode == 2 and key in r.stderr and not os.path.exists(out),
                  f"exit {r.returncode}: {r.stderr.strip()[-200:]}")


def new_keys(tmp):
    base = {**LM, "probe.curvature_iters": 6, "probe.curvature_block_iters": 0,
            "probe.curvature_every": 1, "train.steps": 5}
    paths = {}
    for name, d in (("full", {}), ("until", {"probe.curvature_until": 3}),
                    ("active", {"probe.curvature_active_only": "on"}),
                    ("eps", {"probe.curvature_floor": 0})):
        paths[name] = os.path.join(tmp, f"keys-{name}.h5")
        r = run(["--config", "tiny", *sets({**base, **d}), "--out", paths[name], "--quiet"])
        check(f"curvature keys: the {name} run exits 0", r.returncode == 0, r.stderr)
    with h5py.File(paths["full"], "r") as f, h5py.File(paths["until"], "r") as u, \
            h5py.File(paths["active"], "r") as a, h5py.File(paths["eps"], "r") as e:
        full, until, act, eps = f["train"], u["train"], a["train"], e["train"]
        check("curvature_until = 3: rows at updates 0-3 only, the full run's values",
              list(until["curv_step"][()]) == [0, 1, 2, 3] and
              same(until["precond_max_active"][()], full["precond_max_active"][:4]))
        check("curvature_active_only: update 0 complete, its rows the same as the full run's",
              same(act["hessian_max"][:1], full["hessian_max"][:1]) and
              same(act["precond_max"][:1], full["precond_max"][:1]))
        later = [k for k in ("hessian_max", "hessian_min", "precond_max", "precond_eps_share")
                 if not np.all(np.isnan(act[k][1:]))]
        check("curvature_active_only: later rows' other values NaN", not later, f"finite: {later}")
        check("curvature_active_only: later rows' active value is the full run's",
              np.allclose(act["precond_max_active"][1:], full["precond_max_active"][1:],
                          rtol=1e-12, atol=0),
              f'{act["precond_max_active"][1:]} vs {full["precond_max_active"][1:]}')
        check("curvature_active_only: 2K passes a later row (K = 6), blocks NaN",
              np.all(act["curv_passes"][1:] == 12) and np.all(np.isnan(act["hessian_block_max"][1:])),
              str(act["curv_passes"][()]))
        check("curvature_floor = 0: the active value at least the default's at every row",
              np.all(eps["precond_max_active"][()] >= full["precond_max_active"][()] * (1 - 1e-9)),
              f'{eps["precond_max_active"][()]} vs {full["precond_max_active"][()]}')
        cf = [x.attrs["config"] for x in (f, u, a, e)]
        check("the new keys in the stored config only when set",
              not any(k in cf[0] for k in ("curvature_until", "curvature_active_only",
                                           "curvature_floor")) and
              "curvature_until = 3" in cf[1] and "curvature_active_only = on" in cf[2] and
              "curvature_floor = 0" in cf[3], str(cf[3][-300:]))


def dump_f32(tmp):
    out = os.path.join(tmp, "dump32.h5")
    r = run(["dump", "--config", "tiny", "--set", "train.precision=float32", "--out", out, "--hvp"])
    check("dump --hvp of a float32 config exits 0", r.returncode == 0, r.stderr)
    with h5py.File(out, "r") as f:
        v = []
        f["hvp/v"].visititems(lambda n, o: v.append(o[()]) if isinstance(o, h5py.Dataset) else None)
        norm = np.sqrt(sum(float(np.sum(x * x)) for x in v))
        check("dump --hvp: ||v|| = 1, finite lambda_max >= lambda_min, precision float32",
              abs(norm - 1) < 1e-12 and f["hvp/hessian_max"][()] >= f["hvp/hessian_min"][()]
              and f.attrs["precision"] in ("float32", b"float32"))


def main():
    with tempfile.TemporaryDirectory(prefix="stability-curv-") as tmp:
        unchanged(tmp)
        encdec(tmp)
        resume(tmp)
        probe_vs_update0(tmp)
        errors(tmp)
        new_keys(tmp)
        dump_f32(tmp)
    failed = results.count(False)
    print(f"curvature: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
