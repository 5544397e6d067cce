#!/usr/bin/python3
"""test_torch_schemes.py — the normalisation schemes (model.placement = peri | deepnorm | admin |
rezero | subln | mixln | b2t | normformer, model.norm = dyt, init.scheme = tfixup; docs/design.md §6c) against
PyTorch autograd in float64, for arch = lm and arch = encdec, the way tests/test_torch.py and
tests/test_torch_encdec.py check Post-LN and Pre-LN (whose helpers, dump readers and compare()
rules this file uses: loss ≤ 1e-12 relative, every gradient ≤ 1e-9 relative, tensors that are
zero in exact arithmetic judged on the scale of the whole gradient).

For each case: write a config, run `./stability dump --config CASE.ini --out CASE.h5 --perturb 0.3`
(--perturb moves every 1-D tensor, biases, γ, β, DyT's α, Admin's ω and ReZero's α included, off
its initial value), read the dump, rebuild the model from torch ops in float64 and compare.

The reference (each scheme's forward follows the scheme's own code; the comment at each branch
of `layer()` names the file and lines, and says where our decisions deviate from it):
- Sub-layer K of a layer (1-based): lm and encoder self-attention (1), FFN (2); decoder
  self-attention (1), cross-attention (2), FFN (3). u = the sub-layer's input, F its branch.
- post  x ← N_K(x + F(x))                  pre   x ← x + F(N_K(x))
- peri  x ← x + N_K_out(F(N_K(x)))         every sub-layer, cross-attention included
- deepnorm  x ← N_K(α·x + F(x)); lm α = (2L)^¼; encdec encoder α = 0.81·(N⁴M)^(1/16),
  decoder α = (3M)^¼
- admin  x ← N_K(x ⊙ ω_K + F(x)), ω_K a learnable d-vector (`omegaK`)
- rezero  x ← x + α_l·F(x), one learnable scalar per layer (`rezero_alpha`), norm = none
- subln  pre plus an inner norm on the concatenated heads before W_O (self-attention only) and
  on act(·) before W² (`normK_inner`, width d and d_ff)
- mixln  the first k = ⌊mix_ratio·L⌋ layers of each stack post, the rest pre
- b2t  lm/encoder: h = N_1(x + SA(x)); y = N_2(x + h + FFN(h)); decoder: h1 = N_1(x + SA(x)),
  h2 = N_2(h1 + CA(h1, mem)), y = N_3(x + h2 + FFN(h2))
- normformer  pre; in the lm's and the decoder's layers the self-attention's output (after W_O)
  scaled per head by a learnable H-vector (`head_scale1`), then normed (`norm1_out`), and a norm
  after the FFN's activation (`normK_inner`, width d_ff); cross-attention and the encoder's
  layers plain pre (fairseq's TransformerDecoderLayerBase; its encoder layer has none of them)
- norm = dyt: every norm site is γ ⊙ tanh(α·x) + β, α one learnable scalar per site
- init.scheme = tfixup: norm = none, post or pre (the same forward: x + F(x))
- Final norms (`final_norm`; encdec `enc_final_norm` → mem, `dec_final_norm`) when the resolved
  final_norm is on and norm ≠ none; auto means on for pre, peri, subln, mixln, normformer.

    /usr/bin/python3 tests/test_torch_schemes.py                # against `stability dump`
    /usr/bin/python3 tests/test_torch_schemes.py --self-test    # only the self-test (no C program; the run includes it)
    options: --binary PATH  --keep DIR  --case SUBSTRING  --verbose

The last line is `torch schemes: N passed, M failed`; exit status 1 if any case failed.
"""

import argparse
import configparser
import contextlib
import io
import math
import os
import re
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402  (the scaffolding the three cross-checks share)
import test_torch as tt  # noqa: E402  (the lm reference: its tensors, forward, dump reader)
import test_torch_encdec as ttd  # noqa: E402  (embedding with padding, batches, encdec reader)

REPO = ref.REPO

PLACEMENTS = ("post", "pre", "peri", "deepnorm", "admin", "rezero", "subln", "mixln", "b2t",
              "normformer")
NORMS = ("layernorm", "rmsnorm", "dyt", "none")
AUTO_FINAL_NORM_ON = ("pre", "peri", "subln", "mixln", "normformer")   # auto resolves to on
NEEDS_NORM = ("peri", "deepnorm", "admin", "subln", "mixln", "b2t", "normformer")
ATTN = ttd.ATTN

# Reductions of a scheme to another reference must agree to rounding (in practice bit for bit).
SAME_LOSS_TOL = 1e-14
SAME_GRAD_TOL = 1e-13


# ----------------------------------------------------------------------------------------------
# The resolved config.

def validate(m):
    """The combinations the project defines for the schemes; ValueError otherwise."""
    pl, norm = m["placement"], m["norm"]
    if pl in NEEDS_NORM and norm == "none":
        raise ValueError(f"placement = {pl} needs a norm (norm = none given)")
    if pl == "rezero" and norm != "none":
        raise ValueError(f"placement = rezero requires norm = none (norm = {norm} given)")
    if m.get("init_scheme") == "tfixup" and (norm != "none" or pl not in ("post", "pre")):
        raise ValueError("init.scheme = tfixup requires norm = none and placement post or pre")
    if pl == "mixln":
        r = m.get("mix_ratio")
        if r is None:
            raise ValueError("resolved config lacks model.mix_ratio")
        if not 0.0 <= r <= 1.0:
            raise ValueError(f"model.mix_ratio {r} outside [0, 1]")
    m["has_final_norm"] = m["final_norm"] and norm != "none"
    return m


def parse_config(text):
    return validate(ref.parse_config(text, placements=PLACEMENTS, norms=NORMS,
                                    auto_final_norm_on=AUTO_FINAL_NORM_ON))


def sublayers(stack):
    """[(K, branch)] of one layer of `stack` ('lm', 'enc', 'dec')."""
    if stack == "dec":
        return ((1, "self"), (2, "cross"), (3, "ffn"))
    return ((1, "self"), (2, "ffn"))


def stack_layers(m, stack):
    return m["dec_layers"] if stack == "dec" else m["layers"]


def stack_prefix(stack, l):
    return {"lm": "layers/", "enc": "enc/", "dec": "dec/"}[stack] + f"{l:02d}/"


def stacks(m):
    return ("lm",) if m["arch"] == "lm" else ("enc", "dec")


def mixln_k(m, stack, variant=frozenset()):
    """Mix-LN: the number of leading Post-LN layers of the stack, ⌊mix_ratio·L⌋ (double
    arithmetic, as C's floor(mix_ratio * L))."""
    x = m["mix_ratio"] * stack_layers(m, stack)
    if "mixln_round" in variant:                         # planted: rounding instead of floor
        return int(math.floor(x + 0.5))
    return int(math.floor(x))


def deepnorm_alpha(m, stack, variant=frozenset()):
    """DeepNorm's α of the stack (torchscale encoder.py 78-89, decoder.py 89-95; Clinic
    transformer_layer.py 111-112, 465-467)."""
    if "deepnorm_alpha_1" in variant:                    # reduction: α = 1 is Post-LN
        return 1.0
    if m["arch"] == "lm":
        return math.pow(2.0 * m["layers"], 0.25)
    N, M = m["layers"], m["dec_layers"]
    enc = 0.81 * math.pow(math.pow(N, 4) * M, 0.0625)
    dec = math.pow(3.0 * M, 0.25)
    if "deepnorm_alphas_swapped" in variant:             # planted: each stack the other's α
        enc, dec = dec, enc
    return enc if stack == "enc" else dec


# ----------------------------------------------------------------------------------------------
# The tensors a dump must hold.

def norm_parts(m):
    return {"layernorm": ("gamma", "beta"), "rmsnorm": ("gamma",),
            "dyt": ("gamma", "beta", "alpha"), "none": ()}[m["norm"]]


def final_norm_sites(m):
    return ("final_norm",) if m["arch"] == "lm" else ("enc_final_norm", "dec_final_norm")


def expected_shapes(m):
    """name -> shape of every tensor the dump must hold (design §5 plus the schemes' names)."""
    C, F_, V = m["d_model"], m["d_ff"], m["vocab"]
    pl = m["placement"]
    s = {"tok_embed": (V, C)}
    if not m["tie_embeddings"]:
        s["lm_head"] = (C, V)

    def site(name, width):
        for part in norm_parts(m):
            s[f"{name}.{part}"] = (1,) if part == "alpha" else (width,)

    for stack in stacks(m):
        for l in range(stack_layers(m, stack)):
            p = stack_prefix(stack, l)
            for K, kind in sublayers(stack):
                if kind == "ffn":
                    s.update({p + "w1": (C, F_), p + "b1": (F_,), p + "w2": (F_, C),
                              p + "b2": (C,)})
                else:
                    w = "c" if kind == "cross" else ""
                    for n in ATTN:
                        s[p + w + n] = (C, C) if n.startswith("w") else (C,)
            for K, kind in sublayers(stack):
                site(f"{p}norm{K}", C)
                if pl == "peri":
                    site(f"{p}norm{K}_out", C)
                if pl == "subln" and kind != "cross":
                    site(f"{p}norm{K}_inner", C if kind == "self" else F_)
                if pl == "admin":
                    s[f"{p}omega{K}"] = (C,)
                if pl == "normformer" and stack != "enc" and kind == "self":
                    site(f"{p}norm{K}_out", C)
                    s[f"{p}head_scale{K}"] = (m["heads"],)
                if pl == "normformer" and stack != "enc" and kind == "ffn":
                    site(f"{p}norm{K}_inner", F_)
            if pl == "rezero":
                s[p + "rezero_alpha"] = (1,)
    if m["has_final_norm"]:
        for name in final_norm_sites(m):
            site(name, C)
    return s


# ----------------------------------------------------------------------------------------------
# The reference.
#
# `variant` (empty in every real check) is a set of deviations for --self-test: planted bugs the
# comparison must reject, and reductions that must equal another reference:
#   peri_no_out, peri_out_identity      no output norm (bug; with the final norm = Pre-LN)
#   deepnorm_alpha_on_branch            N(x + α·F) instead of N(α·x + F)
#   deepnorm_alphas_swapped             encoder and decoder α exchanged
#   deepnorm_alpha_1                    α = 1 (reduction: Post-LN)
#   admin_divide, admin_omega_on_branch N(x + F/ω), N(x + ω ⊙ F)
#   rezero_per_sublayer                 α's gradient from the first sub-layer only (a copy of α
#                                       per sub-layer, the dump keeping one of them)
#   subln_cross_inner                   an inner norm (unit parameters) on cross-attention too
#   subln_no_inner                      no inner norms (bug; reduction: Pre-LN)
#   mixln_first_pre, mixln_round        first k layers Pre-LN; k = round(ratio·L)
#   b2t_bottom_from_h, b2t_dec_bottom_h1  the bottom path from the FFN's input h (decoder: h2)
#                                       or from h1 instead of the layer input x
#   b2t_no_bottom                       no bottom path (reduction: Post-LN)
#   dyt_alpha_outside                   γ ⊙ tanh(x)·α + β
#   normformer_no_head_scale            c_attn left out (bug)
#   normformer_heads_before_wo          the paper's HeadScale on each head before W_O instead of
#                                       fairseq's after it
#   normformer_in_encoder               NormFormer's operations in the encoder's layers too
#   normformer_cross                    attn_ln (unit parameters) on cross-attention too
#   normformer_plain                    c = 1, no attn_ln, no ffn_layernorm (reduction: Pre-LN)
#   no_final_norm                       the final norm(s) skipped

def norm(x, P, site, m, variant=frozenset(), unit=False):
    """The norm site `site` (its tensors site.gamma/.beta/.alpha) on the last axis of x; width
    from x (d, or d_ff for the FFN's inner norm). unit: γ = 1, β = 0, α = dyt_alpha without
    tensors (a planted extra norm)."""
    kind = m["norm"]
    if kind == "none":
        return x
    width = x.shape[-1]
    if unit:
        P = {site + ".gamma": torch.ones(width), site + ".beta": torch.zeros(width),
             site + ".alpha": torch.full((1,), m.get("dyt_alpha") or 0.5)}
    if kind == "dyt":
        # DyT (jiachenzhu/DyT@aab5dde dynamic_tanh.py 13-15: α = ones(1)·alpha_init, weight =
        # ones, bias = zeros; 17-23: x = tanh(α·x); x = x·weight + bias). convert_ln_to_dyt
        # (29-36) replaces every LayerNorm, the final one included: we replace every norm site,
        # the peri out, Sub-LN inner (width d_ff) and final ones too. Deviation: the repository's
        # LLaMA variant (other_tasks/LLaMA/fms_fsdp/models/llama.py 32-46) has no β and
        # position-dependent α inits; we follow the generic module (β present; α from the dump).
        g, b, a = P[site + ".gamma"], P[site + ".beta"], P[site + ".alpha"]
        if "dyt_alpha_outside" in variant:
            return torch.tanh(x) * a * g + b
        return torch.tanh(a * x) * g + b
    return ref.apply_norm(x, P, site, m)


def head_scale(y, c, m):
    """y (B,T,C) with each head's block of Dh = C/H columns times its c[h] (fairseq's c_attn:
    view(tgt_len, bsz, nh, head_dim), einsum("tbhd,h->tbhd"), reshape)."""
    B, T, C = y.shape
    H = m["heads"]
    return (y.reshape(B, T, H, C // H) * c[:, None]).reshape(B, T, C)


def make_branch(P, m, ctx, variant):
    """branch(p, K, kind) -> F(u): the sub-layer's function, with Sub-LN's inner norms."""
    def branch(p, K, kind):
        inner = None
        if m["placement"] == "subln" and "subln_no_inner" not in variant:
            # Sub-LN (microsoft/torchscale@4d1e0e8): component/multihead_attention.py 49-53
            # creates inner_attn_ln only `if subln and self.self_attention`, 166-169 applies it
            # to the concatenated heads before out_proj; feedforward_network.py 123 creates
            # ffn_layernorm (width ffn_dim), 134-139 applies it after the activation (and the
            # activation dropout) before fc2. The decoder's cross-attention is built with
            # self_attention=False (architecture/decoder.py 119-128): no inner norm there.
            if kind != "cross":
                inner = lambda z: norm(z, P, f"{p}norm{K}_inner", m, variant)  # noqa: E731
            elif "subln_cross_inner" in variant:
                inner = lambda z: norm(z, P, f"{p}norm{K}_inner", m, variant,  # noqa: E731
                                       unit=True)
        if (m["placement"] == "normformer" and kind == "ffn" and "normformer_plain" not in variant
                and (not p.startswith("enc/") or "normformer_in_encoder" in variant)):
            # NormFormer's ffn_layernorm (facebookresearch/fairseq@3d262bb
            # fairseq/modules/transformer_layer.py 310-314: LayerNorm(decoder.ffn_embed_dim)
            # under scale_fc; 505-510: after activation_fn(fc1(x)) and the activation dropout,
            # before fc2), in the decoder layer only (the encoder layer, 19-228, has none)
            inner = lambda z: norm(z, P, f"{p}norm{K}_inner", m, variant,  # noqa: E731
                                   unit=p.startswith("enc/"))
        if (m["placement"] == "normformer" and kind == "self" and "normformer_heads_before_wo"
                in variant and not p.startswith("enc/")):
            # planted: the paper's HeadScale, γ_i on head i before W_O
            inner = lambda z: head_scale(z, P[f"{p}head_scale{K}"], m)  # noqa: E731
        if kind == "self":
            return lambda u: ref.mha(u, P, p, m, key_pad=ctx["self_pad"], causal=ctx["causal"],
                                    ctx_hook=inner)
        if kind == "cross":
            return lambda u: ref.mha(u, P, p, m, kv=ctx["mem"], key_pad=ctx["src_pad"],
                                    causal=False, w="c", ctx_hook=inner)
        return lambda u: ref.ffn(u, P, p, m, hidden_hook=inner)
    return branch


def layer(P, m, stack, l, x, branch, variant=frozenset()):
    """Layer l (0-based) of `stack`: x_l -> x_{l+1}."""
    p = stack_prefix(stack, l)
    subs = sublayers(stack)
    pl = m["placement"]

    def N(z, K, suffix=""):
        return norm(z, P, f"{p}norm{K}{suffix}", m, variant)

    if pl == "mixln":
        # Mix-LN (pixeli99/MixLN@ff45826 peft_pretraining/modeling_llama.py, NORM_TYPE=post_pre):
        # 268 reads k (POST_NUM), 325-333 builds the norms, 565-583 layer_index < k: Post-LN
        # (h = N(x + Attn(x)); y = N(h + MLP(h))), 584-601 otherwise Pre-LN; the final norm
        # always (929, 1077). Deviations (our decisions): k = ⌊mix_ratio·L⌋ instead of the
        # absolute POST_NUM (default 1); the configured norm instead of LLaMA's RMSNorm; the
        # repository is decoder-only, so an encdec applies the rule per stack, each with its k.
        post = l < mixln_k(m, stack, variant)
        if "mixln_first_pre" in variant:
            post = not post
        pl = "post" if post else "pre"

    if pl == "b2t":
        # B2T (takase/b2t_connection@c8e2ad4 fairseq/modules/transformer_layer.py): encoder
        # 103-105 keeps residual_bottom = x (the layer input), 124-127 h = LN(x + SA(x)),
        # 132-143 x = residual + FFN; x = residual_bottom + x; LN; decoder 277-279, 326-329
        # (self), 356-359 (cross), 364-375 (FFN and the bottom add, same order). The lm is the
        # decoder layer without encoder_attn (models/transformer_lm.py). Every layer is built
        # alike (models/transformer.py 450-453). No final norm (Post-LN base: transformer.py
        # 456-459, 755-760; transformer_lm.py 211-212). The L^−½ weight rescaling
        # (rescaling_init, transformer_layer.py 401-405) is initialisation only: values come
        # from the dump.
        x_in, outs = x, []
        for K, kind in subs[:-1]:
            x = N(x + branch(p, K, kind)(x), K)
            outs.append(x)
        K, kind = subs[-1]
        h = x
        top = h + branch(p, K, kind)(h)
        if "b2t_no_bottom" in variant:
            return N(top, K)
        bottom = x_in
        if "b2t_bottom_from_h" in variant:
            bottom = h
        elif "b2t_dec_bottom_h1" in variant and stack == "dec":
            bottom = outs[0]
        return N(bottom + top, K)

    for K, kind in subs:
        F = branch(p, K, kind)
        if pl == "post":
            # Post-LN and Pre-LN: docs/design.md §1, §6b (tests/test_torch(_encdec).py). With
            # norm = none both are x + F(x): init.scheme = tfixup's forward (layer6ai-labs/
            # T-Fixup@b17e166 fairseq/modules/transformer_layer.py 72-75 builds no LayerNorm
            # under --dont-use-layernorm, 107-137 encoder x = residual + F, 263-352 decoder;
            # no final norm, fairseq/models/transformer.py 412-415, 673). Its scaled
            # initialisation (fixup_initialization, 31-49) only sets values: from the dump.
            x = N(x + F(x), K)
        elif pl in ("pre", "subln"):
            # Sub-LN is Pre-LN (torchscale architecture/config.py 78-80, 155-157 set
            # encoder_normalize_before; decoder_normalize_before defaults True, 93, 176;
            # encoder.py 124-161, decoder.py 145-205) with a final LN (encoder.py 218-221,
            # decoder.py 262-265), inner norms inside F (make_branch). Deviation: torchscale's
            # norms are always LayerNorm; ours are the configured kind at every site.
            x = x + F(N(x, K))
        elif pl == "peri":
            # Peri-LN = Sandwich-LN, Gemma2's decoder layer (huggingface/transformers@006e869
            # src/transformers/models/gemma2/modeling_gemma2.py, class Gemma2DecoderLayer:
            # __init__ builds input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
            # post_feedforward_layernorm; forward: h = residual + post_attention_layernorm(
            # self_attn(input_layernorm(x))), then the same around mlp; Gemma2Model.__init__ adds
            # self.norm after the last layer; read through the code index, which gives no line
            # numbers). The same topology with line numbers: MixLN's NORM_TYPE=sandwich,
            # peft_pretraining/modeling_llama.py 300-304, 466-485.
            # Deviations (decisions): the configured norm with γ (Gemma2RMSNorm is x̂·(1 + w),
            # w = 0 at init, eps 1e-6); cross-attention has no reference (decoder-only) and is
            # wrapped the same way.
            y = F(N(x, K))
            if "peri_no_out" not in variant and "peri_out_identity" not in variant:
                y = N(y, K, "_out")
            x = x + y
        elif pl == "deepnorm":
            # DeepNorm, Post-LN with the skip scaled: torchscale architecture/encoder.py 113-114
            # and decoder.py 130-131 (residual * alpha + x), applied at encoder.py 141-143,
            # 159-161 and decoder.py 165-167, 187-189, 203-205 with normalize_before False;
            # Clinic (LiyuanLucasLiu/Transformer-Clinic@70f72b7) fairseq/fairseq/modules/
            # transformer_layer.py 197-198, 262-263 (encoder), 572-573, 621-622, 655-656
            # (decoder). No final norm. Deviation from torchscale: its lm (DecoderConfig
            # postprocessing, architecture/config.py 152-154, sets encoder_normalize_before, not
            # decoder_normalize_before, and examples/fairseq/models/language_modeling.py 380
            # forces decoder_normalize_before = True) and its encdec decoder
            # (EncoderDecoderConfig, config.py 176, 237-239) are Pre-LN with a final LN
            # (decoder.py 262-265) unless decoder_normalize_before = False is passed, as its own
            # tests do (tests/test_decoder.py 19, tests/test_encoder_decoder.py 20-25); we
            # implement the paper's Post-LN, as Clinic does.
            a = deepnorm_alpha(m, stack, variant)
            if "deepnorm_alpha_on_branch" in variant:
                x = N(x + a * F(x), K)
            else:
                x = N(a * x + F(x), K)
        elif pl == "admin":
            # Admin (Clinic fairseq/fairseq/modules/transformer_layer.py): 196 x0 = x +
            # residual * attention_ratio_change, 261 (FFN), 571, 620, 654 (decoder self, cross,
            # FFN), each then LayerNorm (Post-LN; 47 asserts not normalize_before); ω a learnable
            # d-vector per sub-layer, nn.Parameter(torch.ones(embed_dim)) (60-61, 382-384); no
            # final norm (fairseq/fairseq/models/transformer.py 312-315). The lm has no reference
            # (Clinic is enc-dec): the encoder layer with the lm's mask. The profiled ω values
            # are initialisation: they come from the dump.
            w = P[f"{p}omega{K}"]
            if "admin_divide" in variant:
                x = N(x + F(x) / w, K)
            elif "admin_omega_on_branch" in variant:
                x = N(x + w * F(x), K)
            else:
                x = N(x * w + F(x), K)
        elif pl == "normformer":
            # NormFormer (Shleifer et al. 2021; facebookresearch/fairseq@3d262bb
            # fairseq/modules/transformer_layer.py, TransformerDecoderLayerBase): Pre-LN
            # (normalize_before, 414-415, 503-504) with, under scale_attn and scale_heads, 277-289
            # attn_ln = LayerNorm(embed_dim) and c_attn = ones(num_heads); 460-467 the
            # self-attention's output (after its out_proj, multihead_attention.py 773) viewed as
            # (T, B, heads, head_dim) times c_attn, then attn_ln, then dropout and the residual;
            # the encoder attention (472-501) has neither; ffn_layernorm in make_branch. The lm
            # is the decoder layer without encoder attention (transformer_lm); the encoder layer
            # (19-228) has none of NormFormer's operations: plain Pre-LN. Not followed:
            # scale_resids (w_resid, 315-323, 512-513; the paper leaves it out of NormFormer
            # proper); the configured norm kind at every site (fairseq: LayerNorm).
            y = F(N(x, K))
            extras = ((stack != "enc" or "normformer_in_encoder" in variant)
                      and "normformer_plain" not in variant)
            if kind == "self" and extras:
                planted = stack == "enc"     # normformer_in_encoder: unit parameters, no tensors
                if not planted and ("normformer_no_head_scale" not in variant
                                    and "normformer_heads_before_wo" not in variant):
                    y = head_scale(y, P[f"{p}head_scale{K}"], m)
                y = norm(y, P, f"{p}norm{K}_out", m, variant, unit=planted)
            elif kind == "cross" and "normformer_cross" in variant:
                y = norm(y, P, f"{p}norm{K}_out", m, variant, unit=True)
            x = x + y
        elif pl == "rezero":
            # ReZero (majumderb/rezero@e2c94a8 rezero/transformer/rztx.py): one resweight per
            # layer, nn.Parameter(torch.Tensor([0])) (47, 115), shared by its sub-layers:
            # encoder 74-75, 80-81 (src + dropout(F·α)), decoder 139, 142, 148 (tgt +
            # dropout(F)·α); no norm (the README: leave `norm` None). The lm is the encoder
            # layer with the lm's mask.
            a = P[p + "rezero_alpha"]
            if "rezero_per_sublayer" in variant and K > 1:
                a = a.detach()
            x = x + F(x) * a
        else:
            raise ValueError(f"placement {pl!r} not modelled")
    return x


def run_stack(P, m, stack, x, ctx, variant=frozenset()):
    branch = make_branch(P, m, ctx, variant)
    for l in range(stack_layers(m, stack)):
        x = layer(P, m, stack, l, x, branch, variant)
    return x


def final(x, P, site, m, variant):
    if m["has_final_norm"] and "no_final_norm" not in variant:
        return norm(x, P, site, m, variant)
    return x


def lm_embed(P, m, tokens):
    C = m["d_model"]
    return P["tok_embed"][tokens] * math.sqrt(C) + ref.positional_encoding(tokens.shape[1], C)


def lm_loss(P, m, tokens, targets, variant=frozenset()):
    """The lm's mean loss (tokens, targets: int64 (B,T))."""
    x = run_stack(P, m, "lm", lm_embed(P, m, tokens), {"self_pad": None, "causal": m["causal"]},
                  variant)
    return ref.output_loss(P, m, final(x, P, "final_norm", m, variant), targets)


def encode(P, m, src, variant=frozenset()):
    """mem: the encoder's output after enc_final_norm (when the model has final norms)."""
    x = run_stack(P, m, "enc", ttd.embed(P, m, src), {"self_pad": src < 0, "causal": False},
                  variant)
    return final(x, P, "enc_final_norm", m, variant)


def encdec_loss(P, m, src, tokens, targets, variant=frozenset()):
    mem = encode(P, m, src, variant)
    y = run_stack(P, m, "dec", ttd.embed(P, m, tokens),
                  {"self_pad": None, "causal": True, "mem": mem, "src_pad": src < 0}, variant)
    return ref.output_loss(P, m, final(y, P, "dec_final_norm", m, variant), targets)


def loss_and_grads(params, m, batch, variant=frozenset()):
    """(loss, name -> gradient); batch = (tokens, targets) for lm, (src, tokens, targets)."""
    if m["arch"] == "lm":
        tokens, targets = batch
        fn = lambda P, m_, tok, tgt: lm_loss(P, m_, tok, tgt, variant)  # noqa: E731
    else:
        src, tokens, targets = batch
        src = torch.from_numpy(np.asarray(src, dtype=np.int64))
        fn = lambda P, m_, tok, tgt: encdec_loss(P, m_, src, tok, tgt, variant)  # noqa: E731
    return tt.torch_loss_and_grads(params, m, tokens, targets, loss_fn=fn)


# ----------------------------------------------------------------------------------------------
# Reading a dump.

def check_dump(path):
    """test_torch(_encdec).check_dump with this file's config reader, tensors and reference."""
    with h5py.File(path, "r") as f:
        text = ref.attr_text(f.attrs["config"]) if "config" in f.attrs else None
    if text is None:
        res = ref.new_res()
        res["problems"].append("root attribute 'config' missing")
        return res
    m = parse_config(text)
    if m["arch"] == "lm":
        return tt.check_dump(path, parse=parse_config, shapes_fn=expected_shapes,
                             loss_fn=lm_loss)
    return ttd.check_dump(
        path, parse=parse_config, shapes_fn=expected_shapes,
        grads_fn=lambda params, m_, src, tok, tgt: loss_and_grads(params, m_, (src, tok, tgt)))


# ----------------------------------------------------------------------------------------------
# The cases.

BASE_LM = dict(tt.BASE)          # L = 3, d = 32, 4 heads, d_ff = 48, V = 23, T = 7, batch 3
BASE_ED = dict(ttd.BASE)         # 2 + 2 layers, same sizes, S = T = 7, data.min_len = 4


def make_cases():
    """[(name, arch, settings, opts)]; opts: mixln_kinds (every stack has Post-LN and Pre-LN
    layers; encdec: the two stacks' k differ), heavy_padding (ttd.padding_problems)."""
    cases = []
    act = ["relu", "gelu"]

    def add(name, arch, placement, norm, opts=None, **kw):
        d = {"model.placement": placement, "model.norm": norm,
             "model.activation": act[len(cases) % 2]}
        if arch == "lm":
            d["model.causal"] = "true" if (len(cases) // 2) % 2 == 0 else "false"
        d.update({k.replace("__", "."): v for k, v in kw.items()})
        cases.append((name, arch, d, opts or {}))

    for arch in ("lm", "encdec"):
        for placement in ("peri", "deepnorm", "admin", "subln", "mixln", "b2t", "normformer"):
            for norm in ("layernorm", "rmsnorm", "dyt"):
                kw, opts = {}, {}
                if placement == "mixln":          # k = 2 of 4 (lm); 2 of 4 and 1 of 3 (encdec)
                    kw = {"model__layers": 4, "model__mix_ratio": 0.5}
                    if arch == "encdec":
                        kw["model__dec_layers"] = 3
                    opts = {"mixln_kinds": True}
                if placement == "deepnorm" and arch == "encdec":
                    kw = {"model__layers": 3, "model__dec_layers": 2}    # N ≠ M: α differ
                add(f"{arch}-{placement}-{norm}", arch, placement, norm, opts, **kw)
        # post and pre with layernorm / rmsnorm / none are tests/test_torch(_encdec).py's cases
        add(f"{arch}-post-dyt", arch, "post", "dyt")
        add(f"{arch}-pre-dyt", arch, "pre", "dyt")
        add(f"{arch}-rezero-relu", arch, "rezero", "none")
        add(f"{arch}-rezero-gelu", arch, "rezero", "none")
        add(f"{arch}-tfixup-post", arch, "post", "none", init__scheme="tfixup")
        add(f"{arch}-tfixup-pre", arch, "pre", "none", init__scheme="tfixup")
    add("lm-peri-layernorm-untied", "lm", "peri", "layernorm", model__tie_embeddings="false")
    add("lm-b2t-dyt-untied", "lm", "b2t", "dyt", model__tie_embeddings="false")
    add("encdec-subln-rmsnorm-untied", "encdec", "subln", "rmsnorm",
        model__tie_embeddings="false")
    add("lm-mixln-default-ratio", "lm", "mixln", "rmsnorm", {"mixln_kinds": True},
        model__layers=4)                                                  # k = ⌊0.25·4⌋ = 1
    add("encdec-mixln-k1-k0", "encdec", "mixln", "layernorm", model__layers=4,
        model__dec_layers=2)                               # k = 1 and 0: an all-Pre-LN decoder
    add("lm-subln-dyt-alpha0.8", "lm", "subln", "dyt", model__dyt_alpha=0.8)
    add("encdec-admin-smoothing", "encdec", "admin", "layernorm", data__label_smoothing=0.1)
    add("encdec-deepnorm-enc2-dec3", "encdec", "deepnorm", "rmsnorm", model__layers=2,
        model__dec_layers=3)
    add("encdec-b2t-heavy-padding", "encdec", "b2t", "layernorm", {"heavy_padding": True},
        data__task="random", model__src_len=9, model__seq_len=9, data__min_len=1,
        data__batch=4)
    add("encdec-peri-dyt-src5-tgt9", "encdec", "peri", "dyt", model__src_len=5,
        model__seq_len=9)
    add("lm-normformer-layernorm-untied-2heads", "lm", "normformer", "layernorm",
        model__tie_embeddings="false", model__heads=2)
    add("encdec-normformer-rmsnorm-8heads-smoothing", "encdec", "normformer", "rmsnorm",
        model__heads=8, data__label_smoothing=0.1)
    for i, (_, _, d, _) in enumerate(cases):
        d["init.seed"] = 3001 + 17 * i          # a different initialisation and batch per case
    return cases


def case_problems(m, settings, opts):
    """What the resolved config says against the case's intent: final_norm = auto resolved as
    the scheme says, Mix-LN's k giving both kinds of layer."""
    out = []
    if "model.final_norm" not in settings:
        want = m["placement"] in AUTO_FINAL_NORM_ON and m["norm"] != "none"   # no norm: none
        if m["final_norm"] != want:
            out.append(f"final_norm = auto resolved to {'on' if m['final_norm'] else 'off'}, "
                       f"placement = {m['placement']} means {'on' if want else 'off'}")
    if opts.get("mixln_kinds"):
        ks = {st: (mixln_k(m, st), stack_layers(m, st)) for st in stacks(m)}
        if any(not 0 < k < L for k, L in ks.values()):
            out.append(f"mixln: k (post layers) of {ks} does not give both kinds in every stack")
        if m["arch"] == "encdec" and ks["enc"][0] == ks["dec"][0]:
            out.append(f"mixln: both stacks have k = {ks['enc'][0]} "
                       "(the case wants them to differ)")
    return out


def report(name, res, verbose):
    ref.report(name, res, verbose)
    if verbose and "pad" in res:
        p = res["pad"]
        print(f"         padding: source lengths {p['src_lens']} ({p['src_pad']:.0%}), "
              f"decoder {p['tgt_lens']} ({p['tgt_pad']:.0%})")


def run_cases(args, workdir, dump=None):
    """Every case (or those matching --case) through `stability dump` and check_dump
    (torch_ref.run_cases); dump(ini, out) -> (exit status, output) stands in for the C program
    when given (--self-test). Each case's resolved config is held against its intent
    (case_problems), and an encdec case's padding as test_torch_encdec does."""
    seen = {"padded": False, "compared": 0}

    def intent(name, settings, opts, res):
        if "model" not in res:
            return
        res["problems"].extend(case_problems(res["model"], settings, opts))
        if res["model"]["arch"] == "encdec" and "pad" in res:
            seen["compared"] += 1
            pad = res["pad"]
            seen["padded"] |= (len(set(pad["src_lens"])) > 1 and len(set(pad["tgt_lens"])) > 1
                               and pad["src_pad"] > 0 and pad["tgt_pad"] > 0)
            if opts.get("heavy_padding"):
                res["problems"].extend(ttd.padding_problems(pad))
    cases = [(name, settings, BASE_LM if arch == "lm" else BASE_ED, opts)
             for name, arch, settings, opts in make_cases()]
    passed, failed = ref.run_cases(args, workdir, cases, lambda path, opts: check_dump(path),
                                   "test_torch_schemes", dump=dump, after=intent,
                                   report_fn=report)
    if not args.case and seen["compared"] and not seen["padded"]:
        print("FAIL padding                   no encdec case's batch had source and decoder "
              "padding of different lengths per row: the padding masks went untested")
        failed += 1
    return passed, failed


# ----------------------------------------------------------------------------------------------
# --self-test: the reference, the reader and the comparison, without the C program.

def make_model(arch="lm", **kw):
    """A parsed-config dict (parse_config's keys) for the self-test; final_norm = the
    placement's auto value unless given."""
    if arch == "encdec":
        m = ttd.make_model()
    else:
        m = {"arch": "lm", "layers": 3, "d_model": 12, "heads": 3, "d_ff": 10, "vocab": 9,
             "seq_len": 5, "batch": 2, "norm_eps": 1e-5, "dropout": 0.0, "task": "copy",
             "label_smoothing": 0.0, "causal": True, "placement": "post", "norm": "layernorm",
             "activation": "relu", "tie_embeddings": True}
    m.update(mix_ratio=0.25, dyt_alpha=0.5, init_scheme="xavier_normal")
    m.update(kw)
    if "final_norm" not in kw:   # as the C writer resolves auto: never with norm = none
        m["final_norm"] = m["placement"] in AUTO_FINAL_NORM_ON and m["norm"] != "none"
    return validate(m)


def resolved_ini(m, seed):
    """INI text as the C writer would produce it (test_torch(_encdec)'s, plus the schemes' keys)."""
    text = (ttd.resolved_ini if m["arch"] == "encdec" else tt.resolved_ini)(m, seed)
    text = text.replace("[model]\n", f"[model]\nmix_ratio = {m['mix_ratio']!r}\n"
                                     f"dyt_alpha = {m['dyt_alpha']!r}\n", 1)
    return text.replace("scheme = xavier_normal\n", f"scheme = {m['init_scheme']}\n", 1)


def random_params(shapes, m, rng):
    """test_torch.random_params, with the schemes' tensors near their --perturb 0.3 values: DyT
    α ≈ 0.5 ± 0.3, ω ≈ 1 ± 0.3, ReZero α ≈ 0 ± 0.3, NormFormer's head scale ≈ 1 ± 0.3."""
    params = tt.random_params(shapes, m, rng)
    for name, shape in shapes.items():
        last = name.rsplit("/", 1)[-1]
        if last.endswith(".alpha"):
            params[name] = 0.5 + 0.3 * rng.standard_normal(shape)
        elif re.fullmatch(r"omega\d", last):
            params[name] = 1.0 + 0.3 * rng.standard_normal(shape)
        elif last == "rezero_alpha":
            params[name] = 0.3 * rng.standard_normal(shape)
        elif re.fullmatch(r"head_scale\d", last):
            params[name] = 1.0 + 0.3 * rng.standard_normal(shape)
    return params


def make_batch(rng, m):
    if m["arch"] == "encdec":
        return ttd.make_batch(rng, m)
    B, T, V = m["batch"], m["seq_len"], m["vocab"]
    tokens = rng.integers(0, V, size=(B, T)).astype(np.int32)
    targets = rng.integers(0, V, size=(B, T)).astype(np.int32)
    targets[:, : T // 2] = -1                   # ignored positions, as the copy task has
    return tokens, targets


def write_fake_dump(path, m, seed, bytes_attr=False, mutate=None, variant=frozenset(),
                    batch=None):
    """A dump in the C layout with the reference's loss and gradients (of the model with
    `variant`, then passed through mutate(params, grads, loss) -> loss, when given)."""
    rng = np.random.default_rng(seed)
    params = random_params(expected_shapes(m), m, rng)
    batch = batch if batch is not None else make_batch(rng, m)
    loss, grads = loss_and_grads(params, m, batch, variant)
    if mutate:
        loss = mutate(params, grads, loss)
    names = ("tokens", "targets") if m["arch"] == "lm" else ("src_tokens", "tokens", "targets")
    ref.write_dump(path, resolved_ini(m, seed), zip(names, batch), loss, params, grads, bytes_attr)
    return params, batch


def stub_dump(ini, out):
    """`stability dump --config INI --out OUT` answered by the reference (the self-test of the run
    mode): the INI's settings with the C defaults (final_norm auto per placement, mix_ratio 0.25,
    dyt_alpha 0.5), reference-made values and gradients, padded encdec batches. -> (0, "")"""
    cp = configparser.ConfigParser(interpolation=None)
    cp.read(ini)

    def get(section, key, default):
        return cp.get(section, key, fallback=str(default)).strip().lower()
    arch = get("model", "arch", "lm")
    kw = {k: int(get("model", k, 0)) for k in ("layers", "d_model", "heads", "d_ff", "vocab",
                                               "seq_len")}
    if arch == "encdec":
        kw["dec_layers"] = int(get("model", "dec_layers", 0)) or kw["layers"]
        kw["src_len"] = int(get("model", "src_len", 0)) or kw["seq_len"]
    else:
        kw["causal"] = ref.parse_bool(get("model", "causal", "true"), "causal")
    kw.update(placement=get("model", "placement", "post"), norm=get("model", "norm", "layernorm"),
              activation=get("model", "activation", "relu"),
              tie_embeddings=ref.parse_bool(get("model", "tie_embeddings", "true"), "tie"),
              mix_ratio=float(get("model", "mix_ratio", 0.25)),
              dyt_alpha=float(get("model", "dyt_alpha", 0.5)),
              init_scheme=get("init", "scheme", "xavier_normal"),
              batch=int(get("data", "batch", 3)), task=get("data", "task", "random"),
              label_smoothing=float(get("data", "label_smoothing", 0)))
    fn = get("model", "final_norm", "auto")
    if fn != "auto":
        kw["final_norm"] = ref.parse_bool(fn, "final_norm")
    m = make_model(arch, **kw)
    seed = int(get("init", "seed", 1))
    rng = np.random.default_rng(seed)
    batch = None
    if arch == "encdec":
        lo = int(get("data", "min_len", 1))
        S, T, B = m["src_len"], m["seq_len"], m["batch"]
        lo = max(1, min(lo, S, T))                             # lengths differ by row
        src_lens = ([S, max(lo, S // 2), lo] + [S] * B)[:B]
        tgt_lens = ([max(lo, T // 2), T, lo] + [T] * B)[:B]
        batch = ttd.make_batch(rng, m, src_lens, tgt_lens)
    write_fake_dump(out, m, seed, batch=batch)
    return 0, ""


def self_test(args, workdir):
    counts = [0, 0]

    def verdict(good, name, detail):
        print(f"{'ok  ' if good else 'FAIL'} self-test {name:52s}: {detail}")
        counts[0 if good else 1] += 1

    def expect(name, ok_wanted, path):
        try:
            res = check_dump(path)
        except (ValueError, KeyError) as e:
            res = ref.new_res()
            res["problems"].append(f"{type(e).__name__}: {e}")
        what = "passes" if ok_wanted else "rejected"
        detail = (f"worst {res['worst'][0]} err {res['worst'][1]:.1e}" if res["ok"]
                  else (res["problems"][0] if res["problems"] else "?"))
        verdict(res["ok"] == ok_wanted, f"{name} ({what})", detail[:150])
        if args.verbose:
            for p in res["problems"][1:]:
                print(f"       {p}")

    def dump(tag, m, seed, **kw):
        path = os.path.join(workdir, f"{tag}.h5")
        write_fake_dump(path, m, seed, **kw)
        return path

    # 1. Dumps made by the reference pass, for every scheme, norm and architecture.
    models = {}
    i = 0
    for arch in ("lm", "encdec"):
        for placement in ("peri", "deepnorm", "admin", "subln", "mixln", "b2t", "normformer"):
            for nrm in ("layernorm", "rmsnorm", "dyt"):
                kw = dict(placement=placement, norm=nrm, activation=("relu", "gelu")[i % 2],
                          tie_embeddings=i % 5 != 3)
                if placement == "mixln":
                    kw.update(layers=4, mix_ratio=0.5)
                    if arch == "encdec":
                        kw["dec_layers"] = 3
                if placement == "deepnorm" and arch == "encdec":
                    kw.update(layers=3, dec_layers=2)
                if arch == "lm":
                    kw["causal"] = i % 4 < 2
                models[(arch, placement, nrm)] = make_model(arch, **kw)
                i += 1
        for pl in ("post", "pre"):
            models[(arch, pl, "dyt")] = make_model(arch, placement=pl, norm="dyt",
                                                   activation=("relu", "gelu")[pl == "pre"])
        models[(arch, "rezero", "none")] = make_model(arch, placement="rezero", norm="none")
        for pl in ("post", "pre"):
            models[(arch, "tfixup-" + pl, "none")] = make_model(
                arch, placement=pl, norm="none", init_scheme="tfixup", activation="gelu")
    for j, ((arch, placement, nrm), m) in enumerate(models.items()):
        name = (f"{arch} {placement} {nrm} {m['activation']}"
                f"{' untied' if not m['tie_embeddings'] else ''}"
                f"{' final' if m['has_final_norm'] else ''}")
        expect(name, True, dump(f"self{j}", m, 100 + j, bytes_attr=bool(j % 2)))

    # Rounding-level differences (relative 1e-13 per element) pass.
    def jitter(params, grads, loss):
        r = np.random.default_rng(7)
        for k in grads:
            grads[k] = grads[k] * (1 + 1e-13 * r.standard_normal(grads[k].shape))
        return loss * (1 + 1e-15)
    for j, key in enumerate((("lm", "subln", "dyt"), ("encdec", "peri", "layernorm"))):
        expect(f"{' '.join(key)}: rounding-level jitter", True,
               dump(f"jitter{j}", models[key], 200 + j, mutate=jitter))

    # 2. Planted bugs, each of which must be caught by the same comparison.
    def bump(name, rel):
        def f(params, grads, loss):
            g = grads[name]
            g.flat[g.size // 2] += rel * max(np.max(np.abs(g)), 1e-300)
            return loss
        return f

    def swap(a, b, group="params"):
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

    def add_tensor(name, shape):
        def f(params, grads, loss):
            params[name], grads[name] = np.ones(shape), np.zeros(shape)
            return loss
        return f

    def per_sublayer_alpha(params, grads, loss):     # ReZero α stored once per sub-layer
        for n in [n for n in params if n.endswith("rezero_alpha")]:
            params[n] = np.repeat(params[n], 2)
            grads[n] = np.repeat(grads[n], 2)
        return loss

    M = models
    mix3 = make_model("lm", placement="mixln", norm="layernorm", layers=3, mix_ratio=0.5)
    bad = [
        ("lm peri without the output norm", M["lm", "peri", "layernorm"], {"peri_no_out"}),
        ("encdec peri without the output norm", M["encdec", "peri", "rmsnorm"], {"peri_no_out"}),
        ("lm deepnorm α on the branch, not the skip", M["lm", "deepnorm", "layernorm"],
         {"deepnorm_alpha_on_branch"}),
        ("encdec deepnorm α on the branch", M["encdec", "deepnorm", "dyt"],
         {"deepnorm_alpha_on_branch"}),
        ("encdec deepnorm encoder/decoder α swapped", M["encdec", "deepnorm", "layernorm"],
         {"deepnorm_alphas_swapped"}),
        ("lm admin x + F/ω", M["lm", "admin", "layernorm"], {"admin_divide"}),
        ("encdec admin x + F/ω", M["encdec", "admin", "rmsnorm"], {"admin_divide"}),
        ("lm admin x + ω⊙F", M["lm", "admin", "dyt"], {"admin_omega_on_branch"}),
        ("lm rezero α per sub-layer", M["lm", "rezero", "none"], {"rezero_per_sublayer"}),
        ("encdec rezero α per sub-layer", M["encdec", "rezero", "none"],
         {"rezero_per_sublayer"}),
        ("encdec subln inner norm on cross-attention too", M["encdec", "subln", "layernorm"],
         {"subln_cross_inner"}),
        ("encdec subln inner norm on cross-attention (dyt)", M["encdec", "subln", "dyt"],
         {"subln_cross_inner"}),
        ("lm subln without inner norms", M["lm", "subln", "rmsnorm"], {"subln_no_inner"}),
        ("lm mixln first k layers Pre-LN", M["lm", "mixln", "layernorm"], {"mixln_first_pre"}),
        ("encdec mixln first k layers Pre-LN", M["encdec", "mixln", "dyt"], {"mixln_first_pre"}),
        ("lm mixln k = round(ratio·L) (L = 3, ratio 0.5)", mix3, {"mixln_round"}),
        ("lm mixln without its final norm", M["lm", "mixln", "rmsnorm"], {"no_final_norm"}),
        ("lm b2t bottom path from h instead of x", M["lm", "b2t", "layernorm"],
         {"b2t_bottom_from_h"}),
        ("encdec b2t bottom path from h2 instead of x", M["encdec", "b2t", "rmsnorm"],
         {"b2t_bottom_from_h"}),
        ("encdec b2t bottom path from h1 instead of x", M["encdec", "b2t", "layernorm"],
         {"b2t_dec_bottom_h1"}),
        ("lm b2t without the bottom path", M["lm", "b2t", "dyt"], {"b2t_no_bottom"}),
        ("lm dyt tanh(x)·α", M["lm", "peri", "dyt"], {"dyt_alpha_outside"}),
        ("encdec dyt tanh(x)·α", M["encdec", "subln", "dyt"], {"dyt_alpha_outside"}),
        ("encdec peri without final norms", M["encdec", "peri", "layernorm"], {"no_final_norm"}),
        ("lm post dyt tanh(x)·α", M["lm", "post", "dyt"], {"dyt_alpha_outside"}),
        ("encdec pre dyt without final norms", M["encdec", "pre", "dyt"], {"no_final_norm"}),
        ("lm normformer without the head scale", M["lm", "normformer", "layernorm"],
         {"normformer_no_head_scale"}),
        ("encdec normformer without the head scale", M["encdec", "normformer", "rmsnorm"],
         {"normformer_no_head_scale"}),
        ("lm normformer heads scaled before W_O (the paper's)", M["lm", "normformer", "dyt"],
         {"normformer_heads_before_wo"}),
        ("encdec normformer in the encoder too", M["encdec", "normformer", "layernorm"],
         {"normformer_in_encoder"}),
        ("encdec normformer attn_ln on cross-attention too", M["encdec", "normformer", "dyt"],
         {"normformer_cross"}),
    ]
    for j, (name, m, variant) in enumerate(bad):
        expect(name, False, dump(f"bad{j}", m, 300 + j, bytes_attr=bool(j % 2), variant=variant))

    mutations = [
        ("grad layers/01/norm1.alpha off by 1e-8", M["lm", "peri", "dyt"],
         bump("layers/01/norm1.alpha", 1e-8)),
        ("grad layers/00/norm2_out.beta off by 1e-8", M["lm", "peri", "dyt"],
         bump("layers/00/norm2_out.beta", 1e-8)),
        ("grad final_norm.alpha off by 1e-8", M["lm", "subln", "dyt"],
         bump("final_norm.alpha", 1e-8)),
        ("grad dec/01/norm3_inner.beta (d_ff) off by 1e-8", M["encdec", "subln", "layernorm"],
         bump("dec/01/norm3_inner.beta", 1e-8)),
        ("grad enc/00/omega2 off by 1e-8", M["encdec", "admin", "layernorm"],
         bump("enc/00/omega2", 1e-8)),
        ("grad dec/00/rezero_alpha off by 1e-8", M["encdec", "rezero", "none"],
         bump("dec/00/rezero_alpha", 1e-8)),
        ("grad enc_final_norm.alpha off by 1e-8", M["encdec", "mixln", "dyt"],
         bump("enc_final_norm.alpha", 1e-8)),
        ("params norm1 / norm1_out gamma swapped", M["lm", "peri", "layernorm"],
         swap("layers/01/norm1.gamma", "layers/01/norm1_out.gamma")),
        ("params omega1 / omega2 swapped", M["lm", "admin", "rmsnorm"],
         swap("layers/00/omega1", "layers/00/omega2")),
        ("grads norm1_inner (d) / norm3_inner (d_ff) swapped", M["encdec", "subln", "layernorm"],
         swap("dec/00/norm1_inner.gamma", "dec/00/norm3_inner.gamma", "grads")),
        ("norm1_inner tensors missing", M["lm", "subln", "layernorm"],
         drop("layers/00/norm1_inner.gamma", "layers/00/norm1_inner.beta")),
        ("extra tensor dec/00/norm2_inner.gamma (cross)", M["encdec", "subln", "rmsnorm"],
         add_tensor("dec/00/norm2_inner.gamma", (12,))),
        ("rezero_alpha stored per sub-layer, shape (2,)", M["lm", "rezero", "none"],
         per_sublayer_alpha),
        ("dyt alpha missing", M["lm", "b2t", "dyt"], drop("layers/02/norm2.alpha")),
        ("grad dec/01/head_scale1 off by 1e-8", M["encdec", "normformer", "layernorm"],
         bump("dec/01/head_scale1", 1e-8)),
        ("params layers/00/head_scale1 reversed", M["lm", "normformer", "rmsnorm"],
         lambda params, grads, loss: (params.__setitem__(
             "layers/00/head_scale1", params["layers/00/head_scale1"][::-1].copy()), loss)[1]),
        ("extra tensor enc/00/head_scale1 (the encoder has none)",
         M["encdec", "normformer", "rmsnorm"], add_tensor("enc/00/head_scale1", (3,))),
    ]
    for j, (name, m, mut) in enumerate(mutations):
        expect(name, False, dump(f"mut{j}", m, 500 + j, mutate=mut))

    # Configurations outside the decisions are refused, not judged.
    for j, (name, m_kw) in enumerate([
            ("rezero with layernorm", dict(placement="rezero", norm="layernorm")),
            ("peri with norm = none", dict(placement="peri", norm="none")),
            ("tfixup with rmsnorm", dict(placement="pre", norm="rmsnorm", init_scheme="tfixup"))]):
        path = os.path.join(workdir, f"refuse{j}.h5")
        ok_m = make_model("lm")
        write_fake_dump(path, ok_m, 700 + j)
        with h5py.File(path, "r+") as f:
            del f.attrs["config"]
            f.attrs["config"] = resolved_ini({**ok_m, **m_kw}, 700 + j)
        expect(f"config: {name}", False, path)

    # 3. The reference is the scheme: reductions to the existing references
    #    (tests/test_torch.py, tests/test_torch_encdec.py) and the schemes' own invariants.
    def ref_loss(m, params, batch):
        """The existing references (post/pre, no scheme tensors)."""
        if m["arch"] == "lm":
            return tt.torch_loss_and_grads(params, m, *batch)
        return ttd.loss_and_grads(params, m, *batch)

    def same(name, m, variant, m_ref, param_fix=None, seed=0):
        """The reference with `variant` equals the existing reference of m_ref (same values)."""
        r = np.random.default_rng(900 + seed)
        params = random_params(expected_shapes(m), m, r)
        if param_fix:
            param_fix(params)
        batch = make_batch(r, m)
        loss, grads = loss_and_grads(params, m, batch, variant)
        ref_shapes = (tt.expected_shapes if m["arch"] == "lm" else ttd.expected_shapes)(m_ref)
        loss_r, grads_r = ref_loss(m_ref, {k: params[k] for k in ref_shapes}, batch)
        # the tensors zero in exact arithmetic (bk, cbk) hold rounding noise whose summation
        # order follows the graph: judged on the floor with the C comparison's tolerance
        res = ref.compare(ref.new_res(), list(ref_shapes), loss_r, grads_r, loss, grads,
                         SAME_LOSS_TOL, SAME_GRAD_TOL, label="scheme", floor_tol=ref.GRAD_TOL)
        verdict(res["ok"], name, f"loss rel {res['loss_err']:.1e}, worst {res['worst'][0]} "
                f"{res['worst'][1]:.1e}" + (f"; {res['problems'][0]}" if res["problems"] else ""))

    # post and pre through this reference = the existing references (and the same tensors)
    for j, (arch, pl, nrm, fn) in enumerate([
            ("lm", "post", "layernorm", False), ("lm", "pre", "rmsnorm", True),
            ("lm", "post", "none", False), ("encdec", "post", "rmsnorm", False),
            ("encdec", "pre", "layernorm", True), ("encdec", "pre", "none", True)]):
        m = make_model(arch, placement=pl, norm=nrm, final_norm=fn, activation="gelu")
        old = (tt.expected_shapes if arch == "lm" else ttd.expected_shapes)(m)
        good = old == expected_shapes(m)
        verdict(good, f"{arch} {pl} {nrm}: tensor list = existing reference's",
                f"{len(old)} tensors" if good else "differs")
        same(f"{arch} {pl} {nrm}: forward = existing reference's", m, frozenset(), m, seed=j)

    for arch in ("lm", "encdec"):
        A = arch
        # tfixup: post and pre without norms are one forward, x + F(x)
        mp = make_model(arch, placement="post", norm="none", init_scheme="tfixup")
        same(f"{A} tfixup = Pre-LN without norms (existing ref.)", mp, frozenset(),
             {**mp, "placement": "pre"}, seed=10)

        # deepnorm with α = 1 is Post-LN
        m = make_model(arch, placement="deepnorm", norm="layernorm")
        same(f"{A} deepnorm with α = 1 = Post-LN (existing ref.)", m, {"deepnorm_alpha_1"},
             {**m, "placement": "post"}, seed=11)

        # admin with ω = 1 is Post-LN
        m = make_model(arch, placement="admin", norm="rmsnorm")
        def ones_omega(params):
            for n in params:
                if re.search(r"/omega\d$", n):
                    params[n] = np.ones_like(params[n])
        same(f"{A} admin with ω = 1 = Post-LN (existing ref.)", m, frozenset(),
             {**m, "placement": "post"}, ones_omega, seed=12)

        # rezero with α = 1 is Pre-LN without norms; with α = 0 the identity
        m = make_model(arch, placement="rezero", norm="none")
        def alpha(v):
            def f(params):
                for n in params:
                    if n.endswith("rezero_alpha"):
                        params[n] = np.full(params[n].shape, v)
            return f
        same(f"{A} rezero with α = 1 = residual without norms", m, frozenset(),
             {**m, "placement": "pre"}, alpha(1.0), seed=13)
        r = np.random.default_rng(14)
        params = random_params(expected_shapes(m), m, r)
        alpha(0.0)(params)
        batch = make_batch(r, m)
        P = {k: torch.tensor(v) for k, v in params.items()}
        if arch == "lm":
            x0 = lm_embed(P, m, torch.from_numpy(batch[0].astype(np.int64)))
            outs = [(x0, run_stack(P, m, "lm", x0, {"self_pad": None, "causal": True}))]
        else:
            src = torch.from_numpy(batch[0].astype(np.int64))
            x0 = ttd.embed(P, m, src)
            y0 = ttd.embed(P, m, torch.from_numpy(batch[1].astype(np.int64)))
            outs = [(x0, run_stack(P, m, "enc", x0, {"self_pad": src < 0, "causal": False})),
                    (y0, run_stack(P, m, "dec", y0, {"self_pad": None, "causal": True,
                                                     "mem": x0, "src_pad": src < 0}))]
        ident = all(torch.equal(a, b) for a, b in outs)
        _, g = loss_and_grads(params, m, batch)
        layer_w = [n for n in g if "/" in n and not n.endswith("rezero_alpha")]
        zero = all(np.all(g[n] == 0) for n in layer_w)
        # the loss sees a layer's α through its own branches: every lm α, every decoder α; an
        # encoder α only through the memory, which every decoder layer scales by its α = 0
        alphas = [n for n in g if n.endswith("rezero_alpha")]
        alive = all(np.any(g[n] != 0) != n.startswith("enc/") for n in alphas)
        verdict(ident and zero and alive, f"{A} rezero α = 0: identity on the residual stream",
                f"stack output == input: {ident}; {len(layer_w)} layer tensors' gradients "
                f"exactly 0: {zero}; dL/dα ≠ 0 exactly for the "
                f"{'decoder' if arch == 'encdec' else 'lm'}'s layers: {alive}")

        # peri with an identity output norm is Pre-LN (+ final norm); the output norm makes
        # the residual update invariant to the scale of W_O, b_O, W², b² (cross-attention too)
        m = make_model(arch, placement="peri", norm="layernorm")
        same(f"{A} peri with identity out-norm = Pre-LN (existing ref.)", m,
             {"peri_out_identity"}, {**m, "placement": "pre"}, seed=15)

        def scaled_loss(m, names, c=8.0, seed=16):
            """|loss(W with `names` scaled by c) / loss(W) − 1| at norm_eps = 0 (c a power of 2:
            exact scaling), on a batch without padding (a zero row would be 0/0)."""
            r = np.random.default_rng(seed)
            params = random_params(expected_shapes(m), m, r)
            if m["arch"] == "lm":
                batch = make_batch(r, m)
            else:
                batch = ttd.make_batch(r, m, [m["src_len"]] * m["batch"],
                                       [m["seq_len"]] * m["batch"])
            l0, _ = loss_and_grads(params, m, batch)
            sc = {k: (v * c if re.search(r"/(%s)$" % "|".join(names), k) else v)
                  for k, v in params.items()}
            l1, _ = loss_and_grads(sc, m, batch)
            return abs(l1 - l0) / abs(l0)

        out_names = ["wo", "bo", "w2", "b2"] + (["cwo", "cbo"] if arch == "encdec" else [])
        for norm_ in ("layernorm", "rmsnorm"):
            m0 = make_model(arch, placement="peri", norm=norm_, norm_eps=0.0)
            d_peri = scaled_loss(m0, out_names)
            d_pre = scaled_loss({**m0, "placement": "pre"}, out_names)
            verdict(d_peri <= 1e-13 and d_pre > 1e-6,
                    f"{A} peri {norm_}: loss invariant to 8·(W_O, b_O, W², b²)",
                    f"rel change {d_peri:.1e} (Pre-LN: {d_pre:.1e}; eps = 0)")

        # subln without inner norms is Pre-LN; the inner norms sit on the heads (scale of
        # W_V, b_V) and after the activation (scale of W¹, b¹ under relu), not on cross-attention
        m = make_model(arch, placement="subln", norm="rmsnorm")
        same(f"{A} subln without inner norms = Pre-LN (existing ref.)", m, {"subln_no_inner"},
             {**m, "placement": "pre"}, seed=17)
        m0 = make_model(arch, placement="subln", norm="layernorm", norm_eps=0.0,
                        activation="relu")
        d_v = scaled_loss(m0, ["wv", "bv"])
        d_1 = scaled_loss(m0, ["w1", "b1"])
        d_pre = scaled_loss({**m0, "placement": "pre"}, ["wv", "bv", "w1", "b1"])
        detail = f"8·(W_V, b_V) {d_v:.1e}, 8·(W¹, b¹) {d_1:.1e} (Pre-LN: {d_pre:.1e})"
        good = d_v <= 1e-13 and d_1 <= 1e-13 and d_pre > 1e-6
        if arch == "encdec":
            d_c = scaled_loss(m0, ["cwv", "cbv"])
            detail += f"; 8·(cW_V, cb_V) {d_c:.1e} (must change: no inner norm)"
            good = good and d_c > 1e-6
        verdict(good, f"{A} subln: inner norms on heads and act(·) only", detail)

        # normformer with c = 1 and without its two extra norms is Pre-LN; its attn_ln makes the
        # residual update invariant to the scale of W_O, b_O and of each head's c (not W², b²:
        # ffn_layernorm sits before W²), and its ffn_layernorm to that of W¹, b¹ under relu
        m = make_model(arch, placement="normformer", norm="layernorm")
        same(f"{A} normformer without its extras = Pre-LN (existing ref.)", m,
             {"normformer_plain"}, {**m, "placement": "pre"}, seed=25)
        m0 = make_model(arch, placement="normformer", norm="layernorm", norm_eps=0.0,
                        activation="relu")
        d_o = scaled_loss(m0, ["wo", "bo", r"head_scale\d"])
        d_1 = scaled_loss(m0, ["w1", "b1"])
        d_2 = scaled_loss(m0, ["w2", "b2"])
        detail = f"8·(W_O, b_O, c) {d_o:.1e}, 8·(W¹, b¹) {d_1:.1e}, 8·(W², b²) {d_2:.1e}"
        good = d_2 > 1e-6 and ((d_o <= 1e-13 and d_1 <= 1e-13) if arch == "lm" else
                               (d_o > 1e-6 and d_1 > 1e-6))   # the encoder's are plain Pre-LN
        verdict(good, f"{A} normformer: attn_ln after the heads' scale, ffn_layernorm after act",
                detail + ("" if arch == "lm" else " (encdec: the encoder's layers are Pre-LN)"))

        # mixln: k = 0 is Pre-LN, k = L is Post-LN plus a final norm
        kw = dict(layers=3) if arch == "lm" else dict(layers=3, dec_layers=2)
        m = make_model(arch, placement="mixln", norm="layernorm", mix_ratio=0.0, **kw)
        same(f"{A} mixln ratio 0 (k = 0) = Pre-LN (existing ref.)", m, frozenset(),
             {**m, "placement": "pre"}, seed=18)
        m = make_model(arch, placement="mixln", norm="rmsnorm", mix_ratio=1.0, **kw)
        same(f"{A} mixln ratio 1 (k = L) = Post-LN + final norm", m, frozenset(),
             {**m, "placement": "post"}, seed=19)

        # b2t: without the bottom path it is Post-LN; with every branch zeroed, a layer is
        # N_S(x + N_{S-1}(…N_1(x))) — the bottom path carries the layer input x itself
        m = make_model(arch, placement="b2t", norm="layernorm")
        same(f"{A} b2t without the bottom path = Post-LN (existing ref.)", m, {"b2t_no_bottom"},
             {**m, "placement": "post"}, seed=20)
        r = np.random.default_rng(21)
        params = random_params(expected_shapes(m), m, r)
        for n in params:
            if re.search(r"/c?(wo|bo)$|/(w2|b2)$", n):
                params[n] = np.zeros_like(params[n])
        batch = make_batch(r, m)
        loss, _ = loss_and_grads(params, m, batch)
        P = {k: torch.tensor(v) for k, v in params.items()}
        an = ref.apply_norm

        def by_hand(x, stack):
            for l in range(stack_layers(m, stack)):
                p = stack_prefix(stack, l)
                if stack == "dec":
                    h2 = an(an(x, P, p + "norm1", m), P, p + "norm2", m)
                    x = an(x + h2, P, p + "norm3", m)
                else:
                    x = an(x + an(x, P, p + "norm1", m), P, p + "norm2", m)
            return x
        if arch == "lm":
            x = by_hand(lm_embed(P, m, torch.from_numpy(batch[0].astype(np.int64))), "lm")
        else:
            by_hand(ttd.embed(P, m, torch.from_numpy(batch[0].astype(np.int64))), "enc")
            x = by_hand(ttd.embed(P, m, torch.from_numpy(batch[1].astype(np.int64))), "dec")
        hand = float(ref.output_loss(P, m, x, torch.from_numpy(batch[-1].astype(np.int64))))
        verdict(abs(hand - loss) <= 1e-14 * abs(hand),
                f"{A} b2t bottom path: zero branches give N(x + h…)",
                f"{loss:.17g} vs by hand {hand:.17g}")

    # DeepNorm's constants against the table of /work/notes/schemes.md §13 (L = 6; N = M = 6)
    lm6 = make_model("lm", placement="deepnorm", layers=6)
    ed6 = make_model("encdec", placement="deepnorm", layers=6, dec_layers=6)
    got = (deepnorm_alpha(lm6, "lm"), deepnorm_alpha(ed6, "enc"), deepnorm_alpha(ed6, "dec"))
    want = (1.861210, 1.417938, 2.059767)
    verdict(all(abs(a - b) < 5e-7 for a, b in zip(got, want)),
            "deepnorm α: lm (2L)^¼, enc 0.81(N⁴M)^1/16, dec (3M)^¼",
            " ".join(f"{a:.6f}" for a in got) + f" (table: {want})")
    # Mix-LN's k = ⌊ratio·L⌋: 0.25·6 → 1 (the repository's README runs), 0.5·4 → 2, 0.5·3 → 1
    ks = [mixln_k({"mix_ratio": r, "layers": L, "arch": "lm"}, "lm") for r, L in
          ((0.25, 6), (0.5, 4), (0.5, 3), (0.25, 12), (1.0, 5))]
    verdict(ks == [1, 2, 1, 3, 5], "mixln k = ⌊mix_ratio·L⌋", f"{ks}")

    # DyT: a site is γ ⊙ tanh(α·x) + β element by element, and every site's α is used
    r = np.random.default_rng(22)
    x = r.standard_normal((4, 6))
    g, b, a = r.standard_normal(6), r.standard_normal(6), 0.7
    y = norm(torch.tensor(x), {"s.gamma": torch.tensor(g), "s.beta": torch.tensor(b),
                               "s.alpha": torch.tensor([a])}, "s", {"norm": "dyt"}).numpy()
    manual = np.array([[g[j] * math.tanh(a * x[i, j]) + b[j] for j in range(6)]
                       for i in range(4)])
    verdict(np.max(np.abs(y - manual)) <= 1e-15, "dyt site = γ ⊙ tanh(α·x) + β elementwise",
            f"max diff {np.max(np.abs(y - manual)):.1e}")
    for arch, pl in (("lm", "peri"), ("encdec", "subln"), ("encdec", "mixln")):
        m = M[arch, pl, "dyt"]
        r = np.random.default_rng(23)
        params = random_params(expected_shapes(m), m, r)
        _, g = loss_and_grads(params, m, make_batch(r, m))
        sites = [n for n in g if n.endswith(".alpha")]
        dead = [n for n in sites if not np.any(g[n] != 0)]
        verdict(not dead and all(g[n].shape == (1,) for n in sites),
                f"{arch} {pl} dyt: every site's scalar α has a gradient",
                f"{len(sites)} sites" + (f"; no gradient: {dead}" if dead else ""))

    # bk (and cbk) stay zero in exact arithmetic under every scheme (the floor rule applies)
    worst = 0.0
    for key in [k for k in M if k[1] in ("peri", "subln", "b2t", "admin", "normformer")]:
        m = M[key]
        r = np.random.default_rng(24)
        params = random_params(expected_shapes(m), m, r)
        _, g = loss_and_grads(params, m, make_batch(r, m))
        gmax = max(np.max(np.abs(v)) for v in g.values())
        worst = max(worst, max(np.max(np.abs(g[n])) for n in g
                               if re.search(r"/c?bk$", n)) / gmax)
    verdict(worst <= 1e-12, "bk, cbk gradients ~ 0 under peri, subln, b2t, admin, normformer",
            f"max|g_bk| / max|g| = {worst:.1e}")

    # 4. The whole run mode (case INIs -> `stability dump` -> check) with a stand-in for the C
    #    program that answers with the reference's own dumps: every case must pass.
    sub = argparse.Namespace(binary="stability-stub", case=None, verbose=False)
    out = io.StringIO()
    os.makedirs(os.path.join(workdir, "run"), exist_ok=True)
    with contextlib.redirect_stdout(out):
        p_ok, p_bad = run_cases(sub, os.path.join(workdir, "run"), dump=stub_dump)
    n_cases = len(make_cases())
    verdict(p_bad == 0 and p_ok == n_cases, "run mode on reference-made dumps (stand-in dump)",
            f"{p_ok} of {n_cases} cases passed, {p_bad} failed")
    if p_bad or args.verbose:
        print("       " + out.getvalue().rstrip().replace("\n", "\n       "))
    return counts[0], counts[1]


def main():
    return ref.run_main(__doc__, "torch schemes",
                       f"test_torch_schemes: PyTorch {torch.__version__}, h5py {h5py.__version__}, float64; "
                       f"grad tol {ref.GRAD_TOL:g} (floor {ref.GLOBAL_FLOOR:g}·global max), "
                       f"loss tol {ref.LOSS_TOL:g}",
                       self_test, run_cases,
                       "check the reference, reader and comparison without the C program")


if __name__ == "__main__":
    sys.exit(main())
