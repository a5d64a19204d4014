#include "core/aten/cpu_kernel_routing.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <mutex>
#include <set>
#include <string>

#include "core/aten/fallback.h"
#include "core/aten/random_ops.h"

namespace npudist::core {
namespace {

bool returnsView(const c10::FunctionSchema& schema) {
  for (const auto& ret : schema.returns()) {
    const c10::AliasInfo* info = ret.alias_info();
    if (info && !info->isWrite()) return true;
  }
  return false;
}

// Ops whose npu behaviour must not be the CPU kernel's.
const std::set<std::string>& excluded() {
  static const std::set<std::string> names = {
      "aten::_efficientzerotensor",  // native: a zero tensor has no memory
      "aten::from_file",             // creates CPU storage from a file
  };
  return names;
}

}  // namespace

int routeCpuKernelOpsToFallback() {
  static int routed = -1;
  static std::once_flag once;
  std::call_once(once, [] {
    static auto* lib =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    routed = 0;
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0 || excluded().count(name.name)) continue;
      std::optional<c10::OperatorHandle> op = dispatcher.findSchema(name);
      if (!op) continue;
      if (!op->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) || returnsView(op->schema()))
        continue;
      std::string qualified = name.name.substr(6);
      if (!name.overload_name.empty()) qualified += "." + name.overload_name;
      if (takesGenerator(op->schema()))
        lib->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&npuRandomFallback>());
      else
        lib->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&npuFallback>());
      ++routed;
    }
    // Composite kernels (no CPU kernel of their own) that reject any device but cpu/cuda/xpu:
    // torch.mode(x, out=...) raised "mode only supports CPU, CUDA and XPU device type, got: npu"
    // (test_reductions.py test_mode, test_dim_reduction). Run on the cpu aliases, they pass.
    for (const char* name : {"mode.values"}) {
      lib->impl(name, torch::CppFunction::makeFromBoxedFunction<&npuFallback>());
      ++routed;
    }
  });
  return routed;
}

}  // namespace npudist::core
