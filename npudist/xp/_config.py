"""Process-wide settings of npudist.xp: the float64 mode and the device arrays are created on.

NPUDIST_XP_FLOAT64_MODE selects how float64/complex128 work is computed:

* ``off`` (default): exact, computed on the npu in float64; an op the device cannot do in
  float64 raises (the simulated npu computes every float64 op exactly, so nothing raises here).
* ``float32``: float64/complex128 operands are computed in float32/complex64 on the npu and the
  result is cast back to float64/complex128. Results keep NumPy's dtypes but carry float32
  precision (about 7 significant digits, range ~3.4e38). The recommendation on real NPUs, which
  have no fast float64 units.
* ``cpu``: exact, the operands are copied to the host, computed by PyTorch's CPU kernels, and
  the result is copied back to the npu.
"""
import contextlib

import torch

from npudist import _env

_MODES = ("off", "float32", "cpu")
ENV_VAR = "NPUDIST_XP_FLOAT64_MODE"


def _parse_mode(value, source):
    mode = (value or "off").strip().lower()
    if mode not in _MODES:
        raise ValueError(f"{source}={value!r} is not a float64 mode; use one of {', '.join(_MODES)} "
                         f"(docs/xp.md, 'float64 modes')")
    return mode


class _State:
    """xp's process-wide settings. A slot (not a class attribute), so xp's C fast paths read
    float64_mode at a fixed offset (csrc/xp/host_ufunc.cpp) instead of through getattr."""
    __slots__ = ("float64_mode",)

    def __init__(self):
        self.float64_mode = _parse_mode(_env.get_choice(ENV_VAR, "off", _MODES), ENV_VAR)


state = _State()


def get_float64_mode():
    """Returns the current float64 mode: 'off', 'float32' or 'cpu' (see NPUDIST_XP_FLOAT64_MODE)."""
    return state.float64_mode


def set_float64_mode(mode):
    """Sets the float64 mode for this process ('off', 'float32' or 'cpu'); returns the previous one.

    Raises ValueError for any other value."""
    previous = state.float64_mode
    state.float64_mode = _parse_mode(mode, "float64 mode")
    return previous


@contextlib.contextmanager
def float64_mode(mode):
    """Context manager: ``with xp.float64_mode('float32'): ...`` sets the mode for the block."""
    previous = set_float64_mode(mode)
    try:
        yield
    finally:
        state.float64_mode = previous


def device():
    """The torch.device arrays are created on: the current npu of this rank."""
    return torch.device("npu", torch.npu.current_device())
