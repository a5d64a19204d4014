"""Reductions and accumulations (matches numpy's sum, prod, max, min, argmax, all, cumsum, nan*...): the public functions.

They are the core's own (npudist.xp._core._reductions, which ndarray's methods call: ``a.sum()`` and
``xp.sum(a)`` run the same function), as cupy's family modules wrap cupy._core."""
from ._core._reductions import (  # noqa: F401  (re-exported: the public names)
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    bitwise_reduce,
    cum_extreme,
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
