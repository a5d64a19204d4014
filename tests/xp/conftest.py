"""Fixtures of the xp tests (the NumPy-comparison helpers are in tests/xp/compare.py)."""
import pytest

import npudist.xp as nxp


@pytest.fixture(autouse=True)
def _float64_mode_off():
    prev = nxp.set_float64_mode("off")
    yield
    nxp.set_float64_mode(prev)
