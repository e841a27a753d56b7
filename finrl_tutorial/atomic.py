"""Atomic file writes: nothing written is ever seen half-done, and a failed write keeps the old file."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs):
    """Open a temporary file beside ``path`` for writing; on success flush it to disk and rename
    it over ``path`` (``os.replace`` is atomic); on any error delete it and re-raise.

    Missing parent folders are created. ``kwargs`` go to ``open`` (encoding, newline …).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, mode, **kwargs) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
