#!/usr/bin/python3
"""test_torch_dynamics.py — QK-norm, attention soft-capping and the z-loss (docs/design.md §6g)
against PyTorch autograd in float64, in lm (Post-LN, Pre-LN) and encdec (self- and
cross-attention, padded sources).

The references of tests/test_torch.py (lm) and tests/test_torch_encdec.py (encdec) with their
attention and output loss extended: after the head split q and k of each head are normalised
over d_head (LayerNorm with γ, β or RMSNorm with γ, one set per layer for q and one for k,
qnorm/knorm, cross-attention cqnorm/cknorm); the scaled logits become c·tanh(s/c) before the
masks; the objective is CE + c_z·mean over scored positions of (log Z)², while /loss stays the
cross-entropy. Every gradient must agree within 1e-9 (tests/test_torch.py's measure), and
planted faults (no z-term, k normalised with q's parameters, the cap after the mask's -inf, the
cap missing) must each be caught.

    /usr/bin/python3 tests/test_torch_dynamics.py [--binary ./stability] [--case SUBSTR] [--keep DIR]

The last line is `torch dynamics: N passed, M failed`; exit status 1 if any case failed.
"""
import argparse
import configparser
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402  (the scaffolding the PyTorch cross-checks share)
import test_torch as tt  # noqa: E402
import test_torch_encdec as te  # noqa: E402

REPO = ref.REPO
BUG = set()          # planted faults of the running check (empty for the real cases)
LAST_CE = [None]     # the cross-entropy of the last reference forward (the dump's /loss)


def parse(text):
    """tt.parse_config plus the three keys (absent in older files: off)."""
    m = tt.parse_config(text)
    cp = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"),
                                   strict=False)
    cp.read_string(text)
    get = lambda s, k, d: cp.get(s, k).strip() if cp.has_option(s, k) else d  # noqa: E731
    m["qk_norm"] = get("model", "qk_norm", "off")
    m["softcap"] = float(get("model", "attn_softcap", "0"))
    m["z_loss"] = float(get("train", "z_loss", "0"))
    return m


def qk_parts(m):
    return {"off": (), "layernorm": ("gamma", "beta"), "rmsnorm": ("gamma",)}[m["qk_norm"]]


def shapes(m):
    """The base reference's tensors and QK-norm's (d_head each) on every attention."""
    s = tt.expected_shapes(m) if m["arch"] == "lm" else te.expected_shapes(m)
    Dh = m["d_model"] // m["heads"]
    for name in list(s):
        for w, pre in (("wq", ""), ("cwq", "c")):
            if name.endswith("/" + w):
                p = name[: -len(w)]
                for side in ("q", "k"):
                    for part in qk_parts(m):
                        s[f"{p}{pre}{side}norm.{part}"] = (Dh,)
    return s


def qk_norm(x, P, name, m):
    """x (B,H,T,Dh) normalised over Dh with the layer's γ (β)."""
    eps = m["norm_eps"]
    if m["qk_norm"] == "layernorm":
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return P[name + ".gamma"] * (x - mu) / torch.sqrt(var + eps) + P[name + ".beta"]
    return P[name + ".gamma"] * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def mha(a, P, p, m, kv=None, key_pad=None, causal=None, w="", ctx_hook=None):
    """tt.mha with QK-norm and soft-capping (docs/design.md §6g)."""
    kv = a if kv is None else kv
    causal = m["causal"] if causal is None else causal
    B, T, C = a.shape
    S, H = kv.shape[1], m["heads"]
    Dh = C // H
    q = (a @ P[p + w + "wq"] + P[p + w + "bq"]).reshape(B, T, H, Dh).transpose(1, 2)
    k = (kv @ P[p + w + "wk"] + P[p + w + "bk"]).reshape(B, S, H, Dh).transpose(1, 2)
    v = (kv @ P[p + w + "wv"] + P[p + w + "bv"]).reshape(B, S, H, Dh).transpose(1, 2)
    if m["qk_norm"] != "off":
        q = qk_norm(q, P, p + w + "qnorm", m)
        k = qk_norm(k, P, p + w + ("qnorm" if "shared_qk" in BUG else "knorm"), m)
    s = q @ k.transpose(-1, -2) / math.sqrt(Dh)
    cap = m["softcap"]
    if cap > 0 and "no_cap" not in BUG and "cap_after_mask" not in BUG:
        s = cap * torch.tanh(s / cap)
    if causal:
        s = s.masked_fill(torch.triu(torch.ones(T, S, dtype=torch.bool), diagonal=1), -math.inf)
    if key_pad is not None:
        s = s.masked_fill(key_pad[:, None, None, :], -math.inf)
    if cap > 0 and "cap_after_mask" in BUG:   # a masked key's -inf becomes -c: it gets weight
        s = cap * torch.tanh(s / cap)
    ctx = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
    if ctx_hook is not None:
        ctx = ctx_hook(ctx)
    return ctx @ P[p + w + "wo"] + P[p + w + "bo"]


def output_loss(P, m, x_final, targets):
    """CE + c·mean over scored positions of (log Z)²; LAST_CE keeps the CE."""
    B, T, _ = x_final.shape
    W = P["tok_embed"].t() if m["tie_embeddings"] else P["lm_head"]
    logits = (x_final @ W).reshape(B * T, m["vocab"])
    y = targets.reshape(B * T)
    ce = F.cross_entropy(logits, y, ignore_index=-1, label_smoothing=m["label_smoothing"])
    LAST_CE[0] = float(ce.item())
    if m["z_loss"] <= 0 or "no_z" in BUG:
        return ce
    lz = torch.logsumexp(logits[y >= 0], dim=-1)
    return ce + m["z_loss"] * (lz * lz).mean()


def loss_and_grads(params_np, m, tokens_np, targets_np, loss_fn=None):
    """tt.torch_loss_and_grads, but the loss returned is the cross-entropy (the dump's /loss)
    while the gradients are those of the whole objective."""
    _, grads = ORIGINAL_GRADS(params_np, m, tokens_np, targets_np, loss_fn)
    return LAST_CE[0], grads


ORIGINAL_GRADS = tt.torch_loss_and_grads
# the single stack's forward calls test_torch's names, the encoder–decoder's torch_ref's
tt.mha, tt.output_loss, tt.torch_loss_and_grads = mha, output_loss, loss_and_grads
ref.mha, ref.output_loss = mha, output_loss

LM = {"model.layers": 2, "model.d_model": 16, "model.heads": 4, "model.d_ff": 24,
      "model.vocab": 19, "model.seq_len": 7, "data.batch": 3, "model.causal": "true",
      "init.scheme": "normal", "init.std": 0.4}
ENCDEC = {"model.arch": "encdec", "model.layers": 2, "model.dec_layers": 2, "model.d_model": 16,
          "model.heads": 4, "model.d_ff": 24, "model.vocab": 19, "model.seq_len": 7,
          "model.src_len": 7, "data.task": "reverse", "data.batch": 3, "data.min_len": 3,
          "init.scheme": "normal", "init.std": 0.4}
MITIGATIONS = {
    "qkln": {"model.qk_norm": "layernorm"},
    "qkrms": {"model.qk_norm": "rmsnorm"},
    "cap": {"model.attn_softcap": 1.2},
    "z": {"train.z_loss": 0.3},
    "all": {"model.qk_norm": "layernorm", "model.attn_softcap": 0.8, "train.z_loss": 0.1},
}
# (case substring, fault) pairs that must fail
PLANTED = [("lm-pre-all", "no_z"), ("lm-post-qkln", "shared_qk"), ("encdec-pre-cap", "cap_after_mask"),
           ("lm-pre-cap", "no_cap"), ("encdec-post-all", "shared_qk")]


def cases():
    out = []
    for arch, base in (("lm", LM), ("encdec", ENCDEC)):
        for placement in ("post", "pre"):
            for tag, mit in MITIGATIONS.items():
                out.append((f"{arch}-{placement}-{tag}", {**base, "model.placement": placement, **mit}))
    return out


def check(path):
    with h5py.File(path, "r") as f:
        arch = tt.parse_config(tt.attr_text(f.attrs["config"]))["arch"]
    if arch == "lm":
        return tt.check_dump(path, parse=parse, shapes_fn=shapes)
    return te.check_dump(path, parse=parse, shapes_fn=shapes,
                         grads_fn=lambda P, m, src, tok, tgt: loss_and_grads(
                             P, m, tok, tgt, lambda P_, m_, t_, y_: te.forward_loss(
                                 P_, m_, torch.from_numpy(np.asarray(src, dtype=np.int64)), t_, y_)))


def dump(binary, settings, out):
    args = [binary, "dump", "--config", "tiny", "--out", out, "--perturb", "0.3"]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="./stability")
    ap.add_argument("--case", default="")
    ap.add_argument("--keep", default="")
    a = ap.parse_args()
    binary = a.binary if os.path.isabs(a.binary) else os.path.join(REPO, a.binary)
    work = a.keep or tempfile.mkdtemp(prefix="torch_dyn.")
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    paths = {}
    for name, settings in cases():
        if a.case not in name:
            continue
        path = os.path.join(work, name + ".h5")
        rc, err = dump(binary, settings, path)
        if rc != 0:
            print(f"FAIL {name}: dump exit {rc}: {err[-300:]}")
            failed += 1
            continue
        paths[name] = path
        BUG.clear()
        res = check(path)
        ref.report(name, res, False)
        passed += bool(res["ok"])
        failed += not res["ok"]
    for case, bug in PLANTED:   # each planted fault must be caught
        path = next((p for n, p in paths.items() if case in n), None)
        if path is None:
            continue
        BUG.clear()
        BUG.add(bug)
        res = check(path)
        BUG.clear()
        ok = not res["ok"]
        print(f"{'ok  ' if ok else 'FAIL'} planted {bug:15s} in {case}: "
              f"{'caught' if ok else 'NOT caught'}")
        passed += ok
        failed += not ok
    print(f"torch dynamics: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
