#!/usr/bin/python3
"""A stop signal during a long curvature row (docs/design.md §10, docs/faults.md "Round 4").

Run from the repository root: /usr/bin/python3 tests/test_curv_signal.py (STABILITY names the
binary). A run of 2 updates with a row at update 0 (inside update 1) and after update 2, each
row 3 Lanczos runs of K = 150 steps (seconds on a loaded machine, milliseconds a step):
1. SIGTERM one second into the update-0 row: the run stops within 1.5 s (it used to finish the
   row first), exit 0, status interrupted, no /train row (update 1 undone with its row), a
   checkpoint at step 0; --resume gives every /train dataset (but the wall clock) of an
   uninterrupted run, byte for byte (a finished run keeps no final checkpoint to compare).
2. SIGINT during the row after update 2: within 1.5 s, exit 130, update 1 and its row kept, update
   2 undone: its /checkpoint that of a run stopped between updates 1 and 2, byte for byte;
   --resume: byte for byte the uninterrupted run again.
3. A sweep's progress counts curvature work: two runs of 2 updates with rows at updates 0 and 2,
   K = 10, no blocks, 4 × 16 tokens a batch: a Lanczos run of K steps is 2K + 2K²/(3T) =
   21.04 passes, a row three of them (H, P⁻¹H, its active part), so a run is 2 + 2 × 63.125 =
   128 units: the log says 128/256 units after the first run and 256/256 after both (it said
   2/4 and 4/4, as if the rows cost nothing).
4. probe.curvature_iters = 1e9 on a 2 736-parameter model warns at the start with K = n and a
   row's cost by the same formula (250 344 passes), and SIGTERM in that row (tens of seconds)
   ends the run at once; a probe of 2 seeds warns likewise (5.01e+05 passes in all).
Prints "ok"/"not ok" per check, then "curv_signal: N passed, M failed"; exit 1 if M > 0.
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
ENV = dict(os.environ, OMP_WAIT_POLICY="passive", STABILITY_THREADS="1")
SETS = {"model.d_model": 32, "model.d_ff": 64, "model.layers": 2, "model.heads": 2,
        "model.vocab": 64, "model.seq_len": 16, "data.batch": 4, "train.steps": 2,
        "train.warmup": 1, "probe.curvature_every": 2, "probe.curvature_iters": 150,
        "probe.curvature_block_iters": 0, "output.log_every": 1}
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def args(out, *extra):
    a = [STABILITY, "--config", "tiny", "--out", out]
    for k, v in SETS.items():
        a += ["--set", f"{k}={v}"]
    return a + list(extra)


def contents(path, group="train/"):
    """Every dataset of the group but the wall clock: name -> (type, shape, bytes)."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and name != "train/time":
                a = np.asarray(obj[()])
                out[name] = (a.dtype.str, a.shape, a.tobytes())
        f.visititems(visit)
    return {k: v for k, v in out.items() if k.startswith(group)}


def stop_in_row(out, sig, after_line, tmp, extra=(), wait=300):
    """Start the run, send sig one second after stderr shows after_line (None: after start; at
    most `wait` seconds), return (exit code, seconds from the signal to the exit, stderr)."""
    err_path = os.path.join(tmp, os.path.basename(out) + ".err")
    with open(err_path, "w") as err:
        p = subprocess.Popen(args(out, *extra), stdout=subprocess.DEVNULL, stderr=err, env=ENV)
        deadline = time.time() + wait
        while after_line and time.time() < deadline and p.poll() is None:
            with open(err_path) as e:
                if after_line in e.read():
                    break
            time.sleep(0.05)
        time.sleep(1.0)
        sent = time.time()
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        took = time.time() - sent
    with open(err_path) as e:
        return rc, took, e.read()


def long_rows():
    """probe.curvature_iters = 1e9 on a 2 736-parameter model: K = n = 2 736; the warning's
    cost by the formula; SIGTERM in that row (tens of seconds long) ends it at once."""
    with tempfile.TemporaryDirectory() as tmp:
        d, f, V, L = 16, 32, 32, 1
        n = V * d + L * (4 * d * d + 4 * d + d * f + f + f * d + d + 4 * d)   # Post-LN: no final norm
        T = 4 * 16
        run_K = 2 * n + 2 * n * n / (3 * T)
        row = 3 * run_K   # H, P^-1 H, its active part; no blocks
        extra = ["--set", f"model.d_model={d}", "--set", f"model.d_ff={f}", "--set",
                 f"model.vocab={V}", "--set", f"model.layers={L}", "--set",
                 "probe.curvature_iters=1000000000"]
        out = os.path.join(tmp, "long.h5")
        rc, took, err = stop_in_row(out, signal.SIGTERM, "warning: probe.curvature_iters", tmp,
                                    extra, wait=60)
        want = (f"probe.curvature_iters = 1000000000: {n} Lanczos steps a row (at most the {n} "
                f"parameters); a row costs about {row:.3g} forward+backward passes of a batch")
        check(f"curvature_iters = 1e9: a warning with K = n = {n} and a row's cost {row:.3g} "
              f"passes, all rows {2 * row:.3g}", want in err and f"all rows about {2 * row:.3g}" in err,
              err[-400:])
        try:
            with h5py.File(out, "r") as h:
                step = int(h["checkpoint/step"][()])
        except (OSError, KeyError) as e:   # a run killed after the wait: no file to read
            step = str(e)[:80]
        check(f"SIGTERM in that row: exit 0 within 1.5 s (took {took:.2f} s), checkpoint at step 0",
              rc == 0 and took < 1.5 and step == 0, f"exit {rc}, checkpoint at {step}")
        # a probe of 2 seeds: the same row (no blocks) per seed, warned before its first
        probe = [*extra, "--set", "train.steps=0", "--set", "probe.seeds=2", "--set",
                 "probe.batches=1", "--set", "probe.curvature_every=1"]
        rc, took, err = stop_in_row(os.path.join(tmp, "p.h5"), signal.SIGTERM,
                                    "warning: probe.curvature_iters", tmp, probe, wait=60)
        want = (f"{n} Lanczos steps a row (at most the {n} parameters); a seed's row costs about "
                f"{row:.3g} forward+backward passes of a batch (the re-orthogonalisation grows as "
                f"K^2), the 2 seeds' about {2 * row:.3g}")
        check(f"probe with curvature_iters = 1e9: the warning with K = n and 2 seeds' rows "
              f"{2 * row:.3g} passes; it ends by the SIGTERM", want in err and
              rc == -signal.SIGTERM, f"exit {rc}: {err[-300:]}")


def sweep_units():
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.abspath("configs/tiny.ini")
        keys = dict(SETS, **{"probe.curvature_iters": 10})
        keys.pop("output.log_every")
        with open(os.path.join(tmp, "sw.ini"), "w") as f:
            f.write(f"[sweep]\nbase = {base}\ninit.seed = 1, 2\n")
            f.write("".join(f"{k} = {v}\n" for k, v in keys.items()))
        r = subprocess.run([os.path.abspath(STABILITY), "sweep", "sw.ini", "--jobs", "1"],
                           capture_output=True, text=True, env=ENV, cwd=tmp, timeout=600)
        lines = [l for l in r.stderr.splitlines() if " units (" in l]
        want = ["1 of 2 runs ended, 128/256 units (50 %)", "2 of 2 runs ended, 256/256 units (100 %)"]
        check("a sweep's progress counts each curvature row as its passes: 128/256 units after "
              "the first run, 256/256 after both", r.returncode == 0 and len(lines) == 2
              and all(w in l for w, l in zip(want, lines)), f"exit {r.returncode}: {lines}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "ref.h5")
        t0 = time.time()
        r = subprocess.run(args(ref, "--quiet"), capture_output=True, text=True, env=ENV)
        row = (time.time() - t0) / 2
        check("the uninterrupted run exits 0", r.returncode == 0, r.stderr[-300:])
        with h5py.File(ref, "r") as f:
            check("it has rows at updates 0 and 2", list(f["train/curv_step"][()]) == [0, 2])
        print(f"       (a row takes about {row:.1f} s here)")
        want = contents(ref)
        # the state after update 1 as a run stopped between updates 1 and 2 checkpoints it
        ref1 = os.path.join(tmp, "ref1.h5")
        subprocess.run(args(ref1, "--quiet"), capture_output=True, env=dict(
            ENV, STABILITY_SIGNAL_AT_STEP="1"))
        want1 = contents(ref1, "checkpoint/")

        cases = [("SIGTERM in the update-0 row", signal.SIGTERM, None, 0, 0, []),
                 ("SIGINT in the row after update 2", signal.SIGINT, "update 1/2", 130, 1, [0])]
        for name, sig, line, code, steps, curv in cases:
            out = os.path.join(tmp, f"cut{steps}.h5")
            rc, took, err = stop_in_row(out, sig, line, tmp)
            check(f"{name}: stops within 1.5 s of the signal (took {took:.2f} s; a row "
                  f"{row:.1f} s), exit {code}", took < 1.5 and rc == code, f"exit {rc}: {err[-300:]}")
            check(f"{name}: says the checkpoint was written", "checkpoint written" in err, err[-300:])
            with h5py.File(out, "r") as f:
                status = f.attrs["status"]
                status = status.decode() if isinstance(status, bytes) else status
                check(f"{name}: status interrupted, {steps} update(s) and rows {curv} kept "
                      f"(the partial row dropped), checkpoint at step {steps}",
                      status == "interrupted" and len(f["train/step"]) == steps
                      and list(f["train/curv_step"][()]) == curv
                      and int(f["checkpoint/step"][()]) == steps,
                      f"{status}, {len(f['train/step'])} steps, {list(f['train/curv_step'][()])}")
            if steps == 1:
                got = contents(out, "checkpoint/")
                diff = sorted(k for k in set(want1) | set(got) if want1.get(k) != got.get(k))
                check(f"{name}: its checkpoint (update 2 undone) is that of a run stopped between "
                      f"updates 1 and 2, byte for byte ({len(got)} datasets)", not diff, str(diff[:6]))
            r = subprocess.run(args(out, "--resume", "--quiet"), capture_output=True, text=True,
                               env=ENV)
            got = contents(out)
            diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
            check(f"{name}: --resume exits 0 and every /train dataset ({len(got)}) equals the "
                  "uninterrupted run's, byte for byte", r.returncode == 0 and not diff,
                  f"exit {r.returncode}, differ: {diff[:6]} {r.stderr[-200:]}")
    long_rows()
    sweep_units()
    failed = results.count(False)
    print(f"curv_signal: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
