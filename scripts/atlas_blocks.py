#!/usr/bin/python3
"""atlas_blocks.py A.h5 B.h5 — two stability atlases of different blocks cell by cell
(docs/atlas.md, docs/proxies.md): the 2017 block's (experiments/atlas_f32.ini) beside today's
(experiments/atlas_llama.ini). atlas_blocks.py B.h5 — one such atlas's table.

scripts/atlas_compare.py pairs the runs of two atlases by name, which two precisions of one
grid share. Two blocks do not: today's block puts RMSNorm where the 2017 block has LayerNorm,
the norm is in the run's name, and the program names such a scheme with its norm ("post+rmsnorm",
which its table of schemes does not rank). This script takes each run's scheme without the
block's "+rmsnorm" (so Post-LN with RMSNorm is the cell of Post-LN, DyT and the norm-free schemes
keep their names), pairs the runs by their cell — scheme, depth, learning rate, warm-up and seed,
all read from the stored configuration — and prints exactly atlas_compare.py's report (final
losses, status, every cell whose verdict moves, the order of the schemes by LR sensitivity),
with the cell as each run's name. With one file it prints scripts/atlas_table.py's table with
the rows in the atlas's order ("post+rmsnorm" where "post" stands). Options as those scripts'.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atlas_compare   # noqa: E402
import atlas_table     # noqa: E402

BLOCK_NORM = "+rmsnorm"
_load_by_name = atlas_compare.load
_schemes_of = atlas_table.schemes_of


def base_scheme(name):
    """The scheme of the table a run's scheme is, without today's block's norm."""
    return name[:-len(BLOCK_NORM)] if name.endswith(BLOCK_NORM) else name


def table_ranks(stability):
    """{scheme: atlas rank} of the program's table (`stability info --schemes`)."""
    r = subprocess.run([stability, "info", "--schemes"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{stability} info --schemes: {r.stderr.strip() or 'failed'}")
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    col = rows[0].index("atlas_rank")
    return {row[0]: int(row[col]) for row in rows[1:]}


def schemes_ranked(stability, path):
    """atlas_table.schemes_of, each run ranked as its base scheme."""
    ranks = table_ranks(stability)
    return {run: (s, ranks.get(base_scheme(s), rank))
            for run, (s, rank) in _schemes_of(stability, path).items()}


def load_by_cell(stability, path):
    """The training runs of one merged atlas file, keyed by their cell
    'SCHEME_L{L}_lr{lr}_w{warm-up}_s{seed}' (SCHEME without '+rmsnorm'); two runs of
    one cell are an error."""
    ranks = table_ranks(stability)
    out = {}
    for name, r in _load_by_name(stability, path).items():
        r["scheme"] = base_scheme(r["scheme"])
        r["rank"] = ranks.get(r["scheme"], r["rank"])
        key = f"{r['scheme']}_L{r['L']}_lr{r['lr']:g}_w{r['warmup']}_s{r['seed']}"
        if key in out:
            sys.exit(f"{path}: runs {out[key]['name']} and {name} are the same cell ({key})")
        out[key] = r
    return out


if __name__ == "__main__":
    files = [a for a in sys.argv[1:] if a.endswith(".h5")]
    if len(files) == 1:
        atlas_table.schemes_of = schemes_ranked
        sys.exit(atlas_table.main())
    atlas_compare.load = load_by_cell
    sys.exit(atlas_compare.main())
