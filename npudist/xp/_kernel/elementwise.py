"""``xp.ElementwiseKernel``: CuPy's user-defined elementwise kernels, compiled to native code.

Reference behaviour: ``cupy.ElementwiseKernel`` (cupy/_core/_kernel.pyx). The operation is C++
(CUDA C++ as far as it is ordinary C++) and runs once per element of the broadcast shape, on the
calling thread, over the arrays' npu memory in place.
"""
from __future__ import annotations

import ctypes

import numpy as np
import torch

from .._core import ndarray
from . import _build, _launch
from ._codegen import Source, ctype_of, declare_raw_and_scalars, typedefs
from ._params import RESERVED_ELEMENTWISE, check_names, decide_types, parse_params


class ElementwiseKernel:
    """User-defined elementwise kernel (matches ``cupy.ElementwiseKernel``).

    Args:
        in_params (str): inputs, ``"T x, raw T y, float32 alpha"`` — ``[raw] TYPE NAME``, TYPE a
            one-letter placeholder bound to the dtype of the array passed, or a NumPy dtype name.
        out_params (str): outputs, same syntax.
        operation (str): C++ statements run for each element. Non-raw parameters are the element
            at the loop index (``const T&`` for inputs, ``T&`` for outputs); ``raw`` parameters are
            whole arrays (``y[j]`` is the j-th element in C order, honouring strides;
            ``y.size()``, ``y.shape()[k]``); ``i`` is the loop index and ``_ind.size()`` the
            loop size. Math functions, ``min``/``max``, ``complex<float>``, ``float16`` and the
            atomics work as in CUDA code.
        name (str): the kernel's name (a C identifier; used in messages and file names).
        reduce_dims (bool): merge axes that are contiguous in every array (default True).
        preamble (str): C++ placed before the kernel (helper functions, constants, typedefs).
        no_return (bool): __call__ returns None.
        return_tuple (bool): __call__ returns a tuple even for one output.
        loop_prep (str), after_loop (str): C++ before / after the loop.

    Calling ``kernel(*inputs[, *outputs], size=None)``: inputs are xp arrays, npu tensors or
    scalars. Non-raw arrays broadcast together (with given outputs); outputs not given are
    allocated on the current npu with the broadcast shape, or ``(size,)`` when ``size=`` is given
    (allowed only when every array is raw). Arrays must have their parameter's dtype exactly
    (``TypeError: Type is mismatched``); scalars are converted to it. All arrays must be on the
    current npu (``ValueError`` otherwise, as CuPy without peer access). ``stream=`` and
    ``block_size=`` are accepted for CuPy's signature: the kernel runs on the current stream.

    The first call for a combination of dtypes, dimensions and layouts compiles a shared library
    (about a second, cached on disk by source hash: NPUDIST_XP_KERNEL_CACHE, default
    ~/.cache/npudist/xp_kernels); later calls and other processes reuse it. Code that does not
    compile raises ``xp.CompileException`` with the compiler's message, the line given as
    ``operation:LINE`` / ``preamble:LINE``.

    Partial, compared with CuPy: one thread runs the loop (``__syncthreads``/atomics are
    trivially satisfied; there are no blocks, shared memory or warp functions); texture objects
    are not supported; ``options=`` (NVRTC flags) is accepted and ignored.
    """

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, loop_prep="", after_loop="", **kwargs):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f'Invalid kernel name: "{name}"')
        unknown = set(kwargs) - {"options"}
        if unknown:
            raise TypeError(f"ElementwiseKernel: unexpected keyword argument(s) {', '.join(sorted(unknown))}")
        self.in_params = parse_params(in_params, True)
        self.out_params = parse_params(out_params, False)
        check_names(self.in_params, self.out_params, RESERVED_ELEMENTWISE)
        self.nin = len(self.in_params)
        self.nout = len(self.out_params)
        self.nargs = self.nin + self.nout
        self.params = self.in_params + self.out_params
        self.operation = operation
        self.name = self.__name__ = name
        self.reduce_dims = reduce_dims
        self.preamble = preamble
        self.no_return = no_return
        self.return_tuple = return_tuple
        self.loop_prep = loop_prep
        self.after_loop = after_loop
        self.kwargs = kwargs
        self._libs = {}
        self._plans = {}

    def __repr__(self):
        return f"<xp.ElementwiseKernel {self.name!r}>"

    def __call__(self, *args, size=None, stream=None, block_size=None):
        what = f"ElementwiseKernel {self.name!r}"
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} or "
                            f"{self.nargs} (with outputs), but given {len(args)}.")
        if size is not None and (not isinstance(size, int) or size < 0):
            raise ValueError(f"{what}: size must be a non-negative int, got {size!r}")
        if block_size is not None and (not isinstance(block_size, int) or block_size <= 0):
            raise ValueError(f"{what}: block_size must be a positive int, got {block_size!r} (CuPy's check; the "
                             f"kernel ignores it otherwise)")
        dev = _launch.current_device_id()
        sig = _signature(args, size, dev)
        if sig is not None:
            plan = self._plans.get(sig)
            if plan is not None:
                return self._run_plan(plan, args, dev)
        given_out = len(args) == self.nargs
        params = self.params if given_out else self.in_params
        cargs = _launch.classify(args, params, what)
        if given_out:
            for a, p in zip(cargs[self.nin:], self.out_params):
                if a.kind == "scalar":
                    raise TypeError(f"{what}: output {p.name!r} must be an xp array")
        loop_arrays = [a for a in cargs if a.kind == "array"]
        if size is not None:
            if loop_arrays:
                raise ValueError("Specified 'size' can be used only if all of the ndarray are 'raw'.")
            shape = (size,)
        else:
            if not loop_arrays:
                raise ValueError(f"Loop size is undecided. Every array of {what} is raw: pass size=")
            shape = _launch.broadcast_shape(loop_arrays)
        in_types, out_types, type_map = decide_types(
            self.in_params, self.out_params, [a.dtype if a.kind != "scalar" else None for a in cargs[:self.nin]],
            [a.dtype for a in cargs[self.nin:]] if given_out else ())
        if given_out:
            for a, p in zip(cargs[self.nin:], self.out_params):
                if not p.raw and a.shape != shape:
                    raise ValueError(f"{what}: Out shape is mismatched: output {p.name!r} has shape {a.shape}, "
                                     f"the loop {shape}")
            outs = [a.array if a.array is not None else _launch.wrap(a.tensor) for a in cargs[self.nin:]]
        else:
            for p in self.out_params:
                if p.raw and size is None:
                    raise ValueError(f"{what}: Output array size is Undecided (raw output {p.name!r}: pass it, "
                                     f"or size=)")
            outs = [_launch.new_output(shape, t, dev) for t in out_types]
            for o, p in zip(outs, self.out_params):
                cargs.append(_launch.Arg("raw" if p.raw else "array", tensor=o._t, dtype=o.dtype, array=o))
        ret = None if self.no_return else (outs[0] if self.nout == 1 and not self.return_tuple else tuple(outs))
        n = 1
        for s in shape:
            n *= s
        if n == 0:
            return ret
        lib, meta = self._launch(cargs, in_types + out_types, type_map, shape, n, dev)
        if sig is not None and len(self._plans) < 256:
            # the same argument signature next time: skip classification, broadcasting, typing
            types = in_types + out_types
            scalars = tuple((k, types[k], self.params[k].name) for k, a in enumerate(cargs) if a.kind == "scalar")
            alloc = () if given_out else tuple(out_types)
            self._plans[sig] = (lib.npudist_xp_kernel, (ctypes.c_int64 * len(meta))(*meta), scalars, shape, alloc)
        return ret

    def _run_plan(self, plan, args, dev):
        fn, meta, scalars, shape, alloc = plan
        ptrs = [a._t.data_ptr() if isinstance(a, ndarray) else a.data_ptr() if isinstance(a, torch.Tensor) else 0
                for a in args]
        keep = []
        for k, dt, name in scalars:
            buf = _launch.scalar_buffer(args[k], dt, name)
            keep.append(buf)
            ptrs[k] = buf.ctypes.data
        if alloc:
            outs = [_launch.new_output(shape, dt, dev) for dt in alloc]
            ptrs += [o._t.data_ptr() for o in outs]
        else:
            outs = [a if isinstance(a, ndarray) else _launch.wrap(a) for a in args[self.nin:]]
        _launch.run_fn(fn, ptrs, meta, dev, keep)
        if self.no_return:
            return None
        return outs[0] if self.nout == 1 and not self.return_tuple else tuple(outs)

    def _launch(self, cargs, types, type_map, shape, n, dev):
        loop = [a for a in cargs if a.kind == "array"]
        strides = [_launch.broadcast_strides(a, shape) for a in loop]
        if self.reduce_dims:
            lshape, strides = _launch.merge_dims(list(shape), strides)
        else:
            lshape = list(shape) or [1]
            strides = [s or [0] for s in strides]
        nd = len(lshape)
        meta = [n] + list(lshape)
        for st in strides:
            meta += st
        ptrs, keep, raw_offsets = _launch.pointers_and_raw_meta(cargs, types, self.params, meta)
        # the code depends on: types, kinds, raw ndims/contiguity, loop ndim, unit inner strides
        unit = tuple(st[-1] == 1 for st in strides)
        key = (types, tuple(a.kind for a in cargs), tuple(sorted(raw_offsets.items())), nd, unit)
        lib = self._libs.get(key)
        if lib is None:
            lib = self._libs[key] = _build.load(self._source(cargs, types, type_map, nd, unit, raw_offsets),
                                                self.name)
            lib.npudist_xp_kernel.restype = None
        _launch.run(lib, ptrs, meta, dev, keep)
        return lib, meta

    def _source(self, cargs, types, type_map, nd, unit, raw_offsets):
        src = Source()
        typedefs(src, type_map)
        if self.preamble:
            src.user("preamble", self.preamble)
        src.add('extern "C" void npudist_xp_kernel(void* const* _args, const int64_t* _meta) {',
                "const ptrdiff_t _n = _meta[0];",
                "const int64_t* const _shape = _meta + 1;")
        declare_raw_and_scalars(src, self.params, cargs, types, raw_offsets)
        loop_ids = [k for k, a in enumerate(cargs) if a.kind == "array"]
        refs = []
        for j, k in enumerate(loop_ids):
            p = self.params[k]
            ct = ctype_of(p, types[k])
            const = "const " if p.is_const else ""
            src.add(f"{const}{ct}* const _p{k} = ({const}{ct}*)_args[{k}];",
                    f"const int64_t* const _st{k} = _meta + {1 + nd + j * nd};",
                    f"const int64_t _si{k} = _st{k}[{nd - 1}];")
            refs.append((k, f"{const}{ct}& {p.name}", unit[j]))
        src.add("CIndexer _ind(_n);", "(void)_shape;")
        if self.loop_prep:
            src.user("loop_prep", self.loop_prep)

        def body(index, base):
            for k, decl, is_unit in refs:
                off = f"{index}" if is_unit else f"{index} * _si{k}"
                if base:
                    off = f"_b{k} + {off}"
                src.add(f"{decl} = _p{k}[{off}];")
            src.user("operation", self.operation, wrap="{};")

        if nd == 1:
            src.add("for (ptrdiff_t i = 0; i < _n; ++i) {", "_ind.set(i);")
            body("i", False)
            src.add("}")
        else:
            src.add(f"int64_t _idx[{nd - 1}] = {{0}};")
            for k, _, _ in refs:
                src.add(f"int64_t _b{k} = 0;")
            src.add(f"const int64_t _inner = _shape[{nd - 1}];",
                    "ptrdiff_t i = 0;",
                    "while (i < _n) {",
                    "for (int64_t _k = 0; _k < _inner; ++_k, ++i) {",
                    "_ind.set(i);")
            body("_k", True)
            src.add("}", f"for (int _d = {nd - 2}; _d >= 0; --_d) {{")
            for k, _, _ in refs:
                src.add(f"_b{k} += _st{k}[_d];")
            src.add("if (++_idx[_d] < _shape[_d]) break;")
            for k, _, _ in refs:
                src.add(f"_b{k} -= _st{k}[_d] * _shape[_d];")
            src.add("_idx[_d] = 0;", "}", "}")
        if self.after_loop:
            src.user("after_loop", self.after_loop)
        src.add("}")
        return src.text()


_SCALAR_TYPES = (bool, int, float, complex)


def _signature(args, size, dev):
    """A hashable description of a call's arguments that fixes everything but the data: dtypes,
    shapes, strides and devices of arrays, types of scalars; None when an argument is anything
    else (the general path then reports it)."""
    sig = [size, dev]
    for a in args:
        if isinstance(a, ndarray):
            t = a._t
        elif isinstance(a, torch.Tensor):
            t = a
            if t.device.type != "npu":
                return None
        elif type(a) in _SCALAR_TYPES or isinstance(a, np.generic):
            sig.append(type(a))
            continue
        else:
            return None
        if (t.device.index or 0) != dev or getattr(type(t), "_xp_keeps_class", False):
            return None   # (another device; a negative-stride view: the general path refuses it)
        sig.append((t.dtype, tuple(t.shape), t.stride()))
    return tuple(sig)
