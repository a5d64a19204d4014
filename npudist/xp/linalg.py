"""npudist.xp.linalg (matches numpy.linalg; also the Array API linalg extension).

Integer and bool inputs compute in float64, as NumPy; float16 is rejected as NumPy rejects it.
Singular or non-converging problems raise numpy.linalg.LinAlgError."""
import operator
from collections import namedtuple

import numpy as np
import torch

from ._core import f64, ndarray, normalize_axis, result, tensor_of, wrap
from ._core._linalg import _bool_aware, _pair, _shape_str, dot, matmul  # noqa: F401  (dot, matmul: re-exported)
from ._einsum import einsum  # noqa: F401  (xp.linalg.einsum as before)
from ._reductions import sum as _sum

LinAlgError = np.linalg.LinAlgError
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
_BOOL_OK = {"matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron", "vecdot"}


_t = tensor_of  # the package's one unwrapping helper


def _lin(a, name, square=False, min_ndim=2):
    t = _t(a)
    if t.dtype == torch.float16:
        raise TypeError(f"array type float16 is unsupported in linalg ({name}); use float32")
    if not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)
    if t.ndim < min_ndim:
        raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be at least two-dimensional")
    if square and t.shape[-1] != t.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return t


def _call(fn, *args, **kwargs):
    try:
        return f64(fn, *args, **kwargs)
    except torch.linalg.LinAlgError as e:
        raise LinAlgError(str(e).split("\n")[0]) from None


def vdot(a, b):
    at, bt = _pair(a, b, "vdot")
    at, bt = at.reshape(-1), bt.reshape(-1)
    if at.is_complex():
        at = at.conj()
    return wrap(_bool_aware(torch.dot, at, bt) if at.dtype != torch.bool else (at & bt).any())


def inner(a, b):
    at, bt = _pair(a, b, "inner")
    return wrap(_bool_aware(torch.inner, at, bt))


def outer(a, b, out=None):
    """Outer product of the flattened inputs (matches numpy.outer)."""
    at, bt = _pair(a, b, "outer")
    r = _bool_aware(torch.outer, at.reshape(-1), bt.reshape(-1)) if at.dtype != torch.bool else \
        at.reshape(-1, 1) & bt.reshape(1, -1)
    return result(r, out)


def tensordot(a, b, axes=2):
    """Sum over given axes (matches numpy.tensordot)."""
    at, bt = _pair(a, b, "tensordot")
    if isinstance(axes, (int, np.integer)):
        axes = int(axes)
        if axes < 0:
            raise ValueError("tensordot: axes must be non-negative")
        dims = (list(range(at.ndim - axes, at.ndim)), list(range(axes)))
    else:
        xa, xb = axes
        xa = [xa] if isinstance(xa, int) else list(xa)
        xb = [xb] if isinstance(xb, int) else list(xb)
        dims = ([normalize_axis(i, at.ndim) for i in xa], [normalize_axis(i, bt.ndim) for i in xb])
    for i, j in zip(*dims):
        if at.shape[i] != bt.shape[j]:
            raise ValueError("shape-mismatch for sum")
    return wrap(_bool_aware(lambda x, y: torch.tensordot(x, y, dims=dims), at, bt))


def kron(a, b):
    at, bt = _pair(a, b, "kron")
    return wrap(_bool_aware(torch.kron, at, bt))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (matches numpy.cross; 2-vectors as NumPy's deprecated form: z = 0,
    two 2-vectors give the z component)."""
    at, bt = _pair(a, b, "cross")
    if axis is not None:
        axisa = axisb = axisc = axis
    at = torch.movedim(at, normalize_axis(axisa, at.ndim), -1)
    bt = torch.movedim(bt, normalize_axis(axisb, bt.ndim), -1)
    na, nb = at.shape[-1], bt.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 and nb == 2:   # NumPy (deprecated there): the z component only
        shape = torch.broadcast_shapes(at.shape, bt.shape)
        x, y = at.broadcast_to(shape), bt.broadcast_to(shape)
        return wrap(f64(lambda p, q: p[..., 0] * q[..., 1] - p[..., 1] * q[..., 0], x, y))
    if na == 2:   # a 2-vector is a 3-vector with z = 0 (NumPy, deprecated there)
        at = torch.cat([at, torch.zeros_like(at[..., :1])], -1)
    if nb == 2:
        bt = torch.cat([bt, torch.zeros_like(bt[..., :1])], -1)
    shape = torch.broadcast_shapes(at.shape, bt.shape)
    r = f64(torch.linalg.cross, at.broadcast_to(shape), bt.broadcast_to(shape))
    return wrap(torch.movedim(r, -1, normalize_axis(axisc, r.ndim)))


def vecdot(x1, x2, /, *, axis=-1):
    """Vector dot product over axis, conjugating x1 (matches numpy.vecdot / Array API vecdot)."""
    a, b = _pair(x1, x2, "vecdot")
    if a.ndim == 0 or b.ndim == 0 or a.shape[normalize_axis(axis, a.ndim)] != b.shape[normalize_axis(axis, b.ndim)]:
        raise ValueError(f"vecdot: x1 and x2 must have the same size along axis {axis}")
    shape = torch.broadcast_shapes(a.shape, b.shape)
    a, b = a.broadcast_to(shape), b.broadcast_to(shape)
    ax = normalize_axis(axis, len(shape))
    if a.is_complex():
        a = a.conj()
    if a.dtype == torch.bool:
        return wrap((a & b).any(ax))
    return wrap(f64(lambda x, y: (x * y).sum(ax, dtype=x.dtype), a, b))


def matrix_transpose(x, /):
    t = _t(x)
    if t.ndim < 2:
        raise ValueError("matrix_transpose needs at least 2 dimensions")
    return wrap(t.transpose(-1, -2))


def diagonal(x, /, *, offset=0):
    return wrap(torch.diagonal(_t(x), offset, -2, -1))


def trace(x, /, *, offset=0, dtype=None):
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (matches numpy.linalg.norm)."""
    t = _t(x)
    if not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)
    if isinstance(axis, list):
        axis = tuple(axis)
    if axis is not None:
        axis = tuple(normalize_axis(a, t.ndim) for a in axis) if isinstance(axis, tuple) else normalize_axis(axis, t.ndim)
    if ord is None and axis is None:
        return wrap(f64(torch.linalg.vector_norm, t, 2, keepdim=keepdims) if not keepdims else
                    f64(torch.linalg.vector_norm, t, 2, dim=tuple(range(t.ndim)), keepdim=True))
    matrix = isinstance(axis, tuple) and len(axis) == 2 or axis is None and t.ndim == 2
    if matrix and ord not in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        raise ValueError("Invalid norm order for matrices.")     # NumPy's error (PyTorch: RuntimeError)
    if not matrix and isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    return wrap(_call(torch.linalg.norm, t, ord, dim=axis, keepdim=keepdims))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Array API vector_norm (matches numpy.linalg.vector_norm)."""
    t = _t(x)
    if not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)
    dim = None if axis is None else (tuple(normalize_axis(a, t.ndim) for a in axis) if isinstance(axis, tuple)
                                     else normalize_axis(axis, t.ndim))
    if dim is None and keepdims:
        dim = tuple(range(t.ndim))
    return wrap(f64(torch.linalg.vector_norm, t, ord, dim=dim, keepdim=keepdims))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Array API matrix_norm (matches numpy.linalg.matrix_norm)."""
    t = _lin(x, "matrix_norm")
    return wrap(_call(torch.linalg.matrix_norm, t, ord, keepdim=keepdims))


def inv(a):
    """Inverse of square matrices (matches numpy.linalg.inv; LinAlgError when singular)."""
    return wrap(_call(torch.linalg.inv, _lin(a, "inv", True)).contiguous())   # LAPACK's is F-ordered


def det(a):
    return wrap(_call(torch.linalg.det, _lin(a, "det", True)))


def slogdet(a):
    s, logabs = _call(torch.linalg.slogdet, _lin(a, "slogdet", True))
    return SlogdetResult(wrap(s), wrap(logabs))


def solve(a, b):
    """Solves a @ x = b (matches numpy.linalg.solve, NumPy 2 rules: b is a vector only when 1-D)."""
    at = _lin(a, "solve", True)
    bt = _t(b)
    dt = torch.promote_types(at.dtype, bt.dtype if bt.is_floating_point() or bt.is_complex() else torch.float64)
    at, bt = at.to(dt), bt.to(dt)
    m = at.shape[-1]
    if bt.ndim == 0:
        raise ValueError("solve: Input operand 1 does not have enough dimensions (has 0, gufunc core with "
                         "signature (m,m),(m)->(m) requires 1)")
    if bt.ndim == 1:
        if bt.shape[0] != m:
            raise ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                             f"signature (m,m),(m)->(m) (size {bt.shape[0]} is different from {m})")
        return wrap(_call(lambda x, y: torch.linalg.solve(x, y.unsqueeze(-1)).squeeze(-1), at, bt))
    # NumPy 2: a b of 2 or more dimensions is a (stack of) matrices, never a batch of vectors as
    # PyTorch reads b of shape a.shape[:-1]: broadcast the batch axes explicitly so PyTorch agrees
    if bt.shape[-2] != m:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature (m,m),(m,n)->(m,n) (size {bt.shape[-2]} is different from {m})")
    try:
        batch = torch.broadcast_shapes(at.shape[:-2], bt.shape[:-2])
    except RuntimeError:
        raise ValueError(f"solve: operands could not be broadcast together with remapped shapes [original->"
                         f"remapped]: {_shape_str(at.shape)} and {_shape_str(bt.shape)}") from None
    at = at.expand(*batch, m, m)
    bt = bt.expand(*batch, *bt.shape[-2:])
    return wrap(_call(torch.linalg.solve, at, bt))


def lstsq(a, b, rcond=None):
    """Least-squares solution (matches numpy.linalg.lstsq: x, residuals, rank, singular values)."""
    at = _lin(a, "lstsq")
    bt = _t(b)
    dt = torch.promote_types(at.dtype, bt.dtype if bt.is_floating_point() or bt.is_complex() else torch.float64)
    at, bt = at.to(dt), bt.to(dt)
    vec = bt.ndim == 1
    b2 = bt.unsqueeze(-1) if vec else bt
    m, n = at.shape
    res = _call(torch.linalg.lstsq, at.cpu(), b2.cpu(), rcond=rcond, driver="gelsd")
    x = res.solution.to(at.device)
    rank = int(res.rank)
    sv = res.singular_values.to(at.device)
    if rank == n and m > n:
        r = b2 - at @ x
        resid = (r.abs() ** 2).sum(0)
    else:
        resid = torch.empty(0, dtype=sv.dtype, device=at.device)
    return wrap(x.squeeze(-1) if vec else x), wrap(resid), rank, wrap(sv)


def _real_if_possible(t):
    if t.is_complex() and bool((t.imag == 0).all()):
        return t.real.clone()
    return t


def eig(a):
    """Eigenvalues/vectors (matches numpy.linalg.eig: real results when all eigenvalues are real)."""
    t = _lin(a, "eig", True)
    w, v = _call(torch.linalg.eig, t)
    if not t.is_complex() and bool((w.imag == 0).all()):
        return EigResult(wrap(w.real.clone()), wrap(v.real.clone()))
    return EigResult(wrap(w), wrap(v))


def eigvals(a):
    t = _lin(a, "eigvals", True)
    w = _call(torch.linalg.eigvals, t)
    return wrap(_real_if_possible(w) if not t.is_complex() else w)


def eigh(a, UPLO="L"):
    """Eigen-decomposition of Hermitian matrices, ascending (matches numpy.linalg.eigh)."""
    w, v = _call(torch.linalg.eigh, _lin(a, "eigh", True), UPLO=UPLO)
    return EighResult(wrap(w), wrap(v))


def eigvalsh(a, UPLO="L"):
    return wrap(_call(torch.linalg.eigvalsh, _lin(a, "eigvalsh", True), UPLO=UPLO))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition (matches numpy.linalg.svd: U, S, Vh)."""
    t = _lin(a, "svd")
    if not compute_uv:
        return wrap(_call(torch.linalg.svdvals, t))
    u, s, vh = _call(torch.linalg.svd, t, full_matrices=full_matrices)
    return SVDResult(wrap(u), wrap(s), wrap(vh))


def svdvals(x, /):
    return wrap(_call(torch.linalg.svdvals, _lin(x, "svdvals")))


def qr(a, mode="reduced"):
    """QR decomposition (matches numpy.linalg.qr for modes reduced, complete, r)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr mode {mode!r} is not supported; use reduced, complete or r")
    q, r = _call(torch.linalg.qr, _lin(a, "qr"), mode=mode)
    return wrap(r) if mode == "r" else QRResult(wrap(q), wrap(r))


def cholesky(a, /, *, upper=False):
    """Cholesky factor (matches numpy.linalg.cholesky; LinAlgError if not positive definite)."""
    return wrap(_call(torch.linalg.cholesky, _lin(a, "cholesky", True), upper=upper))


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """Moore-Penrose pseudo-inverse (matches numpy.linalg.pinv)."""
    t = _lin(a, "pinv")
    tol = rtol if rtol is not None else rcond
    if isinstance(tol, ndarray):
        tol = tol._t
    return wrap(_call(torch.linalg.pinv, t, rtol=tol, hermitian=hermitian))


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """Rank by SVD (matches numpy.linalg.matrix_rank)."""
    t = _t(A)
    if t.ndim < 2:
        return wrap(torch.tensor(int(bool((t != 0).any())), device=t.device))
    t = _lin(t, "matrix_rank")
    tol = tol._t if isinstance(tol, ndarray) else tol
    rtol = rtol._t if isinstance(rtol, ndarray) else rtol
    return wrap(_call(torch.linalg.matrix_rank, t, atol=tol, rtol=rtol, hermitian=hermitian))


def _matmul_same(x, y):
    """x @ y in x's dtype (x, y of one dtype): ints wrap as NumPy's integer matmul (computed in
    int64, equal modulo 2**bits), bool is logical."""
    if x.dtype == torch.bool:
        return _bool_aware(torch.matmul, x, y)
    if not (x.is_floating_point() or x.is_complex()):
        return torch.matmul(x.to(torch.int64), y.to(torch.int64)).to(x.dtype)
    return f64(torch.matmul, x, y)


def matrix_power(a, n):
    """a raised to integer power n (matches numpy.linalg.matrix_power: the input dtype for n >= 0,
    ints wrapping, bool logical; n < 0 inverts first, in float). Errors: TypeError for a
    non-integer n, LinAlgError for a non-square or singular matrix."""
    t = _t(a)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    if n == 0:
        eye = torch.eye(t.shape[-1], dtype=torch.int64, device=t.device)
        return wrap(eye.to(t.dtype).expand(t.shape).clone())
    if n < 0:
        t = _call(torch.linalg.inv, _lin(t, "matrix_power", True)).contiguous()
        n = -n
    if n == 1:
        return wrap(t.clone())
    z = res = None
    while n > 0:   # binary decomposition, NumPy's order of products
        z = t if z is None else _matmul_same(z, z)
        n, bit = divmod(n, 2)
        if bit:
            res = z if res is None else _matmul_same(res, z)
    return wrap(res)


def multi_dot(arrays, *, out=None):
    r = arrays[0]
    for x in arrays[1:]:
        r = dot(r, x)
    if out is not None:
        out._t.copy_(r._t)
        return out
    return r


def cond(x, p=None):
    """Condition number (matches numpy.linalg.cond: p None/2/-2 from singular values, other p as
    norm(x, p) * norm(inv(x), p); singular matrices give inf, not an error; LinAlgError for empty
    matrices and, for p other than None/2/-2, non-square ones)."""
    t = _lin(x, "cond")
    if t.shape[-1] == 0 or t.shape[-2] == 0:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or p == 2 or p == -2:
        s = _call(torch.linalg.svdvals, t)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        if t.shape[-1] != t.shape[-2]:
            raise LinAlgError("Last 2 dimensions of the array must be square")
        inv, info = f64(torch.linalg.inv_ex, t)
        # NumPy's inverse of a singular matrix is all NaN (it then reports inf below)
        inv = torch.where((info != 0)[..., None, None], torch.full_like(inv, float("nan")), inv)
        r = (norm(wrap(t), p, axis=(-2, -1))._t * norm(wrap(inv), p, axis=(-2, -1))._t)
        r = r.to(t.real.dtype if t.is_complex() else t.dtype)
    nan = torch.isnan(r)
    if bool(nan.any()):
        nan = nan & ~torch.isnan(t).any(-1).any(-1)
        r = torch.where(nan, torch.full_like(r, float("inf")), r)
    return wrap(r)


def tensorsolve(a, b, axes=None):
    raise NotImplementedError("xp.linalg.tensorsolve is not supported; reshape to a matrix and use solve")
