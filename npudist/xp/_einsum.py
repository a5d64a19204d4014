"""xp.einsum: NumPy's Einstein-summation front end (subscript parsing, validation, implicit output,
the sublist calling form, result dtypes, views) over torch.einsum.

Behaviour follows numpy.einsum: subscripts are letters (a-z, A-Z), ``...`` broadcasts, repeated
labels in one operand take its diagonal, an implicit output is the labels seen once, in ASCII
order, after the broadcast dimensions. Without summation (only diagonals / transposes) the result
is a view of a single operand, as in NumPy. Result dtype: ``numpy.result_type`` of the operands,
or ``dtype=`` (checked with ``casting``; ignored, as NumPy ignores it, when the result is a view). Integer products are summed with wraparound in the
result dtype (computed in int64 and cast back: the same values modulo 2**bits), bool as logical
or-of-ands, float16 in float32. ``optimize`` is accepted and ignored (torch picks the contraction
order). Errors are NumPy's: ValueError for bad subscripts / shapes, TypeError for bad arguments.
"""
import operator

import numpy as np
import torch

from ._core import as_tensor, f64, ndarray, result, wrap
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _sublist_to_str(sub):
    try:
        items = list(sub)
    except TypeError:
        raise TypeError("each subscript list of einsum must be a list of integers or Ellipsis") from None
    out = []
    for s in items:
        if s is Ellipsis:
            out.append("...")
            continue
        try:
            s = operator.index(s)
        except TypeError:
            raise TypeError("each subscript must be an integer in [0, 52) or Ellipsis") from None
        if not 0 <= s < 52:
            raise ValueError(f"subscript {s} is not within the valid range [0, 52)")
        out.append(_LETTERS[s])
    return "".join(out)


def _parse_args(args):
    """(subscripts string, operands) from either calling form of numpy.einsum."""
    if not args:
        raise ValueError("must specify the einstein sum subscripts string and at least one operand")
    if isinstance(args[0], str):
        if len(args) < 2:
            raise ValueError("must specify the einstein sum subscripts string and at least one operand")
        return args[0], list(args[1:])
    # sublist form: op0, sub0, op1, sub1, ..., [sub_out]
    ops, subs, i = [], [], 0
    while i + 1 < len(args):
        ops.append(args[i])
        subs.append(_sublist_to_str(args[i + 1]))
        i += 2
    s = ",".join(subs)
    if i < len(args):
        if not ops:
            raise ValueError("must specify the einstein sum subscripts string and at least one operand")
        s += "->" + _sublist_to_str(args[i])
    return s, ops


def _split_term(term, where):
    """'ab...c' -> (labels list with '.' standing for the ellipsis, has_ellipsis)."""
    labels, i, ell = [], 0, False
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "..." or ell:
                raise ValueError(f"einstein sum subscripts string contains a '.' that is not part of an ellipsis "
                                 f"('...') in the {where}" if term[i:i + 3] != "..." else
                                 f"einstein sum subscripts string contains more than one ellipsis in the {where}")
            ell = True
            labels.append(".")
            i += 3
            continue
        if c == " ":
            i += 1
            continue
        if c not in _LETTERS:
            raise ValueError(f"invalid subscript '{c}' in einstein sum subscripts string, subscripts must be letters")
        labels.append(c)
        i += 1
    return labels, ell


def _parse(subscripts, ndims):
    if "->" in subscripts:
        if subscripts.count("->") > 1:
            raise ValueError("einstein sum subscript string may contain only one '->'")
        lhs, rhs = subscripts.split("->")
        if "," in rhs:
            raise ValueError("einstein sum subscripts string includes output subscripts with a ','")
    else:
        lhs, rhs = subscripts, None
    if "-" in lhs or ">" in lhs or (rhs is not None and ("-" in rhs or ">" in rhs)):
        raise ValueError("einstein sum subscripts string includes a '-' or '>' that is not part of '->'")
    terms = lhs.split(",")
    if len(terms) > len(ndims):
        raise ValueError("fewer operands provided to einstein sum function than specified in the subscripts string")
    if len(terms) < len(ndims):
        raise ValueError("more operands provided to einstein sum function than specified in the subscripts string")
    ins = []
    for k, (term, nd) in enumerate(zip(terms, ndims)):
        labels, ell = _split_term(term, f"operand {k}")
        n = len(labels) - ell
        if n > nd:
            raise ValueError(f"einstein sum subscripts string contains too many subscripts for operand {k}")
        if not ell and n != nd:
            raise ValueError(f"operand has more dimensions than subscripts given in einstein sum, but no '...' "
                             f"ellipsis provided to broadcast the extra dimensions (operand {k})")
        ins.append((labels, nd - n if ell else 0))
    nbroad = max((e for _, e in ins), default=0)
    if rhs is None:
        counts = {}
        for labels, _ in ins:
            for c in labels:
                if c != ".":
                    counts[c] = counts.get(c, 0) + 1
        out = (["."] if nbroad else []) + sorted(c for c, n in counts.items() if n == 1)
    else:
        out, ell = _split_term(rhs, "output")
        seen = set()
        for c in out:
            if c in seen:
                raise ValueError(f"einstein sum subscripts string includes output subscript '{c}' multiple times")
            seen.add(c)
            if c != "." and not any(c in labels for labels, _ in ins):
                raise ValueError(f"einstein sum subscripts string included output subscript '{c}' which never "
                                 f"appeared in an input")
        if nbroad and not ell:
            raise ValueError("output has more dimensions than subscripts given in einstein sum, but no '...' "
                             "ellipsis provided to broadcast the extra dimensions.")
    return ins, out, nbroad


def _diagonalize(t, labels):
    """Repeated labels of one operand -> its diagonal (a view); returns (tensor, unique labels)."""
    labels = list(labels)
    while True:
        dup = next((c for i, c in enumerate(labels) if c in labels[i + 1:]), None)
        if dup is None:
            return t, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        if t.shape[i] != t.shape[j]:
            raise ValueError(f"dimensions in operand for collapsing index '{dup}' don't match "
                             f"({t.shape[i]} != {t.shape[j]})")
        t = torch.diagonal(t, dim1=i, dim2=j)
        labels = [c for k, c in enumerate(labels) if k not in (i, j)] + [dup]


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """Einstein summation (matches numpy.einsum, both calling forms; see the module docstring)."""
    subscripts, ops = _parse_args(operands)
    ts = [as_tensor(o) for o in ops]
    ins, outl, nbroad = _parse(subscripts, [t.ndim for t in ts])
    # ellipsis dims -> letters no subscript uses (right-aligned across operands, as broadcasting)
    used = {c for labels, _ in ins for c in labels} | set(outl)
    free = [c for c in _LETTERS if c not in used]
    if nbroad > len(free):
        raise ValueError("too many dimensions in einsum (more than 52 subscripts)")
    broad = free[:nbroad]
    full_out = []
    for c in outl:
        full_out.extend(broad if c == "." else [c])
    sizes = {}
    prepped = []
    for k, (t, (labels, ne)) in enumerate(zip(ts, ins)):
        lab = []
        for c in labels:
            lab.extend(broad[nbroad - ne:] if c == "." else [c])
        t, lab = _diagonalize(t, lab)
        for c, n in zip(lab, t.shape):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = n
            elif n != 1 and n != prev:
                raise ValueError(f"operands could not be broadcast together: subscript '{c}' has size {prev} and "
                                 f"{n} (operand {k})")
        prepped.append((t, lab))
    summed = {c for _, lab in prepped for c in lab} - set(full_out)
    # a single operand with nothing summed: NumPy returns a view (diagonal / transpose) of it in
    # its own dtype, whatever dtype= says
    if len(prepped) == 1 and not summed:
        t, lab = prepped[0]
        r = t.permute([lab.index(c) for c in full_out]) if full_out else t.reshape(())
        if out is not None:
            return result(r, out)
        if r._base is None:
            r = r.view(r.shape)
        res = wrap(r)
        if isinstance(ops[0], ndarray):
            res._b = ops[0]
        return res
    in_dtypes = [TORCH_TO_NP[t.dtype] for t in ts]
    if dtype is None:
        dt = np.result_type(*in_dtypes)
    else:
        dt = np.dtype(dtype)
        for d in in_dtypes:
            if not np.can_cast(d, dt, casting=casting):
                raise TypeError(f"Cannot cast einsum operand from dtype('{d}') to dtype('{dt}') according to the "
                                f"rule '{casting}'")
    to_dtype(dt)
    tdt = NP_TO_TORCH[dt]
    # the compute dtype: exact wraparound for ints (int64), logical for bool, float32 for float16
    if dt.kind in "iub":
        cdt = torch.int64
    elif dt == np.float16:
        cdt = torch.float32
    else:
        cdt = tdt
    args = []
    for t, _ in prepped:
        args.append(t.to(cdt))
    eq = ",".join("".join(lab) for _, lab in prepped) + "->" + "".join(full_out)
    try:
        r = f64(lambda *x: torch.einsum(eq, *x), *args)
    except RuntimeError as e:
        raise ValueError(f"einsum: {e}") from None
    if dt.kind == "b":
        r = r != 0
    elif r.dtype != tdt:
        r = r.to(tdt)
    r = r.contiguous()
    return result(r, out)
