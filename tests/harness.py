"""harness.py — what the Python tests share to run apart from the repository: a working
directory in a temporary folder that looks like the repository to relative paths (configs/,
experiments/, runtime/, setup/, tools/ and ./stability linked; the corpus
results/licenses.txt linked: to be read, never written), so a test's results/<sweep>/ and plots/ are its own and two test runs cannot collide (docs/testing.md)."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINKED = ("configs", "experiments", "runtime", "setup", "tools", "stability",
          os.path.join("results", "licenses.txt"))


def repo_like(d):
    """Make d (created if missing) a working directory for the program: results/ of its own, the
    repository's configs/, experiments/, runtime/, setup/, tools/, ./stability and
    corpus linked in. Returns d."""
    os.makedirs(os.path.join(d, "results"), exist_ok=True)
    for rel in LINKED:
        src, dst = os.path.join(REPO, rel), os.path.join(d, rel)
        if os.path.exists(src) and not os.path.lexists(dst):
            os.symlink(src, dst)
    return d


class chdir_repo_like:
    """with chdir_repo_like(tmp): the block runs in repo_like(tmp/work) — relative results/...
    paths land in the temporary folder — and the working directory is restored after it."""

    def __init__(self, tmp):
        self.dir, self.old = repo_like(os.path.join(tmp, "work")), None

    def __enter__(self):
        self.old = os.getcwd()
        os.chdir(self.dir)
        return self.dir

    def __exit__(self, *exc):
        os.chdir(self.old)
        return False
