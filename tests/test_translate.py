#!/usr/bin/python3
"""test_translate.py — decoding and BLEU (docs/paper_training.md): `stability translate` against
an independent PyTorch float64 decoder on the same checkpoint, the BLEU helper against NLTK, BLEU
while training, and the bad inputs.

A tiny En->De corpus is made here (a word-for-word language with one reordering rule, a 96-piece
sentencepiece BPE in the corpus layout of setup/translation-corpus.sh); a 2+2-layer d = 16
model trains on it for 400 updates and checkpoints. Then:
  - greedy: the ids of `stability translate --ids` equal, sentence for sentence, those of a
    PyTorch float64 greedy search on the checkpoint's parameters (test_torch_encdec's model);
  - beam 3 (lenpen 0.6, and 1.5): equal to a PyTorch transcription of fairseq's beam search;
  - translate's BLEU line equals NLTK's corpus_bleu computed here from the same hypotheses;
  - bleu.py: the references scored against themselves give 100;
  - /train/bleu of a run with train.bleu_every: rows at the right updates, the last equal to
    translate's BLEU on its final checkpoint;
  - a 2 x 2-seed sweep of such runs: `info --train`'s epoch reaching a BLEU, mean ± 95 % CI,
    equal to the reach computed here from the merged file (Fig. 4);
  - bad input (exit 2, nothing on stdout): no checkpoint, an lm run, a diverged run, --beam 0 and
    -1, a missing and a mismatched vocabulary; train.bleu_every on a task without sentences.
  - the hostile round of issue 34 (docs/faults.md), each a check that failed before its fix:
    --beam 65 (wider than a decoding batch's 64 rows) returns, with and without --input, and
    its ids equal the PyTorch beam search at K = 65; an --input whose lines hold \f, \r,
    \v, \x1c, U+0085, U+2028 and U+2029 gives one translation per "\n"-line, each equal to
    PyTorch's greedy search on that line; BLEU against references holding such characters
    equals NLTK's on the "\n"-lines; a FIFO valid.de or spm.model is refused, never waited
    for (translate, bleu.py, training with train.bleu_every); translate in a Latin-1 locale
    prints the same UTF-8 as in C.UTF-8; a missing corpus is exit 2 naming data.path; a
    translation run records data_sha256 = sha256 of the `sha256sum` listing of its four id
    files, data_bytes their size.
Prints "ok - ..." / "FAIL - ..." per check, then "translate: N passed, M failed".
`tests/test_translate.py hardening` runs the training run and the issue-34 checks only;
STABILITY=PATH tests another binary (its runtime/ beside it).
"""
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref as ref  # noqa: E402  (the scaffolding the PyTorch cross-checks share)
import harness  # noqa: E402  (the temporary working directory)
import test_torch_encdec as te  # noqa: E402

REPO = ref.REPO
BIN = os.path.abspath(os.environ.get("STABILITY", os.path.join(REPO, "stability")))
BLEU_PY = os.path.join(os.path.dirname(BIN), "runtime", "bleu.py")   # the binary's own helper
PAD, UNK, BOS, EOS = 0, 1, 2, 3
passed = failed = 0


def check(desc, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {desc}")
    else:
        failed += 1
        print(f"FAIL - {desc}" + (f": {detail}" if detail else ""))


def run(*args, cwd=REPO, **kw):
    return subprocess.run([BIN, *args], capture_output=True, text=True, cwd=cwd, **kw)


def make_corpus(d, seed=1, now="jetzt"):
    """A word-for-word En->De language: adjective after the noun in German ("now" -> now)."""
    import sentencepiece as spm
    rng = random.Random(seed)
    nouns = {"file": "Datei", "user": "Benutzer", "server": "Server", "key": "Schluessel",
             "line": "Zeile", "table": "Tabelle", "name": "Name", "disk": "Platte"}
    adjs = {"new": "neu", "old": "alt", "empty": "leer", "large": "gross", "small": "klein"}
    verbs = {"open": "oeffne", "save": "speichere", "delete": "loesche", "read": "lies",
             "write": "schreibe", "copy": "kopiere"}
    pairs = set()
    while len(pairs) < 420:
        v, n, a = rng.choice(list(verbs)), rng.choice(list(nouns)), rng.choice(list(adjs))
        en = f"{v} the {a} {n}" if rng.random() < 0.7 else f"{v} the {n}"
        de = (f"{verbs[v]} die {nouns[n]} {adjs[a]}" if " the " + a in en
              else f"{verbs[v]} die {nouns[n]}")
        if rng.random() < 0.3:
            en, de = en + " now", de + " " + now
        pairs.add((en, de))
    pairs = sorted(pairs)
    rng.shuffle(pairs)
    os.makedirs(d, exist_ok=True)
    split = {"train": pairs[:380], "valid": pairs[380:]}
    for s, ps in split.items():
        for k, side in ((0, "en"), (1, "de")):
            with open(f"{d}/{s}.{side}", "w", encoding="utf-8") as f:
                f.write("".join(p[k] + "\n" for p in ps))
    spm.SentencePieceTrainer.train(
        input=f"{d}/train.en,{d}/train.de", model_prefix=f"{d}/spm", model_type="bpe",
        vocab_size=96, character_coverage=1.0, pad_id=0, unk_id=1, bos_id=2, eos_id=3,
        normalization_rule_name="identity", num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=f"{d}/spm.model")
    for s in split:
        for side in ("en", "de"):
            with open(f"{d}/{s}.{side}", encoding="utf-8") as f, open(f"{d}/{s}.{side}.ids", "w") as g:
                for line in f:
                    g.write(" ".join(map(str, sp.encode(line.rstrip("\n")))) + "\n")
    return sp.get_piece_size()


def write_ini(path, corpus, vocab, **extra):
    sets = {"model": {"arch": "encdec", "layers": 2, "dec_layers": 2, "d_model": 16, "heads": 2,
                      "d_ff": 32, "vocab": vocab, "seq_len": 40, "src_len": 40,
                      "placement": "post"},
            "init": {"seed": 3},
            "data": {"task": "translation", "path": corpus, "max_tokens": 128},
            "train": {"steps": 400, "lr": 1e-2, "warmup": 20, "schedule": "constant",
                      "checkpoint_every": 300},
            "probe": {"every": 1000, "model_update": "off"}}
    for k, v in extra.items():
        sec, key = k.split("__")
        sets.setdefault(sec, {})[key] = v
    with open(path, "w") as f:
        for sec, kv in sets.items():
            f.write(f"[{sec}]\n" + "".join(f"{k} = {v}\n" for k, v in kv.items()) + "\n")


# ---- the PyTorch reference decoder -----------------------------------------------------------

def load(path):
    with h5py.File(path, "r") as f:
        m = ref.parse_config(ref.attr_text(f.attrs["config"]))
        P = {}
        f["checkpoint/params"].visititems(
            lambda n, o: P.__setitem__(n, torch.from_numpy(np.asarray(o[()], dtype=np.float64)))
            if isinstance(o, h5py.Dataset) else None)
    return m, P


def last_lprobs(P, m, src, prefixes):
    """log_softmax of the logits at the last position of each prefix (all of one length)."""
    s = torch.tensor([src] * len(prefixes), dtype=torch.int64)
    x_enc = te.encode(P, m, s)
    mem = ref.apply_norm(x_enc, P, "enc_final_norm", m) if m["has_final_norm"] else x_enc
    y = te.decode(P, m, torch.tensor(prefixes, dtype=torch.int64), mem, s < 0)
    if m["has_final_norm"]:
        y = ref.apply_norm(y, P, "dec_final_norm", m)
    W = P["tok_embed"].t() if m["tie_embeddings"] else P["lm_head"]
    return torch.log_softmax(y[:, -1, :] @ W, dim=-1)


def beam_search(P, m, src, K, lenpen, max_len):
    """fairseq's SequenceGenerator for one sentence (src with its EOS), written out plainly."""
    beams, scores, done = [[BOS]], [0.0], []
    for step in range(max_len + 1):
        lp = last_lprobs(P, m, src, beams).clone()
        lp[:, PAD] = -math.inf
        if step == 0:
            lp[:, EOS] = -math.inf
        if step >= max_len:
            keep = lp[:, EOS].clone()
            lp[:] = -math.inf
            lp[:, EOS] = keep
        cand = sorted(((scores[b] + lp[b, v].item(), b, v) for b in range(len(beams))
                       for v in range(lp.shape[1]) if lp[b, v].item() > -math.inf),
                      key=lambda c: (-c[0], c[1], c[2]))[:2 * K]
        nb, ns = [], []
        for j, (sc, b, v) in enumerate(cand):
            if v == EOS:
                if j < K and len(done) < K:
                    done.append((sc / (step + 1) ** lenpen, beams[b][1:]))
            elif len(nb) < K:
                nb.append(beams[b] + [v])
                ns.append(sc)
        if len(done) >= K or not nb:
            break
        beams, scores = nb, ns
    best = max(range(len(done)), key=lambda i: (done[i][0], -i))
    return done[best][1]


def read_ids(path):
    with open(path) as f:
        return [[int(t) for t in line.split()] for line in f]


# ---- the checks ------------------------------------------------------------------------------

def check_decoding(tmp, corpus, run_file):
    m, P = load(run_file)
    srcs = [s + [EOS] for s in read_ids(f"{corpus}/valid.en.ids")]
    for K, lenpen in ((1, 1.0), (3, 0.6), (3, 1.5)):
        p = run("translate", run_file, "--ids", "--beam", str(K), "--lenpen", str(lenpen),
                "--max-len-a", "0", "--max-len-b", "12")
        got = [[int(t) for t in line.split()] for line in p.stdout.splitlines()]
        want = [beam_search(P, m, s, K, lenpen, 12) for s in srcs]
        same = sum(g == w for g, w in zip(got, want))
        check(f"translate --beam {K} --lenpen {lenpen}: ids of all {len(want)} sentences equal "
              "PyTorch float64's", p.returncode == 0 and len(got) == len(want) and same == len(want),
              f"exit {p.returncode}, {same} of {len(want)} equal; {p.stderr[-300:]}")
        if K == 1:
            nonempty = sum(len(g) > 0 for g in got)
            check("greedy: the hypotheses are not all empty (the check compares real output)",
                  nonempty > len(got) // 2, f"{nonempty} non-empty")


def check_bleu(tmp, corpus, run_file):
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.translate.bleu_score import corpus_bleu
    import sentencepiece as spm
    p = run("translate", run_file)
    line = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    sp = spm.SentencePieceProcessor(model_file=f"{corpus}/spm.model")
    q = run("translate", run_file, "--ids")
    hyps = [sp.decode([int(t) for t in s.split()]) for s in q.stdout.splitlines()]
    check("translate prints the detokenised translations", p.stdout.splitlines() == hyps,
          f"{p.stdout[:200]!r} vs {hyps[:3]}")
    tok = NLTKWordTokenizer()
    refs = open(f"{corpus}/valid.de").read().splitlines()
    want = 100 * corpus_bleu([[tok.tokenize(r)] for r in refs], [tok.tokenize(h) for h in hyps])
    got = float(line.split("BLEU ")[1].split()[0]) if "BLEU " in line else float("nan")
    check(f"translate's BLEU {got} = NLTK's corpus_bleu of its output {want:.2f}",
          abs(got - want) < 0.006 and want > 5, line)
    def score(keep):
        lines = "".join(f"{i + 1}\t{' '.join(map(str, sp.encode(r)))}\n"
                        for i, r in enumerate(refs) if keep(r))
        s = subprocess.run(["/usr/bin/python3", f"{REPO}/runtime/bleu.py", "score", "--dir",
                            corpus], input=lines, capture_output=True, text=True)
        return float(s.stdout) if s.returncode == 0 else float("nan")
    long4 = score(lambda r: len(tok.tokenize(r)) >= 4)
    check(f"bleu.py: the references of >= 4 words against themselves score 100 ({long4})",
          abs(long4 - 100) < 1e-9)
    every = score(lambda r: True)
    nltk_self = 100 * corpus_bleu([[tok.tokenize(r)] for r in refs], [tok.tokenize(r) for r in refs])
    check(f"bleu.py: all references against themselves score NLTK's {nltk_self:.4f} (< 100: "
          f"NLTK counts a missing n-gram order of a short sentence as 0 of 1)",
          abs(every - nltk_self) < 1e-9 and every < 99.9, f"{every}")
    return want


def check_train_bleu(tmp, corpus, vocab):
    ini = f"{tmp}/bleu.ini"
    write_ini(ini, corpus, vocab, train__bleu_every=150, train__checkpoint_every=0)
    out = f"{tmp}/bleu.h5"
    p = run("--config", ini, "--out", out, "--quiet")
    with h5py.File(out, "r") as f:
        steps = list(f["train/bleu_step"][()]) if "train/bleu_step" in f else []
        bleu = list(f["train/bleu"][()]) if "train/bleu" in f else []
        ck = int(f["checkpoint/step"][()])
    check("train.bleu_every = 150 of 400 updates: /train/bleu at updates 150, 300 and 400",
          p.returncode == 0 and steps == [150, 300, 400] and len(bleu) == 3, f"{steps} {p.stderr}")
    check("a run with train.bleu_every checkpoints its final parameters", ck == 400, str(ck))
    q = run("translate", out)
    line = q.stderr.strip().splitlines()[-1] if q.stderr.strip() else ""
    got = float(line.split("BLEU ")[1].split()[0]) if "BLEU " in line else float("nan")
    check(f"the last /train/bleu ({bleu[-1] if bleu else None}) is translate's on the final "
          f"checkpoint ({got})", bool(bleu) and abs(bleu[-1] - got) < 0.006 and got > 5, line)
    pd = f"{tmp}/plots"
    p = run("plot", out, "--out", pd, "--format", "svg")
    svg = open(f"{pd}/bleu-bleu.svg").read() if os.path.exists(f"{pd}/bleu-bleu.svg") else ""
    check("stability plot draws BLEU against epochs (bleu-bleu.svg)",
          p.returncode == 0 and "BLEU" in svg and "epoch" in svg, p.stderr)
    # per epoch: 380 pairs / 8 a batch = 48 batches (random pairs: no epochs) -> -1 refused
    write_ini(ini, corpus, vocab, train__bleu_every=5, data__task="reverse", model__vocab=20,
              data__max_tokens=0, data__batch=4)
    p = run("--config", ini, "--out", f"{tmp}/bad.h5")
    check("train.bleu_every on a task without sentences: exit 2, nothing written",
          p.returncode == 2 and "bleu_every" in p.stderr and not os.path.exists(f"{tmp}/bad.h5"),
          p.stderr)


def reach(x, y, target):
    """The first x at which y >= target, linear between the two points around the crossing."""
    for k in range(len(y)):
        if y[k] >= target:
            if k == 0:
                return x[0]
            return x[k - 1] + (x[k] - x[k - 1]) * (y[k - 1] - target) / (y[k - 1] - y[k])
    return math.nan


def check_sweep_reach(tmp, corpus, vocab):
    """Fig. 4's reach on a tiny real sweep: Post-LN with warm-up and Pre-LN without, 2 seeds
    each, BLEU every 100 updates. `stability info --train` prints, per configuration, the epoch
    at which its seeds reach the best BLEU every run reaches, mean ± 95 % half-width (Student t,
    1 degree of freedom: tan(0.475 pi)); computed again here from the merged file, and in the
    BLEU figure (the target in its caption, each configuration's reach in its key)."""
    base = f"{tmp}/reach.ini"
    write_ini(base, corpus, vocab, train__bleu_every=100, train__checkpoint_every=0)
    name = "translate_reach_test"
    sw = f"{tmp}/{name}.ini"
    with open(sw, "w") as f:
        f.write(f"[sweep]\nbase = {base}\nname = {{placement}}_s{{seed}}\n"
                "zip = model.placement, train.warmup\nmodel.placement = post, pre\n"
                "train.warmup = 20, 1\ninit.seed = 3, 4\n")
    work = harness.repo_like(f"{tmp}/reach_work")   # the sweep's results/ are the test's own
    merged = f"{work}/results/{name}.h5"
    p = run("sweep", sw, "--quiet", cwd=work)
    check("a 2 x 2-seed translation sweep with train.bleu_every runs and merges",
          p.returncode == 0 and os.path.exists(merged), p.stderr)
    if p.returncode:
        return
    curves = {}
    with h5py.File(merged, "r") as f:
        for r in f["runs"]:
            t = f[f"runs/{r}/train"]
            curves[r] = (t["bleu_step"][()] / t.attrs["epoch_batches"], t["bleu"][()])
    target = min(float(np.max(y)) for _, y in curves.values() if np.max(y) >= 0.01)
    q = run("info", merged, "--train")
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[1:-1]]
            for l in q.stdout.split("| last BLEU")[-1].splitlines() if l.startswith("| ")}
    t975 = math.tan(0.475 * math.pi)
    check(f"info --train: a BLEU table with the epoch reaching {target:.4g}",
          q.returncode == 0 and f"| epoch reaching {target:.4g} | seeds reaching |" in q.stdout,
          q.stdout + q.stderr)
    keys = []
    for placement, label in (("post", "Post-LN, warm-up 20"), ("pre", "Pre-LN, no warm-up")):
        at = [reach(*curves[f"{placement}_s{s}"], target) for s in (3, 4)]
        mean, half = sum(at) / 2, t975 * abs(at[0] - at[1]) / 2
        want = [label, "2", "0", None, None, f"{mean:.2f} ± {half:.2f}", "2 of 2"]
        got = rows.get(label, [])
        check(f"{label}: reaches BLEU {target:.2f} at epochs {at[0]:.3f}, {at[1]:.3f}: "
              f"{want[5]}", len(got) == 7 and all(w is None or w == g for w, g in zip(want, got)),
              str(got))
        keys.append(f"{label} (2 seeds): epoch {want[5]}")
    pd = f"{tmp}/reach_plots"
    p = run("plot", merged, "--out", pd, "--format", "svg")
    svg = f"{pd}/{name}-bleu.svg"
    svg = open(svg).read() if os.path.exists(svg) else ""
    # the target once, in the caption; each key the epoch its configuration reaches it
    keys.append(f"dotted: BLEU {target:.2f}, the lowest of the runs' best")
    check("the BLEU figure's caption gives the target and its keys each configuration's "
          "reach: " + "; ".join(keys), p.returncode == 0 and all(k in svg for k in keys),
          p.stderr)


def check_rows_by_batch(tmp, corpus, vocab):
    """Training by data.batch rows (data.max_tokens = 0): validation is still planned by tokens,
    batch·max(S, T) per batch, so short sentences make batches of more than data.batch rows; the
    model must be built for them (data_caps), and the run evaluates instead of refusing."""
    ini = f"{tmp}/rows.ini"
    write_ini(ini, corpus, vocab, data__max_tokens=0, data__batch=2, train__steps=4,
              train__eval_every=2, train__checkpoint_every=0)
    out = f"{tmp}/rows.h5"
    p = run("--config", ini, "--out", out, "--quiet")
    val = []
    if os.path.exists(out):
        with h5py.File(out, "r") as f:
            val = list(f["train/val_loss"][:]) if "train/val_loss" in f else []
    check("translation with data.max_tokens = 0 trains and evaluates (validation batches of more "
          "than data.batch rows)", p.returncode == 0 and len(val) == 2 and
          all(math.isfinite(v) for v in val), f"exit {p.returncode}: {p.stderr.strip()[-300:]}")


def bad(desc, args, want_in_err):
    p = run("translate", *args)
    check(f"{desc}: exit 2, nothing on stdout",
          p.returncode == 2 and p.stdout == "" and want_in_err in p.stderr,
          f"exit {p.returncode}: {p.stderr.strip()[-300:]}")


def check_bad(tmp, corpus, vocab, run_file):
    ini = f"{tmp}/b.ini"
    write_ini(ini, corpus, vocab, train__steps=5, train__checkpoint_every=0)
    run("--config", ini, "--out", f"{tmp}/nock.h5", "--quiet")
    bad("a run with no checkpoint", [f"{tmp}/nock.h5"], "no checkpoint")
    lm = f"{tmp}/lm.ini"
    with open(lm, "w") as f:
        f.write("[model]\nlayers = 1\nd_model = 8\nheads = 2\nd_ff = 8\nvocab = 11\nseq_len = 6\n"
                "[data]\nbatch = 2\n[train]\nsteps = 4\ncheckpoint_every = 2\n[probe]\nevery = 100\n")
    run("--config", lm, "--out", f"{tmp}/lm.h5", "--quiet")
    bad("an lm run", [f"{tmp}/lm.h5"], "encoder-decoder")
    write_ini(ini, corpus, vocab, train__lr=1e12, train__optimizer="sgd", train__steps=20,
              train__checkpoint_every=1, train__warmup=0)
    run("--config", ini, "--out", f"{tmp}/div.h5", "--quiet")
    with h5py.File(f"{tmp}/div.h5", "r") as f:
        status = ref.attr_text(f.attrs["status"])
    check("the diverging run diverged (the next check needs it)", status == "diverged", status)
    bad("a diverged run", [f"{tmp}/div.h5"], "diverged")
    bad("--beam 0", [run_file, "--beam", "0"], "--beam")
    bad("--beam -1", [run_file, "--beam", "-1"], "--beam")
    bad("a missing file", [f"{tmp}/nock.h5.none"], "cannot read")
    # the vocabulary: a run on a copy of the corpus, whose spm.model then goes or changes
    c2 = f"{tmp}/corpus2"
    shutil.copytree(corpus, c2)
    write_ini(ini, c2, vocab, train__steps=4, train__checkpoint_every=2)
    run("--config", ini, "--out", f"{tmp}/c2.h5", "--quiet")
    os.unlink(f"{c2}/spm.model")
    bad("a missing vocabulary", [f"{tmp}/c2.h5"], "spm.model")
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(input=f"{c2}/train.en", model_prefix=f"{c2}/spm",
                                   model_type="bpe", vocab_size=60, minloglevel=2,
                                   pad_id=0, unk_id=1, bos_id=2, eos_id=3)
    bad("a mismatched vocabulary", [f"{tmp}/c2.h5"], "another vocabulary")


# ---- the hostile round of issue 34 (docs/faults.md) -------------------------------------------

def greedy_ids(P, m, ids, max_len=12):
    """PyTorch's greedy search (beam 1) on one source's ids."""
    return beam_search(P, m, ids + [EOS], 1, 1.0, max_len)


def check_wide_beam(tmp, corpus, run_file):
    """--beam 65: a decoding batch holds 64 rows, so 65 beams of one sentence fitted in none and
    translate_all decoded batches of 0 sentences forever."""
    m, P = load(run_file)
    srcs = read_ids(f"{corpus}/valid.en.ids")[:12]
    want = [beam_search(P, m, s + [EOS], 65, 1.0, 12) for s in srcs]
    with open(f"{corpus}/valid.en", encoding="utf-8") as f:
        lines = f.read().split("\n")[:12]
    inp = f"{tmp}/wide.en"
    with open(inp, "w", encoding="utf-8") as f:
        f.write("".join(l + "\n" for l in lines))
    for desc, extra in (("the validation split", []), ("--input", ["--input", inp])):
        try:
            p = run("translate", run_file, "--ids", "--beam", "65", "--max-len-a", "0",
                    "--max-len-b", "12", *extra, timeout=300)
            got = [[int(t) for t in l.split()] for l in p.stdout.splitlines()][:12]
            ok, detail = p.returncode == 0 and got == want, f"exit {p.returncode}; {p.stderr[-200:]}"
        except subprocess.TimeoutExpired:
            ok, detail = False, "no answer within 300 s (decode_batch with B = 0, forever)"
        check(f"translate --beam 65 ({desc}): returns, ids of the first 12 sentences equal "
              "PyTorch's beam search at K = 65", ok, detail)


# every character Python's splitlines() or universal newlines end a line at, but "\n"
ODD_BREAKS = ["\f", "\r", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def check_input_lines(tmp, corpus, run_file):
    """translate --input: a line ends at "\n" only (the C side's count), so 5 lines holding the
    characters Python's splitlines() also breaks at give 5 translations, in order."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=f"{corpus}/spm.model")
    m, P = load(run_file)
    lines = ["open the new file\f now", "save the\rold key", "read the\x1cline\x85now",
             "write the\u2028table\u2029\vnow", "copy the user"]
    inp = f"{tmp}/odd.en"
    with open(inp, "w", encoding="utf-8", newline="") as f:   # the last line CRLF-terminated
        f.write("\n".join(lines) + "\r\n")
    p = run("translate", run_file, "--input", inp, "--ids", "--max-len-a", "0", "--max-len-b", "12")
    got = [[int(t) for t in l.split()] for l in p.stdout.split("\n")[:-1]]
    want = [greedy_ids(P, m, sp.encode(l)) for l in lines]
    check(f"translate --input: {len(lines)} lines holding {' '.join(repr(c) for c in ODD_BREAKS[:4])}, "
          f"... give {len(lines)} translations, each PyTorch's greedy search on its line",
          p.returncode == 0 and got == want,
          f"exit {p.returncode}, {len(got)} lines: {p.stderr[-200:]}")


def corpus_copy(tmp, corpus, name, vocab, **extra):
    """A copy of the corpus and a 400-update run on it (tiny: under a second)."""
    c = f"{tmp}/{name}"
    shutil.copytree(corpus, c)
    ini = f"{tmp}/{name}.ini"
    write_ini(ini, c, vocab, **extra)
    return c, ini


def check_reference_lines(tmp, corpus, vocab):
    """BLEU's references are read line by line as the C side numbers them ("\n"): references
    holding the other line ends must not shift every later hypothesis onto another reference."""
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.translate.bleu_score import corpus_bleu
    c, ini = corpus_copy(tmp, corpus, "oddrefs", vocab)
    with open(f"{c}/valid.de", encoding="utf-8") as f:
        refs = f.read().split("\n")[:-1]
    for k, ch in enumerate(ODD_BREAKS):   # a word of the 2nd, 4th, ... reference joined by one
        i = 1 + 2 * k
        w = refs[i].split(" ")
        refs[i] = " ".join(w[:-1]) + ch + w[-1]
    with open(f"{c}/valid.de", "w", encoding="utf-8", newline="") as f:
        f.write("".join(r + "\n" for r in refs))
    out = f"{tmp}/oddrefs.h5"
    p = run("--config", ini, "--out", out, "--quiet")
    q = run("translate", out)
    line = q.stderr.strip().splitlines()[-1] if q.stderr.strip() else ""
    got = float(line.split("BLEU ")[1].split()[0]) if "BLEU " in line else float("nan")
    tok = NLTKWordTokenizer()
    hyps = q.stdout.split("\n")[:-1]
    want = 100 * corpus_bleu([[tok.tokenize(r)] for r in refs], [tok.tokenize(h) for h in hyps])
    check(f"BLEU against references holding {len(ODD_BREAKS)} other line ends: {got}, NLTK's on "
          f"the \\n-lines {want:.2f}", p.returncode == 0 and len(hyps) == len(refs)
          and abs(got - want) < 0.006 and want > 5, f"{line}; {q.stderr[-200:]}")


def release(fifo):
    """End a reader blocked in open() on fifo (what a build that waits leaves behind): open it
    for writing, without waiting, and close it: the reader sees the end of the file."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass   # no reader


def check_fifos(tmp, corpus, vocab, run_file):
    """A FIFO where runtime/bleu.py reads (valid.de, spm.model) is refused at once, never waited
    for; training with train.bleu_every refuses it before its first update."""
    c, ini = corpus_copy(tmp, corpus, "fiforefs", vocab, train__bleu_every=100,
                         train__checkpoint_every=100)
    # a run on the regular corpus first, then its references become a FIFO
    out = f"{tmp}/fiforefs.h5"
    run("--config", ini, "--out", out, "--quiet")
    os.unlink(f"{c}/valid.de")
    os.mkfifo(f"{c}/valid.de")
    try:
        p = run("translate", out, timeout=60)
        ok, detail = (p.returncode in (1, 2) and "valid.de" in p.stderr and "FIFO" in p.stderr,
                      f"exit {p.returncode}: {p.stderr[-300:]}")
    except subprocess.TimeoutExpired:
        ok, detail = False, "blocked on the FIFO for 60 s"
        release(f"{c}/valid.de")
    check("translate with a FIFO valid.de: refused at once, naming it", ok, detail)
    out2 = f"{tmp}/fiforefs2.h5"
    try:
        p = run("--config", ini, "--out", out2, "--quiet", timeout=60)
        ok, detail = (p.returncode == 2 and "valid.de" in p.stderr and not os.path.exists(out2),
                      f"exit {p.returncode}: {p.stderr[-300:]}")
    except subprocess.TimeoutExpired:
        ok, detail = False, "blocked on the FIFO for 60 s"
        release(f"{c}/valid.de")
    check("training with train.bleu_every and a FIFO valid.de: exit 2 before it starts, nothing "
          "written", ok, detail)
    c2 = f"{tmp}/fifospm"
    shutil.copytree(corpus, c2)
    os.unlink(f"{c2}/spm.model")
    os.mkfifo(f"{c2}/spm.model")
    try:
        p = subprocess.run(["/usr/bin/python3", BLEU_PY, "vocab", "--dir", c2],
                           capture_output=True, text=True, timeout=60)
        ok, detail = (p.returncode == 2 and "FIFO" in p.stderr, f"exit {p.returncode}: {p.stderr[-300:]}")
    except subprocess.TimeoutExpired:
        ok, detail = False, "blocked on the FIFO for 60 s"
        release(f"{c2}/spm.model")
    check("bleu.py with a FIFO spm.model: exit 2 at once, naming it", ok, detail)


def latin1_env(tmp):
    """An environment in a Latin-1 locale (made with localedef), or Python told so."""
    loc = f"{tmp}/locale"
    os.makedirs(loc, exist_ok=True)
    made = subprocess.run(["localedef", "-i", "de_DE", "-f", "ISO-8859-1", f"{loc}/de_DE.ISO-8859-1"],
                          capture_output=True).returncode == 0 if shutil.which("localedef") else False
    env = dict(os.environ, LC_ALL="de_DE.ISO-8859-1", LANG="de_DE.ISO-8859-1")
    if made:
        env["LOCPATH"] = loc
    else:
        env["PYTHONIOENCODING"] = "iso8859-1"
    return env


def check_latin1(tmp, vocab_unused):
    """In a Latin-1 locale translate printed its translations through Python's locale encoding
    and died of a UnicodeEncodeError at the first character Latin-1 lacks, after partial output.
    The output is UTF-8 (as the corpus is) in every locale."""
    c = f"{tmp}/quotes"
    vocab = make_corpus(c, now="„jetzt“")   # German quotes: not in Latin-1
    ini = f"{tmp}/quotes.ini"
    write_ini(ini, c, vocab)
    out = f"{tmp}/quotes.h5"
    run("--config", ini, "--out", out, "--quiet")
    utf8 = subprocess.run([BIN, "translate", out], capture_output=True, cwd=REPO,
                          env=dict(os.environ, LC_ALL="C.UTF-8"))
    latin = subprocess.run([BIN, "translate", out], capture_output=True, cwd=REPO, env=latin1_env(tmp))
    check("translate in a Latin-1 locale: exit 0, the same UTF-8 bytes as in C.UTF-8 (with „ “)",
          utf8.returncode == 0 and "„".encode() in utf8.stdout and latin.returncode == 0
          and latin.stdout == utf8.stdout,
          f"exit {latin.returncode}, {len(latin.stdout)} vs {len(utf8.stdout)} bytes; "
          f"{latin.stderr.decode(errors='replace')[-300:]}")


def check_missing_corpus(tmp, vocab):
    ini = f"{tmp}/nocorpus.ini"
    write_ini(ini, f"{tmp}/no/such/corpus", vocab, train__steps=3)
    out = f"{tmp}/nocorpus.h5"
    p = run("--config", ini, "--out", out, "--quiet")
    check("a missing translation corpus: exit 2 naming data.path (as the text task), nothing "
          "written", p.returncode == 2 and "data.path" in p.stderr and not os.path.exists(out),
          f"exit {p.returncode}: {p.stderr.strip()[-300:]}")


def check_identity(tmp, corpus, run_file):
    """A translation run records what it read: the SHA-256 of the `sha256sum` listing of its
    four id files (in the order train.en.ids train.de.ids valid.en.ids valid.de.ids), and their
    size; computed here with hashlib."""
    import hashlib
    names = ["train.en.ids", "train.de.ids", "valid.en.ids", "valid.de.ids"]
    listing, size = "", 0
    for n in names:
        with open(f"{corpus}/{n}", "rb") as f:
            b = f.read()
        listing += f"{hashlib.sha256(b).hexdigest()}  {n}\n"
        size += len(b)
    want = hashlib.sha256(listing.encode()).hexdigest()
    with h5py.File(run_file, "r") as f:
        got = (ref.attr_text(f.attrs["data_sha256"]) if "data_sha256" in f.attrs else None,
               int(f.attrs["data_bytes"]) if "data_bytes" in f.attrs else None)
    check(f"a translation run records data_sha256 {want[:12]}... and data_bytes {size}",
          got == (want, size), str(got))


def hardening(tmp, corpus, vocab, run_file):
    check_wide_beam(tmp, corpus, run_file)
    check_input_lines(tmp, corpus, run_file)
    check_reference_lines(tmp, corpus, vocab)
    check_fifos(tmp, corpus, vocab, run_file)
    check_latin1(tmp, vocab)
    check_missing_corpus(tmp, vocab)
    check_identity(tmp, corpus, run_file)


def main():
    if not os.path.exists(BIN):
        print(f"{BIN} missing: run make", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="stability_translate.")
    try:
        corpus = f"{tmp}/corpus"
        vocab = make_corpus(corpus)
        ini = f"{tmp}/t.ini"
        write_ini(ini, corpus, vocab)
        run_file = f"{tmp}/t.h5"
        p = run("--config", ini, "--out", run_file, "--quiet")
        check("the tiny translation run trains", p.returncode == 0, p.stderr)
        if sys.argv[1:] == ["hardening"]:
            hardening(tmp, corpus, vocab, run_file)
            return finish()
        check_decoding(tmp, corpus, run_file)
        check_bleu(tmp, corpus, run_file)
        check_train_bleu(tmp, corpus, vocab)
        check_sweep_reach(tmp, corpus, vocab)
        check_rows_by_batch(tmp, corpus, vocab)
        check_bad(tmp, corpus, vocab, run_file)
        hardening(tmp, corpus, vocab, run_file)
    finally:
        if os.environ.get("KEEP"):
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish()


def finish():
    print(f"translate: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
