"""The errors that mean *bad input* or a run that cannot go on, and the small checks the configs use.

Everything a user can get wrong (a file, an option, a config value, a checkpoint) raises an
`InputError` whose message names the problem in one line; a training run that cannot go on (a
non-finite loss, a dead worker) raises a `TrainingError`. The command line turns exactly these
into ``error: <message>`` (`one_line`) and exit code 2. Any other exception is a bug and keeps its
traceback. `InputError` subclasses `ValueError`, so code that catches ``ValueError`` keeps working.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import sys
import warnings

import torch


class InputError(ValueError):
    """Bad user input (data, options, configs, files). The message names the problem in one line."""


class ConfigError(InputError):
    """A config field has a value it cannot take."""


class RunFolderError(InputError):
    """A run folder cannot be used: it holds another run, is locked, or cannot be written."""


class DataWarning(UserWarning):
    """Input that is legal but probably wrong (a factor that looks ahead, prices off the 0.01
    tick): the run goes on, and the message says what looks wrong and what to check."""


class TrainingError(RuntimeError):
    """Training cannot go on (e.g. a non-finite loss); the message says what was kept."""


def one_line(problem: BaseException | str, secret: str | None = None, limit: int | None = None) -> str:
    """``problem`` as one line, whatever its message: a string as it is, an exception as ``Type:
    message``; white space (newlines included) folded to single spaces, ``secret`` (a token) blanked
    out, and at most ``limit`` characters (None: no limit)."""
    text = problem if isinstance(problem, str) else f"{type(problem).__name__}: {problem}"
    text = " ".join(text.split())
    if secret:
        text = text.replace(secret, "***")
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


def show_data_warnings_in_one_line() -> None:
    """Print each `DataWarning` as ``warning: <message>`` on one line of stderr (the command line's
    form) instead of Python's file-and-line form; other warnings are shown as before."""
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, DataWarning):
            print("warning: " + one_line(str(message)), file=file or sys.stderr)
        else:
            original(message, category, filename, lineno, file, line)

    if getattr(original, "__name__", "") != "show":
        warnings.showwarning = show


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(owner: str, name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` must be an integer (not a bool, not 1.5) within [minimum, maximum]."""
    if not _is_int(value):
        raise ConfigError(f"{owner}.{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{owner}.{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{owner}.{name} must be <= {maximum}, got {value}")
    return int(value)


def check_real(owner: str, name: str, value, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False) -> float:
    """``value`` must be a finite real number within the given bounds (open or closed)."""
    if not _is_real(value) or not math.isfinite(value):
        raise ConfigError(f"{owner}.{name} must be a finite number, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ConfigError(f"{owner}.{name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and (value >= high if high_open else value > high):
        raise ConfigError(f"{owner}.{name} must be {'<' if high_open else '<='} {high}, got {value}")
    return float(value)


def check_positive(owner: str, name: str, value, allow_inf: bool = False) -> float:
    """``value`` must be a real number > 0 (not NaN, not a string; ``inf`` only if ``allow_inf``)."""
    if not _is_real(value) or math.isnan(value) or (math.isinf(value) and not allow_inf):
        kind = "a number > 0 (inf: no limit)" if allow_inf else "a finite number > 0"
        raise ConfigError(f"{owner}.{name} must be {kind}, got {value!r}")
    if value <= 0:
        raise ConfigError(f"{owner}.{name} must be > 0{' (inf: no limit)' if allow_inf else ''}, got {value}")
    return float(value)


def strict_fields(cls):
    """Make a dataclass's constructor refuse an unknown field, too many positional values or a
    field given twice with a `ConfigError` naming the fields (the generated ``__init__`` raises a
    bare ``TypeError``). ``dataclasses.replace`` goes through it too."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, /, *args, **kwargs):  # positional-only: a field called "self" is unknown, not a clash
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise ConfigError(f"{cls.__name__} has no field(s) {', '.join(unknown)} (its fields: {', '.join(names)})")
        if len(args) > len(names):
            raise ConfigError(f"{cls.__name__} takes at most {len(names)} values, got {len(args)}")
        twice = sorted(set(names[:len(args)]) & set(kwargs))
        if twice:
            raise ConfigError(f"{cls.__name__} got field(s) {', '.join(twice)} twice (by position and by name)")
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


def check_bool(owner: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{owner}.{name} must be True or False, got {value!r}")
    return value


def check_choice(owner: str, name: str, value, choices) -> str:
    if value not in choices:
        raise ConfigError(f"{owner}.{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_device(owner: str, name: str, value) -> str:
    """A device string torch can parse (``cpu``, ``cuda``, ``cuda:1`` …); availability is checked
    where the device is used (a config may be read on a machine without that device)."""
    if not isinstance(value, (str, torch.device)):
        raise ConfigError(f"{owner}.{name} must be a device name like 'cpu' or 'cuda', got {value!r}")
    try:
        torch.device(value)
    except (RuntimeError, ValueError, TypeError):
        raise ConfigError(f"{owner}.{name}: unknown device {str(value)!r} (use cpu, cuda, cuda:1 …)") from None
    return str(value)


def require_device(device) -> torch.device:
    """The ``torch.device`` for ``device`` if this machine has it, else an `InputError` saying why."""
    try:
        resolved = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise InputError(f"unknown device {str(device)!r} (use cpu, cuda, cuda:1 …)") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            built = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise InputError(f"device {str(device)!r} requested but CUDA is not available ({built}): use --device cpu")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise InputError(f"device {str(device)!r} requested but only {torch.cuda.device_count()} "
                             "CUDA device(s) are visible")
    elif resolved.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise InputError(f"device {str(device)!r} requested but MPS is not available: use --device cpu")
    elif resolved.type != "cpu":
        raise InputError(f"device {str(device)!r} is not supported here (use cpu or cuda)")
    return resolved
