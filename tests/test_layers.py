#!/usr/bin/python3
"""test_layers.py — src/'s folders are layers (docs/design.md §2): a file includes, and its
object calls, only its own folder and the folders below it, in the order the Makefile states
("# util < nn < … < cli"). From the repository root, after `make`:

    /usr/bin/python3 tests/test_layers.py [--root DIR] [--build DIR]

- every `#include "FOLDER/…"` of src/FOLDER2/*.[ch] names FOLDER at or below FOLDER2;
- every global symbol an object build/FOLDER2/NAME.o leaves undefined (nm -u) that another
  object of the build defines is defined at or below FOLDER2 (the link order: report/plot.c
  once called study/warmup_figure.c through a declaration in report/, which no include shows);
- the checks see something: every layer of the order has sources, and the objects reference
  symbols of other layers.
Only objects of a source that exists count (a moved file's old object may stay in build/).
Prints "ok - …" / "FAIL - …" per check, then "layers: N passed, M failed".
"""
import argparse
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import check, summary  # noqa: E402

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z0-9_]+)/[^"]+"', re.M)


def order(root):
    """The layers, lowest first, from the Makefile's line "# util < nn < … < cli"."""
    with open(os.path.join(root, "Makefile")) as f:
        for line in f:
            if line.startswith("# util <"):
                return [w.strip() for w in line[1:].split("<")]
    return []


def symbols(objs, flag):
    """{object: global symbol names} that one nm lists of objs with flag (--defined-only, -u)."""
    out = subprocess.run(["nm", "-A", "-g", flag] + list(objs), capture_output=True, text=True,
                         check=True).stdout
    got = {obj: set() for obj in objs}
    for line in out.splitlines():
        obj, _, rest = line.partition(":")
        if rest.split():
            got[obj].add(rest.split()[-1])
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--build", default=None)
    a = ap.parse_args()
    build = a.build or os.path.join(a.root, "build")
    layers = order(a.root)
    rank = {name: i for i, name in enumerate(layers)}
    check("the Makefile states the layer order", len(layers) >= 10 and layers[0] == "util"
          and layers[-1] == "cli", str(layers))

    # includes
    bad, seen = [], 0
    for folder in layers:
        for path in sorted(glob.glob(os.path.join(a.root, "src", folder, "*.[ch]"))):
            with open(path, encoding="utf-8") as f:
                for inc in INCLUDE.findall(f.read()):
                    seen += 1
                    if inc in rank and rank[inc] > rank[folder]:
                        bad.append(f"{os.path.relpath(path, a.root)} includes {inc}/")
    check(f"no file includes a higher folder ({seen} includes)", seen > 100 and not bad,
          "; ".join(bad[:10]))

    # the link: who defines what, then who calls what
    objs = {}
    for folder in layers:
        for src in sorted(glob.glob(os.path.join(a.root, "src", folder, "*.c"))):
            obj = os.path.join(build, folder, os.path.basename(src)[:-2] + ".o")
            if os.path.exists(obj):
                objs[obj] = folder
    check("every layer has objects", set(objs.values()) == set(layers),
          f"missing: {sorted(set(layers) - set(objs.values()))} (run make first)")
    owner = {}
    for obj, defined in symbols(objs, "--defined-only").items():
        for sym in defined:
            owner[sym] = (objs[obj], obj)
    bad, across = [], 0
    for obj, undefined in symbols(objs, "-u").items():
        folder = objs[obj]
        for sym in sorted(undefined):
            if sym not in owner:
                continue   # a library's
            where, by = owner[sym]
            across += where != folder
            if rank[where] > rank[folder]:
                bad.append(f"{os.path.relpath(obj, build)} calls {sym} of "
                           f"{os.path.relpath(by, build)}")
    check(f"no object calls a higher folder ({across} calls across folders)",
          across > 100 and not bad, "; ".join(bad[:10]))
    return summary("layers")


if __name__ == "__main__":
    sys.exit(main())
