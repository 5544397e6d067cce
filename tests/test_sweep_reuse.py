#!/usr/bin/python3
"""A sweep takes another sweep's identical runs (`[sweep] reuse`, src/sweep/sweep_reuse.c),
from the repository root: /usr/bin/python3 tests/test_sweep_reuse.py

A mini atlas (2 schemes x 2 learning rates, text data, 8 updates) and its seeds sweep
(init.seed = 1, 2, names _s{seed}, reuse = the mini atlas):
1. the seeds sweep takes the 4 seed-1 runs (said on stdout and in each run's log) and trains
   only the 4 seed-2 runs; each taken file is the source's bytes, and every dataset and
   attribute (but `created`, `version`, /train/time) equals the same sweep run without reuse;
   the merge holds all 8; nothing is left beside the runs (no .tmp, no .lock);
2. a source whose data changed since it ran (data_sha256) is not taken: the run is computed;
3. a source file that is not finished (status running) is not taken, its siblings are;
4. a source computed with other OpenBLAS kernels (STABILITY_KERNELS=portable's Haswell, on a CPU
   whose default is another family) is not taken;
5. a reuse entry that is not a readable file: FILE:LINE: sweep.reuse: ..., exit 2.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

import harness   # tests/: the temporary working directory

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail else ""))


def run(*args, env=None):
    return subprocess.run([STABILITY, *args], capture_output=True, text=True, env=env)


def write(path, text):
    with open(path, "w") as fh:
        fh.write(text)


IGNORED_ATTRS = {"created", "version"}


def differences(a, b):
    """Every dataset and attribute of file a against b (but created, version, /train/time)."""
    out = []
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        def attrs(name, oa, ob):
            for k in set(oa.attrs) | set(ob.attrs):
                if name == "/" and k in IGNORED_ATTRS:
                    continue
                if k not in oa.attrs or k not in ob.attrs:
                    out.append(f"{name}@{k} only in one")
                elif not np.array_equal(np.asarray(oa.attrs[k]), np.asarray(ob.attrs[k])):
                    out.append(f"{name}@{k}")
        attrs("/", fa, fb)
        names = []
        fa.visit(names.append)
        other = []
        fb.visit(other.append)
        if sorted(names) != sorted(other):
            out.append("different objects")
        for n in names:
            if n not in fb:
                continue
            attrs(n, fa[n], fb[n])
            if isinstance(fa[n], h5py.Dataset) and n != "train/time":
                x, y = fa[n][()], fb[n][()]
                if x.tobytes() != y.tobytes():
                    out.append(n)
    return out


def text_data(path, seed):
    rng = np.random.default_rng(seed)
    words = ["the", "licence", "software", "permission", "copy", "notice", "warranty", "any"]
    write(path, " ".join(words[i] for i in rng.integers(0, len(words), 6000)) + "\n")


def base_config(path, data):
    write(path, "[model]\nlayers = 2\nd_model = 16\nheads = 2\nd_ff = 24\nvocab = 256\n"
                "seq_len = 16\ncausal = true\n[data]\ntask = text\npath = " + data + "\nbatch = 4\n"
                "[train]\nsteps = 8\nlr = 1e-3\nwarmup = 1\nschedule = constant\neval_every = 8\n"
                "[probe]\nevery = 8\nmodel_update = off\n")


def sweep_file(path, base, seeds=False, reuse=None):
    text = "[sweep]\nbase = " + base + "\n"
    text += "name = {placement}_lr{lr}" + ("_s{seed}" if seeds else "") + "\n"
    text += "model.placement = post, pre\ntrain.lr = 1e-3, 3e-3\n"
    if seeds:
        text += "init.seed = 1, 2\n"
    if reuse:
        text += "reuse = " + reuse + "\n"
    write(path, text)


def fresh(name):
    shutil.rmtree(f"results/{name}", ignore_errors=True)
    for f in (f"results/{name}.h5",):
        if os.path.exists(f):
            os.unlink(f)


def reused_logs(name):
    got = []
    for log in sorted(glob.glob(f"results/{name}/*.log")):
        with open(log) as fh:
            if "stability: reused " in fh.read():
                got.append(os.path.basename(log)[:-4])
    return got


def test_reuse(tmp):
    data = os.path.join(tmp, "text.txt")
    text_data(data, 1)
    base = os.path.join(tmp, "mini.ini")
    base_config(base, data)
    names = ["reuse_src_test", "reuse_seeds_test", "reuse_ref_test", "reuse_partial_test"]
    for n in names:
        fresh(n)
    src = os.path.join(tmp, "reuse_src_test.ini")
    sweep_file(src, base)
    r = run("sweep", src, "--quiet")
    check("source: 4 runs", r.returncode == 0 and len(glob.glob("results/reuse_src_test/*.h5")) == 4,
          r.stderr.strip()[-300:])
    seeds = os.path.join(tmp, "reuse_seeds_test.ini")
    sweep_file(seeds, base, seeds=True, reuse=src)
    r = run("sweep", seeds)
    taken = reused_logs("reuse_seeds_test")
    check("seeds: the 4 seed-1 runs taken, the seed-2 runs computed",
          r.returncode == 0 and taken == sorted(f"{p}_lr{lr}_s1" for p in ("post", "pre")
                                                for lr in ("1e-3", "3e-3"))
          and "4 runs reused from" in r.stdout, (r.stdout + r.stderr).strip()[-400:])
    ref = os.path.join(tmp, "reuse_ref_test.ini")
    sweep_file(ref, base, seeds=True)
    r = run("sweep", ref, "--quiet")
    check("reference: 8 runs computed", r.returncode == 0 and not reused_logs("reuse_ref_test"),
          r.stderr.strip()[-300:])
    for p in ("post", "pre"):
        for lr in ("1e-3", "3e-3"):
            got = f"results/reuse_seeds_test/{p}_lr{lr}_s1.h5"
            with open(got, "rb") as a, open(f"results/reuse_src_test/{p}_lr{lr}.h5", "rb") as b:
                same_bytes = a.read() == b.read()
            d = differences(got, f"results/reuse_ref_test/{p}_lr{lr}_s1.h5")
            check(f"{p} lr {lr} seed 1: the source's bytes, the same as computed", same_bytes and not d,
                  ", ".join(d[:5]))
    with h5py.File("results/reuse_seeds_test.h5", "r") as f:
        check("the merge holds all 8 runs", len(f["runs"]) == 8, str(len(f["runs"])))
    left = [f for f in os.listdir("results/reuse_seeds_test") if ".tmp." in f or f.endswith(".lock")
            and f != ".lock"]
    check("nothing left beside the runs", not left, ", ".join(left))

    # 2. data changed since the source ran
    data2 = os.path.join(tmp, "text2.txt")
    text_data(data2, 2)
    base2 = os.path.join(tmp, "mini2.ini")
    base_config(base2, data2)
    for n in ("reuse_src2_test", "reuse_stale_test"):
        fresh(n)
    src2 = os.path.join(tmp, "reuse_src2_test.ini")
    sweep_file(src2, base2)
    r = run("sweep", src2, "--quiet")
    with open(data2, "a") as fh:
        fh.write("more text\n")
    stale = os.path.join(tmp, "reuse_stale_test.ini")
    sweep_file(stale, base2, seeds=True, reuse=src2)
    r = run("sweep", stale)
    check("data changed: no run taken, all 8 computed",
          r.returncode == 0 and not reused_logs("reuse_stale_test") and "not reused" in r.stdout
          and "data" in r.stdout and len(glob.glob("results/reuse_stale_test/*.h5")) == 8,
          (r.stdout + r.stderr).strip()[-300:])

    # 3. a source run that is not finished
    with h5py.File("results/reuse_src_test/post_lr1e-3.h5", "a") as f:
        f.attrs["status"] = "running"
    partial = os.path.join(tmp, "reuse_partial_test.ini")
    sweep_file(partial, base, seeds=True, reuse=src)
    r = run("sweep", partial)
    taken = reused_logs("reuse_partial_test")
    check("a running source is not taken, its 3 finished siblings are",
          r.returncode == 0 and len(taken) == 3 and "post_lr1e-3_s1" not in taken,
          (r.stdout + r.stderr).strip()[-300:])

    # 4. another kernel family
    family = run("info", "results/reuse_src_test/pre_lr1e-3.h5").stdout
    for n in ("reuse_src3_test", "reuse_family_test"):
        fresh(n)
    env = dict(os.environ, STABILITY_KERNELS="portable")
    src3 = os.path.join(tmp, "reuse_src3_test.ini")
    sweep_file(src3, base)
    r = run("sweep", src3, "--quiet", env=env)
    with h5py.File("results/reuse_src3_test/pre_lr1e-3.h5", "r") as f:
        portable = f.attrs["blas_core"]
    with h5py.File("results/reuse_src_test/pre_lr1e-3.h5", "r") as f:
        default = f.attrs["blas_core"]
    if portable == default:
        print(f"skip   another family: this CPU's default is {default} too")
    else:
        fam = os.path.join(tmp, "reuse_family_test.ini")
        sweep_file(fam, base, seeds=True, reuse=src3)
        r = run("sweep", fam)
        check(f"a {portable} source is not taken by a {default} sweep",
              r.returncode == 0 and not reused_logs("reuse_family_test")
              and f"computed with OpenBLAS's {portable} kernels" in r.stdout,
              (r.stdout + r.stderr).strip()[-300:])
    del family

    # 5. a bad entry
    bad = os.path.join(tmp, "reuse_bad_test.ini")
    sweep_file(bad, base, seeds=True, reuse=os.path.join(tmp, "nothing.ini"))
    r = run("sweep", bad, "--dry-run")
    check("a missing reuse file: FILE:LINE: sweep.reuse, exit 2",
          r.returncode == 2 and f"{bad}:7: sweep.reuse:" in r.stderr, r.stderr.strip())
    for n in names + ["reuse_src2_test", "reuse_stale_test", "reuse_src3_test", "reuse_family_test"]:
        fresh(n)


def main():
    tmp = tempfile.mkdtemp(prefix="stability-reuse.")
    try:
        with harness.chdir_repo_like(tmp):
            test_reuse(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
