"""order= on creation and copies, asfortranarray, require, flags, ndarray.flat, ndarray.data."""
import numpy as np
import pytest

import npudist.xp as xp

A = np.arange(24.0).reshape(2, 3, 4)


def _flags(a):
    return a.flags.c_contiguous, a.flags.f_contiguous


@pytest.mark.parametrize("order", ["C", "F"])
def test_creation_order(order):
    for f in (lambda m: m.zeros((2, 3), order=order), lambda m: m.ones((2, 3), order=order),
              lambda m: m.empty((2, 3), order=order), lambda m: m.full((2, 3), 7, order=order),
              lambda m: m.eye(3, order=order)):
        assert _flags(f(xp)) == _flags(f(np))
    with pytest.raises(ValueError):
        xp.zeros(3, order="X")


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_copy_like_and_astype_order(order):
    for src in (A, np.asfortranarray(A), A.transpose(1, 0, 2)):
        x = xp.asarray(src) if src.flags.c_contiguous else xp.asarray(np.ascontiguousarray(src))
        if not src.flags.c_contiguous:
            x = xp.asfortranarray(x) if src.flags.f_contiguous else x.transpose(1, 0, 2) if False else x
        n = np.asarray(x.get(), order="F") if x.flags.f_contiguous and not x.flags.c_contiguous else x.get()
        for fx, _fn in ((lambda m, v: m.copy(v, order=order), None), (lambda m, v: m.empty_like(v, order=order), None),
                       (lambda m, v: v.astype(np.float32, order=order), None), (lambda m, v: v.copy(order=order), None),
                       (lambda m, v: m.array(v, order=order), None)):
            assert _flags(fx(xp, x)) == _flags(fx(np, n)), order
    np.testing.assert_array_equal(xp.copy(xp.asarray(A), order="F").get(), A)


def test_asfortranarray_require_flags():
    x = xp.asfortranarray(xp.asarray(A))
    assert x.flags.f_contiguous and not x.flags.c_contiguous and x.strides == np.asfortranarray(A).strides
    np.testing.assert_array_equal(x.get(), A)
    assert xp.asfortranarray(x) is not None and xp.asfortranarray(x)._t.data_ptr() == x._t.data_ptr()
    r = xp.require(xp.asarray(A), requirements=["F", "W"])
    assert r.flags["F_CONTIGUOUS"] and r.flags.writeable
    assert xp.require(x, requirements="C").flags.c_contiguous
    # 'O' copies only a view (numpy.require checks the flag): an owning array comes back as itself
    nx = np.asfortranarray(A)
    assert (xp.require(x, requirements="O") is x) == (np.require(nx, requirements="O") is nx) is True
    v, nv = x[1:], nx[1:]
    assert v.flags.owndata == nv.flags.owndata is False and v.base is x and nv.base is nx
    o = xp.require(v, requirements="O")
    assert o.flags.owndata and o._t.data_ptr() != v._t.data_ptr() and np.require(nv, requirements="O").flags.owndata
    with pytest.raises(ValueError):
        xp.require(x, requirements=["C", "F"])


def test_flat_and_data():
    x = xp.asarray(np.arange(6).reshape(2, 3))
    n = np.arange(6).reshape(2, 3)
    assert int(x.flat[4]) == n.flat[4] and len(x.flat) == 6
    np.testing.assert_array_equal(x.flat[1:5].get(), n.flat[1:5])
    x.flat[[0, 5]] = 9
    n.flat[[0, 5]] = 9
    x.T.flat[::2] = [7, 8]
    n.T.flat[::2] = [7, 8]
    np.testing.assert_array_equal(x.get(), n)
    assert [int(v) for v in x.flat] == list(n.flat)
    assert x.data.ptr == xp.to_torch(x).data_ptr() and x[1].data.ptr == x.data.ptr + 3 * 8


def test_reshape_order_and_copyto_scalars():
    a = np.arange(6.0).reshape(2, 3)
    for src in (a, np.asfortranarray(a)):
        x = xp.asarray(src) if src.flags.c_contiguous else xp.asfortranarray(xp.asarray(a))
        for order in ("C", "F", "A", "c", "f", "a"):
            got, want = x.reshape((3, 2), order=order), src.reshape((3, 2), order=order)
            np.testing.assert_array_equal(got.get(), want)
            assert _flags(got) == _flags(want)
    for src, dt in ((3.2, np.int8), (4, np.bool_), (1j, np.float64), (-4, np.uint8)):
        with pytest.raises((TypeError, OverflowError)):
            xp.copyto(xp.ones(2, dt), src)
    d = xp.ones(2, np.float64)
    xp.copyto(d, 3.2, where=xp.asarray([True, False]))
    np.testing.assert_array_equal(d.get(), [3.2, 1.0])
    with pytest.raises(ValueError):
        xp.copyto(xp.ones(2), xp.ones(3))


def test_isfortran_isposinf_isneginf():
    assert xp.isfortran(xp.asfortranarray(xp.ones((2, 3)))) and not xp.isfortran(xp.ones((2, 3)))
    a = np.array([np.inf, -np.inf, 1, np.nan, -0.0])
    np.testing.assert_array_equal(xp.isposinf(a).get(), np.isposinf(a))
    np.testing.assert_array_equal(xp.isneginf(a).get(), np.isneginf(a))
    with pytest.raises(TypeError):
        xp.isposinf(xp.asarray([1j]))


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64", "int32", "float32"])
def test_base_and_owndata_as_numpy(dtype):
    """Fresh arrays own their memory on every dtype (the unsigned ones are an alias underneath);
    a basic-index view's base is the owning array, collapsed through views, as NumPy's."""
    n, a = np.arange(6, dtype=dtype), xp.arange(6, dtype=dtype)
    for got, want in ((a, n), (a + 1, n + 1), (xp.empty(3, dtype=dtype), np.empty(3, dtype=dtype))):
        assert got.flags.owndata == want.flags.owndata is True and got.base is None and want.base is None
    assert a[1:].base is a and n[1:].base is n
    assert a[1:][::2].base is a and n[1:][::2].base is n
    assert a[...].base is a and n[...].base is n
    assert a[[0, 1]].base is None and n[[0, 1]].base is None
    assert a[1:].flags.owndata is False and n[1:].flags.owndata is False
