"""shares_memory / may_share_memory (exact and bounds) and packbits / unpackbits equal NumPy's."""
import numpy as np
import pytest

import npudist.xp as xp


def test_shares_memory():
    a = np.arange(20, dtype=np.int32)
    x = xp.asarray(a)
    for u, v, nu, nv in [(x[::2], x[1::2], a[::2], a[1::2]), (x[:5], x[4:], a[:5], a[4:]),
                         (x[:4], x[4:], a[:4], a[4:]), (x, xp.asarray(a), a, a.copy()), (x[:0], x, a[:0], a)]:
        assert xp.shares_memory(u, v) == np.shares_memory(nu, nv)
        assert xp.may_share_memory(u, v) == np.may_share_memory(nu, nv)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits(axis, bitorder):
    b = np.random.default_rng(0).integers(0, 3, (3, 13))
    p = xp.packbits(b, axis=axis, bitorder=bitorder)
    np.testing.assert_array_equal(p.get(), np.packbits(b, axis=axis, bitorder=bitorder))
    n = np.packbits(b, axis=axis, bitorder=bitorder)
    for count in (None, 5, -3, 40):
        if axis is None or count is None:
            np.testing.assert_array_equal(xp.unpackbits(p, axis=axis, count=count, bitorder=bitorder).get(),
                                          np.unpackbits(n, axis=axis, count=count, bitorder=bitorder))
    with pytest.raises(TypeError):
        xp.packbits(xp.ones(3))
