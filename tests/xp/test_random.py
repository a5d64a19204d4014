"""The distributions added for CuPy's tests (wald, vonmises, noncentral_chisquare, noncentral_f,
zipf, logseries, hypergeometric): npu arrays of NumPy's dtypes, NumPy's errors, and sample
statistics close to NumPy's own generator's; mirrors npudist/xp/random.py."""
import numpy as np
import pytest

import npudist.xp as xp

N = 20000
CASES = [("wald", (3.0, 3.0)), ("vonmises", (0.5, 2.0)), ("noncentral_chisquare", (3.0, 2.0)),
         ("noncentral_chisquare", (0.5, 2.0)), ("noncentral_f", (3.0, 20.0, 3.0)), ("logseries", (0.6,)),
         ("hypergeometric", (15, 10, 8)), ("hypergeometric", (5, 30, 30))]


@pytest.mark.parametrize("name,args", CASES)
def test_distribution_matches_numpy_statistics(name, args):
    a = getattr(xp.random.default_rng(1), name)(*args, size=N)
    b = getattr(np.random.default_rng(1), name)(*args, size=N)
    assert isinstance(a, xp.ndarray) and a.dtype == b.dtype and a.shape == (N,)
    a = a.get()
    np.testing.assert_allclose(a.mean(), b.mean(), rtol=0.05, atol=0.03)
    np.testing.assert_allclose(a.std(), b.std(), rtol=0.08, atol=0.03)
    if name == "vonmises":
        assert a.min() >= -np.pi and a.max() <= np.pi


def test_zipf_and_legacy_names():
    z = xp.random.default_rng(0).zipf(2.0, size=N).get()
    e = np.random.default_rng(0).zipf(2.0, size=N)
    assert z.dtype == np.int64 and z.min() >= 1
    np.testing.assert_allclose((z == 1).mean(), (e == 1).mean(), atol=0.02)   # P(1) = 1/zeta(2)
    for name in ("wald", "vonmises", "noncentral_chisquare", "noncentral_f", "zipf", "logseries", "hypergeometric"):
        assert callable(getattr(xp.random, name)) and callable(getattr(xp.random.RandomState(0), name))


def test_errors_and_edge_cases():
    g = xp.random.default_rng(0)
    for args in ((-1, 10, 5), (10, -1, 5), (10, 10, -1), (5, 10, 16)):
        with pytest.raises(ValueError):
            g.hypergeometric(*args, size=10)
    assert g.hypergeometric(5, 10, 0, size=10).get().tolist() == [0] * 10
    assert g.hypergeometric(5, 10, 15, size=10).get().tolist() == [5] * 10
    with pytest.raises(ValueError):
        g.zipf(1.0)
    with pytest.raises(ValueError):
        g.logseries(1.0)
    with pytest.raises(ValueError):
        g.wald(0.0, 1.0)


def test_bytes_and_zero_dim_shuffle():
    b = xp.random.bytes(10)
    assert isinstance(b, bytes) and len(b) == 10
    assert isinstance(xp.random.default_rng(0).bytes(3), bytes)
    with pytest.raises(TypeError):
        xp.random.shuffle(xp.asarray(np.array(1.0)))


def test_integers_beyond_int64_arguments():
    g = xp.random.default_rng(0)
    full = xp.asnumpy(g.integers(0, 2**64, 20_000, dtype=xp.uint64))
    assert full.dtype == np.uint64 and 0.45 < (full >= 2**63).mean() < 0.55
    high = xp.asnumpy(g.integers(2**63, 2**63 + 10, 5_000, dtype=xp.uint64))
    assert set((high - np.uint64(2**63)).tolist()) == set(range(10))
    signed = g.integers(-2**63, 2**63, (2, 3), dtype=xp.int64)
    assert signed.shape == (2, 3) and signed.dtype == np.int64
    assert g.integers(0, 2**64 - 1, endpoint=True, size=4, dtype=xp.uint64).shape == (4,)
