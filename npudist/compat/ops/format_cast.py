"""``npu_format_cast`` / ``npu_format_cast_`` / ``get_npu_format``: storage formats on the simulated npu.

On Ascend, an npu tensor carries an ACL storage format (NCHW=0, NHWC=1, ND=2,
NC1HWC0=3, FRACTAL_Z=4, FRACTAL_NZ=29, ...) and npu_format_cast re-lays the data
out for the cube unit. The simulated npu keeps every tensor in PyTorch's strided
layout and has no other storage format, so a cast changes nothing: as torch_npu
does when the requested format is the current one, npu_format_cast returns its
input, npu_format_cast_ returns self, and get_npu_format reports ND (2). Code
that casts weights to FRACTAL_NZ for speed runs unchanged and computes the same
values. ``customize_dtype`` / ``input_dtype`` are accepted and ignored.
"""
import torch

from npudist.compat.ops._lib import define

ACL_FORMAT_ND = 2


def npu_format_cast(self: torch.Tensor, acl_format: int, *, customize_dtype=None, input_dtype=None):
    """Returns ``self``: the simulated npu has one storage format (module docstring)."""
    return self


def npu_format_cast_tensor(self: torch.Tensor, dst: torch.Tensor, *, customize_dtype=None, input_dtype=None):
    """``npu_format_cast(self, dst)``: cast to ``dst``'s format — ND, so ``self``."""
    return self


def npu_format_cast_(self: torch.Tensor, acl_format: int, *, customize_dtype=None, input_dtype=None):
    """In-place form: returns ``self`` unchanged."""
    return self


def get_npu_format(self: torch.Tensor) -> int:
    """The ACL storage format of ``self``: always ND (2) here."""
    return ACL_FORMAT_ND


define("npu_format_cast(Tensor(a) self, int acl_format, *, int? customize_dtype=None, int? input_dtype=None) "
       "-> Tensor(a)", npu_format_cast)
define("npu_format_cast.Tensor(Tensor(a) self, Tensor dst, *, int? customize_dtype=None, int? input_dtype=None) "
       "-> Tensor(a)", npu_format_cast_tensor)
define("npu_format_cast_.acl_format(Tensor(a!) self, int acl_format, *, int? customize_dtype=None, "
       "int? input_dtype=None) -> Tensor(a!)", npu_format_cast_)
define("get_npu_format(Tensor self) -> int", get_npu_format)
