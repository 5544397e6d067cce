#!/usr/bin/python3
"""Result files from anyone (docs/design.md §6), from the repository root:
/usr/bin/python3 tests/test_hostile.py

1. Crafted files: attributes that hold arrays where one value belongs (status, config, rng_type,
   diverged_at), a /checkpoint/step of 100 values, a probe of 0 seeds, a dataset that declares
   more than it stores, a link into another file (a FIFO): `info`, `plot` and `--resume` refuse
   each with "FILE: /object: what is wrong", exit 1 (2 for --resume's "no usable checkpoint"),
   never a crash, never a hang.
2. Bit flips in the metadata of a probe file (200 files, 3 flips each, a fixed seed; a build
   without the checks crashed on 5 of them and hung on 1): `info` exits 0 or 1 with a message,
   in time. The files libhdf5 crashes or hangs on are then a sweep's run files: the sweep
   neither crashes nor hangs, redoes them, and merges.
3. A checkpoint whose data were flipped is refused by --resume (HDF5's Fletcher-32 checksum),
   never resumed silently; --force starts the run over.
4. The third hostile round (issue 34, docs/faults.md), each check failing before its fix:
   identity  every result file of a run that reads data records data_sha256 = sha256 of the
             file (hashlib here) and data_bytes; --resume on a truncated corpus is exit 2
             naming data.path, the file untouched, --force starts over; a file without the
             attributes resumes and then records them; a sweep redoes runs whose data changed;
   merge     merged {s1, s2}, s1's run file deleted, s3 run: the merge keeps s1's result (its
             datasets as they were), never "merged 2 of 3"; a merge that would lose a run not in
             the sweep keeps the file; --force merges the run files alone;
   duplicates  a sweep file whose values spell one run three ways (1e-3, 0.001, 1E-3) is
             FILE:LINE: train.lr, exit 2, nothing made;
   float32   train.precision = float32 with eps 1e-300, 1e-46, 1e39 or beta2 1 - 1e-11 is
             FILE:LINE: key, exit 2 (it "diverged at step 2"); 1e-40 trains;
   slurm     an empty slurm.time (file or --set) or one of no Slurm form is FILE:LINE, exit 2,
             no job.sbatch; D-H is written as given.
Prints "ok"/"not ok" per check, then "hostile: N passed, M failed"; exit 1 if M > 0. Arguments
name sections to run (crafted checksum bitflips identity merge duplicates float32 slurm; all by
default).
"""
import os
import hashlib
import random
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
TINY = os.path.abspath("configs/tiny.ini")
# a damaged file that makes libhdf5 loop is given up on after this many seconds (h5io_verify.c)
ENV = dict(os.environ, OMP_WAIT_POLICY="passive", STABILITY_READ_TIMEOUT="5")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def run(*args, timeout=60, cwd=None):
    try:
        return subprocess.run([STABILITY, *args], capture_output=True, text=True, errors="replace",
                              env=ENV, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -999, "", f"no answer within {timeout} s")


def refused(r, path, obj, code=1):
    """r exited with code, its message 'stability: ...FILE: /object: ...', and did not crash."""
    return r.returncode == code and f"{path}: {obj}" in r.stderr


def probe_file(path, seeds=2):
    r = run("--config", TINY, "--set", f"probe.seeds={seeds}", "--set", "probe.batches=1",
            "--out", path, "--quiet")
    assert r.returncode == 0, r.stderr
    return path


TRAIN = ["--config", TINY, "--quiet", "--set", "train.steps=60", "--set", "train.checkpoint_every=20",
         "--set", "data.task=copy"]


def train_file(path, stop_at=None):
    env = dict(ENV, STABILITY_SIGNAL_AT_STEP=str(stop_at)) if stop_at else ENV
    r = subprocess.run([STABILITY, *TRAIN, "--out", path], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return path


def set_attr(path, obj, name, value):
    with h5py.File(path, "r+") as f:
        if name in f[obj].attrs:
            del f[obj].attrs[name]
        f[obj].attrs[name] = value


def replace_dataset(path, name, data, **kw):
    with h5py.File(path, "r+") as f:
        attrs = dict(f[name].attrs)
        del f[name]
        d = f.create_dataset(name, data=data, **kw) if data is not None else f.create_dataset(name, **kw)
        for k, v in attrs.items():
            d.attrs[k] = v


def test_crafted(tmp):
    base = probe_file(os.path.join(tmp, "base.h5"))
    cases = []   # (description, path, verb args, object named, exit code)

    def variant(name, fn):
        p = os.path.join(tmp, name + ".h5")
        shutil.copy(base, p)
        fn(p)
        return p

    p = variant("status3", lambda p: set_attr(p, "/", "status", np.array([b"done"] * 3)))
    cases.append(("info: root status holding 3 fixed-length strings", p, ["info"], "/", 1))
    p = variant("status_vlen3", lambda p: set_attr(p, "/", "status",
                                                   np.array(["done"] * 3, dtype=h5py.string_dtype())))
    cases.append(("info: root status holding 3 variable-length strings", p, ["info"], "/", 1))
    cfg = h5py.File(base, "r").attrs["config"]
    p = variant("config2", lambda p: set_attr(p, "/", "config", np.array([cfg, cfg], dtype=h5py.string_dtype())))
    cases.append(("plot: root config holding 2 strings", p, ["plot", "--out", os.path.join(tmp, "pl")], "/", 1))

    def zero_seeds(p):
        with h5py.File(p, "r") as f:
            shape = f["probe/grad_fro"].shape
        replace_dataset(p, "probe/grad_fro", np.zeros((0,) + shape[1:]))
    p = variant("zero_seeds", zero_seeds)
    cases.append(("info: a probe of 0 seeds", p, ["info"], "/probe/grad_fro", 1))

    def phantom(p):   # declares 10^6 seeds, stores none (every read would be fill values)
        with h5py.File(p, "r") as f:
            shape = f["probe/grad_fro"].shape
        replace_dataset(p, "probe/grad_fro", None, shape=(1000000,) + shape[1:], dtype="f8",
                        chunks=(1,) + shape[1:])
    p = variant("phantom", phantom)
    cases.append(("info: a dataset declaring 10^6 seeds it does not store", p, ["info"], "/probe/grad_fro", 1))

    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)

    def external(p):
        with h5py.File(p, "r+") as f:
            f["runs/x"] = h5py.ExternalLink(fifo, "/")
    p = variant("external", external)
    cases.append(("info: a link into another file (a FIFO)", p, ["info"], "/runs/x", 1))

    tbase = train_file(os.path.join(tmp, "tbase.h5"), stop_at=30)
    for name, fn, obj in [
            ("100 values", lambda p: replace_dataset(p, "checkpoint/step", np.arange(100, dtype="i8")),
             "/checkpoint/step"),
            ("100 values", lambda p: replace_dataset(p, "checkpoint/batches", np.arange(100, dtype="i8")),
             "/checkpoint/batches"),
            ("100 values", lambda p: replace_dataset(p, "checkpoint/optim/t", np.arange(100, dtype="i8")),
             "/checkpoint/optim/t"),
            ("rng_type holding 3 strings", lambda p: set_attr(p, "/checkpoint", "rng_type",
                                             np.array([b"mt19937"] * 3)), "/checkpoint")]:
        p = os.path.join(tmp, f"resume{len(cases)}.h5")
        shutil.copy(tbase, p)
        fn(p)
        cases.append((f"--resume: {obj} {name}", p,
                      [*TRAIN, "--resume", "--out"], obj, None))
    p = os.path.join(tmp, "diverged_at.h5")
    shutil.copy(tbase, p)
    set_attr(p, "/train", "diverged_at", np.arange(100))
    cases.append(("plot: /train diverged_at holding 100 numbers", p,
                  ["plot", "--out", os.path.join(tmp, "pl2")], "/train", 1))

    for desc, path, args, obj, code in cases:
        r = run(*args, path)
        if code is None:   # --resume: no usable checkpoint (2) or unreadable (1): either names it
            ok = r.returncode in (1, 2) and f"{path}: {obj}" in r.stderr
        else:
            ok = refused(r, path, obj, code)
        check(f"{desc}: exit {code or '1/2'}, 'FILE: {obj}: ...'", ok,
              f"exit {r.returncode}, {r.stderr.strip()[:300]}")


def metadata_offsets(path):
    """File offsets that hold no dataset's raw data (headers, B-trees, heaps)."""
    size = os.path.getsize(path)
    raw = np.zeros(size, bool)
    with h5py.File(path, "r") as f:
        def visit(name, o):
            if isinstance(o, h5py.Dataset):
                off = o.id.get_offset()
                if off is not None:
                    raw[off:off + o.id.get_storage_size()] = True
                elif o.chunks:
                    for i in range(o.id.get_num_chunks()):
                        c = o.id.get_chunk_info(i)
                        raw[c.byte_offset:c.byte_offset + c.size] = True
        f.visititems(visit)
    return np.flatnonzero(~raw)


def flipped(src, dst, rng, meta, flips=3):
    b = bytearray(open(src, "rb").read())
    for _ in range(flips):
        i = int(meta[rng.randrange(len(meta))])
        b[i] ^= 1 << rng.randrange(8)
    with open(dst, "wb") as f:
        f.write(b)


def test_bitflips(tmp):
    base = probe_file(os.path.join(tmp, "flip_base.h5"))
    meta = metadata_offsets(base)
    rng = random.Random(1)
    bad, libhdf5, t0 = [], [], time.time()
    for k in range(200):
        p = os.path.join(tmp, f"flip{k}.h5")
        flipped(base, p, rng, meta)
        r = run("info", p, timeout=30)
        if r.returncode not in (0, 1) or (r.returncode == 1 and not r.stderr.startswith(f"stability: {p}")):
            bad.append(f"{k}: exit {r.returncode} {r.stderr.strip()[:120]}")
        elif "HDF5 crashed" in r.stderr or "did not finish" in r.stderr:
            libhdf5.append(p)   # what crashed or hung inside libhdf5 (in the child)
        else:
            os.unlink(p)
    check(f"info on 200 bit-flipped files: every one exit 0 or 1 with 'FILE: ...', none crashed or "
          f"hung ({len(libhdf5)} crashed or hung libhdf5 in the isolated reader; "
          f"{time.time() - t0:.0f} s)", not bad, "; ".join(bad[:5]))
    if not libhdf5:
        check("some bit flips crash libhdf5 (the sweep check needs them)", False)
        return
    # a sweep whose run files are those: it must neither crash nor hang, and redo them
    d = os.path.join(tmp, "flipsweep")
    os.makedirs(d)
    runs = len(libhdf5)
    with open(os.path.join(d, "fs.ini"), "w") as f:
        f.write(f"[sweep]\nbase = {TINY}\nname = s{{seed}}\ninit.seed = "
                + ", ".join(str(s) for s in range(1, runs + 2)) + "\nprobe.seeds = 2\nprobe.batches = 1\n")
    r = run("sweep", "fs.ini", "--quiet", cwd=d, timeout=300)
    for i, p in enumerate(libhdf5):   # s1.h5 ... replaced by the damaged files
        shutil.copy(p, os.path.join(d, "results", "fs", f"s{i + 1}.h5"))
    r = run("sweep", "fs.ini", "--quiet", cwd=d, timeout=300)
    with h5py.File(os.path.join(d, "results", "fs.h5"), "r") as f:
        merged = len(f["runs"])
    check(f"a sweep whose {runs} run files crash or hang libhdf5: exit 0, says 'damaged', redoes "
          f"them, merges all {runs + 1}", r.returncode == 0 and r.stderr.count("damaged") >= runs
          and merged == runs + 1, f"exit {r.returncode}, merged {merged}, {r.stderr.strip()[:400]}")


def test_checkpoint_checksum(tmp):
    p = train_file(os.path.join(tmp, "ck.h5"), stop_at=30)
    with h5py.File(p, "r") as f:
        d = f["checkpoint/optim/m/tok_embed"]
        off = d.id.get_offset() if d.chunks is None else d.id.get_chunk_info(0).byte_offset
        ck = int(f["checkpoint/step"][()])
    with open(p, "r+b") as f:   # one bit of one moment flipped: a silent resume would train on it
        f.seek(off + 16)
        b = f.read(1)
        f.seek(off + 16)
        f.write(bytes([b[0] ^ 0x10]))
    r = run(*TRAIN, "--resume", "--out", p)
    check(f"--resume of a checkpoint (update {ck}) with one flipped bit: refused (exit 2), "
          "'checksum', the file untouched", r.returncode == 2 and "checksum" in r.stderr
          and "--force" in r.stderr, f"exit {r.returncode}, {r.stderr.strip()[:300]}")
    r = run(*TRAIN, "--resume", "--force", "--out", p)
    with h5py.File(p, "r") as f:
        n = len(f["train/step"])
    check("... and --resume --force starts it over: 60 updates", r.returncode == 0 and n == 60,
          f"exit {r.returncode}, {n} rows, {r.stderr.strip()[:200]}")


# ---- the third hostile round (issue 34) --------------------------------------------------------

def text_corpus(path, n=20000, seed=1):
    """n bytes of word-like text (a byte-level corpus for data.task = text)."""
    rng = random.Random(seed)
    words = ["the", "file", "is", "a", "run", "of", "data", "and", "its", "seed", "loss", "warm-up"]
    out = []
    while sum(map(len, out)) < n:
        out.append(rng.choice(words) + (".\n" if rng.random() < 0.1 else " "))
    with open(path, "w") as f:
        f.write("".join(out)[:n])
    return path


def identity_of(path, obj="/"):
    with h5py.File(path, "r") as f:
        a = f[obj].attrs
        sha = a["data_sha256"] if "data_sha256" in a else None
        return (sha.decode() if isinstance(sha, bytes) else sha,
                int(a["data_bytes"]) if "data_bytes" in a else None)


def file_identity(path):
    b = open(path, "rb").read()
    return hashlib.sha256(b).hexdigest(), len(b)


def sha_of(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_identity(tmp):
    d = os.path.join(tmp, "identity")
    os.makedirs(d)
    corpus = text_corpus(os.path.join(d, "corpus.txt"))
    text = ["--config", TINY, "--quiet", "--set", "data.task=text", "--set", f"data.path={corpus}",
            "--set", "model.vocab=256", "--set", "train.checkpoint_every=10"]
    t = os.path.join(d, "t.h5")
    env = dict(ENV, STABILITY_SIGNAL_AT_STEP="15")
    subprocess.run([STABILITY, *text, "--set", "train.steps=40", "--out", t], env=env,
                   capture_output=True)
    want = file_identity(corpus)
    check(f"a text run records data_sha256 = sha256 of data.path ({want[0][:12]}...) and "
          f"data_bytes = {want[1]}", os.path.exists(t) and identity_of(t) == want,
          str(identity_of(t) if os.path.exists(t) else "no file"))
    p = os.path.join(d, "p.h5")
    run(*text, "--set", "train.steps=0", "--set", "probe.seeds=1", "--set", "probe.batches=1", "--out", p)
    u = os.path.join(d, "u.h5")
    run("dump", *[a for a in text if a != "--quiet"], "--out", u)
    check("... and so do its probe and its dump", os.path.exists(p) and os.path.exists(u)
          and identity_of(p) == want and identity_of(u) == want)
    # the corpus truncated under a stopped run: --resume would continue on other text
    before = sha_of(t)
    with open(corpus, "r+b") as f:
        f.truncate(want[1] // 2)
    r = run(*text, "--set", "train.steps=40", "--resume", "--out", t)
    check("--resume after the corpus was truncated: exit 2, naming data.path and both sizes, "
          "the file untouched", r.returncode == 2 and "data.path" in r.stderr
          and str(want[1]) in r.stderr and str(want[1] // 2) in r.stderr and sha_of(t) == before,
          f"exit {r.returncode}: {r.stderr.strip()[:300]}")
    r = run(*text, "--set", "train.steps=40", "--resume", "--force", "--out", t)
    with h5py.File(t, "r") as f:
        steps = len(f["train/step"])
    check("... and --resume --force starts it over on the new text (40 updates, its identity)",
          r.returncode == 0 and steps == 40 and identity_of(t) == file_identity(corpus),
          f"exit {r.returncode}, {steps} updates: {r.stderr.strip()[:200]}")
    # a file from before the attributes: resumed, said so, and it records the data read then
    o = os.path.join(d, "old.h5")
    subprocess.run([STABILITY, *text, "--set", "train.steps=40", "--out", o], env=env,
                   capture_output=True)
    with h5py.File(o, "r+") as f:
        for k in ("data_sha256", "data_bytes"):
            if k in f.attrs:
                del f.attrs[k]
    r = run(*text, "--set", "train.steps=40", "--resume", "--out", o)
    check("a file without data_sha256 resumes (said once) and then records the data read",
          r.returncode == 0 and "no data identity" in r.stderr and identity_of(o) == file_identity(corpus),
          f"exit {r.returncode}: {r.stderr.strip()[:200]}")
    # a sweep: runs whose data changed are stale, redone
    sw = os.path.join(d, "idsweep.ini")
    with open(sw, "w") as f:
        f.write(f"[sweep]\nbase = {TINY}\nname = s{{seed}}\ninit.seed = 1, 2\ndata.task = text\n"
                f"data.path = {corpus}\nmodel.vocab = 256\ntrain.steps = 5\n")
    r = run("sweep", "idsweep.ini", "--quiet", cwd=d)
    with open(corpus, "a") as f:
        f.write("more text. ")
    r = run("sweep", "idsweep.ini", "--quiet", cwd=d)
    merged = os.path.join(d, "results", "idsweep.h5")
    ids = [identity_of(merged, f"runs/s{k}") for k in (1, 2)] if os.path.exists(merged) else []
    check("a sweep redoes its runs once their data changed, and says so (stale, data.path)",
          r.returncode == 0 and r.stderr.count("stale") == 2 and "data.path" in r.stderr
          and ids == [file_identity(corpus)] * 2, f"exit {r.returncode}, {ids}: {r.stderr.strip()[:300]}")


def group_data(path, group):
    with h5py.File(path, "r") as f:
        out = {}
        f[group].visititems(lambda n, o: out.__setitem__(n, o[()].tobytes())
                            if isinstance(o, h5py.Dataset) else None)
        return out


def test_merge(tmp):
    d = os.path.join(tmp, "merge")
    os.makedirs(d)
    sw = os.path.join(d, "mg.ini")
    body = f"[sweep]\nbase = {TINY}\nname = s{{seed}}\nprobe.seeds = 1\nprobe.batches = 1\n"
    with open(sw, "w") as f:
        f.write(body + "init.seed = 1, 2, 3\n")
    merged = os.path.join(d, "results", "mg.h5")
    for i in (0, 1):
        run("sweep", "mg.ini", "--task", str(i), "--quiet", cwd=d)
    r = run("sweep", "mg.ini", "--merge", "--quiet", cwd=d)
    s1 = group_data(merged, "runs/s1") if os.path.exists(merged) else {}
    check("merge of runs s1, s2 of 3: exit 3 (s3 missing)", r.returncode == 3 and len(s1) > 0,
          r.stderr.strip()[:200])
    os.unlink(os.path.join(d, "results", "mg", "s1.h5"))
    run("sweep", "mg.ini", "--task", "2", "--quiet", cwd=d)
    r = run("sweep", "mg.ini", "--merge", cwd=d)
    with h5py.File(merged, "r") as f:
        runs = sorted(f["runs"])
    check("s1's run file deleted, s3 run: the merge keeps s1 from the merged file (3 runs, its "
          "datasets as they were), says so, exit 3 for the missing run file",
          r.returncode == 3 and runs == ["s1", "s2", "s3"] and group_data(merged, "runs/s1") == s1
          and "kept from" in r.stderr and "merged 3 of 3" in r.stdout,
          f"exit {r.returncode}, runs {runs}: {r.stdout.strip()} {r.stderr.strip()[:300]}")
    # s3 leaves the sweep: merging now would lose it
    with open(sw, "w") as f:
        f.write(body + "init.seed = 1, 2\n")
    before = sha_of(merged)
    r = run("sweep", "mg.ini", "--merge", cwd=d)
    check("a merge that would lose a run the merged file holds (no longer in the sweep): the file "
          "kept, naming it (exit 3: s1's run file is still missing)",
          r.returncode == 3 and "s3 (not a run of the sweep now); kept" in r.stderr
          and sha_of(merged) == before,
          f"exit {r.returncode}: {r.stderr.strip()[:300]}")
    r = run("sweep", "mg.ini", "--merge", "--force", cwd=d)
    with h5py.File(merged, "r") as f:
        runs = sorted(f["runs"])
    check("... --merge --force merges the run files alone", runs == ["s2"], f"{runs}: {r.stderr.strip()[:200]}")


def test_duplicates(tmp):
    d = os.path.join(tmp, "dups")
    os.makedirs(d)
    with open(os.path.join(d, "dup.ini"), "w") as f:
        f.write(f"[sweep]\nbase = {TINY}\ninit.seed = 1, 2\ntrain.lr = 1e-3, 0.001, 1E-3\n"
                "train.steps = 3\n")
    with open(os.path.join(d, "fine.ini"), "w") as f:
        f.write(f"[sweep]\nbase = {TINY}\ninit.seed = 1, 2\ntrain.lr = 1e-3, 2e-3\ntrain.steps = 3\n")
    ok = run("sweep", "fine.ini", "--dry-run", cwd=d)
    r = run("sweep", "dup.ini", "--dry-run", cwd=d)
    check("a sweep whose train.lr values 1e-3, 0.001, 1E-3 are one run: dup.ini:4: train.lr, "
          "naming the values, exit 2, nothing made (1e-3, 2e-3: fine)",
          ok.returncode == 0 and r.returncode == 2 and r.stderr.startswith("dup.ini:4: train.lr:")
          and all(v in r.stderr for v in ("'1e-3'", "'0.001'", "'1E-3'"))
          and not os.path.exists(os.path.join(d, "results")),
          f"exit {r.returncode}: {r.stderr.strip()[:300]}")


def test_float32(tmp):
    d = os.path.join(tmp, "f32")
    os.makedirs(d)
    for key, value, code in (("eps", "1e-300", 2), ("eps", "1e-46", 2), ("eps", "1e39", 2),
                             ("beta2", "0.99999999999", 2), ("eps", "1e-40", 0)):
        ini = os.path.join(d, f"{key}{value}.ini")
        with open(ini, "w") as f:
            f.write(f"[train]\nprecision = float32\nsteps = 5\n{key} = {value}\n")
        out = os.path.join(d, f"{key}{value}.h5")
        r = run("--config", ini, "--set", "model.layers=2", "--set", "model.d_model=8",
                "--set", "model.heads=2", "--set", "model.d_ff=12", "--set", "model.vocab=11",
                "--set", "model.seq_len=5", "--set", "data.batch=2", "--out", out, "--quiet")
        if code == 2:
            check(f"float32, train.{key} = {value}: {os.path.basename(ini)}:4: train.{key}, exit 2, "
                  "nothing written", r.returncode == 2 and f"{ini}:4: train.{key}:" in r.stderr
                  and not os.path.exists(out), f"exit {r.returncode}: {r.stderr.strip()[:300]}")
        else:
            status = None
            if os.path.exists(out):
                with h5py.File(out, "r") as f:
                    status = f.attrs["status"]
            check(f"float32, train.{key} = {value} (a subnormal float): trains, status done",
                  r.returncode == 0 and status == "done", f"exit {r.returncode}, {status}: {r.stderr[:200]}")


def test_slurm(tmp):
    d = os.path.join(tmp, "slurm")
    os.makedirs(d)
    base = f"[sweep]\nbase = {TINY}\ninit.seed = 1, 2\n[slurm]\n"
    script = os.path.join(d, "results", "sl", "job.sbatch")
    for desc, slurm, sets, where in (("time =", "time =\n", [], "sl.ini:5: slurm.time: empty value"),
                                     ("--set slurm.time=", "", ["--set", "slurm.time="],
                                      "--set: slurm.time: empty value"),
                                     ("time = 1::2", "time = 1::2\n", [], "sl.ini:5: slurm.time:")):
        with open(os.path.join(d, "sl.ini"), "w") as f:
            f.write(base + slurm)
        r = run("sweep", "sl.ini", "--slurm", *sets, cwd=d)
        check(f"sweep --slurm with {desc}: '{where}', exit 2, no job.sbatch",
              r.returncode == 2 and where in r.stderr and not os.path.exists(script),
              f"exit {r.returncode}: {r.stderr.strip()[:200]}")
    with open(os.path.join(d, "sl.ini"), "w") as f:
        f.write(base + "time = 1-12\n")
    r = run("sweep", "sl.ini", "--slurm", "--quiet", cwd=d)
    text = open(script).read() if os.path.exists(script) else ""
    check("sweep --slurm with time = 1-12 (days-hours): '#SBATCH --time=1-12'",
          r.returncode == 0 and "#SBATCH --time=1-12\n" in text, r.stderr.strip()[:200])


SECTIONS = {"crafted": test_crafted, "checksum": test_checkpoint_checksum, "bitflips": test_bitflips,
            "identity": test_identity, "merge": test_merge, "duplicates": test_duplicates,
            "float32": test_float32, "slurm": test_slurm}


def main():
    want = sys.argv[1:] or list(SECTIONS)
    unknown = [w for w in want if w not in SECTIONS]
    if unknown:
        print(f"test_hostile.py: unknown sections {unknown} (of {' '.join(SECTIONS)})", file=sys.stderr)
        return 2
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        with tempfile.TemporaryDirectory(prefix="stability_hostile_") as tmp:
            t0 = time.time()
            for w in want:
                SECTIONS[w](tmp)
            print(f"({time.time() - t0:.1f} s)")
    passed = sum(results)
    print(f"hostile: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
