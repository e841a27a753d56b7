"""The embedded sample: real daily bars shipped inside the package (no network needed)."""
from __future__ import annotations

from importlib import resources

import pandas as pd

from .schema import DataError

SAMPLES = {
    "sse15": "15 Shanghai main-board large caps, 2015-01-05..2020-01-03, unadjusted tushare daily bars "
             "(MIT, AI4Finance Foundation; see sample/sse15.LICENSE and sample/sse15.README.md)",
}


def load_sample(name: str = "sse15") -> pd.DataFrame:
    """Bars of an embedded sample in the package schema (volume converted from lots to shares).

    Suspended days are absent rows, as in the original file; prices are unadjusted.
    """
    if name not in SAMPLES:
        raise DataError(f"unknown sample {name!r}; available: {', '.join(SAMPLES)}")
    with resources.files(__package__).joinpath(f"sample/{name}.csv.gz").open("rb") as handle:
        raw = pd.read_csv(handle, compression="gzip")
    bars = raw.rename(columns={"time": "date"}).drop(columns=["day"])
    bars["volume"] = bars["volume"] * 100  # the file counts lots of 100 shares
    return bars[["date", "tic", "open", "high", "low", "close", "volume"]]


def sample_licence(name: str = "sse15") -> str:
    """The licence notice that ships with a sample."""
    return resources.files(__package__).joinpath(f"sample/{name}.LICENSE").read_text()
