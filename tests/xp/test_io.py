"""xp's file I/O (save, load, savez, savez_compressed, savetxt, ndarray.dump) and text forms
(array_repr, array_str, array2string, format_float_*, base_repr, binary_repr) equal NumPy's."""
import inspect
import io
import pickle

import numpy as np
import pytest

import npudist.xp as nxp
from tests.xp.compare import ALL_DTYPES, assert_same, sample

DTYPES = ALL_DTYPES + [np.uint16, np.uint32, np.uint64]


def _bytes(fn, *args, **kw):
    f = io.BytesIO()
    fn(f, *args, **kw)
    return f.getvalue()


@pytest.mark.parametrize("dtype", DTYPES)
def test_save_load_same_bytes_as_numpy(dtype):
    a = sample(np, (2, 3, 4), dtype)
    data = _bytes(nxp.save, nxp.asarray(a))
    assert data == _bytes(np.save, a)
    b = nxp.load(io.BytesIO(data))
    assert_same(a, b)
    f = np.asfortranarray(a)
    assert_same(np.load(io.BytesIO(_bytes(np.save, f))), nxp.load(io.BytesIO(_bytes(nxp.save, nxp.asarray(f)))))


@pytest.mark.parametrize("compressed", [False, True])
def test_savez_npzfile(compressed, tmp_path):
    fn = nxp.savez_compressed if compressed else nxp.savez
    a, b = sample(np, (3, 4), np.int16), sample(np, (5,), np.complex64)
    path = tmp_path / "arrs.npz"
    fn(path, nxp.asarray(a), named=nxp.asarray(b))
    with nxp.load(path) as d:
        assert sorted(d.files) == ["arr_0", "named"] and "named" in d and len(d) == 2
        assert_same(a, d["arr_0"])
        assert_same(b, d["named"])
    with np.load(path) as d:      # NumPy reads what xp wrote
        np.testing.assert_array_equal(d["named"], b)


def test_pickle_paths():
    a = nxp.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError):
        nxp.save(io.BytesIO(), object(), allow_pickle=False)
    nxp.save(io.BytesIO(), object(), allow_pickle=True)
    f = io.BytesIO()
    a.dump(f)
    assert f.getvalue() == a.dumps()
    b = nxp.load(io.BytesIO(f.getvalue()), allow_pickle=True)
    assert isinstance(b, nxp.ndarray)
    assert_same(a.get(), b)
    with pytest.raises(ValueError, match="allow_pickle"):
        nxp.load(io.BytesIO(f.getvalue()), allow_pickle=False)
    assert pickle.loads(a.dumps()).shape == (2, 3)


@pytest.mark.parametrize("kw", [{}, {"fmt": "%d", "delimiter": ",", "header": "h", "footer": "f"}])
def test_savetxt_same_text(kw, tmp_path):
    a = np.array([[1, 2, 3], [2, 3, 4]])
    nxp.savetxt(tmp_path / "x.txt", nxp.asarray(a), **kw)
    np.savetxt(tmp_path / "n.txt", a, **kw)
    assert (tmp_path / "x.txt").read_bytes() == (tmp_path / "n.txt").read_bytes()
    with pytest.raises(ValueError):
        nxp.savetxt(tmp_path / "y.txt", nxp.zeros((2, 2, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_formatting(dtype):
    a = sample(np, (2, 3, 4), dtype)
    x = nxp.asarray(a)
    assert nxp.array_repr(x) == np.array_repr(a)
    assert nxp.array_str(x, precision=2) == np.array_str(a, precision=2)
    assert nxp.array2string(x, separator=",", threshold=5, edgeitems=1) == \
        np.array2string(a, separator=",", threshold=5, edgeitems=1)
    with nxp.printoptions(precision=1):
        assert nxp.array_repr(x) == np.array_repr(a)
    if a.dtype.kind == "f":
        s = nxp.asarray(a[0, 0, 0])         # a 0-d array, formatted as NumPy formats a 0-d array
        assert nxp.format_float_positional(s) == np.format_float_positional(np.asarray(a[0, 0, 0]))
        assert nxp.format_float_scientific(s, precision=3) == \
            np.format_float_scientific(np.asarray(a[0, 0, 0]), precision=3)
        assert nxp.format_float_positional(a[0, 0, 0]) == np.format_float_positional(a[0, 0, 0])


@pytest.mark.parametrize("name", ["base_repr", "binary_repr"])
def test_base_n(name):
    f, g = getattr(nxp, name), getattr(np, name)
    assert inspect.signature(f) == inspect.signature(g) and f.__doc__
    cases = [(0,), (5,), (-5,), (5, 3), (-5, 8), (255, 16)] + ([(-5, 2, 3), (5, 36, 4)] if name == "base_repr" else [])
    for args in cases:
        assert f(*args) == g(*args)
    if name == "base_repr":
        with pytest.raises(ValueError):
            f(5, 37)
