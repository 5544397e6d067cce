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
Prints "ok"/"not ok" per check, then "hostile: N passed, M failed"; exit 1 if M > 0.
"""
import os
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


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        with tempfile.TemporaryDirectory(prefix="stability_hostile_") as tmp:
            t0 = time.time()
            test_crafted(tmp)
            test_checkpoint_checksum(tmp)
            test_bitflips(tmp)
            print(f"({time.time() - t0:.1f} s)")
    passed = sum(results)
    print(f"hostile: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
