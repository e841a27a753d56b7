"""Atomic file writes: nothing written is ever seen half-done, and a failed write keeps the old file.

Every file the package writes (run folders, records, figures, checkpoints, caches) goes through
one of these: `atomic_open` underneath, and one writer per kind of file on top of it —
`write_json`, `write_json_lines`, `write_csv`, `atomic_save` (torch), `save_figure`
(matplotlib), `copy_file` — plus `append_open` for a log that grows row by row and
`written_together` for files that are one result (all renamed into place, or none).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch


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


@contextlib.contextmanager
def append_open(path: str | os.PathLike, **kwargs):
    """Open ``path`` to append to it (a log that grows row by row: rewriting it whole for every row
    would copy it each time); flushed to disk when the block ends, so what was appended before a
    crash is kept. A block that fails (a full disk half-way through a row) is cut off again: the
    file keeps only whole appends. ``kwargs`` go to ``open``."""
    size = os.path.getsize(path) if os.path.exists(path) else 0
    try:
        with open(path, "a", **kwargs) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.truncate(path, size)
        raise


@contextlib.contextmanager
def written_together(*paths: str | os.PathLike):
    """Temporary paths beside ``paths`` (each keeps its extension) for files that belong together
    (a backtest's JSON and its plot): when the block succeeds all are renamed into place; when it
    fails none is, and the temporary files are deleted, so no result is left half-written."""
    paths = [Path(path) for path in paths]
    temps = []
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
        os.close(handle)
        os.chmod(temp, 0o666 & ~_umask())  # a plain open's mode, not mkstemp's private 0600
        temps.append(Path(temp))
    try:
        yield temps
        for temp, path in zip(temps, paths):
            os.replace(temp, path)
    finally:
        for temp in temps:
            with contextlib.suppress(OSError):
                temp.unlink()


def write_json(obj, path: str | os.PathLike) -> Path:
    """``obj`` as indented JSON; NaN/inf are refused (``ValueError``), not written."""
    with atomic_open(path) as stream:
        json.dump(obj, stream, indent=2, allow_nan=False)
    return Path(path)


def write_json_lines(records, path: str | os.PathLike) -> Path:
    """One JSON document per line (benchmark records)."""
    with atomic_open(path) as stream:
        stream.writelines(json.dumps(record) + "\n" for record in records)
    return Path(path)


def write_csv(frame, path: str | os.PathLike) -> Path:
    """A DataFrame as UTF-8 CSV without its index."""
    with atomic_open(path, "w", encoding="utf-8", newline="") as stream:
        frame.to_csv(stream, index=False)
    return Path(path)


def atomic_save(obj, path: str | os.PathLike) -> Path:
    """``torch.save`` to a temp file in the same folder, then rename over ``path``: a crash never
    leaves a half-written checkpoint, and the previous one stays until the new one is complete."""
    with atomic_open(path, "wb") as stream:
        torch.save(obj, stream)
    return Path(path)


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Write the matplotlib figure ``fig`` to ``path`` (``dpi=120, bbox_inches='tight'``).

    The image format follows the file extension (the figure's default, ``savefig.format``, i.e.
    PNG, when there is none). Missing parent directories are created. Returns the path.
    """
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or fig.canvas.get_default_filetype()
    with atomic_open(path, "wb") as stream:
        fig.savefig(stream, dpi=120, bbox_inches="tight", format=fmt)
    return path


def copy_file(source: str | os.PathLike, path: str | os.PathLike) -> Path:
    """A copy of ``source`` at ``path`` (e.g. the best seed's checkpoint as the run's)."""
    with open(source, "rb") as original, atomic_open(path, "wb") as stream:
        shutil.copyfileobj(original, stream)
    return Path(path)
