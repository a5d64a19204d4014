"""ravel_multi_index, unravel_index, extract, place, put, putmask, select, ix_ equal NumPy's
(values and errors); mirrors npudist/xp/_indexing_routines.py."""
import numpy as np
import pytest

import npudist.xp as xp

from .compare import numpy_xp_compare


@pytest.mark.parametrize("order", ["C", "F", None])
@pytest.mark.parametrize("mode", ["clip", "wrap", ("wrap", "clip", "clip")])
@numpy_xp_compare()
def test_ravel_multi_index_modes(order, mode, xp):
    a = [xp.arange(8, dtype=np.int16)] * 3
    return xp.ravel_multi_index(a, (8, 4, 2), mode=mode, order=order)


@pytest.mark.parametrize("order", ["C", "F"])
@numpy_xp_compare()
def test_ravel_multi_index_broadcasting(order, xp):
    x, y = xp.meshgrid(xp.arange(3), xp.arange(5), sparse=True)
    return xp.ravel_multi_index((x, y), (3, 5), order=order)


@pytest.mark.parametrize("call,exc", [
    (lambda m: m.ravel_multi_index(m.ones((3, 5), dtype=np.int32), (2.0, 4, 8.0)), TypeError),
    (lambda m: m.ravel_multi_index(m.ones((3, 5), dtype=np.float32), (2, 4, 8)), TypeError),
    (lambda m: m.ravel_multi_index(m.ones((3, 5), dtype=np.int32), (2, 4)), ValueError),
    (lambda m: m.ravel_multi_index((m.arange(4), m.arange(4)), (8, 4), order="V"), ValueError),
    (lambda m: m.ravel_multi_index((m.arange(4), m.arange(4)), (8, 4), mode="invalid"), ValueError),
    (lambda m: m.ravel_multi_index((m.arange(4), m.arange(4)), (2**40, 2**40)), ValueError),
    (lambda m: m.unravel_index(m.arange(3, dtype=np.float32), (2, 4)), TypeError),
    (lambda m: m.unravel_index(m.arange(3), (2, 4), order="V"), ValueError),
    (lambda m: m.place(m.arange(6).reshape(2, 3), m.ones((3, 4), dtype=bool), m.ones(1, dtype=int)), ValueError),
    (lambda m: m.put(m.arange(6), m.asarray([1]), m.asarray([1]), mode="bad"), ValueError),
    (lambda m: m.putmask(m.arange(3), m.asarray([True, False]), 1), ValueError),
    (lambda m: m.putmask(m.zeros(3, dtype=np.int32), m.asarray([True, False, True]), m.ones(3)), TypeError),
    (lambda m: m.select([], []), ValueError),
    (lambda m: m.select([m.arange(10) < 3, m.arange(20) > 8], [m.arange(10), m.arange(20)]), ValueError),
    (lambda m: m.tril_indices_from(4), AttributeError),
])
def test_errors_as_numpy(call, exc):
    with pytest.raises(exc):
        call(np)
    with pytest.raises(exc):
        call(xp)


@pytest.mark.parametrize("cond", [[[True, False, True], [False, True, False]], [[True, False, True, False]] * 2, []])
@numpy_xp_compare()
def test_extract_by_positions(cond, xp):
    return xp.extract(xp.asarray(np.array(cond)), xp.arange(9).reshape(3, 3))


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
@numpy_xp_compare()
def test_ix_keeps_dtype(dtype, xp):
    return xp.ix_(xp.asarray(np.array([0, 1], dtype)), xp.asarray(np.array([2, 3], dtype)))


@pytest.mark.parametrize("method", [False, True])
@numpy_xp_compare()
def test_compress_and_choose_write_out(method, xp):
    # out= is written and returned (the core's compress/choose, behind the methods too)
    a = xp.arange(6, dtype=np.float64).reshape(2, 3)
    out1 = xp.zeros((2, 2))
    r1 = a.compress([True, False, True], axis=1, out=out1) if method else \
        xp.compress([True, False, True], a, axis=1, out=out1)
    idx = xp.asarray([[0, 1, 0], [1, 0, 1]])
    out2 = xp.zeros((2, 3), dtype=np.int64)
    choices = [xp.arange(3), xp.arange(3) * 10]
    r2 = idx.choose(choices, out=out2) if method else xp.choose(idx, choices, out=out2)
    assert r1 is out1 and r2 is out2
    return out1, out2
