#!/usr/bin/env bash
# install-deps.sh — install the Debian packages stability needs, only those that are missing.
#
#   setup/install-deps.sh          runtime set (build, run, plot)
#   setup/install-deps.sh --test   runtime set + what `make test` needs (Check, PyTorch, h5py)
#
# It runs on every `make run` / `make test`, so when nothing is missing it only asks dpkg and exits 0.
# Package names: docs/design.md §7.
set -euo pipefail

RUNTIME_PKGS=(build-essential pkg-config libgsl-dev libopenblas-dev libhdf5-dev libinih-dev gnuplot-nox)
# SHA-256 of the data a run reads (data_sha256 in every result file): OpenSSL's libcrypto
RUNTIME_PKGS+=(libssl-dev)
# the fast bfloat16 path (train.gemm_path = onednn): oneDNN's bf16 matmul (src/nn/gemm_dnnl.c)
RUNTIME_PKGS+=(libdnnl-dev)
# result files read from Python (tools/same_results.py; the files are h5py-readable by design)
RUNTIME_PKGS+=(python3-h5py python3-numpy)
# BLEU (runtime/bleu.py: stability translate, train.bleu_every): sentencepiece detokenises,
# NLTK's corpus_bleu scores
RUNTIME_PKGS+=(python3-sentencepiece python3-nltk)
TEST_PKGS=(check python3-torch python3-h5py python3-numpy)
# tests/test_plot_keys.py reads the PNG gnuplot drew (Pillow)
TEST_PKGS+=(python3-pil)
# the translation corpus' tools, for tests/test_corpus.sh (msgfmt/msgunfmt, spm_train)
TEST_PKGS+=(gettext sentencepiece)
# a real single-node Slurm cluster for tests/test_slurm.sh (slurm-wlm would pull MySQL etc.)
TEST_PKGS+=(slurmctld slurmd slurm-client munge)

usage() {
    echo "usage: $0 [--test]" >&2
    echo "  installs the missing Debian packages of stability (with --test also the test-only ones)" >&2
}

want=("${RUNTIME_PKGS[@]}")
for arg in "$@"; do
    case "$arg" in
        --test) want+=("${TEST_PKGS[@]}") ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install-deps.sh: unknown argument '$arg'" >&2; usage; exit 2 ;;
    esac
done

# How long to wait for another apt's locks (see below), checked before anything else.
LOCK_WAIT=${STABILITY_APT_LOCK_WAIT:-600}
RETRY=${STABILITY_APT_RETRY:-5}
# whole seconds, or exit 2 ('abc' made the time check an error, which read as "keep waiting")
for var in STABILITY_APT_LOCK_WAIT:"$LOCK_WAIT" STABILITY_APT_RETRY:"$RETRY"; do
    if ! [[ "${var#*:}" =~ ^[0-9]{1,6}$ ]]; then
        echo "install-deps.sh: ${var%%:*}: not a whole number of seconds (0-999999): '${var#*:}'" >&2
        exit 2
    fi
done
LOCK_WAIT=$((10#$LOCK_WAIT))
RETRY=$((10#$RETRY))

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps.sh: dpkg-query not found: this script supports Debian/Ubuntu only." >&2
    echo "install-deps.sh: install by hand: ${want[*]}" >&2
    exit 1
fi

# A package counts as present only when dpkg says "install ok installed" (not merely known,
# half-configured or removed with its config files left).
missing=()
for pkg in "${want[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [ "$status" != "install ok installed" ]; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

echo "install-deps.sh: installing missing Debian packages: ${missing[*]}"

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "install-deps.sh: not root and sudo is not available; as root run:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi

# Another apt may hold its locks (a fresh machine runs unattended upgrades at boot): wait for
# it, up to STABILITY_APT_LOCK_WAIT seconds (600), instead of failing at once. apt-get waits
# for the dpkg locks itself with DPkg::Lock::Timeout; 'apt-get update' takes the lists lock,
# which it does not wait for, so it is tried again every STABILITY_APT_RETRY seconds (5) while
# its error is a lock.
APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$LOCK_WAIT")
export DEBIAN_FRONTEND=noninteractive
apt_log=$(mktemp)
trap 'rm -f "$apt_log"' EXIT
# The wait is measured by the clock (bash's SECONDS), not by adding up RETRY: with a retry of
# 0 s the sum never grew and the loop never ended.
start=$SECONDS
until "${APT[@]}" update 2>&1 | tee "$apt_log"; [ "${PIPESTATUS[0]}" -eq 0 ]; do
    waited=$((SECONDS - start))
    if ! grep -qE 'Could not get lock|Unable to lock' "$apt_log" || [ "$waited" -ge "$LOCK_WAIT" ]; then
        echo "install-deps.sh: 'apt-get update' failed (network, apt sources, or apt's lock held" \
             "for more than $LOCK_WAIT s?)" >&2
        exit 1
    fi
    echo "install-deps.sh: another apt holds its lock; trying again in $RETRY s" \
         "($waited of $LOCK_WAIT s waited)" >&2
    sleep "$RETRY"
done
if ! "${APT[@]}" install -y --no-install-recommends "${missing[@]}"; then
    echo "install-deps.sh: 'apt-get install' failed for: ${missing[*]}" >&2
    exit 1
fi

# Verify: apt can exit 0 and still leave a package unconfigured.
still=()
for pkg in "${missing[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || still+=("$pkg")
done
if [ "${#still[@]}" -ne 0 ]; then
    echo "install-deps.sh: still not installed after apt-get: ${still[*]}" >&2
    exit 1
fi
echo "install-deps.sh: done"
