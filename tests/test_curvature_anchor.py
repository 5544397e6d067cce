#!/usr/bin/python3
"""test_curvature_anchor.py — the PyTorch anchor (tests/oracles/curvature_anchor.py, docs/curvature.md)
models the program's model: on a `stability dump --hvp` of the anchor's setting at a reduced
size (L = 2, d = 32, d_ff = 64, n = 16, B = 4; Post-LN with the anchor's Xavier-uniform
embedding, Pre-LN with the program's N(0, 1/d)), the script's loss equals the dump's within
1e-12 relative, its gradient within 1e-10 of the largest entry, and its exact double-backward
H·v equals the program's kink-checked difference within 1e-6 (the bound of design.md §10).
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAB = os.path.join(ROOT, "stability")
SIZE = ["model.layers=2", "model.d_model=32", "model.d_ff=64", "model.seq_len=16", "data.batch=4",
        "probe.curvature_iters=4"]
ARGS = ["--layers", "2", "--d", "32", "--d-ff", "64", "--n", "16", "--batch", "4"]


def main():
    corpus = os.path.join(ROOT, "results", "licenses.txt")
    if not os.path.exists(corpus):
        subprocess.run([os.path.join(ROOT, "setup", "corpus.sh")], check=True,
                       stdout=subprocess.DEVNULL)
    fails = passed = 0
    with tempfile.TemporaryDirectory() as d:
        for placement, embed in (("post", "xavier_uniform"), ("pre", "normal")):
            out = os.path.join(d, f"{placement}.h5")
            sets = SIZE + [f"model.placement={placement}", f"init.embed={embed}",
                           f"data.path={corpus}"]
            cmd = [STAB, "dump", "--config", os.path.join(ROOT, "configs", "atlas.ini"),
                   "--out", out, "--hvp"]
            for s in sets:
                cmd += ["--set", s]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "oracles", "curvature_anchor.py"),
                                "--check", out, "--placement", placement] + ARGS,
                               check=True, capture_output=True, text=True)
            got = json.loads(r.stdout)
            ok = got["loss_rel"] <= 1e-12 and got["grad_rel"] <= 1e-10 and got["hvp_rel"] <= 1e-6
            print(f"{'ok  ' if ok else 'FAIL'} {placement}, embed {embed}: loss {got['loss_rel']:.1e}, "
                  f"gradient {got['grad_rel']:.1e}, H·v {got['hvp_rel']:.1e} (relative)")
            passed += ok
            fails += not ok
    print(f"{passed} passed, {fails} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
