"""Run folders: a run never destroys or mixes with another.

- A folder that holds a run is refused unless the caller resumes it or asks to overwrite it;
  overwriting deletes only a run's own files and refuses a folder that holds anything else.
- The default run name moves on to a fresh folder (``runs/ppo``, ``runs/ppo-2``, … as
  ultralytics does), so the same command can be run twice.
- A lock file (an OS lock, released even when the process is killed) keeps two processes out
  of one folder; it is removed when the run ends. Every writer takes one: ``train`` on its run
  folder (`claim`), ``backtest`` on its ``--out`` folder (`claim_output`, which also refuses a
  training run's folder: its ``equity.png`` is not the backtest's to replace), ``bench --out`` on
  its file (`file_lock`).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from ..errors import RunFolderError

try:  # the OS lock: flock on POSIX, msvcrt's byte-range lock on Windows (one of the two exists)
    import fcntl
except ImportError:
    fcntl = None
    import msvcrt

LOCK_NAME = ".lock"
RUN_FILES = frozenset({"report.json", "config.json", "log.csv", "learning_curve.png", "equity.png", "weights.png",
                       "best.pt", "last.pt", "backtest.json", LOCK_NAME})
"""Files a run (or a backtest inside its folder) writes; ``--overwrite`` deletes nothing else."""
RUN_FOLDERS = re.compile(r"checkpoints|backtest|seed_-?\d+")
_TEMP = re.compile(r"\..+\.tmp(\.\w+)?")  # atomic_open's temp files, left by a killed process
TRAINING_FILES = ("report.json", "config.json", "log.csv", "checkpoints")
"""What marks a folder as a training run's (a backtest may not write into it)."""


def foreign_entries(folder: Path) -> list[str]:
    """Paths under ``folder`` that no run writes (empty: it is a run folder)."""
    foreign = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink() and RUN_FOLDERS.fullmatch(entry.name):
            foreign += [f"{entry.name}/{name}" for name in foreign_entries(entry)]
        elif not (entry.is_file() and (entry.name in RUN_FILES or _TEMP.fullmatch(entry.name))):
            foreign.append(entry.name)
    return foreign


def has_content(folder: Path) -> bool:
    return folder.is_dir() and any(entry.name != LOCK_NAME for entry in folder.iterdir())


def next_free(folder: Path) -> Path:
    """``folder`` if it is free, else the first free ``folder-2``, ``folder-3`` …"""
    if not folder.exists() or not has_content(folder):
        return folder
    number = 2
    while True:
        candidate = folder.with_name(f"{folder.name}-{number}")
        if not candidate.exists() or not has_content(candidate):
            return candidate
        number += 1


def latest(folder: Path) -> Path:
    """The newest of ``folder``, ``folder-2``, … that exists (for resuming the default run)."""
    numbered = [(1, folder)] if folder.exists() else []
    if folder.parent.is_dir():
        for entry in folder.parent.iterdir():
            match = re.fullmatch(re.escape(folder.name) + r"-(\d+)", entry.name)
            if match and entry.is_dir():
                numbered.append((int(match.group(1)), entry))
    return max(numbered)[1] if numbered else folder


class RunLock:
    """An exclusive, non-blocking lock on a run folder (``<folder>/<name>``, ``.lock`` by
    default, holding the pid)."""

    def __init__(self, folder: Path, name: str = LOCK_NAME):
        self.folder = folder
        self.path = folder / name
        self.subject = folder if name == LOCK_NAME else folder / name[1:-len(".lock")]  # what it keeps
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as error:
            raise RunFolderError(f"cannot write to run folder {self.folder}: {error.strerror or error}") from None
        if fcntl is not None:
            lock = lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # noqa: E731
        else:  # Windows: msvcrt locks a byte range of the open file the same way
            lock = lambda: msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # noqa: E731
        try:
            lock()
            # the file may have been removed by its last holder between our open and lock
            if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                raise BlockingIOError
        except OSError:
            other = self._holder()
            os.close(fd)
            raise RunFolderError(f"{self.subject} is in use by another process"
                                 f"{f' (pid {other})' if other else ''}: wait for it or choose another --out") \
                from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        return self

    def _holder(self) -> str:
        with contextlib.suppress(OSError):
            return self.path.read_text().strip()
        return ""

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # unlinked while still locked: a waiting opener sees a new inode
        os.close(self.fd)
        self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def check_target(folder: Path) -> None:
    """``folder`` can be a run folder: not a file, not a link to nowhere, and (if it exists) a
    folder we may write."""
    if folder.is_symlink() and not folder.exists():
        raise RunFolderError(f"--out {folder} is a link to {os.readlink(folder)}, which does not exist: "
                             "create its target or choose another --out")
    if folder.exists() and not folder.is_dir():
        raise RunFolderError(f"--out {folder} is a file, not a folder")
    for parent in [folder, *folder.parents]:
        if parent.exists():
            if not parent.is_dir():
                raise RunFolderError(f"cannot create run folder {folder}: {parent} is a file")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise RunFolderError(f"cannot write to {parent} (permission denied): choose another --out")
            break


@contextlib.contextmanager
def claim(folder: str | os.PathLike, *, resume: bool = False, overwrite: bool = False):
    """Lock ``folder`` for one run and make sure no earlier run is lost or mixed in.

    An existing run in ``folder`` is refused unless ``resume`` (continue it) or ``overwrite``
    (delete its files first: only a run's own files, see `RUN_FILES`). Yields the folder.
    """
    folder = Path(folder)
    if resume and overwrite:
        raise RunFolderError("--resume and --overwrite exclude each other")
    check_target(folder)
    if resume and not has_content(folder):
        raise RunFolderError(f"nothing to resume in {folder} (no run there): start it without --resume")
    created = not folder.exists()
    try:
        with RunLock(folder):
            _make_room(folder, resume, overwrite)
            yield folder
    finally:
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # a run that could not start leaves no empty folder behind


def _make_room(folder: Path, resume: bool, overwrite: bool) -> None:
    """Refuse an earlier run (or foreign files) in ``folder``; with ``overwrite``, delete the run's files."""
    if not has_content(folder) or resume:
        return
    foreign = foreign_entries(folder)
    if foreign:
        raise RunFolderError(f"{folder} is not an empty folder and not a run folder (it holds "
                             f"{', '.join(foreign[:3])}{' …' if len(foreign) > 3 else ''}): choose another --out")
    if not overwrite:
        raise RunFolderError(f"{folder} already holds a run: pass --resume to continue it, "
                             "--overwrite to replace it, or choose another --out")
    for entry in folder.iterdir():
        if entry.name == LOCK_NAME:
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


@contextlib.contextmanager
def claim_output(folder: str | os.PathLike, names, *, overwrite: bool = False, what: str = "a backtest"):
    """Lock ``folder`` for a command that writes ``names`` into it (``backtest --out``): refused
    when it is a training run's folder (its files are that run's), when another process writes
    there, or when one of ``names`` exists and not ``overwrite``. A folder this creates and leaves
    empty (the command failed) is removed. Yields the folder."""
    folder = Path(folder)
    check_target(folder)
    created = not folder.exists()
    training = [name for name in TRAINING_FILES if (folder / name).exists()]
    if training:
        raise RunFolderError(f"{folder} is a training run's folder (it holds {', '.join(training)}): its files are "
                             f"not replaced by another command; write into {folder / 'backtest'} instead")
    try:
        with RunLock(folder):
            taken = [name for name in names if (folder / name).exists()]
            if taken and not overwrite:
                raise RunFolderError(f"{folder} already holds {what} ({', '.join(taken)}): pass --overwrite to "
                                     "replace it, or choose another --out")
            yield folder
    finally:
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


@contextlib.contextmanager
def file_lock(path: str | os.PathLike):
    """Keep other processes from writing ``path`` (``bench --out``) while the block runs: an OS
    lock on ``.<name>.lock`` beside it."""
    path = Path(path)
    check_target(path.parent)
    if path.is_symlink() and not path.exists():
        raise RunFolderError(f"--out {path} is a link to {os.readlink(path)}, which does not exist: "
                             "create its target or choose another --out")
    with RunLock(path.parent, f".{path.name}.lock"):
        yield path
