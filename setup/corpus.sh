#!/bin/sh
# corpus.sh — build the byte-level text corpus of the warm-up experiment (configs/warmup_*.ini):
# the licence texts every Debian system ships (/usr/share/common-licenses, package base-files),
# concatenated in name order without the symlinked duplicates: ~240 kB of English.
# Not shipped in the repository; written to results/licenses.txt (or $1).
set -eu
out=${1:-results/licenses.txt}
src=/usr/share/common-licenses
[ -d "$src" ] || { echo "corpus.sh: $src not found (a Debian system has it: package base-files)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
find "$src" -maxdepth 1 -type f | LC_ALL=C sort | xargs cat > "$out"
echo "wrote $out ($(wc -c < "$out") bytes, sha256 $(sha256sum "$out" | cut -c1-16))"
