#!/usr/bin/python3
"""test_torch_float32.py — the float32 core (train.precision = float32) against PyTorch float32.

Every comparison case of tests/test_torch.py (lm) and tests/test_torch_encdec.py (encdec) is
dumped with train.precision = float32 (`stability dump`: the float32 core's loss and gradients
on the float64 initialisation rounded to float, docs/design.md §2), and the references of those
files are run on the same parameters with torch's default dtype float32. Both sides are float32
computations of the same function, in different orders; they must agree per tensor to
GRAD_MULT · ε₃₂ · depth (depth = layers, encoder plus decoder) on grad_error's scale
(torch_ref.py: max |g|) for every tensor judged on its own scale; a tensor that is zero in exact
arithmetic (the key biases bk, cbk: softmax ignores a shift shared by all keys) holds rounding
noise on both sides and is judged on 10⁻³ of the largest gradient entry, to FLOOR_MULT · ε₃₂ ·
depth (PyTorch float32's own noise there against float64 reaches 130·ε·depth); the loss to
LOSS_MULT · ε₃₂ relative. Printed beside: PyTorch float32's own error against PyTorch float64,
for scale. Also: the dump says precision = float32 and holds float32 values.
"""
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref            # noqa: E402
import test_torch as tt            # noqa: E402
import test_torch_encdec as te     # noqa: E402

EPS32 = float(np.finfo(np.float32).eps)
GRAD_MULT = 64.0
FLOOR_MULT = 256.0
LOSS_MULT = 8.0
FLOOR = 1e-3


def at_dtype(dtype, fn):
    """fn() with torch's default dtype set to dtype (float64 again afterwards)."""
    torch.set_default_dtype(dtype)
    try:
        return fn()
    finally:
        torch.set_default_dtype(torch.float64)


def read_dump(path, res):
    """(m, src or None, tokens, targets, loss, params, grads) of a dump, or None with problems."""
    with h5py.File(path, "r") as f:
        prec = ref.attr_text(f.attrs.get("precision", "float64"))
        if prec != "float32":
            res["problems"].append(f"root attribute precision = {prec!r}, expected float32")
            return None
        m = ref.parse_config(ref.attr_text(f.attrs["config"]))
        src = np.asarray(f["batch/src_tokens"][()]) if "batch/src_tokens" in f else None
        tokens = np.asarray(f["batch/tokens"][()])
        targets = np.asarray(f["batch/targets"][()])
        loss = float(np.asarray(f["loss"][()]).reshape(-1)[0])
        params, grads = ref.read_group(f, "params"), ref.read_group(f, "grads")
    for what, group in (("params", params), ("grads", grads)):
        for name, a in group.items():
            if not np.array_equal(a.astype(np.float32).astype(np.float64), a):
                res["problems"].append(f"/{what}/{name} holds values that are not float32")
                return None
    return m, src, tokens, targets, loss, params, grads


def check(path, opts):
    res = ref.new_res()
    got = read_dump(path, res)
    if got is None:
        return res
    m, src, tokens, targets, loss_c, params, grads = got
    res["model"] = m
    if m["arch"] == "encdec":
        shapes = te.expected_shapes(m)
        depth = m["layers"] + m["dec_layers"]

        def fn():
            return te.loss_and_grads(params, m, src, tokens, targets)
    else:
        shapes = tt.expected_shapes(m)
        depth = m["layers"]

        def fn():
            return tt.torch_loss_and_grads(params, m, tokens, targets)
    if not ref.check_tensors(shapes, params, grads, res["problems"], res["notes"]):
        return res
    loss64, g64 = at_dtype(torch.float64, fn)
    loss32, g32 = at_dtype(torch.float32, fn)
    if any(g.dtype != np.float32 for g in g32.values()):
        res["problems"].append("the reference did not run in float32")
        return res
    g32 = {k: v.astype(np.float64) for k, v in g32.items()}
    tol = GRAD_MULT * EPS32 * depth
    ref.compare(res, shapes, loss32, g32, loss_c, grads, loss_tol=LOSS_MULT * EPS32,
                grad_tol=tol, label="C32", floor_tol=FLOOR_MULT * EPS32 * depth)
    torch_own = ref.compare(ref.new_res(), shapes, loss64, g64, loss32, g32, loss_tol=1.0,
                            grad_tol=1.0, label="T32")
    k = EPS32 * depth
    res["notes"].append(f"C32 vs torch32: own scale {res['worst_own'][1] / k:.1f}·ε·depth "
                        f"(bound {GRAD_MULT:g}), floor {res['worst'][1] / k:.1f} (bound "
                        f"{FLOOR_MULT:g}); torch32 vs torch64: own scale "
                        f"{torch_own['worst_own'][1] / k:.1f}, floor {torch_own['worst'][1] / k:.1f}")
    return res


def cases():
    out = []
    for name, settings in tt.make_cases():
        out.append(("lm-" + name, {**settings, "train.precision": "float32"}, tt.BASE, {}))
    for name, settings, _ in te.make_cases():
        out.append(("encdec-" + name, {**settings, "train.precision": "float32"}, te.BASE, {}))
    return out


def run_cases(args, workdir):
    ref.GLOBAL_FLOOR = FLOOR   # see the top of this file
    return ref.run_cases(args, workdir, cases(), check, "test_torch_float32")


def self_test(args, workdir):
    """The comparison on PyTorch's own values: float32 gradients pass against themselves, and a
    gradient moved by twice the bound fails (the C program is not run)."""
    ref.GLOBAL_FLOOR = FLOOR
    passed = failed = 0
    m = {"layers": 2, "d_model": 16, "heads": 2, "d_ff": 24, "vocab": 11, "seq_len": 5,
         "placement": "pre", "norm": "layernorm", "norm_eps": 1e-5, "activation": "gelu",
         "causal": True, "tie_embeddings": True, "final_norm": True, "task": "random",
         "batch": 2, "label_smoothing": 0.0}
    m = ref.parse_config(tt.resolved_ini(m, 5))
    rng = np.random.default_rng(5)
    shapes = tt.expected_shapes(m)
    params = {k: v.astype(np.float32).astype(np.float64)
              for k, v in tt.random_params(shapes, m, rng).items()}
    tokens = rng.integers(0, m["vocab"], (m["batch"], m["seq_len"]))
    targets = rng.integers(0, m["vocab"], (m["batch"], m["seq_len"]))
    loss32, g32 = at_dtype(torch.float32, lambda: tt.torch_loss_and_grads(params, m, tokens, targets))
    g32 = {k: v.astype(np.float64) for k, v in g32.items()}
    tol = GRAD_MULT * EPS32 * m["layers"]
    same = ref.compare(ref.new_res(), shapes, loss32, g32, loss32, dict(g32), LOSS_MULT * EPS32, tol)
    bad = dict(g32)
    bad["layers/00/w1"] = g32["layers/00/w1"] * (1 + 2 * tol)
    off = ref.compare(ref.new_res(), shapes, loss32, g32, loss32, bad, LOSS_MULT * EPS32, tol)
    for what, ok in (("identical gradients pass", same["ok"]), ("w1 off by 2x the bound fails",
                                                                 not off["ok"])):
        print(f"{'ok  ' if ok else 'FAIL'} self-test: {what}")
        passed, failed = passed + ok, failed + (not ok)
    return passed, failed


def main():
    return ref.run_main(__doc__, "torch_float32",
                        f"test_torch_float32: PyTorch {torch.__version__}, float32 against the "
                        f"float32 core; gradients to {GRAD_MULT:g}·ε·depth, loss {LOSS_MULT:g}·ε",
                        self_test, run_cases,
                        "the comparison on PyTorch's own float32 values (no C program)")


if __name__ == "__main__":
    sys.exit(main())
