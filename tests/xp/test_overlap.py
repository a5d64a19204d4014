"""Assignments whose source overlaps the destination read the source as if copied first (NumPy's
rule; npudist.xp._overlap), at sizes served by NumPy's loops and by PyTorch's."""
import numpy as np
import pytest

import npudist.xp as xp
from npudist.xp._overlap import tensor_bounds, unaliased


def _both(n, fn):
    a = np.arange(float(n * n)).reshape(n, n)
    x = xp.asarray(a)
    fn(np, a)
    fn(xp, x)
    np.testing.assert_array_equal(xp.asnumpy(x), a)


@pytest.mark.parametrize("n", [3, 300])
@pytest.mark.parametrize("case", ["setitem_T", "copyto_T", "T_setitem", "shifted_rows", "reversed"])
def test_overlapping_assignment(n, case):
    fns = {
        "setitem_T": lambda m, a: a.__setitem__(slice(None), a.T),
        "copyto_T": lambda m, a: m.copyto(a, a.T),
        "T_setitem": lambda m, a: a.T.__setitem__(Ellipsis, a),
        "shifted_rows": lambda m, a: a.__setitem__(slice(1, None), a[:-1]),
        "reversed": lambda m, a: a.__setitem__(slice(None), a[::-1]),
    }
    _both(n, fns[case])


def test_mask_assignment_from_overlapping_source():
    a = np.arange(9.0)
    x = xp.asarray(a)
    a[a > 3] = a[:5]
    x[x > 3] = x[:5]
    np.testing.assert_array_equal(xp.asnumpy(x), a)


def test_unaliased_copies_only_overlaps():
    x = xp.arange(10.0)
    t = xp.to_torch(x)
    assert unaliased(t, t) is t
    assert unaliased(t[:], t) is t[:] or unaliased(t[:], t).data_ptr() == t.data_ptr()   # same view: no copy
    assert unaliased(t[1:], t).data_ptr() != t[1:].data_ptr()                          # overlap: a copy
    other = xp.to_torch(xp.arange(10.0))
    assert unaliased(other, t) is other
    assert unaliased(3.0, t) == 3.0
    lo, hi = tensor_bounds(t)
    assert hi - lo == 10 * 8 and tensor_bounds(t[:0]) is None
