#!/usr/bin/python3
"""curvature_anchor.py — the curvature anchor of docs/curvature.md in PyTorch, independent of the
program: a byte-level LM on the licence texts (setup/corpus.sh -> results/licenses.txt), d = 64,
L = 6, 4 heads, d_ff = 256, ReLU, n = 64, B = 16, tied embeddings, Adam β = (0.9, 0.98), ε = 1e-8,
constant lr after an optional linear warm-up, and Adam's preconditioned sharpness on one fixed
measurement batch of 1 024 tokens (docs/design.md §10; Cohen et al. 2022).

Everything is float64 (training and measurement); the model is written here from the setting's
description (docs/design.md §5: input tok_embed[id]·√d + sinusoidal PE, Post-LN or Pre-LN with a
final norm, logits h·tok_embedᵀ), with its own data sampling, initialisation (torch.Generator)
and optimizer (torch.optim.Adam; GI-Adam = Adam whose second moment starts at g₁², Kalra &
Barkeshli 2024). `--params DUMP.h5` starts from a `stability dump`'s parameters instead, so the
script's model can be checked against the program's on the same θ (`--check DUMP.h5`).

At each update s of --at (before update s + 1): λ_max and λ_min of H (Lanczos, K steps, full
re-orthogonalisation, on exact double-backward Hessian-vector products), Adam's P_s =
(1 − β₁ˢ)(√(v_s/(1 − β₂ˢ)) + ε) (s = 0: the P of update 1 from its gradient), λ_max(P⁻¹H) =
λ_max(P^{−1/2}HP^{−1/2}), its top eigenvector's share per tensor, and the active value (the
principal submatrix without the floored coordinates) for each floor definition of --floors:

  eps     √v̂_i < ε            (the ε term is the larger part of P_i)
  tiny    √v̂_i < 1e-3·RMS(√v̂ over the coordinate's tensor)   (a coordinate its tensor's
          gradient has (almost) not reached: bk's rounding noise, dead units, unseen bytes)

The threshold is Adam's 2(1 + β₁)/((1 − β₁)·η_{s+1}). Prints one JSON object per run.

    tests/oracles/curvature_anchor.py --placement post --lr 3e-3 --seed 1            # one run
    tests/oracles/curvature_anchor.py --placement post --lr 3e-3 --warmup 100 --embed normal
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------------------- the model

def names_and_shapes(a):
    """The parameters in the program's order (docs/design.md §5)."""
    d, f, V = a.d, a.d_ff, 256
    out = [("tok_embed", (V, d))]
    for l in range(a.layers):
        p = f"layers/{l:02d}/"
        for w in ("q", "k", "v", "o"):
            out += [(p + "w" + w, (d, d)), (p + "b" + w, (d,))]
        out += [(p + "w1", (d, f)), (p + "b1", (f,)), (p + "w2", (f, d)), (p + "b2", (d,))]
        for k in (1, 2):
            out += [(p + f"norm{k}.gamma", (d,)), (p + f"norm{k}.beta", (d,))]
    if a.placement == "pre":
        out += [("final_norm.gamma", (d,)), ("final_norm.beta", (d,))]
    return out


def init_params(a, shapes, seed):
    """Embedding Xavier-uniform U(±√(6/(V+d))) or N(0, 1/d); matrices Xavier normal
    N(0, 2/(fan_in + fan_out)); biases and β 0, γ 1."""
    g = torch.Generator().manual_seed(seed)
    P = {}
    for name, shp in shapes:
        if name == "tok_embed":
            if a.embed == "xavier_uniform":
                b = math.sqrt(6.0 / (shp[0] + shp[1]))
                P[name] = (torch.rand(shp, generator=g) * 2.0 - 1.0) * b
            else:
                P[name] = torch.randn(shp, generator=g) / math.sqrt(a.d)
        elif len(shp) == 2:
            P[name] = torch.randn(shp, generator=g) * math.sqrt(2.0 / (shp[0] + shp[1]))
        elif name.endswith("gamma"):
            P[name] = torch.ones(shp)
        else:
            P[name] = torch.zeros(shp)
    return P


def pos_enc(T, C):
    pe = torch.zeros(T, C)
    t = torch.arange(T, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, C, 2, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t / 10000.0 ** (i2 / C))
    pe[:, 1::2] = torch.cos(t / 10000.0 ** (i2 / C))
    return pe


def layer_norm(x, g, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, eps=1e-5)


def attention(x, P, p, heads):
    B, T, C = x.shape
    q, k, v = (x @ P[p + "w" + w] + P[p + "b" + w] for w in "qkv")
    q, k, v = (z.view(B, T, heads, C // heads).transpose(1, 2) for z in (q, k, v))
    s = q @ k.transpose(-1, -2) / math.sqrt(C // heads)
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    y = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)
    return y @ P[p + "wo"] + P[p + "bo"]


def ffn(x, P, p):
    return torch.relu(x @ P[p + "w1"] + P[p + "b1"]) @ P[p + "w2"] + P[p + "b2"]


def loss_fn(P, a, tokens, targets, pe):
    """Mean cross-entropy over the B·n positions."""
    x = P["tok_embed"][tokens] * math.sqrt(a.d) + pe
    for l in range(a.layers):
        p = f"layers/{l:02d}/"
        if a.placement == "post":
            x = layer_norm(x + attention(x, P, p, a.heads), P[p + "norm1.gamma"], P[p + "norm1.beta"])
            x = layer_norm(x + ffn(x, P, p), P[p + "norm2.gamma"], P[p + "norm2.beta"])
        else:
            x = x + attention(layer_norm(x, P[p + "norm1.gamma"], P[p + "norm1.beta"]), P, p, a.heads)
            x = x + ffn(layer_norm(x, P[p + "norm2.gamma"], P[p + "norm2.beta"]), P, p)
    if a.placement == "pre":
        x = layer_norm(x, P["final_norm.gamma"], P["final_norm.beta"])
    logits = x @ P["tok_embed"].t()
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1))


# ----------------------------------------------------------------------------- the data

class Text:
    """The corpus split as the program splits it (the last tenth for validation); training
    windows of n + 1 bytes at uniform offsets from a generator of their own."""

    def __init__(self, path, n, B, seed):
        with open(path, "rb") as f:
            self.text = torch.tensor(list(f.read()), dtype=torch.int64)
        self.n, self.B = n, B
        N = len(self.text)
        self.n_train = N - max(int(0.1 * N), n + 1)
        self.g = torch.Generator().manual_seed(seed)

    def rows(self, offsets):
        w = torch.stack([self.text[o:o + self.n + 1] for o in offsets.tolist()])
        return w[:, :-1].contiguous(), w[:, 1:].contiguous()

    def batch(self, g=None):
        o = torch.randint(0, self.n_train - self.n, (self.B,), generator=g or self.g)
        return self.rows(o)

    def val_batches(self, count=16):
        W = self.n + 1
        span = len(self.text) - self.n_train - W
        nw = count * self.B
        o = torch.tensor([self.n_train + j * span // (nw - 1) for j in range(nw)])
        return [self.rows(o[i * self.B:(i + 1) * self.B]) for i in range(count)]


# ------------------------------------------------------------------------ the curvature

class Hessian:
    """Exact Hessian-vector products of the measurement batch's loss at θ (double backward on a
    gradient graph built once per point)."""

    def __init__(self, P, names, a, batch, pe):
        self.ps = [P[k].detach().clone().requires_grad_(True) for k in names]
        Q = dict(zip(names, self.ps))
        loss = loss_fn(Q, a, batch[0], batch[1], pe)
        self.g = torch.autograd.grad(loss, self.ps, create_graph=True)
        self.sizes = [p.numel() for p in self.ps]
        self.products = 0

    def __call__(self, v):
        vs = torch.split(v, self.sizes)
        dot = sum((gi * vi.view_as(gi)).sum() for gi, vi in zip(self.g, vs))
        hv = torch.autograd.grad(dot, self.ps, retain_graph=True)
        self.products += 1
        return torch.cat([h.reshape(-1) for h in hv]).detach()


def lanczos(op, n, K, gen, support=None):
    """λ_max, λ_min and the unit top Ritz vector of op restricted to support (bool (n) or None)
    after K steps with full re-orthogonalisation (classical Gram–Schmidt twice)."""
    q = torch.randn(n, generator=gen)
    if support is not None:
        q = q * support
    q = q / q.norm()
    Q, alpha, beta = [q], [], []
    for j in range(K):
        w = op(Q[j])
        if support is not None:
            w = w * support
        alpha.append(float(Q[j] @ w))
        M = torch.stack(Q)
        for _ in range(2):
            w = w - M.t() @ (M @ w)
        b = float(w.norm())
        beta.append(b)
        if b < 1e-12 * (abs(alpha[-1]) + b) or j == K - 1:
            break
        Q.append(w / b)
    k = len(alpha)
    T = np.diag(alpha) + np.diag(beta[:k - 1], 1) + np.diag(beta[:k - 1], -1)
    th, S = np.linalg.eigh(T)
    top = torch.stack(Q[:k]).t() @ torch.tensor(S[:, -1])
    return float(th[-1]), float(th[0]), top / top.norm(), abs(beta[k - 1] * S[-1, -1])


def floors(a, names, sizes, root, eps):
    """{definition: bool mask of the floored coordinates} for √v̂ = root (n)."""
    out = {}
    for f in a.floors:
        if f == "eps":
            out[f] = root < eps
        elif f.startswith("rel"):   # relN: √v̂_i < max(ε, N·RMS of √v̂ over its tensor)
            tau = float(f[3:])
            parts = []
            for r in torch.split(root, sizes):
                parts.append(r < max(eps, tau * float(torch.sqrt((r * r).mean()))))
            out[f] = torch.cat(parts)
        else:
            sys.exit(f"--floors: unknown definition {f!r}")
    return out


def shares(u, names, sizes, top=4):
    """The largest per-tensor shares Σ u_i² of a unit vector u: [(name, share)]."""
    s = [(n, float((x * x).sum())) for n, x in zip(names, torch.split(u, sizes))]
    return [(n, round(v, 4)) for n, v in sorted(s, key=lambda t: -t[1])[:top]]


def measure(a, P, names, sizes, batch, pe, root, bc1, s, lr_next):
    """One row at update s: root = √v̂ (n), bc1 = 1 − β₁ˢ of the P used."""
    H = Hessian(P, names, a, batch, pe)
    n = sum(sizes)
    gen = torch.Generator().manual_seed(a.seed * 1000 + s)
    row = {"step": s, "threshold": 2 * (1 + a.beta1) / ((1 - a.beta1) * lr_next)}
    if s == 0 or not a.lean:
        row["hessian_max"], row["hessian_min"], _, _ = lanczos(H, n, a.iters, gen)
    Pv = bc1 * (root + a.eps)
    D = Pv.rsqrt()
    op = lambda x: D * H(D * x)
    top = None
    if not a.lean:
        lmax, _, top, res = lanczos(op, n, a.iters, gen)
        row["precond_max"], row["precond_top"] = lmax, shares(top, names, sizes)
    fl = floors(a, names, sizes, root, a.eps)
    for f, mask in fl.items():
        row[f"{f}_floored"] = int(mask.sum())
        if top is not None:
            row[f"{f}_share"] = float((top[mask] ** 2).sum())
        if not mask.any():
            act, _, topa, _ = lanczos(op, n, a.iters, gen)
        else:
            act, _, topa, _ = lanczos(op, n, a.iters, gen, support=(~mask).to(torch.float64))
        row[f"{f}_active"] = act
        row[f"{f}_ratio"] = act / row["threshold"]
        row[f"{f}_active_top"] = shares(topa, names, sizes)
        # √v̂ and H's diagonal weight where the active top vector sits
        w = topa * topa
        row[f"{f}_active_root"] = float((w * root).sum())
        if a.verbose:
            idx = torch.argsort(-w)[:8]
            off = np.cumsum([0] + sizes)
            rms = [float(torch.sqrt((r * r).mean())) for r in torch.split(root, sizes)]
            coords = []
            for i in idx.tolist():   # (tensor, index, u_i², √v̂_i, √v̂_i / RMS of its tensor)
                j = int(np.searchsorted(off, i, "right")) - 1
                coords.append((names[j], i - int(off[j]), round(float(w[i]), 4),
                               float(root[i]), float(root[i]) / rms[j]))
            row[f"{f}_coords"] = coords
    row["passes"] = H.products
    return row


# ----------------------------------------------------------------------------- training

def lr_at(a, t):
    w = max(a.warmup, 1)
    return a.lr * t / w if t <= w else a.lr


def run(a):
    shapes = names_and_shapes(a)
    names = [k for k, _ in shapes]
    P = init_params(a, shapes, a.seed)
    if a.params:
        import h5py
        with h5py.File(a.params, "r") as f:
            P = {k: torch.tensor(np.asarray(f["params/" + k][()]).reshape(shp)) for k, shp in shapes}
    sizes = [int(np.prod(shp)) for _, shp in shapes]
    data = Text(a.corpus, a.n, a.batch, a.seed + 1)
    mbatch = data.batch(torch.Generator().manual_seed(a.seed + 2))   # fixed: 16 × 64 tokens
    pe = pos_enc(a.n, a.d)
    params = [P[k].clone().requires_grad_(True) for k in names]
    opt = torch.optim.Adam(params, lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    rows, losses = [], []
    at = sorted(set(a.at))
    t0 = time.time()
    for t in range(1, a.steps + 1):
        x, y = data.batch()
        loss = loss_fn(dict(zip(names, params)), a, x, y, pe)
        opt.zero_grad()
        loss.backward()
        losses.append(float(loss))
        if not math.isfinite(losses[-1]):
            break
        if t == 1:
            g = torch.cat([p.grad.reshape(-1) for p in params])
            if a.optimizer == "gi_adam":   # v₀ = g₁²: the first update's v₁ = g₁²
                for p in params:
                    opt.state[p] = {"step": torch.tensor(0.0), "exp_avg": torch.zeros_like(p),
                                    "exp_avg_sq": p.grad.detach() ** 2}
                v1 = g * g
            else:
                v1 = (1 - a.beta2) * g * g
            if 0 in at:
                rows.append(measure(a, {k: p.detach() for k, p in zip(names, params)}, names,
                                    sizes, mbatch, pe, torch.sqrt(v1 / (1 - a.beta2)),
                                    1 - a.beta1, 0, lr_at(a, 1)))
        for grp in opt.param_groups:
            grp["lr"] = lr_at(a, t)
        opt.step()
        if t in at:
            v = torch.cat([opt.state[p]["exp_avg_sq"].reshape(-1) for p in params])
            root = torch.sqrt(v / (1 - a.beta2 ** t))
            rows.append(measure(a, {k: p.detach() for k, p in zip(names, params)}, names, sizes,
                                mbatch, pe, root, 1 - a.beta1 ** t, t, lr_at(a, t + 1)))
    with torch.no_grad():
        Q = dict(zip(names, params))
        val = float(np.mean([float(loss_fn(Q, a, x, y, pe)) for x, y in data.val_batches()]))
    return {"placement": a.placement, "lr": a.lr, "warmup": a.warmup, "optimizer": a.optimizer,
            "embed": a.embed, "seed": a.seed, "rows": rows, "loss0": losses[0],
            "final_train": float(np.mean(losses[-30:])), "final_val": val,
            "seconds": round(time.time() - t0, 1)}


def check(a):
    """The script's loss and gradient on a dump's batch and θ against the dump's own."""
    import h5py
    shapes = names_and_shapes(a)
    with h5py.File(a.check, "r") as f:
        P = {k: torch.tensor(np.asarray(f["params/" + k][()]).reshape(s), requires_grad=True)
             for k, s in shapes}
        tok = torch.tensor(f["batch/tokens"][()], dtype=torch.int64)
        tgt = torch.tensor(f["batch/targets"][()], dtype=torch.int64)
        loss_c = float(np.asarray(f["loss"][()]).reshape(-1)[0])
        G = {k: np.asarray(f["grads/" + k][()]).reshape(s) for k, s in shapes}
        hv = None
        if "hvp" in f:   # dump --hvp: the program's direction and H·v
            v = torch.cat([torch.tensor(np.asarray(f["hvp/v/" + k][()])).reshape(-1) for k, _ in shapes])
            hv = np.concatenate([np.asarray(f["hvp/Hv/" + k][()]).reshape(-1) for k, _ in shapes])
    pe = pos_enc(tok.shape[1], a.d)
    loss = loss_fn(P, a, tok, tgt, pe)
    loss.backward()
    gmax = max(float(np.abs(P[k].grad.numpy()).max()) for k, _ in shapes)
    err = max(float(np.abs(P[k].grad.numpy() - G[k]).max()) / gmax for k, _ in shapes)
    out = {"loss_torch": float(loss), "loss_c": loss_c,
           "loss_rel": abs(float(loss) - loss_c) / loss_c, "grad_rel": err}
    if hv is not None:   # the anchor's exact H·v against the program's kink-checked difference
        names = [k for k, _ in shapes]
        H = Hessian({k: P[k].detach() for k in names}, names, a, (tok, tgt), pe)
        mine = H(v).numpy()
        out["hvp_rel"] = float(np.linalg.norm(mine - hv) / np.linalg.norm(mine))
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--placement", choices=("post", "pre"), default="post")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=1, help="linear warm-up updates (1: none)")
    ap.add_argument("--optimizer", choices=("adam", "gi_adam"), default="adam")
    ap.add_argument("--embed", choices=("xavier_uniform", "normal"), default="xavier_uniform")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--at", type=int, nargs="*", default=[0, 5, 10, 20, 100])
    ap.add_argument("--iters", type=int, default=20, help="Lanczos steps K")
    ap.add_argument("--floors", nargs="*", default=["eps", "rel1e-3"])
    ap.add_argument("--verbose", action="store_true", help="the active top vector's coordinates")
    ap.add_argument("--lean", action="store_true",
                    help="only the active values (and λ(H) at update 0): no unrestricted P⁻¹H")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-ff", dest="d_ff", type=int, default=256)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.98)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--corpus", default=os.path.join(ROOT, "results", "licenses.txt"))
    ap.add_argument("--params", help="start from this stability dump's /params")
    ap.add_argument("--check", help="compare loss and gradient with this stability dump")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.check:
        return check(a)
    if not os.path.exists(a.corpus):
        sys.exit(f"{a.corpus}: not found (setup/corpus.sh writes it)")
    print(json.dumps(run(a)), flush=True)


if __name__ == "__main__":
    main()
