#include "core/stream.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include <pthread.h>

#include "core/device.h"
#include "core/npu_check.h"
#include "driver/stream_queue.h"

namespace npudist::core {
namespace {

constexpr int kMaxStreamsPerDevice = 4096;
constexpr c10::StreamId kFirstNewStream = 1 + kStreamPoolSize;

struct DeviceStreams {
  std::once_flag init;
  std::array<std::atomic<driver::Stream>, kMaxStreamsPerDevice> table{};
  std::atomic<int> next_pool{0};
  std::atomic<int> next_new{int(kFirstNewStream)};
};

std::atomic<bool> g_any_streams{false};

std::array<DeviceStreams, kMaxDevices>& devices() {
  static auto* d = [] {
    g_any_streams.store(true, std::memory_order_release);
    return new std::array<DeviceStreams, kMaxDevices>();  // never destroyed
  }();
  return *d;
}

thread_local std::array<c10::StreamId, kMaxDevices> t_current{};  // 0 = default stream
// Depth of deferred work running on this thread: its kernels are part of that
// work, whose dependencies are already complete, so they do not wait.
thread_local int t_deferred_depth = 0;

DeviceStreams& streamsOf(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  DeviceStreams& ds = devices()[size_t(device)];
  std::call_once(ds.init, [&] {
    for (c10::StreamId id = 0; id < kFirstNewStream; ++id) {
      driver::Stream s;
      NPU_CHECK(driver::getDriver().createStream(device, 0, &s));
      ds.table[size_t(id)].store(s, std::memory_order_release);
    }
  });
  return ds;
}

c10::Stream makeStream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, npuDevice(device), id);
}

}  // namespace

driver::Stream driverStream(const c10::Stream& stream) {
  DeviceStreams& ds = streamsOf(stream.device_index());
  c10::StreamId id = stream.id();
  TORCH_CHECK(id >= 0 && id < kMaxStreamsPerDevice, "invalid npu stream id ", id);
  driver::Stream s = ds.table[size_t(id)].load(std::memory_order_acquire);
  TORCH_CHECK(s, "npu stream ", id, " on device ", int(stream.device_index()), " does not exist");
  return s;
}

c10::Stream defaultStream(c10::DeviceIndex device) {
  streamsOf(device);
  return makeStream(device, 0);
}

c10::Stream currentStream(c10::DeviceIndex device) {
  streamsOf(device);
  return makeStream(device, t_current[size_t(device)]);
}

c10::StreamId currentStreamId(c10::DeviceIndex device) { return t_current[size_t(device)]; }

c10::Stream exchangeStream(const c10::Stream& stream) {
  driverStream(stream);  // validates
  c10::DeviceIndex d = stream.device_index();
  c10::Stream old = makeStream(d, t_current[size_t(d)]);
  t_current[size_t(d)] = stream.id();
  return old;
}

c10::Stream streamFromPool(c10::DeviceIndex device) {
  DeviceStreams& ds = streamsOf(device);
  int k = ds.next_pool.fetch_add(1, std::memory_order_relaxed) % kStreamPoolSize;
  return makeStream(device, 1 + k);
}

c10::Stream newStream(c10::DeviceIndex device, int priority) {
  DeviceStreams& ds = streamsOf(device);
  int id = ds.next_new.fetch_add(1, std::memory_order_relaxed);
  TORCH_CHECK(id < kMaxStreamsPerDevice, "too many npu streams on device ", int(device), " (limit ",
              kMaxStreamsPerDevice, "); reuse streams or take them from the pool");
  driver::Stream s;
  NPU_CHECK(driver::getDriver().createStream(device, priority, &s));
  ds.table[size_t(id)].store(s, std::memory_order_release);
  return makeStream(device, id);
}

bool currentStreamHasPending(c10::DeviceIndex device) {
  if (device < 0 || device >= kMaxDevices || t_deferred_depth) return false;
  driver::Stream s = devices()[size_t(device)].table[size_t(t_current[size_t(device)])].load(std::memory_order_acquire);
  return s && s->has_pending.load(std::memory_order_acquire);
}

void waitCurrentStream(c10::DeviceIndex device) {
  if (device < 0 || device >= kMaxDevices || t_deferred_depth) return;
  if (C10_UNLIKELY(isInBadFork())) checkNotInBadFork();
  driver::Stream s = devices()[size_t(device)].table[size_t(t_current[size_t(device)])].load(std::memory_order_acquire);
  if (s && C10_UNLIKELY(s->has_pending.load(std::memory_order_acquire)))
    NPU_CHECK(driver::getDriver().synchronizeStream(s));
}

namespace {

// Whichever thread runs it (worker or a helping caller), deferred work sees its
// own stream as current, so kernels it runs never wait on themselves.
std::function<void()> asDeferred(const c10::Stream& stream, std::function<void()> fn) {
  return [stream, fn = std::move(fn)] {
    c10::DeviceIndex d = stream.device_index();
    c10::StreamId saved = t_current[size_t(d)];
    t_current[size_t(d)] = stream.id();
    ++t_deferred_depth;
    auto restore = [&] {
      --t_deferred_depth;
      t_current[size_t(d)] = saved;
    };
    try {
      fn();
    } catch (...) {
      restore();
      throw;
    }
    restore();
  };
}

}  // namespace

void launchDeferred(const c10::Stream& stream, std::function<void()> fn) {
  NPU_CHECK(driver::getDriver().launchHostFunc(driverStream(stream), asDeferred(stream, std::move(fn))));
}

std::shared_ptr<driver::Task> launchDriverTask(const c10::Stream& stream, std::function<void()> fn,
                                               bool tolerate_failed_deps, std::function<void()> after) {
  std::function<void()> wrapped_after;
  if (after) wrapped_after = asDeferred(stream, std::move(after));
  return driverStream(stream)->enqueue(asDeferred(stream, std::move(fn)), tolerate_failed_deps,
                                       std::move(wrapped_after));
}

bool inDeferredWork() { return t_deferred_depth > 0; }

bool stopStreamWorker(const c10::Stream& stream, int64_t timeout_ms, bool drain) {
  // No validation that could throw (callers include destructors): a stream that
  // was never created has no worker.
  const int device = stream.device_index(), id = int(stream.id());
  if (device < 0 || device >= kMaxDevices || id < 0 || id >= kMaxStreamsPerDevice) return true;
  driver::Stream s = devices()[size_t(device)].table[size_t(id)].load(std::memory_order_acquire);
  if (!s) return true;
  std::string ignored;  // failures were reported to whoever waited on the work
  if (drain) s->synchronize(&ignored);
  return s->stop(/*close=*/false, timeout_ms);
}

namespace {
template <typename F>
void forEachCreatedStream(F&& f) {
  if (!g_any_streams.load(std::memory_order_acquire)) return;  // npu never used: nothing to do
  for (DeviceStreams& ds : devices()) {
    for (auto& slot : ds.table) {
      if (driver::Stream s = slot.load(std::memory_order_acquire)) f(s);
    }
  }
}

// In a forked child the workers do not exist and their queues belong to the
// parent (the child cannot use npu: isInBadFork). Forget them, so neither an
// exit-time shutdown nor a stream's destruction joins a thread of another process.
void forgetWorkersInChild() {
  forEachCreatedStream([](driver::Stream s) { s->forgetAfterFork(); });
}
[[maybe_unused]] const int g_stream_atfork = pthread_atfork(nullptr, nullptr, &forgetWorkersInChild);
}  // namespace

int shutdownStreamWorkers() {
  int joined = 0;
  // Drain every stream before stopping any: work on one stream may wait on another's.
  forEachCreatedStream([](driver::Stream s) {
    std::string ignored;
    s->synchronize(&ignored);
  });
  forEachCreatedStream([&](driver::Stream s) {
    bool had = false;
    {
      std::lock_guard<std::mutex> g(s->mutex);
      had = s->worker.joinable();
    }
    s->stop(/*close=*/true);
    joined += had;
  });
  return joined;
}

}  // namespace npudist::core
