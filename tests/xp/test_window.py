"""Window functions equal NumPy's."""
import numpy as np
import pytest

import npudist.xp as xp


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("M", [0, 1, 2, 7, 16])
def test_windows(name, M):
    got = getattr(xp, name)(M).get()
    assert got.dtype == np.float64 and got.shape == (max(M, 0),)
    np.testing.assert_allclose(got, getattr(np, name)(M), atol=1e-15)


@pytest.mark.parametrize("M,beta", [(1, 3.0), (9, 0.0), (12, 8.6)])
def test_kaiser(M, beta):
    np.testing.assert_allclose(xp.kaiser(M, beta).get(), np.kaiser(M, beta), rtol=1e-12)
