#include "core/guard.h"

#include "core/allocator/caching_allocator.h"
#include "core/device.h"
#include "core/graph/capture_state.h"
#include "core/npu_check.h"
#include "core/stream.h"
#include "profiler/recorder.h"

namespace npudist::core {

namespace {
driver::Driver& drv() { return driver::getDriver(); }

void checkNpu(const c10::Device& d) {
  TORCH_CHECK(d.type() == c10::DeviceType::PrivateUse1, "expected an npu device, got ", d);
}

c10::DeviceIndex indexOf(const c10::Device& d) { return d.has_index() ? d.index() : currentDevice(); }
}  // namespace

c10::Device NpuGuardImpl::exchangeDevice(c10::Device d) const {
  checkNpu(d);
  c10::Device old = getDevice();
  if (old.index() != d.index()) setDevice(d);
  return old;
}

c10::Device NpuGuardImpl::getDevice() const { return npuDevice(currentDevice()); }

void NpuGuardImpl::setDevice(c10::Device d) const {
  checkNpu(d);
  core::setDevice(d.index());
}

void NpuGuardImpl::uncheckedSetDevice(c10::Device d) const noexcept { (void)drv().setDevice(d.index()); }

// A device without an index means the current npu, as for CUDA.
c10::Stream NpuGuardImpl::getStream(c10::Device d) const { return currentStream(indexOf(d)); }
c10::Stream NpuGuardImpl::getDefaultStream(c10::Device d) const { return defaultStream(indexOf(d)); }
c10::Stream NpuGuardImpl::getStreamFromGlobalPool(c10::Device d, bool) const { return streamFromPool(indexOf(d)); }
c10::Stream NpuGuardImpl::getNewStream(c10::Device d, int priority) const { return newStream(indexOf(d), priority); }
c10::Stream NpuGuardImpl::exchangeStream(c10::Stream s) const { return core::exchangeStream(s); }
c10::DeviceIndex NpuGuardImpl::deviceCount() const noexcept { return deviceCountNoThrow(); }

void NpuGuardImpl::destroyEvent(void* event, const c10::DeviceIndex) const noexcept {
  if (!event) return;
  graph::onEventDestroy(event);
  (void)drv().destroyEvent(static_cast<driver::Event>(event));
}

c10::DeviceCapability NpuGuardImpl::getDeviceCapability(c10::Device d) const {
  checkDeviceIndex(indexOf(d));
  return c10::DeviceCapability();  // all dtypes enabled
}

void NpuGuardImpl::record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
                          const c10::EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "event device index ", int(device_index),
              " does not match the recording stream's device ", int(stream.device_index()));
  if (!*event) {
    // As CUDA: PYTORCH_DEFAULT events do not time, BACKEND_DEFAULT ones do
    // (torch.Event(enable_timing=True) asks for BACKEND_DEFAULT).
    unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? driver::kEventTiming : driver::kEventDefault;
    driver::Event e;
    NPU_CHECK(drv().createEvent(flags, &e));
    *event = e;
  }
  NPU_CHECK(drv().recordEvent(static_cast<driver::Event>(*event), driverStream(stream)));
  graph::onEventRecord(*event, stream);  // a capture's fork/join points
  if (C10_UNLIKELY(profiler::stepTrace()))
    profiler::recordSync(stream.device_index(), stream.id(), "npu event record",
                         {{"event", {std::to_string(reinterpret_cast<uintptr_t>(*event)), false}}});
}

void NpuGuardImpl::block(void* event, const c10::Stream& stream) const {
  if (!event) return;  // never recorded: nothing to wait for
  graph::onEventBlock(event, stream);
  NPU_CHECK(drv().streamWaitEvent(driverStream(stream), static_cast<driver::Event>(event)));
  if (C10_UNLIKELY(profiler::stepTrace()))
    profiler::recordSync(stream.device_index(), stream.id(), "npu stream wait event",
                         {{"event", {std::to_string(reinterpret_cast<uintptr_t>(event)), false}}});
}

bool NpuGuardImpl::queryEvent(void* event) const {
  if (!event) return true;
  driver::Error e = drv().queryEvent(static_cast<driver::Event>(event));
  if (e == driver::Error::kNotReady) return false;
  NPU_CHECK(e);
  return true;
}

void NpuGuardImpl::synchronizeEvent(void* event) const {
  if (!event) return;
  graph::checkUnsafeCall("event synchronize");
  const int64_t from = C10_UNLIKELY(profiler::stepTrace()) ? profiler::nowNs() : 0;
  NPU_CHECK(drv().synchronizeEvent(static_cast<driver::Event>(event)));
  if (from)  // the host waited: recorded at the end, with how long (docs/plan.md, host gaps)
    profiler::recordSync(currentDevice(), currentStreamId(currentDevice()), "npu event synchronize",
                         {{"event", {std::to_string(reinterpret_cast<uintptr_t>(event)), false}},
                          {"Wait ns", {std::to_string(profiler::nowNs() - from), false}}});
}

double NpuGuardImpl::elapsedTime(void* event1, void* event2, const c10::DeviceIndex) const {
  TORCH_CHECK(event1 && event2, "elapsed_time: both events must be recorded first");
  float ms = 0;
  NPU_CHECK(drv().eventElapsedTime(&ms, static_cast<driver::Event>(event1), static_cast<driver::Event>(event2)));
  return ms;
}

bool NpuGuardImpl::queryStream(const c10::Stream& stream) const {
  driver::Error e = drv().queryStream(driverStream(stream));
  if (e == driver::Error::kNotReady) return false;
  NPU_CHECK(e);
  return true;
}

void NpuGuardImpl::synchronizeStream(const c10::Stream& stream) const {
  if (graph::anyCapture()) {
    if (graph::Capture* c = graph::captureOf(stream.device_index(), stream.id()))
      graph::failOnCapturingStream(c, "synchronizing the capturing stream");
    graph::checkUnsafeCall("stream synchronize");
  }
  const int64_t from = C10_UNLIKELY(profiler::stepTrace()) ? profiler::nowNs() : 0;
  NPU_CHECK(drv().synchronizeStream(driverStream(stream)));
  if (from)
    profiler::recordSync(stream.device_index(), stream.id(), "npu stream synchronize",
                         {{"Wait ns", {std::to_string(profiler::nowNs() - from), false}}});
}

void NpuGuardImpl::synchronizeDevice(const c10::DeviceIndex device_index) const {
  c10::DeviceIndex d = device_index < 0 ? currentDevice() : device_index;
  checkDeviceIndex(d);
  graph::checkUnsafeCall("device synchronize");
  const int64_t from = C10_UNLIKELY(profiler::stepTrace()) ? profiler::nowNs() : 0;
  NPU_CHECK(drv().synchronizeDevice(d));
  if (from)
    profiler::recordSync(d, currentStreamId(d), "npu device synchronize",
                         {{"Wait ns", {std::to_string(profiler::nowNs() - from), false}}});
}

bool NpuGuardImpl::isStreamCapturing(const c10::Stream& stream) const { return graph::isStreamCapturing(stream); }

void NpuGuardImpl::recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const {
  npuAllocator().recordStream(data_ptr, stream);
}

}  // namespace npudist::core
