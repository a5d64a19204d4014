"""NumPy dtypes of npudist.xp arrays and their PyTorch counterparts.

Every xp array has a real ``numpy.dtype``. Anything NumPy accepts as a dtype (``np.float32``,
``'f4'``, ``'float32'``, ``float``, ``np.dtype('i8')``) is accepted, as are torch dtypes.

uint16, uint32 and uint64 are held in torch.uint16/32/64 tensors and computed exactly
(npudist.xp._unsigned: PyTorch's kernels where they exist, exact emulation where not). Sums
and products of unsigned integers accumulate in uint64, of signed integers and bools in int64,
as NumPy's do. Strings, objects, datetimes and bfloat16/float8 are refused.
"""
import numpy as np
import torch

NP_TO_TORCH = {
    np.dtype(np.bool_): torch.bool,
    np.dtype(np.int8): torch.int8,
    np.dtype(np.int16): torch.int16,
    np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64,
    np.dtype(np.uint8): torch.uint8,
    np.dtype(np.uint16): torch.uint16,
    np.dtype(np.uint32): torch.uint32,
    np.dtype(np.uint64): torch.uint64,
    np.dtype(np.float16): torch.float16,
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float64): torch.float64,
    np.dtype(np.complex64): torch.complex64,
    np.dtype(np.complex128): torch.complex128,
}
TORCH_TO_NP = {t: d for d, t in NP_TO_TORCH.items()}

bool_ = np.dtype(np.bool_)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

SUPPORTED_DTYPES = tuple(NP_TO_TORCH)


class UnsupportedDTypeError(TypeError):
    """A dtype npudist.xp cannot hold on the npu (strings, objects, datetimes...)."""


def _reject(dt):
    raise UnsupportedDTypeError(
        f"npudist.xp does not support dtype {dt!r}; supported: "
        f"{', '.join(d.name for d in SUPPORTED_DTYPES)}")


def to_dtype(obj):
    """Normalizes anything NumPy or torch accepts as a dtype to a supported numpy.dtype.

    Raises UnsupportedDTypeError (a TypeError) for dtypes xp cannot hold."""
    if isinstance(obj, np.dtype):
        dt = obj
    elif isinstance(obj, torch.dtype):
        try:
            return TORCH_TO_NP[obj]
        except KeyError:
            raise UnsupportedDTypeError(f"npudist.xp does not support torch dtype {obj}") from None
    else:
        try:
            dt = np.dtype(obj)
        except TypeError as e:
            raise TypeError(f"{obj!r} is not a dtype: {e}") from None
    if dt in NP_TO_TORCH:
        if not dt.isnative:
            dt = dt.newbyteorder("=")
        return dt
    if not dt.isnative and dt.newbyteorder("=") in NP_TO_TORCH:
        return dt.newbyteorder("=")
    _reject(dt)


def torch_dtype(dt):
    """numpy.dtype (supported) -> torch.dtype."""
    try:
        return NP_TO_TORCH[dt]
    except KeyError:
        return NP_TO_TORCH[to_dtype(dt)]


def np_dtype(tdt):
    """torch.dtype -> numpy.dtype; UnsupportedDTypeError for torch dtypes without a NumPy twin."""
    try:
        return TORCH_TO_NP[tdt]
    except KeyError:
        raise UnsupportedDTypeError(f"npudist.xp does not support torch dtype {tdt} "
                                    f"(bfloat16 and float8 have no NumPy twin)") from None


def is_float(dt):
    return dt.kind == "f"


def is_complex(dt):
    return dt.kind == "c"


def is_inexact(dt):
    return dt.kind in "fc"


def is_integer(dt):
    return dt.kind in "iu"


uint64 = np.dtype(np.uint64)


# Dtype used by the float32 float64-mode for computing float64 / complex128 work.
DEMOTE = {float64: float32, complex128: complex64}
DEMOTE_TORCH = {torch.float64: torch.float32, torch.complex128: torch.complex64}
def sum_dtype(dt):
    """Dtype sum/prod/cumsum of an array of dtype dt use by default (NumPy 2: int64 for bool and
    signed integers narrower than 64 bits, uint64 for unsigned ones)."""
    if dt.kind == "u":
        return uint64
    if dt.kind in "bi":
        return int64
    return dt


def complex_to_real(res, out_tdt, stacklevel=2):
    """``res`` (a torch tensor) as it goes into a result of torch dtype ``out_tdt`` under NumPy's
    unsafe casting: a complex ``res`` into a real dtype is its real part, with NumPy's
    ComplexWarning (PyTorch's own cast warns with a UserWarning instead); into bool it stays
    complex (``!= 0`` on the cast) and quiet, as in NumPy. ``stacklevel`` points the warning at
    the user's call."""
    if res.is_complex() and not out_tdt.is_complex and out_tdt != torch.bool:
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                      stacklevel=stacklevel + 1)
        return res.real
    return res


def cast(t, tdt):
    """``t.to(tdt)`` rounded as NumPy's astype: float64 -> float16 rounds once (PyTorch's
    conversion goes through float32 and rounds twice, so a value just below a float16 midpoint
    can round up). Done on the device: the float32 step rounds to odd (truncate toward zero, set
    the last bit when inexact), which keeps enough information for the final round to nearest even
    to be NumPy's single rounding. Other pairs are ``t.to(tdt)``."""
    if tdt != torch.float16 or t.dtype != torch.float64:
        return t.to(tdt)
    f = t.to(torch.float32)
    back = f.to(torch.float64)
    inexact = back != t
    inexact &= t == t                                    # NaN stays NaN
    bits = f.view(torch.int32)
    # IEEE bits are sign-magnitude: bits - 1 steps one float32 toward zero for either sign
    bits = torch.where(inexact & (back.abs() > t.abs()), bits - 1, bits)
    bits = torch.where(inexact, bits | 1, bits)
    return bits.view(torch.float32).to(torch.float16)
