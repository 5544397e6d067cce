#!/usr/bin/python3
"""test_torch_llama.py — today's block (docs/design.md §6i: model.positions = rope | none,
model.activation = swiglu, model.bias = off) against PyTorch autograd in float64, in lm, encdec
and mlm, with every scheme of tests/test_torch_schemes.py's reference and with QK-norm,
soft-capping and the z-loss; then decoding (`stability translate`) of a trained rope model
against a PyTorch beam search, and the config error of an odd head size.

The reference is test_torch_schemes.py's (every placement, norm and init variant, each following
its scheme's code), with the parts of the block put in:
- rotary positions: Meta's LLaMA code (facebookresearch/llama model.py, precompute_freqs_cis and
  apply_rotary_emb: the pairs (2j, 2j+1) of each head as complex numbers times e^{i·t·θ_j},
  θ_j = 10000^(−2j/d_head); torch_ref.rope) on q and k of self-attention after any QK-norm,
  positions 0 … n−1 of each sequence; cross-attention unrotated; no sinusoidal PE added;
- positions = none: neither;
- SwiGLU: LLaMA's FeedForward w2(silu(w1(x)) * w3(x)) with torch's F.silu (torch_ref.ffn), plus
  b¹, b³, b² when the model has biases;
- bias = off: every linear map without its bias, and the dump must not hold them;
- QK-norm (γ, β over d_head), soft-capping c·tanh(s/c) before the masks, the z-loss
  c·mean (log Z)² (tests/test_torch_dynamics.py's definitions, written again here).
Every gradient within 1e-9 relative, the loss within 1e-12 (torch_ref's compare). Planted
faults, each of which must be caught on a real dump: rope on cross-attention too, rope before
QK-norm, the queries' positions one off the keys', Hugging Face's rotate_half pairing (i, i + d_head/2) without
permuting W_Q and W_K, gate and up projection swapped, the sinusoidal PE added with rope. The
self-test checks (without the C program) that rotate_half with W_Q's and W_K's columns permuted
is the same model (the two conventions differ by that permutation only) and that each fault
changes the loss. Held-out cases (`held-`) are configurations not used while the code was
written: their sizes, heads and schemes appear nowhere else.

    /usr/bin/python3 tests/test_torch_llama.py                 # against `stability dump`
    /usr/bin/python3 tests/test_torch_llama.py --self-test     # only the self-test (no C program; the run includes it)
    options: --binary PATH  --keep DIR  --case SUBSTRING  --verbose  (--case skips decoding)

The last line is `torch llama: N passed, M failed`; exit status 1 if any case failed.
"""

import configparser
import math
import os
import subprocess
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402  (the scaffolding the PyTorch cross-checks share)
import test_torch as tt  # noqa: E402  (the lm dump reader)
import test_torch_encdec as ttd  # noqa: E402  (the encdec dump reader, embedding with padding)
import test_torch_schemes as tts  # noqa: E402  (the schemes' reference: layers and stacks)

# Run as a script, this file is also the module test_torch_llama_decode imports: without this a
# second copy would install its own reference into torch_ref, and the self-test's planted faults
# (this copy's BUG) would no longer reach the model.
sys.modules.setdefault("test_torch_llama", sys.modules[__name__])

REPO = ref.REPO
BUG = set()          # planted faults of the running check (empty for the real cases)
LAST_CE = [None]     # the cross-entropy of the last reference forward (the dump's /loss)
BIASES = ("bq", "bk", "bv", "bo", "cbq", "cbk", "cbv", "cbo", "b1", "b2", "b3")


# ----------------------------------------------------------------------------------------------
# The resolved config and the tensors of a dump.

def parse(text):
    """test_torch_schemes's reader (torch_ref reads positions and bias) plus the mitigations
    (absent: off)."""
    m = tts.parse_config(text)
    cp = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"),
                                   strict=False)
    cp.read_string(text)
    get = lambda s, k, d: cp.get(s, k).strip() if cp.has_option(s, k) else d  # noqa: E731
    m["qk_norm"] = get("model", "qk_norm", "off")
    m["softcap"] = float(get("model", "attn_softcap", "0"))
    m["z_loss"] = float(get("train", "z_loss", "0"))
    return m


def shapes(m):
    """name -> shape: the schemes' tensors without the biases (bias = off), with w3 (and b3)
    after each FFN's w2 (swiglu) and QK-norm's γ (β) of width d_head on every attention."""
    s = tts.expected_shapes(m)
    C, F_, Dh = m["d_model"], m["d_ff"], m["d_model"] // m["heads"]
    qk = {"off": (), "layernorm": ("gamma", "beta"), "rmsnorm": ("gamma",)}[m["qk_norm"]]
    out = {}
    for name, shape in s.items():
        p, _, last = name.rpartition("/")
        if p and last in BIASES and not m["bias"]:
            continue
        out[name] = shape
        if p and last == "w2" and m["activation"] == "swiglu":
            out[p + "/w3"] = (C, F_)
            if m["bias"]:
                out[p + "/b3"] = (F_,)
        if p and last in ("wq", "cwq"):
            pre = "c" if last == "cwq" else ""
            for side in ("q", "k"):
                for part in qk:
                    out[f"{p}/{pre}{side}norm.{part}"] = (Dh,)
    return out


# ----------------------------------------------------------------------------------------------
# The block's reference pieces (installed into torch_ref and test_torch_schemes below).

def qk_norm(x, P, name, m):
    """x (B,H,T,Dh) normalised over Dh with the layer's γ (β) (docs/design.md §6g)."""
    eps = m["norm_eps"]
    if m["qk_norm"] == "layernorm":
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return P[name + ".gamma"] * (x - mu) / torch.sqrt(var + eps) + P[name + ".beta"]
    return P[name + ".gamma"] * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def rotate_half_rope(x):
    """Hugging Face's LlamaRotaryEmbedding convention: pairs (j, j + Dh/2), x·cos + rotate_half(x)·
    sin with rotate_half(x) = cat(−x₂, x₁) and the frequencies repeated over both halves."""
    B, H, T, Dh = x.shape
    freqs = 1.0 / (10000.0 ** (torch.arange(0, Dh, 2, dtype=torch.float64) / Dh))
    emb = torch.outer(torch.arange(T, dtype=torch.float64), freqs).repeat(1, 2)   # (T, Dh)
    x1, x2 = x[..., : Dh // 2], x[..., Dh // 2:]
    return x * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()


def positions(x, query):
    """The block's rotation of q (query) or k (B,H,T,Dh), or a planted fault's. A shift of every
    position cancels in q·k (it depends on t − s only), so the fault that matters is the queries'
    positions off by one from the keys' (what a decoder that caches keys gets wrong)."""
    if "rotate_half" in BUG:
        return rotate_half_rope(x)
    if "query_offset" in BUG and query:   # queries at 1 … n, keys at 0 … n−1
        B, H, T, Dh = x.shape
        pad = torch.cat((torch.zeros(B, H, 1, Dh), x), dim=2)
        return ref.rope(pad)[:, :, 1:]
    return ref.rope(x)


def mha(a, P, p, m, kv=None, key_pad=None, causal=None, w="", ctx_hook=None):
    """torch_ref.mha with optional biases, QK-norm, rotary positions (self-attention only, after
    QK-norm) and soft-capping."""
    kv = a if kv is None else kv
    causal = m["causal"] if causal is None else causal
    B, T, C = a.shape
    S, H = kv.shape[1], m["heads"]
    Dh = C // H
    q = ref.linear(a, P, p + w + "wq", p + w + "bq", m).reshape(B, T, H, Dh).transpose(1, 2)
    k = ref.linear(kv, P, p + w + "wk", p + w + "bk", m).reshape(B, S, H, Dh).transpose(1, 2)
    v = ref.linear(kv, P, p + w + "wv", p + w + "bv", m).reshape(B, S, H, Dh).transpose(1, 2)
    rotate = m["positions"] == "rope" and (w == "" or "rope_cross" in BUG)
    if rotate and "rope_before_qknorm" in BUG:
        q, k = positions(q, True), positions(k, False)
    if m["qk_norm"] != "off":
        q = qk_norm(q, P, p + w + "qnorm", m)
        k = qk_norm(k, P, p + w + "knorm", m)
    if rotate and "rope_before_qknorm" not in BUG:
        q, k = positions(q, True), positions(k, False)
    s = q @ k.transpose(-1, -2) / math.sqrt(Dh)
    if m["softcap"] > 0:
        s = m["softcap"] * torch.tanh(s / m["softcap"])
    if causal:
        s = s.masked_fill(torch.triu(torch.ones(T, S, dtype=torch.bool), diagonal=1), -math.inf)
    if key_pad is not None:
        s = s.masked_fill(key_pad[:, None, None, :], -math.inf)
    ctx = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
    if ctx_hook is not None:
        ctx = ctx_hook(ctx)
    return ref.linear(ctx, P, p + w + "wo", p + w + "bo", m)


def ffn(x, P, p, m, hidden_hook=None):
    """torch_ref.ffn, or with a planted fault the gate and the up projection swapped."""
    if "swap_gate_up" in BUG and m["activation"] == "swiglu":
        P = dict(P)
        P[p + "w1"], P[p + "w3"] = P[p + "w3"], P[p + "w1"]
        if m["bias"]:
            P[p + "b1"], P[p + "b3"] = P[p + "b3"], P[p + "b1"]
    return ORIGINAL["ffn"](x, P, p, m, hidden_hook)


def embed(P, m, tokens):
    """(B,n) ids, −1 = padding -> tok_embed[id]·√d (+ PE[p] with sinusoidal positions)."""
    C = m["d_model"]
    x = P["tok_embed"][tokens.clamp(min=0)] * math.sqrt(C)
    if m["positions"] == "sinusoidal" or ("pe_with_rope" in BUG and m["positions"] == "rope"):
        x = x + ref.positional_encoding(tokens.shape[1], C)
    return x.masked_fill((tokens < 0)[..., None], 0.0)


def output_loss(P, m, x_final, targets):
    """CE + c·mean over scored positions of (log Z)²; LAST_CE keeps the CE (the dump's /loss)."""
    B, T, _ = x_final.shape
    W = P["tok_embed"].t() if m["tie_embeddings"] else P["lm_head"]
    logits = (x_final @ W).reshape(B * T, m["vocab"])
    y = targets.reshape(B * T)
    ce = F.cross_entropy(logits, y, ignore_index=-1, label_smoothing=m["label_smoothing"])
    LAST_CE[0] = float(ce.item())
    if m.get("z_loss", 0) <= 0:
        return ce
    lz = torch.logsumexp(logits[y >= 0], dim=-1)
    return ce + m["z_loss"] * (lz * lz).mean()


def loss_and_grads(params_np, m, tokens_np, targets_np, loss_fn):
    """torch_ref.loss_and_grads, returning the cross-entropy (the dump's /loss) with the gradients
    of the whole objective."""
    _, grads = ORIGINAL["loss_and_grads"](params_np, m, tokens_np, targets_np, loss_fn)
    return LAST_CE[0], grads


ORIGINAL = {"ffn": ref.ffn, "loss_and_grads": ref.loss_and_grads}
# the schemes' reference builds its branches from torch_ref's mha and ffn, embeds through its
# lm_embed and test_torch_encdec's embed, and ends in torch_ref's output loss
ref.mha, ref.ffn, ref.output_loss, ref.loss_and_grads = mha, ffn, output_loss, loss_and_grads
tts.lm_embed, ttd.embed = embed, embed


def check(path, opts=None):
    """One dump against the reference: test_torch's or test_torch_encdec's reader with this
    file's config reader, tensor list and forward."""
    with h5py.File(path, "r") as f:
        arch = parse(ref.attr_text(f.attrs["config"]))["arch"]
    if arch == "lm":
        return tt.check_dump(path, parse=parse, shapes_fn=shapes, loss_fn=tts.lm_loss)
    return ttd.check_dump(path, parse=parse, shapes_fn=shapes,
                          grads_fn=lambda P, m, src, tok, tgt: tts.loss_and_grads(
                              P, m, (src, tok, tgt)))


# ----------------------------------------------------------------------------------------------
# The cases.

LM = {"model.layers": 2, "model.d_model": 16, "model.heads": 2, "model.d_ff": 24,
      "model.vocab": 19, "model.seq_len": 7, "data.batch": 3, "model.causal": "true",
      "model.dropout": 0, "data.task": "random", "init.scheme": "normal", "init.std": 0.3}
ED = {"model.arch": "encdec", "model.layers": 2, "model.dec_layers": 2, "model.d_model": 16,
      "model.heads": 2, "model.d_ff": 24, "model.vocab": 19, "model.seq_len": 7,
      "model.src_len": 7, "model.dropout": 0, "data.task": "reverse", "data.batch": 3,
      "data.min_len": 3, "init.scheme": "normal", "init.std": 0.3}
LLAMA = {"model.positions": "rope", "model.activation": "swiglu", "model.bias": "off"}
SCHEMES = ["post", "pre", "peri", "deepnorm", "admin", "subln", "mixln", "b2t", "normformer"]


def make_cases(corpus):
    """[(name, settings, base, opts)] for torch_ref.run_cases; corpus: the mlm cases' text."""
    cases = []

    def add(name, base, **kw):
        d = {k.replace("__", "."): v for k, v in kw.items()}
        d["init.seed"] = 5001 + 13 * len(cases)
        cases.append((name, d, base, {}))

    mlm = {**LM, "model.causal": "false", "model.vocab": 257, "model.seq_len": 12,
           "data.task": "mlm", "data.mask_rate": 0.3, "data.path": corpus, "data.batch": 2}
    for arch, base in (("lm", LM), ("encdec", ED)):
        # each part alone, then the block
        add(f"{arch}-rope-pre-gelu", base, model__positions="rope", model__placement="pre",
            model__activation="gelu")
        add(f"{arch}-none-post-relu", base, model__positions="none", model__activation="relu")
        add(f"{arch}-swiglu-pre-bias", base, model__activation="swiglu", model__placement="pre",
            model__norm="rmsnorm")
        add(f"{arch}-nobias-post-gelu", base, model__bias="off", model__activation="gelu")
        add(f"{arch}-llama-pre-rms", base, model__placement="pre", model__norm="rmsnorm", **{
            k.replace(".", "__"): v for k, v in LLAMA.items()})
        # every scheme with the block, QK-norm on every other one
        for i, pl in enumerate(SCHEMES):
            kw = {k.replace(".", "__"): v for k, v in LLAMA.items()}
            kw.update(model__placement=pl, model__norm="rmsnorm" if i % 2 else "layernorm")
            if i % 2:
                kw["model__qk_norm"] = "rmsnorm" if i % 4 == 1 else "layernorm"
            if pl == "mixln":
                kw.update(model__layers=4, model__mix_ratio=0.5)
            add(f"{arch}-llama-{pl}" + ("-qk" if i % 2 else ""), base, **kw)
        kw = {k.replace(".", "__"): v for k, v in LLAMA.items()}
        add(f"{arch}-llama-pre-dyt", base, model__placement="pre", model__norm="dyt", **kw)
        add(f"{arch}-llama-rezero", base, model__placement="rezero", model__norm="none", **kw)
        add(f"{arch}-llama-tfixup", base, model__placement="pre", model__norm="none",
            init__scheme="tfixup", **kw)
        add(f"{arch}-llama-qkln-cap-z", base, model__placement="pre", model__norm="rmsnorm",
            model__qk_norm="layernorm", model__attn_softcap=2.0, train__z_loss=0.1, **kw)
    kw = {k.replace(".", "__"): v for k, v in LLAMA.items()}
    add("lm-llama-post-bidirectional-untied", LM, model__causal="false",
        model__tie_embeddings="false", **kw)
    add("encdec-llama-post-smoothing-untied", ED, data__label_smoothing=0.1,
        model__tie_embeddings="false", **kw)
    add("mlm-llama-pre-rms", mlm, model__placement="pre", model__norm="rmsnorm", **kw)
    add("mlm-llama-post-qkrms", mlm, model__qk_norm="rmsnorm", **kw)
    add("mlm-rope-swiglu-bias", mlm, model__positions="rope", model__activation="swiglu")
    # held out: sizes (d_head 8, 3 heads, d_ff ≈ 8d/3, odd lengths), schemes and combinations
    # used nowhere above and not while the code was written
    held = {"model.d_model": 24, "model.heads": 3, "model.d_ff": 64, "model.seq_len": 11}
    add("held-lm-peri-qkrms-cap", {**LM, **held}, model__placement="peri",
        model__norm="rmsnorm", model__qk_norm="rmsnorm", model__attn_softcap=3.0,
        model__layers=3, **kw)
    add("held-encdec-subln-bias-src9-tgt5", {**ED, **held}, model__placement="subln",
        model__norm="layernorm", model__positions="rope", model__activation="swiglu",
        model__src_len=9, model__seq_len=9, data__task="copy", data__min_len=2,
        data__label_smoothing=0.05)
    add("held-encdec-normformer-none-z", {**ED, **held}, model__placement="normformer",
        model__norm="rmsnorm", model__positions="none", model__activation="swiglu",
        model__bias="off", train__z_loss=0.05, model__dec_layers=3)
    add("held-mlm-b2t-qkln-nobias-gelu", {**mlm, **held}, model__placement="b2t",
        model__norm="layernorm", model__qk_norm="layernorm", model__positions="rope",
        model__bias="off", model__activation="gelu", model__seq_len=13)
    add("held-lm-deepnorm-none-swiglu-L4", {**LM, **held}, model__placement="deepnorm",
        model__norm="rmsnorm", model__positions="none", model__activation="swiglu",
        model__layers=4, model__causal="true")
    return cases


# (case, fault): each planted fault must be caught on the case's real dump
PLANTED = [("encdec-llama-pre-rms", "rope_cross"), ("lm-llama-qkln-cap-z", "rope_before_qknorm"),
           ("lm-llama-pre-rms", "query_offset"), ("encdec-llama-subln-qk", "rotate_half"),
           ("lm-llama-peri", "swap_gate_up"), ("mlm-llama-pre-rms", "pe_with_rope"),
           ("encdec-llama-post", "query_offset")]


def intent(name, settings, opts, res):
    """The resolved config holds what the case set: the block's keys read back."""
    m = res.get("model")
    if not m:
        return
    for key, field in (("model.positions", "positions"), ("model.activation", "activation")):
        if key in settings and m[field] != settings[key]:
            res["problems"].append(f"{key} = {settings[key]} read back as {m[field]}")
    if "model.bias" in settings and m["bias"] != (settings["model.bias"] == "on"):
        res["problems"].append(f"model.bias = {settings['model.bias']} read back as {m['bias']}")


def config_error(args, workdir):
    """rope with an odd d_head: FILE:LINE: model.positions: ..., exit 2, nothing written."""
    binary = args.binary if os.path.isabs(args.binary) else os.path.join(REPO, args.binary)
    ini, out = os.path.join(workdir, "odd.ini"), os.path.join(workdir, "odd.h5")
    with open(ini, "w") as f:
        f.write("[model]\nd_model = 12\nheads = 4\npositions = rope\nlayers = 1\n")
    p = subprocess.run([binary, "--config", ini, "--out", out], capture_output=True, text=True)
    ok = (p.returncode == 2 and not os.path.exists(out) and
          f"{ini}:4: model.positions: rope rotates pairs" in p.stderr and "(got 3)" in p.stderr)
    print(f"{'ok  ' if ok else 'FAIL'} config: rope with d_head 3 -> exit {p.returncode}, "
          f"{'no file' if not os.path.exists(out) else 'a file'}: {p.stderr.strip()[:120]}")
    return ok


def run_cases(args, workdir):
    import test_torch_mlm
    corpus = os.path.join(workdir, "corpus.txt")
    test_torch_mlm.write_corpus(corpus)
    paths = {}

    def keep(name, settings, opts, res):
        intent(name, settings, opts, res)
        paths[name] = os.path.join(workdir, name + ".h5")

    passed, failed = ref.run_cases(args, workdir, make_cases(corpus), check, "test_torch_llama",
                                   after=keep)
    for case, bug in PLANTED:
        if case not in paths or not os.path.exists(paths[case]):
            continue
        BUG.clear()
        BUG.add(bug)
        try:
            caught = not check(paths[case])["ok"]
        finally:
            BUG.clear()
        print(f"{'ok  ' if caught else 'FAIL'} planted {bug:20s} in {case}: "
              f"{'caught' if caught else 'NOT caught'}")
        passed, failed = passed + caught, failed + (not caught)
    ok = config_error(args, workdir)
    passed, failed = passed + ok, failed + (not ok)
    if not args.case:
        import test_torch_llama_decode
        p2, f2 = test_torch_llama_decode.run(args, workdir)
        passed, failed = passed + p2, failed + f2
    return passed, failed


# ----------------------------------------------------------------------------------------------
# --self-test: the reference's conventions and faults, without the C program.

def self_test(args, workdir):
    """rotate_half with W_Q's and W_K's columns permuted (each head's (2j, 2j+1) -> (j, j+Dh/2))
    is the interleaved model exactly; each planted fault moves the loss; the tensors' list."""
    passed = failed = 0

    def verdict(ok, what):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        passed, failed = passed + ok, failed + (not ok)

    rng = np.random.default_rng(3)
    for arch in ("lm", "encdec"):
        m = tts.make_model(arch, placement="pre", norm="rmsnorm", activation="swiglu",
                           d_model=12, heads=2, d_ff=10)
        m.update(positions="rope", bias=False, qk_norm="off", softcap=0.0, z_loss=0.0)
        P = tts.random_params(shapes(m), m, rng)
        batch = tts.make_batch(rng, m)
        loss, _ = tts.loss_and_grads(P, m, batch)
        Dh = m["d_model"] // m["heads"]
        perm = np.concatenate([np.concatenate([np.arange(0, Dh, 2), np.arange(1, Dh, 2)]) + h * Dh
                               for h in range(m["heads"])])
        Q = dict(P)
        for name in P:
            if name.endswith("/wq") or name.endswith("/wk"):
                Q[name] = P[name][:, perm]
        BUG.add("rotate_half")
        try:
            loss_hf, _ = tts.loss_and_grads(Q, m, batch)
            loss_hf_plain, _ = tts.loss_and_grads(P, m, batch)
        finally:
            BUG.clear()
        verdict(abs(loss_hf - loss) <= 1e-13 * abs(loss) and abs(loss_hf_plain - loss) > 1e-6,
                f"{arch}: rotate_half on permuted W_Q, W_K = interleaved pairs ({loss:.15g} vs "
                f"{loss_hf:.15g}); unpermuted differs ({loss_hf_plain:.6g})")
        m2 = dict(m, qk_norm="rmsnorm")
        P2 = tts.random_params(shapes(m2), m2, rng)   # γ = 1 ± 0.3, QK-norm's too
        base2, _ = tts.loss_and_grads(P2, m2, batch)
        for bug in ("rope_cross", "rope_before_qknorm", "query_offset", "swap_gate_up",
                    "pe_with_rope"):
            if bug == "rope_cross" and arch == "lm":
                continue
            BUG.add(bug)
            try:
                moved, _ = tts.loss_and_grads(P2, m2, batch)
            finally:
                BUG.clear()
            verdict(abs(moved - base2) > 1e-8 * abs(base2),
                    f"{arch}: planted {bug} moves the loss ({base2:.10g} -> {moved:.10g})")
    m = tts.make_model("encdec", placement="post", activation="swiglu")
    m.update(positions="rope", bias=False, qk_norm="layernorm", softcap=0.0, z_loss=0.0)
    s = shapes(m)
    verdict(not any(n.rsplit("/", 1)[-1] in BIASES for n in s) and "dec/01/w3" in s and
            "dec/00/cknorm.beta" in s and "enc/01/qnorm.gamma" in s,
            "tensors: no biases, w3 per FFN, QK-norm on self- and cross-attention")
    return passed, failed


def main():
    return ref.run_main(__doc__, "torch llama", "PyTorch float64 cross-check of today's block "
                        "(rope, SwiGLU, bias-free linears)", self_test, run_cases,
                        "check the reference's conventions and faults without the C program")


if __name__ == "__main__":
    sys.exit(main())
