#!/usr/bin/python3
"""tied_output_gradient.py — why Pre-LN's last-FFN gradient falls more slowly than L^{-1/2}
with tied embeddings (docs/single_stack.md, Fig. 3(c,d)).

For Pre-LN at d = 256 and L = 6, 10, 14, tied and untied, it dumps one batch with
`stability dump`, rebuilds the forward pass in PyTorch (tests/test_torch.py's reading of the
contract, with tests/torch_ref.py's layers) and prints, averaged over tokens:
  |g|             ‖∂L/∂x_final‖ (the gradient entering the final LayerNorm from above)
  |dx|/|g|        ‖∂L/∂x_{L+1}‖ / ‖∂L/∂x_final‖, and beside it √d/‖x_{L+1} − μ‖ (Lemma 3)
  cos(g, x)       |cos| between g and the centred x_{L+1}: the share the LayerNorm removes
  |sum g|, |sum dx|  the same gradients summed over the batch's tokens (their coherent part,
                  which is what the expected gradient of a weight keeps)
Each row is the mean over init.seed = 1, 2, 3 (one batch each).
Run from the repository root after `make`: /usr/bin/python3 tests/oracles/tied_output_gradient.py
"""
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import test_torch as tt  # noqa: E402  (the lm stack of docs/design.md §1, shared with the tests)
import torch_ref as ref  # noqa: E402  (config reader, dump reader, norms, loss)


def measure(path):
    with h5py.File(path, "r") as f:
        m = ref.parse_config(ref.attr_text(f.attrs["config"]))
        P = {k: torch.tensor(v, dtype=torch.float64) for k, v in ref.read_group(f, "params").items()}
        tok = torch.from_numpy(f["batch/tokens"][...].astype(np.int64))
        tgt = torch.from_numpy(f["batch/targets"][...].astype(np.int64))
    B, T = tok.shape
    C = m["d_model"]
    x_last = tt.forward_stack(P, m, tok).detach().requires_grad_(True)    # x_{L+1}   (B, T, C)
    x_final = ref.apply_norm(x_last, P, "final_norm", m)
    x_final.retain_grad()
    loss = ref.output_loss(P, m, x_final, tgt)
    loss.backward()
    g = x_final.grad.reshape(B * T, C)
    dx = x_last.grad.reshape(B * T, C)
    xc = (x_last - x_last.mean(-1, keepdim=True)).detach().reshape(B * T, C)
    cos = (g * xc).sum(1).abs() / (g.norm(dim=1) * xc.norm(dim=1))
    return (g.norm(dim=1).mean().item(), (dx.norm(dim=1) / g.norm(dim=1)).mean().item(),
            (math.sqrt(C) / xc.norm(dim=1)).mean().item(), cos.mean().item(),
            g.sum(0).norm().item(), dx.sum(0).norm().item())


def main():
    print(f"{'tied':>5} {'L':>3} {'|g|':>8} {'|dx|/|g|':>9} {'sqrt(d)/|x-mu|':>15} {'cos(g,x)':>9} "
          f"{'|sum g|':>8} {'|sum dx|':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for tied in ("true", "false"):
            for L in (6, 10, 14):
                rows = []
                for seed in (1, 2, 3):
                    out = os.path.join(tmp, f"d_{tied}_{L}_{seed}.h5")
                    subprocess.run(["./stability", "dump", "--config", "postln_L6",
                                    "--set", "model.placement=pre", "--set", f"model.layers={L}",
                                    "--set", "model.d_model=256", "--set", "model.d_ff=512",
                                    "--set", f"model.tie_embeddings={tied}",
                                    "--set", f"init.seed={seed}", "--out", out],
                                   check=True, stdout=subprocess.DEVNULL)
                    rows.append(measure(out))
                g, ratio, bound, cos, gsum, dxsum = np.mean(rows, axis=0)
                print(f"{tied:>5} {L:3d} {g:8.5f} {ratio:9.4f} {bound:15.4f} {cos:9.3f} "
                      f"{gsum:8.4f} {dxsum:9.4f}")


if __name__ == "__main__":
    main()
