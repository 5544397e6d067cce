#!/usr/bin/python3
"""Training in float32 (train.precision = float32), from the repository root:
/usr/bin/python3 tests/test_float32.py

1. 50 updates of Fig. 2's Post-LN run without warm-up (configs/warmup_postln_nowarm.ini: 6
   layers, d = 128, Adam at lr 1e-3 from the first update) in float32 and in float64: the
   float32 loss at every update within LOSS_TOL relative of the float64 one, and the
   parameters of the checkpoint after update 25 within PARAM_TOL (‖θ₃₂ − θ₆₄‖ / ‖θ₆₄‖ over all
   tensors).
2. The file says what it is: root attribute precision = float32, the config's
   `precision = float32`, the checkpoint's tensors float32; a float64 run has neither line.
3. --resume refuses a file of the other precision (exit 2, the file untouched), and a float32
   run stopped after update 7 and resumed gives the file of the run straight through.
Prints "ok"/"not ok" per check, then "float32: N passed, M failed"; exit 1 if M > 0.
"""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
STEPS = 50
LOSS_TOL = 1e-3     # measured: 6.1e-6 (the largest of the 50 updates, at update 31)
PARAM_TOL = 2e-3    # measured: 5.3e-5 (Adam's first steps are nearly ±lr wherever g is small)
SMALL = ["model.layers=2", "model.d_model=16", "model.heads=2", "model.d_ff=24", "model.vocab=23",
         "model.seq_len=7", "data.batch=3", "train.warmup=1", "train.checkpoint_every=5"]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(args, env=None):
    p = subprocess.run([STABILITY, *args, "--quiet"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout


def sets(pairs):
    return [x for s in pairs for x in ("--set", s)]


def params(f):
    out = {}
    f["checkpoint/params"].visititems(
        lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out


def test_trajectory(tmp):
    files = {}
    for prec in ("float64", "float32"):
        files[prec] = os.path.join(tmp, f"fig2_{prec}.h5")
        rc, out = run(["--config", "configs/warmup_postln_nowarm.ini", "--out", files[prec],
                       *sets([f"train.steps={STEPS}", f"train.precision={prec}",
                              f"train.checkpoint_every={STEPS // 2}", "probe.every=25"])])
        if rc:
            check(f"Fig. 2 Post-LN run in {prec}", False, out[-300:])
            return
    with h5py.File(files["float64"]) as a, h5py.File(files["float32"]) as b:
        la, lb = a["train/loss"][()], b["train/loss"][()]
        rel = np.abs(lb - la) / np.abs(la)
        check(f"{STEPS} updates of Fig. 2's Post-LN (no warm-up): float32 loss within {LOSS_TOL:g} "
              f"of float64 at every update (worst {rel.max():.2e} at update {rel.argmax() + 1})",
              len(la) == len(lb) == STEPS and rel.max() <= LOSS_TOL)
        pa, pb = params(a), params(b)
        num = sum(float(np.sum((pb[k].astype(np.float64) - pa[k]) ** 2)) for k in pa)
        den = sum(float(np.sum(pa[k] ** 2)) for k in pa)
        dp = (num / den) ** 0.5 if den > 0 else float('nan')
        check(f"the checkpoint's parameters (after {int(b['checkpoint/step'][()])} updates) within "
              f"{PARAM_TOL:g} "
              f"(‖θ32 − θ64‖/‖θ64‖ = {dp:.2e})", den > 0 and dp <= PARAM_TOL)
        check("float32 file: root attribute precision = float32, config says so, checkpoint "
              "tensors float32",
              b.attrs.get("precision") == "float32" and "precision = float32" in b.attrs["config"]
              and all(v.dtype == np.float32 for v in pb.values()))
        check("float64 file: no precision attribute or key, checkpoint tensors float64",
              "precision" not in a.attrs and "precision" not in a.attrs["config"]
              and all(v.dtype == np.float64 for v in pa.values()))


def test_resume(tmp):
    straight, stopped = os.path.join(tmp, "straight.h5"), os.path.join(tmp, "stopped.h5")
    base = ["--config", "tiny", *sets(SMALL + ["train.steps=20", "train.precision=float32"])]
    rc1, _ = run(base + ["--out", straight])
    rc2, _ = run(base + ["--out", stopped], env={"STABILITY_SIGNAL_AT_STEP": "7"})
    before = open(stopped, "rb").read()
    other = ["--config", "tiny", *sets(SMALL + ["train.steps=20"])]
    rc3, out3 = run(other + ["--out", stopped, "--resume"])
    check("--resume of a float32 file as float64 refuses (exit 2, file untouched)",
          rc3 == 2 and "precision = float32, not float64" in out3 and open(stopped, "rb").read() == before,
          f"exit {rc3}: {out3.strip()[-200:]}")
    rc4, out4 = run(base + ["--out", stopped, "--resume"])
    with h5py.File(straight) as a, h5py.File(stopped) as b:
        same = (rc1 == rc2 == rc4 == 0 and np.array_equal(a["train/loss"][()], b["train/loss"][()])
                and all(np.array_equal(v, params(b)[k]) for k, v in params(a).items()))
    check("a float32 run stopped after update 7 and resumed: the run straight through", same,
          f"exits {rc1}, {rc2}, {rc4}: {out4.strip()[-200:]}")
    f64 = os.path.join(tmp, "f64.h5")
    run(other + ["--out", f64], env={"STABILITY_SIGNAL_AT_STEP": "7"})
    rc5, out5 = run(base + ["--out", f64, "--resume"])
    check("--resume of a float64 file as float32 refuses (exit 2)",
          rc5 == 2 and "precision = float64, not float32" in out5, out5.strip()[-200:])


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    elif not os.path.exists("results/licenses.txt"):
        check("results/licenses.txt exists (setup/corpus.sh)", False)
    else:
        with tempfile.TemporaryDirectory(prefix="stability_float32_") as tmp:
            test_trajectory(tmp)
            test_resume(tmp)
    passed = sum(results)
    print(f"float32: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
