"""Shared pytest switches: live-provider tests run only on request, GPU tests only with CUDA."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--run-network", action="store_true", default=False,
                     help="run tests marked 'network' (they call live data providers)")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config, items):
    run_network = config.getoption("--run-network")
    cuda = None  # imported lazily: only when a gpu test was collected
    for item in items:
        if item.get_closest_marker("network") and not run_network:
            item.add_marker(pytest.mark.skip(reason="talks to a live data provider: pass --run-network"))
        if item.get_closest_marker("gpu"):
            if cuda is None:
                cuda = _cuda_available()
            if not cuda:
                item.add_marker(pytest.mark.skip(reason="needs CUDA"))


# --- tests that need the whole machine -----------------------------------------------------------
# A test that starts worker processes or DDP ranks waits on all of them, and the learner borrows the
# idle workers' cores; beside another test on a 2-core machine such tests ran 2-5x slower (chapter 4
# under tests/test_colab.py: 158 s beside other tests, 31 s alone). Under pytest-xdist a test marked
# ``whole_machine`` therefore holds an exclusive lock while it runs and every other test a shared
# one (a readers-writer lock of two flock files shared by the workers; the turnstile lets a waiting
# exclusive test in before later shared ones).
try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the tests just run side by side
    fcntl = None


@pytest.fixture(autouse=True)
def _whole_machine_lock(request, tmp_path_factory):
    if fcntl is None or not hasattr(request.config, "workerinput"):  # no xdist: nothing runs beside it
        yield
        return
    folder = tmp_path_factory.getbasetemp().parent  # shared by every xdist worker of this session
    exclusive = request.node.get_closest_marker("whole_machine") is not None
    with open(folder / "turnstile.lock", "a") as turnstile, open(folder / "machine.lock", "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if not exclusive:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(machine, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if exclusive:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)


# --- shared fixtures for the data / rules / env tests ------------------------------------------
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

try:  # small torch ops are slower with several threads on a 2-core machine
    import torch as _torch

    _torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch is a hard dependency of the package
    pass


@pytest.fixture(scope="session")
def sse15_bars():
    """The embedded sse15 bars as ``load_sample`` returns them (treat as read-only)."""
    from finrl_tutorial.data import load_sample

    return load_sample("sse15")


@pytest.fixture(scope="session")
def sse15():
    """``load_market()`` on the embedded sample: a `PreparedMarket` with the SSE15 splits (read-only)."""
    from finrl_tutorial.data import load_market

    return load_market()


def _synthetic_bars(tickers=("600000.SH", "600036.SH"), days=40, start="2020-01-02", seed=0, base=10.0):
    """A small valid bar table: random walks inside the ±10 % limit, business-day calendar."""
    rng = np.random.default_rng(seed)
    dates = pd.bdate_range(start, periods=days)
    rows = []
    for j, tic in enumerate(tickers):
        close = np.round(base * (1 + j) * np.cumprod(1 + rng.uniform(-0.03, 0.03, days)), 2)
        open_ = np.round(close * (1 + rng.uniform(-0.01, 0.01, days)), 2)
        high = np.maximum(open_, close) + 0.05
        low = np.minimum(open_, close) - 0.05
        rows.append(pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "tic": tic, "open": open_, "high": high,
                                  "low": low, "close": close, "volume": rng.integers(1, 100, days) * 1e4}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture
def synthetic_bars():
    """Factory for small valid synthetic bar tables (see ``_synthetic_bars``)."""
    return _synthetic_bars


@pytest.fixture(scope="session")
def quiet():
    """The stored ``bench scale`` record of a quiet machine (chapters 4, 5 and 8 read it)."""
    from finrl_tutorial.book import read_records, scale
    return read_records(scale.SCALE_RECORD)


@pytest.fixture(scope="session")
def loaded():
    """The stored ``bench scale`` record of the same command under heavy load."""
    from finrl_tutorial.book import read_records, scale
    return read_records(scale.LOADED_SCALE_RECORD)


def _committed(name: str):
    from finrl_tutorial.book import read_records
    return read_records(name)[0]


@pytest.fixture(scope="session")
def learn():
    """The stored ``bench learn`` record of the planted-edge families (chapters 1.9 and 3)."""
    return _committed("bench_learn.json")


@pytest.fixture(scope="session")
def learn_default():
    """The same planted-edge benchmark run with the default learner (chapters 1.9 and 3)."""
    return _committed("bench_learn_default.json")


@pytest.fixture(scope="session")
def realistic():
    """The stored ``bench learn`` record at realistic signal strengths (chapter 1.11)."""
    return _committed("bench_learn_realistic.json")


@pytest.fixture(scope="session")
def walkforward():
    """The recorded walk-forward record on the sample (chapter 1.10)."""
    return _committed("bench_walkforward.json")


@pytest.fixture(scope="session")
def sweep():
    """The stored ``bench sweep`` record (chapters 1, 2 and 3)."""
    return _committed("bench_sweep.json")


@pytest.fixture(scope="session")
def factor():
    """The recorded with/without-factor record (chapter 7)."""
    return _committed("bench_factor.json")
