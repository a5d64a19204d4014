"""Module functions against NumPy (creation, manipulation, reductions, sorting, statistics, sets,
linalg, fft), across dtypes."""
import numpy as np
import pytest

import npudist.xp as xp

from .compare import ALL_DTYPES, FLOAT_DTYPES, REAL_DTYPES, numpy_xp_compare, sample

DT_IDS = lambda d: np.dtype(d).name  # noqa: E731  (a local one-line callable)


# ---- creation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DT_IDS)
def test_creation(dtype):
    @numpy_xp_compare()
    def check(xp):
        return (xp.zeros((2, 3), dtype), xp.ones(4, dtype=dtype), xp.full((2, 2), 1, dtype=dtype),
                xp.eye(3, 4, k=1, dtype=dtype), xp.zeros_like(xp.ones(3, dtype)), xp.full_like(xp.ones(2), 1, dtype),
                xp.asarray([1, 0, 1], dtype=dtype), xp.array([[1, 0]], dtype=dtype), xp.identity(2, dtype=dtype),
                xp.empty((0, 3), dtype=dtype).shape)
    check()


def test_creation_defaults_and_ranges():
    @numpy_xp_compare()
    def check(xp):
        return (xp.arange(5), xp.arange(1, 7, 2), xp.arange(0.0, 1.0, 0.1), xp.arange(5, dtype=np.float32),
                xp.arange(10, 0, -3), xp.linspace(0, 1, 7), xp.linspace(2, 3, 5, endpoint=False),
                xp.linspace(0, 10, 4, dtype=int), xp.logspace(0, 2, 3), xp.geomspace(1, 1000, 4), xp.full((2,), 7),
                xp.full(2, 2.5), xp.full(2, True), xp.tri(3, 4, 1), xp.tril(xp.ones((3, 3))), xp.triu(xp.ones((3, 4)), 1),
                xp.diag(xp.asarray([1, 2])), xp.diag(xp.ones((3, 3)), 1), xp.meshgrid(xp.arange(3), xp.arange(2)),
                xp.meshgrid(xp.arange(3), xp.arange(2), indexing="ij"), xp.indices((2, 3)),
                xp.asarray([[1, 2.5], [3, 4]]), xp.asarray(3), xp.asarray(True), xp.asarray(1j))
    check()


def test_asarray_copy_semantics():
    a = xp.arange(3)
    assert xp.asarray(a) is a
    assert xp.asarray(a, copy=True)._t.data_ptr() != a._t.data_ptr()
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(np.arange(3), copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(a, dtype=np.float32, copy=False)
    with pytest.raises((TypeError, ValueError)):
        xp.asarray([[1, 2], [3]])
    with pytest.raises(TypeError, match="object array"):
        xp.asarray([None, 1])


# ---- manipulation --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float32, np.complex128], ids=DT_IDS)
def test_manipulation(dtype):
    @numpy_xp_compare()
    def check(xp):
        a = sample(xp, (2, 3, 4), dtype)
        b = sample(xp, (2, 3, 4), dtype, seed=5)
        return (xp.reshape(a, (6, 4)), xp.reshape(a, (4, -1), order="F"), xp.ravel(a), xp.transpose(a, (2, 0, 1)),
                xp.swapaxes(a, 0, 2), xp.moveaxis(a, 0, -1), xp.expand_dims(a, (0, 2)), xp.squeeze(a[:1]),
                xp.concatenate([a, b], axis=1), xp.concatenate([a, b], axis=None), xp.stack([a, b], axis=-1),
                xp.hstack([a, b]), xp.vstack([a, b]), xp.dstack([a, b]), xp.split(a, 2, axis=2),
                xp.array_split(a, 3, axis=2), xp.tile(a, (2, 1, 1)), xp.repeat(a, 2, axis=1), xp.flip(a, 1),
                xp.fliplr(a), xp.roll(a, 2), xp.roll(a, (1, -1), axis=(0, 2)), xp.rot90(a[0]),
                xp.broadcast_to(a[:, :1], (2, 3, 4)), xp.atleast_2d(a[0, 0, 0]), xp.atleast_3d(a[0, 0]),
                xp.pad(a, 1), xp.pad(a, ((0, 1), (2, 0), (1, 1)), mode="edge"),
                xp.pad(a, 2, mode="reflect"), xp.pad(a, 2, mode="symmetric"), xp.pad(a, 1, mode="wrap"),
                xp.take(a, [0, 3], axis=2), xp.take(a, [1, -1]),
                xp.take_along_axis(a, xp.argsort(a, axis=2), axis=2), xp.where(a, a, b),
                xp.nonzero(a), xp.argwhere(a), xp.flatnonzero(a), xp.count_nonzero(a, axis=1), xp.diagonal(a),
                xp.trace(a[0]), xp.delete(a, 1, axis=1), xp.delete(a, [0, 2]), xp.insert(xp.ravel(a), 2, a[0, 0, 0]),
                xp.append(a, b, axis=0), xp.resize(a, (3, 5)), xp.column_stack([a[0, 0], b[0, 0]]),
                xp.unstack(a, axis=1) if hasattr(xp, "unstack") else None, xp.compress([True, False], a, axis=0),
                xp.extract(a, a), xp.tril_indices(3), xp.unravel_index(xp.asarray([5, 7]), (3, 4)),
                xp.ravel_multi_index((xp.asarray([1, 2]), xp.asarray([0, 3])), (3, 4)))
    check()


def test_insert_array_of_indices_and_values():
    @numpy_xp_compare()
    def check(xp):
        a = xp.arange(6).reshape(2, 3)
        return (xp.insert(a, [1, 1, 3], 9), xp.insert(a, 1, [7, 8, 9], axis=0), xp.insert(a, [0, 2], [5, 6], axis=1),
                xp.insert(xp.arange(4), [3, 0], [10, 20]))
    check()


def test_where_and_clip_promotion():
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray(np.arange(5, dtype=np.int8))
        return (xp.where(a > 2, a, 0), xp.where(a > 2, a, 1.5), xp.clip(a, 1, 3), xp.clip(a, 1.5, None),
                xp.clip(xp.asarray([1.0, np.nan, 3.0]), 0, 2), xp.select([a < 2, a > 3], [a, a * 10], -1))
    check()


# ---- reductions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), ()])
def test_reductions(dtype, axis):
    dt = np.dtype(dtype)
    complex_ = dt.kind == "c"
    unsigned = dt.kind == "u"

    @numpy_xp_compare(type_check=not unsigned, rtol=5e-3 if dt == np.float16 else None,
                      atol=5e-3 if dt == np.float16 else None)
    def check(xp):
        a = sample(xp, (3, 4, 5), dtype, low=-2, high=3)
        res = [xp.sum(a, axis=axis), xp.prod(a, axis=axis), xp.any(a, axis=axis), xp.all(a, axis=axis),
               xp.sum(a, axis=axis, keepdims=True), xp.count_nonzero(a, axis=axis)]
        if not complex_:
            res += [xp.max(a, axis=axis), xp.min(a, axis=axis, keepdims=True), xp.ptp(a, axis=axis)
                    if dt.kind != "b" else None]
        if dt.kind != "b":
            res.append(xp.mean(a, axis=axis))
        return res
    check()


@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.float32, np.float64], ids=DT_IDS)
def test_arg_and_cumulative(dtype):
    @numpy_xp_compare()
    def check(xp):
        a = sample(xp, (4, 5), dtype, low=-3, high=3)
        return (xp.argmax(a), xp.argmin(a, axis=0), xp.argmax(a, axis=1, keepdims=True), xp.cumsum(a),
                xp.cumsum(a, axis=0), xp.cumprod(a, axis=1), xp.diff(a), xp.diff(a, n=2, axis=0),
                xp.diff(a, prepend=0, axis=1), xp.cumulative_sum(a, axis=1, include_initial=True))
    check()


def test_nan_reductions():
    @numpy_xp_compare()
    def check(xp):
        with np.errstate(all="ignore"):
            a = xp.asarray([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 5.0, -1.0]])
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return (xp.nansum(a, axis=1), xp.nanprod(a), xp.nanmax(a, axis=1), xp.nanmin(a, axis=0),
                        xp.nanmean(a, axis=1), xp.nanvar(a, axis=1), xp.nanstd(a, axis=0), xp.nancumsum(a, axis=1),
                        xp.nanargmax(a[0]), xp.nanmedian(a, axis=1), xp.nanquantile(a, 0.3, axis=1),
                        xp.nanpercentile(a[0], [10, 90]), xp.max(a), xp.argmax(a, axis=0), xp.argmin(a[0]))
    check()


def test_reduction_errors():
    with pytest.raises(ValueError, match="zero-size array"):
        xp.max(xp.zeros((0, 3)), axis=0)
    assert xp.max(xp.zeros((0, 3)), axis=0, initial=-1).tolist() == [-1, -1, -1]
    with pytest.raises(ValueError, match="empty sequence"):
        xp.argmax(xp.zeros(0))
    with pytest.raises(np.exceptions.AxisError):
        xp.sum(xp.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match="All-NaN"):
        xp.nanargmax(xp.asarray([np.nan]))


def test_where_and_initial_in_reductions():
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray(np.arange(12.0).reshape(3, 4))
        m = xp.asarray(np.arange(12).reshape(3, 4) % 3 == 0)
        return (xp.sum(a, axis=1, where=m), xp.max(a, axis=0, where=m, initial=-5), xp.sum(a, initial=10),
                xp.mean(a, axis=0, where=m), xp.prod(a + 1, axis=1, where=m))
    check()


# ---- sorting, searching, sets ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", REAL_DTYPES + [np.complex64], ids=DT_IDS)
def test_sorting(dtype):
    @numpy_xp_compare()
    def check(xp):
        a = sample(xp, (4, 6), dtype, low=-3, high=3)
        res = [xp.sort(a), xp.sort(a, axis=0), xp.sort(a, axis=None), xp.argsort(a, kind="stable"),
               xp.argsort(a, axis=0, stable=True)]
        u = xp.unique(a, return_index=True, return_inverse=True, return_counts=True)
        res += list(u) + [xp.unique(a), xp.unique(a, axis=0)] if dtype != np.complex64 else list(u)
        if np.dtype(dtype).kind != "c":
            s = xp.sort(a[0])
            res += [xp.searchsorted(s, a[1]), xp.searchsorted(s, a[1], side="right"),
                    xp.lexsort((a[0], a[1])), xp.lexsort(a), xp.partition(a, 2)[:, 2], xp.argsort(a)[:, :0]]
        return res
    check()


def test_sort_nan_last_and_stable():
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray([3.0, np.nan, 1.0, -np.inf, np.nan, 1.0, np.inf])
        return (xp.sort(a), xp.argsort(a), xp.unique(a), xp.unique(a, equal_nan=False), xp.searchsorted(
            xp.asarray([1.0, 2.0, 3.0]), 2.0))
    check()


def test_partition_contract():
    a_np = np.random.default_rng(0).integers(0, 100, 50)
    for k in (0, 10, 49, -1):
        p = xp.partition(xp.asarray(a_np), k).get()
        assert p[k] == np.sort(a_np)[k]
        assert (p[:k % 50] <= p[k]).all() and (p[k % 50:] >= p[k]).all()
        ip = xp.argpartition(xp.asarray(a_np), k).get()
        assert a_np[ip[k]] == np.sort(a_np)[k]
    with pytest.raises(ValueError, match="out of bounds"):
        xp.partition(xp.asarray(a_np), 50)


def test_unique_array_api_variants():
    a = xp.asarray([[2.0, 1.0], [2.0, np.nan]])
    r = xp.unique_all(a)
    assert r.values.tolist()[:2] == [1.0, 2.0] and r.counts.tolist() == [1, 2, 1]
    assert r.inverse_indices.shape == (2, 2) and r.indices.tolist() == [1, 0, 3]
    assert xp.unique_counts(a).counts.tolist() == [1, 2, 1]
    assert xp.unique_inverse(a).inverse_indices.tolist() == [[1, 0], [1, 2]]
    assert xp.unique_values(xp.asarray([np.nan, np.nan])).shape == (2,)


def test_set_operations():
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray([5, 1, 3, 3, 7, 9])
        b = xp.asarray([3, 9, 4, 1, 1])
        return (xp.intersect1d(a, b), xp.intersect1d(a, b, return_indices=True), xp.union1d(a, b),
                xp.setdiff1d(a, b), xp.setxor1d(a, b), xp.isin(a, b), xp.isin(a, b, invert=True),
                xp.isin(a.reshape(2, 3), [1.0, 7.5]))
    check()


# ---- statistics ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32, np.float64], ids=DT_IDS)
def test_statistics(dtype):
    # float32 data: NumPy and xp may round the interpolation differently in the last bit
    @numpy_xp_compare(rtol=1e-6 if dtype == np.float32 else None)
    def check(xp):
        a = sample(xp, (5, 8), dtype)
        res = [xp.mean(a), xp.mean(a, axis=0), xp.var(a, axis=1), xp.std(a, ddof=1), xp.var(a, axis=0, keepdims=True),
               xp.median(a), xp.median(a, axis=0), xp.average(a, axis=1, weights=xp.arange(1, 9)),
               xp.cov(a), xp.corrcoef(a[:2])]
        for method in ("linear", "lower", "higher", "midpoint", "nearest"):
            res.append(xp.quantile(a, [0.1, 0.5, 0.95], axis=1, method=method))
            res.append(xp.percentile(a, 37, axis=0, method=method, keepdims=True))
        return res
    check()


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64], ids=DT_IDS)
def test_histogram_bincount_digitize(dtype):
    @numpy_xp_compare(rtol=1e-6 if dtype == np.float32 else None)
    def check(xp):
        a = sample(xp, (200,), dtype, low=-10, high=10)
        w = xp.asarray(np.linspace(0, 1, 200))
        return (xp.histogram(a), xp.histogram(a, bins=7, range=(-5, 5)), xp.histogram(a, bins=[-10, -1, 0, 3, 10]),
                xp.histogram(a, bins=5, density=True), xp.histogram(a, bins=4, weights=w),
                xp.bincount(xp.asarray([0, 1, 1, 3, 2, 1, 7])), xp.bincount(xp.asarray([1, 1, 2]), minlength=5),
                xp.bincount(xp.asarray([0, 1, 1]), weights=xp.asarray([0.5, 1.0, 2.0])),
                xp.digitize(a, xp.asarray([-5, 0, 5])), xp.digitize(a, xp.asarray([-5, 0, 5]), right=True),
                xp.digitize(a, xp.asarray([5, 0, -5])))
    check()


def test_statistics_errors():
    with pytest.raises(ValueError, match="negative"):
        xp.bincount(xp.asarray([-1, 2]))
    with pytest.raises(ValueError, match="range"):
        xp.quantile(xp.arange(3.0), 1.5)
    with pytest.raises(ValueError, match="monotonically"):
        xp.digitize(xp.arange(3), xp.asarray([1, 3, 2]))


# ---- linalg and fft --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64, np.complex128], ids=DT_IDS)
def test_linalg(dtype):
    dt = np.dtype(dtype)
    tol = 1e-4 if dt == np.float32 else 1e-9

    @numpy_xp_compare(rtol=tol, atol=tol)
    def check(xp):
        a = sample(xp, (4, 4), dtype) + xp.eye(4, dtype=dtype) * 10
        b = sample(xp, (4, 2), dtype, seed=3)
        v = sample(xp, (4,), dtype, seed=4)
        res = [xp.matmul(a, b), a @ v, xp.dot(v, v), xp.dot(a, b), xp.vdot(v, v), xp.inner(v, v), xp.outer(v, v),
               xp.tensordot(a, b, axes=([0], [0])), xp.einsum("ij,jk->ik", a, b), xp.kron(a[:2, :2], b[:2]),
               xp.linalg.inv(a), xp.linalg.det(a), xp.linalg.solve(a, b), xp.linalg.solve(a, v),
               xp.linalg.norm(a), xp.linalg.norm(v, ord=1), xp.linalg.norm(a, ord=2), xp.linalg.norm(a, axis=1),
               xp.linalg.matrix_rank(a), xp.linalg.slogdet(a), xp.linalg.matrix_power(a, 3), xp.linalg.pinv(b),
               xp.linalg.svd(a, compute_uv=False), xp.linalg.eigvalsh(a @ a.T.conj()), xp.trace(a)]
        if dt.kind != "c":
            res.append(xp.cross(v[:3], b[:3, 0]))
        return res
    check()


def test_linalg_decompositions_reconstruct():
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((5, 5))
    a = xp.asarray(a_np)
    u, s, vh = xp.linalg.svd(a)
    np.testing.assert_allclose((u * s @ vh).get(), a_np, atol=1e-10)
    q, r = xp.linalg.qr(a)
    np.testing.assert_allclose((q @ r).get(), a_np, atol=1e-10)
    spd = a @ a.T + 5 * xp.eye(5)
    c = xp.linalg.cholesky(spd)
    np.testing.assert_allclose((c @ c.T).get(), spd.get(), atol=1e-10)
    w, v = xp.linalg.eigh(spd)
    np.testing.assert_allclose((spd @ v).get(), (v * w).get(), atol=1e-9)
    x, res, rank, sv = xp.linalg.lstsq(xp.asarray(rng.standard_normal((8, 3))), xp.asarray(rng.standard_normal(8)))
    assert x.shape == (3,) and res.shape == (1,) and rank == 3 and sv.shape == (3,)
    w, v = xp.linalg.eig(xp.asarray([[2.0, 0.0], [0.0, 3.0]]))
    assert w.dtype == np.float64  # real when all eigenvalues are real, as NumPy
    with pytest.raises(np.linalg.LinAlgError):
        xp.linalg.inv(xp.zeros((3, 3)))
    with pytest.raises(TypeError, match="float16"):
        xp.linalg.inv(xp.eye(2, dtype=np.float16))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.complex64, np.complex128], ids=DT_IDS)
def test_fft(dtype):
    dt = np.dtype(dtype)
    tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-10

    @numpy_xp_compare(rtol=tol, atol=tol)
    def check(xp):
        a = sample(xp, (4, 8), dtype)
        res = [xp.fft.fft(a), xp.fft.ifft(a, n=6), xp.fft.fft2(a), xp.fft.fftn(a, axes=(0,)), xp.fft.ifftn(a),
               xp.fft.fft(a, norm="ortho"), xp.fft.fft(a, norm="forward"), xp.fft.fftshift(a), xp.fft.ifftshift(a, 1),
               xp.fft.irfft(a), xp.fft.hfft(a)]
        if dt.kind != "c":
            res += [xp.fft.rfft(a), xp.fft.rfft2(a), xp.fft.rfftn(a), xp.fft.irfft(xp.fft.rfft(a), n=8),
                    xp.fft.ihfft(a)]
        return res
    check()


def test_fftfreq():
    @numpy_xp_compare()
    def check(xp):
        return xp.fft.fftfreq(8, 0.1), xp.fft.rfftfreq(9), xp.fft.fftfreq(5)
    check()


# ---- misc ---------------------------------------------------------------------------------------------
def test_misc_helpers():
    @numpy_xp_compare()
    def check(xp):
        a = xp.asarray([1.0, np.nan, np.inf, -2.567, 2.5])
        return (xp.isclose(a, 1.0), xp.nan_to_num(a), xp.round(a, 1), xp.around(xp.asarray([0.5, 1.5, 2.5])),
                xp.interp(xp.asarray([0.5, 1.5, 5.0]), xp.asarray([0.0, 1.0, 2.0]), xp.asarray([0.0, 10.0, 5.0])),
                xp.convolve(xp.asarray([1, 2, 3]), xp.asarray([0, 1, 0.5])),
                xp.convolve(xp.asarray([1.0, 2, 3, 4]), xp.asarray([1.0, 1]), mode="same"),
                xp.angle(xp.asarray([1j, -1])), xp.sinc(xp.asarray([0.0, 0.5])), xp.real(xp.asarray([1 + 2j])),
                xp.imag(xp.asarray([1 + 2j])), xp.fix(xp.asarray([-1.5, 1.5])),
                xp.result_type(xp.asarray([1], dtype=np.int8), 1.0), xp.can_cast(np.int8, np.int16),
                xp.promote_types(np.uint8, np.int8), xp.array_equal(a, a), xp.array_equal(a, a, equal_nan=True),
                xp.allclose(xp.asarray([1.0]), xp.asarray([1.0 + 1e-9])))
    check()


def test_isdtype_and_info():
    assert xp.isdtype(np.dtype(np.int8), "integral") and not xp.isdtype(np.dtype(np.float32), "integral")
    assert xp.isdtype(np.dtype(np.float32), ("integral", "real floating"))
    assert xp.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert xp.iinfo(xp.asarray([1], dtype=np.int16)).max == 32767


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DT_IDS)
def test_large_float_sort_with_special_values(dtype):
    """Large float sorts go through order-preserving integer keys: NaN last, infinities, stability."""
    @numpy_xp_compare()
    def check(xp):
        rng = np.random.default_rng(3)
        a = rng.standard_normal(10_000).astype(dtype)
        a[::97] = np.nan
        a[::101] = -np.inf
        a[::103] = np.inf
        a[::107] = 0.0
        a[5::109] = 1.5
        x = xp.asarray(a)
        return (xp.sort(x), xp.argsort(x, kind="stable"), xp.sort(x.reshape(100, 100), axis=0),
                xp.argsort(x.reshape(100, 100), axis=1, kind="stable"), xp.unique(x))
    check()
