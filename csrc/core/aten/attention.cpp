#include "core/aten/attention.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/DeviceGuard.h>

#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <vector>

#include "core/allocator/cpu_redirect.h"
#include "core/aten/attention_kernels.h"
#include "core/aten/cpu_alias.h"
#include "core/generator.h"
#include "core/graph/capture.h"
#include "core/stream.h"
#include "profiler/kernel_scope.h"

namespace npudist::core {
namespace {

// The capture the call records into (nullptr: run now, after the current stream's queued work).
graph::Capture* prepare(const at::Tensor& query, const char* op, bool dropout) {
  TORCH_CHECK(query.is_privateuseone(), op, " (npu kernel) called with a ", query.device(), " query");
  c10::DeviceIndex device = query.device().index();
  graph::Capture* capture = graph::anyCapture() ? graph::captureOfCurrent(device) : nullptr;
  if (C10_UNLIKELY(capture != nullptr)) {
    // The dropout (seed, offset) would have to be re-read at each replay.
    if (dropout)
      graph::failOnCapturingStream(capture, std::string(op) +
                                                " with dropout_p > 0 on npu (not capturable yet; see docs/graph.md, "
                                                "Limits)");
    return capture;
  }
  waitCurrentStream(device);
  return nullptr;
}

using Boxed = std::function<std::vector<c10::IValue>()>;

// Runs `kernel` (over CPU aliases of npu memory) now, as an npu kernel event for the profiler (with
// the op's arguments and results, boxed only when a step trace wants them), or records it into the
// capture for replay.
void runOrRecord(graph::Capture* capture, const at::Tensor& query, const char* op, int64_t wait_from, const Boxed& args,
                 const Boxed& results, std::function<void()> kernel) {
  c10::DeviceIndex device = query.device().index();
  if (capture) {
    graph::recordHost(*capture, op, std::move(kernel), currentStreamId(device));
    return;
  }
  RedirectToNpu redirect(device);
  std::vector<c10::IValue> in;
  if (profiler::kernelShapesWanted()) in = args();
  profiler::KernelScope timed(op, device, in.data(), in.size(), wait_from);
  kernel();
  if (timed.shapes()) {
    std::vector<c10::IValue> out = results();
    timed.outputs(out.data(), out.size());
  }
}

double softmaxScale(const at::Tensor& query, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(double(query.size(-1)));
}

at::Tensor longScalar(uint64_t v) { return at::scalar_tensor(int64_t(v), at::TensorOptions().dtype(at::kLong)); }

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> scaled_dot_product_efficient_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& attn_bias,
    bool compute_log_sumexp, double dropout_p, bool is_causal, std::optional<double> scale) {
  c10::DeviceGuard guard(query.device());
  const int64_t wait_from = profiler::waitStart();
  graph::Capture* capture = prepare(query, "aten::_scaled_dot_product_efficient_attention", dropout_p > 0.0);
  TORCH_CHECK(dropout_p >= 0.0 && dropout_p < 1.0,
              "_scaled_dot_product_efficient_attention: dropout_p must be in [0, 1), got ", dropout_p);
  TORCH_CHECK(query.dim() == 4, "_scaled_dot_product_efficient_attention on npu expects a 4-D query, got ", query.dim(),
              "-D");
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), Ev = value.size(-1);
  const int64_t S = key.dim() == 4 ? key.size(2) : 0;

  AttentionDropout dropout;
  dropout.p = dropout_p;
  if (dropout_p > 0.0) {
    // The mask covers B*H*L*S draws at the generator's (seed, offset); advancing past them keeps
    // the next random op's stream apart, as CUDA's Philox offset does.
    at::Generator gen = defaultNpuGenerator(query.device().index());
    auto* impl = gen.get<NpuGeneratorImpl>();
    std::lock_guard<std::mutex> lock(gen.mutex());
    dropout.seed = impl->current_seed();
    dropout.offset = impl->get_offset();
    impl->advance(uint64_t(B * H) * uint64_t(L) * uint64_t(S));
  }

  at::Tensor out = at::empty({B, L, H, Ev}, query.options()).transpose(1, 2);
  const int64_t lse_len = compute_log_sumexp ? (L + 31) / 32 * 32 : 0;
  at::Tensor lse = at::empty({B, H, lse_len}, query.options().dtype(at::kFloat));
  if (lse_len > L) lse.slice(2, L, lse_len).fill_(std::numeric_limits<float>::infinity());
  at::Tensor seed = longScalar(dropout.seed), offset = longScalar(dropout.offset);
  runOrRecord(
      capture, query, "aten::_scaled_dot_product_efficient_attention", wait_from,
      [&]() -> std::vector<c10::IValue> {
        return {query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale};
      },
      [&]() -> std::vector<c10::IValue> { return {out, lse, seed, offset}; },
      [q = cpuOrAlias(query), k = cpuOrAlias(key), v = cpuOrAlias(value), b = cpuOrAlias(attn_bias),
       s = softmaxScale(query, scale), is_causal, dropout, o = cpuOrAlias(out),
       l = compute_log_sumexp ? cpuOrAlias(lse) : at::Tensor()] {
        efficientAttentionForwardCpu(q, k, v, b, s, is_causal, dropout, o, l);
      });
  return {out, lse, seed, offset};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> scaled_dot_product_efficient_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, double dropout_p, std::array<bool, 4> grad_input_mask, bool is_causal,
    std::optional<double> scale) {
  c10::DeviceGuard guard(query.device());
  const int64_t wait_from = profiler::waitStart();
  graph::Capture* capture = prepare(query, "aten::_scaled_dot_product_efficient_attention_backward", dropout_p > 0.0);
  if (!grad_out.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  AttentionDropout dropout;
  dropout.p = dropout_p;
  if (dropout_p > 0.0) {
    TORCH_CHECK(
        philox_seed.defined() && philox_offset.defined() && philox_seed.numel() == 1 && philox_offset.numel() == 1,
        "_scaled_dot_product_efficient_attention_backward on npu: dropout needs the forward's philox_seed "
        "and philox_offset (0-dim int64 tensors)");
    dropout.seed = uint64_t(philox_seed.item<int64_t>());
    dropout.offset = uint64_t(philox_offset.item<int64_t>());
  }
  // Gradients laid out as (B, seq, H, dim), as CUDA's kernel and the meta function give them.
  auto like = [](const at::Tensor& t) {
    return at::empty({t.size(0), t.size(2), t.size(1), t.size(3)}, t.options()).transpose(1, 2);
  };
  at::Tensor gq = like(query), gk = like(key), gv = like(value), gb;
  std::optional<at::Tensor> bias;
  if (attn_bias.defined()) {
    bias = attn_bias;
    if (grad_input_mask[3])
      gb = at::empty({query.size(0), query.size(1), query.size(2), key.size(2)}, attn_bias.options());
  }
  runOrRecord(
      capture, query, "aten::_scaled_dot_product_efficient_attention_backward", wait_from,
      [&]() -> std::vector<c10::IValue> {
        return {grad_out,
                query,
                key,
                value,
                attn_bias,
                out,
                logsumexp,
                philox_seed,
                philox_offset,
                dropout_p,
                c10::List<bool>({grad_input_mask[0], grad_input_mask[1], grad_input_mask[2], grad_input_mask[3]}),
                is_causal,
                scale};
      },
      [&]() -> std::vector<c10::IValue> { return {gq, gk, gv, gb}; },
      [g = cpuOrAlias(grad_out), q = cpuOrAlias(query), k = cpuOrAlias(key), v = cpuOrAlias(value),
       b = cpuOrAlias(bias), o = cpuOrAlias(out), l = cpuOrAlias(logsumexp), s = softmaxScale(query, scale), is_causal,
       dropout, gq = cpuOrAlias(gq), gk = cpuOrAlias(gk), gv = cpuOrAlias(gv),
       gb = gb.defined() ? cpuOrAlias(gb) : at::Tensor()] {
        efficientAttentionBackwardCpu(g, q, k, v, b, o, l, s, is_causal, dropout, gq, gk, gv, gb);
      });
  return {grad_input_mask[0] ? gq : at::Tensor(), grad_input_mask[1] ? gk : at::Tensor(),
          grad_input_mask[2] ? gv : at::Tensor(), gb};
}

}  // namespace npudist::core
