#!/usr/bin/python3
"""Issue 44's items 2, 5, 9 and 12 (docs/faults.md, "Round 4"), from the repository root:
/usr/bin/python3 tests/test_harden_misc.py [SECTION...]

memory   model.layers = 10 000 000 is refused (exit 2, "needs about ... GiB") in under a second
         and under 100 MB resident; it grew to 23 GiB and was killed. Run under a 2 GiB address
         space so that the old build fails with "out of memory" instead of taking the machine.
ignored  item 5: a key the run would ignore is refused where it does not apply, as mix_ratio is:
         init.base_width under the standard parametrization, train.momentum under Adam (a sweep
         of `16, 32` made two byte-identical runs listed as two configurations); SGD takes its
         momentum, a stored file holding such a key still reads; -0 is 0: `weight_decay = 0, -0`
         and `curvature_floor = 0, -0` are one value (as `1e-3, +0.001`), a run records 0.
minor    item 12: a merged file's status of a damaged run file whole (it stopped at 31
         characters); a project copied whole merges its sweep (it named the original's sweep
         file); `info` names RoPE, no biases and muP, and the cosine floor after the schedule,
         not after the warm-up; `dump --hvp` records the Lanczos steps taken (at most the
         parameters, 156 here, not the 100 000 asked); a dump whose loss overflows is status
         diverged with its reason (exit 0); the sweep summary pads UTF-8 names by columns;
         control characters of --set values are echoed as '?'; --resume of a file that logged
         no update says so instead of "would erase its 0 logged updates".
scripts  item 9: the table verbs (`stability table warmup-explained|atlas|proxies|warmup|
         curvature-anchor`; the last two were scripts) answer a wrong input with one line on
         stderr, exit 1 (they printed a table, exit 0, or a traceback): a missing, empty or
         non-HDF5 file, a run file where a merged one belongs, a file without /runs or /train;
         a file given twice is one row; curvature-anchor counts a copied run once and keeps
         L = 1 and L = 2 apart.
Prints "ok"/"not ok" per check, then "harden_misc: N passed, M failed"; exit 1 if M > 0.
Everything is written under a temporary directory.
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

STABILITY = os.path.abspath(os.environ.get("STABILITY", "./stability"))
ROOT = os.path.abspath(os.path.dirname(os.path.dirname(__file__)))
TINY = os.path.join(ROOT, "configs/tiny.ini")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok     " if ok else "not ok ") + name + (f"  ({detail})" if detail and not ok else ""))


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run(*args, timeout=60, cwd=None, limit=False):
    try:
        return subprocess.run([STABILITY, *args], capture_output=True, text=True, errors="replace",
                              env=ENV, timeout=timeout, cwd=cwd,
                              preexec_fn=limit_address_space if limit else None)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -999, "", f"no answer within {timeout} s")


def test_memory(tmp):
    """Item 2: the memory guard is arithmetic, before anything is allocated."""
    for config, extra in (("configs/preln_L12.ini", []),   # a probe
                          ("configs/tiny.ini", ["train.steps=5", "model.arch=encdec",
                                                "model.dec_layers=3"])):
        args = ["--config", os.path.join(ROOT, config), "--set", "model.layers=10000000",
                "--out", os.path.join(tmp, "deep.h5"), "--quiet"]
        for kv in extra:
            args += ["--set", kv]
        out = os.path.join(tmp, "time.txt")
        t0 = time.monotonic()
        try:
            r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out, STABILITY, *args],
                               capture_output=True, text=True, env=ENV, timeout=30,
                               preexec_fn=limit_address_space)
            code, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            code, err = -999, "no answer within 30 s"
        seconds = time.monotonic() - t0
        rss_kb = int(open(out).read().split()[-1]) if os.path.exists(out) else 1 << 30
        check(f"memory: {config} layers=1e7 refused, exit 2, with the estimate", code == 2 and
              "model: needs about" in err and "GiB" in err, f"exit {code}: {err.strip()[-200:]}")
        check(f"memory: {config} refused in under a second ({seconds:.2f} s)", seconds < 1.0)
        check(f"memory: {config} under 100 MB resident ({rss_kb} KB)", rss_kb < 100 * 1024)
        check("memory: nothing written", not os.path.exists(os.path.join(tmp, "deep.h5")))


def sweep_file(tmp, name, lines):
    path = os.path.join(tmp, name + ".ini")
    with open(path, "w") as f:
        f.write(f"[sweep]\nbase = {TINY}\nname = r{{{name}}}\n" + "".join(l + "\n" for l in lines))
    return path


def stored_config(path):
    import h5py
    with h5py.File(path, "r") as f:
        c = f.attrs["config"]
    return c.decode() if isinstance(c, bytes) else c


def test_ignored(tmp):
    """Item 5: keys a run ignores are refused; -0 is 0."""
    for key, value, line in (("init.base_width", "16, 32", 4), ("train.momentum", "0.5, 0.9", 4)):
        path = sweep_file(tmp, key.split(".")[1], [f"{key} = {value}"])
        r = run("sweep", path, "--dry-run", cwd=tmp)
        check(f"ignored: a sweep of {key} = {value} is refused at its line, exit 2",
              r.returncode == 2 and f"{path}:{line}: {key}: only applies to" in r.stderr,
              f"exit {r.returncode}: {r.stderr.strip()[-300:]} {r.stdout[-200:]}")
    out = os.path.join(tmp, "ign.h5")
    for sets, want in ((["init.base_width=16"], "init.parametrization = mup"),
                       (["train.momentum=0.5"], "train.optimizer = sgd"),
                       (["train.momentum=0.5", "train.optimizer=adamw"], "train.optimizer = sgd")):
        args = ["--config", TINY, "--out", out, "--quiet", "--force"]
        for kv in sets:
            args += ["--set", kv]
        r = run(*args)
        check(f"ignored: --set {' '.join(sets)} refused, exit 2, naming {want}",
              r.returncode == 2 and want in r.stderr and not os.path.exists(out),
              f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    r = run("--config", TINY, "--out", out, "--quiet", "--force", "--set", "train.optimizer=sgd",
            "--set", "train.momentum=0.5", "--set", "train.steps=2")
    check("ignored: SGD takes train.momentum = 0.5", r.returncode == 0 and
          "momentum = 0.5\n" in stored_config(out), r.stderr.strip()[-300:])
    # a file written before the rule, holding base_width under standard: still read
    import h5py
    with h5py.File(out, "a") as f:
        f.attrs["config"] = stored_config(out).replace("[init]\n", "[init]\nbase_width = 32\n")
    r = run("info", out)
    check("ignored: a stored run holding init.base_width under standard still reads (info, exit 0)",
          r.returncode == 0, r.stderr.strip()[-300:])
    for key in ("train.weight_decay", "probe.curvature_floor"):
        path = sweep_file(tmp, key.split(".")[1], [f"{key} = 0, -0"])
        r = run("sweep", path, "--dry-run", cwd=tmp)
        check(f"ignored: {key} = 0, -0 is one value, exit 2", r.returncode == 2 and
              f"{key}: '0' and '-0' are one value" in r.stderr,
              f"exit {r.returncode}: {r.stderr[-200:]} {r.stdout[-200:]}")
    r = run("--config", TINY, "--force", "--out", out, "--quiet", "--set", "train.weight_decay=-0",
            "--set", "train.steps=2")
    check("ignored: a run of weight_decay = -0 records 0", r.returncode == 0 and
          "\nweight_decay = 0\n" in stored_config(out), r.stderr.strip()[-300:])
    if os.path.exists(out):
        os.remove(out)


def attrs(path, obj="/"):
    import h5py
    with h5py.File(path, "r") as f:
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f[obj].attrs.items()}


def small_sweep(root, name, lrs, extra=""):
    """A project folder root with configs/tiny.ini and experiments/NAME.ini; swept, merged."""
    import shutil
    os.makedirs(os.path.join(root, "configs"), exist_ok=True)
    os.makedirs(os.path.join(root, "experiments"), exist_ok=True)
    shutil.copy(TINY, os.path.join(root, "configs", "tiny.ini"))
    with open(os.path.join(root, "experiments", name + ".ini"), "w") as f:
        f.write(f"[sweep]\nbase = configs/tiny.ini\nname = {extra}r{{lr}}\ntrain.lr = {lrs}\n"
                "train.steps = 2\n")
    return run("sweep", f"experiments/{name}.ini", "--quiet", cwd=root, timeout=120)


def test_minor_sweeps(tmp):
    import h5py
    import shutil
    root = os.path.join(tmp, "proj")
    r = small_sweep(root, "s", "1e-3, 2e-3")
    check("minor: the project's sweep runs and merges", r.returncode == 0, r.stderr[-300:])
    copy = os.path.join(tmp, "proj_copy")
    shutil.copytree(root, copy)
    r = run("sweep", "experiments/s.ini", "--merge", cwd=copy)
    check("minor: a project copied whole merges its sweep (exit 0)", r.returncode == 0,
          f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    other = os.path.join(root, "other")
    os.makedirs(other)
    shutil.copy(os.path.join(root, "experiments", "s.ini"), os.path.join(other, "s.ini"))
    r = run("sweep", "other/s.ini", "--merge", cwd=root)
    check("minor: another sweep file of the same name in the project is still refused (exit 2)",
          r.returncode == 2 and "has the same name" in r.stderr, r.stderr[-300:])
    with open(os.path.join(root, "results", "s", "r1e-3.h5"), "wb") as f:
        f.write(b"not a file of HDF5 at all, but long enough to be read as one" * 20)
    os.remove(os.path.join(root, "results", "s.h5"))
    r = run("sweep", "experiments/s.ini", "--merge", cwd=root)
    with h5py.File(os.path.join(root, "results", "s.h5"), "r") as f:
        status = [x.decode() for x in f["sweep/status"][()]]
    line = [l for l in r.stderr.splitlines() if l.startswith("run 0 (r1e-3): ")]
    check("minor: the merged file keeps a damaged run's status whole (> 31 characters, as said)",
          len(status[0]) > 31 and line and line[0] == "run 0 (r1e-3): " + status[0],
          f"{status[0]!r} vs {line}")
    uroot = os.path.join(tmp, "uproj")
    r = small_sweep(uroot, "u", "1e-3, 2e-3", extra="μμμ_")
    with open(os.path.join(uroot, "results", "u", "summary.txt"), encoding="utf-8") as f:
        rows = f.read().splitlines()[:3]
    cols = {row.index("status") if i == 0 else row.index("done") for i, row in enumerate(rows)}
    check("minor: the summary pads UTF-8 run names by columns (status in one column)",
          r.returncode == 0 and len(cols) == 1, "\n".join(rows))


def test_minor_runs(tmp):
    out = os.path.join(tmp, "m.h5")
    r = run("--config", TINY, "--out", out, "--quiet", "--set", "train.steps=3", "--set",
            "model.positions=rope", "--set", "model.bias=off", "--set", "init.parametrization=mup_simple",
            "--set", "init.base_width=8", "--set", "train.schedule=cosine", "--set",
            "train.warmup=2", "--set", "train.min_lr_ratio=0.1")
    info = run("info", out).stdout
    check("minor: info's header names RoPE, no biases and muP",
          r.returncode == 0 and ", RoPE, no biases, muP (base width 8)," in info, info[:400])
    check("minor: info puts cosine's floor with the schedule, not the warm-up",
          "cosine schedule to 0.1 x lr, warm-up 2," in info and "(to 0.1" not in info, info[:400])
    dump = os.path.join(tmp, "d.h5")
    r = run("dump", "--config", TINY, "--hvp", "--out", dump, "--set", "probe.curvature_iters=100000",
            "--set", "model.layers=1", "--set", "model.d_model=4", "--set", "model.heads=1",
            "--set", "model.d_ff=4", "--set", "model.vocab=5")
    a = attrs(dump, "hvp") if r.returncode == 0 else {}
    check("minor: dump --hvp records the Lanczos steps taken, at most the 156 parameters",
          r.returncode == 0 and "156 parameters" in r.stdout and 2 <= a.get("iters", 0) <= 156,
          f"{r.stderr[-200:]} iters {a.get('iters')}")
    r = run("dump", "--config", TINY, "--hvp", "--out", dump, "--force", "--set",
            "probe.curvature_iters=7")
    check("minor: dump --hvp with K = 7 records 7", r.returncode == 0 and attrs(dump, "hvp")["iters"] == 7)
    r = run("dump", "--config", TINY, "--hvp", "--perturb", "1e308", "--out", dump, "--force")
    a = attrs(dump) if r.returncode == 0 else {}
    check("minor: dump --perturb 1e308 --hvp: status diverged with its reason, said, exit 0",
          r.returncode == 0 and a.get("status") == "diverged" and
          "not finite" in a.get("diverged_reason", "") and "recorded with status diverged" in r.stderr,
          f"exit {r.returncode} {a.get('status')} {r.stderr[-200:]}")
    for sets in ([f"train.lr=1\x1b[31m"], ["train.lr=1e-3\x1b]0;x\x07", "train.lr=2e-3\x1b[2J"],
                 ["train.lr\x1b[31m"]):
        args = ["--config", TINY, "--out", os.path.join(tmp, "c.h5"), "--quiet", "--set", sets[0]]
        for kv in sets[1:]:
            args += ["--set", kv]
        if len(sets) == 1 and "=" not in sets[0]:
            args += ["1e-3"]
        r = run(*args)
        check(f"minor: --set {sets!r}: no control character echoed, '?' instead",
              r.stderr and not any(ord(c) < 0x20 and c != "\n" for c in r.stderr) and "?" in r.stderr,
              repr(r.stderr[-200:]))


def test_minor_resume(tmp):
    import h5py
    out = os.path.join(tmp, "k.h5")
    r = run("--config", TINY, "--out", out, "--quiet", "--set", "train.steps=3")
    with h5py.File(out, "a") as f:   # as a kill before the first flush leaves it
        for name, d in f["train"].items():
            if isinstance(d, h5py.Dataset) and d.maxshape and d.maxshape[0] is None:
                d.resize(0, axis=0)
        del f["checkpoint"]
        f.attrs["status"] = "running"
    r = run("--config", TINY, "--out", out, "--quiet", "--set", "train.steps=3", "--resume")
    check("minor: --resume of a file that logged no update says so (exit 2), not '0 logged updates'",
          r.returncode == 2 and "no update logged" in r.stderr and "0 logged" not in r.stderr,
          r.stderr[-300:])


def anchor_run(f, name, layers, seed, ratio):
    import numpy as np
    g = f.create_group(f"runs/{name}")
    g.attrs["config"] = (f"[model]\nlayers = {layers}\nplacement = post\n[init]\nseed = {seed}\n"
                         f"[train]\nlr = 0.001\nwarmup = 1\noptimizer = adam\n")
    g.attrs["status"] = "done"
    t = g.create_group("train")
    t["curv_step"] = np.array([0, 10])
    t["precond_max_active"] = np.array([ratio, 2 * ratio])
    t["stability_threshold"] = np.array([1.0, 1.0])
    t["hessian_max"] = np.array([5.0, 6.0])
    t["val_loss"] = np.array([3.0])


def test_scripts(tmp):
    import shutil
    import h5py
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import test_warmup_explained as TW
    d = os.path.join(tmp, "scripts")
    os.makedirs(d)
    atlas, ind = os.path.join(d, "atlas.h5"), os.path.join(d, "ind.h5")
    with h5py.File(atlas, "w") as f:
        TW.atlas_run(f, "post-layernorm-xavier_normal_L2_lr1e-3_w1", False, "done", 3.5)
        TW.atlas_run(f, "post-layernorm-xavier_normal_L2_lr1e-3_w100", True, "done", 2.5)
        TW.atlas_run(f, "pre-layernorm-xavier_normal_L2_lr1e-3_w1", False, "done", 2.0)
    with h5py.File(ind, "w") as f:
        TW.indicator_run(f, "post-layernorm-xavier_normal_L2_lr1e-3_w1", 4.0, (1.0, 7.0, 2.0), 0.3, 3.0)
        TW.indicator_run(f, "pre-layernorm-xavier_normal_L2_lr1e-3_w1", 2.0, (0.5, 0.25, 0.1), 0.1, 1.0)
    copy = os.path.join(d, "atlas_copy.h5")
    shutil.copy(atlas, copy)
    empty = os.path.join(d, "empty.h5")
    open(empty, "w").close()
    bare = os.path.join(d, "bare.h5")
    with h5py.File(bare, "w") as f:
        f["x"] = [1.0]
    probe_only = os.path.join(d, "probe_only.h5")
    with h5py.File(probe_only, "w") as f:
        f.create_group("runs/a/probe")
        f["runs/a"].attrs["config"] = "[model]\nlayers = 2\n"
    runfile = os.path.join(d, "run.h5")
    r = run("--config", TINY, "--out", runfile, "--quiet", "--set", "train.steps=2")
    probefile = os.path.join(d, "probe.h5")
    r = run("--config", TINY, "--out", probefile, "--quiet", "--set", "probe.seeds=1",
            "--set", "probe.batches=1")
    # the warm-up study is the program's verb (study/warmup_explained.c): its table, and a
    # wrong input said in one line (exit 1: unreadable runs; exit 2: bad usage)
    r = run("table", "warmup-explained", atlas, ind)
    check("table warmup-explained on its two files prints the table (exit 0)",
          r.returncode == 0 and "| indicator |" in r.stdout, r.stderr[-300:])
    for args, what, rc in (([atlas], "no indicators' runs", 1),
                           ([empty, ind], "an empty file", 1),
                           ([bare, ind], "no /runs", 1),
                           ([runfile], "a run file alone", 1)):
        r = run("table", "warmup-explained", *args)
        lines = r.stderr.strip().splitlines()
        check(f"table warmup-explained, {what}: one line, exit {rc}",
              r.returncode == rc and len(lines) == 1 and "stability" in lines[0],
              f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    r = run("table", "warmup-explained")
    check("table warmup-explained without a file: the usage error, exit 2",
          r.returncode == 2 and "missing FILE.h5" in r.stderr, r.stderr[-300:])
    # the atlas and the size study are the program's verbs (study/atlas.c, study/proxies.c)
    for study, args, what in (("atlas", [empty], "an empty file"),
                              ("atlas", [probe_only], "runs without /train"),
                              ("proxies", [empty], "an empty file"),
                              ("proxies", [runfile], "a run file (no size study)")):
        r = run("table", study, *args)
        lines = r.stderr.strip().splitlines()
        check(f"table {study}, {what}: one line, exit 1",
              r.returncode == 1 and len(lines) == 1 and "stability" in lines[0],
              f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    # the tables of docs/warmup.md and docs/curvature.md's anchor are the program's verbs
    # (study/warmup.c, study/curvature_anchor.c; they were scripts): a wrong input is the
    # loader's one line, exit 1, as the other studies; a run file and a merged file are both
    # runs to the loader, so neither is refused for the other
    notes = os.path.join(d, "notes.h5")
    with open(notes, "w") as f:
        f.write("not HDF5\n")
    for study, args, what in (("warmup", [os.path.join(d, "missing.h5")], "a missing file"),
                              ("warmup", [empty], "an empty file"),
                              ("warmup", [notes], "not an HDF5 file"),
                              ("warmup", [probefile], "a file without /train"),
                              ("warmup", [bare], "no /runs and no run"),
                              ("curvature-anchor", [empty], "an empty file"),
                              ("curvature-anchor", [runfile], "a run without curvature rows"),
                              ("curvature-anchor", [bare], "no /runs")):
        r = run("table", study, *args)
        lines = r.stderr.strip().splitlines()
        check(f"table {study}, {what}: one line, exit 1, no table",
              r.returncode == 1 and len(lines) == 1 and "stability" in lines[0] and not r.stdout,
              f"exit {r.returncode}: {r.stderr.strip()[-300:]} {r.stdout[:100]!r}")
    r = run("table", "warmup", runfile, runfile)
    rows = r.stdout.splitlines()[2:]   # after the header and its rule
    check("table warmup, a file twice: one row, one line says it was counted once",
          r.returncode == 0 and len(rows) == 1 and "counted once" in r.stderr
          and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr)
    r = run("table", "warmup", atlas)
    rows = [l for l in r.stdout.splitlines() if l.startswith("| post") or l.startswith("| pre")]
    check("table warmup, a merged file: its runs are the rows (3)",
          r.returncode == 0 and len(rows) == 3, r.stdout + r.stderr)
    anchor = os.path.join(d, "anchor.h5")
    with h5py.File(anchor, "w") as f:
        anchor_run(f, "L1_s1", 1, 1, 0.5)
        anchor_run(f, "L2_s1", 2, 1, 0.25)
        anchor_run(f, "L1_s1_again", 1, 1, 0.5)   # a copy of L1_s1: the same run
    r = run("table", "curvature-anchor", anchor)
    across = r.stdout.split("Across seeds")[-1]
    rows = [l for l in across.splitlines() if l.startswith("| post")]
    check("table curvature-anchor keeps L = 1 and L = 2 apart, a copy counted once",
          r.returncode == 0 and len(rows) == 2 and all(" | 1 | " in l for l in rows)
          and "L = 1" in across and "L = 2" in across and "counted once" in r.stderr,
          r.stdout + r.stderr)


SECTIONS = {"scripts": test_scripts, "memory": test_memory, "ignored": test_ignored, "minor": test_minor_sweeps,
            "minor_runs": test_minor_runs, "minor_resume": test_minor_resume}


def main():
    names = sys.argv[1:] or list(SECTIONS)
    with tempfile.TemporaryDirectory(prefix="harden_misc.") as tmp:
        for name in names:
            SECTIONS[name](tmp)
    failed = results.count(False)
    print(f"harden_misc: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
