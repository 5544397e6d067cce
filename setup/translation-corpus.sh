#!/usr/bin/env bash
# translation-corpus.sh — the English->German parallel corpus of the encoder-decoder experiment,
# built offline from the German gettext catalogs of a pinned list of Debian 12 packages, with one
# joint 8000-piece BPE (sentencepiece) and every sentence encoded as ids.
#
#   setup/translation-corpus.sh [OUT] [--vocab N] [--mo-dir DIR] [--force]
#
# OUT (default results/translation) gets train.{en,de} valid.{en,de} (clean text, one sentence a
# line), train.{en,de}.ids valid.{en,de}.ids (space-separated sentencepiece ids, no BOS/EOS),
# spm.model, spm.vocab and manifest.txt (packages and versions, pair counts after every cleaning
# stage, split sizes, token counts, sha256 of every file). Ids: 0 pad, 1 unk, 2 BOS, 3 EOS.
# Run again, it checks the manifest and returns at once when OUT is complete and up to date.
# Cleaning rules: setup/translation_pairs.py. Needs root or sudo to install missing packages.
set -euo pipefail
export LC_ALL=C

# The catalogs: only the .mo files that `dpkg -L` lists for these packages under
# /usr/share/locale/de/LC_MESSAGES are read, so the corpus does not depend on what else is
# installed. Chosen for many well-formed messages per installed megabyte: pure translation
# packages (*-l10n, *-locales), Essential tools, and git/make/gettext, which a developer has.
# net-tools' catalog is Latin-1.
PINNED=(apt bash binutils-common cflow-l10n coreutils diffutils dpkg e2fsprogs-l10n findutils
        gcc-12-locales gdbm-l10n gettext gettext-base git gnupg-l10n grep gutenprint-locales
        krb5-locales libapt-pkg6.0 libc-l10n libgphoto2-l10n libgpg-error-l10n libvirt-l10n make
        net-tools sed tar util-linux-locales)
TOOLS=(gettext sentencepiece python3)   # msgunfmt msgconv; spm_*; /usr/bin/python3
# The reference build (Debian 12.11, 2026-11-22): its combined sha256 of the four .ids files and
# the versions it read. A stable update of a pinned package can change its catalog and so the
# corpus; the script then names the packages whose version differs.
REF_IDS_SHA256=3b73ceedd0de405750a134bf0704ce1782e1d0ad85d57727f698de4d246d8435
REF_VERSIONS="apt=2.6.1 bash=5.2.15-2+b8 binutils-common=2.40-2 cflow-l10n=1:1.7-4 coreutils=9.1-1
diffutils=1:3.8-4 dpkg=1.21.22 e2fsprogs-l10n=1.47.0-2 findutils=4.9.0-4
gcc-12-locales=12.2.0-14+deb12u1 gdbm-l10n=1.23-3 gettext=0.21-12 gettext-base=0.21-12
git=1:2.39.5-0+deb12u3 gnupg-l10n=2.2.40-1.1+deb12u2 grep=3.8-5
gutenprint-locales=5.3.4.20220624T01008808d602-1 krb5-locales=1.20.1-2+deb12u3
libapt-pkg6.0=2.6.1 libc-l10n=2.36-9+deb12u14 libgpg-error-l10n=1.46-1 libgphoto2-l10n=2.5.30-1
libvirt-l10n=9.0.0-4+deb12u2 make=4.3-4.1 net-tools=2.10-0.1+deb12u2 python3=3.11.2-1+b1
sed=4.9-1 sentencepiece=0.1.97-3+b1 tar=1.34+dfsg-1.2+deb12u1 util-linux-locales=2.38.1-5+deb12u3"
PYTHON=/usr/bin/python3
MAX_CHARS=256          # a pair with a longer side (in characters, after cleaning) is dropped
VALID_PERCENT=5        # valid when sha256(source) mod 100 < this
LOCALE_DIR=/usr/share/locale/de/LC_MESSAGES
IDS_FILES=(train.en.ids train.de.ids valid.en.ids valid.de.ids)
OUT_FILES=(train.en train.de valid.en valid.de "${IDS_FILES[@]}" spm.model spm.vocab)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
helper=$here/translation_pairs.py

usage() {
    cat <<EOF
usage: $0 [OUT] [--vocab N] [--mo-dir DIR] [--force]
  Builds the English->German corpus (gettext catalogs of pinned Debian packages, joint BPE)
  into OUT (default results/translation). Returns at once when OUT is complete and current.
  --vocab N     sentencepiece vocabulary size (default 8000)
  --mo-dir DIR  read every DIR/*.mo instead of the pinned packages' catalogs (tests)
  --force       rebuild even when the manifest says OUT is complete
  Exit: 0 ok, 1 runtime failure (apt, tools, I/O), 2 bad usage.
EOF
}

die() { echo "translation-corpus.sh: $*" >&2; exit 1; }
bad_usage() { echo "translation-corpus.sh: $*" >&2; usage >&2; exit 2; }

out=results/translation vocab=8000 mo_dir="" force=0 have_out=0
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --vocab) [ $# -ge 2 ] || bad_usage "--vocab needs a value"; vocab=$2; shift ;;
        --mo-dir) [ $# -ge 2 ] || bad_usage "--mo-dir needs a directory"; mo_dir=$2; shift ;;
        --force) force=1 ;;
        -*) bad_usage "unknown option '$1'" ;;
        *) [ "$have_out" -eq 0 ] || bad_usage "more than one OUT"; out=$1; have_out=1 ;;
    esac
    shift
done
if ! [[ "$vocab" =~ ^[1-9][0-9]{0,6}$ ]] || [ "$vocab" -le 4 ]; then
    bad_usage "--vocab: '$vocab' is not an integer > 4"
fi
if [ -n "$mo_dir" ]; then
    [ -d "$mo_dir" ] || bad_usage "--mo-dir: '$mo_dir' is not a directory"
    mo_dir=$(cd "$mo_dir" && pwd)
fi

# pkg_version NAME: the installed version, or nothing.
pkg_version() {
    local s
    s=$(dpkg-query -W -f='${Status}\t${Version}' "$1" 2>/dev/null || true)
    [ "${s%%$'\t'*}" = "install ok installed" ] && printf '%s\n' "${s#*$'\t'}"
    return 0
}

# apt_install PKG...: installs those not installed (as root, else with sudo).
apt_install() {
    local missing=() p sudo=()
    for p in "$@"; do [ -n "$(pkg_version "$p")" ] || missing+=("$p"); done
    [ "${#missing[@]}" -gt 0 ] || return 0
    echo "translation-corpus.sh: installing ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || die "not root and no sudo; as root run: apt-get install ${missing[*]}"
        sudo=(sudo)
    fi
    local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
    "${apt[@]}" -qq update || die "apt-get update failed"
    "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" \
        || die "apt-get install failed for: ${missing[*]}"
    for p in "${missing[@]}"; do
        [ -n "$(pkg_version "$p")" ] || die "$p is still not installed after apt-get"
    done
}

# packages: the Debian packages whose versions the corpus depends on, one "package NAME VERSION"
# line each (the pinned catalogs only when they are read).
packages() {
    local p list=("${TOOLS[@]}")
    [ -n "$mo_dir" ] || list+=("${PINNED[@]}")
    for p in $(printf '%s\n' "${list[@]}" | sort -u); do
        printf 'package %s %s\n' "$p" "$(pkg_version "$p")"
    done
}

# check_md5 PKG FILE: FILE is the package's own copy (dpkg's md5sums), not a local edit.
check_md5() {
    local sums want
    sums=$(dpkg-query --control-path "$1" md5sums 2>/dev/null) || die "no md5sums for $1"
    want=$(awk -v f="${2#/}" '$2 == f { print $1 }' "$sums")
    if [ -z "$want" ] || [ "$want" != "$(md5sum < "$2" | cut -d' ' -f1)" ]; then
        die "$2 is not package $1's copy (dpkg md5sums); reinstall $1"
    fi
}

# catalogs: "LABEL PATH" per catalog read, sorted: the pinned packages' German .mo files
# (symlinks skipped: iso-codes-style aliases would count a catalog twice), or DIR/*.mo.
catalogs() {
    local p f n
    if [ -n "$mo_dir" ]; then
        find "$mo_dir" -maxdepth 1 -name '*.mo' -type f | sort | while read -r f; do
            printf '%s %s\n' "$(basename "$f")" "$f"
        done
        return
    fi
    for p in "${PINNED[@]}"; do
        n=0
        while read -r f; do
            [ ! -L "$f" ] || continue
            [ -f "$f" ] || die "dpkg -L $p lists $f, but it is not on disk (a dpkg" \
                "path-exclude for /usr/share/locale in /etc/dpkg/dpkg.cfg.d/?)"
            check_md5 "$p" "$f"
            printf '%s/%s %s\n' "$p" "$(basename "$f")" "$f"
            n=$((n + 1))
        done < <(dpkg -L "$p" | grep -E "^$LOCALE_DIR/[^/]+\\.mo\$" | sort)
        [ "$n" -gt 0 ] || die "package $p ships no $LOCALE_DIR/*.mo (the pinned list needs a look)"
    done
}

# config_key: sha256 of everything the output depends on: this script, the helper and the
# module it reads files with, the parameters, the package versions and (with --mo-dir) the
# catalogs' bytes.
config_key() {
    local sums   # a file missing is an error, never a key that silently leaves it out
    sums=$(sha256sum "${BASH_SOURCE[0]}" "$helper" "$here/../runtime/userfile.py") ||
        die "cannot hash the corpus builder's own files (setup/, runtime/userfile.py)"
    {
        echo "$sums" | cut -d' ' -f1
        echo "vocab $vocab max_chars $MAX_CHARS valid_percent $VALID_PERCENT mo_dir ${mo_dir:+yes}"
        packages
        if [ -n "$mo_dir" ]; then catalogs | while read -r _ f; do sha256sum < "$f"; done; fi
    } | sha256sum | cut -d' ' -f1
}

# up_to_date KEY: OUT/manifest.txt has this key and every file it lists has its sha256.
up_to_date() {
    local m=$out/manifest.txt
    [ -f "$m" ] && grep -qx "key $1" "$m" || return 1
    awk '$1 == "sha256" { print $2 "  " $3 }' "$m" | (cd "$out" && sha256sum -c --status)
}

# extract: every catalog through msgunfmt | msgconv into $tmp/po/NNNN.po (UTF-8, whatever the
# catalog's charset); writes the helper's LABEL=FILE arguments to $tmp/args.
extract() {
    local i=0 label f po
    catalogs > "$tmp/catalogs"
    [ -s "$tmp/catalogs" ] || die "no catalogs found${mo_dir:+ in $mo_dir}"
    mkdir -p "$tmp/po"
    : > "$tmp/args"
    while read -r label f; do
        i=$((i + 1))
        po=$(printf '%s/po/%04d.po' "$tmp" "$i")
        { msgunfmt "$f" | msgconv --to-code=UTF-8 > "$po"; } 2>>"$tmp/log" \
            || die "msgunfmt | msgconv failed on $f: $(tail -n 3 "$tmp/log")"
        printf '%s=%s\n' "$label" "$po" >> "$tmp/args"
    done < "$tmp/catalogs"
}

# train_spm DIR: one joint BPE on both sides of the training split, all sentences, in file
# order, no sampling, one thread; identity normalisation so that every id line decodes back to
# its text. Writes DIR/spm.model and DIR/spm.vocab. It runs inside DIR on links named
# train.en/train.de, because the model stores its input names and prefix: the bytes then do
# not depend on where OUT is.
train_spm() {
    mkdir -p "$1" || die "cannot create $1"
    ln -sf ../train.en ../train.de "$1/"
    (cd "$1" && spm_train --input=train.en,train.de --model_prefix=spm \
        --model_type=bpe --vocab_size="$vocab" --character_coverage=1.0 \
        --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3 \
        --normalization_rule_name=identity --input_sentence_size=0 \
        --shuffle_input_sentence=false --random_seed=1 --num_threads=1) >>"$tmp/log" 2>&1 \
        || die "spm_train failed: $(tail -n 5 "$tmp/log")"
}

# encode: OUT ids of both sides of both splits, and the checks: one id line per text line,
# none empty, and every training line decodes back to its text exactly.
encode() {
    local s l f
    for s in train valid; do
        for l in en de; do
            f=$tmp/$s.$l
            spm_encode --model="$tmp/spm.model" --output_format=id < "$f" > "$f.ids" \
                || die "spm_encode failed on $f"
            [ "$(wc -l < "$f")" -eq "$(wc -l < "$f.ids")" ] || die "$f.ids: line count differs"
            ! grep -q '^$' "$f.ids" || die "$f.ids: an empty line"
            if [ "$s" = train ]; then
                spm_decode --model="$tmp/spm.model" --input_format=id < "$f.ids" | cmp -s - "$f" \
                    || die "$f.ids does not decode back to $f"
            fi
        done
    done
}

# manifest: what was read, every count, every file's sha256 (deterministic: no dates).
manifest() {
    local f
    echo "# English->German corpus from Debian's German gettext catalogs (setup/translation-corpus.sh)"
    echo "# ids: 0 pad, 1 unk, 2 BOS, 3 EOS; the .ids files hold no BOS/EOS."
    echo "key $1"
    echo "source ${mo_dir:-pinned packages}"
    echo "vocab $vocab"
    echo "max_chars $MAX_CHARS"
    echo "valid_percent $VALID_PERCENT"
    packages
    cat "$tmp/stats"
    for f in "${IDS_FILES[@]}"; do
        awk -v f="$f" '{ n += NF; for (i = 1; i <= NF; i++) if ($i == 1) u++; if (NF > m) m = NF }
            END { printf "tokens %s %d unk %d max %d\n", f, n, u, m }' "$tmp/$f"
    done
    for f in "${OUT_FILES[@]}"; do
        printf 'sha256 %s %s\n' "$(sha256sum < "$tmp/$f" | cut -d' ' -f1)" "$f"
    done
    (cd "$tmp" && cat "${IDS_FILES[@]}") | sha256sum | sed 's/ .*//; s/^/ids_sha256 /'
}

# compare_reference: with the pinned packages and 8000 pieces, say whether this is the
# reference corpus, and if not, which versions differ from the reference build's.
compare_reference() {
    [ -z "$mo_dir" ] && [ "$vocab" -eq 8000 ] || return 0
    if grep -qx "ids_sha256 $REF_IDS_SHA256" "$out/manifest.txt"; then
        echo "translation-corpus.sh: identical to the reference corpus"
        return 0
    fi
    local differ
    differ=$(packages | awk '{ print $2 "=" $3 }' | grep -vxF -f <(tr ' ' '\n' <<< "$REF_VERSIONS") \
        | tr '\n' ' ' || true)
    echo "translation-corpus.sh: warning: not the reference corpus (ids_sha256 $REF_IDS_SHA256);" \
        "versions other than the reference build's: ${differ:-none (the scripts changed?)}" >&2
}

# install_out: move the files into OUT, the manifest last (a killed run leaves no manifest).
install_out() {
    local f
    rm -f "$out/manifest.txt"
    for f in "${OUT_FILES[@]}"; do mv -f "$tmp/$f" "$out/$f"; done
    mv -f "$tmp/manifest.txt" "$out/manifest.txt"
}

start=$SECONDS
if [ "$force" -eq 0 ] && up_to_date "$(config_key)"; then
    echo "translation-corpus.sh: $out is complete ($(grep '^ids_sha256' "$out/manifest.txt"))"
    compare_reference
    exit 0
fi
apt_install "${TOOLS[@]}"
[ -n "$mo_dir" ] || apt_install "${PINNED[@]}"
key=$(config_key)
mkdir -p "$out" || die "cannot create $out"
tmp=$(mktemp -d "$out/.build.XXXXXX") || die "cannot write in $out"
trap 'rm -rf "$tmp"' EXIT

extract
mapfile -t args < "$tmp/args"
"$PYTHON" "$helper" --out "$tmp" --max-chars "$MAX_CHARS" --valid-percent "$VALID_PERCENT" \
    "${args[@]}" > "$tmp/stats" || die "translation_pairs.py failed"
if [ ! -s "$tmp/train.en" ] || [ ! -s "$tmp/valid.en" ]; then
    die "a split is empty (too few catalogs?)"
fi
train_spm "$tmp/bpe1"
train_spm "$tmp/bpe2"
for f in spm.model spm.vocab; do
    cmp -s "$tmp/bpe1/$f" "$tmp/bpe2/$f" || die "spm_train is not deterministic here: two runs, two $f"
    mv "$tmp/bpe1/$f" "$tmp/$f"
done
encode
manifest "$key" > "$tmp/manifest.txt"
install_out
grep -E '^(stage|split|tokens|ids_sha256) ' "$out/manifest.txt" | sed 's/^/  /'
echo "translation-corpus.sh: wrote $out in $((SECONDS - start)) s"
compare_reference
