#!/usr/bin/python3
"""The same bits at every thread count, from the repository root: /usr/bin/python3 tests/test_threads.py

Every float64 result is defined by the program, not by the thread count (docs/performance.md,
"Same bits at every thread count"). A representative subset of scripts/same_results.py's cases,
big enough that the GEMMs are shared among the pool (256 and 320 rows at d = 64, nn/gemm.h),
runs at 1, 2, 3 and 16 threads (STABILITY_THREADS), and every dataset and attribute of each
file must equal the 1-thread file's, byte for byte:
1. training runs: lm Post-LN, DeepNorm, dropout with Zipf tokens; enc-dec Pre-LN and Post-LN
   with dropout and label smoothing; a dump with the logits cut by columns (V = 1000) and K
   between one and two of OpenBLAS's K blocks (320 rows); an enc-dec probe;
2. a training run stopped midway (SIGTERM after update 6) at one thread count and resumed at
   another (1 -> 1, 3 -> 16, 16 -> 2): the same file as 1 -> 1, and the same /train as the run
   straight through;
3. a sweep of two runs with --jobs 2 at STABILITY_THREADS = 2, 4, 6, 32 (runs at 1, 2, 3 and
   16 threads each): the same merged file;
4. the same kernels on every machine (util/blascore.h): without OPENBLAS_CORETYPE a run records
   blas_core = Haswell on a CPU with AVX2 and FMA and equals, byte for byte, a run told
   OPENBLAS_CORETYPE=Haswell; a user's OPENBLAS_CORETYPE=Prescott wins, is recorded, and gives
   other bits (why the program pins one set of kernels).
The float32 core (train.precision = float32, its GEMMs through cblas_sgemm in the same blocks)
is held to the same as in 1 (a float32 run resumed is checked in tests/test_float32.py): lm
Post-LN and enc-dec Post-LN with dropout, trained, and the dump with the logits cut by columns,
each byte-identical at every thread count.
Prints "ok"/"not ok" per check, then "threads: N passed, M failed"; exit 1 if M > 0.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import same_results as sr   # noqa: E402  (the comparison cases and the file comparison)

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
THREADS = [1, 2, 3, 16]
CASES = ["train-lm-mid-post", "train-lm-mid-deepnorm", "train-lm-mid-dropout-zipf",
         "train-encdec-mid-pre", "train-encdec-mid-post-dropout"]
# beyond same_results' cases: columns of C (V = 1000 > 320 rows), K = 320 in the dW products
EXTRA = [("dump-lm-mid-cols-k320", "dump",
          sr.MID + ["model.vocab=1000", "data.batch=10", "model.placement=pre",
                    "model.dropout=0.1"]),
         ("probe-encdec-mid-post", "probe", sr.MID + sr.ENCDEC + sr.PROBE +
          ["model.src_len=32", "model.placement=post"])]
# the float32 core: the same cases with train.precision = float32
F32 = ["train-lm-mid-post", "train-encdec-mid-post-dropout", "dump-lm-mid-cols-k320"]
RESUMED = "train-lm-mid-dropout-zipf"   # its 1-thread file is the run straight through
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def env_for(threads, **extra):
    env = dict(os.environ, STABILITY_THREADS=str(threads), OMP_WAIT_POLICY="passive", **extra)
    env.pop("STABILITY_SWEEP_THREADS", None)
    return env


def test_cases(tmp):
    todo = [(n, v, s) for n, v, s, _ in sr.cases() if n in CASES] + EXTRA
    check("the cases exist in scripts/same_results.py", len(todo) == len(CASES) + len(EXTRA))
    todo += [(n + "-float32", v, s + ["train.precision=float32"]) for n, v, s in todo if n in F32]
    for name, verb, sets in todo:
        files, bad = {}, []
        for t in THREADS:
            files[t] = os.path.join(tmp, f"{name}.t{t}.h5")
            rc, err = sr.run_case(STABILITY, verb, sets, files[t], t)
            if rc:
                bad.append(f"{t} threads: exit {rc}: {err[-200:]}")
            elif t != THREADS[0]:
                d = sr.diff_files(files[THREADS[0]], files[t])
                if d:
                    bad.append(f"{t} threads: " + "; ".join(d[:3]))
        check(f"{name}: byte-identical at {', '.join(map(str, THREADS))} threads", not bad,
              " | ".join(bad))


def without_checkpoint(diffs):
    return [d for d in diffs if not d.startswith("checkpoint/")]


def test_resume(tmp):
    sets = next(s for n, _, s, _ in sr.cases() if n == RESUMED)
    args = [STABILITY, "--config", "tiny", *[x for s in sets for x in ("--set", s)], "--quiet"]
    straight = os.path.join(tmp, f"{RESUMED}.t1.h5")
    first = None
    for ta, tb in [(1, 1), (3, 16), (16, 2)]:
        out = os.path.join(tmp, f"resumed.{ta}-{tb}.h5")
        r1 = subprocess.run(args + ["--out", out], capture_output=True, text=True,
                            env=env_for(ta, STABILITY_SIGNAL_AT_STEP="6"), timeout=300)
        r2 = subprocess.run(args + ["--out", out, "--resume"], capture_output=True, text=True,
                            env=env_for(tb), timeout=300)
        if r1.returncode or r2.returncode:
            check(f"resume {ta} -> {tb} threads: exit 0", False, r1.stderr + r2.stderr)
            continue
        if first is None:
            first = out
            d = without_checkpoint(sr.diff_files(straight, out)) if os.path.exists(straight) \
                else ["no straight run"]
            check("stopped after update 6 and resumed (1 thread): the run straight through "
                  "(all but /checkpoint, which only the stopped run has)", not d, "; ".join(d[:3]))
        else:
            d = sr.diff_files(first, out)
            check(f"stopped at {ta} threads, resumed at {tb}: byte-identical to 1 -> 1 "
                  "(/checkpoint included)", not d, "; ".join(d[:3]))


SWEEP = """[sweep]
base = configs/tiny.ini
name = {placement}
model.placement = post, pre
model.layers = 3
model.d_model = 64
model.heads = 4
model.d_ff = 96
model.vocab = 61
model.seq_len = 32
data.batch = 8
train.steps = 8
train.warmup = 4
train.lr = 1e-3
probe.every = 4
"""


def test_sweep(tmp):
    name = "threads_same_bits_test"
    ini = os.path.join(tmp, name + ".ini")
    with open(ini, "w") as f:
        f.write(SWEEP)
    merged = {}
    for t in THREADS:   # --jobs 2 of 2·t threads: each run gets t
        shutil.rmtree(f"results/{name}", ignore_errors=True)
        r = subprocess.run([STABILITY, "sweep", ini, "--jobs", "2", "--quiet"], capture_output=True,
                           text=True, env=env_for(2 * t), timeout=300)
        if r.returncode or not os.path.exists(f"results/{name}.h5"):
            check(f"sweep --jobs 2 at STABILITY_THREADS={2 * t}: exit 0, merged", False, r.stderr)
            continue
        merged[t] = os.path.join(tmp, f"sweep.t{t}.h5")
        shutil.move(f"results/{name}.h5", merged[t])
    shutil.rmtree(f"results/{name}", ignore_errors=True)
    for t in THREADS[1:]:
        if THREADS[0] in merged and t in merged:
            d = sr.diff_files(merged[THREADS[0]], merged[t])
            check(f"sweep --jobs 2, runs at {t} threads: the merged file of runs at 1 thread", not d,
                  "; ".join(d[:3]))


def run_with_core(name, sets, out, core):
    """The case at one thread with OPENBLAS_CORETYPE = core (None: unset)."""
    saved = os.environ.pop("OPENBLAS_CORETYPE", None)
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core
    try:
        rc, err = sr.run_case(STABILITY, "train", sets, out, 1)
    finally:
        os.environ.pop("OPENBLAS_CORETYPE", None)
        if saved is not None:
            os.environ["OPENBLAS_CORETYPE"] = saved
    if rc:
        check(f"{name}: exit 0", False, err[-300:])
    return rc == 0


def blas_core(path):
    with sr.h5py.File(path, "r") as f:
        v = f.attrs.get("blas_core")
    return v.decode() if isinstance(v, bytes) else v


def test_kernels(tmp):
    sets = next(s for n, _, s, _ in sr.cases() if n == CASES[0])
    with open("/proc/cpuinfo") as f:
        flags = set(next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), []))
    files = {c: os.path.join(tmp, f"kernels.{c or 'default'}.h5") for c in (None, "Haswell", "Prescott")}
    if not all(run_with_core(f"{CASES[0]}, OPENBLAS_CORETYPE={c}", sets, p, c) for c, p in files.items()):
        return
    core = blas_core(files[None])
    if {"avx2", "fma"} <= flags:
        check("without OPENBLAS_CORETYPE: the run records blas_core = Haswell (the pinned kernels)",
              core == "Haswell", str(core))
        d = sr.diff_files(files[None], files["Haswell"])
        check("... and equals a run told OPENBLAS_CORETYPE=Haswell, byte for byte", not d,
              "; ".join(d[:3]))
    else:
        print(f"# this CPU lacks AVX2 or FMA: OpenBLAS's own choice ({core}) is kept, unchecked")
    check("OPENBLAS_CORETYPE=Prescott: the user's choice wins and is recorded",
          blas_core(files["Prescott"]) == "Prescott", str(blas_core(files["Prescott"])))
    d = sr.diff_files(files["Haswell"], files["Prescott"])
    check("... and its bits differ from Haswell's (the kernels change a result: why one set is "
          "pinned)", any(": data" in x for x in d), "; ".join(d[:3]) or "identical")


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="stability_threads_") as tmp:
            test_cases(tmp)
            test_resume(tmp)
            test_sweep(tmp)
            test_kernels(tmp)
        print(f"({time.time() - t0:.1f} s)")
    passed = sum(results)
    print(f"threads: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
