#!/usr/bin/python3
"""Training runs end to end, files read with h5py and no project code.

Run from the repository root (make test does): /usr/bin/python3 tests/test_train.py
1. Layout of /train and /checkpoint (docs/design.md §6) for a text run; update 1's loss, gradient norm
   and per-layer grad_fro equal those of `stability dump` (same init, same first batch).
2. A small Pre-LN model learns `copy` without warm-up: mean loss of updates 351-400 < 0.1.
3. Resume: N updates straight vs N/2 + SIGTERM + --resume give byte-identical /train datasets
   (all but the wall-clock `time`); the same after SIGUSR1 at an arbitrary moment, and after a
   kill -9 with periodic checkpoints. A live run's file is not resumed or replaced by a second
   process (nor by a probe or dump), and a reader holding it open does not stop the run from
   finishing.
4. lr = 1e3: status = diverged, diverged_at, exit 0, a valid file. kill -9 mid-run: the file
   opens (SWMR read), status = running, consecutive steps, finite losses.
   Off a terminal: a log line after update 1, then by time as well as by update; the speed
   leaves the measuring time out.
5. Usage errors: missing/empty text file, existing output, --resume with another config.
6. The last good checkpoint survives any interruption (docs/design.md §6): SIGKILL in the middle
   of writing the file's checkpoint (its journal complete) or the journal (the file's previous
   checkpoint intact), and a real SIGTERM followed at once by SIGKILL: --resume continues from
   the newest complete one, byte-identical.
7. Signals: SIGHUP, SIGXCPU, SIGALRM checkpoint (exit 128 + the signal); `ulimit -f` is a write
   error (exit 1, "File too large"), not a silent death; --resume of a file without a usable
   checkpoint refuses (exit 2) and leaves the log alone, --force starts over.
8. Two writers of one --out: the claim comes first, and the second is refused naming the
   first's process (training and probes, with and without --force; started at once).
Prints "ok"/"not ok" per check, then "train: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

STABILITY = os.environ.get("STABILITY", "./stability")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")   # no OpenMP spinning on 2 cores
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def sets(**kw):
    out = []
    for k, v in kw.items():
        out += ["--set", f"{k.replace('__', '.')}={v}"]
    return out


def run(*args, env=None, timeout=120):
    return subprocess.run([STABILITY, *args], capture_output=True, text=True, env=env or ENV,
                          timeout=timeout)


def start(*args, env=None):
    return subprocess.Popen([STABILITY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env or ENV)


def attr(f, name, obj="/"):
    v = f[obj].attrs[name]
    return v.decode() if isinstance(v, bytes) else v


def open_swmr(path):
    return h5py.File(path, "r", swmr=True)


def wait_for(path, pred, limit=60.0):
    """Poll the (SWMR) file until pred(file) holds; True on success."""
    t0 = time.time()
    while time.time() - t0 < limit:
        try:
            with open_swmr(path) as f:
                if pred(f):
                    return True
        except (OSError, KeyError):
            pass
        time.sleep(0.05)
    return False


def same_train(a, b, skip=("time",)):
    """Names of /train datasets that differ between files a and b (byte-wise)."""
    try:
        with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
            names = sorted(set(fa["train"]) | set(fb["train"]))
            return [n for n in names if n not in skip and (n not in fa["train"] or n not in fb["train"] or
                    fa["train"][n][...].tobytes() != fb["train"][n][...].tobytes())]
    except (OSError, KeyError) as e:
        return [f"unreadable: {e}"]


def write_corpus(path, n=30000):
    """Deterministic pseudo-English: words from a small lexicon, Zipf-like frequencies."""
    rng = np.random.default_rng(7)
    words = ("the of and to in a is that for it as was with be by on not he this are or his from "
             "at which but have an they you were her she there been one all we their has would "
             "when if so what out up into no some could them other then more these two may like "
             "layer norm warm up gradient transformer attention learning rate residual").split()
    p = 1.0 / np.arange(1, len(words) + 1) ** 1.1
    p /= p.sum()
    text, size = [], 0
    while size < n:
        sent = " ".join(rng.choice(words, size=rng.integers(4, 14), p=p))
        sent = sent[0].upper() + sent[1:] + ". "
        text.append(sent)
        size += len(sent)
    with open(path, "w") as f:
        f.write("".join(text)[:n])


# The resume runs: 3 layers, d = 32, copy task with dropout (dropout masks are part of the
# data stream), ~1.5 ms per update.
RESUME = ["--config", "configs/tiny.ini", "--quiet",
          *sets(model__d_model=32, model__d_ff=64, model__seq_len=16, model__dropout=0.1,
                data__batch=8, data__task="copy", train__steps=2000, train__warmup=100,
                train__lr="1e-3", probe__every=100)]


def test_layout(tmp, corpus):
    out, dump = os.path.join(tmp, "layout.h5"), os.path.join(tmp, "layout_dump.h5")
    args = ["--config", "configs/tiny.ini",
            *sets(data__task="text", data__path=corpus, model__vocab=256, model__seq_len=16,
                  model__causal="true", data__batch=4, train__steps=60, train__warmup=10,
                  train__lr="1e-3", probe__every=20, train__eval_every=25)]
    r = run(*args, "--out", out, "--quiet")
    d = run("dump", *args, "--out", dump)
    check("text run and dump exit 0", r.returncode == 0 and d.returncode == 0, r.stderr + d.stderr)
    if r.returncode or d.returncode:
        return
    with h5py.File(out, "r") as f, h5py.File(dump, "r") as fd:
        check("root attributes config/version/created/seed, status done",
              all(k in f.attrs for k in ("config", "version", "created", "seed")) and
              attr(f, "status") == "done")
        t = f["train"]
        L = 3
        shapes = {"step": (60,), "lr": (60,), "loss": (60,), "grad_norm": (60,), "time": (60,),
                  "probe_step": (4,), "grad_fro": (4, L, 16), "extra_grad_fro": (4, 4),
                  "hidden_sqnorm": (4, L, 4), "final_sqnorm": (4,), "jacobian_spec": (4, L, 2),
                  "final_jacobian_spec": (4,), "eval_step": (3,), "val_loss": (3,)}
        bad = [f"{k}: {t[k].shape if k in t else 'missing'}" for k, s in shapes.items()
               if k not in t or t[k].shape != s]
        check("/train datasets and shapes", not bad, "; ".join(bad))
        check("/train datasets are chunked and extendible",
              all(t[k].chunks is not None and t[k].maxshape[0] is None for k in shapes if k in t))
        check("step 1..60, probe_step 1 20 40 60, eval_step 25 50 60",
              list(t["step"][:]) == list(range(1, 61)) and list(t["probe_step"][:]) == [1, 20, 40, 60]
              and list(t["eval_step"][:]) == [25, 50, 60])
        lr = t["lr"][:]
        want = [1e-3 * s / 10 if s <= 10 else 1e-3 * math.sqrt(10 / s) for s in range(1, 61)]
        check("lr follows warm-up + inverse_sqrt", np.allclose(lr, want, rtol=1e-15, atol=0))
        names = [n.decode() if isinstance(n, bytes) else n for n in t["grad_fro"].attrs["param"]]
        axes = [n.decode() if isinstance(n, bytes) else n for n in t["grad_fro"].attrs["axes"]]
        check("grad_fro axes (probe, layer, param) and names", axes == ["probe", "layer", "param"]
              and names[:4] == ["wq", "bq", "wk", "bk"] and len(names) == 16)
        check("val_loss finite and falling", np.all(np.isfinite(t["val_loss"][:])) and
              t["val_loss"][-1] < t["val_loss"][0], str(t["val_loss"][:]))
        check("no checkpoint written: /checkpoint/step = -1", f["checkpoint/step"][()] == -1)
        # update 1 sees the dump's batch from the dump's initialisation
        loss_ok = abs(t["loss"][0] - fd["loss"][()]) <= 1e-12 * abs(fd["loss"][()])
        g = np.sqrt(sum(np.sum(fd["grads"][k][...] ** 2) for k in _leaves(fd["grads"])))
        gn_ok = abs(t["grad_norm"][0] - g) <= 1e-12 * g
        worst = 0.0
        for l in range(L):
            for k, name in enumerate(names):
                path = f"grads/layers/{l:02d}/{name}"
                if path in fd:
                    ref = np.linalg.norm(fd[path][...])
                    worst = max(worst, abs(t["grad_fro"][0, l, k] - ref) / max(ref, 1e-300))
        check("update 1: loss, grad_norm and grad_fro equal the dump's", loss_ok and gn_ok and
              worst < 1e-12, f"loss {t['loss'][0]} vs {fd['loss'][()]}, |g| {t['grad_norm'][0]} vs {g}, "
              f"grad_fro rel {worst:.2e}")


def _leaves(group, prefix=""):
    out = []
    for k, v in group.items():
        if isinstance(v, h5py.Group):
            out += _leaves(v, prefix + k + "/")
        else:
            out.append(prefix + k)
    return out


def test_copy_learning(tmp):
    out = os.path.join(tmp, "copy.h5")
    r = run("--config", "configs/tiny.ini", "--out", out, "--quiet",
            *sets(model__placement="pre", model__layers=2, model__d_model=32, model__heads=2,
                  model__d_ff=64, model__vocab=16, model__seq_len=16, model__causal="true",
                  data__task="copy", data__batch=16, train__steps=400, train__lr="3e-3",
                  train__warmup=0, train__schedule="constant"))
    if r.returncode:
        check("copy run exits 0", False, r.stderr)
        return
    with h5py.File(out, "r") as f:
        loss = f["train/loss"][:]
    final = float(loss[-50:].mean())
    check(f"Pre-LN learns copy without warm-up: mean loss of updates 351-400 = {final:.3f} < 0.1 "
          f"(start {loss[:10].mean():.2f}, uniform ln 15 = 2.71)", final < 0.1)


def test_log_cadence(tmp):
    """Off a terminal the log has a line after update 1 and then one at least every
    STABILITY_LOG_SECONDS (the test hook of the 10-second cadence), whatever output.log_every
    says; the speed leaves the measuring time out and says it apart."""
    out = os.path.join(tmp, "cadence.h5")
    env = dict(ENV, STABILITY_LOG_SECONDS="0.05")
    t0 = time.time()
    r = run("train", "configs/tiny.ini", "--out", out,
            *sets(train__steps=400, train__warmup=1, output__log_every=100000,
                  model__d_model=32, model__d_ff=64, model__seq_len=32, data__batch=8,
                  probe__curvature_every=400, probe__curvature_iters=4), env=env)
    took = time.time() - t0
    lines = [ln for ln in r.stderr.splitlines() if re.match(r"tiny: update \d+/400 ", ln)]
    steps = [int(re.match(r"tiny: update (\d+)/", ln).group(1)) for ln in lines]
    check("the first log line is update 1's", r.returncode == 0 and steps[:1] == [1], r.stderr[-400:])
    timed = [s for s in steps if s not in (1, 400)]
    # 400 updates of this model take seconds of training, so lines 0.05 s apart are
    # several, while output.log_every = 100000 alone would give none between 1 and 400
    check(f"lines by time as well as by update ({len(timed)} timed lines in {took:.1f} s)",
          len(timed) >= 3 and steps == sorted(steps), " ".join(map(str, steps)))
    done = [ln for ln in r.stdout.splitlines() if " done after 400 updates" in ln]
    check("the summary's speed says the measuring time apart",
          bool(done) and re.search(r"tokens/s, \+ [0-9.e+-]+ s measuring\)", done[0]) is not None,
          r.stdout[-300:])


def test_resume(tmp):
    straight = os.path.join(tmp, "straight.h5")
    r = run(*RESUME, "--out", straight)
    check("straight run: exit 0", r.returncode == 0, r.stderr)
    if r.returncode:
        return

    # deterministic: SIGTERM raised after update N/2 (STABILITY_SIGNAL_AT_STEP), then --resume
    half = os.path.join(tmp, "half.h5")
    r = run(*RESUME, "--out", half, env=dict(ENV, STABILITY_SIGNAL_AT_STEP="1000"))
    with h5py.File(half, "r") as f:
        st, ck, n = attr(f, "status"), f["checkpoint/step"][()], f["train/loss"].shape[0]
    check("SIGTERM after update 1000: exit 0, status interrupted, checkpoint at 1000",
          r.returncode == 0 and st == "interrupted" and ck == 1000 and n == 1000,
          f"rc {r.returncode} status {st} checkpoint {ck} rows {n} {r.stderr}")
    r = run(*RESUME, "--out", half, "--resume")
    with h5py.File(half, "r") as f:
        st = attr(f, "status")
    diff = same_train(straight, half)
    check("1000 + SIGTERM + --resume 1000: byte-identical /train (loss, lr, grad_norm, probes)",
          r.returncode == 0 and st == "done" and not diff, f"rc {r.returncode} {st} differ: {diff}")

    # a real signal from outside at an arbitrary moment: SIGUSR1 (Slurm's warning)
    usr = os.path.join(tmp, "usr1.h5")
    p = start(*RESUME, "--out", usr)
    seen = wait_for(usr, lambda f: f["train/loss"].shape[0] > 0)
    p.send_signal(signal.SIGUSR1)
    _, err = p.communicate(timeout=60)
    with h5py.File(usr, "r") as f:
        st, ck = attr(f, "status"), int(f["checkpoint/step"][()])
    check(f"SIGUSR1 mid-run: exit 0, status interrupted, checkpoint at {ck}",
          seen and p.returncode == 0 and st == "interrupted" and 0 < ck < 2000,
          f"rc {p.returncode} status {st} {err}")
    r = run(*RESUME, "--out", usr, "--resume")
    diff = same_train(straight, usr)
    check("SIGUSR1 + --resume: byte-identical /train", r.returncode == 0 and not diff,
          f"rc {r.returncode} differ: {diff} {r.stderr}")

    # kill -9 after the first periodic checkpoint: readable, then resumable, still identical
    k9 = os.path.join(tmp, "kill9.h5")
    every = sets(train__checkpoint_every=300)
    p = start(*RESUME, *every, "--out", k9)
    seen = wait_for(k9, lambda f: f["checkpoint/step"][()] >= 300)
    p.kill()
    p.wait()
    ok, detail = False, ""
    try:
        with open_swmr(k9) as f:
            steps, loss = f["train/step"][:], f["train/loss"][:]
            st, ck = attr(f, "status"), int(f["checkpoint/step"][()])
            ok = (st == "running" and len(steps) >= ck and list(steps) == list(range(1, len(steps) + 1))
                  and np.all(np.isfinite(loss)))
            detail = f"status {st}, {len(steps)} rows, checkpoint {ck}"
    except OSError as e:
        detail = str(e)
    check(f"kill -9 mid-run: h5py reads the file (swmr=True): {detail}", seen and ok, detail)
    r = run("info", k9)
    check("kill -9: `stability info` reads it (status running)", r.returncode == 0 and
          "status running" in r.stdout, r.stderr)
    r = run(*RESUME, *every, "--out", k9, "--resume")
    diff = same_train(straight, k9)
    check("kill -9 + --resume from the last checkpoint: byte-identical /train",
          r.returncode == 0 and not diff, f"rc {r.returncode} differ: {diff} {r.stderr}")
    with h5py.File(k9, "r") as f:   # a resumed file is an ordinary file again
        check("after resume the file opens without SWMR, status done", attr(f, "status") == "done")

    # a live run's file: a second --resume or --force is refused; a reader holding the file
    # open across the end does not stop the final status
    live = os.path.join(tmp, "live.h5")
    p = start(*RESUME, "--out", live)
    seen = wait_for(live, lambda f: f["train/loss"].shape[0] > 0)
    reader = open_swmr(live)
    r1 = run(*RESUME, "--out", live, "--resume")
    r2 = run(*RESUME, "--out", live, "--force")
    # every writer respects the live run's lock: a probe or dump with --force neither
    # replaces the file nor has its own file receive the run's final status
    probe = ["--config", "configs/tiny.ini", *sets(probe__seeds=1, probe__batches=1)]
    r3 = run(*probe, "--out", live, "--force", "--quiet")
    r4 = run("dump", *probe, "--out", live, "--force")
    _, err = p.communicate(timeout=120)
    reader.close()
    with h5py.File(live, "r") as f:
        st = attr(f, "status")
    diff = same_train(straight, live)
    check("second --resume/--force on a live run: exit 1 'in use'; the live run (read by h5py "
          "meanwhile) ends done, identical", seen and r1.returncode == 1 and r2.returncode == 1 and
          "in use" in r1.stderr and "in use" in r2.stderr and p.returncode == 0 and st == "done"
          and not diff, f"{r1.returncode} {r1.stderr} {r2.returncode} {p.returncode} {st} {diff} {err}")
    check("probe and dump --force onto a live training file: exit 1 'in use', the run's file "
          "survives them", r3.returncode == 1 and r4.returncode == 1 and "in use" in r3.stderr and
          "in use" in r4.stderr and not [x for x in os.listdir(tmp) if ".tmp." in x],
          f"probe {r3.returncode} {r3.stderr} dump {r4.returncode} {r4.stderr}")
    # ... while a reader (h5py holds an flock) never stops a probe from replacing a finished file
    done = os.path.join(tmp, "probe_read.h5")
    run(*probe, "--out", done, "--quiet")
    with h5py.File(done, "r"):
        r5 = run(*probe, "--out", done, "--force", "--quiet")
    check("a probe --force replaces a finished file that h5py holds open", r5.returncode == 0, r5.stderr)

    # --resume of a finished run: nothing to do, file untouched
    before = os.stat(half).st_mtime_ns
    r = run(*RESUME, "--out", half, "--resume")
    check("--resume of a done run: exit 0, file untouched", r.returncode == 0 and
          os.stat(half).st_mtime_ns == before, r.stdout + r.stderr)
    # --resume with another configuration: refused
    r = run(*RESUME, *sets(train__lr="2e-3"), "--out", half, "--resume")
    check("--resume with another configuration: exit 2, names the key",
          r.returncode == 2 and "lr = 0.001" in r.stderr, r.stderr)
    # --resume without a file: a fresh run ([train] resume = auto)
    fresh = os.path.join(tmp, "fresh.h5")
    r = run(*RESUME, *sets(train__steps=50), "--out", fresh, "--resume")
    with h5py.File(fresh, "r") as f:
        n = f["train/loss"].shape[0]
    check("--resume without a file starts a new run", r.returncode == 0 and n == 50, r.stderr)


def test_sigint(tmp):
    out = os.path.join(tmp, "sigint.h5")
    p = start(*RESUME, "--out", out)
    wait_for(out, lambda f: f["train/loss"].shape[0] > 0)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    with h5py.File(out, "r") as f:
        st, ck = attr(f, "status"), int(f["checkpoint/step"][()])
    check("SIGINT: exit 130, status interrupted, checkpoint written",
          p.returncode == 130 and st == "interrupted" and ck > 0, f"rc {p.returncode} {st} {err}")


def test_diverged(tmp):
    out = os.path.join(tmp, "diverged.h5")
    r = run("--config", "configs/tiny.ini", "--out", out, "--quiet",
            *sets(train__steps=500, train__lr="1e3"))
    try:
        with h5py.File(out, "r") as f:   # closed cleanly: no SWMR needed
            st = attr(f, "status")
            at = int(f["train"].attrs["diverged_at"])
            loss = f["train/loss"][:]
            ok = (st == "diverged" and at == len(loss) and at < 500 and
                  (not np.isfinite(loss[-1]) or loss[-1] > 100 * math.log(11)))
            detail = f"status {st} at {at}, last loss {loss[-1]}"
    except (OSError, KeyError) as e:
        ok, detail = False, str(e)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(f"lr = 1e3: exit 0, status diverged, diverged_at ({detail}), one line",
          r.returncode == 0 and ok and len(lines) == 1 and "diverged at step" in lines[0],
          f"rc {r.returncode} {detail} {r.stderr}")


def test_errors(tmp):
    out = os.path.join(tmp, "err.h5")
    base = ["--config", "configs/tiny.ini", "--out", out, "--quiet",
            *sets(data__task="text", model__vocab=256, train__steps=10)]
    r = run(*base, *sets(data__path=os.path.join(tmp, "missing.txt")))
    first = r.stderr.splitlines()[0] if r.stderr else ""
    check("missing text file: exit 2, 'configs/tiny.ini: data.path: ...', no file",
          r.returncode == 2 and first.startswith("configs/tiny.ini: data.path: ") and
          "cannot open" in first and not os.path.exists(out), first)
    empty = os.path.join(tmp, "empty.txt")
    open(empty, "w").close()
    r = run(*base, *sets(data__path=empty))
    first = r.stderr.splitlines()[0] if r.stderr else ""
    check("empty text file: exit 2, 'data.path: ... empty file', no file",
          r.returncode == 2 and "data.path: " in first and "empty file" in first and
          not os.path.exists(out), first)
    r = run("--config", "configs/tiny.ini", *sets(train__steps=5), "--out", out, "--quiet")
    before = os.stat(out).st_mtime_ns if r.returncode == 0 else None
    r = run("--config", "configs/tiny.ini", *sets(train__steps=5), "--out", out, "--quiet")
    check("existing output without --force: exit 2, untouched",
          r.returncode == 2 and before == os.stat(out).st_mtime_ns and "exists" in r.stderr, r.stderr)
    r = run("--config", "configs/tiny.ini", *sets(train__steps=5), "--out", out, "--quiet", "--force")
    check("--force replaces it", r.returncode == 0, r.stderr)


# 600 updates of the resume model, a checkpoint every 200
ATOMIC = [*RESUME, *sets(train__steps=600, train__checkpoint_every=200)]


def journal_step(path):
    """The step of path's checkpoint journal (path.checkpoint), or None."""
    try:
        with h5py.File(path + ".checkpoint", "r") as j:
            return int(j["checkpoint/step"][()])
    except (OSError, KeyError):
        return None


def test_checkpoint_atomic(tmp):
    straight = os.path.join(tmp, "atomic_straight.h5")
    r = run(*ATOMIC, "--out", straight)
    check("600 updates straight: exit 0", r.returncode == 0, r.stderr)
    # SIGTERM after update 500; the 6th checkpoint write (file's, after the journal's) or the
    # 5th (the journal's) killed half-way: checkpoints at 200 and 400 came before
    for kill_at, want, where in [(6, 500, "the file's checkpoint"), (5, 400, "the journal")]:
        out = os.path.join(tmp, f"atomic{kill_at}.h5")
        env = dict(ENV, STABILITY_SIGNAL_AT_STEP="500", STABILITY_KILL_IN=f"CHECKPOINT:{kill_at}")
        r = run(*ATOMIC, "--out", out, env=env)
        with open_swmr(out) as f:
            own = int(f["checkpoint/step"][()])
        j = journal_step(out)
        r2 = subprocess.run([STABILITY, *[a for a in ATOMIC if a != "--quiet"], "--out", out,
                             "--resume"], capture_output=True, text=True, env=ENV)
        diff = same_train(straight, out)
        resumed = re.search(r"resuming at step (\d+)", r2.stdout)
        left = [x for x in os.listdir(tmp) if x.startswith(f"atomic{kill_at}.h5.")]
        check(f"SIGTERM after update 500, SIGKILL while writing {where}: the file's checkpoint "
              f"{own}, the journal's {j}; --resume continues from {want}, byte-identical, "
              "nothing left beside the file", r.returncode == -9 and r2.returncode == 0 and
              resumed and int(resumed.group(1)) == want and not diff and not left,
              f"kill exit {r.returncode}, resume exit {r2.returncode} {r2.stdout.strip()[-80:]} "
              f"{r2.stderr.strip()[-200:]} differ {diff} left {left}")
    # a real TERM then KILL (Slurm's KillWait, the OOM killer) at an arbitrary moment
    out = os.path.join(tmp, "termkill.h5")
    p = start(*ATOMIC, "--out", out)
    seen = wait_for(out, lambda f: f["train/loss"].shape[0] > 250)
    p.send_signal(signal.SIGTERM)
    time.sleep(0.003)
    p.kill()
    p.wait()
    r = run(*ATOMIC, "--out", out, "--resume")
    diff = same_train(straight, out)
    check("SIGTERM then at once SIGKILL after update 250: --resume continues (from 200 or later), "
          "byte-identical", seen and r.returncode == 0 and not diff, f"{r.stderr} differ {diff}")


def test_more_signals(tmp):
    straight = os.path.join(tmp, "atomic_straight.h5")
    for sig in (signal.SIGHUP, signal.SIGXCPU, signal.SIGALRM):
        out = os.path.join(tmp, f"sig{int(sig)}.h5")
        p = start(*ATOMIC, "--out", out)
        seen = wait_for(out, lambda f: f["train/loss"].shape[0] > 0)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        try:
            with h5py.File(out, "r") as f:
                st, ck = attr(f, "status"), int(f["checkpoint/step"][()])
        except OSError as e:
            st, ck = str(e), -1
        r = run(*ATOMIC, "--out", out, "--resume")
        diff = same_train(straight, out)
        check(f"{sig.name} mid-run: exit {128 + int(sig)}, status interrupted, checkpoint at {ck}; "
              "--resume byte-identical", seen and p.returncode == 128 + int(sig) and
              st == "interrupted" and ck > 0 and r.returncode == 0 and not diff,
              f"exit {p.returncode} {st} {err.strip()[-150:]} resume {r.returncode} {diff}")
    # `ulimit -f`: writes past it fail (EFBIG) instead of a silent SIGXFSZ death
    out = os.path.join(tmp, "fsize.h5")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (300 << 10, 300 << 10))
    p = subprocess.run([STABILITY, *RESUME, *sets(probe__every=1), "--out", out],
                       capture_output=True, text=True, env=ENV, preexec_fn=limit, timeout=120)
    check("ulimit -f 300 KB: exit 1, 'File too large', --resume named", p.returncode == 1 and
          "File too large" in p.stderr and "--resume" in p.stderr,
          f"exit {p.returncode} {p.stderr.strip()[-300:]}")
    # --resume never erases a log silently: no usable checkpoint is exit 2 without --force
    out = os.path.join(tmp, "nockpt.h5")
    p = start(*RESUME, "--out", out)
    seen = wait_for(out, lambda f: f["train/loss"].shape[0] > 100)
    p.kill()
    p.wait()
    with open_swmr(out) as f:
        rows = f["train/loss"].shape[0]
    before = os.stat(out).st_mtime_ns
    r = run(*RESUME, "--out", out, "--resume")
    check(f"--resume of a killed run without a checkpoint ({rows} updates logged): exit 2, "
          "'no usable checkpoint', --force named, the file untouched", seen and r.returncode == 2
          and "no usable checkpoint" in r.stderr and "--force" in r.stderr and
          os.stat(out).st_mtime_ns == before, f"exit {r.returncode} {r.stderr.strip()}")
    r = run(*RESUME, "--out", out, "--resume", "--force")
    with h5py.File(out, "r") as f:
        n = f["train/loss"].shape[0]
    check("... with --force it starts over, and says so", r.returncode == 0 and n == 2000 and
          "starting over" in r.stderr, f"exit {r.returncode} {n} {r.stderr.strip()}")


def test_two_writers(tmp):
    """The claim comes before the file: the second writer is refused and told who holds it."""
    live = os.path.join(tmp, "claim.h5")
    a = start(*RESUME, "--out", live)
    seen = wait_for(live, lambda f: f["train/loss"].shape[0] > 0)
    b = run(*RESUME, "--out", live, "--force")
    probe = ["--config", "configs/tiny.ini", *sets(probe__seeds=1, probe__batches=1)]
    c = run(*probe, "--out", live, "--force", "--quiet")
    a.send_signal(signal.SIGTERM)
    a.communicate(timeout=60)
    named = f"in use by process {a.pid} on "
    check("a second training run --force and a probe --force on a live run's file: exit 1, "
          "'in use by process PID on HOST (a training run ...)'", seen and b.returncode == 1 and
          c.returncode == 1 and named in b.stderr and named in c.stderr and
          "a training run" in b.stderr, f"{b.returncode} {b.stderr.strip()} | {c.returncode} "
          f"{c.stderr.strip()}")
    # started at the same moment, both with --force: one runs, the other is refused naming it
    bad = []
    for trial in range(3):
        out = os.path.join(tmp, f"race{trial}.h5")
        procs = [start(*RESUME, *sets(train__steps=300), "--out", out, "--force") for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        codes = sorted(p.returncode for p in procs)
        loser = [i for i, p in enumerate(procs) if p.returncode != 0]
        with h5py.File(out, "r") as f:
            st, n = attr(f, "status"), f["train/loss"].shape[0]
        ok = codes == [0, 1] and st == "done" and n == 300 and \
            f"in use by process {procs[1 - loser[0]].pid} " in outs[loser[0]][1]
        if not ok:
            bad.append(f"trial {trial}: exits {codes}, {st} {n} rows, {[o[1].strip() for o in outs]}")
    check("two training runs --force on one --out started at once (3 trials): one finishes, the "
          "other exits 1 naming its process; the file is the finished run's", not bad, "; ".join(bad))
    out = os.path.join(tmp, "probes.h5")
    probe2 = ["--config", "configs/postln_L6.ini", *sets(probe__seeds=1, probe__batches=2)]
    procs = [start(*probe2, "--out", out, "--force", "--quiet") for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    loser = [i for i, p in enumerate(procs) if p.returncode != 0]
    check("two probes --force on one --out at once: one writes it, the other exits 1 naming it",
          codes == [0, 1] and f"in use by process {procs[1 - loser[0]].pid} " in outs[loser[0]][1],
          f"{codes} {[o[1].strip() for o in outs]}")


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        with tempfile.TemporaryDirectory(prefix="stability_train_") as tmp:
            corpus = os.path.join(tmp, "corpus.txt")
            write_corpus(corpus)
            t0 = time.time()
            test_layout(tmp, corpus)
            test_copy_learning(tmp)
            test_log_cadence(tmp)
            test_resume(tmp)
            test_sigint(tmp)
            test_diverged(tmp)
            test_errors(tmp)
            test_checkpoint_atomic(tmp)
            test_more_signals(tmp)
            test_two_writers(tmp)
            print(f"({time.time() - t0:.1f} s)")
    passed = sum(results)
    print(f"train: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
