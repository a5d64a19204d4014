#include "core/device.h"

#include "core/npu_check.h"

#include <pthread.h>

#include <atomic>

namespace npudist::core {

namespace {
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_bad_fork{false};

void onForkChild() {
  if (g_initialized.load(std::memory_order_relaxed)) g_bad_fork.store(true, std::memory_order_relaxed);
}

[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, &onForkChild);
}  // namespace

void markInitialized() { g_initialized.store(true, std::memory_order_relaxed); }
bool isInitialized() { return g_initialized.load(std::memory_order_relaxed); }
bool isInBadFork() { return g_bad_fork.load(std::memory_order_relaxed); }

void checkNotInBadFork() {
  TORCH_CHECK(!g_bad_fork.load(std::memory_order_relaxed),
              "Cannot re-initialize npu in forked subprocess. To use npu with multiprocessing, you must use the "
              "'spawn' or 'forkserver' start method (npu device memory would be shared with the parent)");
}

void throwDriverError(driver::Error e, const char* call) {
  const std::string& detail = driver::lastErrorMessage();
  switch (e) {
    case driver::Error::kOutOfMemory:
      TORCH_CHECK_WITH(OutOfMemoryError, false, "NPU out of memory: ", detail);
    case driver::Error::kInvalidDevice:  // RuntimeError, as CUDA's "invalid device ordinal"
      TORCH_CHECK(false, detail);
    case driver::Error::kInvalidValue:
    case driver::Error::kInvalidConfig:
      TORCH_CHECK_VALUE(false, detail);
    default:
      TORCH_CHECK(false, "npu driver error (", driver::errorName(e), ") in ", call, ": ", detail);
  }
}

c10::DeviceIndex deviceCount() {
  // The environment is read once per process, so the count never changes:
  // cache it for the hot paths (every allocation checks its device index).
  static std::atomic<int> cached{-1};
  int n = cached.load(std::memory_order_relaxed);
  if (C10_LIKELY(n >= 0)) return static_cast<c10::DeviceIndex>(n);
  NPU_CHECK(driver::getDriver().getDeviceCount(&n));
  cached.store(n, std::memory_order_relaxed);
  return static_cast<c10::DeviceIndex>(n);
}

c10::DeviceIndex deviceCountNoThrow() noexcept {
  int n = 0;
  if (driver::getDriver().getDeviceCount(&n) != driver::Error::kSuccess) return 0;
  return static_cast<c10::DeviceIndex>(n);
}

c10::DeviceIndex currentDevice() {
  int d = 0;
  NPU_CHECK(driver::getDriver().getDevice(&d));
  return static_cast<c10::DeviceIndex>(d);
}

void setDevice(c10::DeviceIndex index) { NPU_CHECK(driver::getDriver().setDevice(index)); }

void checkDeviceIndex(c10::DeviceIndex index) {
  checkNotInBadFork();
  markInitialized();
  c10::DeviceIndex n = deviceCount();
  // RuntimeError, as CUDA's "invalid device ordinal" and torch_npu's invalid device ID are
  TORCH_CHECK(n > 0, "no npu device is visible (ASCEND_RT_VISIBLE_DEVICES is set but empty)");
  TORCH_CHECK(index >= 0 && index < n, "npu device index ", int(index), " is out of range: ", int(n),
              " npu device(s) are visible, valid indices are 0..", int(n) - 1,
              " (ASCEND_RT_VISIBLE_DEVICES and NPUDIST_DEVICE_COUNT decide which)");
}

c10::Device npuDevice(c10::DeviceIndex index) { return c10::Device(c10::DeviceType::PrivateUse1, index); }

}  // namespace npudist::core
