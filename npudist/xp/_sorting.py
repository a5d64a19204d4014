"""Sorting, searching and set routines (matches numpy's sort, argsort, partition, searchsorted, unique, isin...): the public functions.

They are the core's own (npudist.xp._core._sorting, which ndarray's methods call: ``a.sum()`` and
``xp.sum(a)`` run the same function), as cupy's family modules wrap cupy._core."""
from ._core._sorting import (  # noqa: F401  (re-exported: the public names)
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
