#!/usr/bin/python3
"""The diagnosis' one warm-up answer, checked on real runs (docs/design.md §6g, "One warm-up
answer"; issue 43).

Run from the repository root (make test does): /usr/bin/python3 tests/test_warmup_answer.py
The anchor's stuck run (docs/curvature.md): Post-LN, d = 64, L = 6, byte-level text, Adam
(0.9, 0.98), lr 3e-3, no warm-up, 300 updates, at seeds 1 and 2. Each must
1. be diagnosed stuck on the unigram plateau, with the lower layers' gradient collapse (the rule
   of measure/diagnose.h, at the default probe rows), and a warning that names one warm-up;
2. train with that warm-up: no plateau, the final loss (measure/outcome.h) more than 0.1 nats
   under the unigram entropy, and no gradient collapse.
And a leak: the copy task without the causal mask is flagged; with it, it is not.
Prints "ok"/"not ok" per check, then "warmup_answer: N passed, M failed"; exit 1 if M > 0.
"""
import os
import re
import subprocess
import sys
import tempfile

import h5py

STABILITY = os.environ.get("STABILITY", "./stability")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive", STABILITY_THREADS="1")
ENV.pop("STABILITY_SWEEP_THREADS", None)
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def start(tmp, name, *sets):
    out = os.path.join(tmp, name + ".h5")
    args = [STABILITY, "train", "atlas", "--out", out, "--force"]
    for s in ("train.lr=3e-3", "train.steps=300", *sets):
        args += ["--set", s]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=ENV)


def finish(tmp, name, p):
    out = p.communicate(timeout=1800)[0]
    h5 = os.path.join(tmp, name + ".h5")
    info = subprocess.run([STABILITY, "info", h5], capture_output=True, text=True, env=ENV).stdout
    with h5py.File(h5, "r") as f:
        uni = float(f["train"].attrs["unigram_entropy"])
        val = f["train/val_loss"][:]
    flags = re.search(r"diagnosis: (\S+)", out)
    return p.returncode, out, info, uni, float(val[-1]) if len(val) else float("nan"), \
        flags.group(1) if flags else ""


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    elif not os.path.exists("results/licenses.txt"):
        check("results/licenses.txt exists (setup/corpus.sh)", False)
    else:
        with tempfile.TemporaryDirectory(prefix="stability_warmup_answer_") as tmp:
            seeds = (1, 2)
            procs = {s: start(tmp, f"s{s}", f"init.seed={s}", "train.warmup=1") for s in seeds}
            told = {}
            for s in seeds:
                rc, out, info, uni, val, flags = finish(tmp, f"s{s}", procs[s])
                m = re.search(r"--set train\.warmup=(\d+)", out)
                told[s] = int(m.group(1)) if m else None
                check(f"seed {s} without warm-up: stuck (val {val:.3f}, unigram {uni:.3f}), its lower "
                      f"layers' gradient collapsed ({flags}), one warm-up named ({told[s]})",
                      rc == 0 and "plateau" in flags and "grad-collapse" in flags and m and
                      len(set(re.findall(r"--set train\.warmup=(\d+)", out + info))) == 1, out[-1500:])
            if all(told.values()):
                procs = {s: start(tmp, f"w{s}", f"init.seed={s}", f"train.warmup={told[s]}") for s in seeds}
                for s in seeds:
                    rc, out, info, uni, val, flags = finish(tmp, f"w{s}", procs[s])
                    check(f"seed {s} with the warm-up it was told ({told[s]}): trains (val {val:.3f} < "
                          f"unigram {uni:.3f} - 0.1), diagnosis {flags}",
                          rc == 0 and val < uni - 0.1 and "plateau" not in flags and
                          "grad-collapse" not in flags, out[-800:])
            # a leak: copy is next-token prediction; without the causal mask position t sees t+1
            for causal in ("false", "true"):
                r = subprocess.run([STABILITY, "train", "tiny", "--out", os.path.join(tmp, "c.h5"),
                                    "--force", "--set", "data.task=copy", "--set", f"model.causal={causal}",
                                    "--set", "train.steps=50"], capture_output=True, text=True, env=ENV)
                leak = "warning: the targets leak into the input" in r.stderr and "leak" in r.stdout
                check(f"copy with causal = {causal}: the leak flag {'raised' if causal == 'false' else 'not raised'}",
                      r.returncode == 0 and leak == (causal == "false"), r.stderr[-600:])
    passed = sum(results)
    print(f"warmup_answer: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
