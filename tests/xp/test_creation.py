"""Creation routines against NumPy: shape/arange/linspace edge cases and zero-size strides."""
import sys

import numpy as np
import pytest

import npudist.xp as xp


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("name", ["empty", "zeros", "ones"])
def test_none_shape_raises_typeerror(name):
    for m in (np, xp):
        with pytest.raises(TypeError, match=r"Use \(\)"):
            getattr(m, name)(None)


def test_arange_bool_length():
    for args in ((2,), (0, 2), (1, 2)):
        _same(xp.arange(*args, dtype=bool), np.arange(*args, dtype=bool))
    for m in (np, xp):
        with pytest.raises(TypeError):
            m.arange(10, dtype=m.bool_)


def test_linspace_step_underflow():
    x = sys.float_info.min
    while x / 2 > 0:
        x /= 2
    _same(xp.linspace(0.0, x, 10, dtype=float), np.linspace(0.0, x, 10, dtype=float))
    _same(xp.linspace(0.0, 1.0, 7), np.linspace(0.0, 1.0, 7))


@pytest.mark.parametrize("order", ["C", "F"])
def test_zero_size_strides(order):
    for shape in ((1, 0, 2), (0, 3), (0,)):
        for f in (lambda m: m.empty(shape, "d", order=order), lambda m: m.zeros(shape, order=order),
                  lambda m: m.full(shape, 2, order=order), lambda m: m.empty_like(m.ones((2, 3))[:0], order=order)):
            got, want = f(xp), f(np)
            assert got.strides == want.strides and got.flags.c_contiguous == want.flags.c_contiguous


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_like_and_copy_keep_axis_order(order):
    a = np.arange(24.0).reshape(2, 3, 4)[:, ::2, :].swapaxes(0, 1)     # neither C nor F, strides unsorted
    x = xp.arange(24.0).reshape(2, 3, 4)[:, ::2, :].swapaxes(0, 1)
    for f in (lambda m, v: m.empty_like(v, order=order), lambda m, v: m.copy(v, order=order),
              lambda m, v: v.copy(order=order), lambda m, v: m.array(v, order=order)):
        assert f(xp, x).strides == f(np, a).strides
    c = xp.array(x, order=order)
    c[0] = -1
    assert float(x[0, 0, 0]) != -1                                   # a copy, not a view


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("shape", [(4, 2), (4, 2, 3), (2, 3, 4)])
def test_like_with_shape_order(order, shape):
    a = np.asfortranarray(np.arange(24.0).reshape(2, 3, 4))
    x = xp.asfortranarray(xp.arange(24.0).reshape(2, 3, 4))
    got, want = xp.empty_like(x, order=order, shape=shape), np.empty_like(a, order=order, shape=shape)
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous, want.flags.f_contiguous)
    assert got.strides == want.strides


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_array_copy_and_order(order):
    for src_order in ("C", "F"):
        a = np.arange(4.0).reshape(1, 4, 1).copy(order=src_order)      # both C- and F-contiguous
        x = xp.asarray(a)
        assert xp.array(x, order=order).strides == np.array(a, order=order).strides
        a3 = np.arange(24.0).reshape(2, 3, 4).copy(order=src_order)
        x3 = xp.asarray(a3)
        assert x3.strides == a3.strides                                 # asarray keeps NumPy's order
        try:
            want = np.array(a3, copy=False, order=order)
        except ValueError:
            with pytest.raises(ValueError):
                xp.array(x3, copy=False, order=order)
        else:
            got = xp.array(x3, copy=False, order=order)
            assert got is x3 and got.strides == want.strides
    r = xp.arange(6.0)
    x = r.reshape(2, 3)
    assert xp.array(x, copy=False) is x and xp.ascontiguousarray(x) is x
    v = xp.array(x, copy=None, ndmin=3)
    nr = np.arange(6.0)
    nv = np.array(nr.reshape(2, 3), copy=None, ndmin=3)
    # a view of a view: NumPy collapses base to the array that owns the memory
    assert v.shape == (1, 2, 3) and v.base is r and nv.base is nr
    assert xp.array(x, ndmin=3).base is not x


def test_host_readers(tmp_path):
    p = tmp_path / "d.bin"
    p.write_bytes(b"\x00\x00\x00\x01\x00\x00\x00\x02")
    got, want = xp.fromfile(str(p), dtype=">u4"), np.fromfile(str(p), dtype=">u4")
    np.testing.assert_array_equal((got + got).get(), want + want)
    _same(xp.fromstring("1 2", dtype=int, sep=" "), np.fromstring("1 2", dtype=int, sep=" "))
    t = tmp_path / "d.txt"
    t.write_text("0 1\n2 3")
    _same(xp.loadtxt(str(t), dtype="u1"), np.loadtxt(str(t), dtype="u1"))
    _same(xp.genfromtxt(str(t), dtype="u1"), np.genfromtxt(str(t), dtype="u1"))


@pytest.mark.parametrize("args", [(-3, 3, 1, "uint8"), (-3.0, 3.0, 1.0, "uint8"), (200, 210, 1, "int8"),
                                  (0, 300, 1, "uint8"), (5, 0, -1, "uint8")])
def test_arange_first_value_must_fit_the_dtype(args):
    *bounds, dt = args
    try:
        expected = np.arange(*bounds, dtype=dt)
    except OverflowError as e:
        with pytest.raises(OverflowError, match=str(e)):
            xp.arange(*bounds, dtype=dt)
        return
    np.testing.assert_array_equal(xp.asnumpy(xp.arange(*bounds, dtype=dt)), expected)   # later values wrap


@pytest.mark.parametrize("dtype1", [np.bool_, np.int8, np.uint64, np.float16, np.float64, np.complex64])
@pytest.mark.parametrize("dtype2", [None, np.int16, np.uint32, np.float32, np.complex128])
@pytest.mark.parametrize("kind", ["0d", "scalar", "row"])
def test_full_array_and_numpy_fill_values(dtype1, dtype2, kind):
    """full/full_like take NumPy 0-d arrays, NumPy scalars and arrays with dimensions (broadcast), cast
    as NumPy's copyto(casting='unsafe'), ComplexWarning included."""
    import warnings
    nxp = xp
    v = {"0d": np.array(1 + 2j).astype(dtype1), "scalar": dtype1(3), "row": np.arange(1, 4).astype(dtype1)}[kind]
    res = {}
    for m in (np, nxp):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = m.full((2, 3), v if m is np else (nxp.asarray(v) if kind == "row" else v), dtype=dtype2)
            b = m.full_like(m.zeros((2, 3), np.int8), v)
        res[m] = (a, b, sorted({x.category.__name__ for x in w}))
    for e, g in zip(res[np][:2], res[nxp][:2]):
        assert e.dtype == g.dtype
        np.testing.assert_array_equal(g.get(), e)
    assert res[np][2] == res[nxp][2]
