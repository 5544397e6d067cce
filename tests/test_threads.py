#!/usr/bin/python3
"""The same bits at every thread count, from the repository root: /usr/bin/python3 tests/test_threads.py

Every float64 result is defined by the program, not by the thread count (docs/performance.md,
"Same bits at every thread count"). A representative subset of tools/same_results.py's cases,
big enough that GEMMs are shared among the pool (256 and 320 rows at d = 64, nn/gemm.h; under
the SkylakeX kernels only those beyond OpenBLAS's small-matrix size, 100³ multiply-adds, are),
runs at 1, 2, 3 and 16 threads (STABILITY_THREADS) under the kernels the machine pins, and every
dataset and attribute of each file must equal the 1-thread file's, byte for byte:
1. training runs: lm Post-LN, DeepNorm, dropout with Zipf tokens; enc-dec Pre-LN and Post-LN
   with dropout and label smoothing; a dump with the logits cut by columns (V = 1000) and K
   between one and two of OpenBLAS's K blocks (320 rows); an enc-dec probe;
2. a training run stopped midway (SIGTERM after update 6) at one thread count and resumed at
   another (1 -> 1, 3 -> 16, 16 -> 2): the same file as 1 -> 1, and the same /train as the run
   straight through;
3. a sweep of two runs with --jobs 2 at STABILITY_THREADS = 2, 4, 6, 32 (runs at 1, 2, 3 and
   16 threads each): the same merged file;
4. one family of kernels per class of CPU (util/blascore.h): without settings a run records
   blas_core = SkylakeX on a CPU with AVX-512 F, CD, BW, DQ and VL, Haswell on one with AVX2
   and FMA, and equals, byte for byte, a run told OPENBLAS_CORETYPE=that family;
   STABILITY_KERNELS=portable records Haswell and equals a run told OPENBLAS_CORETYPE=Haswell;
   a user's OPENBLAS_CORETYPE=Prescott wins, is recorded, and gives other bits (why the
   program pins);
5. a run keeps its family: started under another family than the machine's (Haswell through
   STABILITY_KERNELS=portable where the class is SkylakeX, else Prescott), stopped after update
   6 and resumed without settings, it re-executes with its family: the file equals the run
   straight through under that family. Resumed with a setting that asks for other kernels
   (OPENBLAS_CORETYPE, STABILITY_KERNELS), it is refused: exit 2, the family named, the file
   unchanged;
6. a sweep keeps its family: a sweep run under the other family records it
   (results/<sweep>/.blas_core); a later `--task 1` without settings re-executes with it (its
   run's file equals the first sweep's), and with a setting asking for others is refused
   (exit 2, no run file written).
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import same_results as sr   # noqa: E402  (the comparison cases and the file comparison)
import harness   # noqa: E402  (tests/: the temporary working directory)

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
    check("the cases exist in tools/same_results.py", len(todo) == len(CASES) + len(EXTRA))
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


KERNEL_VARS = ("OPENBLAS_CORETYPE", "STABILITY_KERNELS", "STABILITY_PINNED_CORETYPE")


def run_with(name, sets, out, **settings):
    """The case at one thread under the kernel settings given (none: the machine's pin)."""
    saved = {k: os.environ.pop(k) for k in KERNEL_VARS if k in os.environ}
    os.environ.update(settings)
    try:
        rc, err = sr.run_case(STABILITY, "train", sets, out, 1)
    finally:
        for k in KERNEL_VARS:
            os.environ.pop(k, None)
        os.environ.update(saved)
    if rc:
        check(f"{name}: exit 0", False, err[-300:])
    return rc == 0


def blas_core(path):
    with sr.h5py.File(path, "r") as f:
        v = f.attrs.get("blas_core")
    return v.decode() if isinstance(v, bytes) else v


def cpu_class():
    """The family util/blascore.h pins on this CPU (None: OpenBLAS's own choice)."""
    with open("/proc/cpuinfo") as f:
        flags = set(next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), []))
    if {"avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX"
    return "Haswell" if {"avx2", "fma"} <= flags else None


def other_family(mine):
    """Another family this CPU runs, the setting that starts a run with it, and the settings
    that ask for other kernels than it."""
    if mine == "SkylakeX":
        return ("Haswell", {"STABILITY_KERNELS": "portable"},
                [{"OPENBLAS_CORETYPE": "SkylakeX"}, {"STABILITY_KERNELS": "fast"}])
    return "Prescott", {"OPENBLAS_CORETYPE": "Prescott"}, [{"OPENBLAS_CORETYPE": mine}]


def test_kernels(tmp):
    sets = next(s for n, _, s, _ in sr.cases() if n == CASES[0])
    mine = cpu_class()
    runs = {"default": {}, "told": {"OPENBLAS_CORETYPE": mine or "Haswell"},
            "portable": {"STABILITY_KERNELS": "portable"}, "Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
            "Prescott": {"OPENBLAS_CORETYPE": "Prescott"}}
    files = {k: os.path.join(tmp, f"kernels.{k}.h5") for k in runs}
    if not all(run_with(f"{CASES[0]}, {k}", sets, files[k], **v) for k, v in runs.items()):
        return
    core = blas_core(files["default"])
    if mine:
        check(f"without settings: the run records blas_core = {mine} (this CPU's class)",
              core == mine, str(core))
        d = sr.diff_files(files["default"], files["told"])
        check(f"... and equals a run told OPENBLAS_CORETYPE={mine}, byte for byte", not d,
              "; ".join(d[:3]))
        check("STABILITY_KERNELS=portable: the run records blas_core = Haswell",
              blas_core(files["portable"]) == "Haswell", str(blas_core(files["portable"])))
        d = sr.diff_files(files["portable"], files["Haswell"])
        check("... and equals a run told OPENBLAS_CORETYPE=Haswell, byte for byte", not d,
              "; ".join(d[:3]))
    else:
        print(f"# this CPU lacks AVX2 or FMA: OpenBLAS's own choice ({core}) is kept, unchecked")
    check("OPENBLAS_CORETYPE=Prescott: the user's choice wins and is recorded",
          blas_core(files["Prescott"]) == "Prescott", str(blas_core(files["Prescott"])))
    d = sr.diff_files(files["Haswell"], files["Prescott"])
    check("... and its bits differ from Haswell's (the kernels change a result: why the program "
          "pins them)", any(": data" in x for x in d), "; ".join(d[:3]) or "identical")


def kernel_env(threads, **settings):
    env = env_for(threads)
    for k in KERNEL_VARS:
        env.pop(k, None)
    env.update(settings)
    return env


def test_resume_family(tmp):
    mine = cpu_class()
    if not mine:
        print("# this CPU lacks AVX2 or FMA: a run's family on resume is not checked")
        return
    family, start, against = other_family(mine)
    sets = next(s for n, _, s, _ in sr.cases() if n == RESUMED)
    args = [STABILITY, "--config", "tiny", *[x for s in sets for x in ("--set", s)], "--quiet"]
    straight, out = os.path.join(tmp, "family.straight.h5"), os.path.join(tmp, "family.h5")
    r0 = subprocess.run(args + ["--out", straight], capture_output=True, text=True,
                        env=kernel_env(2, **start), timeout=300)
    r1 = subprocess.run(args + ["--out", out], capture_output=True, text=True,
                        env=kernel_env(2, STABILITY_SIGNAL_AT_STEP="6", **start), timeout=300)
    if r0.returncode or r1.returncode:
        check(f"a run under {family} (straight, and stopped after update 6): exit 0", False,
              r0.stderr + r1.stderr)
        return
    with open(out, "rb") as f:
        stopped = f.read()
    for setting in against:
        r = subprocess.run(args + ["--out", out, "--resume"], capture_output=True, text=True,
                           env=kernel_env(2, **setting), timeout=300)
        with open(out, "rb") as f:
            same = f.read() == stopped
        name = " ".join(f"{k}={v}" for k, v in setting.items())
        check(f"a {family} run resumed under {name}: refused (exit 2, names {family}), the file "
              "unchanged", r.returncode == 2 and family in r.stderr and same,
              f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    r2 = subprocess.run(args + ["--out", out, "--resume"], capture_output=True, text=True,
                        env=kernel_env(2), timeout=300)
    if r2.returncode:
        check(f"a {family} run resumed without settings: exit 0", False, r2.stderr)
        return
    d = without_checkpoint(sr.diff_files(straight, out))
    check(f"a {family} run resumed without settings continues with {family} (re-executed): the "
          "run straight through under it, all but /checkpoint", not d and blas_core(out) == family,
          "; ".join(d[:3]) or str(blas_core(out)))


def test_sweep_family(tmp):
    mine = cpu_class()
    if not mine:
        return
    family, start, against = other_family(mine)
    name = "threads_family_test"
    ini = os.path.join(tmp, name + ".ini")
    with open(ini, "w") as f:
        f.write(SWEEP)
    run = f"results/{name}/pre.h5"
    shutil.rmtree(f"results/{name}", ignore_errors=True)
    try:
        r = subprocess.run([STABILITY, "sweep", ini, "--jobs", "2", "--quiet"], capture_output=True,
                           text=True, env=kernel_env(2, **start), timeout=300)
        if r.returncode or not os.path.exists(run):
            check(f"a sweep under {family}: exit 0", False, r.stderr)
            return
        with open(f"results/{name}/.blas_core") as f:
            rec = f.read().strip()
        check(f"the sweep records its family: results/<sweep>/.blas_core = {family}", rec == family,
              rec)
        first = os.path.join(tmp, "family.sweep.pre.h5")
        shutil.move(run, first)
        for setting in against:
            r = subprocess.run([STABILITY, "sweep", ini, "--task", "1", "--quiet"],
                               capture_output=True, text=True, env=kernel_env(1, **setting),
                               timeout=300)
            label = " ".join(f"{k}={v}" for k, v in setting.items())
            check(f"its task 1 under {label}: refused (exit 2, names {family}), no run written",
                  r.returncode == 2 and family in r.stderr and not os.path.exists(run),
                  f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
        r = subprocess.run([STABILITY, "sweep", ini, "--task", "1", "--quiet"], capture_output=True,
                           text=True, env=kernel_env(1), timeout=300)
        if r.returncode or not os.path.exists(run):
            check("its task 1 without settings: exit 0", False, r.stderr)
            return
        d = sr.diff_files(first, run)
        check(f"its task 1 without settings runs under {family} (re-executed): the first sweep's "
              "run file, byte for byte", not d and blas_core(run) == family,
              "; ".join(d[:3]) or str(blas_core(run)))
    finally:
        shutil.rmtree(f"results/{name}", ignore_errors=True)
        if os.path.exists(f"results/{name}.h5"):
            os.remove(f"results/{name}.h5")


def main():
    for k in KERNEL_VARS:   # the kernels the machine pins, whatever the caller's shell says
        os.environ.pop(k, None)
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="stability_threads_") as tmp, \
                harness.chdir_repo_like(tmp):
            test_cases(tmp)
            test_resume(tmp)
            test_sweep(tmp)
            test_kernels(tmp)
            test_resume_family(tmp)
            test_sweep_family(tmp)
        print(f"({time.time() - t0:.1f} s)")
    passed = sum(results)
    print(f"threads: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
