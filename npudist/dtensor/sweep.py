"""Deprecated: moved to :mod:`npudist.testing.dtensor_sweep` (a test tool); this alias goes away
in the next release."""
import sys
import warnings

from npudist.testing import dtensor_sweep as _new
from npudist.testing.dtensor_sweep import *  # noqa: F403  (this module is the re-export of npudist.testing's)
from npudist.testing.dtensor_sweep import main, run_sweep, summarize  # noqa: F401  (re-exported)

warnings.warn("npudist.dtensor.sweep is deprecated; use npudist.testing.dtensor_sweep", DeprecationWarning,
              stacklevel=2)

if __name__ == "__main__":
    sys.exit(_new.main())
