"""script_inputs.py — the table scripts' checks of what they are given (docs/faults.md, Round 4).

A wrong input is one line on stderr, `SCRIPT: what is wrong`, and exit 2, never a traceback nor
a table of the wrong thing: a file that is missing, empty, not HDF5, a run file where a merged
sweep file belongs (or the other way round), a merged file without /runs or runs without the
group the table reads, one file given twice, and an option out of its range.
"""
import math
import os
import sys

import h5py

# Replicates a 95 % percentile interval needs: with B < 40 its 2.5 % point is the smallest
# replicate (it printed [0.44, 0.44] at B = 1, excluding its own AUC of 0.50).
MIN_BOOTSTRAP = 40


def fail(message):
    """Print `SCRIPT: message` on stderr and exit 2 (bad usage, as the program's exit 2)."""
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr)
    sys.exit(2)


def positive(option, value):
    """value when it is a finite number > 0, else fail naming the option."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        fail(f"{option} must be a finite number > 0 (got {value})")
    return value


def bootstrap(option, value):
    """value when it is at least MIN_BOOTSTRAP replicates, else fail."""
    if value < MIN_BOOTSTRAP:
        fail(f"{option} must be >= {MIN_BOOTSTRAP} (got {value}): a 95 % percentile interval needs "
             f"replicates beyond its 2.5 % and 97.5 % points")
    return value


def distinct(paths):
    """Fail when two of paths are one file, or two files of the same bytes (a copy)."""
    for i, a in enumerate(paths):
        for b in paths[:i]:
            if os.path.exists(a) and os.path.exists(b) and (
                    os.path.samefile(a, b) or _same_bytes(a, b)):
                fail(f"{b} and {a} are one file given twice")


def _same_bytes(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as x, open(b, "rb") as y:
        while True:
            p, q = x.read(1 << 20), y.read(1 << 20)
            if p != q:
                return False
            if not p:
                return True


def open_hdf5(path):
    """The h5py.File of path (read-only), or fail saying why it is not one."""
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    if not os.path.isfile(path):
        fail(f"{path}: not a regular file")
    if os.path.getsize(path) == 0:
        fail(f"{path}: an empty file")
    if not h5py.is_hdf5(path):
        fail(f"{path}: not an HDF5 file")
    try:
        return h5py.File(path, "r")
    except OSError as e:
        fail(f"{path}: cannot be read ({e})")


def merged(path, group="train"):
    """Check that path is a merged sweep file (/runs) with a run that holds /group (None: any
    run); return path."""
    with open_hdf5(path) as f:
        if "runs" not in f or not isinstance(f["runs"], h5py.Group):
            what = ("a run file" if "config" in f.attrs else "not a result file of the program")
            fail(f"{path}: no /runs: {what}, where a merged sweep file (results/SWEEP.h5) belongs")
        runs = f["runs"]
        if not len(runs):
            fail(f"{path}: /runs holds no run")
        if group and not any(isinstance(g, h5py.Group) and group in g and "config" in g.attrs
                             for g in runs.values()):
            fail(f"{path}: no run under /runs holds /{group}")
    return path


def run_file(path, group="train"):
    """Check that path is one run's file with /group (not a merged file); return path."""
    with open_hdf5(path) as f:
        if "runs" in f:
            fail(f"{path}: a merged sweep file, where one run's file belongs (give its run files, "
                 f"results/SWEEP/*.h5)")
        if "config" not in f.attrs:
            fail(f"{path}: not a result file of the program (no config attribute)")
        if group not in f:
            fail(f"{path}: no /{group}")
    return path
