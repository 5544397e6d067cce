#!/usr/bin/python3
"""test_warmup_explained.py — scripts/warmup_explained.py's statistics and reading against cases
computed by hand (docs/curvature.md "The experiment"):

- AUC = Mann–Whitney U / (n_f·n_o) on a small set with a tie, counted pair by pair;
- the stratified bootstrap on fail = {1}, ok = {0, 2}: a replicate resamples ok only, giving
  {0,0} (AUC 1), {2,2} (AUC 0) with probability ¼ each and a mixed pair (AUC ½) with ½; the
  replicates' frequencies must match within 5 standard errors, and the interval is [0, 1];
- perfect separation gives AUC 1 with the interval [1, 1]; a constant indicator (RAdam's
  term) gives ½ with [½, ½]; the same seed gives the same replicates;
- RAdam's rₜ against Liu et al.'s numbers (r₅ = 0.077, r₁₀ = 0.22 at β₂ = 0.98; un-adapted
  while ρₜ ≤ 4, t ≤ 4), r₅ against Alg. 2 evaluated by hand, and every rₜ where PyTorch
  rectifies (ρₜ > 5) against torch.optim.RAdam's step on a constant gradient;
- reading: a synthetic merged atlas and indicator file (h5py) with one cell per outcome,
  whose outcomes, EoS peak, Kosson, update-RMS and Theorem-1 ratio are known by construction.
"""
import math
import os
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import warmup_explained as W  # noqa: E402

FAILS, PASSED = [], []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    (PASSED if ok else FAILS).append(what)


def test_auc():
    fail, ok = [3.0, 1.0, 2.0], [1.0, 0.5]
    # pairs: 3>1, 3>0.5, 1=1 (½), 1>0.5, 2>1, 2>0.5 -> 5.5 of 6
    pairs = sum(1.0 if f > o else 0.5 if f == o else 0.0 for f in fail for o in ok)
    check(pairs == 5.5 and abs(W.auc(fail, ok) - 5.5 / 6) < 1e-15,
          f"AUC = U/(n_f n_o) = 5.5/6 with a tie (got {W.auc(fail, ok):.6f})")
    check(abs(W.auc(ok, fail) - 0.5 / 6) < 1e-15, "AUC of the swapped groups = 1 − AUC")
    check(math.isnan(W.auc([], ok)), "AUC of an empty group is NaN")


def test_bootstrap():
    B = 4000
    reps = W.bootstrap_auc([1.0], [0.0, 2.0], B=B, seed=7)
    freq = {v: float(np.mean(reps == v)) for v in (0.0, 0.5, 1.0)}
    want = {0.0: 0.25, 0.5: 0.5, 1.0: 0.25}
    se = {v: math.sqrt(p * (1 - p) / B) for v, p in want.items()}
    check(all(abs(freq[v] - want[v]) < 5 * se[v] for v in want) and sum(freq.values()) == 1.0,
          f"bootstrap frequencies {freq} vs ¼, ½, ¼ (5 standard errors)")
    a, lo, hi = W.auc_ci([1.0], [0.0, 2.0], B=B, seed=7)
    check(a == 0.5 and lo == 0.0 and hi == 1.0, f"interval [0, 1] around ½ (got {a}, {lo}, {hi})")
    check(W.auc_ci([2, 3, 4], [0, 1], B=500) == (1.0, 1.0, 1.0), "perfect separation: 1 [1, 1]")
    check(W.auc_ci([0.9] * 4, [0.9] * 5, B=500) == (0.5, 0.5, 0.5), "a constant: ½ [½, ½]")
    # the paired difference of two indicators' AUCs resamples the cells once for both
    f, o = [0.3, 0.8, 0.5, 0.9], [0.1, 0.6, 0.4, 0.2, 0.7]
    d = W.paired_diff_ci(f, o, f, o, B=500)
    check(d == (0.0, 0.0, 0.0), f"paired: an indicator minus itself is 0 [0, 0] in every replicate {d}")
    d = W.paired_diff_ci([2, 3, 4], [0, 1], [0.9] * 3, [0.9] * 2, B=500)
    check(d == (0.5, 0.5, 0.5), f"paired: perfect separation minus a constant is ½ [½, ½] {d}")
    d = W.paired_diff_ci(f, o, [-x for x in f], [-x for x in o], B=500)
    a = W.auc(f, o)
    check(abs(d[0] - (2 * a - 1)) < 1e-12 and d[1] <= d[0] <= d[2],
          f"paired: an indicator minus its negation is 2·AUC − 1 = {2 * a - 1:.3f}, inside its interval {d}")
    r1, r2 = W.bootstrap_auc([1, 2, 5], [0, 3], 300, 3), W.bootstrap_auc([1, 2, 5], [0, 3], 300, 3)
    check(np.array_equal(r1, r2), "the same seed gives the same replicates")


def torch_radam_steps(beta2, T):
    """The steps torch.optim.RAdam (torch 1.13, an implementation apart from the script's) takes
    on a constant gradient 1 with lr 1 and eps 0: m̂ₜ = v̂ₜ = 1, so step t is rₜ once rectified
    (ρₜ > 5 in PyTorch's code) and 1 before."""
    import torch
    p = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.RAdam([p], lr=1.0, betas=(0.9, beta2), eps=0.0)
    steps, prev = [], 0.0
    for _ in range(T):
        p.grad = torch.ones(1, dtype=torch.float64)
        opt.step()
        steps.append(prev - float(p))
        prev = float(p)
    return steps


# r₅ at β₂ = 0.98 from Liu et al. 2020a, Alg. 2, by hand: ρ_∞ = 2/(1 − β₂) − 1 = 99,
# ρ₅ = ρ_∞ − 2·5·β₂⁵/(1 − β₂⁵), r₅ = √((ρ₅ − 4)(ρ₅ − 2)ρ_∞ / ((ρ_∞ − 4)(ρ_∞ − 2)ρ₅))
RHO5 = 99.0 - 10.0 * 0.98 ** 5 / (1.0 - 0.98 ** 5)                  # 4.9192…
R5 = math.sqrt((RHO5 - 4.0) * (RHO5 - 2.0) * 99.0 / (95.0 * 97.0 * RHO5))   # 0.0766…


def test_radam():
    r5, r10 = W.radam_rect(0.98, 5), W.radam_rect(0.98, 10)
    check(abs(r5 - 0.077) < 5e-4 and abs(r10 - 0.22) < 5e-3,
          f"RAdam r5 = {r5:.4f} (0.077), r10 = {r10:.4f} (0.22) at beta2 = 0.98")
    check(abs(r5 - R5) < 1e-12, f"r5 = {r5:.12f} against Alg. 2 by hand ({R5:.12f})")
    check(all(math.isnan(W.radam_rect(0.98, t)) for t in (1, 2, 3, 4)), "un-adapted for t <= 4")
    # against torch.optim.RAdam wherever PyTorch rectifies (its threshold is ρₜ > 5, the paper's 4)
    worst, n = 0.0, 0
    for beta2 in (0.98, 0.999):
        steps = torch_radam_steps(beta2, 40)
        for t in range(1, 41):
            rho = 2.0 / (1.0 - beta2) - 1.0 - 2.0 * t * beta2 ** t / (1.0 - beta2 ** t)
            if rho > 5.0:
                worst, n = max(worst, abs(W.radam_rect(beta2, t) - steps[t - 1])), n + 1
    check(n >= 60 and worst < 1e-12,
          f"rₜ = torch.optim.RAdam's step on a constant gradient, {n} (β₂, t) pairs, worst {worst:.1e}")


PARAMS = np.array([b"wq", b"bq", b"wk", b"bk", b"wv", b"bv", b"wo", b"bo", b"w1", b"b1", b"w2",
                   b"b2"], dtype=object)


def atlas_run(f, name, warm, status, val):
    g = f.create_group(f"runs/{name}")
    g.attrs["config"] = f"[model]\nlayers = 6\n[train]\nwarmup = {100 if warm else 1}\nbeta2 = 0.98\n"
    g.attrs["status"] = status
    t = g.create_group("train")
    t["loss"] = np.array([5.5, 4.0, val])
    t["val_loss"] = np.array([val])


def indicator_run(f, name, grad_w2, peaks, rel, rms):
    g = f.create_group(f"runs/{name}")
    g.attrs["config"] = "[model]\nlayers = 2\n[train]\nwarmup = 1\nbeta2 = 0.98\n"
    g.attrs["status"] = "done"
    t = g.create_group("train")
    gf = np.zeros((1, 2, len(PARAMS)))
    gf[0, 1, 10] = grad_w2                     # the last layer's w2
    gf[0, 0, 10] = 99.0                        # the first layer's: not Theorem 1's
    t["grad_fro"] = gf
    t["grad_fro"].attrs["param"] = PARAMS
    t["curv_step"] = np.array([0, 5, 10, 20, 25])
    t["stability_threshold"] = np.full(5, 100.0)
    t["precond_max_active"] = np.array([5000.0] + [100.0 * x for x in peaks] + [1e6])  # 25: out
    t["update_step"] = np.arange(1, 22)
    u = np.zeros((21, 2, len(PARAMS)))
    u[3, 1, 8] = rel                           # w1 at update 4
    u[0, 0, 1] = 1e9                           # a bias (from 0): not a matrix
    u[20, 0, 0] = 1e9                          # update 21: not counted
    t["update_rel"] = u
    t["update_rel"].attrs["param"] = PARAMS
    t["model_update"] = np.linspace(0.1, 2.1, 21)
    t["step"] = np.arange(1, 22)
    r = np.full((21, 2), 0.5)
    r[2, 1] = rms
    r[20, 0] = 50.0                            # update 21: not counted
    r[0, 0] = 9.0                              # update 1 (≈ 1 by construction): not counted
    t["update_rms"] = r


def test_reading():
    with tempfile.TemporaryDirectory() as d:
        atlas, ind = os.path.join(d, "a.h5"), os.path.join(d, "i.h5")
        with h5py.File(atlas, "w") as f:
            atlas_run(f, "post-layernorm-xavier_normal_L2_lr1e-3_w1", False, "done", 3.5)   # stuck
            atlas_run(f, "post-layernorm-xavier_normal_L2_lr1e-3_w100", True, "done", 2.5)
            atlas_run(f, "post-layernorm-xavier_normal_L2_lr1e-2_w1", False, "diverged", 3.0)
            atlas_run(f, "post-layernorm-xavier_normal_L2_lr1e-2_w100", True, "done", 3.6)
            atlas_run(f, "pre-layernorm-xavier_normal_L2_lr1e-3_w1", False, "done", 2.0)     # trains
        cells = W.read_outcomes(atlas, 3.2)
        check(cells[("post-layernorm-xavier_normal", 2, 1e-3)] == {"outcome": "stuck", "needs_warmup": True}
              and cells[("post-layernorm-xavier_normal", 2, 1e-2)] == {"outcome": "diverged", "needs_warmup": False}
              and cells[("pre-layernorm-xavier_normal", 2, 1e-3)]["outcome"] == "trains"
              and len(cells) == 3, f"outcomes and needs-warm-up by the atlas's rule ({cells})")
        with h5py.File(ind, "w") as f:
            indicator_run(f, "post-layernorm-xavier_normal_L2_lr1e-3_w1", 4.0, (1.0, 7.0, 2.0), 0.3, 3.0)
            indicator_run(f, "pre-layernorm-xavier_normal_L2_lr1e-3_w1", 2.0, (0.5, 0.25, 0.1), 0.1, 1.0)
        v = W.read_indicators(ind)
        p = v[("post-layernorm-xavier_normal", 2, 1e-3)]
        check(p["eos"] == 7.0 and p["eos0"] == 50.0, f"EoS peak over updates 1-20 and update 0 ({p['eos']}, {p['eos0']})")
        check(p["xiong"] == 4.0 and p["xiong_ratio"] == 2.0, f"Theorem 1: last layer's w2, ratio to Pre-LN ({p['xiong']}, {p['xiong_ratio']})")
        check(p["kosson"] == 0.3 and p["update_rms"] == 3.0 and abs(p["deepnet"] - 0.1) < 1e-15,
              f"Kosson over matrices and updates <= 20, update RMS over 2-20, model update at 1 ({p['kosson']}, {p['update_rms']}, {p['deepnet']})")
        check(abs(p["radam"] - (1 - R5)) < 1e-12, f"RAdam's term 1 − r5 from beta2 ({p['radam']:.6f})")


def main():
    test_auc()
    test_bootstrap()
    test_radam()
    test_reading()
    print(f"{len(PASSED)} passed, {len(FAILS)} failed")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
