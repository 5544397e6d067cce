#!/usr/bin/python3
"""same_results.py — are two builds' results the same bits? (a developer's check)

    /usr/bin/python3 tools/same_results.py OLD_BINARY NEW_BINARY [--threads 1,2,3] [--only SUBSTR]
                                             [--keep DIR] [--cases] [--additions]

Runs the comparison cases below (dumps, probes and short training runs over every scheme, norm,
arch, optimizer and task) with both binaries at each thread count (STABILITY_THREADS), and
compares every dataset of the two result files byte for byte and every attribute but the
root's `created` and `version` (a merged sweep's runs' too; and /train/time, a wall clock).
Prints one line per case that differs and a summary; exit 1 when any case differs, 0 when all
are the same.

A change that must not move a result (docs/design.md, "Keep every existing result") runs this
against the binary before it. With NEW_BINARY = OLD_BINARY at two thread counts it checks that
results do not depend on the thread count (--across-threads).
With --additions, what a new build only adds is allowed: objects only in the new file, attributes
only on its objects, and in a `config` attribute the lines of keys the old build did not have
(a new option at its default); everything both files hold must still be the same bits.
Needs results/licenses.txt (setup/corpus.sh) for the text cases and results/translation/
(setup/translation-corpus.sh) for the translation case; a case whose data is missing is
skipped and said so.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SMALL = ["model.layers=3", "model.d_model=16", "model.heads=2", "model.d_ff=24",
         "model.vocab=23", "model.seq_len=7", "data.batch=3"]
# big enough that the GEMMs are split among threads (N = B·T = 256 rows, d = 64)
MID = ["model.layers=3", "model.d_model=64", "model.heads=4", "model.d_ff=96",
       "model.vocab=61", "model.seq_len=32", "data.batch=8"]
ENCDEC = ["model.arch=encdec", "model.dec_layers=2", "data.task=reverse", "model.src_len=7",
          "data.min_len=3"]
TRAIN = ["train.steps=12", "train.warmup=4", "train.lr=1e-3", "probe.every=5"]
PROBE = ["probe.seeds=2", "probe.batches=2"]
TEXT = ["data.task=text", "data.path=results/licenses.txt", "model.vocab=256", "model.causal=true"]
TRANSLATION = ["model.arch=encdec", "data.task=translation", "data.path=results/translation",
               "model.vocab=8000", "model.seq_len=24", "model.src_len=24", "data.batch=4",
               "model.layers=2", "model.dec_layers=2", "model.d_model=32", "model.heads=2",
               "model.d_ff=48"]
SCHEMES = [["model.placement=post"], ["model.placement=pre"], ["model.placement=peri"],
           ["model.placement=deepnorm"], ["model.placement=admin"],
           ["model.placement=rezero", "model.norm=none"], ["model.placement=subln"],
           ["model.placement=mixln", "model.layers=4"], ["model.placement=b2t"],
           ["model.placement=pre", "model.norm=rmsnorm"], ["model.placement=pre", "model.norm=dyt"],
           ["model.placement=post", "model.norm=none", "init.scheme=tfixup"]]

LOWP = [("float32", ["train.precision=float32"]),
        ("bfloat16", ["train.precision=bfloat16", "train.round_residual=on",
                      "train.round_norm_stats=on"]),
        ("bfloat16_pure-stochastic", ["train.precision=bfloat16_pure", "train.rounding=stochastic"]),
        ("bfloat16_pure-kahan", ["train.precision=bfloat16_pure", "train.kahan=on"]),
        ("fp8", ["train.precision=fp8"])]


def cases():
    """(name, verb, sets, needs) for every comparison case."""
    out = []
    for i, s in enumerate(SCHEMES):
        tag = "-".join(x.split("=")[1] for x in s)
        out.append((f"dump-lm-{tag}", "dump", SMALL + s, None))
        out.append((f"dump-encdec-{tag}", "dump", SMALL + ENCDEC + s, None))
        out.append((f"probe-lm-{tag}", "probe", SMALL + PROBE + s, None))
        if i < 3 or tag.startswith("admin"):
            out.append((f"probe-encdec-{tag}", "probe", SMALL + ENCDEC + PROBE + s, None))
        out.append((f"train-lm-mid-{tag}", "train", MID + TRAIN + s, None))
    out.append(("dump-lm-dropout", "dump", SMALL + ["model.dropout=0.1"], None))
    out.append(("dump-lm-untied-gelu-causal", "dump",
                SMALL + ["model.tie_embeddings=false", "model.activation=gelu", "model.causal=true"],
                None))
    out.append(("dump-encdec-dropout-smoothing", "dump",
                SMALL + ENCDEC + ["model.dropout=0.1", "data.label_smoothing=0.1"], None))
    for opt in ["adam", "adamw", "sgd", "radam"]:
        out.append((f"train-lm-{opt}", "train",
                    SMALL + TRAIN + [f"train.optimizer={opt}", "train.weight_decay=0.01",
                                     "train.clip=0.5"], None))
    out.append(("train-lm-mid-dropout-zipf", "train",
                MID + TRAIN + ["model.dropout=0.1", "data.zipf=1.1"], None))
    out.append(("train-encdec-mid-pre", "train", MID + ENCDEC + TRAIN + ["model.placement=pre"],
                None))
    out.append(("train-encdec-mid-post-dropout", "train",
                MID + ENCDEC + TRAIN + ["model.dropout=0.1", "data.label_smoothing=0.1"], None))
    out.append(("train-text-mid-pre-gelu", "train",
                MID + TEXT + TRAIN + ["model.placement=pre", "model.activation=gelu",
                                      "model.causal=true", "train.eval_every=6"],
                "results/licenses.txt"))
    out.append(("train-translation-post", "train", TRANSLATION + TRAIN + ["train.eval_every=6"],
                "results/translation/manifest.txt"))
    # the float32 core and the emulated low precisions (docs/design.md, "Low precision,
    # emulated"): every rounding place, both pure-bfloat16 updates, fp8's two formats
    for tag, s in LOWP:
        out.append((f"train-lm-mid-{tag}", "train",
                    MID + TRAIN + ["model.activation=gelu", "model.causal=true"] + s, None))
    return out


def run_case(binary, verb, sets, out, threads):
    env = dict(os.environ, STABILITY_THREADS=str(threads), OMP_WAIT_POLICY="passive")
    env.pop("STABILITY_SWEEP_THREADS", None)
    args = [binary]
    if verb == "dump":
        args += ["dump", "--config", "tiny"]
    else:
        args += ["--config", "tiny"]
    for s in sets:
        args += ["--set", s]
    args += ["--out", out, "--quiet"]
    if verb == "dump":
        args.remove("--quiet")
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=900)
    return p.returncode, p.stderr.strip()


def attrs_of(obj):
    return {k: obj.attrs[k] for k in obj.attrs}


def same_value(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "O" or b.dtype.kind == "O":   # strings: their values, not the pointers
        return a.tolist() == b.tolist()
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def config_without_new_keys(old, new):
    """new's INI text without the `key = value` lines whose key old's text lacks."""
    def key(line):
        return line.split("=", 1)[0].strip() if "=" in line and not line.startswith(";") else None
    text = lambda x: x.decode() if isinstance(x, bytes) else str(x)
    have = {key(l) for l in text(old).splitlines()} - {None}
    return "\n".join(l for l in text(new).splitlines() if key(l) is None or key(l) in have)


def diff_files(pa, pb, additions=False):
    """The first few differences between two result files (empty: the same)."""
    out = []
    with h5py.File(pa, "r") as fa, h5py.File(pb, "r") as fb:
        na, nb = [], []
        fa.visit(na.append)
        fb.visit(nb.append)
        if additions:
            nb = [n for n in nb if n in set(na)]
        if sorted(na) != sorted(nb):
            out.append(f"objects differ: only old {sorted(set(na) - set(nb))[:5]}, "
                       f"only new {sorted(set(nb) - set(na))[:5]}")
        for name in ["/"] + sorted(set(na) & set(nb)):
            oa, ob = fa[name], fb[name]
            if isinstance(oa, h5py.Dataset) and name not in ("train/time", "runs") and \
                    not name.endswith("/train/time"):
                if not same_value(oa[()], ob[()]):
                    va, vb = np.asarray(oa[()]), np.asarray(ob[()])
                    detail = ""
                    if va.shape == vb.shape and va.dtype.kind == "f":
                        d = np.nanmax(np.abs(va - vb)) if va.size else 0
                        detail = f", max |diff| {d:.3g}"
                    out.append(f"{name}: data{detail}")
            aa, ab = attrs_of(oa), attrs_of(ob)
            # a file's (or a merged sweep's run's) creation time and build are not results
            run_root = name == "/" or (name.startswith("runs/") and name.count("/") == 1)
            skip = {"created", "version"} if run_root else set()
            for k in sorted((set(aa) | set(ab)) - skip):
                if additions and k not in aa:
                    continue
                if additions and k == "config" and k in ab:
                    ab[k] = config_without_new_keys(aa[k], ab[k])
                    aa[k] = config_without_new_keys(aa[k], aa[k])
                if k not in aa or k not in ab or not same_value(aa[k], ab[k]):
                    out.append(f"{name}@{k}: attribute")
            if len(out) > 6:
                break
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--threads", default="1,2", help="thread counts (old runs at the first "
                    "unless --across-threads)")
    ap.add_argument("--across-threads", action="store_true",
                    help="run OLD at the first thread count and NEW at each of the others")
    ap.add_argument("--only", default="", help="cases whose name contains this")
    ap.add_argument("--keep", default="", help="keep the result files in this folder")
    ap.add_argument("--cases", action="store_true", help="list the cases and exit")
    ap.add_argument("--additions", action="store_true", help="allow what NEW only adds: "
                    "objects, attributes, config keys the old build lacked")
    a = ap.parse_args()
    todo = [c for c in cases() if a.only in c[0]]
    if a.cases:
        for name, verb, sets, _ in todo:
            print(name, verb, " ".join(sets))
        return 0
    threads = [int(t) for t in a.threads.split(",")]
    pairs = [(threads[0], t) for t in threads[1:]] if a.across_threads else \
        [(t, t) for t in threads]
    tmp = a.keep or tempfile.mkdtemp(prefix="same_results.")
    os.makedirs(tmp, exist_ok=True)
    bad = skipped = done = 0
    for name, verb, sets, needs in todo:
        if needs and not os.path.exists(needs):
            print(f"skip   {name} (no {needs})")
            skipped += 1
            continue
        for ta, tb in pairs:
            pa = os.path.join(tmp, f"{name}.old.t{ta}.h5")
            pb = os.path.join(tmp, f"{name}.new.t{tb}.h5")
            for p in (pa, pb):
                if os.path.exists(p):
                    os.unlink(p)
            ra = run_case(a.old, verb, sets, pa, ta)
            rb = run_case(a.new, verb, sets, pb, tb)
            label = f"{name} (threads {ta}" + (f" vs {tb})" if ta != tb else ")")
            if ra[0] != rb[0]:
                print(f"DIFF   {label}: exit {ra[0]} vs {rb[0]}: {ra[1][-200:]} | {rb[1][-200:]}")
                bad += 1
                continue
            if ra[0] != 0:
                print(f"DIFF   {label}: both failed (exit {ra[0]}): {ra[1][-300:]}")
                bad += 1
                continue
            d = diff_files(pa, pb, a.additions)
            done += 1
            if d:
                bad += 1
                print(f"DIFF   {label}: " + "; ".join(d))
            else:
                print(f"same   {label}")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"same_results: {done - bad if done >= bad else 0} same, {bad} differ, "
          f"{skipped} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
