"""xp.piecewise and xp.vectorize equal numpy.piecewise and numpy.vectorize."""
import numpy as np
import pytest

import npudist.xp as nxp
from tests.xp.compare import ALL_DTYPES, numpy_xp_compare, sample

DTYPES = ALL_DTYPES + [np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", DTYPES)
@numpy_xp_compare()
def test_piecewise_values_and_otherwise(dtype, xp):
    x = sample(xp, (3, 4), dtype, seed=1)
    conds = [x < 3, x >= 3, x == 2]
    return (xp.piecewise(x, conds, xp.array([1, 5, 7])), xp.piecewise(x, conds[:2], [1, 2, 9]),
            xp.piecewise(x, True, xp.array([4, 6])), xp.piecewise(x[0], x[0] > 1, [3]))


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.complex64, np.bool_])
@numpy_xp_compare()
def test_piecewise_callables_and_0d(dtype, xp):
    x = sample(xp, (6,), dtype, seed=2)
    s = xp.asarray(np.array(1, dtype))
    return (xp.piecewise(x, [x > 0, x <= 0], [lambda v, k: v * k, lambda v, k: v + v], 2),
            xp.piecewise(s, [s > 0], [3, 4]), xp.piecewise(dtype(1), [True, False], [1, 2]))


def test_piecewise_count_mismatch():
    for xp in (np, nxp):
        x = xp.arange(4.0)
        with pytest.raises(ValueError, match=r"with 2 condition\(s\), either 2 or 3 functions are expected"):
            xp.piecewise(x, [x < 1, x > 2], [1, 2, 3, 4])


@pytest.mark.parametrize("dtype1", [np.bool_, np.int16, np.uint8, np.float16, np.float64, np.complex64])
@pytest.mark.parametrize("dtype2", [np.int32, np.float32, np.uint64])
@numpy_xp_compare(accept_error=True)
def test_vectorize_dtypes(dtype1, dtype2, xp):
    f = xp.vectorize(lambda a, b: a * b + 1)
    return f(sample(xp, (4, 5), dtype1, seed=3), sample(xp, (5,), dtype2, seed=4))


@numpy_xp_compare()
def test_vectorize_control_flow_otypes_outputs(xp):
    def relu(v):
        return v if v > 0 else 0
    x = xp.array([-2, 3, -1, 4])
    two = xp.vectorize(lambda v: (v, -v))(x)
    return (xp.vectorize(relu)(x), xp.vectorize(relu, otypes=[np.float32])(x)) + two + \
        (xp.vectorize(lambda v, n: v ** n, excluded={"n"})(x, n=2),)


def test_vectorize_decorator_signature_and_errors():
    for xp in (np, nxp):
        @xp.vectorize(otypes=[np.float64])
        def f(v):
            return v / 2
        r = f(xp.arange(3))
        assert isinstance(r, xp.ndarray) and r.dtype == np.float64
        g = xp.vectorize(lambda a: a.sum(), signature="(n)->()")
        np.testing.assert_array_equal(xp.asnumpy(g(xp.ones((2, 3)))) if xp is nxp else g(np.ones((2, 3))), [3, 3])
        with pytest.raises(ValueError):
            xp.vectorize(lambda v: v)(xp.zeros(0))      # NumPy: no otypes and no inputs to infer them
