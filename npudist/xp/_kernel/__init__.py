"""User kernels in CuPy's syntax for npu: ElementwiseKernel, ReductionKernel (compiled C++ over npu
buffers, cached on disk), and RawKernel/RawModule, which cannot exist without CUDA and raise.
See docs/xp.md, "User kernels"."""
from ._build import CompileException
from .elementwise import ElementwiseKernel
from .raw import RawKernel, RawModule
from .reduction import ReductionKernel

__all__ = ["CompileException", "ElementwiseKernel", "RawKernel", "RawModule", "ReductionKernel"]
