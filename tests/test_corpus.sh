#!/usr/bin/env bash
# test_corpus.sh — setup/translation-corpus.sh on catalogs made here with msgfmt (--mo-dir):
#   - a UTF-8 catalog with a plural, two contexts of one msgid, a multi-line string, escapes, an
#     identical pair, a format-only pair, a whitespace-only translation and an over-long one;
#   - a Latin-1 catalog with a pair that duplicates one of the first;
#   - 200 generated pairs, so that both splits have sentences;
# and checks the counts after every cleaning stage, the cleaned text, that every id line decodes
# back (spm_decode) to its text, the id range, the manifest, the fast second run, the
# byte-identical rebuild, --help and a bad option.
# Run from anywhere; needs gettext and sentencepiece (the script installs them as root).
# Prints "ok - ..." / "FAIL - ..." per check, then "corpus: N passed, M failed"; exit 1 if M > 0.
# shellcheck disable=SC2317  # functions called through check() look unreachable to shellcheck
set -u
export LC_ALL=C.UTF-8

cd "$(dirname "$0")/.." || exit 1
SCRIPT=setup/translation-corpus.sh
VOCAB=90
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
notok() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() { local desc=$1; shift; if "$@"; then ok "$desc"; else notok "$desc"; fi; }
finish() { echo "corpus: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

tmp=$(mktemp -d /tmp/stability_corpus.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
mo=$tmp/mo
out=$tmp/out
mkdir -p "$mo"

header() {   # header CHARSET
    printf 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=%s\\n"\n' "$1"
    printf '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n'
}
long=$(printf 'very long message %.0s' $(seq 1 15))   # 270 characters
{
    header UTF-8
    cat <<'EOF'
msgid "Open file"
msgstr "Datei öffnen"

msgid "Save the file"
msgstr "Datei speichern"

msgid ""
"Line one\n"
"\n"
"line  two\n"
msgstr ""
"Zeile eins\n"
"Zeile\tzwei\n"

msgid "Say \"hello\"\tnow"
msgstr "Sag „hallo“\tjetzt"

msgid "OK"
msgstr "OK"

msgid "%s: %s"
msgstr "%s – %s"

msgctxt "menu"
msgid "File"
msgstr "Datei"

msgctxt "noun"
msgid "File"
msgstr "Akte"

msgid "Empty"
msgstr " \n "

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"
EOF
    printf '\nmsgid "%s"\nmsgstr "sehr lange Nachricht"\n' "$long"
} > "$tmp/a.po"
{
    header ISO-8859-1
    printf 'msgid "Size"\nmsgstr "Größe"\n\n'
    printf 'msgid "Open file"\nmsgstr "Datei öffnen"\n\n'
    printf 'msgid "Close window"\nmsgstr "Fenster schließen"\n'
} | iconv -f UTF-8 -t ISO-8859-1 > "$tmp/b.po"
{
    header UTF-8
    for i in $(seq 1 200); do
        printf 'msgid "Message number %d is ready"\nmsgstr "Nachricht Nummer %d ist bereit"\n\n' "$i" "$i"
    done
} > "$tmp/c.po"
for f in a b c; do
    msgfmt -o "$mo/$f.mo" "$tmp/$f.po" || { notok "msgfmt $f.po"; finish; }
done

"$SCRIPT" --help >/dev/null
check "--help exits 0" [ $? -eq 0 ]
"$SCRIPT" --no-such-option >/dev/null 2>&1
check "an unknown option exits 2" [ $? -eq 2 ]

if ! "$SCRIPT" "$out" --mo-dir "$mo" --vocab "$VOCAB" > "$tmp/run1.log" 2>&1; then
    notok "the script builds the corpus from $mo"
    sed 's/^/  /' "$tmp/run1.log"
    finish
fi
ok "the script builds the corpus from $mo"
m=$out/manifest.txt

# manifest_has LINE: the manifest has exactly this line.
manifest_has() { grep -qxF "$1" "$m"; }
for line in "catalog a.mo 11" "catalog b.mo 3" "catalog c.mo 200" \
            "stage messages 214" "stage nonempty 213" "stage different 212" \
            "stage letters 211" "stage short 210" "stage unique 209" "vocab $VOCAB"; do
    check "manifest: $line" manifest_has "$line"
done
ntrain=$(awk '$1 == "split" && $2 == "train" { print $3 }' "$m")
nvalid=$(awk '$1 == "split" && $2 == "valid" { print $3 }' "$m")
check "train ($ntrain) + valid ($nvalid) = 209, both non-empty" \
    [ "$((ntrain + nvalid))" -eq 209 -a "$ntrain" -gt 0 -a "$nvalid" -gt 0 ]
check "train.en has $ntrain lines" [ "$(wc -l < "$out/train.en")" -eq "$ntrain" ]

# has_pair EN DE: the cleaned pair is in one of the splits (same line of .en and .de).
has_pair() {
    { paste "$out/train.en" "$out/train.de"; paste "$out/valid.en" "$out/valid.de"; } \
        | grep -qxF "$1	$2"
}
check "multi-line string, newlines and tabs collapsed" has_pair "Line one line two" "Zeile eins Zeile zwei"
check "escapes decoded" has_pair 'Say "hello" now' 'Sag „hallo“ jetzt'
check "plural gives msgid / msgstr[0]" has_pair "%d file" "%d Datei"
check "context 'menu' kept" has_pair "File" "Datei"
check "context 'noun' kept" has_pair "File" "Akte"
check "Latin-1 catalog read as UTF-8" has_pair "Size" "Größe"
check "Latin-1 ß" has_pair "Close window" "Fenster schließen"
check "identical pair dropped" bash -c "! cat $out/*.en | grep -qx OK"
check "format-only pair dropped" bash -c "! cat $out/*.en | grep -qxF '%s: %s'"
check "duplicate pair kept once" [ "$(cat "$out"/*.en | grep -cx 'Open file')" -eq 1 ]

# Every id line: ids in [4, VOCAB) or 1, no pad/BOS/EOS; decodes back to its text (lines
# with an unknown piece, possible only in valid, are counted, not compared).
unk_train=0
for s in train valid; do
    for l in en de; do
        f=$out/$s.$l
        # shellcheck disable=SC2016  # an awk program
        check "$s.$l.ids: ids in [4, $VOCAB) or 1" awk -v V="$VOCAB" \
            '{ for (i = 1; i <= NF; i++) if (!($i == 1 || ($i >= 4 && $i < V))) exit 1 }' "$f.ids"
        spm_decode --model="$out/spm.model" --input_format=id < "$f.ids" > "$tmp/dec"
        bad=$(paste -d '\t' "$f.ids" "$tmp/dec" "$f" | awk -F '\t' \
            '$2 != $3 && (" " $1 " ") !~ / 1 / { n++ } END { print n + 0 }')
        check "$s.$l.ids decodes back to $s.$l ($bad lines differ)" [ "$bad" -eq 0 ]
        [ "$s" = train ] && unk_train=$((unk_train + $(grep -cw 1 "$f.ids")))
    done
done
check "no unknown piece in the training split" [ "$unk_train" -eq 0 ]
check "manifest: sha256 of every file" bash -c "cd $out && awk '\$1 == \"sha256\" { print \$2 \"  \" \$3 }' manifest.txt | sha256sum -c --status"

# Idempotent: the second run only checks; a damaged file is rebuilt; a fresh build is identical.
cp -r "$out" "$tmp/first"
t0=$SECONDS
"$SCRIPT" "$out" --mo-dir "$mo" --vocab "$VOCAB" > "$tmp/run2.log" 2>&1
check "second run: only checks the manifest" grep -q "is complete" "$tmp/run2.log"
check "second run: under 10 s ($((SECONDS - t0)) s)" [ $((SECONDS - t0)) -lt 10 ]
echo 1 >> "$out/valid.de.ids"
"$SCRIPT" "$out" --mo-dir "$mo" --vocab "$VOCAB" > "$tmp/run3.log" 2>&1
check "a damaged output is rebuilt" cmp -s "$out/valid.de.ids" "$tmp/first/valid.de.ids"
rm -rf "$out"
"$SCRIPT" "$out" --mo-dir "$mo" --vocab "$VOCAB" > "$tmp/run4.log" 2>&1
check "a build from scratch is byte-identical" diff -r "$out" "$tmp/first"
finish
