"""xp.ndarray against NumPy 2 where CuPy's core_tests found differences: byteswap, comparisons
with plain objects, flags, views across dtypes (benchmarks/cupy_conformance.py --folders core)."""
import warnings

import numpy as np
import pytest

import npudist.xp as xp

_SWAP_DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32,
                np.float64, np.complex64, np.complex128]
_LAYOUTS = {
    "c": lambda m, dt: m.arange(24).astype(dt).reshape(2, 3, 4),
    "f": lambda m, dt: m.asfortranarray(m.arange(24).astype(dt).reshape(2, 3, 4)),
    "transposed": lambda m, dt: m.arange(24).astype(dt).reshape(2, 3, 4).transpose(2, 0, 1),
    "negative_step": lambda m, dt: m.arange(12).astype(dt)[::-2],
    "0d": lambda m, dt: m.asarray(m.arange(3).astype(dt)[1]),
    "empty": lambda m, dt: m.zeros((2, 0, 3), dt),
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("dtype", _SWAP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_byteswap_matches_numpy(dtype, layout):
    n, a = _LAYOUTS[layout](np, dtype), _LAYOUTS[layout](xp, dtype)
    r, e = a.byteswap(), n.byteswap()
    assert r.dtype == e.dtype and r.shape == e.shape and (r.strides == e.strides or not e.size)
    np.testing.assert_array_equal(xp.asnumpy(r), e)
    np.testing.assert_array_equal(xp.asnumpy(a), n)          # not in place: a unchanged
    assert a.byteswap(inplace=True) is a
    n.byteswap(inplace=True)
    np.testing.assert_array_equal(xp.asnumpy(a), n)


def test_byteswap_inplace_writes_through_a_view():
    n, a = np.arange(12, dtype=np.int32), xp.arange(12, dtype=np.int32)
    n[1::3].byteswap(inplace=True)
    a[1::3].byteswap(inplace=True)
    np.testing.assert_array_equal(xp.asnumpy(a), n)


@pytest.mark.parametrize("value", [Ellipsis, object(), np._NoValue, None], ids=["ellipsis", "object", "novalue", "none"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.uint32, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_compare_with_plain_object(dtype, value):
    n, a = np.array([[1, 2, 3], [4, 5, 6]], dtype), xp.array([[1, 2, 3], [4, 5, 6]], dtype)
    for op in (lambda x: x == value, lambda x: value == x, lambda x: x != value, lambda x: value != x):
        r, e = op(a), op(n)
        assert isinstance(r, xp.ndarray) and r.dtype == e.dtype
        np.testing.assert_array_equal(xp.asnumpy(r), e)


_FLAG_KEYS = ["C", "F", "O", "W", "A", "X", "B", "CA", "FA", "FNC", "FORC", "BEHAVED", "CARRAY", "FARRAY",
              "WRITEBACKIFCOPY", "C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED", "CONTIGUOUS",
              "FORTRAN"]
_FLAG_ARRAYS = {
    "c": lambda m: m.zeros((2, 3)), "f": lambda m: m.asfortranarray(m.zeros((2, 3))),
    "t": lambda m: m.zeros((2, 3)).T, "strided": lambda m: m.zeros((2, 3))[:, ::2],
    "column": lambda m: m.zeros((2, 3))[:, :1], "1d": lambda m: m.zeros(3), "0d": lambda m: m.zeros(()),
    "empty": lambda m: m.zeros((0, 3)),
}


@pytest.mark.parametrize("layout", list(_FLAG_ARRAYS))
def test_flags_match_numpy(layout):
    n, a = _FLAG_ARRAYS[layout](np).flags, _FLAG_ARRAYS[layout](xp).flags
    for k in _FLAG_KEYS:
        assert a[k] == n[k], k
        if len(k) > 2 and k not in ("CONTIGUOUS", "FORTRAN"):
            assert getattr(a, k.lower()) == getattr(n, k.lower()), k
    for bad in ("c", "c_contiguous", "U", "UPDATEIFCOPY"):
        with pytest.raises(KeyError, match="Unknown flag"):
            a[bad]
    for name in ("c_contiguous", "f_contiguous", "owndata"):
        with pytest.raises(AttributeError):
            setattr(a, name, True)
    assert repr(a) == repr(n)


_VIEW_ARRAYS = {
    "c": lambda m: m.zeros((3, 5), np.int32), "f": lambda m: m.zeros((3, 5), np.int32, order="F"),
    "empty": lambda m: m.zeros((0,), np.int32), "empty_strided": lambda m: m.ones((3, 20), np.int16)[:0, ::2],
    "unit_last_axis": lambda m: m.moveaxis(m.arange(15.).reshape(1, 3, 5), 0, 2),
    "unit_last_strided": lambda m: m.ones((3, 4), np.int32)[:, :1:2],
    "rows_strided": lambda m: m.arange(20, dtype=np.int16).reshape(10, 2)[::2],
    "transposed_outer": lambda m: m.arange(24, dtype=np.int8).reshape(2, 3, 4).transpose(1, 0, 2),
    "last_strided": lambda m: m.arange(10, dtype=np.int32)[::2],
    "0d": lambda m: m.zeros((), np.float32),
}


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.int32, np.float32, np.uint64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", list(_VIEW_ARRAYS))
def test_view_dtype_matches_numpy(layout, dtype):
    n, a = _VIEW_ARRAYS[layout](np), _VIEW_ARRAYS[layout](xp)
    try:
        e = n.view(dtype)
    except ValueError as err:
        with pytest.raises(ValueError, match=str(err)[:40]):
            a.view(dtype)
        return
    r = a.view(dtype)
    assert (r.shape, r.strides, r.dtype) == (e.shape, e.strides, e.dtype)
    assert (r.flags.c_contiguous, r.flags.f_contiguous, r.flags.owndata) == (e.flags.c_contiguous, e.flags.f_contiguous,
                                                                             e.flags.owndata)
    assert xp.asnumpy(r).tobytes() == e.tobytes()
    if r.size:                                                # writes through to a's memory
        r[(0,) * r.ndim] = 1
        e[(0,) * e.ndim] = 1
        assert xp.asnumpy(a).tobytes() == n.tobytes()


def test_view_base_is_the_owner():
    a = xp.zeros((3, 4), np.int32)
    v = a.view(np.int16)
    assert v.base is a and not v.flags.owndata


_A, _B = np.arange(24).reshape(2, 3, 4), np.arange(60).reshape(3, 4, 5)
_PLACEMENT_KEYS = [
    (_A, (1, None, np.array([True, False, True]))), (_A, np.array([], bool)), (_A, (slice(None), np.array([], bool))),
    (_A, np.empty((2, 0), bool)), (_A, np.empty((0, 0, 4), bool)), (_A, (np.empty((0, 3), bool), np.empty(0, bool))),
    (_B, (slice(None), [0, 1], Ellipsis, [0, 1])), (_A, (slice(None), [1, 0], Ellipsis, np.ones((5, 2), int))),
    (_B, (1, slice(None), [1, 0])), (_A, (1, slice(None), [[2, 0], [3, 1]])), (_A, (slice(None), 1, [1, 0])),
    (_A, ([1, 0], None, [0, 2])), (_A, (None, [0, 1], slice(None), [1, 2], None)), (_A, (1, 2, [0, 3])),
    (_A, (slice(1, 2), [0, 1], slice(None))), (_A, (Ellipsis, [1, 0])),
    (_A, (True, [True, False])), (_A, (False, [True, False])), (_A, (True, [[1]], slice(1, 2), False)),
    (_A, (Ellipsis, [[1, 1, -3], [0, 2, 2]], [True, False, True, True])), (_A, (1, True, np.array([True, False, True]))),
]


@pytest.mark.parametrize("case", range(len(_PLACEMENT_KEYS)))
def test_advanced_index_placement_matches_numpy(case):
    """Index arrays apart (ints count as arrays, an empty Ellipsis separates) put their axes first;
    size-0 masks select nothing whatever their shape (NumPy's rules, torch's differ)."""
    a_np, key = _PLACEMENT_KEYS[case]
    e, r = a_np[key], xp.asarray(a_np)[key]
    assert r.shape == e.shape
    np.testing.assert_array_equal(xp.asnumpy(r), e)
    n, a = a_np.copy(), xp.asarray(a_np)
    value = -np.arange(e.size).reshape(e.shape)
    n[key] = value
    a[key] = xp.asarray(value)
    np.testing.assert_array_equal(xp.asnumpy(a), n)


_K_INPUTS = {
    "swapped": lambda m: m.swapaxes(m.arange(24.).reshape(2, 3, 4), 1, 0),
    "transposed": lambda m: m.arange(24.).reshape(2, 3, 4).transpose(2, 0, 1),
    "f": lambda m: m.asfortranarray(m.arange(24.).reshape(2, 3, 4)),
    "gapped": lambda m: m.arange(48.).reshape(2, 3, 8)[:, :, ::2].transpose(1, 0, 2),
}


@pytest.mark.parametrize("layout", list(_K_INPUTS))
def test_results_keep_numpys_k_order_strides(layout):
    """NumPy's order='K' results of permuted operands (astype, ufuncs, copy('K')) keep their strides."""
    n, a = _K_INPUTS[layout](np), _K_INPUTS[layout](xp)
    for fn in (lambda x: x.astype(np.float32, order="K"), lambda x: x.astype(np.float64), lambda x: x + 1,
               lambda x: np.sin(x) if x is n else xp.sin(x), lambda x: x.copy(order="K")):
        e, r = fn(n), fn(a)
        assert r.strides == e.strides and r.dtype == e.dtype
        np.testing.assert_array_equal(xp.asnumpy(r), e)


def test_astype_complex_to_real_warns_complexwarning_on_negative_stride_view():
    n = np.arange(6.).reshape(2, 3).astype(np.complex128)[::-1]
    a = xp.asarray(np.arange(6.).reshape(2, 3).astype(np.complex128))[::-1]
    for x in (n, a):
        with pytest.warns(np.exceptions.ComplexWarning):
            r = x.astype(np.float32, order="K")
    np.testing.assert_array_equal(xp.asnumpy(r), n.real.astype(np.float32))


@pytest.mark.parametrize("dtype", _SWAP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_conj_method_returns_self_for_non_complex(dtype):
    n, a = np.arange(6).astype(dtype)[::2], xp.arange(6).astype(dtype)[::2]
    for m in ("conj", "conjugate"):
        e, r = getattr(n, m)(), getattr(a, m)()
        assert (r is a) == (e is n) and r.dtype == e.dtype
        np.testing.assert_array_equal(xp.asnumpy(r), e)


def test_numpy_ufuncs_dispatch_to_xp():
    """NEP 13 (as cupy.ndarray): NumPy's ufuncs and their methods on xp arrays run xp's."""
    n = np.arange(12.).reshape(3, 4)
    a = xp.asarray(n)
    calls = [lambda m, x: np.sin(x), lambda m, x: np.add.reduce(x, axis=-1), lambda m, x: np.add.accumulate(x, axis=-1),
             lambda m, x: np.add.outer(x[0], x[1]), lambda m, x: np.add.reduceat(x, m.array([0, 2]), axis=-1),
             lambda m, x: np.matmul(x, x.T), lambda m, x: np.arange(4.) + x, lambda m, x: np.float64(2) * x,
             lambda m, x: np.divmod(x, 5.), lambda m, x: np.modf(x)]
    for fn in calls:
        r, e = fn(xp, a), fn(np, n)
        for rr, ee in zip(r if isinstance(r, tuple) else (r,), e if isinstance(e, tuple) else (e,)):
            assert isinstance(rr, xp.ndarray) and rr.dtype == ee.dtype
            np.testing.assert_allclose(xp.asnumpy(rr), ee)
    o = xp.zeros((3, 4))
    assert np.sin(a, out=o) is o
    b, nb = xp.arange(10.), np.arange(10.)
    np.add.at(b, xp.array([0, 3, 3]), 7)
    np.add.at(nb, np.array([0, 3, 3]), 7)
    np.testing.assert_array_equal(xp.asnumpy(b), nb)
    with pytest.raises(TypeError):            # a NumPy out= array: NumPy's TypeError (xp declines)
        np.sin(a, out=np.zeros((3, 4)))


def test_two_output_ufunc_partial_positional_out():
    """xp.divmod(a, b, out0): NumPy takes the missing trailing output as None (a new array)."""
    for m in (np, xp):
        a, b, o = m.arange(1., 7.).reshape(2, 3), m.arange(6., 0, -1).reshape(2, 3), m.zeros((2, 3))
        q, r = m.divmod(a, b, o)
        assert q is o
        np.testing.assert_array_equal(xp.asnumpy(r) if m is xp else r, np.remainder(np.arange(1., 7.), np.arange(6., 0, -1)).reshape(2, 3))


@pytest.mark.parametrize("key", [np.array([1, 2], np.float32), np.array([1, 2], object), np.array([], np.float64),
                                 np.array(["a"]), np.array([(1, 2)], "i,i"), [1.0, 2.0], "xp_float"],
                         ids=["float32", "object", "empty_float", "str", "structured", "float_list", "xp_float"])
def test_bad_index_array_dtype_raises_numpys_index_error(key):
    with pytest.raises(IndexError) as np_err:
        np.arange(10)[np.array([1., 2.]) if isinstance(key, str) and key == "xp_float" else key]
    with pytest.raises(IndexError) as xp_err:
        xp.arange(10)[xp.array([1., 2.]) if isinstance(key, str) and key == "xp_float" else key]
    assert str(xp_err.value) == str(np_err.value)


def test_empty_lists_index_as_integer_arrays():
    for key in ([], [[]], ([], [])):
        assert xp.arange(24).reshape(2, 3, 4)[key].shape == np.arange(24).reshape(2, 3, 4)[key].shape


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
def test_iter_of_0d_raises_at_iter(dtype):
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(xp.zeros((), dtype))
    assert [x.shape for x in xp.zeros((2, 3), dtype)] == [(3,), (3,)]


@pytest.mark.parametrize("shape,axis", [((0, 2, 3), (1, 2)), ((2, 3, 0), (0, 1)), ((2, 0, 3), (0, 2))], ids=str)
@pytest.mark.parametrize("method", ["min", "max", "sum", "prod", "any", "all"])
def test_multi_axis_reduction_with_an_empty_kept_axis(shape, axis, method):
    n = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    e = getattr(n, method)(axis=axis)
    r = getattr(xp.asarray(n), method)(axis=axis)
    assert r.shape == e.shape and r.dtype == e.dtype


@pytest.mark.parametrize("key", [np.empty((0, 1), bool), np.empty((0, 5), bool), np.empty((5, 0), bool),
                                 np.empty((0, 0, 5), bool), np.ones(3, bool), np.ones((2, 4), bool),
                                 (Ellipsis, np.ones(3, bool)), (1, np.ones(2, bool)),
                                 (np.empty(0, bool), np.empty((0, 2), bool))], ids=str)
def test_mismatched_mask_raises_numpys_index_error(key):
    with pytest.raises(IndexError) as np_err:
        np.zeros((2, 3, 4))[key]
    with pytest.raises(IndexError) as xp_err:
        xp.zeros((2, 3, 4))[key]
    assert str(xp_err.value) == str(np_err.value)


class _HasEq:
    def __eq__(self, other):
        return (other == 2) | (other == 4)


class _HasNe:
    def __ne__(self, other):
        return (other == 2) | (other == 4)


class _HasEqSub(_HasEq):
    pass


@pytest.mark.parametrize("value", [_HasEq(), _HasNe(), _HasEqSub()], ids=["eq", "ne", "eq_sub"])
@pytest.mark.parametrize("dtype", [np.int32, np.float64], ids=lambda d: np.dtype(d).name)
def test_compare_with_object_defining_eq(value, dtype):
    """NumPy's object comparison: each element against the object, whose reflected method answers."""
    n = np.array([[1, 2, 3], [4, 5, 6]], dtype)
    a = xp.asarray(n)
    for op in (lambda x: x == value, lambda x: x != value, lambda x: value == x):
        e, r = op(n), op(a)
        assert isinstance(r, xp.ndarray) and r.dtype == e.dtype
        np.testing.assert_array_equal(xp.asnumpy(r), e)


@pytest.mark.parametrize("layout", ["neg", "transposed", "big"])
@pytest.mark.parametrize("cdt,rdt", [(np.complex64, np.float32), (np.complex128, np.float64),
                                     (np.complex64, np.float64)])
def test_astype_complex_to_real_is_a_new_array(layout, cdt, rdt):
    """astype(real) of a complex array is a new array (NumPy's): values, 'K' strides and ComplexWarning
    as NumPy's, and writing it leaves the source untouched (xp's own path once returned the real-part
    view of the source's memory for complex64 -> float32 / complex128 -> float64)."""
    if layout == "big":     # past NumPy-first's size: xp's own cast path
        a = (np.arange(2_000_000) + 1j).astype(cdt)
        x = xp.asarray(a)
    else:
        base = (np.arange(6) + 1j).reshape(2, 3).astype(cdt)
        view = (lambda m: m[::-1, :]) if layout == "neg" else (lambda m: m.T)
        a, x = view(base), view(xp.asarray(base))
    with pytest.warns(np.exceptions.ComplexWarning):
        r = x.astype(rdt, order="K")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        want = a.astype(rdt, order="K")
    np.testing.assert_array_equal(r.get(), want)
    assert r.dtype == want.dtype and r.strides == want.strides
    r[(0,) * r.ndim] = 99
    np.testing.assert_array_equal(x.get(), a)


class _WithUfunc(np.lib.mixins.NDArrayOperatorsMixin):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ufunc.__name__, inputs, kwargs


class _OptOut:
    __array_ufunc__ = None

    def __radd__(self, other):
        return "radd"

    def __rmatmul__(self, other):
        return "rmatmul"

    def __gt__(self, other):
        return "gt"


def test_operators_follow_nep13_for_foreign_operands():
    """NEP 13's operator rules, as numpy.ndarray's and cupy.ndarray's: an operand with its own
    __array_ufunc__ is asked to run NumPy's ufunc; one with __array_ufunc__ = None gets NotImplemented,
    so Python runs its reflected method."""
    x, y, z = xp.array([3, 7]), _WithUfunc(), _OptOut()
    assert x + y == ("add", (x, y), {})
    assert (x < y) == ("less", (x, y), {})
    assert y - x == ("subtract", (y, x), {})
    assert x + z == "radd" and (x < z) == "gt" and x @ z == "rmatmul"
    with pytest.raises(TypeError):
        x += y
    np.testing.assert_array_equal((x + 1).get(), [4, 8])
    assert int(x @ x) == 58
