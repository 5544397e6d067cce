"""What the figure tests (tests/test_*_plot.py) share: a count of checks printed as "ok - …" /
"FAIL - …", running the program (./stability, or $STABILITY: a test run against an older
build shows what it catches), and reading the gnuplot script `stability plot --format gp`
writes (its inline data blocks, key entries and panel titles) or an SVG's text."""

import os
import re
import subprocess
import xml.etree.ElementTree as ET

import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.abspath(os.environ.get("STABILITY", os.path.join(REPO, "stability")))
counts = {"passed": 0, "failed": 0}


def check(desc, ok, detail=""):
    """Count one check and print it; detail is printed only when it fails."""
    counts["passed" if ok else "failed"] += 1
    print(("ok - " if ok else "FAIL - ") + desc + (f": {detail}" if detail and not ok else ""))


def summary(name):
    """Print "NAME: N passed, M failed" and return the exit status (1 when any failed)."""
    print(f"{name}: {counts['passed']} passed, {counts['failed']} failed")
    return 1 if counts["failed"] else 0


def run(*args, cwd=REPO):
    """The program with args, one thread, output captured as text."""
    return subprocess.run([BIN, *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, STABILITY_THREADS="1"))


def blocks(gp, word=float):
    """{name: rows} of a gnuplot script's inline data blocks, each word through word (float)."""
    out = {}
    for name, body in re.findall(r"^\$(\w+) << EOD\n(.*?)^EOD$", gp, re.S | re.M):
        out[name] = [[word(x) for x in line.split()] for line in body.splitlines() if line.strip()]
    return out


def key_titles(gp):
    """The key's entries of a gnuplot script: the keyentry titles."""
    return re.findall(r"keyentry with [^,]*? title '((?:[^']|'')*)'", gp)


def panel_titles(gp):
    """Every `set title` of a gnuplot script, its \\n as line breaks."""
    return [t.replace("\\n", "\n") for t in re.findall(r'^set title "((?:[^"\\]|\\.)*)"', gp, re.M)]


def svg_text(path):
    """Every text of an SVG (a well-formed XML file), joined by newlines."""
    return "\n".join("".join(e.itertext()) for e in ET.parse(path).getroot().iter()
                     if e.tag.endswith("text"))


def sweep_in(tmp, name, text, jobs="2"):
    """Run the sweep file text as NAME inside tmp (harness.repo_like): its results/NAME/ and
    results/NAME.h5 are tmp's, never the repository's, and a relative base or data.path resolves
    as in the repository. Returns (the completed process, the merged file)."""
    harness.repo_like(tmp)
    ini = os.path.join(tmp, name + ".ini")
    with open(ini, "w") as f:
        f.write(text)
    r = run("sweep", ini, "--jobs", jobs, "--quiet", cwd=tmp)
    return r, os.path.join(tmp, "results", name + ".h5")
