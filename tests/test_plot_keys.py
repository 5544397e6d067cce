#!/usr/bin/python3
"""test_plot_keys.py — a key strip holds the rows gnuplot lays out (src/report/plot_layout.c,
plot_key_rows), from the repository root: /usr/bin/python3 tests/test_plot_keys.py

The program reserves a strip under the panels for the key and tells gnuplot its rows
(`set key ... maxrows R`); gnuplot decides the columns itself, by its own estimate of a title's
width, and when fewer fit than the program assumed it lays the key out in more rows than the
strip holds: the last rows fall off the canvas (Fig. 2's BLEU figure lost its fifth entry so).
Here five tiny runs whose keys are 56-73 bytes long (two columns by the glyphs' width, one by
gnuplot's count) are drawn (`stability plot --format gp`), the script rendered by gnuplot to a
PNG and read back (Pillow), and:

1. the strip's text bands (rows of dark pixels separated by blank ones, between the strip's
   screen margins) number exactly R, every entry on a row of its own (5 entries, R = 5);
2. nothing is drawn on the canvas's last 4 pixel rows (a key falling off the bottom).
The PDF terminal's font is the same share of its canvas (src/report/plot.c), so its layout is
this one's.
Prints "ok - ..." / "FAIL - ..." per check, then "plot keys: N passed, M failed".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, check, run, key_titles, summary  # noqa: E402

RUNS = [  # the keys differ in six items, so every key names all six
    "model.placement=post train.optimizer=adam train.warmup=1 train.lr=1e-3 "
    "model.activation=relu train.schedule=constant",
    "model.placement=pre train.optimizer=sgd train.warmup=2 train.lr=2e-3 "
    "model.activation=gelu train.schedule=inverse_sqrt",
    "model.placement=post train.optimizer=gi_adam train.warmup=3 train.lr=3e-3 "
    "model.activation=gelu train.schedule=constant",
    "model.placement=pre train.optimizer=stableadamw train.warmup=1 train.lr=4e-3 "
    "model.activation=relu train.schedule=inverse_sqrt",
    "model.placement=post train.optimizer=radam train.warmup=2 train.lr=5e-3 "
    "model.activation=gelu train.schedule=inverse_sqrt",
]


def png_gray(path):
    """(width, height, rows of grey levels 0-255) of a PNG (Pillow)."""
    img = Image.open(path).convert("L")
    w, h = img.size
    px = list(img.getdata())
    return w, h, [px[y * w:(y + 1) * w] for y in range(h)]


def bands(rows, y0, y1):
    """Runs of rows in [y0, y1) holding a dark pixel (< 100), separated by blank rows."""
    n, inside = 0, False
    for y in range(y0, y1):
        dark = any(v < 100 for v in rows[y])
        n += dark and not inside
        inside = dark
    return n


def main():
    tmp = tempfile.mkdtemp(prefix="plot_keys_")
    try:
        return checks(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def checks(tmp):
    files = []
    for i, spec in enumerate(RUNS):
        args = ["--config", os.path.join(REPO, "configs", "tiny.ini"), "--set", "train.steps=3"]
        for kv in spec.split():
            args += ["--set", kv]
        path = os.path.join(tmp, f"r{i}.h5")
        r = run(*args, "--out", path, "--quiet")
        if r.returncode:
            raise SystemExit(f"stability failed: {r.stderr}")
        files.append(path)
    out = os.path.join(tmp, "gp")
    r = run("plot", *files, "--out", out, "--format", "gp", "--quiet")
    check("stability plot --format gp exits 0", r.returncode == 0, r.stderr)
    gp = open(os.path.join(out, "r0-loss.gp")).read()
    keys = key_titles(gp)
    longest = max(len(k.encode()) for k in keys)
    check("five keys of 63 bytes or more at the longest", len(keys) == 5 and longest >= 63,
          f"{len(keys)} keys, longest {longest}")
    key = re.search(r"^set key [^\n]*maxrows (\d+)", gp, re.M)   # the strip: the margins before it
    top, bottom = re.findall(r"set tmargin at screen ([\d.]+)\nset bmargin at screen ([\d.]+)\n",
                             gp[:key.start()])[-1]
    top, bottom, reserved = float(top), float(bottom), int(key.group(1))
    png = os.path.join(tmp, "loss.png")
    g = subprocess.run(["gnuplot"], input=f"set output '{png}'\n" + gp, text=True,
                       capture_output=True)
    check("gnuplot renders the script", g.returncode == 0 and os.path.getsize(png) > 0, g.stderr)
    w, h, rows = png_gray(png)
    y0, y1 = int((1 - top) * h), int((1 - bottom) * h) + 1
    laid = bands(rows, y0, min(y1, h))
    check(f"the key strip holds the {reserved} rows reserved, one entry a row", laid == reserved
          and reserved == 5, f"{laid} text rows in the strip, {reserved} reserved")
    last = sum(v < 100 for y in range(h - 4, h) for v in rows[y])
    check("nothing drawn on the canvas's last 4 pixel rows", last == 0, f"{last} dark pixels")
    return summary("plot keys")


if __name__ == "__main__":
    sys.exit(main())
