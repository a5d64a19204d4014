"""Deprecated: moved to :mod:`npudist.testing.dtensor_coverage` (``python -m
npudist.testing.dtensor_coverage``); this alias goes away in the next release."""
import sys
import warnings

from npudist.testing import dtensor_coverage as _new
from npudist.testing.dtensor_coverage import *  # noqa: F403  (this module is the re-export of npudist.testing's)
from npudist.testing.dtensor_coverage import (  # noqa: F401  (re-exported)
    KNOWN_NPU_ONLY,
    classify,
    fused_op_strategies,
    main,
    registered_aten_strategies,
    render,
    unexplained_npu_only,
)

warnings.warn("npudist.dtensor.coverage is deprecated; use npudist.testing.dtensor_coverage", DeprecationWarning,
              stacklevel=2)

if __name__ == "__main__":
    sys.exit(_new.main())
