"""Atomic file writes: nothing written is ever seen half-done, and a failed write keeps the old file."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process umask. Read from /proc where there is one: setting it to read it back would
    race with other threads creating files."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs):
    """Open a temporary file beside ``path`` for writing; on success flush it to disk and rename
    it over ``path`` (``os.replace`` is atomic); on any error delete it and re-raise.

    Missing parent folders are created. ``kwargs`` go to ``open`` (encoding, newline …). The
    file gets the mode a plain ``open`` would give it (the umask's), or keeps the mode of the
    file it replaces (``mkstemp`` alone would make every file private, 0600).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        file_mode = path.stat().st_mode & 0o7777
    except OSError:
        file_mode = 0o666 & ~_umask()
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, mode, **kwargs) as stream:
            yield stream
            stream.flush()
            os.chmod(temp, file_mode)
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
