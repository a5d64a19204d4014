"""Deprecated: moved to :mod:`npudist.watchdog.metrics.process_registry`; this alias goes away in the next release."""
import sys
import warnings

from npudist.watchdog.metrics import process_registry as _moved

warnings.warn(f"{__name__} is deprecated; use {_moved.__name__}", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
