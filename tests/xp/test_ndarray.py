"""xp.ndarray: attributes, views, indexing, in-place operators, conversions."""
import copy
import pickle

import numpy as np
import pytest
import torch

import npudist.xp as xp

from .compare import ALL_DTYPES, numpy_xp_compare, sample


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_attributes(dtype):
    a_np = np.zeros((3, 4, 5), dtype)
    a = xp.asarray(a_np)
    assert type(a.dtype) is type(np.dtype(dtype)) and a.dtype == np.dtype(dtype)
    assert a.shape == a_np.shape and a.ndim == 3 and a.size == 60
    assert a.itemsize == a_np.itemsize and a.nbytes == a_np.nbytes
    assert a.strides == a_np.strides
    assert a.T.shape == (5, 4, 3) and a.T.strides == a_np.T.strides
    assert a.flags["C_CONTIGUOUS"] and not a.flags.f_contiguous
    assert a.T.flags.f_contiguous and not a.T.flags.c_contiguous
    assert a.device.type == "npu"
    assert a._t.device == torch.device("npu", torch.npu.current_device())


@pytest.mark.parametrize("spec", [np.float32, "float32", "f4", np.dtype("float32"), torch.float32])
def test_dtype_specs_accepted(spec):
    assert xp.zeros(2, dtype=spec).dtype == np.float32
    assert xp.asarray([1, 2]).astype(spec).dtype == np.float32


@pytest.mark.parametrize("dtype", ["U3", object, "M8[s]"])
def test_unsupported_dtypes_rejected_at_creation(dtype):
    with pytest.raises(TypeError, match="does not support dtype"):
        xp.zeros(3, dtype=dtype)


KEYS = [
    (1,), (slice(1, 3),), (slice(None, None, -1),), (slice(None, None, -2), 1), (Ellipsis, 0), (None, 1),
    ((1, 0, 2),), ([0, 2], slice(1, None)), (slice(None), [1, 0]), ([0, 1], [1, 2]), ([[0], [2]], [1, 0]),
    (slice(3, 0, -1), [0, 2]), (Ellipsis, None), (-1, -1), (slice(None), None, slice(None, None, -1)),
    ([True, False, True],), (0, slice(None), 1) if False else (0, slice(None)), ([], ),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem(key):
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray(np.arange(24).reshape(3, 4, 2))
        return a[key if not (isinstance(key[0], tuple)) else list(key[0])]
    check()


def test_boolean_and_array_indexing():
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray(np.arange(12.0).reshape(3, 4))
        return a[a > 4], a[xp.asarray([2, 0])], a[:, xp.asarray([True, False, True, False])], a[1:, [0, -1]]
    check()


def test_separated_advanced_indices_move_to_front():
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray(np.arange(60).reshape(3, 4, 5))
        return a[[0, 1], :, [2, 3]]
    check()


@pytest.mark.parametrize("key", [1, (slice(None, None, -1),), (slice(None), [0, 2]), ([True, False, True],),
                                 (slice(None, None, -2), 0), (Ellipsis, 1)], ids=repr)
def test_setitem(key):
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray(np.arange(12.0).reshape(3, 4))
        a[key] = -1
        b = xp.asarray(np.arange(12.0).reshape(3, 4))
        b[key] = b[key] * 10
        return a, b
    check()


def test_views_share_memory():
    a = xp.arange(10)
    v = a[2:5]
    v[...] = 0
    assert a.tolist() == [0, 1, 0, 0, 0, 5, 6, 7, 8, 9]
    r = a.reshape(2, 5)
    r[1, 0] = 99
    assert a[5].item() == 99
    t = a.T
    assert t._t.data_ptr() == a._t.data_ptr()


def test_inplace_operators():
    a = xp.arange(5, dtype=np.float32)
    ptr = a._t.data_ptr()
    a += 1
    a *= 2
    a -= xp.ones(5, dtype=np.float32)
    a /= 2
    a **= 2
    assert a._t.data_ptr() == ptr and a.dtype == np.float32
    np.testing.assert_allclose(a.get(), (((np.arange(5) + 1) * 2 - 1) / 2) ** 2)
    i = xp.arange(5)
    with pytest.raises(TypeError, match="same_kind"):
        i += 1.5
    i //= 2
    i %= 2
    i <<= 1
    i |= 1
    assert i.tolist() == [1, 1, 3, 3, 1]


def test_zero_d_results_and_scalar_conversion():
    a = xp.asarray([1.5, 2.5])
    s = a[0]
    assert isinstance(s, xp.ndarray) and s.ndim == 0
    assert float(s) == 1.5 and s.item() == 1.5 and s.tolist() == 1.5
    assert xp.sum(a).ndim == 0
    assert int(xp.asarray(3)) == 3 and [10, 20][xp.asarray(1)] == 20
    with pytest.raises(TypeError):
        [1][xp.asarray(1.0)]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a)
    assert bool(xp.asarray([1]))


def test_conversions():
    a_np = np.arange(6, dtype=np.int16).reshape(2, 3)
    a = xp.asarray(a_np)
    assert np.asarray(a).dtype == np.int16
    np.testing.assert_array_equal(np.asarray(a), a_np)
    np.testing.assert_array_equal(xp.asnumpy(a), a_np)
    assert a.tolist() == a_np.tolist()
    assert repr(a) == repr(a_np) and str(a) == str(a_np)
    b = a.astype(np.float32)
    assert b.dtype == np.float32 and b._t.data_ptr() != a._t.data_ptr()
    assert a.astype(np.int16, copy=False) is a
    c = a.copy()
    c[0, 0] = 100
    assert a[0, 0].item() == 0
    assert copy.deepcopy(a).tolist() == a.tolist()
    assert pickle.loads(pickle.dumps(a)).tolist() == a.tolist()
    with pytest.raises(ValueError, match="copy=False"):
        a.__array__(copy=False)


def test_numpy_operand_on_the_left_returns_xp():
    r = np.arange(3) + xp.arange(3)
    assert isinstance(r, xp.ndarray) and r.tolist() == [0, 2, 4]


def test_len_iter_contains():
    a = xp.asarray([[1, 2], [3, 4]])
    assert len(a) == 2
    assert [r.tolist() for r in a] == [[1, 2], [3, 4]]
    assert 3 in a and 7 not in a
    with pytest.raises(TypeError):
        len(xp.asarray(1))


def test_methods_match_numpy():
    @numpy_xp_compare()
    def check(xp):
        a = sample(xp, (3, 4), np.float64)
        return (a.sum(axis=0), a.mean(), a.std(axis=1), a.max(), a.argmin(axis=1), a.cumsum(), a.reshape(4, 3),
                a.reshape((2, 6)), a.transpose(), a.transpose(1, 0), a.flatten(), a.ravel(), a.clip(-1, 1),
                a.round(2), a.any(), a.all(axis=0), a.squeeze(), a.swapaxes(0, 1), a.repeat(2, axis=0),
                a.take([0, 2], axis=1), a.diagonal(), a.trace(), a.nonzero(), a.argsort(axis=0), a.var(ddof=1),
                a.prod(axis=1), a.min(axis=0), a.conj(), a.real, a.imag, a.dot(a.T))
    check()


def test_sort_method_in_place():
    a = xp.asarray([3, 1, 2])
    assert a.sort() is None and a.tolist() == [1, 2, 3]


def test_setitem_value_errors_like_numpy():
    a = xp.zeros(3, dtype=np.int8)
    with pytest.raises(OverflowError):
        a[0] = 300
    f = xp.zeros(3)
    with pytest.raises(TypeError):
        f[0] = 1j


def test_mixed_dtype_setitem_casts():
    a = xp.zeros(3, dtype=np.int32)
    a[:] = xp.asarray([1.7, -2.2, 3.9])
    assert a.tolist() == [1, -2, 3]


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint32", "bool", "complex64"])
@pytest.mark.parametrize("shape", [(3, 2), (), (3, 0, 2)])
def test_real_imag_are_numpys_views(dtype, shape):
    a = xp.asarray(np.arange(int(np.prod(shape))).reshape(shape).astype(dtype))
    if np.dtype(dtype).kind != "c":
        assert a.real is a and xp.real(a) is a          # NumPy returns the array itself
        return
    for part in ("real", "imag"):
        v = getattr(xp, part)(a)
        assert v.base is a and getattr(a, part).base is a
        a += 1 + 1j                                     # writes through the view
        np.testing.assert_array_equal(xp.asnumpy(v), getattr(xp.asnumpy(a), part))


def test_astype_float64_to_float16_rounds_once():
    # 190.9374954588728 is just below the float16 midpoint 190.9375: NumPy rounds down; rounding
    # through float32 first (PyTorch's conversion) lands on the midpoint and ties up to 191.
    rng = np.random.default_rng(0)
    a = np.concatenate([np.full(5000, 190.9374954588728), rng.standard_normal(20000) * 1000,
                        rng.standard_normal(20000) * 1e-6,
                        [np.nan, np.inf, -np.inf, 1e300, -1e300, 65504, 65520, 65519.99, 0.0, -0.0, 1e-40,
                         2.0 ** -25, 2.0 ** -25 * 1.0000001]])
    with np.errstate(over="ignore"):
        expected = a.astype(np.float16)
    for got in (xp.asarray(a).astype(xp.float16), xp.asarray(xp.asarray(a), dtype=xp.float16)):
        np.testing.assert_array_equal(xp.asnumpy(got).view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("shape", [(3,), (2, 0), ()])
def test_compare_with_none_or_str_is_elementwise(shape):
    a = np.zeros(shape)
    x = xp.asarray(a)
    for other in (None, "text"):
        assert (x == other).shape == shape and (x == other).dtype == np.bool_
        np.testing.assert_array_equal(xp.asnumpy(x == other), a == other)
        np.testing.assert_array_equal(xp.asnumpy(x != other), a != other)


def test_setitem_value_not_broadcasting_is_value_error():
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(4,\) into shape \(5, 6\)"):
        xp.ones((5, 6))[:] = xp.ones(4)


@pytest.mark.parametrize("case", ["larger_dtype_not_dividing", "last_axis_not_contiguous", "0d_other_size"])
def test_view_dtype_errors_as_numpy(case):
    calls = {"larger_dtype_not_dividing": lambda m: m.ones((5, 6), dtype=m.float32)[:, :5].view(m.float64),
             "last_axis_not_contiguous": lambda m: m.ones((5, 6), dtype=m.float32).T.view(m.float64),
             "0d_other_size": lambda m: m.asarray(1.0).view(m.int8)}
    with pytest.raises(ValueError) as expected:
        calls[case](np)
    with pytest.raises(ValueError, match=str(expected.value)):
        calls[case](xp)
    assert xp.ones((5, 6), dtype=xp.float32).view(xp.float64).shape == (5, 3)
    assert xp.ones((5, 6), dtype=xp.float32).view(xp.int8).shape == (5, 24)


def test_shape_assignment_needing_a_copy_is_attribute_error():
    a = xp.ones((5, 6)).T
    with pytest.raises(AttributeError, match="Incompatible shape for in-place modification"):
        a.shape = (30,)
    b = xp.ones((5, 6))
    b.shape = (30,)
    assert b.shape == (30,)


@pytest.mark.parametrize("conv", [int, float, complex])
def test_python_scalar_of_non_0d_array_is_type_error(conv):
    # NumPy 2.4: only 0-d arrays convert (a 1-element 1-d or 2-d array too raises)
    with pytest.raises(TypeError, match="only 0-dimensional arrays"):
        conv(xp.ones((1, 1)))
    assert conv(xp.asarray(2)) == conv(2)
