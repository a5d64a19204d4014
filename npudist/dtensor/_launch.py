"""Deprecated: moved to :mod:`npudist.testing.multiproc` (the one multi-rank harness); this alias
goes away in the next release."""
import warnings

from npudist.testing.multiproc import REPO, free_port, launch  # noqa: F401  (re-exported)

warnings.warn("npudist.dtensor._launch is deprecated; use npudist.testing.multiproc (launch, free_port, Ranks)",
              DeprecationWarning, stacklevel=2)
