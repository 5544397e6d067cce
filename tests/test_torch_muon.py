#!/usr/bin/python3
"""test_torch_muon.py — Muon, Lion and nsgd against PyTorch float64 implementations of the
published rules written here (PyTorch 1.13 has none of them; docs/design.md §6h), from the
repository root: /usr/bin/python3 tests/test_torch_muon.py

K updates of a real model (tests/test_torch_optim.py's: the parameters and batch of `stability
dump`, one training window so that every batch is the dump's) in C and in PyTorch; every
parameter of the C run's checkpoint within PARAM_TOL relative of PyTorch's (b_K aside: its
gradient is zero in exact arithmetic, its values rounding noise), and /train/update_rms per layer
against the RMS of the direction each rule applies before the lr.
- Muon (Jordan et al. 2024, the reference code's muon_update and zeropower_via_newtonschulz5):
  on PyTorch's [out][in] weights (the harness's transposed), momentum.lerp_(g, 1 − β), update =
  g.lerp_(momentum, β), NS₅, × √max(1, out/in) (original) or 0.2·√max(out, in) (Liu et al.
  2025); θ ← θ(1 − αλ) − α·update; every other tensor torch.optim.AdamW at muon_adamw_lr.
- Lion (Chen et al. 2023, Alg. 2): θ ← θ(1 − αλ) − α·sign(β₁m + (1 − β₁)g); m ← β₂m + (1 − β₂)g.
- nsgd (Riabinin et al. 2026's NormalizedSGD, momentum buffer from zero): b ← μb + g,
  θ ← θ(1 − αλ) − α·b/(‖b‖ + 1e-8) per tensor.
- A float32 Muon run against the same float64 reference (loose: float32 rounding).
Prints "ok"/"not ok" per check, then "torch muon: N passed, M failed"; exit 1 if M > 0.
"""
import os
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402
import test_torch_optim as to  # noqa: E402

STABILITY = to.STABILITY
PARAM_TOL = 1e-12
F32_TOL = 1e-4
RMS_TOL = 1e-9
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def is_hidden(name):
    """Muon's tensors: the weight matrices inside the layers (docs/design.md §6h)."""
    return name.startswith("layers/") and name.split("/")[-1] in ("wq", "wk", "wv", "wo", "w1",
                                                                   "w2", "w3")


def newton_schulz5(G, steps, a=3.4445, b=-4.7750, c=2.0315):
    """Jordan et al. (2024)'s zeropower_via_newtonschulz5, in float64."""
    X = G.mT if G.size(-2) > G.size(-1) else G
    X = X / (X.norm() + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    return X.mT if G.size(-2) > G.size(-1) else X


class Rules:
    """K updates of cfg's optimizer on P (name -> tensor, the harness's [in][out])."""

    def __init__(self, cfg, P):
        self.kind, self.lr = cfg["train.optimizer"], cfg["train.lr"]
        self.wd = cfg.get("train.weight_decay", 0.0)
        self.P = {k: v.clone() for k, v in P.items()}
        self.m = {k: torch.zeros_like(v) for k, v in P.items()}
        self.u = {}
        if self.kind == "muon":
            self.beta = cfg.get("train.momentum", 0.95)
            self.steps = cfg.get("train.muon_ns_steps", 5)
            self.scale = cfg.get("train.muon_scale", "original")
            b1, b2, eps = cfg["train.beta1"], cfg["train.beta2"], cfg["train.eps"]
            self.leaves = {k: v.clone().requires_grad_(True) for k, v in self.P.items()
                           if not is_hidden(k)}
            self.adamw = torch.optim.AdamW(list(self.leaves.values()),
                                           lr=cfg.get("train.muon_adamw_lr", self.lr),
                                           betas=(b1, b2), eps=eps, weight_decay=self.wd)
            self.b1, self.b2, self.eps, self.t = b1, b2, eps, 0
        elif self.kind == "lion":
            self.b1, self.b2 = cfg.get("train.beta1", 0.9), cfg.get("train.beta2", 0.99)
        else:
            self.mu = cfg.get("train.momentum", 0.9)

    def step(self, G):
        lr, wd = self.lr, self.wd
        if self.kind == "muon":
            self.t += 1
            for k, x in self.leaves.items():
                x.grad = G[k].clone()
            self.adamw.step()
            for k, x in self.leaves.items():
                st = self.adamw.state[x]
                self.P[k] = x.detach().clone()
                self.u[k] = (st["exp_avg"] / (1 - self.b1 ** self.t)) / (
                    (st["exp_avg_sq"] / (1 - self.b2 ** self.t)).sqrt() + self.eps)
        for k in self.P:
            if self.kind == "muon" and not is_hidden(k):
                continue
            p, g = self.P[k], G[k].clone()
            if self.kind == "muon":   # PyTorch's [out][in] = the harness's transpose
                gt, mt = g.T.clone(), self.m[k].T.clone()
                mt.lerp_(gt, 1 - self.beta)
                upd = gt.lerp_(mt, self.beta)
                O = newton_schulz5(upd, self.steps)
                out, inn = O.shape
                s = (max(1.0, out / inn) ** 0.5 if self.scale == "original"
                     else 0.2 * max(out, inn) ** 0.5)
                self.m[k] = mt.T.clone()
                self.u[k] = (s * O).T.clone()
                self.P[k] = p * (1 - lr * wd) - lr * self.u[k]
            elif self.kind == "lion":
                self.u[k] = torch.sign(self.b1 * self.m[k] + (1 - self.b1) * g)
                self.P[k] = p * (1 - lr * wd) - lr * self.u[k]
                self.m[k] = self.b2 * self.m[k] + (1 - self.b2) * g
            else:
                self.m[k] = self.mu * self.m[k] + g
                self.u[k] = self.m[k] / (self.m[k].norm() + 1e-8)
                self.P[k] = p * (1 - lr * wd) - lr * self.u[k]


def run_case(tmp, name, settings, K, tol=PARAM_TOL):
    cfg = {**to.MODEL, **settings}
    cfg["data.path"] = to.corpus(tmp, cfg["model.seq_len"])
    ini = os.path.join(tmp, name + ".ini")
    to.write_ini(ini, {**cfg, "train.steps": K + 1, "train.checkpoint_every": K})
    # the dump in float64: the reference starts from the float64 parameters
    dump_cfg = {k: v for k, v in cfg.items() if k != "train.precision"}
    dini = os.path.join(tmp, name + "_d.ini")
    to.write_ini(dini, dump_cfg)
    dump, out = os.path.join(tmp, name + "_dump.h5"), os.path.join(tmp, name + ".h5")
    rc1, o1 = to.run(["dump", "--config", dini, "--out", dump])
    rc2, o2 = to.run(["--config", ini, "--out", out, "--quiet"])
    if rc1 or rc2:
        check(f"{name}: dump and run", False, (o1 + o2).strip()[-300:])
        return
    with h5py.File(dump) as f:
        m = ref.parse_config(ref.attr_text(f.attrs["config"]))
        tokens = torch.from_numpy(np.asarray(f["batch/tokens"][()], dtype=np.int64))
        targets = torch.from_numpy(np.asarray(f["batch/targets"][()], dtype=np.int64))
        P = {k: torch.from_numpy(v) for k, v in to.group(f, "params").items()}
    with h5py.File(out) as f:
        theta = to.group(f, "checkpoint/params")
        rms = f["train/update_rms"][()]
        stored = ref.attr_text(f.attrs["config"])
        params = [ref.attr_text(x) for x in f["train/grad_fro"].attrs["param"]]
        sv = {k: f["train"][k][0] for k in ("ortho_sv_max", "ortho_sv_min", "opt_update_spec",
                                             "opt_update_rms") if k in f["train"]}
    fn = to.loss_fn(m, 1.0, 1.0 / (m["d_model"] // m["heads"]) ** 0.5)
    opt = Rules(cfg, P)
    rms_err = 0.0
    for t in range(1, K + 1):
        _, G = to.grads_at(opt.P, m, tokens, targets, fn)
        opt.step(G)
        if t == 1:
            O1 = {k: x.clone() for k, x in opt.u.items()}
        for layer in range(m["layers"]):
            u = torch.cat([x.reshape(-1) for k, x in opt.u.items()
                           if k.startswith(f"layers/{layer:02d}/")])
            want = float(torch.sqrt(torch.mean(u * u)))
            rms_err = max(rms_err, abs(rms[t - 1][layer] - want) / want)
    errs = {k: to.param_error(theta[k], opt.P[k].numpy()) for k in opt.P if not to.is_noise(k)}
    worst = max(errs, key=errs.get)
    check(f"{name}: parameters after {K} updates equal the PyTorch rule's (worst {worst} "
          f"{errs[worst]:.1e} <= {tol:g}; b_K aside)",
          errs[worst] <= tol and set(theta) == set(opt.P), f"worst {worst} {errs[worst]:.3g}")
    if cfg["train.optimizer"] == "muon" and tol == PARAM_TOL:
        # update 1's O per hidden matrix: GSL's SVD in C against torch.linalg.svdvals of s·O/s
        err = 0.0
        for k, x in O1.items():
            if not is_hidden(k):
                continue
            layer, col = int(k.split("/")[1]), params.index(k.split("/")[-1])
            s_ = 0.2 * max(x.shape) ** 0.5 if cfg.get("train.muon_scale") == "match_rms_adamw" \
                else max(1.0, x.shape[1] / x.shape[0]) ** 0.5
            svals = torch.linalg.svdvals(x / s_)
            kept = svals[svals >= 1e-3 * svals[0]]
            want = (float(svals[0]), float(kept[-1]), cfg["train.lr"] * s_ * float(svals[0]),
                    float(torch.sqrt(torch.mean(x * x))))
            got = tuple(float(sv[n][layer][col]) for n in ("ortho_sv_max", "ortho_sv_min",
                                                           "opt_update_spec", "opt_update_rms"))
            err = max(err, max(abs(g - w) / w for g, w in zip(got, want)))
        check(f"{name}: /train/ortho_sv_max, ortho_sv_min, opt_update_spec, opt_update_rms of "
              f"update 1 = torch's singular values of O (worst {err:.1e} <= 1e-10)", err <= 1e-10,
              f"{err:.3g}")
    if tol == PARAM_TOL:   # float32: the parameters only (its direction is float32's)
        check(f"{name}: /train/update_rms per layer = RMS of the rule's direction (worst "
              f"{rms_err:.1e} <= {RMS_TOL:g})", rms_err <= RMS_TOL, f"{rms_err:.3g}")
    return stored


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        torch.set_default_dtype(torch.float64)
        with tempfile.TemporaryDirectory(prefix="stability_torch_muon_") as tmp:
            muon = {"train.optimizer": "muon", "train.lr": 0.02, "train.weight_decay": 0.1,
                    "train.muon_adamw_lr": 3e-3}
            stored = run_case(tmp, "muon", muon, 4)
            check("muon: the stored config holds momentum 0.95 and muon's keys",
                  stored and "momentum = 0.95" in stored and "muon_ns_steps = 5" in stored
                  and "muon_adamw_lr = 0.003" in stored)
            run_case(tmp, "muon_rms_swiglu", {**muon, "train.muon_scale": "match_rms_adamw",
                                              "model.activation": "swiglu",
                                              "train.muon_ns_steps": 3}, 3)
            run_case(tmp, "lion", {"train.optimizer": "lion", "train.lr": 1e-3,
                                   "train.weight_decay": 0.1, "train.beta2": 0.99}, 4)
            run_case(tmp, "nsgd", {"train.optimizer": "nsgd", "train.lr": 0.05,
                                   "train.weight_decay": 0.1, "train.momentum": 0.9}, 4)
            run_case(tmp, "muon_float32", {**muon, "train.precision": "float32"}, 3, F32_TOL)
    passed = sum(results)
    print(f"torch muon: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
