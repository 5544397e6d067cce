#!/usr/bin/python3
"""test_torch_optim.py — the optimizers' side and μP against PyTorch float64 (docs/design.md
§6h), from the repository root: /usr/bin/python3 tests/test_torch_optim.py

1. GI-Adam (Kalra & Barkeshli 2024), StableAdamW (Wortsman et al. 2023b, Alg. 2, in its own
   β̂ form), RAdam (Liu et al. 2020, Alg. 2) and μP's Adam/AdamW (torch.optim with one param
   group per lr; mup_simple's rates, and Table 3's — `mup`: tok_embed at lr·√r too) written here from their definitions, run for K updates of a real model
   (tests/test_torch.py's, on the parameters and batch of `stability dump`), against the
   checkpoint of a C run after K updates: every parameter within PARAM_TOL relative (b_K
   aside: its gradient is zero in exact arithmetic, its values rounding noise; is_noise).
   Every training batch of the C run is the dump's: the byte corpus is 2·(seq_len + 1) bytes,
   so its training split holds one window and every row of every batch is that window.
2. /train/update_rms [step][layer] and update_rms_extra (tok_embed) against the RMS of
   m̂/(√v̂ + ε) of the PyTorch optimizer's own state after each update; /train/radam_rho and
   radam_rect against Liu et al.'s formulas.
3. μP's forward and backward: the dump's loss and gradients against the PyTorch model with
   attention logits q·k/d_head and output logits × base_width/d (loss 1e-12, gradients 1e-9, as
   docs/design.md §8), at d = base_width (d_ff = d and ≠ d) and at d = 2·base_width (and Table 3's
   tied readout, logits × √(base_width/d)); at
   d = base_width the standard model's loss differs (the attention scale is the difference).
4. The new keys: bad values exit 2 naming the key, no file written; a run's stored config holds
   init.embed, parametrization, base_width only when they are set.
Prints "ok"/"not ok" per check, then "torch optim: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402
import test_torch as tt  # noqa: E402

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
PARAM_TOL = 1e-12   # max |θ_C − θ_torch| / max |θ_torch| per tensor (see param_error)
RMS_TOL = 1e-9      # relative, per layer and update
MODEL = {"model.layers": 2, "model.d_model": 16, "model.heads": 2, "model.d_ff": 24,
         "model.vocab": 256, "model.seq_len": 8, "model.causal": "true", "data.batch": 2,
         "data.task": "text", "train.warmup": 0, "train.schedule": "constant",
         "train.beta1": 0.9, "train.beta2": 0.98, "train.eps": 1e-8, "probe.every": 1000}
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(args):
    p = subprocess.run([STABILITY, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    return p.returncode, p.stdout


def write_ini(path, settings):
    sections = {}
    for key, value in settings.items():
        sec, k = key.split(".", 1)
        sections.setdefault(sec, []).append(f"{k} = {value}")
    with open(path, "w") as fh:
        for sec in ("model", "init", "data", "train", "probe"):
            if sec in sections:
                fh.write(f"[{sec}]\n" + "\n".join(sections[sec]) + "\n\n")


def group(f, name):
    out = {}
    f[name].visititems(lambda n, o: out.__setitem__(n, np.asarray(o[()], dtype=np.float64))
                       if isinstance(o, h5py.Dataset) else None)
    return out


# ----------------------------------------------------------------------------------------------
# The model: tests/test_torch.py's, with μP's two scales.

MUPS = ("mup", "mup_simple")   # a user's names: Table 3, and μParam (simple)


def tied(cfg):
    return str(cfg.get("model.tie_embeddings", "true")) != "false"


def mup_scales(m, cfg):
    """(output logit multiplier, attention scale) of a config (docs/design.md §6h): r = base/d
    and 1/d_head under μP, but √r for Table 3's tied readout (`mup`: the readout tok_embed has
    Var 1/d, so √r·W has Var r/d ∝ 1/d², Table 3's 1/fan_in²); (1, 1/√d_head) otherwise."""
    dh = m["d_model"] // m["heads"]
    if cfg.get("init.parametrization") not in MUPS:
        return 1.0, 1.0 / math.sqrt(dh)
    r = cfg["init.base_width"] / m["d_model"]
    table3 = cfg["init.parametrization"] == "mup"
    return (math.sqrt(r) if table3 and tied(cfg) else r), 1.0 / dh


def mup_lr_mult(cfg, name):
    """The Adam lr multiplier of tensor name (Yang et al. 2022, Table 3, Adam column): hidden
    matrices 1/fan_in ∝ r; under `mup` (Table 3) also tok_embed √r, so its effective step √d·lr·√r
    (the input multiplier √d) is the base width's; everything else 1."""
    if cfg.get("init.parametrization") not in MUPS:
        return 1.0
    r = cfg["init.base_width"] / cfg["model.d_model"]
    if is_hidden(name):
        return r
    if name == "tok_embed" and cfg["init.parametrization"] == "mup":
        return math.sqrt(r)
    return 1.0


def loss_fn(m, logit_scale, attn_scale):
    """The loss of tests/test_torch.py's model with attention logits q·kᵀ·attn_scale (its mha
    divides by √d_head, so q is multiplied by attn_scale·√d_head: W_Q and b_Q scaled, exactly
    the same function) and output logits × logit_scale (x_final scaled before the output)."""
    q_mult = attn_scale * math.sqrt(m["d_model"] // m["heads"])

    def f(P, m_, tokens, targets):
        Q = dict(P)
        for l in range(m["layers"]):
            for w in ("wq", "bq"):
                Q[f"layers/{l:02d}/{w}"] = P[f"layers/{l:02d}/{w}"] * q_mult
        x = tt.forward_stack(Q, m, tokens)
        if m["has_final_norm"]:
            x = ref.apply_norm(x, Q, "final_norm", m)
        return ref.output_loss(Q, m, x * logit_scale, targets)
    return f


def grads_at(P, m, tokens, targets, fn):
    """Loss and name -> gradient (float64 tensors) of fn at P (name -> tensor)."""
    Pt = {k: v.detach().clone().requires_grad_(True) for k, v in P.items()}
    loss = fn(Pt, m, tokens, targets)
    loss.backward()
    return float(loss), {k: (v.grad if v.grad is not None else torch.zeros_like(v))
                         for k, v in Pt.items()}


# ----------------------------------------------------------------------------------------------
# The optimizers, from their papers (state per tensor, float64).

def is_hidden(name):
    """μP's hidden matrices: every weight matrix inside a layer (docs/design.md §6h)."""
    return name.startswith("layers/") and name.split("/")[-1] in ("wq", "wk", "wv", "wo", "w1",
                                                                   "w2")


class Reference:
    """K updates of cfg's optimizer on P; after each, the update direction u = m̂/(√v̂ + ε) per
    tensor (self.u) and, for StableAdamW, whether any tensor's lr was clipped."""

    def __init__(self, cfg, P):
        self.kind = cfg["train.optimizer"]
        self.lr, self.wd = cfg["train.lr"], cfg.get("train.weight_decay", 0.0)
        self.b1, self.b2, self.eps = cfg["train.beta1"], cfg["train.beta2"], cfg["train.eps"]
        self.P = {k: v.clone() for k, v in P.items()}
        self.m = {k: torch.zeros_like(v) for k, v in P.items()}
        self.v = {k: torch.zeros_like(v) for k, v in P.items()}
        self.t = 0
        self.clipped = False
        self.mult = {k: mup_lr_mult(cfg, k) for k in P}
        if self.kind in ("adam", "adamw"):   # μP: torch.optim with one group per lr
            cls = torch.optim.Adam if self.kind == "adam" else torch.optim.AdamW
            self.leaves = {k: v.clone().requires_grad_(True) for k, v in self.P.items()}
            groups = {}
            for k, x in self.leaves.items():
                groups.setdefault(self.mult[k], []).append(x)
            self.opt = cls([{"params": xs, "lr": self.lr * mu} for mu, xs in groups.items()],
                           lr=self.lr, betas=(self.b1, self.b2), eps=self.eps,
                           weight_decay=self.wd)

    def step(self, G):
        self.t += 1
        t, b1, b2, eps, wd = self.t, self.b1, self.b2, self.eps, self.wd
        self.u = {}
        if self.kind in ("adam", "adamw"):
            for k, x in self.leaves.items():
                x.grad = G[k].clone()
            self.opt.step()
            for k, x in self.leaves.items():
                st = self.opt.state[x]
                self.P[k] = x.detach().clone()
                self.u[k] = (st["exp_avg"] / (1 - b1 ** t)) / ((st["exp_avg_sq"] / (1 - b2 ** t)).sqrt() + eps)
            return
        for k in self.P:
            p, lr = self.P[k], self.lr * self.mult[k]
            if self.kind == "gi_adam":          # Kalra & Barkeshli 2024: Adam, v₀ = g₁²
                g = G[k] + wd * p
                if t == 1:
                    self.v[k] = g * g
                self.m[k] = b1 * self.m[k] + (1 - b1) * g
                self.v[k] = b2 * self.v[k] + (1 - b2) * g * g
                mh, vh = self.m[k] / (1 - b1 ** t), self.v[k] / (1 - b2 ** t)
                self.u[k] = mh / (vh.sqrt() + eps)
                self.P[k] = p - lr * self.u[k]
            elif self.kind == "stableadamw":    # Wortsman et al. 2023b, Alg. 2 (debiased β̂)
                g = G[k]
                b1h = b1 * (1 - b1 ** (t - 1)) / (1 - b1 ** t)
                b2h = b2 * (1 - b2 ** (t - 1)) / (1 - b2 ** t)
                self.m[k] = b1h * self.m[k] + (1 - b1h) * g          # = m̂
                self.v[k] = b2h * self.v[k] + (1 - b2h) * g * g      # = v̂
                rms = float(torch.sqrt(torch.mean(g * g / torch.clamp(self.v[k], min=eps * eps))))
                self.clipped |= rms > 1.0
                eta = lr / max(1.0, rms)
                self.u[k] = self.m[k] / (self.v[k].sqrt() + eps)
                self.P[k] = p - eta * wd * p - eta * self.u[k]
            elif self.kind == "radam":          # Liu et al. 2020, Alg. 2 (threshold 4)
                g = G[k] + wd * p
                self.m[k] = b1 * self.m[k] + (1 - b1) * g
                self.v[k] = b2 * self.v[k] + (1 - b2) * g * g
                mh, vh = self.m[k] / (1 - b1 ** t), self.v[k] / (1 - b2 ** t)
                rho, r = radam_terms(b2, t)
                self.u[k] = mh / (vh.sqrt() + eps)
                self.P[k] = p - lr * (r * self.u[k] if rho > 4 else mh)


def radam_terms(b2, t):
    """ρₜ and rₜ of Liu et al. (2020): ρ∞ = 2/(1−β₂) − 1, ρₜ = ρ∞ − 2tβ₂ᵗ/(1−β₂ᵗ),
    rₜ = √((ρₜ−4)(ρₜ−2)ρ∞/((ρ∞−4)(ρ∞−2)ρₜ)) where ρₜ > 4 (NaN elsewhere)."""
    rinf = 2 / (1 - b2) - 1
    rho = rinf - 2 * t * b2 ** t / (1 - b2 ** t)
    r = math.sqrt((rho - 4) * (rho - 2) * rinf / ((rinf - 4) * (rinf - 2) * rho)) if rho > 4 else math.nan
    return rho, r


def param_error(c, t):
    """max |c − t| / max |t| over the tensor."""
    return float(np.max(np.abs(c - t))) / float(np.max(np.abs(t)))


def is_noise(name):
    """b_K, whose gradient is zero in exact arithmetic (softmax ignores a shift shared by all
    keys; docs/design.md §8): both sides hold rounding noise (~1e-17) that Adam's step divides
    by ε, and with Adam's L2 term each update multiplies by ~lr·λ/ε (≫ 1 here): after a few
    updates its values are the noise's, not comparable."""
    return name.split("/")[-1] == "bk"


# ----------------------------------------------------------------------------------------------
# 1–2: K updates in C and in PyTorch.

def corpus(tmp, T):
    path = os.path.join(tmp, "window.txt")
    with open(path, "wb") as fh:   # one training window and one validation window
        fh.write(bytes((7 * i + 32) % 251 for i in range(2 * (T + 1))))
    return path


def run_updates(tmp, name, settings, K, rms=True):
    """K updates of settings' optimizer in C and in PyTorch; rms = False: no update-RMS check
    (with Adam's L2 term b_K's noise grows to O(1) steps inside its layer's RMS: is_noise)."""
    cfg = {**MODEL, **settings}
    cfg["data.path"] = corpus(tmp, cfg["model.seq_len"])
    ini = os.path.join(tmp, name + ".ini")
    write_ini(ini, {**cfg, "train.steps": K + 1, "train.checkpoint_every": K})
    dump, out = os.path.join(tmp, name + "_dump.h5"), os.path.join(tmp, name + ".h5")
    rc1, o1 = run(["dump", "--config", ini, "--out", dump])
    rc2, o2 = run(["--config", ini, "--out", out, "--quiet"])
    if rc1 or rc2:
        check(f"{name}: dump and run", False, (o1 + o2).strip()[-300:])
        return
    with h5py.File(dump) as f:
        m = ref.parse_config(ref.attr_text(f.attrs["config"]))
        tokens = torch.from_numpy(np.asarray(f["batch/tokens"][()], dtype=np.int64))
        targets = torch.from_numpy(np.asarray(f["batch/targets"][()], dtype=np.int64))
        P = {k: torch.from_numpy(v) for k, v in group(f, "params").items()}
    with h5py.File(out) as f:
        theta = group(f, "checkpoint/params")
        ck_step = int(f["checkpoint/step"][()])
        tr = {k: f["train"][k][()] for k in f["train"] if k in (
            "update_rms", "update_rms_extra", "radam_rho", "radam_rect")}
        extra = [ref.attr_text(x) for x in f["train/update_rms_extra"].attrs["tensor"]]
    fn = loss_fn(m, *mup_scales(m, cfg))
    opt = Reference(cfg, P)
    rms_err = 0.0
    for t in range(1, K + 1):
        _, G = grads_at(opt.P, m, tokens, targets, fn)
        opt.step(G)
        for l in range(m["layers"]):
            u = torch.cat([x.reshape(-1) for k, x in opt.u.items() if k.startswith(f"layers/{l:02d}/")])
            want = float(torch.sqrt(torch.mean(u * u)))
            rms_err = max(rms_err, abs(tr["update_rms"][t - 1][l] - want) / want)
        want = float(torch.sqrt(torch.mean(opt.u["tok_embed"] ** 2)))
        rms_err = max(rms_err, abs(tr["update_rms_extra"][t - 1][extra.index("tok_embed")] - want) / want)
    errs = {k: param_error(theta[k], opt.P[k].numpy()) for k in opt.P if not is_noise(k)}
    worst = max(errs, key=errs.get)
    check(f"{name}: parameters after {K} updates equal PyTorch's {cfg['train.optimizer']} "
          f"(worst {worst} {errs[worst]:.1e} <= {PARAM_TOL:g}; b_K aside)",
          ck_step == K and errs[worst] <= PARAM_TOL and set(theta) == set(opt.P),
          f"checkpoint at {ck_step}, worst {worst} {errs[worst]:.3g}")
    if rms:
        check(f"{name}: /train/update_rms per layer and tok_embed's = RMS of m̂/(√v̂+ε) "
              f"(worst {rms_err:.1e} <= {RMS_TOL:g})", rms_err <= RMS_TOL, f"{rms_err:.3g}")
    if cfg["train.optimizer"] == "stableadamw":
        check(f"{name}: the case clips some tensor's lr (√mean(g²/v̂) > 1)", opt.clipped)
    if cfg["train.optimizer"] == "radam":
        rho, r = zip(*(radam_terms(cfg["train.beta2"], t) for t in range(1, K + 2)))
        ok = (np.allclose(tr["radam_rho"], rho, rtol=1e-12, atol=0)
              and np.array_equal(np.isnan(tr["radam_rect"]), np.isnan(r))
              and np.allclose(tr["radam_rect"], r, rtol=1e-12, atol=0, equal_nan=True))
        check(f"{name}: /train/radam_rho, radam_rect = Liu et al.'s ρₜ, rₜ (NaN where ρₜ <= 4)",
              ok, f"{tr['radam_rho']} {tr['radam_rect']}")
    else:
        check(f"{name}: no /train/radam_* without radam", "radam_rho" not in tr)


# ----------------------------------------------------------------------------------------------
# 3: μP's forward and backward through `stability dump`.

def check_mup_dump(tmp, name, settings):
    cfg = {**MODEL, "data.task": "random", "model.vocab": 23, "init.parametrization": "mup_simple",
           **settings}
    ini, out = os.path.join(tmp, name + ".ini"), os.path.join(tmp, name + ".h5")
    write_ini(ini, cfg)
    rc, o = ref.dump_with(STABILITY, ini, out)
    if rc:
        check(f"{name}: dump", False, o.strip()[-300:])
        return
    with h5py.File(out) as f:
        m = ref.parse_config(ref.attr_text(f.attrs["config"]))
        tokens, targets = f["batch/tokens"][()], f["batch/targets"][()]
        params, grads = ref.read_group(f, "params"), ref.read_group(f, "grads")
        loss_c = float(f["loss"][()])
    res = ref.new_res()
    if not ref.check_tensors(tt.expected_shapes(m), params, grads, res["problems"], res["notes"]):
        check(f"{name}: tensors", False, "; ".join(res["problems"]))
        return
    loss_t, grads_t = ref.loss_and_grads(params, m, tokens, targets, loss_fn(m, *mup_scales(m, cfg)))
    ref.compare(res, list(grads_t), loss_t, grads_t, loss_c, grads)
    check(f"{name}: μP loss and gradients = PyTorch's (loss {res['loss_err']:.1e}, worst "
          f"{res['worst'][0]} {res['worst'][1]:.1e})", res["ok"], "; ".join(res["problems"][:3]))
    if cfg["model.d_model"] == cfg["init.base_width"]:
        loss_std, _ = ref.loss_and_grads(params, m, tokens, targets, loss_fn(m, 1.0, 1.0 / math.sqrt(
            m["d_model"] // m["heads"])))
        check(f"{name}: at d = base_width the standard model's loss differs (attention scale): "
              f"{loss_std:.6f} vs {loss_c:.6f}", abs(loss_std - loss_c) > 1e-6 * abs(loss_c))


# ----------------------------------------------------------------------------------------------
# 4: the keys.

def check_keys(tmp):
    base = ["--config", "configs/tiny.ini", "--set", "train.steps=2", "--quiet"]
    bad = [(["init.parametrization=mup"], "init.base_width"),
           (["init.parametrization=mup", "init.base_width=0"], "init.base_width"),
           (["init.base_width=-3"], "init.base_width"),
           (["init.parametrization=mup", "init.base_width=4", "train.optimizer=sgd"],
            "init.parametrization"),
           (["init.embed=uniform"], "init.embed"),
           (["train.optimizer=stable_adamw"], "train.optimizer")]
    for i, (sets, key) in enumerate(bad):
        out = os.path.join(tmp, f"bad{i}.h5")
        args = base + [x for s in sets for x in ("--set", s)] + ["--out", out]
        rc, o = run(args)
        check(f"{' '.join(sets)}: exit 2 naming {key}, nothing written",
              rc == 2 and f"{key}:" in o and not os.path.exists(out), f"exit {rc}: {o.strip()}")
    texts = []
    for sets in ([], ["init.embed=xavier_uniform", "init.parametrization=mup", "init.base_width=4"]):
        out = os.path.join(tmp, f"keys{len(sets)}.h5")
        rc, o = run(base + [x for s in sets for x in ("--set", s)] + ["--out", out])
        with h5py.File(out) as f:
            texts.append(ref.attr_text(f.attrs["config"]) if rc == 0 else "")
    new = ("embed = ", "parametrization = ", "base_width = ")
    check("the stored config holds init.embed, parametrization, base_width only when set",
          all(k not in texts[0] for k in new) and all(k in texts[1] for k in new))


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        torch.set_default_dtype(torch.float64)
        with tempfile.TemporaryDirectory(prefix="stability_torch_optim_") as tmp:
            run_updates(tmp, "gi_adam", {"train.optimizer": "gi_adam", "train.lr": 3e-3}, 5)
            run_updates(tmp, "gi_adam_l2", {"train.optimizer": "gi_adam", "train.lr": 3e-3,
                                            "train.weight_decay": 0.1}, 5, rms=False)
            run_updates(tmp, "stableadamw", {"train.optimizer": "stableadamw", "train.lr": 3e-2,
                                             "train.weight_decay": 0.1, "train.beta2": 0.9}, 6)
            run_updates(tmp, "radam", {"train.optimizer": "radam", "train.lr": 3e-3,
                                       "train.weight_decay": 0.01}, 6)
            run_updates(tmp, "mup_simple_adam", {"train.optimizer": "adam", "train.lr": 3e-3,
                                          "init.parametrization": "mup_simple", "init.base_width": 8,
                                          "model.d_model": 32, "model.d_ff": 48,
                                          "model.tie_embeddings": "false"}, 1)
            run_updates(tmp, "mup_simple_adamw", {"train.optimizer": "adamw", "train.lr": 3e-3,
                                           "train.weight_decay": 0.1, "init.parametrization": "mup_simple",
                                           "init.base_width": 64, "model.d_model": 32,
                                           "model.d_ff": 48}, 3)
            # Table 3 (`mup`): tok_embed's lr × √r, the tied readout's logits × √r
            run_updates(tmp, "mup_table3_adam_untied", {
                "train.optimizer": "adam", "train.lr": 3e-3, "init.parametrization": "mup",
                "init.base_width": 8, "model.d_model": 32, "model.d_ff": 48,
                "model.tie_embeddings": "false"}, 1)
            run_updates(tmp, "mup_table3_adamw_tied", {
                "train.optimizer": "adamw", "train.lr": 3e-3, "train.weight_decay": 0.1,
                "init.parametrization": "mup", "init.base_width": 8, "model.d_model": 32,
                "model.d_ff": 48}, 3)
            check_mup_dump(tmp, "mup table3 d=2base tied post", {
                "model.d_model": 32, "model.d_ff": 40, "init.base_width": 16,
                "init.parametrization": "mup"})
            check_mup_dump(tmp, "mup d=base, d_ff=d", {"model.d_model": 16, "model.d_ff": 16,
                                                       "init.base_width": 16})
            check_mup_dump(tmp, "mup d=base, d_ff=24", {"model.d_model": 16, "model.d_ff": 24,
                                                        "init.base_width": 16})
            check_mup_dump(tmp, "mup d=2base untied pre", {
                "model.d_model": 32, "model.d_ff": 40, "init.base_width": 16,
                "model.tie_embeddings": "false", "model.placement": "pre"})
            check_mup_dump(tmp, "mup d=2base tied post", {"model.d_model": 32, "model.d_ff": 40,
                                                           "init.base_width": 16})
            check_keys(tmp)
    passed = sum(results)
    print(f"torch optim: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
