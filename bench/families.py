#!/usr/bin/python3
"""families.py — OpenBLAS's kernel families on this machine, at the model's GEMM shapes.

    make build/bench/families && /usr/bin/python3 bench/families.py [--families A,B,...]
        [--rounds R] [--reps N] [--cuts]

Runs build/bench/families under each family (OPENBLAS_CORETYPE; a family OpenBLAS will not load
by name, as 0.3.21's Cooperlake, is used where OpenBLAS detects it), alternately: round r runs
every family once, in an order rotated each round, so a machine shared with others slows all
families alike. Prints, per element type, the median over rounds of each shape's median time
(one thread, ms) and GFLOP/s, then which families give the same bits on random operands and
the largest error against a long double sum (in ε·Σ|a·b|). --cuts also prints, per family,
which cuts of C give the whole call's bytes (nn/gemm.c's layout; SkylakeX's and Cooperlake's
blocks beyond OpenBLAS's small-matrix size, as nn/gemm.c keeps them). Numbers in
docs/performance.md ("Kernel families") come from this.
"""
import argparse
import os
import statistics
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bench", "families")
SMALL_PATH = {"SkylakeX": 1e6 + 1, "Cooperlake": 1e6 + 1}   # nn/gemm.c's min_call


def env_for(family, forced):
    # OPENBLAS_VERBOSE=2: OpenBLAS says on stderr when it does not know the name it is told
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_VERBOSE="2")
    env.pop("OPENBLAS_CORETYPE", None)
    if forced:
        env["OPENBLAS_CORETYPE"] = family
    return env


def run(family, forced, *args, stderr=None):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, env=env_for(family, forced))
    if p.returncode:
        sys.exit(f"families.py: {TOOL} {' '.join(args)} failed: {p.stderr}")
    if stderr is not None:
        stderr.append(p.stderr)
    return [line.split("\t") for line in p.stdout.splitlines()]


def how_to_load(family):
    """True: by OPENBLAS_CORETYPE; False: OpenBLAS detects it here (and does not take its name,
    which it says on stderr); None: not here."""
    for forced in (True, False):
        err = []
        rows = run(family, forced, "bits", stderr=err)[:1]
        if rows and rows[0][0] == family and "not found" not in err[0]:
            return forced
    return None


def cpu_name():
    info = {}
    with open("/proc/cpuinfo") as f:
        for ln in f:
            if ":" in ln:
                k, v = ln.split(":", 1)
                info.setdefault(k.strip(), v.strip())
    return (f"{info.get('model name', '?')} (family {info.get('cpu family', '?')}, model "
            f"{info.get('model', '?')}), {os.cpu_count()} CPUs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="Haswell,SkylakeX,Cooperlake,Zen,Sandybridge")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cuts", action="store_true")
    a = ap.parse_args()
    if not os.access(TOOL, os.X_OK):
        sys.exit("families.py: build it first: make build/bench/families")
    print(f"# CPU: {cpu_name()}")
    fams = {}
    for f in a.families.split(","):
        how = how_to_load(f)
        if how is None:
            print(f"# {f}: OpenBLAS does not load it here (neither by name nor detected)")
        else:
            fams[f] = how
            print(f"# {f}: loaded {'by OPENBLAS_CORETYPE' if how else 'as detected (not by name)'}")
    names = list(fams)
    for t, flag in (("float64", []), ("float32", ["--f32"])):
        times = {}
        flops = {}
        for r in range(a.rounds):
            for f in names[r % len(names):] + names[:r % len(names)]:
                for core, shape, ms, gf in run(f, fams[f], "time", "--reps", str(a.reps), *flag):
                    times.setdefault((f, shape), []).append(float(ms))
                    flops[shape] = float(gf) * float(ms)   # GFLOP/s · ms: the shape's work
        shapes = list(dict.fromkeys(s for _, s in times))
        print(f"\n{t}: ms per call (GFLOP/s), median of {a.rounds} rounds of {a.reps} "
              "calls each, 1 thread")
        print("| shape | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        total = {f: 0.0 for f in names}
        for s in shapes:
            med = {f: statistics.median(times[(f, s)]) for f in names}
            for f in names:
                total[f] += med[f]
            print(f"| {s} | " + " | ".join(f"{med[f]:.3f} ({flops[s] / med[f]:.0f})"
                                           for f in names) + " |")
        print("| sum | " + " | ".join(f"{total[f]:.1f}" for f in names) + " |")
        bits = {f: run(f, fams[f], "bits", *flag) for f in names}
        print(f"\n{t}: shapes with the same bits (of {len(bits[names[0]])}); largest error, ε·Σ|a·b|")
        for i, f in enumerate(names):
            same = [f"{g} {sum(x[2] == y[2] for x, y in zip(bits[f], bits[g]))}" for g in names[i + 1:]]
            worst = max(float(x[3]) for x in bits[f])
            print(f"  {f}: error ≤ {worst:.2f}" + (f"; same as {', '.join(same)}" if same else ""))
        if a.cuts:
            print(f"\n{t}: cuts of C that give the whole call's bytes (family, side, multiple)")
            for f in names:
                mc = str(SMALL_PATH.get(f, 0))
                for row in run(f, fams[f], "cuts", "--min-call", mc, *flag):
                    print("  " + " ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
