#!/usr/bin/python3
"""test_torch_hvp.py — `stability dump --hvp` (docs/design.md §10) against PyTorch's
double-backward Hessian-vector product in float64, on every kind of model the program runs.

For each case: write a config, run `./stability dump --config CASE.ini --out CASE.h5 --perturb
0.3 --hvp`, read /params, /batch and the direction /hvp/v/NAME, rebuild the objective with the
references of tests/test_torch_schemes.py (every placement, DyT, T-Fixup, norm = none, lm and
encdec, tied and untied) extended by tests/test_torch_dynamics.py (QK-norm, soft-capping, the
z-loss, whose term the objective includes), take H·v = ∇(∇L·v) by autograd and compare with
/hvp/Hv/NAME:

    rel = ‖Hv_c − Hv_torch‖₂ / ‖Hv_torch‖₂ ≤ 1e-6       (every parameter at once)

and per tensor max|Hv_c − Hv_torch| ≤ 1e-6 · max(max|Hv_torch of the tensor|, 1e-3 ·
max|Hv_torch|) (a tensor whose product is zero in exact arithmetic, b_K's, judged on the whole
product's scale). The C side differences the gradient at h ≤ 1e-6 without crossing a ReLU kink
(measure/hvp.h); dropout is off in the product even when the config has dropout (one case), so
the reference runs without it. The checks also hold ‖v‖ = 1, v's tensors named as /params, and
the dump's Ritz values inside the spectrum's bounds [λ_min − r, λ_max + r] of the reference's
explicit Hessian in the smallest cases (r: 1e-6 of the spectral radius).

Held-out configs: besides the listed cases, HELD_OUT combinations drawn once from a seeded
random generator over placements, norms, mitigations and sizes (never tuned against).
A planted fault must be caught: the reference without the z-term on a z-loss case.

    /usr/bin/python3 tests/test_torch_hvp.py [--binary ./stability] [--case SUBSTR] [--keep DIR]

The last line is `torch hvp: N passed, M failed`; exit status 1 if any case failed.
"""
import argparse
import configparser
import os
import random
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402
import test_torch_schemes as ts  # noqa: E402  (every scheme's forward, lm and encdec)
import test_torch_dynamics as td  # noqa: E402  (patches ref.mha, ref.output_loss: QK-norm, cap, z)

torch.set_default_dtype(torch.float64)
REPO = ref.REPO
HVP_TOL = 1e-6          # relative, whole product
TENSOR_FLOOR = 1e-3     # a tensor's scale is at least this fraction of the product's max
EIG_TOL = 1e-6          # the Ritz values inside the explicit spectrum, relative to its radius

LM = {"model.layers": 2, "model.d_model": 16, "model.heads": 4, "model.d_ff": 24,
      "model.vocab": 19, "model.seq_len": 7, "data.batch": 3, "model.causal": "true",
      "data.task": "random"}
ED = {"model.arch": "encdec", "model.layers": 2, "model.dec_layers": 2, "model.d_model": 16,
      "model.heads": 4, "model.d_ff": 24, "model.vocab": 19, "model.seq_len": 7,
      "model.src_len": 7, "data.task": "reverse", "data.batch": 3, "data.min_len": 3}
MLM = {"model.layers": 2, "model.d_model": 16, "model.heads": 2, "model.d_ff": 24,
       "model.vocab": 257, "model.seq_len": 16, "model.causal": "false", "data.task": "mlm",
       "data.batch": 3}
TINY = {"model.layers": 1, "model.d_model": 4, "model.heads": 2, "model.d_ff": 6,
        "model.vocab": 7, "model.seq_len": 4, "data.batch": 2, "data.task": "random"}


def cases():
    """[(name, settings)] over the bases above."""
    out = []
    for arch, base in (("lm", LM), ("encdec", ED)):
        for placement in ("post", "pre"):
            for act in ("relu", "gelu"):
                out.append((f"{arch}-{placement}-{act}", {**base, "model.placement": placement,
                                                          "model.activation": act}))
        out.append((f"{arch}-post-untied", {**base, "model.tie_embeddings": "false"}))
        out.append((f"{arch}-pre-rmsnorm-untied", {**base, "model.placement": "pre",
                                                   "model.norm": "rmsnorm",
                                                   "model.tie_embeddings": "false"}))
        for placement in ("peri", "deepnorm", "admin", "subln", "mixln", "b2t", "normformer"):
            out.append((f"{arch}-{placement}", {**base, "model.placement": placement}))
        out.append((f"{arch}-rezero", {**base, "model.placement": "rezero", "model.norm": "none"}))
        out.append((f"{arch}-tfixup", {**base, "init.scheme": "tfixup", "model.norm": "none"}))
        out.append((f"{arch}-pre-dyt", {**base, "model.placement": "pre", "model.norm": "dyt"}))
        out.append((f"{arch}-post-dyt-gelu", {**base, "model.norm": "dyt",
                                              "model.activation": "gelu"}))
        for tag, mit in td.MITIGATIONS.items():
            out.append((f"{arch}-pre-{tag}", {**base, "model.placement": "pre", **mit}))
        out.append((f"{arch}-post-qkln-z", {**base, "model.qk_norm": "layernorm",
                                            "train.z_loss": 0.2}))
    out.append(("lm-post-dropout", {**LM, "model.dropout": 0.2}))
    out.append(("lm-smoothing", {**LM, "data.label_smoothing": 0.1, "model.activation": "gelu"}))
    out.append(("mlm-post", {**MLM}))
    out.append(("mlm-pre-gelu-untied", {**MLM, "model.placement": "pre",
                                        "model.activation": "gelu",
                                        "model.tie_embeddings": "false"}))
    out.append(("tiny-post-eig", {**TINY}))
    out.append(("tiny-pre-gelu-eig", {**TINY, "model.placement": "pre",
                                      "model.activation": "gelu"}))
    out.extend(held_out())
    for i, (_, d) in enumerate(out):
        d.setdefault("init.seed", 4001 + 13 * i)
    return out


def held_out(n=8, seed=20260):
    """n configurations drawn once from a seeded generator: placement, norm, activation,
    mitigations, tying, sizes and architecture at random (valid combinations only)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        arch = rng.choice(("lm", "encdec"))
        base = dict(LM if arch == "lm" else ED)
        placement = rng.choice(("post", "pre", "peri", "deepnorm", "admin", "subln", "mixln",
                                "b2t", "normformer", "rezero"))
        norm = "none" if placement == "rezero" else rng.choice(("layernorm", "rmsnorm", "dyt"))
        d = {**base, "model.placement": placement, "model.norm": norm,
             "model.activation": rng.choice(("relu", "gelu")),
             "model.tie_embeddings": rng.choice(("true", "false")),
             "model.d_model": rng.choice((8, 16, 24)), "model.heads": 2,
             "model.d_ff": rng.choice((10, 20, 40)), "model.layers": rng.choice((1, 2, 3)),
             "init.seed": rng.randrange(1, 10 ** 6)}
        if rng.random() < 0.5:
            d["model.qk_norm"] = rng.choice(("layernorm", "rmsnorm"))
        if rng.random() < 0.4:
            d["model.attn_softcap"] = round(rng.uniform(0.5, 3.0), 2)
        if rng.random() < 0.4:
            d["train.z_loss"] = round(rng.uniform(0.01, 0.5), 3)
        if arch == "encdec":
            d["model.dec_layers"] = rng.choice((1, 2, 3))
        out.append((f"heldout{len(out)}-{arch}-{placement}-{norm}", d))
    return out


def parse(text):
    """The scheme reference's config plus the mitigations' keys (tests/test_torch_dynamics.py);
    the product is taken with dropout off, so the reference is built without it."""
    cp = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"),
                                   strict=False)
    cp.read_string(text)
    dropout = float(cp.get("model", "dropout"))
    if dropout:
        cp.set("model", "dropout", "0")
        with tempfile.TemporaryFile("w+") as fh:
            cp.write(fh)
            fh.seek(0)
            text = fh.read()
    m = ts.parse_config(text)
    get = lambda s, k, d: cp.get(s, k).strip() if cp.has_option(s, k) else d  # noqa: E731
    m["qk_norm"] = get("model", "qk_norm", "off")
    m["softcap"] = float(get("model", "attn_softcap", "0"))
    m["z_loss"] = float(get("train", "z_loss", "0"))
    return m


def objective(P, m, batch):
    """The objective of the dump's batch (the cross-entropy and the z-term when on)."""
    if m["arch"] == "lm":
        tokens, targets = batch
        return ts.lm_loss(P, m, tokens, targets)
    src, tokens, targets = batch
    return ts.encdec_loss(P, m, src, tokens, targets)


def torch_hvp(params, v, m, batch):
    """H·v by double backward: ∇(∇L · v)."""
    names = sorted(params)
    P = {k: torch.tensor(params[k], requires_grad=True) for k in names}
    loss = objective(P, m, batch)
    g = torch.autograd.grad(loss, [P[k] for k in names], create_graph=True, allow_unused=True)
    dot = sum((gi * torch.tensor(v[k])).sum() for gi, k in zip(g, names) if gi is not None)
    hv = torch.autograd.grad(dot, [P[k] for k in names], allow_unused=True)
    return {k: (h.detach().numpy() if h is not None else np.zeros(params[k].shape))
            for k, h in zip(names, hv)}


def torch_spectrum(params, m, batch):
    """The eigenvalues of the explicit Hessian over every parameter (smallest models only)."""
    names = sorted(params)
    shapes = [params[k].shape for k in names]
    sizes = [int(np.prod(s)) for s in shapes]
    flat0 = torch.tensor(np.concatenate([params[k].reshape(-1) for k in names]))

    def f(flat):
        P, o = {}, 0
        for k, s, n in zip(names, shapes, sizes):
            P[k] = flat[o:o + n].reshape(s)
            o += n
        return objective(P, m, batch)
    H = torch.autograd.functional.hessian(f, flat0)
    return np.linalg.eigvalsh(H.numpy())


def read_dump(path):
    with h5py.File(path, "r") as f:
        m = parse(ref.attr_text(f.attrs["config"]))
        params = ref.read_group(f, "params")
        v = ref.read_group(f, "hvp/v")
        hv = ref.read_group(f, "hvp/Hv")
        tok = np.asarray(f["batch/tokens"][()], dtype=np.int64)
        tgt = np.asarray(f["batch/targets"][()], dtype=np.int64)
        src = (np.asarray(f["batch/src_tokens"][()], dtype=np.int64)
               if "batch/src_tokens" in f else None)
        lam = (float(f["hvp/hessian_max"][()]), float(f["hvp/hessian_min"][()]))
        attrs = dict(f["hvp"].attrs)
    tok, tgt = torch.from_numpy(tok), torch.from_numpy(tgt)
    batch = (tok, tgt) if src is None else (torch.from_numpy(src), tok, tgt)
    return m, params, v, hv, batch, lam, attrs


def check(path, name, plant=None):
    """Problems of one dump (empty: it agrees) and the relative error."""
    m, params, v, hv, batch, lam, attrs = read_dump(path)
    problems = []
    if set(v) != set(params) or set(hv) != set(params):
        return [f"/hvp/v or /hvp/Hv not named as /params ({sorted(set(params) ^ set(v))[:4]})"], None
    vnorm = np.sqrt(sum(float(np.sum(x * x)) for x in v.values()))
    if abs(vnorm - 1.0) > 1e-12:
        problems.append(f"||v|| = {vnorm!r}, not 1")
    if attrs.get("kinked", 0):
        problems.append(f"the product crossed a ReLU kink even at its smallest step ({attrs})")
    if plant == "no_z":
        td.BUG.add("no_z")
    try:
        ht = torch_hvp(params, v, m, batch)
    finally:
        td.BUG.discard("no_z")
    diff = np.sqrt(sum(float(np.sum((hv[k] - ht[k]) ** 2)) for k in params))
    norm = np.sqrt(sum(float(np.sum(ht[k] ** 2)) for k in params))
    rel = diff / norm
    if not rel <= HVP_TOL:
        problems.append(f"||Hv_c - Hv_torch|| / ||Hv_torch|| = {rel:.3g} > {HVP_TOL:g}")
    gmax = max(float(np.max(np.abs(x))) for x in ht.values())
    for k in sorted(params):
        scale = max(float(np.max(np.abs(ht[k]))), TENSOR_FLOOR * gmax)
        err = float(np.max(np.abs(hv[k] - ht[k]))) / scale
        if not err <= HVP_TOL:
            problems.append(f"Hv {k}: max error {err:.3g} of its scale {scale:.3g} > {HVP_TOL:g}")
    if name.endswith("-eig"):
        eig = torch_spectrum(params, m, batch)
        r = EIG_TOL * max(abs(eig[0]), abs(eig[-1]))
        if not (eig[0] - r <= lam[1] <= lam[0] <= eig[-1] + r):
            problems.append(f"Ritz values [{lam[1]:.10g}, {lam[0]:.10g}] outside the spectrum "
                            f"[{eig[0]:.10g}, {eig[-1]:.10g}]")
        n = sum(x.size for x in params.values())
        if n <= 2 * attrs["iters"]:   # the Krylov space holds every direction: exact
            for got, want in ((lam[0], eig[-1]), (lam[1], eig[0])):
                if not abs(got - want) <= r:
                    problems.append(f"Ritz value {got:.12g} vs the eigenvalue {want:.12g}")
    return problems, rel


def dump(binary, ini, out):
    p = subprocess.run([binary, "dump", "--config", ini, "--out", out, "--perturb", "0.3",
                        "--hvp", "--force"], cwd=REPO, capture_output=True, text=True,
                       timeout=600)
    return p.returncode, (p.stdout + p.stderr).strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="./stability")
    ap.add_argument("--case", default="")
    ap.add_argument("--keep", default="")
    a = ap.parse_args()
    binary = a.binary if os.path.isabs(a.binary) else os.path.join(REPO, a.binary)
    tmp = None if a.keep else tempfile.TemporaryDirectory(prefix="stability-hvp-")
    work = a.keep or tmp.name
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.txt")
    import test_torch_mlm as tm
    tm.write_corpus(corpus)
    passed = failed = 0
    worst = (None, 0.0)
    for name, settings in cases():
        if a.case not in name:
            continue
        if settings.get("data.task") == "mlm":
            settings = {**settings, "data.path": corpus}
        ini, out = os.path.join(work, name + ".ini"), os.path.join(work, name + ".h5")
        ref.write_ini(ini, settings, {}, "tests/test_torch_hvp.py")
        rc, text = dump(binary, ini, out)
        if rc != 0:
            problems, rel = [f"`stability dump --hvp` exit {rc}: {text[-300:]}"], None
        else:
            problems, rel = check(out, name)
            if not problems and (name.endswith("-z") or name.endswith("-all")):
                planted, _ = check(out, name, plant="no_z")
                if not planted:
                    problems.append("the reference without the z-term agrees: the check is blind")
        ok = not problems
        passed, failed = passed + ok, failed + (not ok)
        if rel is not None and rel >= worst[1]:
            worst = (name, rel)
        print(f"{'ok  ' if ok else 'FAIL'} {name:34s} rel {rel if rel is not None else float('nan'):.2e}")
        for p in problems:
            print(f"       {p}")
    if worst[0]:
        print(f"worst relative error: {worst[1]:.2e} ({worst[0]})")
    print(f"torch hvp: {passed} passed, {failed} failed")
    if tmp:
        tmp.cleanup()
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
