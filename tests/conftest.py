"""Shared test settings: hypothesis profiles sized for CI, and the jaxpr type check."""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=45, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# Every jaxpr a test stages, through make_jaxpr, linearize, grad or a jaxpr
# transform, is type-checked as it is built: a rule that builds a malformed
# jaxpr fails the test that exercises it, where the jaxpr is made.
@pytest.fixture(autouse=True)
def _check_every_staged_jaxpr(monkeypatch):
    from fgrad.ir.check import check_jaxpr
    from fgrad.ir.staging import StagingTrace

    to_jaxpr = StagingTrace.to_jaxpr

    def checked(self, outs):
        closed = to_jaxpr(self, outs)
        check_jaxpr(closed)
        return closed

    monkeypatch.setattr(StagingTrace, "to_jaxpr", checked)


# Tests marked `slow` (long property runs) are skipped unless selected by a
# marker expression naming them: `pytest -m slow` (`make test-slow`).
def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long test, skipped unless selected with -m slow")


def pytest_collection_modifyitems(config, items):
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow (make test-slow)")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)
