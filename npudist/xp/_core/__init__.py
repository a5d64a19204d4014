"""npudist.xp's core, the bottom of xp (as cupy._core): xp.ndarray (``_ndarray``), the functions
that make arrays and the one ufunc table (``_array``), the ufunc class (``_ufuncs``), and the
routines ndarray's methods are made of (``_reductions``, ``_sorting``, ``_statistics``, ``_math``,
``_linalg``; the family modules npudist.xp._reductions etc. re-export them).

Not there yet (issue #41): the manipulation, indexing and Array API methods still reach their
family modules at call time (the loaders at the end of ``_ndarray``), the one place the core
imports upward; tests/xp/test_structure.py counts what is left.
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
