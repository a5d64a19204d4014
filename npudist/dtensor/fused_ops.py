"""Deprecated: the fused ops live one per module in :mod:`npudist.dtensor.ops`; this alias goes
away in the next release."""
import warnings

from npudist.dtensor.ops import ALL_OPS, FORWARD_OPS, SCHEMAS  # noqa: F401  (re-exported)
from npudist.dtensor.ops.fusion_attention import key_len  # noqa: F401  (re-exported)

warnings.warn("npudist.dtensor.fused_ops is deprecated; use npudist.dtensor.ops (SCHEMAS, ALL_OPS, FORWARD_OPS; "
              "one module per op)", DeprecationWarning, stacklevel=2)
