"""torch_npu's MoE routing ops: gating top-k softmax, init/finalize routing, token permute/unpermute.

Semantics follow torch_npu's documented reference computations (index outputs
are int32, as there); kernels compose torch ops (argsort, index_select, topk),
so they run on npu and autograd flows through the token paths.

- ``npu_moe_gating_top_k_softmax(x, finished=None, k=1)`` -> (y, expert_idx,
  row_idx): softmax over the last dim (in float32), top-k values in x's dtype,
  their indices, and row_idx[i, j] = j * rows + i. ``finished`` is not supported.
- ``npu_moe_init_routing(x, row_idx, expert_idx, active_num)`` -> (expanded_x,
  expanded_row_idx, expanded_expert_idx): rows sorted (stably) by expert;
  expanded_row_idx[src] = its position; the first min(active_num, rows) * k rows.
- ``npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales,
  expanded_src_to_dst_row, export_for_source_row, drop_pad_mode=0, k=1)``:
  out[i] = skip1[i] + skip2[i] + sum_k scales[i,k] * (rows[src_to_dst[k*N+i]] +
  bias[expert[i,k]]) (column order; drop_pad_mode 2/3 read src_to_dst row by
  row); a -1 index contributes a zero row (plus its bias), as documented.
- ``npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False)``
  -> (permuted_tokens, sorted_indices): tokens grouped by expert (stable);
  sorted_indices[src slot] = its row in permuted_tokens (int32). num_out_tokens
  None or 0 keeps all rows, N keeps the first N (the rest are dropped).
- ``npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None,
  padded_mode=False, restore_shape=None)``: the inverse, summing each token's
  top-k rows weighted by probs; dropped slots contribute zero. padded_mode
  (indices [experts, capacity]) scatter-adds into ``restore_shape``.
"""
from __future__ import annotations

import torch

from npudist.compat.ops._lib import define, unsupported


def npu_moe_gating_top_k_softmax(x, finished=None, k=1):
    if finished is not None:
        raise unsupported("npu_moe_gating_top_k_softmax", "finished")
    if not 0 < k <= x.shape[-1]:
        raise ValueError(f"torch_npu.npu_moe_gating_top_k_softmax: k={k} must be in 1..{x.shape[-1]}")
    y, idx = torch.softmax(x.float(), dim=-1).topk(k, dim=-1)
    rows = x.numel() // x.shape[-1]
    row_idx = torch.arange(rows * k, device=x.device, dtype=torch.int32).reshape(k, rows).t()
    return y.to(x.dtype), idx.to(torch.int32), row_idx.reshape(*x.shape[:-1], k)


def npu_moe_init_routing(x, row_idx, expert_idx, active_num):
    num_rows, k = x.shape[0], expert_idx.shape[-1]
    flat = expert_idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    expanded_expert_idx = flat.index_select(0, order).to(torch.int32)
    dst_to_src = row_idx.reshape(-1).long().index_select(0, order)
    expanded_row_idx = torch.empty_like(dst_to_src, dtype=torch.int32)
    expanded_row_idx[dst_to_src] = torch.arange(dst_to_src.numel(), device=x.device, dtype=torch.int32)
    active = min(int(active_num), num_rows) * k
    expanded_x = x.index_select(0, dst_to_src[:active] % num_rows)
    return expanded_x, expanded_row_idx, expanded_expert_idx


def npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                             export_for_source_row, drop_pad_mode=0, k=1):
    if drop_pad_mode not in (None, 0, 1, 2, 3):
        raise ValueError(f"torch_npu.npu_moe_finalize_routing: drop_pad_mode must be 0-3, got {drop_pad_mode}")
    kk = scales.shape[1] if scales is not None else int(k or 1)
    nk = expanded_src_to_dst_row.numel()
    num_rows = nk // kk
    h = expanded_permuted_rows.shape[-1]
    rows = expanded_permuted_rows.reshape(-1, h)
    idx = expanded_src_to_dst_row.reshape(-1).long()
    idx = idx.reshape(num_rows, kk) if drop_pad_mode in (2, 3) else idx.reshape(kk, num_rows).t()
    valid = (idx >= 0).unsqueeze(-1)
    gathered = rows.index_select(0, idx.clamp(min=0).reshape(-1)).reshape(num_rows, kk, h) * valid
    if bias is not None:
        if export_for_source_row is None:
            raise ValueError("torch_npu.npu_moe_finalize_routing: bias needs export_for_source_row (the experts)")
        gathered = gathered + bias.index_select(0, export_for_source_row.reshape(-1).long()).reshape(num_rows, kk, h)
    if scales is not None:
        gathered = gathered * scales.unsqueeze(-1).to(gathered.dtype)
    out = gathered.sum(dim=1)
    for skip in (skip1, skip2):
        if skip is not None:
            out = out + skip
    return out


def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    if padded_mode:
        return tokens.index_select(0, indices.reshape(-1).long()), indices
    topk = 1 if indices.dim() == 1 else indices.shape[1]
    flat = indices.reshape(-1)
    order = torch.argsort(flat, stable=True)
    if num_out_tokens:
        order = order[: int(num_out_tokens)]
    permuted = tokens.index_select(0, torch.div(order, topk, rounding_mode="floor"))
    inverse = torch.argsort(torch.argsort(flat, stable=True), stable=True).to(torch.int32)
    return permuted, inverse


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    if padded_mode:
        if probs is None or restore_shape is None:
            raise ValueError("torch_npu.npu_moe_token_unpermute: padded_mode=True needs probs and restore_shape")
        h = permuted_tokens.shape[-1]
        index = sorted_indices.reshape(-1, 1).long().expand(-1, h)
        combined = probs.reshape(-1, 1).to(permuted_tokens.dtype) * permuted_tokens
        out = permuted_tokens.new_zeros(list(restore_shape))
        return out.scatter_add(0, index, combined)
    topk = probs.shape[1] if probs is not None else 1
    idx = sorted_indices.reshape(-1).long()
    p = permuted_tokens.shape[0]
    rows = permuted_tokens.index_select(0, idx.clamp(max=max(p - 1, 0)))
    if idx.numel() and int(idx.max()) >= p:  # slots dropped by num_out_tokens contribute nothing
        rows = rows * (idx < p).unsqueeze(-1).to(rows.dtype)
    rows = rows.reshape(idx.numel() // topk, topk, permuted_tokens.shape[-1])
    if probs is not None:
        rows = rows * probs.unsqueeze(-1).to(rows.dtype)
    return rows.sum(dim=1)


define("npu_moe_gating_top_k_softmax(Tensor x, Tensor? finished=None, int k=1) -> (Tensor, Tensor, Tensor)",
       npu_moe_gating_top_k_softmax)
define("npu_moe_init_routing(Tensor x, Tensor row_idx, Tensor expert_idx, int active_num) -> (Tensor, Tensor, Tensor)",
       npu_moe_init_routing)
define("npu_moe_finalize_routing(Tensor expanded_permuted_rows, Tensor? skip1, Tensor? skip2, Tensor? bias, "
       "Tensor? scales, Tensor expanded_src_to_dst_row, Tensor? export_for_source_row, int? drop_pad_mode=0, "
       "int? k=1) -> Tensor", npu_moe_finalize_routing)
define("npu_moe_token_permute(Tensor tokens, Tensor indices, int? num_out_tokens=None, bool padded_mode=False) "
       "-> (Tensor, Tensor)", npu_moe_token_permute)
define("npu_moe_token_unpermute(Tensor permuted_tokens, Tensor sorted_indices, Tensor? probs=None, "
       "bool padded_mode=False, int[]? restore_shape=None) -> Tensor", npu_moe_token_unpermute)
