"""test_torch_llama_decode.py — decoding with today's block (docs/design.md §6i), a part of
tests/test_torch_llama.py: a tiny rope + SwiGLU + bias-free Pre-LN RMSNorm encoder–decoder trains on
tests/test_translate.py's toy En->De corpus, then `stability translate --ids` (greedy, and beam 3
with two length penalties) must give, sentence for sentence, the ids of test_translate's PyTorch
transcription of fairseq's beam search run on test_torch_llama's float64 reference of the block:
each step re-runs the decoder on the whole prefix, so its positions are 0 … step, as the C
decoder's (model_decode_last) must be. Not a test by itself: run() is called by test_torch_llama.
"""
import os

import h5py
import numpy as np
import torch

import torch_ref as ref
import test_torch_encdec as ttd
import test_torch_schemes as tts
import test_translate as tr


def load(path, parse):
    """The resolved config (parse: test_torch_llama's reader) and the checkpoint's parameters."""
    with h5py.File(path, "r") as f:
        m = parse(ref.attr_text(f.attrs["config"]))
        P = {}
        f["checkpoint/params"].visititems(
            lambda n, o: P.__setitem__(n, torch.from_numpy(np.asarray(o[()], dtype=np.float64)))
            if isinstance(o, h5py.Dataset) else None)
    return m, P


def last_lprobs(P, m, src, prefixes):
    """log_softmax of the logits at the last position of each prefix (all of one length), from
    the schemes' reference with the block's pieces (installed by test_torch_llama)."""
    s = torch.tensor([src] * len(prefixes), dtype=torch.int64)
    mem = tts.encode(P, m, s)
    tok = torch.tensor(prefixes, dtype=torch.int64)
    y = tts.run_stack(P, m, "dec", ttd.embed(P, m, tok),
                      {"self_pad": None, "causal": True, "mem": mem, "src_pad": s < 0})
    y = tts.final(y, P, "dec_final_norm", m, frozenset())
    W = P["tok_embed"].t() if m["tie_embeddings"] else P["lm_head"]
    return torch.log_softmax(y[:, -1, :] @ W, dim=-1)


def run(args, workdir):
    """Train, translate, compare. -> (passed, failed)."""
    import test_torch_llama as tl
    tr.last_lprobs = last_lprobs   # test_translate's beam search asks this for its lprobs
    corpus = os.path.join(workdir, "translation")
    vocab = tr.make_corpus(corpus)
    ini, out = os.path.join(workdir, "llama_mt.ini"), os.path.join(workdir, "llama_mt.h5")
    tr.write_ini(ini, corpus, vocab, model__placement="pre", model__norm="rmsnorm",
                 model__positions="rope", model__activation="swiglu", model__bias="off",
                 train__lr=5e-3)
    p0, f0 = tr.passed, tr.failed   # test_translate counts into its globals
    p = tr.run("--config", ini, "--out", out, "--quiet")
    tr.check("the LLaMA-block translation model trains", p.returncode == 0, p.stderr[-300:])
    if p.returncode == 0:
        m, P = load(out, tl.parse)
        srcs = [s + [tr.EOS] for s in tr.read_ids(f"{corpus}/valid.en.ids")]
        for K, lenpen in ((1, 1.0), (3, 0.6), (3, 1.5)):
            q = tr.run("translate", out, "--ids", "--beam", str(K), "--lenpen", str(lenpen),
                       "--max-len-a", "0", "--max-len-b", "12")
            got = [[int(t) for t in line.split()] for line in q.stdout.splitlines()]
            want = [tr.beam_search(P, m, s, K, lenpen, 12) for s in srcs]
            same = sum(g == w for g, w in zip(got, want))
            tr.check(f"rope translate --beam {K} --lenpen {lenpen}: ids of all {len(want)} "
                     "sentences equal PyTorch float64's", q.returncode == 0 and
                     len(got) == len(want) and same == len(want),
                     f"exit {q.returncode}, {same} of {len(want)} equal; {q.stderr[-300:]}")
            if K == 1:
                long = sum(len(g) >= 3 for g in got)
                tr.check("greedy: most hypotheses have 3 or more pieces (real output compared)",
                         long > len(got) // 2, f"{long} of {len(got)}")
    return tr.passed - p0, tr.failed - f0
