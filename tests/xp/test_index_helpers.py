"""NumPy's index helpers and dtype aliases as xp names (as CuPy re-exports them)."""
import numpy as np
import pytest

import npudist.xp as nxp


def test_index_helpers_are_numpys_and_work_on_xp_arrays():
    assert nxp.ndindex is np.ndindex and nxp.s_ is np.s_ and nxp.index_exp is np.index_exp
    a = nxp.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(nxp.asnumpy(a[nxp.s_[1:, ::2]]), np.arange(12).reshape(3, 4)[1:, ::2])
    assert [a[i].item() for i in nxp.ndindex(2, 2)] == [0, 1, 4, 5]
    assert nxp.iterable(a) and nxp.iterable(nxp.asarray(3)) == np.iterable(np.asarray(3))
    assert type(a.flat) is nxp.flatiter


@pytest.mark.parametrize("name", ["long", "ulong", "uint", "uintp", "uintc", "ushort", "ulonglong"])
def test_dtype_aliases(name):
    assert nxp.zeros(2, getattr(nxp, name)).dtype == np.dtype(getattr(np, name))
