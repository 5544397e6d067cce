#!/usr/bin/python3
"""test_torch.py — the C backward pass against PyTorch autograd (float64), docs/design.md §8.

For each case: write a config, run `./stability dump --config CASE.ini --out CASE.h5`, read the
dump with h5py (layout docs/design.md §6, names §5), rebuild the network in PyTorch float64 from the stored
parameters and the resolved config text (root attribute `config`), run forward + backward on the
stored batch and compare the loss and every gradient tensor with the C ones.

    /usr/bin/python3 tests/test_torch.py                 # the real cross-check (from the repo root)
    /usr/bin/python3 tests/test_torch.py --self-test     # the reader/compare pipeline on its own
    options: --binary PATH  --keep DIR  --case SUBSTRING  --verbose

The last line is `torch: N passed, M failed`; exit status 1 if any case failed.
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

torch.set_default_dtype(torch.float64)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Tolerances (docs/design.md §8).
GRAD_TOL = 1e-9     # per tensor, see grad_error()
LOSS_TOL = 1e-12    # |loss_torch - loss_c| / |loss_torch|
# Floor of the per-tensor scale, as a fraction of the largest gradient entry over all tensors.
# Some gradients are zero in exact arithmetic (the key bias bk: softmax ignores a shift shared by
# all keys; with init.zero_qk also W_Q, W_K, b_Q): what both sides hold there is rounding noise,
# which must be judged on the scale of the whole gradient, not on its own.
GLOBAL_FLOOR = 1e-6

LAYER_MATRICES = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2"]


# ----------------------------------------------------------------------------------------------
# The resolved config (root attribute `config`, docs/design.md §4).

def parse_bool(s, key):
    v = s.strip().lower()
    if v in ("true", "on", "yes", "1"):
        return True
    if v in ("false", "off", "no", "0"):
        return False
    raise ValueError(f"{key}: not a boolean: {s!r}")


PLACEMENTS = ("post", "pre")
NORMS = ("layernorm", "rmsnorm", "none")


def parse_config(text, placements=PLACEMENTS, norms=NORMS, auto_final_norm_on=("pre",)):
    """The model settings from the resolved INI text of a dump. placements, norms: the values
    this reference models (others are refused); auto_final_norm_on: the placements for which an
    unresolved final_norm = auto means on (tests/test_torch_schemes.py passes its own)."""
    cp = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"),
                                   strict=False)
    cp.read_string(text)

    def get(section, key):
        if not cp.has_option(section, key):
            raise ValueError(f"resolved config lacks {section}.{key}")
        return cp.get(section, key).strip()

    m = {}
    for k in ("layers", "d_model", "heads", "d_ff", "vocab", "seq_len"):
        m[k] = int(get("model", k))
    # arch (docs/design.md §6b): `lm` when absent. encdec adds dec_layers (0 = layers) and src_len, and
    # has no use for `causal` (its encoder is bidirectional, its decoder causal).
    m["arch"] = (cp.get("model", "arch").strip().lower() if cp.has_option("model", "arch")
                 else "lm")
    if m["arch"] not in ("lm", "encdec"):
        raise ValueError(f"model.arch {m['arch']!r} not modelled here")
    m["placement"] = get("model", "placement").lower()
    m["norm"] = get("model", "norm").lower()
    m["norm_eps"] = float(get("model", "norm_eps"))
    m["activation"] = get("model", "activation").lower()
    if m["arch"] == "encdec":
        m["dec_layers"] = int(get("model", "dec_layers"))
        if m["dec_layers"] == 0:        # should have been resolved by the writer (docs/design.md §6b)
            m["dec_layers"] = m["layers"]
        m["src_len"] = int(get("model", "src_len"))
        m["causal"] = (parse_bool(get("model", "causal"), "model.causal")
                       if cp.has_option("model", "causal") else False)
    else:
        m["causal"] = parse_bool(get("model", "causal"), "model.causal")
    m["tie_embeddings"] = parse_bool(get("model", "tie_embeddings"), "model.tie_embeddings")
    m["dropout"] = float(get("model", "dropout"))
    fn = get("model", "final_norm").lower()
    if fn == "auto":    # should have been resolved by the writer; resolve as docs/design.md §4 says
        fn = "on" if m["placement"] in auto_final_norm_on else "off"
    m["final_norm"] = parse_bool(fn, "model.final_norm")
    m["batch"] = int(get("data", "batch"))
    m["label_smoothing"] = float(get("data", "label_smoothing"))
    m["task"] = get("data", "task").lower()
    # Keys only some schemes read (tests/test_torch_schemes.py); absent = None.
    for key, section, conv in (("mix_ratio", "model", float), ("dyt_alpha", "model", float),
                               ("scheme", "init", str.lower)):
        m["init_scheme" if key == "scheme" else key] = (
            conv(cp.get(section, key).strip()) if cp.has_option(section, key) else None)

    if m["placement"] not in placements:
        raise ValueError(f"model.placement {m['placement']!r} not modelled here")
    if m["norm"] not in norms:
        raise ValueError(f"model.norm {m['norm']!r} not modelled here")
    if m["activation"] not in ("relu", "gelu"):
        raise ValueError(f"model.activation {m['activation']!r} not modelled here")
    if m["dropout"] != 0.0:
        raise ValueError("model.dropout must be 0 for the cross-check")
    if m["d_model"] % m["heads"]:
        raise ValueError("model.heads does not divide model.d_model")
    # A final norm exists when final_norm is on and there is a norm at all.
    m["has_final_norm"] = m["final_norm"] and m["norm"] != "none"
    return m


def expected_shapes(m):
    """name -> shape of every parameter tensor the dump must hold (docs/design.md §5)."""
    C, F_, V = m["d_model"], m["d_ff"], m["vocab"]
    s = {"tok_embed": (V, C)}
    if not m["tie_embeddings"]:
        s["lm_head"] = (C, V)
    norm_parts = {"layernorm": ("gamma", "beta"), "rmsnorm": ("gamma",), "none": ()}[m["norm"]]
    for l in range(m["layers"]):
        p = f"layers/{l:02d}/"
        for w in ("wq", "wk", "wv", "wo"):
            s[p + w] = (C, C)
        for b in ("bq", "bk", "bv", "bo", "b2"):
            s[p + b] = (C,)
        s[p + "w1"] = (C, F_)
        s[p + "b1"] = (F_,)
        s[p + "w2"] = (F_, C)
        for n in ("norm1", "norm2"):
            for part in norm_parts:
                s[f"{p}{n}.{part}"] = (C,)
    if m["has_final_norm"]:
        for part in norm_parts:
            s[f"final_norm.{part}"] = (C,)
    return s


# ----------------------------------------------------------------------------------------------
# The model in PyTorch, mirroring the C model (docs/design.md §1, src/model/model.h).

def positional_encoding(T, C):
    """PE[t][2i] = sin(t / 10000^(2i/C)), PE[t][2i+1] = cos(t / 10000^(2i/C)) (Vaswani et al.)."""
    pe = torch.zeros(T, C)
    t = torch.arange(T, dtype=torch.float64)
    for c in range(C):
        i2 = c - (c % 2)                        # 2i
        angle = t / (10000.0 ** (i2 / C))
        pe[:, c] = torch.sin(angle) if c % 2 == 0 else torch.cos(angle)
    return pe


def apply_norm(x, P, prefix, m):
    if m["norm"] == "none":
        return x
    eps = m["norm_eps"]
    if m["norm"] == "layernorm":
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)          # biased variance
        return P[prefix + ".gamma"] * (x - mu) / torch.sqrt(var + eps) + P[prefix + ".beta"]
    ms = (x * x).mean(-1, keepdim=True)                        # rmsnorm: no beta
    return P[prefix + ".gamma"] * x / torch.sqrt(ms + eps)


def mha(a, P, p, m, kv=None, key_pad=None, causal=None, w="", ctx_hook=None):
    """Multi-head attention of the queries a (B,T,C) over the keys/values kv (B,S,C); kv = a
    (self-attention) unless given. key_pad: bool (B,S), True = that key is masked (padding).
    causal: m["causal"] unless given. w: prefix of the weight names ("c": cwq cbq ... cbo).
    ctx_hook: applied to the concatenated heads (B,T,C) before W_O (Sub-LN's inner norm)."""
    if kv is None:
        kv = a
    if causal is None:
        causal = m["causal"]
    B, T, C = a.shape
    S = kv.shape[1]
    H = m["heads"]
    Dh = C // H
    q = a @ P[p + w + "wq"] + P[p + w + "bq"]
    k = kv @ P[p + w + "wk"] + P[p + w + "bk"]
    v = kv @ P[p + w + "wv"] + P[p + w + "bv"]
    q = q.reshape(B, T, H, Dh).transpose(1, 2)                              # (B,H,T,Dh)
    k, v = (z.reshape(B, S, H, Dh).transpose(1, 2) for z in (k, v))         # (B,H,S,Dh)
    scores = q @ k.transpose(-1, -2) / math.sqrt(Dh)
    if causal:
        mask = torch.triu(torch.ones(T, S, dtype=torch.bool), diagonal=1)   # j > i
        scores = scores.masked_fill(mask, float("-inf"))
    if key_pad is not None:
        scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
    att = torch.softmax(scores, dim=-1)
    ctx = (att @ v).transpose(1, 2).reshape(B, T, C)                        # heads concatenated
    if ctx_hook is not None:
        ctx = ctx_hook(ctx)
    return ctx @ P[p + w + "wo"] + P[p + w + "bo"]


def ffn(x, P, p, m, hidden_hook=None):
    """act(x·W¹ + b¹)·W² + b²; hidden_hook: applied to act(·) (B,T,d_ff) before W² (Sub-LN)."""
    h = x @ P[p + "w1"] + P[p + "b1"]
    if m["activation"] == "relu":
        h = torch.relu(h)
    else:
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))               # exact GELU
    if hidden_hook is not None:
        h = hidden_hook(h)
    return h @ P[p + "w2"] + P[p + "b2"]


def forward_stack(P, m, tokens):
    """x_{L+1}: the embedded input through every layer, before any final norm. (B,T,C)"""
    B, T = tokens.shape
    C = m["d_model"]
    x = P["tok_embed"][tokens] * math.sqrt(C) + positional_encoding(T, C)
    for l in range(m["layers"]):
        p = f"layers/{l:02d}/"
        if m["placement"] == "post":
            x2 = x + mha(x, P, p, m)
            x3 = apply_norm(x2, P, p + "norm1", m)
            x5 = x3 + ffn(x3, P, p, m)
            x = apply_norm(x5, P, p + "norm2", m)
        else:
            x3 = x + mha(apply_norm(x, P, p + "norm1", m), P, p, m)
            x = x3 + ffn(apply_norm(x3, P, p + "norm2", m), P, p, m)
    return x


def output_loss(P, m, x_final, targets):
    """Mean cross-entropy of the logits x_final·W (tied: W = tok_embedᵀ, no √C)."""
    B, T, _ = x_final.shape
    W = P["tok_embed"].t() if m["tie_embeddings"] else P["lm_head"]
    logits = x_final @ W
    return F.cross_entropy(logits.reshape(B * T, m["vocab"]), targets.reshape(B * T),
                           ignore_index=-1, label_smoothing=m["label_smoothing"], reduction="mean")


def forward_loss(P, m, tokens, targets):
    """Mean cross-entropy of the batch. P: name -> tensor, tokens/targets: int64 (B,T)."""
    x = forward_stack(P, m, tokens)
    if m["has_final_norm"]:
        x = apply_norm(x, P, "final_norm", m)
    return output_loss(P, m, x, targets)


def torch_loss_and_grads(params_np, m, tokens_np, targets_np, loss_fn=None):
    """Loss and name -> gradient; loss_fn(P, m, tokens, targets) is forward_loss unless given
    (test_torch_encdec.py passes a closure that also holds the source batch)."""
    P = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)
         for k, v in params_np.items()}
    tokens = torch.from_numpy(np.asarray(tokens_np, dtype=np.int64))
    targets = torch.from_numpy(np.asarray(targets_np, dtype=np.int64))
    loss = (loss_fn or forward_loss)(P, m, tokens, targets)
    loss.backward()
    grads = {k: (t.grad.numpy().copy() if t.grad is not None else np.zeros(t.shape))
             for k, t in P.items()}
    return float(loss.item()), grads


# ----------------------------------------------------------------------------------------------
# Reading a dump and comparing.

def read_group(f, group):
    """name (relative to /group, e.g. 'layers/00/norm1.gamma') -> float64 array."""
    out = {}
    if group not in f:
        return out

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            out[name] = np.asarray(obj[()], dtype=np.float64)
    f[group].visititems(visit)
    return out


def attr_text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray):                 # a 1-element array of strings
        v = v.reshape(-1)[0]
        return attr_text(v)
    return str(v)


def fit_shape(arr, shape, what, notes):
    """arr as `shape`; a vector stored as (1,C) or a scalar as (1,) is accepted with a note."""
    if arr.shape == tuple(shape):
        return arr
    if arr.size == int(np.prod(shape)) and arr.squeeze().shape == tuple(shape):
        notes.append(f"{what}: stored shape {arr.shape}, expected {tuple(shape)} (accepted)")
        return arr.reshape(shape)
    raise ValueError(f"{what}: shape {arr.shape}, expected {tuple(shape)}")


def grad_error(g_torch, g_c, global_max):
    """err = max|g_torch − g_c| / max(max|g_torch of this tensor|, 1e-6 · max over all tensors
    of max|g_torch|). The floor puts tensors that are zero in exact arithmetic (bk) on the scale
    of the whole gradient; every other tensor is on its own scale."""
    if not np.all(np.isfinite(g_c)):
        return float("inf")
    scale = max(float(np.max(np.abs(g_torch))) if g_torch.size else 0.0,
                GLOBAL_FLOOR * global_max)
    diff = float(np.max(np.abs(g_torch - g_c))) if g_torch.size else 0.0
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / scale


def check_dump(path, parse=parse_config, shapes_fn=expected_shapes, loss_fn=None):
    """Compare one dump with PyTorch. Returns a dict: ok, loss_err, worst (name, err), errors
    (name -> err), problems (list of strings), notes. parse, shapes_fn, loss_fn: the config
    reader, the tensor list and the forward (torch_loss_and_grads's loss_fn) of the reference;
    this file's unless given (tests/test_torch_schemes.py passes its own)."""
    res = {"ok": False, "loss_err": None, "worst": (None, 0.0), "errors": {}, "problems": [],
           "notes": [], "worst_own": (None, 0.0)}
    problems, notes = res["problems"], res["notes"]
    with h5py.File(path, "r") as f:
        if "config" not in f.attrs:
            problems.append("root attribute 'config' missing")
            return res
        m = parse(attr_text(f.attrs["config"]))
        res["model"] = m
        if m["arch"] != "lm":
            problems.append(f"model.arch = {m['arch']}: check it with tests/test_torch_encdec.py")
            return res
        B, T, V = m["batch"], m["seq_len"], m["vocab"]
        for ds in ("batch/tokens", "batch/targets", "loss"):
            if ds not in f:
                problems.append(f"/{ds} missing")
        if problems:
            return res
        tokens = fit_shape(np.asarray(f["batch/tokens"][()]), (B, T), "/batch/tokens", notes)
        targets = fit_shape(np.asarray(f["batch/targets"][()]), (B, T), "/batch/targets", notes)
        for what, arr, lo in (("tokens", tokens, 0), ("targets", targets, -1)):
            if not np.issubdtype(arr.dtype, np.integer):
                problems.append(f"/batch/{what} has dtype {arr.dtype}, expected int32")
            elif arr.size and (arr.min() < lo or arr.max() >= V):
                problems.append(f"/batch/{what} out of range [{lo}, {V})")
        loss_c = np.asarray(f["loss"][()], dtype=np.float64)
        if loss_c.size != 1:
            problems.append(f"/loss has {loss_c.size} elements, expected a scalar")
            return res
        loss_c = float(loss_c.reshape(-1)[0])
        params = read_group(f, "params")
        grads = read_group(f, "grads")
    if problems:
        return res
    if not np.any(targets >= 0):
        problems.append("batch has no scored target (loss undefined)")
        return res

    shapes = shapes_fn(m)
    if not check_tensors(shapes, params, grads, problems, notes):
        return res

    loss_t, grads_t = torch_loss_and_grads(params, m, tokens, targets, loss_fn)
    return compare(res, shapes, loss_t, grads_t, loss_c, grads)


def check_tensors(shapes, params, grads, problems, notes):
    """/params and /grads hold exactly the names of `shapes`, each of its shape (a vector stored
    as (1,C) is reshaped in place, with a note). False, with problems appended, if not."""
    ok = True
    for group, got in (("params", params), ("grads", grads)):
        missing = sorted(set(shapes) - set(got))
        extra = sorted(set(got) - set(shapes))
        if missing:
            problems.append(f"/{group} lacks: {', '.join(missing)}")
            ok = False
        if extra:
            problems.append(f"/{group} has unexpected: {', '.join(extra)}")
            ok = False
    if not ok:
        return False
    try:
        for name, shape in shapes.items():
            params[name] = fit_shape(params[name], shape, f"/params/{name}", notes)
            grads[name] = fit_shape(grads[name], shape, f"/grads/{name}", notes)
    except ValueError as e:
        problems.append(str(e))
        return False
    return True


def compare(res, names, loss_t, grads_t, loss_c, grads, loss_tol=LOSS_TOL, grad_tol=GRAD_TOL,
            label="C", floor_tol=None):
    """The loss and every gradient in `names` against the reference (loss_t, grads_t): fills
    res's loss_torch, loss_c, loss_err, errors, worst, worst_own, appends to res["problems"]
    and sets res["ok"] (no problems at all). label names the compared side in messages.
    floor_tol (default grad_tol): the tolerance of the tensors judged on the floor (zero in
    exact arithmetic, so rounding noise on both sides), for a grad_tol tighter than the floor
    was made for."""
    problems = res["problems"]
    res["loss_torch"], res["loss_c"] = loss_t, loss_c
    res["loss_err"] = (abs(loss_t - loss_c) / abs(loss_t)) if loss_t != 0 else abs(loss_c)
    if not math.isfinite(loss_c) or not res["loss_err"] <= loss_tol:
        problems.append(f"loss: torch {loss_t:.17g}, {label} {loss_c:.17g}, "
                        f"rel diff {res['loss_err']:.3g} > {loss_tol:g}")

    global_max = max(float(np.max(np.abs(g))) for g in grads_t.values())
    worst = (None, -1.0)
    worst_own = (None, -1.0)       # among tensors judged on their own scale (not the floor)
    for name in names:
        err = grad_error(grads_t[name], grads[name], global_max)
        res["errors"][name] = err
        if err > worst[1]:
            worst = (name, err)
        own = np.max(np.abs(grads_t[name])) >= GLOBAL_FLOOR * global_max
        if own and err > worst_own[1]:
            worst_own = (name, err)
        tol = grad_tol if own or floor_tol is None else floor_tol
        if not err <= tol:
            problems.append(f"grad {name}: err {err:.3g} > {tol:g} "
                            f"(max|g_torch| {np.max(np.abs(grads_t[name])):.3g}, "
                            f"max|g_{label.lower()}| {np.max(np.abs(grads[name])):.3g})")
    res["worst"] = worst
    res["worst_own"] = worst_own
    res["ok"] = not problems
    return res


# ----------------------------------------------------------------------------------------------
# The cases.

BASE = {
    "model.layers": 3, "model.d_model": 32, "model.heads": 4, "model.d_ff": 48,
    "model.vocab": 23, "model.seq_len": 7, "model.dropout": 0,
    "data.task": "random", "data.batch": 3,
}


def make_cases():
    cases = []
    for placement in ("post", "pre"):
        for norm in ("layernorm", "rmsnorm"):
            for act in ("relu", "gelu"):
                for causal in ("true", "false"):
                    name = f"{placement}-{norm}-{act}-{'causal' if causal == 'true' else 'bidir'}"
                    cases.append((name, {"model.placement": placement, "model.norm": norm,
                                         "model.activation": act, "model.causal": causal}))

    def extra(name, base, **kw):
        d = {"model.placement": base[0], "model.norm": base[1], "model.activation": base[2],
             "model.causal": base[3]}
        d.update({k.replace("__", "."): v for k, v in kw.items()})
        cases.append((name, d))

    extra("untied", ("post", "layernorm", "relu", "false"), model__tie_embeddings="false")
    extra("untied-pre", ("pre", "rmsnorm", "gelu", "true"), model__tie_embeddings="false")
    extra("norm-none-post", ("post", "none", "relu", "true"))
    extra("norm-none-pre", ("pre", "none", "gelu", "false"))
    extra("label-smoothing", ("post", "rmsnorm", "gelu", "true"), data__label_smoothing=0.1)
    extra("post-final-norm-on", ("post", "layernorm", "relu", "false"), model__final_norm="on")
    extra("pre-final-norm-off", ("pre", "layernorm", "gelu", "true"), model__final_norm="off")
    extra("zero-qk", ("pre", "layernorm", "relu", "true"), init__zero_qk="true")
    extra("task-copy", ("pre", "layernorm", "gelu", "true"), data__task="copy")
    extra("task-reverse", ("post", "layernorm", "relu", "false"), data__task="reverse")
    extra("copy-label-smoothing", ("pre", "rmsnorm", "relu", "true"), data__task="copy",
          data__label_smoothing=0.1)
    extra("zipf", ("pre", "rmsnorm", "gelu", "true"), data__zipf=1.1)
    for i, (_, d) in enumerate(cases):
        d["init.seed"] = 1001 + 17 * i          # a different initialisation and batch per case
    return cases


def write_ini(path, settings, base=None, writer="tests/test_torch.py"):
    sections = {}
    for key, value in {**(BASE if base is None else base), **settings}.items():
        sec, k = key.split(".", 1)
        sections.setdefault(sec, []).append(f"{k} = {value}")
    with open(path, "w") as fh:
        fh.write(f"# written by {writer}\n")
        for sec in ("model", "init", "data"):
            if sec in sections:
                fh.write(f"[{sec}]\n" + "\n".join(sections[sec]) + "\n\n")


def report(name, res, verbose):
    if res["loss_err"] is None:
        line = f"FAIL {name:26s} " + (res["problems"][0] if res["problems"] else "no result")
        print(line)
        for p in res["problems"][1:]:
            print(f"       {p}")
        return
    wn, we = res["worst"]
    print(f"{'ok  ' if res['ok'] else 'FAIL'} {name:26s} loss rel {res['loss_err']:.1e}  "
          f"worst {wn} err {we:.2e}"
          + (f"  (own scale: {res['worst_own'][0]} {res['worst_own'][1]:.2e})"
             if res.get("worst_own", (None,))[0] not in (None, wn) else ""))
    for p in res["problems"]:
        print(f"       {p}")
    for n in res["notes"]:
        print(f"       note: {n}")
    if verbose:
        for n, e in res["errors"].items():
            print(f"         {n:24s} {e:.2e}")


def run_cases(args, workdir):
    binary = args.binary if os.path.isabs(args.binary) else os.path.join(REPO, args.binary)
    passed = failed = 0
    worst_all = (None, None, 0.0)
    worst_loss = (None, 0.0)
    worst_own = (None, None, 0.0)
    if not os.access(binary, os.X_OK):
        print(f"test_torch: {binary} not found or not executable (build it with `make stability`)")
    for name, settings in make_cases():
        if args.case and args.case not in name:
            continue
        ini = os.path.join(workdir, name + ".ini")
        out = os.path.join(workdir, name + ".h5")
        write_ini(ini, settings)
        res = {"ok": False, "loss_err": None, "worst": (None, 0.0), "errors": {},
               "problems": [], "notes": []}
        try:
            # --perturb: biases, γ, β ~ init + N(0, 0.3²), so that a swapped b_Q/b_K or
            # norm1/norm2 in the C forward would show (at init they are all 0 or 1)
            p = subprocess.run([binary, "dump", "--config", ini, "--out", out, "--perturb", "0.3"],
                               cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=300)
            if p.returncode != 0:
                tail = " | ".join(p.stdout.strip().splitlines()[-3:])
                res["problems"].append(f"`stability dump` exit {p.returncode}: {tail}")
            elif not os.path.exists(out):
                res["problems"].append("`stability dump` exited 0 but wrote no file")
            else:
                res = check_dump(out)
        except (OSError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
            res["problems"].append(f"{type(e).__name__}: {e}")
        report(name, res, args.verbose)
        if res["ok"]:
            passed += 1
        else:
            failed += 1
        if res["loss_err"] is not None:
            if res["worst"][1] >= worst_all[2]:
                worst_all = (name, res["worst"][0], res["worst"][1])
            wo = res.get("worst_own", (None, 0.0))
            if wo[0] is not None and wo[1] >= worst_own[2]:
                worst_own = (name, wo[0], wo[1])
            if res["loss_err"] >= worst_loss[1]:
                worst_loss = (name, res["loss_err"])
    if worst_all[0] is not None:
        print(f"worst gradient error overall: {worst_all[2]:.2e} ({worst_all[0]}: {worst_all[1]}); "
              f"worst loss rel diff: {worst_loss[1]:.1e} ({worst_loss[0]})")
        if worst_own[0] is not None:
            print(f"worst on a tensor's own scale (not the floor): {worst_own[2]:.2e} "
                  f"({worst_own[0]}: {worst_own[1]})")
    else:
        print("worst gradient error overall: none (no dump could be compared)")
    return passed, failed


# ----------------------------------------------------------------------------------------------
# --self-test: the reader and the comparison, without the C program.

def resolved_ini(m, seed):
    """INI text as the C writer would produce it (every key, final_norm resolved)."""
    b = lambda v: "true" if v else "false"
    return (
        "[model]\n"
        f"layers = {m['layers']}\nd_model = {m['d_model']}\nheads = {m['heads']}\n"
        f"d_ff = {m['d_ff']}\nvocab = {m['vocab']}\nseq_len = {m['seq_len']}\n"
        f"placement = {m['placement']}\nnorm = {m['norm']}\nnorm_eps = {m['norm_eps']!r}\n"
        f"activation = {m['activation']}\ncausal = {b(m['causal'])}\n"
        f"tie_embeddings = {b(m['tie_embeddings'])}\n"
        f"final_norm = {'on' if m['final_norm'] else 'off'}\ndropout = 0\n\n"
        f"[init]\nscheme = xavier_normal\nstd = 0.02\nzero_qk = false\nseed = {seed}\n\n"
        f"[data]\ntask = {m['task']}\npath = \nbatch = {m['batch']}\n"
        f"label_smoothing = {m['label_smoothing']!r}\nzipf = 0\n\n"
        "[train]\nsteps = 0\noptimizer = adam\nlr = 0.0005\nwarmup = 4000\n\n"
        "[probe]\nseeds = 10\nbatches = 10\nevery = 100\njacobian = on\n\n"
        "[output]\nfile = \nplots = false\n")


def random_params(shapes, m, rng):
    """Non-trivial values everywhere (γ ≠ 1, β ≠ 0, biases ≠ 0) so that a swapped name shows."""
    params = {}
    for name, shape in shapes.items():
        if name.endswith(".gamma"):
            params[name] = 1.0 + 0.3 * rng.standard_normal(shape)
        else:
            params[name] = rng.standard_normal(shape) / math.sqrt(shape[0] if len(shape) == 2
                                                                  else m["d_model"])
    return params


def write_fake_dump(path, m, seed, bytes_attr, mutate=None):
    """A dump in the docs/design.md §6 layout, with torch's loss and gradients (optionally mutated)."""
    rng = np.random.default_rng(seed)
    params = random_params(expected_shapes(m), m, rng)
    B, T, V = m["batch"], m["seq_len"], m["vocab"]
    tokens = rng.integers(0, V, size=(B, T)).astype(np.int32)
    targets = rng.integers(0, V, size=(B, T)).astype(np.int32)
    targets[:, : T // 2] = -1                   # ignored positions, as the copy task has
    loss, grads = torch_loss_and_grads(params, m, tokens, targets)
    if mutate:
        loss = mutate(params, grads, loss)
    with h5py.File(path, "w") as f:
        text = resolved_ini(m, seed)
        if bytes_attr:
            f.attrs["config"] = np.bytes_(text.encode())   # fixed-length string, as C may write
        else:
            f.attrs["config"] = text                        # variable-length
        f.attrs["status"] = "done"
        g = f.create_group("batch")
        g.create_dataset("tokens", data=tokens)
        g.create_dataset("targets", data=targets)
        f.create_dataset("loss", data=np.float64(loss))
        for top, d in (("params", params), ("grads", grads)):
            for name, arr in d.items():
                parts = name.split("/")
                grp = f.require_group("/".join([top] + parts[:-1]))
                grp.create_dataset(parts[-1], data=np.asarray(arr, dtype=np.float64))
    return loss


def numpy_reference_loss(P, m, tokens, targets):
    """The contract written out loop by loop, independent of the torch code above."""
    B, T = tokens.shape
    C, H, V, eps_n = m["d_model"], m["heads"], m["vocab"], m["norm_eps"]
    Dh = C // H

    def norm(x, pre):
        y = np.empty_like(x)
        for r in range(x.shape[0]):
            row = x[r]
            if m["norm"] == "none":
                y[r] = row
            elif m["norm"] == "layernorm":
                mu = sum(row) / C
                var = sum((row - mu) ** 2) / C
                y[r] = P[pre + ".gamma"] * (row - mu) / math.sqrt(var + eps_n) + P[pre + ".beta"]
            else:
                y[r] = P[pre + ".gamma"] * row / math.sqrt(sum(row ** 2) / C + eps_n)
        return y

    def attention(a, p):           # a: (T, C) of one sequence
        q = a @ P[p + "wq"] + P[p + "bq"]
        k = a @ P[p + "wk"] + P[p + "bk"]
        v = a @ P[p + "wv"] + P[p + "bv"]
        ctx = np.zeros((T, C))
        for h in range(H):
            cols = slice(h * Dh, (h + 1) * Dh)
            for i in range(T):
                s = [float(np.dot(q[i, cols], k[j, cols])) / math.sqrt(Dh)
                     if not (m["causal"] and j > i) else -math.inf for j in range(T)]
                mx = max(s)
                e = [math.exp(x - mx) for x in s]
                z = sum(e)
                for j in range(T):
                    ctx[i, cols] += e[j] / z * v[j, cols]
        return ctx @ P[p + "wo"] + P[p + "bo"]

    def ff(x, p):
        h = x @ P[p + "w1"] + P[p + "b1"]
        if m["activation"] == "relu":
            h = np.maximum(h, 0.0)
        else:
            h = np.vectorize(lambda u: 0.5 * u * (1 + math.erf(u / math.sqrt(2))))(h)
        return h @ P[p + "w2"] + P[p + "b2"]

    total, count = 0.0, 0
    for b in range(B):
        x = np.zeros((T, C))
        for t in range(T):
            for c in range(C):
                ang = t / 10000.0 ** ((2 * (c // 2)) / C)
                x[t, c] = P["tok_embed"][tokens[b, t], c] * math.sqrt(C) + \
                    (math.sin(ang) if c % 2 == 0 else math.cos(ang))
        for l in range(m["layers"]):
            p = f"layers/{l:02d}/"
            if m["placement"] == "post":
                x3 = norm(x + attention(x, p), p + "norm1")
                x = norm(x3 + ff(x3, p), p + "norm2")
            else:
                x3 = x + attention(norm(x, p + "norm1"), p)
                x = x3 + ff(norm(x3, p + "norm2"), p)
        if m["has_final_norm"]:
            x = norm(x, "final_norm")
        W = P["tok_embed"].T if m["tie_embeddings"] else P["lm_head"]
        ls = m["label_smoothing"]
        for t in range(T):
            if targets[b, t] < 0:
                continue
            z = x[t] @ W
            mx = max(z)
            lse = mx + math.log(sum(math.exp(u - mx) for u in z))
            logp = z - lse
            total += (1 - ls) * -logp[targets[b, t]] + ls * -sum(logp) / V
            count += 1
    return total / count


def self_test(args, workdir):
    passed = failed = 0

    def expect(name, ok_wanted, path):
        nonlocal passed, failed
        try:
            res = check_dump(path)
        except (ValueError, KeyError) as e:
            res = {"ok": False, "loss_err": None, "problems": [f"{type(e).__name__}: {e}"],
                   "notes": [], "worst": (None, 0.0), "errors": {}}
        good = res["ok"] == ok_wanted
        tag = "ok  " if good else "FAIL"
        what = "pass" if ok_wanted else "be rejected"
        detail = (f"worst {res['worst'][0]} err {res['worst'][1]:.1e}" if res["ok"]
                  else (res["problems"][0] if res["problems"] else "?"))
        print(f"{tag} self-test {name:34s} (should {what}): {detail}")
        if good:
            passed += 1
        else:
            failed += 1

    base = {"layers": 2, "d_model": 12, "heads": 3, "d_ff": 10, "vocab": 9, "seq_len": 5,
            "batch": 2, "norm_eps": 1e-5, "dropout": 0.0, "task": "copy",
            "label_smoothing": 0.0}
    variants = [
        dict(placement="post", norm="layernorm", activation="relu", causal=True,
             tie_embeddings=True, final_norm=False),
        dict(placement="pre", norm="layernorm", activation="gelu", causal=False,
             tie_embeddings=False, final_norm=True, label_smoothing=0.1),
        dict(placement="post", norm="rmsnorm", activation="gelu", causal=False,
             tie_embeddings=True, final_norm=True),
        dict(placement="pre", norm="rmsnorm", activation="relu", causal=True,
             tie_embeddings=False, final_norm=False),
        dict(placement="pre", norm="none", activation="relu", causal=True,
             tie_embeddings=True, final_norm=True),
    ]
    for i, v in enumerate(variants):
        m = {**base, **v}
        m["has_final_norm"] = m["final_norm"] and m["norm"] != "none"
        name = (f"{m['placement']}-{m['norm']}-{m['activation']}"
                f"{'-untied' if not m['tie_embeddings'] else ''}"
                f"{'-final' if m['has_final_norm'] else ''}")
        path = os.path.join(workdir, f"self{i}.h5")
        write_fake_dump(path, m, 100 + i, bytes_attr=bool(i % 2))
        expect(name, True, path)

    m = {**base, **variants[1]}
    m["has_final_norm"] = True

    # Rounding-level differences (relative 1e-13 per element) must pass.
    def jitter(params, grads, loss):
        r = np.random.default_rng(7)
        for k in grads:
            grads[k] = grads[k] * (1 + 1e-13 * r.standard_normal(grads[k].shape))
        return loss * (1 + 1e-15)
    p = os.path.join(workdir, "jitter.h5")
    write_fake_dump(p, m, 200, False, jitter)
    expect("rounding-level jitter", True, p)

    # Each of these must be caught.
    def bump_grad(name, rel):
        def f(params, grads, loss):
            g = grads[name]
            g.flat[g.size // 2] += rel * max(np.max(np.abs(g)), 1e-300)
            return loss
        return f

    def bump_loss(params, grads, loss):
        return loss * (1 + 1e-10)

    def swap(a, b):
        def f(params, grads, loss):
            grads[a], grads[b] = grads[b].copy(), grads[a].copy()
            return loss
        return f

    def drop(name):
        def f(params, grads, loss):
            del grads[name]
            return loss
        return f

    def nan_grad(params, grads, loss):
        grads["layers/00/w2"].flat[0] = np.nan
        return loss

    bad = [
        ("grad w1 off by 1e-8", bump_grad("layers/01/w1", 1e-8)),
        ("grad norm2.beta off by 1e-8", bump_grad("layers/00/norm2.beta", 1e-8)),
        ("grad tok_embed off by 1e-8", bump_grad("tok_embed", 1e-8)),
        ("loss off by 1e-10", bump_loss),
        ("grads bq/bv swapped", swap("layers/00/bq", "layers/00/bv")),
        ("grads norm1/norm2.gamma swapped", swap("layers/01/norm1.gamma", "layers/01/norm2.gamma")),
        ("grad lm_head missing", drop("lm_head")),
        ("grad NaN", nan_grad),
    ]
    for i, (name, mut) in enumerate(bad):
        p = os.path.join(workdir, f"bad{i}.h5")
        write_fake_dump(p, m, 300 + i, bool(i % 2), mut)
        expect(name, False, p)

    # Parameters swapped (the forward must notice): gradients then no longer match.
    def swap_params(params, grads, loss):
        params["layers/00/wq"], params["layers/00/wk"] = (params["layers/00/wk"].copy(),
                                                          params["layers/00/wq"].copy())
        return loss
    # (mutation after the torch run: file holds swapped params, torch grads of the original)
    p = os.path.join(workdir, "badparams.h5")
    write_fake_dump(p, m, 400, False, swap_params)
    expect("params wq/wk swapped", False, p)

    # The torch model's own invariants: bk's gradient is zero in exact arithmetic.
    rng = np.random.default_rng(5)
    m2 = {**base, **variants[0]}
    m2["has_final_norm"] = False
    params = {k: rng.standard_normal(s) * 0.3 for k, s in expected_shapes(m2).items()}
    tok = rng.integers(0, m2["vocab"], size=(m2["batch"], m2["seq_len"]))
    tgt = rng.integers(0, m2["vocab"], size=(m2["batch"], m2["seq_len"]))
    _, g = torch_loss_and_grads(params, m2, tok, tgt)
    gmax = max(np.max(np.abs(x)) for x in g.values())
    bk = max(np.max(np.abs(g[f"layers/{l:02d}/bk"])) for l in range(m2["layers"]))
    good = bk <= 1e-12 * gmax
    print(f"{'ok  ' if good else 'FAIL'} self-test {'bk gradient ~ 0':34s}: "
          f"max|g_bk| / max|g| = {bk / gmax:.1e}")
    passed, failed = passed + good, failed + (not good)

    # The torch forward against a plain element-by-element NumPy reading of the contract
    # (catches a wrong head split, PE interleave, mask direction or placement order in torch).
    for i, v in enumerate(variants):
        m3 = {**base, **v}
        m3["has_final_norm"] = m3["final_norm"] and m3["norm"] != "none"
        r = np.random.default_rng(600 + i)
        params = {k: (1 + 0.3 * r.standard_normal(s)) if k.endswith(".gamma")
                  else 0.4 * r.standard_normal(s) for k, s in expected_shapes(m3).items()}
        tok = r.integers(0, m3["vocab"], size=(m3["batch"], m3["seq_len"]))
        tgt = r.integers(0, m3["vocab"], size=(m3["batch"], m3["seq_len"]))
        tgt[0, 0] = -1
        lt, _ = torch_loss_and_grads(params, m3, tok, tgt)
        ln = numpy_reference_loss(params, m3, tok, tgt)
        good = abs(lt - ln) <= 1e-12 * abs(ln)
        print(f"{'ok  ' if good else 'FAIL'} self-test {'numpy reference forward ' + str(i):34s}: "
              f"{lt:.17g} vs {ln:.17g}")
        passed, failed = passed + good, failed + (not good)

    # F.cross_entropy with ignore_index and label smoothing = the textbook formula.
    lg = torch.tensor(rng.standard_normal((12, 7)))
    t = torch.tensor(rng.integers(0, 7, 12))
    t[:4] = -1
    ce = F.cross_entropy(lg, t, ignore_index=-1, label_smoothing=0.1).item()
    lp = lg.log_softmax(-1)
    keep = t >= 0
    manual = (0.9 * -lp[keep].gather(1, t[keep][:, None]).squeeze(1)
              + 0.1 * -lp[keep].mean(1)).mean().item()
    good = abs(ce - manual) <= 1e-14 * abs(manual)
    print(f"{'ok  ' if good else 'FAIL'} self-test {'label smoothing + ignore_index':34s}: "
          f"{ce:.17g} vs {manual:.17g}")
    passed, failed = passed + good, failed + (not good)
    return passed, failed


def run_main(doc, name, banner, self_test_fn, run_cases_fn, self_test_help):
    """The command line every PyTorch cross-check shares: parse the options, run the self-test
    or the cases in a working directory (--keep DIR, else a temporary one), print the tally
    as "NAME: P passed, F failed" and return the exit status (1 on a failure or no case)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--self-test", action="store_true", help=self_test_help)
    ap.add_argument("--binary", default="./stability", help="the C program (default ./stability)")
    ap.add_argument("--keep", metavar="DIR", help="write configs and dumps to DIR and keep them")
    ap.add_argument("--case", metavar="SUBSTRING", help="only the cases whose name contains it")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every tensor's error")
    args = ap.parse_args()
    print(banner)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir, tmp = args.keep, None
    else:
        tmp = tempfile.TemporaryDirectory(prefix=f"stability-{name.replace(' ', '-')}-")
        workdir = tmp.name
    try:
        passed, failed = (self_test_fn if args.self_test else run_cases_fn)(args, workdir)
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"{name}: {passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


def main():
    return run_main(__doc__, "torch",
                    f"test_torch: PyTorch {torch.__version__}, h5py {h5py.__version__}, float64; "
                    f"grad tol {GRAD_TOL:g} (floor {GLOBAL_FLOOR:g}·global max), loss tol {LOSS_TOL:g}",
                    self_test, run_cases,
                    "check the reader and comparison on torch-made dumps (no C program)")


if __name__ == "__main__":
    sys.exit(main())
