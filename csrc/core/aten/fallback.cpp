#include "core/aten/fallback.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include <optional>

#include "core/allocator/cpu_redirect.h"
#include "core/aten/cpu_alias.h"
#include "core/device.h"
#include "core/graph/capture.h"
#include "core/stream.h"
#include "profiler/kernel_scope.h"

namespace npudist::core {
namespace {

// One CPU storage per npu storage: kernels that compare storages (memory
// overlap checks, is_set_to) see the same relations as on the npu side.
struct AliasedStorage {
  c10::StorageImpl* npu;
  c10::Storage cpu;
};

struct AliasedTensor {
  at::Tensor npu;
  at::Tensor cpu;
  size_t storage;  // index into storages_
  bool written;
};

// CUDA kernels accept CPU index tensors for these (and empty_quantized reads
// only the quantizer of its template tensor: q.to("npu")); every other op, as on
// CUDA, rejects a CPU tensor with more than zero dimensions beside npu tensors.
bool acceptsCpuTensors(const c10::OperatorHandle& op) {
  const std::string& name = op.schema().name();
  return name == "aten::index" || name == "aten::index_put_" || name == "aten::index_put" ||
         name == "aten::_index_put_impl_" || name == "aten::empty_quantized";
}

// Replaces a Tensor or Tensor[] value with f applied to each tensor; false
// for any other kind of value.
template <typename F>
bool mapTensors(c10::IValue& v, F f) {
  if (v.isTensor()) {
    v = f(v.toTensor());
    return true;
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> list = v.toTensorList();
    c10::List<at::Tensor> out;
    out.reserve(list.size());
    for (const at::Tensor& t : list) out.push_back(f(t));
    v = std::move(out);
    return true;
  }
  return false;
}

class FallbackCall {
 public:
  FallbackCall(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DispatchKey cpu_key)
      : op_(op), stack_(stack), cpu_key_(cpu_key) {}

  void run() {
    const auto& schema = op_.schema();
    size_t num_args = schema.arguments().size();
    size_t first = stack_->size() - num_args;
    for (size_t i = 0; i < num_args; ++i) {
      const c10::AliasInfo* info = schema.arguments()[i].alias_info();
      prepare((*stack_)[first + i], info && info->isWrite());
    }
    checkCpuMixing();
    c10::DeviceIndex device = device_ >= 0 ? device_ : currentDevice();
    c10::DeviceGuard guard(npuDevice(device));
    const int64_t wait_from = profiler::waitStart();
    waitCurrentStream(device);
    {
      profiler::KernelScope timed(schema.name(), device, stack_->data() + first, num_args, wait_from);
      std::optional<RedirectToNpu> redirect;
      if (!cpu_target_) redirect.emplace(device);
      op_.redispatchBoxed(c10::DispatchKeySet(cpu_key_), stack_);
      if (timed.shapes()) {
        size_t n = schema.returns().size();
        timed.outputs(stack_->data() + stack_->size() - n, n);
      }
    }
    for (const AliasedStorage& s : storages_) syncStorageBack(s.npu, s.cpu);
    for (const AliasedTensor& a : tensors_) {
      if (a.written) syncTensorBack(a.npu, a.cpu, storages_[a.storage].cpu.unsafeGetStorageImpl());
    }
    size_t num_returns = schema.returns().size();
    for (size_t i = stack_->size() - num_returns; i < stack_->size(); ++i) wrapOutput((*stack_)[i], device);
  }

 private:
  void noteDevice(const at::Tensor& t) {
    c10::DeviceIndex d = t.device().index();
    if (device_ < 0) {
      device_ = d;
    } else {
      TORCH_CHECK(d == device_, "Expected all tensors to be on the same device, but found at least two devices, ",
                  npuDevice(device_), " and ", t.device(), "! (in ", op_.schema().name(), ")");
    }
  }

  size_t storageIndex(const at::Tensor& t) {
    c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
    for (size_t i = 0; i < storages_.size(); ++i) {
      if (storages_[i].npu == s) return i;
    }
    storages_.push_back({s, aliasStorageAsCpu(t.storage())});
    return storages_.size() - 1;
  }

  at::Tensor aliasTensor(const at::Tensor& t, bool written) {
    if (!t.defined()) return t;
    if (!t.is_privateuseone()) {
      if (t.is_cpu() && written)
        cpu_written_ = t.device();  // out= / in-place on cpu: never, even 0-dim
      else if (t.dim() > 0 && t.is_cpu())
        cpu_seen_ = t.device();
      return t;
    }
    noteDevice(t);
    for (AliasedTensor& a : tensors_) {  // the same tensor twice: one alias
      if (a.npu.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
        a.written = a.written || written;
        return a.cpu;
      }
    }
    size_t s = storageIndex(t);
    at::Tensor cpu = cpuTensorOver(storages_[s].cpu, t);
    tensors_.push_back({t, cpu, s, written});
    return cpu;
  }

  void prepare(c10::IValue& v, bool written) {
    if (mapTensors(v, [&](const at::Tensor& t) { return aliasTensor(t, written); })) return;
    if (v.isList()) {
      c10::List<c10::IValue> list = v.toList();
      bool has_tensor = false;
      for (const c10::IValue& e : list) has_tensor = has_tensor || e.isTensor();
      if (!has_tensor) return;
      c10::List<std::optional<at::Tensor>> out;
      for (const c10::IValue& e : list) {
        if (e.isTensor())
          out.push_back(aliasTensor(e.toTensor(), written));
        else
          out.push_back(std::nullopt);
      }
      v = std::move(out);
    } else if (v.isDevice()) {
      c10::Device d = v.toDevice();
      if (d.type() == c10::DeviceType::CPU) {
        cpu_target_ = true;  // e.g. empty_quantized(..., device="cpu") from q.cpu(): the result is a cpu tensor
      } else if (d.type() == c10::DeviceType::PrivateUse1) {
        if (d.has_index()) {
          checkDeviceIndex(d.index());
          if (device_ < 0) device_ = d.index();
        }
        v = c10::Device(c10::DeviceType::CPU);
      }
    }
  }

  void checkCpuMixing() {
    // As on CUDA, a 0-dim cpu tensor may be read beside npu tensors (a scalar), but an npu op
    // never writes into a cpu tensor: the cpu kernel would resize it from npu memory.
    TORCH_CHECK(!cpu_written_ || device_ < 0,
                "Expected all tensors to be on the same device, but found at least two "
                "devices, ",
                npuDevice(device_ < 0 ? 0 : device_), " and ", cpu_written_ ? *cpu_written_ : c10::Device("cpu"),
                "! (in ", op_.schema().name(), ": its output/in-place argument is a cpu tensor; pass an npu tensor)");
    if (!cpu_seen_ || device_ < 0 || acceptsCpuTensors(op_)) return;
    TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ",
                npuDevice(device_), " and ", *cpu_seen_, "! (in ", op_.schema().name(),
                "; move the cpu tensor with .to('npu') first)");
  }

  at::Tensor wrapTensor(const at::Tensor& t, c10::DeviceIndex device) {
    if (!t.defined() || !t.is_cpu()) return t;
    TORCH_CHECK_NOT_IMPLEMENTED(t.layout() == c10::Layout::Strided, op_.schema().name(), " produced a ", t.layout(),
                                " tensor: npu supports only strided (dense) tensors; keep sparse work on cpu");
    for (const AliasedTensor& a : tensors_) {
      if (a.cpu.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) return a.npu;  // in-place / out=
    }
    c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
    for (const AliasedStorage& s : storages_) {
      if (s.cpu.unsafeGetStorageImpl() == storage)  // a view of an input
        return npuTensorOver(c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(s.npu)), t);
    }
    if (cpu_target_) return t;
    return adoptCpuResult(t, device);
  }

  void wrapOutput(c10::IValue& v, c10::DeviceIndex device) {
    mapTensors(v, [&](const at::Tensor& t) { return wrapTensor(t, device); });
  }

  const c10::OperatorHandle& op_;
  torch::jit::Stack* stack_;
  c10::DispatchKey cpu_key_;  // CPU, or QuantizedCPU for calls entered through QuantizedPrivateUse1
  c10::DeviceIndex device_ = -1;
  std::optional<c10::Device> cpu_seen_;
  std::optional<c10::Device> cpu_written_;
  bool cpu_target_ = false;  // a device argument names cpu: fresh outputs stay cpu tensors
  c10::SmallVector<AliasedStorage, 4> storages_;
  c10::SmallVector<AliasedTensor, 4> tensors_;
};

}  // namespace

namespace {

// The npu device a call works on: of its first npu tensor, else current.
c10::DeviceIndex deviceOfArgs(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  size_t n = op.schema().arguments().size();
  for (size_t i = stack.size() - n; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor() && v.toTensor().is_privateuseone()) return v.toTensor().device().index();
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList())
        if (t.defined() && t.is_privateuseone()) return t.device().index();
  }
  return currentDevice();
}

}  // namespace

namespace {

void runFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DispatchKey cpu_key) {
  // A capturing stream records the kernel instead of running it (docs/graph.md).
  if (C10_UNLIKELY(graph::anyCapture()) && !inDeferredWork()) {
    c10::DeviceIndex d = deviceOfArgs(op, *stack);
    if (graph::Capture* c = graph::captureOfCurrent(d)) {
      // Replay runs recorded kernels through the CPU key; QuantizedCPU kernels are not recorded.
      if (cpu_key == c10::DispatchKey::QuantizedCPU)
        graph::failOnCapturingStream(c,
                                     c10::str(op.schema().name(),
                                              " on a quantized npu tensor: ops on quantized "
                                              "tensors cannot be captured in an npu graph; run them outside capture"));
      graph::recordOp(*c, op, stack, currentStreamId(d));
      return;
    }
  }
  FallbackCall(op, stack, cpu_key).run();
}

}  // namespace

void npuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  runFallback(op, stack, c10::DispatchKey::CPU);
}

void npuQuantizedFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  runFallback(op, stack, c10::DispatchKey::QuantizedCPU);
}

}  // namespace npudist::core
