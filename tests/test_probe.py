#!/usr/bin/python3
"""The probe's HDF5 file against docs/design.md §6, read with h5py and no project code.

Run from the repository root (make test does): /usr/bin/python3 tests/test_probe.py
1. grad_fro of a 1-seed, 1-batch probe equals ‖∇W‖_F of a `stability dump` of the same config
   (same init, same batch) to 1e-12 relative, for every tensor of every layer.
2. Names, shapes and attributes of /probe and of the root, as docs/design.md §6 lists them.
3. Bad input: probe.seeds = 0, an unwritable output path, an existing file without --force,
   and a probe killed mid-run: clear error, exit 1 or 2, no file at the output path.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

STABILITY = os.environ.get("STABILITY", "./stability")
PARAMS = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2",
          "norm1.gamma", "norm1.beta", "norm2.gamma", "norm2.beta"]
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail else ""))


def run(*args, **kw):
    return subprocess.run([STABILITY, *args], capture_output=True, text=True, **kw)


def test_grad_fro_equals_dump(tmp):
    for placement in ("post", "pre"):
        sets = ["--set", f"model.placement={placement}", "--set", "probe.seeds=1",
                "--set", "probe.batches=1", "--set", "model.norm=rmsnorm"]
        probe, dump = os.path.join(tmp, f"p_{placement}.h5"), os.path.join(tmp, f"d_{placement}.h5")
        r1 = run("--config", "configs/tiny.ini", *sets, "--out", probe, "--quiet")
        r2 = run("dump", "--config", "configs/tiny.ini", *sets, "--out", dump)
        if r1.returncode or r2.returncode:
            check(f"probe and dump run ({placement})", False, r1.stderr + r2.stderr)
            continue
        worst, count = 0.0, 0
        with h5py.File(probe, "r") as fp, h5py.File(dump, "r") as fd:
            gf = fp["probe/grad_fro"][...]
            names = [n.decode() if isinstance(n, bytes) else n for n in fp["probe/grad_fro"].attrs["param"]]
            layers = gf.shape[1]
            for l in range(layers):
                for k, name in enumerate(names):
                    path = f"grads/layers/{l:02d}/{name}"
                    if path not in fd:
                        ok = np.isnan(gf[0, l, k])
                        if not ok:
                            check(f"absent tensor {path} is NaN", False)
                        continue
                    ref = np.linalg.norm(fd[path][...])
                    worst = max(worst, abs(gf[0, l, k] - ref) / max(ref, 1e-300))
                    count += 1
            ploss, dloss = fp["probe/loss"][0], fd["loss"][()]
        check(f"grad_fro == ||dump grad||_F ({placement}, {count} tensors)", worst <= 1e-12,
              f"worst rel. diff {worst:.2e}")
        check(f"probe loss == dump loss ({placement})", abs(ploss - dloss) <= 1e-12 * abs(dloss),
              f"{ploss!r} vs {dloss!r}")


def test_layout(tmp):
    path = os.path.join(tmp, "layout.h5")
    r = run("--config", "configs/tiny.ini", "--set", "probe.seeds=3", "--set", "probe.batches=2",
            "--set", "model.placement=pre", "--out", path, "--quiet")
    check("probe exits 0", r.returncode == 0, r.stderr.strip())
    if r.returncode:
        return
    with h5py.File(path, "r") as f:
        attrs = f.attrs
        for key in ("config", "version", "created", "seed", "status"):
            check(f"root attribute {key}", key in attrs)
        check("status is done", attrs.get("status") == "done", str(attrs.get("status")))
        check("config holds the resolved INI", "[model]" in attrs["config"] and "placement = pre" in attrs["config"])
        S, L = 3, 3
        shapes = {
            "grad_fro": (S, L, 16), "grad_fro_batchmean": (S, L, 16), "hidden_sqnorm": (S, L, 4),
            "jacobian_spec": (S, L, 2), "jacobian_fro": (S, L, 2), "jacobian_lemma3": (S, L, 2),
            "jacobian_spec_max": (S, L, 2), "jacobian_bound": (S, L, 2), "loss": (S,),
            "final_jacobian": (S, 5), "extra_grad_fro": (S, 4), "final_sqnorm": (S,),
        }
        for name, shape in shapes.items():
            ds = f.get(f"probe/{name}")
            check(f"/probe/{name} shape {shape}", ds is not None and ds.shape == shape,
                  None if ds is None else str(ds.shape))
        g = f["probe/grad_fro"]
        check("grad_fro axes attribute", list(g.attrs["axes"]) == ["seed", "layer", "param"])
        check("grad_fro names the param axis (docs/design.md §5)", list(g.attrs["param"]) == PARAMS)
        check("hidden_sqnorm names its sites", list(f["probe/hidden_sqnorm"].attrs["site"]) ==
              ["input", "resid1", "resid2", "output"])
        check("jacobian_spec names its norms", list(f["probe/jacobian_spec"].attrs["norm"]) == ["norm1", "norm2"])
        gf = g[...]
        check("W1, W2 gradients finite and positive", np.all(gf[:, :, 8] > 0) and np.all(gf[:, :, 10] > 0))
        check("Pre-LN final norm Jacobian present", np.all(np.isfinite(f["probe/final_jacobian"][...])))
    r = run("info", path)
    check("info reads the file", r.returncode == 0 and "Expected gradient" in r.stdout, r.stderr.strip())


def test_bad_input(tmp):
    out = os.path.join(tmp, "bad.h5")
    r = run("--config", "configs/tiny.ini", "--set", "probe.seeds=0", "--out", out)
    check("probe.seeds = 0: exit 2, message, no file", r.returncode == 2 and "probe.seeds" in r.stderr
          and not os.path.exists(out), r.stderr.strip())
    r = run("--config", "configs/tiny.ini", "--out", "/proc/stability-test/x.h5")
    check("unwritable output path: exit 1, message", r.returncode == 1 and "x.h5" in r.stderr, r.stderr.strip())
    existing = os.path.join(tmp, "existing.h5")
    with open(existing, "w") as fh:
        fh.write("keep me")
    r = run("--config", "configs/tiny.ini", "--out", existing)
    with open(existing) as fh:
        kept = fh.read() == "keep me"
    check("existing file without --force: exit 2, untouched", r.returncode == 2 and kept
          and "--force" in r.stderr, r.stderr.strip())
    r = run("--config", "configs/tiny.ini", "--out", existing, "--force", "--quiet")
    check("--force replaces it", r.returncode == 0 and h5py.is_hdf5(existing), r.stderr.strip())
    # kill -9 mid-run: nothing at the output path (the temporary has another name)
    killed = os.path.join(tmp, "killed.h5")
    p = subprocess.Popen([STABILITY, "--config", "configs/postln_L6.ini", "--out", killed, "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    p.send_signal(signal.SIGKILL)
    p.wait()
    check("probe killed mid-run leaves no file at the output path", not os.path.exists(killed))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_grad_fro_equals_dump(tmp)
        test_layout(tmp)
        test_bad_input(tmp)
    failed = results.count(False)
    print(f"probe: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
