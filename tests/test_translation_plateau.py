#!/usr/bin/python3
"""A translation run's plateau (docs/design.md §6d, "trains"): /train@unigram_entropy of a
translation run is the entropy of what its loss scores — the training split's target ids and one
EOS per pair, padding never scored — recomputed here from the .ids files the run reads (h5py,
numpy, no project code). About 2 s on 2 cores (a tiny encoder-decoder on a tiny id corpus).

Run from the repository root (make test does): /usr/bin/python3 tests/test_translation_plateau.py
1. A corpus of 40 ids written here (data/corpus.h's layout): 30 training pairs, one of them with a
   target too long for model.seq_len (the run drops it, so the entropy must too).
2. label_smoothing 0: the attribute = -sum p ln p of the kept targets' id counts (+ EOS per pair),
   to 1e-12 relative; label_smoothing 0.1: the entropy of t = 0.9 p + 0.1/V over the V ids, the
   loss of the best context-free model under the smoothed loss (nn/loss.c's target).
3. The table of runs (`stability info --runs`): its plateau column is the attribute, and trains is
   (not diverged, final loss < plateau - 0.1). A copy whose final loss is set to plateau + 0.05
   (between the plateau and the first loss - 0.1) does not train; the same copy without the
   attribute (a file written before it) falls back to the first loss and trains.
Prints "ok"/"not ok" per check, then "translation_plateau: N passed, M failed"; exit 1 if M > 0.
"""
import csv
import io
import math
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
V, T, EOS = 40, 8, 3
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def make_corpus(d):
    """Pairs of ids in [4, V) drawn with a skewed law; pair 7's target is too long for T."""
    rng = np.random.default_rng(5)
    w = 1.0 / np.arange(1, V - 3)
    w /= w.sum()
    split = {"train": 30, "valid": 4}
    for name, n in split.items():
        en, de = [], []
        for i in range(n):
            ls, lt = rng.integers(2, T - 1), rng.integers(1, T - 1)
            if name == "train" and i == 7:
                lt = T + 3   # |t| + 1 > seq_len: dropped by the run
            en.append(rng.choice(np.arange(4, V), size=ls, p=w))
            de.append(rng.choice(np.arange(4, V), size=lt, p=w))
        for side, rows in (("en", en), ("de", de)):
            with open(os.path.join(d, f"{name}.{side}.ids"), "w") as f:
                f.writelines(" ".join(map(str, r)) + "\n" for r in rows)


def expected(d, eps):
    """The entropy of the scored targets of the kept training pairs (with eps: of t)."""
    count = np.zeros(V)
    with open(os.path.join(d, "train.en.ids")) as fe, open(os.path.join(d, "train.de.ids")) as fd:
        for s, t in zip(fe, fd):
            s, t = s.split(), [int(x) for x in t.split()]
            if len(s) + 1 > T or len(t) + 1 > T:
                continue
            for x in t + [EOS]:
                count[x] += 1
    p = count / count.sum()
    q = (1 - eps) * p + eps / V
    q = q[q > 0]
    return float(-(q * np.log(q)).sum()), int(count.sum())


def train(d, out, eps):
    sets = ["model.arch=encdec", "data.task=translation", f"data.path={d}", f"model.vocab={V}",
            f"model.seq_len={T}", f"model.src_len={T}", "model.layers=1", "model.dec_layers=1",
            "model.d_model=16", "model.heads=2", "model.d_ff=24", "data.batch=4",
            "train.steps=20", "train.warmup=1", "train.lr=3e-3", "train.eval_every=20",
            "probe.every=20", f"data.label_smoothing={eps}"]
    args = [STABILITY, "train", "configs/tiny.ini", "--out", out, "--quiet"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=300)
    check(f"label_smoothing {eps}: train exit 0", p.returncode == 0, p.stderr[-400:])
    return p.returncode == 0


def runs_row(path):
    p = subprocess.run([STABILITY, "info", "--runs", path], capture_output=True, text=True,
                       env=ENV, timeout=60)
    rows = list(csv.DictReader(io.StringIO(p.stdout), delimiter="\t"))
    return rows[0] if p.returncode == 0 and len(rows) == 1 else {}


def set_final(path, value):
    """The copy's final loss (its last validation loss, what the table reads) set to value."""
    with h5py.File(path, "r+") as f:
        v = f["train/val_loss"]
        v[-1] = value


def main():
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        os.mkdir(corpus)
        make_corpus(corpus)
        for eps in (0.0, 0.1):
            out = os.path.join(tmp, f"run{eps}.h5")
            if not train(corpus, out, eps):
                continue
            want, n = expected(corpus, eps)
            with h5py.File(out, "r") as f:
                got = float(f["train"].attrs.get("unigram_entropy", math.nan))
                loss0 = float(f["train/loss"][0])
            check(f"label_smoothing {eps}: /train@unigram_entropy {got:.12f} = the {n} scored "
                  f"targets' entropy {want:.12f}", abs(got - want) <= 1e-12 * want, f"{got}")
            row = runs_row(out)
            plateau, final = float(row.get("plateau", "nan")), float(row.get("final_loss", "nan"))
            check(f"label_smoothing {eps}: the table's plateau is the attribute",
                  plateau == got, str(row))
            want_trains = int(row.get("diverged") == "0" and final < plateau - 0.1)
            check(f"label_smoothing {eps}: trains = final {final:.4f} < plateau - 0.1",
                  row.get("trains") == str(want_trains), str(row))
            if eps:
                continue
            stuck = os.path.join(tmp, "stuck.h5")
            shutil.copy(out, stuck)
            set_final(stuck, got + 0.05)
            check(f"stuck at plateau + 0.05 ({got + 0.05:.4f} < first loss {loss0:.4f} - 0.1)",
                  got + 0.05 < loss0 - 0.1)
            check("a run stuck just above the plateau does not train",
                  runs_row(stuck).get("trains") == "0", str(runs_row(stuck)))
            with h5py.File(stuck, "r+") as f:
                f["train"].attrs.pop("unigram_entropy", None)
            old = runs_row(stuck)
            check("the same file without the attribute (written before it): plateau nan, "
                  "falls back to the first loss and trains",
                  old.get("plateau") == "nan" and old.get("trains") == "1", str(old))
            print(f"#   plateau {got:.4f}, first loss {loss0:.4f}, final {final:.4f}")
    passed = sum(results)
    print(f"translation_plateau: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
