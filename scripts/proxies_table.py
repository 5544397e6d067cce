#!/usr/bin/python3
"""proxies_table.py results/proxies_2017.h5 [results/proxies_llama.h5 ...] — the size study as
Markdown tables (docs/proxies.md; Wortsman et al. 2023, "Small-scale proxies for large-scale
Transformer training instabilities").

Reads merged sweep files of experiments/proxies_*.ini (h5py only) and groups their runs into
arms — block (the 2017 block or today's, from the stored config), depth, parametrization,
QK-norm, z-loss — each swept over width d, the learning rate and seeds. Per arm and width:

- LR sensitivity: the atlas's definition (docs/design.md §6c/§6d, scripts/atlas_table.py's own
  functions): the mean over the lr grid of min(final loss, initial loss) minus the best final
  loss, a diverged run counting as its initial loss; per seed, then mean ± 95 % half-width over
  the seeds (Student t, GSL).
- the sizes' ordering by it, and its change from the smallest width to the largest and from
  QK-norm off to on, as differences paired by seed (a seed is the same data order at every
  width), each with its 95 % interval;
- the best lr: each seed's grid minimum refined by the parabola through it and its two
  neighbours in log lr; across widths, per seed, its spread (max - min of log10, decades) and
  its exponent k in lr* ~ d^k; standard against muP, paired by seed;
- where each width fails: the lr, above the best, at which the final loss (capped at the
  initial loss; diverged = initial loss) first rises more than --fail-margin nats above the
  seed's best, interpolated linearly in log lr between the grid's points; "above the grid" when
  no lr fails (left out of the fit and counted). A least-squares line through log10 lr_fail
  against log10 d over every (width, seed) (GSL's gsl_fit_linear, through ctypes) predicts the
  next width up (twice the largest): the line's value with the 95 % interval of the mean and
  the 95 % prediction interval of one seed's run (Student t, n - 2 degrees of freedom);
- the peak max |attention logit| of each run (/train/max_attn_logit over the updates), median
  over the seeds, per width and lr: the mechanism beside the losses.

Run names, files and their order do not matter: every grouping comes from each run's stored
configuration.
"""
import argparse
import configparser
import ctypes
import ctypes.util
import functools
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atlas_table   # noqa: E402  (read_runs, one_row, sensitivity, mean_ci: the atlas's definitions)
import script_inputs   # noqa: E402  (one line and exit 2 for a wrong input)


# ---- reading ---------------------------------------------------------------------------------

def block_of(cfg):
    """'2017' (sinusoidal positions, ReLU/GELU, biases, LayerNorm), 'today' (rope, SwiGLU, no
    biases, RMSNorm: LLaMA's block, design §6i), else the four keys as they are."""
    get = lambda k, d: cfg.get("model", k, fallback=d)
    pos, act, bias, norm = (get("positions", "sinusoidal"), get("activation", "relu"),
                            get("bias", "on"), get("norm", "layernorm"))
    if pos == "sinusoidal" and act in ("relu", "gelu") and bias in ("on", "true") and norm == "layernorm":
        return "2017"
    if pos == "rope" and act == "swiglu" and bias in ("off", "false") and norm == "rmsnorm":
        return "today"
    return f"positions={pos} activation={act} bias={bias} norm={norm}"


def read_extras(path):
    """{run name: the size-study fields of its stored config and /train} for one merged file."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, g in f["runs"].items():
            if "train" not in g:
                continue
            text = g.attrs["config"]
            cfg = configparser.ConfigParser(inline_comment_prefixes=(";",))
            cfg.read_string(text.decode() if isinstance(text, bytes) else text)
            t = g["train"]
            logit = t["max_attn_logit"][:] if "max_attn_logit" in t else np.array([])
            logit = logit[np.isfinite(logit)]
            out[name] = {
                "d": int(cfg["model"]["d_model"]),
                "block": block_of(cfg),
                "param": cfg.get("init", "parametrization", fallback="standard"),
                "qk": cfg.get("model", "qk_norm", fallback="off"),
                "z": float(cfg.get("train", "z_loss", fallback="0")),
                "peak_logit": float(logit.max()) if len(logit) else np.nan,
            }
    return out


def read_study(paths, stability):
    """Every training run of the files: atlas_table.read_runs's fields (final, loss0, diverged,
    lr, seed, L, ...) and read_extras's."""
    runs = []
    for path in paths:
        extra = read_extras(path)
        for r in atlas_table.read_runs(path, atlas_table.schemes_of(stability, path)):
            r.update(extra[r["name"]])
            runs.append(r)
    return runs


def arm_label(arm):
    """A readable name of an arm (block, L, param, qk, z)."""
    block, L, param, qk, z = arm
    # stored names (docs/design.md §6h): `mup` is μParam (simple), `mup_table3` Table 3
    parts = [{"mup": "μP", "mup_table3": "μP Table 3"}.get(param, "standard")]
    if qk != "off":
        parts.append(f"QK-norm ({qk})")
    if z:
        parts.append(f"z-loss {z:g}")
    name = {"2017": "2017 block", "today": "today's block"}.get(block, block)
    return f"{name}, L = {L}, " + " + ".join(parts)


def arms_of(runs):
    """{arm: {d: {seed: [runs sorted by lr]}}}, arm = (block, L, param, qk, z)."""
    out = {}
    for r in runs:
        arm = (r["block"], r["L"], r["param"], r["qk"], r["z"])
        out.setdefault(arm, {}).setdefault(r["d"], {}).setdefault(r["seed"], []).append(r)
    for sizes in out.values():
        for seeds in sizes.values():
            for k in seeds:
                seeds[k].sort(key=lambda r: r["lr"])
    return out


# ---- the numbers -----------------------------------------------------------------------------

def capped(rs):
    """min(final, initial loss) of each run, a diverged run (final NaN) its initial loss: the
    losses the LR sensitivity averages (docs/design.md §6c)."""
    return np.array([min(r["final"], r["loss0"]) if np.isfinite(r["final"]) else r["loss0"]
                     for r in rs])


def best_lr(lrs, c):
    """(lr*, at_edge): the grid minimum of the capped losses c over lrs (ascending), refined
    by the vertex of the parabola through it and its two neighbours in log10 lr; at_edge when
    the minimum is the grid's first or last point (then lr* is that point)."""
    b = int(np.argmin(c))
    if b == 0 or b == len(c) - 1:
        return float(lrs[b]), True
    x = np.log10(np.asarray(lrs[b - 1:b + 2], dtype=float))
    a2, a1, _ = np.polyfit(x, np.asarray(c[b - 1:b + 2], dtype=float), 2)
    if a2 <= 0:   # three equal losses: no curvature, keep the grid point
        return float(lrs[b]), False
    return float(10 ** (-a1 / (2 * a2))), False


def fail_lr(lrs, c, margin):
    """(lr_fail, above_grid): the lr above the best at which the capped loss c first exceeds
    the best by more than margin, linear in log10 lr between the last point within the margin
    and the first beyond it; (the grid's last lr, True) when none exceeds it."""
    b = int(np.argmin(c))
    thr = c[b] + margin
    for i in range(b + 1, len(c)):
        if c[i] > thr:
            x0, x1 = math.log10(lrs[i - 1]), math.log10(lrs[i])
            return float(10 ** (x0 + (thr - c[i - 1]) / (c[i] - c[i - 1]) * (x1 - x0))), False
    return float(lrs[-1]), True


@functools.lru_cache(maxsize=None)
def _gsl():
    lib = ctypes.CDLL(ctypes.util.find_library("gsl") or "libgsl.so.27")
    dp, sz = ctypes.POINTER(ctypes.c_double), ctypes.c_size_t
    lib.gsl_fit_linear.argtypes = [dp, sz, dp, sz, sz] + [dp] * 6
    lib.gsl_fit_linear.restype = ctypes.c_int
    lib.gsl_fit_linear_est.argtypes = [ctypes.c_double] * 6 + [dp, dp]
    lib.gsl_fit_linear_est.restype = ctypes.c_int
    return lib


def fit_line(x, y):
    """GSL's unweighted least-squares line y = c0 + c1·x (gsl_fit_linear): a dict of c0, c1,
    their covariance (estimated from the residuals) cov00, cov01, cov11, the residual sum of
    squares sumsq and n."""
    x = np.ascontiguousarray(x, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    out = [ctypes.c_double() for _ in range(6)]
    dp = ctypes.POINTER(ctypes.c_double)
    rc = _gsl().gsl_fit_linear(x.ctypes.data_as(dp), 1, y.ctypes.data_as(dp), 1, len(x),
                               *[ctypes.byref(o) for o in out])
    if rc:
        raise ValueError(f"gsl_fit_linear failed ({rc})")
    keys = ("c0", "c1", "cov00", "cov01", "cov11", "sumsq")
    return dict(zip(keys, (o.value for o in out)), n=len(x))


def predict(fit, x):
    """(ŷ, half-width of the mean's 95 % interval, half-width of the 95 % prediction interval
    of one new point) at x, from gsl_fit_linear_est and Student t with n - 2 degrees of
    freedom; NaN half-widths with fewer than 3 points."""
    y, err = ctypes.c_double(), ctypes.c_double()
    _gsl().gsl_fit_linear_est(x, fit["c0"], fit["c1"], fit["cov00"], fit["cov01"], fit["cov11"],
                              ctypes.byref(y), ctypes.byref(err))
    n = fit["n"]
    if n < 3:
        return y.value, np.nan, np.nan
    t = atlas_table.t_quantile(0.975, n - 2)
    s2 = fit["sumsq"] / (n - 2)
    return y.value, t * err.value, t * math.sqrt(err.value ** 2 + s2)


def seed_stats(rs, margin):
    """One arm, width and seed (rs sorted by lr): the atlas's row (sens, best, div, top) plus
    the refined best lr and the failing lr."""
    lrs = [r["lr"] for r in rs]
    c = capped(rs)
    row = atlas_table.one_row(rs, np.inf)
    row["best_lr"], row["best_edge"] = best_lr(lrs, c)
    row["fail"], row["fail_above"] = fail_lr(lrs, c, margin)
    return row


def arm_stats(sizes, margin):
    """{d: {seed: seed_stats}} of one arm."""
    return {d: {k: seed_stats(rs, margin) for k, rs in seeds.items()} for d, seeds in sizes.items()}


def paired(a, b):
    """Mean and 95 % half-width of a[k] - b[k] over the seeds k both hold."""
    return atlas_table.mean_ci([a[k] - b[k] for k in sorted(set(a) & set(b))])


def spread_and_exponent(per_size):
    """per_size {d: {seed: lr*}} -> ({seed: max - min of log10 lr* over the widths},
    {seed: k of the least-squares line log10 lr* = c + k·log10 d}), seeds that every width has."""
    ds = sorted(per_size)
    seeds = sorted(set.intersection(*(set(per_size[d]) for d in ds))) if ds else []
    spread, expo = {}, {}
    for k in seeds:
        y = np.log10([per_size[d][k] for d in ds])
        spread[k] = float(y.max() - y.min())
        if len(ds) >= 2:
            expo[k] = fit_line(np.log10(ds), y)["c1"]
    return spread, expo


def extrapolate(stats):
    """The failing lr against width over every (width, seed) not above the grid: the fit, the
    next width (2 × the largest) and the prediction there; None with fewer than 3 points or one
    width."""
    pts = [(d, s["fail"]) for d, seeds in stats.items() for s in seeds.values() if not s["fail_above"]]
    if len(pts) < 3 or len({d for d, _ in pts}) < 2:
        return None
    fit = fit_line(np.log10([d for d, _ in pts]), np.log10([f for _, f in pts]))
    d_next = 2 * max(stats)
    y, h_mean, h_pred = predict(fit, math.log10(d_next))
    above = sum(s["fail_above"] for seeds in stats.values() for s in seeds.values())
    return {"fit": fit, "d_next": d_next, "y": y, "h_mean": h_mean, "h_pred": h_pred,
            "n": len(pts), "above": above}


# ---- printing --------------------------------------------------------------------------------

def pm(m, h, fmt="{:.3f}"):
    if not np.isfinite(m):
        return "–"
    return fmt.format(m) + (" ± " + fmt.format(h) if np.isfinite(h) else "")


def lr_interval(logs):
    """Geometric mean of lrs given as log10 values, with its 95 % interval: 'a [lo, hi]'."""
    m, h = atlas_table.mean_ci(logs)
    if not np.isfinite(m):
        return "–"
    return f"{10 ** m:.2g}" + (f" [{10 ** (m - h):.2g}, {10 ** (m + h):.2g}]" if np.isfinite(h) else "")


def verdict(m, h):
    if not (np.isfinite(m) and np.isfinite(h)):
        return "–"
    return "up" if m - h > 0 else "down" if m + h < 0 else "not resolved"


class Study:
    """The runs grouped for the tables: arms in print order, each arm's per-seed numbers, the
    widths, the seeds a cell and each arm's lr grid."""

    def __init__(self, runs, margin):
        self.runs, self.margin = runs, margin
        self.arms = arms_of(runs)
        self.order = sorted(self.arms, key=lambda a: (a[0], a[1], a[2] != "standard", a[2],
                                                      a[3] != "off", a[4]))
        self.stats = {a: arm_stats(self.arms[a], margin) for a in self.order}
        self.widths = sorted({d for a in self.order for d in self.arms[a]})
        self.seeds = max(len(s) for a in self.order for s in self.arms[a].values())
        self.grids = {a: sorted({r["lr"] for seeds in self.arms[a].values() for rs in seeds.values()
                                 for r in rs}) for a in self.order}
        self.lrs = sorted({r["lr"] for r in runs})

    def per_seed(self, a, d, key):
        """{seed: that seed's number `key`} of arm a at width d."""
        return {k: x[key] for k, x in self.stats[a][d].items()}

    def at(self, a, d, lr):
        """The runs (every seed) of arm a at width d and learning rate lr."""
        return [r for rs in self.arms[a].get(d, {}).values() for r in rs if r["lr"] == lr]


def header(p, first, columns):
    p("| " + " | ".join(first + columns) + " |")
    p("|" + "---|" * (len(first) + len(columns)))


def table_sensitivity(st, p):
    p("### LR sensitivity per width\n")
    p("Mean over the lr grid of min(final loss, initial loss) − best final loss (nats; a "
      f"diverged run counts as its initial loss), mean ± 95 % half-width over {st.seeds} seeds; "
      "(k div): diverged runs.\n")
    header(p, ["arm", "lr grid"], [f"d = {d}" for d in st.widths])
    for a in st.order:
        cells = []
        for d in st.widths:
            if d not in st.stats[a]:
                cells.append("–")
                continue
            m, h = atlas_table.mean_ci(list(st.per_seed(a, d, "sens").values()))
            div = sum(st.per_seed(a, d, "div").values())
            cells.append(pm(m, h) + (f" ({div} div)" if div else ""))
        g = st.grids[a]
        p(f"| {arm_label(a)} | {g[0]:g} … {g[-1]:g} ({len(g)}) | " + " | ".join(cells) + " |")


def table_order(st, p):
    p("\n### Ordering of the widths by LR sensitivity\n")
    p("Widths from the least to the most sensitive (means); Δ = the largest width's sensitivity "
      "minus the smallest's, paired by seed, mean ± 95 % half-width: 'up' when the interval lies "
      "above 0 (more sensitive as the model grows, Wortsman et al.'s finding without QK-norm), "
      "'down' below, else 'not resolved'.\n")
    header(p, ["arm", "order (least sensitive first)", "Δ largest − smallest", "trend"], [])
    for a in st.order:
        ds = sorted(st.stats[a])
        sens = {d: st.per_seed(a, d, "sens") for d in ds}
        means = {d: atlas_table.mean_ci(list(sens[d].values()))[0] for d in ds}
        order = " < ".join(str(d) for d in sorted(ds, key=lambda d: means[d]))
        m, h = paired(sens[ds[-1]], sens[ds[0]]) if len(ds) > 1 else (np.nan, np.nan)
        p(f"| {arm_label(a)} | {order} | {pm(m, h)} | {verdict(m, h)} |")


def one_more(a, b):
    """What arm b adds to arm a when it adds one remedy — QK-norm (a's off) or the z-loss (a's
    0) — else None."""
    if a[:3] != b[:3]:
        return None
    if a[4] == b[4] and a[3] == "off" and b[3] != "off":
        return f"QK-norm ({b[3]})"
    if a[3] == b[3] and a[4] == 0 and b[4] > 0:
        return f"z-loss {b[4]:g}"
    return None


def table_remedies(st, p):
    pairs = [(a, b, one_more(a, b)) for a in st.order for b in st.order if one_more(a, b)]
    if not pairs:
        return
    p("\nWhat a remedy changes: the sensitivity without it minus with it, paired by seed (mean ± "
      "95 % half-width; > 0: the remedy lowers it).\n")
    header(p, ["arm", "+ remedy"], [f"d = {d}" for d in st.widths])
    for a, b, what in pairs:
        cells = [pm(*paired(st.per_seed(a, d, "sens"), st.per_seed(b, d, "sens")))
                 if d in st.stats[a] and d in st.stats[b] else "–" for d in st.widths]
        p(f"| {arm_label(a)} | {what} | " + " | ".join(cells) + " |")


def table_best_lr(st, p):
    p("\n### The best learning rate against width\n")
    p("Per seed the grid's best lr refined by the parabola through it and its neighbours in "
      "log lr (* : the best is the grid's edge in some seed); geometric mean over the seeds with "
      "its 95 % interval. Spread: max − min of log10 lr* over the widths (decades), per seed; "
      "exponent k of lr* ∝ d^k (least squares over the widths, per seed); both mean ± 95 % "
      "half-width over the seeds. μP's claim: spread and k near 0.\n")
    header(p, ["arm"], [f"d = {d}" for d in st.widths] + ["spread (decades)", "k"])
    spreads = {}
    for a in st.order:
        per = {d: st.per_seed(a, d, "best_lr") for d in st.stats[a]}
        cells = []
        for d in st.widths:
            if d not in per:
                cells.append("–")
                continue
            edge = any(st.per_seed(a, d, "best_edge").values())
            cells.append(lr_interval(np.log10(list(per[d].values()))) + (" *" if edge else ""))
        spreads[a] = spread_and_exponent(per)
        sp, k = (atlas_table.mean_ci(list(x.values())) for x in spreads[a])
        p(f"| {arm_label(a)} | " + " | ".join(cells) + f" | {pm(*sp, '{:.2f}')} | {pm(*k, '{:.2f}')} |")
    pairs = [(a, b) for a in st.order for b in st.order
             if a[:2] == b[:2] and a[3:] == b[3:] and a[2] == "standard" and b[2] == "mup"]
    if pairs:
        p("\nStandard minus μP, paired by seed (mean ± 95 % half-width; spread > 0: μP's best lr "
          "moves less across the widths).\n")
        header(p, ["arms", "Δ spread (decades)", "Δ k"], [])
        for a, b in pairs:
            p(f"| {arm_label(a)} vs μP | {pm(*paired(spreads[a][0], spreads[b][0]), '{:.2f}')} | "
              f"{pm(*paired(spreads[a][1], spreads[b][1]), '{:.2f}')} |")


def fail_cell(st, a, d):
    """'geometric mean [95 %] (> top in n of m)' of one arm's failing lr at width d."""
    s = st.stats[a][d]
    ok = [math.log10(x["fail"]) for x in s.values() if not x["fail_above"]]
    above = sum(x["fail_above"] for x in s.values())
    text = lr_interval(ok) if ok else ""
    if above:
        text += f"{' ' if ok else ''}(> {st.grids[a][-1]:g} in {above} of {len(s)})"
    return text


def table_fail(st, p):
    p("\n### Where each width fails, and the next width up\n")
    p(f"lr_fail: the lr above the best at which the final loss first lies more than {st.margin:g} "
      "nats above the seed's best (capped at the initial loss, diverged = initial loss), "
      "interpolated in log lr; geometric mean over the seeds with its 95 % interval ('> lr': no "
      "lr of the grid fails in some seed, left out of the fit). Fit: log10 lr_fail = c + "
      "k·log10 d over every (width, seed), GSL least squares; the next width's lr_fail with the "
      "95 % interval of the line and the 95 % prediction interval of one run.\n")
    header(p, ["arm"], [f"d = {d}" for d in st.widths] +
           ["k ± 95 %", "next width: lr_fail [line] [one run]"])
    for a in st.order:
        cells = [fail_cell(st, a, d) if d in st.stats[a] else "–" for d in st.widths]
        e = extrapolate(st.stats[a])
        if e is None:
            p(f"| {arm_label(a)} | " + " | ".join(cells) + " | – | too few widths fail |")
            continue
        f = e["fit"]
        t = atlas_table.t_quantile(0.975, f["n"] - 2) if f["n"] > 2 else np.nan
        y, hm, hp = e["y"], e["h_mean"], e["h_pred"]
        nxt = (f"d = {e['d_next']}: {10 ** y:.2g} [{10 ** (y - hm):.2g}, {10 ** (y + hm):.2g}] "
               f"[{10 ** (y - hp):.2g}, {10 ** (y + hp):.2g}] ({e['n']} points"
               + (f", {e['above']} above the grid left out" if e["above"] else "") + ")")
        p(f"| {arm_label(a)} | " + " | ".join(cells) +
          f" | {pm(f['c1'], t * math.sqrt(f['cov11']), '{:.2f}')} | {nxt} |")


def table_per_lr(st, p, title, note, cell):
    """One row per arm and width, one column per lr: cell(runs of every seed there)."""
    p(f"\n### {title}\n")
    p(note + "\n")
    header(p, ["arm", "d"], [f"{lr:g}" for lr in st.lrs])
    for a in st.order:
        for d in sorted(st.arms[a]):
            cells = [cell(rs) if rs else "" for rs in (st.at(a, d, lr) for lr in st.lrs)]
            p(f"| {arm_label(a)} | {d} | " + " | ".join(cells) + " |")


def logit_cell(rs):
    v = [r["peak_logit"] for r in rs if np.isfinite(r["peak_logit"])]
    return ((f"{np.median(v):.3g}" if v else "–") +
            (" ×" if any(r["diverged"] for r in rs) else ""))


def loss_cell(rs):
    return pm(*atlas_table.mean_ci([r["final"] for r in rs])) + (
        " ×" if any(r["diverged"] for r in rs) else "")


def print_tables(runs, margin, curves=False, out=sys.stdout):
    """Every table of the study (docs/proxies.md), Markdown, to out."""
    p = lambda *a: print(*a, file=out)
    st = Study(runs, margin)
    table_sensitivity(st, p)
    table_order(st, p)
    table_remedies(st, p)
    table_best_lr(st, p)
    table_fail(st, p)
    table_per_lr(st, p, "Peak max |attention logit|",
                 "max over the updates of /train/max_attn_logit, median over the seeds (× : a "
                 "seed diverged at that lr).", logit_cell)
    if curves:
        table_per_lr(st, p, "Final loss against lr (their Fig. 1)",
                     "Mean final validation loss over the seeds ± 95 % half-width (× : a seed "
                     "diverged).", loss_cell)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="merged sweep files (results/proxies_*.h5)")
    ap.add_argument("--fail-margin", type=float, default=0.2,
                    help="a width fails at an lr above its best once its final loss lies more "
                         "than this above the best (nats; default 0.2)")
    ap.add_argument("--curves", action="store_true",
                    help="also print the final loss against lr per arm and width (their Fig. 1)")
    ap.add_argument("--stability", default=os.path.join(atlas_table.ROOT, "stability"),
                    help="the program atlas_table.read_runs asks for each run's scheme "
                         "(default: the repository's ./stability)")
    a = ap.parse_args()
    script_inputs.positive("--fail-margin", a.fail_margin)
    for x in a.files:
        script_inputs.merged(x)
    if not os.access(a.stability, os.X_OK):
        sys.exit(f"{a.stability}: not found (build it with make, or pass --stability)")
    runs = read_study(a.files, a.stability)
    if not runs:
        sys.exit(f"{', '.join(a.files)}: no training runs under /runs")
    print_tables(runs, a.fail_margin, a.curves)


if __name__ == "__main__":
    main()
