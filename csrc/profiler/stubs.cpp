// The profiler stubs PyTorch uses for PrivateUse1 when Kineto is not
// (torch.autograd.profiler.profile(use_device="npu", use_kineto=False)):
// the legacy profiler records an event at the start and at the end of each op
// and reports elapsed(start, end) as the op's device time.
//
// Kernels on the simulated npu run synchronously on the calling thread, so the
// device reaches an event recorded on the current stream when the host does:
// the event holds the wall-clock time of record(). Deferred work (collectives
// on other streams) is not included in an op's figure, as with CUDA events
// recorded on the op's own stream.
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "core/device.h"
#include "profiler/stubs.h"

namespace npudist::profiler {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

struct NpuStubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    if (device) *device = core::currentDevice();
    int64_t now = int64_t(c10::getTime());
    if (event) *event = std::make_shared<int64_t>(now);
    if (cpu_ns) *cpu_ns = now;
  }

  // Microseconds between two events, as PyTorch's CUDA stubs report.
  float elapsed(const ProfilerVoidEventStub* a, const ProfilerVoidEventStub* b) const override {
    TORCH_CHECK(a && b && *a && *b, "npu profiler: elapsed() between events that were not recorded");
    int64_t start = *static_cast<const int64_t*>(a->get());
    int64_t end = *static_cast<const int64_t*>(b->get());
    return float(end - start) / 1000.0f;
  }

  // NVTX-style markers have no npu tool to go to.
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    c10::DeviceIndex saved = core::currentDevice();
    for (c10::DeviceIndex d = 0; d < core::deviceCount(); ++d) {
      core::setDevice(d);
      op(d);
    }
    core::setDevice(saved);
  }

  void synchronize() const override {
    c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->synchronizeDevice(core::currentDevice());
  }
};

}  // namespace

torch::profiler::impl::ProfilerStubs* npuProfilerStubs() {
  static NpuStubs stubs;
  return &stubs;
}

}  // namespace npudist::profiler
