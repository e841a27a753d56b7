"""Where a figure was measured: the machine and the date every record and report carries."""
from __future__ import annotations

import datetime
import os
import platform

import torch

from .errors import InputError


def machine() -> dict:
    """Where a figure was measured: UTC date, CPU count, platform, torch version and threads, GPU."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


FAST_VARIABLE = "FINRL_TUTORIAL_FAST"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def loadavg() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages (None where the OS has none, e.g. Windows)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def fast_mode(environ=None) -> bool:
    """Whether ``FINRL_TUTORIAL_FAST`` asks for fast mode (the small budgets CI runs): the one parser
    of the variable, for the command line and the book alike. ``1``/``true``/``yes``/``on`` (any
    case) mean yes; unset, empty, ``0``/``false``/``no``/``off`` mean no; anything else is refused
    in one line rather than guessed."""
    value = (os.environ if environ is None else environ).get(FAST_VARIABLE, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InputError(f"{FAST_VARIABLE}={value!r} is neither on (1, true, yes) nor off (0, false, no, or unset): "
                     f"set {FAST_VARIABLE}=1 or unset it")
