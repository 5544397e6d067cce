#!/usr/bin/python3
"""Watching runs (issue 33): the diagnosis of real small runs, the log of a run and of a sweep
whose output is a file, and a run that changes its thread count mid-run (files read with h5py).

Run from the repository root (make test does): /usr/bin/python3 tests/test_watch.py
1. One run per diagnosis class on tiny copy-task models, each checked against its definition
   computed here from the file (measure/diagnose.h): never left warm-up (train.warmup > steps:
   warned before update 1; the lr ends at lr·steps/warmup), stuck (lr 1e-6: the last 20
   updates' mean loss less than 5 % below the first 20's, Σ lr < 0.01), exploded (lr 1: a 20-update
   mean above 2·max(ln V, the first loss), every loss finite, status done), diverged (the
   layer and head named), healthy (one line, no other finding, no plateau noise).
2. The log of a run whose stderr and stdout are one file: the header first, a line at update
   1, every output.log_every and the last, each line's loss the mean of the losses since the
   previous line and its lr the update's (from /train), the summary last; --quiet and
   log_every = 0 leave no line; on a terminal (a pty) the bar, no log line.
3. A sweep whose output is a file: each run's log has its lines, warnings and summary; the
   runs' warnings reach the sweep's output as one line each naming the run; one line per run
   that ends; the summary table, printed and stored as results/<sweep>/summary.txt. On a
   terminal (a pty) its bar counts the updates of all runs (200 + 300) with an ETA.
4. Threads: a sweep --jobs 2 on 2 threads whose last run outlives the others gets the free
   core mid-run (its log says from which update), and every dataset of its file is the same
   bits as the same run alone on 1 thread; the channel's protocol driven by hand gives the same.
Prints "ok"/"not ok" per check, then "watch: N passed, M failed"; exit 1 if M > 0.
"""
import math
import os
import pty
import re
import socket
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import same_results as sr   # noqa: E402  (the byte-for-byte comparison of two result files)

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
CONFIGS = os.path.abspath("configs")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive", STABILITY_THREADS="1")
ENV.pop("STABILITY_SWEEP_THREADS", None)
# causal: copy is next-token prediction, and a bidirectional model would see its targets
# (the diagnosis flags that as a leak: measure/diagnose.h)
COPY = ["--set", "data.task=copy", "--set", "model.causal=true"]
WIDE = ["--set", "model.d_model=32", "--set", "model.d_ff=64"]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def sets(**kw):
    out = []
    for k, v in kw.items():
        out += ["--set", f"{k.replace('__', '.')}={v}"]
    return out


def train(tmp, name, *args, env=None, quiet=False):
    """Train tiny with args into tmp/name.h5, stdout and stderr into one file (as a cluster job's
    output): (exit code, that output)."""
    out, log = os.path.join(tmp, name + ".h5"), os.path.join(tmp, name + ".out")
    with open(log, "w") as fh:
        r = subprocess.run([STABILITY, "train", "tiny", *COPY, *args, "--out", out, "--force"] +
                           (["--quiet"] if quiet else []), stdout=fh, stderr=subprocess.STDOUT,
                           env=env or ENV, timeout=300)
    with open(log) as fh:
        return r.returncode, fh.read()


def info(tmp, name):
    r = subprocess.run([STABILITY, "info", os.path.join(tmp, name + ".h5")], capture_output=True,
                       text=True, env=ENV, timeout=60)
    return r.stdout[r.stdout.find("diagnosis over"):] if r.returncode == 0 else f"exit {r.returncode}"


def train_rows(tmp, name):
    with h5py.File(os.path.join(tmp, name + ".h5"), "r") as f:
        return ({k: f["train"][k][...] for k in ("loss", "lr", "step")},
                f.attrs["status"].decode() if isinstance(f.attrs["status"], bytes) else f.attrs["status"])


def window_means(loss, w=20):
    n = min(w, len(loss) // 2)
    return loss[:n].mean(), loss[-n:].mean()


def test_classes(tmp):
    # never left warm-up: the README's old example
    rc, out = train(tmp, "warm", *sets(train__steps=200))
    t, st = train_rows(tmp, "warm")
    first, last = window_means(t["loss"])
    warned = out.find("warning: warm-up longer than the run")
    line1 = out.find("update 1/200")
    check(f"never left warm-up: warned before update 1, lr ends at {t['lr'][-1]:.3g} = 5e-4·200/4000",
          rc == 0 and 0 <= warned < line1 and abs(t["lr"][-1] - 2.5e-5) < 1e-18, out[:400])
    d = info(tmp, "warm")
    check(f"... info: warm-up longer than the run, and not learning ({last:.4f} > 0.95 x {first:.4f}) "
          "because it ended in its warm-up", last > 0.95 * first and "warm-up longer than the run"
          in d and "not learning" in d and "ended in its warm-up" in d and
          "--set train.warmup=100 or more train.steps" in d, d)   # the one warm-up answer: 2/(1 - 0.98)
    # stuck: lr 1e-6, no warm-up
    rc, out = train(tmp, "stuck", *sets(train__steps=300, train__lr="1e-6", train__warmup=0))
    t, st = train_rows(tmp, "stuck")
    first, last = window_means(t["loss"])
    d = info(tmp, "stuck")
    check(f"stuck: not learning ({last:.4f} > 0.95 x {first:.4f}), the lr tiny (sum {t['lr'].sum():.3g} "
          "< 0.01), no warm-up warning", rc == 0 and last > 0.95 * first and t["lr"].sum() < 0.01 and
          "not learning" in d and "the lr is tiny" in d and "warm-up" not in d and
          "diagnosis: not-learning" in out, d + out[-300:])
    # exploded (finite): lr 1, constant, d = 32
    rc, out = train(tmp, "explode", *WIDE, *sets(train__steps=300, train__lr=1, train__warmup=0,
                                                  train__schedule="constant"))
    t, st = train_rows(tmp, "explode")
    line = 2 * max(math.log(11), t["loss"][0])
    means = np.convolve(t["loss"], np.ones(20) / 20, mode="valid")
    above = np.nonzero(means > line)[0]
    began = int(t["step"][np.nonzero(t["loss"] > line)[0][0]]) if len(above) else -1
    d = info(tmp, "explode")
    check(f"exploded: status {st}, every loss finite, 20-update mean {means.max():.1f} > {line:.2f}, "
          f"from update {began}", rc == 0 and st == "done" and np.all(np.isfinite(t["loss"])) and
          len(above) and f"the loss exploded from update {began} (finite)" in d and
          "--set train.lr=0.1" in d, d)
    check("... live: one warning line when it happened, in the run's output",
          out.count("warning: the loss exploded") == 1, out[:600])
    # diverged: lr 3 (loss > 100 ln V at update 3), with where it applies
    rc, out = train(tmp, "diverge", *WIDE, *sets(train__steps=300, train__lr=3, train__warmup=0,
                                                  train__schedule="constant"))
    t, st = train_rows(tmp, "diverge")
    d = info(tmp, "diverge")
    check(f"diverged at update {len(t['loss'])}: the layer and head of the largest logit, the layer "
          "of the largest gradient", rc == 0 and st == "diverged" and
          re.search(r"diverged at update \d+ .*largest attention logit was layer \d, self-attention "
                    r"head \d.*the largest gradient layer \d", d), d)
    # healthy
    rc, out = train(tmp, "healthy", *sets(train__steps=300, train__lr="1e-2", train__warmup=20))
    t, st = train_rows(tmp, "healthy")
    first, last = window_means(t["loss"])
    d = info(tmp, "healthy")
    body = [l for l in d.splitlines()[1:] if l.strip()]
    check(f"healthy: one line ({first:.4f} -> {last:.4f}), nothing else, no warning in its output",
          rc == 0 and last < 0.95 * first and len(body) == 1 and body[0].strip().startswith(
              f"healthy: the loss went from {first:.4f} to {last:.4f}") and "warning" not in out and
          "diagnosis: healthy" in out, d)
    r = subprocess.run([STABILITY, "info", os.path.join(tmp, "healthy.h5")], capture_output=True,
                       text=True, env=ENV)
    check("info of a training run: no probe noise, its lr, warm-up, schedule and losses in the header",
          "no /probe" not in r.stdout and "unigram plateau" not in r.stdout and
          "lr 0.01, inverse_sqrt schedule, warm-up 20" in r.stdout and
          f"last training loss {t['loss'][-1]:.4f}; final loss {t['loss'][-len(t['loss']) // 10:].mean():.4f} "
          f"(the mean training loss of the last {len(t['loss']) // 10} updates)" in r.stdout, r.stdout[:800])


def test_run_log(tmp):
    rc, out = train(tmp, "log", *sets(train__steps=200, train__lr="1e-2", train__warmup=20,
                                      output__log_every=50))
    t, st = train_rows(tmp, "log")
    lines = [l for l in out.splitlines() if re.match(r"tiny: update \d+/200 \|", l)]
    steps = [int(re.match(r"tiny: update (\d+)/", l).group(1)) for l in lines]
    check(f"log to a file: lines at updates 1, 50, 100, 150, 200 (got {steps})",
          rc == 0 and steps == [1, 50, 100, 150, 200], out[:500])
    ok, bad = True, ""
    prev = 0
    for s, l in zip(steps, lines):
        m = re.search(r"\| loss ([\d.]+) \| lr ([\deE.+-]+) \| grad_norm [\d.eE+-]+ \| [\d.]+ "
                      r"ms/update, [\d.]+k? tokens/s", l)
        want_loss, want_lr = t["loss"][prev:s].mean(), t["lr"][s - 1]
        # printed to 4 decimals and 4 significant digits: half a unit of the last digit
        if not m or abs(float(m.group(1)) - want_loss) > 5e-5 + 1e-9 or \
                abs(float(m.group(2)) - want_lr) > 0.5 * 10 ** (math.floor(math.log10(want_lr)) - 3) + 1e-15:
            ok, bad = False, f"{l} (want loss {want_loss:.4f}, lr {want_lr:.4g})"
        prev = s
    check("... each line's loss is the mean since the previous line, its lr the update's (/train)",
          ok, bad)
    header, summary = out.find("tiny: Post-LN"), out.find("tiny: done after 200 updates")
    check("... the header first, the summary after the last line (stdout line-buffered)",
          0 <= header < out.find(lines[0]) and out.find(lines[-1]) < summary and
          out.rstrip().endswith(f"wrote {os.path.join(tmp, 'log.h5')}"), out[:300])
    rc, out = train(tmp, "quiet", *sets(train__steps=200), quiet=True)
    check("--quiet: nothing, not even the warm-up warning", rc == 0 and out == "", out[:300])
    rc, out = train(tmp, "nolog", *sets(train__steps=200, output__log_every=0, train__warmup=0))
    check("output.log_every = 0: no log line, the summary still", rc == 0 and "| loss" not in out
          and "done after 200 updates" in out, out[:300])
    with h5py.File(os.path.join(tmp, "nolog.h5"), "r") as f:
        cfg = f.attrs["config"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
    stored = {}
    for name in ("log", "warm"):
        with h5py.File(os.path.join(tmp, name + ".h5"), "r") as f:
            c = f.attrs["config"]
            stored[name] = c.decode() if isinstance(c, bytes) else c
    check("log_every written into the stored config only away from its default (100)",
          "log_every = 0" in cfg and "log_every = 50" in stored["log"] and
          "log_every" not in stored["warm"], cfg[-200:])
    # a terminal: the bar and no log lines
    master, slave = pty.openpty()
    p = subprocess.Popen([STABILITY, "train", "tiny", *COPY, *sets(train__steps=300, train__warmup=20),
                          "--out", os.path.join(tmp, "tty.h5"), "--force"], stdout=subprocess.DEVNULL,
                         stderr=slave, env=ENV)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    p.wait()
    os.close(master)
    text = seen.decode(errors="replace")
    check("stderr a terminal: the bar, no log line", p.returncode == 0 and "ETA" in text and
          "| loss" not in text, text[-300:])


def sweep(tmp, name, body, *args, env=None):
    """Write tmp/name.ini and run `stability sweep` on it with stdout and stderr in one file."""
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, "configs")):
        os.symlink(CONFIGS, os.path.join(d, "configs"))
    with open(os.path.join(d, name + ".ini"), "w") as fh:
        fh.write(body)
    out = os.path.join(d, "sweep.out")
    with open(out, "w") as fh:
        r = subprocess.run([STABILITY, "sweep", name + ".ini", *args], cwd=d, stdout=fh,
                           stderr=subprocess.STDOUT, env=env or ENV, timeout=600)
    with open(out) as fh:
        return r.returncode, fh.read(), d


def test_sweep_log(tmp):
    rc, out, d = sweep(tmp, "three", """[sweep]
base = configs/tiny.ini
name = lr{lr}
train.lr = 3e-3, 1, 3
train.steps = 200
train.warmup = 0
train.schedule = constant
data.task = copy
model.causal = true
model.d_model = 32
model.d_ff = 64
""", "--jobs", "2")
    runs = ["lr3e-3", "lr1", "lr3"]
    logs = {}
    for r in runs:
        with open(os.path.join(d, "results", "three", r + ".log")) as fh:
            logs[r] = fh.read()
    check("sweep: every run's log has its log lines and its summary (runs are no longer --quiet)",
          rc == 0 and all("update 1/200 |" in logs[r] and f"after " in logs[r] for r in runs),
          {r: logs[r][:200] for r in runs})
    warn = [l for l in out.splitlines() if ": warning: " in l]
    want = sum(l.count(": warning: ") for r in runs for l in logs[r].splitlines())
    check(f"... each run's warnings reach the sweep's output as one line naming the run "
          f"({len(warn)} lines, {want} in the logs)", len(warn) == want > 0 and
          all(any(l.startswith(f"{r}: warning: ") for l in warn) for r in ("lr1", "lr3")),
          "\n".join(warn[:6]))
    ended = [l for l in out.splitlines() if re.match(r"sweep three: \S+ (finished|ended)", l)]
    check("... one line per run that ends, with the sweep's progress",
          len(ended) == 3 and "3 of 3 runs ended" in ended[-1], "\n".join(ended))
    path = os.path.join(d, "results", "three", "summary.txt")
    table = open(path).read() if os.path.exists(path) else ""
    rows = {l.split()[0]: l for l in table.splitlines()[1:4]}
    with h5py.File(os.path.join(d, "results", "three", "lr3e-3.h5"), "r") as f:
        final = f["train/loss"][-20:].mean()   # 200 updates: the last tenth (measure/outcome.h)
    check("... the summary table printed and stored: status, final loss (mean of the last tenth), "
          "diagnosis flags", table and table in out and rows.get("lr3", "").split()[1] == "diverged"
          and re.search(r"diverged@\d+", rows.get("lr3", "")) and "exploded@" in rows.get("lr1", "")
          and f"{final:.4f}" in rows.get("lr3e-3", "") and rows.get("lr3e-3", "").rstrip().endswith("healthy"),
          table)


def test_summary_final_loss(tmp):
    """The sweep summary's final loss is the one definition (measure/outcome.h), the value its
    footnote describes and `info` prints: a 30-update run without validation gives the mean of
    its last 3 training losses (it showed the mean of the last 15 under "the last 20")."""
    rc, out, d = sweep(tmp, "short", """[sweep]
base = configs/tiny.ini
name = w{warmup}
train.warmup = 1, 3
train.steps = 30
""", "--jobs", "1")
    path = os.path.join(d, "results", "short", "summary.txt")
    table = open(path).read() if os.path.exists(path) else ""
    row = next((l for l in table.splitlines() if l.startswith("w1 ")), "")
    with h5py.File(os.path.join(d, "results", "short", "w1.h5"), "r") as f:
        want = f["train/loss"][-3:].mean()
    r = subprocess.run([STABILITY, "info", os.path.join(d, "results", "short", "w1.h5")],
                       capture_output=True, text=True, env=ENV)
    check(f"the summary's final loss is the mean of the last tenth ({want:.4f}), as its footnote "
          f"and info say", rc == 0 and f"{want:.4f}" in row.split() and
          "the mean training loss of the last tenth of the updates" in table and
          f"final loss {want:.4f} (the mean training loss of the last 3 updates)" in r.stdout,
          table + r.stdout[:600])


def test_sweep_bar(tmp):
    """On a terminal the sweep's bar counts the updates of all its runs (20 000 + 30 000), not
    runs. The runs are long enough (a few seconds of tiny updates) for the bar to be redrawn
    while they go: 200 + 300 updates took 40 ms, done before the first redraw on a fast machine."""
    d = os.path.join(tmp, "bar")
    os.makedirs(d, exist_ok=True)
    os.symlink(CONFIGS, os.path.join(d, "configs"))
    with open(os.path.join(d, "bar.ini"), "w") as fh:
        fh.write("[sweep]\nbase = configs/tiny.ini\nname = s{steps}\nzip = train.steps, train.warmup\n"
                 "train.steps = 20000, 30000\ntrain.warmup = 20, 30\ndata.task = copy\n")
    master, slave = pty.openpty()
    p = subprocess.Popen([STABILITY, "sweep", "bar.ini", "--jobs", "1"], cwd=d,
                         stdout=subprocess.DEVNULL, stderr=slave, env=ENV)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    p.wait()
    os.close(master)
    text = seen.decode(errors="replace")
    counts = re.findall(r"(\d+)/50000 +\S+ ETA", text)
    check(f"a sweep's bar on a terminal counts updates across runs with an ETA (last {counts[-1:]}/50000)",
          p.returncode == 0 and counts and counts[-1] == "50000" and len(set(counts)) > 2, text[-300:])


def test_threads(tmp):
    # run r3 outlives r1 and r2: it starts on 1 thread while r2 goes, then gets the free core
    env = dict(ENV, STABILITY_THREADS="2")
    body = """[sweep]
base = configs/tiny.ini
name = r{steps}
train.steps = 150, 600, 1500
train.warmup = 20
train.lr = 3e-3
data.task = copy
model.d_model = 32
model.d_ff = 64
probe.every = 50
"""
    rc, out, d = sweep(tmp, "threads", body, "--jobs", "2", env=env)
    with open(os.path.join(d, "results", "threads", "r1500.log")) as fh:
        log = fh.read()
    m = re.search(r"threads 1 -> 2 from update (\d+)", log)
    check("sweep --jobs 2 on 2 threads: the last run gets the free core mid-run "
          f"({m.group(0) if m else 'no change'})", rc == 0 and m and 1 < int(m.group(1)) <= 1500, log[:400])
    alone = os.path.join(tmp, "alone.h5")
    r = subprocess.run([STABILITY, "--config", os.path.join(d, "configs", "tiny.ini"),
                        *sets(train__steps=1500, train__warmup=20, train__lr="3e-3", data__task="copy",
                              model__d_model=32, model__d_ff=64, probe__every=50),
                        "--out", alone, "--quiet"], capture_output=True, text=True, env=ENV)
    diff = sr.diff_files(alone, os.path.join(d, "results", "threads", "r1500.h5")) if r.returncode == 0 \
        else [r.stderr]
    check("... and its file is the same bits as the run alone on 1 thread", not diff, diff)
    # the channel by hand: a run told "T 2" at its first progress report (update 1), and "T 1"
    # at the first report past update 2000 (reports come every 0.25 s, about 1000 updates here)
    # (d = 64: 2000 updates take well over 0.25 s, so a report falls between 2000 and 4000)
    chan_sets = sets(train__steps=4000, train__warmup=20, train__lr="1e-3", data__task="copy",
                     model__d_model=64, model__d_ff=128, probe__every=50)
    alone = os.path.join(tmp, "alone4000.h5")
    r = subprocess.run([STABILITY, "--config", os.path.join(d, "configs", "tiny.ini"), *chan_sets,
                        "--out", alone, "--quiet"], capture_output=True, text=True, env=ENV)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out = os.path.join(tmp, "chan.h5")
    p = subprocess.Popen([STABILITY, "--config", os.path.join(d, "configs", "tiny.ini"), *chan_sets,
                          "--out", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=dict(ENV, STABILITY_SWEEP_FD=str(b.fileno())), pass_fds=[b.fileno()])
    b.close()
    progress, told = [], 0
    while True:
        try:
            msg = a.recv(2048)
        except ConnectionResetError:   # the run has exited
            break
        if not msg:
            break
        kind, text = msg[:1].decode(), msg[2:].decode()
        if kind == "P":
            done, total = map(int, text.split())
            progress.append(done)
            if told == 0:
                a.send(b"T 2")
                told = 1
            elif done >= 2000 and told == 1:
                a.send(b"T 1")
                told = 2
    err = p.communicate()[1]
    a.close()
    changes = re.findall(r"threads (\d) -> (\d) from update (\d+)", err)
    diff = sr.diff_files(alone, out) if p.returncode == 0 and r.returncode == 0 else [err, r.stderr]
    check(f"the channel: progress up to {progress[-1] if progress else None}/4000, thread changes "
          f"{changes}, the same bits as on 1 thread", p.returncode == 0 and progress and
          progress[-1] == 4000 and [c[:2] for c in changes] == [("1", "2"), ("2", "1")] and not diff,
          f"{diff} {err[-300:]}")


def main():
    if not os.access(STABILITY, os.X_OK):
        check(f"{STABILITY} exists (run make first)", False)
    else:
        with tempfile.TemporaryDirectory(prefix="stability_watch_") as tmp:
            test_classes(tmp)
            test_run_log(tmp)
            test_sweep_log(tmp)
            test_summary_final_loss(tmp)
            test_sweep_bar(tmp)
            test_threads(tmp)
    passed = sum(results)
    print(f"watch: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
