"""userfile.py — how the Python helpers (bleu.py, translation_pairs.py) open files and split
them into lines, so that they agree with the C side (docs/faults.md):

  - only a regular file is opened (symbolic links are followed, as the C readers do): a FIFO
    would block, a device never end. A FIFO is opened without waiting (O_NONBLOCK) and refused
    after fstat, so there is no moment between a check and the open;
  - a line is the text up to "\n", as the C side counts lines (corpus.c, run_translate.c,
    `wc -l`): "\r", "\f", "\v", "\x1c"-"\x1e", U+0085, U+2028 and U+2029, which Python's
    splitlines() and universal newlines also take as line ends, are characters of the line.
    The text after the last "\n" is a line when it is not empty; one "\r" before a "\n" (a
    CRLF file) is dropped with it, which changes no line's number.
"""
import errno
import os
import stat

KINDS = ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
         (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))


class NotRegular(OSError):
    """path is not a regular file: str(e) is "PATH: is a FIFO; only a regular file is read"."""

    def __init__(self, path, kind, verb):
        super().__init__(errno.EINVAL, f"is a {kind}; only a regular file is {verb}", path)

    def __str__(self):
        return f"{self.filename}: {self.strerror}"


def _check(fd, path, verb):
    """Raise NotRegular (fd closed) unless fd is a regular file."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return
    os.close(fd)
    raise NotRegular(path, next((k for test, k in KINDS if test(mode)), "special file"), verb)


def open_read(path):
    """path opened for reading in binary mode, if it is a regular file (OSError otherwise)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    _check(fd, path, "read")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_write(path):
    """path opened for writing text (UTF-8, "\n"), made or emptied, if it is missing or a
    regular file: never a link (O_NOFOLLOW), a FIFO or a device (OSError otherwise)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o666)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO):   # a link; a FIFO nobody reads
            raise NotRegular(path, "symbolic link" if e.errno == errno.ELOOP else "FIFO",
                             "written") from None
        raise
    _check(fd, path, "written")
    os.set_blocking(fd, True)
    os.ftruncate(fd, 0)
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


def read_text(path):
    """The whole of the regular file path as UTF-8 text (OSError, UnicodeDecodeError)."""
    with open_read(path) as f:
        return f.read().decode("utf-8")


def split_lines(text):
    """text's lines as the C side counts them (the module's docstring)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
