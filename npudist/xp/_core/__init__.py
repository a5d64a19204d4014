"""npudist.xp's core, the bottom of xp (as cupy._core): xp.ndarray (``_ndarray``), the functions
that make arrays and the one ufunc table (``_array``), the ufunc class (``_ufuncs``), and the
routines ndarray's methods are made of (``_reductions``, ``_sorting``, ``_statistics``, ``_math``,
``_linalg``, ``_manipulation``, ``_indexing_routines``, ``_creation``; the family modules
npudist.xp._reductions etc. re-export them), and the Array API namespace by registration
(``_namespace``). Nothing here imports a module above the core, not even inside a function
(tests/xp/test_structure.py walks the whole import graph and calls every routine-backed method).
"""
from ._array import OPS, result, wrap  # noqa: F401  (re-exported)
from ._ndarray import (  # noqa: F401  (re-exported: what the rest of xp imports from the core)
    _mask_getitem,
    as_tensor,
    check_order,
    check_same_kind,
    f64,
    f_layout,
    in_order,
    is_f_contiguous,
    ndarray,
    normalize_axes,
    normalize_axis,
    normalize_index_array,
    operand,
    result_dtype,
    tensor_of,
    to_numpy,
)
