#!/usr/bin/python3
"""test_plot_overlay.py — `stability plot` overlays any runs a user gives it (docs/design.md §6j),
from the repository root: /usr/bin/python3 tests/test_plot_overlay.py

Tiny runs (configs/tiny.ini, a few updates) are trained into a temporary directory and drawn
with `stability plot --format gp`; the gnuplot scripts are read back:

1. runs that differ in norm and bias (2 runs, Pre-LN; 3 runs, Post-LN too) and the 2017 block against the LLaMA
   block draw a loss figure: before, the scheme table gave Pre-LN and Pre-LN (RMSNorm) one colour
   and marker and the figure was refused ("more curves than colours and dashes tell apart");
   now every curve has a colour of its own and a key entry.
2. gnuplot's "set ytics inf" (issue 44, item 4): warmup_indicators whose indicator eos has no
   finite value in any cell (the indicators' run has no curvature row in updates 1-20) and
   curv_lens of a ratio of 1e295 (a row of the run file rewritten with h5py) are drawn, exit 0,
   the ranges and tics finite, the empty indicator named in the subtitle and given no panel;
   before, gnuplot failed ("undefined variable: inf"), exit 1.
3. keys name the idea that differs, a default by its value (issues 43, 44 item 6): μP against
   the standard parametrization keys "μP" and "standard parametrization" in the figure and in
   `info --train` (before: "parametrization mup, base width 8" and "parametrization , base
   width "), μP's base width in the subtitle; a run measuring curvature against one that does
   not keys "curvature every 2 updates" / "no curvature rows" (before: "curvature every ,
   curvature iters , …"); no key or panel title ends a word with " ," or a trailing space;
   d_ff that comes with the width (4d) or with SwiGLU (2/3 of the 2017 block's) is not a key
   of its own (before: "d = 12, d_ff = 48"), the subtitle says it per value.
4. key order follows the value: runs of warm-up 30, 6 and 1 given in that order key "no
   warm-up", "warm-up 6", "warm-up 30" (before: the order given, and a sweep's names gave
   "no warm-up, warm-up 30, warm-up 6"), `info --train`'s rows too; lr 0.002, 0.0005, 0.001
   key 0.0005, 0.001, 0.002.
5. seeds: 2 seeds of lr 1e-2 (their 95 % band, t = 12.7, reached -4.57 nats before) draw a
   thin line per seed (data columns 6 and 7 are the seeds' own losses) and the mean, no band,
   every row's lower end ≥ 0; 4 seeds draw the band, never below 0; --seed-lines gives 4 lines.
6. no panel for a constant quantity: two runs of constant lr 1e-3 and 3e-3 (no warm-up) draw the
   loss alone, the subtitle saying the lr is constant (before: a panel of two flat lines); runs
   whose lr decays keep the lr panel.
Prints "ok - ..." / "FAIL - ..." per check, then "plot overlay: N passed, M failed".
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import REPO, blocks, check, run, key_titles, summary  # noqa: E402

TINY = os.path.join(REPO, "configs", "tiny.ini")
PRE = "model.placement=pre train.steps=6"
LLAMA = "model.norm=rmsnorm model.activation=swiglu model.positions=rope model.bias=off"


def train(tmp, name, spec):
    """A tiny run with the --set items of spec (space-separated) into tmp/name.h5."""
    args = ["--config", TINY]
    for kv in spec.split():
        args += ["--set", kv]
    path = os.path.join(tmp, name + ".h5")
    r = run(*args, "--out", path, "--quiet")
    if r.returncode:
        raise SystemExit(f"stability failed: {r.stderr}")
    return path


def plot(tmp, out, files):
    """`stability plot --format gp` of files into tmp/out: (exit status, stderr, out dir)."""
    d = os.path.join(tmp, out)
    r = run("plot", *files, "--out", d, "--format", "gp", "--quiet")
    return r.returncode, r.stderr, d


def figure(d, fig):
    """The script of figure fig in d (the first file named *-fig.gp), or None."""
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if f.endswith("-" + fig + ".gp"):
            return open(os.path.join(d, f)).read()
    return None


def key_colours(gp):
    """The colours of the key entries of a script, in order."""
    return re.findall(r"keyentry with [^,]*?lc rgb '(#[0-9a-f]{6})'", gp)


def check_overlay(tmp):
    """Norm and bias, 2 and 3 runs; the 2017 block against LLaMA's: a loss figure each."""
    a = train(tmp, "ln", PRE)
    b = train(tmp, "rms_nobias", PRE + " model.norm=rmsnorm model.bias=off")
    c = train(tmp, "post_nobias", "train.steps=6 model.bias=off")
    llama = train(tmp, "llama", PRE + " " + LLAMA)
    for label, files, n in (("2 runs (norm, bias)", [a, b], 2),
                            ("3 runs (norm, bias)", [a, b, c], 3),
                            ("2017 block vs LLaMA block", [a, llama], 2)):
        rc, err, d = plot(tmp, "ov%d_%s" % (n, os.path.basename(files[-1])[:-3]), files)
        gp = figure(d, "loss")
        check(f"{label}: exit 0 and a loss figure", rc == 0 and gp is not None, err)
        if gp is None:
            continue
        cols = key_colours(gp)
        check(f"{label}: {n} key entries of {n} colours", len(cols) == n and len(set(cols)) == n,
              f"{key_titles(gp)} {cols}")
        check(f"{label}: no figure skipped on stderr", "skipped" not in err, err)


def finite_script(gp):
    """The range and tic lines of a script that print a non-finite number."""
    return [ln for ln in gp.splitlines() if re.match(r"set \w*(range|tics)", ln)
            and re.search(r"\b(inf|nan)\b", ln)]


def check_infinite_axes(tmp):
    """warmup_indicators with an indicator of no finite value; curv_lens with a ratio of 1e295."""
    cell = "post-layernorm-xavier_normal_L2_lr0.001"
    spec = ("model.layers=2 model.vocab=40 model.seq_len=8 data.task=copy data.batch=8 "
            "train.schedule=constant train.lr=1e-3 train.warmup=%d train.steps=%d")
    os.makedirs(os.path.join(tmp, "atlas"))
    os.makedirs(os.path.join(tmp, "ind"))
    files = [train(tmp, "atlas/%s_w1" % cell, spec % (1, 30)),
             train(tmp, "atlas/%s_w30" % cell, spec % (30, 30)),
             train(tmp, "ind/" + cell, spec % (1, 20) + " probe.model_update=on "
                   "probe.curvature_every=25 probe.curvature_iters=4 "
                   "probe.curvature_block_iters=0 probe.curvature_active_only=on")]
    rc, err, d = plot(tmp, "ind_plots", files)
    gp = figure(d, "warmup_indicators")
    check("indicators without a finite eos: exit 0 and the figure", rc == 0 and gp is not None, err)
    if gp is not None:
        check("indicators: every range and tic finite", not finite_script(gp), finite_script(gp))
        panels = re.findall(r'^set title "(\w+(?:\\\\_\w+)?): AUC', gp, re.M)
        check("indicators: no panel for eos, the subtitle names it",
              "eos" not in panels and "eos0" in panels and
              re.search(r"no panel: no finite value in any cell: [^\n]*\beos\b", gp) is not None,
              f"{panels}")
    import h5py   # a ratio of 1e295 at update 2: η·λ_max(P⁻¹H) = 1e295 × the threshold
    path = train(tmp, "lens", "train.steps=5 probe.curvature_every=1")
    with h5py.File(path, "r+") as f:
        act = f["train/precond_max_active"][:]
        act[2] = 1e295 * f["train/stability_threshold"][2]
        f["train/precond_max_active"][:] = act
    r = run("plot", path, "--out", os.path.join(tmp, "lens_plots"), "--format", "gp,png", "--quiet")
    d = os.path.join(tmp, "lens_plots")
    gp = figure(d, "curv_lens")
    check("curv_lens of a ratio of 1e295: exit 0, gp and PNG", r.returncode == 0 and gp is not None
          and os.path.exists(os.path.join(d, "lens-curv_lens.png")), r.stderr)
    if gp is not None:
        check("curv_lens: every range and tic finite", not finite_script(gp), finite_script(gp))


def empty_values(texts):
    """Texts that name a key without a value ("parametrization , …", "base width ")."""
    return [t for t in texts if re.search(r"\w ,|\w $|\w ,$", t)]


def keys_of(tmp, out, files):
    """The loss figure's key titles and its `set multiplot title` line for files."""
    rc, err, d = plot(tmp, out, files)
    gp = figure(d, "loss") or ""
    title = re.search(r"^set multiplot title (.*)$", gp, re.M)
    return key_titles(gp), title.group(1) if title else "", err


def check_words(tmp):
    """μP vs standard, curvature rows vs none, d_ff with the width and with SwiGLU."""
    std = train(tmp, "std", "train.steps=6")
    mup = train(tmp, "mup", "train.steps=6 init.parametrization=mup_simple init.base_width=8")
    keys, title, err = keys_of(tmp, "words_mup", [std, mup])
    check("μP vs standard: keyed 'standard parametrization' and 'μP'",
          keys == ["standard parametrization", "μP"], f"{keys} {err}")
    t3 = train(tmp, "mup_t3", "train.steps=6 init.parametrization=mup init.base_width=8")
    k3, _, err3 = keys_of(tmp, "words_mup_t3", [mup, t3])
    check("μParam (simple) vs Table 3: keyed 'μP' and 'μP Table 3'",
          k3 == ["μP", "μP Table 3"], f"{k3} {err3}")
    check("μP vs standard: the base width in the subtitle", "μP: base width 8" in title, title)
    r = run("info", std, mup, "--train")
    rows = [ln.split("|")[1].strip() for ln in r.stdout.splitlines()
            if ln.startswith("| ") and not ln.startswith("| run")]
    check("info --train: rows 'standard parametrization' and 'μP'",
          r.returncode == 0 and rows == ["standard parametrization", "μP"], f"{rows} {r.stderr}")
    curv = train(tmp, "curv", "train.steps=6 probe.curvature_every=2 probe.curvature_iters=4 "
                 "probe.curvature_block_iters=0")
    keys, title, err = keys_of(tmp, "words_curv", [std, curv])
    check("curvature rows vs none: keyed by curvature_every's value",
          keys == ["no curvature rows", "curvature every 2 updates"], f"{keys} {err}")
    texts = keys + key_titles(open(os.path.join(tmp, "words_mup", "std-loss.gp")).read())
    check("no key names a key without its value", not empty_values(texts), empty_values(texts))
    pre = "train.steps=6 model.placement=pre model.d_model=12 model.heads=2"
    d12 = train(tmp, "d12", pre + " model.d_ff=48")
    d16 = train(tmp, "d16", "train.steps=6 model.placement=pre model.d_model=16 model.heads=2 "
                "model.d_ff=64")
    swiglu = train(tmp, "d12_swiglu", pre + " model.d_ff=32 model.activation=swiglu")
    keys, title, err = keys_of(tmp, "words_width", [d12, d16])
    check("d_ff = 4d: keyed by the width alone", keys == ["d = 12", "d = 16"], f"{keys} {err}")
    check("d_ff = 4d: the subtitle says the rule once, not d_ff per width",
          r"d\\_ff = 4d" in title and "d = 12:" not in title, title)
    keys, title, err = keys_of(tmp, "words_swiglu", [d12, swiglu])
    check("SwiGLU's d_ff of 2/3: keyed by the activation alone", keys == ["ReLU", "SwiGLU"],
          f"{keys} {err}")


def check_order(tmp):
    """Keys and info --train rows in the order of the values."""
    files = [train(tmp, "w%d" % w, "train.steps=6 train.warmup=%d" % w) for w in (30, 6, 1)]
    keys, _, err = keys_of(tmp, "order_warmup", files)
    want = ["no warm-up", "warm-up 6", "warm-up 30"]
    check("warm-up keys in numeric order, no warm-up first", keys == want, f"{keys} {err}")
    r = run("info", *files, "--train")
    rows = [ln.split("|")[1].strip() for ln in r.stdout.splitlines()
            if ln.startswith("| ") and not ln.startswith("| run")]
    check("info --train: rows in the same order", rows == want, f"{rows} {r.stderr}")
    files = [train(tmp, "lr%s" % lr, "train.steps=4 train.lr=%s" % lr)
             for lr in ("0.002", "0.0005", "0.001")]
    keys, _, err = keys_of(tmp, "order_lr", files)
    check("lr keys in numeric order", keys == ["lr 0.0005", "lr 0.001", "lr 0.002"],
          f"{keys} {err}")


def check_seeds(tmp):
    """2 seeds: a line each and the mean, nothing below 0; 4 seeds: a band above 0."""
    import h5py
    files = [train(tmp, "seed%d" % k, "train.steps=30 train.lr=1e-2 train.warmup=1 "
                   "init.seed=%d" % k) for k in (1, 2, 3, 4)]
    losses = []
    for f in files[:2]:
        with h5py.File(f, "r") as h:
            losses.append(list(h["train/loss"][:]))
    rc, err, d = plot(tmp, "seeds2", files[:2])
    gp = figure(d, "loss") or ""
    rows = blocks(gp).get("l0", [])
    check("2 seeds: a loss figure of 30 rows", rc == 0 and len(rows) == 30, err)
    if rows:
        low = min(r[2] for r in rows)
        check(f"2 seeds: the band's lower end never below 0 (lowest {low:.4g})", low >= 0.0)
        own = all(len(r) == 7 and abs(r[5] - losses[0][i]) < 1e-8 and abs(r[6] - losses[1][i])
                  < 1e-8 and abs(r[1] - (r[5] + r[6]) / 2) < 1e-8 for i, r in enumerate(rows))
        check("2 seeds: columns 6, 7 each seed's loss, column 2 their mean", own, str(rows[:2]))
        check("2 seeds: a thin line per seed, the mean, no band",
              gp.count("$l0 using 1:6 with lines lw 0.8") == 1 and "$l0 using 1:7" in gp
              and "filledcurves" not in gp and "thin: each seed" in gp)
    rc, err, d = plot(tmp, "seeds4", files)
    gp = figure(d, "loss") or ""
    rows = blocks(gp).get("l0", [])
    check("4 seeds: the band, no seed lines", rows and len(rows[0]) == 5 and "filledcurves" in gp,
          err)
    check("4 seeds: the band never below 0", rows and min(r[2] for r in rows) >= 0.0)
    r = run("plot", *files, "--out", os.path.join(tmp, "seeds4l"), "--format", "gp",
            "--seed-lines", "--quiet")
    gp = figure(os.path.join(tmp, "seeds4l"), "loss") or ""
    check("--seed-lines: 4 seeds, 4 thin lines, no band", r.returncode == 0 and
          all(f"$l0 using 1:{c} with lines" in gp for c in (6, 7, 8, 9)) and "filledcurves" not in gp,
          r.stderr)


def check_constant_lr(tmp):
    """A constant lr: no lr panel, said in the subtitle; a decaying one keeps its panel."""
    const = [train(tmp, "const%s" % lr, "train.steps=8 train.schedule=constant train.warmup=1 "
                   "train.lr=%s" % lr) for lr in ("1e-3", "3e-3")]
    rc, err, d = plot(tmp, "const_lr", const)
    gp = figure(d, "loss") or ""
    check("constant lr: a loss figure without the lr panel", rc == 0 and gp and
          "set ylabel 'learning rate'" not in gp and gp.count("\nplot ") == 2, err)
    check("constant lr: the subtitle says so", "learning rate is constant in every run" in gp)
    decay = [train(tmp, "decay%s" % lr, "train.steps=8 train.warmup=1 train.lr=%s" % lr)
             for lr in ("1e-3", "3e-3")]
    rc, err, d = plot(tmp, "decay_lr", decay)
    gp = figure(d, "loss") or ""
    check("inverse-√ decay: the lr panel stays", rc == 0 and "set ylabel 'learning rate'" in gp
          and "is constant" not in gp, err)


def main():
    tmp = tempfile.mkdtemp(prefix="plot_overlay_")
    try:
        check_overlay(tmp)
        check_infinite_axes(tmp)
        check_words(tmp)
        check_order(tmp)
        check_seeds(tmp)
        check_constant_lr(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary("plot overlay")


if __name__ == "__main__":
    sys.exit(main())
