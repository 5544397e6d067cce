#!/usr/bin/python3
"""bleu.py — sentencepiece and BLEU for `stability translate` and BLEU while training
(docs/paper_training.md). No BLEU is computed here by hand: NLTK's corpus_bleu does it.

    bleu.py score  --dir DIR [--split valid]   stdin: "LINE<TAB>ids" per hypothesis; prints BLEU
    bleu.py decode --dir DIR                   stdin: ids per line; prints the detokenised text
    bleu.py encode --dir DIR --input FILE      prints FILE's lines as sentencepiece ids
    bleu.py vocab  --dir DIR                   prints the vocabulary size of DIR/spm.model

DIR is a corpus of setup/translation-corpus.sh (spm.model, valid.de, ...). LINE is the
1-based line of the hypothesis' pair in DIR/SPLIT.de, the reference.

Files and lines as the C side has them (runtime/userfile.py): only regular files are read (a
FIFO is refused, exit 2, never waited for), and a line ends at "\n" only, in FILE, in the
references and on stdin: one line of ids out for every line in. Text is UTF-8 in every
locale: FILE and the references are read as UTF-8, and the text printed is UTF-8 (as the
corpus files are), also where the locale's encoding is another (Latin-1).

The BLEU: hypotheses decoded to text with DIR/spm.model (sentencepiece's DecodeIds, the
detokeniser); hypothesis and reference split into words by NLTK's NLTKWordTokenizer (the
Treebank-style tokeniser of nltk.word_tokenize, without its sentence splitter); then
nltk.translate.bleu_score.corpus_bleu with its defaults: one reference, n-grams 1-4 with equal
weights, corpus-level clipped counts, brevity penalty against the reference length, no
smoothing (0 when some n-gram order has no match); times 100. That is Papineni et al.'s corpus
BLEU, the formula sacreBLEU computes; sacreBLEU would tokenise with its 13a tokeniser instead,
and smooth only orders without a match (then it is > 0 where this is 0).
Exit: 0, 1 when a file cannot be read, 2 bad usage or input (a FIFO, text that is not UTF-8).
"""
import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import userfile  # noqa: E402  (runtime/userfile.py: regular files only, lines end at "\n")


def fail(code, msg):
    print(f"bleu.py: {msg}", file=sys.stderr)
    sys.exit(code)


def load_spm(d):
    try:
        import sentencepiece as spm
    except ImportError:
        fail(1, "python3-sentencepiece is not installed (setup/install-deps.sh)")
    path = f"{d}/spm.model"
    try:   # read here, not by sentencepiece's own open: a FIFO is refused, never waited for
        with userfile.open_read(path) as f:
            proto = f.read()
    except userfile.NotRegular as e:
        fail(2, str(e))
    except OSError as e:
        fail(1, f"{path}: cannot read the vocabulary: {e.strerror}")
    try:
        return spm.SentencePieceProcessor(model_proto=proto)
    except (OSError, RuntimeError) as e:
        fail(1, f"{path}: cannot load the vocabulary: {e}")


def read_lines(path):
    """The lines of the regular UTF-8 file path (runtime/userfile.py); exit 2 for a FIFO, a
    device or a directory, 1 when it cannot be read."""
    try:
        return userfile.split_lines(userfile.read_text(path))
    except userfile.NotRegular as e:
        fail(2, str(e))
    except OSError as e:
        fail(1, f"{path}: {e.strerror}")
    except UnicodeDecodeError as e:
        fail(2, f"{path}: not UTF-8 text ({e.reason} at byte {e.start})")


def stdin_lines():
    """The lines of stdin, split as the C side wrote them (at "\n" only)."""
    return userfile.split_lines(sys.stdin.buffer.read().decode("utf-8", errors="replace"))


def parse_ids(text, where):
    try:
        return [int(t) for t in text.split()]
    except ValueError:
        fail(2, f"{where}: not a list of ids")


def score(args):
    try:
        from nltk.tokenize import NLTKWordTokenizer
        from nltk.translate.bleu_score import corpus_bleu
    except ImportError:
        fail(1, "python3-nltk is not installed (setup/install-deps.sh)")
    sp = load_spm(args.dir)
    path = f"{args.dir}/{args.split}.de"
    refs = read_lines(path)
    tok = NLTKWordTokenizer()
    hyps, rlist = [], []
    for n, line in enumerate(stdin_lines(), 1):
        head, _, ids = line.partition("\t")
        if not head.isdigit() or not 1 <= int(head) <= len(refs):
            fail(2, f"stdin:{n}: '{head}' is not a line of {path}")
        hyps.append(tok.tokenize(sp.DecodeIds(parse_ids(ids, f"stdin:{n}"))))
        rlist.append([tok.tokenize(refs[int(head) - 1])])
    if not hyps:
        fail(2, "no hypotheses on stdin")
    with warnings.catch_warnings():   # NLTK warns when an n-gram order has no match: BLEU 0
        warnings.simplefilter("ignore")
        print(f"{100.0 * corpus_bleu(rlist, hyps):.17g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["score", "decode", "encode", "vocab"])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--split", default="valid", choices=["valid", "train"])
    ap.add_argument("--input")
    args = ap.parse_args()
    sys.stdout.reconfigure(encoding="utf-8")   # the corpus' encoding, whatever the locale's
    if args.mode == "score":
        score(args)
        return
    sp = load_spm(args.dir)
    if args.mode == "vocab":
        print(sp.GetPieceSize())
    elif args.mode == "decode":
        for n, line in enumerate(stdin_lines(), 1):   # one line of text for each line of ids
            print(sp.DecodeIds(parse_ids(line, f"stdin:{n}")).replace("\n", " "))
    else:
        if not args.input:
            fail(2, "encode needs --input FILE")
        for line in read_lines(args.input):
            print(" ".join(str(i) for i in sp.EncodeAsIds(line)))


if __name__ == "__main__":
    main()
