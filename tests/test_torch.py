#!/usr/bin/python3
"""test_torch.py — the C backward pass against PyTorch autograd (float64), docs/design.md §8.

For each case: write a config, run `./stability dump --config CASE.ini --out CASE.h5`, read the
dump with h5py (layout docs/design.md §6, names §5), rebuild the network in PyTorch float64 from the stored
parameters and the resolved config text (root attribute `config`), run forward + backward on the
stored batch and compare the loss and every gradient tensor with the C ones.

    /usr/bin/python3 tests/test_torch.py                 # the real cross-check (from the repo root)
    /usr/bin/python3 tests/test_torch.py --self-test     # only the self-test (the run above includes it)
    options: --binary PATH  --keep DIR  --case SUBSTRING  --verbose

The last line is `torch: N passed, M failed`; exit status 1 if any case failed.
"""

import math
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402  (the scaffolding the three cross-checks share)
from torch_ref import (GLOBAL_FLOOR, GRAD_TOL, LOSS_TOL, apply_norm, attr_text,  # noqa: E402
                       check_tensors, compare, ffn, fit_shape, mha, new_res, output_loss,
                       parse_config, positional_encoding, read_group, run_main)

LAYER_MATRICES = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2"]


# ----------------------------------------------------------------------------------------------
# The tensors and the model of a single Post-LN / Pre-LN stack (docs/design.md §1, §5).

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


def forward_loss(P, m, tokens, targets):
    """Mean cross-entropy of the batch. P: name -> tensor, tokens/targets: int64 (B,T)."""
    x = forward_stack(P, m, tokens)
    if m["has_final_norm"]:
        x = apply_norm(x, P, "final_norm", m)
    return output_loss(P, m, x, targets)


def torch_loss_and_grads(params_np, m, tokens_np, targets_np, loss_fn=None):
    """Loss and name -> gradient (torch_ref.loss_and_grads) of loss_fn, this file's forward_loss
    unless given (test_torch_encdec.py passes a closure that also holds the source batch)."""
    return ref.loss_and_grads(params_np, m, tokens_np, targets_np, loss_fn or forward_loss)


# ----------------------------------------------------------------------------------------------
# Reading a dump and comparing.


def check_dump(path, parse=parse_config, shapes_fn=expected_shapes, loss_fn=None):
    """Compare one dump with PyTorch. Returns a dict: ok, loss_err, worst (name, err), errors
    (name -> err), problems (list of strings), notes. parse, shapes_fn, loss_fn: the config
    reader, the tensor list and the forward (torch_loss_and_grads's loss_fn) of the reference;
    this file's unless given (tests/test_torch_schemes.py passes its own)."""
    res = new_res()
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


def run_cases(args, workdir, dump=None):
    """Every case through `stability dump` and check_dump (torch_ref.run_cases)."""
    cases = [(name, settings, BASE, {}) for name, settings in make_cases()]
    return ref.run_cases(args, workdir, cases, lambda path, opts: check_dump(path), "test_torch",
                         dump=dump)


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
    ref.write_dump(path, resolved_ini(m, seed), (("tokens", tokens), ("targets", targets)), loss,
                   params, grads, bytes_attr)
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


def main():
    return run_main(__doc__, "torch",
                    f"test_torch: PyTorch {torch.__version__}, h5py {h5py.__version__}, float64; "
                    f"grad tol {GRAD_TOL:g} (floor {GLOBAL_FLOOR:g}·global max), loss tol {LOSS_TOL:g}",
                    self_test, run_cases,
                    "check the reader and comparison on torch-made dumps (no C program)")


if __name__ == "__main__":
    sys.exit(main())
