#!/usr/bin/python3
"""test_torch_mlm.py — data.task = mlm (BERT's masked LM, docs/design.md §6f) against PyTorch
float64: one training step's loss and every gradient at 1e-9, and the batch the C program built.

For each case `./stability dump` writes the corrupted batch, the loss and the gradients; the
PyTorch reference of tests/test_torch.py (its forward, its tolerances) recomputes them. Beyond
that comparison each case asserts what makes it masked-LM:
  - the clean row (the target where a position is chosen, the input elsewhere) is a window of
    the corpus' training split: unchosen inputs are the text's bytes, targets the original ones;
  - [MASK] (id 256) appears only at chosen positions;
  - the loss is over the chosen positions only: the C loss equals the reference's with the
    unchosen positions ignored, and differs from the loss scoring every position;
  - attention is bidirectional: the C loss differs from the reference's with a causal mask.

    /usr/bin/python3 tests/test_torch_mlm.py [--binary PATH] [--keep DIR] [--case S] [-v]
The last line is `torch mlm: N passed, M failed`.
"""
import os
import random
import subprocess
import sys

import numpy as np
import torch

import torch_ref as ref  # the scaffolding the PyTorch cross-checks share
import test_torch as lm  # the single stack's reference, which the masked LM reuses

MASK = 256
CASES = [   # name, settings over the base below
    ("post-rate0.15", {"model.placement": "post"}),
    ("pre-rate0.15", {"model.placement": "pre"}),
    ("post-rate0.5-gelu", {"model.placement": "post", "data.mask_rate": 0.5,
                           "model.activation": "gelu"}),
    ("pre-rate0.3-untied", {"model.placement": "pre", "data.mask_rate": 0.3,
                            "model.tie_embeddings": "false"}),
]
BASE = {"model.layers": 2, "model.d_model": 16, "model.heads": 2, "model.d_ff": 24,
        "model.vocab": 257, "model.seq_len": 24, "model.causal": "false", "model.dropout": 0,
        "data.task": "mlm", "data.batch": 4}


def write_corpus(path, n=20000, seed=5):
    """Deterministic English-like bytes (words from a small lexicon)."""
    rng = random.Random(seed)
    words = "the of layer norm warm up gradient model learning rate train loss step a is".split()
    out = []
    while sum(len(w) + 1 for w in out) < n:
        out.append(rng.choice(words))
    with open(path, "w") as f:
        f.write(" ".join(out)[:n])


def mask_rate(cfg_text):
    """data.mask_rate of a resolved config (written for data.task = mlm only)."""
    import configparser
    cp = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
    cp.read_string(cfg_text)
    return float(cp.get("data", "mask_rate"))


def mlm_checks(path, corpus, res):
    """The masked-LM properties of the module docstring, appended to res['problems']."""
    import h5py
    with h5py.File(path, "r") as f:
        cfg_text = ref.attr_text(f.attrs["config"])
        m = ref.parse_config(cfg_text)
        tokens = np.asarray(f["batch/tokens"][()], dtype=np.int64)
        targets = np.asarray(f["batch/targets"][()], dtype=np.int64)
        loss_c = float(np.asarray(f["loss"][()]).reshape(-1)[0])
        params = ref.read_group(f, "params")
    text = open(corpus, "rb").read()
    train = text[: len(text) - max(int(0.1 * len(text)), m["seq_len"] + 1)]   # data.h's split
    chosen = targets >= 0
    clean = np.where(chosen, targets, tokens)
    for b in range(tokens.shape[0]):
        if bytes(clean[b].astype(np.uint8)) not in train:
            res["problems"].append(f"row {b}: the clean row is not a window of the training text")
    if np.any((tokens == MASK) & ~chosen):
        res["problems"].append("[MASK] at a position that is not scored")
    if not np.any(tokens == MASK):
        res["problems"].append("no [MASK] in the batch")
    # the share scored: binomial(B·T, rate), plus at most one per row (a row with none chosen
    # gets one); 5 standard deviations either side
    n, rate = chosen.size, mask_rate(cfg_text)
    sd = (n * rate * (1 - rate)) ** 0.5
    if not (n * rate - 5 * sd <= chosen.sum() <= n * rate + 5 * sd + tokens.shape[0]):
        res["problems"].append(f"{chosen.sum()} of {n} positions scored, binomial({n}, {rate}) "
                               f"expects {n * rate:.1f} ± {sd:.1f}")
    P = {k: torch.tensor(np.asarray(v, dtype=np.float64)) for k, v in params.items()}
    tt = torch.from_numpy(tokens)
    with torch.no_grad():
        every = float(lm.forward_loss(P, m, tt, torch.from_numpy(clean)))
        causal = float(lm.forward_loss(P, {**m, "causal": True}, tt, torch.from_numpy(targets)))
    for what, other in (("every position scored", every), ("causal attention", causal)):
        if abs(other - loss_c) <= 1e-6 * abs(other):
            res["problems"].append(f"the C loss {loss_c:.12g} equals the reference's with "
                                   f"{what} ({other:.12g})")
    res["ok"] = not res["problems"]
    res["rate"] = float(chosen.mean())


def run_cases(args, workdir):
    binary = args.binary if os.path.isabs(args.binary) else os.path.join(ref.REPO, args.binary)
    corpus = os.path.join(workdir, "corpus.txt")
    write_corpus(corpus)
    passed = failed = 0
    for i, (name, settings) in enumerate(CASES):
        if args.case and args.case not in name:
            continue
        ini, out = os.path.join(workdir, name + ".ini"), os.path.join(workdir, name + ".h5")
        ref.write_ini(ini, {**settings, "data.path": corpus, "init.seed": 301 + 7 * i},
                      base=BASE, writer="tests/test_torch_mlm.py")
        res = {"ok": False, "loss_err": None, "worst": (None, 0.0), "errors": {},
               "problems": [], "notes": []}
        p = subprocess.run([binary, "dump", "--config", ini, "--out", out, "--perturb", "0.3"],
                           cwd=ref.REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=300)
        if p.returncode != 0 or not os.path.exists(out):
            res["problems"].append(f"`stability dump` exit {p.returncode}: {p.stdout.strip()[-300:]}")
        else:
            res = lm.check_dump(out)
            if res["loss_err"] is not None:
                mlm_checks(out, corpus, res)
        ref.report(name, res, args.verbose)
        if "rate" in res:
            print(f"       scored positions: {res['rate']:.3f} of the batch")
        passed, failed = passed + bool(res["ok"]), failed + (not res["ok"])
    return passed, failed


def self_test(args, workdir):
    """The masked-LM checks must catch a batch scored everywhere and a [MASK] left unscored."""
    corpus = os.path.join(workdir, "corpus.txt")
    write_corpus(corpus)
    ini, out = os.path.join(workdir, "st.ini"), os.path.join(workdir, "st.h5")
    ref.write_ini(ini, {"data.path": corpus, "init.seed": 3}, base=BASE,
                  writer="tests/test_torch_mlm.py")
    binary = args.binary if os.path.isabs(args.binary) else os.path.join(ref.REPO, args.binary)
    subprocess.run([binary, "dump", "--config", ini, "--out", out, "--perturb", "0.3"],
                   cwd=ref.REPO, check=True, stdout=subprocess.DEVNULL)
    import h5py
    passed = failed = 0
    for what, mutate in (("every position scored", "all"), ("unscored [MASK]", "mask")):
        with h5py.File(out, "r+") as f:
            tok, tgt = f["batch/tokens"][()], f["batch/targets"][()]
            if mutate == "all":   # a program scoring every position: its batch and its loss
                m = ref.parse_config(ref.attr_text(f.attrs["config"]))
                clean = np.where(tgt >= 0, tgt, tok)
                P = {k: torch.tensor(np.asarray(v, dtype=np.float64))
                     for k, v in ref.read_group(f, "params").items()}
                with torch.no_grad():
                    every = float(lm.forward_loss(P, m, torch.from_numpy(tok.astype(np.int64)),
                                                   torch.from_numpy(clean.astype(np.int64))))
                f["batch/targets"][...] = clean
                f["loss"][...] = every
            else:
                t = tgt.copy()
                t[tok == MASK] = -1
                f["batch/targets"][...] = t
        res = {"problems": []}
        mlm_checks(out, corpus, res)
        caught = bool(res["problems"])
        print(f"{'ok  ' if caught else 'FAIL'} self-test: {what} {'caught' if caught else 'missed'}")
        passed, failed = passed + caught, failed + (not caught)
        subprocess.run([binary, "dump", "--config", ini, "--out", out, "--perturb", "0.3",
                        "--force"], cwd=ref.REPO, check=True, stdout=subprocess.DEVNULL)
    return passed, failed


if __name__ == "__main__":
    sys.exit(ref.run_main(__doc__, "torch mlm",
                          f"test_torch_mlm: PyTorch {torch.__version__}, float64; grad tol "
                          f"{ref.GRAD_TOL:g}, loss tol {ref.LOSS_TOL:g}",
                          self_test, run_cases, "the masked-LM checks catch wrong batches"))
