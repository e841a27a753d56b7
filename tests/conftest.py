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
