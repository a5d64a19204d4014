"""``npu_grouped_matmul``: y_i = x_i @ weight_i (+ bias_i) for groups of matmuls (torch_npu's schema).

Supported (the float paths MoE training uses):
- no grouping (``group_list`` None, ``group_type`` None/-1): ``x`` and ``weight``
  are lists of equal length, pairwise matmuls (x_i may have 2-6 dims);
- m-axis grouping (``group_type`` 0, or None with a ``group_list``): a single
  ``x`` [M, K] is split by rows into groups; ``group_list`` is a Tensor of
  cumulative ends (``group_list_type`` 0, the default) or of group sizes (1), or
  a list of cumulative ends (the ``.List`` overload). Rows past the last group's
  end give zero rows in the concatenated output;
- ``weight`` as a list of [K, N] tensors or one [G, K, N] tensor; ``bias`` as a
  list of [N] tensors or one [G, N] tensor;
- ``split_item`` 0/1: one output per group; 2/3: one output, the groups
  concatenated along M.

Not supported (NotImplementedError naming the argument): k-axis grouping
(``group_type`` 2), ``group_list_type`` 2, the quantisation arguments (scale,
offset, antiquant_*, per_token_scale, activation_*), ``act_type`` != 0, and
an ``output_dtype`` other than x's dtype. Autograd comes from the composed
torch ops (CompositeImplicitAutograd).
"""
from __future__ import annotations

import torch

from npudist.compat.ops._lib import define, unsupported

_OP = "npu_grouped_matmul"
_COMMON = ("Tensor[]? bias=None, Tensor[]? scale=None, Tensor[]? offset=None, Tensor[]? antiquant_scale=None, "
           "Tensor[]? antiquant_offset=None, Tensor[]? per_token_scale=None, {group_list}, "
           "Tensor[]? activation_input=None, Tensor[]? activation_quant_scale=None, "
           "Tensor[]? activation_quant_offset=None, int? split_item=0, int? group_type=None, "
           "int? group_list_type=0, int? act_type=0")
SCHEMA = (f"{_OP}(Tensor[] x, Tensor[] weight, *, {_COMMON.format(group_list='Tensor? group_list=None')}, "
          "int[]? tuning_config=None, int? output_dtype=None, int? x_dtype=None, int? weight_dtype=None, "
          "int? scale_dtype=None, int? per_token_scale_dtype=None) -> Tensor[]")
SCHEMA_LIST = (f"{_OP}.List(Tensor[] x, Tensor[] weight, *, {_COMMON.format(group_list='int[]? group_list=None')}, "
               "ScalarType? output_dtype=None) -> Tensor[]")


def _per_group(tensors, g, what):
    if tensors is None or len(tensors) == 0:
        return [None] * g
    tensors = list(tensors)
    if len(tensors) == 1 and g > 1:
        return list(tensors[0].unbind(0))
    if len(tensors) != g:
        raise ValueError(f"torch_npu.{_OP}: {what} has {len(tensors)} tensors, expected {g} (one per group)")
    return tensors


def _sizes(group_list, group_list_type, m):
    if isinstance(group_list, torch.Tensor):
        if group_list.dim() != 1:
            raise unsupported(_OP, "group_list_type=2", "[E, 2] group lists") if group_list_type == 2 else \
                ValueError(f"torch_npu.{_OP}: group_list must be 1-D, got shape {tuple(group_list.shape)}")
        values = [int(v) for v in group_list.tolist()]
    else:
        values = [int(v) for v in group_list]
    if group_list_type == 1:
        sizes = values
    elif group_list_type in (0, None):
        sizes = [b - a for a, b in zip([0] + values[:-1], values)]
    else:
        raise unsupported(_OP, f"group_list_type={group_list_type}")
    if any(s < 0 for s in sizes) or sum(sizes) > m:
        raise ValueError(f"torch_npu.{_OP}: group_list {values} (group_list_type={group_list_type}) does not "
                         f"describe non-negative groups within the {m} rows of x")
    return sizes


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None,
                       antiquant_offset=None, per_token_scale=None, group_list=None, activation_input=None,
                       activation_quant_scale=None, activation_quant_offset=None, split_item=0, group_type=None,
                       group_list_type=0, act_type=0, tuning_config=None, output_dtype=None, x_dtype=None,
                       weight_dtype=None, scale_dtype=None, per_token_scale_dtype=None):
    """Grouped matmuls, as torch_npu.npu_grouped_matmul (module docstring: what is supported).

    Returns a list of tensors: one per group (split_item 0/1) or one (2/3).
    """
    for name, value in (("scale", scale), ("offset", offset), ("antiquant_scale", antiquant_scale),
                        ("antiquant_offset", antiquant_offset), ("per_token_scale", per_token_scale),
                        ("activation_input", activation_input), ("activation_quant_scale", activation_quant_scale),
                        ("activation_quant_offset", activation_quant_offset)):
        if value is not None and len(value) > 0:
            raise unsupported(_OP, name, "quantised grouped matmul")
    if act_type not in (None, 0):
        raise unsupported(_OP, f"act_type={act_type}")
    if group_type == 2:
        raise unsupported(_OP, "group_type=2", "k-axis grouping")
    xs = list(x)
    if not xs or not weight:
        raise ValueError(f"torch_npu.{_OP}: x and weight must be non-empty lists of tensors")
    if output_dtype is not None and output_dtype != xs[0].dtype:
        raise unsupported(_OP, f"output_dtype={output_dtype}", "outputs have x's dtype")
    ws = list(weight)
    if len(ws) == 1 and ws[0].dim() == 3:
        ws = list(ws[0].unbind(0))
    g = len(ws)
    bs = _per_group(bias, g, "bias")
    tail = None
    if group_list is None and group_type in (None, -1):
        if len(xs) != g:
            raise ValueError(f"torch_npu.{_OP}: {len(xs)} x tensors for {g} weights (without group_list they pair up)")
        groups = xs
    elif len(xs) == 1:
        if group_list is None:
            raise ValueError(f"torch_npu.{_OP}: group_type=0 needs a group_list")
        m = xs[0].shape[0]
        sizes = _sizes(group_list, group_list_type, m)
        if len(sizes) != g:
            raise ValueError(f"torch_npu.{_OP}: group_list describes {len(sizes)} groups for {g} weights")
        pieces = list(xs[0].split(sizes + [m - sum(sizes)], dim=0))
        groups, rest = pieces[:g], pieces[g]
        if rest.shape[0]:
            tail = rest.new_zeros((rest.shape[0], ws[0].shape[-1]))
    else:
        groups = xs
        if len(groups) != g:
            raise ValueError(f"torch_npu.{_OP}: {len(groups)} x tensors for {g} weights")
    ys = []
    for xi, wi, bi in zip(groups, ws, bs):
        y = torch.matmul(xi, wi)
        ys.append(y if bi is None else y + bi)
    if split_item in (2, 3):
        return [torch.cat(ys + ([tail] if tail is not None else []), dim=0)]
    return ys


def _list_overload(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
                   per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
                   activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0,
                   output_dtype=None):
    return npu_grouped_matmul(x, weight, bias=bias, scale=scale, offset=offset, antiquant_scale=antiquant_scale,
                              antiquant_offset=antiquant_offset, per_token_scale=per_token_scale,
                              group_list=group_list, activation_input=activation_input,
                              activation_quant_scale=activation_quant_scale,
                              activation_quant_offset=activation_quant_offset, split_item=split_item,
                              group_type=0 if group_list is not None and group_type is None else group_type,
                              group_list_type=0, act_type=act_type, output_dtype=output_dtype)


define(SCHEMA, npu_grouped_matmul)
define(SCHEMA_LIST, _list_overload)
