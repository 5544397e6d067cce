"""run_identity.py — which runs are one run, and what tells runs apart (docs/design.md §6j).

The rule every reader that aggregates runs follows, written once for the table scripts
(warmup_table.py, curvature_anchor_table.py import it) as the program writes it in C
(src/report/plot.c's plot_same_run, src/report/plot_label.c's plot_diff):

- A run is its resolved configuration (the file's `config` attribute) without the [output]
  keys and train.resume, with its seed, and its data: the root attributes data_sha256 and
  data_bytes where the file records them (files older than the data's identity have none; two
  runs are then told apart by their configuration alone). Two files of one run (the same file
  twice, a merged file with its own run files, a sweep that lists one value twice) are one run:
  it counts once, and one line on stderr says so.
- Runs of a table or figure differ in the keys whose values are not all equal; a cell of a
  table is keyed by every such key, so no run hides another (warm-up 20 and 50 are two cells,
  float32 and float64 two more). The keys the scheme explains (placement, norm, final norm, an
  initialisation that is a scheme's) are not keys of their own when the scheme differs.
"""
import configparser
import sys

# The keys that do not change a run's results (h5io_config_text in src/io/h5io_resume.c).
NOT_IDENTITY = ("train.resume",)
# The keys a scheme's name covers (scheme_name in src/config/scheme.c).
COVERED = ("model.placement", "model.norm", "model.final_norm", "init.scheme")


def text(value):
    """An HDF5 attribute as str (h5py gives bytes or str)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def config_items(config_text):
    """{"section.key": value} of a resolved config, without [output] and train.resume."""
    cfg = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
    cfg.read_string(config_text)
    return {f"{s}.{k}": v.strip() for s in cfg.sections() if s != "output"
            for k, v in cfg[s].items() if f"{s}.{k}" not in NOT_IDENTITY}


def identity(attrs):
    """(config items as a sorted tuple, data_sha256 or None, data_bytes or None) of a run's root
    attributes (a file's, or /runs/NAME's of a merged file)."""
    items = config_items(text(attrs["config"]))
    sha = text(attrs["data_sha256"]) if "data_sha256" in attrs else None
    size = int(attrs["data_bytes"]) if "data_bytes" in attrs else None
    return tuple(sorted(items.items())), sha, size


def same_run(a, b):
    """Whether identities a and b are one run: equal configs (seed included) and, where both
    record it, the same data."""
    if a[1] is not None and b[1] is not None and (a[1], a[2]) != (b[1], b[2]):
        return False
    return a[0] == b[0]


def unique(runs, ident=lambda r: r["identity"], where=lambda r: r["name"]):
    """runs without the second and later copies of a run (same_run), in order; one line on
    stderr names those counted once."""
    kept, twice = [], []
    for r in runs:
        twin = next((k for k in kept if same_run(ident(k), ident(r))), None)
        if twin is None:
            kept.append(r)
        else:
            twice.append(f"{where(r)} = {where(twin)}")
    if twice:
        print(f"{len(twice)} run{'s' if len(twice) > 1 else ''} given again, counted once (same "
              f"config, seed and data): {'; '.join(twice[:3])}{'; …' if len(twice) > 3 else ''}",
              file=sys.stderr)
    return kept


def differing(items, schemes=None, skip=("init.seed",)):
    """The keys whose values differ between the configs items (dicts of config_items), in the
    first config's order, without skip; with schemes (each run's scheme name), without the keys
    the scheme explains when they are constant within every scheme."""
    keys = list(dict.fromkeys(k for it in items for k in it))
    out = []
    for k in keys:
        if k in skip or len({it.get(k) for it in items}) < 2:
            continue
        if schemes is not None and k in COVERED and len(set(schemes)) > 1:
            within = {}
            for s, it in zip(schemes, items):
                within.setdefault(s, set()).add(it.get(k))
            if all(len(v) == 1 for v in within.values()):
                continue
        out.append(k)
    return out


def words(key, value):
    """A key and its value as a table names them: "warm-up 20", "no warm-up", "precision float32"."""
    if key == "train.warmup":
        return "no warm-up" if int(value) <= 1 else f"warm-up {int(value)}"
    if value is None:   # a key the config writes only away from its default
        value = "float64" if key == "train.precision" else "default"
    return f"{key.split('.', 1)[1].replace('_', ' ')} {value}"
