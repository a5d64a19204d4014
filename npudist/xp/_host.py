"""NumPy's own loops on npu memory: the ufunc engine's fast path.

On the host driver npu memory is host memory, so a C-contiguous npu tensor can be read and written
by NumPy through a zero-copy ``numpy.ndarray`` view of its buffer. For small arrays PyTorch's
dispatch costs many times NumPy's whole call (``torch.add`` on 16 elements ~4-8x ``np.add``), so
xp's ufuncs may run NumPy's loop on views instead (a measured per-call choice: host_small,
numpy_faster; plain single-kernel calls on small arrays stay on PyTorch, which is as fast once a
result tensor has to be allocated from Python): the result is allocated as an
npu tensor (through the npu caching allocator, so ``torch.npu.memory_stats`` stay true) and NumPy
writes it with ``out=``. NumPy computing the values makes dtypes, NaN, overflow and casting
NumPy's own.

Rules that keep this safe (each checked per call, all cheap):
- stream order: ``npudist._C._wait_current_stream`` first, the check every eager npu op makes, so
  work the current stream waits for (a pending collective, another stream's event) completes
  before NumPy reads or writes;
- graph capture: while any npu graph capture is under way (``_C._any_capture``) nothing runs
  here; the PyTorch path is taken so the capture records the op;
- only plain (or xp's unsigned) npu tensors, C-contiguous, non-empty, one device; tracing tensors
  (xp.fuse's FakeTensors) are a different type and never reach NumPy;
- NumPy's floating-point error state is set to 'ignore' for the call, so a small array neither
  warns nor raises where the PyTorch path would not (xp's semantics: no FP warnings).

Views are cached on the xp array (slot ``_h``: the tensor, its address, the view), checked against
the array's current tensor and address on every use.
"""
import ctypes
import functools

import numpy as np
import torch

from npudist import _C

from . import _config, _native  # noqa: F401  (_native: xp's C types registered in _C first)
from ._dtypes import TORCH_TO_NP
from ._unsigned import UINT, UIntTensor, as_uint

try:  # NumPy 2's FP-error state is a context variable; setting it directly costs ~0.2 us
    from numpy._core._multiarray_umath import _extobj_contextvar as _ERR
    with np.errstate(all="ignore"):
        _IGNORE = _ERR.get()
except ImportError:  # pragma: no cover - another NumPy layout: fall back to np.errstate (slower)
    _ERR = None

_BIG = ctypes.c_char * (1 << 46)   # a ctypes type spanning any buffer; from_address makes no copy
_PLAIN = torch.Tensor
_UINTT = UIntTensor


def host_view(a, t):
    """The zero-copy NumPy view of xp array ``a`` whose tensor is ``t`` (C-contiguous, on npu,
    non-empty), cached on ``a`` as ``(t, address, view, plain tensor, device index, torch dtype)``. Returns
    None if ``t`` cannot be viewed (the caller takes the torch path). (The C ufunc fast path leaves
    ``_h`` as ``()`` on its results: made by NumPy's loop, no view built yet.)"""
    h = getattr(a, "_h", None)
    if h and h[0] is t and h[3].data_ptr() == h[1]:
        return h
    tp = type(t)
    if tp is _PLAIN:
        p = t
    elif tp is _UINTT:
        p = t.as_subclass(_PLAIN)
    else:
        return None
    if not p.is_contiguous() or p.device.type != "npu" or p.numel() == 0 or p.is_conj() or p.is_neg():
        return None   # (a conjugate / negative view's buffer does not hold its values)
    ptr = p.data_ptr()
    v = np.ndarray(tuple(p.shape), TORCH_TO_NP[p.dtype], _BIG.from_address(ptr))
    h = a._h = (t, ptr, v, p, p.device.index or 0, p.dtype)
    return h


def new_result(shape, tdt, device, like, nd):
    """A new xp array (class ``nd``) of ``shape`` / torch dtype ``tdt`` on npu ``device`` (index) allocated by
    the npu caching allocator, and its NumPy view. ``like``: a plain tensor of that shape and
    dtype whose ``empty_like`` is the cheaper allocation, or None."""
    if like is not None:
        t = torch.empty_like(like)
    else:
        t = torch.empty(shape, dtype=tdt, device=torch_device(device))
    ptr = t.data_ptr()
    v = np.ndarray(shape, TORCH_TO_NP[tdt], _BIG.from_address(ptr))
    r = object.__new__(nd)
    u = t.as_subclass(_UINTT) if tdt in UINT else t
    r._t = u
    r._h = (u, ptr, v, t, device, tdt)
    return r, v


_DEVICES = {}

# False: every ufunc call takes the PyTorch path (benchmarks/xp_host_loops.py times both sides).
ENABLED = True
# False: the C fast paths (fast_ufunc, numpy_first) decline every call; the Python host path above
# still runs where it qualifies (benchmarks/xp_host_loops.py times the three variants).
FAST = True

# Results up to this many elements: NumPy's loops where host_small says so (below it fixed
# per-call costs dominate); larger ones: where numpy_faster says so.
SMALL = 4096

# ufuncs whose NumPy loop beats PyTorch's CPU kernel per thread at 1M elements (measured with
# benchmarks/xp_vs_numpy.py --threads 1: arithmetic, comparisons, min/max, sqrt, rounding and bit
# ops are NumPy's SIMD loops; PyTorch wins the transcendental functions, which stay on torch).
NUMPY_FASTER = frozenset({
    "add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "negative", "positive",
    "absolute", "fabs", "square", "sqrt", "reciprocal", "sign", "maximum", "minimum", "fmax", "fmin",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
    "right_shift", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "signbit", "copysign",
    "divmod", "conjugate",
})
_F32_F64 = frozenset({torch.float32, torch.float64})
# ufuncs whose NumPy loop beats PyTorch's CPU kernel per thread at 1M elements for some dtypes only
# (the dtype of the first operand): NumPy's SIMD transcendental functions (measured one thread each
# side, 1M elements: NumPy 1.2-30x faster for these; PyTorch faster for float64 sin/cos, ~17x, and
# for hypot and logaddexp, which stay on PyTorch). Integer power stays on PyTorch.
NUMPY_FASTER_FOR = {
    **{name: _F32_F64 for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tan", "arcsin", "arccos", "arctan", "sinh",
        "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "arctan2", "power", "float_power")},
    "sin": frozenset({torch.float32}), "cos": frozenset({torch.float32}),
}


# ufuncs whose PyTorch path is several torch ops (zero-divisor and shift-range guards, NumPy's
# edge rules): there NumPy's loop is also the faster side on small arrays. For the others,
# PyTorch's single kernel costs about what the host path's Python allocation and view do
# (measured: xp.add on 16 float32, 4.4 us PyTorch vs 4.7 us host loop), so they stay on PyTorch.
MULTI_OP = frozenset({
    "floor_divide", "remainder", "fmod", "divmod", "left_shift", "right_shift", "power", "cbrt", "spacing",
    "modf", "bitwise_count", "sign", "copysign", "ldexp", "heaviside", "frexp",
})
# complex operands: xp's PyTorch path orders complex numbers lexicographically in several ops
LEX = frozenset({"less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax", "fmin"})
_COMPLEX = frozenset({torch.complex64, torch.complex128})


def host_small(name, loop):
    """Whether a call of ufunc ``name`` with torch dtypes ``loop`` (loop and operands; Python scalar
    types are ignored) and at most SMALL elements
    runs NumPy's loop: for unsigned 16/32/64-bit dtypes, for the ufuncs of MULTI_OP, and for the
    lexicographic complex comparisons; otherwise PyTorch's kernel is as fast."""
    if name in MULTI_OP:
        return True
    return any(type(d) is torch.dtype and (d in UINT or d in _COMPLEX and name in LEX) for d in loop)


def numpy_faster(name, loop):
    """Whether a large call of ufunc ``name`` with torch dtypes ``loop`` (loop and operands) runs NumPy's loop:
    always for uint16/32/64 (NumPy's loops are exact; xp's PyTorch path emulates them), and with
    one PyTorch intra-op thread for the ufuncs of NUMPY_FASTER and those of NUMPY_FASTER_FOR whose
    first dtype is listed (NumPy's loops are single-threaded: with more threads PyTorch's kernels
    are the faster side)."""
    for d in loop:
        if type(d) is torch.dtype and d in UINT:
            return True
    if torch.get_num_threads() != 1:
        return False
    if name in NUMPY_FASTER:
        return True
    dts = NUMPY_FASTER_FOR.get(name)
    return dts is not None and len(loop) > 0 and loop[0] in dts


def torch_device(index):
    """The cached ``torch.device('npu', index)``."""
    d = _DEVICES.get(index)
    if d is None:
        d = _DEVICES[index] = torch.device("npu", index)
    return d


def run1(npfn, args, out):
    """``npfn(*args, out=out)`` with NumPy's FP errors ignored (one output, into a new array)."""
    if _ERR is not None:
        tok = _ERR.set(_IGNORE)
        try:
            npfn(*args, out=out)
        finally:
            _ERR.reset(tok)
        return
    with np.errstate(all="ignore"):
        npfn(*args, out=out)


def run(npfn, args, outs, casting):
    """``npfn(*args, out=outs, casting=casting)`` with NumPy's FP errors ignored."""
    if _ERR is not None:
        tok = _ERR.set(_IGNORE)
        try:
            npfn(*args, out=outs, casting=casting)
        finally:
            _ERR.reset(tok)
        return
    with np.errstate(all="ignore"):
        npfn(*args, out=outs, casting=casting)


def wait(device_index):
    """Stream order before NumPy touches npu memory (see the module docstring)."""
    _C._wait_current_stream(device_index)


def capturing():
    """True while any npu graph capture is under way in the process (then: the torch path)."""
    return _C._any_capture()


def fast_ufunc(uf, state):
    """The C fast path of xp ufunc ``uf`` (``npudist._C._XpHostUfunc``), or None if the extension
    lacks it or NumPy's FP-error context variable is not found.

    Called with the ufunc's positional operands only (``uf._fast(*args)``), it returns the result
    xp array (a tuple for two outputs) after running NumPy's loop on zero-copy views of the npu
    buffers into new npu tensors from the npu caching allocator, or None when the call does not
    qualify: operands other than exact xp arrays (plain or unsigned, C-contiguous, non-empty,
    no conjugate/negative bit, one npu, one shape: no broadcasting) and Python scalars; more than
    SMALL elements unless an unsigned dtype is involved or ``uf`` is in NUMPY_FASTER (or in
    NUMPY_FASTER_FOR with its first operand's dtype) and torch runs one thread; ENABLED false; ``state.float64_mode`` not 'off'; a graph capture under way; NumPy
    raising TypeError/ValueError/OverflowError (xp's general path then raises xp's error).
    Stream order and FP-error handling are this module's rules (module docstring)."""
    cls = getattr(_C, "_XpHostUfunc", None)
    if cls is None or _ERR is None or not isinstance(uf._np, np.ufunc) or uf._np.signature is not None:
        return None   # (generalized ufuncs such as matmul: the result's shape is not the operands')
    name = uf.__name__
    big = True if name in NUMPY_FASTER else NUMPY_FASTER_FOR.get(name, False)
    return cls(uf._np, uf.nin, uf.nout, big, uf._resolve, uf._array_type, _UINTT,
               as_uint, globals(), state, _ERR, _IGNORE)


FP_NEVER, FP_ALWAYS, FP_IF_FLOAT = 0, 1, 2   # numpy_first's fp= (see there)
ALWAYS = 2   # numpy_first's big=: NumPy's function at any size and thread count


def numpy_first(np_fn, array_type, big=False, unsigned=True, fp=FP_ALWAYS):
    """Decorator for an xp function whose NumPy counterpart ``np_fn`` takes the same arguments
    and returns new arrays (no views): calls first run ``np_fn`` on zero-copy views of the npu
    buffers (C: ``npudist._C._XpHostFunc``) and return its results as xp arrays in npu memory, so
    values and dtypes are NumPy's. Above SMALL elements NumPy allocates through the npu
    data-memory handler (csrc/xp/host_memory.cpp) and a dense result is handed over without
    a copy; smaller results are copied into new npu memory (the npu caching allocator). The xp
    function runs instead when the call does not qualify.

    Qualifies: exact xp arrays among the arguments (positional or keyword: any strides,
    non-empty, on one npu, no conjugate/negative bit) with at most SMALL elements each — or,
    with ``big`` (NumPy measured faster per thread at 1M elements, docs/benchmarks/xp.md) and one torch
    thread, any size; with ``big=ALWAYS``, any size whatever the thread count (functions whose
    results depend on the order of accumulation, where PyTorch's multithreaded kernels give other
    values than NumPy's: cumsum, var, std); with ``unsigned`` (default), calls with a uint16/32/64 array at any size
    (xp's PyTorch path emulates those dtypes with several torch ops). Never: ``out=``, torch tensors, NumPy
    arrays or xp subclasses as arguments, a graph capture under way, float64 modes other than
    'off', ENABLED false, NumPy raising TypeError/ValueError/OverflowError/IndexError/MemoryError (the xp
    function then raises its own error), a result NumPy returns into one of the views, or a
    result dtype xp does not hold. Results keep NumPy's memory order and strides (C, Fortran,
    or any dense order NumPy's order='K' gives permuted operands). ``array_type`` may be a zero-argument callable returning the
    class (for ndarray's own methods, decorated before the class exists); it is called once, at
    the first call. Stream order and FP-error handling are this module's rules. Setting NumPy's
    FP-error state costs ~0.15 us a call; ``fp`` says when it is set: FP_ALWAYS (default);
    FP_NEVER for functions that only move, compare or index data (sort, take, a[mask]: they never
    consult it); FP_IF_FLOAT unless every array argument is integer/bool and every other argument
    None, a bool, an int or a tuple of ints (integer sums, maxima, cumulative sums: NumPy's integer
    loops raise no FP errors and no dtype= or float argument brings a cast in).

    The decorated function is the C object itself (it keeps ``f``'s name, doc and ``__wrapped__``,
    and binds as a method); ``decorated._host_fast(*args, **kwargs)`` runs only the NumPy path and
    returns None where the call does not qualify."""
    def deco(f):
        cls = getattr(_C, "_XpHostFunc", None)
        if cls is None or _ERR is None:
            return f
        # The C object is the decorated function (no Python frame in between): NumPy's call, or f's
        # when the call does not qualify. ``_host_fast``: the same object without f (None instead).
        def new(fallback):
            return cls(np_fn, big, unsigned, array_type, _UINTT, as_uint, globals(), _config.state, _ERR, _IGNORE,
                       fallback, fp)
        c = functools.update_wrapper(new(f), f)
        c._host_fast = new(None)
        return c
    return deco
