#!/usr/bin/python3
"""The lr remedies end to end (docs/design.md §6k), files read with h5py and no project code.

Run from the repository root (make test does): /usr/bin/python3 tests/test_remedies.py
1. Curvature cap, its timing contract on a real short run (k = 3, c = 0.7): every curvature row
   s caps updates s+1 ... s+k, lr = min(scheduled, c*38/lambda_s) to 1e-12, so
   lr[s+1] * precond_max_active[s] <= c*38 to 1e-9; rows at 0, k, 2k, ...; the threshold of a
   row is 38 over the lr update s+1 applied; lr_held_below counts the updates below the
   schedule; the stored config names the keys; `info` says so.
2. Catapult start: /train attribute catapult_lr, the warm-up
   eta_t = eta_s + (lr - eta_s) * min(1, (t-1)/(W-1)), eta_s = min(eta_c, lr), to 1e-12; `info`
   names eta_c.
3. update_ratio_cap: no tensor's relative update (/train/update_rel, updates 1..100) above r;
   spectral_bound: every matrix's sigma1(W_1 - W_0) <= tau * sigma1(W_0) by numpy's SVD (W_0 from
   `dump`, W_1 from the checkpoint after update 1), some matrix at the bound.
4. schedule = autowu: /train/lr exponential (1e-3 lr to lr over warmup updates) up to the
   attribute autowu_switch_step, then the cosine decay from autowu_switch_lr; `info` says so.
5. Files without the keys name none of them in their config and carry none of the attributes.
Prints "ok"/"not ok" per check, then "remedies: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STABILITY = os.environ.get("STABILITY", "./stability")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(args):
    return subprocess.run([STABILITY, *args], capture_output=True, text=True, env=ENV, timeout=600)


def sets(d):
    out = []
    for k, v in d.items():
        out += ["--set", f"{k}={v}"]
    return out


# a small random-token LM at an lr the cap binds on
LM = {"model.layers": 2, "model.d_model": 16, "model.heads": 2, "model.d_ff": 32,
      "model.vocab": 13, "model.seq_len": 8, "data.batch": 4, "data.task": "random",
      "init.seed": 3, "train.optimizer": "adam", "train.lr": 0.05, "train.warmup": 1,
      "train.schedule": "constant", "probe.every": 100, "probe.jacobian": "off",
      "probe.curvature_iters": 10, "probe.curvature_block_iters": 0}


def train(tmp, name, extra):
    out = os.path.join(tmp, name + ".h5")
    r = run(["--config", "tiny", *sets({**LM, **extra}), "--out", out, "--quiet"])
    if r.returncode != 0:
        print(r.stderr)
    return out, r


def curvature_cap(tmp):
    k, c, steps = 3, 0.7, 10
    out, r = train(tmp, "cap", {"train.steps": steps, "train.lr_control": "curvature",
                                "train.lr_control_every": k, "train.curvature_cap": c})
    check("curvature cap: the run ends", r.returncode == 0, r.stderr)
    with h5py.File(out, "r") as f:
        t = f["train"]
        lr, rows, lam = t["lr"][:], t["curv_step"][:].astype(int), t["precond_max_active"][:]
        thr = t["stability_threshold"][:]
        check("curvature cap: rows at 0, k, 2k, ...", list(rows) == list(range(0, steps + 1, k)),
              f"{rows}")
        bound = 2 * 1.9 / 0.1 * c
        worst, rule, held = 0.0, 0.0, 0
        for s, l in zip(rows, lam):
            if s + 1 <= steps:
                worst = max(worst, lr[s] * l / bound - 1)
            for u in range(s + 1, min(s + k, steps) + 1):   # updates s+1 ... s+k, 1-based
                want = min(0.05, bound / l)
                rule = max(rule, abs(lr[u - 1] - want) / want)
        held = int(np.sum(lr < 0.05))
        check("curvature cap: lr[s+1] * lambda_s <= c * 38 (1e-9)", worst <= 1e-9, f"{worst}")
        check("curvature cap: lr = min(scheduled, c*38/lambda_s) for s+1..s+k (1e-12)",
              rule <= 1e-12, f"{rule}")
        check("curvature cap: it binds in this run", 0 < held < steps, f"held {held}")
        check("curvature cap: lr_held_below", int(t.attrs["lr_held_below"]) == held,
              f"{t.attrs.get('lr_held_below')} vs {held}")
        th_ok = all(abs(thr[i] - 38 / lr[s]) <= 1e-12 * thr[i]
                    for i, s in enumerate(rows) if s + 1 <= steps)
        check("curvature cap: a row's threshold is at the lr update s+1 applied", th_ok)
        cfg = f.attrs["config"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
        check("curvature cap: the stored config names the keys",
              "lr_control = curvature" in cfg and "lr_control_every = 3" in cfg and
              "curvature_cap = 0.7" in cfg and "cdat_" not in cfg and "warmup_start" not in cfg)
    info = run(["info", out]).stdout
    check("curvature cap: info says so", "lr capped at 0.7" in info and
          f"below the schedule at {held} updates" in info, info)


def catapult(tmp):
    W, lr = 4, 5.0
    out, r = train(tmp, "catapult", {"train.steps": 5, "train.lr": lr, "train.warmup": W,
                                     "train.warmup_start": "catapult",
                                     "probe.curvature_iters": 20, "probe.curvature_block_iters": 10})
    check("catapult: the run ends", r.returncode == 0, r.stderr)
    with h5py.File(out, "r") as f:
        t = f["train"]
        eta = float(t.attrs["catapult_lr"])
        got = t["lr"][:]
        s = min(eta, lr)
        want = [s + (lr - s) * min(1, (u - 1) / (W - 1)) for u in range(1, 6)]
        check("catapult: eta_c found below the target lr", 0 < eta < lr, f"{eta}")
        err = max(abs(a - b) / b for a, b in zip(got, want))
        check("catapult: warm-up from min(eta_c, lr) to lr over W updates (1e-12)", err <= 1e-12,
              f"{got} vs {want}")
        cfg = f.attrs["config"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
        check("catapult: stored config", "warmup_start = catapult" in cfg and "lr_control" not in cfg)
    info = run(["info", out]).stdout
    check("catapult: info names eta_c", f"catapult lr {eta:.3g}" in info, info)


def ratio_cap(tmp):
    out, r = train(tmp, "ratio", {"train.steps": 6, "train.update_ratio_cap": 1e-3})
    check("update_ratio_cap: the run ends", r.returncode == 0, r.stderr)
    with h5py.File(out, "r") as f:
        rel = f["train/update_rel"][:]
        top = np.nanmax(rel)
    check("update_ratio_cap: every relative update <= r (1e-12)", top <= 1e-3 * (1 + 1e-12), f"{top}")
    check("update_ratio_cap: it binds (some tensor at r)", top >= 1e-3 * (1 - 1e-9), f"{top}")


def spectral(tmp):
    tau = 1e-2
    ini = {"train.steps": 2, "train.checkpoint_every": 1, "train.spectral_bound": tau}
    out, r = train(tmp, "spectral", ini)
    check("spectral_bound: the run ends", r.returncode == 0, r.stderr)
    dump = os.path.join(tmp, "spectral_dump.h5")
    d = run(["dump", "--config", "tiny", *sets({**LM, **ini}), "--out", dump])
    check("spectral_bound: dump", d.returncode == 0, d.stderr)
    worst, at = 0.0, 0
    with h5py.File(out, "r") as f, h5py.File(dump, "r") as g:
        def walk(grp, pre=""):
            for k, v in grp.items():
                if isinstance(v, h5py.Group):
                    yield from walk(v, pre + k + "/")
                else:
                    yield pre + k
        names = list(walk(g["params"]))
        check("spectral_bound: checkpoint after update 1", int(f["checkpoint/step"][()]) == 1)
        for k in names:
            w0, w1 = g["params"][k][()], f["checkpoint/params"][k][()]
            if w0.ndim != 2:
                continue
            s0 = np.linalg.svd(w0, compute_uv=False)[0]
            sd = np.linalg.svd(w1 - w0, compute_uv=False)[0]
            worst = max(worst, sd / (tau * s0) - 1)
            at += abs(sd / (tau * s0) - 1) <= 1e-9
    check("spectral_bound: every matrix's sigma1(dW) <= tau sigma1(W) (numpy SVD, 1e-9)",
          worst <= 1e-9, f"{worst}")
    check("spectral_bound: it binds (some matrix at the bound)", at > 0, f"{at}")


def autowu(tmp):
    lr, T, steps = 1.0, 40, 60
    out, r = train(tmp, "autowu", {"train.steps": steps, "train.lr": lr, "train.warmup": T,
                                   "train.schedule": "autowu"})
    check("autowu: the run ends", r.returncode == 0, r.stderr)
    with h5py.File(out, "r") as f:
        t = f["train"]
        s, eta = int(t.attrs["autowu_switch_step"]), float(t.attrs["autowu_switch_lr"])
        got = t["lr"][:]
    want = [lr * 1e-3 * 1000 ** (min(u, T) / T) if u <= s else
            0.5 * eta * (1 + math.cos(math.pi * (u - s) / (steps - s))) for u in range(1, steps + 1)]
    err = max(abs(a - b) / max(b, 1e-300) for a, b in zip(got, want) if b > 0)
    check("autowu: exponential warm-up to update s*, then cosine decay from its lr (1e-12)",
          err <= 1e-12 and 0 < s <= T and abs(eta - want[s - 1]) <= 1e-12 * eta, f"{err} s={s}")
    info = run(["info", out]).stdout
    check("autowu: info says where the warm-up ended", f"AutoWU warmed up for {s} updates" in info,
          info)


def plain(tmp):
    out, r = train(tmp, "plain", {"train.steps": 2})
    with h5py.File(out, "r") as f:
        cfg = f.attrs["config"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
        attrs = set(f["train"].attrs)
    check("without the keys: none in the config, no attribute",
          r.returncode == 0 and not any(k in cfg for k in ("lr_control", "curvature_cap", "cdat_",
                                                           "warmup_start", "update_ratio_cap",
                                                           "spectral_bound", "autowu"))
          and not attrs & {"catapult_lr", "lr_held_below", "autowu_switch_step"}, cfg)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        curvature_cap(tmp)
        catapult(tmp)
        ratio_cap(tmp)
        spectral(tmp)
        autowu(tmp)
        plain(tmp)
    bad = results.count(False)
    print(f"remedies: {len(results) - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
