"""torch_ref.py — what the PyTorch cross-checks (tests/test_torch.py, test_torch_encdec.py,
test_torch_schemes.py) share: the resolved config's reader, the layers every reference builds
from (positional encoding, norms, attention, FFN, output loss, autograd), the dump reader and the
comparison rules of docs/design.md §8, the HDF5 writer of reference-made dumps, and the run mode
(case INIs -> `stability dump` -> check -> one line per case) with its command line. Not a test
itself: each test file adds its model's reference, its cases and its self-test.
"""

import argparse
import configparser
import math
import os
import subprocess
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
    # today's block (docs/design.md §6i), written only away from the defaults: absent = the
    # 2017 block (sinusoidal positions, biases on)
    m["positions"] = (cp.get("model", "positions").strip().lower()
                      if cp.has_option("model", "positions") else "sinusoidal")
    m["bias"] = (parse_bool(cp.get("model", "bias"), "model.bias")
                 if cp.has_option("model", "bias") else True)
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
    if m["activation"] not in ("relu", "gelu", "swiglu"):
        raise ValueError(f"model.activation {m['activation']!r} not modelled here")
    if m["positions"] not in ("sinusoidal", "rope", "none"):
        raise ValueError(f"model.positions {m['positions']!r} not modelled here")
    if m["dropout"] != 0.0:
        raise ValueError("model.dropout must be 0 for the cross-check")
    if m["d_model"] % m["heads"]:
        raise ValueError("model.heads does not divide model.d_model")
    # A final norm exists when final_norm is on and there is a norm at all.
    m["has_final_norm"] = m["final_norm"] and m["norm"] != "none"
    return m


# ----------------------------------------------------------------------------------------------
# The layers every reference builds from, mirroring the C model (docs/design.md §1, §9).

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


def linear(x, P, w, b, m):
    """x·W + b, or x·W when the model has no biases (model.bias = off: the tensor b is absent)."""
    y = x @ P[w]
    return y + P[b] if m.get("bias", True) else y


def ffn(x, P, p, m, hidden_hook=None):
    """act(x·W¹ + b¹)·W² + b²; hidden_hook: applied to act(·) (B,T,d_ff) before W² (Sub-LN).
    SwiGLU (Shazeer 2020; LLaMA's FeedForward w2(silu(w1(x)) * w3(x))): act(·) = SiLU(x·W¹ + b¹)
    ⊙ (x·W³ + b³), torch's own F.silu; the hook (Sub-LN's, NormFormer's inner norm) after the
    gated product. Without biases every b is left out."""
    h = linear(x, P, p + "w1", p + "b1", m)
    if m["activation"] == "relu":
        h = torch.relu(h)
    elif m["activation"] == "swiglu":
        h = F.silu(h) * linear(x, P, p + "w3", p + "b3", m)
    else:
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))               # exact GELU
    if hidden_hook is not None:
        h = hidden_hook(h)
    return linear(h, P, p + "w2", p + "b2", m)


def rope_freqs(T, Dh, base=10000.0):
    """Meta's LLaMA precompute_freqs_cis (facebookresearch/llama model.py): e^{i·t·θ_j},
    θ_j = base^(−2j/Dh), t < T, j < Dh/2, complex (T, Dh/2)."""
    freqs = 1.0 / (base ** (torch.arange(0, Dh, 2, dtype=torch.float64)[: Dh // 2] / Dh))
    angles = torch.outer(torch.arange(T, dtype=torch.float64), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def rope(x, base=10000.0):
    """Rotary positions (Su et al. 2021) on x (B,H,T,Dh), position t = index on axis 2: Meta's
    apply_rotary_emb, the pairs (2j, 2j+1) of the last axis as complex numbers times e^{i·t·θ_j}
    (view_as_complex; autograd through complex128)."""
    B, H, T, Dh = x.shape
    xc = torch.view_as_complex(x.contiguous().reshape(B, H, T, Dh // 2, 2))
    return torch.view_as_real(xc * rope_freqs(T, Dh, base)).reshape(B, H, T, Dh)


def output_loss(P, m, x_final, targets):
    """Mean cross-entropy of the logits x_final·W (tied: W = tok_embedᵀ, no √C)."""
    B, T, _ = x_final.shape
    W = P["tok_embed"].t() if m["tie_embeddings"] else P["lm_head"]
    logits = x_final @ W
    return F.cross_entropy(logits.reshape(B * T, m["vocab"]), targets.reshape(B * T),
                           ignore_index=-1, label_smoothing=m["label_smoothing"], reduction="mean")


def loss_and_grads(params_np, m, tokens_np, targets_np, loss_fn):
    """Loss and name -> gradient of loss_fn(P, m, tokens, targets) (a reference's forward: P the
    parameters as tensors of torch's default dtype, float64 here unless a caller sets float32
    (tests/test_torch_float32.py), tokens and targets int64 (B,T)) by autograd."""
    P = {k: torch.tensor(np.asarray(v, dtype=np.float64), dtype=torch.get_default_dtype(),
                         requires_grad=True)
         for k, v in params_np.items()}
    tokens = torch.from_numpy(np.asarray(tokens_np, dtype=np.int64))
    targets = torch.from_numpy(np.asarray(targets_np, dtype=np.int64))
    loss = loss_fn(P, m, tokens, targets)
    loss.backward()
    grads = {k: (t.grad.numpy().copy() if t.grad is not None else np.zeros(t.shape))
             for k, t in P.items()}
    return float(loss.item()), grads


# ----------------------------------------------------------------------------------------------
# Reading a dump and comparing.

def new_res():
    """An empty result of one check (compare() fills it)."""
    return {"ok": False, "loss_err": None, "worst": (None, 0.0), "errors": {}, "problems": [],
            "notes": [], "worst_own": (None, 0.0)}


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


def write_dump(path, config_text, batch, loss, params, grads, bytes_attr=False):
    """A dump in the C layout (docs/design.md §6): root attributes config (a fixed-length string
    when bytes_attr, as C may write, else variable-length) and status, /batch/NAME for every
    (NAME, int array) of batch, /loss, /params/NAME and /grads/NAME."""
    with h5py.File(path, "w") as f:
        f.attrs["config"] = np.bytes_(config_text.encode()) if bytes_attr else config_text
        f.attrs["status"] = "done"
        g = f.create_group("batch")
        for name, arr in batch:
            g.create_dataset(name, data=arr)
        f.create_dataset("loss", data=np.float64(loss))
        for top, d in (("params", params), ("grads", grads)):
            for name, arr in d.items():
                parts = name.split("/")
                grp = f.require_group("/".join([top] + parts[:-1]))
                grp.create_dataset(parts[-1], data=np.asarray(arr, dtype=np.float64))


# ----------------------------------------------------------------------------------------------
# The run mode and the command line.

def write_ini(path, settings, base, writer):
    """A case's INI: base's and then settings' "section.key": value pairs, [model], [init],
    [data], [train] in that order, with a comment naming the file that wrote it."""
    sections = {}
    for key, value in {**base, **settings}.items():
        sec, k = key.split(".", 1)
        sections.setdefault(sec, []).append(f"{k} = {value}")
    with open(path, "w") as fh:
        fh.write(f"# written by {writer}\n")
        for sec in ("model", "init", "data", "train"):
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


def dump_with(binary, ini, out):
    """`stability dump --config INI --out OUT --perturb 0.3` -> (exit status, output). --perturb:
    every 1-D tensor (biases, γ, β, DyT's α, ω, ReZero's α, head scales) ~ init + N(0, 0.3²),
    so that swapped names show (at init they are all 0 or 1)."""
    p = subprocess.run([binary, "dump", "--config", ini, "--out", out, "--perturb", "0.3"],
                       cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    return p.returncode, p.stdout


def run_cases(args, workdir, cases, check, who, dump=None, after=None, report_fn=report):
    """Every case (name, settings, base, opts) of cases, or those matching --case: its INI (base
    + settings) through `stability dump` (or dump(ini, out) -> (status, output), a stand-in for
    the C program in a self-test), then check(path, opts) -> a result; after(name, settings,
    opts, res), when given, may add problems (res["ok"] follows them). One line per case
    (report_fn), then the worst errors. who names the file in messages. -> (passed, failed)."""
    binary = args.binary if os.path.isabs(args.binary) else os.path.join(REPO, args.binary)
    passed = failed = 0
    worst_all, worst_loss, worst_own = (None, None, 0.0), (None, 0.0), (None, None, 0.0)
    if dump is None and not os.access(binary, os.X_OK):
        print(f"{who}: {binary} not found or not executable (build it with `make stability`)")
    for name, settings, base, opts in cases:
        if args.case and args.case not in name:
            continue
        ini = os.path.join(workdir, name + ".ini")
        out = os.path.join(workdir, name + ".h5")
        write_ini(ini, settings, base, f"tests/{who}.py")
        res = new_res()
        try:
            rc, output = dump(ini, out) if dump else dump_with(binary, ini, out)
            if rc != 0:
                tail = " | ".join(output.strip().splitlines()[-3:])
                res["problems"].append(f"`stability dump` exit {rc}: {tail}")
            elif not os.path.exists(out):
                res["problems"].append("`stability dump` exited 0 but wrote no file")
            else:
                res = check(out, opts)
        except (OSError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
            res["problems"].append(f"{type(e).__name__}: {e}")
        if after:
            after(name, settings, opts, res)
            res["ok"] = res["ok"] and not res["problems"]
        report_fn(name, res, args.verbose)
        passed, failed = passed + bool(res["ok"]), failed + (not res["ok"])
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


def run_main(doc, name, banner, self_test_fn, run_cases_fn, self_test_help):
    """The command line every PyTorch cross-check shares: parse the options, run the cases and
    then the self-test (its planted faults must each be caught; --self-test runs it alone,
    --case skips it) in a working directory (--keep DIR, else a temporary one), print the tally
    as "NAME: P passed, F failed" and return the exit status (1 on a failure or no case)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--self-test", action="store_true",
                    help="only the self-test: " + self_test_help)
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
        passed = failed = 0
        if not args.self_test:
            passed, failed = run_cases_fn(args, workdir)
        if args.self_test or not args.case:
            # the self-test's planted faults, in a directory of their own (no name can clash)
            print("self-test (planted faults, each must be caught):")
            selfdir = os.path.join(workdir, "self-test")
            os.makedirs(selfdir, exist_ok=True)
            p2, f2 = self_test_fn(args, selfdir)
            passed, failed = passed + p2, failed + f2
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"{name}: {passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0
