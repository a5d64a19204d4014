"""npudist/xp/_manipulation/ against NumPy: shapes (reshape, ravel), joining, tiling, rearranging,
dims, basic (copyto), add/remove; results, strides/views and NumPy's exception types."""
import warnings

import numpy as np
import pytest

import npudist.xp as xp


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)


def _raises_like(fn):
    """fn(np) raises; fn(xp) raises the same exception type."""
    with pytest.raises(Exception) as want:
        fn(np)
    with pytest.raises(want.type):
        fn(xp)


# -- shape ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    lambda m: m.zeros((2, 3, 4)).reshape(2, 4, 4, order="K"),
    lambda m: m.zeros((2, 3, 4)).reshape(4, 3, 2, copy="False"),
    lambda m: m.zeros((2, 3, 4)).reshape(3, -1, -1),
    lambda m: m.zeros((2, 3, 4)).transpose(2, 0, 1).reshape(4, 3, 2, order="F", copy=False),
    lambda m: m.zeros((2, 3, 4)).reshape(2, 4, 4),
    lambda m: m.ones(65).reshape([1] * 64 + [65]),
    lambda m: m.zeros((0,)).reshape((-1, 0)),
])
def test_reshape_errors(bad):
    _raises_like(bad)


@pytest.mark.parametrize("order", ["C", "F", "A"])
def test_reshape_views_and_zero_size(order):
    for shape in ((2, 0, 3), (0,)):
        a, x = np.zeros(shape), xp.zeros(shape)
        new = (5, 0, 4) if len(shape) == 3 else (0,)
        b, y = a.reshape(new, order=order), x.reshape(new, order=order)
        assert y.strides == b.strides and y.base is x
    a, x = np.arange(24.0).reshape(2, 3, 4), xp.arange(24.0).reshape(2, 3, 4)
    y = x.reshape(4, 6, order=order)
    _same(y, a.reshape(4, 6, order=order))
    _same(x.reshape(-2, 12), a.reshape(-2, 12))
    z = x.reshape(4, 6, copy=True)
    z[0, 0] = 99
    assert float(x[0, 0, 0]) == 0


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_ravel_orders(order):
    a = np.arange(1.0, 25.0).reshape(2, 3, 4)
    x = xp.arange(1.0, 25.0).reshape(2, 3, 4)
    cases = [(a.transpose(2, 0, 1), x.transpose(2, 0, 1)),
             (np.asfortranarray(a), xp.asfortranarray(x)),
             (a.transpose(0, 2, 1)[:, ::2], x.transpose(0, 2, 1)[:, ::2]),
             (np.broadcast_to(np.arange(2.0).reshape(2, 1), (3, 2, 4)),
              xp.broadcast_to(xp.arange(2.0).reshape(2, 1), (3, 2, 4))),
             (np.arange(10)[::2], xp.arange(10)[::2])]
    for n, v in cases:
        got = v.ravel(order)
        _same(got, n.ravel(order))
        assert got.flags.c_contiguous


# -- join -------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    lambda m: m.concatenate((m.ones((3, 4)), m.ones((4, 3)))),
    lambda m: m.concatenate((m.ones((3, 4)),) * 2, out=m.zeros((6, 4), dtype=np.int64)),
    lambda m: m.concatenate((m.ones((3, 4)),) * 2, out=m.zeros((6, 4)), dtype=float),
    lambda m: m.stack((m.ones((3, 4)),) * 3, axis=1, out=m.zeros((3, 3, 4), dtype=np.int64)),
    lambda m: m.column_stack((m.zeros(()), m.zeros(3))),
    lambda m: m.vstack((m.zeros(3), m.zeros((3, 1)))),
])
def test_join_errors(bad):
    _raises_like(bad)


def test_concatenate_out_casts_and_row_stack_warns():
    out_n, out_x = np.zeros((6, 4), np.float32), xp.zeros((6, 4), np.float32)
    np.concatenate((np.ones((3, 4), np.int16),) * 2, out=out_n)
    xp.concatenate((xp.ones((3, 4), np.int16),) * 2, out=out_x)
    _same(out_x, out_n)
    with pytest.warns(DeprecationWarning):
        r = xp.row_stack((xp.ones((2, 3)), xp.zeros(3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _same(r, np.row_stack((np.ones((2, 3)), np.zeros(3))))


# -- tiling -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    lambda m: m.repeat(m.arange(24).reshape(2, 3, 4), [1, 2, 3]),
    lambda m: m.repeat(m.arange(24).reshape(2, 3, 4), [1, 2], 1),
    lambda m: m.repeat(m.arange(3), m.array([1, 2, 3], dtype=np.uint64)),
    lambda m: m.repeat(m.arange(3), m.array([1.0, 1.0, 1.0])),
    lambda m: m.repeat(m.arange(6), m.array([[1, 2, 3, 4, 5, 6]])),
    lambda m: m.repeat(m.arange(3), np.intp(-1)),
    lambda m: m.repeat(m.arange(3), m.array([-1, 1, 2])),
    lambda m: m.tile(m.arange(3), -1),
    lambda m: m.tile(m.arange(3), (-1, -2)),
])
def test_tiling_errors(bad):
    _raises_like(bad)


def test_repeat_forms():
    a, x = np.arange(6).reshape(2, 3), xp.arange(6).reshape(2, 3)
    for reps, axis in ((2, None), ([2], 0), (np.int64(3), 1), ([1, 0, 2], 1), ([1.0, 2.0], 0)):
        _same(xp.repeat(x, reps, axis), np.repeat(a, reps, axis))
    _same(xp.repeat(x, xp.array([1, 2]), 0), np.repeat(a, np.array([1, 2]), 0))


# -- rearrange --------------------------------------------------------------------------------

def test_roll_array_shift_and_repeated_axes():
    a, x = np.arange(30).reshape(5, 2, 3), xp.arange(30).reshape(5, 2, 3)
    for shift, axis in ((2, None), ((2, 1), (0, 2)), ((1, 1), (0, 0)), (3, (0, 1)), (-1, -1)):
        _same(xp.roll(x, shift, axis), np.roll(a, shift, axis))
        _same(xp.roll(x, xp.array(shift), axis), np.roll(a, np.array(shift), axis))


@pytest.mark.parametrize("bad", [
    lambda m: m.roll(m.zeros((5, 2, 3)), (2, 2, 2), axis=(0, 1)),
    lambda m: m.roll(m.zeros((5, 2)), 1, axis=2),
    lambda m: m.roll(m.zeros((5, 2)), 1, axis="0"),
    lambda m: m.roll(m.zeros((5, 2)), "a", axis=0),
    lambda m: m.rot90(m.zeros((3, 4, 2)), 1, axes=(0, 1, 2)),
    lambda m: m.rot90(m.zeros((3, 4, 2)), 1, axes=(1, -2)),
    lambda m: m.rot90(m.zeros((3, 4, 2)), 1, axes=(1, 3)),
])
def test_rearrange_errors(bad):
    _raises_like(bad)


# -- add_remove, dims, basic, kind ------------------------------------------------------------

@pytest.mark.parametrize("obj", [[], (), [0, 2], [True, False, True], (0, True), [-1, -3]])
def test_delete_index_forms(obj):
    _same(xp.delete(xp.array([10, 20, 30]), obj), np.delete(np.array([10, 20, 30]), obj))


@pytest.mark.parametrize("obj", [True, [True, False], np.array(True), np.array([], dtype=bool), np.array([1.5])])
def test_delete_bad_index(obj):
    _raises_like(lambda m: m.delete(m.array([10, 20, 30]), obj if m is np else xp.asarray(obj)
                                    if isinstance(obj, np.ndarray) else obj))


def test_trim_zeros_0d_and_squeeze_0d():
    for v in (3.0, 0.0):
        _same(xp.trim_zeros(xp.array(v)), np.trim_zeros(np.array(v)))
    for ax in (0, -1):
        _same(xp.array(5.0).squeeze(axis=ax), np.array(5.0).squeeze(axis=ax))
    _raises_like(lambda m: m.array(5.0).squeeze(axis=1))


def test_copyto_squeezes_leading_ones_and_where_rules():
    for src_shape, dst_shape in (((1, 1, 3, 4), (3, 4)), ((1, 2, 1, 4), (2, 3, 4))):
        n, x = np.zeros(dst_shape), xp.zeros(dst_shape)
        np.copyto(n, np.arange(float(np.prod(src_shape))).reshape(src_shape))
        xp.copyto(x, xp.arange(float(np.prod(src_shape))).reshape(src_shape))
        _same(x, n)
    for where in (3.2, 0, True, 1 + 1j):
        n, x = np.zeros(3), xp.zeros(3)
        np.copyto(n, np.ones(3), where=where)
        xp.copyto(x, xp.ones(3), where=where)
        _same(x, n)
    _raises_like(lambda m: m.copyto(m.zeros(3), m.ones(3), where=m.arange(3)))


def test_asarray_chkfinite_and_mT_message():
    _same(xp.asarray_chkfinite([0, 4, 0, 5], dtype=np.float32), np.asarray_chkfinite([0, 4, 0, 5], dtype=np.float32))
    _raises_like(lambda m: m.asarray_chkfinite([0.0, np.inf]))
    _raises_like(lambda m: m.asarray_chkfinite([0.0, np.inf], dtype=np.int32))
    with pytest.raises(ValueError, match="matrix transpose with ndim < 2 is undefined"):
        _ = xp.arange(4).mT


@pytest.mark.parametrize("n", [6, 100_000])
@pytest.mark.parametrize("bounds", [(-5, 300), (10, 300), (300, 400), (-10, -5), (-5, None)])
def test_clip_python_ints_outside_the_dtype(n, bounds):
    a = np.arange(n).astype(np.uint8)
    try:
        expected = np.clip(a, *bounds)
    except OverflowError as e:
        with pytest.raises(OverflowError, match=str(e)):
            xp.clip(xp.asarray(a), *bounds)
        return
    got = xp.clip(xp.asarray(a), *bounds)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(xp.asnumpy(got), expected)


@pytest.mark.parametrize("src", [1 + 2j, "array"])
@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.uint64])
def test_copyto_complex_to_real_unsafe_warns_complexwarning(src, dtype):
    import warnings
    got = {}
    for m in (np, __import__("npudist.xp", fromlist=["x"])):
        d = m.zeros(3, dtype)
        s = src if src != "array" else m.asarray(np.array([1 + 1j, 2, 3], np.complex64))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.copyto(d, s, casting="unsafe")
        got[m.__name__] = (m.asnumpy(d).tolist() if m is not np else d.tolist(), [x.category for x in w])
    assert got["numpy"] == got["npudist.xp"]
