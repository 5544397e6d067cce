#!/usr/bin/python3
"""bench_torch.py — PyTorch's time for one forward+backward (--update 1: and an Adam step) of the
model bench.c times.

Same shapes and placement as src/model/model.c (docs/design.md §1, §6b): d (default 512), 4 heads, d_ff,
n=64, batch 8, vocab, LayerNorm, ReLU, tied embeddings (one table for source, target and output),
sinusoidal positions, final LayerNorm for Pre-LN (each stack), W stored [in][out] (y = x·W + b);
--arch encdec: an encoder and a decoder of --layers layers each (causal self-attention,
cross-attention to the encoder's output, S = T); --causal 1: a causal lm. Idiomatic fast PyTorch:
F.layer_norm, batched matmul attention (masked_fill for causal), F.cross_entropy,
torch.optim.Adam; gradients dropped (grad = None) before every step, as a training loop does.

    OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=2 \
        /usr/bin/python3 bench/bench_torch.py --layers 6 --placement post --dtype float64 \
        --threads 2 --settings 1:2,2:2,2:1

--settings B:T,...: the thread settings to time in this one process, alternately (round r times
every setting once, in an order rotated each round, so that drift slows all alike): OpenBLAS's
threads B (openblas_set_num_threads of the OpenBLAS torch loaded, libopenblas.so.0; the process
starts with OPENBLAS_NUM_THREADS = the largest B, so its pool exists) and torch.set_num_threads(T).
The kernels (OPENBLAS_CORETYPE), OMP_WAIT_POLICY and ATEN_CPU_CAPABILITY are read when the
libraries load, so bench.c starts one process per kernel family, policy and capability
(docs/performance.md, "PyTorch at its fastest").

Prints one line per setting: TORCH blas=B intra=T core=FAMILY cap=CAPABILITY ms_median=...
ms_min=... ms_max=... rss_kb=... (core: the family OpenBLAS runs, openblas_get_corename; cap: the
vector width ATen's own kernels run; rss_kb: the process's peak).
"""
import argparse
import ctypes
import math
import resource
import time

import torch
import torch.nn.functional as F


def build(L, C, H, F_, V, dtype, gen, encdec=False):
    def xavier(i, o):
        return (torch.randn(i, o, generator=gen, dtype=dtype) * math.sqrt(2.0 / (i + o)))

    P = {"tok_embed": torch.randn(V, C, generator=gen, dtype=dtype) / math.sqrt(C)}
    stacks = ("enc/", "dec/") if encdec else ("",)
    for st in stacks:
        for l in range(L):
            p = f"{st}{l:02d}/"
            attns = ("", "x") if st == "dec/" else ("",)   # decoder: self and cross attention
            for a in attns:
                for w in ("wq", "wk", "wv", "wo"):
                    P[p + a + w] = xavier(C, C)
                for b in ("bq", "bk", "bv", "bo"):
                    P[p + a + b] = torch.zeros(C, dtype=dtype)
            P[p + "b2"] = torch.zeros(C, dtype=dtype)
            P[p + "w1"], P[p + "b1"] = xavier(C, F_), torch.zeros(F_, dtype=dtype)
            P[p + "w2"] = xavier(F_, C)
            for n in ("norm1", "norm2", "norm3") if st == "dec/" else ("norm1", "norm2"):
                P[p + n + ".gamma"] = torch.ones(C, dtype=dtype)
                P[p + n + ".beta"] = torch.zeros(C, dtype=dtype)
        P[st + "final.gamma"] = torch.ones(C, dtype=dtype)
        P[st + "final.beta"] = torch.zeros(C, dtype=dtype)
    for t in P.values():
        t.requires_grad_(True)
    return P


def positional_encoding(T, C, dtype):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    i2 = (torch.arange(C) // 2 * 2).to(torch.float64)[None, :]
    angle = t / (10000.0 ** (i2 / C))
    pe = torch.where(torch.arange(C)[None, :] % 2 == 0, torch.sin(angle), torch.cos(angle))
    return pe.to(dtype)


def forward(P, tokens, targets, pe, L, H, placement, causal=False, src=None):
    B, T = tokens.shape
    V, C = P["tok_embed"].shape
    Dh = C // H
    eps = 1e-5

    def ln(x, name):
        return F.layer_norm(x, (C,), P[name + ".gamma"], P[name + ".beta"], eps)

    def mha(a, p, kv=None, mask=None):
        kv = a if kv is None else kv
        Tq, Tk = a.shape[1], kv.shape[1]
        q = (a @ P[p + "wq"] + P[p + "bq"]).view(B, Tq, H, Dh).transpose(1, 2)
        k = (kv @ P[p + "wk"] + P[p + "bk"]).view(B, Tk, H, Dh).transpose(1, 2)
        v = (kv @ P[p + "wv"] + P[p + "bv"]).view(B, Tk, H, Dh).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(Dh)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        att = torch.softmax(s, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(B, Tq, C)
        return ctx @ P[p + "wo"] + P[p + "bo"]

    def ffn(x, p):
        return torch.relu(x @ P[p + "w1"] + P[p + "b1"]) @ P[p + "w2"] + P[p + "b2"]

    def stack(x, st, mask, mem=None):
        for l in range(L):
            p = f"{st}{l:02d}/"
            subs = [lambda u, p=p: mha(u, p, mask=mask)]
            if mem is not None:
                subs.append(lambda u, p=p: mha(u, p + "x", kv=mem))
            subs.append(lambda u, p=p: ffn(u, p))
            for i, f in enumerate(subs):
                n = f"{p}norm{i + 1}"
                x = ln(x + f(x), n) if placement == "post" else x + f(ln(x, n))
        return ln(x, st + "final") if placement == "pre" else x

    Tmax = max(T, src.shape[1] if src is not None else 0)
    future = torch.triu(torch.ones(Tmax, Tmax, dtype=torch.bool), 1)[:T, :T]
    embed = lambda ids: P["tok_embed"][ids] * math.sqrt(C) + pe[: ids.shape[1]]
    if src is None:
        x = stack(embed(tokens), "", future if causal else None)
    else:
        mem = stack(embed(src), "enc/", None)
        x = stack(embed(tokens), "dec/", future, mem)
    logits = x @ P["tok_embed"].t()
    return F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--placement", choices=("post", "pre"), default="post")
    ap.add_argument("--dtype", choices=("float64", "float32", "bfloat16"), default="float64",
                    help="bfloat16: float32 parameters under torch.autocast('cpu', bfloat16)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-ff", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--arch", choices=("lm", "encdec"), default="lm")
    ap.add_argument("--causal", type=int, default=0)
    ap.add_argument("--update", type=int, default=0, help="1: time forward+backward+Adam")
    ap.add_argument("--settings", default="", help="B:T,... OpenBLAS:torch threads (default N:N)")
    a = ap.parse_args()
    settings = [tuple(int(x) for x in st.split(":")) for st in a.settings.split(",") if st]
    settings = settings or [(a.threads, a.threads)]
    blas = ctypes.CDLL("libopenblas.so.0")   # the library torch's BLAS calls run in (ldd)
    blas.openblas_get_corename.restype = ctypes.c_char_p
    core = blas.openblas_get_corename().decode()
    # the vector width of ATen's own kernels (ATEN_CPU_CAPABILITY, or PyTorch's choice)
    cap = torch.__config__.show().split("CPU capability usage: ")[-1].split()[0]
    torch.set_num_threads(a.threads)
    # bfloat16: mixed precision as PyTorch does it on a CPU, float32 parameters and Adam, the
    # matmuls in bfloat16 (oneDNN) under autocast
    autocast = a.dtype == "bfloat16"
    dtype = torch.float32 if autocast else getattr(torch, a.dtype)
    gen = torch.Generator().manual_seed(1)
    encdec = a.arch == "encdec"
    P = build(a.layers, a.d_model, a.heads, a.d_ff, a.vocab, dtype, gen, encdec)
    opt = torch.optim.Adam(P.values(), lr=1e-4, betas=(0.9, 0.98), eps=1e-8) if a.update else None
    # Zipf(1.1) tokens as the C benchmark draws them (speed does not depend on the values)
    w = torch.arange(1, a.vocab + 1, dtype=torch.float64) ** -1.1
    seq = torch.multinomial(w, a.batch * (a.seq_len + 1), replacement=True, generator=gen)
    seq = seq.view(a.batch, a.seq_len + 1)
    tokens, targets = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    src = None
    if encdec:
        src = torch.multinomial(w, a.batch * a.seq_len, replacement=True, generator=gen)
        src = src.view(a.batch, a.seq_len)
    pe = positional_encoding(a.seq_len, a.d_model, dtype)

    def update():
        t0 = time.perf_counter()
        for t in P.values():
            t.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = forward(P, tokens, targets, pe, a.layers, a.heads, a.placement, a.causal, src)
        loss.backward()
        if opt is not None:
            opt.step()
        return 1e3 * (time.perf_counter() - t0)

    def use(setting):
        blas.openblas_set_num_threads(setting[0])
        torch.set_num_threads(setting[1])

    for i, st in enumerate(settings):   # PyTorch's first updates are 2-3x slow; after a switch,
        use(st)                          # one update starts the setting's pools
        for _ in range(a.warmup if i == 0 else 1):
            update()
    ms = {st: [] for st in settings}
    for r in range(a.steps):
        for i in range(len(settings)):
            st = settings[(i + r) % len(settings)]
            use(st)
            ms[st].append(update())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for st in settings:
        v = sorted(ms[st])
        n = len(v)
        med = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
        print(f"TORCH blas={st[0]} intra={st[1]} core={core} cap={cap} ms_median={med:.4f} "
              f"ms_min={v[0]:.4f} ms_max={v[-1]:.4f} rss_kb={rss}")

if __name__ == "__main__":
    main()
