"""Where a figure was measured: the machine and the date every record and report carries."""
from __future__ import annotations

import datetime
import os
import platform

import torch


def machine() -> dict:
    """Where a figure was measured: UTC date, CPU count, platform, torch version and threads, GPU."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info
