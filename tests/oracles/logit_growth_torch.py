#!/usr/bin/python3
"""logit_growth_torch.py — an independent PyTorch reference for attention-logit growth
(docs/dynamics.md): the reference setting of docs/design.md trained in PyTorch, no project code.

    /usr/bin/python3 tests/oracles/logit_growth_torch.py [--lr 3e-3,1e-2,3e-2,1e-1] [--seeds 0,1]
        [--qk off,layernorm] [--placement pre] [--steps 500] [--dtype float32] [--out CSV]

A byte-level causal LM on results/licenses.txt (setup/corpus.sh): d = 128, L = 4, 4 heads,
d_ff = 512, GELU, n = 64, B = 16, tied embedding ·√d + sinusoidal positions (fairseq), Xavier
normal matrices, AdamW β = (0.9, 0.95), ε = 1e-8, no weight decay, 50 linear warm-up updates then
constant lr. Per run it prints the peak over updates of the max |attention logit| (max over
layers, heads, batch and unmasked (query, key) of |q·k|/√d_head, after QK-norm), the final loss
(mean of the last 20 updates) and the lowest layer-mean attention entropy at the last update.
Training windows are drawn at random from the first 90 % of the file, as the project's text
task does, but from torch's own generator: the numbers match the harness in distribution, not
bit for bit.
"""
import argparse
import math
import sys

import torch
import torch.nn.functional as Fn


class Block(torch.nn.Module):
    def __init__(self, d, h, dff, placement, qk):
        super().__init__()
        self.h, self.dh, self.placement, self.qk = h, d // h, placement, qk
        self.wq, self.wk, self.wv, self.wo = (torch.nn.Linear(d, d) for _ in range(4))
        self.w1, self.w2 = torch.nn.Linear(d, dff), torch.nn.Linear(dff, d)
        self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        if qk == "layernorm":
            self.qn, self.kn = torch.nn.LayerNorm(self.dh), torch.nn.LayerNorm(self.dh)
        for lin in (self.wq, self.wk, self.wv, self.wo, self.w1, self.w2):
            torch.nn.init.xavier_normal_(lin.weight)
            torch.nn.init.zeros_(lin.bias)

    def attn(self, x, stats):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.wk(x).view(B, T, self.h, self.dh).transpose(1, 2)
        v = self.wv(x).view(B, T, self.h, self.dh).transpose(1, 2)
        if self.qk == "layernorm":
            q, k = self.qn(q), self.kn(k)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)               # (B,H,T,T)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        with torch.no_grad():
            stats["maxlogit"] = max(stats["maxlogit"], s.abs().masked_fill(~mask, 0).max().item())
        s = s.masked_fill(~mask, float("-inf"))
        p = torch.softmax(s, dim=-1)
        with torch.no_grad():
            ent = -torch.special.xlogy(p, p).masked_fill(~mask, 0).sum(-1)   # 0·log 0 = 0
            stats["entropy"].append(ent.mean().item())
        ctx = (p @ v).transpose(1, 2).reshape(B, T, C)
        return self.wo(ctx)

    def forward(self, x, stats):
        if self.placement == "pre":
            x = x + self.attn(self.n1(x), stats)
            return x + self.w2(Fn.gelu(self.w1(self.n2(x))))
        x = self.n1(x + self.attn(x, stats))
        return self.n2(x + self.w2(Fn.gelu(self.w1(x))))


class LM(torch.nn.Module):
    def __init__(self, V, d, L, h, dff, T, placement, qk):
        super().__init__()
        self.d, self.placement = d, placement
        self.emb = torch.nn.Parameter(torch.randn(V, d) / math.sqrt(d))
        self.blocks = torch.nn.ModuleList(Block(d, h, dff, placement, qk) for _ in range(L))
        self.fn = torch.nn.LayerNorm(d) if placement == "pre" else None
        pos = torch.arange(T, dtype=torch.float64)[:, None]
        i = torch.arange(0, d, 2, dtype=torch.float64)
        ang = pos / torch.pow(10000.0, i / d)
        pe = torch.zeros(T, d, dtype=torch.float64)   # Vaswani et al. §3.5, as model/model.c
        pe[:, 0::2], pe[:, 1::2] = torch.sin(ang), torch.cos(ang)
        self.register_buffer("pe", pe)

    def forward(self, ids, stats):
        x = self.emb[ids] * math.sqrt(self.d) + self.pe[: ids.shape[1]].to(self.emb.dtype)
        for b in self.blocks:
            x = b(x, stats)
        if self.fn is not None:
            x = self.fn(x)
        return x @ self.emb.t()


def run(text, lr, seed, qk, placement, steps, dtype):
    torch.manual_seed(seed)
    V, d, L, h, dff, T, B = 256, 128, 4, 4, 512, 64, 16
    model = LM(V, d, L, h, dff, T, placement, qk).to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    ntrain = int(len(text) * 0.9)
    g = torch.Generator().manual_seed(1000 + seed)
    peak, losses, last_ent = 0.0, [], float("nan")
    for step in range(steps):
        starts = torch.randint(0, ntrain - T - 1, (B,), generator=g)
        win = torch.stack([text[s:s + T + 1] for s in starts.tolist()])
        stats = {"maxlogit": 0.0, "entropy": []}
        logits = model(win[:, :-1], stats)
        loss = Fn.cross_entropy(logits.reshape(-1, V), win[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        peak = max(peak, stats["maxlogit"])
        losses.append(loss.item())
        last_ent = min(stats["entropy"])
        if not math.isfinite(loss.item()):
            break
    tail = losses[-20:]
    return peak, sum(tail) / len(tail), last_ent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lr", default="3e-3,1e-2,3e-2,1e-1")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--qk", default="off,layernorm")
    ap.add_argument("--placement", default="pre")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--corpus", default="results/licenses.txt")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    text = torch.tensor(list(open(a.corpus, "rb").read()), dtype=torch.long)
    dtype = getattr(torch, a.dtype)
    rows = ["placement,qk,lr,seed,peak_maxlogit,final_loss,min_entropy_end"]
    for pl in a.placement.split(","):
        for qk in a.qk.split(","):
            for lr in a.lr.split(","):
                for seed in a.seeds.split(","):
                    p, l, e = run(text, float(lr), int(seed), qk, pl, a.steps, dtype)
                    rows.append(f"{pl},{qk},{lr},{seed},{p:.6g},{l:.6g},{e:.6g}")
                    print(rows[-1], flush=True)
    if a.out:
        open(a.out, "w").write("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
