"""``xp.ReductionKernel``: CuPy's user-defined reduction kernels, compiled to native code.

Reference behaviour: ``cupy.ReductionKernel`` (cupy/_core/_reduction.pyx). For each output
element, the mapped values of its input elements are combined with the reduce expression,
starting from the identity, and the post-map expression stores the result.
"""
from __future__ import annotations

import operator

from . import _build, _launch
from ._codegen import Source, ctype_of, declare_raw_and_scalars, typedefs
from ._params import CTYPES, RESERVED_REDUCTION, check_names, decide_types, parse_params


def _axes(axis, ndim):
    if axis is None:
        red = tuple(range(ndim))
    else:
        axis = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        red = []
        for a in axis:
            a = operator.index(a)
            if not -ndim <= a < ndim:
                import numpy as np
                raise np.exceptions.AxisError(a, ndim)
            red.append(a % ndim)
        if len(set(red)) != len(red):
            raise ValueError("duplicate value in 'axis'")
        red = tuple(sorted(red))
    return red, tuple(d for d in range(ndim) if d not in red)


class ReductionKernel:
    """User-defined reduction kernel (matches ``cupy.ReductionKernel``).

    Args:
        in_params (str), out_params (str): parameters as in ElementwiseKernel.
        map_expr (str): C++ expression of an input element (input names are its values), e.g.
            ``'x * x'``.
        reduce_expr (str): combines two mapped values ``a`` and ``b``, e.g. ``'a + b'``,
            ``'max(a, b)'``.
        post_map_expr (str): stores the reduced value ``a`` in the outputs, e.g. ``'y = sqrt(a)'``.
        identity (str or None): C++ expression the reduction starts from (``'0'``). None: the
            first mapped value starts it, and reducing zero elements raises ValueError.
        name (str): kernel name.
        reduce_type (str): C++ type of ``a``/``b`` (default: the first output's type).
        reduce_dims (bool): merge contiguous axes (default True).
        preamble (str): C++ placed before the kernel.

    Calling ``kernel(*inputs[, *outputs], out=None, axis=None, keepdims=False)``: inputs
    broadcast together; ``axis`` (int, tuple, None = all) is reduced; outputs are allocated on
    the current npu with the reduced shape (0-d for a full reduction) unless given. Arrays must
    have their parameters' dtypes exactly; ``raw`` inputs are whole arrays (``y[j]``,
    ``y.size()``); ``_in_ind.get()`` / ``_out_ind.get()`` are the linear indices of the input
    element (in the order out-axes then reduced axes) and of the output element. Compilation,
    caching and errors as ElementwiseKernel (parts named ``map_expr``, ``reduce_expr``,
    ``post_map_expr``, ``preamble``).

    Partial, compared with CuPy: the reduction runs on one thread, in the order of the elements,
    in blocks of 1024 combined at the end when an identity is given (rounding error grows like
    a tree reduction's, not like a running sum's), so a floating-point sum may differ from
    CuPy's in the last bits.
    """

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 reduce_type=None, reduce_dims=True, preamble="", options=()):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.in_params = parse_params(in_params, True)
        self.out_params = parse_params(out_params, False)
        if not self.out_params:
            raise ValueError("ReductionKernel needs at least one output parameter")
        check_names(self.in_params, self.out_params, RESERVED_REDUCTION)
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        self.params = self.in_params + self.out_params
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity = "" if identity is None else str(identity)
        self.name = self.__name__ = name
        self.reduce_type = reduce_type if reduce_type is not None else self.out_params[0].ctype
        self.reduce_dims = reduce_dims
        self.preamble = preamble
        self.options = options
        self._libs = {}

    def __repr__(self):
        return f"<xp.ReductionKernel {self.name!r}>"

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        what = f"ReductionKernel {self.name!r}"
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name!r}: {self.nin} inputs (or {self.nargs} with "
                            f"outputs), given {len(args)}")
        if out is not None:
            if self.nout != 1:
                raise NotImplementedError(f"{what}: out= works for one output; pass the outputs positionally")
            if len(args) != self.nin:
                raise ValueError("cannot specify 'out' as both a positional and keyword argument")
            args = args + (out,)
        dev = _launch.current_device_id()
        given_out = len(args) == self.nargs
        cargs = _launch.classify(args, self.params if given_out else self.in_params, what)
        ins = cargs[:self.nin]
        loop_in = [a for a in ins if a.kind == "array"]
        if not loop_in:
            raise ValueError(f"{what}: no non-raw input array decides the reduction's shape")
        shape = _launch.broadcast_shape(loop_in)
        red_axes, out_axes = _axes(axis, len(shape))
        out_shape = (tuple(1 if d in red_axes else n for d, n in enumerate(shape)) if keepdims
                     else tuple(shape[d] for d in out_axes))
        in_types, out_types, type_map = decide_types(
            self.in_params, self.out_params, [a.dtype if a.kind != "scalar" else None for a in ins],
            [a.dtype for a in cargs[self.nin:]] if given_out else ())
        if given_out:
            for a, p in zip(cargs[self.nin:], self.out_params):
                if a.kind == "scalar":
                    raise TypeError(f"{what}: output {p.name!r} must be an xp array")
                if not p.raw and a.shape != out_shape:
                    raise ValueError(f"{what}: Out shape is mismatched: output {p.name!r} has shape {a.shape}, "
                                     f"the reduction gives {out_shape}")
            outs = [a.array if a.array is not None else _launch.wrap(a.tensor) for a in cargs[self.nin:]]
        else:
            for p in self.out_params:
                if p.raw:
                    raise ValueError(f"{what}: Output array size is Undecided (raw output {p.name!r}: pass it)")
            outs = [_launch.new_output(out_shape, t, dev) for t in out_types]
            for o in outs:
                cargs.append(_launch.Arg("array", tensor=o._t, dtype=o.dtype, array=o))
        ret = outs[0] if self.nout == 1 else tuple(outs)
        n_out = 1
        for d in out_axes:
            n_out *= shape[d]
        n_red = 1
        for d in red_axes:
            n_red *= shape[d]
        if n_out == 0:
            return ret
        if n_red == 0 and not self.identity:
            raise ValueError(f"zero-size array to reduction operation {self.name} which has no identity")
        self._launch(cargs, in_types + out_types, type_map, shape, red_axes, out_axes, n_out, n_red, keepdims, dev)
        return ret

    def _launch(self, cargs, types, type_map, shape, red_axes, out_axes, n_out, n_red, keepdims, dev):
        nin = self.nin
        in_loop = [a for a in cargs[:nin] if a.kind == "array"]
        out_loop = [a for a in cargs[nin:] if a.kind == "array"]
        # inputs: strides over (out axes, reduced axes) of the broadcast shape
        in_full = [_launch.broadcast_strides(a, shape) for a in in_loop]
        oshape = [shape[d] for d in out_axes]
        rshape = [shape[d] for d in red_axes]
        in_o = [[st[d] for d in out_axes] for st in in_full]
        in_r = [[st[d] for d in red_axes] for st in in_full]
        out_o = []
        for a in out_loop:
            st = list(a.strides)
            out_o.append([st[d] for d in out_axes] if keepdims else st)
        if self.reduce_dims:
            oshape, merged_o = _launch.merge_dims(oshape, in_o + out_o)
            rshape, in_r = _launch.merge_dims(rshape, in_r)
        else:
            merged_o = in_o + out_o
            if not oshape:
                oshape, merged_o = [1], [[0] for _ in merged_o]
            if not rshape:
                rshape, in_r = [1], [[0] for _ in in_r]
        on, rn = len(oshape), len(rshape)
        meta = [n_out, n_red] + list(oshape) + list(rshape)
        for j in range(len(in_loop)):
            meta += merged_o[j] + in_r[j]
        for j in range(len(out_loop)):
            meta += merged_o[len(in_loop) + j]
        ptrs, keep, raw_offsets = _launch.pointers_and_raw_meta(cargs, types, self.params, meta)
        unit = tuple(st[-1] == 1 for st in in_r)
        key = (types, tuple(a.kind for a in cargs), tuple(sorted(raw_offsets.items())), on, rn, unit)
        lib = self._libs.get(key)
        if lib is None:
            lib = self._libs[key] = _build.load(self._source(cargs, types, type_map, on, rn, unit, raw_offsets),
                                                self.name)
            lib.npudist_xp_kernel.restype = None
        _launch.run(lib, ptrs, meta, dev, keep)

    def _source(self, cargs, types, type_map, on, rn, unit, raw_offsets):
        nin = self.nin
        src = Source()
        typedefs(src, type_map)
        rt = self.reduce_type
        if len(rt) > 1 and rt in {d.name for d in CTYPES}:   # a NumPy name as reduce_type
            rt = next(c for d, c in CTYPES.items() if d.name == rt)
        src.add(f"typedef {rt} _type_reduce;")
        if self.preamble:
            src.user("preamble", self.preamble)
        src.user("reduce_expr", self.reduce_expr, wrap="#define REDUCE(a, b) ({})")
        src.user("post_map_expr", self.post_map_expr, wrap="#define POST_MAP(a) ({})")
        src.add('extern "C" void npudist_xp_kernel(void* const* _args, const int64_t* _meta) {',
                "const ptrdiff_t _nout = _meta[0], _nred = _meta[1];",
                "const int64_t* const _oshape = _meta + 2;",
                f"const int64_t* const _rshape = _meta + {2 + on};",
                "(void)_oshape; (void)_rshape;")
        declare_raw_and_scalars(src, self.params, cargs, types, raw_offsets)
        off = 2 + on + rn
        ins, outs = [], []
        for k, a in enumerate(cargs):
            if a.kind != "array":
                continue
            p = self.params[k]
            ct = ctype_of(p, types[k])
            if k < nin:
                src.add(f"const {ct}* const _p{k} = (const {ct}*)_args[{k}];",
                        f"const int64_t* const _os{k} = _meta + {off};",
                        f"const int64_t* const _rs{k} = _meta + {off + on};",
                        f"const int64_t _ri{k} = _rs{k}[{rn - 1}];")
                off += on + rn
                ins.append((k, f"const {ct} {p.name}", unit[len(ins)]))
            else:
                src.add(f"{ct}* const _p{k} = ({ct}*)_args[{k}];",
                        f"const int64_t* const _os{k} = _meta + {off};")
                off += on
                outs.append((k, f"{ct}& {p.name}"))
        src.add("CIndexer _in_ind(_nout * _nred), _out_ind(_nout);",
                f"int64_t _oidx[{on}] = {{0}};")
        for k, _, _ in ins:
            src.add(f"int64_t _ob{k} = 0;")
        for k, _ in outs:
            src.add(f"int64_t _ob{k} = 0;")
        src.add("for (ptrdiff_t _o = 0; _o < _nout; ++_o) {", "_out_ind.set(_o);")
        first = not self.identity
        if first:
            src.add("_type_reduce _s = _type_reduce();", "bool _first = true;")
        else:
            # blocks of 1024 elements are reduced apart and then combined: rounding error grows
            # with the square root of the count, not the count (as a tree reduction's does)
            src.user("identity", self.identity, wrap="const _type_reduce _id = _type_reduce({});")
            src.add("_type_reduce _s = _id, _t = _id;", "int _c = 0;")

        def element(j_expr, base_suffix):
            src.add(f"_in_ind.set(_o * _nred + {j_expr});")
            for k, decl, is_unit in ins:
                idx = f"{j_expr}" if (is_unit and rn == 1) else (f"{j_expr} * _ri{k}" if rn == 1 else "0")
                src.add(f"{decl} = _p{k}[_ob{k}{base_suffix.format(k=k)} + {idx}];")
            src.user("map_expr", self.map_expr, wrap="_type_reduce _a = static_cast<_type_reduce>({});")
            if first:
                src.add("if (_first) { _s = _a; _first = false; } else { _s = REDUCE(_s, _a); }")
            else:
                src.add("_t = REDUCE(_t, _a);", "if (++_c == 1024) { _s = REDUCE(_s, _t); _t = _id; _c = 0; }")

        if rn == 1:
            src.add("for (ptrdiff_t _j = 0; _j < _nred; ++_j) {")
            element("_j", "")
            src.add("}")
        else:
            src.add(f"int64_t _ridx[{rn}] = {{0}};")
            for k, _, _ in ins:
                src.add(f"int64_t _rb{k} = 0;")
            src.add("for (ptrdiff_t _j = 0; _j < _nred; ++_j) {")
            element("_j", " + _rb{k}")
            src.add(f"for (int _d = {rn - 1}; _d >= 0; --_d) {{")
            for k, _, _ in ins:
                src.add(f"_rb{k} += _rs{k}[_d];")
            src.add("if (++_ridx[_d] < _rshape[_d]) break;")
            for k, _, _ in ins:
                src.add(f"_rb{k} -= _rs{k}[_d] * _rshape[_d];")
            src.add("_ridx[_d] = 0;", "}", "}")
        if not first:
            src.add("_s = REDUCE(_s, _t);")
        src.add("{")
        for k, decl in outs:
            src.add(f"{decl} = _p{k}[_ob{k}];")
        src.add("POST_MAP(_s);", "}")
        # next output element
        src.add(f"for (int _d = {on - 1}; _d >= 0; --_d) {{")
        for k, _, _ in ins:
            src.add(f"_ob{k} += _os{k}[_d];")
        for k, _ in outs:
            src.add(f"_ob{k} += _os{k}[_d];")
        src.add("if (++_oidx[_d] < _oshape[_d]) break;")
        for k, _, _ in ins:
            src.add(f"_ob{k} -= _os{k}[_d] * _oshape[_d];")
        for k, _ in outs:
            src.add(f"_ob{k} -= _os{k}[_d] * _oshape[_d];")
        src.add("_oidx[_d] = 0;", "}", "}", "}")
        return src.text()
