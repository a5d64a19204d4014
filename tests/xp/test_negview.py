"""Negative-step views (npudist.xp._negview): a[::-1], flip, a[:, 1::-1] are views of a's memory as
NumPy's: every write path writes into a, reads see a's current values, strides / flags / base /
data.ptr / memory overlap are NumPy's. Each case runs the same steps on NumPy and on xp."""
import numpy as np
import pytest
import torch

import npudist.xp as xp

DTYPES = ["int64", "int32", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "bool", "complex64"]
# (shape, key) pairs: the view is a[key]; flipped axes 1, 2 or 3, mixed with ints / positive steps / None
VIEWS = [
    ((7,), np.s_[::-1]),
    ((7,), np.s_[5:1:-2]),
    ((3, 4), np.s_[::-1]),
    ((3, 4), np.s_[:, 1::-1]),
    ((3, 4), np.s_[::-1, ::-1]),
    ((3, 4), np.s_[1, ::-1]),
    ((3, 4), np.s_[None, ::-2, 1:]),
    ((2, 3, 4), np.s_[::-1, :, ::-1]),
    ((2, 3, 4), np.s_[..., ::-1]),
    ((2, 3, 4), np.s_[::-1, ::-1, ::-1]),
    ((2, 3, 4), np.s_[:, 2:0:-1, 3]),
]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("complex"):
        return (rng.integers(0, 9, shape) + 1j * rng.integers(0, 9, shape)).astype(dtype)
    return rng.integers(1, 50, shape).astype(dtype)


def _pair(shape, dtype, seed=0):
    n = _data(shape, dtype, seed)
    return n, xp.asarray(n)


def _strides(a):
    """Strides of the axes longer than 1 (a length-1 axis' stride is arbitrary: torch and NumPy differ)."""
    return tuple(s for s, d in zip(a.strides, a.shape) if d > 1)


def _same(x, n):
    got = xp.asnumpy(x)
    assert got.dtype == n.dtype, (got.dtype, n.dtype)
    np.testing.assert_array_equal(got, n)


@pytest.mark.parametrize("shape,key", VIEWS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reads_strides_and_aliasing(shape, key, dtype):
    n, x = _pair(shape, dtype)
    nv, xv = n[key], x[key]
    _same(xv, nv)
    assert _strides(xv) == _strides(nv) and xv.shape == nv.shape
    assert xv.flags.c_contiguous == nv.flags.c_contiguous and xv.flags.f_contiguous == nv.flags.f_contiguous
    assert not xv.flags.owndata
    assert xv.base is x
    assert xp.may_share_memory(xv, x) and xp.shares_memory(xv, x)
    np.testing.assert_array_equal(np.asarray(xv), nv)
    # reads follow later writes to the viewed array
    n[...] = _data(shape, dtype, 1)
    x[...] = xp.asarray(n)
    _same(xv, nv)
    _same(xv + xv if dtype != "bool" else xv | xv, nv + nv if dtype != "bool" else nv | nv)
    # the address of the first element (NumPy's data pointer), relative to the array's
    assert xv.data.ptr - x.data.ptr == nv.__array_interface__["data"][0] - n.__array_interface__["data"][0]


@pytest.mark.parametrize("shape,key", VIEWS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_writes_through(shape, key, dtype):
    n, x = _pair(shape, dtype)
    nv, xv = n[key], x[key]
    fill = _data(nv.shape, dtype, 2)
    nv[...] = fill
    xv[...] = xp.asarray(fill)
    _same(x, n)
    if nv.ndim:
        nv[0] = fill.reshape(-1)[-1]
        xv[0] = xp.asarray(fill.reshape(-1)[-1])
        _same(x, n)
        nv[-1:] = nv[:1]
        xv[-1:] = xv[:1]
        _same(x, n)
        mask = _data(nv.shape, "bool", 3)
        nv[mask] = fill[mask]
        xv[xp.asarray(mask)] = xp.asarray(fill[mask])
        _same(x, n)
        nv[[0, -1]] = fill[[1 % len(fill), 0]]
        xv[[0, -1]] = xp.asarray(fill[[1 % len(fill), 0]])
        _same(x, n)
    _same(xv, nv)


INPLACE = ["__iadd__", "__isub__", "__imul__", "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__",
           "__ixor__", "__ilshift__", "__irshift__", "__itruediv__"]


@pytest.mark.parametrize("shape,key", VIEWS[:4] + VIEWS[7:9])
@pytest.mark.parametrize("op", INPLACE)
@pytest.mark.parametrize("dtype", ["int64", "uint16", "uint32", "uint64", "float64", "complex64", "bool"])
def test_inplace_operators(shape, key, op, dtype):
    if dtype == "bool" and op not in ("__iand__", "__ior__", "__ixor__"):
        pytest.skip("NumPy has no such bool loop")
    if dtype in ("float64", "complex64") and op in ("__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"):
        pytest.skip("no bitwise ops on floating dtypes")
    if dtype == "complex64" and op in ("__ifloordiv__", "__imod__", "__ipow__"):
        pytest.skip("no complex floor division; complex power is inexact in PyTorch (not a view question)")
    if op == "__itruediv__" and dtype not in ("float64", "complex64"):
        pytest.skip("true division of integers casts to float")
    n, x = _pair(shape, dtype)
    o = 2 if op != "__ipow__" else 2
    o = True if dtype == "bool" else o
    nv = n[key]
    getattr(nv, op)(o)
    xv = x[key]
    getattr(xv, op)(o)
    _same(x, n)
    # the statement form: Python writes the result back through the same view
    nv2 = n[key]
    n[key] = getattr(nv2, op.replace("__i", "__"))(o)
    xv2 = x[key]
    x[key] = getattr(xv2, op.replace("__i", "__"))(o)
    _same(x, n)


@pytest.mark.parametrize("shape,key", VIEWS)
@pytest.mark.parametrize("dtype", ["int32", "uint16", "uint64", "float32", "complex64"])
def test_ufunc_out_and_where(shape, key, dtype):
    n, x = _pair(shape, dtype)
    m, y = _pair(n[key].shape, dtype, 5)
    np.add(n[key], m, out=n[key])
    r = xp.add(x[key], y, out=x[key])
    _same(x, n)
    _same(r, n[key])
    w = _data(m.shape, "bool", 6)
    np.multiply(m, 3, out=n[key], where=w)
    xp.multiply(y, 3, out=x[key], where=xp.asarray(w))
    _same(x, n)
    if n[key].shape == n.shape:   # the out view overlapping an operand (NumPy copies the inputs first)
        np.subtract(n, n[key], out=n[key])
        xp.subtract(x, x[key], out=x[key])
        _same(x, n)


@pytest.mark.parametrize("shape,key", VIEWS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_copyto_put_place_putmask(shape, key, dtype):
    n, x = _pair(shape, dtype)
    nv, xv = n[key], x[key]
    v = _data(nv.shape, dtype, 7)
    nv.fill(v.reshape(-1)[0])
    xv.fill(v.reshape(-1)[0].item())
    _same(x, n)
    np.copyto(nv, v)
    xp.copyto(xv, xp.asarray(v))
    _same(x, n)
    w = _data(nv.shape, "bool", 8)
    np.copyto(nv, v[::-1] if v.ndim else v, where=w)
    xp.copyto(xv, xp.asarray(v[::-1] if v.ndim else v), where=xp.asarray(w))
    _same(x, n)
    if nv.size:
        vals = _data((2,), dtype, 9)
        np.put(nv, [0, nv.size - 1], vals)
        xp.put(xv, xp.asarray([0, nv.size - 1]), xp.asarray(vals))
        _same(x, n)
        np.place(nv, w, vals)
        xp.place(xv, xp.asarray(w), xp.asarray(vals))
        _same(x, n)
        np.putmask(nv, ~w, v)
        xp.putmask(xv, xp.asarray(~w), xp.asarray(v))
        _same(x, n)


@pytest.mark.parametrize("shape,key", VIEWS)
@pytest.mark.parametrize("dtype", ["int16", "uint32", "uint64", "float64", "bool"])
def test_sort_flat_set_and_random(shape, key, dtype):
    n, x = _pair(shape, dtype)
    nv, xv = n[key], x[key]
    if nv.ndim:
        nv.sort()
        xv.sort()
        _same(x, n)
        nv.sort(axis=0)
        xv.sort(axis=0)
        _same(x, n)
    v = _data(nv.shape, dtype, 10)
    nv.flat[::2] = v.reshape(-1)[::2]
    xv.flat[::2] = xp.asarray(v.reshape(-1)[::2])
    _same(x, n)
    xv.set(v)
    nv[...] = v
    _same(x, n)
    if nv.ndim:
        before = np.sort(xp.asnumpy(x).reshape(-1))
        xp.random.shuffle(xv)         # a permutation of the first axis, in a's memory
        np.testing.assert_array_equal(np.sort(xp.asnumpy(x).reshape(-1)), before)
        np.testing.assert_array_equal(np.sort(xp.asnumpy(xv).reshape(-1)), np.sort(nv.reshape(-1)))


@pytest.mark.parametrize("dtype", ["float64", "complex64", "uint32"])
def test_functions_with_out(dtype):
    n, x = _pair((3, 4), dtype)
    o_n, o_x = np.zeros((4, 3), dtype), xp.zeros((4, 3), dtype)
    np.sum(n, axis=0, out=o_n[::-1, 1])
    xp.sum(x, axis=0, out=o_x[::-1, 1])
    _same(o_x, o_n)
    np.clip(n, 5, 20, out=n[::-1, ::-1])
    xp.clip(x, 5, 20, out=x[::-1, ::-1])
    _same(x, n)
    if dtype != "uint32":
        np.matmul(n[:, :3], n[:3, :3], out=o_n[:3, ::-1].T)
        xp.matmul(x[:, :3], x[:3, :3], out=o_x[:3, ::-1].T)
        _same(o_x, o_n)
    if dtype == "complex64":
        n[::-1].real[...] = 1
        x[::-1].real[...] = 1
        n[:, ::-1].imag[0] = 7
        x[:, ::-1].imag[0] = 7
        _same(x, n)


def test_composition_and_flip_functions():
    n, x = _pair((4, 5), "int64")
    for nv, xv in [(n[::-1][::2], x[::-1][::2]), (n[::-1][::-1], x[::-1][::-1]), (np.flip(n), xp.flip(x)),
                   (np.flipud(n), xp.flipud(x)), (np.fliplr(n), xp.fliplr(x)), (np.flip(n, 1)[1:, ::-1], xp.flip(x, 1)[1:, ::-1]),
                   (n[::-1].T, x[::-1].T), (n[:, ::-2].T[::-1], x[:, ::-2].T[::-1])]:
        _same(xv, nv)
        assert _strides(xv) == _strides(nv)
        assert xv.base is x
    rows_n, rows_x = list(n[::-1, ::-2]), list(x[::-1, ::-2])
    for rn, rx in zip(rows_n, rows_x):
        _same(rx, rn)
        assert rx.strides == rn.strides and rx.base is x
    rows_x[0][0] = -7
    assert int(x[-1, -1]) == -7
    x[-1, -1] = n[-1, -1]
    # a[::-1][::-1] is a positive view of a again
    assert type(x[::-1][::-1]._t) is torch.Tensor and x[::-1][::-1].flags.c_contiguous
    y = xp.flip(x)
    y[0, 0] = -1
    assert int(x[-1, -1]) == -1
    # may_share_memory (CuPy's test_memory_ranges::test_negative_strides)
    assert xp.may_share_memory(x[:2, 1::-1], x[1:, 1:])
    assert not xp.shares_memory(x[:1, ::-1], x[1:, ::-1])
    assert xp.shares_memory(x[::-1, ::-1][1], x[2])


def test_reads_after_writes_before_first_use():
    n, x = _pair((5,), "float64")
    v = x[::-1]
    x[0] = -1.0                     # written after the view was made, before it was ever read
    n[0] = -1.0
    _same(v, n[::-1])
    xp.asnumpy(x)
    w = x[1::-2]
    xp.add(x, 1, out=x)             # (NumPy's host loop may write x: no torch op sees it)
    n += 1
    _same(w, n[1::-2])


def test_copies_are_copies():
    n, x = _pair((3, 4), "float32")
    xv = x[::-1, ::-1]
    for c in (xp.ascontiguousarray(xv), xv.copy(), xp.array(xv), xv.astype("float64"), xp.asfortranarray(xv)):
        c[0, 0] = -5
        assert float(x[-1, -1]) != -5
        assert c.base is None or not xp.may_share_memory(c, x)
    assert xp.ascontiguousarray(xv).flags.c_contiguous
    _same(xp.ascontiguousarray(xv), n[::-1, ::-1])
    # a view of a view's mirror (reshape / transpose of a negative-stride view) still writes through
    r = xv.reshape(12)
    r[0] = 99
    assert float(x[-1, -1]) == 99
    with pytest.raises(NotImplementedError, match="negative-step slice"):
        r[::-1]
    # DLPack has no negative strides: a copy, or BufferError with copy=False
    t = torch.from_dlpack(xv)
    np.testing.assert_array_equal(t.cpu().numpy(), xp.asnumpy(xv))
    with pytest.raises(BufferError, match="negative-stride"):
        xv.__dlpack__(copy=False)


def test_kernels_refuse_negative_strides():
    k = xp.ElementwiseKernel("T x", "T y", "y = x + 1", "xpneg_add1")
    x = xp.arange(6.0)
    k(x, x)                                   # caches a plan for positive strides
    with pytest.raises(TypeError, match="negative-stride"):
        k(x, x[::-1])
    with pytest.raises(TypeError, match="negative-stride"):
        k(x[::-1])


def test_ordinary_arrays_take_plain_tensors():
    x = xp.arange(6)
    for v in (x[1:], x[::2], x.T, x[None], xp.flip(x)[::-1], x + 1):
        assert type(v._t) in (torch.Tensor,)


def test_random_and_fft_out():
    x = xp.zeros((3, 4))
    xp.random.default_rng(7).random(out=x[::-1, 1::-1])
    ref = xp.asnumpy(xp.random.default_rng(7).random((3, 2)))
    np.testing.assert_array_equal(xp.asnumpy(x)[::-1, 1::-1], ref)
    assert (xp.asnumpy(x)[:, 2:] == 0).all()
    n = np.arange(8.0)
    c = xp.zeros(8, dtype="complex128")
    xp.fft.fft(xp.asarray(n), out=c[::-1])
    np.testing.assert_allclose(xp.asnumpy(c)[::-1], np.fft.fft(n), atol=1e-12)


@pytest.mark.parametrize("key", [np.s_[:], np.s_[::2, ::2], np.s_[::-1], np.s_[::-2, ::-2], np.s_[:, ::-1],
                                 np.s_[::2, ::-2], np.s_[1:3, 5:0:-3]])
@pytest.mark.parametrize("dtype", ["int8", "uint32", "complex128"])
def test_byte_bounds(key, dtype):
    from numpy.lib.array_utils import byte_bounds
    n, x = _pair((4, 7), dtype)
    lo_n, hi_n = byte_bounds(n[key])
    lo_x, hi_x = xp.byte_bounds(x[key])
    base_n, base_x = n.__array_interface__["data"][0], x.data.ptr
    assert (lo_x - base_x, hi_x - base_x) == (lo_n - base_n, hi_n - base_n)
    e = xp.zeros((19, 0, 4))
    assert xp.byte_bounds(e) == (e.data.ptr, e.data.ptr)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_unsigned_operand_before_the_view(dtype):
    """An unsigned operand left of the view (torch asks the UIntTensor handler first): the view's
    values are still read from its memory, not from an unfilled mirror."""
    n = np.arange(12).reshape(3, 4).astype(dtype)
    x = xp.asarray(n)
    m = (np.arange(6).reshape(3, 2) + 100).astype(dtype)
    w = np.array([[True, False]] * 3)
    np.multiply(m, 3, out=n[:, 1::-1], where=w)
    xp.multiply(xp.asarray(m), 3, out=x[:, 1::-1], where=xp.asarray(w))
    _same(x, n)
    _same(xp.where(xp.asarray(w), xp.asarray(m), x[:, 1::-1]), np.where(w, m, n[:, 1::-1]))
