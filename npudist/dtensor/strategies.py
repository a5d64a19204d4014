"""Deprecated: each fused op's DTensor sharding strategy lives in its module of
:mod:`npudist.dtensor.ops`; this alias goes away in the next release."""
import warnings

from npudist.dtensor.ops import STRATEGIES, register_strategies
from npudist.dtensor.ops.fusion_attention import fusion_attention_grad_strategy, fusion_attention_strategy  # noqa: F401  (re-exported)
from npudist.dtensor.ops.rms_norm import rms_norm_backward_strategy, rms_norm_strategy  # noqa: F401  (re-exported)
from npudist.dtensor.ops.rotary_mul import rotary_mul_backward_strategy, rotary_mul_strategy  # noqa: F401  (re-exported)
from npudist.dtensor.ops.swiglu import swiglu_backward_strategy, swiglu_strategy  # noqa: F401  (re-exported)

register_strategies()  # this module imports DTensor anyway (via _placement)

warnings.warn("npudist.dtensor.strategies is deprecated; use npudist.dtensor.ops (STRATEGIES, "
              "register_strategies; each op's strategy is in its module)", DeprecationWarning, stacklevel=2)

__all__ = ["STRATEGIES"]
