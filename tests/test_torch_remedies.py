#!/usr/bin/python3
"""test_torch_remedies.py — LAMB (You et al. 2020, "Large batch optimization for deep learning:
training BERT in 76 minutes", Alg. 2, φ the identity) against a PyTorch float64 implementation
of the published rule written here (docs/design.md §6k), from the repository root:
/usr/bin/python3 tests/test_torch_remedies.py

K updates of a real model (tests/test_torch_optim.py's: tests/test_torch.py's model on the
parameters and batch of `stability dump`) in C and in PyTorch: every parameter after K updates
within 1e-12 relative per tensor (b_K aside, as there), /train/update_rms per layer against the
RMS of r = m̂/(√v̂ + ε); with and without weight decay (λθ inside the trust ratio).
Prints "ok"/"not ok" per check, then "torch remedies: N passed, M failed"; exit 1 if M > 0.
"""
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_optim as tto  # noqa: E402


class Lamb(tto.Reference):
    """LAMB, Alg. 2 of You et al. (2020): per tensor x, m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g²,
    r = m̂/(√v̂ + ε), u = r + λx, x ← x − η·(‖x‖/‖u‖)·u (ratio 1 when a norm is 0)."""

    def step(self, G):
        if self.kind != "lamb":
            return super().step(G)
        self.t += 1
        t, b1, b2, eps, wd = self.t, self.b1, self.b2, self.eps, self.wd
        self.u = {}
        for k in self.P:
            x = self.P[k]
            self.m[k] = b1 * self.m[k] + (1 - b1) * G[k]
            self.v[k] = b2 * self.v[k] + (1 - b2) * G[k] * G[k]
            r = (self.m[k] / (1 - b1 ** t)) / ((self.v[k] / (1 - b2 ** t)).sqrt() + eps)
            u = r + wd * x
            wn, un = float(torch.linalg.norm(x)), float(torch.linalg.norm(u))
            ratio = wn / un if wn > 0 and un > 0 else 1.0
            self.u[k] = r
            self.P[k] = x - self.lr * ratio * u


def main():
    tto.Reference = Lamb
    if not os.access(tto.STABILITY, os.X_OK):
        tto.check(f"{tto.STABILITY} exists (run make first)", False)
    else:
        torch.set_default_dtype(torch.float64)
        with tempfile.TemporaryDirectory(prefix="stability_torch_remedies_") as tmp:
            tto.run_updates(tmp, "lamb", {"train.optimizer": "lamb", "train.lr": 3e-3}, 5)
            tto.run_updates(tmp, "lamb_wd", {"train.optimizer": "lamb", "train.lr": 1e-2,
                                             "train.weight_decay": 0.01}, 5)
    passed = sum(tto.results)
    print(f"torch remedies: {passed} passed, {len(tto.results) - passed} failed")
    return 0 if passed == len(tto.results) else 1


if __name__ == "__main__":
    sys.exit(main())
