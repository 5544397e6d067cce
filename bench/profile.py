#!/usr/bin/python3
"""profile.py — where an update's time goes beyond the GEMMs (docs/performance.md, "Beyond the
kernel"): `perf record -e cpu-clock` of one benchmark case in its own child (`build/bench/bench
--run CASE`), its samples grouped by what they compute.

    /usr/bin/python3 bench/profile.py u_lm_post_d256 [--f32] [--threads 2] [--steps 30]

Prints the case's median ms per update (as timed under perf, which slows it a little) and the
share of all the process's samples in each group, then the largest symbols left in "other".
Needs `perf` (Debian's linux-perf) and `make build/bench/bench`.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (group, test on (symbol, source file)); the first that matches takes the sample.
GROUPS = [
    ("GEMM micro-kernel", lambda s, f: re.match(r"[ds]gemm_(small_)?kernel", s)),
    ("GEMM packing, beta, driver", lambda s, f: re.match(r"[ds]gemm_", s)
     or s in ("fill_double", "fill_float")),
    ("waiting, the OS", lambda s, f: s.startswith("[k]") or "yield" in s or s == "worker"
     or "clock_gettime" in s),
    ("Adam", lambda s, f: f == "optim.c" or s == "update_part"),
    ("exp, log (libm)", lambda s, f: re.search(r"exp|log", s) and f.startswith(("e_", "w_", "math"))),
    ("memset, memmove", lambda s, f: s.startswith(("__memset", "__memmove", "__memcpy"))),
    ("norms", lambda s, f: f == "norm.c"),
    ("loss, logits", lambda s, f: f == "loss.c"),
    ("attention outside its GEMMs", lambda s, f: f == "attention.c"),
    ("bias, ReLU, residuals, embedding", lambda s, f: f in ("linear.c", "ffn.c", "sublayer.c",
                                                            "stack.c", "vec.h")),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case")
    ap.add_argument("--f32", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profile_") as tmp:
        profile(a, os.path.join(tmp, "perf.data"))


def profile(a, data):
    """Record case a.case into the file data, then print its groups."""
    cmd = [os.path.join(REPO, "build", "bench", "bench"), "--run", a.case, "--threads",
           str(a.threads), "--steps", str(a.steps), "--warmup", "3"] + (["--f32"] if a.f32 else [])
    r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-o", data, "--"]
                       + cmd, capture_output=True, text=True)
    res = re.search(r"ms_median=([\d.]+)", r.stdout + r.stderr)
    if r.returncode or not res:
        sys.exit(f"profile.py: the case did not run: {r.stderr.strip()[-400:]}")
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym,srcfile",
                          "--stdio"], capture_output=True, text=True).stdout
    share, other = collections.Counter(), collections.Counter()
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\[.\])\s+(\S+)\s*(\S*)", line)
        if not m:
            continue
        pct, sym, src = float(m.group(1)), m.group(3), m.group(4)
        sym = "[k] " + sym if m.group(2) == "[k]" else sym
        group = next((g for g, test in GROUPS if test(sym, src)), None)
        share[group or "other"] += pct
        if not group:
            other[f"{sym} ({src})" if src else sym] += pct
    print(f"{a.case}{' float32' if a.f32 else ''}, {a.threads} thread(s): "
          f"{float(res.group(1)):.1f} ms per update under perf")
    for g in [g for g, _ in GROUPS] + ["other"]:
        print(f"{share[g]:5.1f} %  {g}")
    print("other, largest:", ", ".join(f"{k} {v:.2f} %" for k, v in other.most_common(5)))


if __name__ == "__main__":
    main()
