#!/usr/bin/python3
"""test_subopt.py — train.schedule = suboptimality (Riabinin et al. 2026, arXiv 2602.05813;
docs/design.md §6h) against a NumPy reference of the fit its authors' code makes
(lipschitz_computeK.py, mode linear_and_cos), from the repository root:
/usr/bin/python3 tests/test_subopt.py

A short lion / muon / nsgd run on a one-window byte corpus; from its /train/loss (each update's
batch loss, before the update) the reference fits K₀, K₁, K₂ and Δ* at update 1 (the 500-point
scan of Δ*, each objective integrated here by 64-point Gauss–Legendre on each side of the kink
at Δ*, where the C code uses GSL's QAGS as the code uses SciPy's quad) and replays the schedule:
every /train/lr equal to it to 1e-12 relative; the fitted η(Δ*) = lr and η(Δ₀) = lr/div; the
run starts at lr/div and reaches lr; a run stopped before and after the peak and resumed is the
uninterrupted run bit for bit; bad keys exit 2 naming the key.
Prints "ok"/"not ok" per check, then "subopt: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
MODEL = ["model.layers=2", "model.d_model=16", "model.heads=2", "model.d_ff=24", "model.vocab=256",
         "model.seq_len=8", "model.causal=true", "data.batch=2", "data.task=text",
         "probe.every=1000"]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(args, env=None):
    p = subprocess.run([STABILITY, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600, env={**os.environ, **(env or {})})
    return p.returncode, p.stdout


def kappa(kind):
    """κ over the 2-D tensors: tok_embed (256, 16), per layer wq wk wv wo (16, 16), w1 (16, 24),
    w2 (24, 16)."""
    shapes = [(256, 16)] + 2 * ([(16, 16)] * 4 + [(16, 24), (24, 16)])
    if kind == "muon":
        return float(sum(min(s) for s in shapes))
    if kind == "lion":
        return float(sum(a * b for a, b in shapes))
    return float(len(shapes))


def fit(lr, div, d0, kap, sigma_f=1e-3):
    """The authors' scan: Δ* in linspace(0.01, Δ₀ − 0.01, 500), the least objective wins."""
    x, w = np.polynomial.legendre.leggauss(64)
    inv2s = sigma_f * kap / 2
    best = (math.inf, None)
    for ds in np.linspace(0.01, d0 - 0.01, 500):
        K2 = d0 * (div - 1) / (lr * (d0 - ds) ** 2)
        K0, K1 = K2 * ds ** 2, 1 / lr - 2 * K2 * ds
        total = 0.0
        for a, b in ((0.0, ds), (ds, d0)):
            t = 0.5 * (b - a) * x + 0.5 * (a + b)
            eta = t / (K0 + K1 * t + K2 * t * t)
            tgt = np.where(t < ds, 0.5 * lr * (1 - np.cos(np.pi * t / ds)),
                           lr + (lr / div - lr) * (t - ds) / (d0 - ds))
            total += 0.5 * (b - a) * np.sum(w * np.exp(-(t - ds) ** 2 * inv2s) * (eta - tgt) ** 2)
        if total / d0 < best[0]:
            best = (total / d0, (K0, K1, K2, ds))
    return best[1]


def replay(loss, lr, div, f_star, steps, floor, K):
    """/train/lr as the schedule sets it from each update's loss (train/subopt.h)."""
    K0, K1, K2, ds = K
    out, switched = [], 0
    for t, L in enumerate(loss, 1):
        if switched:
            span = steps - switched
            out.append(floor + 0.5 * (lr - floor) * (1 + math.cos(math.pi * (t - switched) / span))
                       if span > 0 else lr)
            continue
        d = max(L - f_star, 1e-8)
        if d <= ds:
            switched = t
            out.append(lr)
            continue
        e = d / max(K0 + K1 * d + K2 * d * d, 1e-8)
        out.append(min(lr, max(lr / div, e)))
    return np.array(out)


def case(tmp, opt, lr, div, f_star, steps=60, extra=(), resume=False):
    corpus = os.path.join(tmp, "window.txt")
    with open(corpus, "wb") as fh:
        fh.write(bytes((7 * i + 32) % 251 for i in range(2 * 9)))
    out = os.path.join(tmp, f"{opt}.h5")
    sets = MODEL + [f"data.path={corpus}", f"train.optimizer={opt}", f"train.lr={lr}",
                    f"train.steps={steps}", "train.schedule=suboptimality", f"train.lr_div={div}",
                    f"train.f_star={f_star}", *extra]
    rc, o = run(["--config", "configs/tiny.ini", *[a for s in sets for a in ("--set", s)],
                 "--out", out, "--quiet"])
    if rc:
        check(f"{opt}: run", False, o.strip()[-300:])
        return
    with h5py.File(out) as f:
        loss, got = f["train/loss"][()], f["train/lr"][()]
        cfg = f.attrs["config"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else str(cfg)
    K = fit(lr, div, loss[0] - f_star, kappa(opt))
    K0, K1, K2, ds = K
    eta = lambda x: x / (K0 + K1 * x + K2 * x * x)  # noqa: E731
    floor = 0.0
    want = replay(loss, lr, div, f_star, steps, floor, K)
    err = float(np.max(np.abs(got - want))) / lr
    check(f"{opt}: /train/lr = the refitted schedule replayed on /train/loss (Δ₀ {loss[0] - f_star:.3f}, "
          f"Δ* {ds:.4f}; worst |Δlr|/lr {err:.1e} <= 1e-12)", err <= 1e-12, f"{err:.3g}")
    check(f"{opt}: the fit's η(Δ*) = lr, η(Δ₀) = lr/div",
          abs(eta(ds) - lr) <= 1e-12 * lr and abs(eta(loss[0] - f_star) - lr / div) <= 1e-12 * lr)
    peak = abs(got.max() - lr) <= 1e-12 * lr
    check(f"{opt}: update 1 at lr/div = {lr / div:g}" + (", the peak lr reached and the decay to 0 "
          "at the last update" if peak else f", the lr below its peak ({got.max():.3g})"),
          abs(got[0] - lr / div) <= 1e-12 * lr and (not peak or got[-1] == 0.0) and
          (peak or got.max() < lr))
    check(f"{opt}: the stored config holds schedule, f_star, lr_div and warmup 0",
          "schedule = suboptimality" in cfg and f"lr_div = {div:g}" in cfg and "f_star = " in cfg
          and "warmup = 0" in cfg)
    if not resume:
        return
    # stopped (SIGTERM, checkpoint) before and after the switch to the decay, then --resume:
    # the resumed run replays the fit and the switch from /train/loss (train/subopt.h)
    switch = int(np.argmax(got == lr)) + 1
    args = ["--config", "configs/tiny.ini", *[a for x in sets for a in ("--set", x)], "--quiet"]
    for at in (switch - 2, switch + 2):
        cut = os.path.join(tmp, f"{opt}_cut{at}.h5")
        rc1, o1 = run(args + ["--out", cut], env={"STABILITY_SIGNAL_AT_STEP": str(at)})
        rc2, o2 = run(args + ["--out", cut, "--resume"])
        with h5py.File(out) as a, h5py.File(cut) as b:
            same = all(a["train"][k][()].tobytes() == b["train"][k][()].tobytes()
                       for k in ("lr", "loss", "grad_norm", "update_rms"))
        check(f"{opt}: stopped at update {at} (the decay begins at {switch}) and resumed: /train/lr,"
              f" loss, grad_norm, update_rms are the uninterrupted run's, bit for bit",
              rc2 == 0 and same, f"exits {rc1}, {rc2}: {(o1 + o2).strip()[-200:]}")


def keys(tmp):
    base = ["--config", "configs/tiny.ini", "--set", "train.steps=2", "--quiet"]
    bad = [(["train.f_star=2"], "train.f_star"),
           (["train.optimizer=lion", "train.schedule=cosine", "train.lr_div=5"], "train.lr_div"),
           (["train.schedule=suboptimality"], "train.schedule"),
           (["train.optimizer=muon", "train.schedule=suboptimality", "train.lr_div=1"],
            "train.lr_div"),
           (["train.optimizer=muon", "train.schedule=suboptimality", "train.warmup=100"],
            "train.warmup")]
    for i, (sets, key) in enumerate(bad):
        out = os.path.join(tmp, f"bad{i}.h5")
        rc, o = run(base + [x for s in sets for x in ("--set", s)] + ["--out", out])
        check(f"{' '.join(sets)}: exit 2 naming {key}, nothing written",
              rc == 2 and f"{key}:" in o and not os.path.exists(out), f"exit {rc}: {o.strip()}")


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        with tempfile.TemporaryDirectory(prefix="stability_subopt_") as tmp:
            case(tmp, "lion", 1e-3, 10.0, 0.5)
            case(tmp, "muon", 0.02, 100.0, 0.0, steps=80)
            case(tmp, "nsgd", 0.05, 5.0, 1.0, resume=True)
            keys(tmp)
    passed = sum(results)
    print(f"subopt: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
