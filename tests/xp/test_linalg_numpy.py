"""xp.linalg routines whose NumPy details CuPy's tests check: dot's out=, matrix_power in the
input dtype, 2-vector cross, cond of singular/empty matrices, C-ordered inverses."""
import numpy as np
import pytest

import npudist.xp as nxp
from tests.xp.compare import numpy_xp_compare


@pytest.mark.parametrize("dc", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("order", ["C", "F"])
@numpy_xp_compare(accept_error=True)
def test_dot_out_must_match_exactly(dc, order, xp):
    a = xp.asarray(np.arange(6.).reshape(2, 3))
    b = xp.asarray(np.arange(12.).reshape(3, 4))
    c = xp.zeros((2, 4), dtype=dc, order=order)
    r = xp.dot(a, b, out=c)
    assert r is c
    return c


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.uint64, np.float32, np.complex64])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 10])
@numpy_xp_compare(rtol=1e-4)
def test_matrix_power(dtype, n, xp):
    return xp.linalg.matrix_power(xp.asarray((np.arange(18) % 7).reshape(2, 3, 3).astype(dtype)), n)


@numpy_xp_compare()
def test_matrix_power_negative_and_inverse_are_c_ordered(xp):
    a = xp.asarray([[2.0, 1.0], [1.0, 3.0]])
    r, i = xp.linalg.matrix_power(a, -3), xp.linalg.inv(a)
    assert r.flags.c_contiguous and i.flags.c_contiguous
    return r, i


@pytest.mark.parametrize("sa,sb", [((4, 2), (4, 2)), ((4, 2), (4, 3)), ((4, 3), (1, 2)), ((2, 3), (2, 3))])
@pytest.mark.parametrize("dtype", [np.int16, np.float32])
@numpy_xp_compare()
def test_cross_2_and_3_vectors(sa, sb, dtype, xp):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return xp.cross(xp.asarray(np.arange(np.prod(sa)).reshape(sa).astype(dtype)),
                        xp.asarray(np.arange(np.prod(sb)).reshape(sb).astype(dtype) - 3))


@pytest.mark.parametrize("p", [None, -np.inf, -2, -1, 1, 2, np.inf, "fro"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@numpy_xp_compare(rtol=1e-3, atol=1e-4)
def test_cond(p, dtype, xp):
    big = 1.0 / np.finfo(dtype).eps
    out = []
    for a in (np.zeros((2, 2)), np.array([[1.0, 2.0], [3.0, 4.0]])):
        r = xp.asarray(xp.linalg.cond(xp.asarray(a.astype(dtype)), p))
        r[r >= big] = np.inf
        out.append(r)
    s = np.arange(16.0).reshape(2, 2, 2, 2).astype(dtype)
    s[0, 0] = 0
    s[1, 1] = 0
    r = xp.linalg.cond(xp.asarray(s), p)
    r[r >= big] = np.inf
    return out + [r]


def test_cond_empty_raises():
    with pytest.raises(np.linalg.LinAlgError, match="cond is not defined on empty arrays"):
        nxp.linalg.cond(nxp.empty((0, 0)))


def test_ndarray_constructor_honours_order():
    c = nxp.ndarray((3, 2, 4), dtype=np.float32, order="F")
    assert c.flags.f_contiguous and not c.flags.c_contiguous


@pytest.mark.parametrize("s1,s2,axes", [
    ((2, 5, 3, 2, 3, 4), (3, 5, 1, 1, 1, 4), [(1, 2), (0, 1), (0, 1)]),
    ((3, 2, 4, 4), (4, 4, 3, 2), [(0, 1), (-1, -2), (-2, -1)]),
    ((3, 4, 5), (5,), [(1, 2), (0,), (1,)]),
    ((2, 3), (3, 4), [(0, 1), (0, 1), (1, 0)]),
])
def test_matmul_axes_like_numpy(s1, s2, axes):
    a = np.arange(np.prod(s1), dtype=np.float64).reshape(s1)
    b = np.arange(np.prod(s2), dtype=np.float64).reshape(s2)
    want = np.matmul(a, b, axes=axes)
    out = nxp.zeros(want.shape)
    assert nxp.matmul(nxp.asarray(a), nxp.asarray(b), axes=axes, out=out) is out
    np.testing.assert_allclose(nxp.asnumpy(out), want)


def test_matmul_errors_and_out_casting_like_numpy():
    with pytest.raises(ValueError, match="broadcast"):
        nxp.matmul(nxp.ones((5, 3, 1)), nxp.ones((3, 1, 4)))
    with pytest.raises(ValueError, match="broadcast"):
        nxp.matmul(nxp.ones((0, 1, 1)), nxp.ones((2, 1, 1)))
    a, b = nxp.ones((2, 3)), nxp.ones((3, 4), dtype=np.complex64)
    with pytest.raises(TypeError, match="complex128.*float64.*same_kind"):
        nxp.matmul(a, b, out=nxp.zeros((2, 4)))
    with pytest.warns(np.exceptions.ComplexWarning):
        r = nxp.matmul(a, b, out=nxp.zeros((2, 4)), casting="unsafe")
    np.testing.assert_array_equal(nxp.asnumpy(r), np.full((2, 4), 3.0))
    assert nxp.matmul(nxp.ones((2, 3), dtype=np.int8), nxp.ones((3, 2), dtype=np.int8), dtype=np.float32).dtype == np.float32


def test_solve_numpy2_rhs_of_two_or_more_dims_is_a_matrix():
    rng = np.random.default_rng(0)
    a = rng.random((3, 3, 3)) + 3 * np.eye(3)
    for b in (rng.random((3, 3)), rng.random((2, 1, 3, 2)), rng.random(3)):
        expected = np.linalg.solve(a, b)
        got = nxp.linalg.solve(nxp.asarray(a), nxp.asarray(b))
        assert got.shape == expected.shape
        np.testing.assert_allclose(nxp.asnumpy(got), expected, rtol=1e-10)


@pytest.mark.parametrize("case", ["solve_batch_of_vectors", "solve_rhs_size", "solve_rhs_0d", "dot_not_aligned",
                                  "dot_1d", "norm_matrix_order"])
def test_shape_errors_are_numpy_value_errors(case):
    calls = {
        "solve_batch_of_vectors": lambda m: m.linalg.solve(m.stack([m.eye(3)] * 2), m.ones((2, 3))),
        "solve_rhs_size": lambda m: m.linalg.solve(m.eye(3), m.ones(4)),
        "solve_rhs_0d": lambda m: m.linalg.solve(m.eye(3), m.asarray(1.0)),
        "dot_not_aligned": lambda m: m.dot(m.ones((5, 6)), m.ones((5, 6))),
        "dot_1d": lambda m: m.dot(m.ones(3), m.ones(4)),
        "norm_matrix_order": lambda m: m.linalg.norm(m.ones((3, 3)), ord=3),
    }
    with pytest.raises(ValueError) as expected:
        calls[case](np)
    with pytest.raises(ValueError) as got:
        calls[case](nxp)
    if case != "solve_rhs_0d":
        assert str(got.value) == str(expected.value)
