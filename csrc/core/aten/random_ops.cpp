#include "core/aten/random_ops.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>

#include <mutex>

#include "core/aten/fallback.h"
#include "core/device.h"
#include "core/generator.h"
#include "core/graph/capture.h"
#include "core/stream.h"

namespace npudist::core {
namespace {

bool isGeneratorArg(const c10::Argument& arg) {
  const c10::TypePtr& t = arg.type();
  if (t->kind() == c10::TypeKind::GeneratorType) return true;
  if (auto opt = t->cast<c10::OptionalType>()) return opt->getElementType()->kind() == c10::TypeKind::GeneratorType;
  return false;
}

// The npu device the call works on: of its first npu tensor, else its npu
// Device argument (current device when unindexed); -1 if it names no npu.
c10::DeviceIndex deviceOfCall(const torch::jit::Stack& stack, size_t first, size_t n) {
  for (size_t i = first; i < first + n; ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor() && v.toTensor().is_privateuseone()) return v.toTensor().device().index();
    if (v.isDevice() && v.toDevice().is_privateuseone())
      return v.toDevice().has_index() ? v.toDevice().index() : currentDevice();
  }
  return -1;
}

uint64_t valuesProduced(const torch::jit::Stack& stack, size_t num_returns) {
  uint64_t n = 0;
  for (size_t i = stack.size() - num_returns; i < stack.size(); ++i) {
    if (stack[i].isTensor()) n = std::max<uint64_t>(n, uint64_t(stack[i].toTensor().numel()));
  }
  return n;
}

}  // namespace

bool takesGenerator(const c10::FunctionSchema& schema) {
  for (const auto& arg : schema.arguments())
    if (isGeneratorArg(arg)) return true;
  return false;
}

void npuRandomFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  size_t num_args = schema.arguments().size();
  size_t first = stack->size() - num_args;
  size_t gen_index = num_args;
  for (size_t i = 0; i < num_args; ++i)
    if (isGeneratorArg(schema.arguments()[i])) gen_index = i;
  TORCH_INTERNAL_ASSERT(gen_index < num_args);

  c10::IValue& gen_arg = (*stack)[first + gen_index];
  c10::DeviceIndex device = deviceOfCall(*stack, first, num_args);
  // Reached only because an npu generator was passed with cpu tensors (the
  // generator's key picks the backend): refuse, as CUDA and CPU kernels do.
  TORCH_CHECK(device >= 0, "Expected a 'cpu' device type for generator but found 'npu' (", schema.name(),
              " on cpu tensors needs a cpu generator, or create the tensors on npu)");
  at::Generator gen;
  if (gen_arg.isGenerator()) {
    gen = gen_arg.toGenerator();
    TORCH_CHECK(gen.device().is_privateuseone(), "Expected a 'npu' device type for generator but found '",
                gen.device().type(), "' (", schema.name(), " on npu tensors needs torch.Generator(device='npu'))");
  } else {
    gen = defaultNpuGenerator(device);
  }
  if (C10_UNLIKELY(graph::anyCapture()) && !inDeferredWork()) {
    if (graph::Capture* c = graph::captureOfCurrent(device)) {
      // The generator's state is read at each replay, not now.
      graph::recordOp(*c, op, stack, currentStreamId(device), &gen, gen_index);
      return;
    }
  }
  auto* impl = gen.get<NpuGeneratorImpl>();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen_arg = impl->engine();
  npuFallback(op, stack);
  impl->advance(valuesProduced(*stack, schema.returns().size()));
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (input.numel() == 0 || !train.value_or(true) || p == 0) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  double keep = 1.0 - p;
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool), at::MemoryFormat::Contiguous);
  mask.bernoulli_(keep);
  at::Tensor output = keep == 0 ? input.mul(0) : input.mul(mask).mul_(1.0 / keep);
  return {output, mask};
}

}  // namespace npudist::core
