#!/usr/bin/python3
"""translation_pairs.py — English->German sentence pairs from UTF-8 .po files (msgunfmt output).

Used by setup/translation-corpus.sh; Python standard library only.

    translation_pairs.py --out DIR [--max-chars 256] [--valid-percent 5] LABEL=FILE.po ...

Reads every FILE.po (UTF-8: the caller ran msgunfmt | msgconv --to-code=UTF-8), takes one
(msgid, msgstr) pair per message and cleans the pairs in this order, counting what is left
after every stage:
  messages     every message but the header (msgid ""); plural messages give (msgid, msgstr[0]);
               msgctxt is parsed and dropped (the pair is the text only)
  nonempty     whitespace collapsed on both sides (control characters become spaces, format
               characters such as soft hyphens are removed, every run of whitespace - newlines,
               tabs, no-break spaces - becomes one space, ends stripped, NFC), then pairs with an
               empty side are dropped
  different    source == target dropped (untranslated or untranslatable)
  letters      pairs with a side that has no letter once format directives are removed
               ("%s", "%d: %s", "%<%s%>", "{0}", "--", "4x6" -> "4×6") are dropped
  short        pairs with a side longer than --max-chars characters (code points) are dropped
  unique       exact duplicate pairs dropped (the same source may keep several translations)
The split is by the source text: valid if sha256(source) mod 100 < --valid-percent, so all
translations of one source are on the same side. Each split is ordered by sha256(source TAB
target): a deterministic shuffle that does not depend on the order of the input files.

Files and lines as the C side has them (runtime/userfile.py): only regular files are read and
written (a FIFO, a device or a link is refused, exit 1, never waited for), a .po line ends at
"\n" only (so FILE:LINE is the line sed and gettext count), and no sentence written holds a
character that any reader could take for a line end (cleaning turns them into spaces).

Writes DIR/train.en DIR/train.de DIR/valid.en DIR/valid.de (one sentence a line, UTF-8, LF) and
prints "catalog LABEL MESSAGES" per file and "stage NAME COUNT" / "split NAME COUNT" lines on
stdout. Exit 0; 1 on I/O errors; 2 on a .po syntax error ("FILE:LINE: po: message").
"""
import argparse
import hashlib
import os
import re
import sys
import unicodedata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
import userfile  # noqa: E402  (runtime/userfile.py: regular files only, lines end at "\n")

# printf conversions (C, positional "%1$s", gcc's "%qs" "%<" "%>" "%'"), Python "%(name)s",
# positional brace fields "{0}", "%%". Named braces stay: gcc's "{anonymous}" is text.
FORMAT_RE = re.compile(
    r"%%|%[<>']"
    r"|%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
    r"(?:hh|ll|[hlLqjztIwZ]|I64|I32)?[diouxXeEfFgGaAcsSpnmCDTKHEqVR]"
    r"|%\([A-Za-z_][A-Za-z0-9_]*\)[-+ #0]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa]"
    r"|\{\d*\}")

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
           "\\": "\\", '"': '"', "'": "'", "?": "?"}


class PoError(Exception):
    """A syntax error in a .po file: str(e) is "FILE:LINE: po: message"."""


def unquote(text, where):
    """The value of one C string literal "..." (po escapes, octal and hex included)."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise PoError(f"{where}: po: expected a quoted string, got {text[:40]!r}")
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(body):
            raise PoError(f"{where}: po: backslash at the end of a string")
        e = body[i + 1]
        if e in ESCAPES:
            out.append(ESCAPES[e])
            i += 2
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(chr(int(m.group(0), 8)))
            i += 1 + len(m.group(0))
        elif e == "x":
            m = re.match(r"[0-9A-Fa-f]+", body[i + 2:])
            if not m:
                raise PoError(f"{where}: po: \\x without hex digits")
            out.append(chr(int(m.group(0), 16)))
            i += 2 + len(m.group(0))
        else:
            raise PoError(f"{where}: po: unknown escape \\{e}")
    return "".join(out)


KEYWORD_RE = re.compile(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(".*")\s*$')


def read_po(path):
    """The messages of a .po file as dicts {msgctxt, msgid, msgid_plural, msgstr[N]...}."""
    messages, cur, key = [], {}, None
    lines = userfile.split_lines(userfile.read_text(path))
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        where = f"{path}:{no}"
        if not line or line.startswith("#"):
            continue
        m = KEYWORD_RE.match(line)
        if m:
            kw = m.group(1)
            if kw in ("msgctxt", "msgid") and "msgid" in cur and any(
                    k.startswith("msgstr") for k in cur):
                messages.append(cur)
                cur = {}
            if kw in cur:
                raise PoError(f"{where}: po: {kw} twice in one message")
            key = kw
            cur[key] = unquote(m.group(3), where)
        elif line.startswith('"'):
            if key is None:
                raise PoError(f"{where}: po: a string continues nothing")
            cur[key] += unquote(line, where)
        else:
            raise PoError(f"{where}: po: cannot parse {line[:40]!r}")
    if cur:
        if "msgid" not in cur or not any(k.startswith("msgstr") for k in cur):
            raise PoError(f"{path}:{max(len(lines), 1)}: po: incomplete message at the end")
        messages.append(cur)
    return messages


def clean(s):
    """NFC text with control characters as spaces, format characters removed, whitespace
    collapsed to single spaces and the ends stripped."""
    chars = []
    for c in s:
        cat = unicodedata.category(c)
        if cat == "Cc":
            chars.append(" ")
        elif cat != "Cf":
            chars.append(c)
    return unicodedata.normalize("NFC", " ".join("".join(chars).split()))


def has_letter(s):
    """True when s has a letter once format directives are removed."""
    return any(c.isalpha() for c in FORMAT_RE.sub(" ", s))


def sha(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def pairs_of(path, messages):
    """(msgid, msgstr) of every message of path but the header; plurals give msgstr[0]."""
    out = []
    for m in messages:
        if m["msgid"] == "" and "msgctxt" not in m:
            continue            # the header
        target = m.get("msgstr", m.get("msgstr[0]"))
        if target is None:
            raise PoError(f"{path}: po: message {m['msgid'][:40]!r} has no msgstr or msgstr[0]")
        out.append((m["msgid"], target))
    return out


def clean_pairs(pairs, max_chars, stages):
    """Apply the cleaning stages in order, appending (name, count) to stages."""
    stages.append(("messages", len(pairs)))
    pairs = [(clean(s), clean(t)) for s, t in pairs]
    steps = [("nonempty", lambda s, t: s != "" and t != ""),
             ("different", lambda s, t: s != t),
             ("letters", lambda s, t: has_letter(s) and has_letter(t)),
             ("short", lambda s, t: len(s) <= max_chars and len(t) <= max_chars)]
    for name, keep in steps:
        pairs = [p for p in pairs if keep(*p)]
        stages.append((name, len(pairs)))
    pairs = sorted(set(pairs))
    stages.append(("unique", len(pairs)))
    return pairs


def write_split(out, name, pairs):
    pairs = sorted(pairs, key=lambda p: (sha(p[0] + "\t" + p[1]), p))
    for side, k in (("en", 0), ("de", 1)):
        with userfile.open_write(os.path.join(out, f"{name}.{side}")) as f:
            for p in pairs:
                assert len(p[k].splitlines()) == 1, p[k]   # clean() leaves no line end of any kind
                f.write(p[k] + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-chars", type=int, default=256)
    ap.add_argument("--valid-percent", type=int, default=5)
    ap.add_argument("files", nargs="+", help="LABEL=FILE.po")
    a = ap.parse_args()
    pairs = []
    try:
        for arg in a.files:
            label, _, path = arg.rpartition("=")
            p = pairs_of(path, read_po(path))
            print(f"catalog {label or path} {len(p)}")
            pairs += p
    except PoError as e:
        print(f"translation_pairs.py: {e}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as e:
        print(f"translation_pairs.py: {e}", file=sys.stderr)
        return 1
    stages = []
    pairs = clean_pairs(pairs, a.max_chars, stages)
    for name, n in stages:
        print(f"stage {name} {n}")
    valid = [p for p in pairs if int(sha(p[0])[:8], 16) % 100 < a.valid_percent]
    vset = set(valid)
    train = [p for p in pairs if p not in vset]
    try:
        write_split(a.out, "train", train)
        write_split(a.out, "valid", valid)
    except OSError as e:
        print(f"translation_pairs.py: {e}", file=sys.stderr)
        return 1
    print(f"split train {len(train)}")
    print(f"split valid {len(valid)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
