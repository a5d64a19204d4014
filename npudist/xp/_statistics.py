"""Statistics (matches numpy's mean, var, std, median, percentile, quantile, average, cov, histogram...): the public functions.

They are the core's own (npudist.xp._core._statistics, which ndarray's methods call: ``a.sum()`` and
``xp.sum(a)`` run the same function), as cupy's family modules wrap cupy._core."""
from ._core._statistics import (  # noqa: F401  (re-exported: the public names)
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
