"""npudist.xp: NumPy-compatible arrays on the rank's npu (``import npudist.xp as xp``).

Arrays (xp.ndarray) live on torch.npu.current_device() and are computed with PyTorch kernels on
npu tensors; NumPy 2 semantics (dtypes are numpy.dtype objects, weak Python scalars, 0-d results
as 0-d arrays as in CuPy). See docs/xp.md. ``x.__array_namespace__()`` is the Array API namespace.
"""
try:
    import numpy as _np
except ImportError as _e:   # npudist itself runs without NumPy; xp is NumPy's API on npu memory
    raise ImportError("npudist.xp needs NumPy (numpy>=2.4,<2.5, as pyproject.toml declares): install it with "
                      "`pip install 'numpy>=2.4,<2.5'`. The rest of npudist (torch.npu, hccl, FSDP2) works "
                      "without it.") from _e

import npudist as _npudist  # registers the npu device

from . import (
    _config,
    fft,
    lib,
    linalg,
    polynomial,
    random,
)
from ._config import float64_mode, get_float64_mode, set_float64_mode
from ._core import ndarray
from ._creation import (
    arange,
    array,
    asanyarray,
    asarray,
    asarray_chkfinite,
    ascontiguousarray,
    asfortranarray,
    asnumpy,
    copy,
    diag,
    diagflat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    frombuffer,
    fromfile,
    fromfunction,
    fromiter,
    fromstring,
    full,
    full_like,
    genfromtxt,
    geomspace,
    identity,
    indices,
    linspace,
    loadtxt,
    logspace,
    meshgrid,
    ones,
    ones_like,
    require,
    to_torch,
    tri,
    tril,
    triu,
    zeros,
    zeros_like,
)

# CuPy's device-side APIs (docs/xp.md "Devices", "Memory pools", "User kernels", "Fusion")
from ._device import Device, DeviceMismatchError
from ._dtypes import UnsupportedDTypeError
from ._formatting import (
    array2string,
    array_repr,
    array_str,
    base_repr,
    binary_repr,
    format_float_positional,
    format_float_scientific,
    get_printoptions,
    printoptions,
    set_printoptions,
)
from ._functional import piecewise, vectorize
from ._fusion import Fusion, fuse
from ._grids import broadcast, c_, mgrid, ogrid, r_, vander
from ._histograms import histogram2d, histogramdd
from ._indexing_routines import (
    argwhere,
    choose,
    compress,
    count_nonzero,
    diag_indices,
    diag_indices_from,
    extract,
    fill_diagonal,
    flatnonzero,
    ix_,
    mask_indices,
    nonzero,
    place,
    put,
    put_along_axis,
    putmask,
    ravel_multi_index,
    select,
    take,
    take_along_axis,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
    unravel_index,
    where,
)
from ._io import NpzFile, load, save, savetxt, savez, savez_compressed
from ._kernel import CompileException, ElementwiseKernel, RawKernel, RawModule, ReductionKernel
from ._manipulation import (
    append,
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    clip,
    column_stack,
    concat,
    concatenate,
    copyto,
    delete,
    diagonal,
    dsplit,
    dstack,
    expand_dims,
    flip,
    fliplr,
    flipud,
    hsplit,
    hstack,
    insert,
    matrix_transpose,
    moveaxis,
    ndim,
    pad,
    permute_dims,
    ravel,
    repeat,
    reshape,
    resize,
    roll,
    rollaxis,
    rot90,
    row_stack,
    shape,
    size,
    split,
    squeeze,
    stack,
    swapaxes,
    tile,
    trace,
    transpose,
    unstack,
    vsplit,
    vstack,
)
from ._memory_pool import MemoryPool, PinnedMemoryPool, get_default_memory_pool, get_default_pinned_memory_pool
from ._memory_ranges import byte_bounds, may_share_memory, shares_memory
from ._misc import (
    allclose,
    angle,
    around,
    array_equal,
    array_equiv,
    can_cast,
    common_type,
    convolve,
    errstate,
    finfo,
    fix,
    get_array_module,
    i0,
    iinfo,
    imag,
    interp,
    isclose,
    iscomplex,
    iscomplexobj,
    isdtype,
    isfortran,
    isneginf,
    isposinf,
    isreal,
    isrealobj,
    isscalar,
    issubdtype,
    min_scalar_type,
    mintypecode,
    nan_to_num,
    promote_types,
    real,
    result_type,
    round,
    sinc,
    typename,
)
from ._numeric import correlate, gradient, real_if_close, trapezoid, trim_zeros, unwrap
from ._packing import packbits, unpackbits
from ._reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    cumprod,
    cumsum,
    cumulative_prod,
    cumulative_sum,
    diff,
    ediff1d,
    max,
    min,
    nanargmax,
    nanargmin,
    nancumprod,
    nancumsum,
    nanmax,
    nanmin,
    nanprod,
    nansum,
    prod,
    ptp,
    sum,
)
from ._sorting import (
    argpartition,
    argsort,
    in1d,
    intersect1d,
    isin,
    lexsort,
    partition,
    searchsorted,
    setdiff1d,
    setxor1d,
    sort,
    sort_complex,
    union1d,
    unique,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from ._statistics import (
    average,
    bincount,
    corrcoef,
    cov,
    digitize,
    histogram,
    histogram_bin_edges,
    mean,
    median,
    nanmean,
    nanmedian,
    nanpercentile,
    nanquantile,
    nanstd,
    nanvar,
    percentile,
    quantile,
    std,
    var,
)
from ._ufuncs import UFUNCS as _UFUNCS
from ._ufuncs import ufunc
from ._window import bartlett, blackman, hamming, hanning, kaiser
from .lib._polynomial import poly, poly1d, polyadd, polyder, polydiv, polyfit, polyint, polymul, polysub, polyval, roots
from .lib._shape_base import apply_along_axis, apply_over_axes
from .linalg import cross, dot, einsum, inner, kron, matmul, outer, tensordot, vdot, vecdot

globals().update(_UFUNCS)
round_ = round

# dtypes: NumPy's scalar types (xp.float32(1.5) makes a NumPy scalar, as in CuPy)
bool_ = _np.bool_
bool = _np.bool_  # noqa: A001  (NumPy 2 spells it np.bool)
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
int_, intp, float_, complex_, half, single, double = _np.int64, _np.int64, _np.float64, _np.complex128, _np.float16, \
    _np.float32, _np.float64
csingle, cdouble, byte, short, intc, longlong, ubyte = _np.complex64, _np.complex128, _np.int8, _np.int16, _np.int32, \
    _np.int64, _np.uint8
dtype = _np.dtype
long, ulong, uint, uintp, uintc, ushort, ulonglong = (_np.int64, _np.uint64, _np.uint64, _np.uint64, _np.uint32,
                                                      _np.uint16, _np.ulonglong)
# index helpers (pure Python, no arrays): NumPy's own, as CuPy re-exports them
ndindex, s_, index_exp, iterable = _np.ndindex, _np.s_, _np.index_exp, _np.iterable
from ._flatiter import flatiter  # noqa: E402  (the type of a.flat)

generic, number, integer, signedinteger, unsignedinteger, floating, complexfloating, inexact = (
    _np.generic, _np.number, _np.integer, _np.signedinteger, _np.unsignedinteger, _np.floating, _np.complexfloating,
    _np.inexact)
e, pi, inf, nan, euler_gamma, newaxis = _np.e, _np.pi, _np.inf, _np.nan, _np.euler_gamma, None
PINF, NINF = _np.inf, -_np.inf
exceptions = _np.exceptions   # as cupy.exceptions: NumPy's own exception classes
AxisError = _np.exceptions.AxisError
ComplexWarning = _np.exceptions.ComplexWarning
LinAlgError = linalg.LinAlgError
from ._core._namespace import API_VERSION as __array_api_version__  # noqa: E402  (beside the other Array API names)


def astype(x, dtype, /, *, copy=True, device=None):  # noqa: F811  (Array API's parameter name shadows xp.copy)
    """x cast to dtype (matches numpy.astype / Array API astype)."""
    return asarray(x).astype(dtype, copy=copy)


def __array_namespace_info__():
    from ._array_api import _Info
    return _Info()


def array_namespace():
    """The Array API namespace (what ``x.__array_namespace__()`` returns)."""
    from ._array_api import namespace
    return namespace()


# x.__array_namespace__() is the core's: it returns the namespace registered here, built once the
# package's names all exist (npudist.xp._core._namespace)
array_namespace()
