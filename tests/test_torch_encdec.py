#!/usr/bin/python3
"""test_torch_encdec.py — the encoder–decoder (model.arch = encdec, docs/design.md §6b) against PyTorch
autograd in float64, the way tests/test_torch.py checks the single stack (whose helpers it uses).

For each case: write a config, run `./stability dump --config CASE.ini --out CASE.h5 --perturb 0.3`,
read the dump (/params/NAME, /grads/NAME, /batch/src_tokens, /batch/tokens, /batch/targets, /loss,
root attribute `config`), rebuild the model from torch ops in float64 and compare the loss
(≤ 1e-12 relative) and every gradient tensor (≤ 1e-9, test_torch.grad_error: tensors that are zero
in exact arithmetic, b_K and the cross-attention's cb_K, are judged on the scale of the whole
gradient). The nn-transformer-* cases are also run through torch.nn.Transformer itself, with the
dump's weights copied in, and must match it as well.

The model (the contract the C code is checked against):
- tok_embed (V,C) embeds the source, the decoder input and (tied) the output; lm_head (C,V) when
  untied. Position p of a sequence: tok_embed[id]·√d + PE[p] (test_torch.positional_encoding,
  positions from 0 in each sequence); a padding position (id −1) is the zero vector.
- Encoder layer (enc/NN/): the lm layer, bidirectional, source padding masked as keys.
- mem = enc_final_norm(x_enc) if the model has final norms, else x_enc.
- Decoder layer (dec/NN/), Post-LN: y = N1(y + SelfAttn_causal(y)); y = N2(y + CrossAttn(y, mem));
  y = N3(y + FFN(y)). Pre-LN: y = y + SelfAttn_causal(N1(y)); y = y + CrossAttn(N2(y), mem);
  y = y + FFN(N3(y)). The causal self-attention has no key padding mask (right padding cannot
  reach a scored position); CrossAttn uses cwq..cbo, keys/values from mem, source padding masked.
- logits = dec_final_norm(y)·tok_embedᵀ (or ·lm_head) at every decoder position; loss = mean over
  scored targets (≥ 0) of the label-smoothed cross-entropy (test_torch.output_loss).
- A batch must be right-padded, have a non-padding token in every source row (cross-attention over
  no key is undefined), no scored target at a padding decoder-input position, and ≥ 1 scored target.

    /usr/bin/python3 tests/test_torch_encdec.py                # against `stability dump`
    /usr/bin/python3 tests/test_torch_encdec.py --self-test    # only the self-test (no C program; the run includes it)
    options: --binary PATH  --keep DIR  --case SUBSTRING  --verbose

The last line is `torch encdec: N passed, M failed`; exit status 1 if any case failed.
"""

import argparse
import configparser
import contextlib
import io
import math
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402  (the scaffolding the three cross-checks share)
import test_torch as tt  # noqa: E402  (the lm reference: its tensors, forward, dump reader)

REPO = ref.REPO

# The reference against torch.nn.Transformer on the same weights (two float64 implementations of
# the same sums in a different order): tighter than the C comparison. The tensors that are zero in
# exact arithmetic (bk, cbk: |g| ~ 1e-17 of the largest gradient) hold rounding noise on both
# sides; on the floor scale (1e-6 · global max) that noise reaches 1e-10 at d = 32, so they keep
# the C comparison's tolerance, the floor rule it was made for.
NN_LOSS_TOL = 1e-12
NN_GRAD_TOL = 1e-10
NN_FLOOR_TOL = ref.GRAD_TOL

ATTN = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"]


def norm_parts(m):
    return {"layernorm": ("gamma", "beta"), "rmsnorm": ("gamma",), "none": ()}[m["norm"]]


def expected_shapes(m):
    """name -> shape of every parameter tensor an encdec dump must hold (docs/design.md §5, §6b)."""
    C, F_, V = m["d_model"], m["d_ff"], m["vocab"]
    s = {"tok_embed": (V, C)}
    if not m["tie_embeddings"]:
        s["lm_head"] = (C, V)

    def attn(p, w=""):
        for n in ATTN:
            s[p + w + n] = (C, C) if n.startswith("w") else (C,)

    def block(p, norms):
        s.update({p + "w1": (C, F_), p + "b1": (F_,), p + "w2": (F_, C), p + "b2": (C,)})
        for n in norms:
            for part in norm_parts(m):
                s[f"{p}{n}.{part}"] = (C,)

    for l in range(m["layers"]):
        p = f"enc/{l:02d}/"
        attn(p)
        block(p, ("norm1", "norm2"))
    for l in range(m["dec_layers"]):
        p = f"dec/{l:02d}/"
        attn(p)
        attn(p, "c")
        block(p, ("norm1", "norm2", "norm3"))
    if m["has_final_norm"]:
        for n in ("enc_final_norm", "dec_final_norm"):
            for part in norm_parts(m):
                s[f"{n}.{part}"] = (C,)
    return s


# ----------------------------------------------------------------------------------------------
# The reference, from torch ops (test_torch's apply_norm, mha, ffn, output_loss).
#
# `bug` plants known faults for --self-test (empty in every real check), a set of
#   "no_dec_final_norm"  logits from y instead of dec_final_norm(y)
#   "mem_before_norm"    cross-attention reads x_enc instead of enc_final_norm(x_enc)
#   "dec_not_causal"     the decoder self-attention sees the future
#   "leak_enc", "leak_cross"  source row 1's padding is not masked in the encoder
#                        self-attention / the cross-attention

def embed(P, m, tokens):
    """(B,n) ids, −1 = padding -> (B,n,C): tok_embed[id]·√d + PE[p], zero at padding."""
    C = m["d_model"]
    x = P["tok_embed"][tokens.clamp(min=0)] * math.sqrt(C) + ref.positional_encoding(
        tokens.shape[1], C)
    return x.masked_fill((tokens < 0)[..., None], 0.0)


def leaky(pad, on):
    """The key padding mask with row 1 unmasked (a planted bug) when `on`."""
    if not on:
        return pad
    pad = pad.clone()
    pad[1] = False
    return pad


def encode(P, m, src, bug=frozenset()):
    """The encoder output x_enc (B,S,C), before enc_final_norm."""
    key_pad = leaky(src < 0, "leak_enc" in bug)
    x = embed(P, m, src)
    for l in range(m["layers"]):
        p = f"enc/{l:02d}/"
        if m["placement"] == "post":
            x3 = ref.apply_norm(x + ref.mha(x, P, p, m, key_pad=key_pad, causal=False),
                               P, p + "norm1", m)
            x = ref.apply_norm(x3 + ref.ffn(x3, P, p, m), P, p + "norm2", m)
        else:
            x3 = x + ref.mha(ref.apply_norm(x, P, p + "norm1", m), P, p, m, key_pad=key_pad,
                            causal=False)
            x = x3 + ref.ffn(ref.apply_norm(x3, P, p + "norm2", m), P, p, m)
    return x


def decode(P, m, tokens, mem, src_pad, bug=frozenset()):
    """The decoder output (B,T,C), before dec_final_norm."""
    key_pad = leaky(src_pad, "leak_cross" in bug)
    causal = "dec_not_causal" not in bug
    norm = ref.apply_norm
    y = embed(P, m, tokens)
    for l in range(m["dec_layers"]):
        p = f"dec/{l:02d}/"

        def cross(u):
            return ref.mha(u, P, p, m, kv=mem, key_pad=key_pad, causal=False, w="c")
        if m["placement"] == "post":
            y = norm(y + ref.mha(y, P, p, m, causal=causal), P, p + "norm1", m)
            y = norm(y + cross(y), P, p + "norm2", m)
            y = norm(y + ref.ffn(y, P, p, m), P, p + "norm3", m)
        else:
            y = y + ref.mha(norm(y, P, p + "norm1", m), P, p, m, causal=causal)
            y = y + cross(norm(y, P, p + "norm2", m))
            y = y + ref.ffn(norm(y, P, p + "norm3", m), P, p, m)
    return y


def forward_loss(P, m, src, tokens, targets, bug=frozenset()):
    x_enc = encode(P, m, src, bug)
    mem = x_enc
    if m["has_final_norm"] and "mem_before_norm" not in bug:
        mem = ref.apply_norm(x_enc, P, "enc_final_norm", m)
    y = decode(P, m, tokens, mem, src < 0, bug)
    if m["has_final_norm"] and "no_dec_final_norm" not in bug:
        y = ref.apply_norm(y, P, "dec_final_norm", m)
    return ref.output_loss(P, m, y, targets)


def loss_and_grads(params_np, m, src_np, tokens_np, targets_np, bug=frozenset()):
    src = torch.from_numpy(np.asarray(src_np, dtype=np.int64))
    return tt.torch_loss_and_grads(
        params_np, m, tokens_np, targets_np,
        loss_fn=lambda P, m_, tok, tgt: forward_loss(P, m_, src, tok, tgt, bug))


# ----------------------------------------------------------------------------------------------
# The same network through torch.nn.Transformer (layernorm only), our embedding and output
# layer around it.

def nn_unsupported(m):
    """Why nn.Transformer cannot hold this model, or None."""
    if m["norm"] != "layernorm":
        return f"norm = {m['norm']} (nn.Transformer has LayerNorm only)"
    if m["activation"] not in ("relu", "gelu"):
        return f"activation = {m['activation']}"
    return None


def nn_weight_map(net, m):
    """[(our name, nn parameter, row slice or None, transpose)]: our W [in][out] is the nn weight
    (out,in) transposed; W_Q, W_K, W_V are the row blocks of in_proj_weight (3C,C)."""
    C = m["d_model"]
    rows = {"q": slice(0, C), "k": slice(C, 2 * C), "v": slice(2 * C, 3 * C)}
    table = []

    def attn(p, w, mha):
        for x in "qkv":
            table.append((f"{p}{w}w{x}", mha.in_proj_weight, rows[x], True))
            table.append((f"{p}{w}b{x}", mha.in_proj_bias, rows[x], False))
        table.append((f"{p}{w}wo", mha.out_proj.weight, None, True))
        table.append((f"{p}{w}bo", mha.out_proj.bias, None, False))

    def block(p, layer, norms):
        table.extend([(p + "w1", layer.linear1.weight, None, True),
                      (p + "b1", layer.linear1.bias, None, False),
                      (p + "w2", layer.linear2.weight, None, True),
                      (p + "b2", layer.linear2.bias, None, False)])
        for n in norms:
            table.append((f"{p}{n}.gamma", getattr(layer, n).weight, None, False))
            table.append((f"{p}{n}.beta", getattr(layer, n).bias, None, False))

    for l, layer in enumerate(net.encoder.layers):
        p = f"enc/{l:02d}/"
        attn(p, "", layer.self_attn)
        block(p, layer, ("norm1", "norm2"))
    for l, layer in enumerate(net.decoder.layers):
        p = f"dec/{l:02d}/"
        attn(p, "", layer.self_attn)
        attn(p, "c", layer.multihead_attn)
        block(p, layer, ("norm1", "norm2", "norm3"))
    if m["has_final_norm"]:
        for ours, mod in (("enc_final_norm", net.encoder.norm),
                          ("dec_final_norm", net.decoder.norm)):
            table.append((ours + ".gamma", mod.weight, None, False))
            table.append((ours + ".beta", mod.bias, None, False))
    return table


def nn_loss_and_grads(params_np, m, src_np, tokens_np, targets_np):
    """Loss and name -> gradient with the layers computed by torch.nn.Transformer."""
    why = nn_unsupported(m)
    if why:
        raise ValueError(f"nn.Transformer: {why}")
    C, T = m["d_model"], np.asarray(tokens_np).shape[1]
    net = torch.nn.Transformer(
        d_model=C, nhead=m["heads"], num_encoder_layers=m["layers"],
        num_decoder_layers=m["dec_layers"], dim_feedforward=m["d_ff"], dropout=0.0,
        activation=m["activation"], layer_norm_eps=m["norm_eps"], batch_first=True,
        norm_first=(m["placement"] == "pre"), dtype=torch.float64)
    # Training mode keeps every layer on the plain path: the fast path (eval mode only) runs the
    # encoder on nested tensors, which zero the padding positions' outputs, and uses fused kernels.
    net.train()
    if not m["has_final_norm"]:        # nn.Transformer always builds them; ours has none
        net.encoder.norm = None
        net.decoder.norm = None
    table = nn_weight_map(net, m)
    covered = sum(int(np.prod(params_np[n].shape)) for n, _, _, _ in table)
    total = sum(prm.numel() for prm in net.parameters())
    if covered != total:
        raise AssertionError(f"nn weight map covers {covered} of {total} nn.Transformer weights")
    with torch.no_grad():
        for name, prm, rows, transpose in table:
            v = torch.tensor(np.asarray(params_np[name], dtype=np.float64))
            (prm if rows is None else prm[rows]).copy_(v.t() if transpose else v)
    outer = {k: torch.tensor(np.asarray(params_np[k], dtype=np.float64), requires_grad=True)
             for k in ("tok_embed", "lm_head") if k in params_np}
    src = torch.from_numpy(np.asarray(src_np, dtype=np.int64))
    tokens = torch.from_numpy(np.asarray(tokens_np, dtype=np.int64))
    targets = torch.from_numpy(np.asarray(targets_np, dtype=np.int64))
    src_pad = src < 0
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)     # True = not allowed
    y = net(embed(outer, m, src), embed(outer, m, tokens), tgt_mask=causal,
              src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad)
    loss = ref.output_loss(outer, m, y, targets)
    loss.backward()
    grads = {k: t.grad.numpy().copy() for k, t in outer.items()}
    for name, prm, rows, transpose in table:
        g = prm.grad if rows is None else prm.grad[rows]
        grads[name] = (g.t() if transpose else g).numpy().copy()
    return float(loss.item()), grads


def reference_vs_nn(params, m, src, tokens, targets):
    """Our reference against nn.Transformer on the same weights and batch (NN tolerances)."""
    loss_r, grads_r = loss_and_grads(params, m, src, tokens, targets)
    loss_n, grads_n = nn_loss_and_grads(params, m, src, tokens, targets)
    return ref.compare(ref.new_res(), expected_shapes(m), loss_r, grads_r, loss_n, grads_n,
                      NN_LOSS_TOL, NN_GRAD_TOL, label="nn", floor_tol=NN_FLOOR_TOL)


# ----------------------------------------------------------------------------------------------
# Reading a dump and comparing.

def row_lengths(a):
    """Per row: the number of leading non-padding entries, and whether the row is right-padded."""
    lens, right = [], True
    for row in a:
        n = int(np.argmax(row < 0)) if np.any(row < 0) else len(row)
        lens.append(n)
        right &= bool(np.all(row[n:] < 0))
    return lens, right


def check_batch(m, src, tokens, targets, problems):
    """The batch contract (module docstring). Returns padding statistics."""
    V = m["vocab"]
    for what, arr in (("src_tokens", src), ("tokens", tokens), ("targets", targets)):
        if not np.issubdtype(arr.dtype, np.integer):
            problems.append(f"/batch/{what} has dtype {arr.dtype}, expected int32")
        elif arr.size and (arr.min() < -1 or arr.max() >= V):
            problems.append(f"/batch/{what} out of range [-1, {V})")
    src_lens, src_right = row_lengths(src)
    tgt_lens, tgt_right = row_lengths(tokens)
    if not src_right:
        problems.append("/batch/src_tokens is not right-padded")
    if not tgt_right:
        problems.append("/batch/tokens is not right-padded")
    if min(src_lens) == 0:
        problems.append(f"source row {src_lens.index(0)} is all padding (cross-attention over "
                        "no key is undefined)")
    if np.any((targets >= 0) & (tokens < 0)):
        b, t = np.argwhere((targets >= 0) & (tokens < 0))[0]
        problems.append(f"target ({b},{t}) is scored but its decoder input is padding")
    if not np.any(targets >= 0):
        problems.append("batch has no scored target (loss undefined)")
    return {"src_lens": src_lens, "tgt_lens": tgt_lens,
            "src_pad": float(np.mean(src < 0)), "tgt_pad": float(np.mean(tokens < 0))}


def check_dump(path, against_nn=False, parse=ref.parse_config, shapes_fn=None, grads_fn=None):
    """Compare one dump with the reference (and with nn.Transformer when against_nn). Returns
    test_torch.check_dump's dict plus pad (padding statistics) and, when against_nn, nn_ref
    (reference vs nn.Transformer) and nn_c (C vs nn.Transformer). parse, shapes_fn(m) and
    grads_fn(params, m, src, tokens, targets) -> (loss, grads): the config reader, tensor list
    and reference; this file's unless given (tests/test_torch_schemes.py passes its own)."""
    shapes_fn = shapes_fn or expected_shapes
    grads_fn = grads_fn or loss_and_grads
    res = ref.new_res()
    problems, notes = res["problems"], res["notes"]
    with h5py.File(path, "r") as f:
        if "config" not in f.attrs:
            problems.append("root attribute 'config' missing")
            return res
        m = parse(ref.attr_text(f.attrs["config"]))
        res["model"] = m
        if m["arch"] != "encdec":
            problems.append(f"model.arch = {m['arch']}, expected encdec")
            return res
        B, S, T = m["batch"], m["src_len"], m["seq_len"]
        for ds in ("batch/src_tokens", "batch/tokens", "batch/targets", "loss"):
            if ds not in f:
                problems.append(f"/{ds} missing")
        if problems:
            return res
        src = ref.fit_shape(np.asarray(f["batch/src_tokens"][()]), (B, S), "/batch/src_tokens",
                           notes)
        tokens = ref.fit_shape(np.asarray(f["batch/tokens"][()]), (B, T), "/batch/tokens", notes)
        targets = ref.fit_shape(np.asarray(f["batch/targets"][()]), (B, T), "/batch/targets",
                               notes)
        loss_c = np.asarray(f["loss"][()], dtype=np.float64)
        params = ref.read_group(f, "params")
        grads = ref.read_group(f, "grads")
    res["pad"] = check_batch(m, src, tokens, targets, problems)
    if loss_c.size != 1:
        problems.append(f"/loss has {loss_c.size} elements, expected a scalar")
    if problems:
        return res
    loss_c = float(loss_c.reshape(-1)[0])
    shapes = shapes_fn(m)
    if not ref.check_tensors(shapes, params, grads, problems, notes):
        return res

    loss_t, grads_t = grads_fn(params, m, src, tokens, targets)
    ref.compare(res, shapes, loss_t, grads_t, loss_c, grads)
    if against_nn:
        why = nn_unsupported(m)
        if why:
            problems.append(f"nn.Transformer case: {why}")
        else:
            loss_n, grads_n = nn_loss_and_grads(params, m, src, tokens, targets)
            res["nn_ref"] = ref.compare(ref.new_res(), shapes, loss_n, grads_n, loss_t, grads_t,
                                       NN_LOSS_TOL, NN_GRAD_TOL, label="ref",
                     floor_tol=NN_FLOOR_TOL)
            res["nn_c"] = ref.compare(ref.new_res(), shapes, loss_n, grads_n, loss_c, grads)
            for key, what in (("nn_ref", "reference vs nn.Transformer"),
                              ("nn_c", "C vs nn.Transformer")):
                problems.extend(f"{what}: {p}" for p in res[key]["problems"])
        res["ok"] = not problems
    return res


# ----------------------------------------------------------------------------------------------
# The cases.

BASE = {
    "model.arch": "encdec", "model.layers": 2, "model.dec_layers": 2, "model.d_model": 32,
    "model.heads": 4, "model.d_ff": 48, "model.vocab": 23, "model.src_len": 7,
    "model.seq_len": 7, "model.dropout": 0, "data.task": "reverse", "data.batch": 3,
    "data.min_len": 4,      # rows of 4..7 source tokens: every batch is padded
}


def make_cases():
    """[(name, settings, opts)]; opts: nn (also against nn.Transformer), heavy_padding (the
    batch must be padded: ≥ 1/3 of source and of decoder positions, lengths differing by row)."""
    cases = []

    def add(name, placement, norm, act, opts=None, **kw):
        d = {"model.placement": placement, "model.norm": norm, "model.activation": act}
        d.update({k.replace("__", "."): v for k, v in kw.items()})
        cases.append((name, d, opts or {}))

    for placement in ("post", "pre"):
        for norm in ("layernorm", "rmsnorm"):
            for act in ("relu", "gelu"):
                add(f"{placement}-{norm}-{act}", placement, norm, act)
    add("untied", "post", "layernorm", "relu", model__tie_embeddings="false")
    add("untied-pre", "pre", "rmsnorm", "gelu", model__tie_embeddings="false")
    add("norm-none-post", "post", "none", "relu")
    add("norm-none-pre", "pre", "none", "gelu")
    add("label-smoothing", "post", "rmsnorm", "gelu", data__label_smoothing=0.1)
    add("label-smoothing-pre", "pre", "layernorm", "relu", data__label_smoothing=0.1)
    add("post-final-norm-on", "post", "layernorm", "relu", model__final_norm="on")
    add("pre-final-norm-off", "pre", "layernorm", "gelu", model__final_norm="off")
    add("enc2-dec3", "pre", "layernorm", "gelu", model__layers=2, model__dec_layers=3)
    add("enc3-dec2-post", "post", "layernorm", "relu", model__layers=3, model__dec_layers=2)
    add("src9-tgt5", "post", "layernorm", "gelu", data__task="random", model__src_len=9,
        model__seq_len=5)
    add("src5-tgt9", "pre", "rmsnorm", "relu", model__src_len=5, model__seq_len=9)
    add("task-copy", "pre", "layernorm", "relu", data__task="copy")
    add("task-random", "post", "rmsnorm", "relu", data__task="random")
    add("heavy-padding", "post", "layernorm", "gelu", {"heavy_padding": True},
        data__task="random", model__src_len=9, model__seq_len=9, data__min_len=1)
    add("heavy-padding-pre", "pre", "layernorm", "relu", {"heavy_padding": True},
        data__task="random", model__src_len=9, model__seq_len=9, data__min_len=1)
    # nn.Transformer always has encoder.norm and decoder.norm: final_norm = on for Post-LN too.
    add("nn-transformer-post", "post", "layernorm", "relu", {"nn": True},
        model__final_norm="on")
    add("nn-transformer-pre", "pre", "layernorm", "relu", {"nn": True},
        model__final_norm="on", model__dec_layers=3)
    for i, (_, d, _) in enumerate(cases):
        d["init.seed"] = 2003 + 17 * i          # a different initialisation and batch per case
    return cases


def padding_problems(pad):
    """Why a heavy_padding case's batch does not test padding, or []."""
    out = []
    for what, lens, frac in (("source", pad["src_lens"], pad["src_pad"]),
                             ("decoder", pad["tgt_lens"], pad["tgt_pad"])):
        if frac < 1 / 3 or len(set(lens)) < 2:
            out.append(f"{what} padding too light for this case: {frac:.0%} of positions, "
                       f"row lengths {lens} (want ≥ 33 % and lengths differing by row)")
    return out


def report(name, res, verbose):
    ref.report(name, res, verbose)
    for key, what in (("nn_ref", "reference vs nn.Transformer"), ("nn_c", "C vs nn.Transformer")):
        r = res.get(key)
        if r and r["loss_err"] is not None:
            print(f"       {what}: loss rel {r['loss_err']:.1e}, worst {r['worst'][0]} "
                  f"err {r['worst'][1]:.2e} (own scale: {r['worst_own'][0]} "
                  f"{r['worst_own'][1]:.2e})")
    if verbose and "pad" in res:
        p = res["pad"]
        print(f"         padding: source lengths {p['src_lens']} ({p['src_pad']:.0%}), "
              f"decoder {p['tgt_lens']} ({p['tgt_pad']:.0%})")


def run_cases(args, workdir, dump=None):
    """Every case (or those matching --case) through `stability dump` and check_dump
    (torch_ref.run_cases); dump(ini, out) -> (exit status, output) stands in for the C program
    when given (--self-test). Fails, too, when no case's batch had padding of different lengths
    per row in both the source and the decoder."""
    seen = {"padded": False, "compared": 0}

    def padding(name, settings, opts, res):
        if "pad" not in res:
            return
        seen["compared"] += 1
        pad = res["pad"]
        seen["padded"] |= (len(set(pad["src_lens"])) > 1 and len(set(pad["tgt_lens"])) > 1
                           and pad["src_pad"] > 0 and pad["tgt_pad"] > 0)
        if opts.get("heavy_padding"):
            res["problems"].extend(padding_problems(pad))
    cases = [(name, settings, BASE, opts) for name, settings, opts in make_cases()]
    passed, failed = ref.run_cases(args, workdir, cases,
                                   lambda path, opts: check_dump(path, against_nn=opts.get("nn", False)),
                                   "test_torch_encdec", dump=dump, after=padding, report_fn=report)
    if not args.case and seen["compared"] and not seen["padded"]:
        print("FAIL padding                   no case's batch had source and decoder padding "
              "of different lengths per row: the padding masks went untested")
        failed += 1
    return passed, failed


# ----------------------------------------------------------------------------------------------
# --self-test: the reference, the reader and the comparison, without the C program.

def make_model(**kw):
    """A parsed-config dict (test_torch.parse_config's keys) for the self-test."""
    m = {"arch": "encdec", "layers": 2, "dec_layers": 2, "d_model": 12, "heads": 3, "d_ff": 10,
         "vocab": 9, "src_len": 6, "seq_len": 5, "batch": 3, "norm_eps": 1e-5, "dropout": 0.0,
         "task": "reverse", "label_smoothing": 0.0, "causal": False, "placement": "post",
         "norm": "layernorm", "activation": "relu", "tie_embeddings": True, "final_norm": False}
    m.update(kw)
    m["has_final_norm"] = m["final_norm"] and m["norm"] != "none"
    return m


def resolved_ini(m, seed):
    """INI text as the C writer would produce it: test_torch's, plus the encdec keys."""
    text = tt.resolved_ini(m, seed)
    return text.replace("[model]\n", f"[model]\narch = encdec\ndec_layers = {m['dec_layers']}\n"
                                      f"src_len = {m['src_len']}\n", 1)


def make_batch(rng, m, src_lens=None, tgt_lens=None):
    """Right-padded source (lengths src_lens) and decoder input = BOS (0) + target shifted right
    (lengths tgt_lens); positions past a row's target length are padding and not scored."""
    B, S, T, V = m["batch"], m["src_len"], m["seq_len"], m["vocab"]
    src_lens = src_lens or [S, max(1, S - 2), 2][:B] + [S] * max(0, B - 3)
    tgt_lens = tgt_lens or [max(1, T - 2), T, 2][:B] + [T] * max(0, B - 3)
    src = np.full((B, S), -1, dtype=np.int32)
    tokens = np.full((B, T), -1, dtype=np.int32)
    targets = np.full((B, T), -1, dtype=np.int32)
    for b in range(B):
        src[b, :src_lens[b]] = rng.integers(0, V, src_lens[b])
        n = tgt_lens[b]
        targets[b, :n] = rng.integers(1, V, n)
        tokens[b, 0] = 0
        tokens[b, 1:n] = targets[b, :n - 1]
    return src, tokens, targets


def write_fake_dump(path, m, seed, bytes_attr=False, mutate=None, bug=frozenset(), batch=None):
    """A dump in the C layout with the reference's loss and gradients (of the model with `bug`
    planted, then passed through mutate(params, grads, loss) -> loss, when given)."""
    rng = np.random.default_rng(seed)
    params = tt.random_params(expected_shapes(m), m, rng)
    src, tokens, targets = batch if batch is not None else make_batch(rng, m)
    loss, grads = loss_and_grads(params, m, src, tokens, targets, bug)
    if mutate:
        loss = mutate(params, grads, loss)
    ref.write_dump(path, resolved_ini(m, seed),
                   (("src_tokens", src), ("tokens", tokens), ("targets", targets)), loss, params,
                   grads, bytes_attr)
    return params, (src, tokens, targets)


def self_test(args, workdir):
    counts = [0, 0]

    def verdict(good, name, detail):
        print(f"{'ok  ' if good else 'FAIL'} self-test {name:44s}: {detail}")
        counts[0 if good else 1] += 1

    def expect(name, ok_wanted, path, against_nn=False):
        try:
            res = check_dump(path, against_nn)
        except (ValueError, KeyError) as e:
            res = ref.new_res()
            res["problems"].append(f"{type(e).__name__}: {e}")
        what = "passes" if ok_wanted else "rejected"
        detail = (f"worst {res['worst'][0]} err {res['worst'][1]:.1e}" if res["ok"]
                  else (res["problems"][0] if res["problems"] else "?"))
        if res["ok"] and "nn_ref" in res:
            r = res["nn_ref"]
            detail += (f"; reference vs nn.Transformer loss rel {r['loss_err']:.1e}, "
                       f"worst {r['worst'][0]} {r['worst'][1]:.1e} (own scale: "
                       f"{r['worst_own'][0]} {r['worst_own'][1]:.1e})")
        verdict(res["ok"] == ok_wanted, f"{name} ({what})", detail)
        if args.verbose:
            for p in res["problems"][1:]:
                print(f"       {p}")

    # Dumps made by the reference itself pass, in every shape of the model.
    variants = [
        make_model(),
        make_model(placement="pre", activation="gelu", tie_embeddings=False, final_norm=True,
              label_smoothing=0.1),
        make_model(norm="rmsnorm", activation="gelu", final_norm=True, dec_layers=3),
        make_model(placement="pre", norm="rmsnorm", tie_embeddings=False, layers=3, src_len=4,
              seq_len=7),
        make_model(placement="pre", norm="none", activation="gelu", final_norm=True),
        make_model(norm="none", src_len=8, seq_len=3),
    ]
    for i, m in enumerate(variants):
        name = (f"{m['placement']}-{m['norm']}-{m['activation']} N{m['layers']} M{m['dec_layers']}"
                f" S{m['src_len']} T{m['seq_len']}{' untied' if not m['tie_embeddings'] else ''}"
                f"{' final' if m['has_final_norm'] else ''}")
        p = os.path.join(workdir, f"self{i}.h5")
        write_fake_dump(p, m, 100 + i, bytes_attr=bool(i % 2))
        expect(name, True, p)

    m = make_model(placement="pre", activation="gelu", final_norm=True, dec_layers=3)

    def jitter(params, grads, loss):
        r = np.random.default_rng(7)
        for k in grads:
            grads[k] = grads[k] * (1 + 1e-13 * r.standard_normal(grads[k].shape))
        return loss * (1 + 1e-15)
    p = os.path.join(workdir, "jitter.h5")
    write_fake_dump(p, m, 200, mutate=jitter)
    expect("rounding-level jitter", True, p)

    # Planted bugs, each of which must be caught.
    def bump(name, rel):
        def f(params, grads, loss):
            g = grads[name]
            g.flat[g.size // 2] += rel * np.max(np.abs(g))
            return loss
        return f

    def swap(a, b, group="grads"):
        def f(params, grads, loss):
            d = grads if group == "grads" else params
            d[a], d[b] = d[b].copy(), d[a].copy()
            return loss
        return f

    def drop(*names):
        def f(params, grads, loss):
            for n in names:
                del params[n], grads[n]
            return loss
        return f

    def nan_grad(params, grads, loss):
        grads["dec/00/cwv"].flat[3] = np.nan
        return loss

    def bump_loss(params, grads, loss):
        return loss * (1 + 1e-10)

    bad = [
        ("grads dec/00 cwk/cwv swapped", dict(mutate=swap("dec/00/cwk", "dec/00/cwv"))),
        ("grad dec/01/cwq off by 1e-7", dict(mutate=bump("dec/01/cwq", 1e-7))),
        ("grad dec/00/cbv off by 1e-7", dict(mutate=bump("dec/00/cbv", 1e-7))),
        ("grad enc/00/wv off by 1e-8", dict(mutate=bump("enc/00/wv", 1e-8))),
        ("dec_final_norm not applied", dict(bug={"no_dec_final_norm"})),
        ("dec_final_norm tensors missing", dict(mutate=drop("dec_final_norm.gamma",
                                                             "dec_final_norm.beta"))),
        ("memory taken before enc_final_norm", dict(bug={"mem_before_norm"})),
        ("decoder self-attention not causal", dict(bug={"dec_not_causal"})),
        ("source padding leaks (encoder + cross)", dict(bug={"leak_enc", "leak_cross"})),
        ("source padding leaks (cross-attention)", dict(bug={"leak_cross"})),
        ("source padding leaks (encoder self-attn)", dict(bug={"leak_enc"})),
        ("grad NaN (dec/00/cwv)", dict(mutate=nan_grad)),
        ("loss off by 1e-10", dict(mutate=bump_loss)),
        ("params enc/00/wq and dec/00/cwq swapped",
         dict(mutate=swap("enc/00/wq", "dec/00/cwq", "params"))),
        ("grads norm2/norm3.gamma swapped", dict(mutate=swap("dec/01/norm2.gamma",
                                                             "dec/01/norm3.gamma"))),
    ]
    for i, (name, kw) in enumerate(bad):
        p = os.path.join(workdir, f"bad{i}.h5")
        write_fake_dump(p, m, 300 + i, bytes_attr=bool(i % 2), **kw)
        expect(name, False, p)

    # Batches outside the contract are refused rather than judged.
    rng = np.random.default_rng(11)
    src, tokens, targets = make_batch(rng, m)
    src[2, :] = -1
    p = os.path.join(workdir, "empty_src.h5")
    write_fake_dump(p, m, 400, batch=(src, tokens, targets), mutate=lambda *a: 1.0)
    expect("a source row all padding", False, p)
    src, tokens, targets = make_batch(rng, m)
    targets[0, m["seq_len"] - 1] = 3                   # row 0 has length T−2: input is padding
    p = os.path.join(workdir, "scored_pad.h5")
    write_fake_dump(p, m, 401, batch=(src, tokens, targets))
    expect("a target scored at a padding input", False, p)

    # Invariants of the reference itself.
    mi = make_model(placement="post", norm="layernorm", final_norm=True, dec_layers=3)
    r = np.random.default_rng(5)
    params = tt.random_params(expected_shapes(mi), mi, r)
    src, tokens, targets = make_batch(r, mi)
    loss, g = loss_and_grads(params, mi, src, tokens, targets)
    gmax = max(np.max(np.abs(x)) for x in g.values())
    for w in ("bk", "cbk"):
        names = [n for n in g if n.endswith("/" + w)]
        worst = max(np.max(np.abs(g[n])) for n in names)
        verdict(worst <= 1e-12 * gmax, f"{w} gradient ~ 0 ({len(names)} layers)",
                f"max|g_{w}| / max|g| = {worst / gmax:.1e}")

    # More padding columns change nothing (the masks are exact), in the encoder and decoder.
    me = {**mi, "src_len": mi["src_len"] + 3, "seq_len": mi["seq_len"] + 2}
    pad = lambda a, n: np.concatenate([a, np.full((a.shape[0], n), -1, np.int32)], axis=1)
    loss2, g2 = loss_and_grads(params, me, pad(src, 3), pad(tokens, 2), pad(targets, 2))
    res = ref.compare(ref.new_res(), list(g), loss, g, loss2, g2, NN_LOSS_TOL, NN_GRAD_TOL,
                     label="padded", floor_tol=NN_FLOOR_TOL)
    verdict(res["ok"], "3 more source, 2 more target padding columns",
            f"loss rel {res['loss_err']:.1e}, worst {res['worst'][0]} err {res['worst'][1]:.1e}"
            f" (own scale: {res['worst_own'][0]} {res['worst_own'][1]:.1e})")

    # Rows are independent: the batch loss is the count-weighted mean of the rows' losses.
    per_row = []
    for b in range(mi["batch"]):
        mb = {**mi, "batch": 1}
        lb, _ = loss_and_grads(params, mb, src[b:b + 1], tokens[b:b + 1], targets[b:b + 1])
        per_row.append((lb, int(np.sum(targets[b] >= 0))))
    mean = sum(lb * n for lb, n in per_row) / sum(n for _, n in per_row)
    verdict(abs(mean - loss) <= 1e-13 * loss, "batch loss = weighted mean of row losses",
            f"{loss:.17g} vs {mean:.17g}")

    # The reference against torch.nn.Transformer on the same weights and padded batch.
    big = dict(d_model=32, heads=4, d_ff=48, vocab=23, src_len=7, seq_len=6, batch=3)
    nn_cases = [
        ("Post-LN (norm_first=False), final norms", make_model(**big, final_norm=True)),
        ("Pre-LN (norm_first=True), final norms",
         make_model(**big, placement="pre", final_norm=True, dec_layers=3)),
        ("Post-LN, gelu, no final norms", make_model(**big, activation="gelu", layers=3)),
        ("Pre-LN, gelu, untied, smoothing, no final",
         make_model(**{**big, "src_len": 9, "seq_len": 5}, placement="pre", activation="gelu",
               tie_embeddings=False, label_smoothing=0.1)),
    ]
    for i, (name, mn) in enumerate(nn_cases):
        r = np.random.default_rng(700 + i)
        params = tt.random_params(expected_shapes(mn), mn, r)
        src, tokens, targets = make_batch(r, mn)
        res = reference_vs_nn(params, mn, src, tokens, targets)
        verdict(res["ok"], "vs nn.Transformer: " + name,
                f"loss rel {res['loss_err']:.1e}, worst {res['worst'][0]} "
                f"err {res['worst'][1]:.1e} (own scale: {res['worst_own'][0]} "
                f"{res['worst_own'][1]:.1e})")
        for prob in res["problems"]:
            print(f"       {prob}")
    # ... and it sees a planted bug in the reference (the comparison is not vacuous).
    mn = nn_cases[0][1]
    r = np.random.default_rng(700)
    params = tt.random_params(expected_shapes(mn), mn, r)
    src, tokens, targets = make_batch(r, mn)
    loss_b, grads_b = loss_and_grads(params, mn, src, tokens, targets, {"leak_cross"})
    loss_n, grads_n = nn_loss_and_grads(params, mn, src, tokens, targets)
    res = ref.compare(ref.new_res(), expected_shapes(mn), loss_n, grads_n, loss_b, grads_b,
                     NN_LOSS_TOL, NN_GRAD_TOL, label="ref",
                     floor_tol=NN_FLOOR_TOL)
    verdict(not res["ok"], "vs nn.Transformer: leaky reference rejected",
            res["problems"][0] if res["problems"] else "not caught")

    # A dump checked against nn.Transformer as well (the nn-transformer-* cases' path).
    for i, placement in enumerate(("post", "pre")):
        mn = make_model(**big, placement=placement, final_norm=True)
        p = os.path.join(workdir, f"nn{i}.h5")
        write_fake_dump(p, mn, 800 + i)
        expect(f"dump vs reference and nn.Transformer, {placement}", True, p, against_nn=True)
        p = os.path.join(workdir, f"nnbad{i}.h5")
        write_fake_dump(p, mn, 800 + i, mutate=bump("dec/00/cwo", 1e-7))
        expect(f"... with grad dec/00/cwo off by 1e-7, {placement}", False, p, against_nn=True)

    # The whole run mode (case INIs -> `stability dump` -> check) with a stand-in for the C
    # program that answers with the reference's own dumps: every case must pass.
    sub = argparse.Namespace(binary="stability-stub", case=None, verbose=False)
    out = io.StringIO()
    os.makedirs(os.path.join(workdir, "run"), exist_ok=True)
    with contextlib.redirect_stdout(out):
        p_ok, p_bad = run_cases(sub, os.path.join(workdir, "run"), dump=stub_dump)
    verdict(p_bad == 0 and p_ok == len(make_cases()),
            "run mode on reference-made dumps (stand-in dump)",
            f"{p_ok} of {len(make_cases())} cases passed, {p_bad} failed")
    if p_bad or args.verbose:
        print("       " + out.getvalue().rstrip().replace("\n", "\n       "))
    return counts[0], counts[1]


def stub_dump(ini, out):
    """`stability dump --config INI --out OUT` answered by the reference (the self-test of the run
    mode): the INI's settings with the C defaults filled in, reference-made weights, gradients
    and loss, and a batch with source and decoder padding in every case. -> (0, "")"""
    cp = configparser.ConfigParser(interpolation=None)
    cp.read(ini)
    def get(section, key, default):
        return cp.get(section, key, fallback=str(default)).strip().lower()
    ints = ("layers", "dec_layers", "d_model", "heads", "d_ff", "vocab", "src_len", "seq_len")
    kw = {k: int(get("model", k, 0)) for k in ints}
    kw["dec_layers"] = kw["dec_layers"] or kw["layers"]
    kw.update(placement=get("model", "placement", "post"), norm=get("model", "norm", "layernorm"),
              activation=get("model", "activation", "relu"),
              norm_eps=float(get("model", "norm_eps", 1e-5)),
              tie_embeddings=ref.parse_bool(get("model", "tie_embeddings", "true"), "tie"),
              batch=int(get("data", "batch", 3)), task=get("data", "task", "reverse"),
              label_smoothing=float(get("data", "label_smoothing", 0)))
    fn = get("model", "final_norm", "auto")
    kw["final_norm"] = kw["placement"] == "pre" if fn == "auto" else ref.parse_bool(fn, "final")
    m = make_model(**kw)
    seed = int(get("init", "seed", 1))
    S, T = m["src_len"], m["seq_len"]
    lens = ([S, max(1, S // 2), 1] + [S] * m["batch"])[:m["batch"]], \
        ([max(1, T // 2), T, 2] + [T] * m["batch"])[:m["batch"]]
    batch = make_batch(np.random.default_rng(seed), m, *lens)
    write_fake_dump(out, m, seed, batch=batch)
    return 0, ""


def main():
    return ref.run_main(__doc__, "torch encdec",
                       f"test_torch_encdec: PyTorch {torch.__version__}, h5py {h5py.__version__}, float64; "
                       f"grad tol {ref.GRAD_TOL:g} (floor {ref.GLOBAL_FLOOR:g}·global max), "
                       f"loss tol {ref.LOSS_TOL:g}; reference vs nn.Transformer {NN_GRAD_TOL:g} "
                       f"(floor-judged {NN_FLOOR_TOL:g}) / {NN_LOSS_TOL:g}",
                       self_test, run_cases,
                       "check the reference, reader and comparison without the C program")


if __name__ == "__main__":
    sys.exit(main())
