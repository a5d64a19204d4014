"""``xp.RawKernel`` / ``xp.RawModule``: CUDA source cannot run on an npu, so these raise.

CuPy's raw kernels are CUDA C++ launched on a grid of thread blocks (``threadIdx``,
``blockIdx``, shared memory, warp intrinsics); none of that exists on the npu, and translating
it is not attempted. Constructing one raises ``NotImplementedError`` that names the
alternatives: ``xp.ElementwiseKernel`` (a per-element body, ``raw`` parameters for indexed
access) and ``xp.ReductionKernel``.
"""

_MESSAGE = ("xp.{cls}: CUDA kernels (grids, threadIdx/blockIdx, shared memory) cannot run on an npu. Rewrite the "
            "kernel body as an xp.ElementwiseKernel (one element per loop index i; 'raw' parameters give indexed "
            "access to whole arrays, _ind.size() the loop size) or an xp.ReductionKernel; see docs/xp.md, "
            "'User kernels'.")


class RawKernel:
    """Not available on npu: raises NotImplementedError naming xp.ElementwiseKernel (see module doc)."""

    def __init__(self, code=None, name=None, *args, **kwargs):
        raise NotImplementedError(_MESSAGE.format(cls="RawKernel"))


class RawModule:
    """Not available on npu: raises NotImplementedError naming xp.ElementwiseKernel (see module doc)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_MESSAGE.format(cls="RawModule"))
