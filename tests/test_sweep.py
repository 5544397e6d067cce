#!/usr/bin/python3
"""Sweeps and figures, from the repository root: /usr/bin/python3 tests/test_sweep.py

1. Expansion: product and zip give the right runs, names and overrides (--dry-run).
2. Resume: a second `sweep` starts nothing and leaves every run file untouched.
3. Merge: every dataset and attribute of /runs/NAME equals its source file's.
4. Plot: every figure type (grad_vs_layer, grad_vs_depth, grad_vs_width, jacobian,
   hidden_norms, loss) comes out as a non-empty PNG and PDF; gnuplot missing is a clear error.
5. Bad sweep files: FILE:LINE: key: message, exit 2, nothing run (long lines, duplicates and
   empty list items as in configs; run names that are not file names).
6. Stale runs (a file of another configuration) are redone and said so; a merge never
   replaces a merged file with a poorer one without --force; --jobs N divides the threads.
7. A miniature atlas: its figures, and the LR-sensitivity table against the definition; the
   same with three seeds a cell (means and 95 % intervals).
8. Names that collide: results/NAME.h5 that is a training run's file (a config's default
   output) is not replaced by the sweep NAME's merge (exit 2 before any run; --merge --force
   does); two sweep files of one name in different folders do not share results/NAME/ (the
   second refuses, the first's runs untouched); a sweep file named "...ini" writes nothing
   outside results/ (exit 2).
9. --slurm --submit --only-missing of a 64x64 sweep (4096 runs, none complete): a stand-in
   sbatch receives every task index once (the list was cut at 8192 characters: tasks
   1858-4095 dropped, exit 0).
10. Item 13 of the hardening round: a [slurm] partition or account that is more than one name
   (an sbatch option smuggled in) is refused, exit 2, no script; a dump of a run's very config
   at its path is not its result (the sweep redoes it); run names with '&' make SVG figures
   that are XML.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

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


def test_expansion(tmp):
    f = os.path.join(tmp, "expand.ini")
    write(f, "[sweep]\nbase = configs/tiny.ini\nname = {placement}_d{d_model}_L{layers}\n"
             "model.placement = post, pre\nmodel.d_model = 8, 12\nmodel.d_ff = 16, 24\n"
             "model.layers = 1, 2, 3\nzip = model.d_model, model.d_ff\nprobe.seeds = 2\n")
    r = run("sweep", f, "--dry-run")
    lines = [l.split() for l in r.stdout.splitlines()[1:]]
    names = [l[1] for l in lines]
    check("product x zip: 2 placements x 2 (d, d_ff) pairs x 3 depths = 12 runs",
          r.returncode == 0 and len(names) == 12, r.stderr.strip() or str(len(names)))
    check("runs named by the pattern, last key fastest",
          names[:4] == ["post_d8_L1", "post_d8_L2", "post_d8_L3", "post_d12_L1"], str(names[:4]))
    pairs = {(l[1], next(x for x in l if x.startswith("model.d_ff="))) for l in lines}
    check("zipped lists stay paired (d 8 with d_ff 16, d 12 with d_ff 24)",
          ("pre_d12_L3", "model.d_ff=24") in pairs and ("post_d8_L2", "model.d_ff=16") in pairs)
    check("a single value is set for every run", all("probe.seeds=2" in l for l in lines))
    # two zip groups ('|'): each paired within, the groups crossed with each other and the rest
    write(f, "[sweep]\nbase = configs/tiny.ini\nname = {placement}_{norm}_L{layers}_{optimizer}_w{warmup}\n"
             "model.placement = post, pre\nmodel.norm = layernorm, rmsnorm\nmodel.layers = 1, 2\n"
             "train.optimizer = adam, radam, adam\ntrain.warmup = 1, 1, 10\ntrain.steps = 20\n"
             "zip = model.placement, model.norm | train.optimizer, train.warmup\n")
    r = run("sweep", f, "--dry-run")
    names = [l.split()[1] for l in r.stdout.splitlines()[1:]]
    check("two zip groups: 2 (placement, norm) x 2 depths x 3 (optimizer, warm-up) = 12 runs",
          r.returncode == 0 and len(names) == 12, r.stderr.strip() or str(len(names)))
    check("each group counts as one axis at its first key, the last fastest",
          names[:4] == ["post_layernorm_L1_adam_w1", "post_layernorm_L1_radam_w1",
                        "post_layernorm_L1_adam_w10", "post_layernorm_L2_adam_w1"], str(names[:4]))
    check("no run pairs values across groups", not any(n.startswith("post_rmsnorm") or
                                                       n.endswith("radam_w10") for n in names), str(names))


def test_bad_sweeps(tmp):
    cases = [
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\nmodel.bogus = 3, 4\n", ":4: model.bogus:"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.d_model = 8, 12\nmodel.d_ff = 1, 2, 3\n"
         "zip = model.d_model, model.d_ff\n", ":4: model.d_ff: zipped lists"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.heads = 3, 2\n", ":3: model.heads:"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.d_model = 8, 12\nmodel.d_ff = 16, 24\n"
         "zip = model.d_model, model.d_ff | model.d_ff\n", ":5: sweep.zip: model.d_ff is in two zip groups"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.d_model = 8, 12\nmodel.d_ff = 16, 24\n"
         "zip = model.d_model | \n", ":5: sweep.zip: empty item"),
        ("[sweep]\nmodel.layers = 1, 2\n", "sweep.base: missing"),
        ("[sweep]\nbase = configs/tiny.ini\nname = {placement}\nmodel.layers = 1, 2\n", "sweep.name:"),
        ("[oops]\nbase = x\n", ":2: oops: unknown section"),   # the line of its first key
        # the same line reader and duplicate rules as configs (src/util/lines.h)
        ("[sweep]\nbase = configs/tiny.ini\n; " + "x" * 196 + "probe.seeds = 7\nmodel.layers = 1, 2\n",
         ":3: syntax: line longer than 198 characters"),
        ("[sweep]\nbase = configs/tiny.ini\nprobe.seeds = 2\nmodel.layers = 1, 2\nprobe.seeds = 3\n",
         ":5: probe.seeds: duplicate key (first set on line 3)"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\nmodel.layers = 3\n",
         ":4: model.layers: duplicate key (first set on line 3)"),
        ("[sweep]\nbase = configs/tiny.ini\nbase = configs/postln_L6.ini\nmodel.layers = 1, 2\n",
         ":3: sweep.base: duplicate key (first set on line 2)"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\n[slurm]\ntime = 5\ntime = 6\n",
         ":6: slurm.time: duplicate key (first set on line 5)"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1,,2\n", ":3: model.layers: empty item"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2,\n", ":3: model.layers: empty item"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\n  model.layers = 3\n",
         ":4: model.layers: indented line continues"),
        ("[sweep]\nbase = configs/tiny.ini\nname = .\nmodel.layers = 1\n",
         ":3: sweep.name: run name '.' is not a usable file name"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\nname = L{nope}\n",
         ":4: sweep.name: {nope} is not a swept key"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\nname = same\n",
         ":4: sweep.name: runs 0 and 1 are both named 'same'"),
        # every byte used or an error: text after ']' and CR-only line endings (libinih drops both)
        ("[sweep] junk\nbase = configs/tiny.ini\nmodel.layers = 1, 2\n",
         ":1: syntax: text after the section's ']': 'junk'"),
        ("[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\n[slurm]partition=gpu\n",
         ":4: syntax: text after the section's ']': 'partition=gpu'"),
        ("[sweep]\rbase = configs/tiny.ini\rmodel.layers = 1, 2\r", ":1: syntax: carriage return"),
    ]
    for i, (text, want) in enumerate(cases):
        f = os.path.join(tmp, f"bad{i}.ini")
        write(f, text)
        r = run("sweep", f)
        check(f"bad sweep file {i}: exit 2, '{want}'", r.returncode == 2 and want in r.stderr
              and not os.path.exists(f"results/bad{i}"), r.stderr.strip())


def compare_run(merged, name, source):
    """Every dataset and root attribute of source equals /runs/name of merged."""
    with h5py.File(merged, "r") as m, h5py.File(source, "r") as s:
        g = m["runs"][name]
        bad = []

        def visit(path, obj):
            if isinstance(obj, h5py.Dataset) and not np.array_equal(obj[...], g[path][...], equal_nan=True):
                bad.append(path)
        s.visititems(visit)
        for k, v in s.attrs.items():
            if g.attrs.get(k) != v:
                bad.append("@" + k)
        return bad


def test_run_resume_merge(tmp):
    f = os.path.join(tmp, "mini_sweep_test.ini")
    write(f, "[sweep]\nbase = configs/tiny.ini\nname = {placement}_L{layers}\n"
             "model.placement = post, pre\nmodel.layers = 1, 2, 3\nprobe.seeds = 3\nprobe.batches = 2\n")
    shutil.rmtree("results/mini_sweep_test", ignore_errors=True)
    r = run("sweep", f, "--jobs", "2", "--quiet")
    files = sorted(glob.glob("results/mini_sweep_test/*.h5"))
    check("sweep runs 6 runs and merges them", r.returncode == 0 and len(files) == 6
          and os.path.exists("results/mini_sweep_test.h5"), r.stderr.strip())
    mtimes = {p: os.stat(p).st_mtime_ns for p in files}
    r = run("sweep", f)
    again = {p: os.stat(p).st_mtime_ns for p in files}
    check("a second sweep skips every complete run (files untouched)",
          r.returncode == 0 and "6 complete, 0 to run" in r.stdout and again == mtimes, r.stdout.strip())
    os.remove("results/mini_sweep_test/pre_L2.h5")
    merged_before = os.stat("results/mini_sweep_test.h5").st_mtime_ns
    r = run("sweep", f, "--merge")
    check("--merge with a run missing: exit 3, names the task id", r.returncode == 3
          and "task ids: 4" in r.stderr, r.stderr.strip())
    check("... and keeps the merged file, which holds more complete runs (6 > 5)",
          os.stat("results/mini_sweep_test.h5").st_mtime_ns == merged_before and "kept" in r.stderr,
          r.stderr.strip())
    r = run("sweep", f, "--quiet")
    check("resume runs only the missing run", r.returncode == 0 and os.path.exists("results/mini_sweep_test/pre_L2.h5"))
    bad = []
    for p in files:
        bad += compare_run("results/mini_sweep_test.h5", os.path.basename(p)[:-3], p)
    check("merge: every dataset and attribute identical to its run file", not bad, ", ".join(bad[:5]))
    with h5py.File("results/mini_sweep_test.h5", "r") as m:
        vals = m["sweep/values"][...].astype(str)
        keys = list(m["sweep/keys"][...].astype(str))
        check("/sweep table of swept values", keys == ["model.placement", "model.layers"]
              and vals.shape == (6, 2) and list(vals[4]) == ["pre", "2"], f"{keys} {vals.tolist()}")
    shutil.rmtree("results/mini_sweep_test", ignore_errors=True)
    os.remove("results/mini_sweep_test.h5")


def seeds_of(path, group="probe/grad_fro"):
    with h5py.File(path, "r") as f:
        return f[group].shape[0]


def test_stale(tmp):
    """A run file of another configuration is stale: redone, and said so."""
    f = os.path.join(tmp, "stale_sweep_test.ini")
    body = "[sweep]\nbase = configs/tiny.ini\nname = L{layers}\nmodel.layers = 1, 2\nprobe.batches = 1\n"
    write(f, body + "probe.seeds = 2\n")
    shutil.rmtree("results/stale_sweep_test", ignore_errors=True)
    r = run("sweep", f, "--quiet")
    runs = ["results/stale_sweep_test/L1.h5", "results/stale_sweep_test/L2.h5"]
    check("stale: the first sweep runs both runs", r.returncode == 0 and all(map(os.path.exists, runs)),
          r.stderr.strip())
    write(f, body + "probe.seeds = 3\n")   # a fixed key changed: both files are of another config
    r = run("sweep", f, "--dry-run")
    check("stale: --dry-run marks both runs [stale]", r.stdout.count("[stale]") == 2, r.stdout.strip())
    r = run("sweep", f, "--quiet")
    check("stale: the sweep redoes both and says so (naming the old value)",
          r.returncode == 0 and r.stderr.count("stale") == 2 and "seeds = 2" in r.stderr
          and [seeds_of(p) for p in runs] == [3, 3] and seeds_of("results/stale_sweep_test.h5",
                                                                  "runs/L1/probe/grad_fro") == 3,
          r.stderr.strip())
    r = run("sweep", f, "--quiet")
    check("stale: then nothing is stale any more", r.returncode == 0 and "stale" not in r.stderr,
          r.stderr.strip())
    # a merge never replaces a merged file with a poorer one unless forced
    write(f, body + "probe.seeds = 3\nmodel.norm = rmsnorm\n")   # both runs stale again
    r = run("sweep", f, "--merge")
    with h5py.File("results/stale_sweep_test.h5", "r") as m:
        kept = sorted(m["runs"]) == ["L1", "L2"]
    check("--merge with every run stale: exit 3, the merged file (2 runs) kept",
          r.returncode == 3 and kept and "kept" in r.stderr and "stale" in r.stderr, r.stderr.strip())
    for p in runs:
        os.remove(p)
    r = run("sweep", f, "--merge")
    check("--merge with every run file gone: exit 3, kept", r.returncode == 3 and "kept" in r.stderr
          and seeds_of("results/stale_sweep_test.h5", "runs/L1/probe/grad_fro") == 3, r.stderr.strip())
    r = run("sweep", f, "--merge", "--force")
    with h5py.File("results/stale_sweep_test.h5", "r") as m:
        empty = "runs" not in m or len(m["runs"]) == 0
    check("--merge --force replaces it (0 runs)", r.returncode == 3 and empty, r.stderr.strip())
    shutil.rmtree("results/stale_sweep_test", ignore_errors=True)
    os.remove("results/stale_sweep_test.h5")


def children_of(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def threads_of(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("Threads:"))
    except (OSError, StopIteration):
        return -1


def test_threads(tmp):
    """sweep --jobs 2 with STABILITY_THREADS = SLURM_CPUS_PER_TASK = 8: each run gets 4 threads,
    not 8. A run with n threads has n-1 OpenMP and n-1 OpenBLAS workers."""
    f = os.path.join(tmp, "threads_sweep_test.ini")
    write(f, "[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2\ntrain.steps = 100000\n"
             "model.d_model = 64\nmodel.d_ff = 128\n")
    shutil.rmtree("results/threads_sweep_test", ignore_errors=True)
    env = dict(os.environ, STABILITY_THREADS="8", SLURM_CPUS_PER_TASK="8", OMP_WAIT_POLICY="passive")
    p = subprocess.Popen([STABILITY, "sweep", f, "--jobs", "2", "--quiet"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kids, counts = [], []
    for _ in range(100):   # until both runs are into their training loop
        time.sleep(0.1)
        kids = children_of(p.pid)
        counts = [threads_of(k) for k in kids]
        if len(kids) == 2 and min(counts) > 2:
            time.sleep(0.5)
            counts = [threads_of(k) for k in kids]
            break
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:   # the previous binary waits for its runs
        p.kill()
        p.wait()
    for k in kids:   # and leaves them running
        try:
            os.kill(k, signal.SIGKILL)
        except OSError:
            pass
    check("sweep --jobs 2 of an 8-thread allocation: each run has 4 threads (threads per process "
          f"{counts}, at most 2*4)", len(counts) == 2 and max(counts) <= 8, str(counts))
    shutil.rmtree("results/threads_sweep_test", ignore_errors=True)
    # a thread count is a count or an error; the job count is bounded by the CPUs
    f = os.path.join(tmp, "jobs_sweep_test.ini")
    write(f, "[sweep]\nbase = configs/tiny.ini\nmodel.layers = 1, 2, 3, 4, 5, 6\nprobe.seeds = 1\n"
             "probe.batches = 1\n")
    for value in ("3junk", "99999999999", "0", "-2"):
        for var in ("STABILITY_THREADS", "SLURM_CPUS_PER_TASK"):
            r = run("sweep", f, "--dry-run", env=dict(os.environ, **{var: value}))
            check(f"{var}={value}: exit 2, 'not an integer in 1..4096'", r.returncode == 2 and
                  f"{var}='{value}': not an integer in 1..4096" in r.stderr, r.stderr.strip())
    r = run("--config", "configs/tiny.ini", "--set", "probe.seeds=1", "--out", os.path.join(tmp, "j.h5"),
            env=dict(os.environ, STABILITY_THREADS="3junk"))
    check("a run with STABILITY_THREADS=3junk: exit 2, nothing written", r.returncode == 2 and
          not os.path.exists(os.path.join(tmp, "j.h5")), r.stderr.strip())
    cpus = len(os.sched_getaffinity(0))
    r = run("sweep", f, env=dict(os.environ, STABILITY_THREADS="1000"))
    check(f"STABILITY_THREADS=1000 on {cpus} CPUs: {min(cpus, 6)} runs at a time, not 1000",
          r.returncode == 0 and f"{min(cpus, 6)} at a time" in r.stdout, r.stdout.strip() + r.stderr.strip())
    shutil.rmtree("results/jobs_sweep_test", ignore_errors=True)
    if os.path.exists("results/jobs_sweep_test.h5"):
        os.remove("results/jobs_sweep_test.h5")


def test_plots(tmp):
    # one depth scan, one width scan and a short training run: every figure type has data
    runs = []
    for place in ("post", "pre"):
        for L in (1, 2, 3):
            runs.append((f"{place}_L{L}", ["--set", f"model.placement={place}", "--set", f"model.layers={L}"]))
        for d in (12, 16):
            runs.append((f"{place}_d{d}", ["--set", f"model.placement={place}", "--set", f"model.d_model={d}",
                                           "--set", "model.layers=3"]))
    files = []
    for name, sets in runs:
        out = os.path.join(tmp, name + ".h5")
        r = run("--config", "configs/tiny.ini", *sets, "--set", "probe.seeds=2", "--set", "probe.batches=2",
                "--out", out, "--quiet")
        if r.returncode:
            check(f"probe {name}", False, r.stderr.strip())
        files.append(out)
    train = os.path.join(tmp, "train.h5")
    r = run("--config", "configs/tiny.ini", "--set", "train.steps=60", "--set", "train.warmup=10",
            "--set", "probe.every=20", "--set", "data.task=copy", "--out", train, "--quiet")
    check("a short training run", r.returncode == 0, r.stderr.strip())
    outdir = os.path.join(tmp, "plots")
    r = run("plot", *files, train, "--out", outdir, "--format", "png,pdf")
    figures = ["grad_vs_layer", "grad_vs_depth", "grad_vs_width", "grad_ratio", "jacobian",
               "hidden_norms", "loss"]
    for fig in figures:
        for fmt in ("png", "pdf"):
            path = os.path.join(outdir, f"post_L1-{fig}.{fmt}")
            size = os.path.getsize(path) if os.path.exists(path) else 0
            magic = open(path, "rb").read(4) if size else b""
            want = b"\x89PNG" if fmt == "png" else b"%PDF"
            check(f"plot: {fig}.{fmt} non-empty", size > 1000 and magic == want, f"{size} bytes")
    check("plot exits 0", r.returncode == 0, r.stderr.strip())
    gpd = os.path.join(tmp, "gp")
    r = run("plot", *files, train, "--out", gpd, "--format", "gp")
    scripts = {os.path.basename(p)[len("post_L1-"):-3]: open(p).read()
               for p in glob.glob(os.path.join(gpd, "*.gp"))}
    check("every figure is written as its gnuplot script (--format gp)", r.returncode == 0 and
          set(figures) <= set(scripts), r.stderr.strip() or str(sorted(scripts)))
    fig3 = scripts.get("grad_vs_layer", "")
    blocks = re.findall(r"\$g\d+_(\d) << EOD\n(.*?)EOD", fig3, re.S)
    panels = fig3.split("\nunset border")[0]   # the panels; the key strip follows them
    ranges = re.findall(r"set yrange \[([-\d.e+]+):([-\d.e+]+)\]", panels)
    inside = len(ranges) == 2 and all(
        float(ranges[int(p)][0]) <= float(row.split()[2]) and float(row.split()[3]) <= float(ranges[int(p)][1])
        for p, rows in blocks for row in rows.strip().splitlines())
    check("Fig. 3(a,b): every error bar inside its panel's range, layers from 1, keys only in the "
          "strip below the panels (no key over data)", inside and all(
              rows.startswith("1 ") for _, rows in blocks)
          and "\nset key" not in panels and not re.search(r"with yerrorlines[^,\n]* title", panels),
          str(ranges))
    jac = scripts.get("jacobian", "")
    check("jacobian: no log axis for values within a decade", jac and
          not re.search(r"^set logscale y", jac, re.M) and "unset logscale y" in jac)
    check("no figure's x axis is 'step'", not any("'step'" in t for t in scripts.values()))
    env = dict(os.environ, PATH="/nonexistent")
    r = run("plot", files[0], "--out", os.path.join(tmp, "noplot"), env=env)
    check("gnuplot missing: exit 1, clear message, the result file untouched",
          r.returncode == 1 and "gnuplot" in r.stderr and h5py.is_hdf5(files[0]), r.stderr.strip())


def svg_texts(path):
    """The texts of an SVG (well-formed XML): each <text> element's."""
    return ["".join(e.itertext()) for e in ET.parse(path).getroot().iter() if e.tag.endswith("text")]


def test_training_titles(tmp):
    """A training figure says what its runs ask, from their configs (docs/design.md §6j): its
    title names what varies and the paper's figure whose set the runs are (warm-up within
    Post-LN is Fig. 2; Post-LN with warm-up beside Pre-LN without is Fig. 4), each curve's key
    only what differs (the optimizer when it does: Fig. 2(b), SGD beside Adam), the subtitle
    what the runs share."""
    def loss_svg(name, runs):
        files = []
        for rn, sets in runs:
            out = os.path.join(tmp, f"{name}_{rn}.h5")
            r = run("--config", "configs/tiny.ini", "--set", "train.steps=12", "--set",
                    "probe.every=12", *[a for kv in sets for a in ("--set", kv)], "--out", out, "--quiet")
            if r.returncode:
                check(f"training run {name}_{rn}", False, r.stderr.strip())
            files.append(out)
        out = os.path.join(tmp, f"{name}_plots")
        r = run("plot", *files, "--out", out, "--format", "svg", "--quiet")
        path = glob.glob(os.path.join(out, "*-loss.svg"))
        return r, svg_texts(path[0]) if path else []
    r, texts = loss_svg("fig2b", [("a1", ["model.placement=post", "train.warmup=1"]),
                                  ("s1", ["model.placement=post", "train.warmup=1", "train.optimizer=sgd"]),
                                  ("a5", ["model.placement=post", "train.warmup=5"])])
    check("Adam and SGD, warm-up within Post-LN: 'by optimizer and warm-up (Fig. 2)', each key its "
          "optimizer and warm-up, the subtitle Post-LN and no optimizer", r.returncode == 0
          and "Training loss by optimizer and warm-up (Fig. 2)" in texts
          and all(k in texts for k in ("Adam, no warm-up", "SGD, no warm-up", "Adam, warm-up 5"))
          and any(t.startswith("Post-LN, d = 8") and "Adam" not in t for t in texts), str(texts))
    r, texts = loss_svg("fig4", [("post", ["model.placement=post", "train.warmup=5"]),
                                 ("pre", ["model.placement=pre", "train.warmup=1"])])
    check("Post-LN with warm-up beside Pre-LN without: '(Fig. 4)', keys without the optimizer",
          r.returncode == 0 and "Training loss by scheme and warm-up (Fig. 4)" in texts
          and "Post-LN, warm-up 5" in texts and "Pre-LN, no warm-up" in texts
          and not any("Adam" in t and "warm-up" in t and "d = " not in t for t in texts), str(texts))
    r, texts = loss_svg("fig2x", [("a", ["model.placement=post", "train.warmup=1"]),
                                  ("b", ["model.placement=post", "train.warmup=5", "model.layers=4"])])
    check("warm-up and depth both varying: not titled as the paper's Fig. 2", r.returncode == 0
          and "Training loss by depth and warm-up" in texts and not any("Fig." in t for t in texts),
          str(texts))


def test_atlas(tmp):
    """A miniature atlas: 3 schemes x 2 learning rates x warm-up on/off, trained briefly. Its own
    figures come out (and not the Post/Pre-LN ones, which would mix the schemes), and
    `stability table atlas`'s LR sensitivities equal the definition recomputed here from the
    run files (mean over lr of min(final, loss_0) - best; diverged = loss_0)."""
    f = os.path.join(tmp, "mini_atlas_test.ini")
    write(f, "[sweep]\nbase = configs/tiny.ini\nname = {placement}_lr{lr}_w{warmup}\n"
             "model.placement = post, pre, deepnorm\ntrain.lr = 1e-3, 3e-2\ntrain.warmup = 1, 5\n"
             "train.steps = 12\ntrain.eval_every = 12\nprobe.every = 12\nprobe.model_update = off\n"
             "train.schedule = constant\n")
    shutil.rmtree("results/mini_atlas_test", ignore_errors=True)
    r = run("sweep", f, "--quiet")
    check("mini atlas: 12 runs", r.returncode == 0 and len(glob.glob("results/mini_atlas_test/*.h5")) == 12,
          r.stderr.strip())
    g = os.path.join(tmp, "mini_init_test.ini")   # the same schemes at initialisation, 3 depths
    write(g, "[sweep]\nbase = configs/tiny.ini\nname = {placement}_L{layers}\n"
             "model.placement = post, pre, deepnorm\nmodel.layers = 1, 2, 3\nprobe.seeds = 2\n"
             "probe.batches = 1\n")
    shutil.rmtree("results/mini_init_test", ignore_errors=True)
    r = run("sweep", g, "--quiet")
    check("mini atlas at initialisation: 9 probes", r.returncode == 0, r.stderr.strip())
    outdir = os.path.join(tmp, "atlas_plots")
    r = run("plot", "results/mini_atlas_test.h5", "results/mini_init_test.h5", "--out", outdir,
            "--format", "png")
    drawn = sorted(os.path.basename(p)[len("mini_atlas_test-"):-4]
                   for p in glob.glob(os.path.join(outdir, "*.png")))
    check("mini atlas: its four figures, none of the Post/Pre-LN ones (they would mix schemes)",
          r.returncode == 0 and {"atlas_lr", "atlas_sensitivity", "atlas_grad", "output_change"} <= set(drawn)
          and not {"grad_vs_layer", "grad_vs_depth", "hidden_norms", "jacobian"} & set(drawn),
          r.stderr.strip() or str(drawn))
    t = run("table", "atlas", "results/mini_atlas_test.h5")
    table = {}
    for line in t.stdout.splitlines()[2:]:
        c = [x.strip() for x in line.strip("|").split("|")]
        table[c[0]] = (float(c[2]), float(c[3]))
    cells = {}
    for p in glob.glob("results/mini_atlas_test/*.h5"):
        with h5py.File(p, "r") as h:
            name = os.path.basename(p)[:-3]
            place, w = name.split("_")[0], name.endswith("_w5")
            st = h.attrs["status"]
            st = st.decode() if isinstance(st, bytes) else st
            loss = h["train/loss"][:]   # tiny's random task has no held-out split: the final
            z = float(loss[0])           # loss is the mean of the last tenth of training losses
            fin = z if st == "diverged" else float(np.mean(loss[-max(len(loss) // 10, 1):]))
            best = np.nan if st == "diverged" else fin
            cells.setdefault((place, w), []).append((min(fin, z), best))
    ok = t.returncode == 0 and len(table) == 3
    for (place, w), v in cells.items():
        want = np.mean([a for a, _ in v]) - np.nanmin([b for _, b in v])
        got = table.get(place, (np.nan, np.nan))[0 if w else 1]
        ok &= abs(got - want) < 5e-4   # the table prints 3 decimals
    check("table atlas: LR sensitivity per scheme and warm-up = the definition", ok,
          t.stderr.strip() or str(table))
    # the same mini atlas trained in float32 (as experiments/atlas_f32.ini is atlas.ini's twin)
    write(os.path.join(tmp, "mini_f32_test.ini"),
          open(f).read().replace("probe.model_update = off", "probe.model_update = off\n"
                                 "train.precision = float32"))
    shutil.rmtree("results/mini_f32_test", ignore_errors=True)
    r = run("sweep", os.path.join(tmp, "mini_f32_test.ini"), "--quiet")
    check("mini atlas in float32: 12 runs", r.returncode == 0, r.stderr.strip())
    cmp = lambda a, b, *o: run("table", "atlas-compare", a, b, *o)
    c = cmp("results/mini_atlas_test.h5", "results/mini_f32_test.h5")
    with h5py.File("results/mini_atlas_test.h5") as h64, h5py.File("results/mini_f32_test.h5") as h32:
        d = [abs(float(h32["runs"][n]["train/loss"][-1]) - float(h64["runs"][n]["train/loss"][-1]))
             for n in h64["runs"]]
        prec = {h32["runs"][n].attrs.get("precision") for n in h32["runs"]}
    m = re.search(r"(\d+) in each; (\d+) finished in both", c.stdout)
    check("table atlas-compare: float64 against float32: 12 runs paired, the cells counted, the "
          "order per depth and warm-up", c.returncode == 0 and m and m.group(1) == "12"
          and "of 3 cells move" in c.stdout
          and len(re.findall(r"^\| \d+ \| (yes|no) \|", c.stdout, re.M)) == 2,
          c.stderr.strip() or c.stdout[-400:])
    check("the float32 twin is float32 (its runs' precision attribute) and its losses differ",
          prec in ({b"float32"}, {"float32"}) and np.nanmax(d) > 0, f"{prec} {np.nanmax(d)}")
    c = cmp("results/mini_atlas_test.h5", "results/mini_atlas_test.h5")
    check("table atlas-compare: an atlas against itself moves nothing (median |Δ| 0, 0 cells, ρ = 1)",
          c.returncode == 0 and "median |Δ| 0.00e+00" in c.stdout and "0 of 3 cells move" in c.stdout
          and "Status differs** in 0 runs" in c.stdout
          and len(re.findall(r"\| 1\.000 \| — \|", c.stdout)) == 2, c.stdout[-400:])
    c = cmp("results/mini_atlas_test.h5", "results/mini_init_test.h5")
    check("table atlas-compare: two files of other runs: exit 1 and why", c.returncode == 1
          and "do not hold the same runs" in c.stderr, c.stderr.strip())
    c = cmp("results/mini_atlas_test.h5", "results/mini_init_test.h5", "--common")
    check("table atlas-compare --common with no run in both: exit 1, 'none in both'",
          c.returncode == 1 and "none in both" in c.stderr, c.stderr.strip())
    test_atlas_seeds(tmp, f)
    for d in ("mini_atlas_test", "mini_init_test", "mini_f32_test"):
        shutil.rmtree("results/" + d, ignore_errors=True)
        os.remove(f"results/{d}.h5")


def test_atlas_seeds(tmp, single):
    """The mini atlas with three seeds a cell (as experiments/atlas_seeds.ini is atlas.ini's):
    `stability table atlas`'s LR sensitivity is the mean of the seeds' own with a 95 % half-width that
    equals the definition recomputed here (Student t with 2 degrees of freedom: 4.303, the
    textbook value), its verdicts say how many seeds agree, and the figures say they draw means
    and intervals."""
    f = os.path.join(tmp, "mini_seeds_test.ini")
    write(f, open(single).read().replace("name = {placement}_lr{lr}_w{warmup}",
                                         "name = {placement}_lr{lr}_w{warmup}_s{seed}")
          .replace("model.placement = post, pre, deepnorm", "model.placement = post, pre")
          + "init.seed = 1, 2, 3\n")
    shutil.rmtree("results/mini_seeds_test", ignore_errors=True)
    r = run("sweep", f, "--quiet")
    check("mini atlas with 3 seeds: 24 runs", r.returncode == 0
          and len(glob.glob("results/mini_seeds_test/*.h5")) == 24, r.stderr.strip())
    t = run("table", "atlas", "results/mini_seeds_test.h5")
    rows = [[x.strip() for x in line.strip("|").split("|")] for line in t.stdout.splitlines()[2:]
            if line.startswith("| ")]
    table = {c[0]: (c[2], c[3], c[8]) for c in rows}
    sens = {}   # (placement, warm-up) -> each seed's sensitivity, from the run files
    for place in ("post", "pre"):
        for w in (1, 5):
            for k in (1, 2, 3):
                v = []
                for lr in ("1e-3", "3e-2"):
                    with h5py.File(f"results/mini_seeds_test/{place}_lr{lr}_w{w}_s{k}.h5", "r") as h:
                        st = h.attrs["status"]
                        st = st.decode() if isinstance(st, bytes) else st
                        loss = h["train/loss"][:]
                        z = float(loss[0])
                        fin = np.nan if st == "diverged" else float(np.mean(loss[-max(len(loss) // 10, 1):]))
                        v.append((z if np.isnan(fin) else min(fin, z), fin))
                sens.setdefault((place, w), []).append(np.mean([a for a, _ in v]) - np.nanmin([b for _, b in v]))
    ok = t.returncode == 0 and len(table) == 2
    for (place, w), v in sens.items():
        want_m, want_h = np.mean(v), 4.302653 * np.std(v, ddof=1) / np.sqrt(3)
        got = table.get(place, ("nan ± nan",) * 2)[0 if w == 5 else 1].split(" ± ")
        ok &= len(got) == 2 and abs(float(got[0]) - want_m) < 5e-4 and abs(float(got[1]) - want_h) < 5e-4
    ok &= all(re.search(r"\((\d) of 3 seeds\)$", c[2]) for c in table.values())
    check("table atlas, 3 seeds: LR sensitivity = the seeds' mean ± 95 % half-width, verdicts "
          "with how many seeds agree", ok and "3 seeds a cell" in t.stdout,
          t.stderr.strip() or t.stdout[-600:])
    outdir = os.path.join(tmp, "seeds_plots")
    r = run("plot", "results/mini_seeds_test.h5", "--out", outdir, "--format", "svg")
    text = {n: open(os.path.join(outdir, f"mini_seeds_test-{n}.svg")).read()
            for n in ("atlas_lr", "atlas_sensitivity")
            if os.path.exists(os.path.join(outdir, f"mini_seeds_test-{n}.svg"))}
    check("mini atlas with 3 seeds: final loss vs lr with 95 % bars, sensitivity with ± (titles say so)",
          r.returncode == 0 and len(text) == 2 and "mean of 3 seeds, bars: 95 % CI" in text["atlas_lr"]
          and "mean of 3 seeds, ±: 95 % CI" in text["atlas_sensitivity"] and " ± " in text["atlas_sensitivity"],
          r.stderr.strip() or str(list(text)))
    shutil.rmtree("results/mini_seeds_test", ignore_errors=True)
    os.remove("results/mini_seeds_test.h5")


def run_in(cwd, *args):
    return subprocess.run([STABILITY, *args], capture_output=True, text=True, cwd=cwd)


def test_collisions(tmp):
    tiny = os.path.abspath("configs/tiny.ini")
    d = os.path.join(tmp, "collide")
    os.makedirs(os.path.join(d, "exp", "a"))
    os.makedirs(os.path.join(d, "exp", "b"))
    sweep = f"[sweep]\nbase = {tiny}\nmodel.layers = 1, 2\nprobe.seeds = 1\nprobe.batches = 1\n"
    # a training run's file where the sweep 'x' merges
    r = run_in(d, "--config", tiny, "--set", "train.steps=5", "--out", "results/x.h5", "--quiet")
    before = os.stat(os.path.join(d, "results/x.h5")).st_mtime_ns
    write(os.path.join(d, "exp", "a", "x.ini"), sweep)
    r = run_in(d, "sweep", "exp/a/x.ini", "--quiet")
    check("results/x.h5 is a training run's file: `sweep x.ini` exits 2 before running, names it, "
          "leaves it", r.returncode == 2 and "results/x.h5 is a train file" in r.stderr and
          os.stat(os.path.join(d, "results/x.h5")).st_mtime_ns == before and
          not glob.glob(os.path.join(d, "results/x/*.h5")), r.stderr.strip())
    r = run_in(d, "sweep", "exp/a/x.ini", "--merge", "--force", "--quiet")
    with h5py.File(os.path.join(d, "results/x.h5"), "r") as f:
        merged = "sweep" in f and "train" not in f
    check("... --merge --force replaces it", r.returncode == 3 and merged, r.stderr.strip())
    r = run_in(d, "sweep", "exp/a/x.ini", "--quiet")
    runs = {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(d, "results/x/*.h5"))}
    write(os.path.join(d, "exp", "b", "x.ini"), sweep.replace("probe.seeds = 1", "probe.seeds = 2"))
    r2 = run_in(d, "sweep", "exp/b/x.ini", "--quiet")
    after = {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(d, "results/x/*.h5"))}
    check("a second sweep file named x.ini in another folder: exit 2, names the owner, the first "
          "sweep's 2 runs untouched (not 'stale', not redone)", r.returncode == 0 and
          r2.returncode == 2 and "exp/a/x.ini" in r2.stderr and len(runs) == 2 and after == runs
          and "stale" not in r2.stderr, f"{r.returncode} {r.stderr.strip()} | {r2.returncode} "
          f"{r2.stderr.strip()}")
    r2 = run_in(d, "sweep", "exp/b/x.ini", "--slurm", "--quiet")
    check("... and its --slurm script is refused too", r2.returncode == 2 and
          not os.path.exists(os.path.join(d, "results/x/job.sbatch")), r2.stderr.strip())
    # '...ini': the sweep's name would be '..', its runs results/../NAME.h5
    write(os.path.join(d, "victim1.h5"), "precious\n")
    write(os.path.join(d, "...ini"), sweep.replace("model.layers = 1, 2", "name = victim{layers}\n"
                                                  "model.layers = 1, 2"))
    r = run_in(d, "sweep", "...ini", "--force", "--quiet")
    check("a sweep file named '...ini': exit 2, ./victim1.h5 untouched, no results/...h5",
          r.returncode == 2 and open(os.path.join(d, "victim1.h5")).read() == "precious\n" and
          not os.path.exists(os.path.join(d, "victim2.h5")) and "'..'" in r.stderr, r.stderr.strip())


def test_big_array(tmp):
    d = os.path.join(tmp, "big")
    os.makedirs(os.path.join(d, "bin"))
    write(os.path.join(d, "bin", "sbatch"), "#!/bin/sh\nfor a in \"$@\"; do case $a in --array=*) "
          "echo \"$a\" >> \"$SBATCH_LOG\";; esac; done\necho 4242\n")
    write(os.path.join(d, "bin", "scontrol"), "#!/bin/sh\necho 'MaxArraySize = 5001'\n")
    for f in ("sbatch", "scontrol"):
        os.chmod(os.path.join(d, "bin", f), 0o755)
    seeds = ",".join(str(i) for i in range(1, 65))   # one line of at most 198 characters
    write(os.path.join(d, "big.ini"), f"[sweep]\nbase = {os.path.abspath('configs/tiny.ini')}\n"
          f"name = s{{seed}}_p{{probe.seeds}}\ninit.seed = {seeds}\nprobe.seeds = {seeds}\n")
    env = dict(os.environ, PATH=os.path.join(d, "bin") + ":" + os.environ["PATH"],
               SBATCH_LOG=os.path.join(d, "arrays"))
    t0 = time.time()
    r = subprocess.run([STABILITY, "sweep", "big.ini", "--slurm", "--submit", "--only-missing",
                        "--quiet"], capture_output=True, text=True, cwd=d, env=env)
    seen = []
    for line in open(os.path.join(d, "arrays")).read().split() if os.path.exists(os.path.join(d, "arrays")) else []:
        for item in line[len("--array="):].split(","):
            a, _, b = item.partition("-")
            seen += list(range(int(a), int(b or a) + 1))
    check(f"--only-missing of 4096 runs: every task index submitted once ({len(seen)} indices, "
          f"{time.time() - t0:.1f} s)", r.returncode == 0 and sorted(seen) == list(range(4096)),
          f"exit {r.returncode} {r.stderr.strip()[:200]}, {len(seen)} indices")


def test_long_cwd(tmp):
    """The Slurm script of a sweep run from a working directory of 1100 characters."""
    d = os.path.join(tmp, *(["d" * 200] * 6))
    os.makedirs(d)
    write(os.path.join(d, "long.ini"), f"[sweep]\nbase = {os.path.abspath('configs/tiny.ini')}\n"
          "probe.seeds = 1\nprobe.batches = 1\n")
    r = subprocess.run([STABILITY, "sweep", "long.ini", "--slurm", "--quiet"], capture_output=True,
                       text=True, cwd=d)
    script = os.path.join(d, "results", "long", "job.sbatch")
    text = open(script).read() if os.path.exists(script) else ""
    # the task runs from anywhere: it cd's to the sweep's directory itself
    t = subprocess.run(["bash", script], capture_output=True, text=True, cwd=tmp,
                       env=dict(os.environ, SLURM_ARRAY_TASK_ID="0")) if text else None
    check(f"--slurm from a working directory of {len(d)} characters: the script cd's there, its "
          "task runs from elsewhere", r.returncode == 0 and f"cd '{d}'" in text and t is not None
          and t.returncode == 0 and os.path.exists(os.path.join(d, "results", "long", "run.h5")),
          f"{r.returncode} {r.stderr.strip()} {[l for l in text.splitlines() if l.startswith('cd ')]} "
          f"{t.stderr.strip()[-200:] if t else ''}")


def test_item13(tmp):
    tiny = os.path.abspath("configs/tiny.ini")
    d = os.path.join(tmp, "item13")
    os.makedirs(d)
    sweep = (f"[sweep]\nbase = {tiny}\nname = p&q{{seed}}\ninit.seed = 1, 2\nprobe.seeds = 2\n"
             "probe.batches = 1\n")
    # [slurm] values that are one word of an #SBATCH line, or exit 2
    for key, value in (("partition", "gpu --output=/x"), ("account", "acct --wrap=x"),
                       ("partition", "gpu\t--mem=1")):
        write(os.path.join(d, "s.ini"), sweep + f"[slurm]\n{key} = {value}\n")
        r = run_in(d, "sweep", "s.ini", "--slurm", "--quiet")
        check(f"[slurm] {key} = {value!r}: exit 2 naming the line, no job.sbatch",
              r.returncode == 2 and f"s.ini:8: slurm.{key}: not a Slurm {key} name" in r.stderr and
              not os.path.exists(os.path.join(d, "results", "s", "job.sbatch")), r.stderr.strip())
    write(os.path.join(d, "s.ini"), sweep + "[slurm]\npartition = gpu,short\naccount = my-lab.2\n")
    r = run_in(d, "sweep", "s.ini", "--slurm", "--quiet")
    script = os.path.join(d, "results", "s", "job.sbatch")
    text = open(script).read() if os.path.exists(script) else ""
    check("[slurm] partition = gpu,short and account = my-lab.2 are written as they are",
          r.returncode == 0 and "#SBATCH --partition=gpu,short\n" in text and
          "#SBATCH --account=my-lab.2\n" in text, r.stderr.strip())
    # a dump of run 0's config at its path: not a finished run
    r = run_in(d, "sweep", "s.ini", "--dry-run")
    sets = [l.split()[2:] for l in r.stdout.splitlines() if l.split()[:1] == ["0"]]
    run0 = os.path.join(d, "results", "s", "p&q1.h5")
    os.makedirs(os.path.dirname(run0), exist_ok=True)
    args = [a for kv in (sets[0] if sets else []) for a in ("--set", kv)]
    dump = run_in(d, "dump", "--config", tiny, *args, "--out", run0)
    r = run_in(d, "sweep", "s.ini")
    with h5py.File(run0, "r") as f:
        probe = "probe" in f
    check("a dump of run 0's config at its path is redone as a probe, not taken as finished",
          dump.returncode == 0 and r.returncode == 0 and "0 complete" in r.stdout and probe,
          f"{sets} {dump.stderr.strip()} {r.stdout.strip()} {r.stderr.strip()}")
    # '&' in run names: SVG figures that parse as XML, the name shown as it is
    out = os.path.join(d, "svg")
    r = run_in(d, "plot", "results/s.h5", "--out", out, "--format", "svg")
    bad, names = [], 0
    for path in sorted(glob.glob(os.path.join(out, "*.svg"))):
        try:
            root = ET.parse(path).getroot()
            names += sum(1 for e in root.iter() if e.text and "p&q" in e.text)
        except ET.ParseError as e:
            bad.append(f"{os.path.basename(path)}: {e}")
    check(f"run names 'p&q1', 'p&q2' (one label each): every SVG figure is XML, the names shown ({names} texts)",
          r.returncode == 0 and glob.glob(os.path.join(out, "*.svg")) and not bad and names > 0,
          f"{r.stderr.strip()} {bad[:3]}")


def main():
    with tempfile.TemporaryDirectory() as tmp, harness.chdir_repo_like(tmp):
        test_expansion(tmp)
        test_bad_sweeps(tmp)
        test_run_resume_merge(tmp)
        test_stale(tmp)
        test_threads(tmp)
        test_plots(tmp)
        test_training_titles(tmp)
        test_atlas(tmp)
        test_collisions(tmp)
        test_big_array(tmp)
        test_long_cwd(tmp)
        test_item13(tmp)
    failed = results.count(False)
    print(f"sweep: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
