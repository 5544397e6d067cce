#!/usr/bin/env python3
"""check_docs.py — the README and docs/*.md: every relative link resolves, and nothing was lost.

  tools/check_docs.py                  every relative link and image of README.md and docs/*.md
                                         names a file that exists, and every #anchor a heading of
                                         that file (GitHub's rule for heading ids)
  tools/check_docs.py --numbers REV    also: every number of REV's README.md (e.g. 1.46, 2.1e-7,
                                         45,315) still appears in README.md or docs/*.md

Prints each failure and exits 1 if there is one. Links written as `code` (pages still to come)
are not links and are not checked.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:e[-−+]?\d+)?")


def pages():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def strip_code(text):
    """The text without fenced code blocks and inline code (a link inside them is no link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path):
    """GitHub's heading ids: lower case, punctuation dropped, spaces to '-', repeats get -1, -2."""
    seen, out = {}, set()
    text = re.sub(r"^```.*?^```", "", open(path, encoding="utf-8").read(), flags=re.S | re.M)
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def check_links():
    bad = []
    for page in pages():
        for target in LINK.findall(strip_code(open(page, encoding="utf-8").read())):
            if re.match(r"[a-z]+:", target):
                continue                                  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = os.path.relpath(page, ROOT)
            if not os.path.exists(dest):
                bad.append(f"{where}: {target}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append(f"{where}: {target}: no heading with this id")
    return bad


def check_numbers(rev):
    old = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:README.md"], check=True,
                         capture_output=True, text=True).stdout
    new = set()
    for page in pages():
        new.update(NUMBER.findall(open(page, encoding="utf-8").read()))
    missing = sorted(set(NUMBER.findall(old)) - new)
    bad = []
    for tok in missing:
        line = next(l for l in old.splitlines() if tok in NUMBER.findall(l))
        bad.append(f"README.md@{rev}: number {tok} is in no page: {line.strip()[:90]}")
    return bad, len(set(NUMBER.findall(old)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numbers", metavar="REV", help="check that REV's README numbers survive")
    args = ap.parse_args()
    bad = check_links()
    print(f"links: {len(bad)} broken")
    if args.numbers:
        lost, total = check_numbers(args.numbers)
        print(f"numbers: {total} distinct in README.md@{args.numbers}, {len(lost)} missing now")
        bad += lost
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
